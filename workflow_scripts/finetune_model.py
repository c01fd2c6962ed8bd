from beluga import pipeline
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: pipeline.finetune_model(
    task_type=sm.params.task_type, configuration=sm.wildcards.conf, method=sm.wildcards.method,
    partition=sm.wildcards.partition, fold=sm.params.fold, all_functionalities=sm.params.all_functionalities,
    suite_path=sm.input.suite, split_path=sm.input.split, iid_train=sm.input.get("iid_train"),
    start_model=sm.input.get("start", sm.params.model), hparams=sm.params.hparams, seed=sm.params.seed,
    max_length=sm.params.max_length, iid_in_mix=sm.params.iid_in_mix, dir_train_slice=sm.params.dir_train_slice,
    out_dir=sm.output.model, threads=sm.threads, doc_stride=sm.params.doc_stride, selected=sm.input.get("selected"),
    start_label=sm.params.start_label, checkpoint_dir=sm.params.checkpoint_dir, precision=sm.params.precision,
    checkpoint_every_s=sm.params.checkpoint_every_s, nonfinite=sm.params.nonfinite))
