"""What every predictions-file reader shares (:mod:`beluga.analyses.predictions` for class probabilities and
answers, :mod:`beluga.analyses.score_predictions` for a regression's scores): the formats, a file's text
(UTF-8, lines split on ``\n`` and ``\r\n`` only), the records of a keyed table and their (case_id, input_idx)
keys. Every malformed value ends in one DataError naming the file, the line and the field."""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import re
from pathlib import Path

import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import DataError
from beluga.core.text import NOT_TEXT, SURROGATE_ESCAPE, arrow_not_utf8, clip, not_text, one_line

KEYED_FORMATS = ("parquet", "csv", "tsv", "jsonl")


LINE_FORMATS = ("pred_only", "binary_conf", "softmax", "pred_and_conf", "pred_and_softmax")


#: a regression model's line format (the score readers below): one score per line, in export order
SCORE_LINE_FORMAT = "score"


_NOT_UTF8 = re.compile("[\udc80-\udcff]")     # bytes that are not UTF-8, as decoded with surrogateescape


def at_line(path: str, line: int) -> str:
    return f"predictions {path}: line {line}"


def utf8_text(text: str, path: str, line: int, field: str) -> str:
    """``text`` (decoded with surrogateescape) if it was UTF-8; otherwise the one-line error."""
    m = _NOT_UTF8.search(text)
    if m:
        byte = ord(m.group()) - 0xdc00
        raise DataError(f"{at_line(path, line)}: field '{one_line(field)}': not UTF-8 text (byte 0x{byte:02x} "
                        f"at character {m.start() + 1}); save the file as UTF-8")
    return text


def predictions_text(path: str, fmt: str) -> str:
    """The file's text (a UTF-8 byte-order mark dropped; bytes that are not UTF-8 kept as surrogates for
    :func:`utf8_text` to name their line and field); files that are not text at all are refused here."""
    data = Path(path).read_bytes()
    what = None
    if data.startswith(b"PAR1"):
        what = "a Parquet file: give --format parquet (or a .parquet name and no --format)"
    elif data.startswith(b"\x1f\x8b"):
        what = "gzip-compressed: decompress it first"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        what = "UTF-16 text: save it as UTF-8"
    if what:
        raise DataError(f"predictions {path}: field '--format': {fmt} predictions are UTF-8 text; the file is {what}")
    text = data.decode("utf-8", "surrogateescape")
    return text[1:] if text.startswith("\ufeff") else text


def text_lines(text: str) -> list[str]:
    """Lines split on "\\n" (a "\\r" before it dropped) and nothing else: other Unicode line separators
    (U+0085, U+2028, \\x0b, \\x0c, \\x1c-\\x1e) are part of the line, as in an answer string."""
    lines = [t[:-1] if t.endswith("\r") else t for t in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()                     # the final newline
    return lines


def looks_keyed(text: str) -> str | None:
    """``jsonl``, ``csv`` or ``tsv`` when the first non-blank line is a keyed table's record or header."""
    first = text.lstrip().split("\n", 1)[0].strip()
    if first.startswith("{"):
        try:
            if "case_id" in json_loads(first):
                return "jsonl"
        except (json.JSONDecodeError, TypeError):
            return None
        return None
    for sep, name in (("\t", "tsv"), (",", "csv")):
        cells = [c.strip().strip('"') for c in first.split(sep)]
        if "case_id" in cells and "input_idx" in cells:
            return name
    return None


def keyed_records(path: str, text: str, fmt: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """(columns, [(line, record)]) of a CSV / TSV with a header line, or of JSONL (one object per line)."""
    records: list[tuple[int, dict]] = []
    if fmt == "jsonl":
        cols: dict = {}
        for i, t in enumerate(text_lines(text), 1):
            if not t.strip():
                continue
            try:
                d = json_loads(t)
            except json.JSONDecodeError as e:
                utf8_text(t, path, i, "json")
                hint = looks_keyed(text)
                hint = f"; the file looks like {hint.upper()}: give --format {hint}" if hint and hint != fmt else ""
                raise DataError(f"{at_line(path, i)}: field 'json': not valid JSON ({e.msg} at character "
                                f"{e.colno}){hint}") from None
            if not isinstance(d, dict):
                raise DataError(f"{at_line(path, i)}: field 'json': {clip(t)} is not a JSON object (one prediction "
                                "per line, with case_id, input_idx and probs, pred or answer)")
            raw_bytes = _NOT_UTF8.search(t) is not None   # bytes that are not UTF-8, in the file itself
            if raw_bytes:
                for key, v in d.items():
                    utf8_text(key, path, i, "json")
                    if isinstance(v, str):
                        utf8_text(v, path, i, key)
            bad = not_text(d) if raw_bytes or SURROGATE_ESCAPE.search(t) else None   # JSON's \ud800 escapes
            if bad:
                what = "not UTF-8 text; save the file as UTF-8" if raw_bytes else NOT_TEXT
                raise DataError(f"{at_line(path, i)}: field '{one_line(bad)}': {what}")
            records.append((i, d))
            cols.update(dict.fromkeys(d))
        if not records:
            raise DataError(f"predictions {path}: field 'path': the file has no predictions (no JSON line)")
        return list(cols), records
    sep = "\t" if fmt == "tsv" else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    header: list[str] | None = None
    end = 0
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if not row:
                continue
            if header is None:
                header = [utf8_text(c, path, start, "header").strip() for c in row]
                continue
            if len(row) != len(header):
                name = header[len(row)] if len(row) < len(header) else f"(column {len(header) + 1})"
                raise DataError(f"{at_line(path, start)}: field '{one_line(name)}': {len(row)} field(s) where the "
                                f"header has {len(header)} ({sep!r}-separated)")
            records.append((start, {c: utf8_text(v, path, start, c) for c, v in zip(header, row)}))
    except csv.Error as e:
        raise DataError(f"{at_line(path, end + 1)}: field 'path': not a readable {fmt.upper()} file ({e})") from None
    if header is None:
        raise DataError(f"predictions {path}: field 'path': the file is empty (a {fmt.upper()} file needs a header "
                        "line: case_id, input_idx and probs, pred or answer)")
    if not records:
        raise DataError(f"predictions {path}: field 'case_id': no prediction rows (only the header line)")
    return header, records


def parquet_predictions(path: str, columns: list[str]):
    """The ``columns`` of a Parquet predictions file as a DataFrame; a string that is not UTF-8 (a lone surrogate,
    damaged text) is one line naming the row and the column. Arrow's own errors are the caller's to word."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=columns)
    bad = arrow_not_utf8(table)
    if bad is not None:
        row, field, why = bad
        raise DataError(f"predictions {path}: row {row}: field '{field}': {why}")
    return table.to_pandas()


def case_key(d: dict, path: str, line: int) -> tuple[str, int]:
    cid = d.get("case_id")
    if isinstance(cid, bool) or not isinstance(cid, (str, int)) or str(cid).strip() == "":
        raise DataError(f"{at_line(path, line)}: field 'case_id': "
                        f"{'missing' if cid in (None, '') else f'{clip(cid)} is not a case id (a string)'}")
    idx = d.get("input_idx")
    if idx is None or (isinstance(idx, str) and not idx.strip()):
        raise DataError(f"{at_line(path, line)}: field 'input_idx': missing")
    x = None
    if isinstance(idx, int) and not isinstance(idx, bool):
        x = idx
    elif isinstance(idx, float) and idx.is_integer():
        x = int(idx)
    elif isinstance(idx, str):
        try:
            f = float(idx.strip())
        except ValueError:
            f = math.nan
        if math.isfinite(f) and f.is_integer():
            x = int(f)
    if x is None:
        raise DataError(f"{at_line(path, line)}: field 'input_idx': {clip(idx)} is not an integer")
    return str(cid), x


def unique_case_records(records, path: str):
    """(case key, line, record) per record (:func:`case_key`); a case input given twice stops with one line
    naming both lines."""
    seen: dict[tuple[str, int], int] = {}
    for ln, d in records:
        key = case_key(d, path, ln)
        if key in seen:
            raise DataError(f"{at_line(path, ln)}: field 'case_id'/'input_idx': case {key[0]!r}, input {key[1]} "
                            f"again (first on line {seen[key]})")
        seen[key] = ln
        yield key, ln, d


def typed_keys(preds: pd.DataFrame, path: str) -> pd.DataFrame:
    """case_id as strings, input_idx as integers (one line naming the row otherwise)."""
    preds = preds.copy()
    if preds["case_id"].isna().any():
        i = int(preds.index[preds["case_id"].isna()][0])
        raise DataError(f"predictions {path}: row {i}: field 'case_id': missing")
    preds["case_id"] = preds["case_id"].astype(str)
    idx = pd.to_numeric(preds["input_idx"], errors="coerce")
    bad = idx.isna() | (idx != idx.round())
    if bad.any():
        i = int(preds.index[bad][0])
        raise DataError(f"predictions {path}: row {i}: field 'input_idx': {preds['input_idx'].iloc[i]!r} is not "
                        f"an integer ({int(bad.sum())} such row(s))")
    preds["input_idx"] = idx.astype("int64")
    return preds
