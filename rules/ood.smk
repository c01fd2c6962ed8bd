# OOD evaluation, GLUE-X style: scores of the IID model and every pair's seen
# model on the tasks' OOD sets, decrease ratio, Friedman ranks, significance
# against the IID model, the ID–OOD correlation; the ranking over tasks and backbones
# (docs/OOD.md; beluga/steps/ood.py).

from beluga.analyses import ood_eval as beluga_ood_eval


rule ood:
    input:
        outcomes=lambda w: RUNS.run_files(w.task, "outcomes", RUNS.ood_keys(w.task, "models")),
        data=lambda w: RUNS.ood_data(w.task),
        # every model's degenerate flag: a system computed from a degenerate model has its cells marked
        diagnostics=PATHS.diagnostics("diagnostics.csv"),
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
        correlation=PATHS.ood("correlation.csv"),
    log:
        "logs/{task}/ood.log",
    conda:
        "../envs/beluga.yaml"
    params:
        runs=ood_runs("systems"),
        models=ood_runs("models"),
        task_type=lambda w: TASKS[w.task]["type"],
        ood_metric=lambda w: TASKS[w.task]["ood_metric"],
        backbone=lambda w: beluga_ood_eval.backbone_label(TASKS[w.task]),
        credits=lambda w: {n: beluga_ood.ood_credit(e) for n, e in RUNS.ood_sets[w.task].items()},
        alpha=STATISTICS["alpha"],
        correction=STATISTICS["correction"],
        R=STATISTICS["randomization_R"],
        seed=STATISTICS["seed"],
        base_seed=RUNS.base_seed,
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
        table=report(
            PATHS.ood_ranking("ood_table.csv"),
            caption="../report/ood_comparison.rst",
            category="OOD evaluation",
        ),
        table_markdown=PATHS.ood_ranking("ood_table.md"),
        correlation=PATHS.ood_ranking("correlation.csv"),
    log:
        "logs/ood_ranking.log",
    conda:
        "../envs/beluga.yaml"
    params:
        benchmarks=beluga_ood_eval.ood_benchmarks(TASKS),
    script:
        "../workflow_scripts/ood_ranking.py"


# GLUE-X's Tables 3 and 4 in its layout (configs/gluex_paper.yaml: tasks without a suite; docs/OOD.md).
rule gluex_tables:
    input:
        table=PATHS.ood_ranking("ood_table.csv"),
        # GLUE-X's STS-B: the same models' GLUE Pearson / Spearman, from each such task's OOD table
        reported=[PATHS.ood("ood_table.csv", t) for t in beluga_gluex.reported_tasks(TASKS)],
    output:
        table3=PATHS.ood_ranking("gluex_table3.csv"),
        table4=PATHS.ood_ranking("gluex_table4.csv"),
        markdown=report(
            PATHS.ood_ranking("gluex_tables.md"),
            caption="../report/ood_comparison.rst",
            category="OOD evaluation",
        ),
    log:
        "logs/gluex_tables.log",
    conda:
        "../envs/beluga.yaml"
    params:
        benchmarks=beluga_ood_eval.ood_benchmarks(TASKS),
        reported=beluga_gluex.reported_tasks(TASKS),
        types={t: TASKS[t]["type"] for t in TASKS},
    script:
        "../workflow_scripts/gluex_tables.py"
