from beluga.smk import input_list, run
from beluga.steps import ood as steps

sm = snakemake  # noqa: F821
run(sm, lambda: steps.ood_ranking(scores=input_list(sm, "scores"), out_ranking=sm.output.ranking,
                                out_markdown=sm.output.markdown))
