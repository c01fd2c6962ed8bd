# OOD evaluation, GLUE-X style: scores of the IID model and every pair's seen
# model on the tasks' OOD sets, decrease ratio, Friedman ranks, significance
# against the IID model; the ranking over tasks (docs/OOD.md; beluga/steps/ood.py).


rule ood:
    input:
        outcomes=lambda w: [r["path"] for r in ood_runs("models")(w)],
        data=lambda w: ood_data(w.task),
    output:
        scores=f"{RESULTS}/{{task}}/ood/scores.csv",
        ranking=f"{RESULTS}/{{task}}/ood/ranking.csv",
        table=report(
            f"{RESULTS}/{{task}}/ood/ood_table.csv",
            caption="../report/ood_table.rst",
            category="OOD evaluation",
            subcategory="{task}",
        ),
        markdown=f"{RESULTS}/{{task}}/ood/ood_table.md",
        latex=f"{RESULTS}/{{task}}/ood/ood_table.tex",
        figure=report(
            f"{RESULTS}/{{task}}/ood/ood.png",
            caption="../report/ood_figure.rst",
            category="OOD evaluation",
            subcategory="{task}",
        ),
        models=f"{RESULTS}/{{task}}/ood/models.csv",
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
        scores=[f"{RESULTS}/{t}/ood/scores.csv" for t in TASKS if OOD_SETS[t]],
    output:
        ranking=report(
            f"{RESULTS}/ood/ranking.csv",
            caption="../report/ood_ranking.rst",
            category="OOD evaluation",
        ),
        markdown=f"{RESULTS}/ood/ranking.md",
    log:
        "logs/ood_ranking.log",
    conda:
        "../envs/beluga.yaml"
    script:
        "../workflow_scripts/ood_ranking.py"
