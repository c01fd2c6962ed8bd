from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import ood
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: ood.ood(
    task=sm.wildcards.task, task_type=sm.params.task_type, backbone=sm.params.backbone,
    credits=dict(sm.params.credits), runs=sm.params.runs, models=sm.params.models, data=input_list(sm, "data"),
    alpha=sm.params.alpha, correction=sm.params.correction, R=sm.params.R, seed=sm.params.seed,
    base_seed=sm.params.base_seed, metric=sm.params.ood_metric, out_scores=sm.output.scores,
    out_ranking=sm.output.ranking, out_table=sm.output.table, out_markdown=sm.output.markdown,
    out_latex=sm.output.latex, out_figure=sm.output.figure, out_models=sm.output.models,
    out_correlation=sm.output.correlation, diagnostics=sm.input.diagnostics))
