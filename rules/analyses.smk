# The related analyses on the same data and models (docs/ANALYSES.md;
# beluga/steps/analyses.py): inoculation by fine-tuning (seed 001) and
# combinational OOD generalization by template recombination (seed 002).


rule inoculate:
    input:
        suite=PATHS.suite(),
        split=PATHS.suite("split.parquet"),
        start=PATHS.iid_model(),
        iid_val=PATHS.iid("val"),
        iid_test=PATHS.iid("test"),
    output:
        result=PATHS.inoculation_run(),
    log:
        "logs/{task}/inoculation/{unit}/{dose}/{lr}.log",
    wildcard_constraints:
        unit="[a-z0-9-]+",
        dose="[0-9]+|all",
        lr="lr[0-9.e+-]+",
    conda:
        "../envs/beluga.yaml"
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    params:
        run=run_settings("inoculate"),
        unit_funcs=lambda w: RUNS.inoc_units[w.task][w.unit]["functionalities"],
        sample_seed=INOCULATION["seed"],
        patience=INOCULATION["patience"],
        batch_size=PREDICT["batch_size"],
        iid_metric=lambda w: TASKS[w.task]["iid_metric"],
    message:
        "inoculate {wildcards.task} {wildcards.unit}: dose {wildcards.dose}, {wildcards.lr}"
    script:
        "../workflow_scripts/inoculate.py"


rule inoculation:
    input:
        results=lambda w: RUNS.inoc_results(w.task),
        iid_outcomes=PATHS.iid_run("outcomes"),
        suite=PATHS.suite(),
    output:
        table=report(
            PATHS.inoculation("table.csv"),
            caption="../report/inoculation_table.rst",
            category="Inoculation",
            subcategory="{task}",
        ),
        outcomes=PATHS.inoculation("outcomes.csv"),
        markdown=PATHS.inoculation("inoculation.md"),
        curves=report(
            PATHS.inoculation("curves.png"),
            caption="../report/inoculation_curves.rst",
            category="Inoculation",
            subcategory="{task}",
        ),
        transfer=report(
            PATHS.inoculation("transfer.png"),
            caption="../report/inoculation_transfer.rst",
            category="Inoculation",
            subcategory="{task}",
        ),
    log:
        "logs/{task}/inoculation.log",
    conda:
        "../envs/beluga.yaml"
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        iid_metric=lambda w: TASKS[w.task]["iid_metric"],
        units=lambda w: RUNS.inoc_units[w.task],
        lrs=INOCULATION["lrs"],
        select_on=INOCULATION["select_on"],
        thresholds=INOCULATION["thresholds"],
    script:
        "../workflow_scripts/inoculation.py"


rule inoculation_all:
    input:
        inoc_targets(),


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
