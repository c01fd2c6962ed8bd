from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import statistics
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.run_config(config=sm.params.config, out_config=sm.output.config,
                                      out_provenance=sm.output.provenance))
