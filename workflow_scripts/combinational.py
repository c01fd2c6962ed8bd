from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import combinational
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: combinational.combinational(
    results=input_list(sm, "results"), variant=sm.wildcards.variant, too_long=sm.params.too_long,
    out_table=sm.output.table, out_markdown=sm.output.markdown, out_figure=sm.output.figure,
    out_epochs=sm.output.epochs, out_epochs_figure=sm.output.epochs_figure, ks=list(sm.params.ks),
    seeds=list(sm.params.seeds), degenerate_share=sm.params.degenerate_share))
