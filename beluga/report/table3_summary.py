"""The paper's summaries of Table 3 (results/table3/summary.{csv,md}; docs/STATISTICS.md), from the long
Table 3 frame as written to table3.csv (:func:`beluga.report.tables.table3_csv`):

- **per configuration** (the paper's §5.2: "the overall scores (average over methods and i.i.d. test
  sets) for each configuration are 67.52, 76.33, and 87.98"): per task and configuration the mean over
  its methods of every Table 3 column (the i.i.d. score, the task's i.i.d. metrics, each G); over all tasks
  (task ``all``, with several tasks) the mean over every (task, method) cell of the columns every task has.
  The IID baseline is its own configuration (one method);
- **per scenario** (its footnote 10: "average (across methods) Gfunc ... Gclass ... Gtype", SENT
  85.97 / 78.15 / 69.54): per task, and over all tasks, the mean of each G column over every
  configuration–method pair except the IID baseline (configuration ``all``).

A mean is over the cells that have a value: a method with no score in a column (NaN, or no row for a
pair another task has) is left out and counted (``n_missing``; ``n``: the cells averaged). With several
training seeds every Table 3 cell is already the mean over seeds, and the summary is the mean of those
means — equal to the mean over seeds of each seed's summary when every cell has every seed (means are
linear); the Markdown names the seeds' count (with two or more).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from beluga.core.seeds import seeds_legend
from beluga.core.text import md_cell
from beluga.report.degenerate import MARK, WHY, cell_mark, drop_clean_flags
from beluga.report.tables import ALL_TASK, COLUMN_ORDER, table3_csv
from beluga.score.metrics import BASELINE, CONFIG_LABELS

#: summary.csv's columns
SUMMARY_COLUMNS = ("summary", "task", "configuration", "column", "value", "n", "n_missing")
ALL_CONFIGURATIONS = "all"      # the scenario summary: every configuration but the IID baseline


def _mean(cells: pd.DataFrame, pairs: list[tuple], keys: tuple[str, ...]) -> tuple[float, int, int, int]:
    """(mean, n, n_missing, n_degenerate) of ``cells``' values over ``pairs`` (tuples of ``keys``): a pair
    without a row or with a NaN value is left out and counted; ``n_degenerate``: the averaged cells computed
    from a degenerate model (their ``n_degenerate`` > 0)."""
    indexed = cells.set_index(list(keys))
    have = indexed["value"]
    flagged = indexed["n_degenerate"] if "n_degenerate" in indexed.columns else pd.Series(dtype=float)
    vals, n_deg = [], 0
    for p in pairs:
        v = have.get(p, np.nan)
        if v is None or math.isnan(float(v)):
            continue
        vals.append(float(v))
        n_deg += int(float(flagged.get(p, 0) or 0) > 0)
    return (float(np.mean(vals)) if vals else np.nan), len(vals), len(pairs) - len(vals), n_deg


def table3_summary(long: pd.DataFrame) -> pd.DataFrame:
    """summary.csv: per configuration the mean over methods of every Table 3 column, per scenario the mean of
    each G column over the configuration–method pairs (the baseline left out); per task, and over all tasks
    (task ``all``) when there are several. ``long``: the long Table 3 frame (its cross-task ``Avg`` rows,
    task ``all``, are not read: the summaries over tasks are computed from the tasks' cells). Values
    unscaled; ``n`` cells averaged, ``n_missing`` left out (no score); ``n_degenerate`` (a column only when
    one is above 0): the averaged cells computed from a degenerate model (:mod:`beluga.report.degenerate`)."""
    df = table3_csv(long)
    df = df[df["task"] != ALL_TASK]
    tasks = list(dict.fromkeys(df["task"]))
    columns = {t: list(dict.fromkeys(df.loc[df["task"] == t, "column"])) for t in tasks}
    common = [c for c in COLUMN_ORDER if all(c in columns[t] for t in tasks)]
    confs = list(dict.fromkeys(df["configuration"]))         # table3_csv's order: the baseline first
    methods = {c: list(dict.fromkeys(df.loc[df["configuration"] == c, "method"])) for c in confs}
    rows = []

    def add(kind: str, task: str, conf: str, col: str, cells: pd.DataFrame, pairs: list, keys: tuple) -> None:
        value, n, missing, n_deg = _mean(cells, pairs, keys)
        rows.append(dict(zip((*SUMMARY_COLUMNS, "n_degenerate"), (kind, task, conf, col, value, n, missing, n_deg))))

    scopes = [(t, [t], columns[t]) for t in tasks] + ([(ALL_TASK, tasks, common)] if len(tasks) > 1 else [])
    for task, in_tasks, cols in scopes:
        for conf in confs:
            for col in cols:
                cells = df[(df["configuration"] == conf) & (df["column"] == col)]
                add("configuration", task, conf, col, cells,
                    [(t, m) for t in in_tasks for m in methods[conf]], ("task", "method"))
    augmented = [(c, m) for c in confs for m in methods[c] if (c, m) != BASELINE]
    for task, in_tasks, cols in scopes:
        for col in (c for c in cols if c.startswith("G_")):
            cells = df[df["column"] == col]
            add("scenario", task, ALL_CONFIGURATIONS, col, cells,
                [(t, c, m) for t in in_tasks for c, m in augmented], ("task", "configuration", "method"))
    return drop_clean_flags(pd.DataFrame(rows, columns=[*SUMMARY_COLUMNS, "n_degenerate"]))


def _cell(r) -> str:
    if not math.isfinite(r.value):
        return "–"
    s = f"{100 * r.value:.2f}"
    return (s if not r.n_missing else f"{s} ({r.n} of {r.n + r.n_missing})") + \
        cell_mark(getattr(r, "n_degenerate", 0))


def _col_label(col: str) -> str:
    return "i.i.d." if col == "iid" else col


def _task_label(task: str) -> str:
    return "all tasks" if task == ALL_TASK else task.upper()


def table3_summary_markdown(summary: pd.DataFrame, long: pd.DataFrame | None = None) -> str:
    """summary.md: the two summaries of :func:`table3_summary` as Markdown tables (×100, two decimals, as the
    paper's text), a cell with methods left out showing how many it averages; ``long`` (the Table 3 frame)
    names its training seeds' count."""
    md = ["# Table 3 summaries", "",
          "## Per configuration: mean over methods (the paper's §5.2)", ""]
    conf = summary[summary["summary"] == "configuration"]
    found = list(dict.fromkeys(conf["column"]))     # Table 3's order: iid, the i.i.d. metrics, the G columns
    cols = sorted(found, key=lambda c: (COLUMN_ORDER.index(c) if c in COLUMN_ORDER else
                                        0.5 if c.startswith("iid") else len(COLUMN_ORDER), found.index(c)))
    md += ["| task | configuration | " + " | ".join(_col_label(c) for c in cols) + " |",
           "|---|---|" + "---:|" * len(cols)]
    for (task, c), g in conf.groupby(["task", "configuration"], sort=False):
        by = {r.column: r for r in g.itertuples(index=False)}
        label = "IID (baseline)" if c == BASELINE[0] else CONFIG_LABELS.get(c, c)
        md.append(f"| {md_cell(_task_label(task))} | {md_cell(label)} | "
                  + " | ".join(_cell(by[k]) if k in by else "" for k in cols) + " |")
    scen = summary[summary["summary"] == "scenario"]
    gcols = list(dict.fromkeys(scen["column"]))
    md += ["", "## Per scenario: mean G over the configuration–method pairs (the paper's footnote 10)", "",
           "| task | " + " | ".join(gcols) + " |", "|---|" + "---:|" * len(gcols)]
    for task, g in scen.groupby("task", sort=False):
        by = {r.column: r for r in g.itertuples(index=False)}
        md.append(f"| {md_cell(_task_label(task))} | "
                  + " | ".join(_cell(by[k]) if k in by else "" for k in gcols) + " |")
    n = pd.to_numeric(long["n_seeds"], errors="coerce").dropna() if long is not None and "n_seeds" in long else []
    counts = sorted({int(x) for x in n} or {1})
    many = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    seeds = seeds_legend(counts[-1], f" Every Table 3 cell is the mean over {many} training seeds; these are the "
                                     "means of those means (the mean over seeds of each seed's summary when every "
                                     "cell has every seed).")
    md += ["", "Scores ×100, from table3.csv (summary.csv: unscaled, with `n` cells averaged and `n_missing` left "
           "out). Per configuration: the mean over its methods of each column, per task; all tasks: over every "
           "(task, method) cell of the columns every task has (§5.2's \"average over methods and i.i.d. test "
           "sets\" is the i.i.d. column). Per scenario: the mean of each G over every configuration–method pair "
           "but the IID baseline. A method with no score is left out of a mean and counted: \"x (n of m)\"; – "
           "where no method has a score." + seeds]
    if "n_degenerate" in summary.columns and (summary["n_degenerate"] > 0).any():
        md += ["", f"{MARK}: a mean over cells of which at least one was computed from a degenerate model (marked "
               f"{MARK} in Table 3; summary.csv's `n_degenerate` counts them): each task's {WHY} says which and why."]
    return "\n".join(md) + "\n"
