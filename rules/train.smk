# IID pretraining (once per task) and behavioral fine-tuning per fold (one rule
# for every configuration and method). By default a fold is one job: it
# trains, predicts what it is scored on and scores it with the model in memory.


rule train_iid:
    input:
        train=f"{RESULTS}/{{task}}/iid/train.parquet",
        # a local model folder's files (replacing its weights reruns this)
        model_files=lambda w: beluga_dag.model_files(TASKS[w.task]["model"]),
    output:
        model=directory(f"{RESULTS}/{{task}}/models/iid/vanilla/standard/all"),
    params:
        model=lambda w: TASKS[w.task]["model"],
        model_version=lambda w: beluga_dag.model_version(TASKS[w.task]["model"]),
        task_type=lambda w: TASKS[w.task]["type"],
        hparams=lambda w: stage_hparams(w.task, "iid"),
        seed=config.get("seed", 1),
        max_length=lambda w: max_length(w.task),
        doc_stride=lambda w: training(w.task).get("doc_stride", 128),
        precision=PRECISION,
        checkpoint_every_s=CHECKPOINT_EVERY_S,
        nonfinite=lambda w: training(w.task).get("nonfinite", "stop"),
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
        predictions=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
        run=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.json",
        outcomes=f"{RESULTS}/{{task}}/outcomes/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
    wildcard_constraints:
        conf="|".join(beluga_pipeline.CONFIGURATIONS),
        method=method_regex(FUSED_METHODS),
        partition="seen|func|class|type",
    params:
        **FOLD_PARAMS,
        checkpoint_dir=lambda w: res(w.task, "checkpoints", "finetune", w.conf, w.method, w.partition, w.fold),
        batch_size=PREDICT["batch_size"],
        scope=PREDICT["scope"],
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    log:
        "logs/{task}/finetune/{conf}/{method}/{partition}/{fold}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/finetune.py"


# The same job for a method whose model another method starts from (LP for
# LP-FT): the fold model is also written, as a temporary file.
use rule finetune as finetune_keep with:
    output:
        predictions=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
        run=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.json",
        outcomes=f"{RESULTS}/{{task}}/outcomes/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
        model=temp(directory(f"{RESULTS}/{{task}}/models/{{conf}}/{{method}}/{{partition}}/{{fold}}")),
    wildcard_constraints:
        method=method_regex(KEEP_METHODS),
    log:
        "logs/{task}/finetune/{conf}/{method}/{partition}/{fold}.log",


ruleorder: finetune_keep > finetune


# keep_models: true: the fold model is trained and kept; predict and outcomes
# (rules/evaluate.smk) take it from there.
rule finetune_model:
    input:
        unpack(finetune_model_inputs),
    output:
        model=directory(f"{RESULTS}/{{task}}/models/{{conf}}/{{method}}/{{partition}}/{{fold}}"),
    wildcard_constraints:
        conf="|".join(beluga_pipeline.CONFIGURATIONS),
        method=method_regex(MODEL_METHODS),
        partition="seen|func|class|type",
    params:
        **FOLD_PARAMS,
        checkpoint_dir=lambda w: res(w.task, "checkpoints", "finetune", w.conf, w.method, w.partition, w.fold),
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    log:
        "logs/{task}/finetune/{conf}/{method}/{partition}/{fold}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/finetune_model.py"


rule trial:
    input:
        unpack(trial_inputs),
    output:
        score=f"{RESULTS}/{{task}}/selection/{{conf}}/{{method}}/{{partition}}/{{fold}}/trials/{{trial}}.json",
    wildcard_constraints:
        conf="|".join(beluga_pipeline.CONFIGURATIONS),
        partition="seen|func|class|type",
    params:
        **FOLD_PARAMS,
        grid_point=lambda w: GRID_POINTS[w.task][w.trial],
        batch_size=PREDICT["batch_size"],
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
