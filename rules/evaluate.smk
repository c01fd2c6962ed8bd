# Predictions (Parquet, keyed by ids) and per-case outcomes.


rule predict:
    input:
        model=f"{RESULTS}/{{task}}/models/{{conf}}/{{method}}/{{partition}}/{{fold}}",
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
        split=f"{RESULTS}/{{task}}/suite/split.parquet",
        iid_test=f"{RESULTS}/{{task}}/iid/test.parquet",
    output:
        predictions=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
        run=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.json",
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        batch_size=config.get("predict", {}).get("batch_size", 64),
        max_length=lambda w: max_length(w.task),
        doc_stride=lambda w: training(w.task).get("doc_stride", 128),
    threads: JOB_THREADS
    resources:
        **job_resources("predict"),
    log:
        "logs/{task}/predict/{conf}/{method}/{partition}/{fold}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/predict.py"


rule outcomes:
    input:
        predictions=f"{RESULTS}/{{task}}/predictions/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
        split=f"{RESULTS}/{{task}}/suite/split.parquet",
        iid_test=f"{RESULTS}/{{task}}/iid/test.parquet",
    output:
        outcomes=f"{RESULTS}/{{task}}/outcomes/{{conf}}/{{method}}/{{partition}}/{{fold}}.parquet",
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        held_out=lambda w: fold_spec(w.task, w.partition, w.fold)["held_out"],
    log:
        "logs/{task}/outcomes/{conf}/{method}/{partition}/{fold}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/outcomes.py"
