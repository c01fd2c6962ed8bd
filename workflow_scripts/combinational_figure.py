from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import combinational
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: combinational.combinational_figure(
    figure=sm.wildcards.figure, panels=[list(row) for row in sm.params.panels], inputs=input_list(sm, "panels"),
    titles=dict(sm.params.titles), out_png=sm.output.figure, k=sm.params.k))
