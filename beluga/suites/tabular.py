"""A user's own suite as CSV or JSONL, in the project's format
(docs/SUITE_FORMAT.md): one row / line per test case with the columns of
``beluga.suites.format.COLUMNS``.

CSV: list columns (``inputs``, ``inputs_b``, ``labels``, ``answers``) hold JSON
arrays, ``expect_params`` and ``meta`` hold JSON text; an empty cell is null.
JSONL: one JSON object per line; list columns are arrays, ``expect_params`` an
object (or JSON text), ``meta`` any JSON value (a string is taken as JSON text).
Rows are counted from 0 (CSV: not counting the header). Columns the format
does not know are ignored.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import SuiteError
from beluga.suites.format import COLUMNS, validate_suite

LIST_COLUMNS = ("inputs", "inputs_b", "labels", "answers")
JSON_TEXT_COLUMNS = ("expect_params", "meta")


def _fail(path, row, case_id, field, msg) -> SuiteError:
    where = f"row {row}" + (f" (case_id={case_id!r})" if case_id not in (None, "") else "")
    return SuiteError(f"suite file {path}: {where}: field '{field}': {msg}")


def open_text(path: Path):
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _coerce_labels(v):
    # JSON numbers such as 1.0 become ints; anything else is left for validation
    out = []
    for x in v:
        if isinstance(x, float) and x.is_integer():
            x = int(x)
        out.append(x)
    return out


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as e:
        raise SuiteError(f"suite file {path}: field 'path': not a readable CSV file ({e})") from None
    cids = df["case_id"].tolist() if "case_id" in df.columns else [None] * len(df)
    for col in LIST_COLUMNS:
        if col not in df.columns:
            continue
        parsed = []
        for i, cell in enumerate(df[col].tolist()):
            if cell.strip() == "":
                parsed.append(None)
                continue
            try:
                v = json_loads(cell)
            except json.JSONDecodeError as e:
                raise _fail(path, i, cids[i], col, f"not a JSON array: {e} (cell {cell[:60]!r})") from None
            if not isinstance(v, list):
                raise _fail(path, i, cids[i], col, f"must be a JSON array, got {cell[:60]!r}")
            parsed.append(_coerce_labels(v) if col == "labels" else v)
        df[col] = pd.Series(parsed, index=df.index, dtype=object)
    for col in JSON_TEXT_COLUMNS:
        if col in df.columns:
            df[col] = pd.Series([None if c.strip() == "" else c for c in df[col].tolist()], index=df.index,
                                dtype=object)
    return df


def _read_jsonl(path: Path) -> pd.DataFrame:
    rows = []
    try:
        with open_text(path) as f:
            for ln, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    d = json_loads(line)
                except json.JSONDecodeError as e:
                    raise SuiteError(f"suite file {path}: line {ln}: not valid JSON ({e})") from None
                if not isinstance(d, dict):
                    raise SuiteError(f"suite file {path}: line {ln}: must be a JSON object, one test case per line")
                rows.append(d)
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise SuiteError(f"suite file {path}: field 'path': not a readable JSONL file ({e})") from None
    for i, d in enumerate(rows):
        for col in LIST_COLUMNS:
            v = d.get(col)
            if v is not None and not isinstance(v, list):
                raise _fail(path, i, d.get("case_id"), col, f"must be a JSON array or null, got {str(v)[:60]!r}")
        if isinstance(d.get("labels"), list):
            d["labels"] = _coerce_labels(d["labels"])
        for col in JSON_TEXT_COLUMNS:
            v = d.get(col)
            if v is not None and not isinstance(v, str):
                if col == "expect_params" and not isinstance(v, dict):
                    raise _fail(path, i, d.get("case_id"), col, f"must be a JSON object, got {str(v)[:60]!r}")
                d[col] = json.dumps(v)
    cols = list(dict.fromkeys(k for d in rows for k in d))
    return pd.DataFrame({c: pd.Series([d.get(c) for d in rows], dtype=object) for c in cols})


def read_suite_table(path: str | os.PathLike, label_set: tuple[int, ...] | None = None,
                     head: str | None = None) -> pd.DataFrame:
    """Read and validate a project-format suite stored as CSV (``.csv``,
    ``.csv.gz``) or JSONL (``.jsonl``, ``.jsonl.gz``)."""
    path = Path(path)
    if not path.exists():
        raise SuiteError(f"suite file {path}: field 'path': file does not exist")
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        df = _read_csv(path)
    elif name.endswith((".jsonl", ".jsonl.gz")):
        df = _read_jsonl(path)
    else:
        raise SuiteError(f"suite file {path}: field 'path': expected a .csv or .jsonl file")
    if len(df) == 0:
        raise SuiteError(f"suite file {path}: field 'case_id': the suite has no test cases")
    for col in ("expect_params",):
        if col in df.columns:
            df[col] = ["{}" if v is None or (isinstance(v, float) and v != v) else v for v in df[col]]
    keep = [c for c in COLUMNS if c in df.columns]
    return validate_suite(df[keep], path, label_set, head=head)
