from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import ood
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: ood.gluex_tables(
    table=sm.input.table, benchmarks=dict(sm.params.benchmarks), out_table3=sm.output.table3,
    out_table4=sm.output.table4, out_markdown=sm.output.markdown,
    reported=dict(zip(sm.params.reported, input_list(sm, "reported"))), types=dict(sm.params.types)))
