from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import data
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: data.build_suite(suite=sm.params.suite, task_type=sm.params.task_type, pool=sm.input.get("pool"),
                                 out_suite=sm.output.suite))
