from beluga.steps import ood
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: ood.ood_ranking(scores=input_list(sm, "scores"), out_ranking=sm.output.ranking,
                                out_markdown=sm.output.markdown))
