from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.outcomes(task_type=sm.params.task_type, suite_path=sm.input.suite,
                                  split_path=sm.input.split, predictions=sm.input.predictions,
                                  iid_test=sm.input.iid_test, held_out=sm.params.held_out,
                                  out_path=sm.output.outcomes, functionalities=sm.params.functionalities))
