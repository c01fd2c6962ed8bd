from beluga.steps import train
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: train.train_iid(run=sm.params.run, train=sm.input.train, out_model=sm.output.model))
