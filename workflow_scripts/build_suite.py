from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.build_suite(sm.params.suite, sm.params.task_type,
                                     sm.input.get("pool"), sm.output.suite))
