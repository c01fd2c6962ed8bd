from beluga.smk import run
from beluga.steps import train

sm = snakemake  # noqa: F821
run(sm, lambda: train.train_iid(run=sm.params.run, train=sm.input.train, out_model=sm.output.model))
