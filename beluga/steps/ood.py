"""rules/ood.smk: OOD evaluation of the IID model and every pair's seen model
(beluga/analyses/ood_eval.py), and the GLUE-X ranking across tasks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from beluga.analyses import ood_eval as ood_eval
from beluga.io import read_parquet, write_csv, write_text


def ood(*, task: str, task_type: str, runs: list[dict], models: list[dict], data: list[str], alpha: float,
             correction: str, out_scores: str, out_ranking: str, out_table: str, out_markdown: str, out_latex: str,
             out_figure: str, out_models: str) -> None:
    """``runs``: the IID model and each pair's seen model, with their outcomes
    files (``path``); ``models``: every model that predicted the OOD sets
    (predict.ood_models); ``data``: the prepared OOD sets (their names are
    the file stems, in config order)."""
    names = [Path(p).stem for p in data]
    loaded = [dict(r, outcomes=read_parquet(r["path"], "outcomes")) for r in runs]
    long = ood_eval.long_scores(loaded, names, task, task_type)
    ranking = ood_eval.rank_systems(long, source=f"{task} OOD scores")
    sig = ood_eval.ood_significance(loaded, names, alpha, correction)
    table = ood_eval.ood_table(long, ranking, sig, names)
    write_csv(long, out_scores)
    write_csv(ranking, out_ranking)
    write_csv(table, out_table)
    write_text(ood_eval.ood_table_markdown(table, names, task, alpha, correction), out_markdown)
    write_text(ood_eval.table_latex(table, names, task, alpha, correction), out_latex)
    ood_eval.plot(table, names, task, out_figure)
    all_models = [dict(r, outcomes=read_parquet(r["path"], "outcomes")) for r in models]
    write_csv(ood_eval.model_scores(all_models, names, task_type), out_models)


def ood_ranking(*, scores: list[str], out_ranking: str, out_markdown: str) -> None:
    """The GLUE-X ranking over every task's OOD sets (Friedman ranks over tasks)."""
    long = pd.concat([pd.read_csv(p, keep_default_na=False) for p in scores], ignore_index=True)
    ranking = ood_eval.rank_systems(long, source="OOD scores of all tasks")
    write_csv(ranking, out_ranking)
    write_text(ood_eval.ranking_markdown(ranking, "OOD ranking over tasks (GLUE-X)"), out_markdown)
