# Combinational OOD generalization by template recombination (seed 002; docs/ANALYSES.md;
# beluga/steps/combinational.py, beluga/analyses/combinational.py).


rule combinational_data:
    input:
        sources=[COMBINATIONAL["data"]["path"]] if COMBINATIONAL["data"]["source"] == "local" else [],
    output:
        pool=PATHS.combinational("pool.parquet"),
    log:
        "logs/combinational/data.log",
    conda:
        "../envs/beluga.yaml"
    params:
        data=COMBINATIONAL["data"],
        roles=COMBINATIONAL["roles"],
        n_test=COMBINATIONAL["n_test"],
        seed=COMBINATIONAL["seed"],
        source_version=beluga_ood.ood_source_version({"source": COMBINATIONAL["data"]["source"]}),
    script:
        "../workflow_scripts/combinational_data.py"


rule combinational_train:
    input:
        pool=PATHS.combinational("pool.parquet"),
        model_files=beluga_dag.model_files(COMBINATIONAL["model"]),
        model_lock=model_locks(),
    output:
        result=PATHS.combinational_run(),
    log:
        "logs/combinational/k{k}.log",
    wildcard_constraints:
        k="[0-9]+",
    conda:
        "../envs/beluga.yaml"
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    params:
        run=run_settings("combinational_train"),
        words=COMBINATIONAL["label_words"],
        template=lambda w: COMBINATIONAL["template"],
        batch_size=PREDICT["batch_size"],
        per_epoch=COMBINATIONAL["per_epoch"],
    message:
        "combinational_train K={wildcards.k}"
    script:
        "../workflow_scripts/combinational_train.py"


rule combinational:
    input:
        results=[PATHS.combinational_run(k) for k in COMBINATIONAL["ks"]],
    output:
        table=report(
            PATHS.combinational("table.csv"),
            caption="../report/combinational_table.rst",
            category="Combinational OOD",
        ),
        markdown=PATHS.combinational("table.md"),
        figure=report(
            PATHS.combinational("accuracy.png"),
            caption="../report/combinational_figure.rst",
            category="Combinational OOD",
        ),
        epochs=PATHS.combinational("epochs.csv"),
    log:
        "logs/combinational/summary.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/combinational.py"


rule combinational_all:
    input:
        comb_targets(),
