# Config validation, fold enumeration, wildcard constraints, target lists.
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

sys.path.insert(0, workflow.basedir)

from beluga import dag as beluga_dag  # noqa: E402
from beluga import folds as beluga_folds  # noqa: E402
from beluga import pipeline as beluga_pipeline  # noqa: E402
from beluga import io as beluga_io  # noqa: E402
from beluga.data import iid as beluga_iid  # noqa: E402
from beluga.errors import BelugaError, config_error_line  # noqa: E402
from beluga.methods import get_algorithm, method_hparams  # noqa: E402


# one line naming the config file and the field (not the schema dump); then
# what the schema cannot say (beluga/dag.py)
try:
    validate(config, schema="../schemas/config.schema.yaml")
except WorkflowError as e:
    raise WorkflowError(config_error_line(e, workflow.configfiles)) from None
try:
    beluga_dag.check_config(
        config,
        beluga_dag.load_schema(f"{workflow.basedir}/schemas/config.schema.yaml"),
        workflow.configfiles,
    )
    beluga_dag.check_sources(config["tasks"], workflow.configfiles)
except BelugaError as e:
    raise WorkflowError(beluga_dag.dag_error_line(e, workflow.configfiles)) from None


onstart:
    # a real run (not -n) into a read-only / inaccessible results folder fails before any job;
    # a results folder another working directory's run is writing to is refused
    try:
        beluga_io.check_writable(config.get("results", "results"))
        beluga_io.acquire_results_lock(config.get("results", "results"), os.getcwd())
    except BelugaError as e:
        raise WorkflowError(str(e)) from None


onsuccess:
    beluga_io.release_results_lock(config.get("results", "results"), os.getcwd())


onerror:
    beluga_io.release_results_lock(config.get("results", "results"), os.getcwd())

RESULTS = config.get("results", "results")
TASKS = config["tasks"]
SUITE_CONFIGS = list(config["configurations"])
METHODS = list(config["methods"])
PARTITIONS = list(config["partitions"])
TRAINING = config.get("training", {})
STATISTICS = {"alpha": 0.05, "correction": "none", "randomization_R": 10000, "bootstrap_R": 1000, "seed": 0,
              "degenerate_share": 0.95, **config.get("statistics", {})}

try:
    FUNCS = {
        t: beluga_pipeline.suite_functionalities(c["suite"], c["type"])
        for t, c in TASKS.items()
    }
    FOLDS = {t: beluga_folds.enumerate_folds(FUNCS[t], PARTITIONS) for t in TASKS}
    for _t in TASKS:
        beluga_dag.check_case_counts(_t, FUNCS[_t], workflow.configfiles)
        beluga_dag.check_folds(_t, FOLDS[_t], FUNCS[_t], SUITE_CONFIGS, workflow.configfiles)
except BelugaError as e:
    raise WorkflowError(beluga_dag.dag_error_line(e, workflow.configfiles)) from None
# built once here, not in the params of every job while the DAG is built
FUNC_NAMES = {t: list(FUNCS[t]["functionality"]) for t in TASKS}
# the seen fold, also when "seen" is not among the partitions (model selection)
SEEN_FOLD = {t: beluga_folds.enumerate_folds(FUNCS[t], ["seen"])[0] for t in TASKS}

IID_FOLD = {"partition": "standard", "fold": "all", "group": "all"}

# Model selection (METHOD.md: grid selected on T_val): a grid over the suite
# stage's hyper-parameters, tried once on the seen fold and reused by every
# fold (policy "seen", the paper) or on every fold's own T_val ("per_fold").
# tasks.<id>.selection overrides the global block (READ's batch sizes differ).
def selection(task):
    merged = dict(config.get("selection", {}))
    merged.update(TASKS[task].get("selection", {}))
    return merged


try:
    GRID_POINTS = {
        t: beluga_pipeline.grid_points(selection(t).get("grid") or {}) for t in TASKS
    }
except BelugaError as e:
    raise WorkflowError(beluga_dag.dag_error_line(e, workflow.configfiles)) from None


wildcard_constraints:
    task="|".join(TASKS),
    conf="iid|" + "|".join(beluga_pipeline.CONFIGURATIONS),
    method="[a-z0-9_]+",
    trial="[A-Za-z0-9.+-]+",
    partition="standard|seen|func|class|type",
    fold="[a-z0-9-]+",
    split="train|val|test|pool",
    scenario="seen|func|class|type",


def fold_spec(task, partition, fold):
    if partition == "standard":
        return dict(IID_FOLD, held_out=FUNC_NAMES[task])
    if partition == "seen":
        return SEEN_FOLD[task]
    return beluga_folds.find_fold(FOLDS[task], partition, fold)


def selection_dir(w):
    """Where a fold's hyper-parameters are selected: the seen fold (policy
    "seen", the paper) or the fold itself (policy "per_fold")."""
    if selection(w.task).get("policy", "seen") == "seen":
        return res(w.task, "selection", w.conf, w.method, "seen", "all")
    return res(w.task, "selection", w.conf, w.method, w.partition, w.fold)


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


# Cluster resources (issue: cluster runs). A training or prediction job's
# memory and time scale with the model (tiny plumbing BERT < MiniLM < BERT-base
# < BERT-large), the sequence length and the retry attempt; a GPU is requested
# only when gpus > 0 in the configuration (the jobs then run on CUDA).
def model_scale(task):
    name = str(TASKS[task]["model"]).lower()
    if name == "tiny-random":
        return 0.5
    if "large" in name:
        return 6.0
    if "base" in name:
        return 2.5
    return 1.0  # MiniLM (default) or an unknown local model of that size


GPU_RESOURCES = {"gpu": int(config["gpus"])} if config.get("gpus", 0) else {}


def job_resources(kind):
    """A training / prediction rule's resources: mem_mb (grows by half on every
    retry), runtime in minutes (doubles on every retry: preemption or a slow
    node), and the GPUs of the configuration."""
    base_mb, base_min = {"train": (3000, 60), "predict": (2000, 20)}[kind]

    def mem_mb(wildcards, attempt):
        length = max(1.0, max_length(wildcards.task) / 128)
        return int(base_mb * model_scale(wildcards.task) * length * (1 + 0.5 * (attempt - 1)))

    def runtime(wildcards, attempt):
        return int(base_min * model_scale(wildcards.task) * 2 ** (attempt - 1))

    return {"mem_mb": mem_mb, "runtime": runtime, **GPU_RESOURCES}


# torch threads per training / prediction job: fixed, because float reductions
# (and so the predictions, bit for bit) depend on the number of threads.
JOB_THREADS = int(config.get("job_threads", 1))
# numerical precision of training and prediction jobs (beluga/precision.py)
PRECISION = config.get("precision", "auto")
# epoch checkpoints at most this often (seconds): a short job redoes less than it would spend saving
CHECKPOINT_EVERY_S = float(config.get("checkpoint_every_s", 120))
PREDICT = {"batch_size": 64, "scope": "scored", **config.get("predict", {})}

# Which fold models are written to disk. By default a fold is one job that
# trains, predicts and scores with the model in memory (rule finetune); only an
# LP model that LP-FT starts from is written (rule finetune_keep, a temporary
# file). keep_models: true keeps every fold model: finetune_model trains and
# writes it, predict and outcomes take it from there (as for the IID model).
KEEP_MODELS = bool(config.get("keep_models", False))
START_METHODS = sorted({get_algorithm(m).start_method for m in METHODS} - {None})
NEVER = "(?!)"  # a wildcard constraint no value matches


def method_regex(methods):
    return "|".join(sorted(methods, key=len, reverse=True)) if methods else NEVER


if KEEP_MODELS:
    FUSED_METHODS, KEEP_METHODS, MODEL_METHODS = [], [], sorted(set(METHODS) | set(START_METHODS))
else:
    KEEP_METHODS = list(START_METHODS)
    FUSED_METHODS = [m for m in METHODS if m not in KEEP_METHODS]
    MODEL_METHODS = []
# the models the predict / outcomes rules read from disk: the IID model, and kept fold models
DISK_CONFS = "|".join(["iid"] + (list(beluga_pipeline.CONFIGURATIONS) if KEEP_MODELS else []))
DISK_METHODS = method_regex(sorted({"vanilla"} | set(MODEL_METHODS)))


def predicted_functionalities(w):
    """Params function: the T_test functionalities a model on disk predicts
    (the ones its run is scored on; None = all, predict.scope: all)."""
    return beluga_pipeline.scored_functionalities(fold_spec(w.task, w.partition, w.fold), PREDICT["scope"])


def max_length(task):
    return training(task).get("max_length", 128)


def res(task, *parts):
    return "/".join([RESULTS, task, *parts])


def run_path(kind, task, conf, method, partition, fold):
    """A run's "predictions" or "outcomes" file."""
    return f"{RESULTS}/{task}/{kind}/{conf}/{method}/{partition}/{fold}.parquet"


def run_files(kind):
    """Input function: the task's ``kind`` file of every run, in run_keys order."""
    def files(wildcards):
        return [run_path(kind, wildcards.task, *key) for key in run_keys(wildcards.task)]

    return files


def run_records(kind):
    """Params function: every run (configuration, method, partition, fold) with
    its ``kind`` file and the T_test functionalities it predicted (None: all)."""
    def records(wildcards):
        return [
            {"configuration": c, "method": m, "partition": p, "fold": f,
             "path": run_path(kind, wildcards.task, c, m, p, f),
             "functionalities": beluga_pipeline.scored_functionalities(fold_spec(wildcards.task, p, f),
                                                                       PREDICT["scope"])}
            for c, m, p, f in run_keys(wildcards.task)
        ]

    return records


def suite_build_inputs(wildcards):
    suite = TASKS[wildcards.task]["suite"]
    if "generate" in suite:
        return {"pool": res(wildcards.task, "iid", "pool.parquet")}
    return {"suite_file": suite["path"]}


def start_model(w):
    """(input path or None, label for the run record) of a fold's start model:
    a method with a start method (lp_ft) starts from that method's model of
    the same configuration and fold; otherwise IID→T and IID→(IID+T) start
    from the IID model and IID+T from the pre-trained model."""
    from_iid, _ = beluga_pipeline.CONFIG_SPEC[w.conf]
    first = get_algorithm(w.method).start_method
    if first is not None:
        return res(w.task, "models", w.conf, first, w.partition, w.fold), f"{first} model of this fold"
    if from_iid:
        return res(w.task, "models", "iid", "vanilla", "standard", "all"), "iid"
    return None, TASKS[w.task]["model"]


def trial_inputs(wildcards):
    _, mix = beluga_pipeline.CONFIG_SPEC[wildcards.conf]
    inputs = {
        "suite": res(wildcards.task, "suite", "suite.parquet"),
        "split": res(wildcards.task, "suite", "split.parquet"),
    }
    if mix:
        inputs["iid_train"] = res(wildcards.task, "iid", "train.parquet")
    start, _ = start_model(wildcards)
    if start is not None:
        inputs["start"] = start
    else:  # the pre-trained model: a local folder's files are inputs too
        inputs["model_files"] = beluga_dag.model_files(TASKS[wildcards.task]["model"])
    return inputs


def finetune_model_inputs(wildcards):
    """A fold's training inputs, with the selected hyper-parameters when there is a grid."""
    inputs = trial_inputs(wildcards)
    if GRID_POINTS[wildcards.task]:
        inputs["selected"] = f"{selection_dir(wildcards)}/selected.json"
    return inputs


def finetune_inputs(wildcards):
    """A fused fold job's inputs: training inputs and the i.i.d. test set."""
    return {**finetune_model_inputs(wildcards), "iid_test": res(wildcards.task, "iid", "test.parquet")}


# The settings of a fold's training (rules finetune, finetune_keep, finetune_model, trial).
FOLD_PARAMS = dict(
    task_type=lambda w: TASKS[w.task]["type"],
    model=lambda w: TASKS[w.task]["model"],
    model_version=lambda w: beluga_dag.model_version(TASKS[w.task]["model"]),
    fold=lambda w: fold_spec(w.task, w.partition, w.fold),
    all_functionalities=lambda w: FUNC_NAMES[w.task],
    hparams=lambda w: stage_hparams(w.task, "suite", w.method),
    start_label=lambda w: start_model(w)[1],
    seed=config.get("seed", 1),
    max_length=lambda w: max_length(w.task),
    doc_stride=lambda w: training(w.task).get("doc_stride", 128),
    iid_in_mix=lambda w: training(w.task).get("iid_in_mix"),
    dir_train_slice=lambda w: training(w.task).get("dir_train_slice", True),
    precision=PRECISION,
    checkpoint_every_s=CHECKPOINT_EVERY_S,
    nonfinite=lambda w: training(w.task).get("nonfinite", "stop"),
)


def trial_files(wildcards):
    return [f"{RESULTS}/{wildcards.task}/selection/{wildcards.conf}/{wildcards.method}/{wildcards.partition}/"
            f"{wildcards.fold}/trials/{t}.json" for t in GRID_POINTS[wildcards.task]]


def all_targets():
    """Final tables and plots, plus every fold's predictions and outcomes:
    naming the per-fold files as targets makes a deleted (or failed) fold's
    file rerun that fold alone (Snakemake >= 7.7 does not regenerate a missing
    intermediate file whose consumers are up to date)."""
    targets = []
    for task in TASKS:
        for key in run_keys(task):
            targets += [run_path("predictions", task, *key), run_path("outcomes", task, *key)]
        targets += [
            res(task, "suite", "summary.tsv"),
            res(task, "scores", "scores.csv"),
            res(task, "scores", "scores.md"),
            res(task, "scores", "pass_rates.csv"),
        ]
        targets += [res(task, "plots", f"heatmap_{p}.png") for p in PARTITIONS]
        targets += [
            res(task, "stats", "significance.csv"),
            res(task, "stats", "intervals.csv"),
            res(task, "diagnostics", "diagnostics.md"),
            res(task, "figures", "figure1.png"),
            res(task, "figures", "figure1.pdf"),
        ]
    targets += [f"{RESULTS}/table3/{name}" for name in ("table3.csv", "table3.md", "table3.tex")]
    targets.append(f"{RESULTS}/run_config.yaml")
    return targets
