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

from beluga.analyses.prediction_files import predictions_text, text_lines, unique_case_records
from beluga.core.bounds import json_loads
from beluga.core.errors import DataError
from beluga.core.tasks import TaskType
from beluga.model.causal_lm import class_sets, softmax_rows

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
    number of choices that of the task's classes (:func:`beluga.model.causal_lm.class_sets`: SENT two or three)."""
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
        records.append((line_no, {"case_id": doc["case_id"], "input_idx": doc["input_idx"], "ll": lls,
                                  "text": doc.get("text"), "text_b": doc.get("text_b"), "line": line_no}))
    if not records:
        raise DataError(f"predictions {path}: field 'doc': no sample records")
    widths = {len(d["ll"]) for _, d in records}
    if len(widths) > 1:
        raise DataError(f"predictions {path}: field '{field}': records have {sorted(widths)} choices; one task's "
                        "samples have one number")
    rows = list(unique_case_records(records, path))
    probs = softmax_rows(np.array([d["ll"] for _, _, d in rows], dtype=np.float64))
    return pd.DataFrame({"case_id": [key[0] for key, _, _ in rows], "input_idx": [key[1] for key, _, _ in rows],
                         "probs": [p.tolist() for p in probs],
                         "doc_text": [d["text"] for _, _, d in rows], "doc_text_b": [d["text_b"] for _, _, d in rows],
                         "doc_line": [d["line"] for _, _, d in rows]})


def check_sample_texts(samples: pd.DataFrame, suite: pd.DataFrame, path: str, suite_path: str) -> pd.DataFrame:
    """The samples (:func:`read_lm_eval_samples`) without their documents' texts, once each document's
    ``text`` (and ``text_b``) is the suite's input of its ``case_id`` / ``input_idx``: case ids are positional
    (``mft-0``, ``sent-03-00012``), so samples of another suite, or of the same suite rebuilt with another seed,
    would otherwise be scored against inputs they never saw. A document without ``text`` is refused too (the
    export writes it)."""
    inputs = {}
    for r in suite.itertuples(index=False):
        has_b = r.inputs_b is not None and not isinstance(r.inputs_b, float)
        for j, text in enumerate(r.inputs):
            inputs[(str(r.case_id), j)] = (str(text), str(r.inputs_b[j]) if has_b else None)
    for r in samples.itertuples(index=False):
        want = inputs.get((str(r.case_id), int(r.input_idx)))
        if want is None:
            continue   # a case id or input the suite lacks: score's own checks name it
        for field, got, expected in (("text", r.doc_text, want[0]), ("text_b", r.doc_text_b, want[1])):
            if expected is not None and got != expected:
                raise DataError(f"predictions {path}: line {r.doc_line}: field 'doc.{field}': {str(got)[:60]!r} is "
                                f"not input {r.input_idx} of case {r.case_id!r} in the suite {suite_path} "
                                f"({expected[:60]!r}): samples of another suite (or of one rebuilt since the export)?")
    return samples.drop(columns=["doc_text", "doc_text_b", "doc_line"])
