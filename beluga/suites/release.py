"""Read CheckList's published release suites (``release_suites/{sentiment,qqp,
squad}_suite.tar.gz`` of the CheckList repository) **without executing them**,
and rebuild from them the JSONL export that ``../shared/data/checklist/
{suite}.jsonl.gz`` holds (one record per test case; ../shared/data/README.md,
"Fields of a test case").

Each tarball holds one ``*_suite.pkl``: a dill pickle (protocol 3, Python 3.7)
of a ``checklist.test_suite.TestSuite`` whose tests (``checklist.test_types.
MFT/INV/DIR``) hold the inputs, labels, meta, ``agg_fn``, ``run_idxs`` and the
expectation as dill-pickled closures. A real ``pickle.load`` would import
CheckList and dill and run whatever callables the stream names; this module
never does.

How the pickle is read
----------------------
``_ReleaseUnpickler`` (a ``pickle.Unpickler`` whose ``find_class`` is
overridden) resolves a global only through ``ALLOWED_GLOBALS``: exactly the 16
(module, name) pairs the three release pickles reference, each mapped to an
inert stand-in defined here. Nothing from ``checklist``, ``dill``, ``munch``
or the pickle is imported or run:

- ``checklist.test_suite.TestSuite``, ``checklist.test_types.MFT/INV/DIR`` and
  ``munch.Munch`` become plain record classes that store the state the pickle
  gives them (``__setstate__`` / dict items);
- ``collections.OrderedDict`` / ``defaultdict`` become dict subclasses (the
  defaultdict's factory is kept as a record, never called);
- ``checklist.expect.Expect`` / ``iter_with_optional`` and ``numpy.ndarray``
  become named references (``GlobalRef``) that refuse to be called;
- dill's ``_create_function``, ``_create_cell``, ``_load_type``,
  ``_import_module`` and ``_get_attr`` become stateless builders (``_Builder``;
  the references, too, take no state, so BUILD cannot re-point them) that
  build records: ``FunctionRecord(name,
  qualname, code, closure_values, defaults, globals_names, ...)``,
  ``CellRecord``, ``TypeRef``, ``ModuleRef``, ``AttrRef`` -- never a code
  object or a function. Their arguments are allow-listed too: the type names
  ``ALLOWED_TYPES`` (only ``CodeType`` may be "called", which builds a
  ``CodeRecord`` from Python 3.7's 15 code fields), the modules
  ``ALLOWED_MODULES`` and the attributes ``ALLOWED_ATTRS``;
- numpy arrays and scalars are rebuilt as real numpy values, but only from a
  validated plain dtype (``b1``, ``i8``, ``f8``, ``U<n>`` ...; no structured or
  object-with-callable dtypes) and raw bytes with ``np.frombuffer``: the
  allowed attributes ``numpy.core._multiarray_umath._reconstruct`` and
  ``scalar`` map to those builders, never to numpy's own functions.

Any other global (``os.system``, ``builtins.eval``, ``subprocess.Popen`` ...),
module, attribute, type, or a call of something that is only a reference,
stops the load with one ``SuiteError`` line naming it (``module.name``), the
test (functionality) it belongs to when a scan of the opcodes up to it can
tell, and the file -- before anything the pickle names could run. A tarball
must hold exactly one regular ``*.pkl`` member with a relative name without
``..``; it is read into memory, never extracted.

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
import os
import pickle
import pickletools
import re
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np

from beluga.errors import SuiteError

SUITES = ("sentiment", "qqp", "squad")
RELEASE_SUFFIXES = (".tar.gz", ".tgz", ".pkl")
#: the tar member may not be larger than this (a decompression bomb is refused)
MAX_PICKLE_BYTES = 1 << 30
SLICE_NOTE = "cases whose slice result (aggregated with agg_fn) is not True are excluded (expect result None)"
#: the fields of one JSONL export record, in the export's order
RECORD_FIELDS = ("suite", "case_id", "test_index", "case_index", "functionality", "capability", "test_type",
                 "description", "inputs", "n_inputs", "label", "labels", "label_scope", "meta", "agg_fn", "expect",
                 "in_run_subset", "run_position")


class _Refused(Exception):
    """A global / module / attribute / call outside the allow-lists (never executed)."""

    def __init__(self, what: str, why: str = "not in the allow-list of the CheckList release reader"):
        super().__init__(what)
        self.what, self.why = what, why


class _Malformed(Exception):
    """An allowed stand-in got arguments it does not accept."""


# ---------------------------------------------------------------- inert stand-ins
class _Ref:
    """Base of the reference stand-ins: slots only and no state, so the
    pickle's BUILD cannot change them (they are shared between loads)."""

    __slots__ = ()

    def __setstate__(self, state):
        raise _Malformed(f"{self!r} takes no state")

    def __setattr__(self, name, value):
        if hasattr(self, name):
            raise _Malformed(f"{self!r} is read-only")
        object.__setattr__(self, name, value)


class GlobalRef(_Ref):
    """A named global the pickle refers to but never calls (``checklist.expect.Expect``,
    ``checklist.expect.iter_with_optional``, ``numpy.ndarray``); calling it is refused."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):
        raise _Refused(f"{self.module}.{self.name}", "a reference that the reader never calls")

    def __repr__(self):
        return f"GlobalRef({self.module}.{self.name})"


class ModuleRef(_Ref):
    """dill ``_import_module(name)``: a module name, nothing imported."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise _Refused(self.name, "a module reference that the reader never calls")

    def __repr__(self):
        return f"ModuleRef({self.name})"


class TypeRef(_Ref):
    """dill ``_load_type(name)``: a builtin type's name; only ``CodeType`` is
    "called", and that builds a :class:`CodeRecord`."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args, **kwargs):
        if self.name == "CodeType" and not kwargs:
            return CodeRecord.from_args(args)
        raise _Refused(f"types.{self.name}", "a type reference that the reader never calls")

    def __repr__(self):
        return f"TypeRef({self.name})"


class AttrRef(_Ref):
    """dill ``_get_attr(owner, name)``: an attribute of a module; only numpy's
    ``_reconstruct`` / ``scalar`` may be called, and they map to the reader's
    own validated builders."""

    __slots__ = ("owner", "name")

    def __init__(self, owner: str, name: str):
        self.owner, self.name = owner, name

    def __call__(self, *args, **kwargs):
        builder = _ATTR_BUILDERS.get((self.owner, self.name))
        if builder is None or kwargs:
            raise _Refused(f"{self.owner}.{self.name}", "an attribute reference that the reader never calls")
        return builder(*args)

    def __repr__(self):
        return f"AttrRef({self.owner}.{self.name})"


@dataclass(eq=False)
class CodeRecord:
    """The fields of a pickled code object in Python 3.7's layout
    (``CodeType(argcount, kwonlyargcount, nlocals, stacksize, flags, code,
    consts, names, varnames, filename, name, firstlineno, lnotab, freevars,
    cellvars)``) -- data only, never compiled or run."""

    argcount: int
    kwonlyargcount: int
    nlocals: int
    stacksize: int
    flags: int
    code: bytes
    consts: tuple
    names: tuple
    varnames: tuple
    filename: str
    name: str
    firstlineno: int
    lnotab: bytes
    freevars: tuple
    cellvars: tuple

    @classmethod
    def from_args(cls, args: tuple) -> CodeRecord:
        if len(args) != 15:
            raise _Malformed(f"a code object with {len(args)} fields (Python 3.7's layout has 15)")
        rec = cls(*args)
        for f in ("names", "varnames", "freevars", "cellvars"):
            v = getattr(rec, f)
            if not isinstance(v, tuple) or not all(isinstance(x, str) for x in v):
                raise _Malformed(f"code field {f} is not a tuple of names")
        if not isinstance(rec.name, str) or not isinstance(rec.filename, str) or not isinstance(rec.consts, tuple):
            raise _Malformed("code name / filename / consts of the wrong type")
        return rec

    def nested_qualnames(self) -> list[str]:
        """Qualified names of the functions / comprehensions defined in this code
        (the string constants that follow a nested code constant)."""
        out = []
        for a, b in zip(self.consts, self.consts[1:]):
            if isinstance(a, CodeRecord) and isinstance(b, str):
                out.append(b)
        return out

    @property
    def qualname(self) -> str | None:
        """This code's own qualified name when a nested definition reveals it
        (``X.<locals>.inner`` -> ``X``), else None."""
        for q in self.nested_qualnames():
            head, sep, _ = q.rpartition(".<locals>.")
            if sep and head.rsplit(".", 1)[-1] == self.name:
                return head
        return None

    @property
    def from_checklist_expect(self) -> bool:
        return self.filename.replace("\\", "/").endswith("checklist/expect.py")


@dataclass(eq=False)
class CellRecord:
    """dill ``_create_cell(value)``: a closure cell's value."""

    value: object = None


@dataclass(eq=False)
class FunctionRecord:
    """dill ``_create_function(code, globals, name, defaults, closure, dict,
    kwdefaults)``: a record of a pickled function, never a function."""

    name: str
    qualname: str | None
    code: CodeRecord
    closure_values: dict
    defaults: tuple | None
    globals_names: tuple
    kwdefaults: dict | None = None
    attrs: dict = field(default_factory=dict)

    def __call__(self, *args, **kwargs):
        raise _Refused(f"pickled function {self.name}", "a pickled function that the reader never calls")

    def cell(self, name: str):
        if name not in self.closure_values:
            raise _Malformed(f"function {self.name} has no closure variable {name!r}")
        return self.closure_values[name]


class _Instance:
    """A stand-in for a pickled class instance: keeps the state it is given."""

    checklist_class = "object"

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2 and (state[0] is None or isinstance(state[0], dict)):
            state = {**(state[0] or {}), **(state[1] or {})}
        if not isinstance(state, dict):
            raise _Malformed(f"{self.checklist_class} state is not a dict")
        self.state = state

    def get(self, key, default=None):
        return getattr(self, "state", {}).get(key, default)


class TestSuiteRecord(_Instance):
    """``checklist.test_suite.TestSuite``."""

    __test__ = False  # not a pytest class
    checklist_class = "TestSuite"


class TestRecord(_Instance):
    """``checklist.test_types.MFT / INV / DIR`` (``test_type``)."""

    __test__ = False
    test_type = "?"


class MFTRecord(TestRecord):
    checklist_class = test_type = "MFT"


class INVRecord(TestRecord):
    checklist_class = test_type = "INV"


class DIRRecord(TestRecord):
    checklist_class = test_type = "DIR"


class MunchRecord(dict):
    """``munch.Munch`` (a dict; stored results of the squad suite)."""

    def __setstate__(self, state):
        if isinstance(state, dict):
            self.update(state)


class OrderedDictRecord(dict):
    """``collections.OrderedDict`` (dicts keep their order)."""

    def __setstate__(self, state):
        if isinstance(state, dict):
            self.update(state)


class DefaultDictRecord(dict):
    """``collections.defaultdict``: the factory is kept as a record and never called."""

    def __init__(self, default_factory=None, *args):
        super().__init__()
        self.default_factory = default_factory

    def __setstate__(self, state):
        if isinstance(state, dict):
            self.update(state)


_DTYPE_NAME = re.compile(r"(b1|[iu][1248]|f[248]|c(8|16)|[US][0-9]{1,7}|O8|O4)")


class DTypeRecord:
    """``numpy.dtype(name, align, copy)`` + its pickled state, resolved to a
    real ``np.dtype`` only for plain validated names."""

    def __init__(self, name=None, align=0, copy=1, *rest):
        if not isinstance(name, str) or not _DTYPE_NAME.fullmatch(name) or rest:
            raise _Malformed(f"numpy dtype {name!r} is not a plain dtype the reader accepts")
        self.name, self.order = name, "|"

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 8 and state[0] == 3 and state[1] in ("<", ">", "|", "=")
                and state[2] is None and state[3] is None and state[4] is None):
            raise _Malformed(f"numpy dtype {self.name} state {str(state)[:80]} (structured or unknown layout)")
        self.order = state[1]

    @property
    def is_object(self) -> bool:
        return self.name.startswith("O")

    def resolve(self) -> np.dtype:
        dt = np.dtype(self.name)
        if self.order in "<>" and dt.itemsize > 1 and not self.is_object:
            dt = dt.newbyteorder(self.order)
        return dt


class ArrayRecord:
    """``numpy.core.multiarray._reconstruct(ndarray, (0,), b'b')`` + its state
    ``(1, shape, dtype, is_fortran, data)``: ``value`` is a real numpy array
    built with ``np.frombuffer`` (a list for object arrays)."""

    def __init__(self, cls=None, shape=None, typecode=None, *rest):
        if not (isinstance(cls, GlobalRef) and (cls.module, cls.name) == ("numpy", "ndarray")) or rest:
            raise _Malformed("numpy _reconstruct of something other than numpy.ndarray")
        self.value = None

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 5 and state[0] == 1):
            raise _Malformed("numpy array state of an unknown layout")
        _, shape, dtype, fortran, raw = state
        if not (isinstance(shape, tuple) and all(isinstance(s, int) and s >= 0 for s in shape)
                and isinstance(dtype, DTypeRecord)):
            raise _Malformed("numpy array shape / dtype of the wrong type")
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if dtype.is_object:
            if not isinstance(raw, list) or len(raw) != n:
                raise _Malformed("numpy object array data is not a list of the array's size")
            self.value = raw if len(shape) == 1 else np.array(raw, dtype=object).reshape(shape)
            return
        dt = dtype.resolve()
        if not isinstance(raw, (bytes, bytearray)) or len(raw) != n * dt.itemsize:
            raise _Malformed(f"numpy array data of {len(raw) if isinstance(raw, bytes) else '?'} bytes for "
                             f"shape {shape} and dtype {dtype.name}")
        self.value = np.frombuffer(raw, dtype=dt).reshape(shape, order="F" if fortran else "C")

    def tolist(self):
        v = self.value
        return v.tolist() if isinstance(v, np.ndarray) else list(v or [])


def _numpy_scalar(dtype, raw=None):
    """``numpy.core.multiarray.scalar(dtype, bytes)`` -> a numpy scalar via ``np.frombuffer``."""
    if not isinstance(dtype, DTypeRecord):
        raise _Malformed("numpy scalar without a plain dtype")
    if dtype.is_object:
        return raw
    dt = dtype.resolve()
    if not isinstance(raw, (bytes, bytearray)) or len(raw) != dt.itemsize:
        raise _Malformed(f"numpy scalar of dtype {dtype.name} with {len(raw) if isinstance(raw, bytes) else '?'} "
                         "bytes")
    return np.frombuffer(raw, dtype=dt)[0]


_ATTR_BUILDERS = {
    ("numpy.core._multiarray_umath", "_reconstruct"): ArrayRecord,
    ("numpy.core._multiarray_umath", "scalar"): _numpy_scalar,
}
#: dill ``_import_module`` names the release pickles use (as function globals)
ALLOWED_MODULES = frozenset({"itertools", "numpy", "numpy.core._multiarray_umath", "re"})
#: dill ``_load_type`` names (function globals; ``CodeType`` builds a CodeRecord)
ALLOWED_TYPES = frozenset({"ClassType", "CodeType", "Exception", "list", "type", "zip"})
#: dill ``_get_attr(owner, name)`` pairs; only numpy's two builders may be called
ALLOWED_ATTRS = frozenset({("builtins", "len"), *_ATTR_BUILDERS})


class _Builder(_Ref):
    """An allowed dill helper as the unpickler sees it: calling it runs the
    reader's own record builder; it has no attributes the pickle could change."""

    __slots__ = ("name", "_build")

    def __init__(self, name: str, build):
        self.name, self._build = name, build

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise _Malformed(f"dill {self.name} with keyword arguments")
        return self._build(*args)

    def __repr__(self):
        return f"dill._dill.{self.name} (record builder)"


def _import_module(name=None, *rest):
    if not isinstance(name, str) or rest:
        raise _Malformed("dill _import_module without a module name")
    if name not in ALLOWED_MODULES:
        raise _Refused(name)
    return ModuleRef(name)


def _load_type(name=None, *rest):
    if not isinstance(name, str) or rest:
        raise _Malformed("dill _load_type without a type name")
    if name not in ALLOWED_TYPES:
        raise _Refused(f"types.{name}")
    return TypeRef(name)


def _get_attr(owner=None, name=None, *rest):
    owner_name = owner.name if isinstance(owner, ModuleRef) else owner
    if not isinstance(owner_name, str) or not isinstance(name, str) or rest:
        raise _Malformed("dill _get_attr of something other than a module attribute")
    if (owner_name, name) not in ALLOWED_ATTRS:
        raise _Refused(f"{owner_name}.{name}")
    return AttrRef(owner_name, name)


def _create_cell(value=None, *rest):
    if rest:
        raise _Malformed("dill _create_cell with more than one value")
    return CellRecord(value)


def _create_function(code=None, fglobals=None, name=None, defaults=None, closure=None, fdict=None,
                     kwdefaults=None, *rest):
    if not isinstance(code, CodeRecord) or not isinstance(fglobals, dict) or rest:
        raise _Malformed("dill _create_function without a code record and globals")
    cells = tuple(closure or ())
    if not all(isinstance(c, CellRecord) for c in cells) or len(cells) != len(code.freevars):
        raise _Malformed(f"function {code.name}: closure does not match its free variables")
    return FunctionRecord(name=name if isinstance(name, str) else code.name, qualname=code.qualname, code=code,
                          closure_values={v: c.value for v, c in zip(code.freevars, cells)},
                          defaults=defaults if isinstance(defaults, tuple) else None,
                          globals_names=tuple(sorted(str(k) for k in fglobals)),
                          kwdefaults=kwdefaults if isinstance(kwdefaults, dict) else None,
                          attrs=fdict if isinstance(fdict, dict) else {})


#: exactly the (module, name) pairs the three release pickles reference, each
#: mapped to its inert stand-in; ``find_class`` refuses every other pair
ALLOWED_GLOBALS = {
    ("checklist.test_suite", "TestSuite"): TestSuiteRecord,
    ("checklist.test_types", "MFT"): MFTRecord,
    ("checklist.test_types", "INV"): INVRecord,
    ("checklist.test_types", "DIR"): DIRRecord,
    ("checklist.expect", "Expect"): GlobalRef("checklist.expect", "Expect"),
    ("checklist.expect", "iter_with_optional"): GlobalRef("checklist.expect", "iter_with_optional"),
    ("collections", "OrderedDict"): OrderedDictRecord,
    ("collections", "defaultdict"): DefaultDictRecord,
    ("dill._dill", "_create_function"): _Builder("_create_function", _create_function),
    ("dill._dill", "_create_cell"): _Builder("_create_cell", _create_cell),
    ("dill._dill", "_load_type"): _Builder("_load_type", _load_type),
    ("dill._dill", "_import_module"): _Builder("_import_module", _import_module),
    ("dill._dill", "_get_attr"): _Builder("_get_attr", _get_attr),
    ("munch", "Munch"): MunchRecord,
    ("numpy", "ndarray"): GlobalRef("numpy", "ndarray"),
    ("numpy", "dtype"): DTypeRecord,
}


class _ReleaseUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves globals only through ``ALLOWED_GLOBALS``."""

    def find_class(self, module, name):
        target = ALLOWED_GLOBALS.get((module, name))
        if target is None:
            raise _Refused(f"{module}.{name}")
        return target

    def persistent_load(self, pid):
        raise _Refused(f"persistent id {str(pid)[:40]!r}")


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


def _fail(path, msg: str, functionality: str | None = None) -> SuiteError:
    where = f" (test {functionality!r})" if functionality is not None else ""
    return SuiteError(f"CheckList release suite {path}{where}: {msg}")


def _pickle_bytes(path: Path) -> tuple[bytes, str]:
    """(the pickle's bytes, its file name): the ``.pkl`` itself, or the single
    regular ``*.pkl`` member of a tarball, read into memory."""
    name = path.name.lower()
    if name.endswith(".pkl"):
        with open(path, "rb") as f:
            return f.read(), path.name
    try:
        with tarfile.open(path, "r:*") as tf:
            members = tf.getmembers()
            if len(members) != 1:
                raise _fail(path, f"field 'tar': expected exactly one member (the suite's .pkl), found "
                                  f"{len(members)}: {', '.join(repr(m.name) for m in members[:5])}")
            m = members[0]
            pure = PurePosixPath(m.name)
            if m.name.startswith(("/", "\\")) or pure.is_absolute() or ".." in pure.parts or "\\" in m.name:
                raise _fail(path, f"field 'tar': member {m.name!r} has an absolute path or '..'; refused")
            if not m.isreg():
                kind = "a symbolic link" if m.issym() else "a hard link" if m.islnk() else \
                    "a directory" if m.isdir() else "not a regular file"
                raise _fail(path, f"field 'tar': member {m.name!r} is {kind}; refused (only one regular .pkl file "
                                  "is read)")
            if not m.name.lower().endswith(".pkl"):
                raise _fail(path, f"field 'tar': member {m.name!r} is not a .pkl file")
            if m.size > MAX_PICKLE_BYTES:
                raise _fail(path, f"field 'tar': member {m.name!r} is {m.size} bytes (limit {MAX_PICKLE_BYTES})")
            f = tf.extractfile(m)
            data = f.read(MAX_PICKLE_BYTES + 1) if f is not None else b""
            return data, pure.name
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as e:
        raise _fail(path, f"field 'path': not a readable tar archive ({' '.join(str(e).split())})") from None


def _locate(data: bytes, what: str) -> str | None:
    """The test (functionality) in whose part of the stream a refused name
    first appears, by scanning the opcodes (``pickletools.genops``: nothing is
    built or run); None when the scan cannot tell."""
    module, _, name = what.rpartition(".")
    current = None
    last = [None, None]  # the last two strings pushed
    test_memo: set[int] = set()
    after_test_global = False
    try:
        for op, arg, _pos in pickletools.genops(data):
            kind = op.name
            if kind in ("GLOBAL", "INST"):
                mod, _, nm = str(arg).partition(" ")
                if (mod, nm) == (module, name) or f"{mod}.{nm}" == what:
                    return current
                if mod == "checklist.test_types":
                    current, after_test_global = last[1], True
                    continue
            elif kind == "STACK_GLOBAL":
                if (last[0], last[1]) == (module, name):
                    return current
                if last[0] == "checklist.test_types":
                    after_test_global = True
                    continue
            elif kind in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
                if after_test_global and isinstance(arg, int):
                    test_memo.add(arg)
            elif kind in ("BINGET", "LONG_BINGET", "GET"):
                if arg in test_memo:
                    current = last[1]
            elif isinstance(arg, str) and "UNICODE" in kind or kind in ("STRING", "BINSTRING", "SHORT_BINSTRING"):
                s = str(arg)
                if s in (what, name) and (not module or last[1] == module or s == what):
                    return current
                last = [last[1], s]
            after_test_global = False
    except Exception:  # noqa: BLE001 -- a malformed stream: the location is unknown
        return None
    return None


def _unpickle(data: bytes, path: Path) -> object:
    try:
        return _ReleaseUnpickler(io.BytesIO(data)).load()
    except _Refused as e:
        test = _locate(data, e.what)
        raise _fail(path, f"field 'pickle': refused {e.what} ({e.why}); nothing was executed",
                    test) from None
    except _Malformed as e:
        raise _fail(path, f"field 'pickle': {e}") from None
    except RecursionError:
        raise _fail(path, "field 'pickle': nested too deeply") from None
    except Exception as e:  # noqa: BLE001 -- any malformed stream is one line
        reason = " ".join(f"{type(e).__name__}: {e}".split())[:200]
        raise _fail(path, f"field 'pickle': not a readable CheckList suite pickle ({reason})") from None


# ---------------------------------------------------------------- plain values
def _plain(x):
    """Stand-ins and numpy values -> JSON-ready Python values (tuples -> lists)."""
    if isinstance(x, str):
        return str(x)
    if isinstance(x, (bool, int, float)) or x is None:
        return x
    if isinstance(x, np.generic):
        return _plain(x.item())
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, ArrayRecord):
        return [_plain(v) for v in (x.value if x.value is not None else [])]
    if isinstance(x, np.ndarray):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    raise _Malformed(f"a value of type {type(x).__name__} where data was expected")


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
        raise _Malformed(f"{what} is not a pickled function ({type(x).__name__})")
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


def _py_repr(v) -> str:
    return repr(_plain(v))


def describe_expectation(expect) -> dict:
    """``{expression, name, params, slice}`` of a test's pickled ``expect``
    closure tree, recognised by code identity (never run)."""
    fn = _fn(expect, "the expectation")
    if _is(fn, "wrap_slice"):
        agg = fn.cell("agg_fn")
        if not isinstance(agg, str):
            raise _Malformed("a slice aggregated with a custom function")
        inner = describe_expectation(fn.cell("expect_fn"))
        if inner["slice"] is not None:
            raise _Malformed("a slice of a sliced expectation")
        kind, slice_name = _describe_slice(_fn(fn.cell("slice_fn"), "the slice function"))
        inner["expression"] = f"Expect.{kind}({inner['expression']}, {slice_name}, agg_fn={agg!r})"
        inner["slice"] = {"kind": f"Expect.{kind}", "slice_fn": slice_name, "agg_fn": agg, "note": SLICE_NOTE}
        return inner
    if not _is(fn, "testcase"):
        raise _Malformed(f"unknown expectation wrapper {fn.qualname or fn.name!r} "
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
        raise _Malformed(f"unknown CheckList expectation function {g.qualname or g.name!r} inside Expect.{kind}")
    return _expect(f"Expect.{kind}({g.code.name})", f"Expect.{kind}", {"fn": g.code.name})


def _expect(expression: str, name: str, params: dict) -> dict:
    return {"expression": expression, "name": name, "params": params, "slice": None}


def _describe_slice(slice_fn: FunctionRecord) -> tuple[str, str]:
    """(kind, the slice function's name) of ``wrap_slice``'s slice function:
    ``slice_pairwise`` = testcase(pairwise(f)); ``slice_orig`` = the same with f
    CheckList's ``lambda orig, pred, *args, **kwargs: slice_fn(orig, pred)``."""
    if not _is(slice_fn, "testcase"):
        raise _Malformed(f"unknown slice wrapper {slice_fn.qualname or slice_fn.name!r}")
    inner = _fn(slice_fn.cell("fn"), "the slice's function")
    if _is(inner, "pairwise"):
        f = _fn(inner.cell("fn"), "the slice's pairwise function")
        if _is(f, "slice_orig_fn"):
            return "slice_orig", _fn(f.cell("slice_fn"), "slice_orig's function").code.name
        return "slice_pairwise", f.code.name
    raise _Malformed("a slice other than Expect.slice_pairwise / Expect.slice_orig")


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
        for t in self.tests:
            yield from _test_records(self.suite, t, self.path)


def _suite_name(path: Path, member: str, given: str | None, tests: dict) -> str:
    if given is not None:
        if given not in SUITES:
            raise _fail(path, f"field 'suite': unknown CheckList suite {given!r} (known: {', '.join(SUITES)})")
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
        raise _fail(path, "field 'path': file does not exist")
    if not path.name.lower().endswith(RELEASE_SUFFIXES):
        raise _fail(path, "field 'path': not a .tar.gz, .tgz or .pkl file")
    data, member = _pickle_bytes(path)
    obj = _unpickle(data, path)
    if not isinstance(obj, TestSuiteRecord) or not hasattr(obj, "state"):
        raise _fail(path, f"field 'pickle': holds a {getattr(obj, 'checklist_class', type(obj).__name__)}, "
                          "not a checklist TestSuite")
    tests = obj.get("tests")
    info = obj.get("info")
    if not isinstance(tests, dict) or not tests:
        raise _fail(path, "field 'tests': the suite has no tests")
    info = info if isinstance(info, dict) else {}
    name = _suite_name(path, member, suite, tests)
    out = []
    for i, (func, t) in enumerate(tests.items()):
        func = str(func)
        try:
            out.append(_read_test(i, func, t, info.get(func)))
        except _Malformed as e:
            raise _fail(path, f"field 'tests': {e}", func) from None
    return ReleaseSuite(name, path, out, obj)


def _read_test(i: int, func: str, t, info) -> ReleaseTest:
    if not isinstance(t, TestRecord) or not hasattr(t, "state"):
        raise _Malformed(f"holds a {type(t).__name__}, not an MFT / INV / DIR")
    st = t.state
    for key in ("data", "expect", "agg_fn"):
        if key not in st:
            raise _Malformed(f"the test has no {key!r}")
    agg = st["agg_fn"]
    if agg not in ("all", "all_except_first"):
        raise _Malformed(f"agg_fn {agg if isinstance(agg, str) else type(agg).__name__!r} is not 'all' or "
                         "'all_except_first' (a custom aggregation function is not read)")
    info = info if isinstance(info, dict) else {}
    if info.get("type", t.test_type) != t.test_type:
        raise _Malformed(f"suite info says {info.get('type')!r} for a {t.test_type}")
    data = st["data"]
    if not _is_many(data):
        raise _Malformed("data is not a list of test cases")
    run = st.get("run_idxs")
    run_idxs = None if run is None else [int(x) for x in _items(run)]
    return ReleaseTest(index=i, name=func, test_type=t.test_type,
                       capability=_plain(info.get("capability", st.get("capability") or "")),
                       description=_plain(info.get("description", "")), data=_items(data),
                       labels=st.get("labels"), meta=st.get("meta"), agg_fn=agg,
                       expect=describe_expectation(st["expect"]), run_idxs=run_idxs)


def _test_records(suite: str, t: ReleaseTest, path) -> Iterator[dict]:
    n_cases = len(t.data)
    labels, meta = t.labels, t.meta
    if _is_many(labels):
        labels = _items(labels)
        if len(labels) != n_cases:
            raise _fail(path, f"field 'labels': {len(labels)} labels for {n_cases} test cases", t.name)
    if _is_many(meta):
        meta = _items(meta)
        if len(meta) != n_cases:
            raise _fail(path, f"field 'meta': {len(meta)} entries for {n_cases} test cases", t.name)
    pos = {} if t.run_idxs is None else {c: p for p, c in enumerate(t.run_idxs)}
    e = t.expect
    try:
        for j, case in enumerate(t.data):
            inputs = [_plain(x) for x in _items(case)] if _is_many(case) else [_plain(case)]
            n = len(inputs)
            if labels is None:
                lab, labs, scope = None, None, None
            elif isinstance(labels, list):
                lc = labels[j]
                if _is_many(lc):
                    labs, scope = [_plain(x) for x in _items(lc)], "case_per_input"
                    lab = labs[0] if labs and all(x == labs[0] for x in labs) else None
                else:
                    lab = _plain(lc)
                    labs, scope = [lab] * n, "case"
            else:
                lab = _plain(labels)
                labs, scope = [lab] * n, "test"
            m = None if meta is None else _plain(meta[j] if isinstance(meta, list) else meta)
            yield {"suite": suite, "case_id": f"{suite}-{t.index:02d}-{j:05d}", "test_index": t.index,
                   "case_index": j, "functionality": t.name, "capability": t.capability, "test_type": t.test_type,
                   "description": t.description, "inputs": inputs, "n_inputs": n, "label": lab, "labels": labs,
                   "label_scope": scope, "meta": m, "agg_fn": t.agg_fn,
                   "expect": {"expression": e["expression"], "name": e["name"], "params": dict(e["params"]),
                              "slice": None if e["slice"] is None else dict(e["slice"])},
                   "in_run_subset": t.run_idxs is None or j in pos, "run_position": pos.get(j)}
    except _Malformed as err:
        raise _fail(path, f"field 'data': {err}", t.name) from None


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
    from beluga.io import atomic_path

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
