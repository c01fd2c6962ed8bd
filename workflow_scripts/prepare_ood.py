from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import data
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: data.prepare_ood(entry=sm.params.entry, task_type=sm.params.task_type, out_data=sm.output.data))
