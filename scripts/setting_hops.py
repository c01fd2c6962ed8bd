"""Where a setting travels: the objects that carry ``lr`` and the training seed from the loaded config to
their use, traced in a tiny run of the pipeline's own code.

    python scripts/setting_hops.py        # every traced path: its hops, and the functions each carrier met

The run: the tiny test configuration (tests/configs/tiny.yaml) with a distinct value for every source of the
setting (the suite and IID stages' ``lr``, LP's own, an inoculation rate, the combinational analysis', a grid
point, a selection's choice; a second training seed), loaded as the workflow loads it
(``beluga.workflow.config.load_workflow``: the schema's defaults, the runs), each training rule's job settings
built (``Runs.settings``, what ``rules/common.smk`` gives the job as its ``run`` parameter) and the job's step
called with them (``beluga.steps.train.train_iid / finetune / trial``, ``beluga.steps.inoculation.inoculate``;
the suite built and split by the pipeline's data steps), up to the first update of the training loop. The
combinational analysis' job is traced to its settings (its step needs a data source's pool).

A *carrier* is an object that holds the value itself: a dict with it under the setting's key (``lr`` /
``seed``), a list of such values (``seeds``, ``inoculation.lrs``, a grid's values), a FoldRun (its ``seed``).
A carrier's *parent* is the nearest carrier of the same value that the function which built it (or one of its
callers) holds; a carrier without one is a *source* (the config, or a file such as a selection's choice). A
*hop* is a carrier on the way from a source to the use: torch's optimizer built with the learning rate
(``torch.optim.AdamW``), the random number generators seeded (``torch.manual_seed``), the use counted as the last
hop. The FoldRun's travel to the job as the rule's ``run`` parameter (``FoldRun.to_dict`` / ``from_dict``, what
Snakemake pickles into the job's script) is the same carrier, not a hop. A function that passes a carrier on
unchanged adds no hop; each carrier lists the project functions that received it.

tests/test_settings_hops.py runs :func:`trace_all` and holds every path to at most :data:`MAX_HOPS` hops.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
#: the code whose functions are traced: the package and the jobs' scripts
PROJECT = tuple(str(REPO / d) + os.sep for d in ("beluga", "workflow_scripts"))
#: the most hops a setting may take from its source to its use
MAX_HOPS = 5

#: the traced config's value of each source of ``lr`` (distinct: a carrier's value names its source)
LR = {"training.suite.lr": 1.23e-4, "training.iid.lr": 2.34e-4, "training.method_hparams.lp.lr": 3.45e-4,
      "inoculation.lrs": 4.56e-4, "combinational.training.lr": 5.67e-4, "selection.grid.lr": 6.78e-4,
      "selected.json": 7.89e-4}
#: the second training seed (``seeds: [3, SEED]``; the base seed, 3, keeps the one-seed paths)
SEED = 7654321
#: the files of the FoldRun's travel to the job (the same carrier)
TRANSPORT = ("FoldRun.to_dict", "FoldRun.from_dict")
#: the uses: (file suffix, function, argument) of the call that takes the value
USES = {"lr": ("torch/optim/adamw.py", "__init__", "lr"), "seed": ("torch/random.py", "manual_seed", "seed")}


@dataclass(eq=False)
class Carrier:
    obj: object
    value: object
    kind: str
    builder: str                  # the function that built it (a config key path for the loaded config's)
    parent: Carrier | None
    index: int
    passed: list[str] = field(default_factory=list)   # project functions that received it, in order
    changed: bool = False         # an earlier carrier, its value changed in place

    def label(self) -> str:
        where = "a source" if self.parent is None and not self.builder.startswith("config") else ""
        return (f"{self.kind} ({self.builder}" + (": changed in place" if self.changed else "")
                + (f"; {where}" if where else "") + ")")


#: the frames of a comprehension: what they build is their function's
COMPREHENSIONS = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


def _function(frame):
    """``frame``, or for a comprehension's the frame of the function it is in."""
    while frame.f_code.co_name in COMPREHENSIONS and frame.f_back is not None:
        frame = frame.f_back
    return frame


def _qualname(frame) -> str:
    frame = _function(frame)
    path = frame.f_code.co_filename
    rel = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
    return f"{rel}.{frame.f_code.co_qualname}"


def _project(frame) -> bool:
    return frame.f_code.co_filename.startswith(PROJECT)


class Tracer:
    """sys.settrace over the traced calls: every carrier of ``setting`` (``lr`` / ``seed``, whose values
    are ``values``) the project's functions hold in their arguments, locals or return values."""

    def __init__(self, setting: str, values):
        self.setting, self.values = setting, set(values)
        self.carriers: list[Carrier] = []
        self.by_id: dict[int, Carrier] = {}
        self.uses: list[Carrier] = []
        self.errors: list[str] = []
        self._kinds: dict[type, str] = {}

    # --- what holds the value ------------------------------------------------------------------------
    def _value(self, v) -> bool:
        return type(v) in (int, float) and v in self.values

    def held(self, obj):
        """(value, kind) when ``obj`` holds the value itself, else None."""
        t = type(obj)
        if t is dict:
            v = obj.get(self.setting)
            return (v, f"dict[{self.setting!r}]") if self._value(v) else None
        if t is list or t is tuple:
            if len(obj) <= 100:
                for v in obj:
                    if self._value(v):
                        return v, t.__name__
            return None
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and t.__module__.startswith("beluga"):
            v = getattr(obj, self.setting, None)
            return (v, t.__name__) if self._value(v) else None
        return None

    def _kind(self, t: type) -> str:
        """How the walk looks inside an object of type ``t``: its items, its fields, its attributes, nothing."""
        if t not in self._kinds:
            names = {(c.__module__, c.__name__) for c in t.__mro__}
            if t in (dict, list, tuple):
                kind = "items"
            elif dataclasses.is_dataclass(t) and t.__module__.startswith("beluga"):
                kind = "fields"
            elif names & {("beluga.workflow.runs", "Runs"), ("beluga.methods.base", "Algorithm"),
                          ("torch.optim.optimizer", "Optimizer")}:
                kind = "attrs"
            else:
                kind = ""
            self._kinds[t] = kind
        return self._kinds[t]

    def reach(self, roots, depth: int = 5):
        """Every object reachable from ``roots`` through dict values, list / tuple items, the package's
        dataclass fields and the attributes of the runs, a method and an optimizer (at most ``depth`` steps)."""
        seen, out, level = set(), [], [r for r in roots]
        for _ in range(depth + 1):
            nxt = []
            for obj in level:
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                out.append(obj)
                kind = self._kind(type(obj))
                if kind == "items":
                    vals = obj.values() if type(obj) is dict else obj
                    if len(obj) <= 500:
                        nxt.extend(vals)
                elif kind == "fields":
                    nxt.extend(getattr(obj, f.name) for f in dataclasses.fields(obj))
                elif kind == "attrs":
                    nxt.extend(vars(obj).values())
            level = nxt
        return out

    def _frames(self, frame):
        while frame is not None:
            if _project(frame):
                yield frame
            frame = frame.f_back

    def _parent(self, value, frame, fresh=()):
        """The nearest carrier of ``value`` that ``frame`` or a caller holds (None: the value enters here)."""
        for fr in self._frames(frame):
            same = [c for o in self.reach(list(fr.f_locals.values()))
                    if (c := self.by_id.get(id(o))) is not None and c.value == value and c not in fresh]
            if same:
                return max(same, key=lambda c: c.index)
        return None

    def _register(self, obj, value, kind, builder, parent, changed=False) -> Carrier:
        c = Carrier(obj, value, kind, builder, parent, len(self.carriers), changed=changed)
        self.carriers.append(c)
        self.by_id[id(obj)] = c
        return c

    def source(self, obj, path: str = "config") -> None:
        """Register the carriers of a loaded config (before the run), named by their key paths."""
        def walk(o, where):
            h = self.held(o)
            if h is not None and id(o) not in self.by_id:
                self._register(o, h[0], h[1], where, None)
            if type(o) is dict:
                for k, v in o.items():
                    walk(v, f"{where}.{k}")
            elif type(o) is list:
                for i, v in enumerate(o):
                    walk(v, f"{where}[{i}]")
        walk(obj, path)

    def fork(self) -> Tracer:
        """A tracer that goes on from this one's carriers (a job traced after the runs this one traced)."""
        t = Tracer(self.setting, self.values)
        copies: dict[int, Carrier] = {}
        for c in self.carriers:
            copies[id(c)] = dataclasses.replace(c, passed=list(c.passed),
                                                parent=copies[id(c.parent)] if c.parent is not None else None)
        t.carriers = list(copies.values())
        t.by_id = {k: copies[id(c)] for k, c in self.by_id.items()}
        t.errors = list(self.errors)
        return t

    # --- the profiler ----------------------------------------------------------------------------------
    def _scan(self, objs, builder_frame, packed=()) -> None:
        """Register the new carriers among ``objs`` (``packed``: ids of a call's ``*args`` / ``**kwargs``, how
        the arguments travel, not carriers) and the carriers whose value changed in place."""
        fresh = []
        for o in self.reach(objs):
            h = self.held(o) if id(o) not in packed else None
            if h is None:
                continue
            known = self.by_id.get(id(o))
            if known is not None and known.value == h[0]:
                continue
            # new, or changed in place (a new version of the carrier)
            parent = self._parent(h[0], builder_frame, fresh) or known
            fresh.append(self._register(o, h[0], h[1], _qualname(builder_frame), parent, changed=known is not None))

    def __call__(self, frame, event, arg):
        """The global trace function (a call): a use, or a project function's arguments scanned; its return
        is seen by :meth:`_returned` (no line events)."""
        try:
            code = frame.f_code
            use = USES[self.setting]
            if code.co_name == use[1] and code.co_filename.endswith(use[0]):
                v = frame.f_locals.get(use[2])
                if self._value(v):
                    caller = frame.f_back
                    self.uses.append(Carrier(None, v, f"{use[1]}({use[2]}=...)", _qualname(caller) if
                                             _project(caller) else code.co_qualname,
                                             self._parent(v, caller), len(self.carriers)))
                return None
            if not _project(frame):
                return None
            args = list(frame.f_locals.values())
            caller = frame.f_back if frame.f_back is not None and _project(frame.f_back) else frame
            n = code.co_argcount + code.co_kwonlyargcount
            packed = {id(frame.f_locals.get(name)) for flag, name in ((0x04, n), (0x08, n + bool(code.co_flags & 4)))
                      if code.co_flags & flag for name in [code.co_varnames[name]]}
            self._scan(args, caller, packed)
            if code.co_name not in COMPREHENSIONS:
                name = _qualname(frame)
                for o in self.reach(args, depth=1):
                    c = self.by_id.get(id(o))
                    if c is not None and (not c.passed or c.passed[-1] != name):
                        c.passed.append(name)
            frame.f_trace_lines = False
            return self._returned
        except Exception as e:   # noqa: BLE001  (reported: a trace function that raises is switched off)
            self.errors.append(f"{type(e).__name__}: {e}")
            return None

    def _returned(self, frame, event, arg):
        if event == "return":
            try:
                self._scan([*frame.f_locals.values(), arg], frame)
            except Exception as e:   # noqa: BLE001
                self.errors.append(f"{type(e).__name__}: {e}")
        return self._returned

    def __enter__(self):
        sys.settrace(self)
        return self

    def __exit__(self, *exc):
        sys.settrace(None)
        return False

    # --- the paths ---------------------------------------------------------------------------------------
    def paths(self) -> list[list[Carrier]]:
        """Each use's path: its carriers from the source to the use (the FoldRun's travel left out: the
        functions its dict form and rebuilt FoldRun met are listed with the carrier it travels as)."""
        return [chain(use) for use in self.uses]


def chain(last: Carrier) -> list[Carrier]:
    """The carriers from the source to ``last``, the FoldRun's travel left out (what it met, its carrier's)."""
    path, met, c = [], [], last
    while c is not None:
        if is_transport(c):
            met = c.passed + met
        else:
            path.append(dataclasses.replace(c, passed=c.passed + met) if met else c)
            met = []
        c = c.parent
    return path[::-1]


def is_transport(c: Carrier) -> bool:
    """A carrier built by the FoldRun's travel to the job (its dict form and back)."""
    return c.builder.endswith(tuple("settings." + t for t in TRANSPORT))


def settings_carrier(t: Tracer) -> Carrier:
    """The last carrier built before the job's settings travel (the FoldRun's hyper-parameters or seed)."""
    built = [c for c in t.carriers if c.parent is not None and not is_transport(c)]
    return built[-1]


def hops(path: list[Carrier]) -> int:
    """The hops of a path: its carriers after the source, the use included."""
    return len(path) - 1


# ---------------------------------------------------------------- who writes the hyper-parameters
#: the one function that rewrites a job's hyper-parameters (file, function)
REWRITER = ("beluga/train/settings.py", "job_hparams")
#: dict methods that change a dict in place
_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _text(source: str, node) -> str:
    return ast.get_source_segment(source, node) or ""


class _Writes(ast.NodeVisitor):
    """The places in one module that write a job's hyper-parameters (an object named ``*hparams*``) or
    rebuild a job's settings with other ones: a dict method that changes it, an item assignment or
    deletion, a merge (``{**a, **b}``, ``dict(a, k=v)``, ``a | b``), ``with_hparams`` / ``final_hparams``
    (the former rewriting API), ``replace(..., hparams= / seed= / **changes)`` with anything but :func:`job_hparams`'s
    result."""

    def __init__(self, source: str, path: str):
        self.source, self.path, self.stack, self.found = source, path, [], []

    def _flag(self, node, why: str) -> None:
        if (self.path, self.stack[-1] if self.stack else "") == REWRITER:
            return
        self.found.append(f"{self.path}:{node.lineno} {'.'.join(self.stack) or '(module)'}: {why}: "
                          f"{' '.join(_text(self.source, node).split())[:100]}")

    def _scoped(self, node):
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def _hparams(self, node) -> bool:
        return "hparams" in _text(self.source, node)

    def visit_Call(self, node):
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if isinstance(f, ast.Attribute) and name in _MUTATORS and self._hparams(f.value):
            self._flag(node, "changed in place")
        elif name in ("with_hparams", "final_hparams"):
            self._flag(node, "rewritten")
        elif name == "dict" and (node.keywords or len(node.args) > 1) and self._hparams(node):
            self._flag(node, "merged")
        elif name == "replace":
            for kw in node.keywords:
                v = kw.value
                from_rewriter = isinstance(v, ast.Call) and _text(self.source, v.func).endswith("job_hparams")
                if kw.arg in ("hparams", "seed", None) and not from_rewriter:
                    self._flag(node, f"settings rebuilt with another {kw.arg or 'setting'}")
        self.generic_visit(node)

    def _target(self, node, targets):
        for t in targets:
            if isinstance(t, ast.Subscript) and self._hparams(t.value):
                self._flag(node, "an item written")

    def visit_Assign(self, node):
        self._target(node, node.targets)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._target(node, [node.target])
        if isinstance(getattr(node, "op", None), ast.BitOr) and self._hparams(node.target):
            self._flag(node, "merged")
        self.generic_visit(node)

    visit_AnnAssign = visit_AugAssign

    def visit_Delete(self, node):
        self._target(node, node.targets)
        self.generic_visit(node)

    def visit_Dict(self, node):
        if any(k is None and self._hparams(v) for k, v in zip(node.keys, node.values)):
            self._flag(node, "merged")
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.BitOr) and self._hparams(node):
            self._flag(node, "merged")
        self.generic_visit(node)


def rewrite_sites(root: Path = REPO, sources: dict[str, str] | None = None) -> list[str]:
    """Every place outside :data:`REWRITER` that writes a job's hyper-parameters or rebuilds its settings with
    other ones (:class:`_Writes`): ``file:line function: why: code``. ``sources`` (path -> text; default: the
    package's and the jobs' scripts' files under ``root``; the rules' are searched as text)."""
    if sources is None:
        files = [*sorted((root / "beluga").rglob("*.py")), *sorted((root / "workflow_scripts").glob("*.py"))]
        sources = {str(f.relative_to(root)): f.read_text(encoding="utf-8") for f in files}
        found = []
        for f in sorted((root / "rules").glob("*.smk")):
            for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if "hparams" in line and any(m in line for m in ("{**", ".update(", "with_hparams", "final_hparams")):
                    found.append(f"{f.relative_to(root)}:{i}: rewritten: {line.strip()[:100]}")
    else:
        found = []
    for path, text in sources.items():
        v = _Writes(text, path)
        v.visit(ast.parse(text))
        found += v.found
    return found


# ---------------------------------------------------------------- the traced run
def traced_config(data_dir: str, suite: str | None = None) -> dict:
    """The tiny test config with a distinct value for every source of the setting (``suite``: its suite's
    file, once built from the config's spec)."""
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    if suite is not None:
        cfg["tasks"]["sent"]["suite"] = {"path": suite}
    cfg.update(data_dir=data_dir, results="results", seeds=[cfg["seed"], SEED], methods=["vanilla", "l2", "lp"],
               configurations=["iid_to_t"], partitions=["seen", "func"])
    tr = cfg["training"]
    tr["suite"]["lr"], tr["iid"]["lr"] = LR["training.suite.lr"], LR["training.iid.lr"]
    tr["method_hparams"] = {"lp": {"lr": LR["training.method_hparams.lp.lr"]}}
    cfg["inoculation"] = {"units": ["class"], "doses": [1], "lrs": [LR["inoculation.lrs"]], "max_epochs": 2,
                          "patience": 1}
    cfg["combinational"] = {"model": "tiny-random", "ks": [4], "n_test": 6, "max_length": 32,
                            "training": {"lr": LR["combinational.training.lr"], "batch_size": 8, "epochs": 1}}
    cfg["selection"] = {"method_grid": {"vanilla": {"lr": [LR["selection.grid.lr"]]}}}
    return cfg


class Stop(Exception):
    """Raised at the training loop's first epoch: every setting is in use by then."""


def _data(tmp: Path, cfg: dict) -> dict:
    """The job inputs, made by the pipeline's data steps (the suite from the config's spec and a tiny pool, its
    split), a tiny i.i.d. table and a selection's choice. Training starts from the pre-trained model."""
    import pandas as pd

    from beluga.core.io import write_parquet
    from beluga.steps.data import build_suite, split_suite

    task = cfg["tasks"]["sent"]
    words = ["the film was fine", "a dull plot", "great acting", "the story drags", "a warm and funny movie"]
    write_parquet(pd.DataFrame({"text": [f"{w} {i}" for i in range(8) for w in words]}), tmp / "pool.parquet")
    build_suite(suite=task["suite"], task_type="sent", pool=str(tmp / "pool.parquet"),
                out_suite=str(tmp / "suite.parquet"))
    split_suite(suite=str(tmp / "suite.parquet"), task_type="sent", fractions=cfg["split"]["fractions"],
                seed=cfg["split"]["seed"], out_split=str(tmp / "split.parquet"), out_summary=str(tmp / "summary.tsv"))
    iid = pd.DataFrame({"example_id": [f"e{i}" for i in range(8)], "text": ["good film", "bad film"] * 4,
                        "label": [1, 0] * 4})
    write_parquet(iid, tmp / "iid.parquet")
    (tmp / "selected.json").write_text(json.dumps({
        "policy": "seen", "fold": "seen/all", "trial": "lr0.000678", "objective": "pass_rate", "score": 0.5,
        "hparams": {"lr": LR["selected.json"]}, "trials": {"lr0.000678": 0.5}}))
    return {"suite": str(tmp / "suite.parquet"), "split": str(tmp / "split.parquet"),
            "iid": str(tmp / "iid.parquet"), "start": None, "selected": str(tmp / "selected.json")}


#: what is traced: (name, setting, rule, wildcards); ``seeddir`` seeds/<SEED>/ is the second training seed's
SCENARIOS = [
    ("train_iid", "lr", "train_iid", {"task": "sent"}),
    ("finetune l2", "lr", "finetune", {"conf": "iid_to_t", "method": "l2"}),
    ("finetune lp", "lr", "finetune", {"conf": "iid_to_t", "method": "lp"}),
    ("finetune vanilla (selected)", "lr", "finetune", {"conf": "iid_to_t", "method": "vanilla"}),
    ("trial", "lr", "trial", {"conf": "iid_to_t", "method": "vanilla", "trial": "lr0.000678"}),
    ("inoculate", "lr", "inoculate", {"unit": "class-negation", "dose": "1", "lr": "lr0.000456"}),
    ("combinational_train", "lr", "combinational_train", {"variant": "default", "k": "4"}),
    ("finetune, second seed", "seed", "finetune", {"conf": "iid_to_t", "method": "lp"}),
    ("inoculate, second seed", "seed", "inoculate", {"unit": "class-negation", "dose": "1", "lr": "lr0.000456"}),
]


def _job(rule: str, run: dict, w: dict, runs, files: dict, tmp: Path) -> None:
    """The rule's step, as its workflow script calls it: the job's settings ``run`` and the other parameters
    its rule gives it (rules/train.smk, rules/inoculation.smk)."""
    from beluga.steps import inoculation, train

    data = {"suite": files["suite"], "split": files["split"], "iid_train": None, "start": files["start"]}
    if rule == "train_iid":
        train.train_iid(run=run, train=files["iid"], out_model=str(tmp / "m"))
    elif rule == "finetune":
        train.finetune(run=run, **data, iid_test=files["iid"],
                       selected=files["selected"] if runs.has_grid(w["task"], w["method"]) else None,
                       batch_size=8, scope="scored", out_predictions=str(tmp / "p.parquet"),
                       out_run=str(tmp / "p.json"), out_outcomes=str(tmp / "o.parquet"))
    elif rule == "trial":
        train.trial(run=run, trial_id=w["trial"], grid_point=runs.grid_points[(w["task"], w["method"])][w["trial"]],
                    **data, batch_size=8, out_score=str(tmp / "t.json"))
    elif rule == "inoculate":
        inoc = runs.inoculation
        inoculation.inoculate(
            run=run, unit=w["unit"], unit_funcs=runs.inoc_units[w["task"]][w["unit"]]["functionalities"],
            dose=w["dose"], sample_seed=inoc["seed"], patience=inoc["patience"], suite=files["suite"],
            split=files["split"], start=files["start"], iid_val=files["iid"], iid_test=files["iid"], batch_size=8,
            iid_metric="mean", out_result=str(tmp / "r.json"), out_outcomes=str(tmp / "r.parquet"))


def _wildcards(setting: str, rule: str, wildcards: dict) -> dict:
    w = {"task": "sent", "partition": "seen", "fold": "all", **wildcards,
         "seeddir": f"seeds/{SEED}/" if setting == "seed" else ""}
    if rule == "combinational_train":
        w.pop("task")
    return w


def trace_all(scenarios=None) -> dict[str, Tracer]:
    """Each scenario (default :data:`SCENARIOS`) traced in a temporary folder: per setting, the config
    loaded and its runs built once (``load_workflow``); per scenario, the job's settings (``Runs.settings``) and
    its step, up to the training loop's first epoch."""
    import beluga.train.loop
    from beluga.workflow.config import load_workflow, validate_config

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    scenarios = SCENARIOS if scenarios is None else scenarios
    out: dict[str, Tracer] = {}
    cwd, first_epoch = os.getcwd(), beluga.train.loop._run_epoch

    def stop(*args, **kwargs):
        raise Stop

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "data").mkdir()
        files = _data(tmp, validate_config(traced_config(str(tmp / "data"))))
        os.chdir(tmp)
        beluga.train.loop._run_epoch = stop
        try:
            for setting in dict.fromkeys(s[1] for s in scenarios):
                base = Tracer(setting, LR.values() if setting == "lr" else [SEED])
                cfg = traced_config(str(tmp / "data"), files["suite"])
                base.source(cfg)
                with base:
                    runs = load_workflow(cfg).runs
                for name, _, rule, wildcards in (s for s in scenarios if s[1] == setting):
                    w, tracer = _wildcards(setting, rule, wildcards), base.fork()
                    with tracer:
                        run = runs.settings(rule, w)
                        if rule != "combinational_train":
                            try:
                                _job(rule, run, w, runs, files, tmp)
                            except Stop:
                                pass
                    out[name] = tracer
        finally:
            os.chdir(cwd)
            beluga.train.loop._run_epoch = first_epoch
    return out


def report(traces: dict[str, Tracer]) -> str:
    lines = []
    for name, t in traces.items():
        lines.append(f"== {name} ({t.setting})")
        if t.errors:
            lines.append(f"   tracer errors: {t.errors[:3]}")
        paths = t.paths()
        if not paths:   # no use reached (the combinational job's settings only): the last carrier built
            paths = [chain(settings_carrier(t))]
            lines.append("   (traced to the job's settings)")
        for path in paths:
            lines.append(f"   {hops(path)} hops, value {path[-1].value!r}")
            for i, c in enumerate(path):
                passed = ", ".join(dict.fromkeys(c.passed))
                lines.append(f"   {i}. {c.label()}" + (f"\n        received by: {passed}" if passed else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(trace_all()))
    sites = rewrite_sites()
    print(f"== writes of a job's hyper-parameters outside {'::'.join(REWRITER)}: {len(sites)}")
    print("\n".join(f"   {s}" for s in sites))
