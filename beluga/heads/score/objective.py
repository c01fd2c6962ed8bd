"""The ``reference`` selection objective for a regression head (SIMILARITY,
issue 40): the project's counterpart of the reference code's
``get_compute_objective`` (:mod:`beluga.train.selection`), which has none for scores.

The classification objectives add up, by test type, a metric pooled (micro)
over the T_val inputs or (original, perturbation) pairs of that test type.
Here each term is the share of T_val inputs (MFT) or pairs (INV, DIR) whose
predicted score meets its case's own expectation (:func:`beluga.heads.score.cases.input_results`:
``score_near`` / ``score_between`` within the case's tolerance or bounds,
``score_inv`` within its tolerance of the original, ``score_up`` /
``score_down`` moving by at least its margin), pooled over every input of
that test type:

- ``mft``: every scored input of the MFT cases;
- ``inv``: every perturbation of the INV cases (the original's own result is
  ignored under ``all_except_first``, as scoring ignores it);
- ``dir``: every perturbation of the DIR cases, a DIR whose original is
  already at the score range's bound in its direction left out (as scoring
  filters it).

Per input rather than per case (the pass rate's unit) for the reason the
reference code pools its terms: a near miss on one perturbation of a case
costs one input, not the case. A tolerance of its own (the reference's 0.1 on
probabilities) is not imposed: a score's tolerance is the suite's
(``tolerance``, default 0.5 score points). A test type with nothing in T_val
is None (left out of the sum, as for the other heads).
"""

from __future__ import annotations

import numpy as np

from beluga.core.bounds import json_loads
from beluga.core.errors import BelugaError
from beluga.heads.score.cases import DIRECTIONS, input_results


def regression_plan(cases) -> dict[str, list[tuple]]:
    """What each term reads from the ``cases`` (T_val), by test type: (case_id, number of inputs, expect,
    params, labels, agg_fn). A case whose test type has no term stops here with its id."""
    plan: dict[str, list[tuple]] = {"mft": [], "inv": [], "dir": []}
    for r in cases.itertuples(index=False):
        term = str(r.test_type).lower()
        if term not in plan:
            raise BelugaError(f"objective 'reference': T_val case {r.case_id!r}: field 'test_type': a regression "
                              f"task has no reference term for a {r.test_type}")
        params = json_loads(r.expect_params) if r.expect_params else {}
        labels = None if r.labels is None else list(r.labels)
        plan[term].append((r.case_id, len(r.inputs), str(r.expect), params, labels, str(r.agg_fn)))
    return plan


def _scores_of(preds, source: str):
    if "score" not in preds.columns:
        raise BelugaError(f"{source}: field 'score': missing column (the reference objective of a regression task "
                          f"reads predicted scores)")
    index = {(c, int(j)): s for c, j, s in zip(preds["case_id"], preds["input_idx"], preds["score"])}

    def get(case_id, j) -> float:
        s = index.get((case_id, j))
        if s is None or not np.isfinite(float(s)):
            raise BelugaError(f"{source}: field 'score': no finite predicted score for case {case_id!r}, input {j}")
        return float(s)
    return get


def regression_parts(plan: dict[str, list[tuple]], preds, source: str = "T_val",
                     score_range: tuple[float, float] = (0.0, 5.0)) -> dict:
    """The pooled pass shares of the plan's terms from the predicted scores (``preds``: case_id, input_idx,
    score), with their counts (``n_mft`` inputs, ``n_inv`` / ``n_dir`` pairs)."""
    get = _scores_of(preds, source)
    lo, hi = score_range
    parts: dict = {}
    for term, rows in plan.items():
        hits: list[bool] = []
        for case_id, n, expect, params, labels, agg_fn in rows:
            scores = [get(case_id, j) for j in range(n)]
            if expect in DIRECTIONS and ((DIRECTIONS[expect] > 0 and scores[0] >= hi) or
                                         (DIRECTIONS[expect] < 0 and scores[0] <= lo)):
                continue                    # at the bound in its direction: filtered, as scoring does
            results = input_results(expect, params, scores, labels)
            if agg_fn == "all_except_first":
                results = results[1:]
            hits.extend(r for r in results if r is not None)
        parts[f"n_{term}"] = len(hits)
        parts[f"{term}_pass"] = float(np.mean(hits)) if hits else None
    return parts
