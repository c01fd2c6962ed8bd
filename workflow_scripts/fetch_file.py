from beluga.steps import fetch
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: fetch.fetch_file(download=sm.input.download, rel=sm.params.rel, expected=sm.params.expected,
                                 out_file=sm.output.file))
