import yaml

from beluga.io import write_text
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: write_text("# The configuration of this run (config.yaml or --configfile, with --config overrides)\n"
                           + yaml.safe_dump(dict(sm.params.config), sort_keys=False), sm.output.config))
