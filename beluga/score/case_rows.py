"""Prediction rows of suite cases, shared by the scoring of every head
(:mod:`beluga.score.outcomes`: classification and QA; :mod:`beluga.heads.score.cases`:
scores): predictions are keyed by (case_id, input_idx), never by row order."""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.core.errors import BelugaError

#: a case's status
PASS, FAIL, FILTERED = "pass", "fail", "filtered"
#: how often (in cases) scoring reports its progress
PROGRESS_EVERY = 1000


def as_list(v):
    """A list column's value as a list (None for a null)."""
    if v is None or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, np.ndarray):
        return v.tolist()
    return list(v)


def index_predictions(predictions: pd.DataFrame, source: str) -> dict:
    """(case_id, input_idx) -> row position; a duplicate key is refused naming ``source``."""
    cids = predictions["case_id"].tolist()
    idx = predictions["input_idx"].tolist()
    pos = dict(zip(zip(cids, idx), range(len(cids))))
    if len(pos) != len(cids):
        seen = set()
        for c, j in zip(cids, idx):
            if (c, j) in seen:
                raise BelugaError(f"{source}: field 'case_id'/'input_idx': duplicate prediction rows "
                                  f"for case {c!r}, input {j}")
            seen.add((c, j))
    return pos


def case_rows(suite: pd.DataFrame, predictions: pd.DataFrame, source: str) -> tuple[list[int], list[int]]:
    """(the prediction row of every input of every case, in suite order;
    each case's offset into that list, one more than there are cases): a
    missing input is refused naming ``source``, the case and the input."""
    pos = index_predictions(predictions, source)
    n_inputs = [len(x) for x in suite["inputs"]]
    flat: list[int] = []
    for cid, n in zip(suite["case_id"].tolist(), n_inputs):
        for j in range(n):
            k = pos.get((cid, j))
            if k is None:
                raise BelugaError(f"{source}: field 'input_idx': missing predictions for case {cid!r} "
                                  f"({n} inputs expected, input {j} has none)")
            flat.append(k)
    return flat, np.concatenate([[0], np.cumsum(n_inputs, dtype=np.int64)]).tolist()


def case_status_table(case_ids: list, suite: pd.DataFrame, statuses: list[str], why: list | None) -> pd.DataFrame:
    """The per-case table every head's scoring returns: ``case_id``, ``functionality``, ``status`` and, when
    ``why`` is given, ``filter_reason`` (why a filtered case was not scored; None for the others)."""
    out = pd.DataFrame({"case_id": case_ids, "functionality": suite["functionality"].tolist(), "status": statuses})
    if why is not None:
        out["filter_reason"] = pd.Series(why, dtype=object)
    return out
