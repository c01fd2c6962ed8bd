"""Regression tasks (``head: regression``; SIMILARITY, issue 40): what a suite
expects of a predicted score, how a case is scored, the i.i.d. outcomes, and
the training losses.

A regression model predicts one score per input (STS-B / SICK: semantic
similarity of a sentence pair in [0, 5]); prediction tables carry it in the
column ``score`` (:data:`beluga.score.predict.SCORE_PREDICTION_SCHEMA`). A suite
for it uses these expectations (``expect`` / ``expect_params``), each giving a
result per input as the classification ones do (:mod:`beluga.score.outcomes`):

=================  =======  ========================================================
expectation        tests    input i passes when (s_i: its predicted score)
=================  =======  ========================================================
``score_near``     MFT      |s_i - v_i| <= ``tolerance`` (default 0.5); v_i: ``val``,
                   INV DIR  else the input's label (``labels``, an integer score)
``score_between``  MFT      ``min`` <= s_i <= ``max`` (either may be left out: one
                   INV DIR  side of a threshold)
``score_inv``      INV      |s_i - s_0| <= ``tolerance`` (default 0.5), s_0 the original's
``score_up``       DIR      s_i - s_0 >= ``margin`` (default 0: not lower; a negative
                            margin tolerates a small move the other way)
``score_down``     DIR      s_0 - s_i >= ``margin`` (default 0)
=================  =======  ========================================================

Both sides of every comparison are inclusive. INV and DIR cases aggregate
with ``all_except_first`` as usual (the original's own result is ignored);
an INV / DIR case may check its perturbations' scores against a value or
bounds (``score_near`` / ``score_between``: a label-checked perturbation, as
``eq`` on a classifier's DIR), and is then trained as MFTs on the inputs it
checks. A
DIR case whose original is already at the task's score range bound in the
stated direction (``score_up``: s_0 >= 5; ``score_down``: s_0 <= 0) is not
scored (``filtered``), as CheckList's ``monotonic`` filters an original at
its bound: the score cannot move further within the range.

Training (docs/PROCEDURE.md, §3.1, in the regression head's terms): i.i.d.
examples and MFTs regress on their target by squared error (GLUE's STS-B
fine-tuning loss): ``score_near`` on its value, ``score_between`` on its
interval (zero inside it, the squared distance to the nearer bound outside;
:func:`beluga.train.losses.interval_loss`); INV pairs by the squared difference of
the original's and the perturbation's scores (:func:`beluga.train.losses.score_inv_loss`);
DIR pairs by a hinge on the move in the wrong direction
(:func:`beluga.train.losses.score_dir_loss`); :mod:`beluga.heads.score.batches` builds
the streams and minibatches. The tolerances
are for scoring only: training aims at the value itself, as a classifier's
MFT aims at the one-hot label although the argmax is what is scored.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import BelugaError, DataError
from beluga.score.case_rows import FAIL, FILTERED, PASS, PROGRESS_EVERY, as_list, case_rows, case_status_table

#: expectation -> the test types it applies to (the suite format admits them for a regression head only)
SCORE_EXPECTATIONS: dict[str, tuple[str, ...]] = {
    "score_near": ("MFT", "INV", "DIR"),
    "score_between": ("MFT", "INV", "DIR"),
    "score_inv": ("INV",),
    "score_up": ("DIR",),
    "score_down": ("DIR",),
}
#: default ``tolerance`` of ``score_near`` / ``score_inv`` (score points)
DEFAULT_TOLERANCE = 0.5
#: default ``margin`` of ``score_up`` / ``score_down``
DEFAULT_MARGIN = 0.0
#: DIR expectation -> the sign of the expected move
DIRECTIONS = {"score_up": 1, "score_down": -1}


def _number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def score_params_error(expect: str, params: dict, score_range: tuple[float, float] | None = None) -> str | None:
    """What is wrong with a regression expectation's parameters (None: nothing),
    for the suite format's and the spec's one-line error: ``val``, ``min``, ``max`` and
    ``margin`` finite numbers, ``tolerance`` a finite number >= 0,
    ``score_between`` with at least one bound and ``min`` <= ``max``. With the
    task's ``score_range`` [lo, hi], the parameters against its scores:
    ``val``, ``min`` and ``max`` inside it, and no expectation that every score
    passes or none can -- ``score_between`` whose bounds cover the whole range
    (``min`` <= lo and ``max`` >= hi, a missing bound an open side), a
    ``tolerance`` that covers it (``score_near`` around ``val``: [val - tol,
    val + tol] holds the range; around the labels, and ``score_inv``: tol >=
    hi - lo), a ``margin`` above hi - lo (no move within the range is that
    large) or at most -(hi - lo) (every move is)."""
    for key in ("val", "min", "max", "margin", "tolerance"):
        v = params.get(key)
        if v is not None and not _number(v):
            return f"{key!r} must be a finite number, got {v!r}"
    if params.get("tolerance") is not None and params["tolerance"] < 0:
        return f"'tolerance' must be >= 0, got {params['tolerance']!r}"
    lo_b, hi_b = params.get("min"), params.get("max")
    if expect == "score_between":
        if lo_b is None and hi_b is None:
            return "expectation 'score_between' needs 'min', 'max' or both"
        if lo_b is not None and hi_b is not None and lo_b > hi_b:
            return f"'min' {lo_b} is above 'max' {hi_b}"
    if score_range is None:
        return None
    lo, hi = score_range
    width, shown = hi - lo, f"{lo:g}..{hi:g}"
    if expect == "score_between" and (lo_b is None or lo_b <= lo) and (hi_b is None or hi_b >= hi):
        bounds = f"[{'-inf' if lo_b is None else f'{lo_b:g}'}, {'inf' if hi_b is None else f'{hi_b:g}'}]"
        return (f"'score_between' {bounds} covers the whole score range {shown}: every score passes (give a "
                "narrower interval)")
    for key in ("val", "min", "max"):
        v = params.get(key)
        if v is not None and not lo <= v <= hi:
            return f"{key!r} {v:g} is outside the task's score range {shown}"
    if expect in ("score_near", "score_inv"):
        tol = float(params.get("tolerance", DEFAULT_TOLERANCE))
        val = params.get("val") if expect == "score_near" else None
        if (val - tol <= lo and val + tol >= hi) if val is not None else tol >= width:
            around = f"around 'val' {val:g} " if val is not None else ""
            return (f"'tolerance' {tol:g} {around}covers the whole score range {shown}: every score passes (give a "
                    "smaller tolerance)")
    if expect in DIRECTIONS:
        margin = float(params.get("margin", DEFAULT_MARGIN))
        if margin > width:
            return (f"'margin' {margin:g} is more than the score range {shown} spans ({width:g}): no score can "
                    "move that far, every case fails")
        if margin <= -width:
            return (f"'margin' {margin:g} allows a move of the whole score range {shown} the other way: every "
                    "score passes")
    return None


# --------------------------------------------------------------------------- scoring


def expected_value(i: int, labels, params: dict) -> float | None:
    """``score_near``'s value for input ``i``: ``val``, else the input's label (None: neither)."""
    val = params.get("val")
    if val is not None:
        return float(val)
    if labels is None or labels[i] is None or (isinstance(labels[i], float) and labels[i] != labels[i]):
        return None
    return float(labels[i])


def input_results(expect: str, params: dict, scores: list[float], labels=None) -> list[bool | None]:
    """One result per input (True / False; None: not scored) of a regression
    expectation on the inputs' predicted ``scores`` (the table of the module
    docstring)."""
    if expect == "score_near":
        tol = float(params.get("tolerance", DEFAULT_TOLERANCE))
        out = []
        for i, s in enumerate(scores):
            v = expected_value(i, labels, params)
            out.append(None if v is None else bool(abs(s - v) <= tol))
        return out
    if expect == "score_between":
        lo, hi = params.get("min"), params.get("max")
        return [bool((lo is None or s >= lo) and (hi is None or s <= hi)) for s in scores]
    s0 = scores[0]
    if expect == "score_inv":
        tol = float(params.get("tolerance", DEFAULT_TOLERANCE))
        return [bool(abs(s - s0) <= tol) for s in scores]
    if expect in DIRECTIONS:
        sign, margin = DIRECTIONS[expect], float(params.get("margin", DEFAULT_MARGIN))
        return [bool(sign * (s - s0) >= margin) for s in scores]
    raise BelugaError(f"field 'expect': unknown regression expectation {expect!r} "
                      f"(known: {', '.join(SCORE_EXPECTATIONS)})")


def score_case_outcome(expect: str, params: dict, agg_fn: str, scores: list[float], labels=None,
                       score_range: tuple[float, float] = (0.0, 5.0)) -> tuple[str, str | None]:
    """(status, why it was filtered) of one regression case (None unless
    ``filtered``): a DIR whose original is at the range's bound in its
    direction, or no input scored (``score_near`` without values)."""
    if expect in DIRECTIONS:
        lo, hi = score_range
        s0 = scores[0]
        if (DIRECTIONS[expect] > 0 and s0 >= hi) or (DIRECTIONS[expect] < 0 and s0 <= lo):
            bound = f">= {hi:g}" if DIRECTIONS[expect] > 0 else f"<= {lo:g}"
            return FILTERED, f"original's score {bound}, the range's bound ({expect})"
    results = input_results(expect, params, scores, labels)
    if agg_fn == "all_except_first":   # the original's own result is ignored, scored or not (as training does)
        results = results[1:]
    results = [r for r in results if r is not None]
    if not results:
        return FILTERED, "no input scored"
    return (PASS if all(results) else FAIL), None


def checked_scores(values, source: str, keys: Callable[[int], tuple]) -> np.ndarray:
    """Predicted scores as floats, every one finite (one line naming the first that is not: ``keys(i)``
    gives its case id and input)."""
    try:
        scores = np.asarray([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise BelugaError(f"{source}: field 'score': every row needs a number ({e})") from None
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        cid, j = keys(int(bad[0]))
        raise DataError(f"{source}: field 'score': {len(bad)} score(s) not finite (first: case {cid!r}, input {j}: "
                          f"{scores[bad[0]]}); the model diverged or the file is damaged")
    return scores


def score_suite_cases(suite: pd.DataFrame, predictions: pd.DataFrame,
                      score_range: tuple[float, float] = (0.0, 5.0), source: str = "predictions",
                      on_cases: Callable[[int], None] | None = None, reasons: bool = False) -> pd.DataFrame:
    """:func:`beluga.score.outcomes.score_cases` for a regression head: suite rows
    and prediction rows (case_id, input_idx, score) covering every input of
    those cases -> DataFrame(case_id, functionality, status[, filter_reason])."""
    for c in ("case_id", "input_idx", "score"):
        if c not in predictions.columns:
            raise BelugaError(f"{source}: field '{c}': missing column (a regression prediction file needs "
                              "case_id, input_idx and score)")
    case_ids = suite["case_id"].tolist()
    flat, offsets = case_rows(suite, predictions, source)
    pcids, pidx = predictions["case_id"].tolist(), predictions["input_idx"].tolist()
    values = predictions["score"].to_numpy(dtype=object)[np.asarray(flat, dtype=np.int64)]
    scores = checked_scores(values, source, lambda i: (pcids[flat[i]], pidx[flat[i]])).tolist()
    view = suite.assign(**{c: None for c in ("labels",) if c not in suite.columns})
    statuses, why, cache = [], [], {}
    for k, r in enumerate(view[["case_id", "expect", "expect_params", "agg_fn", "labels"]].itertuples(index=False)):
        if r.expect not in SCORE_EXPECTATIONS:
            raise BelugaError(f"suite case {r.case_id!r}: field 'expect': expectation {r.expect!r} is not one a "
                              f"regression task can score (known: {', '.join(SCORE_EXPECTATIONS)})")
        raw = r.expect_params or ""
        if raw not in cache:
            cache[raw] = json_loads(raw) if raw else {}
        status, reason = score_case_outcome(r.expect, cache[raw], r.agg_fn, scores[offsets[k]:offsets[k + 1]],
                                      as_list(r.labels), score_range)
        statuses.append(status)
        why.append(reason)
        if on_cases is not None and (k + 1) % PROGRESS_EVERY == 0:
            on_cases(k + 1)
    if on_cases is not None:
        on_cases(len(statuses))
    return case_status_table(case_ids, suite, statuses, why if reasons else None)
