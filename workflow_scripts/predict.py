from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import evaluate
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: evaluate.predict(
    task_type=sm.params.task_type, model=sm.input.model, suite=sm.input.get("suite"), split=sm.input.get("split"),
    iid_test=sm.input.iid_test, functionalities=sm.params.functionalities,
    iid_examples=sm.params.iid_examples, batch_size=sm.params.batch_size,
    max_length=sm.params.max_length, doc_stride=sm.params.doc_stride, threads=sm.threads,
    precision=sm.params.precision, out_predictions=sm.output.predictions, out_run=sm.output.run,
    ood=input_list(sm, "ood"), gpus=sm.params.gpus))
