from beluga.smk import input_list, run
from beluga.steps import fetch

sm = snakemake  # noqa: F821
run(sm, lambda: fetch.fetch(data_dir=sm.params.data_dir, files=sm.params.files, models=sm.params.models,
                            markers=input_list(sm, "models"), out_lock=sm.output.lock))
