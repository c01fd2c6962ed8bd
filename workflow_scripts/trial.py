from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import train
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: train.trial(
    run=sm.params.run, trial_id=sm.wildcards.trial, grid_point=sm.params.grid_point, suite=sm.input.suite,
    split=sm.input.split, iid_train=sm.input.get("iid_train"), start=sm.input.get("start"),
    batch_size=sm.params.batch_size, objective=sm.params.objective, out_score=sm.output.score))
