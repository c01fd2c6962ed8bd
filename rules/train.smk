# IID pretraining (once per task) and behavioral fine-tuning per fold (one rule
# for every configuration and method; beluga/steps/train.py). By default a fold
# is one job: it trains, predicts what it is scored on and scores it with the
# model in memory. Every training job gets its settings as one object, `run`
# (beluga/train/settings.py FoldRun, built by Runs.settings in beluga/workflow/runs.py).


rule train_iid:
    input:
        train=PATHS.iid("train"),
        # a local model folder's files (replacing its weights reruns this)
        model_files=lambda w: beluga_dag.model_files(TASKS[w.task]["model"]),
        # a hub model's marker: the commit of its configured revision (rules/fetch.smk)
        model_lock=lambda w: model_locks(w.task),
    output:
        model=directory(PATHS.iid_model()),
    log:
        "logs/{task}/{seeddir}train_iid.log",
    benchmark:
        job_benchmark("logs/{task}/{seeddir}train_iid.log")
    conda:
        "../envs/beluga.yaml"
    threads: IID_THREADS
    resources:
        **job_resources("train"),
    params:
        run=run_settings("train_iid"),
        model_version=model_version,
    script:
        "../workflow_scripts/train_iid.py"


rule finetune:
    input:
        unpack(finetune_inputs),
    output:
        predictions=PATHS.run("predictions"),
        run=PATHS.run("predictions", ext="json"),
        outcomes=PATHS.run("outcomes"),
    log:
        fold_log("finetune"),
    benchmark:
        job_benchmark(fold_log("finetune"))
    wildcard_constraints:
        conf="|".join(beluga_folds.CONFIGURATIONS),
        method=beluga_dag.method_regex(FUSED_METHODS),
        partition="seen|func|class|type",
    conda:
        "../envs/beluga.yaml"
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    params:
        run=run_settings("finetune"),
        model_version=model_version,
        hparams=hparams_summary("finetune"),
        batch_size=PREDICT["batch_size"],
        scope=PREDICT["scope"],
        iid_examples=predicted_iid_examples,
    message:
        "finetune {wildcards.task} {wildcards.seeddir}{wildcards.conf}/{wildcards.method}/{wildcards.partition}/{wildcards.fold}: {params.hparams}"
    script:
        "../workflow_scripts/finetune.py"


# The same job for a method whose model another method starts from (LP for
# LP-FT): the fold model is also written, as a temporary file.
use rule finetune as finetune_keep with:
    output:
        predictions=PATHS.run("predictions"),
        run=PATHS.run("predictions", ext="json"),
        outcomes=PATHS.run("outcomes"),
        model=temp(directory(PATHS.model())),
    log:
        fold_log("finetune"),
    wildcard_constraints:
        method=beluga_dag.method_regex(KEEP_METHODS),


ruleorder: finetune_keep > finetune


# keep_models: true: the fold model is trained and kept; predict and outcomes
# (rules/evaluate.smk) take it from there.
rule finetune_model:
    input:
        unpack(finetune_model_inputs),
    output:
        model=directory(PATHS.model()),
    log:
        fold_log("finetune"),
    benchmark:
        job_benchmark(fold_log("finetune"))
    wildcard_constraints:
        conf="|".join(beluga_folds.CONFIGURATIONS),
        method=beluga_dag.method_regex(MODEL_METHODS),
        partition="seen|func|class|type",
    conda:
        "../envs/beluga.yaml"
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    params:
        run=run_settings("finetune"),
        model_version=model_version,
        hparams=hparams_summary("finetune"),
    message:
        "finetune_model {wildcards.task} {wildcards.seeddir}{wildcards.conf}/{wildcards.method}/{wildcards.partition}/{wildcards.fold}: {params.hparams}"
    script:
        "../workflow_scripts/finetune_model.py"


rule trial:
    input:
        unpack(trial_inputs),
    output:
        score=PATHS.trial(),
    log:
        fold_log("trial", "{trial}"),
    benchmark:
        job_benchmark(fold_log("trial", "{trial}"))
    wildcard_constraints:
        conf="|".join(beluga_folds.CONFIGURATIONS),
        partition="seen|func|class|type",
    conda:
        "../envs/beluga.yaml"
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    params:
        run=run_settings("trial"),
        model_version=model_version,
        hparams=hparams_summary("trial"),
        grid_point=lambda w: RUNS.grid_points[(w.task, w.method)][w.trial],
        batch_size=PREDICT["batch_size"],
        objective=lambda w: RUNS.selection(w.task)["objective"],
    message:
        "trial {wildcards.task} {wildcards.seeddir}{wildcards.conf}/{wildcards.method}/{wildcards.partition}/{wildcards.fold} {wildcards.trial}: {params.hparams}"
    script:
        "../workflow_scripts/trial.py"


rule select_hparams:
    input:
        trials=trial_files,
    output:
        selected=PATHS.selected(),
    log:
        fold_log("select"),
    conda:
        "../envs/beluga.yaml"
    params:
        policy=lambda w: RUNS.selection(w.task)["policy"],
    script:
        "../workflow_scripts/select_hparams.py"
