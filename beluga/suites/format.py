"""The project's portable suite format: one Parquet row per test case.

Columns (see docs/SUITE_FORMAT.md):

=============  ======================  ==========================================
column         type                    meaning
=============  ======================  ==========================================
case_id        string                  unique, stable id of the test case
functionality  string                  functionality name
capability     string                  functionality class (CheckList capability)
test_type      string                  ``MFT``, ``INV`` or ``DIR``
inputs         list<string>            inputs; for INV/DIR the original first
inputs_b       list<string> | null     second text segment of each input
                                       (sentence-pair tasks); null otherwise
labels         list<int64> | null      one label per input, or null
expect         string                  expectation name (see EXPECTATIONS)
expect_params  string (JSON object)    expectation parameters
agg_fn         string                  ``all`` or ``all_except_first``
meta           string (JSON) | null    optional per-case metadata
=============  ======================  ==========================================

The file may declare its functionalities in the schema metadata key
``beluga.functionalities`` (JSON list of {functionality, capability,
test_type, description}); every declared functionality must have cases.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from beluga.errors import SuiteError
from beluga.io import write_parquet

TEST_TYPES = ("MFT", "INV", "DIR")
AGG_FNS = ("all", "all_except_first")
FUNCTIONALITIES_KEY = "beluga.functionalities"

# expectation name -> (needs a label per input when no ``val`` param, allowed test types)
EXPECTATIONS: dict[str, dict] = {
    "eq": {"label": True, "types": ("MFT", "INV", "DIR")},
    "not_negative": {"label": False, "types": ("MFT",)},
    "inv": {"label": False, "types": ("INV",)},
    "monotonic": {"label": False, "types": ("DIR",)},
    "diff_up": {"label": False, "types": ("DIR",)},
    "diff_down": {"label": False, "types": ("DIR",)},
}

COLUMNS = ["case_id", "functionality", "capability", "test_type", "inputs", "inputs_b",
           "labels", "expect", "expect_params", "agg_fn", "meta"]

SCHEMA = pa.schema([
    ("case_id", pa.string()),
    ("functionality", pa.string()),
    ("capability", pa.string()),
    ("test_type", pa.string()),
    ("inputs", pa.list_(pa.string())),
    ("inputs_b", pa.list_(pa.string())),
    ("labels", pa.list_(pa.int64())),
    ("expect", pa.string()),
    ("expect_params", pa.string()),
    ("agg_fn", pa.string()),
    ("meta", pa.string()),
])


def _is_null(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _fail(path, row, case_id, field, msg) -> SuiteError:
    where = f"row {row}" + (f" (case_id={case_id!r})" if case_id is not None else "")
    return SuiteError(f"suite file {path}: {where}: field '{field}': {msg}")


def validate_suite(df: pd.DataFrame, path: str | os.PathLike, label_set: tuple[int, ...] | None,
                   declared: list[dict] | None = None) -> pd.DataFrame:
    """Check every row; raise SuiteError naming the file, the row and the field."""
    path = str(path)
    missing = [c for c in COLUMNS if c not in df.columns and c not in ("inputs_b", "meta")]
    if missing:
        raise SuiteError(f"suite file {path}: missing column(s) {missing}; "
                         f"expected columns {COLUMNS}")
    df = df.copy()
    for opt in ("inputs_b", "meta"):
        if opt not in df.columns:
            df[opt] = None
    for col in ("inputs_b", "meta", "labels", "expect_params"):
        df[col] = [None if _is_null(v) else v for v in df[col].astype(object)]
    if len(df) == 0:
        raise SuiteError(f"suite file {path}: field 'case_id': the suite has no test cases")
    seen_ids: dict[str, int] = {}
    func_info: dict[str, tuple[str, str]] = {}
    for i, r in enumerate(df.itertuples(index=False)):
        cid = r.case_id
        if not isinstance(cid, str) or not cid:
            raise _fail(path, i, None, "case_id", "must be a non-empty string")
        if cid in seen_ids:
            raise _fail(path, i, cid, "case_id", f"duplicate of row {seen_ids[cid]}")
        seen_ids[cid] = i
        for field in ("functionality", "capability"):
            v = getattr(r, field)
            if not isinstance(v, str) or not v.strip():
                raise _fail(path, i, cid, field, "must be a non-empty string")
        if r.test_type not in TEST_TYPES:
            raise _fail(path, i, cid, "test_type",
                        f"unknown test type {r.test_type!r} (expected one of {', '.join(TEST_TYPES)})")
        prev = func_info.setdefault(r.functionality, (r.capability, r.test_type))
        if prev != (r.capability, r.test_type):
            raise _fail(path, i, cid, "functionality",
                        f"functionality {r.functionality!r} has capability/test type "
                        f"{(r.capability, r.test_type)} here but {prev} in an earlier row")
        inputs = list(r.inputs) if r.inputs is not None else []
        if not inputs or not all(isinstance(x, str) for x in inputs):
            raise _fail(path, i, cid, "inputs", "must be a non-empty list of strings")
        if r.test_type in ("INV", "DIR") and len(inputs) < 2:
            raise _fail(path, i, cid, "inputs",
                        f"{r.test_type} case needs the original and at least one perturbation, "
                        f"got {len(inputs)} input(s)")
        if r.inputs_b is not None and len(r.inputs_b) != len(inputs):
            raise _fail(path, i, cid, "inputs_b", f"has {len(r.inputs_b)} entries for {len(inputs)} inputs")
        if r.expect not in EXPECTATIONS:
            raise _fail(path, i, cid, "expect",
                        f"unknown expectation {r.expect!r} (known: {', '.join(EXPECTATIONS)})")
        spec = EXPECTATIONS[r.expect]
        if r.test_type not in spec["types"]:
            raise _fail(path, i, cid, "expect", f"expectation {r.expect!r} does not apply to {r.test_type} tests")
        try:
            params = json.loads(r.expect_params) if r.expect_params else {}
        except (TypeError, json.JSONDecodeError) as e:
            raise _fail(path, i, cid, "expect_params", f"not a JSON object: {e}") from None
        if not isinstance(params, dict):
            raise _fail(path, i, cid, "expect_params", "must be a JSON object")
        if r.agg_fn not in AGG_FNS:
            raise _fail(path, i, cid, "agg_fn", f"unknown aggregation {r.agg_fn!r} (expected {' or '.join(AGG_FNS)})")
        labels = None if r.labels is None else list(r.labels)
        if labels is not None and len(labels) != len(inputs):
            raise _fail(path, i, cid, "labels", f"has {len(labels)} entries for {len(inputs)} inputs")
        needs_label = spec["label"] and params.get("val") is None
        if needs_label and (labels is None or any(lb is None or pd.isna(lb) for lb in labels)):
            raise _fail(path, i, cid, "labels", f"expectation {r.expect!r} needs a label for every input")
        if labels is not None and label_set is not None:
            for lb in labels:
                if lb is not None and not pd.isna(lb) and int(lb) not in label_set:
                    raise _fail(path, i, cid, "labels",
                                f"label {lb} is outside the task's label set {sorted(label_set)}")
        if r.meta is not None:
            try:
                json.loads(r.meta)
            except (TypeError, json.JSONDecodeError) as e:
                raise _fail(path, i, cid, "meta", f"not valid JSON: {e}") from None
    if declared is not None:
        for d in declared:
            name = d.get("functionality")
            if name not in func_info:
                raise SuiteError(f"suite file {path}: field 'functionality': declared functionality "
                                 f"{name!r} has no test cases")
    return df[COLUMNS]


def declared_functionalities(path: str | os.PathLike) -> list[dict] | None:
    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(FUNCTIONALITIES_KEY.encode())
    return None if raw is None else json.loads(raw)


def load_suite(path: str | os.PathLike, label_set: tuple[int, ...] | None = None) -> pd.DataFrame:
    """Read and validate a suite Parquet file."""
    path = Path(path)
    if not path.exists():
        raise SuiteError(f"suite file {path}: field 'path': file does not exist")
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise SuiteError(f"suite file {path}: field 'path': not a readable Parquet file ({e})") from None
    declared = None
    raw = (table.schema.metadata or {}).get(FUNCTIONALITIES_KEY.encode())
    if raw is not None:
        declared = json.loads(raw)
    return validate_suite(table.to_pandas(), path, label_set, declared)


def functionality_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per functionality, in first-appearance order."""
    g = df.groupby("functionality", sort=False)
    out = g.agg(capability=("capability", "first"), test_type=("test_type", "first"),
                n_cases=("case_id", "size"), n_inputs=("inputs", lambda s: int(sum(len(x) for x in s))),
                expect=("expect", "first")).reset_index()
    return out


def save_suite(df: pd.DataFrame, path: str | os.PathLike, declared: list[dict] | None = None) -> None:
    df = df.copy()
    for opt in ("inputs_b", "meta"):
        if opt not in df.columns:
            df[opt] = None
    table = pa.Table.from_pandas(df[COLUMNS], schema=SCHEMA, preserve_index=False)
    metadata = {FUNCTIONALITIES_KEY: json.dumps(declared)} if declared is not None else None
    write_parquet(table, path, metadata=metadata)
