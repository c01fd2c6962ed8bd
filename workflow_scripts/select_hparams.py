from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import train
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: train.select_hparams(trials=list(sm.input.trials), policy=sm.params.policy,
                                     out_selected=sm.output.selected))
