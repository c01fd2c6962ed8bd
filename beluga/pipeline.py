"""The steps of the DAG as plain functions (one per rule). workflow_scripts/
only translate snakemake's input/params/output into these calls."""

from __future__ import annotations

import json
import logging
import platform
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from beluga import folds as folds_mod
from beluga.data import iid as iid_mod
from beluga.errors import ConfigError, DataError, SuiteError
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


# ---------------------------------------------------------------- suites
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
    path = suite_cfg["path"]
    if not Path(path).exists():
        raise SuiteError(f"suite file {path}: field 'path': file does not exist")
    try:
        df = pd.read_parquet(path, columns=["functionality", "capability", "test_type"])
    except Exception as e:  # noqa: BLE001
        raise SuiteError(f"suite file {path}: field 'path': not a readable Parquet suite ({e})") from None
    return df.drop_duplicates("functionality").reset_index(drop=True)


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
        df = load_suite(suite_cfg["path"], tuple(task.suite_labels))
        declared = None
    from beluga.suites.format import validate_suite

    df = _select_functionalities(df, suite_cfg)
    df = validate_suite(df, suite_cfg.get("path", "generated suite"), tuple(task.suite_labels), declared)
    save_suite(df, out_path, declared=declared)


def split_suite(suite_path: str, task_type: str, fractions, seed: int, out_split: str, out_summary: str) -> None:
    suite = load_suite(suite_path, tuple(get_task(task_type).suite_labels))
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
    df = iid_mod.load_source(iid_cfg["source"], set(task.iid_labels))
    parts = iid_mod.split_iid(df, {"train": iid_cfg.get("n_train"), "val": iid_cfg["n_val"],
                                   "test": iid_cfg["n_test"]}, int(iid_cfg["seed"]))
    for name, path in outputs.items():
        write_parquet(parts[name], path)


# ---------------------------------------------------------------- training
def _suite_split(suite_path: str, split_path: str, task_type: str, split: str) -> pd.DataFrame:
    suite = load_suite(suite_path, tuple(get_task(task_type).suite_labels))
    ids = pd.read_parquet(split_path)
    keep = set(ids.loc[ids["split"] == split, "case_id"])
    return suite[suite["case_id"].isin(keep)].reset_index(drop=True)


def _versions() -> dict:
    import numpy
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": numpy.__version__, "pandas": pd.__version__}


def train_iid(model_spec: str, task_type: str, iid_train: str, hparams: dict, seed: int, max_length: int,
              out_dir: str, threads: int = 1) -> None:
    import torch

    from beluga.modeling import load_model, save_model, set_seed
    from beluga.training import build_streams, train

    torch.set_num_threads(max(1, threads))
    task = get_task(task_type)
    set_seed(seed)
    model, tokenizer = load_model(model_spec, task.num_model_labels)
    streams = build_streams(task, pd.read_parquet(iid_train), None)
    summary = train(model, tokenizer, streams, "vanilla", dict(hparams), seed, max_length=max_length)
    record = {"configuration": "iid", "method": "vanilla", "partition": "standard", "fold": "all",
              "model": model_spec, "hparams": hparams, "seed": seed, **summary, "versions": _versions(),
              "device": "cpu"}
    save_model(model, tokenizer, out_dir, {RUN_FILE: json.dumps(record, indent=2)})


def finetune(*, task_type: str, configuration: str, method: str, partition: str, fold: dict,
             all_functionalities: list[str], suite_path: str, split_path: str, iid_train: str | None,
             start_model: str, hparams: dict, seed: int, max_length: int, iid_in_mix: int | None,
             dir_train_slice: bool, out_dir: str, threads: int = 1) -> None:
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
    model, tokenizer = load_model(start_model, task.num_model_labels)
    streams = build_streams(task, iid_df, suite_train, dir_train_slice=dir_train_slice)
    summary = train(model, tokenizer, streams, method, dict(hparams), seed, max_length=max_length)
    record = {"task": task.name, "configuration": configuration, "method": method, "partition": partition,
              "fold": fold["fold"], "held_out": fold["held_out"] if partition != "seen" else [],
              "start_model": start_model if not from_iid else "iid", "hparams": hparams, "seed": seed,
              "iid_in_mix": iid_in_mix, **summary, "versions": _versions(), "device": "cpu"}
    save_model(model, tokenizer, out_dir, {RUN_FILE: json.dumps(record, indent=2)})


# ---------------------------------------------------------------- predictions
def predict(*, task_type: str, model_dir: str, suite_path: str, split_path: str, iid_test: str,
            batch_size: int, max_length: int, out_path: str, out_run: str, threads: int = 1) -> None:
    """Probabilities for every input of every T_test case and every i.i.d.
    test example, keyed by (split, case_id, input_idx)."""
    import torch

    torch.set_num_threads(max(1, threads))
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from beluga.modeling import predict_probs

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir)
    suite_test = _suite_split(suite_path, split_path, task_type, "test")
    keys, texts, texts_b = [], [], []
    for r in suite_test.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            keys.append(("suite_test", r.case_id, j, None))
            texts.append(t)
            texts_b.append(r.inputs_b[j] if r.inputs_b is not None else None)
    iid = pd.read_parquet(iid_test)
    for eid, t, y in zip(iid["example_id"], iid["text"], iid["label"]):
        keys.append(("iid_test", eid, 0, int(y)))
        texts.append(t)
        texts_b.append(None)
    use_b = any(b is not None for b in texts_b)
    t0 = time.time()
    probs = predict_probs(model, tokenizer, texts, texts_b if use_b else None, batch_size, max_length)
    df = pd.DataFrame(keys, columns=["split", "case_id", "input_idx", "label"])
    table = pa.Table.from_pydict({
        "split": df["split"].tolist(), "case_id": df["case_id"].tolist(),
        "input_idx": df["input_idx"].astype("int32").tolist(),
        "probs": [row.tolist() for row in probs],
        "label": [None if pd.isna(v) else int(v) for v in df["label"]],
    }, schema=PREDICTION_SCHEMA)
    write_parquet(table, out_path)
    record = json.loads((Path(model_dir) / RUN_FILE).read_text())
    record["prediction_wall_time_s"] = round(time.time() - t0, 2)
    record["n_predictions"] = len(df)
    write_json(record, out_run)


# ---------------------------------------------------------------- scoring
def outcomes(*, task_type: str, suite_path: str, split_path: str, predictions: str, held_out: list[str],
             out_path: str) -> None:
    """Per-case status on T_test (flag ``held_out``) and per-example i.i.d.
    correctness, keyed by ids."""
    task = get_task(task_type)
    suite_test = _suite_split(suite_path, split_path, task_type, "test")
    preds = pd.read_parquet(predictions)
    status = score_cases(suite_test, preds[preds["split"] == "suite_test"], task, source=predictions)
    status["split"] = "suite_test"
    status["held_out"] = status["functionality"].isin(set(held_out))
    iid = preds[preds["split"] == "iid_test"]
    if iid["label"].isna().any():
        raise DataError(f"predictions {predictions}: field 'label': i.i.d. rows without a label")
    pred_label = [int(max(range(len(p)), key=lambda k: p[k])) for p in iid["probs"]]
    iid_out = pd.DataFrame({"case_id": iid["case_id"].to_numpy(), "functionality": None, "status": None,
                            "split": "iid_test", "held_out": False,
                            "correct": [a == int(b) for a, b in zip(pred_label, iid["label"])]})
    status["correct"] = None
    out = pd.concat([status, iid_out], ignore_index=True)
    out["correct"] = out["correct"].astype("boolean")
    write_parquet(out, out_path)


def aggregate_task(*, task: str, suite_path: str, runs: list[dict], out_long: str, out_scores: str,
                   out_md: str) -> None:
    suite = load_suite(suite_path)
    funcs = functionality_table(suite)
    loaded = [dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs]
    long, scores = aggregate(loaded, funcs)
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
