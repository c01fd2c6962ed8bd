"""lm-evaluation-harness's per-sample output read back (``score --format lm-eval-samples --predictions
SAMPLES.jsonl``): the ``--log_samples`` JSONL of a task ``suite export --format lm-eval`` wrote
(beluga/suites/lm_eval.py) -> class probabilities for the project's scorer, so INV / DIR tolerances work
unchanged. One record per document: ``doc`` (with the exported ``case_id`` / ``input_idx``, ``classes`` and
``choices``), per choice ``[log-likelihood, is-greedy]`` in ``filtered_resps`` (else ``resps``: ``[[log-likelihood,
is-greedy]]``) and its ``(context, continuation)`` request in ``arguments`` (``{"gen_args_0": {"arg_0": context,
"arg_1": continuation}, ...}``; older lm-eval: ``[[context, continuation], ...]``), in the same order.

Each log-likelihood is the class whose word its continuation is -- the continuation less lm-eval's target
delimiter (``" "``), one of the document's ``choices``, the class at the same place in its ``classes`` --
never the class at its position: a task that lists its choices in another order is read right. The
probabilities are the softmax over the log-likelihoods in the task's class order. A document without
``classes`` / ``choices`` (a folder exported before they were recorded) is read with each class's own name as
its word, when the continuations are those. A continuation that is no class's word, a class twice or none, a
record without ``doc`` or its log-likelihoods, or another number of choices than the task's classes, is one
line naming the file, the line and the field."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from beluga.analyses.prediction_files import predictions_text, text_lines, unique_case_records
from beluga.core.bounds import json_loads
from beluga.core.errors import DataError
from beluga.core.tasks import TaskType
from beluga.core.text import NOT_TEXT, SURROGATE_ESCAPE, not_text
from beluga.model.causal_lm import TARGET_DELIMITER, class_sets, softmax_rows

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


def _continuations(rec: dict, n: int, path: str, line: int) -> list[str]:
    """The continuations of a record's ``n`` requests, in order (``arguments``: see the module docstring)."""
    where = f"predictions {path}: line {line}: field 'arguments'"
    args = rec.get("arguments")
    if isinstance(args, dict):   # lm-eval's EvaluationTracker: {"gen_args_<i>": {"arg_0": context, "arg_1": ...}}
        keys = [f"gen_args_{i}" for i in range(len(args))]
        if list(args) != keys:
            raise DataError(f"{where}: keys {list(args)[:4]} are not gen_args_0, gen_args_1, ... in order")
        pairs = [args[k].get("arg_1") if isinstance(args[k], dict) else None for k in keys]
    elif isinstance(args, list):
        pairs = [a[1] if isinstance(a, (list, tuple)) and len(a) == 2 else None for a in args]
    else:
        raise DataError(f"{where}: no (context, continuation) requests: the label word of each log-likelihood "
                        "is read from them")
    if len(pairs) != n:
        raise DataError(f"{where}: {len(pairs)} requests for {n} log-likelihoods")
    bad = next((i for i, c in enumerate(pairs) if not isinstance(c, str)), None)
    if bad is not None:
        raise DataError(f"{where}: request {bad} has no continuation string")
    return pairs


def _doc_words(doc: dict, sets: dict, n: int, path: str, line: int) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """(classes, their words, recorded) of a document: its ``classes`` / ``choices`` as the export writes them,
    else (a document without them) the task's ``n`` classes, each one's name its word."""
    if "classes" not in doc and "choices" not in doc:
        return sets[n], sets[n], False
    at = f"predictions {path}: line {line}: field"
    vals = {}
    for f in ("classes", "choices"):
        v = doc.get(f)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            what = "missing" if v is None else f"{repr(v)[:60]} is not a list of strings"
            raise DataError(f"{at} 'doc.{f}': {what} (the export writes the classes and their words together)")
        vals[f] = tuple(v)
    classes, words = vals["classes"], vals["choices"]
    if not any(set(s) == set(classes) and len(s) == len(classes) for s in sets.values()):
        shown = " or ".join(f"({', '.join(s)})" for s in sets.values())
        raise DataError(f"{at} 'doc.classes': {list(classes)} are not the task's classes {shown}")
    if len(words) != len(classes) or len(set(words)) != len(words):
        raise DataError(f"{at} 'doc.choices': {list(words)} is not one distinct word for each of the "
                        f"{len(classes)} classes {list(classes)}")
    return classes, words, True


def _by_class(lls: list[float], conts: list[str], doc: dict, sets: dict, path: str, line: int) -> list[float]:
    """The log-likelihoods in the task's class order, each placed by its continuation's word (see the module
    docstring)."""
    classes, words, recorded = _doc_words(doc, sets, len(lls), path, line)
    order = next(s for s in sets.values() if set(s) == set(classes))
    where = f"predictions {path}: line {line}: field 'arguments'"
    out: list[float | None] = [None] * len(order)
    for i, cont in enumerate(conts):
        word = cont[len(TARGET_DELIMITER):] if cont.startswith(TARGET_DELIMITER) else cont
        if word not in words:
            known = ", ".join(f"{c}={w!r}" for c, w in zip(classes, words))
            why = ("the document's words" if recorded else "the class names (the document records no classes / "
                   "choices: export the task again and run lm-eval on it)")
            raise DataError(f"{where}: continuation {i} {cont!r} is not {TARGET_DELIMITER!r} + one of {why}: {known}")
        k = order.index(classes[words.index(word)])
        if out[k] is not None:
            raise DataError(f"{where}: continuation {i} {cont!r} is again the word of class {order[k]!r}; each "
                            "class once")
        out[k] = lls[i]
    missing = [c for c, v in zip(order, out) if v is None]
    if missing:
        raise DataError(f"{where}: no continuation for class(es) {', '.join(repr(c) for c in missing)} "
                        f"(word(s) {', '.join(repr(words[classes.index(c)]) for c in missing)})")
    return out


def read_lm_eval_samples(path: str, ttype: TaskType) -> pd.DataFrame:
    """lm-eval's ``--log_samples`` JSONL -> DataFrame(case_id, input_idx, probs) (see the module docstring), the
    number of choices that of the task's classes (:func:`beluga.model.causal_lm.class_sets`: SENT two or three),
    the probabilities in the task's class order."""
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
        bad = not_text(rec) if SURROGATE_ESCAPE.search(line) else None
        if bad:
            raise DataError(f"predictions {path}: line {line_no}: field '{bad}': {NOT_TEXT}")
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
        lls = _by_class(lls, _continuations(rec, len(lls), path, line_no), doc, sets, path, line_no)
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
