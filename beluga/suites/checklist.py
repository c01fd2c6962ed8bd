"""Import the JSONL export of the CheckList release suites
(``../shared/data/checklist/{sentiment,qqp,squad}.jsonl.gz``, one test case
per line; see ../shared/data/README.md, "Fields of a test case") -- or the
release tarballs themselves, whose records ``beluga.suites.release`` rebuilds
without executing them -- into the project's suite format
(docs/SUITE_FORMAT.md), and read any supported suite file (``read_any_suite``).

Every CheckList expectation is mapped explicitly (``EXPECTATION_MAP`` in the
docs); an expectation, slice or input shape the importer does not know raises
a SuiteError naming the file, the line and the field -- nothing is guessed.

A record with the side field ``beluga`` was written from one of the project's
own suites (``suite export --format checklist``,
``beluga.suites.checklist_export``): its task, expectation and parameters, meta
text and the other of labels / answers are read from that field exactly (its
``expect`` must be the CheckList expectation the field's one is written as),
and the paper's label fixes do not apply to it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import SuiteError
from beluga.core.tasks import SUITE_TASK_TYPES, TASK_TYPES, get_task_type
from beluga.core.text import NOT_TEXT, SURROGATE_ESCAPE, not_text
from beluga.heads import get_head
from beluga.suites.checklist_export import SIDE_FIELD, checklist_expect, checklist_suite_name
from beluga.suites.format import AGG_FNS, COLUMNS, TEST_TYPES, load_suite, validate_suite
from beluga.suites.release import RELEASE_SUFFIXES, read_release_records
from beluga.suites.tabular import open_text, read_suite_table

# BELUGA paper label fixes (../shared/data/README.md, "Known label fixes")
RELABEL = {("qqp", "Order does matter for asymmetric relations"): 0}
TRAIN_HINTS = {("qqp", "(question, f(question)) where f(question) replaces synonyms?"): {"as": "MFT", "label": 1}}

# sentiment Expect.single(<lambda>) tests: "Q & A: no" is
# `pred != 0 if label == 1 else pred == label`; the label-free ones are `pred != 0`
SENT_EQ_OR_NOT_NEGATIVE = frozenset({"Q & A: no"})

REQUIRED_FIELDS = ("suite", "case_id", "functionality", "capability", "test_type", "inputs", "agg_fn", "expect")


class _LineError(Exception):
    def __init__(self, field: str, msg: str, where: str | None = None):
        super().__init__(msg)
        self.field, self.msg, self.where = field, msg, where


def _map_expectation(suite: str, functionality: str, expect: dict, has_labels: bool) -> tuple[str, dict]:
    """CheckList ``expect`` object -> (expectation name, expect_params)."""
    if not isinstance(expect, dict):
        raise _LineError("expect", f"must be an object {{expression, name, params, slice}}, got {expect!r}")
    name = expect.get("name")
    params = expect.get("params") or {}
    sl = expect.get("slice")
    expression = expect.get("expression", name)
    fn = params.get("fn")
    out: dict = {}
    if name == "Expect.eq":
        e = "eq"
        if params.get("val") is not None:
            out["val"] = params["val"]
    elif name == "Expect.inv":
        e = "inv"
        out["tolerance"] = params.get("tolerance", 0)
    elif name == "Expect.monotonic" and suite == "sentiment":
        e = "monotonic"
        out.update(label=params.get("label"), increasing=bool(params.get("increasing", True)),
                   tolerance=params.get("tolerance", 0.0))
    elif name == "Expect.pairwise" and suite == "sentiment" and fn in ("diff_up", "diff_down"):
        e = fn
        out["tolerance"] = 0.1  # hard-coded in the CheckList sentiment notebook's diff_up / diff_down
    elif name == "Expect.pairwise" and suite == "squad" and fn == "expect_same":
        e = "same_answer"
    elif name == "Expect.single" and suite == "squad" and fn == "expect_squad":
        e = "squad"
    elif name == "Expect.single" and suite == "sentiment" and fn == "<lambda>":
        if functionality in SENT_EQ_OR_NOT_NEGATIVE:
            e = "eq_or_not_negative"
        elif not has_labels:
            e = "not_negative"
        else:
            raise _LineError("expect", f"unknown sentiment lambda expectation {expression!r} with labels in "
                             f"functionality {functionality!r}")
    elif name == "Expect.testcase" and suite == "qqp" and fn == "expect_triplet":
        e = "triplet"
    else:
        raise _LineError("expect", f"no mapping for CheckList expectation {expression!r} in the {suite} suite")
    if sl is not None:
        kind = sl.get("kind") if isinstance(sl, dict) else None
        if kind == "Expect.slice_pairwise" and suite == "sentiment" and e == "monotonic":
            out["slice"] = "orig_not_neutral"  # slice fn `pred != 1` applied to the original
        elif kind == "Expect.slice_orig" and suite == "qqp" and e == "eq":
            out["slice"] = "orig_pred_eq"  # slice fn `orig == 1`
            out["slice_value"] = 1
        else:
            raise _LineError("expect", f"no mapping for the slice of CheckList expectation {expression!r} "
                             f"in the {suite} suite")
    return e, out


def _split_inputs(suite: str, inputs) -> tuple[list[str], list[str] | None]:
    if not isinstance(inputs, list) or not inputs:
        raise _LineError("inputs", "must be a non-empty list")
    if suite == "sentiment":
        if not all(isinstance(x, str) for x in inputs):
            raise _LineError("inputs", "sentiment inputs must be strings")
        return inputs, None
    if not all(isinstance(x, list) and len(x) == 2 and all(isinstance(y, str) for y in x) for x in inputs):
        what = "[question1, question2]" if suite == "qqp" else "[context, question]"
        raise _LineError("inputs", f"{suite} inputs must be {what} pairs of strings")
    return [x[0] for x in inputs], [x[1] for x in inputs]


def _labels(d: dict, n: int) -> list | None:
    labels, label = d.get("labels"), d.get("label")
    if labels is None and label is not None:
        labels = [label] * n
    if labels is None:
        return None
    if not isinstance(labels, list) or len(labels) != n:
        raise _LineError("labels", f"must be a list aligned with the {n} inputs, got {str(labels)[:60]!r}")
    return labels


def _side_task(suite: str, side) -> str:
    """The task type a record's side field (``beluga``, written by ``suite export --format checklist``) names,
    checked against the record's ``suite``."""
    if not isinstance(side, dict):
        raise _LineError(SIDE_FIELD, f"must be an object {{task, expect, expect_params, ...}}, got {side!r}")
    task = side.get("task")
    if task not in TASK_TYPES:
        raise _LineError(f"{SIDE_FIELD}.task", f"unknown task type {task!r} (known: {', '.join(sorted(TASK_TYPES))})")
    if checklist_suite_name(task) != suite:
        raise _LineError("suite", f"{suite!r} is not the suite of task {task!r} ({checklist_suite_name(task)!r})")
    return task


def _side_case(d: dict, side: dict, head: str) -> tuple:
    """(inputs, inputs_b, labels, answers, expect, expect_params text, meta text) of a record written by ``suite
    export --format checklist`` (beluga/suites/checklist_export.py): the project's fields exactly, the record's
    CheckList ``expect`` checked against the side field's expectation."""
    raw = d["inputs"]
    if isinstance(raw, list) and raw and all(isinstance(x, str) for x in raw):
        inputs, inputs_b = list(raw), None
    elif isinstance(raw, list) and raw and all(isinstance(x, list) and len(x) == 2 and
                                                all(isinstance(y, str) for y in x) for x in raw):
        inputs, inputs_b = [x[0] for x in raw], [x[1] for x in raw]
    else:
        raise _LineError("inputs", "must be a non-empty list of strings or of [a, b] pairs of strings")
    expect, params_text = side.get("expect"), side.get("expect_params")
    if not isinstance(expect, str) or not isinstance(params_text, (str, type(None))):
        raise _LineError(f"{SIDE_FIELD}.expect", "expect (a name) and expect_params (JSON text or null) must be "
                                                 "strings")
    try:
        params = json_loads(params_text) if params_text else {}
    except json.JSONDecodeError as e:
        raise _LineError(f"{SIDE_FIELD}.expect_params", f"not valid JSON ({e})") from None
    if not isinstance(params, dict):
        raise _LineError(f"{SIDE_FIELD}.expect_params", "must be a JSON object")
    try:
        written = checklist_expect(expect, params)
    except SuiteError as e:
        raise _LineError(f"{SIDE_FIELD}.expect", str(e)) from None
    if d["expect"] != written:
        raise _LineError("expect", f"{json.dumps(d['expect'])[:120]} is not the CheckList expectation of "
                                   f"{SIDE_FIELD}.expect {expect!r} with {params_text} ({written['expression']}); "
                                   "edit both or neither")
    labels = d.get("labels")
    if labels is not None and (not isinstance(labels, list) or len(labels) != len(inputs)):
        raise _LineError("labels", f"must be a list aligned with the {len(inputs)} inputs, got {str(labels)[:60]!r}")
    if d.get("label") is not None and any(x != d["label"] for x in labels or [None]):
        # the export writes a case-wide `label` beside the per-input `labels` it repeats: an edit of one only
        raise _LineError("label", f"{str(d['label'])[:40]!r} is not every input's label in labels "
                                  f"({str(labels)[:60]}); edit both or neither")
    # the CheckList line's own labels hold the head's gold values (a QA head's: answers)
    answers_first = get_head(head).gold_field == "answers"
    other = side.get("labels" if answers_first else "answers")
    labels, answers = (other, labels) if answers_first else (labels, other)
    meta = side.get("meta")
    if meta is not None and not isinstance(meta, str):
        raise _LineError(f"{SIDE_FIELD}.meta", "must be the meta's JSON text")
    if meta is not None:
        try:
            same = json_loads(meta) == d.get("meta")
        except json.JSONDecodeError as e:
            raise _LineError(f"{SIDE_FIELD}.meta", f"not valid JSON ({e})") from None
        if not same:   # the side field holds the exact text; the record's meta was edited alone
            raise _LineError("meta", f"{json.dumps(d.get('meta'))[:60]} is not {SIDE_FIELD}.meta {meta[:60]}; "
                                     "edit both or neither")
    if meta is None and d.get("meta") is not None:
        meta = json.dumps(d["meta"])
    return inputs, inputs_b, labels, answers, expect, params_text, meta


def is_checklist_export(path: str | os.PathLike) -> bool:
    """True when the first record of a JSONL file looks like a CheckList
    export (``expect`` is an object and ``test_type`` is present)."""
    try:
        with open_text(Path(path)) as f:
            for line in f:
                if line.strip():
                    d = json_loads(line)
                    return isinstance(d, dict) and isinstance(d.get("expect"), dict) and "test_type" in d
    except (OSError, UnicodeDecodeError, EOFError, json.JSONDecodeError):
        return False
    return False


def _jsonl_records(f) -> Iterator[tuple[str, dict]]:
    """(``line N``, record) for every non-blank line of a JSONL export."""
    for i, line in enumerate(f, 1):
        if not line.strip():
            continue
        try:
            d = json_loads(line)
        except json.JSONDecodeError as e:
            raise _LineError("json", f"not valid JSON ({e})", where=f"line {i}") from None
        if not isinstance(d, dict):
            raise _LineError("json", "must be a JSON object (one test case per line)", where=f"line {i}")
        bad = not_text(d) if SURROGATE_ESCAPE.search(line) else None   # (text read as UTF-8 has none else)
        if bad:
            raise _LineError(bad, NOT_TEXT, where=f"line {i}")
        yield f"line {i}", d


def import_checklist_records(records: Iterable[tuple[str | None, dict]], source: str | os.PathLike,
                             paper_fixes: bool = True) -> pd.DataFrame:
    """CheckList export records -> validated suite DataFrame (the body of
    :func:`import_checklist`). ``records`` yields ``(where, record)``: ``where``
    names the record in errors (``"line 12"`` for a JSONL file, None for a
    release suite's records, which are named by their ``case_id``); ``source``
    is the file named in errors."""
    path = source
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    suite_name, suite_task = None, None
    declared: dict[str, dict] = {}
    run_subset: list | None = []   # the cases of CheckList's published runs; None: a record does not say
    cache: dict[tuple, tuple[str, str]] = {}
    where, cid = None, None
    try:
        for item in records:
            where, d = item  # ``where`` is reported by the error handler below
            cid = d.get("case_id") if isinstance(d, dict) else None
            if not isinstance(d, dict):
                raise _LineError("json", "must be an object (one test case per record)")
            for field in REQUIRED_FIELDS:
                if field not in d:
                    raise _LineError(field, "missing (not a CheckList export line?)")
            s = d["suite"]
            side = d.get(SIDE_FIELD)
            task = _side_task(s, side) if side is not None else SUITE_TASK_TYPES.get(s)
            if task is None:
                raise _LineError("suite", f"unknown CheckList suite {s!r} (known: {', '.join(SUITE_TASK_TYPES)}; "
                                          f"another task's suite needs the side field {SIDE_FIELD!r})")
            if suite_name is None:
                suite_name, suite_task = s, task
            elif s != suite_name:
                raise _LineError("suite", f"{s!r} differs from {suite_name!r} in earlier lines")
            elif task != suite_task:
                raise _LineError(f"{SIDE_FIELD}.task", f"{task!r} differs from {suite_task!r} in earlier lines")
            func = d["functionality"]
            if d["test_type"] not in TEST_TYPES:
                raise _LineError("test_type", f"unknown test type {d['test_type']!r}")
            if d["agg_fn"] not in AGG_FNS:
                raise _LineError("agg_fn", f"unknown aggregation {d['agg_fn']!r}")
            if side is not None:   # the project's own suite, exported (checklist_export): its fields exactly
                inputs, inputs_b, labels, answers, e, params_text, meta_text = _side_case(
                    d, side, get_task_type(task).head)
                mapped = (e, params_text)
            else:
                inputs, inputs_b = _split_inputs(s, d["inputs"])
                labels = _labels(d, len(inputs))
                answers = None
                if s == "squad":
                    if labels is not None and not all(isinstance(x, str) for x in labels):
                        raise _LineError("labels", "squad labels must be answer strings")
                    answers, labels = labels, None
                elif labels is not None and not all(isinstance(x, int) and not isinstance(x, bool)
                                                    for x in labels):
                    raise _LineError("labels", f"{s} labels must be integer classes, got {str(labels)[:60]!r}")
                expect = d["expect"]
                unperturbed = d["test_type"] in ("INV", "DIR") and len(inputs) < 2
                key = (func, expect.get("expression") if isinstance(expect, dict) else None, labels is None,
                       unperturbed)
                mapped = cache.get(key)
                if mapped is None or key[1] is None:
                    e, params = _map_expectation(s, func, expect, labels is not None)
                    if unperturbed:
                        params["unperturbed"] = True  # released with no perturbation (qqp synonyms INV)
                    if paper_fixes and (s, func) in TRAIN_HINTS:
                        params["train"] = TRAIN_HINTS[(s, func)]
                    mapped = (e, json.dumps(params, sort_keys=True))
                    cache[key] = mapped
                if paper_fixes and (s, func) in RELABEL and labels is not None:
                    labels = [RELABEL[(s, func)]] * len(labels)
                meta = d.get("meta")
                meta_text = None if meta is None else json.dumps(meta)
            if run_subset is not None:
                flag = d.get("in_run_subset")
                if not isinstance(flag, bool):
                    run_subset = None
                elif flag:
                    run_subset.append(cid)
            cols["case_id"].append(cid)
            cols["functionality"].append(func)
            cols["capability"].append(d["capability"])
            cols["test_type"].append(d["test_type"])
            cols["inputs"].append(inputs)
            cols["inputs_b"].append(inputs_b)
            cols["labels"].append(labels)
            cols["answers"].append(answers)
            cols["expect"].append(mapped[0])
            cols["expect_params"].append(mapped[1])
            cols["agg_fn"].append(d["agg_fn"])
            cols["meta"].append(meta_text)
            if func not in declared:
                declared[func] = {"functionality": func, "capability": d["capability"],
                                  "test_type": d["test_type"], "description": d.get("description") or ""}
    except _LineError as e:
        where = e.where or where
        if where is None:
            at = f"case_id={cid!r}" if cid is not None else "record"
        else:
            at = where + (f" (case_id={cid!r})" if cid is not None and e.where is None else "")
        raise SuiteError(f"CheckList suite {path}: {at}: field '{e.field}': {e.msg}") from None
    if suite_name is None:
        raise SuiteError(f"CheckList suite {path}: field 'case_id': the file has no test cases")
    df = pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in cols.items()})
    ttype = get_task_type(suite_task)
    label_set = tuple(ttype.suite_labels) or None
    df = validate_suite(df, path, label_set, head=ttype.head)
    df.attrs.update(checklist_suite=suite_name, task_type=ttype.name, declared=list(declared.values()),
                    checklist_run_subset=None if run_subset is None else CaseIds(run_subset))
    return df


class CaseIds(tuple):
    """The case ids kept in a DataFrame's ``attrs`` (``checklist_run_subset``), in the suite's order. pandas
    deep-copies ``attrs`` into the result of every operation (``__finalize__``): a list of the sentiment release's
    17,413 run cases cost ~20 ms a copy, and a dry run of configs/paper.yaml made thousands of them (76 s of its
    110 s). Being immutable, the tuple is shared instead of copied; it is written as a JSON list, as a list was
    (a suite saved to Parquet keeps its ``attrs`` in the file's metadata)."""

    def __deepcopy__(self, memo) -> CaseIds:
        return self

    def __copy__(self) -> CaseIds:
        return self


def import_checklist(path: str | os.PathLike, paper_fixes: bool = True) -> pd.DataFrame:
    """CheckList JSONL export -- or a CheckList release tarball / ``.pkl``
    (``beluga.suites.release``, read without executing it) -- -> validated
    suite DataFrame (columns ``format.COLUMNS``, functionalities in file order).

    ``paper_fixes``: apply the BELUGA paper's label fixes (qqp "Order does
    matter for asymmetric relations" labels -> 0; qqp "(question, f(question))
    where f(question) replaces synonyms?" gets the training hint
    ``{"train": {"as": "MFT", "label": 1}}``). Without them labels are exactly
    as released. ``df.attrs`` holds ``checklist_suite``, ``task_type``,
    ``declared`` (functionality descriptions) and ``checklist_run_subset``: the
    case ids of CheckList's published runs (a test's ``run_idxs`` where it
    sampled cases, all its cases otherwise; the records' ``in_run_subset``),
    None when a record does not say. Errors name the file, the line
    (JSONL) or the case id (release suites) and the field."""

    path = Path(path)
    if not path.exists():
        raise SuiteError(f"CheckList suite {path}: field 'path': file does not exist")
    if path.name.lower().endswith(RELEASE_SUFFIXES):
        return import_checklist_records(((None, r) for r in read_release_records(path)), path, paper_fixes)
    try:
        with open_text(path) as f:
            return import_checklist_records(_jsonl_records(f), path, paper_fixes)
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise SuiteError(f"CheckList suite {path}: field 'path': not a readable JSONL file ({e})") from None


def read_any_suite(path: str | os.PathLike, paper_fixes: bool = True, label_set: tuple[int, ...] | None = None,
                   head: str | None = None) -> pd.DataFrame:
    """Read a suite from any supported file, by extension:

    - ``.parquet``: the project's format (``format.load_suite``);
    - ``.jsonl`` / ``.jsonl.gz``: a CheckList export (records with an
      ``expect`` object and ``test_type``) or the project's format as JSONL;
    - ``.csv`` / ``.csv.gz``: the project's format as CSV;
    - ``.tar.gz`` / ``.tgz`` / ``.pkl``: a CheckList release suite (the
      published ``release_suites/*_suite.tar.gz`` or its pickle), read without
      executing it (``beluga.suites.release``) and imported like its JSONL
      export.

    ``label_set`` / ``head`` apply to the project's formats; a CheckList
    export knows its own task type (``df.attrs['task_type']``)."""
    path = Path(path)
    if not path.exists():
        raise SuiteError(f"suite file {path}: field 'path': file does not exist")
    name = path.name.lower()
    if name.endswith(".parquet"):
        return load_suite(path, label_set, head=head)
    if name.endswith((".jsonl", ".jsonl.gz")):
        if is_checklist_export(path):
            return import_checklist(path, paper_fixes=paper_fixes)
        return read_suite_table(path, label_set, head=head)
    if name.endswith((".csv", ".csv.gz")):
        return read_suite_table(path, label_set, head=head)
    if name.endswith((".tar.gz", ".tgz", ".pkl")):
        return import_checklist(path, paper_fixes=paper_fixes)
    raise SuiteError(f"suite file {path}: field 'path': unknown suite file type "
                     f"(expected .parquet, .jsonl, .jsonl.gz, .csv, .csv.gz, or a CheckList release suite "
                     f".tar.gz, .tgz or .pkl)")
