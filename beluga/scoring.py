"""Pass / fail / filtered per test case, with CheckList's semantics
(see ../shared/data/README.md, "What the expectations mean").

Each expectation yields one result per input: True, False or None (not
scored). Nones are dropped; if nothing is left the case is ``filtered``;
``all`` needs every remaining result to pass, ``all_except_first`` ignores the
first remaining result (the original of an INV/DIR case).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from beluga.errors import BelugaError
from beluga.tasks import Task

PASS, FAIL, FILTERED = "pass", "fail", "filtered"


def _eq(preds, probs, labels, params):
    val = params.get("val")
    return [bool(p == (val if val is not None else labels[i])) for i, p in enumerate(preds)]


def _not_negative(preds, probs, labels, params):
    return [bool(p != 0) for p in preds]


def _inv(preds, probs, labels, params):
    tol = params.get("tolerance", 0.0)
    c = preds[0]
    return [bool(p == c or abs(probs[i][c] - probs[0][c]) <= tol) for i, p in enumerate(preds)]


def _monotonic(preds, probs, labels, params):
    tol = params.get("tolerance", 0.0)
    increasing = params.get("increasing", True)
    c = params.get("label")
    c = preds[0] if c is None else c
    p0 = probs[0][c]
    out = []
    for i in range(len(preds)):
        if (increasing and p0 <= tol) or (not increasing and p0 >= 1 - tol):
            out.append(None)
            continue
        d = probs[i][c] - p0
        out.append(bool(d + tol >= 0) if increasing else bool(d - tol <= 0))
    return out


def _change(probs):
    """(P_neg(orig) - P_neg(pert)) + (P_pos(pert) - P_pos(orig)), three-class probs."""
    return [(probs[0][0] - p[0]) + (p[2] - probs[0][2]) for p in probs]


def _diff_up(preds, probs, labels, params):
    tol = params.get("tolerance", 0.1)
    return [bool(c >= -tol) for c in _change(probs)]


def _diff_down(preds, probs, labels, params):
    tol = params.get("tolerance", 0.1)
    return [bool(c <= tol) for c in _change(probs)]


EXPECT_FNS = {"eq": _eq, "not_negative": _not_negative, "inv": _inv, "monotonic": _monotonic,
              "diff_up": _diff_up, "diff_down": _diff_down}

# slices: a case is kept only if the slice holds (CheckList wrap_slice)
SLICES = {
    "orig_not_neutral": lambda preds, probs: preds[0] != 1,
}


def aggregate(results: list, agg_fn: str) -> str:
    r = [x for x in results if x is not None]
    if not r:
        return FILTERED
    if agg_fn == "all_except_first":
        r = r[1:]
    return PASS if all(r) else FAIL


def case_status(expect: str, params: dict, agg_fn: str, preds, probs, labels) -> str:
    slice_name = params.get("slice")
    if slice_name is not None:
        if slice_name not in SLICES:
            raise BelugaError(f"expectation parameter 'slice': unknown slice {slice_name!r}")
        if not SLICES[slice_name](preds, probs):
            return FILTERED
    return aggregate(EXPECT_FNS[expect](preds, probs, labels, params), agg_fn)


def score_cases(suite: pd.DataFrame, predictions: pd.DataFrame, task: Task,
                source: str = "predictions") -> pd.DataFrame:
    """suite: suite rows to score; predictions: rows (case_id, input_idx, probs)
    covering every input of those cases. Returns DataFrame(case_id,
    functionality, status)."""
    preds = predictions.set_index(["case_id", "input_idx"])["probs"]
    if not preds.index.is_unique:
        raise BelugaError(f"{source}: field 'case_id'/'input_idx': duplicate prediction rows")
    rows = []
    for r in suite.itertuples(index=False):
        n = len(r.inputs)
        try:
            probs_model = np.stack([np.asarray(preds.loc[(r.case_id, j)], dtype=np.float64) for j in range(n)])
        except KeyError:
            raise BelugaError(f"{source}: field 'input_idx': missing predictions for case {r.case_id!r} "
                              f"({n} inputs expected)") from None
        probs = task.suite_probs(probs_model)
        predicted = probs.argmax(-1).tolist()
        params = json.loads(r.expect_params) if r.expect_params else {}
        labels = None if r.labels is None else list(r.labels)
        status = case_status(r.expect, params, r.agg_fn, predicted, probs.tolist(), labels)
        rows.append((r.case_id, r.functionality, status))
    return pd.DataFrame(rows, columns=["case_id", "functionality", "status"])


def pass_rates(outcomes: pd.DataFrame, functionalities: pd.DataFrame) -> pd.DataFrame:
    """Per functionality: n_cases, n_scored, n_passed, pass_rate (NaN if nothing scored)."""
    g = outcomes.groupby("functionality", sort=False)["status"]
    df = pd.DataFrame({
        "n_cases": g.size(),
        "n_scored": g.apply(lambda s: int((s != FILTERED).sum())),
        "n_passed": g.apply(lambda s: int((s == PASS).sum())),
    }).reset_index()
    df["pass_rate"] = np.where(df["n_scored"] > 0, df["n_passed"] / df["n_scored"].where(df["n_scored"] > 0), np.nan)
    meta = functionalities[["functionality", "capability", "test_type"]]
    return meta.merge(df, on="functionality", how="inner")
