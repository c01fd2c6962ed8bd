from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import ood
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: ood.ood_ranking(
    scores=input_list(sm, "scores"), benchmarks=dict(sm.params.benchmarks), out_ranking=sm.output.ranking,
    out_markdown=sm.output.markdown, out_table=sm.output.table, out_table_markdown=sm.output.table_markdown,
    out_correlation=sm.output.correlation))
