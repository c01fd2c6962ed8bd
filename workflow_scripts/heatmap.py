from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.plot_task(task=sm.wildcards.task, suite_path=sm.input.suite,
                                   pass_rates=sm.input.pass_rates, scenario=sm.wildcards.scenario,
                                   configurations=sm.params.configurations, methods=sm.params.methods,
                                   out_png=sm.output.png))
