"""Prediction diagnostics of a regression head (SIMILARITY, issue 40): the
counterpart of "predicts one class" (:mod:`beluga.report.diagnostics`).

A degenerate regression model predicts (almost) the same score for every
input: the solution a suite trained with squared error can collapse to
(every MFT near one value, every INV pair trivially within tolerance, every
DIR filtered or failed). It is flagged exactly as a degenerate classifier is
(``degenerate``, ``degenerate_on`` iid / suite / both) when the standard
deviation of its predicted scores is at most :data:`CONSTANT_STD` (score
points; STS-B's gold scores have a standard deviation of about 1.5) over the
i.i.d. test set, or over the whole suite's test inputs for a model that
predicted every functionality (a fold model's few functionalities may rightly
share one score). The class-share columns stay empty and the majority /
confidence columns NaN; the row adds ``iid_score_std``, ``suite_score_std``,
``iid_score_mean`` and ``constant_std`` (the threshold used).
"""

from __future__ import annotations

import math

import numpy as np

from beluga.core.errors import DataError

#: at most this standard deviation of the predicted scores (score points) is a constant predictor
CONSTANT_STD = 0.05


def finite_scores(values, source: str) -> np.ndarray:
    """Predicted scores as floats, every one finite (one line naming the first that is not)."""
    try:
        out = np.asarray([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise DataError(f"{source}: field 'score': every row needs one predicted score ({e})") from None
    bad = np.flatnonzero(~np.isfinite(out))
    if len(bad):
        raise DataError(f"{source}: field 'score': row {int(bad[0])} is {out[bad[0]]!r}, not a finite score "
                        f"({len(bad)} such row(s))")
    return out


def _std(x: np.ndarray) -> float:
    return float(np.std(x)) if len(x) else float("nan")


def constant_predictor(scores: np.ndarray, constant_std: float = CONSTANT_STD) -> bool:
    """Whether ``scores`` are (near-)constant: their standard deviation is at most ``constant_std``
    (an empty set is not flagged)."""
    s = _std(np.asarray(scores, dtype=np.float64))
    return not math.isnan(s) and s <= constant_std


def score_diagnostics(iid_scores, suite_scores, source: str, whole_suite: bool = True,
                      constant_std: float = CONSTANT_STD) -> dict:
    """The regression fields of one model's diagnostics row (see the module docstring)."""
    iid = finite_scores(iid_scores, source)
    suite = finite_scores(suite_scores, source)
    nan = float("nan")
    iid_deg = constant_predictor(iid, constant_std)
    suite_deg = whole_suite and constant_predictor(suite, constant_std)
    return {"iid_majority_label": "", "iid_majority_share": nan, "suite_majority_label": "",
            "suite_majority_share": nan, "iid_empty_share": nan, "suite_empty_share": nan,
            "confidence_iid": nan, "confidence_suite": nan, "confidence_dir": nan,
            "iid_score_mean": float(iid.mean()) if len(iid) else nan,
            "iid_score_std": _std(iid), "suite_score_std": _std(suite), "constant_std": float(constant_std),
            "iid_deg": bool(iid_deg), "suite_deg": bool(suite_deg)}
