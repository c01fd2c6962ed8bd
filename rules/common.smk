# The config loaded, wildcard constraints, input and params functions. What they
# compute lives in the package: loading and checking the config in
# beluga/workflow/config.py (the DAG-time checks in beluga/workflow/dag.py), every
# results path in beluga/workflow/paths.py (PATHS), the runs of the configuration
# (folds, records, a training job's settings, resources) in beluga/workflow/runs.py
# (RUNS). The targets: rules/targets.smk.
import os
import sys

from snakemake.exceptions import WorkflowError

sys.path.insert(0, workflow.basedir)

from beluga.suites import folds as beluga_folds  # noqa: E402
from beluga.workflow import dag as beluga_dag  # noqa: E402
from beluga.workflow import config as beluga_config  # noqa: E402
from beluga.workflow.paths import SEEDDIR_REGEX, fold_log  # noqa: E402
from beluga.workflow import resources as beluga_resources  # noqa: E402
from beluga.workflow import runs as beluga_runs  # noqa: E402
from beluga.workflow.resources import job_benchmark  # noqa: E402
from beluga.core import io as beluga_io  # noqa: E402
from beluga.data import fetch as beluga_fetch  # noqa: E402
from beluga.data import iid as beluga_iid  # noqa: E402
from beluga.data import ood_sets as beluga_ood  # noqa: E402
from beluga.analyses import combinational_data as beluga_comb_data  # noqa: E402
from beluga.analyses import gluex_tables as beluga_gluex  # noqa: E402
from beluga.report import iid_data as beluga_iid_data  # noqa: E402
from beluga.core.errors import BelugaError  # noqa: E402
from beluga.suites import spec as beluga_spec  # noqa: E402
from beluga.workflow import warm as beluga_warm  # noqa: E402

# The config validated (schema, defaults filled, what the schema cannot say), its data paths
# resolved, its sources and models checked and its runs enumerated (beluga/workflow/config.py,
# which the tests call in-process); a bad config stops here with one line naming the file and field.
try:
    LOADED = beluga_config.load_workflow(config, workflow.configfiles)
except BelugaError as e:
    raise WorkflowError(str(e)) from None
# where envs/beluga.post-deploy.sh installs the project from (--use-conda; docs/PIPELINE.md)
beluga_resources.export_workflow_root(workflow.basedir)
DATA_DIR = LOADED.data_dir


# the run's warm job server (Snakefile onstart), stopped when the run ends
WARM_SERVER = []


def beluga_precision_line(setting, gpus):
    """The precision line a real run prints when it starts (imports torch: not at parse time)."""
    from beluga.model.precision import start_line

    return start_line(setting, gpus)


def beluga_degenerate_lines():
    """The run's last lines on degenerate models (Snakefile onsuccess; imports pandas: not at parse time):
    every task's diagnostics, then the inoculation and combinational tables with the page that says why."""
    from beluga.report.degenerate import degenerate_lines

    analyses = {}
    for t in RUNS.inoc_units:
        analyses[f"inoculation {t.upper()}"] = (
            PATHS.inoculation("table.csv", t),
            PATHS.inoculation("inoculation.md", t),
        )
    for v in RUNS.comb_variants:
        analyses[f"combinational {v}"] = tuple(PATHS.combinational_variant(n, v) for n in ("table.csv", "table.md"))
    return degenerate_lines({t: PATHS.diagnostics("diagnostics.csv", t) for t in TASKS}, analyses)


# inputs the fetch target provides that are not in the data folder yet
NOT_FETCHED = LOADED.not_fetched


def data_path(*parts):
    """A path in the data folder (no leading ./ when it is the working directory)."""
    return os.path.normpath(os.path.join(DATA_DIR, *parts))


TASKS = config["tasks"]
SUITE_CONFIGS = list(config["configurations"])
METHODS = list(config["methods"])
PARTITIONS = list(config["partitions"])
STATISTICS = config["statistics"]
PREDICT = config["predict"]
INOCULATION = config["inoculation"]
COMBINATIONAL = config["combinational"]
PATHS = LOADED.paths
# each task's folds (none for a suite the fetch target provides), the selection grids, inoculation units
RUNS = LOADED.runs
# the tasks with a suite (BELUGA's folds and tables); a task without one trains its IID model for its OOD
# evaluation only (GLUE-X's configuration, docs/OOD.md)
SUITE_TASKS = [t for t in TASKS if t not in RUNS.suiteless]
# torch threads per training / prediction job: fixed, because float reductions
# (and so the predictions, bit for bit) depend on the number of threads; the
# IID model trains alone before any fold can start (iid_job_threads)
JOB_THREADS = config["job_threads"]
IID_THREADS = RUNS.iid_threads
# a training or prediction rule's resources (memory and time by model, length and attempt; GPUs)
job_resources = RUNS.job_resources


wildcard_constraints:
    task="|".join(TASKS),
    conf="iid|" + "|".join(beluga_folds.CONFIGURATIONS),
    method="[a-z0-9_]+",
    trial="[A-Za-z0-9.+-]+",
    partition="standard|seen|func|class|type",
    fold="[a-z0-9-]+",
    split="train|val|test|pool",
    scenario="seen|func|class|type",
    # a training seed's folder: empty for the base seed, seeds/<s>/ for another (beluga/workflow/paths.py)
    seeddir=SEEDDIR_REGEX,


# Which fold models are written to disk. By default a fold is one job that
# trains, predicts and scores with the model in memory (rule finetune); only an
# LP model that LP-FT starts from is written (rule finetune_keep, a temporary
# file). keep_models: true keeps every fold model: finetune_model trains and
# writes it, predict and outcomes take it from there (as for the IID model).
KEEP_MODELS = config["keep_models"]
START_METHODS = RUNS.start_methods()
if KEEP_MODELS:
    FUSED_METHODS, KEEP_METHODS, MODEL_METHODS = [], [], sorted(set(METHODS) | set(START_METHODS))
else:
    KEEP_METHODS = list(START_METHODS)
    FUSED_METHODS = [m for m in METHODS if m not in KEEP_METHODS]
    MODEL_METHODS = []
# the models the predict / outcomes rules read from disk: the IID model, and kept fold models
DISK_CONFS = "|".join(["iid"] + (list(beluga_folds.CONFIGURATIONS) if KEEP_MODELS else []))
DISK_METHODS = beluga_dag.method_regex(sorted({"vanilla"} | set(MODEL_METHODS)))


# --- input functions ------------------------------------------------------------------------
def suite_build_inputs(wildcards):
    """A suite file, or a spec's files (the spec, its lexicon and source files) and the i.i.d. pool its pool
    sources read."""
    suite = TASKS[wildcards.task]["suite"]
    if "path" in suite:
        return {"suite_file": suite["path"]}
    spec = RUNS.suite_specs[wildcards.task]
    inputs = {"spec_files": beluga_spec.spec_files(spec)}
    if beluga_spec.uses_pool(spec):
        inputs["pool"] = PATHS.iid("pool", wildcards.task)
    return inputs


def suite_inputs(w):
    """The suite and its split a model on disk is scored on; none for a task without a suite."""
    if w.task in RUNS.suiteless:
        return {}
    return {"suite": PATHS.suite(task=w.task), "split": PATHS.suite("split.parquet", w.task)}


def ood_inputs(w):
    """The OOD sets a run predicts (those of the IID and seen models; predict.ood_models: all = every model)."""
    return RUNS.ood_data(w.task) if RUNS.predicts_ood(w.conf, w.partition) else []


def run_files(kind):
    """The task's ``kind`` file of every run of every training seed, in RUNS.records order."""
    return lambda w: RUNS.run_files(w.task, kind)


def first_seed_run_files(kind):
    """The ``kind`` file of every run of the first training seed (the failure pages' models)."""
    return lambda w: RUNS.run_files(w.task, kind, seeddirs=[RUNS.first_seeddir()])


def seed_run_files(kind):
    """The ``kind`` file of every run of the job's own training seed (its ``seeddir``)."""
    return lambda w: RUNS.run_files(w.task, kind, seeddirs=[w.seeddir])


def model_locks(task=None):
    """A hub model's marker (the commit its configured revision resolved to, written by
    the fetch; none for local models) of a task, or (task None) of the combinational
    analysis. ancient(): only its path, which names the revision, decides a rerun."""
    marker = RUNS.model_marker(task)
    return [ancient(marker)] if marker else []


def trial_inputs(wildcards):
    inputs = {"suite": PATHS.suite(task=wildcards.task), "split": PATHS.suite("split.parquet", wildcards.task)}
    if beluga_folds.configuration(wildcards.conf).mixes_iid:
        inputs["iid_train"] = PATHS.iid("train", wildcards.task)
    start, _ = RUNS.start_model(wildcards)
    if start is not None:
        inputs["start"] = start
    else:  # the pre-trained model: a local folder's files are inputs too, a hub model's marker
        inputs["model_files"] = beluga_dag.model_files(TASKS[wildcards.task]["model"])
        inputs["model_lock"] = model_locks(wildcards.task)
    return inputs


def finetune_model_inputs(wildcards):
    """A fold's training inputs, with the selected hyper-parameters when there is a grid."""
    inputs = trial_inputs(wildcards)
    if RUNS.has_grid(wildcards.task, wildcards.method):
        inputs["selected"] = RUNS.selected(wildcards)
    return inputs


def finetune_inputs(wildcards):
    """A fold job's inputs: training inputs, the i.i.d. test set and the OOD sets it predicts."""
    return {
        **finetune_model_inputs(wildcards),
        "iid_test": PATHS.iid("test", wildcards.task),
        "ood": ood_inputs(wildcards),
    }


def trial_files(w):
    return [
        PATHS.trial(w.task, w.conf, w.method, w.partition, w.fold, t, seeddir=w.seeddir)
        for t in RUNS.grid_points[(w.task, w.method)]
    ]


# --- params functions -----------------------------------------------------------------------
def run_settings(rule_name):
    """A training job's settings as one object (beluga/train/settings.py FoldRun, as a dict)."""
    return lambda w: RUNS.settings(rule_name, w)


def hparams_summary(rule_name):
    """A training job's hyper-parameters in words, for its message (a dry run shows it)."""
    return lambda w: RUNS.hparams_summary(rule_name, w)


def run_records(kind):
    """Every run of every training seed with its ``kind`` file and the T_test functionalities it
    predicted (None: all)."""
    return lambda w: RUNS.records(w.task, kind)


def seed_run_records(kind):
    """Every run of the job's own training seed (its ``seeddir``), as run_records."""
    return lambda w: RUNS.records(w.task, kind, seeddirs=[w.seeddir])


def seed_unit_outcomes(w):
    """The per-unit outcomes of every training seed, in RUNS.seeds order."""
    return [PATHS.unit_outcomes(w.task, sd) for sd in RUNS.seeddirs()]


def failure_runs(w):
    """Every run of the first training seed with its outcomes and predictions files."""
    return RUNS.records(w.task, "outcomes", predictions=True, seeddirs=[RUNS.first_seeddir()])


def ood_runs(which):
    """The runs the OOD evaluation reads, with their outcomes files: ``systems`` (the IID
    model and each pair's seen model) or ``models`` (every model that predicted the OOD sets)."""
    return lambda w: RUNS.records(w.task, "outcomes", RUNS.ood_keys(w.task, which), functionalities=False)


def predicted_functionalities(w):
    """The T_test functionalities a model on disk predicts (the ones its run is scored on; None = all)."""
    return RUNS.scored_functionalities(w.task, w.partition, w.fold)


def predicted_iid_examples(w):
    """The i.i.d. test examples a run's model predicts (None = all; predict.fold_iid_examples)."""
    return RUNS.iid_examples(w.task, w.partition)


def model_version(w):
    """The packaged default model's version (another version reruns what was trained)."""
    return beluga_dag.model_version(TASKS[w.task]["model"])


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
    combinational_comparison,
    combinational_all,
