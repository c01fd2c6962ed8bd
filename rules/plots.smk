# Pass-rate heatmaps, one per scenario.


rule heatmap:
    input:
        suite=f"{RESULTS}/{{task}}/suite/suite.parquet",
        pass_rates=f"{RESULTS}/{{task}}/scores/pass_rates.csv",
    output:
        png=f"{RESULTS}/{{task}}/plots/heatmap_{{scenario}}.png",
    params:
        configurations=SUITE_CONFIGS,
        methods=METHODS,
    log:
        "logs/{task}/heatmap_{scenario}.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/heatmap.py"


# Cheap rules run on the submitting node (never queued on a cluster).
localrules:
    all,
    prepare_iid,
    build_suite,
    split_suite,
    select_hparams,
    outcomes,
    aggregate,
    heatmap,
