"""Degenerate models where results are shown: which models a table's cell was computed from, how many of
them the diagnostics flag degenerate (:func:`beluga.report.diagnostics.run_diagnostics`: one class -- one
answer, a near-constant score -- for (almost) every input), and the mark, legend and run-end lines that say
so. A cell computed from a degenerate model, or from a set of models (folds, training seeds) with one, is
marked :data:`MARK` (LaTeX: :data:`LATEX_MARK`), is never bold as a column's best, and its table says under
it what the mark means and where to read why (each task's diagnostics/diagnostics.md). A table none of
whose cells rests on a degenerate model is written without mark, legend or flag columns.

Which models a Table 3 cell rests on (:func:`cell_partitions`): the IID baseline's row, the IID model
(partition ``standard``); a pair's i.i.d. columns, its seen model (``iid_score`` is s_iid of the seen
model); ``G_<scenario>``, the scenario's fold models, and the seen model too when s_iid comes from it
(``tasks.<id>.scenario_iid: seen``); ``G_avg``, every scenario's; the cross-task ``Avg``, every task's
``G_avg`` models. Every training seed's models count (a cell is their mean)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import DataError
from beluga.score.metrics import BASELINE

#: the mark of a cell computed from a degenerate model (Markdown, HTML, the terminal)
MARK = "⚠"
#: the same in LaTeX
LATEX_MARK = r"$^{\ast}$"
#: the machine columns of a marked table (a CSV file): its cell's models and how many are degenerate
FLAG_COLUMNS = ("n_models", "n_degenerate")
#: the partition of the IID baseline's model
BASE_PARTITION = "standard"
SEEN = "seen"
#: where a task's diagnostics say why (relative to its results folder)
WHY = "diagnostics/diagnostics.md"
_FLAG_SOURCE_COLUMNS = ("configuration", "method", "partition", "degenerate")


def flag_value(v) -> bool:
    """A degenerate flag as a row holds it or as read back from CSV (missing: False); ValueError for a value
    that is not a flag."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return False
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("true", "1", "yes"):
            return True
        if s in ("false", "0", "no", ""):
            return False
        raise ValueError(v)
    return bool(v)


def model_flags(diagnostics: pd.DataFrame, source: str) -> pd.DataFrame:
    """Every model of a task's diagnostics.csv (``source`` names it in errors): configuration, method,
    partition, the degenerate flag (bool) and where it was raised (``degenerate_on``), and
    ``degenerate_share`` (the threshold the flags used)."""
    for c in _FLAG_SOURCE_COLUMNS:
        if c not in diagnostics.columns:
            raise DataError(f"{source}: field '{c}': missing column (the diagnostics of every model are needed: "
                            f"{', '.join(_FLAG_SOURCE_COLUMNS)})")
    out = diagnostics[[c for c in diagnostics.columns if c in (*_FLAG_SOURCE_COLUMNS, "fold", "seed",
                                                                 "degenerate_on", "degenerate_share")]].copy()
    for c in ("configuration", "method", "partition"):
        out[c] = out[c].astype(str)
    flags = []
    for i, v in enumerate(out["degenerate"].tolist()):
        try:
            flags.append(flag_value(v))
        except ValueError:
            raise DataError(f"{source}: field 'degenerate': row {i + 1} is {v!r}, not true or false") from None
    out["degenerate"] = flags
    return out.reset_index(drop=True)


def read_model_flags(path) -> pd.DataFrame:
    """:func:`model_flags` of a diagnostics.csv file."""
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: field '(file)': not a readable diagnostics table ({e})") from None
    return model_flags(frame, str(path))


def count(flags: pd.DataFrame, configuration: str, method: str, partitions) -> tuple[int, int]:
    """(models, degenerate models) of a configuration-method pair in ``partitions`` (every training seed's)."""
    sel = flags[(flags["configuration"] == configuration) & (flags["method"] == method)
                & flags["partition"].isin(set(partitions))]
    return int(len(sel)), int(sel["degenerate"].sum())


# ---------------------------------------------------------------- Table 3
def cell_partitions(configuration: str, column: str, scenarios, scenario_iid: str = "folds") -> set[str]:
    """The partitions whose models a Table 3 cell of a task was computed from (see the module docstring);
    ``scenarios``: the task's scenarios in the table (seen, func...)."""
    if configuration == BASELINE[0]:
        return {BASE_PARTITION}
    extra = {SEEN} if scenario_iid == SEEN else set()
    if column.startswith("iid"):
        return {SEEN}
    if column == "G_avg":
        return set(scenarios) | extra
    if column.startswith("G_"):
        return {column[2:]} | extra
    raise ValueError(f"Table 3 column {column!r}: not an i.i.d. or G column")


def table3_flags(long: pd.DataFrame, flags: dict[str, pd.DataFrame], scenario_iid: dict[str, str] | None = None,
                 sources: dict[str, str] | None = None) -> pd.DataFrame:
    """The long Table 3 frame (:func:`beluga.report.run_stats.table3_long`) with :data:`FLAG_COLUMNS`: per
    cell its models and how many of them are degenerate (``flags``: task -> :func:`model_flags`;
    ``scenario_iid``: task -> ``tasks.<id>.scenario_iid``; ``sources``: task -> its diagnostics file, for
    errors). The cross-task Avg (task ``all``) counts every task's G_avg models. A cell with a value and no
    model in its task's diagnostics is one DataError line (diagnostics of another run)."""
    scenario_iid, sources = scenario_iid or {}, sources or {}
    df = long.reset_index(drop=True)
    tasks = [t for t in dict.fromkeys(df["task"].astype(str)) if t != "all"]
    missing = [t for t in tasks if t not in flags]
    if missing:
        raise DataError(f"table3: field 'diagnostics': no diagnostics of task {missing[0]!r}")
    scen = {t: [c[2:] for c in dict.fromkeys(df.loc[df["task"] == t, "column"])
                if c.startswith("G_") and c != "G_avg"] for t in tasks}
    n_models, n_deg = [], []
    for r in df.itertuples(index=False):
        task, conf, method, col = str(r.task), str(r.configuration), str(r.method), str(r.column)
        if task == "all":
            parts = [(t, cell_partitions(conf, "G_avg", scen[t], scenario_iid.get(t, "folds"))) for t in tasks]
        else:
            parts = [(task, cell_partitions(conf, col, scen[task], scenario_iid.get(task, "folds")))]
        counts = [count(flags[t], conf, method, p) for t, p in parts]
        n, d = sum(c[0] for c in counts), sum(c[1] for c in counts)
        if n == 0 and np.isfinite(float(r.value)):
            where = sources.get(task, f"{task}'s diagnostics") if task != "all" else "the diagnostics"
            raise DataError(f"{where}: field 'partition': no model of {conf}/{method} "
                            f"({', '.join(sorted(parts[0][1]))}) for Table 3's {task}/{col} (diagnostics of "
                            "another run? rerun rule diagnostics)")
        n_models.append(n)
        n_deg.append(d)
    return df.assign(n_models=n_models, n_degenerate=n_deg)


def system_flags(frame: pd.DataFrame, flags: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (one row per configuration-method pair: the OOD table's systems) with :data:`FLAG_COLUMNS`:
    its models are the IID model for the baseline and the pair's seen model otherwise (every training seed's)."""
    counts = [count(flags, str(c), str(m), {BASE_PARTITION} if c == BASELINE[0] else {SEEN})
              for c, m in zip(frame["configuration"], frame["method"])]
    return frame.assign(n_models=[c[0] for c in counts], n_degenerate=[c[1] for c in counts])


def model_column(frame: pd.DataFrame, flags: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (one row per model: configuration, method, partition, fold and, with several training seeds,
    seed) with a ``degenerate`` column when one of its models is degenerate (else as it is)."""
    keys = [k for k in ("seed", "configuration", "method", "partition", "fold") if k in frame.columns
            and k in flags.columns]
    key = lambda df: list(zip(*(df[k].astype(str) for k in keys)))  # noqa: E731
    flagged = {k for k, d in zip(key(flags), flags["degenerate"]) if d}
    marks = [k in flagged for k in key(frame)]
    return frame.assign(degenerate=marks) if any(marks) else frame


def any_flagged(frame: pd.DataFrame) -> bool:
    """Whether a frame with ``n_degenerate`` holds a cell computed from a degenerate model."""
    return "n_degenerate" in frame.columns and bool((pd.to_numeric(frame["n_degenerate"]).fillna(0) > 0).any())


def drop_clean_flags(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without :data:`FLAG_COLUMNS` when none of its cells rests on a degenerate model."""
    return frame if any_flagged(frame) else frame.drop(columns=[c for c in FLAG_COLUMNS if c in frame.columns])


# ---------------------------------------------------------------- legends
def totals(flags: dict[str, pd.DataFrame], pairs=None) -> tuple[int, int]:
    """(models, degenerate models) over every task's flags (``pairs``: only these configuration-method
    pairs)."""
    n = d = 0
    for f in flags.values():
        if pairs is not None:
            keep = [(c, m) in set(pairs) for c, m in zip(f["configuration"], f["method"])]
            f = f[keep]
        n += len(f)
        d += int(f["degenerate"].sum())
    return n, d


def threshold_words(flags: dict[str, pd.DataFrame]) -> str:
    """The diagnostics' threshold as a legend says it ("95%"; several: each)."""
    shares = sorted({float(s) for f in flags.values() if "degenerate_share" in f.columns
                     for s in pd.to_numeric(f["degenerate_share"], errors="coerce").dropna()})
    return " / ".join(f"{100 * s:.0f}%" for s in shares) or "95%"


def legend(n_degenerate: int | None = None, n_models: int | None = None, threshold: str = "95%",
           why: str = f"each task's {WHY}") -> str:
    """The line under a marked table: what the mark means, how many models are degenerate (when given),
    where to read why (LaTeX: the line escaped, :data:`MARK` replaced by :data:`LATEX_MARK`)."""
    counts = f" ({n_degenerate} of {n_models} models are)" if n_degenerate is not None else ""
    return (f"{MARK}: computed from a degenerate model, or from a set of models (folds, training seeds) with "
            f"one{counts}; such a cell is never bold. A model is degenerate when it predicts one class (one "
            f"answer; a similarity model: a near-constant score) for at least {threshold} of the i.i.d. test set "
            f"or of the suite: {why} says which and why.")


def why_paths(tasks) -> str:
    """Where to read why: each task's diagnostics."""
    return ", ".join(f"{t}/{WHY}" for t in tasks)


# ---------------------------------------------------------------- the run's last lines
def run_summary(paths: dict[str, str]) -> list[dict]:
    """Per task whose diagnostics.csv exists (``paths``: task -> that file): its models, how many are
    degenerate (on the i.i.d. test set / on the suite) and its diagnostics.md. A file that cannot be read is
    a row with its error (``error``)."""
    rows = []
    for task, path in paths.items():
        if not Path(path).is_file():
            continue
        why = str(Path(path).with_name("diagnostics.md"))
        try:
            f = read_model_flags(path)
        except DataError as e:
            rows.append({"task": task, "error": str(e), "why": why})
            continue
        on = f["degenerate_on"].astype(object).where(f["degenerate_on"].notna(), "").astype(str) \
            if "degenerate_on" in f.columns else pd.Series("", f.index)
        rows.append({"task": task, "n_models": int(len(f)), "n_degenerate": int(f["degenerate"].sum()),
                     "n_iid": int(on.isin(["iid", "both"]).sum()), "n_suite": int(on.isin(["suite", "both"]).sum()),
                     "why": why})
    return rows


def table_counts(path) -> tuple[int, int] | None:
    """(models, degenerate models) of an analysis table with :data:`FLAG_COLUMNS` (inoculation, combinational:
    per row its models); (0, 0) for a table without them (none degenerate); None when the file is absent."""
    if not Path(path).is_file():
        return None
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: field '(file)': not a readable table ({e})") from None
    if "n_degenerate" not in frame.columns:
        return 0, 0
    n = pd.to_numeric(frame.get("n_models", pd.Series(0, index=frame.index)), errors="coerce").fillna(0)
    d = pd.to_numeric(frame["n_degenerate"], errors="coerce").fillna(0)
    return int(n.sum()), int(d.sum())


def degenerate_lines(diagnostics: dict[str, str], analyses: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """The lines a finished run prints last (Snakefile ``onsuccess``): how many of its models are degenerate
    and, per task with one, where to read why (:func:`run_summary` of ``diagnostics``: task -> its
    diagnostics.csv); then each analysis table (``analyses``: a name -> (its table.csv, the page that says
    why)) whose cells rest on degenerate models. Nothing when no diagnostics were written (a target that did
    not need them); a file that cannot be read is a line saying so (the run itself succeeded)."""
    rows = run_summary(diagnostics)
    ok = [r for r in rows if "error" not in r]
    n, d = sum(r["n_models"] for r in ok), sum(r["n_degenerate"] for r in ok)
    lines = []
    if d:
        lines.append(f"BELUGA warning: {d} of {n} models are degenerate (one class, answer or score for (almost) "
                     f"every input); the cells computed from them are marked {MARK} and never bold. Why:")
        for r in ok:
            if r["n_degenerate"]:
                where = " and ".join(w for w, k in (("the i.i.d. test set", "n_iid"), ("the suite", "n_suite"))
                                     if r[k])
                lines.append(f"  {r['task'].upper()}: {r['n_degenerate']} of {r['n_models']} models (on {where}): "
                             f"{r['why']}")
    elif ok:
        lines.append(f"BELUGA: no model is degenerate ({n} models; diagnostics: "
                     f"{', '.join(r['why'] for r in ok)})")
    lines += [f"BELUGA warning: {r['task'].upper()}: degenerate models not counted: {r['error']}"
              for r in rows if "error" in r]
    for name, (table, why) in (analyses or {}).items():
        try:
            counts = table_counts(table)
        except DataError as e:
            lines.append(f"BELUGA warning: {name}: degenerate models not counted: {e}")
            continue
        if counts is not None and counts[1]:
            lines.append(f"BELUGA warning: {name}: {counts[1]} of the {counts[0]} models its table rests on are "
                         f"degenerate (marked {MARK}): {why}")
    return lines


def cell_mark(n_degenerate) -> str:
    """`` ⚠`` for a cell computed from a degenerate model, else empty."""
    try:
        return f" {MARK}" if int(n_degenerate or 0) > 0 else ""
    except (TypeError, ValueError):
        return ""
