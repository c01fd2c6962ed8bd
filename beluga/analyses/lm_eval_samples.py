"""lm-evaluation-harness's per-sample output read back (``score --format lm-eval-samples --predictions
SAMPLES.jsonl``): the ``--log_samples`` JSONL of a task ``suite export --format lm-eval`` wrote
(beluga/suites/lm_eval.py) -> class probabilities for the project's scorer, so INV / DIR tolerances work
unchanged. One record per document: ``doc`` (with the exported ``case_id`` / ``input_idx``) and per choice
``[log-likelihood, is-greedy]`` in ``filtered_resps`` (else ``resps``: ``[[log-likelihood, is-greedy]]``); the
probabilities are the softmax over the choices' log-likelihoods, in the choices' order (the task's classes, as
exported; ``--label-order`` reads another). A record without them, or with another number of choices than the
task's classes, is one line naming the file, the line and the field."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from beluga.analyses.predictions import predictions_text, text_lines, unique_case_records
from beluga.bounds import json_loads
from beluga.causal_lm import class_sets, softmax_rows
from beluga.errors import DataError
from beluga.tasks import TaskType

#: the ``score --format`` of lm-eval's per-sample output (its --log_samples files: samples_<task>_<date>.jsonl)
SAMPLES_FORMAT = "lm-eval-samples"


def _loglik(value, path: str, line: int, field: str, i: int) -> float:
    """A choice's log-likelihood from lm-eval's ``[loglik, is_greedy]`` (``filtered_resps``) or
    ``[[loglik, is_greedy]]`` (``resps``); its samples files write them as strings (``"-7.21"``, ``"False"``:
    its ``sanitize_list``), read back exactly (Python writes a float's shortest round-tripping digits)."""
    x = value
    while isinstance(x, (list, tuple)) and x:
        x = x[0]
    try:
        ll = float(x) if isinstance(x, (int, float, str)) and not isinstance(x, bool) else math.nan
    except ValueError:
        ll = math.nan
    if not math.isfinite(ll) or ll > 1e-6:
        raise DataError(f"predictions {path}: line {line}: field '{field}[{i}]': {str(value)[:60]!r} is not a "
                        "log-likelihood (a number <= 0)")
    return ll


def read_lm_eval_samples(path: str, ttype: TaskType) -> pd.DataFrame:
    """lm-eval's ``--log_samples`` JSONL -> DataFrame(case_id, input_idx, probs) (see the module docstring), the
    number of choices that of the task's classes (:func:`beluga.causal_lm.class_sets`: SENT two or three)."""
    sets = {len(s): s for s in class_sets(ttype)}
    text = predictions_text(path, SAMPLES_FORMAT)
    records = []
    for line_no, line in enumerate(text_lines(text), 1):
        if not line.strip():
            continue
        try:
            rec = json_loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"predictions {path}: line {line_no}: field 'json': not valid JSON ({e})") from None
        if not isinstance(rec, dict):
            raise DataError(f"predictions {path}: line {line_no}: field 'json': not an lm-eval sample record")
        doc = rec.get("doc")
        if not isinstance(doc, dict) or "case_id" not in doc or "input_idx" not in doc:
            raise DataError(f"predictions {path}: line {line_no}: field 'doc': no document with case_id and "
                            "input_idx (the samples of a task `suite export --format lm-eval` wrote?)")
        field = "filtered_resps" if "filtered_resps" in rec else "resps"
        resps = rec.get(field)
        if not isinstance(resps, list) or not resps:
            raise DataError(f"predictions {path}: line {line_no}: field '{field}': no per-choice log-likelihoods")
        if len(resps) not in sets:
            shown = " or ".join(f"{n} ({', '.join(c)})" for n, c in sets.items())
            raise DataError(f"predictions {path}: line {line_no}: field '{field}': {len(resps)} choices, task "
                            f"{ttype.name!r} has {shown} classes; export the task with a word for each class")
        lls = [_loglik(v, path, line_no, field, i) for i, v in enumerate(resps)]
        records.append((line_no, {"case_id": doc["case_id"], "input_idx": doc["input_idx"], "ll": lls}))
    if not records:
        raise DataError(f"predictions {path}: field 'doc': no sample records")
    widths = {len(d["ll"]) for _, d in records}
    if len(widths) > 1:
        raise DataError(f"predictions {path}: field '{field}': records have {sorted(widths)} choices; one task's "
                        "samples have one number")
    rows = list(unique_case_records(records, path))
    probs = softmax_rows(np.array([d["ll"] for _, _, d in rows], dtype=np.float64))
    return pd.DataFrame({"case_id": [key[0] for key, _, _ in rows], "input_idx": [key[1] for key, _, _ in rows],
                         "probs": [p.tolist() for p in probs]})
