"""A model's outcomes, keyed by ids: pass / fail / filtered per suite case and per-example i.i.d. / OOD
outcomes, scored by the task's head (:mod:`beluga.heads`). What each CheckList expectation means is in
:mod:`beluga.score.expectations`; a regression head's expectations in :mod:`beluga.heads.score.cases`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from beluga.core.tasks import TaskType
from beluga.heads import get_head, head_of
from beluga.heads.base import aligned_ids
from beluga.score.case_rows import FAIL, FILTERED, PASS

__all__ = ["FAIL", "FILTERED", "PASS", "iid_outcomes", "run_outcomes", "score_cases"]


def score_cases(suite: pd.DataFrame, predictions: pd.DataFrame, ttype: TaskType,
                source: str = "predictions", on_cases: Callable[[int], None] | None = None,
                reasons: bool = False) -> pd.DataFrame:
    """suite: suite rows to score; predictions: rows (case_id, input_idx and the head's value column:
    ``probs``, ``answer`` or ``score``) covering every input of those cases (other columns are ignored).
    ``on_cases`` (optional): called with the cases scored so far, every
    :data:`beluga.score.case_rows.PROGRESS_EVERY` cases and at the end (a progress bar).
    Returns DataFrame(case_id, functionality, status), with ``reasons`` also ``filter_reason`` (why a filtered
    case was not scored; null for the others)."""
    return head_of(ttype).score_cases(suite, predictions, ttype, source, on_cases, reasons)


def iid_outcomes(preds: pd.DataFrame, gold: pd.DataFrame, head: str, source: str = "predictions",
                 split: str = "iid_test", collapse: list[int] | None = None, ttype: TaskType | None = None
                 ) -> pd.DataFrame:
    """Per-example i.i.d. (or OOD: ``split`` = ``ood:<name>``) outcomes keyed by example id (``head``: the
    task type's head name): ``correct`` and, for classification, ``pred_label`` / ``gold_label``; for QA
    ``em`` / ``f1`` (SQuAD v1.1 evaluation, max over the gold answers); for a regression head
    ``pred_score`` / ``gold_score`` (``correct`` null). ``collapse``: an OOD set with fewer classes than the
    model (beluga/data/ood_collapse.py): the set's class of each model class; the model's argmax class is
    mapped onto the set's before it is compared. ``ttype`` a five-class similarity task (one with
    ``class_scores``: SIMILARITY_CLASSES): also ``pred_score`` / ``gold_score`` (:func:`class_score_columns`)."""
    ids, gold = aligned_ids(preds, gold, source)
    out = pd.DataFrame({"case_id": ids, "functionality": None, "status": None, "split": split, "held_out": False})
    for column, values in get_head(head).example_outcomes(preds, gold, ids, source, collapse).items():
        out[column] = values
    if ttype is not None and hasattr(ttype, "class_scores"):
        out["pred_score"], out["gold_score"] = class_score_columns(preds, gold, ids, ttype)
    out["correct"] = out["correct"].astype("boolean")
    return out


def class_score_columns(preds: pd.DataFrame, gold: pd.DataFrame, ids, ttype) -> tuple[np.ndarray, np.ndarray]:
    """(pred_score, gold_score) of a five-class similarity task's examples (``gold`` indexed by example id):
    the model's expected class (``ttype.class_scores`` of its probabilities, already checked by the head) and the
    gold table's ``score`` (the similarity score its class was rounded from); NaN gold scores where the table
    holds classes only (a local table: GLUE's Pearson / Spearman are then not computed)."""
    probs = np.array([np.asarray(p, dtype=np.float64) for p in preds["probs"]], dtype=np.float64)
    pred = ttype.class_scores(probs.reshape(len(ids), -1)) if len(ids) else np.zeros(0)
    if "score" not in gold.columns:
        return pred, np.full(len(ids), np.nan)
    return pred, gold.loc[ids, "score"].astype(np.float64).to_numpy()


def run_outcomes(ttype: TaskType, suite_test: pd.DataFrame, preds: pd.DataFrame, iid: pd.DataFrame,
                 held_out: list[str], source: str, ood: dict[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """A model's outcomes: per-case status on the predicted T_test cases
    (``held_out`` flags the functionalities its run is scored on) and
    per-example i.i.d. and OOD (``ood``: name -> gold table) outcomes, keyed by ids."""
    from beluga.data.ood_sets import split_name

    status = score_cases(suite_test, preds[preds["split"] == "suite_test"], ttype, source=source)
    status["split"] = "suite_test"
    status["held_out"] = status["functionality"].isin(set(held_out))
    parts = [status, iid_outcomes(preds[preds["split"] == "iid_test"], iid, ttype.head, source=source, ttype=ttype)]
    for name, gold in (ood or {}).items():
        parts.append(iid_outcomes(preds[preds["split"] == split_name(name)], gold, ttype.head,
                                  source=f"{source} ({name})", split=split_name(name),
                                  collapse=gold.attrs.get("collapse"), ttype=ttype))
    out = pd.concat(parts, ignore_index=True)
    out["correct"] = out["correct"].astype("boolean")
    return out
