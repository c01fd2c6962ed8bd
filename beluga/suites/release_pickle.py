"""Unpickle a CheckList release suite (``release_suites/*_suite.pkl``, the
one member of each release tarball) **without executing it**: the
restricted unpickler and the inert stand-ins it builds (the one module of
the package that imports ``pickle``). :mod:`beluga.suites.release` reads
the file and turns the unpickled suite into the records of CheckList's
JSONL export.

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
tell, and the file -- before anything the pickle names could run
(``unpickle_release``).
"""

from __future__ import annotations

import io
import pickle
import pickletools
import re
import reprlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from beluga.core.errors import SuiteError


class _Refused(Exception):
    """A global / module / attribute / call outside the allow-lists (never executed)."""

    def __init__(self, what: str, why: str = "not in the allow-list of the CheckList release reader"):
        super().__init__(what)
        self.what, self.why = what, why


class MalformedPickle(Exception):
    """Content the reader does not accept: an allowed stand-in given arguments
    it does not take, or (:mod:`beluga.suites.release`) a test or expectation
    of a shape it does not read."""


# ---------------------------------------------------------------- inert stand-ins
class _Ref:
    """Base of the reference stand-ins: slots only and no state, so the
    pickle's BUILD cannot change them (they are shared between loads)."""

    __slots__ = ()

    def __setstate__(self, state):
        raise MalformedPickle(f"{self!r} takes no state")

    def __setattr__(self, name, value):
        if hasattr(self, name):
            raise MalformedPickle(f"{self!r} is read-only")
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
            raise MalformedPickle(f"a code object with {len(args)} fields (Python 3.7's layout has 15)")
        rec = cls(*args)
        for f in ("names", "varnames", "freevars", "cellvars"):
            v = getattr(rec, f)
            if not isinstance(v, tuple) or not all(isinstance(x, str) for x in v):
                raise MalformedPickle(f"code field {f} is not a tuple of names")
        if not isinstance(rec.name, str) or not isinstance(rec.filename, str) or not isinstance(rec.consts, tuple):
            raise MalformedPickle("code name / filename / consts of the wrong type")
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
            raise MalformedPickle(f"function {self.name} has no closure variable {name!r}")
        return self.closure_values[name]


class _Instance:
    """A stand-in for a pickled class instance: keeps the state it is given."""

    checklist_class = "object"

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2 and (state[0] is None or isinstance(state[0], dict)):
            state = {**(state[0] or {}), **(state[1] or {})}
        if not isinstance(state, dict):
            raise MalformedPickle(f"{self.checklist_class} state is not a dict")
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
            raise MalformedPickle(f"numpy dtype {reprlib.repr(name)} is not a plain dtype the reader accepts")
        self.name, self.order = name, "|"

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 8 and state[0] == 3 and state[1] in ("<", ">", "|", "=")
                and state[2] is None and state[3] is None and state[4] is None):
            raise MalformedPickle(f"numpy dtype {self.name} state {reprlib.repr(state)} (structured or unknown layout)")
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
            raise MalformedPickle("numpy _reconstruct of something other than numpy.ndarray")
        self.value = None

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 5 and state[0] == 1):
            raise MalformedPickle("numpy array state of an unknown layout")
        _, shape, dtype, fortran, raw = state
        if not (isinstance(shape, tuple) and all(isinstance(s, int) and s >= 0 for s in shape)
                and isinstance(dtype, DTypeRecord)):
            raise MalformedPickle("numpy array shape / dtype of the wrong type")
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if dtype.is_object:
            if not isinstance(raw, list) or len(raw) != n:
                raise MalformedPickle("numpy object array data is not a list of the array's size")
            self.value = raw if len(shape) == 1 else np.array(raw, dtype=object).reshape(shape)
            return
        dt = dtype.resolve()
        if not isinstance(raw, (bytes, bytearray)) or len(raw) != n * dt.itemsize:
            raise MalformedPickle(f"numpy array data of {len(raw) if isinstance(raw, bytes) else '?'} bytes for "
                             f"shape {shape} and dtype {dtype.name}")
        self.value = np.frombuffer(raw, dtype=dt).reshape(shape, order="F" if fortran else "C")

    def tolist(self):
        v = self.value
        return v.tolist() if isinstance(v, np.ndarray) else list(v or [])


def _numpy_scalar(dtype, raw=None):
    """``numpy.core.multiarray.scalar(dtype, bytes)`` -> a numpy scalar via ``np.frombuffer``."""
    if not isinstance(dtype, DTypeRecord):
        raise MalformedPickle("numpy scalar without a plain dtype")
    if dtype.is_object:
        return raw
    dt = dtype.resolve()
    if not isinstance(raw, (bytes, bytearray)) or len(raw) != dt.itemsize:
        raise MalformedPickle(f"numpy scalar of dtype {dtype.name} with {len(raw) if isinstance(raw, bytes) else '?'} "
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
            raise MalformedPickle(f"dill {self.name} with keyword arguments")
        return self._build(*args)

    def __repr__(self):
        return f"dill._dill.{self.name} (record builder)"


def _import_module(name=None, *rest):
    if not isinstance(name, str) or rest:
        raise MalformedPickle("dill _import_module without a module name")
    if name not in ALLOWED_MODULES:
        raise _Refused(name)
    return ModuleRef(name)


def _load_type(name=None, *rest):
    if not isinstance(name, str) or rest:
        raise MalformedPickle("dill _load_type without a type name")
    if name not in ALLOWED_TYPES:
        raise _Refused(f"types.{name}")
    return TypeRef(name)


def _get_attr(owner=None, name=None, *rest):
    owner_name = owner.name if isinstance(owner, ModuleRef) else owner
    if not isinstance(owner_name, str) or not isinstance(name, str) or rest:
        raise MalformedPickle("dill _get_attr of something other than a module attribute")
    if (owner_name, name) not in ALLOWED_ATTRS:
        raise _Refused(f"{owner_name}.{name}")
    return AttrRef(owner_name, name)


def _create_cell(value=None, *rest):
    if rest:
        raise MalformedPickle("dill _create_cell with more than one value")
    return CellRecord(value)


def _create_function(code=None, fglobals=None, name=None, defaults=None, closure=None, fdict=None,
                     kwdefaults=None, *rest):
    if not isinstance(code, CodeRecord) or not isinstance(fglobals, dict) or rest:
        raise MalformedPickle("dill _create_function without a code record and globals")
    cells = tuple(closure or ())
    if not all(isinstance(c, CellRecord) for c in cells) or len(cells) != len(code.freevars):
        raise MalformedPickle(f"function {code.name}: closure does not match its free variables")
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
        raise _Refused(f"persistent id {reprlib.repr(pid)}")


def release_error(path, msg: str, functionality: str | None = None) -> SuiteError:
    """The one-line error of release suite ``path`` (and of one of its tests)."""
    where = f" (test {functionality!r})" if functionality is not None else ""
    return SuiteError(f"CheckList release suite {path}{where}: {msg}")


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


def unpickle_release(data: bytes, path: Path) -> object:
    """The object graph of a release pickle's ``data`` (inert stand-ins and numpy values; nothing
    executed). A name outside the allow-lists, malformed content or an unreadable stream: one
    ``SuiteError`` line naming ``path`` (and the test, when the opcodes tell)."""
    try:
        return _ReleaseUnpickler(io.BytesIO(data)).load()
    except _Refused as e:
        test = _locate(data, e.what)
        raise release_error(path, f"field 'pickle': refused {e.what} ({e.why}); nothing was executed",
                            test) from None
    except MalformedPickle as e:
        raise release_error(path, f"field 'pickle': {e}") from None
    except RecursionError:
        raise release_error(path, "field 'pickle': nested too deeply") from None
    except Exception as e:  # noqa: BLE001 -- any malformed stream is one line
        reason = " ".join(f"{type(e).__name__}: {e}".split())[:200]
        raise release_error(path, f"field 'pickle': not a readable CheckList suite pickle ({reason})") from None
