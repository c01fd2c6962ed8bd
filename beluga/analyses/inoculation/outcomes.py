"""Inoculation's outcome of a unit (docs/ANALYSES.md): the tests of the last dose against dose 0 and the decision
read from them. :func:`dose_tests` (challenge gain, original change, gap left; pooled over training seeds,
stratified by seed) on a unit's case arrays (:func:`unit_case_arrays`, :func:`original_rows`,
:func:`original_hits`); :func:`decide`, effect-size margins and tests at a stated level (outcome 1: the gap left's
interval within ``gap_margin``; outcome 3: an original drop beyond ``drop_margin``, significant), or
:func:`classify`, the fixed point thresholds; :func:`label_skew`, the seed's §3.3 flag; :func:`outcome_rows`, a
unit's row of outcomes.csv. :mod:`.summary` reads the jobs' records and builds the tables from these.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.heads import get_head
from beluga.report.paired import gap_test, mcnemar, paired_metric_test


def classify(challenge0: float, original0: float, challenge: float, original: float, close_within: float = 5.0,
             original_drop: float = 2.0, min_gain: float = 5.0) -> tuple[str, str]:
    """The seed's outcome of a unit, from its dose-0 and last-dose scores (all in
    percentage points): ``3`` when the original score drops by ``original_drop``
    or more; else ``1`` when the challenge score ends within ``close_within``
    of the original score (the gap closed); else ``2`` when the challenge score
    gained less than ``min_gain`` (nothing changed); else ``between``; and
    ``no gap`` (after outcome 3) when the IID model's challenge score was
    already within ``close_within`` of its original score, so there was no gap
    to close. Returns (label, the reason in words)."""
    d_chal, d_orig = challenge - challenge0, original - original0

    def pp(x: float) -> str:   # signed whole points, never "-0"
        return f"{int(round(x)):+d} pp"
    tail = f"original {pp(d_orig)} ({original0:.0f} → {original:.0f})"
    if d_orig <= -original_drop:
        return "3", (f"original {pp(d_orig)} (≤ −{original_drop:g}: the challenge conflicts with the original "
                     f"data); challenge {pp(d_chal)}")
    if challenge0 >= original0 - close_within:
        return "no gap", (f"no gap at dose 0: challenge {challenge0:.0f} vs original {original0:.0f} (the IID model "
                          f"already passes); challenge {pp(d_chal)}; {tail}")
    if challenge >= original - close_within:
        return "1", (f"challenge {pp(d_chal)} to within {close_within:g} pp of original "
                     f"({challenge:.0f} vs {original:.0f}); {tail}")
    if d_chal < min_gain:
        return "2", f"challenge {pp(d_chal)} (< {min_gain:g}: a weakness of the model); {tail}"
    return "between", (f"challenge {pp(d_chal)} but {original - challenge:.0f} pp below original; {tail}")


def label_skew(cases: pd.DataFrame, head: str = "classification", names: dict | None = None) -> dict:
    """Whether a unit's suite cases (every split) can inform outcome 3: the
    seed (§3.3) warns that on a challenge set of one label fine-tuning learns
    to predict that label, which reads as outcome 3 without saying anything.
    ``{"label_skew": words, "labels": "label: share, ...", "informative_3": bool}``:
    ``no label`` when no case carries a label (INV / DIR), ``single label``
    when every label of the labelled cases is one label, else ``mixed``; QA
    cases (answers, no label set): ``n/a (QA)``, informative. ``names`` (label
    id -> name, the task's label set): shares by name, and the labels no case has."""
    if get_head(head).gold_field == "answers":   # answers, no label set
        return {"label_skew": "n/a (QA)", "labels": "", "informative_3": True}
    labels = [int(x) for v in cases["labels"] if v is not None for x in np.asarray(v).ravel()]
    n_unlabelled = int(sum(v is None for v in cases["labels"]))
    if not labels:
        return {"label_skew": "no label", "labels": "", "informative_3": False}
    counts = pd.Series(labels).value_counts().sort_index()
    names = names or {}
    shares = ", ".join(f"{names.get(k, k)}: {100 * v / len(labels):.0f}%" for k, v in counts.items())
    kind = "single label" if len(counts) == 1 else "mixed"
    absent = [str(v) for k, v in sorted(names.items()) if k not in counts.index]
    if absent:
        shares += f"; no {' / '.join(absent)} case"
    if n_unlabelled:
        shares += f"; {n_unlabelled} case(s) without a label"
    return {"label_skew": kind, "labels": shares, "informative_3": kind != "single label"}


def set_label_skew(examples: pd.DataFrame, head: str = "classification", names: dict | None = None) -> dict:
    """:func:`label_skew` of a challenge set (one label per example)."""
    labelled = "label" in examples.columns   # a QA set has answers
    return label_skew(pd.DataFrame({"labels": [[int(y)] for y in examples["label"]]}) if labelled else examples,
                      head, names)


def unit_case_arrays(outcomes: pd.DataFrame, unit_funcs: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The unit's T_test cases of a model's outcomes, sorted by case id:
    (rows with case_id / functionality / passed / scored, functionality index)."""
    from beluga.score.outcomes import FILTERED, PASS

    rows = outcomes[(outcomes["split"] == "suite_test") & outcomes["functionality"].isin(set(unit_funcs))]
    rows = rows.sort_values("case_id", kind="stable").reset_index(drop=True)
    out = pd.DataFrame({"case_id": rows["case_id"].astype(str), "functionality": rows["functionality"],
                        "passed": (rows["status"] == PASS).to_numpy(),
                        "scored": (rows["status"] != FILTERED).to_numpy()})
    fi = out["functionality"].map({f: i for i, f in enumerate(unit_funcs)}).to_numpy(dtype=np.int64)
    return out, fi


def original_rows(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The i.i.d. test rows of a model's outcomes, sorted by example id."""
    rows = outcomes[outcomes["split"] == "iid_test"].copy()
    rows["case_id"] = rows["case_id"].astype(str)
    return rows.sort_values("case_id", kind="stable").reset_index(drop=True)


def original_hits(rows: pd.DataFrame, task_type: str) -> np.ndarray:
    """Per i.i.d. test example, right or not: ``correct`` (classification; SQuAD: exact match) —
    the pass / fail of the example read as a one-input MFT case, the original's pass rate."""
    col = "em" if task_type == "read" else "correct"
    return rows[col].astype(float).fillna(0).to_numpy() > 0.5


def dose_tests(pairs, task_type: str, iid_metric: str, R: int = 10_000, seeds=None) -> dict:
    """A dose's models against the IID models (dose 0) on the same items, stratified by training seed:
    ``pairs`` = per seed (the IID model's cases, the dose's cases, their i.i.d. features, their 0/1 i.i.d.
    hits: base cases, cases, base features, features, base hits, hits). The challenge gain (exact McNemar
    on the unit's scored T_test cases, pooled over its functionalities, the discordant cases summed over
    seeds: :func:`~beluga.report.paired.mcnemar`), the original change
    (:func:`~beluga.report.paired.paired_metric_test`: exact McNemar on the 0/1 i.i.d. outcome when the
    i.i.d. score is its mean, else paired randomization of the score; ``seeds``: each seed's draws), and the
    gap left between the challenge pass rate and the original pass rate (:func:`original_hits`; one-sided,
    :func:`~beluga.report.paired.gap_test`: Fisher's exact test for one seed, the exact conditional test
    over the seeds' 2×2 tables for several). Cases and examples are aligned by id."""
    chal_pairs, gap = [], []
    pairs = list(pairs)
    for base_cases, cases, _, _, _, hits in pairs:
        merged = base_cases.merge(cases, on="case_id", suffixes=("_0", ""), validate="one_to_one")
        both = (merged["scored_0"] & merged["scored"]).to_numpy()
        chal_pairs.append((merged["passed_0"].to_numpy()[both], merged["passed"].to_numpy()[both]))
        gap.append((int((cases["passed"] & cases["scored"]).sum()), int(cases["scored"].sum()), int(hits.sum()),
                    len(hits)))
    chal = mcnemar(chal_pairs)
    p_orig, orig_test = paired_metric_test([p[2] for p in pairs], [p[3] for p in pairs], [p[4] for p in pairs],
                                           [p[5] for p in pairs], task_type, iid_metric, R=R, seeds=seeds)
    return {"p_gain": chal["p_value"], "discordant_cases": chal["n_discordant"], "p_original": p_orig,
            "original_test": orig_test, "p_gap": gap_test(gap)}


#: the effect-size margins of :func:`decide` by default, in points (``inoculation.gap_margin`` /
#: ``inoculation.drop_margin``)
GAP_MARGIN, DROP_MARGIN = 2.0, 2.0


def decide(first: pd.Series, last: pd.Series, level: float = 0.05, informative_3: bool = True,
           gap_margin: float = GAP_MARGIN, drop_margin: float = DROP_MARGIN) -> tuple[str, str]:
    """The seed's outcome of a unit from effect sizes and tests at ``level`` (scores in %; ``first`` = dose 0,
    ``last`` = the last dose with the p-values of :func:`dose_tests`; each with the gap left, original −
    challenge in one measure, and its interval at 1 − ``level``: ``gap_lo`` / ``gap_hi``), in this order:

    - **3** when the original score dropped by more than ``drop_margin`` points *and* significantly
      (``p_original`` < level): inoculation damages the original (a significant drop within the margin is
      not outcome 3, nor is a larger drop that is not significant);
    - **no gap** when dose 0's gap interval lies within ``gap_margin`` (``gap_hi`` ≤ margin): the IID model
      already performs as well or nearly so, nothing to close;
    - **1** when the last dose's gap interval lies within ``gap_margin``: the gap closes, the challenge score
      "as well (or nearly so)" as the original, the original kept (not 3);
    - **2** when the challenge score did not rise significantly (``p_gain`` ≥ level or no rise);
    - **between** otherwise: a significant gain, but the gap left may exceed the margin.

    "Within the margin" is one-sided: a challenge score above the original (a negative gap) is closed too;
    the interval's upper end at most the margin is a test of "the gap exceeds the margin" at level / 2.
    ``informative_3`` False (a single-label or unlabelled unit) adds the seed's warning to the words.
    Returns (label, the reason in words)."""
    def pp(x: float) -> str:   # signed whole points, never "-0"
        return f"{int(round(x)):+d} pp"

    def p(x: float) -> str:
        return "p < 0.001" if x < 0.001 else f"p = {x:.3f}"

    def ci(r) -> str:
        return f"[{r.gap_lo:.1f}, {r.gap_hi:.1f}] pp"

    d_chal, d_orig = last.challenge - first.challenge, last.original - first.original
    gain = bool(last.p_gain < level and d_chal > 0)
    significant_drop = bool(last.p_original < level and d_orig < 0)
    conf = f"{100 * (1 - level):g}% CI"
    chal = f"challenge {pp(d_chal)} ({first.challenge:.0f} → {last.challenge:.0f}, {p(last.p_gain)})"
    orig = f"original {pp(d_orig)} ({first.original:.0f} → {last.original:.0f}, {p(last.p_original)})"
    if significant_drop and -d_orig <= drop_margin:
        orig += f": a significant drop within the {drop_margin:g}-pp margin"
    elif d_orig < -drop_margin and not significant_drop:
        orig += f": beyond the {drop_margin:g}-pp margin but not significant at level {level:g}"
    gap0 = first.original_same - first.challenge
    share = "" if pd.isna(last.gap_closed) else f"; {100 * last.gap_closed:.0f}% of the dose-0 gap closed"
    left = (f"gap left {last.original_same - last.challenge:.1f} pp of {gap0:.1f} ({conf} {ci(last)}, "
            f"{p(last.p_gap)}){share}")
    if significant_drop and -d_orig > drop_margin:
        why = (f"original dropped by {-d_orig:.1f} pp, more than the {drop_margin:g}-pp margin, significantly at "
               f"level {level:g}: {orig}; {chal}")
        if not informative_3:
            why += (" — uninformative: every labelled case of the unit has one label (or none has a label), "
                    "so fine-tuning can learn to predict that label (the seed's §3.3)")
        return "3", why
    if first.gap_hi <= gap_margin:
        measure = first.get("measure", "pass rate")
        return "no gap", (f"no gap at dose 0: its {conf} {ci(first)} lies within the {gap_margin:g}-pp margin "
                          f"({measure}: challenge {first.challenge:.0f} vs original {first.original_same:.0f}, "
                          f"{p(first.p_gap)}); {chal}; {orig}")
    if last.gap_hi <= gap_margin:
        return "1", f"the gap closes: its {conf} lies within the {gap_margin:g}-pp margin: {left}; {chal}; {orig}"
    if not gain:
        return "2", f"no significant challenge gain at level {level:g}: {chal}; {left}; {orig}"
    return "between", (f"challenge gained significantly at level {level:g} but the gap left may exceed the "
                       f"{gap_margin:g}-pp margin: {left}; {chal}; {orig}")


def outcome_rows(table: pd.DataFrame, skew: dict, decide_by: str, level: float, thresholds: dict,
                 gap_margin: float = GAP_MARGIN, drop_margin: float = DROP_MARGIN) -> pd.DataFrame:
    """outcomes.csv: per unit of ``table`` (its first row dose 0, its last the last dose) the outcome
    (:func:`decide` at ``level`` with the margins ``gap_margin`` / ``drop_margin``, or :func:`classify` by
    ``thresholds``), its reason and the numbers behind it (the last dose's learning rates: ``lr_last`` of the
    challenge score, ``lr_original_last`` of the original score), with the unit's label skew (``skew``: unit
    -> :func:`label_skew`)."""
    outcomes = []
    for uid, g in table.groupby("unit", sort=False):
        first, last = g.iloc[0], g.iloc[-1]
        if decide_by == "tests":
            label, reason = decide(first, last, level, skew[uid]["informative_3"], gap_margin=gap_margin,
                                   drop_margin=drop_margin)
            how = f"tests at level {level:g}, margins {gap_margin:g} pp (gap) / {drop_margin:g} pp (drop)"
        else:
            label, reason = classify(first.challenge, first.original, last.challenge, last.original, **thresholds)
            how = "point thresholds"
        outcomes.append({"unit": uid, "label": first.label, "level": first.level, "outcome": label,
                         "reason": reason, "decided_by": how, "last_dose": last.dose,
                         "lr_last": last.get("lr"), "lr_original_last": last.get("lr_original"),
                         "challenge_0": first.challenge, "challenge_last": last.challenge,
                         "challenge_last_lo": last.get("challenge_lo"), "challenge_last_hi": last.get("challenge_hi"),
                         "original_0": first.original, "original_last": last.original,
                         "original_last_lo": last.get("original_lo"), "original_last_hi": last.get("original_hi"),
                         "gap_measure": first.measure, "gap_0": first.original_same - first.challenge,
                         "gap_0_lo": first.get("gap_lo"), "gap_0_hi": first.get("gap_hi"),
                         "gap_last": last.original_same - last.challenge, "gap_last_lo": last.get("gap_lo"),
                         "gap_last_hi": last.get("gap_hi"),
                         "gap_margin": gap_margin if decide_by == "tests" else np.nan,
                         "drop_margin": drop_margin if decide_by == "tests" else np.nan,
                         "gap_closed": last.get("gap_closed"), "p_gain": last.get("p_gain"),
                         "p_original": last.get("p_original"), "original_test": last.get("original_test"),
                         "p_gap_0": first.p_gap, "p_gap_last": last.get("p_gap"), **skew[uid]})
    return pd.DataFrame(outcomes)
