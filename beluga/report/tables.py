"""Table 3 of the BELUGA paper: i.i.d. score and G scores per configuration-method
row, the IID baseline first, significance against the baseline marked, best per
column in bold (docs/PROCEDURE.md, §6-7).

Input is a tidy "long" frame, one row per (task, configuration, method, column):
``task`` ("all" for the cross-task average), ``configuration``, ``method``,
``column`` ("iid", "G_seen", "G_func", "G_class", "G_type", "G_avg"; "Avg" for
task "all"), ``value`` in [0, 1], ``ci_lo`` / ``ci_hi``, ``p_value`` /
``p_adjusted`` (NaN for the baseline), ``significant`` and ``direction``
(+1 better, -1 worse, 0 not significant).

Choices:
- a cell is marked only when ``significant`` is true and ``direction`` is +1 or
  -1; rows of the IID configuration are never marked;
- "best" is the maximum of the values as displayed (×100, one decimal), so cells
  that print the same number are all bold;
- missing values print as "–" (Markdown) or "--" (LaTeX, an en dash);
- a task whose i.i.d. data are not the paper's (``iid_notes``: task -> one sentence,
  :func:`beluga.report.iid_data.fallback_lines`) has its headers marked † and a footnote.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from beluga.core.seeds import plus_minus, seeds_legend
from beluga.core.text import md_cell
from beluga.report.degenerate import LATEX_MARK as DEGENERATE_LATEX_MARK
from beluga.report.degenerate import MARK as DEGENERATE_MARK
from beluga.report.degenerate import drop_clean_flags
from beluga.report.degenerate import legend as degenerate_line
from beluga.report.iid_data import DAGGER, SEE, footnote_markdown
from beluga.score.metrics import BASELINE, CONFIG_LABELS

REQUIRED_COLUMNS = ("task", "configuration", "method", "column", "value", "ci_lo", "ci_hi", "p_value",
                    "p_adjusted", "significant", "direction")
NUMERIC_COLUMNS = ("value", "ci_lo", "ci_hi", "p_value", "p_adjusted")
#: the columns whose score may be negative: correlations (MCC, Pearson, Spearman) and s_iid, which may be one
SIGNED_COLUMNS = ("iid", "iid_mcc", "iid_pearson", "iid_spearman")
CONFIG_ORDER = ("iid", "iid_to_t", "iid_plus_t", "iid_to_iid_plus_t")
COLUMN_ORDER = ("iid", "G_standard", "G_seen", "G_func", "G_class", "G_type", "G_avg", "Avg")
ALL_TASK = "all"
AVG_COLUMN = "Avg"
DASH = "–"
UP, DOWN = "▲", "▼"
ROW_KEYS = ("configuration", "method")

LATEX_CONFIG_LABELS = {"iid": "IID", "iid_to_t": r"IID$\to$T", "iid_plus_t": "IID+T",
                       "iid_to_iid_plus_t": r"IID$\to$(IID+T)"}
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text) -> str:
    """Escape the characters LaTeX treats specially (``_ & % $ # { } ~ ^ \\``)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


# ---------------------------------------------------------------- validation --

def _validate(long: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(long, pd.DataFrame):
        raise ValueError(f"Table 3 input: expected a DataFrame, got {type(long).__name__}")
    for col in REQUIRED_COLUMNS:
        if col not in long.columns:
            raise ValueError(f"Table 3 input: missing column {col!r} (required: {', '.join(REQUIRED_COLUMNS)})")
    if not len(long):
        raise ValueError("Table 3 input: no rows")
    df = long.copy()
    for col in ("task", "configuration", "method", "column"):
        if df[col].isna().any():
            raise ValueError(f"Table 3 input: column {col!r} has missing entries")
        df[col] = df[col].astype(str)
    for col in NUMERIC_COLUMNS:
        try:
            df[col] = pd.to_numeric(df[col]).astype(float)
        except (TypeError, ValueError) as e:
            raise ValueError(f"Table 3 input: column {col!r} is not numeric: {e}") from None
    # a correlation (MCC, Pearson, Spearman; s_iid when it is one) lies in [-1, 1], every other score in [0, 1]
    lo = np.where(df["column"].isin(SIGNED_COLUMNS), -1.0, 0.0)
    bad = df["value"].notna() & ~((df["value"] >= lo) & (df["value"] <= 1.0))
    if bad.any():
        r = df[bad].iloc[0]
        span = "[-1, 1]" if r["column"] in SIGNED_COLUMNS else "[0, 1]"
        raise ValueError(f"Table 3 input: column 'value' must lie in {span} (unscaled); got {r['value']!r} for "
                         f"{r['task']}/{r['configuration']}/{r['method']}/{r['column']}")
    df["significant"] = df["significant"].astype(object).where(df["significant"].notna(), False).astype(bool)
    direction = pd.to_numeric(df["direction"]).fillna(0)
    if not direction.isin([-1, 0, 1]).all():
        raise ValueError(f"Table 3 input: column 'direction' must be -1, 0 or +1; got "
                         f"{sorted(set(direction) - {-1, 0, 1})}")
    df["direction"] = direction.astype(int)
    keys = ["task", "configuration", "method", "column"]
    dup = df.duplicated(keys)
    if dup.any():
        r = df[dup].iloc[0]
        raise ValueError(f"Table 3 input: duplicate row for {'/'.join(str(r[k]) for k in keys)}")
    return df


# ------------------------------------------------------------------- layout --

def _column_rank(col: str) -> float:
    if col in COLUMN_ORDER:
        return COLUMN_ORDER.index(col)
    return 0.5 if col.startswith("iid") else len(COLUMN_ORDER)  # other i.i.d. metrics right after "iid"


def _config_rank(conf: str) -> int:
    return CONFIG_ORDER.index(conf) if conf in CONFIG_ORDER else len(CONFIG_ORDER)


def _wide_name(task: str, col: str) -> str:
    return AVG_COLUMN if (task == ALL_TASK and col == AVG_COLUMN) else f"{task}:{col}"


def _layout(df: pd.DataFrame) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Rows: (configuration, method) pairs, the baseline first; columns:
    (task, column, wide name), grouped per task in order of appearance, "all" last."""
    methods = list(dict.fromkeys(df["method"]))
    seen = list(dict.fromkeys(df["configuration"]))
    confs = sorted(seen, key=lambda c: (_config_rank(c), seen.index(c)))
    present = set(zip(df["configuration"], df["method"]))
    rows = [BASELINE] if BASELINE in present else []
    rows += [(c, m) for c in confs for m in methods if (c, m) in present and (c, m) != BASELINE]

    tasks = list(dict.fromkeys(df["task"]))
    tasks = [t for t in tasks if t != ALL_TASK] + [t for t in tasks if t == ALL_TASK]
    cols = []
    for task in tasks:
        found = list(dict.fromkeys(df.loc[df["task"] == task, "column"]))
        names = sorted(found, key=lambda c: (_column_rank(c), found.index(c)))
        cols += [(task, c, _wide_name(task, c)) for c in names]
    return rows, cols


def _pivot(df: pd.DataFrame, rows, cols, field: str) -> pd.DataFrame:
    s = df.set_index(["configuration", "method", "task", "column"])[field]
    out = pd.DataFrame({"configuration": [r[0] for r in rows], "method": [r[1] for r in rows]})
    for task, col, name in cols:
        out[name] = [s.get((c, m, task, col), np.nan) for c, m in rows]
    return out


def wide_table(long: pd.DataFrame, field: str = "value") -> pd.DataFrame:
    """One row per configuration-method pair (the IID baseline first, then
    iid_to_t, iid_plus_t, iid_to_iid_plus_t, methods in order of first
    appearance) with columns ``configuration``, ``method`` and one column per
    (task, score) named ``"<task>:<column>"`` (``"Avg"`` for the cross-task
    average, last). Cells hold ``field`` of the long frame (default: the value,
    unscaled); missing cells are NaN."""
    df = _validate(long)
    if field not in df.columns:
        raise ValueError(f"Table 3 input: no column {field!r}")
    rows, cols = _layout(df)
    return _pivot(df, rows, cols, field)


def _spread(long: pd.DataFrame) -> tuple[np.ndarray, str]:
    """(standard deviations over training seeds aligned with :func:`_grid`'s values, empty with one seed; a
    sentence saying how many seeds each cell has). A frame without ``sd`` / ``n_seeds`` is one seed's."""
    df = _validate(long)
    rows, cols = _layout(df)
    names = [c[2] for c in cols]
    sd = _pivot(df.assign(sd=df["sd"] if "sd" in df.columns else np.nan), rows, cols, "sd")[names]
    counts = sorted({int(n) for n in pd.to_numeric(df.get("n_seeds", pd.Series(dtype=float)),
                                                    errors="coerce").dropna()} or {1})
    many = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return sd.to_numpy(dtype=float), (
        seeds_legend(counts[-1], f"Every cell: mean ± standard deviation over {many} training seeds; marks from "
                                 "tests stratified by seed (docs/STATISTICS.md).")
        or "Every cell: one training seed (no spread over seeds).")


def _intervals_text(intervals: list[str] | tuple[str, ...] | None) -> str:
    """Where the confidence intervals are: the CSV file's ci_lo / ci_hi, and each task's intervals file."""
    where = "" if not intervals else f"; per task also in {', '.join(map(str, intervals))}"
    return ("95% bootstrap confidence intervals (ci_lo, ci_hi), p-values and adjusted p-values are in the CSV file"
            f"{where}.")


def _grid(long: pd.DataFrame):
    """Values, marks (+1 / -1 / 0), bold flags and degenerate flags (a cell computed from a degenerate model:
    ``n_degenerate`` > 0, :mod:`beluga.report.degenerate`) as aligned numpy arrays. A degenerate cell is never
    bold: the best of a column is the best of its other cells."""
    df = _validate(long)
    rows, cols = _layout(df)
    names = [c[2] for c in cols]
    values = _pivot(df, rows, cols, "value")[names].to_numpy(dtype=float)
    sig = _pivot(df, rows, cols, "significant")[names].fillna(False).to_numpy(dtype=bool)
    direction = _pivot(df, rows, cols, "direction")[names].fillna(0).to_numpy(dtype=float)
    marks = np.where(sig & np.isfinite(values), np.sign(direction), 0).astype(int)
    for i, (conf, _m) in enumerate(rows):
        if conf == BASELINE[0]:
            marks[i, :] = 0
    degenerate = np.zeros(values.shape, dtype=bool)
    if "n_degenerate" in df.columns:
        n_deg = _pivot(df.assign(n_degenerate=pd.to_numeric(df["n_degenerate"], errors="coerce")), rows, cols,
                       "n_degenerate")[names].fillna(0).to_numpy(dtype=float)
        degenerate = n_deg > 0
    shown = np.array([[float(f"{100 * v:.1f}") if math.isfinite(v) else np.nan for v in row] for row in values])
    shown = np.where(degenerate, np.nan, shown.reshape(values.shape))
    bold = np.zeros(values.shape, dtype=bool)
    for j in range(values.shape[1]):
        if np.isfinite(shown[:, j]).any():
            bold[:, j] = shown[:, j] == np.nanmax(shown[:, j])
    return rows, cols, values, marks, bold, degenerate


# ------------------------------------------------------------------ legends --

def _correction_text(correction: str | None) -> str:
    if correction is None or str(correction).lower() in ("", "none", "no"):
        return "no correction for multiple comparisons"
    if str(correction).lower() in ("holm", "holm-bonferroni", "holm–bonferroni"):
        return "p-values adjusted with Holm's method"
    return f"p-values adjusted with the {correction} correction"


def _task_label(task: str) -> str:
    return "Avg" if task == ALL_TASK else task.upper()


def _row_label(conf: str, labels: dict[str, str] = CONFIG_LABELS, escape=str) -> str:
    return "IID (baseline)" if conf == BASELINE[0] else labels.get(conf, escape(conf))


# ----------------------------------------------------------------- Markdown --

def _shown_notes(iid_notes: dict[str, str] | None, cols) -> dict[str, str]:
    """The i.i.d.-data notes of the tasks the table shows (``cols``: (task, column, name))."""
    shown = {c[0] for c in cols}
    return {t: n for t, n in (iid_notes or {}).items() if t in shown}


def _non_sum_metrics(cols) -> str:
    """The legend's words for the i.i.d. scores tested by paired randomization: MCC named where a task shows it
    (ACCEPTABILITY's ``iid_mcc``), Pearson / Spearman where a task shows them (SIMILARITY's)."""
    shown = {col for _t, col, *_x in cols}
    named = ["F1"] + (["MCC"] if "iid_mcc" in shown else []) + \
        (["Pearson / Spearman"] if shown & {"iid_pearson", "iid_spearman"} else [])
    return f"{', '.join(named)} or the mean of two metrics"


def table3_markdown(long: pd.DataFrame, alpha: float = 0.05, correction: str | None = "holm",
                    iid_notes: dict[str, str] | None = None, intervals: list[str] | None = None,
                    degenerate_legend: str | None = None) -> str:
    """Table 3 as a Markdown table (×100, one decimal) with a legend paragraph; every cell is the mean ± the
    standard deviation over the training seeds (no spread where the sd is empty, as with one seed).
    ``iid_notes``: task -> the sentence saying its i.i.d. data are not the paper's (its headers marked †, the
    sentences in a footnote). The legend says how many training seeds each cell has and where the intervals
    are (``intervals``: the tasks' intervals.csv paths). A cell computed from a degenerate model (the frame's
    ``n_degenerate``) is marked ⚠ and never bold, with ``degenerate_legend`` (:func:`beluga.report.degenerate.legend`)
    under the table; a table without one is written without them."""
    rows, cols, values, marks, bold, degenerate = _grid(long)
    notes = _shown_notes(iid_notes, cols)
    sd, seeds_text = _spread(long)
    head = ["Configuration", "Method"]
    for task, col, name in cols:
        label = _task_label(task) + (DAGGER if task in notes else "")
        head.append("Avg" if name == AVG_COLUMN else f"{label} · {'i.i.d.' if col == 'iid' else col}")
    lines = ["| " + " | ".join(md_cell(h) for h in head) + " |",
             "|---|---|" + "---:|" * len(cols)]
    for i, (conf, meth) in enumerate(rows):
        cells = [md_cell(_row_label(conf)), md_cell(meth)]
        for j in range(len(cols)):
            v = values[i, j]
            if not math.isfinite(v):
                cells.append(DASH)
                continue
            s = plus_minus(v, sd[i, j], style="**{}**" if bold[i, j] else "{}")
            if marks[i, j] > 0:
                s += f" {UP}"
            elif marks[i, j] < 0:
                s += f" {DOWN}"
            if degenerate[i, j]:
                s += f" {DEGENERATE_MARK}"
            cells.append(s)
        lines.append("| " + " | ".join(cells) + " |")
    has_avg = any(name == AVG_COLUMN for *_x, name in cols)
    legend = (
        "Scores ×100. First row: the IID baseline (vanilla fine-tuning on the i.i.d. data only); its G columns are "
        f"G_standard. {UP} / {DOWN}: significantly better / worse than the baseline at α = {alpha:g} "
        "(i.i.d. column, a test of the score shown: accuracy or exact match, two-sided exact binomial test on the "
        f"discordant examples; {_non_sum_metrics(cols)}, paired approximate randomization of that score; G columns"
        f"{' and Avg' if has_avg else ''}: approximate randomization, Yeh 2000); {_correction_text(correction)}. "
        "The baseline is never marked. **Bold**: best value in the column (all cells that print the maximum). "
        f"{DASH}: not available."
        + (" Avg: mean G over tasks and scenarios." if has_avg else "")
        + f" {_intervals_text(intervals)} {seeds_text}"
    )
    if degenerate.any():
        legend += "\n\n" + (degenerate_legend or degenerate_line())
    foot = footnote_markdown(notes)
    return "\n".join(lines) + "\n\n" + legend + "\n" + (f"\n{foot}" if foot else "")


# -------------------------------------------------------------------- LaTeX --

def _latex_col(col: str) -> str:
    if col == "iid":
        return "i.i.d."
    if col == AVG_COLUMN:
        return "Avg."
    if col.startswith("G_"):
        return rf"$G_{{\mathrm{{{latex_escape(col[2:])}}}}}$"
    return latex_escape(col)


def table3_latex(long: pd.DataFrame, alpha: float = 0.05, correction: str | None = "holm",
                 caption: str | None = None, label: str = "tab:table3",
                 iid_notes: dict[str, str] | None = None, intervals: list[str] | None = None,
                 degenerate_legend: str | None = None) -> str:
    """Table 3 as a complete LaTeX ``table`` (booktabs; needs ``\\usepackage[table]{xcolor}``); every cell is
    the mean $\\pm$ the standard deviation over the training seeds (no spread where the sd is empty).
    ``iid_notes``: as :func:`table3_markdown` (the task's header marked $^\\dagger$, the sentences at the
    caption's end); the caption says how many training seeds each cell has and where the intervals are
    (``intervals``: as :func:`table3_markdown`); a cell computed from a degenerate model is marked $^{\\ast}$ and
    never bold, ``degenerate_legend`` (as :func:`table3_markdown`'s, escaped) at the caption's end."""
    rows, cols, values, marks, bold, degenerate = _grid(long)
    notes = _shown_notes(iid_notes, cols)
    sd, seeds_text = _spread(long)
    n = len(cols)
    lines = [r"% Table 3 (BELUGA). Requires \usepackage{booktabs} and \usepackage[table]{xcolor} (for \cellcolor).",
             r"\begin{table}[t]", r"\centering", r"\small", r"\setlength{\tabcolsep}{3pt}",
             rf"\begin{{tabular}}{{ll{'r' * n}}}", r"\toprule"]
    # task header: one \multicolumn per task group
    groups: list[tuple[str, int, int]] = []  # task, first, last (0-based into cols)
    for j, (task, _c, _n) in enumerate(cols):
        if groups and groups[-1][0] == task:
            groups[-1] = (task, groups[-1][1], j)
        else:
            groups.append((task, j, j))
    top, rules = ["", ""], []
    for task, a, b in groups:
        if task == ALL_TASK and a == b and cols[a][2] == AVG_COLUMN:
            top.append("")
            continue
        mark = r"$^\dagger$" if task in notes else ""
        top.append(rf"\multicolumn{{{b - a + 1}}}{{c}}{{{latex_escape(_task_label(task))}{mark}}}")
        rules.append(rf"\cmidrule(lr){{{a + 3}-{b + 3}}}")
    lines.append(" & ".join(top) + r" \\")
    if rules:
        lines.append(" ".join(rules))
    lines.append(" & ".join(["Configuration", "Method"] + [_latex_col(c) for _t, c, _n in cols]) + r" \\")
    lines.append(r"\midrule")
    prev_conf = None
    for i, (conf, meth) in enumerate(rows):
        if prev_conf is not None and conf != prev_conf:
            lines.append(r"\midrule")
        label_cell = "" if conf == prev_conf else _row_label(conf, LATEX_CONFIG_LABELS, latex_escape)
        prev_conf = conf
        cells = [label_cell, latex_escape(meth)]
        for j in range(n):
            v = values[i, j]
            if not math.isfinite(v):
                cells.append("--")
                continue
            s = plus_minus(v, sd[i, j], sep=r"\,$\pm$\,", style=r"\textbf{{{}}}" if bold[i, j] else "{}")
            if marks[i, j] > 0:
                s = r"\cellcolor{green!25}" + s
            elif marks[i, j] < 0:
                s = r"\cellcolor{red!25}" + s
            if degenerate[i, j]:
                s += DEGENERATE_LATEX_MARK
            cells.append(s)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption is None:
        has_avg = any(name == AVG_COLUMN for *_x, name in cols)
        caption = (
            r"i.i.d.\ test set performance and generalization measures (in \%) of each method and training "
            r"configuration. First row: the IID baseline (its suite scores are $G_{\mathrm{standard}}$). "
            + (r"Avg.: mean $G$ over tasks and scenarios. " if has_avg else "")
            + rf"Green / red: significantly better / worse than the baseline at $\alpha = {alpha:g}$ "
            r"(i.i.d.: accuracy or exact match, two-sided exact binomial test on the discordant examples; "
            + _non_sum_metrics(cols) + r", paired approximate randomization of that score; $G$: approximate "
            r"randomization, "
            rf"Yeh 2000; {latex_escape(_correction_text(correction))}). Bold: best score per column. "
            r"--: not available. "
            + latex_escape(_intervals_text(intervals)) + " " + latex_escape(seeds_text).replace("±", r"$\pm$")
        )
    if degenerate.any():   # also under a caption of the caller's
        caption += " " + latex_escape(degenerate_legend or degenerate_line()).replace(DEGENERATE_MARK,
                                                                                      DEGENERATE_LATEX_MARK)
    if notes:   # also under a caption of the caller's
        caption += (rf" $^\dagger$Not the paper's i.i.d.\ data ({latex_escape(SEE)}): "
                    + " ".join(latex_escape(n) for n in notes.values()))
    lines += [rf"\caption{{{caption}}}", rf"\label{{{label}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- CSV --

def table3_csv(long: pd.DataFrame) -> pd.DataFrame:
    """The validated long frame as written to CSV: required columns first (extra
    columns after them), values unscaled, rows sorted by task ("all" last),
    configuration (baseline first, then the paper's order), method, column. The machine columns
    ``n_models`` / ``n_degenerate`` (:mod:`beluga.report.degenerate`: a cell's models and how many are
    degenerate) are kept when a cell rests on a degenerate model (a table without one has none)."""
    df = drop_clean_flags(_validate(long))
    extra = [c for c in df.columns if c not in REQUIRED_COLUMNS]
    df = df[list(REQUIRED_COLUMNS) + extra]
    order = pd.DataFrame({
        "_t": (df["task"] == ALL_TASK).astype(int), "_task": df["task"],
        "_c": df["configuration"].map(_config_rank), "_conf": df["configuration"],
        "_b": (~(df["configuration"].eq(BASELINE[0]) & df["method"].eq(BASELINE[1]))).astype(int),
        "_method": df["method"], "_k": df["column"].map(_column_rank), "_col": df["column"]}, index=df.index)
    idx = order.sort_values(list(order.columns), kind="stable").index
    return df.loc[idx].reset_index(drop=True)
