from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import aggregate
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: aggregate.aggregate(
    task=sm.wildcards.task, task_type=sm.params.task_type, suite=sm.input.suite, runs=sm.params.runs,
    iid_metric=sm.params.iid_metric, scenario_iid=sm.params.scenario_iid, out_pass_rates=sm.output.pass_rates,
    out_scores=sm.output.scores, out_markdown=sm.output.markdown, out_seed_pass_rates=sm.output.seed_pass_rates,
    out_seed_scores=sm.output.seed_scores, source=sm.input.source))
