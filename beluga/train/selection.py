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
  training error ``beluga.train.losses.dir_error`` <= 0.1 per pair, no slice);
- PARA: mean(accuracy, F1 of "duplicate") on MFT inputs + INV pass
  (|ΔP(duplicate)| <= 0.1) + mean(accuracy, F1) on the inputs of the
  label-checked DIRs (those training uses, ``beluga.train.batches.mft_inputs``);
- NLI, NLI_BINARY, ACCEPTABILITY (not in the reference code; the project's
  counterpart of SENT's, issue 40): MFT accuracy (argmax over the model's
  classes) + INV pass (the largest change of a class probability <= 0.1 per
  pair: PARA's |ΔP(duplicate)| for two classes) + DIR pass (accuracy on the
  inputs of the label-checked DIRs, as PARA's);
- SIMILARITY (a regression head; the project's counterpart, issue 40): the
  share of T_val MFT inputs, INV pairs and DIR pairs whose predicted score
  meets its case's expectation, each pooled over its test type
  (:mod:`beluga.heads.score.objective`);
- READ: mean of the start and end token accuracy over the MFT windows
  + mean over INV pairs of start and end agreement of the argmax on the
  aligned positions (``beluga.heads.span.qa.span_argmax_hits`` /
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

from beluga.core.errors import ConfigError

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


# --------------------------------------------------------------------------- the terms


def mean_or_none(x) -> float | None:
    """The mean of ``x`` (None when empty)."""
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()) if len(x) else None


def pair_mean(a, b):
    """The mean of two terms (None when either is)."""
    return None if a is None or b is None else (a + b) / 2


def reference_terms(task_type: str, parts: dict) -> dict[str, float | None]:
    """The terms ``get_compute_objective`` adds up, by test type (None: nothing of that type in T_val)."""
    if task_type == "sent":
        return {"mft": parts["mft_accuracy"], "inv": parts["inv_pass"], "dir": parts["dir_pass"]}
    if task_type == "para":
        return {"mft": pair_mean(parts["mft_accuracy"], parts["mft_f1"]), "inv": parts["inv_pass"],
                "dir": pair_mean(parts["dir_accuracy"], parts["dir_f1"])}
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
