# Config validation, fold enumeration, wildcard constraints, target lists.
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

sys.path.insert(0, workflow.basedir)

from beluga import folds as beluga_folds  # noqa: E402
from beluga import pipeline as beluga_pipeline  # noqa: E402
from beluga.errors import BelugaError  # noqa: E402
from beluga.methods import method_hparams  # noqa: E402


validate(config, schema="../schemas/config.schema.yaml")

RESULTS = config.get("results", "results")
TASKS = config["tasks"]
SUITE_CONFIGS = list(config["configurations"])
METHODS = list(config["methods"])
PARTITIONS = list(config["partitions"])
TRAINING = config.get("training", {})

try:
    FUNCS = {t: beluga_pipeline.suite_functionalities(c["suite"]) for t, c in TASKS.items()}
    FOLDS = {t: beluga_folds.enumerate_folds(FUNCS[t], PARTITIONS) for t in TASKS}
except BelugaError as e:
    raise WorkflowError(str(e)) from None

IID_FOLD = {"partition": "standard", "fold": "all", "group": "all"}


wildcard_constraints:
    task="|".join(TASKS),
    conf="iid|" + "|".join(beluga_pipeline.CONFIGURATIONS),
    method="[a-z0-9_]+",
    partition="standard|seen|func|class|type",
    fold="[a-z0-9-]+",
    split="train|val|test|pool",
    scenario="seen|func|class|type",


def fold_spec(task, partition, fold):
    if partition == "standard":
        return dict(IID_FOLD, held_out=list(FUNCS[task]["functionality"]))
    return beluga_folds.find_fold(FOLDS[task], partition, fold)


def run_keys(task):
    """Every (configuration, method, partition, fold) with predictions, the IID baseline first."""
    keys = [("iid", "vanilla", "standard", "all")]
    for conf in SUITE_CONFIGS:
        for method in METHODS:
            for f in FOLDS[task]:
                keys.append((conf, method, f["partition"], f["fold"]))
    return keys


def training(task):
    """The global training block with the task's own overrides (tasks.<id>.training) on top."""
    merged = dict(TRAINING)
    merged.update(TASKS[task].get("training", {}))
    return merged


def stage_hparams(task, stage, method=None):
    tr = training(task)
    hp = dict(tr.get(stage, {"lr": 5e-5, "batch_size": 16, "epochs": 2}))
    if method is not None:
        hp.update(method_hparams(method, tr.get("method_hparams", {}).get(method)))
    return hp


def max_length(task):
    return training(task).get("max_length", 128)


def res(task, *parts):
    return "/".join([RESULTS, task, *parts])


def outcome_path(task, conf, method, partition, fold):
    return f"{RESULTS}/{task}/outcomes/{conf}/{method}/{partition}/{fold}.parquet"


def aggregate_runs(wildcards):
    return [
        {"configuration": c, "method": m, "partition": p, "fold": f,
         "path": outcome_path(wildcards.task, c, m, p, f)}
        for c, m, p, f in run_keys(wildcards.task)
    ]


def suite_build_inputs(wildcards):
    suite = TASKS[wildcards.task]["suite"]
    if "generate" in suite:
        return {"pool": res(wildcards.task, "iid", "pool.parquet")}
    return {"suite_file": suite["path"]}


def finetune_inputs(wildcards):
    from_iid, mix = beluga_pipeline.CONFIG_SPEC[wildcards.conf]
    inputs = {
        "suite": res(wildcards.task, "suite", "suite.parquet"),
        "split": res(wildcards.task, "suite", "split.parquet"),
    }
    if mix:
        inputs["iid_train"] = res(wildcards.task, "iid", "train.parquet")
    if from_iid:
        inputs["start"] = res(wildcards.task, "models", "iid", "vanilla", "standard", "all")
    return inputs


def outcome_files(wildcards):
    return [outcome_path(wildcards.task, *key) for key in run_keys(wildcards.task)]


def prediction_path(task, conf, method, partition, fold):
    return f"{RESULTS}/{task}/predictions/{conf}/{method}/{partition}/{fold}.parquet"


def all_targets():
    """Final tables and plots, plus every fold's predictions and outcomes:
    naming the per-fold files as targets makes a deleted (or failed) fold's
    file rerun that fold alone (Snakemake >= 7.7 does not regenerate a missing
    intermediate file whose consumers are up to date)."""
    targets = []
    for task in TASKS:
        for key in run_keys(task):
            targets += [prediction_path(task, *key), outcome_path(task, *key)]
        targets += [
            res(task, "suite", "summary.tsv"),
            res(task, "scores", "scores.csv"),
            res(task, "scores", "scores.md"),
            res(task, "scores", "pass_rates.csv"),
        ]
        targets += [res(task, "plots", f"heatmap_{p}.png") for p in PARTITIONS]
    return targets
