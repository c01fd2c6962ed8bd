from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import combinational
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: combinational.combinational_comparison(
    tables=input_list(sm, "tables"), variants=dict(sm.params.variants), out_table=sm.output.table,
    out_markdown=sm.output.markdown, seeds=list(sm.params.seeds)))
