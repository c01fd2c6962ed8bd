# Pass rates, s_T and G per configuration x method (plus the IID baseline), per
# training seed and their mean and spread over seeds; beluga/steps/aggregate.py.


rule aggregate:
    input:
        suite=PATHS.suite(),
        outcomes=run_files("outcomes"),
        # the i.i.d. data read (scores.md says when they are not the paper's)
        source=PATHS.iid_source(),
    output:
        pass_rates=PATHS.scores("pass_rates.csv"),
        scores=PATHS.scores("scores.csv"),
        markdown=PATHS.scores("scores.md"),
        # the same rows per training seed (a one-seed run: its tables with a seed column)
        seed_pass_rates=PATHS.scores("per_seed_pass_rates.csv"),
        seed_scores=PATHS.scores("per_seed_scores.csv"),
    log:
        "logs/{task}/aggregate.log",
    conda:
        "../envs/beluga.yaml"
    params:
        runs=run_records("outcomes"),
        task_type=lambda w: TASKS[w.task]["type"],
        iid_metric=lambda w: TASKS[w.task]["iid_metric"],
        scenario_iid=lambda w: TASKS[w.task]["scenario_iid"],
    script:
        "../workflow_scripts/aggregate.py"
