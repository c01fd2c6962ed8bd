from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import statistics
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.diagnostics(
    task=sm.wildcards.task, task_type=sm.params.task_type, runs=sm.params.runs, suite=sm.input.get("suite"),
    split=sm.input.get("split"), iid_test=sm.input.iid_test, degenerate_share=sm.params.degenerate_share,
    out_table=sm.output.table, out_summary=sm.output.summary, out_markdown=sm.output.markdown,
    out_html=sm.output.html))
