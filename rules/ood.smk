# OOD evaluation, GLUE-X style: scores of the IID model and every pair's seen
# model on the tasks' OOD sets, decrease ratio, Friedman ranks, significance
# against the IID model; the ranking over tasks (docs/OOD.md; beluga/steps/ood.py).


rule ood:
    input:
        outcomes=lambda w: [PATHS.run("outcomes", w.task, *k) for k in RUNS.ood_keys(w.task, "models")],
        data=lambda w: RUNS.ood_data(w.task),
    output:
        scores=PATHS.ood("scores.csv"),
        ranking=PATHS.ood("ranking.csv"),
        table=report(
            PATHS.ood("ood_table.csv"),
            caption="../report/ood_table.rst",
            category="OOD evaluation",
            subcategory="{task}",
        ),
        markdown=PATHS.ood("ood_table.md"),
        latex=PATHS.ood("ood_table.tex"),
        figure=report(
            PATHS.ood("ood.png"),
            caption="../report/ood_figure.rst",
            category="OOD evaluation",
            subcategory="{task}",
        ),
        models=PATHS.ood("models.csv"),
    log:
        "logs/{task}/ood.log",
    conda:
        "../envs/beluga.yaml"
    params:
        runs=ood_runs("systems"),
        models=ood_runs("models"),
        task_type=lambda w: TASKS[w.task]["type"],
        alpha=STATISTICS["alpha"],
        correction=STATISTICS["correction"],
    script:
        "../workflow_scripts/ood.py"


rule ood_ranking:
    input:
        scores=[PATHS.ood("scores.csv", t) for t in TASKS if RUNS.ood_sets[t]],
    output:
        ranking=report(
            PATHS.ood_ranking("ranking.csv"),
            caption="../report/ood_ranking.rst",
            category="OOD evaluation",
        ),
        markdown=PATHS.ood_ranking("ranking.md"),
    log:
        "logs/ood_ranking.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/ood_ranking.py"
