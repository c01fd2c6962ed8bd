"""The runs of a configuration, as ``rules/common.smk`` needs them while the DAG is built.

A :class:`Runs` is built once from the validated config: each task's folds, the
selection grid's trial ids, the inoculation units. Its methods answer what the
rules ask of a run, given the task or a job's wildcards (Snakemake's, or any
mapping with the same keys): which runs a task has (:meth:`Runs.run_keys`) and
their records for the aggregating rules (:meth:`Runs.records`), a training
job's settings (:meth:`Runs.settings`: one :class:`beluga.train.settings.FoldRun`,
as a dict), its hyper-parameters (:meth:`Runs.hparams`) and those in words
(:meth:`Runs.hparams_summary`),
where a fold's hyper-parameters are selected, what it starts from, and the
resources of a job that trains or predicts (:meth:`Runs.job_resources`).
Every path comes from :class:`beluga.workflow.paths.Paths`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from beluga.analyses import combinational as comb_analysis
from beluga.analyses import combinational_data as comb_data
from beluga.analyses.inoculation import plan as inoculation
from beluga.core.errors import ConfigError
from beluga.data import fetch, remotes
from beluga.methods import config_hparams, get_algorithm, method_hparams
from beluga.suites import folds as beluga_folds
from beluga.suites.build import load_task_spec, suite_spec_name
from beluga.train.settings import fold_run, job_hparams
from beluga.workflow import dag
from beluga.workflow.paths import IID_RUN, Paths, RunKey, seed_of, seeddir_of
from beluga.workflow.resources import BASE_MEM_MB, CUDA_HOST_MB

#: the rules whose settings :meth:`Runs.settings` builds (finetune_keep and finetune_model use finetune's)
TRAINING_RULES = ("train_iid", "finetune", "trial", "inoculate", "combinational_train")

#: a training / prediction job's memory (MB) and time (minutes) at model scale 1, first attempt; the
#: memory from the measured peaks of beluga/workflow/resources.py (docs/COMPUTE.md, "Memory requests")
BASE_RESOURCES = {"train": (BASE_MEM_MB["train"], 60), "predict": (BASE_MEM_MB["predict"], 20)}


def model_scale(spec) -> float:
    """Memory / time scale of a model (tiny plumbing BERT < MiniLM < BERT-base < BERT-large)."""
    name = str(spec).lower()
    if name == "tiny-random":
        return 0.5
    if "large" in name:
        return 6.0
    if "base" in name:
        return 2.5
    return 1.0  # MiniLM (default) or an unknown local model of that size


def gpu_resources(config: dict) -> dict:
    """The resources every job that trains or predicts requests for the configuration's GPUs:
    a GPU each (``gpu_jobs: 1``), or K jobs per GPU: locally one of K slots of a GPU (``--resources
    gpu_slot=K`` per GPU, :func:`check_local_gpu_slots`); on Slurm each job its own allocation with
    1/K of a GPU's shards (``--gres=shard:S/K``, S = ``gpu_shards``, the shards the site declares per
    GPU; K when unset). The cluster's GPU partition when one is set. K jobs per GPU for a job of
    several GPUs, or S not a multiple of K, stop with one line naming the field."""
    out = {}
    k, shards = int(config["gpu_jobs"]), config.get("gpu_shards")
    if config["gpus"] and k == 1:
        out = {"gpu": int(config["gpus"])}
    elif config["gpus"]:
        if int(config["gpus"]) != 1:
            raise ConfigError(f"config: field 'gpu_jobs': {k} jobs per GPU need gpus: 1 (a job of "
                              f"{config['gpus']} GPUs cannot share them)")
        shards = k if shards is None else int(shards)
        if shards % k:
            raise ConfigError(f"config: field 'gpu_shards': {shards} shards per GPU do not split into "
                              f"gpu_jobs: {k} equal shares (a multiple of {k})")
        out = {"gpu_slot": 1, "gres": f"shard:{shards // k}"}
    if config["gpu_partition"]:
        out["slurm_partition"] = config["gpu_partition"]
    return out


def check_local_gpu_slots(config: dict, gpu_slot: int | None) -> None:
    """Stop (one line naming the field and the flag) a local run of K jobs per GPU (``gpus`` > 0, ``gpu_jobs:
    K`` > 1) that does not say how many GPU slots the machine has (``gpu_slot``: the ``--resources gpu_slot=N``
    given, None without): Snakemake leaves a resource nobody provides unlimited, so it would start as many GPU
    jobs at once as the machine has cores, all on its GPUs. N = K x the machine's GPUs (K x 1 on one GPU); N
    not a multiple of K is refused too (a GPU would get more or fewer than K jobs)."""
    k = int(config["gpu_jobs"])
    if not config["gpus"] or k == 1:
        return
    if gpu_slot is None or gpu_slot < k or gpu_slot % k:
        given = "no --resources gpu_slot" if gpu_slot is None else f"--resources gpu_slot={gpu_slot}"
        raise ConfigError(f"config: field 'gpu_jobs': {k} jobs per GPU on this machine need --resources "
                          f"gpu_slot={k} per GPU ({k} on one GPU, {2 * k} on two; given: {given}); "
                          "docs/COMPUTE.md, 'Several jobs per GPU'")


def _seeddir(w: Mapping) -> str:
    """A job's seed folder (its ``seeddir`` wildcard; the base seed's ``""`` when the mapping has none)."""
    try:
        return w["seeddir"] or ""
    except (KeyError, IndexError, AttributeError):
        return ""


# ---------------------------------------------------------------- a task's blocks (also the cost plan's)
def task_training(config: dict, task_cfg: dict) -> dict:
    """The global training block with the task's own overrides (tasks.<id>.training) on top."""
    return {**config["training"], **task_cfg.get("training", {})}


def stage_hparams(config: dict, task_cfg: dict, stage: str, method: str, *overrides) -> dict:
    """The hyper-parameters of a job of ``method`` in a stage (``iid``: the IID model; ``suite``): the
    stage's lr / batch_size / epochs, the method's complete hyper-parameters and the job's ``overrides``
    (:func:`beluga.train.settings.job_hparams`)."""
    tr = task_training(config, task_cfg)
    return job_hparams(method, tr[stage], config_hparams(method, tr["method_hparams"]), *overrides)


def task_selection(config: dict, task_cfg: dict) -> dict:
    """The selection block (docs/PROCEDURE.md, §4) with the task's overrides (tasks.<id>.selection)."""
    return {**config["selection"], **task_cfg.get("selection", {})}


def selection_method(config: dict, task_cfg: dict, method: str) -> str:
    """The method whose selection gives ``method`` its hyper-parameters (itself;
    LP-FT with ft_hparams_from: vanilla takes vanilla's)."""
    return get_algorithm(method).selection_method(stage_hparams(config, task_cfg, "suite", method))


def start_method(config: dict, task_cfg: dict, method: str) -> str | None:
    """The method whose model of the same configuration and fold ``method`` starts from (None: the
    configuration's start model); LP-FT: lp's, or its own LP stage's (``lp_epochs`` set)."""
    return get_algorithm(method).start_from(stage_hparams(config, task_cfg, "suite", method))


def start_methods(config: dict, task_cfg: dict, methods) -> set[str]:
    """The methods whose models ``methods`` start from (trained even when the config does not list them)."""
    return {start_method(config, task_cfg, m) for m in methods} - {None}


def check_suiteless(config: dict, suiteless: list[str]) -> None:
    """Stop (one line naming the field; the dry run's names the config file) where a configuration asks a task
    without a suite for what needs one: inoculation on it (its units are the suite's) named in
    ``inoculation.tasks``, or ``inoculation`` enabled for every task (``tasks: null``) when no task has one. With
    ``tasks: null`` and some suites, the tasks without one are not inoculated (as a suite the fetch target has not
    provided yet)."""
    if not suiteless:
        return
    inoc = config["inoculation"]
    named = [t for t in inoc["tasks"] or () if t in suiteless]
    if named:
        raise ConfigError(f"config: field 'inoculation.tasks': task {named[0]!r} has no suite (tasks.{named[0]}."
                          f"suite): inoculation fine-tunes on a suite's units")
    if inoc["enabled"] and not inoc["tasks"] and len(suiteless) == len(config["tasks"]):
        raise ConfigError("config: field 'inoculation.enabled': no task has a suite (tasks.<id>.suite): "
                          "inoculation fine-tunes on a suite's units")


class Runs:
    """The runs of a validated config (``data_dir``: its data folder; ``not_fetched``: inputs the
    fetch target provides that are not there yet, whose tasks get no folds; ``published``: the cost plan's
    folds of a CheckList release suite not staged yet, from its published shape, :mod:`beluga.suites.published`).
    Building it checks the folds, the selection grids and the inoculation units: a
    :class:`beluga.core.errors.BelugaError` names the config file(s) ``configfiles`` and the field."""

    def __init__(self, config: dict, paths: Paths, data_dir: str, not_fetched=(), configfiles=(),
                 published: bool = False):
        self.config, self.paths, self.data_dir = config, paths, data_dir
        self.tasks = config["tasks"]
        self.configurations = list(config["configurations"])
        #: the base seed (its runs keep the one-seed paths) and the training seeds, in config order (the
        #: config's list: integers once validated)
        self.base_seed = int(config["seed"])
        self.seeds = config["seeds"] or [self.base_seed]
        self.methods = list(config["methods"])
        self.predict = config["predict"]
        self.combinational = config["combinational"]
        comb_analysis.check_block(self.combinational)
        #: combinational variant name -> its complete settings (one, "default", without combinational.variants)
        self.comb_variants = comb_analysis.variants(self.combinational)
        #: pool stem -> its data source and roles; variant -> the stem of the pool it trains on
        self.comb_pools, self.comb_pool_of = comb_data.pools(self.combinational)
        #: the figures across variants (combinational.figures): name -> its panels (and K), checked
        self.comb_figures = comb_analysis.figures(self.combinational, self.comb_variants)
        self.inoculation = config["inoculation"]
        inoculation.check_tasks(self.inoculation["tasks"], list(self.tasks))
        inoculation.check_units(self.inoculation["units"], self.inoculation["challenge"])
        #: the inoculation's learning rates (a named grid resolved; two with one job id refused)
        self.inoc_lrs = inoculation.task_lr_grids(self.inoculation["lrs"], self.inoculation["tasks"] or self.tasks)
        #: what a dose's learning rate is chosen on (``dev``: held out, ``val`` read as ``dev``; ``test``: the
        #: seed's) and the share of an external challenge set's training part held out for it
        self.inoc_select_on = inoculation.selection(self.inoculation["select_on"])
        self.inoc_dev_fraction = inoculation.dev_fraction(self.inoculation)
        inoculation.check_samples(self.inoculation["samples"], self.inoculation["select_on"])
        # torch threads of a training / prediction job (fixed: float reductions depend on it);
        # the IID model trains alone before any fold can start and may use the cores that would idle
        self.iid_threads = config["iid_job_threads"] or config["job_threads"]
        self.folds, self.seen_fold, self.func_names, self.func_tables = {}, {}, {}, {}
        #: the tasks without a suite: their IID model and its OOD evaluation only (no folds, no BELUGA tables)
        self.suiteless = [t for t, c in self.tasks.items() if not dag.has_suite(c)]
        check_suiteless(config, self.suiteless)
        gpu_resources(config)   # gpus / gpu_jobs / gpu_shards: one line here rather than in a rule file
        for t, c in self.tasks.items():
            if t in self.suiteless or dag.suite_not_fetched(c["suite"], not_fetched):
                # the fetch target can run; every other target stops (all_targets)
                self.folds[t], self.seen_fold[t], self.func_names[t], self.func_tables[t] = [], {}, [], None
                continue
            funcs, self.folds[t], self.seen_fold[t] = dag.task_folds(c["suite"], c["type"], list(config["partitions"]),
                                                                     published)
            dag.check_case_counts(t, funcs, configfiles)
            dag.check_folds(t, self.folds[t], funcs, self.configurations, configfiles)
            self.func_names[t], self.func_tables[t] = list(funcs["functionality"]), funcs
        self.ood_sets = {t: {e["name"]: e for e in (self.tasks[t].get("ood") or [])} for t in self.tasks}
        #: task -> its suite spec (loaded and checked) when the suite is rendered from one
        self.suite_specs = {t: load_task_spec(c["suite"], c["type"]) for t, c in self.tasks.items()
                            if dag.has_suite(c) and suite_spec_name(c["suite"])}
        #: (task, method) -> trial id -> grid point, for every method, the methods they start from (LP for
        #: LP-FT: its folds run too) and the methods they take selections from
        #: task -> the methods whose models the task's methods start from (LP for LP-FT)
        self.starts = {t: start_methods(config, c, self.methods) for t, c in self.tasks.items()}
        self.grid_points = {
            (t, m): dag.grid_points(dag.method_grid(self.selection(t), m))
            for t in self.tasks
            for trained in [set(self.methods) | self.starts[t]]
            for m in sorted(trained | {self.selection_method(t, m) for m in trained})
        }
        #: task -> inoculation unit -> {level, label, functionalities}
        self.inoc_units = {
            t: inoculation.units(self.func_tables[t], self.inoculation["units"])
            for t in (self.inoculation["tasks"] or self.tasks)
            if self.func_tables.get(t) is not None
        }
        for t, task_units in self.inoc_units.items():   # external challenge sets: units of their own
            task_units.update(inoculation.challenge_units(self.inoculation["challenge"], self.ood_sets[t]))
        missing = [c["set"] for c in inoculation.challenge_specs(self.inoculation["challenge"])
                   if not any(c["set"] in self.ood_sets[t] for t in self.inoc_units)]
        if missing and self.inoc_units:
            raise ConfigError(f"config: field 'inoculation.challenge': {missing[0]!r} is not an OOD set "
                              f"(tasks.<id>.ood) of an analysed task")

    # --- a task's blocks ---------------------------------------------------------------------------
    def training(self, task: str) -> dict:
        return task_training(self.config, self.tasks[task])

    def selection(self, task: str) -> dict:
        return task_selection(self.config, self.tasks[task])

    def selection_method(self, task: str, method: str) -> str:
        return selection_method(self.config, self.tasks[task], method)

    def start_methods(self) -> list[str]:
        """Every task's start methods (the methods whose fold models another method starts from)."""
        return sorted(set().union(*self.starts.values()))

    def selected(self, w: Mapping) -> str:
        """A fold's selected hyper-parameters: selected on the seen fold (policy "seen", the paper)
        or on the fold itself (policy "per_fold"), by the method's selection method, with the
        fold's own training seed."""
        task, method, sd = w["task"], self.selection_method(w["task"], w["method"]), _seeddir(w)
        if self.selection(task)["policy"] == "seen":
            return self.paths.selected(task, w["conf"], method, "seen", "all", seeddir=sd)
        return self.paths.selected(task, w["conf"], method, w["partition"], w["fold"], seeddir=sd)

    def has_grid(self, task: str, method: str) -> bool:
        """A fold of ``method`` trains with selected hyper-parameters (its selection method has a grid)."""
        return bool(self.grid_points[(task, self.selection_method(task, method))])

    # --- training seeds ------------------------------------------------------------------------------
    def seeddirs(self) -> list[str]:
        """Each training seed's folder (``""`` for the base seed), in config order."""
        return [seeddir_of(s, self.base_seed) for s in self.seeds]

    def seed_of(self, seeddir: str) -> int:
        """The training seed of a seed folder."""
        return seed_of(seeddir, self.base_seed)

    def first_seeddir(self) -> str:
        """The folder of the first training seed (the one whose models the failure pages show)."""
        return self.seeddirs()[0]

    # --- folds and runs ------------------------------------------------------------------------------
    def fold_spec(self, task: str, partition: str, fold: str) -> dict:
        """A run's fold: the IID model's (standard/all), the seen fold, or a held-out fold."""
        if partition == "standard":
            return {"partition": "standard", "fold": "all", "group": "all", "held_out": self.func_names[task]}
        if partition == "seen":
            return self.seen_fold[task]
        return beluga_folds.find_fold(self.folds[task], partition, fold)

    def scored_functionalities(self, task: str, partition: str, fold: str) -> list[str] | None:
        """The T_test functionalities a run predicts and is scored on (None: all, predict.scope: all)."""
        return beluga_folds.scored_functionalities(self.fold_spec(task, partition, fold), self.predict["scope"])

    def iid_examples(self, task: str, partition: str) -> int | None:
        """The i.i.d. test examples a run's model predicts (None: all;
        :func:`beluga.suites.folds.fold_iid_examples`)."""
        return beluga_folds.fold_iid_examples(partition, self.tasks[task].get("scenario_iid", "folds"),
                                              self.predict.get("fold_iid_examples"))

    def run_keys(self, task: str) -> list[RunKey]:
        """Every (configuration, method, partition, fold) with predictions, the IID baseline first."""
        keys = [IID_RUN]
        for conf in self.configurations:
            for method in self.methods:
                keys += [RunKey(conf, method, f["partition"], f["fold"]) for f in self.folds[task]]
        return keys

    def predicts_ood(self, conf: str, partition: str) -> bool:
        """The run's model predicts the OOD sets: the IID and seen models (every model: ood_models: all)."""
        return conf == "iid" or partition == "seen" or self.predict["ood_models"] == "all"

    def ood_data(self, task: str) -> list[str]:
        """The prepared OOD sets of a task, in config order."""
        return [self.paths.ood_data(name, task) for name in self.ood_sets[task]]

    def ood_keys(self, task: str, which: str) -> list[RunKey]:
        """The runs the OOD evaluation reads: ``systems`` (the IID model and each pair's
        seen model) or ``models`` (every model that predicted the OOD sets)."""
        if which == "systems":
            return [k for k in self.run_keys(task) if k.conf == "iid" or k.partition == "seen"]
        return [k for k in self.run_keys(task) if self.predicts_ood(k.conf, k.partition)]

    def run_files(self, task: str, kind: str, keys=None, seeddirs=None) -> list[str]:
        """The ``kind`` file of every run of ``keys`` (default: every run of the task) of every
        training seed (``seeddirs``, default all), seed by seed, in the order of :meth:`records`."""
        keys = self.run_keys(task) if keys is None else keys
        return [self.paths.run(kind, task, *key, seeddir=sd)
                for sd in (self.seeddirs() if seeddirs is None else seeddirs) for key in keys]

    def records(self, task: str, kind: str, keys=None, functionalities: bool = True,
                predictions: bool = False, seeddirs=None) -> list[dict]:
        """The record of every run of ``keys`` (default: every run of the task) of every training
        seed (``seeddirs``, default all), seed by seed: the training ``seed``, configuration,
        method, partition, fold, the path of its ``kind`` file, the T_test functionalities it
        predicted (None: all), the i.i.d. test examples it predicted (``iid_examples``, None: all)
        and, with ``predictions``, its predictions file."""
        out = []
        for sd in self.seeddirs() if seeddirs is None else seeddirs:
            for key in self.run_keys(task) if keys is None else keys:
                c, m, p, f = key
                rec = {"configuration": c, "method": m, "partition": p, "fold": f,
                       "path": self.paths.run(kind, task, *key, seeddir=sd), "seed": self.seed_of(sd)}
                if functionalities:
                    rec["functionalities"] = self.scored_functionalities(task, p, f)
                    rec["iid_examples"] = self.iid_examples(task, p)
                if predictions:
                    rec["predictions"] = self.paths.run("predictions", task, *key, seeddir=sd)
                out.append(rec)
        return out

    def start_model(self, w: Mapping) -> tuple[str | None, str]:
        """(input path or None, label for the run record) of a fold's start model: a method with
        a start method (lp_ft) starts from that method's model of the same configuration and fold;
        otherwise IID→T and IID→(IID+T) start from the IID model and IID+T from the pre-trained model."""
        first, sd = start_method(self.config, self.tasks[w["task"]], w["method"]), _seeddir(w)
        if first is not None:
            model = self.paths.model(w["task"], w["conf"], first, w["partition"], w["fold"], seeddir=sd)
            return model, f"{first} model of this fold"
        if beluga_folds.configuration(w["conf"]).from_iid:
            return self.paths.iid_model(w["task"], seeddir=sd), "iid"
        return None, self.tasks[w["task"]]["model"]

    def comb_variant(self, variant: str | None = None) -> dict:
        """A combinational variant's settings (None: the first variant)."""
        return self.comb_variants[variant or next(iter(self.comb_variants))]

    def comb_pool(self, variant: str) -> str:
        """The pool a combinational variant trains on (its data source's)."""
        return self.paths.combinational(f"{self.comb_pool_of[variant]}.parquet")

    def comb_fields(self, variant: str) -> dict[str, str]:
        """The config field of each of a combinational variant's settings (what its job's messages name)."""
        return comb_analysis.variant_fields(self.combinational, variant)

    def model_marker(self, task: str | None = None, variant: str | None = None) -> str | None:
        """The marker of a task's hub model (task None: the combinational ``variant``'s model), the commit
        its configured revision resolved to (written by the fetch); None for a local model."""
        block = self.comb_variant(variant) if task is None else self.tasks[task]
        spec = str(block["model"])
        if not fetch.is_hub_name(spec):
            return None
        return fetch.model_marker(self.data_dir, spec, block.get("model_revision"))

    # --- a training job's settings and message ---------------------------------------------------------
    def hparams(self, rule: str, w: Mapping) -> dict:
        """The complete hyper-parameters of a job of the training rule ``rule`` (:data:`TRAINING_RULES`) with the
        wildcards ``w`` (:func:`beluga.train.settings.job_hparams`, the layers read here): the IID model's stage
        (vanilla); a fold's suite stage and method, a trial's grid point on top; an inoculation dose's suite
        stage (vanilla) with its lr, epochs and batch size; the combinational analysis' training (vanilla's
        defaults)."""
        if rule == "combinational_train":
            return job_hparams("vanilla", self.comb_variant(w["variant"])["training"], method_hparams("vanilla"))
        task = w["task"]
        if rule == "train_iid":
            return stage_hparams(self.config, self.tasks[task], "iid", "vanilla")
        if rule == "inoculate":
            inoc = self.inoculation
            dose = {"lr": next(x for x in self.inoc_lrs[task] if inoculation.lr_id(x) == w["lr"]),
                    "epochs": inoc["max_epochs"], **({"batch_size": inoc["batch_size"]} if inoc["batch_size"] else {})}
            return stage_hparams(self.config, self.tasks[task], "suite", "vanilla", dose)
        trial = [self.grid_points[(task, w["method"])][w["trial"]]] if rule == "trial" else []
        return stage_hparams(self.config, self.tasks[task], "suite", w["method"], *trial)

    def settings(self, rule: str, w: Mapping) -> dict:
        """The settings of a job of the training rule ``rule`` (:data:`TRAINING_RULES`) with the
        wildcards ``w``, as one FoldRun (beluga/train/settings.py) dict, built once: the job's own fields here
        (its hyper-parameters: :meth:`hparams`), every other field from the config (the task's training
        block; the combinational analysis' own)."""
        if rule not in TRAINING_RULES:
            raise ValueError(f"settings: {rule!r} is not a training rule ({', '.join(TRAINING_RULES)})")
        # the job's training seed: the base seed's jobs train as a one-seed run does (the combinational
        # analysis with its own seed), another seed's with that seed
        sd = _seeddir(w)
        seed, threads = self.seed_of(sd) if sd else self.base_seed, self.config["job_threads"]
        if rule == "combinational_train":
            comb = self.comb_variant(w["variant"])   # the variant's model, length limit and training
            task, task_type, model = "combinational", "sent", comb["model"]
            training = {**self.config["training"], "max_length": comb["max_length"]}
            key, held_out, funcs = RunKey("iid", "vanilla", "standard", f"{w['variant']}-k{w['k']}"), (), ()
            start, checkpoint_dir = model, None
            model_lock = self.model_marker(None, w["variant"])
            seed = seed if sd else self.combinational["seed"]
        else:
            task = w["task"]
            task_type, model, training = self.tasks[task]["type"], self.tasks[task]["model"], self.training(task)
            funcs, model_lock = tuple(self.func_names[task]), self.model_marker(task)
            if rule == "train_iid":
                key, held_out, funcs, start = IID_RUN, (), (), model
                checkpoint_dir = self.paths.checkpoints(rule, task, key, seeddir=sd)
                threads = self.iid_threads
            elif rule == "inoculate":  # IID→T on the unit's dose
                key = RunKey("iid_to_t", "vanilla", "inoculation", f"{w['unit']}-{w['dose']}-{w['lr']}")
                unit_funcs = set(self.inoc_units[task][w["unit"]]["functionalities"])
                held_out, start = tuple(f for f in funcs if f not in unit_funcs), "iid"
                checkpoint_dir, model_lock = None, None
            else:  # finetune (finetune_keep, finetune_model) and trial
                key = RunKey(w["conf"], w["method"], w["partition"], w["fold"])
                held_out = tuple(self.fold_spec(task, key.partition, key.fold)["held_out"])
                start = self.start_model(w)[1]
                trial = [w["trial"]] if rule == "trial" else []
                checkpoint_dir = self.paths.checkpoints(rule, task, key, *trial, seeddir=sd)
        run = fold_run(self.config, training, task=task, task_type=task_type, model=model, configuration=key.conf,
                       method=key.method, partition=key.partition, fold=key.fold, held_out=held_out,
                       functionalities=funcs, start_label=start, hparams=self.hparams(rule, w), seed=seed,
                       threads=threads, checkpoint_dir=checkpoint_dir, model_lock=model_lock)
        return run.to_dict()

    def hparams_summary(self, rule: str, w: Mapping) -> str:
        """A training job's hyper-parameters in words, for its message (a dry run shows it): the
        values, or which method's selection on which fold chooses them."""
        task, method = w["task"], w["method"]
        hp, chosen = self.hparams(rule, w), {}
        if rule != "trial":
            sel = self.selection_method(task, method)
            where = "seen/all" if self.selection(task)["policy"] == "seen" else "this fold"
            grid = dag.method_grid(self.selection(task), sel) if self.grid_points[(task, sel)] else {}
            chosen = {k: f"{sel}'s selection on {where}" for k in grid}
            if get_algorithm(method).fixed_epochs(hp) is not None:
                chosen.pop("epochs", None)
        keys = ("lr", "batch_size", "epochs")
        parts = [", ".join(f"{k} {hp[k]:g}" for k in keys if k not in chosen)]
        if chosen:
            parts.append(f"{', '.join(k for k in keys if k in chosen)}: {next(iter(chosen.values()))}")
        return "; ".join([p for p in parts if p] + [f"starts from {self.start_model(w)[1]}"])

    # --- cluster resources --------------------------------------------------------------------------
    def job_resources(self, kind: str) -> dict:
        """A training (``train``) / prediction (``predict``) rule's resources: mem_mb (the measured
        base of beluga/workflow/resources.py, plus its CUDA host estimate with GPUs; grows by half
        on every retry), runtime in minutes (doubles on every retry: preemption or a slow node), both
        scaled by the task's model (the combinational analysis: its variant's) and max_length; and the
        configuration's GPUs (:func:`gpu_resources`)."""
        base_mb, base_min = BASE_RESOURCES[kind]

        def scale(w):
            task = w.get("task")
            return model_scale(self.comb_variant(w.get("variant"))["model"] if task is None
                               else self.tasks[task]["model"])

        def mem_mb(wildcards, attempt):
            task = wildcards.get("task")
            max_length = self.comb_variant(wildcards.get("variant"))["max_length"] if task is None \
                else self.training(task)["max_length"]
            cuda = CUDA_HOST_MB if self.config["gpus"] else 0
            return int((base_mb * scale(wildcards) * max(1.0, max_length / 128) + cuda) * (1 + 0.5 * (attempt - 1)))

        def runtime(wildcards, attempt):
            return int(base_min * scale(wildcards) * 2 ** (attempt - 1))

        return {"mem_mb": mem_mb, "runtime": runtime, **gpu_resources(self.config)}

    # --- inoculation ---------------------------------------------------------------------------------
    def inoc_doses(self, task: str, unit: str) -> list[str]:
        spec = self.inoc_units[task][unit]
        if spec.get("challenge") is not None:
            sets = self.ood_sets[task]
            n = inoculation.challenge_train_size(
                sets[spec["challenge"]], self.inoculation["challenge_test_fraction"], self.inoc_dev_fraction,
                train_entry=sets.get(spec["challenge_train"]), train_size=spec["train_size"],
                distinct=spec["distinct"])
        else:
            n = inoculation.train_cases_per_unit(self.func_tables[task], spec["functionalities"],
                                                 self.config["split"]["fractions"])
        doses = inoculation.doses_for(n, self.inoculation["doses"])
        inoculation.check_released_doses(doses, self.inoc_released_files(task, unit), spec["label"])
        return doses

    def inoc_released_files(self, task: str, unit: str) -> dict[str, str]:
        """dose -> Liu et al.'s released sample of it, a path in the unit's training set's folder, for a unit that
        trains on them (:func:`beluga.analyses.inoculation.plan.released_samples`); {} for a drawn one."""
        spec = self.inoc_units[task][unit]
        entry = self.ood_sets[task].get(spec.get("challenge_train")) if spec.get("challenge_train") else None
        files = inoculation.released_samples(spec, entry, self.inoculation["samples"])
        if not files:
            return {}
        folder = Path(entry.get("path") or remotes.OOD_DIRS[entry["source"]]).expanduser()
        return {dose: str(folder / rel) for dose, rel in files.items()}

    def inoc_released(self, task: str, unit: str, dose: str) -> list[str]:
        """The released sample a (unit, dose) trains on ([] for a drawn dose, and for ``all``: the whole split)."""
        path = self.inoc_released_files(task, unit).get(str(dose))
        return [] if path is None else [path]

    def inoc_challenge(self, task: str, unit: str, key: str = "challenge") -> list[str]:
        """The prepared challenge set of an external-challenge unit (``key`` ``challenge_train``: the OOD set
        that is its training part); [] for a suite unit or a set without one."""
        name = self.inoc_units[task][unit].get(key)
        return [] if name is None else [self.paths.ood_data(name, task)]

    def inoc_results(self, task: str, ext: str = "json", seeddirs=None) -> list[str]:
        """Every (unit, dose, learning rate) result of a task of every training seed (``seeddirs``,
        default all), seed by seed (``ext``: json, the record; parquet, the per-case and per-example
        outcomes), in the same order for both."""
        return [
            self.paths.inoculation_run(task, unit, dose, inoculation.lr_id(lr), ext, seeddir=sd)
            for sd in (self.seeddirs() if seeddirs is None else seeddirs)
            for unit in self.inoc_units[task]
            for dose in self.inoc_doses(task, unit)
            for lr in self.inoc_lrs[task]
        ]

