from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import statistics
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.table3(
    tasks=sm.params.tasks, scores=sm.input.scores, seed_scores=sm.input.seed_scores, significance=sm.input.significance,
    intervals=sm.input.intervals, null=sm.input.null, diagnostics=input_list(sm, "diagnostics"),
    scenario_iid=sm.params.scenario_iid, alpha=sm.params.alpha, correction=sm.params.correction,
    out_csv=sm.output.csv, out_markdown=sm.output.markdown, out_latex=sm.output.latex,
    out_summary_csv=sm.output.summary_csv, out_summary_markdown=sm.output.summary_markdown,
    sources=input_list(sm, "sources"), out_iid_data=sm.output.iid_data))
