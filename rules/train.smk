# IID pretraining (once per task) and behavioral fine-tuning per fold
# (one rule for every configuration and method).


rule train_iid:
    input:
        train=f"{RESULTS}/{{task}}/iid/train.parquet",
    output:
        model=directory(f"{RESULTS}/{{task}}/models/iid/vanilla/standard/all"),
    params:
        model=lambda w: TASKS[w.task]["model"],
        task_type=lambda w: TASKS[w.task]["type"],
        hparams=lambda w: stage_hparams(w.task, "iid"),
        seed=config.get("seed", 1),
        max_length=lambda w: max_length(w.task),
        doc_stride=lambda w: training(w.task).get("doc_stride", 128),
        # epoch checkpoints, outside the outputs (deleted when a job fails): a
        # killed job resumes there; removed once the model is written
        checkpoint_dir=lambda w: res(w.task, "checkpoints", "train_iid", "iid", "vanilla", "standard", "all"),
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    log:
        "logs/{task}/train_iid.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/train_iid.py"


rule finetune:
    input:
        unpack(finetune_inputs),
    output:
        model=temp(
            directory(
                f"{RESULTS}/{{task}}/models/{{conf}}/{{method}}/{{partition}}/{{fold}}"
            )
        ),
    wildcard_constraints:
        conf="|".join(beluga_pipeline.CONFIGURATIONS),
        partition="seen|func|class|type",
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        model=lambda w: TASKS[w.task]["model"],
        fold=lambda w: fold_spec(w.task, w.partition, w.fold),
        all_functionalities=lambda w: FUNC_NAMES[w.task],
        hparams=lambda w: stage_hparams(w.task, "suite", w.method),
        start_label=lambda w: start_model(w)[1],
        seed=config.get("seed", 1),
        max_length=lambda w: max_length(w.task),
        doc_stride=lambda w: training(w.task).get("doc_stride", 128),
        iid_in_mix=lambda w: training(w.task).get("iid_in_mix"),
        dir_train_slice=lambda w: training(w.task).get("dir_train_slice", True),
        checkpoint_dir=lambda w: res(w.task, "checkpoints", "finetune", w.conf, w.method, w.partition, w.fold),
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    log:
        "logs/{task}/finetune/{conf}/{method}/{partition}/{fold}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/finetune.py"


rule trial:
    input:
        unpack(trial_inputs),
    output:
        score=f"{RESULTS}/{{task}}/selection/{{conf}}/{{method}}/{{partition}}/{{fold}}/trials/{{trial}}.json",
    wildcard_constraints:
        conf="|".join(beluga_pipeline.CONFIGURATIONS),
        partition="seen|func|class|type",
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        model=lambda w: TASKS[w.task]["model"],
        fold=lambda w: fold_spec(w.task, w.partition, w.fold),
        all_functionalities=lambda w: FUNC_NAMES[w.task],
        hparams=lambda w: stage_hparams(w.task, "suite", w.method),
        grid_point=lambda w: GRID_POINTS[w.task][w.trial],
        seed=config.get("seed", 1),
        max_length=lambda w: max_length(w.task),
        doc_stride=lambda w: training(w.task).get("doc_stride", 128),
        iid_in_mix=lambda w: training(w.task).get("iid_in_mix"),
        dir_train_slice=lambda w: training(w.task).get("dir_train_slice", True),
        batch_size=config.get("predict", {}).get("batch_size", 64),
        checkpoint_dir=lambda w: res(
            w.task, "checkpoints", "trial", w.conf, w.method, w.partition, w.fold, w.trial
        ),
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    log:
        "logs/{task}/trial/{conf}/{method}/{partition}/{fold}/{trial}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/trial.py"


rule select_hparams:
    input:
        trials=trial_files,
    output:
        selected=f"{RESULTS}/{{task}}/selection/{{conf}}/{{method}}/{{partition}}/{{fold}}/selected.json",
    params:
        policy=lambda w: selection(w.task).get("policy", "seen"),
    log:
        "logs/{task}/select/{conf}/{method}/{partition}/{fold}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/select_hparams.py"
