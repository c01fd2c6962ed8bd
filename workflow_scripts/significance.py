from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import statistics
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.significance(
    task=sm.wildcards.task, units=list(sm.input.units), seeds=sm.params.seeds, base_seed=sm.params.base_seed,
    suite=sm.input.suite, task_type=sm.params.task_type,
    iid_metric=sm.params.iid_metric, R=sm.params.R, swaps=sm.params.swaps, seed=sm.params.seed, alpha=sm.params.alpha,
    correction=sm.params.correction, out_table=sm.output.table, out_null=sm.output.null))
