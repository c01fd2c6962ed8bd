# Pass-rate heatmaps, one per scenario, and Figure 1 (beluga/steps/plots.py), from each
# training seed's pass rates (several seeds: the mean with the spread over seeds).


rule heatmap:
    input:
        suite=PATHS.suite(),
        pass_rates=PATHS.scores("per_seed_pass_rates.csv"),
    output:
        png=report(
            PATHS.plots("heatmap_{scenario}.png"),
            caption="../report/heatmap.rst",
            category="Heatmaps",
            subcategory="{task}",
        ),
    log:
        "logs/{task}/heatmap_{scenario}.log",
    conda:
        "../envs/beluga.yaml"
    params:
        configurations=SUITE_CONFIGS,
        methods=METHODS,
    script:
        "../workflow_scripts/heatmap.py"


rule figure1:
    input:
        suite=PATHS.suite(),
        pass_rates=PATHS.scores("per_seed_pass_rates.csv"),
    output:
        png=report(
            PATHS.figures("figure1.png"),
            caption="../report/figure1.rst",
            category="Figure 1",
            subcategory="{task}",
        ),
        pdf=PATHS.figures("figure1.pdf"),
    log:
        "logs/{task}/figure1.log",
    conda:
        "../envs/beluga.yaml"
    params:
        configurations=SUITE_CONFIGS,
        methods=METHODS,
        layout=config["figure1"]["layout"],
    script:
        "../workflow_scripts/figure1.py"
