from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import statistics
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.failures(
    task=sm.wildcards.task, task_type=sm.params.task_type, runs=sm.params.runs, suite=sm.input.suite,
    split=sm.input.split, k=sm.params.k, out_table=sm.output.table, out_markdown=sm.output.markdown,
    out_html=sm.output.html, seeds=sm.params.seeds))
