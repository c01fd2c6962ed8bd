from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.aggregate_task(task=sm.wildcards.task, task_type=sm.params.task_type,
                                        suite_path=sm.input.suite, runs=sm.params.runs,
                                        out_long=sm.output.pass_rates, out_scores=sm.output.scores,
                                        out_md=sm.output.markdown, iid_metric=sm.params.iid_metric))
