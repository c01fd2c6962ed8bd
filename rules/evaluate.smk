# Predictions (Parquet, keyed by ids) and per-case outcomes of the models on
# disk: the IID model, and every fold model with keep_models: true (fold jobs
# otherwise predict and score in their own process, rules/train.smk);
# beluga/steps/evaluate.py.


rule predict:
    input:
        model=f"{RESULTS}/{{task}}/models/{{conf}}/{{method}}/{{partition}}/{{fold}}",
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
        split=f"{RESULTS}/{{task}}/suite/split.parquet",
        iid_test=f"{RESULTS}/{{task}}/iid/test.parquet",
        ood=ood_inputs,
    output:
        predictions=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
        run=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.json",
    log:
        "logs/{task}/predict/{conf}/{method}/{partition}/{fold}.log",
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
        max_length=lambda w: training(w.task)["max_length"],
        doc_stride=lambda w: training(w.task)["doc_stride"],
        functionalities=predicted_functionalities,
        precision=config["precision"],
        gpus=config["gpus"],
    script:
        "../workflow_scripts/predict.py"


rule outcomes:
    input:
        predictions=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
        split=f"{RESULTS}/{{task}}/suite/split.parquet",
        iid_test=f"{RESULTS}/{{task}}/iid/test.parquet",
        ood=ood_inputs,
    output:
        outcomes=f"{RESULTS}/{{task}}/outcomes/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
    log:
        "logs/{task}/outcomes/{conf}/{method}/{partition}/{fold}.log",
    wildcard_constraints:
        conf=DISK_CONFS,
        method=DISK_METHODS,
    conda:
        "../envs/beluga.yaml"
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        held_out=lambda w: fold_spec(w.task, w.partition, w.fold)["held_out"],
        functionalities=predicted_functionalities,
    script:
        "../workflow_scripts/outcomes.py"
