from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.train_iid(sm.params.model, sm.params.task_type, sm.input.train, sm.params.hparams,
                                   sm.params.seed, sm.params.max_length, sm.output.model, threads=sm.threads,
                                   doc_stride=sm.params.doc_stride, checkpoint_dir=sm.params.checkpoint_dir,
                                   precision=sm.params.precision, checkpoint_every_s=sm.params.checkpoint_every_s,
                                   nonfinite=sm.params.nonfinite))
