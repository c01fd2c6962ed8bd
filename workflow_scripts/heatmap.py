from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import plots
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: plots.heatmap(task=sm.wildcards.task, suite=sm.input.suite, pass_rates=sm.input.pass_rates,
                              scenario=sm.wildcards.scenario, configurations=sm.params.configurations,
                              methods=sm.params.methods, out_png=sm.output.png))
