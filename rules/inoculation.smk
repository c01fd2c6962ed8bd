# Inoculation by fine-tuning (seed 001; docs/ANALYSES.md; beluga/steps/inoculation.py,
# beluga/analyses/inoculation/): the IID model fine-tuned on doses of a unit's challenge data.


rule inoculate:
    input:
        suite=PATHS.suite(),
        split=PATHS.suite("split.parquet"),
        start=PATHS.iid_model(),
        iid_val=PATHS.iid("val"),
        iid_test=PATHS.iid("test"),
        challenge=lambda w: RUNS.inoc_challenge(w.task, w.unit),
        challenge_train=lambda w: RUNS.inoc_challenge(w.task, w.unit, "challenge_train"),
        # Liu et al.'s released sample of the dose (inoculation.samples: released); none for a drawn one
        released=lambda w: RUNS.inoc_released(w.task, w.unit, w.dose),
    output:
        result=PATHS.inoculation_run(),
        outcomes=PATHS.inoculation_run(ext="parquet"),
    log:
        "logs/{task}/{seeddir}inoculation/{unit}/{dose}/{lr}.log",
    benchmark:
        job_benchmark("logs/{task}/{seeddir}inoculation/{unit}/{dose}/{lr}.log")
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
        schedule=INOCULATION["schedule"],
        challenge=lambda w: RUNS.inoc_units[w.task][w.unit].get("challenge"),
        challenge_test_fraction=INOCULATION["challenge_test_fraction"],
        challenge_dev_fraction=RUNS.inoc_dev_fraction,
        challenge_train_size=lambda w: RUNS.inoc_units[w.task][w.unit].get("train_size"),
        challenge_distinct=lambda w: RUNS.inoc_units[w.task][w.unit].get("distinct"),
        batch_size=PREDICT["batch_size"],
        iid_metric=lambda w: TASKS[w.task]["iid_metric"],
        degenerate_share=STATISTICS["degenerate_share"],
    message:
        "inoculate {wildcards.task} {wildcards.seeddir}{wildcards.unit}: dose {wildcards.dose}, {wildcards.lr}"
    script:
        "../workflow_scripts/inoculate.py"


rule inoculation:
    input:
        results=lambda w: RUNS.inoc_results(w.task),
        case_outcomes=lambda w: RUNS.inoc_results(w.task, "parquet"),
        iid_outcomes=lambda w: [PATHS.iid_run("outcomes", w.task, seeddir=sd) for sd in RUNS.seeddirs()],
        # dose 0's model, the IID model, checked for a degenerate solution on its predictions
        iid_predictions=lambda w: [PATHS.iid_run("predictions", w.task, seeddir=sd) for sd in RUNS.seeddirs()],
        suite=PATHS.suite(),
        split=PATHS.suite("split.parquet"),
        iid_test=PATHS.iid("test"),
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
        seeds=RUNS.seeds,
        base_seed=RUNS.base_seed,
        lrs=lambda w: RUNS.inoc_lrs[w.task],
        select_on=RUNS.inoc_select_on,
        thresholds=INOCULATION["thresholds"],
        decide_by=INOCULATION["decide_by"],
        level=INOCULATION["level"],
        original_from=INOCULATION["original_from"],
        gap_margin=INOCULATION["gap_margin"],
        drop_margin=INOCULATION["drop_margin"],
        bootstrap=INOCULATION["bootstrap"],
        randomization=INOCULATION["randomization"],
        degenerate_share=STATISTICS["degenerate_share"],
        # named where a marked table says where to read why
        diagnostics=lambda w: PATHS.diagnostics("diagnostics.md", w.task),
    script:
        "../workflow_scripts/inoculation.py"


rule inoculation_all:
    input:
        inoc_targets(),
