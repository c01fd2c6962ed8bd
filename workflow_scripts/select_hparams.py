from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.select_hparams(trials=list(sm.input.trials), policy=sm.params.policy,
                                        out_path=sm.output.selected))
