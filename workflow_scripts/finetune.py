from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import train
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: train.finetune(
    run=sm.params.run, suite=sm.input.suite, split=sm.input.split, iid_train=sm.input.get("iid_train"),
    iid_test=sm.input.iid_test, start=sm.input.get("start"), selected=sm.input.get("selected"),
    batch_size=sm.params.batch_size, scope=sm.params.scope, iid_examples=sm.params.iid_examples,
    out_predictions=sm.output.predictions,
    out_run=sm.output.run, out_outcomes=sm.output.outcomes, out_model=sm.output.get("model"),
    ood=input_list(sm, "ood")))
