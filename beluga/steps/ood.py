"""rules/ood.smk: OOD evaluation of the IID model and every pair's seen model
(beluga/analyses/ood_scores.py, ood_eval.py and ood_report.py), and the GLUE-X ranking across tasks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from beluga.analyses import gluex_tables as gluex
from beluga.analyses import ood_eval as ood_eval
from beluga.analyses import ood_report, ood_scores
from beluga.core.io import read_parquet, write_csv, write_text
from beluga.report import degenerate


def ood(*, task: str, task_type: str, backbone: str, credits: dict[str, str], runs: list[dict], models: list[dict],
        data: list[str], alpha: float, correction: str, out_scores: str, out_ranking: str, out_table: str,
        out_markdown: str, out_latex: str, out_figure: str, out_models: str, out_correlation: str,
        R: int = 10_000, seed: int = 0, base_seed: int | None = None, metric: str = "mean",
        diagnostics: str | None = None) -> None:
    """``runs``: the IID model and each pair's seen model, with their outcomes
    files (``path``); ``models``: every model that predicted the OOD sets
    (predict.ood_models); ``data``: the prepared OOD sets (their names are
    the file stems, in config order); ``backbone``: the task's backbone label;
    ``credits``: each OOD set's pairing credit. The records carry every
    training seed (``seed``): the outputs are the means over seeds with their
    spread and the tests pool the seeds; with one seed, its own scores and
    tests, every ``_sd`` empty (ood_scores.evaluate; docs/OOD.md, "Training
    seeds"). ``R``, ``seed``: statistics.randomization_R and statistics.seed, the draws of the paired
    randomization that tests a two-metric score (PARA, READ); ``base_seed``: the config's seed; ``metric``:
    ``tasks.<id>.ood_metric``, the cells' score (``mean``: the mean of the task's metrics); ``diagnostics``: the
    task's diagnostics.csv: a system computed from a degenerate model (any seed's) has its cells marked
    (beluga/report/degenerate.py), models.csv a ``degenerate`` column when one is."""
    names = [Path(p).stem for p in data]
    ood_eval.check_set_names(names, task)   # the DAG refuses them already; never a table with a column replaced
    ood_scores.runs_by_seed(models, "models")   # mismatched seeds stop before anything is read
    loaded = [dict(r, outcomes=read_parquet(r["path"], "outcomes")) for r in runs]
    res = ood_scores.evaluate(loaded, names, task, task_type, backbone, credits, alpha, correction, R=R, seed=seed,
                              base_seed=base_seed, metric=metric)
    flags = degenerate.read_model_flags(diagnostics) if diagnostics is not None else None
    table = degenerate.drop_clean_flags(degenerate.system_flags(res.table, flags)) if flags is not None \
        else res.table
    legend = None
    if flags is not None and degenerate.any_flagged(table):
        part = flags["partition"].isin([degenerate.SEEN, degenerate.BASE_PARTITION])
        n_models, n_deg = int(part.sum()), int(flags.loc[part, "degenerate"].sum())
        legend = degenerate.legend(n_deg, n_models, degenerate.threshold_words({task: flags}),
                                   str(Path(diagnostics).with_name("diagnostics.md")))
    write_csv(res.long, out_scores)
    write_csv(res.ranking, out_ranking)
    write_csv(table, out_table)
    write_csv(ood_eval.correlation_frame({task: res.corr}), out_correlation)
    write_text(ood_report.ood_table_markdown(table, names, task, alpha, correction, res.corr, credits,
                                             seeds=res.seeds, task_type=task_type, metric=metric,
                                             degenerate_legend=legend), out_markdown)
    write_text(ood_report.table_latex(table, names, task, alpha, correction, seeds=res.seeds,
                                      task_type=task_type, metric=metric, degenerate_legend=legend), out_latex)
    ood_report.plot(res.table, names, task, out_figure, res.corr)
    all_models = [dict(r, outcomes=read_parquet(r["path"], "outcomes")) for r in models]
    scores = ood_scores.model_scores(all_models, names, task_type, metric)
    write_csv(degenerate.model_column(scores, flags) if flags is not None else scores, out_models)


def ood_ranking(*, scores: list[str], benchmarks: dict[str, str], out_ranking: str, out_markdown: str,
                out_table: str, out_table_markdown: str, out_correlation: str) -> None:
    """The GLUE-X ranking over the tasks' OOD scores: systems are
    ``<backbone>/<configuration>/<method>``; ``benchmarks``: task id -> its
    benchmark task (tasks of one benchmark are its backbones, ranked side by
    side); ``all`` (the benchmark tasks averaged per system) when every
    benchmark task has the same systems (ood_eval.benchmark_tables). A
    scores.csv of several training seeds holds the means over seeds: they are
    ranked as one seed's scores, and the Markdown says so."""
    long = pd.concat([pd.read_csv(p, keep_default_na=False) for p in scores], ignore_index=True)
    benches = ood_eval.benchmark_tables(long, benchmarks)
    rankings, tables, corrs, md = [], {}, {}, []
    for bench, sub in benches.items():
        ranking = ood_eval.rank_systems(sub, source=f"OOD scores of benchmark {bench!r}")
        corrs[bench] = ood_eval.id_ood_correlation(ranking)
        tables[bench] = ood_eval.backbone_table(sub, ranking)
        rankings.append(ranking.assign(benchmark=bench))
        title = "all tasks" if bench == ood_eval.ALL_TYPES else f"task {bench}"
        md.append(ood_report.ranking_markdown(ranking, f"OOD ranking (GLUE-X): {title}", corrs[bench]))
    skipped = ""
    if len(benches) > 1 and ood_eval.ALL_TYPES not in benches:
        skipped = ("No ranking over all tasks: the benchmark tasks do not have the same backbones and systems "
                   "(GLUE-X averages a backbone over tasks only where it has every task).")
        md.append(skipped + "\n")
    note = ood_report.long_seeds_note(long)   # the ranked scores are means over seeds (none for one seed)
    if note:
        md.append(note + "\n")
    ranking = pd.concat(rankings, ignore_index=True)
    write_csv(ranking[["benchmark", *ood_eval.RANKING_COLUMNS]], out_ranking)
    write_text("\n".join(md), out_markdown)
    table = pd.concat([t.assign(benchmark=b) for b, t in tables.items()], ignore_index=True)
    write_csv(table[["benchmark", *[c for c in table.columns if c != "benchmark"]]], out_table)
    write_text(ood_report.backbone_table_markdown(tables, corrs, skipped, note), out_table_markdown)
    write_csv(ood_eval.correlation_frame(corrs), out_correlation)


def gluex_tables(*, table: str, benchmarks: dict[str, str], out_table3: str, out_table4: str,
                 out_markdown: str, reported: dict[str, str] | None = None, types: dict[str, str] | None = None
                 ) -> None:
    """GLUE-X's Tables 3 and 4 in their layout from the comparison over backbones (``table``: rule ood_ranking's
    ood_table.csv; :mod:`beluga.analyses.gluex_tables`); ``reported``: task id -> the ood_table.csv of a task
    whose type reports metrics beside its score (``types``: task id -> type; GLUE-X's STS-B: its GLUE Pearson /
    Spearman, :func:`beluga.analyses.gluex_tables.reported_columns`)."""
    t3, t4 = gluex.tables_3_and_4(pd.read_csv(table, keep_default_na=False, na_values=[""]), benchmarks, source=table)
    if reported:
        t4 = gluex.reported_columns(t4, {t: pd.read_csv(p, keep_default_na=False, na_values=[""])
                                         for t, p in reported.items()}, benchmarks, types or {})
    write_csv(t3, out_table3)
    write_csv(t4, out_table4)
    write_text(gluex.tables_markdown(t3, t4), out_markdown)
