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
labels         list<int64> | null      one class label per input (classification)
answers        list<string> | null     one expected answer per input (QA)
expect         string                  expectation name (see EXPECTATIONS)
expect_params  string (JSON object)    expectation parameters
agg_fn         string                  ``all`` or ``all_except_first``
meta           string (JSON) | null    optional per-case metadata
=============  ======================  ==========================================

``answers`` is optional: a file written before it existed loads with the
column filled with nulls.

The file may declare its functionalities in the schema metadata key
``beluga.functionalities`` (JSON list of {functionality, capability,
test_type, description}); every declared functionality must have cases.
``beluga.task``: the task type the suite was built for (``suite build`` /
``suite perturb`` write it; ``test``, ``score`` and ``suite export`` read it).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from beluga.core.bounds import json_loads
from beluga.core.errors import SuiteError
from beluga.core.io import write_parquet
from beluga.core.text import NOT_TEXT, SURROGATE_ESCAPE, arrow_not_utf8, column_not_text, not_text
from beluga.heads import get_head
from beluga.heads.score.cases import SCORE_EXPECTATIONS, score_params_error

TEST_TYPES = ("MFT", "INV", "DIR")
AGG_FNS = ("all", "all_except_first")
FUNCTIONALITIES_KEY = "beluga.functionalities"
#: the schema metadata key of the task type a suite was built for (``suite build`` / ``suite perturb``)
TASK_KEY = "beluga.task"

# expectation name -> what it needs and where it applies.
#   needs: "label"  - a class label per input (column ``labels``)
#          "answer" - an expected answer string per input (column ``answers``)
#          "label_or_answer" - labels (classification) or answers (QA)
#          None     - nothing per input
#   val_ok: a ``val`` parameter replaces the per-input label / answer
#   label: kept for backward compatibility (True when some label info is needed)
#   n_inputs: exact number of inputs the expectation works on (None: any)
EXPECTATIONS: dict[str, dict] = {
    "eq": {"needs": "label_or_answer", "val_ok": True, "types": ("MFT", "INV", "DIR")},
    "not_negative": {"needs": None, "val_ok": False, "types": ("MFT", "DIR")},
    "not_eq": {"needs": None, "val_ok": True, "types": ("MFT",)},
    "eq_or_not_negative": {"needs": "label", "val_ok": False, "types": ("MFT",)},
    "inv": {"needs": None, "val_ok": False, "types": ("INV",)},
    "monotonic": {"needs": None, "val_ok": False, "types": ("DIR",)},
    "diff_up": {"needs": None, "val_ok": False, "types": ("DIR",)},
    "diff_down": {"needs": None, "val_ok": False, "types": ("DIR",)},
    "triplet": {"needs": None, "val_ok": False, "types": ("DIR", "MFT"), "n_inputs": 3},
    "squad": {"needs": "answer", "val_ok": False, "types": ("MFT", "INV", "DIR")},
    "same_answer": {"needs": None, "val_ok": False, "types": ("INV", "DIR")},
}
# a regression head's expectations on scores (beluga.heads.score.cases): score_near's value is ``val`` or the label
for _name, _types in SCORE_EXPECTATIONS.items():
    EXPECTATIONS[_name] = {"needs": "label" if _name == "score_near" else None, "val_ok": _name == "score_near",
                           "types": _types}
for _spec in EXPECTATIONS.values():
    _spec["label"] = _spec["needs"] is not None
    _spec.setdefault("n_inputs", None)

# slices (``expect_params.slice``): the case is scored only when the slice holds
SLICES = {
    "orig_not_neutral": "the original input is not predicted neutral (class 1)",
    "orig_pred_eq": "the original input is predicted as class `slice_value`",
}

COLUMNS = ["case_id", "functionality", "capability", "test_type", "inputs", "inputs_b",
           "labels", "answers", "expect", "expect_params", "agg_fn", "meta"]
OPTIONAL_COLUMNS = ("inputs_b", "answers", "meta")
#: the columns that hold text (strings or lists of strings; JSON text for expect_params and meta)
SUITE_TEXT_COLUMNS = ("case_id", "functionality", "capability", "test_type", "inputs", "inputs_b", "answers", "expect",
                "expect_params", "agg_fn", "meta")

SCHEMA = pa.schema([
    ("case_id", pa.string()),
    ("functionality", pa.string()),
    ("capability", pa.string()),
    ("test_type", pa.string()),
    ("inputs", pa.list_(pa.string())),
    ("inputs_b", pa.list_(pa.string())),
    ("labels", pa.list_(pa.int64())),
    ("answers", pa.list_(pa.string())),
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


def _as_list(v) -> list | None:
    """A list / array / tuple as a list; anything else (None, strings, scalars) -> None."""
    if v is None or isinstance(v, (str, bytes, dict)):
        return None
    try:
        return list(v)
    except TypeError:
        return None


def _is_int(v) -> bool:
    if isinstance(v, (bool, str, bytes)):
        return False
    try:
        return float(v).is_integer()
    except (TypeError, ValueError):
        return False


def _missing_entry(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _class_param(path, i, cid, name: str, v, label_set) -> None:
    """An expectation parameter that names a class: an integer of the task's label set."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise _fail(path, i, cid, "expect_params", f"{name!r} must be an integer class, got {v!r}")
    if label_set is not None and v not in label_set:
        raise _fail(path, i, cid, "expect_params", f"{name!r} is {v}, outside the task's label set {sorted(label_set)}")


def _check_params(path, i, cid, expect: str, params: dict, n_inputs: int, label_set=None,
                  score_range=None) -> None:
    if expect in SCORE_EXPECTATIONS:   # numbers, not classes (beluga.heads.score.cases)
        err = score_params_error(expect, params, score_range)
        if err is not None:
            raise _fail(path, i, cid, "expect_params", err)
        return
    sl = params.get("slice")
    if sl is not None:
        if sl not in SLICES:
            raise _fail(path, i, cid, "expect_params",
                        f"unknown slice {sl!r} (known: {', '.join(SLICES)})")
        if sl == "orig_pred_eq":
            v = params.get("slice_value")
            if not isinstance(v, int) or isinstance(v, bool):
                raise _fail(path, i, cid, "expect_params",
                            "slice 'orig_pred_eq' needs an integer 'slice_value'")
            _class_param(path, i, cid, "slice_value", v, label_set)
    train = params.get("train")
    if train is not None:
        if not isinstance(train, dict) or train.get("as") not in TEST_TYPES:
            raise _fail(path, i, cid, "expect_params",
                        f"'train' must be an object with 'as' in {', '.join(TEST_TYPES)}, got {train!r}")
        lb = train.get("label")
        if lb is not None and (not isinstance(lb, int) or isinstance(lb, bool)):
            raise _fail(path, i, cid, "expect_params", f"'train.label' must be an integer, got {lb!r}")
        if lb is not None:
            _class_param(path, i, cid, "train.label", lb, label_set)
    for key in ("unperturbed", "increasing"):
        v = params.get(key)
        if v is not None and not isinstance(v, bool):
            raise _fail(path, i, cid, "expect_params", f"{key!r} must be true or false, got {v!r}")
    tol = params.get("tolerance")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf):
        raise _fail(path, i, cid, "expect_params", f"'tolerance' must be a finite number >= 0, got {tol!r}")
    if expect == "monotonic" and params.get("label") is not None:
        _class_param(path, i, cid, "label", params["label"], label_set)
    val = params.get("val")
    if expect == "not_eq" and val is None:
        raise _fail(path, i, cid, "expect_params", "expectation 'not_eq' needs 'val', the class it rules out")
    if val is not None:
        if label_set is not None:
            _class_param(path, i, cid, "val", val, label_set)
        elif isinstance(val, bool) or not isinstance(val, (int, str)):
            raise _fail(path, i, cid, "expect_params", f"'val' must be a class (an integer) or an answer (a string), "
                                                       f"got {val!r}")


def _check_same_answer_meta(path, i, cid, meta, n_inputs: int) -> None:
    if meta is None:
        return
    if not isinstance(meta, list) or len(meta) != n_inputs:
        raise _fail(path, i, cid, "meta",
                    f"expectation 'same_answer' needs null or a list with one entry per input "
                    f"({n_inputs}), got {str(meta)[:80]!r}")
    for m in meta:
        if not m:
            continue
        if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)):
            raise _fail(path, i, cid, "meta",
                        f"expectation 'same_answer': each entry must be empty or [old, new] strings, got {m!r}")


def validate_suite(df: pd.DataFrame, path: str | os.PathLike, label_set: tuple[int, ...] | None,
                   declared: list[dict] | None = None, head: str | None = None,
                   score_range: tuple[float, float] | None = None) -> pd.DataFrame:
    """Check every row; raise SuiteError naming the file, the row and the field.

    ``head`` ("classification" or "qa") decides whether ``eq`` needs labels
    or answers; None accepts either. ``head="regression"`` admits the score
    expectations (:mod:`beluga.heads.score.cases`) only, the other heads none of them.
    ``score_range`` (a regression task's): every label (a gold score) inside it, and
    the score expectations' parameters against it (``val``, ``min``, ``max`` inside
    it; no interval, tolerance or margin that every score passes or none can:
    :func:`beluga.heads.score.cases.score_params_error`). Every text column holds
    Unicode text (no lone surrogate: :mod:`beluga.core.text`), the JSON text of
    ``expect_params`` and ``meta`` too."""
    path = str(path)
    missing = [c for c in COLUMNS if c not in df.columns and c not in OPTIONAL_COLUMNS]
    if missing:
        raise SuiteError(f"suite file {path}: missing column(s) {missing}; "
                         f"expected columns {COLUMNS}")
    df = df.copy()
    for opt in OPTIONAL_COLUMNS:
        if opt not in df.columns:
            df[opt] = None
    for col in ("inputs_b", "meta", "labels", "answers", "expect_params"):
        df[col] = pd.Series([None if _is_null(v) else v for v in df[col].astype(object)], index=df.index,
                            dtype=object)
    if len(df) == 0:
        raise SuiteError(f"suite file {path}: field 'case_id': the suite has no test cases")
    for col in SUITE_TEXT_COLUMNS:   # a lone surrogate (a JSON escape read) would stop the first write, far from here
        found = column_not_text(df[col])
        if found is not None:
            row, sub = found
            cid = df["case_id"].iat[row]
            raise _fail(path, row, cid if isinstance(cid, str) else None, col + sub, NOT_TEXT)
    seen_ids: dict[str, int] = {}
    func_info: dict[str, tuple[str, str]] = {}
    param_cache: dict[str, dict] = {}
    scored = get_head(head).expectations() if head is not None else None   # what the head scores, asked once
    needs_gold = get_head(head).needs_gold if head is not None else None
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
        inputs = _as_list(r.inputs) or []
        if not inputs or not all(isinstance(x, str) for x in inputs):
            raise _fail(path, i, cid, "inputs", "must be a non-empty list of strings")
        n = len(inputs)
        if r.inputs_b is not None:
            if _as_list(r.inputs_b) is None or len(r.inputs_b) != n:
                raise _fail(path, i, cid, "inputs_b",
                            f"must be a list with one entry per input ({n}), got {str(r.inputs_b)[:60]!r}")
            if not all(isinstance(x, str) for x in r.inputs_b):
                raise _fail(path, i, cid, "inputs_b", "must be a list of strings")
        if r.expect not in EXPECTATIONS:
            raise _fail(path, i, cid, "expect",
                        f"unknown expectation {r.expect!r} (known: {', '.join(EXPECTATIONS)})")
        if scored is not None and r.expect not in scored:
            known = [e for e in EXPECTATIONS if e in scored]
            raise _fail(path, i, cid, "expect", f"expectation {r.expect!r} does not apply to a {head} head "
                                                f"(known: {', '.join(known)})")
        spec = EXPECTATIONS[r.expect]
        if r.test_type not in spec["types"]:
            raise _fail(path, i, cid, "expect", f"expectation {r.expect!r} does not apply to {r.test_type} tests")
        if spec["n_inputs"] is not None and n != spec["n_inputs"]:
            raise _fail(path, i, cid, "inputs",
                        f"expectation {r.expect!r} needs exactly {spec['n_inputs']} inputs, got {n}")
        raw = r.expect_params
        params = param_cache.get(raw) if isinstance(raw, str) else None
        if params is None:
            try:
                params = json_loads(raw) if raw else {}
            except (TypeError, json.JSONDecodeError) as e:
                raise _fail(path, i, cid, "expect_params", f"not a JSON object: {e}") from None
            if not isinstance(params, dict):
                raise _fail(path, i, cid, "expect_params", "must be a JSON object")
            bad = not_text(params, "expect_params") if isinstance(raw, str) and SURROGATE_ESCAPE.search(raw) else None
            if bad:
                raise _fail(path, i, cid, bad, NOT_TEXT)
            _check_params(path, i, cid, r.expect, params, n, label_set, score_range)
            if isinstance(raw, str):
                param_cache[raw] = params
        if r.test_type in ("INV", "DIR") and n < 2 and params.get("unperturbed") is not True:
            raise _fail(path, i, cid, "inputs",
                        f"{r.test_type} case needs the original and at least one perturbation, "
                        f"got {n} input(s) (a case released that way must say so with "
                        f"expect_params \"unperturbed\": true)")
        if r.agg_fn not in AGG_FNS:
            raise _fail(path, i, cid, "agg_fn", f"unknown aggregation {r.agg_fn!r} (expected {' or '.join(AGG_FNS)})")
        labels = _as_list(r.labels)
        if r.labels is not None and labels is None:
            raise _fail(path, i, cid, "labels", "must be a list of integers (one per input)")
        if labels is not None and len(labels) != n:
            raise _fail(path, i, cid, "labels", f"has {len(labels)} entries for {n} inputs")
        if labels is not None and r.expect == "not_eq":
            raise _fail(path, i, cid, "labels", "expectation 'not_eq' rules out the class 'val'; labels must be null")
        answers = None
        if r.answers is not None:
            answers = _as_list(r.answers)
            if answers is None:
                raise _fail(path, i, cid, "answers", "must be a list of strings (one per input)")
            if len(answers) != n:
                raise _fail(path, i, cid, "answers", f"has {len(answers)} entries for {n} inputs")
            if not all(a is None or isinstance(a, str) for a in answers):
                raise _fail(path, i, cid, "answers", "must be a list of strings (one per input)")
        labels_ok = labels is not None and not any(_missing_entry(lb) for lb in labels)
        answers_ok = answers is not None and not any(a is None for a in answers)
        needs = spec["needs"]
        if needs is not None and not (spec["val_ok"] and params.get("val") is not None):
            if needs == "label_or_answer":
                needs = needs_gold or needs
            if needs == "label" and not labels_ok:
                raise _fail(path, i, cid, "labels", f"expectation {r.expect!r} needs a label for every input")
            if needs == "answer" and not answers_ok:
                raise _fail(path, i, cid, "answers", f"expectation {r.expect!r} needs an answer for every input")
            if needs == "label_or_answer" and not (labels_ok or answers_ok):
                raise _fail(path, i, cid, "labels",
                            f"expectation {r.expect!r} needs a label (or, for QA, an answer) for every input")
        if labels is not None:
            for lb in labels:
                if _missing_entry(lb):
                    continue
                if not _is_int(lb):
                    raise _fail(path, i, cid, "labels", f"label {lb!r} is not an integer class")
                if label_set is not None and int(lb) not in label_set:
                    raise _fail(path, i, cid, "labels",
                                f"label {lb} is outside the task's label set {sorted(label_set)}")
                if score_range is not None and not score_range[0] <= lb <= score_range[1]:
                    raise _fail(path, i, cid, "labels", f"label {lb} is outside the task's score range "
                                                        f"{score_range[0]:g}..{score_range[1]:g}")
        meta = None
        if r.meta is not None:
            try:
                meta = json_loads(r.meta)
            except (TypeError, json.JSONDecodeError) as e:
                raise _fail(path, i, cid, "meta", f"not valid JSON: {e}") from None
            bad = not_text(meta, "meta") if isinstance(r.meta, str) and SURROGATE_ESCAPE.search(r.meta) else None
            if bad:
                raise _fail(path, i, cid, bad, NOT_TEXT)
        if r.expect == "same_answer":
            _check_same_answer_meta(path, i, cid, meta, n)
    if declared is not None:
        for d in declared:
            name = d.get("functionality")
            if name not in func_info:
                raise SuiteError(f"suite file {path}: field 'functionality': declared functionality "
                                 f"{name!r} has no test cases")
    return df[COLUMNS]


def load_suite(path: str | os.PathLike, label_set: tuple[int, ...] | None = None,
               head: str | None = None) -> pd.DataFrame:
    """Read and validate a suite Parquet file (files without ``answers`` load
    with the column filled with nulls)."""
    path = Path(path)
    if not path.exists():
        raise SuiteError(f"suite file {path}: field 'path': file does not exist")
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise SuiteError(f"suite file {path}: field 'path': not a readable Parquet file ({e})") from None
    bad = arrow_not_utf8(table)
    if bad is not None:
        row, field, why = bad
        raise SuiteError(f"suite file {path}: row {row}: field '{field}': {why}")
    declared = _declared(table.schema.metadata, path)
    df = validate_suite(table.to_pandas(), path, label_set, declared, head=head)
    if declared is not None:
        df.attrs["declared"] = declared
    task = (table.schema.metadata or {}).get(TASK_KEY.encode())
    if task is not None:
        df.attrs["task_type"] = task.decode("utf-8", "replace")
        df.attrs["task_source"] = f"its metadata {TASK_KEY}"
    return df


def _declared(metadata: dict | None, path) -> list[dict] | None:
    """The functionality table a suite file declares in its schema metadata (None: none)."""
    raw = (metadata or {}).get(FUNCTIONALITIES_KEY.encode())
    if raw is None:
        return None
    try:
        declared = json_loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise SuiteError(f"suite file {path}: field 'metadata.{FUNCTIONALITIES_KEY}': not valid JSON ({e})") from None
    if not isinstance(declared, list) or not all(isinstance(d, dict) for d in declared):
        raise SuiteError(f"suite file {path}: field 'metadata.{FUNCTIONALITIES_KEY}': must be a list of objects")
    return declared


def functionality_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per functionality, in first-appearance order."""
    g = df.groupby("functionality", sort=False)
    out = g.agg(capability=("capability", "first"), test_type=("test_type", "first"),
                n_cases=("case_id", "size"), n_inputs=("inputs", lambda s: int(sum(len(x) for x in s))),
                expect=("expect", "first")).reset_index()
    return out


def save_suite(df: pd.DataFrame, path: str | os.PathLike, declared: list[dict] | None = None,
               task: str | None = None) -> None:
    """Write a suite file (Parquet): its declared functionalities and the task type it was built for (``task``),
    if given, in the schema metadata (read back as ``df.attrs['task_type']``)."""
    df = df.copy()
    for opt in OPTIONAL_COLUMNS:
        if opt not in df.columns:
            df[opt] = None
    df = df[COLUMNS].astype(object)
    for col in ("inputs_b", "labels", "answers", "meta"):
        df[col] = pd.Series([None if _is_null(v) else v for v in df[col]], index=df.index, dtype=object)
    table = pa.Table.from_pandas(df, schema=SCHEMA, preserve_index=False)
    metadata = {FUNCTIONALITIES_KEY: json.dumps(declared)} if declared is not None else {}
    if task is not None:
        metadata[TASK_KEY] = task
    write_parquet(table, path, metadata=metadata or None)
