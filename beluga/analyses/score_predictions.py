"""Predicted scores of a regression model (SIMILARITY) for a suite, read for ``python -m beluga
score``: the score analogue of :mod:`beluga.analyses.predictions`, in the same layouts.

Formats (``score --format``; default from the file's extension):

- ``parquet`` (``.parquet``), or a keyed table ``csv`` / ``tsv`` / ``jsonl``
  with ``case_id``, ``input_idx`` and ``score`` (a finite number; text that
  is one is read as one);
- ``score`` (``.txt`` and others: give ``--format score``): one number per
  line, one line per exported input, in the export's order (``suite export``),
  as CheckList's line formats are for a classifier's probabilities.

A regression suite is scored from scores, so a file of class probabilities or
labels (a ``probs`` / ``pred`` column, or one of CheckList's line formats) is
refused in one line saying so, as the classifier's reader refuses a file of
scores. Text files are read as that reader reads them (UTF-8, a byte-order
mark dropped, lines split on ``\n`` and ``\r\n`` only); every malformed
value is refused with one line naming the file, the line (from 1) or row, and
the field.
"""

from __future__ import annotations

import math
from pathlib import Path

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
)
from beluga.core.errors import DataError


def probabilities_for_a_regression(task: str) -> str:
    """What a refusal adds when a file holds class predictions where scores are needed."""
    return (f"; the file holds class predictions (probabilities or labels), but this suite's task {task!r} is a "
            "regression scored from predicted scores (a score column, or --format score: one number per line)")


def score_value(value, path: str, where: str) -> float:
    """A predicted score: a finite number, or text that is one (``where``: the file's line or row)."""
    x = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
    elif isinstance(value, str):
        try:
            x = float(value.strip())
        except ValueError:
            x = None
    if x is None:
        raise DataError(f"predictions {path}: {where}: field 'score': {clip(value)} is not a number (one predicted "
                        "score per input)")
    if not math.isfinite(x):
        raise DataError(f"predictions {path}: {where}: field 'score': {clip(value)} is not finite (the model "
                        "diverged or the file is damaged)")
    return x


def _read_score_lines(path: str, text: str, order: pd.DataFrame | None) -> pd.DataFrame:
    keyed = looks_keyed(text)
    if keyed:
        raise DataError(f"predictions {path}: field '--format': the file looks like a keyed {keyed.upper()} table "
                        f"(case_id, input_idx), not {SCORE_LINE_FORMAT} lines: give --format {keyed}")
    lines = text_lines(text)
    while lines and not lines[-1].strip():
        lines.pop()                     # blank lines at the end
    if order is None or len(lines) != len(order):
        raise DataError(f"predictions {path}: field 'path': {len(lines)} line(s) for the "
                        f"{0 if order is None else len(order)} inputs of the export (one score per line, in the "
                        "export's order)")
    scores = []
    for i, t in enumerate(lines, 1):
        parts = t.split()
        if len(parts) != 1:
            raise DataError(f"{at_line(path, i)}: field 'score': {clip(t.strip())} is not one number (one predicted "
                            f"score per line{'' if len(parts) < 2 else '; several numbers are class probabilities'})")
        scores.append(score_value(parts[0], path, f"line {i}"))
    return pd.DataFrame({"case_id": order["case_id"].to_numpy(), "input_idx": order["input_idx"].to_numpy(),
                         "score": scores})


def _read_score_keyed(path: str, text: str, fmt: str, task: str) -> pd.DataFrame:
    cols, records = keyed_records(path, text, fmt)
    missing = [c for c in ("case_id", "input_idx", "score") if c not in cols]
    if missing:
        hint = probabilities_for_a_regression(task) if missing == ["score"] and ({"probs", "pred"} & set(cols)) \
            else ""
        if not hint:
            shape = looks_keyed(text)
            hint = f"; the file looks like {shape.upper()}: give --format {shape}" if shape and shape != fmt else ""
        raise DataError(f"predictions {path}: field '{missing[0]}': column missing (columns: {cols}){hint}")
    cids, idxs, scores = [], [], []
    for key, ln, d in unique_case_records(records, path):
        cids.append(key[0])
        idxs.append(key[1])
        scores.append(score_value(d.get("score"), path, f"line {ln}"))
    return pd.DataFrame({"case_id": cids, "input_idx": idxs, "score": scores})


def _read_score_parquet(path: str, task: str) -> pd.DataFrame:
    try:
        names = pq.read_schema(path).names
        missing = [c for c in ("case_id", "input_idx", "score") if c not in names]
        if missing:
            hint = probabilities_for_a_regression(task) if missing == ["score"] and {"probs", "pred"} & set(names) \
                else ""
            raise DataError(f"predictions {path}: field '{missing[0]}': missing column (need case_id, input_idx "
                            f"and score; found {', '.join(names)}){hint}")
        preds = parquet_predictions(path, ["case_id", "input_idx", "score"])
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"predictions {path}: field 'path': not a readable Parquet file ({e})") from None
    preds["score"] = [score_value(v, path, f"row {i}") for i, v in enumerate(preds["score"].tolist())]
    return preds


def read_score_predictions(path: str, fmt: str, order: pd.DataFrame | None, task: str) -> pd.DataFrame:
    """A regression model's predictions file -> DataFrame(case_id (strings), input_idx (integers), score
    (floats)). ``order``: the export rows (case_id, input_idx) that ``--format score`` lines follow (the other
    formats are keyed); ``task``: the suite's task type, for the messages."""
    if not Path(path).exists():
        raise DataError(f"predictions {path}: field 'path': file does not exist")
    if fmt in LINE_FORMATS:
        raise DataError(f"predictions {path}: field '--format': {fmt} is one of CheckList's class-prediction line "
                        f"formats, but this suite's task {task!r} is a regression scored from predicted scores: give "
                        f"--format {SCORE_LINE_FORMAT} (one number per line) or a keyed table with a score column "
                        f"({', '.join(KEYED_FORMATS)})")
    if fmt == "parquet":
        preds = _read_score_parquet(path, task)
    else:
        text = predictions_text(path, fmt)
        preds = (_read_score_lines(path, text, order) if fmt == SCORE_LINE_FORMAT
                 else _read_score_keyed(path, text, fmt, task))
    return typed_keys(preds, path)
