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


def stage_hparams(stage, method=None):
    hp = dict(TRAINING.get(stage, {"lr": 5e-5, "batch_size": 16, "epochs": 2}))
    if method is not None:
        hp.update(method_hparams(method, TRAINING.get("method_hparams", {}).get(method)))
    return hp


def res(task, *parts):
    return "/".join([RESULTS, task, *parts])


def all_targets():
    targets = []
    for task in TASKS:
        targets += [
            res(task, "suite", "summary.tsv"),
            res(task, "scores", "scores.csv"),
            res(task, "scores", "scores.md"),
            res(task, "scores", "pass_rates.csv"),
        ]
        targets += [res(task, "plots", f"heatmap_{p}.png") for p in PARTITIONS]
    return targets
