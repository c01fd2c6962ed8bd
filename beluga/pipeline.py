"""The steps of the DAG as plain functions (one per rule). workflow_scripts/
only translate snakemake's input/params/output into these calls."""

from __future__ import annotations

import itertools
import json
import logging
import os
import platform
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from beluga import folds as folds_mod
from beluga.clock import Clock
from beluga.data import iid as iid_mod
from beluga.errors import ConfigError, SuiteError
from beluga.io import read_parquet, write_csv, write_json, write_parquet, write_text
from beluga.metrics import aggregate, scores_markdown
from beluga.scoring import pass_rates, score_cases
from beluga.suites.format import functionality_table, load_suite, save_suite
from beluga.tasks import get_task

# torch / transformers are imported inside the training and prediction steps
# only, so cheap steps (scoring, aggregation, plots) start fast.

log = logging.getLogger(__name__)

CONFIGURATIONS = ("iid_to_t", "iid_plus_t", "iid_to_iid_plus_t")
# configuration -> (starts from the IID model?, mixes D_train into the suite stage?)
CONFIG_SPEC = {"iid_to_t": (True, False), "iid_plus_t": (False, True), "iid_to_iid_plus_t": (True, True)}
RUN_FILE = "beluga_run.json"
#: what a fold's model predicts of T_test: the functionalities it is scored on, or all
PREDICT_SCOPES = ("scored", "all")

PREDICTION_SCHEMA = pa.schema([
    ("split", pa.string()), ("case_id", pa.string()), ("input_idx", pa.int32()),
    ("probs", pa.list_(pa.float32())), ("label", pa.int32()),
])
QA_PREDICTION_SCHEMA = pa.schema([
    ("split", pa.string()), ("case_id", pa.string()), ("input_idx", pa.int32()),
    ("answer", pa.string()), ("start", pa.int32()), ("end", pa.int32()),
])


# ---------------------------------------------------------------- suites
def _label_set(task) -> tuple[int, ...] | None:
    """The suite's integer label set (None for QA, whose labels are answer strings)."""
    return tuple(task.suite_labels) or None


def _select_functionalities(df: pd.DataFrame, suite_cfg: dict) -> pd.DataFrame:
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


def suite_functionalities(suite_cfg: dict, task_type: str | None = None) -> pd.DataFrame:
    """Functionality table known before anything runs (fold enumeration at
    DAG-construction time): from the generator's catalogue or the suite file
    (checked against ``task_type``: :func:`check_suite_task`), with the
    number of cases each functionality will have (``n_cases``, after
    ``max_cases_per_functionality``)."""
    return _select_functionalities(_all_suite_functionalities(suite_cfg, task_type), suite_cfg)


def _all_suite_functionalities(suite_cfg: dict, task_type: str | None = None) -> pd.DataFrame:
    if "generate" in suite_cfg:
        from beluga.suites.generator import sent_catalogue

        if suite_cfg["generate"] != "sent_default":
            raise ConfigError(f"config: field 'suite.generate': unknown generator {suite_cfg['generate']!r}")
        if task_type not in (None, "sent"):
            raise ConfigError(f"config: field 'suite.generate': the built-in generator makes a SENT suite; this "
                              f"task's type is {task_type!r} (give its suite with 'path')")
        df = pd.DataFrame(sent_catalogue())[["functionality", "capability", "test_type"]]
        return df.assign(n_cases=int(suite_cfg.get("cases_per_functionality", 16)))
    df = _read_suite_file(suite_cfg, task_type)
    table = df[["functionality", "capability", "test_type"]].drop_duplicates("functionality").reset_index(drop=True)
    n = df.groupby("functionality", sort=False).size()
    cap = suite_cfg.get("max_cases_per_functionality")
    table["n_cases"] = [int(n[f]) if cap is None else min(int(n[f]), int(cap)) for f in table["functionality"]]
    return table


def check_suite_task(df: pd.DataFrame, task_type: str, path) -> None:
    """The suite must be one the task can be tested on: a CheckList export
    of the task's own suite, and inputs of the task's arity (one text for
    SENT; a pair of texts for PARA; context and question for READ)."""
    task = get_task(task_type)
    known = df.attrs.get("task")
    if known is not None and known != task.name:
        name = df.attrs.get("checklist_suite", known)
        raise SuiteError(f"suite file {path}: field 'type': the file is CheckList's {name!r} suite, a {known} "
                         f"suite, but the task it is configured for has type {task.name!r}")
    paired = df["inputs_b"].map(lambda v: v is not None and not (isinstance(v, float) and v != v))
    needs_b = task.kind == "qa" or getattr(task, "pair", False)
    wrong = df[~paired] if needs_b else df[paired]
    if len(wrong):
        r = wrong.iloc[0]
        what = ("context and question (inputs and inputs_b)" if task.kind == "qa" else
                "pairs of texts (inputs and inputs_b)" if needs_b else "single texts (no inputs_b)")
        raise SuiteError(f"suite file {path}: case_id={r['case_id']!r}: field 'inputs_b': a {task.name} task needs "
                         f"{what}; {len(wrong)} case(s) of this suite do not match")


def _read_suite_file(suite_cfg: dict, task_type: str | None = None) -> pd.DataFrame:
    """A suite named by ``suite.path`` (project Parquet / CSV / JSONL, or a
    CheckList JSONL export), validated (against ``task_type`` when given);
    the paper's fixes as configured."""
    from beluga.suites.checklist import read_any_suite

    path = suite_cfg["path"]
    if not Path(path).exists():
        raise SuiteError(f"suite file {path}: field 'path': file does not exist")
    if task_type is None:
        return read_any_suite(path, paper_fixes=bool(suite_cfg.get("paper_fixes", True)))
    task = get_task(task_type)
    df = read_any_suite(path, paper_fixes=bool(suite_cfg.get("paper_fixes", True)), label_set=_label_set(task),
                        task_kind=task.kind)
    check_suite_task(df, task_type, path)
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
        rng = np.random.default_rng(folds_mod._stable_int(seed, r.case_id))
        keep = [0] + sorted(int(j) + 1 for j in rng.choice(k - 1, size=n - 1, replace=False))
        for col in ("inputs", "inputs_b", "labels", "answers"):
            v = df.at[i, col] if col in df.columns else None
            if v is not None and not (isinstance(v, float) and v != v):
                df.at[i, col] = [list(v)[j] for j in keep]
        meta = df.at[i, "meta"]
        if isinstance(meta, str):
            parsed = json.loads(meta)
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
        rng = np.random.default_rng(folds_mod._stable_int(seed, func))
        keep.update(ids[i] for i in rng.choice(len(ids), size=n, replace=False))
    return df[df["case_id"].isin(keep)].reset_index(drop=True)


def build_suite(suite_cfg: dict, task_type: str, pool_path: str | None, out_path: str) -> None:
    pool = read_parquet(pool_path, "i.i.d. pool") if "generate" in suite_cfg else None
    df, declared = make_suite(suite_cfg, task_type, pool, with_declared=True)
    save_suite(df, out_path, declared=declared)


def make_suite(suite_cfg: dict, task_type: str, pool: pd.DataFrame | None, with_declared: bool = False):
    """The task's suite as configured, validated (generated from the i.i.d.
    ``pool``'s sentences, or read from ``suite.path`` with the configured
    subsampling); with ``with_declared`` also the generator's declared
    functionality table (None for suite files)."""
    task = get_task(task_type)
    if "generate" in suite_cfg:
        from beluga.suites.generator import generate_sent_suite, sent_catalogue

        sentences = list(pool["text"])
        df = generate_sent_suite(sentences, seed=int(suite_cfg["seed"]),
                                 cases_per_functionality=int(suite_cfg["cases_per_functionality"]),
                                 max_perturbations=int(suite_cfg.get("max_perturbations", 3)),
                                 max_words=int(suite_cfg.get("max_words", 40)))
        keep = set(_select_functionalities(pd.DataFrame(sent_catalogue()), suite_cfg)["functionality"])
        declared = [{k: f[k] for k in ("functionality", "capability", "test_type", "description")}
                    for f in sent_catalogue() if f["functionality"] in keep]
    else:
        df = _read_suite_file(suite_cfg, task_type)
        df = subsample_cases(df, suite_cfg.get("max_cases_per_functionality"), int(suite_cfg.get("seed", 7)))
        df = cap_inputs(df, suite_cfg.get("max_inputs_per_case"), int(suite_cfg.get("seed", 7)))
        declared = None
    from beluga.suites.format import validate_suite

    df = _select_functionalities(df, suite_cfg)
    df = validate_suite(df, suite_cfg.get("path", "generated suite"), _label_set(task), declared)
    return (df, declared) if with_declared else df


def split_suite(suite_path: str, task_type: str, fractions, seed: int, out_split: str, out_summary: str) -> None:
    suite = load_suite(suite_path, _label_set(get_task(task_type)))
    split = folds_mod.split_suite(suite, tuple(fractions), seed)
    write_parquet(split, out_split)
    summary = functionality_table(suite)
    counts = split.groupby(["functionality", "split"]).size().unstack(fill_value=0)
    for s in ("train", "val", "test"):
        summary[f"n_{s}"] = summary["functionality"].map(counts.get(s, pd.Series(dtype=int))).fillna(0).astype(int)
    with_tmp = summary.to_csv(sep="\t", index=False)
    write_text(with_tmp, out_summary)


# ---------------------------------------------------------------- i.i.d. data
def prepare_iid(iid_cfg: dict, task_type: str, outputs: dict[str, str]) -> None:
    task = get_task(task_type)
    parts = iid_mod.load_splits(iid_cfg, task.kind, set(task.iid_labels))
    for name, path in outputs.items():
        write_parquet(parts[name], path)


# ---------------------------------------------------------------- jobs
def _suite_split(suite_path: str, split_path: str, task_type: str, split: str) -> pd.DataFrame:
    suite = load_suite(suite_path, _label_set(get_task(task_type)))
    ids = read_parquet(split_path, "suite split")
    keep = set(ids.loc[ids["split"] == split, "case_id"])
    return suite[suite["case_id"].isin(keep)].reset_index(drop=True)


def _head(task) -> str:
    return "qa" if task.kind == "qa" else "sequence"


def _device_name(dev) -> str:
    import torch

    return f"{dev} ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else str(dev)


def _versions() -> dict:
    import numpy
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": numpy.__version__, "pandas": pd.__version__}


@dataclass
class _Job:
    """What a training / prediction job runs on: device, resolved precision, threads."""

    device: object
    precision: object
    threads: int

    def record(self) -> dict:
        return {"versions": _versions(), "device": _device_name(self.device), "torch_threads": self.threads,
                **self.precision.record()}


def _start_job(threads: int, precision: str) -> _Job:
    """Per job, before any model is built: fixed torch threads and
    deterministic algorithms, the device, the resolved precision (:mod:`beluga.precision`)."""
    from beluga.modeling import configure_torch, pick_device
    from beluga.precision import resolve

    configure_torch(threads, cuda_deterministic=os.environ.get("BELUGA_CUDA_DETERMINISTIC", "0") == "1")
    dev = pick_device()
    return _Job(dev, resolve(precision, dev), int(threads))


def train_iid(model_spec: str, task_type: str, iid_train: str, hparams: dict, seed: int, max_length: int,
              out_dir: str, threads: int = 1, doc_stride: int = 128, checkpoint_dir: str | None = None,
              precision: str = "auto", checkpoint_every_s: float = 0.0, nonfinite: str = "stop") -> dict:
    """The IID model. ``checkpoint_dir`` (optional): epoch checkpoints, to
    resume an interrupted job (:mod:`beluga.checkpoint`); deleted once the
    model is written. Returns the job's timing parts."""
    from beluga import checkpoint
    from beluga.modeling import load_model, save_model, set_seed
    from beluga.training import build_streams, train

    clock = Clock()
    job = _start_job(threads, precision)
    task = get_task(task_type)
    set_seed(seed)
    model, tokenizer = load_model(model_spec, task.num_model_labels, task_head=_head(task))
    model.to(job.device)
    streams = build_streams(task, read_parquet(iid_train, "i.i.d. training data"), None)
    clock.mark("train_start")
    with clock("train"):
        summary = train(model, tokenizer, streams, "vanilla", dict(hparams), seed, max_length=max_length,
                        doc_stride=doc_stride, checkpoint_dir=checkpoint_dir, precision=job.precision,
                        checkpoint_every_s=checkpoint_every_s, nonfinite=nonfinite, job=f"{task.name} IID model",
                        fingerprint_extra={"task": task.name, "configuration": "iid", "model": model_spec})
    clock.split("train", "checkpoint", summary["checkpoint_s"])
    record = {"configuration": "iid", "method": "vanilla", "partition": "standard", "fold": "all",
              "model": model_spec, "hparams": hparams, "seed": seed, **summary, **job.record(),
              "timing": clock.record()}
    save_model(model, tokenizer, out_dir, {RUN_FILE: json.dumps(record, indent=2)})
    checkpoint.clear(checkpoint_dir)
    return clock.parts


def _train_fold(*, task, configuration: str, method: str, fold: dict, all_functionalities: list[str],
                suite_path: str, split_path: str, iid_train: str | None, start_model: str, hparams: dict,
                seed: int, max_length: int, iid_in_mix: int | None, dir_train_slice: bool, job: _Job,
                doc_stride: int, checkpoint_dir: str | None = None, clock: Clock | None = None,
                checkpoint_every_s: float = 0.0, nonfinite: str = "stop"):
    """The behavioral fine-tuning step shared by ``finetune``,
    ``finetune_model`` and ``trial``: (model, tokenizer, training summary).
    ``checkpoint_dir``: epoch checkpoints (the caller deletes it once its
    outputs are written)."""
    from beluga.methods import get_algorithm
    from beluga.modeling import load_model, set_seed
    from beluga.training import build_streams, train

    if configuration not in CONFIG_SPEC:
        raise ConfigError(f"config: field 'configurations': unknown configuration {configuration!r} "
                          f"(known: {', '.join(CONFIG_SPEC)})")
    clock = clock or Clock()
    _, mix = CONFIG_SPEC[configuration]
    train_funcs = set(folds_mod.training_functionalities(fold, all_functionalities))
    suite_train = _suite_split(suite_path, split_path, task.name, "train")
    suite_train = suite_train[suite_train["functionality"].isin(train_funcs)]
    iid_df = None
    if mix:
        if iid_train is None:
            raise ConfigError(f"configuration {configuration}: needs the i.i.d. training data")
        iid_df = read_parquet(iid_train, "i.i.d. training data")
        if iid_in_mix is not None and len(iid_df) > iid_in_mix:
            iid_df = iid_df.sample(n=int(iid_in_mix), random_state=seed).reset_index(drop=True)
    set_seed(seed)
    overrides = get_algorithm(method).config_overrides(hparams)
    model, tokenizer = load_model(start_model, task.num_model_labels, config_overrides=overrides,
                                  task_head=_head(task))
    model.to(job.device)
    streams = build_streams(task, iid_df, suite_train, dir_train_slice=dir_train_slice)
    clock.mark("train_start")
    with clock("train"):
        summary = train(model, tokenizer, streams, method, dict(hparams), seed, max_length=max_length,
                        doc_stride=doc_stride, checkpoint_dir=checkpoint_dir, precision=job.precision,
                        checkpoint_every_s=checkpoint_every_s, nonfinite=nonfinite,
                        job=f"{task.name} {configuration}/{method}/{fold.get('partition')}/{fold.get('fold')}",
                        fingerprint_extra={"task": task.name, "configuration": configuration,
                                           "partition": fold.get("partition"), "fold": fold.get("fold")})
    clock.split("train", "checkpoint", summary["checkpoint_s"])
    return model, tokenizer, summary


GRID_KEYS = {"lr": "lr", "batch_size": "bs", "epochs": "ep"}


def grid_points(grid: dict) -> dict[str, dict]:
    """Trial id -> grid point for a grid ``{lr: [...], batch_size: [...],
    epochs: [...]}`` (any subset of the keys), in grid order; ids such as
    ``lr2e-05-bs8-ep1`` are stable and filesystem-safe."""
    unknown = [k for k in grid if k not in GRID_KEYS]
    if unknown:
        raise ConfigError(f"config: field 'selection.grid.{unknown[0]}': not a searchable hyper-parameter "
                          f"(searchable: {', '.join(GRID_KEYS)})")
    keys = [k for k in GRID_KEYS if grid.get(k)]
    if not keys:
        return {}
    for k in keys:
        ids = [f"{v:g}" for v in grid[k]]
        dup = next((i for i, x in enumerate(ids) if x in ids[:i]), None)
        if dup is not None:
            first = grid[k][ids.index(ids[dup])]
            raise ConfigError(f"config: field 'selection.grid.{k}': values {first!r} and {grid[k][dup]!r} have the "
                              f"same trial id ({GRID_KEYS[k]}{ids[dup]}); use values that differ in 6 significant "
                              "digits")
    points = {}
    for combo in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, combo))
        points["-".join(f"{GRID_KEYS[k]}{v:g}" for k, v in point.items())] = point
    return points


def read_hparams(hparams: dict, selected: str | None) -> tuple[dict, dict | None]:
    """The run's hyper-parameters: ``hparams`` with the values chosen by model
    selection on top (``selected``: the select rule's JSON), and that choice."""
    if selected is None:
        return dict(hparams), None
    choice = json.loads(Path(selected).read_text())
    return {**hparams, **choice["hparams"]}, choice


def scored_functionalities(fold: dict, scope: str = "scored") -> list[str] | None:
    """The functionalities whose T_test a fold's model must predict: the ones
    it is scored on (its held-out functionalities; all of them for ``seen``
    and the IID baseline), or None (every functionality) with ``scope="all"``."""
    if scope not in PREDICT_SCOPES:
        raise ConfigError(f"config: field 'predict.scope': {scope!r} is not one of {', '.join(PREDICT_SCOPES)}")
    return None if scope == "all" else list(fold["held_out"])


def _fold_record(*, task, configuration, method, partition, fold, start_label, hparams, seed, choice, iid_in_mix,
                 summary, job: _Job) -> dict:
    return {"task": task.name, "configuration": configuration, "method": method, "partition": partition,
            "fold": fold["fold"], "held_out": fold["held_out"] if partition != "seen" else [],
            "start_model": start_label, "hparams": hparams, "seed": seed,
            "selection": None if choice is None else {k: choice[k] for k in ("policy", "fold", "trial", "score")},
            "iid_in_mix": iid_in_mix, **summary, **job.record()}


def finetune(*, task_type: str, configuration: str, method: str, partition: str, fold: dict,
             all_functionalities: list[str], suite_path: str, split_path: str, iid_train: str | None,
             iid_test: str, start_model: str, hparams: dict, seed: int, max_length: int, iid_in_mix: int | None,
             dir_train_slice: bool, out_predictions: str, out_run: str, out_outcomes: str,
             out_model: str | None = None, threads: int = 1, doc_stride: int = 128, selected: str | None = None,
             start_label: str | None = None, checkpoint_dir: str | None = None, precision: str = "auto",
             batch_size: int = 64, scope: str = "scored", checkpoint_every_s: float = 0.0,
             nonfinite: str = "stop") -> dict:
    """One fold, in one process with the model in memory: behavioral
    fine-tuning in one configuration with one method, predictions for the
    T_test cases the fold is scored on (``scope``) and the i.i.d. test set,
    and their outcomes. The model is written only to ``out_model`` (when
    given: kept models, or an LP model that LP-FT starts from).
    ``checkpoint_dir`` (optional): epoch checkpoints, to resume an
    interrupted job (:mod:`beluga.checkpoint`); deleted once the outputs are
    written. Returns the job's timing parts."""
    from beluga import checkpoint
    from beluga.modeling import save_model

    clock = Clock()
    job = _start_job(threads, precision)
    task = get_task(task_type)
    hparams, choice = read_hparams(hparams, selected)
    model, tokenizer, summary = _train_fold(
        task=task, configuration=configuration, method=method, fold=fold, all_functionalities=all_functionalities,
        suite_path=suite_path, split_path=split_path, iid_train=iid_train, start_model=start_model,
        hparams=hparams, seed=seed, max_length=max_length, iid_in_mix=iid_in_mix,
        dir_train_slice=dir_train_slice, job=job, doc_stride=doc_stride, checkpoint_dir=checkpoint_dir, clock=clock,
        checkpoint_every_s=checkpoint_every_s, nonfinite=nonfinite)
    record = _fold_record(task=task, configuration=configuration, method=method, partition=partition, fold=fold,
                          start_label=start_label or start_model, hparams=hparams, seed=seed, choice=choice,
                          iid_in_mix=iid_in_mix, summary=summary, job=job)
    if out_model is not None:
        with clock("save_model"):
            save_model(model, tokenizer, out_model, {RUN_FILE: json.dumps(record, indent=2)})
    functionalities = scored_functionalities(fold, scope)
    suite_test, iid = _test_sets(suite_path, split_path, task_type, iid_test, functionalities)
    with clock("predict"):
        preds = _predictions(model, tokenizer, task, suite_test, iid, batch_size, max_length, doc_stride,
                             job.precision)
    with clock("score"):
        outcome = _outcomes(task, suite_test, preds, iid, fold["held_out"], source=out_predictions)
    record.update(n_predictions=len(preds), predict_scope=scope, predicted_functionalities=functionalities,
                  timing=clock.record())
    _write_predictions(preds, task, out_predictions)
    write_json(record, out_run)
    write_parquet(outcome, out_outcomes)
    checkpoint.clear(checkpoint_dir)
    return clock.parts


def finetune_model(*, task_type: str, configuration: str, method: str, partition: str, fold: dict,
                   all_functionalities: list[str], suite_path: str, split_path: str, iid_train: str | None,
                   start_model: str, hparams: dict, seed: int, max_length: int, iid_in_mix: int | None,
                   dir_train_slice: bool, out_dir: str, threads: int = 1, doc_stride: int = 128,
                   selected: str | None = None, start_label: str | None = None, checkpoint_dir: str | None = None,
                   precision: str = "auto", checkpoint_every_s: float = 0.0, nonfinite: str = "stop") -> dict:
    """Behavioral fine-tuning of one fold whose model is kept on disk
    (``keep_models: true``): the model and its run record go to ``out_dir``;
    the ``predict`` and ``outcomes`` rules take it from there. Returns the
    job's timing parts."""
    from beluga import checkpoint
    from beluga.modeling import save_model

    clock = Clock()
    job = _start_job(threads, precision)
    task = get_task(task_type)
    hparams, choice = read_hparams(hparams, selected)
    model, tokenizer, summary = _train_fold(
        task=task, configuration=configuration, method=method, fold=fold, all_functionalities=all_functionalities,
        suite_path=suite_path, split_path=split_path, iid_train=iid_train, start_model=start_model,
        hparams=hparams, seed=seed, max_length=max_length, iid_in_mix=iid_in_mix,
        dir_train_slice=dir_train_slice, job=job, doc_stride=doc_stride, checkpoint_dir=checkpoint_dir, clock=clock,
        checkpoint_every_s=checkpoint_every_s, nonfinite=nonfinite)
    record = _fold_record(task=task, configuration=configuration, method=method, partition=partition, fold=fold,
                          start_label=start_label or start_model, hparams=hparams, seed=seed, choice=choice,
                          iid_in_mix=iid_in_mix, summary=summary, job=job)
    record["timing"] = clock.record()
    save_model(model, tokenizer, out_dir, {RUN_FILE: json.dumps(record, indent=2)})
    checkpoint.clear(checkpoint_dir)
    return clock.parts


def trial(*, task_type: str, configuration: str, method: str, fold: dict, trial_id: str, grid_point: dict,
          all_functionalities: list[str], suite_path: str, split_path: str, iid_train: str | None,
          start_model: str, hparams: dict, seed: int, max_length: int, iid_in_mix: int | None,
          dir_train_slice: bool, batch_size: int, out_path: str, threads: int = 1, doc_stride: int = 128,
          checkpoint_dir: str | None = None, precision: str = "auto", checkpoint_every_s: float = 0.0,
          nonfinite: str = "stop") -> dict:
    """One grid point of model selection: train the fold as ``finetune`` does
    with ``grid_point`` on top of ``hparams``, score T_val of the fold's
    training functionalities (the held-out ones are never looked at), write
    the mean pass rate. ``checkpoint_dir``: as in :func:`finetune`."""
    from beluga import checkpoint

    clock = Clock()
    job = _start_job(threads, precision)
    task = get_task(task_type)
    hp = {**hparams, **grid_point}
    model, tokenizer, summary = _train_fold(
        task=task, configuration=configuration, method=method, fold=fold, all_functionalities=all_functionalities,
        suite_path=suite_path, split_path=split_path, iid_train=iid_train, start_model=start_model, hparams=hp,
        seed=seed, max_length=max_length, iid_in_mix=iid_in_mix, dir_train_slice=dir_train_slice,
        job=job, doc_stride=doc_stride, checkpoint_dir=checkpoint_dir, clock=clock,
        checkpoint_every_s=checkpoint_every_s, nonfinite=nonfinite)
    train_funcs = set(folds_mod.training_functionalities(fold, all_functionalities))
    val = _suite_split(suite_path, split_path, task_type, "val")
    val = val[val["functionality"].isin(train_funcs)].reset_index(drop=True)
    with clock("predict"):
        preds = _suite_predictions(model, tokenizer, task, val, "suite_val", batch_size, max_length, doc_stride,
                                   job.precision)
    with clock("score"):
        status = score_cases(val, preds, task, source=f"trial {trial_id}")
        rates = pass_rates(status, functionality_table(val)).set_index("functionality")["pass_rate"]
    score = float(rates.mean()) if rates.notna().any() else float("nan")
    write_json({"trial": trial_id, "grid_point": grid_point, "hparams": hp, "fold": fold["fold"],
                "partition": fold["partition"], "score": score, "metric": "mean T_val pass rate",
                "pass_rates": {k: (None if np.isnan(v) else v) for k, v in rates.items()},
                "steps": summary["steps"], "wall_time_s": summary["wall_time_s"], **job.precision.record(),
                "timing": clock.record()}, out_path)
    checkpoint.clear(checkpoint_dir)
    return clock.parts


def select_hparams(*, trials: list[str], policy: str, out_path: str) -> None:
    """The grid point with the best mean T_val pass rate (ties and NaN scores:
    the first in grid order wins / never wins)."""
    results = [json.loads(Path(t).read_text()) for t in trials]
    if not results:
        raise ConfigError("config: field 'selection.grid': no trials to select from")
    scored = [r for r in results if r["score"] == r["score"]]
    best = max(scored, key=lambda r: r["score"]) if scored else results[0]
    write_json({"policy": policy, "fold": f"{best['partition']}/{best['fold']}", "trial": best["trial"],
                "score": best["score"], "hparams": best["grid_point"],
                "trials": {r["trial"]: r["score"] for r in results}}, out_path)


# ---------------------------------------------------------------- predictions
def _model_outputs(model, tokenizer, task, texts: list[str], texts_b: list, batch_size: int, max_length: int,
                   doc_stride: int, precision) -> dict[str, list]:
    """Prediction columns for the inputs: ``probs`` (classification) or
    ``answer`` / ``start`` / ``end`` (extractive QA; texts = contexts,
    texts_b = questions)."""
    if task.kind == "qa":
        from beluga.qa import predict_qa

        spans = predict_qa(model, tokenizer, questions=texts_b, contexts=texts, batch_size=batch_size,
                           max_length=max_length, stride=doc_stride, precision=precision)
        return {"answer": [a for a, _, _ in spans], "start": [st for _, st, _ in spans],
                "end": [en for _, _, en in spans]}
    from beluga.modeling import predict_probs

    use_b = any(b is not None for b in texts_b)
    probs = predict_probs(model, tokenizer, texts, texts_b if use_b else None, batch_size, max_length,
                          precision=precision)
    return {"probs": [row.tolist() for row in probs]}


def _suite_predictions(model, tokenizer, task, cases: pd.DataFrame, split: str, batch_size: int,
                       max_length: int, doc_stride: int, precision) -> pd.DataFrame:
    """Predictions for every input of ``cases``, keyed by (case_id, input_idx)."""
    keys, texts, texts_b = [], [], []
    for r in cases.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            keys.append((r.case_id, j))
            texts.append(t)
            texts_b.append(r.inputs_b[j] if r.inputs_b is not None else None)
    out = pd.DataFrame({"split": split, "case_id": [k[0] for k in keys], "input_idx": [k[1] for k in keys]})
    for col, values in _model_outputs(model, tokenizer, task, texts, texts_b, batch_size, max_length,
                                      doc_stride, precision).items():
        out[col] = values
    return out


def _test_sets(suite_path: str, split_path: str, task_type: str, iid_test: str,
               functionalities: list[str] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(T_test cases of ``functionalities`` (None: all), the i.i.d. test set)."""
    suite_test = _suite_split(suite_path, split_path, task_type, "test")
    if functionalities is not None:
        suite_test = suite_test[suite_test["functionality"].isin(set(functionalities))].reset_index(drop=True)
    return suite_test, read_parquet(iid_test, "i.i.d. test data")


def _predictions(model, tokenizer, task, suite_test: pd.DataFrame, iid: pd.DataFrame, batch_size: int,
                 max_length: int, doc_stride: int, precision) -> pd.DataFrame:
    """Predictions for every input of the ``suite_test`` cases and every
    i.i.d. test example, keyed by (split, case_id, input_idx): class
    probabilities (``probs``; i.i.d. rows also carry the gold ``label``) or
    answer strings with character offsets (``answer``, ``start``, ``end``)."""
    suite = _suite_predictions(model, tokenizer, task, suite_test, "suite_test", batch_size, max_length, doc_stride,
                               precision)
    if task.kind == "qa":   # READ: contexts and questions
        texts, texts_b = list(iid["context"]), list(iid["question"])
    else:
        texts = list(iid["text"])
        texts_b = list(iid["text_b"]) if "text_b" in iid.columns else [None] * len(iid)
    iid_out = pd.DataFrame({"split": "iid_test", "case_id": iid["example_id"].astype(str), "input_idx": 0})
    for col, values in _model_outputs(model, tokenizer, task, texts, texts_b, batch_size, max_length,
                                      doc_stride, precision).items():
        iid_out[col] = values
    if task.kind != "qa":
        suite["label"] = None
        iid_out["label"] = iid["label"].astype(int).to_numpy()
    return pd.concat([suite, iid_out], ignore_index=True)


def _write_predictions(df: pd.DataFrame, task, out_path: str) -> None:
    """Write a predictions table; class probabilities are checked first (a
    model whose outputs are not finite probabilities never writes any)."""
    if task.kind != "qa" and len(df):
        from beluga.health import check_probabilities

        check_probabilities(np.array(df["probs"].tolist(), dtype=np.float64), f"predictions {out_path} (not written)",
                            keys=lambda i: (df["case_id"].iat[i], df["input_idx"].iat[i]))
    columns = {c: [None if (c == "label" and pd.isna(v)) else v for v in df[c]] for c in df.columns}
    schema = QA_PREDICTION_SCHEMA if task.kind == "qa" else PREDICTION_SCHEMA
    write_parquet(pa.Table.from_pydict({f.name: columns[f.name] for f in schema}, schema=schema), out_path)


def predict(*, task_type: str, model_dir: str, suite_path: str, split_path: str, iid_test: str,
            batch_size: int, max_length: int, out_path: str, out_run: str, threads: int = 1,
            doc_stride: int = 128, functionalities: list[str] | None = None, precision: str = "auto") -> dict:
    """Predictions of a model on disk (the IID baseline, kept fold models) for
    every input of the T_test cases of ``functionalities`` (None: all) and
    every i.i.d. test example (see :func:`_predictions`). Returns the job's
    timing parts."""
    from beluga.modeling import load_trained

    clock = Clock()
    job = _start_job(threads, precision)
    task = get_task(task_type)
    model, tokenizer = load_trained(model_dir, _head(task))
    model.to(job.device)
    suite_test, iid = _test_sets(suite_path, split_path, task_type, iid_test, functionalities)
    clock.mark("predict_start")
    with clock("predict"):
        df = _predictions(model, tokenizer, task, suite_test, iid, batch_size, max_length, doc_stride,
                          job.precision)
    _write_predictions(df, task, out_path)
    record = json.loads((Path(model_dir) / RUN_FILE).read_text())
    record["prediction_wall_time_s"] = round(clock.parts["predict"], 2)
    record["n_predictions"] = len(df)
    record["predicted_functionalities"] = functionalities
    record["prediction"] = {**job.record(), "timing": clock.record()}
    write_json(record, out_run)
    return clock.parts


# ---------------------------------------------------------------- scoring
def _outcomes(task, suite_test: pd.DataFrame, preds: pd.DataFrame, iid: pd.DataFrame, held_out: list[str],
              source: str) -> pd.DataFrame:
    """Per-case status on T_test (``held_out`` flags the fold's scored
    functionalities) and per-example i.i.d. outcomes, keyed by ids."""
    from beluga.metrics import iid_outcomes

    status = score_cases(suite_test, preds[preds["split"] == "suite_test"], task, source=source)
    status["split"] = "suite_test"
    status["held_out"] = status["functionality"].isin(set(held_out))
    iid_out = iid_outcomes(preds[preds["split"] == "iid_test"], iid, task.kind, source=source)
    out = pd.concat([status, iid_out], ignore_index=True)
    out["correct"] = out["correct"].astype("boolean")
    return out


def outcomes(*, task_type: str, suite_path: str, split_path: str, predictions: str, iid_test: str,
             held_out: list[str], out_path: str, functionalities: list[str] | None = None) -> None:
    """Outcomes of a predictions file (see :func:`_outcomes`): the T_test
    cases of ``functionalities`` (None: all; what was predicted)."""
    task = get_task(task_type)
    suite_test, iid = _test_sets(suite_path, split_path, task_type, iid_test, functionalities)
    preds = read_parquet(predictions, "predictions")
    write_parquet(_outcomes(task, suite_test, preds, iid, held_out, source=predictions), out_path)


def aggregate_task(*, task: str, task_type: str, suite_path: str, runs: list[dict], out_long: str,
                   out_scores: str, out_md: str, iid_metric: str = "mean") -> None:
    suite = load_suite(suite_path)
    funcs = functionality_table(suite)
    loaded = [dict(r, outcomes=read_parquet(r["path"], "outcomes")) for r in runs]
    long, scores = aggregate(loaded, funcs, task_type=task_type, iid_metric=iid_metric)
    write_csv(long, out_long)
    write_csv(scores, out_scores)
    write_text(scores_markdown(scores, task), out_md)


def plot_task(*, task: str, suite_path: str, pass_rates: str, scenario: str, configurations: list[str],
              methods: list[str], out_png: str) -> None:
    from beluga.plots import plot_heatmap

    funcs = functionality_table(load_suite(suite_path))
    long = pd.read_csv(pass_rates)
    plot_heatmap(long, funcs, scenario, configurations, methods, out_png,
                 title=f"{task.upper()} — pass rates (%), scenario: {scenario} (first row: IID model, standard)")
