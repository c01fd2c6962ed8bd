"""Predictions of any model for a suite (docs/TESTING_MODELS.md): exporting a
suite's inputs for models outside Python, and reading their predictions in
CheckList's formats (``python -m beluga score``).

Export order (``suite export``): the suite's cases in file order, each case's
inputs in order — one row per (case_id, input_idx). A predictions file in one
of CheckList's line formats has one line per exported row, in that order.

Prediction formats (``score --format``; default from the file's extension):

- ``parquet`` (``.parquet``), or a keyed table ``csv`` / ``tsv`` / ``jsonl``
  with ``case_id``, ``input_idx`` and ``probs`` (a list, or space-separated
  numbers), ``pred`` (a label index) or, for READ, ``answer``;
- CheckList's line formats (``.txt`` and others: give ``--format``):
  ``pred_only`` (a label index, or for READ the answer string),
  ``binary_conf`` (P(class 1)), ``softmax`` (the probabilities,
  space-separated), ``pred_and_conf`` (label and its probability),
  ``pred_and_softmax`` (label, then the probabilities).

A regression suite (SIMILARITY) is scored from predicted scores instead: a
keyed table with a ``score`` column, or ``--format score`` (one number per
line), read by :mod:`beluga.analyses.score_predictions`; a file of scores
for a classifier's suite, or of probabilities for a regression suite, is
refused in one line saying which it is.

A label index alone becomes a one-hot distribution and ``pred_and_conf`` puts
the rest of the probability mass evenly on the other classes: CheckList's own
expectations compare predicted classes (and, for INV, the predicted class's
confidence), which these reproduce.

The predicted class is taken from the probabilities. CheckList's
``read_pred_file`` keeps a stated label (``pred_and_conf``,
``pred_and_softmax``) apart from the confidences and its expectations compare
the label; so a line whose label is not the class of the highest probability
(a tie included, unless the label is the first of the tied classes) would be
scored otherwise than CheckList scores it, and is refused, as is a keyed row
whose ``pred`` contradicts its ``probs``. Text files are UTF-8 (a byte-order
mark is dropped), split into lines on ``\n`` and ``\r\n`` only: other Unicode
line separators (U+0085, U+2028, ...) belong to the line, as in a READ answer.
Every malformed value is refused with one line naming the file, the line (from
1) and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from beluga.analyses.prediction_files import (
    KEYED_FORMATS,
    LINE_FORMATS,
    SCORE_LINE_FORMAT,
    at_line,
    clip,
    keyed_records,
    looks_keyed,
    parquet_predictions,
    predictions_text,
    text_lines,
    typed_keys,
    unique_case_records,
    utf8_text,
)
from beluga.analyses.score_predictions import read_score_predictions
from beluga.core.bounds import json_loads
from beluga.core.errors import DataError
from beluga.core.health import SUM_TOLERANCE, bad_probability_rows

#: the formats whose lines follow the export's order (no case_id / input_idx)
ORDERED_FORMATS = LINE_FORMATS + (SCORE_LINE_FORMAT,)
FORMATS = KEYED_FORMATS + ORDERED_FORMATS


#: what a classifier's reader adds when a file it cannot read holds a ``score`` column
SCORES_FOR_A_CLASSIFIER = ("; the file holds scores (a regression model's), but this suite's task is a classifier "
                           "scored from class probabilities (probs) or labels (pred)")


def export_rows(suite: pd.DataFrame, head) -> pd.DataFrame:
    """Every input of the suite, one row per (case_id, input_idx), in export order:
    ``text`` (and ``text_b`` for pairs), or ``context`` and ``question`` for QA."""
    cid, idx, a, b = [], [], [], []
    has_b = suite["inputs_b"].notna().any() if "inputs_b" in suite.columns else False
    for r in suite.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            cid.append(str(r.case_id))
            idx.append(j)
            a.append(str(t))
            b.append(str(r.inputs_b[j]) if has_b and r.inputs_b is not None else None)
    out = pd.DataFrame({"case_id": cid, "input_idx": idx})
    columns = head.example_columns
    if columns:   # the head's own names (READ: context, question)
        out[columns[0]], out[columns[1]] = a, b
    else:
        out["text"] = a
        if has_b:
            out["text_b"] = b
    return out


def write_export(rows: pd.DataFrame, path: str) -> str:
    """TSV by default, JSONL for ``.jsonl``; written atomically. Returns the format."""
    from beluga.core.io import atomic_path

    p = Path(path)
    if p.is_dir():
        raise DataError(f"export {path}: field '--out': is a folder; name the file to write (.tsv or .jsonl)")
    fmt = "jsonl" if p.name.endswith(".jsonl") else "tsv"
    if fmt == "tsv":
        bad = rows.drop(columns=["case_id", "input_idx"]).apply(
            lambda c: c.astype(str).str.contains("[\t\n\r]", regex=True)).to_numpy().any()
        if bad:
            raise DataError(f"export {path}: field 'text': an input contains a tab or a line break; write JSONL "
                            "(.jsonl) instead")
    with atomic_path(p) as tmp:
        if fmt == "jsonl":
            rows.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            rows.to_csv(tmp, sep="\t", index=False)
    return fmt


def infer_format(path: str, given: str | None) -> str:
    if given is not None:
        if given not in FORMATS:
            raise DataError(f"predictions {path}: field '--format': {given!r} is not one of {', '.join(FORMATS)}")
        return given
    name = Path(path).name.lower()
    for ext, fmt in ((".parquet", "parquet"), (".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl")):
        if name.endswith(ext):
            return fmt
    raise DataError(f"predictions {path}: field '--format': cannot tell the format from the extension; give "
                    f"--format ({', '.join(FORMATS)})")


# ---------------------------------------------------------------- reading a predictions file
#
# Every malformed value ends in one DataError naming the file, the line (text
# files are counted in lines from 1, split on "\n" and "\r\n" only) and the
# field; values are checked here, where the line is known, before the scorer
# sees them.

#: the field a line of each CheckList line format holds (for the messages)
LINE_FIELDS = {"pred_only": "pred", "binary_conf": "conf", "softmax": "softmax", "pred_and_conf": "pred",
               "pred_and_softmax": "pred"}


def _label(value, path: str, line: int, field: str, k: int | None) -> int:
    """A label index: an integer, or text / a JSON number that is one; in 0..k-1 when ``k`` is given."""
    x = None
    if isinstance(value, int) and not isinstance(value, bool):
        x = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        x = int(value)
    elif isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            f = math.nan
        if math.isfinite(f) and f.is_integer():
            x = int(f)
    if x is None:
        raise DataError(f"{at_line(path, line)}: field '{field}': {clip(value)} is not a label index "
                        f"(an integer{f' in 0..{k - 1}' if k else ''})")
    if k is not None and not 0 <= x < k:
        raise DataError(f"{at_line(path, line)}: field '{field}': label {x} is outside 0..{k - 1}")
    return x


def _numbers(text: str, path: str, line: int, what: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split()]
    except ValueError:
        raise DataError(f"{at_line(path, line)}: field '{what}': {clip(text)} is not a list of numbers") from None
    if not vals:
        raise DataError(f"{at_line(path, line)}: field '{what}': empty (no numbers)")
    return vals


def _probs_value(value, path: str, line: int, field: str) -> list[float]:
    """A keyed table's ``probs``: a JSON list of numbers, or text holding one (``[...]``) or space-separated
    numbers."""
    if isinstance(value, str):
        s = value.strip()
        if not s.startswith("["):
            return _numbers(s, path, line, field)
        try:
            value = json_loads(s)
        except json.JSONDecodeError as e:
            raise DataError(f"{at_line(path, line)}: field '{field}': {clip(s)} is not a JSON list of numbers "
                            f"({e.msg} at character {e.pos + 1})") from None
    if (isinstance(value, list) and value
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value)):
        return [float(x) for x in value]
    raise DataError(f"{at_line(path, line)}: field '{field}': {clip(value)} is not a list of numbers")


def _check_distributions(probs: list[list[float]], lines: list[int], labels: list[int | None] | None,
                         path: str, field: str, label_field: str = "pred") -> None:
    """Every row a probability distribution of one length and, where the line states a label too, that label
    the class of the highest probability (the scorer takes the predicted class from the probabilities;
    CheckList's expectations take the stated label: a line where the two differ would be scored otherwise
    than CheckList scores it, so it is refused)."""
    if not probs:
        return
    n0 = len(probs[0])
    for p, ln in zip(probs, lines):
        if len(p) != n0:
            raise DataError(f"{at_line(path, ln)}: field '{field}': {len(p)} probabilities, but line {lines[0]} "
                            f"has {n0} (every line needs one per class)")
    arr = np.asarray(probs, dtype=np.float64)
    bad = bad_probability_rows(arr)
    if len(bad):
        i = int(bad[0])
        raise DataError(f"{at_line(path, lines[i])}: field '{field}': {probs[i]} is not a probability distribution "
                        f"(values must be finite, in [0, 1] and sum to 1 within {SUM_TOLERANCE}); {len(bad)} such "
                        "line(s)")
    if labels is None:
        return
    top = arr.argmax(axis=1)
    for i, (lab, ln) in enumerate(zip(labels, lines)):
        if lab is None or lab == top[i]:
            continue
        if not 0 <= lab < n0:
            raise DataError(f"{at_line(path, ln)}: field '{label_field}': label {lab} is outside 0..{n0 - 1} "
                            f"(the line has {n0} probabilities)")
        j = int(top[i])
        how = (f"ties with class {j} at {arr[i, j]:g}, and the scorer takes the first class of highest probability"
               if arr[i, lab] == arr[i, j] else
               f"has probability {arr[i, lab]:g} but class {j} has {arr[i, j]:g}")
        raise DataError(f"{at_line(path, ln)}: field '{label_field}': label {lab} contradicts the probabilities "
                        f"{probs[i]}: it {how} (the scorer takes the predicted class from the probabilities, CheckList "
                        "from the stated label): correct the label or the probabilities")


def _probability(x: float, text: str, path: str, line: int) -> float:
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise DataError(f"{at_line(path, line)}: field 'conf': {clip(text)} is not a probability (finite, in [0, 1])")
    return x


def parse_line(text: str, fmt: str, k: int, path: str, line: int, qa: bool):
    """One line of a CheckList prediction file -> (label or None, probabilities), or the answer for QA.
    The probabilities are checked, and the label against them, by :func:`_check_distributions`."""
    if qa:
        if fmt != "pred_only":
            raise DataError(f"predictions {path}: field '--format': READ predictions are answers (pred_only)")
        return utf8_text(text, path, line, "answer")
    text = utf8_text(text, path, line, LINE_FIELDS[fmt]).strip()
    if fmt == "pred_only":
        if len(text.split()) != 1:
            raise DataError(f"{at_line(path, line)}: field 'pred': {clip(text)} is not one label index")
        lab = _label(text, path, line, "pred", k)
        return None, [1.0 if i == lab else 0.0 for i in range(k)]
    if fmt == "binary_conf":
        vals = _numbers(text, path, line, "conf")
        if len(vals) != 1 or k != 2:
            raise DataError(f"{at_line(path, line)}: field 'conf': binary_conf is one probability of class 1 for a "
                            "two-class model")
        _probability(vals[0], text, path, line)
        return None, [1.0 - vals[0], vals[0]]
    if fmt == "softmax":
        return None, _numbers(text, path, line, "softmax")
    parts = text.split()
    if not parts:
        raise DataError(f"{at_line(path, line)}: field 'pred': empty line (expected a label, then "
                        f"{'its probability' if fmt == 'pred_and_conf' else 'the probabilities'})")
    lab = _label(parts[0], path, line, "pred", k if fmt == "pred_and_conf" else None)
    if fmt == "pred_and_softmax":
        if len(parts) < 2:
            raise DataError(f"{at_line(path, line)}: field 'softmax': missing (pred_and_softmax is a label, then the "
                            "probabilities)")
        return lab, _numbers(" ".join(parts[1:]), path, line, "softmax")
    if len(parts) != 2:
        raise DataError(f"{at_line(path, line)}: field 'conf': pred_and_conf is a label and its probability "
                        f"({len(parts)} values here)")
    conf = _probability(_numbers(parts[1], path, line, "conf")[0], parts[1], path, line)
    rest = (1.0 - conf) / (k - 1) if k > 1 else 0.0
    return lab, [conf if i == lab else rest for i in range(k)]


def _read_lines(path: str, text: str, fmt: str, order: pd.DataFrame | None, k: int, qa: bool) -> pd.DataFrame:
    if qa and fmt != "pred_only":
        raise DataError(f"predictions {path}: field '--format': READ predictions are answers (pred_only)")
    keyed = looks_keyed(text)
    if keyed:
        raise DataError(f"predictions {path}: field '--format': the file looks like a keyed {keyed.upper()} table "
                        f"(case_id, input_idx), not {fmt} lines: give --format {keyed}")
    lines = text_lines(text)
    if not qa:
        while lines and not lines[-1].strip():
            lines.pop()                 # blank lines at the end (an answer may be empty, a label may not)
    if order is None or len(lines) != len(order):
        raise DataError(f"predictions {path}: field 'path': {len(lines)} line(s) for the "
                        f"{0 if order is None else len(order)} inputs of the export (one line per input, "
                        "in the export's order)")
    col = "answer" if qa else "probs"
    if qa:
        values = [parse_line(t, fmt, k, path, i + 1, qa) for i, t in enumerate(lines)]
    else:
        parsed = [parse_line(t, fmt, k, path, i + 1, qa) for i, t in enumerate(lines)]
        values = [p for _, p in parsed]
        field = {"binary_conf": "conf", "softmax": "softmax", "pred_and_softmax": "softmax"}.get(fmt, "pred")
        _check_distributions(values, list(range(1, len(values) + 1)), [lab for lab, _ in parsed], path, field)
    return pd.DataFrame({"case_id": order["case_id"].to_numpy(), "input_idx": order["input_idx"].to_numpy(),
                         col: values})


def _read_keyed(path: str, text: str, fmt: str, k: int, qa: bool) -> pd.DataFrame:
    cols, records = keyed_records(path, text, fmt)
    missing = [c for c in ("case_id", "input_idx") if c not in cols]
    if not missing:
        if qa and "answer" not in cols:
            missing = ["answer"]
        elif not qa and "probs" not in cols and "pred" not in cols:
            raise DataError(f"predictions {path}: field 'probs': need a probs or pred column (columns: {cols})"
                            + (SCORES_FOR_A_CLASSIFIER if "score" in cols else ""))
    if missing:
        hint = looks_keyed(text)
        hint = f"; the file looks like {hint.upper()}: give --format {hint}" if hint and hint != fmt else ""
        if "doc" in cols and ("resps" in cols or "filtered_resps" in cols):
            hint = "; the file looks like lm-evaluation-harness's --log_samples output: give --format lm-eval-samples"
        raise DataError(f"predictions {path}: field '{missing[0]}': column missing (columns: {cols}){hint}")
    cids, idxs, lines, values, labels = [], [], [], [], []
    for key, ln, d in unique_case_records(records, path):
        cids.append(key[0])
        idxs.append(key[1])
        lines.append(ln)
        if qa:
            a = d.get("answer")
            if a is not None and not isinstance(a, str):
                raise DataError(f"{at_line(path, ln)}: field 'answer': {clip(a)} is not a string (an answer, or null "
                                "for none)")
            values.append("" if a is None else a)
            continue
        lab = None
        if "pred" in cols and not (d.get("pred") in (None, "") and "probs" in cols):
            lab = _label(d.get("pred"), path, ln, "pred", None if "probs" in cols else k)
        if "probs" in cols:
            values.append(_probs_value(d.get("probs"), path, ln, "probs"))
            labels.append(lab)
        else:
            values.append([1.0 if i == lab else 0.0 for i in range(k)])
            labels.append(None)
    if qa:
        return pd.DataFrame({"case_id": cids, "input_idx": idxs, "answer": values})
    _check_distributions(values, lines, labels, path, "probs")
    return pd.DataFrame({"case_id": cids, "input_idx": idxs, "probs": values})


def _read_parquet(path: str, column: str) -> pd.DataFrame:
    """A Parquet file's case_id, input_idx and ``column`` (probs, or answer for QA)."""
    try:
        schema = pq.read_schema(path)
        names = set(schema.names)
        missing = [c for c in ("case_id", "input_idx", column) if c not in names]
        if missing:
            hint = SCORES_FOR_A_CLASSIFIER if column == "probs" and "score" in names else ""
            raise DataError(f"predictions {path}: field '{missing[0]}': missing column "
                            f"(need case_id, input_idx and {column}; found {', '.join(schema.names)}){hint}")
        return parquet_predictions(path, ["case_id", "input_idx", column])
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"predictions {path}: field 'path': not a readable Parquet file ({e})") from None


def read_predictions(path: str, fmt: str, order: pd.DataFrame | None, k: int, column: str,
                     task: str) -> pd.DataFrame:
    """A predictions file -> DataFrame(case_id (strings), input_idx (integers), ``column``: the task head's
    value column, ``probs``, ``answer`` or ``score`` (:mod:`beluga.analyses.score_predictions`)).
    ``order``: the export rows (case_id, input_idx) that line formats follow (the other formats are keyed);
    ``k``: the model's classes (a label index becomes a one-hot distribution of length k); ``task``: the
    suite's task type, for the messages."""
    if column == "score":
        return read_score_predictions(path, fmt, order, task)
    qa = column == "answer"
    if not Path(path).exists():
        raise DataError(f"predictions {path}: field 'path': file does not exist")
    if fmt == SCORE_LINE_FORMAT:
        raise DataError(f"predictions {path}: field '--format': {SCORE_LINE_FORMAT} lines are a regression model's "
                        f"predicted scores; this suite's task is {'READ (answers)' if qa else 'a classifier'}: give "
                        f"its {'answers' if qa else 'probabilities or labels'} "
                        f"({', '.join(KEYED_FORMATS + LINE_FORMATS)})")
    if fmt == "parquet":
        preds = _read_parquet(path, "answer" if qa else "probs")
    else:
        text = predictions_text(path, fmt)
        preds = (_read_lines(path, text, fmt, order, k, qa) if fmt in LINE_FORMATS
                 else _read_keyed(path, text, fmt, k, qa))
    return typed_keys(preds, path)


