from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.trial(
    task_type=sm.params.task_type, configuration=sm.wildcards.conf, method=sm.wildcards.method,
    fold=sm.params.fold, trial_id=sm.wildcards.trial, grid_point=sm.params.grid_point,
    all_functionalities=sm.params.all_functionalities, suite_path=sm.input.suite, split_path=sm.input.split,
    iid_train=sm.input.get("iid_train"), start_model=sm.input.get("start", sm.params.model),
    hparams=sm.params.hparams, seed=sm.params.seed, max_length=sm.params.max_length,
    iid_in_mix=sm.params.iid_in_mix, dir_train_slice=sm.params.dir_train_slice,
    batch_size=sm.params.batch_size, out_path=sm.output.score, threads=sm.threads,
    doc_stride=sm.params.doc_stride, checkpoint_dir=sm.params.checkpoint_dir,
    precision=sm.params.precision, checkpoint_every_s=sm.params.checkpoint_every_s,
    nonfinite=sm.params.nonfinite))
