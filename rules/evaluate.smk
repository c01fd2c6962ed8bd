# Predictions (Parquet, keyed by ids) and per-case outcomes of the models on
# disk: the IID model, and every fold model with keep_models: true (fold jobs
# otherwise predict and score in their own process, rules/train.smk);
# beluga/steps/evaluate.py.


rule predict:
    input:
        unpack(suite_inputs),
        model=PATHS.model(),
        iid_test=PATHS.iid("test"),
        ood=ood_inputs,
    output:
        predictions=PATHS.run("predictions"),
        run=PATHS.run("predictions", ext="json"),
    log:
        fold_log("predict"),
    benchmark:
        job_benchmark(fold_log("predict"))
    wildcard_constraints:
        conf=DISK_CONFS,
        method=DISK_METHODS,
    conda:
        "../envs/beluga.yaml"
    threads: JOB_THREADS
    resources:
        **job_resources("predict"),
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        batch_size=PREDICT["batch_size"],
        max_length=lambda w: RUNS.training(w.task)["max_length"],
        doc_stride=lambda w: RUNS.training(w.task)["doc_stride"],
        functionalities=predicted_functionalities,
        iid_examples=predicted_iid_examples,
        precision=config["precision"],
        gpus=config["gpus"],
    script:
        "../workflow_scripts/predict.py"


rule outcomes:
    input:
        unpack(suite_inputs),
        predictions=PATHS.run("predictions"),
        iid_test=PATHS.iid("test"),
        ood=ood_inputs,
    output:
        outcomes=PATHS.run("outcomes"),
    log:
        fold_log("outcomes"),
    wildcard_constraints:
        conf=DISK_CONFS,
        method=DISK_METHODS,
    conda:
        "../envs/beluga.yaml"
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        held_out=lambda w: RUNS.fold_spec(w.task, w.partition, w.fold)["held_out"],
        functionalities=predicted_functionalities,
        iid_examples=predicted_iid_examples,
    script:
        "../workflow_scripts/outcomes.py"
