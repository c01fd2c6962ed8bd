"""The steps of the DAG as plain functions (one per rule). workflow_scripts/
only translate snakemake's input/params/output into these calls."""

from __future__ import annotations

import json
import logging
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from beluga import folds as folds_mod
from beluga.data import iid as iid_mod
from beluga.errors import ConfigError, SuiteError
from beluga.io import write_csv, write_json, write_parquet, write_text
from beluga.metrics import aggregate, scores_markdown
from beluga.scoring import score_cases
from beluga.suites.format import functionality_table, load_suite, save_suite
from beluga.tasks import get_task

# torch / transformers are imported inside the training and prediction steps
# only, so cheap steps (scoring, aggregation, plots) start fast.

log = logging.getLogger(__name__)

CONFIGURATIONS = ("iid_to_t", "iid_plus_t", "iid_to_iid_plus_t")
# configuration -> (starts from the IID model?, mixes D_train into the suite stage?)
CONFIG_SPEC = {"iid_to_t": (True, False), "iid_plus_t": (False, True), "iid_to_iid_plus_t": (True, True)}
RUN_FILE = "beluga_run.json"

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


def suite_functionalities(suite_cfg: dict) -> pd.DataFrame:
    """Functionality table known before anything runs (fold enumeration at
    DAG-construction time): from the generator's catalogue or the suite file."""
    return _select_functionalities(_all_suite_functionalities(suite_cfg), suite_cfg)


def _all_suite_functionalities(suite_cfg: dict) -> pd.DataFrame:
    if "generate" in suite_cfg:
        from beluga.suites.generator import sent_catalogue

        if suite_cfg["generate"] != "sent_default":
            raise ConfigError(f"config: field 'suite.generate': unknown generator {suite_cfg['generate']!r}")
        return pd.DataFrame(sent_catalogue())[["functionality", "capability", "test_type"]]
    df = _read_suite_file(suite_cfg)
    return df[["functionality", "capability", "test_type"]].drop_duplicates("functionality").reset_index(drop=True)


def _read_suite_file(suite_cfg: dict) -> pd.DataFrame:
    """A suite named by ``suite.path`` (project Parquet / CSV / JSONL, or a
    CheckList JSONL export), validated; the paper's fixes as configured."""
    from beluga.suites.checklist import read_any_suite

    path = suite_cfg["path"]
    if not Path(path).exists():
        raise SuiteError(f"suite file {path}: field 'path': file does not exist")
    return read_any_suite(path, paper_fixes=bool(suite_cfg.get("paper_fixes", True)))


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
    task = get_task(task_type)
    if "generate" in suite_cfg:
        from beluga.suites.generator import generate_sent_suite, sent_catalogue

        sentences = list(pd.read_parquet(pool_path)["text"])
        df = generate_sent_suite(sentences, seed=int(suite_cfg["seed"]),
                                 cases_per_functionality=int(suite_cfg["cases_per_functionality"]),
                                 max_perturbations=int(suite_cfg.get("max_perturbations", 3)),
                                 max_words=int(suite_cfg.get("max_words", 40)))
        keep = set(_select_functionalities(pd.DataFrame(sent_catalogue()), suite_cfg)["functionality"])
        declared = [{k: f[k] for k in ("functionality", "capability", "test_type", "description")}
                    for f in sent_catalogue() if f["functionality"] in keep]
    else:
        df = _read_suite_file(suite_cfg)
        df = subsample_cases(df, suite_cfg.get("max_cases_per_functionality"), int(suite_cfg.get("seed", 7)))
        declared = None
    from beluga.suites.format import validate_suite

    df = _select_functionalities(df, suite_cfg)
    df = validate_suite(df, suite_cfg.get("path", "generated suite"), _label_set(task), declared)
    save_suite(df, out_path, declared=declared)


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


# ---------------------------------------------------------------- training
def _suite_split(suite_path: str, split_path: str, task_type: str, split: str) -> pd.DataFrame:
    suite = load_suite(suite_path, _label_set(get_task(task_type)))
    ids = pd.read_parquet(split_path)
    keep = set(ids.loc[ids["split"] == split, "case_id"])
    return suite[suite["case_id"].isin(keep)].reset_index(drop=True)


def _head(task) -> str:
    return "qa" if task.kind == "qa" else "sequence"


def _versions() -> dict:
    import numpy
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": numpy.__version__, "pandas": pd.__version__}


def train_iid(model_spec: str, task_type: str, iid_train: str, hparams: dict, seed: int, max_length: int,
              out_dir: str, threads: int = 1, doc_stride: int = 128) -> None:
    import torch

    from beluga.modeling import load_model, save_model, set_seed
    from beluga.training import build_streams, train

    torch.set_num_threads(max(1, threads))
    task = get_task(task_type)
    set_seed(seed)
    model, tokenizer = load_model(model_spec, task.num_model_labels, task_head=_head(task))
    streams = build_streams(task, pd.read_parquet(iid_train), None)
    summary = train(model, tokenizer, streams, "vanilla", dict(hparams), seed, max_length=max_length,
                    doc_stride=doc_stride)
    record = {"configuration": "iid", "method": "vanilla", "partition": "standard", "fold": "all",
              "model": model_spec, "hparams": hparams, "seed": seed, **summary, "versions": _versions(),
              "device": "cpu"}
    save_model(model, tokenizer, out_dir, {RUN_FILE: json.dumps(record, indent=2)})


def finetune(*, task_type: str, configuration: str, method: str, partition: str, fold: dict,
             all_functionalities: list[str], suite_path: str, split_path: str, iid_train: str | None,
             start_model: str, hparams: dict, seed: int, max_length: int, iid_in_mix: int | None,
             dir_train_slice: bool, out_dir: str, threads: int = 1, doc_stride: int = 128) -> None:
    """Behavioral fine-tuning of one fold in one configuration with one method."""
    import torch

    from beluga.modeling import load_model, save_model, set_seed
    from beluga.training import build_streams, train

    if configuration not in CONFIG_SPEC:
        raise ConfigError(f"config: field 'configurations': unknown configuration {configuration!r} "
                          f"(known: {', '.join(CONFIG_SPEC)})")
    torch.set_num_threads(max(1, threads))
    task = get_task(task_type)
    from_iid, mix = CONFIG_SPEC[configuration]
    train_funcs = set(folds_mod.training_functionalities(fold, all_functionalities))
    suite_train = _suite_split(suite_path, split_path, task_type, "train")
    suite_train = suite_train[suite_train["functionality"].isin(train_funcs)]
    iid_df = None
    if mix:
        if iid_train is None:
            raise ConfigError(f"configuration {configuration}: needs the i.i.d. training data")
        iid_df = pd.read_parquet(iid_train)
        if iid_in_mix is not None and len(iid_df) > iid_in_mix:
            iid_df = iid_df.sample(n=int(iid_in_mix), random_state=seed).reset_index(drop=True)
    set_seed(seed)
    model, tokenizer = load_model(start_model, task.num_model_labels, task_head=_head(task))
    streams = build_streams(task, iid_df, suite_train, dir_train_slice=dir_train_slice)
    summary = train(model, tokenizer, streams, method, dict(hparams), seed, max_length=max_length,
                    doc_stride=doc_stride)
    record = {"task": task.name, "configuration": configuration, "method": method, "partition": partition,
              "fold": fold["fold"], "held_out": fold["held_out"] if partition != "seen" else [],
              "start_model": start_model if not from_iid else "iid", "hparams": hparams, "seed": seed,
              "iid_in_mix": iid_in_mix, **summary, "versions": _versions(), "device": "cpu"}
    save_model(model, tokenizer, out_dir, {RUN_FILE: json.dumps(record, indent=2)})


# ---------------------------------------------------------------- predictions
def predict(*, task_type: str, model_dir: str, suite_path: str, split_path: str, iid_test: str,
            batch_size: int, max_length: int, out_path: str, out_run: str, threads: int = 1,
            doc_stride: int = 128) -> None:
    """Predictions for every input of every T_test case and every i.i.d. test
    example, keyed by (split, case_id, input_idx): class probabilities
    (``probs``, classification) or answer strings with character offsets
    (``answer``, ``start``, ``end``; extractive QA)."""
    import torch

    from beluga.modeling import load_trained

    torch.set_num_threads(max(1, threads))
    task = get_task(task_type)
    model, tokenizer = load_trained(model_dir, _head(task))
    suite_test = _suite_split(suite_path, split_path, task_type, "test")
    keys, texts, texts_b = [], [], []
    for r in suite_test.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            keys.append(("suite_test", r.case_id, j))
            texts.append(t)
            texts_b.append(r.inputs_b[j] if r.inputs_b is not None else None)
    iid = pd.read_parquet(iid_test)
    labels = [None] * len(keys)
    if task.kind == "qa":
        # READ: inputs are contexts, inputs_b questions; i.i.d. rows likewise
        keys += [("iid_test", eid, 0) for eid in iid["example_id"]]
        texts += list(iid["context"])
        texts_b += list(iid["question"])
    else:
        iid_b = iid["text_b"] if "text_b" in iid.columns else [None] * len(iid)
        keys += [("iid_test", eid, 0) for eid in iid["example_id"]]
        texts += list(iid["text"])
        texts_b += list(iid_b)
        labels += [int(y) for y in iid["label"]]
    columns = {"split": [k[0] for k in keys], "case_id": [str(k[1]) for k in keys],
               "input_idx": [k[2] for k in keys]}
    t0 = time.time()
    if task.kind == "qa":
        from beluga.qa import predict_qa

        spans = predict_qa(model, tokenizer, questions=texts_b, contexts=texts, batch_size=batch_size,
                           max_length=max_length, stride=doc_stride)
        columns.update(answer=[a for a, _, _ in spans], start=[st for _, st, _ in spans],
                       end=[en for _, _, en in spans])
        table = pa.Table.from_pydict(columns, schema=QA_PREDICTION_SCHEMA)
    else:
        from beluga.modeling import predict_probs

        use_b = any(b is not None for b in texts_b)
        probs = predict_probs(model, tokenizer, texts, texts_b if use_b else None, batch_size, max_length)
        columns.update(probs=[row.tolist() for row in probs], label=labels)
        table = pa.Table.from_pydict(columns, schema=PREDICTION_SCHEMA)
    write_parquet(table, out_path)
    record = json.loads((Path(model_dir) / RUN_FILE).read_text())
    record["prediction_wall_time_s"] = round(time.time() - t0, 2)
    record["n_predictions"] = len(keys)
    write_json(record, out_run)


# ---------------------------------------------------------------- scoring
def outcomes(*, task_type: str, suite_path: str, split_path: str, predictions: str, iid_test: str,
             held_out: list[str], out_path: str) -> None:
    """Per-case status on T_test (flag ``held_out``) and per-example i.i.d.
    outcomes, keyed by ids."""
    from beluga.metrics import iid_outcomes

    task = get_task(task_type)
    suite_test = _suite_split(suite_path, split_path, task_type, "test")
    preds = pd.read_parquet(predictions)
    status = score_cases(suite_test, preds[preds["split"] == "suite_test"], task, source=predictions)
    status["split"] = "suite_test"
    status["held_out"] = status["functionality"].isin(set(held_out))
    iid_out = iid_outcomes(preds[preds["split"] == "iid_test"], pd.read_parquet(iid_test), task.kind,
                           source=predictions)
    out = pd.concat([status, iid_out], ignore_index=True)
    out["correct"] = out["correct"].astype("boolean")
    write_parquet(out, out_path)


def aggregate_task(*, task: str, task_type: str, suite_path: str, runs: list[dict], out_long: str,
                   out_scores: str, out_md: str, iid_metric: str = "mean") -> None:
    suite = load_suite(suite_path)
    funcs = functionality_table(suite)
    loaded = [dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs]
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
