"""Pass / fail / filtered per test case, with CheckList's semantics
(see ../shared/data/README.md, "What the expectations mean").

Each expectation yields one result per input: True, False or None (not
scored). Nones are dropped; if nothing is left the case is ``filtered``;
``all`` needs every remaining result to pass, ``all_except_first`` ignores the
first remaining result (the original of an INV/DIR case), as CheckList's
``aggregate_and_wrap`` followed by ``Expect.all(ignore_first=True)``.
A slice (``expect_params.slice``) that does not hold filters the whole case
(CheckList's ``wrap_slice``). ``triplet`` is a test-case expectation: it gives
one result for the whole case and ignores ``agg_fn``.

Classification expectations see the predicted class per input (``preds``) and
the probabilities over the suite's label set (``probs``); QA expectations see
the predicted answer strings (``preds``) and ``probs`` is None. A regression
head's cases (predicted scores) are scored by :mod:`beluga.heads.score.cases`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import BelugaError
from beluga.core.tasks import TaskType
from beluga.heads.score.cases import DIRECTIONS
from beluga.score.case_rows import FAIL, FILTERED, PASS, PROGRESS_EVERY, case_rows, case_status_table
from beluga.score.case_rows import as_list as _as_list

# CheckList SQuAD notebook: clean(s) = s.lstrip('[a,the,an,in,at] ').rstrip('.')
# -- a *character-set* strip of '[', 'a', ',', 't', 'h', 'e', 'n', 'i', ']' and
# space on the left, case-sensitive, then trailing periods.
SQUAD_LSTRIP = "[a,the,an,in,at] "


def clean_squad(s) -> str:
    return ("" if s is None else str(s)).lstrip(SQUAD_LSTRIP).rstrip(".")


def _target(i, labels, answers, params, qa):
    val = params.get("val")
    if val is not None:
        return val
    return answers[i] if qa else labels[i]


def _eq(preds, probs, labels, params, answers=None, meta=None):
    qa = probs is None
    return [bool(p == _target(i, labels, answers, params, qa)) for i, p in enumerate(preds)]


def _not_negative(preds, probs, labels, params, answers=None, meta=None):
    return [bool(p != 0) for p in preds]


def _not_eq(preds, probs, labels, params, answers=None, meta=None):
    # any class but ``val`` (NLI "not entailment": HANS's non-entailed heuristic cases, neutral or contradiction)
    return [bool(p != params["val"]) for p in preds]


def _eq_or_not_negative(preds, probs, labels, params, answers=None, meta=None):
    # sentiment "Q & A: no": label 1 means "not negative"
    return [bool(p != 0) if labels[i] == 1 else bool(p == labels[i]) for i, p in enumerate(preds)]


def _inv(preds, probs, labels, params, answers=None, meta=None):
    c = preds[0]
    if probs is None:  # answer strings: exact equality
        return [bool(p == c) for p in preds]
    tol = params.get("tolerance", 0.0)
    p0 = probs[0][c]
    return [bool(p == c or (tol != 0 and abs(probs[i][c] - p0) <= tol)) for i, p in enumerate(preds)]


def _monotonic(preds, probs, labels, params, answers=None, meta=None):
    tol = params.get("tolerance", 0.0)
    increasing = params.get("increasing", True)
    c = params.get("label")
    c = preds[0] if c is None else c
    p0 = probs[0][c]
    if (increasing and p0 <= tol) or (not increasing and p0 >= 1 - tol):
        return [None] * len(preds)  # cannot fail: not scored
    out = []
    for i in range(len(preds)):
        d = probs[i][c] - p0
        out.append(bool(d + tol >= 0) if increasing else bool(d - tol <= 0))
    return out


def _change(probs):
    """(P_neg(orig) - P_neg(pert)) + (P_pos(pert) - P_pos(orig)), three-class probs."""
    return [(probs[0][0] - p[0]) + (p[2] - probs[0][2]) for p in probs]


def _diff_up(preds, probs, labels, params, answers=None, meta=None):
    tol = params.get("tolerance", 0.1)
    return [bool(c >= -tol) for c in _change(probs)]


def _diff_down(preds, probs, labels, params, answers=None, meta=None):
    tol = params.get("tolerance", 0.1)
    return [bool(c <= tol) for c in _change(probs)]


def _triplet(preds, probs, labels, params, answers=None, meta=None):
    """qqp "Testing implications" as the released expect_triplet behaves
    (labels ignored): one result for the whole case."""
    p1, p2, p3 = preds[0], preds[1], preds[2]
    if p1 == 1 and p2 == 1:
        return [bool(p3 == 1)]
    if p1 == 0 and p2 == 1:
        return [False]
    return [None]  # (dup, not, .) and (not, not, .): not scored


def _squad(preds, probs, labels, params, answers=None, meta=None):
    return [clean_squad(p) == clean_squad(answers[i]) for i, p in enumerate(preds)]


@functools.lru_cache(maxsize=65536)
def _word_pattern(old: str) -> re.Pattern:
    # CheckList: re.sub(r'\b%s\b' % old, new, orig_pred) -- the name is used as
    # a regular expression; a name that is not a valid one is matched literally.
    try:
        return re.compile(r"\b" + old + r"\b")
    except re.error:
        return re.compile(r"\b" + re.escape(old) + r"\b")


def _same_answer(preds, probs, labels, params, answers=None, meta=None):
    """squad expect_same (NER INVs): the perturbed answer equals the original
    answer with whole-word ``old`` replaced by ``new`` (meta[i] = [old, new])."""
    orig = preds[0]
    out = []
    for i, p in enumerate(preds):
        m = meta[i] if isinstance(meta, list) else None
        if not m:
            out.append(p == orig)
        else:
            old, new = m[0], m[1]
            out.append(p == _word_pattern(old).sub(lambda _m, new=new: new, orig))
    return out


EXPECT_FNS = {"eq": _eq, "not_negative": _not_negative, "eq_or_not_negative": _eq_or_not_negative, "not_eq": _not_eq,
              "inv": _inv, "monotonic": _monotonic, "diff_up": _diff_up, "diff_down": _diff_down,
              "triplet": _triplet, "squad": _squad, "same_answer": _same_answer}
# test-case expectations: one result per case, agg_fn not applied
CASE_LEVEL = frozenset({"triplet"})
# expectations that need class probabilities (no QA counterpart)
NEEDS_PROBS = frozenset({"monotonic", "diff_up", "diff_down"})

# slices: a case is kept only if the slice holds (CheckList wrap_slice)
SLICE_FNS = {
    "orig_not_neutral": lambda preds, probs, params: preds[0] != 1,
    "orig_pred_eq": lambda preds, probs, params: preds[0] == params.get("slice_value"),
}


def combine_inputs(results: list, agg_fn: str) -> str:
    r = [x for x in results if x is not None]
    if not r:
        return FILTERED
    if agg_fn == "all_except_first":
        r = r[1:]
    return PASS if all(r) else FAIL


def case_status(expect: str, params: dict, agg_fn: str, preds, probs, labels,
                answers=None, meta=None) -> str:
    """Status of one case. preds: predicted class (classification) or answer
    string (QA) per input; probs: per-input probabilities over the suite's
    labels, or None for QA; labels / answers: per-input expectations; meta:
    the parsed ``meta`` JSON."""
    return case_outcome(expect, params, agg_fn, preds, probs, labels, answers, meta)[0]


def _class_name(c, class_names: dict | None) -> str:
    return str((class_names or {}).get(c, c))


#: the expectation parameters that name a class (by its index in the suite's label set)
CLASS_PARAMS = ("val", "label", "slice_value")


def expectation_text(expect: str, params: dict, class_names: dict | None = None) -> str:
    """An expectation with its parameters as the summaries show it (``not_eq val=entailment``): a class by its
    name (``class_names``: the suite's by index; a score or an answer as it is), the training options left
    out."""
    shown = {k: _class_name(v, class_names) if k in CLASS_PARAMS else v for k, v in params.items() if k != "train"}
    return expect + (" " + ", ".join(f"{k}={v}" for k, v in shown.items()) if shown else "")


def case_outcome(expect: str, params: dict, agg_fn: str, preds, probs, labels, answers=None, meta=None,
                 class_names: dict | None = None) -> tuple[str, str | None]:
    """(status, why it was filtered) of one case (:func:`case_status`); the reason is None unless the status
    is ``filtered``: the slice that did not hold (``original predicted neutral``), the monotonic expectation's
    original already at its bound, the triplet's pair predictions, or no input scored. ``class_names``:
    the suite's class names by index, for the reasons."""
    if expect not in EXPECT_FNS:
        raise BelugaError(f"field 'expect': unknown expectation {expect!r} (known: {', '.join(EXPECT_FNS)})")
    slice_name = params.get("slice")
    if slice_name is not None:
        if slice_name not in SLICE_FNS:
            raise BelugaError(f"expectation parameter 'slice': unknown slice {slice_name!r}")
        if not SLICE_FNS[slice_name](preds, probs, params):
            why = (f"original predicted {_class_name(1, class_names)}" if slice_name == "orig_not_neutral" else
                   f"original not predicted {_class_name(params.get('slice_value'), class_names)}")
            return FILTERED, why
    results = EXPECT_FNS[expect](preds, probs, labels, params, answers, meta)
    status = combine_inputs(results, "all" if expect in CASE_LEVEL else agg_fn)
    if status != FILTERED:
        return status, None
    if expect == "monotonic":
        tol = params.get("tolerance", 0.0)
        bound = f"<= tolerance {tol}" if params.get("increasing", True) else f">= 1 - tolerance {tol}"
        return status, f"original's confidence {bound} (monotonic)"
    if expect == "triplet":
        return status, "pair predictions leave the implication untested"
    return status, "no input scored"


def filter_condition(expect: str, params: dict, class_names: dict | None = None) -> str | None:
    """When a case of this expectation is filtered (not scored) whatever the model predicts beyond it, as
    the summaries of ``suite build`` / ``suite perturb`` warn: the slice, the monotonic bound, a regression
    DIR's range bound (:func:`beluga.heads.score.cases.score_case_outcome`); None: never for that reason.
    ``class_names``: the suite's class names by index (:func:`case_outcome`'s)."""
    slice_name = params.get("slice")
    if slice_name == "orig_not_neutral":
        return f"a case whose original is predicted {_class_name(1, class_names)} is filtered"
    if slice_name == "orig_pred_eq":
        return (f"a case whose original is not predicted {_class_name(params.get('slice_value'), class_names)} "
                "is filtered")
    if expect == "monotonic":
        tol = params.get("tolerance", 0.0)
        bound = f"<= tolerance {tol}" if params.get("increasing", True) else f">= 1 - tolerance {tol}"
        return f"a case whose original's confidence is {bound} is filtered"
    if expect in DIRECTIONS:
        end = "top" if DIRECTIONS[expect] > 0 else "bottom"
        return f"a case whose original's score is already at the {end} of the score range is filtered"
    return None


def score_checklist_cases(suite: pd.DataFrame, predictions: pd.DataFrame, ttype: TaskType, col: str,
                          values_of: Callable, names: dict | None, source: str = "predictions",
                          on_cases: Callable[[int], None] | None = None, reasons: bool = False) -> pd.DataFrame:
    """The cases of a classification or QA head (CheckList's expectations): ``predictions`` rows (case_id,
    input_idx, ``col``) covering every input of the ``suite`` rows; ``values_of(values, (rows, keys))`` turns
    the rows' values (case order) into (predicted class or answer per input, probabilities per input or None:
    a QA head has none); ``names``: the suite's class names (None for QA). Returns DataFrame(case_id,
    functionality, status), with ``reasons`` also ``filter_reason``."""
    for c in ("case_id", "input_idx", col):
        if c not in predictions.columns:
            raise BelugaError(f"{source}: field '{c}': missing column (a {ttype.name} prediction file needs "
                              f"case_id, input_idx and {col})")
    case_ids = suite["case_id"].tolist()
    flat, offsets = case_rows(suite, predictions, source)
    values = predictions[col].to_numpy(dtype=object)[np.asarray(flat, dtype=np.int64)]
    cids, idx = predictions["case_id"].tolist(), predictions["input_idx"].tolist()
    pred_all, probs_all = values_of(values, (flat, lambda i: (cids[flat[i]], idx[flat[i]])))

    param_cache: dict[str, dict] = {}
    checked: set[str] = set()
    n_classes = 0 if not probs_all else len(probs_all[0])
    statuses, why = [], []
    view = suite.assign(**{c: None for c in ("labels", "answers", "meta") if c not in suite.columns})
    cols = ["case_id", "expect", "expect_params", "agg_fn", "labels", "answers", "meta"]
    for k, r in enumerate(view[cols].itertuples(index=False)):
        s, e = offsets[k], offsets[k + 1]
        raw = r.expect_params or ""
        params = param_cache.get(raw)
        if params is None:
            params = json_loads(raw) if raw else {}
            param_cache[raw] = params
        if r.expect in NEEDS_PROBS and r.expect not in checked:
            if probs_all is None:
                raise BelugaError(f"suite case {r.case_id!r}: field 'expect': expectation {r.expect!r} needs class "
                                  f"probabilities, which a QA task does not have")
            if r.expect in ("diff_up", "diff_down") and n_classes != 3:
                raise BelugaError(f"suite case {r.case_id!r}: field 'expect': expectation {r.expect!r} needs "
                                  f"three-class (negative, neutral, positive) probabilities; task type {ttype.name!r} "
                                  f"gives {n_classes}")
            if r.expect in ("diff_up", "diff_down") and ttype.neutral_label is None:
                raise BelugaError(f"suite case {r.case_id!r}: field 'expect': expectation {r.expect!r} compares "
                                  f"sentiment's negative and positive probabilities; task type {ttype.name!r} has "
                                  f"classes {', '.join(ttype.suite_labels.values())} (use a labelled DIR, 'eq')")
            checked.add(r.expect)
        meta = json_loads(r.meta) if (r.expect == "same_answer" and isinstance(r.meta, str)) else None
        status, reason = case_outcome(r.expect, params, r.agg_fn, pred_all[s:e],
                                      None if probs_all is None else probs_all[s:e],
                                      _as_list(r.labels), _as_list(r.answers), meta, names)
        statuses.append(status)
        why.append(reason)
        if on_cases is not None and (k + 1) % PROGRESS_EVERY == 0:
            on_cases(k + 1)
    if on_cases is not None:
        on_cases(len(statuses))
    return case_status_table(case_ids, suite, statuses, why if reasons else None)
