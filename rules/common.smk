# Config validation, fold enumeration, wildcard constraints, target lists.
import os
import re
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

sys.path.insert(0, workflow.basedir)

from beluga.workflow import dag as beluga_dag  # noqa: E402
from beluga import folds as beluga_folds  # noqa: E402
from beluga import settings as beluga_settings  # noqa: E402
from beluga import io as beluga_io  # noqa: E402
from beluga.data import fetch as beluga_fetch  # noqa: E402
from beluga.data import iid as beluga_iid  # noqa: E402
from beluga.data import ood_sets as beluga_ood  # noqa: E402
from beluga.analyses import inoculation as beluga_inoculation  # noqa: E402
from beluga.errors import BelugaError, config_error_line  # noqa: E402
from beluga.methods import get_algorithm, method_hparams  # noqa: E402

# one line naming the config file and the field (not the schema dump); then
# what the schema cannot say (beluga/workflow/dag.py)
try:
    validate(config, schema="../schemas/config.schema.yaml")
except WorkflowError as e:
    raise WorkflowError(config_error_line(e, workflow.configfiles)) from None
# relative data paths are relative to data_dir (fetched inputs: rules/fetch.smk)
beluga_fetch.resolve_data_paths(config)
DATA_DIR = str(config["data_dir"])
# inputs the fetch target provides that are not in the data folder yet
NOT_FETCHED = sorted(
    os.path.join(DATA_DIR, r.path)
    for r in beluga_fetch.config_files(config)
    if not os.path.lexists(os.path.join(DATA_DIR, r.path))
)


def data_path(*parts):
    """A path in the data folder (no leading ./ when it is the working directory)."""
    return os.path.normpath(os.path.join(DATA_DIR, *parts))


try:
    beluga_dag.check_config(
        config,
        beluga_dag.load_schema(f"{workflow.basedir}/schemas/config.schema.yaml"),
        workflow.configfiles,
    )
    beluga_dag.check_sources(config["tasks"], workflow.configfiles, not_fetched=NOT_FETCHED)
except BelugaError as e:
    raise WorkflowError(beluga_dag.dag_error_line(e, workflow.configfiles)) from None


onstart:
    # a real run (not -n) into a read-only / inaccessible results folder fails before any job;
    # a results folder another working directory's run is writing to is refused
    try:
        beluga_io.check_writable(config["results"])
        beluga_io.acquire_results_lock(config["results"], os.getcwd())
    except BelugaError as e:
        raise WorkflowError(str(e)) from None


onsuccess:
    beluga_io.release_results_lock(config["results"], os.getcwd())


onerror:
    beluga_io.release_results_lock(config["results"], os.getcwd())


RESULTS = config["results"]
TASKS = config["tasks"]
SUITE_CONFIGS = list(config["configurations"])
METHODS = list(config["methods"])
PARTITIONS = list(config["partitions"])
STATISTICS = config["statistics"]
PREDICT = config["predict"]
COMBINATIONAL = config["combinational"]
# torch threads per training / prediction job: fixed, because float reductions
# (and so the predictions, bit for bit) depend on the number of threads
JOB_THREADS = config["job_threads"]
# the IID model trains alone before any fold can start: it may use the cores that would idle
IID_THREADS = config["iid_job_threads"] or JOB_THREADS

try:
    FOLDS, FUNC_NAMES, SEEN_FOLD, FUNC_TABLES = {}, {}, {}, {}
    for _t, _c in TASKS.items():
        if beluga_dag.suite_not_fetched(_c["suite"], NOT_FETCHED):
            # the fetch target can run; every other target stops (all_targets)
            FOLDS[_t], SEEN_FOLD[_t], FUNC_NAMES[_t], FUNC_TABLES[_t] = [], {}, [], None
            continue
        _funcs, FOLDS[_t], SEEN_FOLD[_t] = beluga_dag.task_folds(_c["suite"], _c["type"], PARTITIONS)
        beluga_dag.check_case_counts(_t, _funcs, workflow.configfiles)
        beluga_dag.check_folds(_t, FOLDS[_t], _funcs, SUITE_CONFIGS, workflow.configfiles)
        # built once here, not in the params of every job while the DAG is built
        FUNC_NAMES[_t] = list(_funcs["functionality"])
        FUNC_TABLES[_t] = _funcs
except BelugaError as e:
    raise WorkflowError(beluga_dag.dag_error_line(e, workflow.configfiles)) from None

IID_FOLD = {"partition": "standard", "fold": "all", "group": "all"}


# The fetch target (rules/fetch.smk; beluga/data/fetch.py): the remote files and hub
# models of the configuration; a download rule exists only for what is missing.
FETCH_FILES = {r.path: r for r in beluga_fetch.config_files(config)}
FETCH_MODELS = beluga_fetch.config_models(config)
FETCH_MIRROR = config["fetch"]["mirror"]
try:
    FETCH_LOCK = beluga_fetch.read_lock(DATA_DIR)
except BelugaError as e:
    raise WorkflowError(str(e)) from None
# missing files with a known checksum (published, or recorded at the first fetch) / without one
_MISSING = [rel for rel in FETCH_FILES if not os.path.lexists(data_path(rel))]
_CHECKED = [rel for rel in _MISSING if beluga_fetch.expected_sha256(rel, FETCH_LOCK, FETCH_FILES[rel])]
_UNCHECKED = [rel for rel in _MISSING if rel not in _CHECKED]
_MISSING_MODELS = [m for m in FETCH_MODELS if not os.path.exists(m)]


def fetch_regex(paths):
    return "|".join(re.escape(p) for p in paths) or NEVER


def fetch_url(w):
    return storage.http(beluga_fetch.remote_url(FETCH_FILES[w.path], FETCH_MIRROR))


# Model selection (docs/METHOD.md, §4: grid selected on T_val): a grid over the
# suite stage's hyper-parameters, tried once on the seen fold and reused by
# every fold (policy "seen", the paper) or on every fold's own T_val
# ("per_fold"); selection.method_grid.<method> replaces keys of the grid for
# one method (LP's learning rates). tasks.<id>.selection overrides keys of the
# global block.
def selection(task):
    return {**config["selection"], **TASKS[task].get("selection", {})}


wildcard_constraints:
    task="|".join(TASKS),
    conf="iid|" + "|".join(beluga_dag.CONFIGURATIONS),
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
    "seen", the paper) or the fold itself (policy "per_fold"), by the
    method's selection method."""
    method = selection_method(w.task, w.method)
    if selection(w.task)["policy"] == "seen":
        return res(w.task, "selection", w.conf, method, "seen", "all")
    return res(w.task, "selection", w.conf, method, w.partition, w.fold)


def run_keys(task):
    """Every (configuration, method, partition, fold) with predictions, the IID baseline first."""
    keys = [("iid", "vanilla", "standard", "all")]
    for conf in SUITE_CONFIGS:
        for method in METHODS:
            for f in FOLDS[task]:
                keys.append((conf, method, f["partition"], f["fold"]))
    return keys


# OOD test sets (tasks.<id>.ood; beluga/data/ood_sets.py, beluga/analyses/ood_eval.py): the IID
# model and every pair's seen model predict them in their own jobs
# (predict.ood_models: all = every fold model); rule ood scores and ranks them.
OOD_SETS = {t: {e["name"]: e for e in (TASKS[t].get("ood") or [])} for t in TASKS}


def ood_entry(task, name):
    return OOD_SETS[task][name]


def ood_data(task):
    """The prepared OOD sets of a task, in config order."""
    return [res(task, "ood", "data", f"{name}.parquet") for name in OOD_SETS[task]]


def predicts_ood(conf, partition):
    return conf == "iid" or partition == "seen" or PREDICT["ood_models"] == "all"


def ood_inputs(w):
    """Input function: the OOD sets a run predicts (none for most folds)."""
    return ood_data(w.task) if predicts_ood(w.conf, w.partition) else []


def ood_runs(which):
    """Params function: the runs the OOD evaluation reads, with their outcomes files -
    ``systems`` (the IID model and each pair's seen model) or ``models``
    (every model that predicted the OOD sets)."""

    def records(w):
        if which == "systems":
            keys = [k for k in run_keys(w.task) if k[0] == "iid" or k[2] == "seen"]
        else:
            keys = [k for k in run_keys(w.task) if predicts_ood(k[0], k[2])]
        return [
            {
                "configuration": c,
                "method": m,
                "partition": p,
                "fold": f,
                "path": run_path("outcomes", w.task, c, m, p, f),
            }
            for c, m, p, f in keys
        ]

    return records


def training(task):
    """The global training block with the task's own overrides (tasks.<id>.training) on top."""
    return {**config["training"], **TASKS[task].get("training", {})}


def stage_hparams(task, stage, method):
    """A stage's lr / batch_size / epochs with the method's complete hyper-parameters."""
    tr = training(task)
    return {**tr[stage], **method_hparams(method, tr["method_hparams"].get(method))}


def selection_method(task, method):
    """The method whose selection gives ``method`` its hyper-parameters (itself;
    LP-FT with ft_hparams_from: vanilla takes vanilla's)."""
    return get_algorithm(method).selection_method(stage_hparams(task, "suite", method))


try:
    # (task, method) -> trial id -> grid point
    GRID_POINTS = {
        (t, m): beluga_dag.grid_points(beluga_dag.method_grid(selection(t), m))
        for t in TASKS
        for m in sorted(set(METHODS) | {selection_method(t, m) for m in METHODS})
    }
except BelugaError as e:
    raise WorkflowError(beluga_dag.dag_error_line(e, workflow.configfiles)) from None


# Cluster resources (issue: cluster runs). A training or prediction job's
# memory and time scale with the model (tiny plumbing BERT < MiniLM < BERT-base
# < BERT-large), the sequence length and the retry attempt; a GPU is requested
# only when gpus > 0 in the configuration (the jobs then run on CUDA).
def model_scale(task):
    """Memory / time scale of a task's model (the combinational analysis: its own model)."""
    spec = COMBINATIONAL["model"] if task is None else TASKS[task]["model"]
    name = str(spec).lower()
    if name == "tiny-random":
        return 0.5
    if "large" in name:
        return 6.0
    if "base" in name:
        return 2.5
    return 1.0  # MiniLM (default) or an unknown local model of that size


GPU_RESOURCES = {}
if config["gpus"] and config["gpu_jobs"] == 1:
    GPU_RESOURCES = {"gpu": int(config["gpus"])}
elif config["gpus"]:
    # K jobs per GPU: a slot of a GPU locally (--resources gpu_slot=K), a GPU shard on Slurm
    GPU_RESOURCES = {"gpu_slot": 1, "gres": f"shard:{int(config['gpus'])}"}
# one setting sends every job that trains or predicts to the cluster's GPU partition
if config["gpu_partition"]:
    GPU_RESOURCES["slurm_partition"] = config["gpu_partition"]


def job_resources(kind):
    """A training / prediction rule's resources: mem_mb (grows by half on every
    retry), runtime in minutes (doubles on every retry: preemption or a slow
    node), and the GPUs of the configuration."""
    base_mb, base_min = {"train": (3000, 60), "predict": (2000, 20)}[kind]

    def mem_mb(wildcards, attempt):
        task = wildcards.get("task")
        max_length = COMBINATIONAL["max_length"] if task is None else training(task)["max_length"]
        return int(base_mb * model_scale(task) * max(1.0, max_length / 128) * (1 + 0.5 * (attempt - 1)))

    def runtime(wildcards, attempt):
        return int(base_min * model_scale(wildcards.get("task")) * 2 ** (attempt - 1))

    return {"mem_mb": mem_mb, "runtime": runtime, **GPU_RESOURCES}


# Which fold models are written to disk. By default a fold is one job that
# trains, predicts and scores with the model in memory (rule finetune); only an
# LP model that LP-FT starts from is written (rule finetune_keep, a temporary
# file). keep_models: true keeps every fold model: finetune_model trains and
# writes it, predict and outcomes take it from there (as for the IID model).
KEEP_MODELS = config["keep_models"]
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
DISK_CONFS = "|".join(["iid"] + (list(beluga_dag.CONFIGURATIONS) if KEEP_MODELS else []))
DISK_METHODS = method_regex(sorted({"vanilla"} | set(MODEL_METHODS)))


def predicted_functionalities(w):
    """Params function: the T_test functionalities a model on disk predicts
    (the ones its run is scored on; None = all, predict.scope: all)."""
    return beluga_dag.scored_functionalities(fold_spec(w.task, w.partition, w.fold), PREDICT["scope"])


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
            {
                "configuration": c,
                "method": m,
                "partition": p,
                "fold": f,
                "path": run_path(kind, wildcards.task, c, m, p, f),
                "functionalities": beluga_dag.scored_functionalities(fold_spec(wildcards.task, p, f), PREDICT["scope"]),
            }
            for c, m, p, f in run_keys(wildcards.task)
        ]

    return records


def failure_runs(w):
    """Params function: every run with its outcomes and predictions files."""
    return [
        dict(r, predictions=run_path("predictions", w.task, r["configuration"], r["method"], r["partition"], r["fold"]))
        for r in run_records("outcomes")(w)
    ]


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
    first = get_algorithm(w.method).start_method
    if first is not None:
        return res(w.task, "models", w.conf, first, w.partition, w.fold), f"{first} model of this fold"
    if beluga_dag.configuration(w.conf).from_iid:
        return res(w.task, "models", "iid", "vanilla", "standard", "all"), "iid"
    return None, TASKS[w.task]["model"]


def model_locks(task=None):
    """Input function helper: a hub model's marker (the commit its configured
    revision resolved to, written by the fetch; none for local models) of a
    task, or (task None) of the combinational analysis. ancient(): only its
    path, which names the revision, decides a rerun."""
    block = COMBINATIONAL if task is None else TASKS[task]
    spec = str(block["model"])
    if not beluga_fetch.is_hub_name(spec):
        return []
    return [ancient(beluga_fetch.model_marker(DATA_DIR, spec, block.get("model_revision")))]


def model_lock_path(task=None):
    """The FoldRun's model_lock: the marker path of a hub model, else None."""
    locks = model_locks(task)
    return str(locks[0]) if locks else None


def trial_inputs(wildcards):
    inputs = {
        "suite": res(wildcards.task, "suite", "suite.parquet"),
        "split": res(wildcards.task, "suite", "split.parquet"),
    }
    if beluga_dag.configuration(wildcards.conf).mixes_iid:
        inputs["iid_train"] = res(wildcards.task, "iid", "train.parquet")
    start, _ = start_model(wildcards)
    if start is not None:
        inputs["start"] = start
    else:  # the pre-trained model: a local folder's files are inputs too, a hub model's marker
        inputs["model_files"] = beluga_dag.model_files(TASKS[wildcards.task]["model"])
        inputs["model_lock"] = model_locks(wildcards.task)
    return inputs


def finetune_model_inputs(wildcards):
    """A fold's training inputs, with the selected hyper-parameters when there is a grid."""
    inputs = trial_inputs(wildcards)
    if GRID_POINTS[(wildcards.task, selection_method(wildcards.task, wildcards.method))]:
        inputs["selected"] = f"{selection_dir(wildcards)}/selected.json"
    return inputs


def finetune_inputs(wildcards):
    """A fold job's inputs: training inputs, the i.i.d. test set and the OOD sets it predicts."""
    return {
        **finetune_model_inputs(wildcards),
        "iid_test": res(wildcards.task, "iid", "test.parquet"),
        "ood": ood_inputs(wildcards),
    }


def run_settings(rule_name):
    """Params function: the job's settings as one object (beluga/settings.py
    FoldRun, as a dict) for the training rules train_iid, finetune (and
    finetune_keep), finetune_model and trial."""

    def settings(w):
        task = TASKS[w.task]
        if rule_name == "train_iid":
            job = dict(
                configuration="iid",
                method="vanilla",
                partition="standard",
                fold="all",
                held_out=(),
                functionalities=(),
                start_label=task["model"],
                hparams=stage_hparams(w.task, "iid", "vanilla"),
                checkpoint_dir=res(w.task, "checkpoints", rule_name, "iid", "vanilla", "standard", "all"),
            )
        else:
            extra = [w.trial] if rule_name == "trial" else []
            job = dict(
                configuration=w.conf,
                method=w.method,
                partition=w.partition,
                fold=w.fold,
                held_out=tuple(fold_spec(w.task, w.partition, w.fold)["held_out"]),
                functionalities=tuple(FUNC_NAMES[w.task]),
                start_label=start_model(w)[1],
                hparams=stage_hparams(w.task, "suite", w.method),
                checkpoint_dir=res(w.task, "checkpoints", rule_name, w.conf, w.method, w.partition, w.fold, *extra),
            )
        # a hub model's marker: loaded from when training starts from the pre-trained model,
        # and its commit in every run record
        run = beluga_settings.fold_run(
            config,
            training(w.task),
            task=w.task,
            task_type=task["type"],
            model=task["model"],
            model_lock=model_lock_path(w.task),
            **job,
        )
        if rule_name == "train_iid":
            run = run.replace(threads=IID_THREADS)
        return run.to_dict()

    return settings


def hparams_summary(rule_name):
    """Params function: a training job's hyper-parameters in words, for its
    message (a dry run shows it): the values, or which method's selection on
    which fold chooses them."""

    def summary(w):
        hp = get_algorithm(w.method).final_hparams(stage_hparams(w.task, "suite", w.method))
        if rule_name == "trial":
            point = GRID_POINTS[(w.task, w.method)][w.trial]
            hp = get_algorithm(w.method).final_hparams({**hp, **point})
            chosen = {}
        else:
            sel = selection_method(w.task, w.method)
            where = "seen/all" if selection(w.task)["policy"] == "seen" else "this fold"
            grid = beluga_dag.method_grid(selection(w.task), sel) if GRID_POINTS[(w.task, sel)] else {}
            chosen = {k: f"{sel}'s selection on {where}" for k in grid}
            if hp.get("ft_epochs") is not None:
                chosen.pop("epochs", None)
        keys = ("lr", "batch_size", "epochs")
        parts = [", ".join(f"{k} {hp[k]:g}" for k in keys if k not in chosen)]
        if chosen:
            parts.append(f"{', '.join(k for k in keys if k in chosen)}: {next(iter(chosen.values()))}")
        return "; ".join([p for p in parts if p] + [f"starts from {start_model(w)[1]}"])

    return summary


def model_version(w):
    """Params function: the packaged default model's version (another version reruns what was trained)."""
    return beluga_dag.model_version(TASKS[w.task]["model"])


def trial_files(wildcards):
    return [
        f"{RESULTS}/{wildcards.task}/selection/{wildcards.conf}/{wildcards.method}/{wildcards.partition}/"
        f"{wildcards.fold}/trials/{t}.json"
        for t in GRID_POINTS[(wildcards.task, wildcards.method)]
    ]


# Inoculation by fine-tuning and combinational OOD (rules/analyses.smk;
# docs/ANALYSES.md): off in the default target unless enabled; their targets
# inoculation_all and combinational_all run them on any config.
INOCULATION = config["inoculation"]
try:
    INOC_UNITS = {
        t: beluga_inoculation.units(FUNC_TABLES[t], INOCULATION["units"])
        for t in (INOCULATION["tasks"] or TASKS)
        if FUNC_TABLES.get(t) is not None
    }
except BelugaError as e:
    raise WorkflowError(beluga_dag.dag_error_line(e, workflow.configfiles)) from None
for _t in INOC_UNITS:
    if _t not in TASKS:
        raise WorkflowError(f"config: field 'inoculation.tasks': {_t!r} is not a task of this config")


def inoc_doses(task, unit):
    n = beluga_inoculation.train_cases_per_unit(
        FUNC_TABLES[task], INOC_UNITS[task][unit]["functionalities"], config["split"]["fractions"]
    )
    return beluga_inoculation.doses_for(n, INOCULATION["doses"])


def inoc_results(task):
    """Every (unit, dose, learning rate) result of a task."""
    return [
        res(task, "inoculation", "runs", unit, dose, f"{beluga_inoculation.lr_id(lr)}.json")
        for unit in INOC_UNITS[task]
        for dose in inoc_doses(task, unit)
        for lr in INOCULATION["lrs"]
    ]


INOC_OUTPUTS = ("table.csv", "outcomes.csv", "inoculation.md", "curves.png", "transfer.png")


def inoc_targets():
    return [p for t in INOC_UNITS for p in inoc_results(t) + [res(t, "inoculation", n) for n in INOC_OUTPUTS]]


def inoc_settings(w):
    """Params function: an inoculation job's settings (a FoldRun): IID→T on the unit's dose."""
    task = TASKS[w.task]
    unit_funcs = set(INOC_UNITS[w.task][w.unit]["functionalities"])
    lr = next(x for x in INOCULATION["lrs"] if beluga_inoculation.lr_id(x) == w.lr)
    hp = stage_hparams(w.task, "suite", "vanilla")
    hp.update(lr=lr, epochs=INOCULATION["max_epochs"], batch_size=INOCULATION["batch_size"] or hp["batch_size"])
    run = beluga_settings.fold_run(
        config,
        training(w.task),
        task=w.task,
        task_type=task["type"],
        model=task["model"],
        configuration="iid_to_t",
        method="vanilla",
        partition="inoculation",
        fold=f"{w.unit}-{w.dose}-{w.lr}",
        held_out=tuple(f for f in FUNC_NAMES[w.task] if f not in unit_funcs),
        functionalities=tuple(FUNC_NAMES[w.task]),
        start_label="iid",
        hparams=hp,
        checkpoint_dir=None,
    )
    return run.to_dict()


COMB_OUTPUTS = ("table.csv", "table.md", "accuracy.png", "epochs.csv")


def comb_targets():
    runs = [f"{RESULTS}/combinational/runs/k{k}.json" for k in COMBINATIONAL["ks"]]
    return runs + [f"{RESULTS}/combinational/{n}" for n in COMB_OUTPUTS]


def comb_settings(w):
    """Params function: a combinational training job's settings (a FoldRun)."""
    hp = {**COMBINATIONAL["training"], **method_hparams("vanilla")}
    run = beluga_settings.fold_run(
        config,
        {**config["training"], "max_length": COMBINATIONAL["max_length"]},
        task="combinational",
        task_type="sent",
        model=COMBINATIONAL["model"],
        configuration="iid",
        method="vanilla",
        partition="standard",
        fold=f"k{w.k}",
        held_out=(),
        functionalities=(),
        start_label=COMBINATIONAL["model"],
        hparams=hp,
        checkpoint_dir=None,
    )
    return dict(run.to_dict(), seed=COMBINATIONAL["seed"], model_lock=model_lock_path())


OOD_OUTPUTS = ("scores.csv", "ranking.csv", "ood_table.csv", "ood_table.md", "ood_table.tex", "ood.png", "models.csv")


def all_targets():
    """Final tables and plots, plus every fold's predictions and outcomes:
    naming the per-fold files as targets makes a deleted (or failed) fold's
    file rerun that fold alone (Snakemake >= 7.7 does not regenerate a missing
    intermediate file whose consumers are up to date). Inputs the fetch target
    provides must be there first."""
    if NOT_FETCHED:
        where = " ".join(f"--configfile {f}" for f in workflow.configfiles) or ""
        raise WorkflowError(
            f"{len(NOT_FETCHED)} input file(s) of this configuration are not in the data folder {DATA_DIR} "
            f"(first: {NOT_FETCHED[0]}): fetch them first on a machine with a network: "
            f"snakemake fetch --cores 4 {where} (README: The paper's run on a cluster)"
        )
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
            res(task, "failures", "failures.html"),
            res(task, "figures", "figure1.png"),
            res(task, "figures", "figure1.pdf"),
        ]
        if OOD_SETS[task]:
            targets += [res(task, "ood", name) for name in OOD_OUTPUTS]
    targets += [f"{RESULTS}/table3/{name}" for name in ("table3.csv", "table3.md", "table3.tex")]
    if sum(bool(OOD_SETS[t]) for t in TASKS) > 1:
        targets += [f"{RESULTS}/ood/ranking.csv", f"{RESULTS}/ood/ranking.md"]
    if INOCULATION["enabled"]:
        targets += inoc_targets()
    if COMBINATIONAL["enabled"]:
        targets += comb_targets()
    targets.append(f"{RESULTS}/run_config.yaml")
    return targets


# Cheap rules run on the submitting node (never queued on a cluster).
localrules:
    all,
    fetch,
    fetch_lock,
    fetch_file,
    fetch_file_new,
    fetch_model,
    prepare_iid,
    build_suite,
    split_suite,
    select_hparams,
    outcomes,
    aggregate,
    heatmap,
    figure1,
    unit_outcomes,
    significance,
    intervals,
    diagnostics,
    failures,
    table3,
    run_config,
    prepare_ood,
    ood,
    ood_ranking,
    inoculation,
    inoculation_all,
    combinational_data,
    combinational,
    combinational_all,
