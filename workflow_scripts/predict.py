from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.predict(
    task_type=sm.params.task_type, model_dir=sm.input.model, suite_path=sm.input.suite,
    split_path=sm.input.split, iid_test=sm.input.iid_test, batch_size=sm.params.batch_size,
    max_length=sm.params.max_length, out_path=sm.output.predictions, out_run=sm.output.run, threads=sm.threads,
    doc_stride=sm.params.doc_stride, functionalities=sm.params.functionalities, precision=sm.params.precision))
