from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import evaluate
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: evaluate.outcomes(
    task_type=sm.params.task_type, suite=sm.input.get("suite"), split=sm.input.get("split"),
    predictions=sm.input.predictions,
    iid_test=sm.input.iid_test, held_out=sm.params.held_out, functionalities=sm.params.functionalities,
    iid_examples=sm.params.iid_examples,     out_outcomes=sm.output.outcomes, ood=input_list(sm, "ood")))
