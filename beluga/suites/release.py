"""Read CheckList's published release suites (``release_suites/{sentiment,qqp,
squad}_suite.tar.gz`` of the CheckList repository) **without executing them**,
and rebuild from them the JSONL export that ``../shared/data/checklist/
{suite}.jsonl.gz`` holds (one record per test case; ../shared/data/README.md,
"Fields of a test case").

A tarball must hold exactly one regular ``*.pkl`` member with a relative
name without ``..``; it is read into memory, never extracted, and unpickled
by :mod:`beluga.suites.release_pickle` (a restricted unpickler that builds
inert stand-ins: nothing the pickle names is imported or run); this module
turns the stand-ins into records.

What is recovered
-----------------
Every field of the JSONL export, exactly (``read_release_records``; the tests
compare all 163k records of the three suites field for field):

- ``suite``: from the pickle's file name (the tar member ``qqp_suite.pkl``),
  else the tarball's name, else the content (string inputs: sentiment; pairs
  with answer-string labels: squad; other pairs: qqp), or given explicitly;
- ``case_id`` ``{suite}-{test_index:02d}-{case_index:05d}``, ``functionality``
  (the test's key in ``TestSuite.tests``, in order), ``capability`` and
  ``description`` (``TestSuite.info[name]``, as CheckList's summaries show
  them; ``''`` when absent), ``test_type`` (the test's class);
- ``inputs`` (``data[i]``: a list is several inputs, anything else one input
  -- CheckList's ``iter_with_optional`` rule; pairs become ``[a, b]``),
  ``labels`` / ``label`` / ``label_scope`` (a scalar test label: ``test``; a
  list of per-case labels: ``case``; a list of per-input lists:
  ``case_per_input``; ``label`` is the shared value or null), ``meta``;
- ``agg_fn``: the test's own ``agg_fn`` attribute, as CheckList's
  ``AbstractTest.run`` applies it (``Expect.aggregate(results, self.agg_fn)``):
  the test types' constructors default to ``all`` (MFT) and
  ``all_except_first`` (INV, DIR), and a test may override it (qqp
  "(q, paraphrase(q))" is a DIR with ``all``); a non-string (custom function)
  ``agg_fn`` is refused;
- ``expect``: ``{expression, name, params, slice}`` recognised from the
  closure tree of ``test.expect`` by code identity (``CHECKLIST_CODE``:
  ``co_name``, free variables, leading argument names, names the code uses,
  the qualified names its nested code reveals, and the file name
  ``checklist/expect.py``) -- never by running it: ``Expect.testcase`` ->
  ``Expect.single`` / ``Expect.pairwise`` -> ``Expect.eq`` (``ret_fn``, free
  variable ``val``), ``Expect.inv`` (``expect``, ``tolerance``),
  ``Expect.monotonic`` (``expect``, ``increasing`` / ``keep_label`` /
  ``tolerance``) or a custom function (its ``co_name``: ``diff_up``,
  ``<lambda>``, ``expect_squad`` ...), and ``Expect.wrap_slice`` (``wrapped``,
  ``agg_fn`` / ``expect_fn`` / ``slice_fn``) for ``slice_pairwise`` and
  ``slice_orig`` (recognised by its ``<lambda>`` over ``slice_fn``). The
  expectation parameters (``val``, ``tolerance``, ``label``, ``increasing``,
  the slice's ``agg_fn``) are the values of the closure cells;
- ``in_run_subset`` / ``run_position``: the case's position in the test's
  ``run_idxs`` (the authors' 500-case subsample; no ``run_idxs``: every case
  is in it, position null); ``test_index``, ``case_index``, ``n_inputs``.

``write_checklist_jsonl`` writes the records as the export's JSON lines
(``json.dumps(record, ensure_ascii=False)``: byte-identical to the shared
export), gzip when the name ends in ``.gz``, atomically.
"""

from __future__ import annotations

import gzip
import io
import json
import operator
import os
import re
import reprlib
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from beluga.core.text import NOT_TEXT, is_text, not_text
from beluga.suites.release_pickle import (
    ArrayRecord,
    FunctionRecord,
    MalformedPickle,
    TestRecord,
    TestSuiteRecord,
    release_error,
    unpickle_release,
)

SUITES = ("sentiment", "qqp", "squad")
RELEASE_SUFFIXES = (".tar.gz", ".tgz", ".pkl")
#: the tar member may not be larger than this (a decompression bomb is refused)
MAX_PICKLE_BYTES = 1 << 30
SLICE_NOTE = "cases whose slice result (aggregated with agg_fn) is not True are excluded (expect result None)"
#: the fields of one JSONL export record, in the export's order
RECORD_FIELDS = ("suite", "case_id", "test_index", "case_index", "functionality", "capability", "test_type",
                 "description", "inputs", "n_inputs", "label", "labels", "label_scope", "meta", "agg_fn", "expect",
                 "in_run_subset", "run_position")


# ---------------------------------------------------------------- reading the file
def is_release_suite(path: str | os.PathLike) -> bool:
    """True for an existing ``.tar.gz`` / ``.tgz`` (gzip data) or ``.pkl``
    (pickle data) file -- a CheckList release suite to read with
    :func:`read_release_records`. Reads two bytes, nothing else."""
    p = Path(path)
    name = p.name.lower()
    if not name.endswith(RELEASE_SUFFIXES) or not p.is_file():
        return False
    try:
        with open(p, "rb") as f:
            head = f.read(2)
    except OSError:
        return False
    return head == b"\x1f\x8b" if name.endswith((".tar.gz", ".tgz")) else head[:1] == b"\x80"


def _pickle_bytes(path: Path) -> tuple[bytes, str]:
    """(the pickle's bytes, its file name): the ``.pkl`` itself, or the single
    regular ``*.pkl`` member of a tarball, read into memory."""
    name = path.name.lower()
    if name.endswith(".pkl"):
        with open(path, "rb") as f:
            return f.read(), path.name
    try:
        with tarfile.open(path, "r:*") as tf:
            members = []
            for member in tf:   # counted while read: stops at the second member (a tarball of millions of
                members.append(member)   # empty members is refused in milliseconds, never listed in full)
                if len(members) > 1:
                    break
            if len(members) != 1:
                found = "none" if not members else "more than one: " + ", ".join(repr(m.name) for m in members)
                raise release_error(path, f"field 'tar': expected exactly one member (the suite's .pkl), found "
                                          f"{found}")
            m = members[0]
            pure = PurePosixPath(m.name)
            if m.name.startswith(("/", "\\")) or pure.is_absolute() or ".." in pure.parts or "\\" in m.name:
                raise release_error(path, f"field 'tar': member {m.name!r} has an absolute path or '..'; refused")
            if not m.isreg():
                kind = "a symbolic link" if m.issym() else "a hard link" if m.islnk() else \
                    "a directory" if m.isdir() else "not a regular file"
                raise release_error(path, f"field 'tar': member {m.name!r} is {kind}; refused (only one regular "
                                          ".pkl file is read)")
            if not m.name.lower().endswith(".pkl"):
                raise release_error(path, f"field 'tar': member {m.name!r} is not a .pkl file")
            if m.size > MAX_PICKLE_BYTES:
                raise release_error(path, f"field 'tar': member {m.name!r} is {m.size} bytes "
                                          f"(limit {MAX_PICKLE_BYTES})")
            f = tf.extractfile(m)
            data = f.read(MAX_PICKLE_BYTES + 1) if f is not None else b""
            return data, pure.name
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as e:
        raise release_error(path, f"field 'path': not a readable tar archive ({' '.join(str(e).split())})") from None


# ---------------------------------------------------------------- plain values
#: the most values (strings, numbers, list and dict entries) the reader materialises from one release suite,
#: a shared (memoised) list counted once per place it appears: a pickle whose memo shares one list 2^40 times is
#: refused here instead of being expanded (docs/SUITE_FORMAT.md, Limits)
MAX_RELEASE_VALUES = 20_000_000
#: the deepest nesting of lists / dicts in one value of a release suite
MAX_RELEASE_DEPTH = 100


class _Budget:
    """What is left of :data:`MAX_RELEASE_VALUES` for one suite; ``not_text``: a string :func:`_plain` made is not
    Unicode text (a lone surrogate: :mod:`beluga.core.text`), for the record to name where."""

    __slots__ = ("left", "not_text")

    def __init__(self, n: int = MAX_RELEASE_VALUES):
        self.left = n
        self.not_text = False


def _expanded_size(x, limit: int) -> int:
    """How many values :func:`_plain` would make of ``x`` (shared parts counted once per place, each distinct
    container visited once), stopping above ``limit``; a container inside itself counts as over it."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack = [(x, False)]
    while stack:
        v, done = stack.pop()
        kids = (list(v.values()) if isinstance(v, dict) else list(v.value if v.value is not None else [])
                if isinstance(v, ArrayRecord) else list(v) if isinstance(v, (list, tuple)) else None)
        if kids is None:
            continue
        if done:
            active.discard(id(v))
            sizes[id(v)] = 1 + sum(sizes.get(id(k), 1) for k in kids)
            if sizes[id(v)] > limit:
                return limit + 1
            continue
        if id(v) in active:
            raise MalformedPickle("a list that contains itself")
        if id(v) in sizes:
            continue
        active.add(id(v))
        stack.append((v, True))
        stack.extend((k, False) for k in kids if isinstance(k, (list, tuple, dict, ArrayRecord)))
    return sizes.get(id(x), 1)


def _plain(x, budget: _Budget | None = None, _depth: int = 0):
    """Stand-ins and numpy values -> JSON-ready Python values (tuples -> lists); every value counts against
    ``budget`` (a fresh one of :data:`MAX_RELEASE_VALUES` when None), nesting deeper than
    :data:`MAX_RELEASE_DEPTH` (a list that contains itself) is refused: MalformedPickle, one line."""
    if budget is None:
        budget = _Budget()
    if _depth == 0 and isinstance(x, (list, tuple, dict, ArrayRecord, np.ndarray)) \
            and _expanded_size(x, budget.left) > budget.left:
        raise MalformedPickle(f"more than {MAX_RELEASE_VALUES:,} values once shared references are expanded "
                              "(the limit of the release reader)")
    budget.left -= 1
    if budget.left < 0:
        raise MalformedPickle(f"more than {MAX_RELEASE_VALUES:,} values once shared references are expanded "
                              "(the limit of the release reader)")
    if _depth > MAX_RELEASE_DEPTH:
        raise MalformedPickle(f"a value nested deeper than {MAX_RELEASE_DEPTH} levels (or a list that contains "
                              "itself)")
    if isinstance(x, str):
        if not is_text(x):
            budget.not_text = True
        return str(x)
    if isinstance(x, (bool, int, float)) or x is None:
        return x
    if isinstance(x, np.generic):
        return _plain(x.item(), budget, _depth)
    d = _depth + 1
    if isinstance(x, (list, tuple)):
        return [_plain(v, budget, d) for v in x]
    if isinstance(x, ArrayRecord):
        return [_plain(v, budget, d) for v in (x.value if x.value is not None else [])]
    if isinstance(x, np.ndarray):
        if x.dtype != object:
            budget.left -= x.size
            if budget.left < 0:
                raise MalformedPickle(f"more than {MAX_RELEASE_VALUES:,} values once shared references are "
                                      "expanded (the limit of the release reader)")
        return [_plain(v, budget, d) for v in x]
    if isinstance(x, dict):
        out = {str(k): _plain(v, budget, d) for k, v in x.items()}
        if not all(is_text(k) for k in out):
            budget.not_text = True
        return out
    raise MalformedPickle(f"a value of type {type(x).__name__} where data was expected")


def _is_many(x) -> bool:
    """CheckList's ``iter_with_optional`` rule: a list / array holds several items."""
    return isinstance(x, (list, ArrayRecord, np.ndarray))


def _items(x) -> list:
    if isinstance(x, ArrayRecord):
        return list(x.value) if x.value is not None else []
    return list(x)


# ---------------------------------------------------------------- expectations
def _fn(x, what: str) -> FunctionRecord:
    if not isinstance(x, FunctionRecord):
        raise MalformedPickle(f"{what} is not a pickled function ({type(x).__name__})")
    return x


#: CheckList's own expectation code (``checklist/expect.py``), recognised by
#: (co_name, free variables, qualified name when nested code reveals it,
#: leading argument names, names the code must use)
CHECKLIST_CODE = {
    "testcase": ("expect", ("fn",), "Expect.testcase.<locals>.expect", ("self",),
                 {"iter_with_optional", "run_idxs"}),
    "single": ("expect_fn", ("fn",), "Expect.single.<locals>.expect_fn", ("xs", "preds", "confs", "label", "meta"),
               {"iter_with_optional"}),
    "pairwise": ("expect_fn", ("fn",), "Expect.pairwise.<locals>.expect_fn",
                 ("xs", "preds", "confs", "labels", "meta"), {"iter_with_optional"}),
    "wrap_slice": ("wrapped", ("agg_fn", "expect_fn", "slice_fn"), "Expect.wrap_slice.<locals>.wrapped",
                   ("args", "kwargs"), {"Expect", "aggregate"}),
    "slice_orig_fn": ("<lambda>", ("slice_fn",), None, ("orig", "pred", "args", "kwargs"), set()),
    "eq": ("ret_fn", ("val",), None, ("x", "pred", "conf", "label", "meta"), {"ndarray"}),
    "inv": ("expect", ("tolerance",), None, ("orig_pred", "pred", "orig_conf", "conf", "labels", "meta"),
            {"ndarray", "abs"}),
    "monotonic": ("expect", ("increasing", "keep_label", "tolerance"), None,
                  ("orig_pred", "pred", "orig_conf", "conf", "labels", "meta"), {"ndarray", "Exception"}),
}


def _is(fn: FunctionRecord, kind: str) -> bool:
    co_name, freevars, qualname, args, names = CHECKLIST_CODE[kind]
    c = fn.code
    return (c.from_checklist_expect and c.name == co_name and c.freevars == freevars
            and (qualname is None or c.qualname in (None, qualname))
            and c.varnames[:len(args)] == args and names <= set(c.names))


def describe_expectation(expect) -> dict:
    """``{expression, name, params, slice}`` of a test's pickled ``expect``
    closure tree, recognised by code identity (never run)."""
    fn = _fn(expect, "the expectation")
    if _is(fn, "wrap_slice"):
        agg = fn.cell("agg_fn")
        if not isinstance(agg, str):
            raise MalformedPickle("a slice aggregated with a custom function")
        inner_fn = _fn(fn.cell("expect_fn"), "the sliced expectation")
        if _is(inner_fn, "wrap_slice"):   # (refused before recursing: a closure may refer to itself)
            raise MalformedPickle("a slice of a sliced expectation")
        inner = describe_expectation(inner_fn)
        kind, slice_name = _describe_slice(_fn(fn.cell("slice_fn"), "the slice function"))
        inner["expression"] = f"Expect.{kind}({inner['expression']}, {slice_name}, agg_fn={agg!r})"
        inner["slice"] = {"kind": f"Expect.{kind}", "slice_fn": slice_name, "agg_fn": agg, "note": SLICE_NOTE}
        return inner
    if not _is(fn, "testcase"):
        raise MalformedPickle(f"unknown expectation wrapper {fn.qualname or fn.name!r} "
                         f"({fn.code.filename}; free variables {list(fn.code.freevars)})")
    f = _fn(fn.cell("fn"), "Expect.testcase's function")
    if _is(f, "single"):
        g = _fn(f.cell("fn"), "Expect.single's function")
        if _is(g, "eq"):
            val = _plain(g.cell("val"))
            return _expect(f"Expect.eq(val={val!r})", "Expect.eq", {"val": val})
        return _custom("single", g)
    if _is(f, "pairwise"):
        g = _fn(f.cell("fn"), "Expect.pairwise's function")
        if _is(g, "inv"):
            tol = _plain(g.cell("tolerance"))
            return _expect(f"Expect.inv(tolerance={tol!r})", "Expect.inv", {"tolerance": tol})
        if _is(g, "monotonic"):
            p = {"label": _plain(g.cell("keep_label")), "increasing": _plain(g.cell("increasing")),
                 "tolerance": _plain(g.cell("tolerance"))}
            return _expect(f"Expect.monotonic(label={p['label']!r}, increasing={p['increasing']!r}, "
                           f"tolerance={p['tolerance']!r})", "Expect.monotonic", p)
        return _custom("pairwise", g)
    return _custom("testcase", f)


def _custom(kind: str, g: FunctionRecord) -> dict:
    if g.code.from_checklist_expect:
        raise MalformedPickle(f"unknown CheckList expectation function {g.qualname or g.name!r} inside Expect.{kind}")
    return _expect(f"Expect.{kind}({g.code.name})", f"Expect.{kind}", {"fn": g.code.name})


def _expect(expression: str, name: str, params: dict) -> dict:
    return {"expression": expression, "name": name, "params": params, "slice": None}


def _describe_slice(slice_fn: FunctionRecord) -> tuple[str, str]:
    """(kind, the slice function's name) of ``wrap_slice``'s slice function:
    ``slice_pairwise`` = testcase(pairwise(f)); ``slice_orig`` = the same with f
    CheckList's ``lambda orig, pred, *args, **kwargs: slice_fn(orig, pred)``."""
    if not _is(slice_fn, "testcase"):
        raise MalformedPickle(f"unknown slice wrapper {slice_fn.qualname or slice_fn.name!r}")
    inner = _fn(slice_fn.cell("fn"), "the slice's function")
    if _is(inner, "pairwise"):
        f = _fn(inner.cell("fn"), "the slice's pairwise function")
        if _is(f, "slice_orig_fn"):
            return "slice_orig", _fn(f.cell("slice_fn"), "slice_orig's function").code.name
        return "slice_pairwise", f.code.name
    raise MalformedPickle("a slice other than Expect.slice_pairwise / Expect.slice_orig")


# ---------------------------------------------------------------- records
@dataclass
class ReleaseTest:
    """One test of a release suite, as unpickled (stand-ins and numpy values)."""

    index: int
    name: str
    test_type: str
    capability: str
    description: str
    data: list
    labels: object
    meta: object
    agg_fn: str
    expect: dict
    run_idxs: list | None


@dataclass
class ReleaseSuite:
    """A release suite read without executing it: ``suite`` name, its tests, and
    the raw ``TestSuiteRecord``."""

    suite: str
    path: Path
    tests: list[ReleaseTest]
    raw: TestSuiteRecord

    def records(self) -> Iterator[dict]:
        budget = _Budget()
        for t in self.tests:
            yield from _test_records(self.suite, t, self.path, budget)


def _suite_name(path: Path, member: str, given: str | None, tests: dict) -> str:
    if given is not None:
        if given not in SUITES:
            raise release_error(path, f"field 'suite': unknown CheckList suite {given!r} (known: {', '.join(SUITES)})")
        return given
    for name in (member, path.name):
        m = re.match(r"(sentiment|qqp|squad)(_suite)?\b", name.lower())
        if m:
            return m.group(1)
    pairs = strings = False
    for t in tests.values():
        data = t.get("data") if isinstance(t, TestRecord) else None
        if not data:
            continue
        first = _items(data)[0]
        one = _items(first)[0] if _is_many(first) else first
        if isinstance(one, tuple) and len(one) == 2:
            pairs = True
        labels = t.get("labels")
        if isinstance(labels, str) or (_is_many(labels) and any(
                isinstance(v, str) or (_is_many(v) and any(isinstance(w, str) for w in _items(v)))
                for v in _items(labels))):
            strings = True
    return ("squad" if strings else "qqp") if pairs else "sentiment"


def load_release_suite(path: str | os.PathLike, suite: str | None = None) -> ReleaseSuite:
    """Read a release tarball (or its ``.pkl``) without executing it."""
    path = Path(path)
    if not path.exists():
        raise release_error(path, "field 'path': file does not exist")
    if not path.name.lower().endswith(RELEASE_SUFFIXES):
        raise release_error(path, "field 'path': not a .tar.gz, .tgz or .pkl file")
    data, member = _pickle_bytes(path)
    obj = unpickle_release(data, path)
    if not isinstance(obj, TestSuiteRecord) or not hasattr(obj, "state"):
        raise release_error(path, f"field 'pickle': holds a {getattr(obj, 'checklist_class', type(obj).__name__)}, "
                                  "not a checklist TestSuite")
    tests = obj.get("tests")
    info = obj.get("info")
    if not isinstance(tests, dict) or not tests:
        raise release_error(path, "field 'tests': the suite has no tests")
    info = info if isinstance(info, dict) else {}
    name = _suite_name(path, member, suite, tests)
    out = []
    for i, (func, t) in enumerate(tests.items()):
        func = str(func)
        try:
            out.append(_read_test(i, func, t, info.get(func)))
        except MalformedPickle as e:
            raise release_error(path, f"field 'tests': {e}", func) from None
        bad = not_text({"functionality": func, "capability": out[-1].capability,
                        "description": out[-1].description, "expect": out[-1].expect})
        if bad:
            raise release_error(path, f"field '{bad}': {NOT_TEXT}", func)
    return ReleaseSuite(name, path, out, obj)


def _read_test(i: int, func: str, t, info) -> ReleaseTest:
    if not isinstance(t, TestRecord) or not hasattr(t, "state"):
        raise MalformedPickle(f"holds a {type(t).__name__}, not an MFT / INV / DIR")
    st = t.state
    for key in ("data", "expect", "agg_fn"):
        if key not in st:
            raise MalformedPickle(f"the test has no {key!r}")
    agg = st["agg_fn"]
    if agg not in ("all", "all_except_first"):
        raise MalformedPickle(f"agg_fn {agg if isinstance(agg, str) else type(agg).__name__!r} is not 'all' or "
                         "'all_except_first' (a custom aggregation function is not read)")
    info = info if isinstance(info, dict) else {}
    if info.get("type", t.test_type) != t.test_type:
        raise MalformedPickle(f"suite info says {reprlib.repr(info.get('type'))} for a {t.test_type}")
    data = st["data"]
    if not _is_many(data):
        raise MalformedPickle("data is not a list of test cases")
    run = st.get("run_idxs")
    run_idxs = None if run is None else _run_idxs(run, len(_items(data)))
    return ReleaseTest(index=i, name=func, test_type=t.test_type,
                       capability=_plain(info.get("capability", st.get("capability") or "")),
                       description=_plain(info.get("description", "")), data=_items(data),
                       labels=st.get("labels"), meta=st.get("meta"), agg_fn=agg,
                       expect=describe_expectation(st["expect"]), run_idxs=run_idxs)


def _run_idxs(run, n_cases: int) -> list[int]:
    """A test's ``run_idxs`` (the cases CheckList runs) checked: a list of distinct whole numbers, each a
    case index (0 <= i < the test's cases); anything else is a MalformedPickle naming the item."""
    if not _is_many(run):
        raise MalformedPickle(f"run_idxs ({type(run).__name__}) is not a list of case indices")
    out, seen = [], set()
    for k, x in enumerate(_items(run)):
        if isinstance(x, (bool, np.bool_)):
            raise MalformedPickle(f"run_idxs[{k}]: {x!r} is not a case index")
        try:
            i = operator.index(x)
        except TypeError:
            shown = f"{x!r:.60}" if isinstance(x, (str, float)) else f"a {type(x).__name__}"
            raise MalformedPickle(f"run_idxs[{k}]: {shown} is not a case index (a whole number)") from None
        if not 0 <= i < n_cases:
            raise MalformedPickle(f"run_idxs[{k}]: {i} is outside the test's {n_cases} cases")
        if i in seen:
            raise MalformedPickle(f"run_idxs[{k}]: case {i} is listed twice")
        seen.add(i)
        out.append(i)
    return out


def _test_records(suite: str, t: ReleaseTest, path, budget: _Budget | None = None) -> Iterator[dict]:
    budget = _Budget() if budget is None else budget
    n_cases = len(t.data)
    labels, meta = t.labels, t.meta
    if _is_many(labels):
        labels = _items(labels)
        if len(labels) != n_cases:
            raise release_error(path, f"field 'labels': {len(labels)} labels for {n_cases} test cases", t.name)
    if _is_many(meta):
        meta = _items(meta)
        if len(meta) != n_cases:
            raise release_error(path, f"field 'meta': {len(meta)} entries for {n_cases} test cases", t.name)
    pos = {} if t.run_idxs is None else {c: p for p, c in enumerate(t.run_idxs)}
    e = t.expect
    try:
        for j, case in enumerate(t.data):
            inputs = [_plain(x, budget) for x in _items(case)] if _is_many(case) else [_plain(case, budget)]
            n = len(inputs)
            if labels is None:
                lab, labs, scope = None, None, None
            elif isinstance(labels, list):
                lc = labels[j]
                if _is_many(lc):
                    labs, scope = [_plain(x, budget) for x in _items(lc)], "case_per_input"
                    lab = labs[0] if labs and all(x == labs[0] for x in labs) else None
                else:
                    lab = _plain(lc, budget)
                    labs, scope = [lab] * n, "case"
            else:
                lab = _plain(labels, budget)
                labs, scope = [lab] * n, "test"
            m = None if meta is None else _plain(meta[j] if isinstance(meta, list) else meta, budget)
            if budget.not_text:   # a lone surrogate in the case: its field, named with the case
                bad = not_text({"inputs": inputs, "labels": labs, "meta": m})
                raise release_error(path, f"case_id={f'{suite}-{t.index:02d}-{j:05d}'!r}: field '{bad}': {NOT_TEXT}",
                                    t.name)
            yield {"suite": suite, "case_id": f"{suite}-{t.index:02d}-{j:05d}", "test_index": t.index,
                   "case_index": j, "functionality": t.name, "capability": t.capability, "test_type": t.test_type,
                   "description": t.description, "inputs": inputs, "n_inputs": n, "label": lab, "labels": labs,
                   "label_scope": scope, "meta": m, "agg_fn": t.agg_fn,
                   "expect": {"expression": e["expression"], "name": e["name"], "params": dict(e["params"]),
                              "slice": None if e["slice"] is None else dict(e["slice"])},
                   "in_run_subset": t.run_idxs is None or j in pos, "run_position": pos.get(j)}
    except MalformedPickle as err:
        raise release_error(path, f"field 'data': {err}", t.name) from None


def read_release_records(path: str | os.PathLike, suite: str | None = None) -> Iterator[dict]:
    """The JSONL-export records (``RECORD_FIELDS``, one dict per test case, in
    suite order) of a CheckList release tarball / ``.pkl``, read without
    executing anything. The file is read and checked now; records are built
    as the iterator is consumed. ``suite``: the suite name when the file name
    and content cannot tell."""
    return load_release_suite(path, suite).records()


def write_checklist_jsonl(records: Iterable[dict], out_path: str | os.PathLike) -> int:
    """Write records as CheckList export JSON lines (``json.dumps`` with
    ``ensure_ascii=False``, as the export; one object per line), gzip-compressed when the name ends in ``.gz``
    (reproducible: no time stamp), atomically (a temporary file in the same
    folder, then ``os.replace``). Returns the number of lines."""
    from beluga.core.io import atomic_path

    out = Path(out_path)
    n = 0
    with atomic_path(out) as tmp:
        with open(tmp, "wb") as raw:
            stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) \
                if out.name.lower().endswith(".gz") else raw
            try:
                with io.TextIOWrapper(stream, encoding="utf-8", newline="\n") as text:
                    for rec in records:
                        text.write(json.dumps(rec, ensure_ascii=False) + "\n")
                        n += 1
            finally:
                if stream is not raw:
                    stream.close()
    return n
