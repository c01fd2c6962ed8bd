from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import train
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: train.train_iid(run=sm.params.run, train=sm.input.train, out_model=sm.output.model))
