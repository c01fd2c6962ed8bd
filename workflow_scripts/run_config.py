from beluga.smk import run
from beluga.steps import statistics

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.run_config(config=sm.params.config, out_config=sm.output.config))
