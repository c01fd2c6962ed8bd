"""GLUE-X's Tables 3 and 4 in their layout (Yang et al., 2023; docs/OOD.md, "GLUE-X's configuration"), from the
comparison over backbones that rule ``ood_ranking`` writes (``results/ood/ood_table.csv``:
:func:`beluga.analyses.ood_eval.backbone_table` per benchmark, column ``benchmark``).

- Table 3 (the overall performance): per model, Avg OOD (GLUE-X), Avg ID (GLUE), Avg ↓ (the decrease ratio,
  100 × (ID − OOD) / ID), F-Rank OOD, F-Rank ID (Friedman ranks over the tasks) and the rank by the decrease ratio
  (1 = the smallest drop: the paper's "robustness ranking in terms of the decreased ratio"), sorted by Avg OOD
  descending as the paper sorts it. The paper's PARAM column is not computed (the models' sizes are not read).
- Table 4 (the OOD performance per task): per model, each task's OOD score (the mean over its OOD sets), Avg and
  Avg ↓, in the same order.

The tables read the benchmark ``all`` (every task averaged per system) when the ranking has it, else its one
benchmark (a single task: the columns of Table 4 are then its OOD sets). A model is its backbone label, with the
configuration and method when the system is not the IID model (a task with a suite has those systems too); a task
is named by what its backbones' task ids share (``sst2_bert``, ``sst2_roberta`` -> ``sst2``).

STS-B in both metrics: Table 4's STS-B column is GLUE-X's, the accuracy over five classes (type
``similarity_classes``); the same models' GLUE STS-B metrics, Pearson r and Spearman ρ of their expected class
against the gold score (each task's ood_table.csv, ``beluga.analyses.ood_scores.with_reported``), follow in Table 4's
columns ``<task>:<metric>:id`` / ``<task>:<metric>:ood`` (the OOD value: the mean over the task's OOD sets) and in
a table of their own (:func:`reported_columns`, :func:`tables_markdown`)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import pandas as pd

from beluga.analyses.ood_eval import ALL_TYPES, backbone_label, ood_benchmarks
from beluga.analyses.ood_report import METRIC_NAMES, REPORTED_WORDS
from beluga.analyses.ood_scores import REPORTED_ID, reported_column
from beluga.core.errors import DataError
from beluga.core.tasks import get_task_type
from beluga.core.text import md_cell

TABLE3_COLUMNS = ("model", "ood_avg", "id_avg", "decrease_ratio", "friedman_rank_ood", "friedman_rank_id",
                  "rank_decrease_ratio")
TABLE3_HEADERS = ("Model", "Avg GLUE-X (OOD)", "Avg GLUE (ID)", "Avg ↓", "F-Rank OOD", "F-Rank ID", "Rank ↓")


def layout_problem(tasks: Mapping[str, dict], suiteless) -> str | None:
    """Why the configured tasks give no GLUE-X table over all tasks (None: they give one), known before any run:
    the tables put every model on every task, which the ranking over tasks has (its benchmark ``all``) only when
    every benchmark task (:func:`~beluga.analyses.ood_eval.ood_benchmarks`) has the same backbones, each with a
    suite in all of them or in none (a suite adds its configurations' systems beside the IID model)."""
    systems: dict[str, set] = {}
    for tid, bench in ood_benchmarks(tasks).items():
        systems.setdefault(bench, set()).add((backbone_label(tasks[tid]), tid not in suiteless))
    if len(systems) < 2:
        return "fewer than two tasks with OOD sets"
    (first, want), *rest = systems.items()

    def words(v: set) -> str:
        return ", ".join(f"{b}{'' if not suite else ' (with a suite)'}" for b, suite in sorted(v))

    for bench, have in rest:
        if have != want:
            return f"task {bench!r} has the models {words(have)}; task {first!r} has {words(want)}"
    return None

def reported_tasks(tasks: Mapping[str, dict]) -> list[str]:
    """The tasks with OOD sets whose type reports metrics beside its score (``TaskType.reported_metrics``:
    GLUE-X's five-class STS-B, its GLUE Pearson / Spearman), in config order: their ood_table.csv files feed
    :func:`reported_columns`."""
    return [t for t, b in tasks.items() if b.get("ood") and get_task_type(b["type"]).reported_metrics]


def reported_column_name(task: str, metric: str, domain: str) -> str:
    """Table 4's column of a reported metric: ``<task>:<metric>:id`` / ``<task>:<metric>:ood``."""
    return f"{task}:{metric}:{domain}"


def reported_columns(table4: pd.DataFrame, tables: Mapping[str, pd.DataFrame], benchmarks: Mapping[str, str],
                     types: Mapping[str, str]) -> pd.DataFrame:
    """Table 4 with the reported metrics of the tasks in ``tables`` (task id -> its ood_table.csv; ``types``: task
    id -> task type) appended: per benchmark task (named as Table 4 names it, :func:`task_label`) and metric, each
    model's value on the i.i.d. test set (``:id``) and the mean over the task's OOD sets (``:ood``), ×100, the
    rows matched by model (:func:`model_label`); a model the tables lack, and a mean over a set without a value,
    empty."""
    out = table4.copy()
    for tid, t in tables.items():
        metrics = get_task_type(types[tid]).reported_metrics
        label = task_label(benchmarks.get(tid, tid), benchmarks)
        models = [model_label(r) for r in t.to_dict("records")]
        for m in metrics:
            sets = [c for c in t.columns if c.startswith(f"{m}:") and c != reported_column(m, REPORTED_ID)]
            if not sets:
                raise DataError(f"ood_table.csv of task {tid!r}: field '{reported_column(m, REPORTED_ID)}': no "
                                f"{m} columns (an older run: rerun rule ood)")
            values = {"id": t[reported_column(m, REPORTED_ID)].astype(float),
                      "ood": t[sets].astype(float).mean(axis=1, skipna=False)}
            for domain, v in values.items():
                col = reported_column_name(label, m, domain)
                got = dict(zip(models, v))
                out[col] = [got.get(x, out[col].iloc[i] if col in out.columns else float("nan"))
                            for i, x in enumerate(out["model"])]
    return out


def task_label(benchmark: str, benchmarks: Mapping[str, str]) -> str:
    """A benchmark task's name: the longest prefix its task ids share, up to the last ``_`` (``sst2_bert``,
    ``sst2_roberta`` -> ``sst2``); the benchmark's id when it has one task or they share none."""
    ids = [t for t, b in benchmarks.items() if b == benchmark]
    if len(ids) < 2:
        return benchmark
    prefix = os.path.commonprefix(ids)
    cut = prefix.rfind("_")
    return prefix[:cut] if cut > 0 else benchmark


def model_label(row: Mapping) -> str:
    """A system as GLUE-X's Model column: the backbone; the configuration and method when it is not the IID model."""
    if row["configuration"] == "iid":
        return str(row["backbone"])
    return f"{row['backbone']} ({row['configuration']} {row['method']})"


def tables_3_and_4(table: pd.DataFrame, benchmarks: Mapping[str, str],
                 source: str = "results/ood/ood_table.csv") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(Table 3, Table 4) from the comparison over backbones ``table`` (``benchmarks``: task id -> benchmark task,
    :func:`beluga.analyses.ood_eval.ood_benchmarks`). One line naming ``source`` and the field when a column is
    missing."""
    need = ["benchmark", "backbone", "configuration", "method", "ood_avg", "id_avg", "decrease_ratio",
            "rank_decrease_ratio", "friedman_rank_ood", "friedman_rank_id"]
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise DataError(f"{source}: field '{missing[0]}': column missing (rerun rule ood_ranking)")
    names = list(dict.fromkeys(table["benchmark"].astype(str)))
    if not names:
        raise DataError(f"{source}: field 'benchmark': no rows")
    bench = ALL_TYPES if ALL_TYPES in names else names[0]
    if bench != ALL_TYPES and len(names) > 1:
        raise DataError(f"{source}: field 'benchmark': no benchmark {ALL_TYPES!r} (the tasks do not have the same "
                        "backbones and systems), so there is no GLUE-X table over all tasks")
    sub = table[table["benchmark"].astype(str) == bench].copy()
    sub["model"] = [model_label(r) for r in sub.to_dict("records")]
    sub = sub.sort_values("ood_avg", ascending=False, kind="stable").reset_index(drop=True)
    # the CSV holds every benchmark's blocks side by side: this benchmark's are the columns it fills
    blocks = [c for c in sub.columns if c.startswith("ood:") and sub[c].notna().any()]
    if bench == ALL_TYPES:
        rename = {c: task_label(c[len("ood:"):], benchmarks) for c in blocks}
    else:
        rename = {c: c[len("ood:"):] for c in blocks}
    table3 = sub[list(TABLE3_COLUMNS)].reset_index(drop=True)
    table4 = sub[["model", *blocks, "ood_avg", "decrease_ratio"]].rename(columns=rename).reset_index(drop=True)
    return table3, table4


def _cell(v) -> str:
    return "" if pd.isna(v) else f"{float(v):.2f}"


def tables_markdown(table3: pd.DataFrame, table4: pd.DataFrame) -> str:
    """Both tables as Markdown, scores ×100 with two decimals (the paper's)."""
    lines = ["# GLUE-X Table 3: overall performance (OOD and ID averages over the tasks)", "",
             "| " + " | ".join(TABLE3_HEADERS) + " |", "|" + "---|" * len(TABLE3_HEADERS)]
    for r in table3.to_dict("records"):
        lines.append("| " + " | ".join([md_cell(r["model"])] + [_cell(r[c]) for c in TABLE3_COLUMNS[1:]]) + " |")
    lines += ["", "Avg ↓: the decrease ratio 100 × (ID − OOD) / ID; F-Rank: the Friedman rank over the tasks "
              "(1 = best); Rank ↓: the rank of the decrease ratio (1 = the smallest drop). Sorted by Avg OOD. The "
              "paper's PARAM column is not computed.", ""]
    reported = [c for c in table4.columns if c.count(":") == 2]
    tasks = [c for c in table4.columns if c not in ("model", "ood_avg", "decrease_ratio", *reported)]
    named = {t: f"{t} (five-class accuracy)" for t in dict.fromkeys(c.split(":")[0] for c in reported)}
    heads = ["Model", *[md_cell(named.get(t, t)) for t in tasks], "Avg", "Avg ↓"]
    lines += ["# GLUE-X Table 4: OOD performance per task", "", "| " + " | ".join(heads) + " |",
              "|" + "---|" * len(heads)]
    for r in table4.to_dict("records"):
        cells = [md_cell(r["model"]), *[_cell(r[t]) for t in tasks], _cell(r["ood_avg"]), _cell(r["decrease_ratio"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Each task's OOD score: the mean over its OOD sets of the task's score on each (×100; the mean "
              "of its metrics, or the one its ood_metric names)."]
    for task in named:
        lines += ["", *_reported_markdown(table4, task, reported)]
    return "\n".join(lines) + "\n"


def _reported_markdown(table4: pd.DataFrame, task: str, reported: list[str]) -> list[str]:
    """Table 4's STS-B (``task``) in GLUE's metrics beside GLUE-X's five-class accuracy (:func:`reported_columns`)."""
    metrics = list(dict.fromkeys(c.split(":")[1] for c in reported if c.split(":")[0] == task))
    names = [METRIC_NAMES.get(m, m) for m in metrics]
    heads = ["Model", f"{md_cell(task)} OOD five-class accuracy (GLUE-X, Table 4)",
             *[f"ID {n}" for n in names], *[f"OOD {n}" for n in names]]
    lines = [f"# GLUE-X Table 4, {md_cell(task)}: the same models in GLUE's STS-B metrics", "",
             "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in table4.to_dict("records"):
        cells = [md_cell(r["model"]), _cell(r.get(task)),
                 *[_cell(r[reported_column_name(task, m, "id")]) for m in metrics],
                 *[_cell(r[reported_column_name(task, m, "ood")]) for m in metrics]]
        lines.append("| " + " | ".join(c or "—" for c in cells) + " |")
    words = REPORTED_WORDS.format(metrics=" and ".join(names)).replace(
        "the table above scores", "Table 4 scores").replace("this table scores", "this table scores")
    return lines + ["", words[0].upper() + words[1:] + ". OOD: the mean over the task's OOD sets; —: not computed."]
