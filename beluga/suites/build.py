"""A task's suite as its config describes it: generated offline, or read from
a suite file (the project's formats or a CheckList export), checked against
the task's type, subsampled as configured, validated."""

from __future__ import annotations

import functools
import json
import os

import numpy as np
import pandas as pd

from beluga.bounds import json_loads
from beluga.errors import ConfigError, SuiteError
from beluga.folds import stable_int
from beluga.heads import head_of
from beluga.suites.format import TEST_TYPES, validate_suite
from beluga.tasks import TaskType, get_task_type


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


def suite_functionalities(suite_cfg: dict, task_type: str) -> pd.DataFrame:
    """Functionality table known before anything runs (fold enumeration at
    DAG-construction time): from the suite spec or the suite file
    (checked against the task type: :func:`check_suite_task_type`), with the
    number of cases each functionality will have (``n_cases``, after
    ``max_cases_per_functionality``)."""
    return select_functionalities(_all_functionalities(suite_cfg, task_type), suite_cfg)


def suite_spec_name(suite_cfg: dict) -> str | None:
    """The spec a suite is rendered from: ``generate`` (a packaged spec's name) or ``spec`` (a file); None for a
    suite file."""
    return suite_cfg.get("generate") or suite_cfg.get("spec")


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
    df = read_suite_file(suite_cfg, task_type)
    table = df[["functionality", "capability", "test_type"]].drop_duplicates("functionality").reset_index(drop=True)
    n = df.groupby("functionality", sort=False).size()
    cap = suite_cfg.get("max_cases_per_functionality")
    table["n_cases"] = [int(n[f]) if cap is None else min(int(n[f]), int(cap)) for f in table["functionality"]]
    return with_fold_types(table, df, suite_cfg["type_folds"], f"suite file {suite_cfg['path']}")


#: ``tasks.<id>.suite.type_folds``: the test type the ``type`` partition groups a functionality under
TYPE_FOLDS = ("declared", "trained")


def with_fold_types(functionalities: pd.DataFrame, cases: pd.DataFrame, type_folds: str, where: str) -> pd.DataFrame:
    """The functionality table with ``fold_type``, the test type the ``type``
    partition groups each functionality under (:func:`beluga.folds.enumerate_folds`):
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


def check_suite_task_type(df: pd.DataFrame, task_type: str, path) -> None:
    """The suite must be one the task can be tested on: a CheckList export
    of the task type's own suite, and inputs of the task type's arity (one
    text for SENT; a pair of texts for PARA; context and question for READ)."""
    ttype = get_task_type(task_type)
    known = df.attrs.get("task_type")
    if known is not None and known != ttype.name:
        what = (f"CheckList's {df.attrs['checklist_suite']!r} suite, a {known} suite" if "checklist_suite" in df.attrs
                else f"a suite built for task {known!r} ({df.attrs.get('task_source', 'its metadata')})")
        raise SuiteError(f"suite file {path}: field 'type': the file is {what}, but the task it is configured for "
                         f"has type {ttype.name!r}")
    paired = df["inputs_b"].map(lambda v: v is not None and not (isinstance(v, float) and v != v))
    needs_b = head_of(ttype).two_texts(ttype)
    wrong = df[~paired] if needs_b else df[paired]
    if len(wrong):
        r = wrong.iloc[0]
        what = head_of(ttype).inputs_words(ttype)
        raise SuiteError(f"suite file {path}: case_id={r['case_id']!r}: field 'inputs_b': a {ttype.name} task needs "
                         f"{what}; {len(wrong)} case(s) of this suite do not match")


def read_suite_file(suite_cfg: dict, task_type: str) -> pd.DataFrame:
    """A suite named by ``suite.path`` (project Parquet / CSV / JSONL, or a
    CheckList JSONL export), validated against the task type; the paper's
    fixes as configured. A process reads a file once while it is unchanged
    (a dry run and ``plan`` read each task's suite more than once: CheckList's
    release tarballs take seconds each); every call gets its own copy."""
    path = suite_cfg["path"]
    try:
        st = os.stat(path)
    except OSError:
        raise SuiteError(f"suite file {path}: field 'path': file does not exist") from None
    df = _read_suite_file(str(path), os.path.realpath(path), st.st_mtime_ns, st.st_size,
                          bool(suite_cfg["paper_fixes"]), task_type)
    return df.copy()


@functools.lru_cache(maxsize=4)
def _read_suite_file(path: str, real: str, mtime_ns: int, size: int, paper_fixes: bool,
                     task_type: str) -> pd.DataFrame:
    """:func:`read_suite_file`'s read, keyed by the file's identity and modification (``real``, ``mtime_ns``,
    ``size``: an edited file is read again)."""
    from beluga.suites.checklist import read_any_suite

    ttype = get_task_type(task_type)
    df = read_any_suite(path, paper_fixes=paper_fixes, label_set=label_set(ttype), head=ttype.head)
    check_suite_task_type(df, task_type, path)
    return df


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
        df = suite_spec.render_spec(spec, suite_spec.load_sources(spec, pool), seed=int(suite_cfg["seed"]),
                                    cases_per_functionality=int(suite_cfg["cases_per_functionality"]),
                                    max_perturbations=int(suite_cfg["max_perturbations"]),
                                    max_words=int(suite_cfg["max_words"]))
        keep = set(select_functionalities(pd.DataFrame(suite_spec.catalogue(spec)), suite_cfg)["functionality"])
        declared = suite_spec.declared(spec, keep)
    else:
        df = read_suite_file(suite_cfg, task_type)
        df = subsample_cases(df, suite_cfg["max_cases_per_functionality"], int(suite_cfg["seed"]))
        df = cap_inputs(df, suite_cfg["max_inputs_per_case"], int(suite_cfg["seed"]))
        declared = None
    df = select_functionalities(df, suite_cfg)
    return validate_suite(df, suite_cfg.get("path", "generated suite"), label_set(ttype), declared), declared


def split_cases(suite_path: str, split_path: str, task_type: str, split: str,
                functionalities=None) -> pd.DataFrame:
    """The cases of one split (``train`` / ``val`` / ``test``) of a built
    suite, optionally only those of ``functionalities`` (None: all)."""
    from beluga.io import read_parquet
    from beluga.suites.format import load_suite

    suite = load_suite(suite_path, label_set(get_task_type(task_type)))
    ids = read_parquet(split_path, "suite split")
    keep = set(ids.loc[ids["split"] == split, "case_id"])
    cases = suite[suite["case_id"].isin(keep)]
    if functionalities is not None:
        cases = cases[cases["functionality"].isin(set(functionalities))]
    return cases.reset_index(drop=True)
