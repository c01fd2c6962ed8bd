from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import fetch
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: fetch.fetch_lock(data_dir=sm.params.data_dir, files=sm.params.files,
                                 markers=input_list(sm, "models"), out_stamp=sm.output.stamp))
