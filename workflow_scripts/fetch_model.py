from beluga.steps import fetch
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: fetch.fetch_model(model=sm.params.model, out_marker=sm.output.marker))
