"""The OOD evaluation's reports (docs/OOD.md): ood_table.md and ood_table.tex of a task, its
figure (GLUE-X's ID–OOD view), the rankings' Markdown and the ``python -m beluga ood-rank``
command. The scores, tests and tables they show are beluga/analyses/ood_scores.py (a task's runs)
and beluga/analyses/ood_eval.py (the GLUE-X summary).

A table over the training seeds (its ``n_seeds`` and ``_sd`` columns) is shown as the mean ± the
standard deviation over seeds, with a line naming the seeds (:func:`table_seeds_line`); a one-seed table,
by the same code, as its scores alone (an empty sd prints no spread, the legend is empty).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.analyses.ood_eval import (
    ALL_TYPES,
    RANKING_COLUMNS,
    blocks_line,
    check_long,
    check_one_scale,
    correlation_frame,
    id_ood_correlation,
    rank_systems,
    read_long,
)
from beluga.analyses.ood_scores import OOD_METRIC, REPORTED_ID, reported_column
from beluga.core.io import atomic_path, check_out_folder, write_csv, write_out_folder, write_text
from beluga.core.seeds import N_SEEDS_COLUMN, has_spread, plus_minus, seeds_legend, seeds_note
from beluga.core.tasks import get_task_type
from beluga.core.text import md_cell
from beluga.report.degenerate import LATEX_MARK as DEGENERATE_LATEX_MARK
from beluga.report.degenerate import MARK as DEGENERATE_MARK
from beluga.report.degenerate import any_flagged, cell_mark
from beluga.report.degenerate import legend as degenerate_line
from beluga.report.tables import DOWN, UP, latex_escape
from beluga.score.metrics import IID_METRICS

#: the separator of a LaTeX cell over training seeds: ``80.9\,$\pm$\,0.5``
TEX_PLUS_MINUS = r"\,$\pm$\,"


def p_text(p: float) -> str:
    """A p-value as printed: three significant digits, "p < 0.0001" below that (never "p = 0")."""
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.3g}"


def correlation_line(corr: dict) -> str:
    """One sentence for tables and the command's output; the p-values only where ``corr`` has them (else its
    ``p_note``, e.g. "n too small: 3 systems, p-values need at least 5")."""
    if not corr["computed"]:
        return f"ID–OOD correlation (GLUE-X): not computed — {corr['reason']}."
    has_p = not corr.get("p_note")
    r_p = f" ({p_text(corr['pearson_p'])})" if has_p else ""
    rho_p = f" ({p_text(corr['spearman_p'])})" if has_p else ""
    note = "" if has_p else f"; no p-values ({corr['p_note']})"
    return (f"ID–OOD correlation over {corr['n_systems']} systems (GLUE-X): Pearson r = {corr['pearson_r']:.3f}{r_p}, "
            f"Spearman ρ = {corr['spearman_rho']:.3f}{rho_p}{note}; "
            f"least-squares line OOD = {corr['slope']:.3f} × ID {corr['intercept']:+.2f}.")


def ranking_markdown(ranking: pd.DataFrame, title: str = "OOD ranking (GLUE-X)", corr: dict | None = None) -> str:
    head = list(RANKING_COLUMNS)
    lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in ranking.itertuples(index=False):
        d = r._asdict()
        cells = [md_cell(d["system"])] + [f"{d[c]:.2f}" for c in head[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "id_avg / ood_avg: mean over tasks of the mean over datasets of the mean over metrics; "
              "decrease_ratio = 100 × (id_avg − ood_avg) / id_avg (rank 1 = smallest drop); Friedman ranks: mean "
              "rank over tasks (over datasets for a single task), 1 = best, ties share the average rank."]
    blocks = blocks_line(ranking)
    if blocks:
        lines += ["", blocks]
    if corr is not None:
        lines += ["", correlation_line(corr)]
    return "\n".join(lines) + "\n"


def long_seeds_note(long: pd.DataFrame) -> str:
    """A line for rankings read from scores.csv files of training seeds (their ``n_seeds`` column,
    ``ood_scores.long_over_seeds``): the ranked scores are means over seeds; ``""`` when every score is
    one seed's (:func:`beluga.core.seeds.seeds_legend`)."""
    n = pd.to_numeric(long[N_SEEDS_COLUMN], errors="coerce") if N_SEEDS_COLUMN in long.columns else \
        pd.Series(np.nan, index=long.index)
    counts = sorted({int(v) for v in n.dropna()} or {1})
    many = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    some = " (rows without n_seeds: one seed)" if n.isna().any() else ""
    return seeds_legend(counts[-1], f"Training seeds: every score is the mean over {many} training seeds{some}; the "
                                  "rankings, Friedman ranks and ID–OOD correlations are computed on these means (the "
                                  "spread over seeds: value_sd, value_min, value_max in the scores).")


#: what ``ood-rank`` writes in its ``--out`` folder (written as a whole, :func:`beluga.core.io.write_out_folder`)
RANK_OUTPUTS = ("ranking.csv", "correlation.csv", "ranking.md")


def ood_rank_command(scores: str, out: str, mixed_metrics: bool = False) -> str:
    """``python -m beluga ood-rank``: ranking.csv, correlation.csv (the ID–OOD
    correlation over the systems) and ranking.md in ``out``, written as a
    whole or not at all; ``out`` is checked first: never the scores file's
    folder nor one holding files ood-rank does not write
    (:func:`beluga.core.io.check_out_folder`). ``mixed_metrics``: rank systems with
    different metric sets on a dataset (else one line stops it). Systems scored on
    different scales (fractions beside percent) stop with one line
    (:func:`beluga.analyses.ood_eval.check_one_scale`)."""
    check_out_folder("ood-rank", out, RANK_OUTPUTS, {"scores file": scores})
    source = f"scores file {scores}"
    long = read_long(scores)
    check_one_scale(check_long(long, source), source)
    ranking = rank_systems(long, source=source, mixed_metrics=mixed_metrics)
    corr = id_ood_correlation(ranking)
    md = ranking_markdown(ranking, corr=corr)
    note = long_seeds_note(long)
    if note:
        md += "\n" + note + "\n"
    write_out_folder(out, {"ranking.csv": lambda p: write_csv(ranking, p),
                           "correlation.csv": lambda p: write_csv(correlation_frame({"all": corr}), p),
                           "ranking.md": lambda p: write_text(md, p)})
    return md


def _binary(task_type: str, metric: str = OOD_METRIC) -> bool:
    """The OOD cells' score (the mean of the task's metrics, or ``metric``: ``tasks.<id>.ood_metric``) is an
    accuracy: tested by the exact binomial test; else (PARA, READ: two metrics; MCC, F1) by paired
    randomization (ood_scores.ood_significance)."""
    from beluga.report.paired import binary_iid_metric

    return binary_iid_metric(task_type, metric)


def table_seeds_line(seeds: list, task_type: str = "sent", metric: str = OOD_METRIC) -> str:
    """The OOD table's line on training seeds (:func:`beluga.core.seeds.seeds_legend`: ``""`` for one seed)."""
    n = len(seeds)
    test = (f"one exact binomial test per pair and set on the discordant examples of the {n} seeds together ("
            if _binary(task_type, metric) else
            f"one paired randomization test per pair and set over the {n} seeds together (the statistic the mean "
            "of the seeds' differences, each seed's examples swapped by its own draws; ")
    return seeds_legend(n, f"{seeds_note(seeds)} ID and each OOD set: the mean over seeds of each seed's score; OOD "
                         "avg and decrease ratio: the mean over seeds of each seed's own OOD average and decrease "
                         "ratio; Friedman rank, ranking.csv and the ID–OOD correlation: on the systems' mean scores. "
                         f"▲ / ▼: {test}each seed's model paired with the same seed's IID model; a test stratified "
                         "by seed).")


def _mark(direction: int) -> str:
    return UP if direction > 0 else (DOWN if direction < 0 else "")


def _score(row: dict, column: str, sep: str = " ± ") -> str:
    """A score cell (×100 already): the mean over training seeds ± the standard deviation (``80.9 ± 0.5``;
    ``sep`` between them; ``80.9`` where the sd is empty, as with one seed); ``—`` where not defined (the
    decrease ratio of an ID score at or below 0)."""
    return plus_minus(row[column], row.get(f"{column}_sd"), scale=1.0, sep=sep, missing="—")


def ood_table_markdown(table: pd.DataFrame, names: list[str], task: str, alpha: float, correction: str,
                       correlation: dict | None = None, credits: dict[str, str] | None = None,
                       seeds: list | None = None, task_type: str = "sent",
                       metric: str = OOD_METRIC, degenerate_legend: str | None = None) -> str:
    """ood_table.md (``metric``: the cells' score, ``tasks.<id>.ood_metric``; ``table`` from
    ``ood_scores.ood_table_over_seeds``): each score cell is the mean ± the standard deviation over the training
    ``seeds``, and a line says how many seeds (:func:`table_seeds_line`; none for one seed). A system computed
    from a degenerate model (``n_degenerate`` > 0: :func:`beluga.report.degenerate.system_flags`) has its score
    cells marked ⚠, with ``degenerate_legend`` under the table."""
    test = _test_words(task_type, metric=metric)
    head = ["", "ID"] + [md_cell(n) for n in names] + ["OOD avg", "decrease ratio", "Friedman rank"]
    lines = [f"# {task.upper()}: OOD evaluation (×100)", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        deg = cell_mark(r.get("n_degenerate"))
        cells = [md_cell(r["label"]), _score(r, "id") + deg]
        cells += [f"{_score(r, n)}{_mark(r[f'{n}_direction'])}{deg}" for n in names]
        cells += [_score(r, "ood_avg") + deg, _score(r, "decrease_ratio") + deg, f"{r['friedman_rank_ood']:.2f}{deg}"]
        lines.append("| " + " | ".join(cells) + " |")
    corr = "Holm-adjusted " if correction == "holm" else ""
    lines += ["", f"ID: the i.i.d. test score; OOD sets: {', '.join(map(md_cell, names))} "
              f"(score = {_score_words(metric)}). "
              f"▲ / ▼: significantly better / worse than the IID model on that set ({test}, "
              f"{corr}p < {alpha}). Decrease ratio = 100 × (ID − OOD avg) / ID; "
              "Friedman rank: mean rank over the OOD sets (1 = best)."]
    legend = table_seeds_line(seeds or [], task_type, metric)
    lines += ["", legend] if legend else []
    if any_flagged(table):
        lines += ["", degenerate_legend or degenerate_line()]
    if "backbone" in table.columns and len(table):
        lines += ["", f"Backbone: {md_cell(table['backbone'].iloc[0])} (the systems are its configurations and "
                  "methods)."]
    if len(table) and table["decrease_ratio"].isna().any():
        lines += ["", "—: not defined (the decrease ratio of an ID score at or below 0: a correlation no better "
                  "than chance)."]
    if correlation is not None:
        lines += ["", correlation_line(correlation)]
    if credits:
        lines += ["", "Pairings (task → OOD set): " + "; ".join(f"{md_cell(n)}: {md_cell(credits[n])}" for n in names
                                                                if n in credits)
                  + "."]
    metrics = get_task_type(task_type).reported_metrics
    if metrics:
        lines += ["", *reported_markdown(table, names, metrics)]
    return "\n".join(lines) + "\n"


#: how the reported metrics are named in the tables
METRIC_NAMES = {"pearson": "Pearson r", "spearman": "Spearman ρ"}
#: what the tables of a task with reported metrics say about them (SIMILARITY_CLASSES: GLUE-X's STS-B)
REPORTED_WORDS = ("the table above scores GLUE-X's STS-B as GLUE-X does, by the accuracy over five classes (the "
                  "similarity score rounded to 0..4); this table scores the same models' predictions by GLUE's STS-B "
                  "metrics: {metrics} (×100) between the gold similarity score and the model's predicted score, the "
                  "expected class under its five-class probabilities (the sum over k of k × P(k)); not ranked, no "
                  "test against the IID model")
#: a reported cell without a value
NOT_COMPUTED = ("—: not computed (the set's table holds classes, not similarity scores, or the model predicts one "
                "score for every example)")


def _reported_cell(row: dict, metric: str, dataset: str, sep: str = " ± ") -> str:
    return plus_minus(row[reported_column(metric, dataset)], row.get(reported_column(metric, dataset, sd=True)),
                      scale=1.0, sep=sep, missing="—")


def reported_markdown(table: pd.DataFrame, names: list[str], metrics: tuple[str, ...]) -> list[str]:
    """ood_table.md's second table: each system's reported ``metrics`` (GLUE's STS-B Pearson / Spearman) on the
    i.i.d. test set and each OOD set (``ood_scores.with_reported``'s columns), mean ± sd over training seeds, with
    its legend."""
    datasets = [REPORTED_ID, *names]
    shown = {REPORTED_ID: "ID"}
    head = [""] + [f"{md_cell(shown.get(d, d))} {METRIC_NAMES.get(m, m)}" for d in datasets for m in metrics]
    lines = ["## The same models in GLUE's STS-B metrics (×100)", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        deg = cell_mark(r.get("n_degenerate"))
        lines.append("| " + " | ".join([md_cell(r["label"])] + [_reported_cell(r, m, d) + deg for d in datasets
                                                                  for m in metrics]) + " |")
    words = REPORTED_WORDS.format(metrics=" and ".join(METRIC_NAMES.get(m, m) for m in metrics))
    lines += ["", words[0].upper() + words[1:] + "."]
    if any(pd.isna(r[reported_column(m, d)]) for r in table.to_dict("records") for d in datasets for m in metrics):
        lines += ["", NOT_COMPUTED + "."]
    return lines


def reported_latex(table: pd.DataFrame, names: list[str], task: str, metrics: tuple[str, ...]) -> list[str]:
    """ood_table.tex's second table (:func:`reported_markdown`'s, as LaTeX)."""
    datasets = [REPORTED_ID, *names]
    shown = {REPORTED_ID: "ID"}
    head = " & ".join([""] + [f"{latex_escape(shown.get(d, d))} {latex_escape(METRIC_NAMES.get(m, m))}"
                              for d in datasets for m in metrics])
    lines = [r"\begin{table}[t]", r"\centering", rf"\begin{{tabular}}{{l{'r' * (len(datasets) * len(metrics))}}}",
             r"\toprule", head + r" \\", r"\midrule"]
    for r in table.to_dict("records"):
        deg = DEGENERATE_LATEX_MARK if cell_mark(r.get("n_degenerate")) else ""
        lines.append(" & ".join([latex_escape(r["label"])] + [_reported_cell(r, m, d, TEX_PLUS_MINUS) + deg
                                                              for d in datasets for m in metrics]) + r" \\")
    words = REPORTED_WORDS.format(metrics=" and ".join(METRIC_NAMES.get(m, m) for m in metrics))
    words = words.replace("the table above", "the previous table")
    return [*lines, r"\bottomrule", r"\end{tabular}",
            rf"\caption{{{latex_escape(task.upper())}: the same models in GLUE's STS-B metrics (×100): "
            rf"{latex_escape(words)}.}}", r"\end{table}"]


def _score_words(metric: str) -> str:
    return "mean of the task's metrics" if metric == OOD_METRIC else f"the task's {metric}"


def _test_words(task_type: str, short: bool = False, metric: str = OOD_METRIC) -> str:
    """The test of an OOD cell, in words (ood_scores.ood_significance)."""
    if _binary(task_type, metric):
        return "exact binomial test" if short else "two-sided exact binomial test on the discordant examples"
    # Spearman's rho in a draw: the swapped rows keep the ranks taken on the full split (stats.iid_statistic)
    ranks = " (Spearman on the full split's ranks)" if "spearman" in (metric, *IID_METRICS.get(task_type, ())) \
        and metric in (OOD_METRIC, "spearman") else ""
    if metric != OOD_METRIC:
        return (f"paired randomization of the {metric}" if short else
                f"two-sided paired approximate randomization test of the cell's {metric}, recomputed in each "
                f"draw{ranks}")
    return ("paired randomization of the mean of the two metrics" if short else
            "two-sided paired approximate randomization test of the cell's score, both metrics recomputed in "
            f"each draw{ranks}")


def table_latex(table: pd.DataFrame, names: list[str], task: str, alpha: float, correction: str,
                seeds: list | None = None, task_type: str = "sent", metric: str = OOD_METRIC,
                degenerate_legend: str | None = None) -> str:
    """ood_table.tex (``metric``: as :func:`ood_table_markdown`): each score cell is the mean $\\pm$ the standard
    deviation over the training ``seeds`` and the caption says how many seeds (none for one seed); a system
    computed from a degenerate model has its score cells marked $^{\\ast}$, ``degenerate_legend`` (escaped) at the
    caption's end."""
    cols = "l" + "r" * (len(names) + 4)
    head = " & ".join(["", "ID", *map(latex_escape, names), "OOD avg", r"$\Delta\downarrow$", "F-rank"])
    lines = [r"\begin{table}[t]", r"\centering", rf"\begin{{tabular}}{{{cols}}}", r"\toprule", head + r" \\",
             r"\midrule"]
    sym = {1: r"$^{\blacktriangle}$", -1: r"$^{\blacktriangledown}$", 0: ""}
    for r in table.to_dict("records"):
        deg = DEGENERATE_LATEX_MARK if cell_mark(r.get("n_degenerate")) else ""
        cells = [latex_escape(r["label"]), _score(r, "id", TEX_PLUS_MINUS) + deg]
        cells += [f"{_score(r, n, TEX_PLUS_MINUS)}{sym[int(r[f'{n}_direction'])]}{deg}" for n in names]
        cells += [_score(r, "ood_avg", TEX_PLUS_MINUS) + deg, _score(r, "decrease_ratio", TEX_PLUS_MINUS) + deg,
                  f"{r['friedman_rank_ood']:.2f}{deg}"]
        lines.append(" & ".join(cells) + r" \\")
    corr = "Holm-adjusted " if correction == "holm" else ""
    legend = latex_escape(table_seeds_line(seeds or [], task_type, metric))
    note = " " + legend.replace("±", r"$\pm$").replace("▲ / ▼", "Markers") if legend else ""
    test = _test_words(task_type, short=True, metric=metric)
    if any_flagged(table):
        note += " " + latex_escape(degenerate_legend or degenerate_line()).replace(DEGENERATE_MARK,
                                                                                   DEGENERATE_LATEX_MARK)
    lines += [r"\bottomrule", r"\end{tabular}",
              rf"\caption{{{latex_escape(task.upper())}: OOD evaluation (×100). Markers: significantly better / worse "
              rf"than the IID model ({latex_escape(corr)}{test}, $p < {alpha}$). "
              r"$\Delta\downarrow$: decrease ratio 100 (ID $-$ OOD)/ID." + note + "}", r"\end{table}"]
    metrics = get_task_type(task_type).reported_metrics
    if metrics:
        lines += ["", *reported_latex(table, names, task, metrics)]
    return "\n".join(lines) + "\n"


def plot(table: pd.DataFrame, names: list[str], task: str, out_png: str, corr: dict | None = None) -> None:
    """GLUE-X's ID–OOD view (its Figure 1): each system's OOD average against
    its i.i.d. score (stars) with the least-squares line through them and
    Pearson r / Spearman ρ when ``corr`` was computed, each OOD set's score
    (one marker per set), the y = x reference (no drop), and the decrease
    ratios. A table over training seeds (its ``n_seeds`` and ``_sd`` columns):
    the means with error bars of one standard deviation over seeds where the
    sd is defined (never with one seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.1, 1]})
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    colors = plt.get_cmap("tab10")
    lo = min(table["id"].min(), min(table[n].min() for n in names))
    hi = max(table["id"].max(), max(table[n].max() for n in names))
    sd_cols = ["id_sd", *[f"{n}_sd" for n in names], "ood_avg_sd", "decrease_ratio_sd"]
    spread = all(c in table.columns for c in sd_cols) and has_spread(table[sd_cols])
    n_seeds = int(table[N_SEEDS_COLUMN].max()) if N_SEEDS_COLUMN in table.columns and len(table) else 1
    if spread:   # the error bars inside the axes
        sds = table[["id_sd", *[f"{n}_sd" for n in names]]].fillna(0.0)
        lo = min(lo, (table["id"] - sds["id_sd"]).min(), min((table[n] - sds[f"{n}_sd"]).min() for n in names))
        hi = max(hi, (table["id"] + sds["id_sd"]).max(), max((table[n] + sds[f"{n}_sd"]).max() for n in names))
    pad = max(2.0, 0.05 * (hi - lo))
    for k, r in enumerate(table.to_dict("records")):
        for j, n in enumerate(names):
            if spread:
                ax.errorbar(r["id"], r[n], xerr=np.nan_to_num(r["id_sd"]), yerr=np.nan_to_num(r[f"{n}_sd"]),
                            fmt="none", ecolor=colors(k % 10), elinewidth=0.8, capsize=2, alpha=0.8, zorder=1)
            ax.scatter(r["id"], r[n], marker=markers[j % len(markers)], color=colors(k % 10), s=46,
                       edgecolor="black", linewidth=0.4)
        ax.annotate(r["label"], (r["id"], max(r[n] for n in names)), textcoords="offset points", xytext=(4, 4),
                    fontsize=7, color=colors(k % 10))
    for j, n in enumerate(names):   # legend: one grey marker per OOD set (colours are systems)
        ax.scatter([], [], marker=markers[j % len(markers)], color="lightgrey", edgecolor="black", linewidth=0.4,
                   s=46, label=n)
    if spread:
        ax.errorbar(table["id"], table["ood_avg"], xerr=table["id_sd"].fillna(0.0),
                    yerr=table["ood_avg_sd"].fillna(0.0), fmt="none", ecolor="black", elinewidth=0.8, capsize=2,
                    zorder=2)
    ax.scatter(table["id"], table["ood_avg"], marker="*", s=110, color="white", edgecolor="black", linewidth=0.8,
               zorder=3, label="OOD avg")
    if corr is not None and corr["computed"]:
        xs = np.array([table["id"].min(), table["id"].max()])
        ax.plot(xs, corr["slope"] * xs + corr["intercept"], "-", color="black", linewidth=1.2,
                label=f"least-squares fit of OOD avg (r = {corr['pearson_r']:.2f}, ρ = {corr['spearman_rho']:.2f})")
    elif corr is not None:
        ax.text(0.02, 0.98, f"no fit: {corr['reason']}", transform=ax.transAxes, fontsize=7, va="top")
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "--", color="grey", linewidth=1,
            label="y = x (reference: no drop)")
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel("i.i.d. test score")
    ax.set_ylabel("OOD score")
    note = seeds_legend(n_seeds, f"\n(mean ± sd over {n_seeds} training seeds)")
    small = {"fontsize": 10} if note else {}     # a title of two lines
    ax.set_title(f"{task.upper()}: OOD vs i.i.d. score{note}", **small)
    ax.legend(fontsize=7, loc="upper left")
    bars = {"xerr": table["decrease_ratio_sd"].fillna(0.0)[::-1].to_numpy(), "capsize": 3} if spread else {}
    bx.barh(table["label"][::-1], table["decrease_ratio"][::-1], color=[colors(k % 10) for k in
                                                                         range(len(table))][::-1], **bars)
    bx.axvline(0, color="black", linewidth=0.8)
    bx.set_xlabel("decrease ratio, % (100 × (ID − OOD avg) / ID)")
    bx.set_title("relative drop out of distribution" + seeds_legend(n_seeds, "\n(mean ± sd over seeds)"), **small)
    bx.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=130)
    plt.close(fig)


def backbone_table_markdown(tables: dict[str, pd.DataFrame], corrs: dict[str, dict], skipped: str = "",
                            seeds_note: str = "") -> str:
    """One GLUE-X Table 3 per benchmark, with its ID–OOD correlation (and ``seeds_note``,
    :func:`long_seeds_note`, last)."""
    lines = ["# OOD comparison over backbones (GLUE-X Table 3)", ""]
    for bench, table in tables.items():
        blocks = [c for c in table.columns if c.startswith("ood:")]
        what = "tasks" if bench == ALL_TYPES else "OOD sets"
        lines += [f"## {'all tasks' if bench == ALL_TYPES else 'task ' + md_cell(bench)}", ""]
        head = ["backbone", "system", *[md_cell(b[4:]) for b in blocks], "OOD avg", "ID avg", "decrease ratio ↓",
                "F-rank OOD", "F-rank ID"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in table.to_dict("records"):
            cells = [md_cell(r["backbone"]), md_cell(f"{r['configuration']}/{r['method']}"),
                     *[f"{r[b]:.2f}" for b in blocks],
                     f"{r['ood_avg']:.2f}", f"{r['id_avg']:.2f}", f"{r['decrease_ratio']:.2f}",
                     f"{r['friedman_rank_ood']:.2f}", f"{r['friedman_rank_id']:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
        per = ("each task's OOD score (×100: mean over the task's OOD sets of its score on each, the mean of its "
               "metrics or the one its ood_metric names)" if bench == ALL_TYPES else
               "each OOD set's score (×100: the mean of the task's metrics, or the one its ood_metric names)")
        lines += ["", f"Columns: {per}; Friedman ranks over the {what} (1 = best).", "",
                  correlation_line(corrs[bench]), ""]
    if skipped:
        lines += [skipped, ""]
    if seeds_note:
        lines += [seeds_note, ""]
    return "\n".join(lines)
