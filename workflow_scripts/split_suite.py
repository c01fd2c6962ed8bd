from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import data
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: data.split_suite(suite=sm.input.suite, task_type=sm.params.task_type, fractions=sm.params.fractions,
                                 seed=sm.params.seed, duplicates=sm.params.duplicates, out_split=sm.output.split,
                                 out_summary=sm.output.summary))
