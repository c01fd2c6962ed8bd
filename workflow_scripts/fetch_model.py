from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import fetch
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: fetch.fetch_model(model=sm.params.model, out_marker=sm.output.marker))
