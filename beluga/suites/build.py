"""A task's suite as its config describes it: generated offline, or read from
a suite file (the project's formats or a CheckList export), checked against
the task's type, subsampled as configured, validated; and :func:`read_suite`,
the one reader of a suite file, for the pipeline and every command."""

from __future__ import annotations

import functools
import json
import logging
import os

import numpy as np
import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import BelugaError, ConfigError, SuiteError
from beluga.core.tasks import SUITE_TASK_TYPES, TASK_TYPES, TaskType, get_task_type
from beluga.heads import head_of
from beluga.suites.folds import stable_int
from beluga.suites.format import TEST_TYPES, validate_suite
from beluga.suites.published import published_functionalities, published_suite

_log = logging.getLogger(__name__)


def label_set(ttype: TaskType) -> tuple[int, ...] | None:
    """The suite's integer label set (None for QA, whose labels are answer strings)."""
    return tuple(ttype.suite_labels) or None


def select_functionalities(df: pd.DataFrame, suite_cfg: dict) -> pd.DataFrame:
    """Keep only the functionalities listed in ``suite.functionalities`` (if set)."""
    wanted = suite_cfg.get("functionalities")
    if not wanted:
        return df
    known = set(df["functionality"])
    unknown = [f for f in wanted if f not in known]
    if unknown:
        raise ConfigError(f"config: field 'suite.functionalities': unknown functionality {unknown[0]!r} "
                          f"(the suite has: {', '.join(sorted(known))})")
    return df[df["functionality"].isin(set(wanted))].reset_index(drop=True)


def suite_functionalities(suite_cfg: dict, task_type: str, published: bool = False) -> pd.DataFrame:
    """Functionality table known before anything runs (fold enumeration at
    DAG-construction time): from the suite spec or the suite file
    (checked against the task type: :func:`read_suite`), with the
    number of cases each functionality will have (``n_cases``, after
    ``max_cases_per_functionality``). ``published`` (the cost plan's
    ``--assume-paper-data``): a CheckList release suite not staged yet is
    counted from its published shape (:mod:`beluga.suites.published`)."""
    name = published_suite(suite_cfg, task_type) if published else None
    if name is not None:
        return select_functionalities(published_functionalities(suite_cfg, name), suite_cfg)
    return select_functionalities(_all_functionalities(suite_cfg, task_type), suite_cfg)


def suite_spec_name(suite_cfg: dict) -> str | None:
    """The spec a suite is rendered from: ``generate`` (a packaged spec's name) or ``spec`` (a file); None for a
    suite file."""
    return suite_cfg.get("generate") or suite_cfg.get("spec")


def seeds_given(config: dict) -> set[str]:
    """The tasks whose ``suite`` block sets ``seed`` (the config file or ``--config``), read before the schema
    fills its defaults (:func:`settle_spec_seeds`)."""
    tasks = config.get("tasks")
    return {str(t) for t, c in (tasks.items() if isinstance(tasks, dict) else ())
            if isinstance(c, dict) and isinstance(c.get("suite"), dict) and "seed" in c["suite"]}


def settle_spec_seeds(tasks: dict, given: set[str]) -> None:
    """In place, on a validated config's ``tasks``: a suite rendered from a spec whose config sets no ``seed``
    (a task not in ``given``) is drawn with the spec's ``defaults.seed``, as docs/SUITE_FORMAT.md says; without
    one, the config schema's default stays. A seed the config sets is used as it is. A spec that cannot be
    loaded is left to the DAG's own load of it (:class:`beluga.workflow.runs.Runs`), which stops with its line
    after the checks that come before it."""
    for task, cfg in tasks.items():
        suite_cfg = cfg.get("suite")
        if task in given or not suite_cfg or not suite_spec_name(suite_cfg):
            continue
        try:
            spec = load_task_spec(suite_cfg, cfg["type"])
        except BelugaError:
            continue
        declared = (spec.data.get("defaults") or {}).get("seed")
        if declared is not None:
            suite_cfg["seed"] = int(declared)


def spec_seed_words(suite_cfg: dict, spec) -> str:
    """``seed N: where it came from`` for a suite rendered from ``spec`` with ``suite_cfg``'s seed (settled by
    :func:`settle_spec_seeds`): the spec's ``defaults.seed`` when it is that, else the config's ``suite.seed``."""
    seed = int(suite_cfg["seed"])
    declared = (spec.data.get("defaults") or {}).get("seed")
    if declared is not None and int(declared) == seed:
        return f"seed {seed}: the spec's defaults.seed, which a suite.seed in the config would replace"
    if declared is not None:
        return f"seed {seed}: the config's suite.seed, over the spec's defaults.seed {int(declared)}"
    return f"seed {seed}: the config's suite.seed or its schema default (the spec has no defaults.seed)"


def load_task_spec(suite_cfg: dict, task_type: str):
    """The task's suite spec, loaded and checked, and checked against the task's type."""
    from beluga.suites.spec import load_spec

    key = "generate" if "generate" in suite_cfg else "spec"
    spec = load_spec(suite_cfg[key])
    if spec.task != task_type:
        raise ConfigError(f"config: field 'suite.{key}': {suite_cfg[key]!r} is a {spec.task} suite spec; this "
                          f"task's type is {task_type!r}")
    return spec


def _all_functionalities(suite_cfg: dict, task_type: str) -> pd.DataFrame:
    if suite_spec_name(suite_cfg):
        from beluga.suites.spec import catalogue

        cat = pd.DataFrame(catalogue(load_task_spec(suite_cfg, task_type)))
        df = cat[["functionality", "capability", "test_type"]].assign(n_cases=int(suite_cfg["cases_per_functionality"]))
        return with_fold_types(df, cat, suite_cfg["type_folds"], f"suite spec {suite_spec_name(suite_cfg)}")
    df, _ = read_suite(suite_cfg["path"], task_type, paper_fixes=suite_cfg["paper_fixes"], task_field="type")
    table = df[["functionality", "capability", "test_type"]].drop_duplicates("functionality").reset_index(drop=True)
    n = df.groupby("functionality", sort=False).size()
    cap = suite_cfg.get("max_cases_per_functionality")
    table["n_cases"] = [int(n[f]) if cap is None else min(int(n[f]), int(cap)) for f in table["functionality"]]
    return with_fold_types(table, df, suite_cfg["type_folds"], f"suite file {suite_cfg['path']}")


#: ``tasks.<id>.suite.type_folds``: the test type the ``type`` partition groups a functionality under
TYPE_FOLDS = ("declared", "trained")


def with_fold_types(functionalities: pd.DataFrame, cases: pd.DataFrame, type_folds: str, where: str) -> pd.DataFrame:
    """The functionality table with ``fold_type``, the test type the ``type``
    partition groups each functionality under (:func:`beluga.suites.folds.enumerate_folds`):
    its declared ``test_type`` (``declared``), or, under ``trained``, the type
    a training hint of its cases (``expect_params`` ``"train": {"as": ...}``)
    trains it as, where it has one: PARA's one-pair synonym "INV", trained as
    an MFT with label 1 under ``paper_fixes``, joins the MFTs, as in the
    reference code's suite. ``cases``: the functionality and ``expect_params``
    (a dict or its JSON) of every case of the suite (or one row per
    functionality); ``where`` names the suite in errors."""
    if type_folds not in TYPE_FOLDS:
        raise ConfigError(f"config: field 'suite.type_folds': {type_folds!r} is not one of {', '.join(TYPE_FOLDS)}")
    out = functionalities.assign(fold_type=functionalities["test_type"])
    if type_folds == "declared":
        return out
    hints: dict[str, str | None] = {}
    pairs = zip(cases["functionality"], cases["expect_params"])
    if all(isinstance(p, str) or p is None for p in cases["expect_params"]):
        pairs = dict.fromkeys(pairs)   # the JSON texts of a functionality's cases: parsed once each
    for func, params in pairs:
        parsed = (json_loads(params) if params else {}) if not isinstance(params, dict) else params
        train = parsed.get("train") or {}
        hint = train.get("as") if isinstance(train, dict) else None
        if hint is not None and hint not in TEST_TYPES:
            raise SuiteError(f"{where}: functionality {func!r}: field 'expect_params': training hint 'train.as' "
                             f"{hint!r} is not a test type ({', '.join(TEST_TYPES)})")
        if func in hints and hints[func] != hint:
            raise SuiteError(f"{where}: functionality {func!r}: field 'expect_params': its cases' training hints "
                             f"('train.as') differ ({hints[func]!r} and {hint!r}); suite.type_folds: trained groups "
                             "a functionality by one type")
        hints[func] = hint
    out["fold_type"] = [hints.get(f) or t for f, t in zip(out["functionality"], out["test_type"])]
    return out


def check_suite_inputs(df: pd.DataFrame, ttype: TaskType, path) -> None:
    """The suite's inputs are of the task type's arity: one text for SENT; a pair of texts for PARA, NLI,
    SIMILARITY; context and question for READ."""
    paired = df["inputs_b"].map(lambda v: v is not None and not (isinstance(v, float) and v != v))
    needs_b = head_of(ttype).two_texts(ttype)
    wrong = df[~paired] if needs_b else df[paired]
    if len(wrong):
        r = wrong.iloc[0]
        what = head_of(ttype).inputs_words(ttype)
        raise SuiteError(f"suite file {path}: case_id={r['case_id']!r}: field 'inputs_b': a {ttype.name} task needs "
                         f"{what}; {len(wrong)} case(s) of this suite do not match")


def checked_suite(df: pd.DataFrame, ttype: TaskType, path, declared: list[dict] | None = None) -> pd.DataFrame:
    """A suite checked against its task (``df.attrs`` kept): every case once (case ids unique), labels in the
    task's label set (a regression task's: gold scores in its score range), the expectations the task's head
    scores and their parameters (:func:`beluga.suites.format.validate_suite`), inputs of the task's arity
    (:func:`check_suite_inputs`). ``path`` names the suite in errors."""
    attrs = dict(df.attrs)
    out = validate_suite(df, path, label_set(ttype), declared, head=ttype.head,
                         score_range=getattr(ttype, "score_range", None))
    out.attrs.update(attrs)
    check_suite_inputs(out, ttype, path)
    return out


def read_suite(path, task: str | None = None, *, paper_fixes: bool = True, recorded: dict[str, str] | None = None,
               subset: bool = False, task_field: str = "--task") -> tuple[pd.DataFrame, TaskType]:
    """(suite, task type) of any suite file -- the project's Parquet / CSV / JSONL, a CheckList JSONL export or
    release suite (:func:`beluga.suites.checklist.read_any_suite`) -- the one reader of the pipeline
    (``suite.path``), ``test``, ``score`` and ``suite export``. The task: ``task`` (refused in one line when the
    file records another), else the file's own, else the one the models record (``recorded``: {model: task}),
    else READ for a suite of answers without labels (:func:`_infer_task`); the suite then passes
    :func:`checked_suite` for it. ``task_field`` names where ``task`` came from in errors: a command-line
    option (``--task``) or the configuration's field (``type``). ``paper_fixes``: the BELUGA paper's fixes of
    CheckList's suites; ``subset``: only the cases of CheckList's published runs (:func:`checklist_subset`).
    A process reads a file once while it is unchanged (a dry run and ``plan`` read each task's suite more than
    once: CheckList's release tarballs take seconds each); every call gets its own copy."""
    try:
        st = os.stat(path)
    except OSError:
        raise SuiteError(f"suite file {path}: field 'path': file does not exist") from None
    suite, name = _read_suite(str(path), os.path.realpath(path), st.st_mtime_ns, st.st_size, bool(paper_fixes),
                              task, tuple((recorded or {}).items()), task_field)
    suite = suite.copy()
    if subset:
        suite = checklist_subset(suite, path)
    return suite, get_task_type(name)


@functools.lru_cache(maxsize=4)
def _read_suite(path: str, real: str, mtime_ns: int, size: int, paper_fixes: bool, task: str | None,
                recorded: tuple[tuple[str, str], ...], task_field: str) -> tuple[pd.DataFrame, str]:
    """:func:`read_suite`'s read, keyed by the file's identity and modification (``real``, ``mtime_ns``,
    ``size``: an edited file is read again) and the task as given."""
    from beluga.suites.checklist import read_any_suite

    if task is not None:
        get_task_type(task)   # an unknown name: refused before the file is read
    suite = read_any_suite(path, paper_fixes=paper_fixes)   # a CheckList suite checked against its own task
    ttype = get_task_type(_infer_task(suite, task, path, dict(recorded), task_field))
    if "checklist_suite" in suite.attrs:   # validated as its own task's, which ttype is
        check_suite_inputs(suite, ttype, path)
        return suite, ttype.name
    return checked_suite(suite, ttype, path, suite.attrs.get("declared")), ttype.name


def _infer_task(suite: pd.DataFrame, given: str | None, path: str, recorded: dict[str, str],
                task_field: str) -> str:
    """The task type: ``given`` (refused in one line when the suite records another: a CheckList suite's task,
    or a built suite's metadata ``beluga.task``), else the suite's own, else the one the models record
    (``recorded``: {model: task}; all must agree), else READ when the suite has answers and no labels."""
    known = suite.attrs.get("task_type")
    if given is not None:
        if known is not None and known != given:
            what = (f"CheckList's {suite.attrs['checklist_suite']!r} suite, a {known} suite"
                    if "checklist_suite" in suite.attrs
                    else f"a suite built for task {known!r} ({suite.attrs.get('task_source', 'its metadata')})")
            if task_field.startswith("--"):
                raise SuiteError(f"suite file {path}: field '{task_field}': {given!r}, but the file is {what}; "
                                 f"drop {task_field}")
            raise SuiteError(f"suite file {path}: field '{task_field}': the file is {what}, but the task it is "
                             f"configured for has type {given!r}")
        return given
    if known is not None:
        return known
    tasks = sorted(set(recorded.values()))
    if len(tasks) > 1:
        shown = ", ".join(f"{m}: {t}" for m, t in recorded.items())
        raise SuiteError(f"suite file {path}: field 'task': the models record different tasks ({shown})")
    if tasks:
        return tasks[0]
    if suite["answers"].notna().any() and not suite["labels"].notna().any():
        return "read"
    raise SuiteError(f"suite file {path}: field 'task': cannot infer the task from a project-format suite; "
                     f"pass --task ({', '.join(sorted(TASK_TYPES))}; CheckList suites: "
                     f"{', '.join(f'{k}={v}' for k, v in SUITE_TASK_TYPES.items())})")


def checklist_subset(suite: pd.DataFrame, path) -> pd.DataFrame:
    """``--checklist-subset``: only the cases CheckList's published runs scored (a test's ``run_idxs`` where it
    sampled ``n`` cases, every case of the others), as the suite records them (a CheckList release suite, or
    its JSONL export's ``in_run_subset``); a suite that records none is refused in one line."""
    keep = suite.attrs.get("checklist_run_subset")
    if keep is None:
        raise SuiteError(f"suite file {path}: field '--checklist-subset': the suite records no CheckList run "
                         "subset (only a CheckList release suite, or its JSONL export with in_run_subset, does)")
    attrs = dict(suite.attrs)
    out = suite[suite["case_id"].isin(set(keep))].reset_index(drop=True)
    out.attrs.update(attrs)
    return out


def cap_inputs(df: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """Keep at most ``n`` inputs per case: the first (the original of an
    INV/DIR case) and a seeded sample of the others, in their order, with the
    aligned ``inputs_b`` / ``labels`` / ``answers`` / per-input ``meta``.
    Triplet cases keep their three inputs."""
    if n is None:
        return df
    df = df.copy()
    for i, r in enumerate(df.itertuples(index=False)):
        k = len(r.inputs)
        if k <= n or r.expect == "triplet":
            continue
        rng = np.random.default_rng(stable_int(seed, r.case_id))
        keep = [0] + sorted(int(j) + 1 for j in rng.choice(k - 1, size=n - 1, replace=False))
        for col in ("inputs", "inputs_b", "labels", "answers"):
            v = df.at[i, col] if col in df.columns else None
            if v is not None and not (isinstance(v, float) and v != v):
                df.at[i, col] = [list(v)[j] for j in keep]
        meta = df.at[i, "meta"]
        if isinstance(meta, str):
            parsed = json_loads(meta)
            if isinstance(parsed, list) and len(parsed) == k:
                df.at[i, "meta"] = json.dumps([parsed[j] for j in keep])
    return df


def subsample_cases(df: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """At most ``n`` cases per functionality: a seeded sample drawn per
    functionality (independent of the other functionalities), suite order kept."""
    if n is None:
        return df
    keep = set()
    for func, group in df.groupby("functionality", sort=False):
        ids = sorted(group["case_id"])
        if len(ids) <= n:
            keep.update(ids)
            continue
        rng = np.random.default_rng(stable_int(seed, func))
        keep.update(ids[i] for i in rng.choice(len(ids), size=n, replace=False))
    return df[df["case_id"].isin(keep)].reset_index(drop=True)


def make_suite(suite_cfg: dict, task_type: str, pool: pd.DataFrame | None) -> tuple[pd.DataFrame, list | None]:
    """(the task's suite as configured, validated; the spec's declared
    functionality table or None): rendered from a suite spec (``generate`` /
    ``spec``; its pool sources read from the i.i.d. ``pool``), or read from
    ``suite.path`` with the configured subsampling."""
    ttype = get_task_type(task_type)
    if suite_spec_name(suite_cfg):
        from beluga.suites import spec as suite_spec

        spec = load_task_spec(suite_cfg, task_type)
        _log.info("suite rendered from spec %s, %s", suite_spec_name(suite_cfg), spec_seed_words(suite_cfg, spec))
        df = suite_spec.render_spec(spec, suite_spec.load_sources(spec, pool), seed=int(suite_cfg["seed"]),
                                    cases_per_functionality=int(suite_cfg["cases_per_functionality"]),
                                    max_perturbations=int(suite_cfg["max_perturbations"]),
                                    max_words=int(suite_cfg["max_words"]))
        keep = set(select_functionalities(pd.DataFrame(suite_spec.catalogue(spec)), suite_cfg)["functionality"])
        declared = suite_spec.declared(spec, keep)
    else:
        df, _ = read_suite(suite_cfg["path"], task_type, paper_fixes=suite_cfg["paper_fixes"], task_field="type")
        df = subsample_cases(df, suite_cfg["max_cases_per_functionality"], int(suite_cfg["seed"]))
        df = cap_inputs(df, suite_cfg["max_inputs_per_case"], int(suite_cfg["seed"]))
        declared = None
    df = select_functionalities(df, suite_cfg)
    return checked_suite(df, ttype, suite_cfg.get("path", "generated suite"), declared), declared


def split_cases(suite_path: str, split_path: str, task_type: str, split: str,
                functionalities=None) -> pd.DataFrame:
    """The cases of one split (``train`` / ``val`` / ``test``) of a built
    suite, optionally only those of ``functionalities`` (None: all)."""
    from beluga.core.io import read_parquet
    from beluga.suites.format import load_suite

    suite = load_suite(suite_path, label_set(get_task_type(task_type)))
    ids = read_parquet(split_path, "suite split")
    keep = set(ids.loc[ids["split"] == split, "case_id"])
    cases = suite[suite["case_id"].isin(keep)]
    if functionalities is not None:
        cases = cases[cases["functionality"].isin(set(functionalities))]
    return cases.reset_index(drop=True)
