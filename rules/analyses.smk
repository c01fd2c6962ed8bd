# The related analyses on the same data and models (docs/ANALYSES.md;
# beluga/steps/analyses.py): inoculation by fine-tuning (seed 001) and
# combinational OOD generalization by template recombination (seed 002).


rule inoculate:
    input:
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
        split=f"{RESULTS}/{{task}}/suite/split.parquet",
        start=f"{RESULTS}/{{task}}/models/iid/vanilla/standard/all",
        iid_val=f"{RESULTS}/{{task}}/iid/val.parquet",
        iid_test=f"{RESULTS}/{{task}}/iid/test.parquet",
    output:
        result=f"{RESULTS}/{{task}}/inoculation/runs/{{unit}}/{{dose}}/{{lr}}.json",
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
        run=inoc_settings,
        unit_funcs=lambda w: INOC_UNITS[w.task][w.unit]["functionalities"],
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
        results=lambda w: inoc_results(w.task),
        iid_outcomes=f"{RESULTS}/{{task}}/outcomes/iid/vanilla/standard/all.parquet",
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
    output:
        table=report(
            f"{RESULTS}/{{task}}/inoculation/table.csv",
            caption="../report/inoculation_table.rst",
            category="Inoculation",
            subcategory="{task}",
        ),
        outcomes=f"{RESULTS}/{{task}}/inoculation/outcomes.csv",
        markdown=f"{RESULTS}/{{task}}/inoculation/inoculation.md",
        curves=report(
            f"{RESULTS}/{{task}}/inoculation/curves.png",
            caption="../report/inoculation_curves.rst",
            category="Inoculation",
            subcategory="{task}",
        ),
        transfer=report(
            f"{RESULTS}/{{task}}/inoculation/transfer.png",
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
        units=lambda w: INOC_UNITS[w.task],
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
        pool=f"{RESULTS}/combinational/pool.parquet",
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
        pool=f"{RESULTS}/combinational/pool.parquet",
        model_files=beluga_dag.model_files(COMBINATIONAL["model"]),
        model_lock=model_locks(),
    output:
        result=f"{RESULTS}/combinational/runs/k{{k}}.json",
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
        run=comb_settings,
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
        results=[f"{RESULTS}/combinational/runs/k{k}.json" for k in COMBINATIONAL["ks"]],
    output:
        table=report(
            f"{RESULTS}/combinational/table.csv",
            caption="../report/combinational_table.rst",
            category="Combinational OOD",
        ),
        markdown=f"{RESULTS}/combinational/table.md",
        figure=report(
            f"{RESULTS}/combinational/accuracy.png",
            caption="../report/combinational_figure.rst",
            category="Combinational OOD",
        ),
        epochs=f"{RESULTS}/combinational/epochs.csv",
    log:
        "logs/combinational/summary.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/combinational.py"


rule combinational_all:
    input:
        comb_targets(),
