from beluga.smk import run
from beluga.steps import fetch

sm = snakemake  # noqa: F821
run(sm, lambda: fetch.fetch_model(model=sm.params.model, out_marker=sm.output.marker))
