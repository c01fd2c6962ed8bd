"""Model selection's objective on T_val (``selection.objective``) and the
choice of the best grid point (docs/PROCEDURE.md §4, docs/DEVIATIONS.md).

``pass_rate`` (default): the mean over the fold's training functionalities of
the T_val pass rate (functionalities with nothing scored left out).

``reference``: the reference code's ``get_compute_objective(task)``, the sum
over test types of its evaluation metrics, each pooled (micro) over the T_val
inputs or (original, perturbation) pairs of that test type:

- SENT: MFT accuracy (two-class probabilities squashed to three classes,
  ``binary_to_three_class``; a "not negative" label passes neutral and
  positive) + INV pass (|ΔP(positive)| <= 0.1 per pair) + DIR pass (the DIR
  training error ``beluga.losses.dir_error`` <= 0.1 per pair, no slice);
- PARA: mean(accuracy, F1 of "duplicate") on MFT inputs + INV pass
  (|ΔP(duplicate)| <= 0.1) + mean(accuracy, F1) on the inputs of the
  label-checked DIRs (those training uses, ``beluga.batches.mft_inputs``);
- NLI, NLI_BINARY, ACCEPTABILITY (not in the reference code; the project's
  counterpart of SENT's, issue 40): MFT accuracy (argmax over the model's
  classes) + INV pass (the largest change of a class probability <= 0.1 per
  pair: PARA's |ΔP(duplicate)| for two classes) + DIR pass (accuracy on the
  inputs of the label-checked DIRs, as PARA's);
- SIMILARITY (a regression head; the project's counterpart, issue 40): the
  share of T_val MFT inputs, INV pairs and DIR pairs whose predicted score
  meets its case's expectation, each pooled over its test type
  (:mod:`beluga.score_objective`);
- READ: mean of the start and end token accuracy over the MFT windows
  + mean over INV pairs of start and end agreement of the argmax on the
  aligned positions (``beluga.qa.span_argmax_hits`` /
  ``aligned_argmax_agreement``).

The reference draws one random perturbation per original (up to three
labelled inputs per PARA DIR case) at each evaluation; here every pair and
every labelled input counts. A test type with nothing in T_val (a fold
holding out a whole test type) is left out of the sum: it is the same for
every grid point of the fold. Selection maximises the score; ties go to the
first trial in grid order, NaN never wins.

Light at import (numpy); the heavy helpers are imported where used.
"""

from __future__ import annotations

import numpy as np

from beluga.bounds import json_loads
from beluga.errors import BelugaError, ConfigError
from beluga.metrics import positive_f1
from beluga.tasks import TaskType, binary_to_three_class

OBJECTIVES = ("pass_rate", "reference")
#: the reference code's tolerance of its INV and DIR metrics (``tol=0.1``)
REFERENCE_TOL = 0.1
#: each task type's terms of the reference objective, and what they are
REFERENCE_TERMS = {
    "sent": "MFT accuracy + INV pass + DIR pass",
    "para": "mean(MFT accuracy, MFT F1) + INV pass + mean(DIR accuracy, DIR F1)",
    "read": "mean(MFT start / end token accuracy) + mean(INV start / end aligned argmax agreement)",
    "nli": "MFT accuracy + INV pass + DIR pass",
    "nli_binary": "MFT accuracy + INV pass + DIR pass",
    "acceptability": "MFT accuracy + INV pass + DIR pass",
    "similarity_classes": "MFT accuracy + INV pass + DIR pass",
    "similarity": "MFT score pass + INV score pass + DIR score pass",
}
#: the task types whose objective is the reference code's own (the others' is the project's counterpart)
REFERENCE_CODE_TYPES = ("sent", "para", "read")
NOT_NEGATIVE = "not_0"   # the reference code's soft label [1/3, 2/3]


def check_objective(objective: str) -> str:
    if objective not in OBJECTIVES:
        raise ConfigError(f"config: field 'selection.objective': {objective!r} is not one of {', '.join(OBJECTIVES)}")
    return objective


# --------------------------------------------------------------------------- the plan: what each term reads


def _sent_label(ttype: TaskType, expect: str, label):
    """The reference code's MFT label of a SENT input: 0 / 1 / 2, or
    ``not_0`` for the soft target [1/3, 2/3] (``soft_to_label``)."""
    target = ttype.mft_target(expect, label)
    if np.allclose(target, [1 / 3, 2 / 3]):
        return NOT_NEGATIVE
    return {(1.0, 0.0): 0, (0.5, 0.5): 1, (0.0, 1.0): 2}[tuple(float(t) for t in target)]


def reference_plan(ttype: TaskType, cases, answer_match: str = "token",
                   eq_or_not_negative_target: str = "not_negative") -> dict[str, list[tuple]]:
    """What each term of the reference objective reads from the ``cases``
    (T_val), by test type: ``mft`` (case_id, input_idx, label: SENT 0 / 1 / 2
    / ``not_0``, PARA 0 / 1), ``inv`` (case_id, the perturbation's
    input_idx; the original is input 0), ``dir`` (SENT: case_id, input_idx,
    DIR function index; PARA: case_id, input_idx, label). READ: ``mft``
    (case_id, input_idx, context, question, answer, answer start; located
    as training locates it, ``answer_match``), ``inv`` (case_id, input_idx,
    the original's context and question, the perturbation's). Cases are assigned as training assigns them
    (``beluga.batches``), SENT's "Q & A: no" label 1 scored as it is trained
    (``eq_or_not_negative_target``: ``label``, the reference's, is neutral:
    only a neutral prediction is a hit); a case no reference metric covers
    stops here with its id, before anything is trained."""
    if ttype.head == "regression":
        from beluga.score_objective import regression_plan

        return regression_plan(cases)
    from beluga.batches import mft_inputs, trained_as_mft
    from beluga.losses import DIR_FN_INDEX, dir_function_for
    from beluga.qa import locate_answer

    plan: dict[str, list[tuple]] = {"mft": [], "inv": [], "dir": []}
    for r in cases.itertuples(index=False):
        params = json_loads(r.expect_params) if r.expect_params else {}
        n = len(r.inputs)
        where = f"objective 'reference': T_val case {r.case_id!r}"
        if ttype.head == "qa":
            if r.inputs_b is None:
                raise BelugaError(f"{where}: field 'inputs_b': questions are missing")
            c, q = list(r.inputs), list(r.inputs_b)
            if r.test_type == "INV":
                plan["inv"].extend((r.case_id, j, c[0], q[0], c[j], q[j]) for j in range(1, n))
            elif r.test_type == "MFT" and getattr(r, "answers", None) is not None:
                for j, a in enumerate(r.answers):
                    start = locate_answer(c[j], str(a), answer_match)
                    if start < 0:
                        raise BelugaError(f"{where}: field 'answers': {str(a)!r} does not occur in the context")
                    plan["mft"].append((r.case_id, j, c[j], q[j], str(a), start))
            else:
                raise BelugaError(f"{where}: field 'test_type': READ has no reference metric for a {r.test_type} "
                                  f"with expectation {r.expect!r}")
            continue
        if trained_as_mft(r, params):
            expect, labelled = mft_inputs(r, params, eq_or_not_negative_target)   # as beluga.batches trains it
            is_mft = r.test_type == "MFT" or (params.get("train") or {}).get("as") == "MFT"
            if ttype.name == "sent":
                if not is_mft:
                    raise BelugaError(f"{where}: field 'expect': SENT has no reference metric for a label-checked "
                                      f"{r.test_type}")
                plan["mft"].extend((r.case_id, j, _sent_label(ttype, expect, y)) for j, y in labelled)
            elif is_mft or r.test_type == "DIR":
                rows = [(r.case_id, j, int(np.argmax(ttype.mft_target(expect, y)))) for j, y in labelled]
                plan["mft" if is_mft else "dir"].extend(rows)
            else:
                raise BelugaError(f"{where}: field 'expect': {ttype.name.upper()} has no reference metric for a "
                                  f"label-checked {r.test_type}")
        elif r.test_type == "INV":
            plan["inv"].extend((r.case_id, j) for j in range(1, n))
        elif r.test_type == "DIR" and ttype.name == "sent":
            try:
                fn = DIR_FN_INDEX[dir_function_for(r.expect, params)]
            except ValueError as e:
                raise BelugaError(f"{where}: field 'expect': {e}") from None
            plan["dir"].extend((r.case_id, j, fn) for j in range(1, n))
        else:
            raise BelugaError(f"{where}: field 'expect': {ttype.name.upper()} has no reference metric for a "
                              f"{r.test_type} with expectation {r.expect!r}")
    return plan


# --------------------------------------------------------------------------- the terms


def _mean(x) -> float | None:
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()) if len(x) else None


def binary_f1(pred, gold) -> float:
    """F1 of class 1 (sklearn's ``f1_score``, as the GLUE QQP metric: 0 when
    there is no true positive): :func:`beluga.metrics.positive_f1`."""
    return positive_f1(np.asarray(pred, dtype=int), np.asarray(gold, dtype=int))


def _probs_of(preds, source: str, k: int = 2):
    index = {(c, int(j)): p for c, j, p in zip(preds["case_id"], preds["input_idx"], preds["probs"])}

    def get(case_id, j) -> np.ndarray:
        p = index.get((case_id, j))
        if p is None:
            raise BelugaError(f"{source}: field 'input_idx': no prediction for case {case_id!r}, input {j}")
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (k,):
            raise BelugaError(f"{source}: field 'probs': the reference objective needs the model's "
                              f"{ {2: 'two', 3: 'three'}.get(k, k)}-class probabilities, case {case_id!r} input {j} "
                              f"has {p.shape}")
        return p
    return get


def _pairs(plan_rows, get, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(originals' probabilities, perturbations' probabilities), one row per pair."""
    if not plan_rows:
        return np.zeros((0, k)), np.zeros((0, k))
    return (np.stack([get(c, 0) for c, j, *_ in plan_rows]), np.stack([get(c, j) for c, j, *_ in plan_rows]))


def classification_parts(ttype: TaskType, plan: dict[str, list[tuple]], preds, source: str = "T_val") -> dict:
    """The SENT / PARA / NLI / ACCEPTABILITY metrics of the reference objective from the model's
    probabilities (``preds``: case_id, input_idx, probs), with their counts."""
    import torch

    from beluga.losses import dir_error

    if ttype.name not in ("sent", "para"):
        return _labelled_parts(plan, _probs_of(preds, source, ttype.num_model_labels), ttype.num_model_labels)
    get = _probs_of(preds, source)
    p0, pi = _pairs(plan["inv"], get)
    parts: dict = {"n_mft": len(plan["mft"]), "n_inv": len(plan["inv"]), "n_dir": len(plan["dir"]),
                   "inv_pass": _mean(np.abs(pi[:, 1] - p0[:, 1]) <= REFERENCE_TOL)}
    mft_probs = np.stack([get(c, j) for c, j, _ in plan["mft"]]) if plan["mft"] else np.zeros((0, 2))
    mft_gold = [y for _, _, y in plan["mft"]]
    if ttype.name == "sent":
        pred3 = binary_to_three_class(mft_probs[:, 1]).argmax(-1) if len(mft_probs) else []
        parts["mft_accuracy"] = _mean([p in (1, 2) if y == NOT_NEGATIVE else p == y for p, y in zip(pred3, mft_gold)])
        d0, di = _pairs(plan["dir"], get)
        fn = torch.tensor([f for _, _, f in plan["dir"]], dtype=torch.long)
        errors = dir_error(torch.from_numpy(d0), torch.from_numpy(di), fn).numpy() if len(fn) else []
        parts["dir_pass"] = _mean(np.asarray(errors) <= REFERENCE_TOL)
        return parts
    for part, probs, gold in (("mft", mft_probs, mft_gold),
                              ("dir", np.stack([get(c, j) for c, j, _ in plan["dir"]]) if plan["dir"]
                               else np.zeros((0, 2)), [y for _, _, y in plan["dir"]])):
        pred = probs.argmax(-1) if len(probs) else np.zeros(0, dtype=int)
        parts[f"{part}_accuracy"] = _mean(pred == np.asarray(gold, dtype=int))
        parts[f"{part}_f1"] = binary_f1(pred, gold) if len(gold) else None
    return parts


def _labelled_parts(plan: dict[str, list[tuple]], get, k: int) -> dict:
    """NLI / NLI_BINARY / ACCEPTABILITY: MFT and DIR accuracy (argmax over the model's ``k`` classes) and
    the INV pass rate (max over classes of |ΔP| <= :data:`REFERENCE_TOL`, PARA's test for two classes)."""
    p0, pi = _pairs(plan["inv"], get, k)
    parts: dict = {"n_mft": len(plan["mft"]), "n_inv": len(plan["inv"]), "n_dir": len(plan["dir"]),
                   "inv_pass": _mean(np.abs(pi - p0).max(axis=1) <= REFERENCE_TOL) if len(p0) else None}
    for part in ("mft", "dir"):
        rows = plan[part]
        probs = np.stack([get(c, j) for c, j, _ in rows]) if rows else np.zeros((0, k))
        parts[f"{part}_accuracy"] = _mean(probs.argmax(-1) == np.asarray([y for *_, y in rows], dtype=int)) \
            if rows else None
    return parts


def read_parts(start_hits, end_hits, inv_same_start, inv_same_end) -> dict:
    """The READ metrics of the reference objective: start / end token
    accuracy over the MFT windows, start / end argmax agreement over the INV
    pairs, and their means."""
    sa, ea, ss, es = (_mean(x) for x in (start_hits, end_hits, inv_same_start, inv_same_end))
    return {"n_mft_windows": len(start_hits), "n_inv": len(inv_same_start),
            "mft_start_accuracy": sa, "mft_end_accuracy": ea,
            "mft_mean_accuracy": _avg(sa, ea),
            "inv_start_pass": ss, "inv_end_pass": es,
            "inv_mean_pass": _avg(ss, es)}


def _avg(a, b):
    return None if a is None or b is None else (a + b) / 2


def reference_terms(task_type: str, parts: dict) -> dict[str, float | None]:
    """The terms ``get_compute_objective`` adds up, by test type (None: nothing of that type in T_val)."""
    if task_type == "sent":
        return {"mft": parts["mft_accuracy"], "inv": parts["inv_pass"], "dir": parts["dir_pass"]}
    if task_type == "para":
        return {"mft": _avg(parts["mft_accuracy"], parts["mft_f1"]), "inv": parts["inv_pass"],
                "dir": _avg(parts["dir_accuracy"], parts["dir_f1"])}
    if task_type == "read":
        return {"mft": parts["mft_mean_accuracy"], "inv": parts["inv_mean_pass"]}
    if task_type == "similarity":
        return {"mft": parts["mft_pass"], "inv": parts["inv_pass"], "dir": parts["dir_pass"]}
    if task_type in REFERENCE_TERMS:
        return {"mft": parts["mft_accuracy"], "inv": parts["inv_pass"], "dir": parts["dir_accuracy"]}
    raise ConfigError(f"config: field 'type': no reference objective for task type {task_type!r}")


def reference_objective(task_type: str, parts: dict) -> dict:
    """The reference objective's record: its score (the sum of the terms
    present; NaN when T_val has none), terms and parts."""
    terms = reference_terms(task_type, parts)
    present = [v for v in terms.values() if v is not None]
    origin = "reference code" if task_type in REFERENCE_CODE_TYPES else "the project's counterpart"
    return {"objective": "reference", "score": float(sum(present)) if present else float("nan"),
            "metric": f"{REFERENCE_TERMS[task_type]} on T_val ({origin})", "terms": terms, "parts": parts}


def pass_rate_objective(rates) -> dict:
    """The default objective's record: the mean of the per-functionality pass
    rates (a Series; NaN ones left out; NaN when none is scored)."""
    return {"objective": "pass_rate", "score": float(rates.mean()) if rates.notna().any() else float("nan"),
            "metric": "mean T_val pass rate"}


# --------------------------------------------------------------------------- the choice


def best_trial(results: list[dict]) -> dict:
    """The trial with the highest score (ties: the first in grid order; a NaN
    score never wins unless every score is NaN, then the first). Trials scored
    with different objectives are refused."""
    if not results:
        raise ConfigError("config: field 'selection.grid': no trials to select from")
    objectives = sorted({r.get("objective", "pass_rate") for r in results})
    if len(objectives) > 1:
        raise ConfigError(f"config: field 'selection.objective': trials {results[0]['trial']!r}... were scored "
                          f"with different objectives ({', '.join(objectives)}); rerun them")
    scored = [r for r in results if r["score"] == r["score"]]
    return max(scored, key=lambda r: r["score"]) if scored else results[0]
