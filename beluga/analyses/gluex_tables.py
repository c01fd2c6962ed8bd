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
is named by what its backbones' task ids share (``sst2_bert``, ``sst2_roberta`` -> ``sst2``)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import pandas as pd

from beluga.analyses.ood_eval import ALL_TYPES, backbone_label, ood_benchmarks
from beluga.core.errors import DataError
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
    tasks = [c for c in table4.columns if c not in ("model", "ood_avg", "decrease_ratio")]
    heads = ["Model", *map(md_cell, tasks), "Avg", "Avg ↓"]
    lines += ["# GLUE-X Table 4: OOD performance per task", "", "| " + " | ".join(heads) + " |",
              "|" + "---|" * len(heads)]
    for r in table4.to_dict("records"):
        cells = [md_cell(r["model"]), *[_cell(r[t]) for t in tasks], _cell(r["ood_avg"]), _cell(r["decrease_ratio"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Each task's OOD score: the mean over its OOD sets of the task's score on each (×100; the mean "
              "of its metrics, or the one its ood_metric names)."]
    return "\n".join(lines) + "\n"
