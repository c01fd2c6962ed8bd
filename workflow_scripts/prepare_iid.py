from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import data
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: data.prepare_iid(iid=sm.params.iid, task_type=sm.params.task_type,
                                 outputs={k: sm.output[k] for k in ("train", "val", "test", "pool")},
                                 out_source=sm.output.source, task=sm.wildcards.task))
