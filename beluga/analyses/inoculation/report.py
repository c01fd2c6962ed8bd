"""Inoculation's report (docs/ANALYSES.md): inoculation.md (the outcome of every unit, then per unit and
dose its scores, tests and epochs), the learning curves (challenge and original score against the dose)
and the transfer heatmaps (per dose, unit trained on × unit evaluated). Over the training seeds: the
means ± sd over seeds (no spread where the sd is empty, as with one seed), and the seeds named and the
pooling explained by :func:`beluga.core.seeds.seeds_legend` (nothing for one seed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.analyses.inoculation.plan import selection
from beluga.core.seeds import has_spread, plus_minus, seeds_legend
from beluga.core.text import md_cell
from beluga.report.degenerate import MARK, any_flagged, cell_mark


def curves_figure(table: pd.DataFrame, outcomes: pd.DataFrame, task: str, out_png: str, level: float = 0.05,
                  rule: str = "") -> None:
    """Challenge and original score against the dose (symmetric log axis, dose 0
    = the IID model), one panel per unit, the outcome in the panel title, the decision ``rule``
    (:func:`decision_rule`, short) under the title. The means over the training seeds, with the seeds' sd as
    error bars where it is defined (never with one seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.core.io import atomic_path

    unit_ids = list(dict.fromkeys(table["unit"]))
    n = len(unit_ids)
    cols = min(4, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False, sharey=True)
    out = outcomes.set_index("unit")
    n_seeds = int(table["n_seeds"].max()) if "n_seeds" in table.columns and len(table) else 1
    for k, unit in enumerate(unit_ids):
        ax = axes[k // cols][k % cols]
        g = table[table["unit"] == unit].sort_values("n_cases")
        for col, fmt, color, label in (("challenge", "o-", "tab:red", "challenge (unit's test part)"),
                                       ("original", "s--", "tab:blue", "original (D_test)")):
            sd = g[f"{col}_sd"] if f"{col}_sd" in g else None
            if has_spread(sd):   # the mean over training seeds with the seeds' standard deviation
                ax.errorbar(g["n_cases"], g[col], yerr=sd.fillna(0), fmt=fmt, color=color, capsize=2, label=label)
            else:
                ax.plot(g["n_cases"], g[col], fmt, color=color, label=label)
        for col, color in (("challenge", "tab:red"), ("original", "tab:blue")):
            if f"{col}_lo" in g:   # the score's interval
                ax.fill_between(g["n_cases"], g[f"{col}_lo"], g[f"{col}_hi"], color=color, alpha=0.15, lw=0)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_ylim(-3, 103)
        if unit in out.index:
            o = out.loc[unit]
            flag = "" if o.get("informative_3", True) in (True, "True") else f" ({o.get('label_skew', 'skewed')}*)"
            ax.set_title(f"{o['label'][:30]}: outcome {o['outcome']}{flag}", fontsize=8)
            ax.annotate(str(o["outcome"]), xy=(0.97, 0.05), xycoords="axes fraction", ha="right", va="bottom",
                        fontsize=14, fontweight="bold", color="0.35")
        else:
            ax.set_title(unit, fontsize=8)
        ax.tick_params(labelsize=7)
        if k % cols == 0:
            ax.set_ylabel("score (%)", fontsize=8)
        if k // cols == rows - 1:
            ax.set_xlabel("dose (challenge training cases)", fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="upper left", ncol=2)
    over = seeds_legend(n_seeds, f", mean ± sd over {n_seeds} training seeds\n")
    fig.suptitle(f"{task.upper()}: inoculation by fine-tuning{over or ' '}(bands: {100 * (1 - level):g}% "
                 f"{seeds_legend(n_seeds, 'hierarchical ')}bootstrap intervals; outcome in the corner; * uninformative "
                 "for outcome 3)" + (f"\n{rule}" if rule else ""), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95 if not rule else 0.92))
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def transfer_matrix(chosen: pd.DataFrame, base_rates: dict, unit_map: dict, dose: str) -> pd.DataFrame:
    """Rows: the unit trained on at ``dose``; columns: every unit evaluated;
    values: the change (pp) of the evaluated unit's mean pass rate against
    the IID model."""
    def unit_score(rates: dict, funcs) -> float:
        vals = [rates.get(f) for f in funcs if rates.get(f) is not None and not pd.isna(rates.get(f))]
        return float(np.mean(vals)) if vals else np.nan

    sub = chosen[chosen["dose"] == dose]
    mat = pd.DataFrame(index=list(sub["unit"]), columns=list(unit_map), dtype=float)
    for r in sub.itertuples(index=False):
        for u, spec in unit_map.items():
            mat.at[r.unit, u] = 100 * (unit_score(r.pass_rates, spec["functionalities"])
                                       - unit_score(base_rates, spec["functionalities"]))
    return mat


def transfer_matrices(chosen: pd.DataFrame, base_rates: dict, unit_map: dict) -> dict[str, pd.DataFrame]:
    """Per dose the mean over training seeds of each seed's :func:`transfer_matrix` (``chosen``: every seed's
    chosen runs with a ``seed`` column; ``base_rates``: seed -> the seed's IID model pass rates; one seed:
    its matrix)."""
    out = {}
    for dose in dict.fromkeys(chosen["dose"]):
        mats = [transfer_matrix(chosen[chosen["seed"] == s], rates, unit_map, dose) for s, rates in base_rates.items()]
        mean = pd.concat(mats).groupby(level=0, sort=False).mean()
        out[dose] = mean.reindex(index=mats[0].index, columns=mats[0].columns)
    return out


def transfer_figure(mats: dict[str, pd.DataFrame], unit_map: dict, task: str, out_png: str, n_seeds: int = 1) -> None:
    """Per dose, unit trained on × unit evaluated: the pass-rate change against the IID model (the mean over
    the ``n_seeds`` training seeds, :func:`transfer_matrices`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.core.io import atomic_path

    if not any(spec["functionalities"] for spec in unit_map.values()):   # every unit an external challenge set
        fig, ax = plt.subplots(figsize=(5, 1.6))
        ax.axis("off")
        ax.text(0.5, 0.5, f"{task.upper()}: no suite units (inoculation.units: []), so no transfer between them:\n"
                "every unit is an external challenge set (inoculation.md, curves.png)", ha="center", va="center",
                fontsize=8, wrap=True)
        with atomic_path(out_png) as tmp:
            fig.savefig(tmp, dpi=150, format="png")
        plt.close(fig)
        return
    n = max(1, len(mats))
    size = max(3.2, 0.32 * len(unit_map) + 2)
    fig, axes = plt.subplots(1, n, figsize=(size * n, size), squeeze=False)
    for k, (dose, mat) in enumerate(mats.items()):
        ax = axes[0][k]
        im = ax.imshow(mat.to_numpy(dtype=float), cmap="RdBu", vmin=-100, vmax=100, aspect="auto")
        ax.set_xticks(range(mat.shape[1]))
        ax.set_xticklabels([unit_map[u]["label"][:22] for u in mat.columns], rotation=90, fontsize=6)
        ax.set_yticks(range(mat.shape[0]))
        ax.set_yticklabels([unit_map[u]["label"][:22] for u in mat.index] if k == 0 else [], fontsize=6)
        ax.set_title(f"dose {dose}", fontsize=9)
        ax.set_xlabel("evaluated unit", fontsize=7)
        if k == 0:
            ax.set_ylabel("unit trained on", fontsize=7)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8,
                 label=seeds_legend(n_seeds, "mean ") + "pass-rate change vs IID model (pp)")
    fig.suptitle(f"{task.upper()}: transfer of inoculation to other units"
                 + seeds_legend(n_seeds, f" (mean over {n_seeds} training seeds)"), fontsize=10)
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)


def inoculation_markdown(task: str, table: pd.DataFrame, outcomes: pd.DataFrame, select_on: str, decide_by: str,
                         level: float, seeds=None, threshold: str = "95%",
                         why: str = "the task's diagnostics/diagnostics.md", original_from: str = "original_dev",
                         gap_margin: float = 2.0, drop_margin: float = 2.0, thresholds: dict | None = None) -> str:
    """inoculation.md: the outcome of every unit with the decision rule as its legend (:func:`decision_rule`:
    ``decide_by``, ``level``, the margins ``gap_margin`` / ``drop_margin`` or the point ``thresholds``), then
    per unit and dose its scores (the challenge score's and the original score's learning rates:
    ``original_from``), the gap left, the tests and epochs
    (``table`` / ``outcomes``: :func:`beluga.analyses.inoculation.summary.summary_tables`). Every score is the
    mean ± sd over the training ``seeds`` (no spread where the sd is empty, as with one seed); with two or
    more the seeds are named and the pooling explained. ``select_on: test`` (the rate chosen on the tested
    cases): :data:`OPTIMISTIC` under the title. A row computed from a degenerate model (``n_degenerate`` > 0:
    :func:`beluga.analyses.inoculation.summary.dose_flags`) has its score cells marked ⚠ (an outcome,
    its cell), with a legend (``threshold``: the diagnostics' share; ``why``: where dose 0's model is described)."""
    seeds = list(seeds or [])

    def deg(r) -> str:
        return cell_mark(getattr(r, "n_degenerate", 0))

    def num(x, fmt="{:.1f}") -> str:
        return "" if x is None or pd.isna(x) else fmt.format(x)

    def pm(r, col: str, scale: float = 1.0, digits: int = 1, missing: str = "") -> str:
        return plus_minus(getattr(r, col, None), getattr(r, f"{col}_sd", None), scale=scale, digits=digits,
                          missing=missing)

    def ci(r, col) -> str:
        lo, hi = getattr(r, f"{col}_lo", None), getattr(r, f"{col}_hi", None)
        value = pm(r, col, missing="nan")      # a score no case defines (no scored case of the unit)
        return f"{value} [{num(lo, '{:.0f}')}, {num(hi, '{:.0f}')}]" if lo is not None else value

    def lr(r, col: str = "lr", many: str = "lrs") -> str:   # the seeds' learning rate where they agree, else each's
        value = getattr(r, col, None)
        return getattr(r, many, "") if value is None or pd.isna(value) else num(value, "{:g}")

    def gap_left(r) -> str:
        value = getattr(r, "gap", None)
        if value is None or pd.isna(value):
            return ""
        lo, hi = getattr(r, "gap_lo", None), getattr(r, "gap_hi", None)
        return f"{value:.1f}" + (f" [{num(lo)}, {num(hi)}]" if lo is not None else "")

    def gap(r) -> str:
        text = pm(r, "gap_closed", scale=100, digits=0)
        return text.replace(" ± ", "% ± ") + "%" if text else ""

    conf = f"{100 * (1 - level):g}%"
    head = inoculation_seeds_note(seeds)
    md = [f"# {task.upper()}: inoculation by fine-tuning", ""] + ([head, ""] if head else [])
    if selection(select_on) == "test":
        md += [OPTIMISTIC, ""]
    md += ["| unit | outcome | label skew | why |", "|---|---|---|---|"]
    md += [f"| {md_cell(r.label)} | {r.outcome}{cell_mark(getattr(r, 'n_degenerate', 0))} | {r.label_skew}"
           f"{'' if r.informative_3 else ' (uninformative for 3)'} | {r.reason} |"
           for r in outcomes.itertuples(index=False)]
    md += ["", decision_rule(decide_by, level, gap_margin, drop_margin, thresholds)]
    md += ["", f"| unit | measure | dose | cases | lr (challenge) | lr (original) | challenge ({conf} CI) | "
           f"original ({conf} CI) | original in the measure | gap left ({conf} CI) | gap closed | p gain | "
           "p original | p gap left | epochs (best) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    md += [f"| {md_cell(r.label)} | {r.measure} | {r.dose} | {r.n_cases} | {lr(r)} | "
           f"{lr(r, 'lr_original', 'lrs_original')} | {ci(r, 'challenge')}{deg(r)} | "
           f"{ci(r, 'original')}{deg(r)} | {pm(r, 'original_same')}{deg(r)} | {gap_left(r)}{deg(r)} | "
           f"{gap(r)}{deg(r)} | "
           f"{num(getattr(r, 'p_gain', None), '{:.3g}')} | {num(getattr(r, 'p_original', None), '{:.3g}')} | "
           f"{num(getattr(r, 'p_gap', None), '{:.3g}')} | "
           f"{num(r.epochs_trained, '{:g}')} ({num(r.best_epoch, '{:g}')}) |"
           for r in table.itertuples(index=False)]
    pooling = seeds_markdown_note(level, len(seeds))
    md += ["", markdown_note(select_on, decide_by, level, original_from)] + (["", pooling] if pooling else [])
    released = table[table["sample"] == "released"] if "sample" in table.columns else table.iloc[:0]
    if len(released):
        names = ", ".join(md_cell(x) for x in dict.fromkeys(released["label"]))
        md += ["", f"Dose samples: {names} trained on Liu et al.'s released samples (sample: released; each run's "
               "record, runs/<unit>/<dose>/<lr>.json, names its file), their dose all on the whole training split; "
               "every other dose is a nested seeded draw (inoculation.seed)."]
    if any_flagged(table):
        n, k = int(table["n_models"].sum()), int(table["n_degenerate"].sum())
        md += ["", f"{MARK}: computed from a degenerate model ({k} of the {n} models of the table's rows; any training "
               "seed's): it predicts one class (one answer; a near-constant score) for at least "
               f"{threshold} of the original test set or of T_test; an outcome, from its unit's dose 0 or last dose. "
               f"Each dose's record (runs/<unit>/<dose>/<lr>.json: degenerate, degenerate_on) says which; dose 0 is "
               f"the IID model (its diagnostics: {why})."]
    return "\n".join(md) + "\n"


#: inoculation.md's warning under its title with ``select_on: test``
OPTIMISTIC = ("**The p-values are optimistic**: each dose's learning rate was chosen on the challenge test cases "
              "(select_on: test, as Liu et al. report), the same cases the outcome tests then run on, so a gain "
              "looks more significant than it is; select_on: dev chooses on held-out challenge data.")


def decision_rule(decide_by: str, level: float, gap_margin: float = 2.0, drop_margin: float = 2.0,
                  thresholds: dict | None = None, short: bool = False) -> str:
    """The legend of the outcome table: how each label is decided, with the margins' values (``decide_by:
    tests``: :func:`beluga.analyses.inoculation.outcomes.decide`) or the point thresholds (``thresholds``:
    :func:`~beluga.analyses.inoculation.outcomes.classify`, its defaults where a key is absent). ``short``: one
    line for a figure."""
    conf = f"{100 * (1 - level):g}%"
    if decide_by != "tests":
        t = {"close_within": 5.0, "original_drop": 2.0, "min_gain": 5.0, **(thresholds or {})}
        if short:
            return (f"outcome: 3 = original −{t['original_drop']:g} pp or more; 1 = challenge within "
                    f"{t['close_within']:g} pp of original; 2 = gain < {t['min_gain']:g} pp (point thresholds)")
        return ("Outcome rule (fixed point thresholds of inoculation.thresholds, last dose against dose 0, in this "
                f"order): **3** when the original score drops by {t['original_drop']:g} points or more; **no gap** "
                f"when the IID model's challenge score is already within {t['close_within']:g} points of its "
                f"original score; **1** when the challenge score ends within {t['close_within']:g} points of the "
                f"original score; **2** when the challenge score gained less than {t['min_gain']:g} points; "
                "**between** otherwise. No test and no interval decides.")
    if short:
        return (f"outcome: 3 = original drop > {drop_margin:g} pp and significant; 1 = gap's {conf} CI ≤ "
                f"{gap_margin:g} pp; 2 = no significant gain; between otherwise (level {level:g})")
    return ("Outcome rule (last dose against dose 0, in this order; the gap = original − challenge in one "
            f"measure, with its {conf} bootstrap interval; tests at level {level:g}): **3** when the original "
            f"score drops by more than {drop_margin:g} points *and* significantly (a significant drop of at most "
            f"{drop_margin:g} points is not outcome 3); **no gap** when dose 0's gap interval lies within "
            f"{gap_margin:g} points (its upper end ≤ {gap_margin:g}: the IID model already performs as well or "
            f"nearly so); **1** (the gap closes: the seed's \"as well (or nearly so)\") when the last dose's gap "
            f"interval lies within {gap_margin:g} points; **2** when the challenge score does not rise "
            "significantly; **between** otherwise (a significant gain, a gap that may still exceed "
            f"{gap_margin:g} points). Margins: inoculation.gap_margin = {gap_margin:g}, "
            f"inoculation.drop_margin = {drop_margin:g} (points: pass-rate points, or the task's metric × 100).")


def markdown_note(select_on: str, decide_by: str, level: float, original_from: str = "original_dev") -> str:
    """inoculation.md's closing paragraph: the tests and intervals behind the outcomes (the rule itself:
    :func:`decision_rule`, under the outcome table), the gap closed, the label skew and the learning-rate
    choices (``select_on: test``: :data:`OPTIMISTIC` heads the page; ``original_from``: which run the original
    score is read from)."""
    conf = f"{100 * (1 - level):g}%"
    how = (f"The tests (unadjusted, last dose against dose 0, at level {level:g}): the challenge gain by an "
           "exact McNemar test on the unit's T_test cases (pooled over its functionalities), the original change by "
           "an exact McNemar test on the i.i.d. test examples (a paired randomization test when the i.i.d. score is "
           "not the mean of a 0/1 outcome), the gap by a one-sided Fisher exact test of the challenge pass rate "
           "against the original pass rate (the share of D_test examples the model gets right, each read as a "
           "one-input MFT case: the gap is measured in one measure, the pass rate); for an external challenge set, "
           "scored with the task's i.i.d. metric, the same tests on its examples (exact McNemar / Fisher for a 0/1 "
           "metric, paired randomization / permutation otherwise) against the original score in that metric. "
           if decide_by == "tests" else "")
    original = ("the original score from the learning rate with the best original dev score (original_from: "
                "original_dev, the seed's \"we tune the learning rate on the original development set\"; column "
                "lr (original)), the challenge score from the challenge-best rate (column lr (challenge)); the gap "
                "and the tests compare the two runs' scores"
                if original_from == "original_dev" else
                "the original score from the same challenge-best run (original_from: challenge_best: one rate for "
                "both scores)")
    return (how + "Gap closed: the challenge gain as a share of the dose-0 gap between the original and the "
            "challenge score in one measure; gap left: that gap at the dose, its interval from each side resampled "
            f"on its own. Intervals: {conf} percentile bootstrap (cases resampled within functionality, examples "
            "resampled). A unit whose labelled cases share one label, or that has no labelled case (INV / DIR), is "
            "uninformative for outcome 3 (the seed's §3.3). Dose 0 is the IID model; " + (
                "lr (challenge) picked on the challenge test set (as the seed)" if selection(select_on) == "test" else
                "lr (challenge) picked on held-out challenge data (select_on: dev: a suite unit's T_val, an external "
                "set's dev part), not on the cases the tests run on") + "; " + original + ".")


def inoculation_seeds_note(seeds) -> str:
    """The line of inoculation.md that states the training seeds behind every cell (none for one seed)."""
    seeds = [int(s) for s in seeds]
    return seeds_legend(len(seeds), (
        f"{len(seeds)} training seeds ({', '.join(map(str, seeds))}): every score, gap closed and epoch count is "
        "the mean ± the standard deviation over the seeds (min–max and n_seeds in table.csv); each seed's "
        "learning rate is chosen per unit and dose as in a one-seed run (lr: each seed's, in seed order, where "
        "they differ)."))


def seeds_markdown_note(level: float, n_seeds: int) -> str:
    """inoculation.md's paragraph on how the tests and intervals pool the training seeds (none for one seed)."""
    conf = f"{100 * (1 - level):g}%"
    return seeds_legend(n_seeds, (
        "Training seeds: the tests pool the seeds, stratified by seed — exact McNemar on the discordant cases "
        "(examples) summed over the seeds; paired randomization with each seed's examples swapped by that "
        "seed's own draws, the statistic the mean over seeds of the per-seed change and its null the mean of "
        "the seeds' draws, draw by draw; the gap by the one-sided exact conditional test of a common odds ratio "
        "over the seeds' 2×2 tables (exact Cochran–Mantel–Haenszel: each seed's margins fixed, the challenge "
        "passes summed over seeds; with one seed, Fisher's exact test), or for a non-0/1 metric a permutation "
        "test within each seed with the seeds' draws averaged. The outcomes are decided from the means and "
        f"these pooled p-values. Intervals: {conf} hierarchical percentile bootstrap (seeds resampled, then "
        "cases within functionality and examples within each picked seed)."))
