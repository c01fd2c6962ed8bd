from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.split_suite(sm.input.suite, sm.params.task_type, sm.params.fractions,
                                     sm.params.seed, sm.output.split, sm.output.summary))
