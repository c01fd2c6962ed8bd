from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import train
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: train.finetune_model(
    run=sm.params.run, suite=sm.input.suite, split=sm.input.split, iid_train=sm.input.get("iid_train"),
    start=sm.input.get("start"), selected=sm.input.get("selected"), out_model=sm.output.model))
