# Significance against the IID baseline, bootstrap intervals, diagnostics,
# Table 3 and the run's configuration (docs/STATISTICS.md;
# beluga/steps/statistics.py).


# one per training seed (its own runs); the tests and intervals read every seed's
rule unit_outcomes:
    input:
        outcomes=seed_run_files("outcomes"),
    output:
        units=PATHS.unit_outcomes(),
    log:
        "logs/{task}/{seeddir}stats/unit_outcomes.log",
    conda:
        "../envs/beluga.yaml"
    params:
        runs=seed_run_records("outcomes"),
        task_type=lambda w: TASKS[w.task]["type"],
        scenario_iid=lambda w: TASKS[w.task]["scenario_iid"],
    script:
        "../workflow_scripts/unit_outcomes.py"


rule significance:
    input:
        units=seed_unit_outcomes,
        suite=PATHS.suite(),
    output:
        table=report(
            PATHS.stats("significance.csv"),
            caption="../report/significance.rst",
            category="Significance and intervals",
            subcategory="{task}",
        ),
        null=PATHS.stats("null_avg.parquet"),
    log:
        "logs/{task}/stats/significance.log",
    conda:
        "../envs/beluga.yaml"
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        iid_metric=lambda w: TASKS[w.task]["iid_metric"],
        R=STATISTICS["randomization_R"],
        swaps=STATISTICS["swaps"],
        seed=STATISTICS["seed"],
        seeds=RUNS.seeds,
        base_seed=RUNS.base_seed,
        alpha=STATISTICS["alpha"],
        correction=STATISTICS["correction"],
    script:
        "../workflow_scripts/significance.py"


rule intervals:
    input:
        units=seed_unit_outcomes,
        suite=PATHS.suite(),
    output:
        table=report(
            PATHS.stats("intervals.csv"),
            caption="../report/intervals.rst",
            category="Significance and intervals",
            subcategory="{task}",
        ),
    log:
        "logs/{task}/stats/intervals.log",
    conda:
        "../envs/beluga.yaml"
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        iid_metric=lambda w: TASKS[w.task]["iid_metric"],
        R=STATISTICS["bootstrap_R"],
        seed=STATISTICS["seed"],
        seeds=RUNS.seeds,
        base_seed=RUNS.base_seed,
    script:
        "../workflow_scripts/intervals.py"


# every task's, with a suite or without (its IID model on the i.i.d. test set only)
rule diagnostics:
    input:
        unpack(suite_inputs),
        predictions=run_files("predictions"),
        iid_test=PATHS.iid("test"),
    output:
        table=PATHS.diagnostics("diagnostics.csv"),
        summary=report(
            PATHS.diagnostics("summary.csv"),
            caption="../report/diagnostics.rst",
            category="Diagnostics",
            subcategory="{task}",
        ),
        markdown=PATHS.diagnostics("diagnostics.md"),
        html=report(
            PATHS.diagnostics("diagnostics.html"),
            caption="../report/diagnostics_page.rst",
            category="Diagnostics",
            subcategory="{task}",
        ),
    log:
        "logs/{task}/diagnostics.log",
    conda:
        "../envs/beluga.yaml"
    params:
        runs=run_records("predictions"),
        task_type=lambda w: TASKS[w.task]["type"],
        degenerate_share=STATISTICS["degenerate_share"],
    script:
        "../workflow_scripts/diagnostics.py"


rule failures:
    input:
        outcomes=first_seed_run_files("outcomes"),
        predictions=first_seed_run_files("predictions"),
        suite=PATHS.suite(),
        split=PATHS.suite("split.parquet"),
    output:
        table=PATHS.failures("failures.csv"),
        markdown=PATHS.failures("failures.md"),
        html=report(
            PATHS.failures("failures.html"),
            caption="../report/failures.rst",
            category="Failures",
            subcategory="{task}",
        ),
    log:
        "logs/{task}/failures.log",
    conda:
        "../envs/beluga.yaml"
    params:
        runs=failure_runs,
        seeds=RUNS.seeds,
        task_type=lambda w: TASKS[w.task]["type"],
        k=STATISTICS["failures_per_functionality"],
    script:
        "../workflow_scripts/failures.py"


rule table3:
    input:
        scores=expand(PATHS.scores("scores.csv"), task=SUITE_TASKS),
        seed_scores=expand(PATHS.scores("per_seed_scores.csv"), task=SUITE_TASKS),
        significance=expand(PATHS.stats("significance.csv"), task=SUITE_TASKS),
        intervals=expand(PATHS.stats("intervals.csv"), task=SUITE_TASKS),
        null=expand(PATHS.stats("null_avg.parquet"), task=SUITE_TASKS),
        # the i.i.d. data each task read: a task not on the paper's data gets a footnote
        sources=expand(PATHS.iid_source(), task=SUITE_TASKS),
        # every model's degenerate flag: a cell computed from a degenerate model is marked, never bold
        diagnostics=expand(PATHS.diagnostics("diagnostics.csv"), task=SUITE_TASKS),
    output:
        csv=report(
            PATHS.table3("table3.csv"),
            caption="../report/table3.rst",
            category="Table 3",
        ),
        markdown=PATHS.table3("table3.md"),
        latex=PATHS.table3("table3.tex"),
        summary_csv=PATHS.table3("summary.csv"),
        summary_markdown=PATHS.table3("summary.md"),
        iid_data=report(
            PATHS.table3("iid_data.html"),
            caption="../report/iid_data.rst",
            category="Table 3",
        ),
    log:
        "logs/table3.log",
    conda:
        "../envs/beluga.yaml"
    params:
        tasks=SUITE_TASKS,
        scenario_iid=[TASKS[t]["scenario_iid"] for t in SUITE_TASKS],
        alpha=STATISTICS["alpha"],
        correction=STATISTICS["correction"],
    script:
        "../workflow_scripts/table3.py"


rule run_config:
    input:
        configfiles=list(workflow.configfiles),
    output:
        config=report(
            PATHS.run_config(),
            caption="../report/run_config.rst",
            category="Run configuration",
        ),
        provenance=PATHS.run_config("run.json"),
    log:
        "logs/run_config.log",
    conda:
        "../envs/beluga.yaml"
    params:
        config=config,
    script:
        "../workflow_scripts/run_config.py"
