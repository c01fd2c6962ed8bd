"""A cost plan before a run: ``python -m beluga plan [--configfile F]``.

For every rule that trains or predicts, and every (configuration, method), the
plan counts the jobs, the sequences each job trains on (items × epochs; an
INV / DIR item is a pair: original and one perturbation) and predicts (T_test
inputs of the functionalities a fold is scored on, the i.i.d. test set;
trials: T_val of the training functionalities), and estimates core-hours
(CPU jobs) or GPU-hours (``gpus: N``) by the cost model of
:mod:`beluga.workflow.cost` (a throughput table scaled to each job's model,
length and batch size; where each rate comes from; a GPU plan: optimizer steps
at real lengths, :mod:`beluga.workflow.steps`). It is an estimate: a CPU plan
counts every sequence at ``max_length`` (real sequences are often shorter) and
READ's contexts as one window, a GPU plan the task's token lengths measured on the staged data
(``python -m beluga data lengths``) or else the published length distributions,
and the selected number of epochs is unknown before selection (the plan uses
the mean of the grid's values; batch sizes: each grid value's cost, averaged).
The i.i.d. sizes are the paper's for a paper source (``--assume-paper-data``,
the default), else the files' in each task's folder
(:func:`beluga.workflow.cost.iid_sizes`). It also bounds the run's peak
scratch disk (:func:`disk_plan`). Its clock (:mod:`beluga.workflow.schedule`):
totals in the unit that suits them (seconds, minutes, hours), one job's
seconds by part per rule and task beside the Slurm time the rule asks for, the
data sizes counted and where from, and the wall-clock on N GPUs (``--gpus``)
or cores (``--cores``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from beluga.analyses import combinational as comb_analysis
from beluga.analyses.inoculation import plan as inoc_analysis
from beluga.core.bounds import yaml_load
from beluga.core.errors import ConfigError
from beluga.data.lengths import plan_lengths
from beluga.methods import ALGORITHMS
from beluga.model.graphs import eager_reason
from beluga.train.settings import job_hparams
from beluga.workflow import calibrate as calib
from beluga.workflow import runs
from beluga.workflow import steps as steps_mod
from beluga.workflow.calibrate import REPO
from beluga.workflow.config import CONFIG_SCHEMA, checked_runs, validate_config  # noqa: F401 (CONFIG_SCHEMA: the plan's schema)
from beluga.workflow.cost import (
    ESTIMATED_METHOD_COST,
    NO_BF16_FACTOR,
    RATE_KEYS,
    READ_ROW,
    anchors,
    batches_estimate,
    file_text,
    mean_train_s_per_seq,
    model_size,
    paper_sizes_line,
    predict_s_per_seq,
    rate_lines,
    task_rate,
    throughput_table,
    train_s_per_seq,
    value_kind,
)
from beluga.workflow.dag import has_suite
from beluga.workflow.schedule import (
    PlannedJob,
    job_lines,
    size_lines,
    slurm_profile,
    slurm_rows,
    time_unit,
    wall_clock_lines,
)
from beluga.workflow.sizes import ood_entry_count, ood_entry_size, ood_size, published_sizes_line, task_counts
from beluga.workflow.steps import n_parameters


@dataclass
class Line:
    rule: str
    configuration: str
    method: str
    jobs: int = 0
    train_seqs: float = 0.0      # summed over the jobs
    predict_seqs: float = 0.0
    hours: float = 0.0
    task_hours: dict = field(default_factory=dict)
    task_jobs: dict = field(default_factory=dict)


def load_config(configfile: str | None, overrides: list[str] = ()) -> dict:
    """The config as snakemake sees it: YAML, top-level ``KEY=VALUE``
    overrides (as ``snakemake --config``: a mapping updates the config's key
    by key, ``inoculation={enabled: true}`` keeps the block's other keys;
    the value is read as YAML, so ``true`` is a boolean), validated against
    the schema, defaults filled."""
    from snakemake.utils import update_config

    path = config_path(configfile)
    if not path.exists():
        raise ConfigError(f"config file {path}: field 'path': file does not exist")
    config = _yaml(file_text(path, f"config file {path}"), f"config file {path}: field '(top level)'")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ConfigError(f"config file {path}: field '(top level)': a mapping of keys to values is needed, not a "
                          f"{value_kind(config)}")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config: field {item!r}: expected KEY=VALUE")
        update_config(config, {key: _yaml(value, f"--config: field {key!r}")})
    return validate_config(config, [path])   # as while the DAG is built (rules/common.smk)


def config_path(configfile: str | None) -> Path:
    """The config file the plan reads (default: the repository's config.yaml)."""
    return Path(configfile) if configfile else REPO / "config.yaml"


def _yaml(text: str, where: str):
    """YAML ``text``; a syntax error is one line (``where``, the problem and its line and column)."""
    try:
        return yaml_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML ({problem}{at})") from None


def _epochs_estimate(stage: dict, grid: dict) -> float:
    eps = grid.get("epochs")
    return float(sum(eps) / len(eps)) if eps else float(stage["epochs"])


def inoculation_epochs(inoc: dict) -> int:
    """Epochs the plan counts for an inoculation job: the fewest its early stopping allows."""
    return min(int(inoc["max_epochs"]), int(inoc["patience"]) + 1)


def _graph_eager(config: dict) -> dict[tuple, str | None]:
    """(task, method) -> why the method's updates on the task run eagerly under ``training.compile: graphs``
    (:func:`beluga.model.graphs.eager_reason`, the training loop's own decision), for every registered method."""
    return {(tid, name): eager_reason(cls, runs.task_training(config, tcfg)["nonfinite"])
            for tid, tcfg in config["tasks"].items() for name, cls in ALGORITHMS.items()}


def plan(config: dict, rates: dict, configfiles=(), assume_paper_data: bool = True,
         iid_used: dict | None = None, rates_used: dict | None = None, details: dict | None = None) -> list[Line]:
    """One Line per (rule, configuration, method) over all tasks (and per combinational variant).
    The runs come from :class:`beluga.workflow.runs.Runs`, as the DAG's: its checks stop the plan
    as they stop a dry run (``configfiles``: the config file(s) their line names). The i.i.d. sizes:
    :func:`paper_iid_sizes` / :func:`iid_sizes` (``assume_paper_data``); ``iid_used``, a dict, receives
    task -> where they come from; ``rates_used``, a dict, task -> the training rate counted (:func:`task_rate`);
    ``details``, a dict, receives ``runs`` (the Runs), ``jobs`` (one :class:`~beluga.workflow.schedule.PlannedJob` per
    job and its seeds) and ``sizes`` (task -> the suite, i.i.d. and OOD sizes counted, where from).

    A job's seconds: the table's fixed seconds + its training + predicted sequences x the prediction rate scaled
    by :func:`~beluga.workflow.cost.relative_cost`. Training on CPUs: its sequences x :func:`train_s_per_seq`
    (its model, length and batch; the method's cost per epoch); core-hours: the seconds x ``job_threads``. On
    GPUs: its optimizer steps x the step of the configuration's scenario (:func:`beluga.workflow.steps.job_parts`;
    ``details["step_jobs"]`` receives every job's :class:`~beluga.workflow.steps.StepJob` and
    ``details["step_rows"]`` the measured steps they are priced by, the three scenarios'
    count); GPU-hours: the seconds x ``gpus`` / the GPU's aggregate factor with ``gpu_jobs`` jobs."""
    from beluga.suites import folds as folds_mod
    from beluga.suites.folds import configuration
    from beluga.workflow.dag import grid_points, method_grid

    the_runs = checked_runs(config, configfiles, published=assume_paper_data)   # its errors: the dry run's one line
    inoc, comb = config["inoculation"], config["combinational"]
    lines: dict[tuple, Line] = {}
    n_seeds = len(the_runs.seeds)   # every job the plan counts trains (or predicts a model) once per seed
    device = "cuda" if int(config["gpus"]) > 0 else "cpu"
    rows = anchors(rates, device)
    k_jobs = int(config.get("gpu_jobs", 1)) if device == "cuda" else 1
    # a GPU plan: the measured steps (benchmarks/gpu/) and the scenario the configuration runs (steps.py)
    step_rows, scenario = (steps_mod.measured_steps(), steps_mod.config_scenario(config)) if device == "cuda" \
        else ([], None)
    per_job = max(1, int(config["gpus"]) or int(config["job_threads"]))
    shapes: dict[str, tuple] = {}   # task -> (model size, type, max_length, batching): the GPU scenarios'
    # (task, method) -> why its updates run eagerly under compile: graphs (None: captured): the graphs scenario's
    graph_eager = _graph_eager(config) if device == "cuda" else {}
    if details is not None:
        details.update(runs=the_runs, jobs=[], sizes={}, published=[], step_jobs=[], step_rows=step_rows)

    def add(rule, conf, method, task, train_seqs, predict_seqs, cost, factor=1.0, steps=None):
        """One job per training seed: ``cost`` = (seconds per training sequence on a CPU, per predicted
        sequence); ``factor``: the method's training cost per sequence (a step) relative to vanilla; ``steps``:
        (training items an epoch, epochs, the batch sizes it may be given), its optimizer
        steps (a GPU plan's scenarios: :func:`beluga.workflow.steps.job_steps`)."""
        train_s, predict_s = cost
        line = lines.setdefault((rule, conf, method), Line(rule, conf, method))
        line.jobs += n_seeds
        line.train_seqs += n_seeds * train_seqs
        line.predict_seqs += n_seeds * predict_seqs
        if device == "cuda":   # optimizer steps x the step of the configuration's scenario
            job = steps_mod.StepJob(shapes[task], n_seeds, steps_mod.job_steps(*steps) if train_seqs else 0.0,
                                    list(steps[2]) if train_seqs else [], factor, predict_seqs * predict_s,
                                    rates["fixed_s_per_job"], graph_eager.get((task, method)) if train_seqs else None)
            *parts, speedup = steps_mod.job_parts(job, step_rows, k_jobs, scenario)
            if details is not None:
                details["step_jobs"].append(job)
        else:
            parts, speedup = (rates["fixed_s_per_job"], train_seqs * train_s * factor, predict_seqs * predict_s), 1.0
        hours = n_seeds * sum(parts) * per_job / speedup / 3600
        line.hours += hours
        line.task_hours[task] = line.task_hours.get(task, 0.0) + hours
        line.task_jobs[task] = line.task_jobs.get(task, 0) + n_seeds
        if details is not None:
            details["jobs"].append(PlannedJob(rule, task, conf, method, n_seeds, *parts, sum(parts) * k_jobs / speedup))

    scope = config["predict"]["scope"]
    # a method the table does not name (LoRA): the documented estimate (cost.ESTIMATED_METHOD_COST), else 1
    method_cost = {**ESTIMATED_METHOD_COST[device], **rates.get("method_cost", {})}
    keep = bool(config["keep_models"])
    for tid, tcfg in config["tasks"].items():
        training = runs.task_training(config, tcfg)
        lengths: object = tcfg["type"]   # a GPU plan: the task's measured token lengths where recorded
        if device == "cuda":
            measured, words = plan_lengths(tcfg, str(tcfg["model"]), int(training["max_length"]),
                                           int(training.get("doc_stride", 128)))
            lengths = measured or lengths
            if details is not None:
                details.setdefault("lengths", {})[tid] = words
        shapes[tid] = (model_size(str(tcfg["model"])), lengths, int(training["max_length"]),
                       training.get("batching", "project"))
        counts = task_counts(tcfg, config["split"], assume_paper_data, training.get("batching", "project"))
        if iid_used is not None:
            iid_used[tid] = counts["iid_used"]
        per, funcs, iid = counts["per"], counts["funcs"], counts["iid"]
        if details is not None:
            ood = [dict(zip(("name", "counted", "where"), (e["name"], *ood_entry_count(e))))
                   for e in tcfg.get("ood") or []]
            details["sizes"][tid] = {"suite": counts["suite"], "iid": counts["iid_used"], "ood": ood}
            details["published"] += [f"{tid}: {what}" for what in counts["published"]]
        all_funcs = list(funcs["functionality"])
        iid_stage, suite_stage = training["iid"], training["suite"]
        length = int(training["max_length"])
        grid = runs.task_selection(config, tcfg)
        anchor = rows[READ_ROW] if tcfg["type"] == "read" and READ_ROW in rows else rows["reference"]
        predict_s = predict_s_per_seq(anchor, rows["reference"], str(tcfg["model"]), length)

        def cost(batches, _a=anchor, _m=str(tcfg["model"]), _n=length, _p=predict_s):
            """(seconds per training sequence at these batch sizes (a CPU plan's), per predicted sequence)."""
            return (mean_train_s_per_seq(_a, _m, batches, _n) if device == "cpu" else 0.0), _p

        if rates_used is not None and device == "cpu":   # a GPU plan's training: steps (details["step_jobs"])
            rates_used[tid] = task_rate(rows, anchor, tcfg, training, grid)
        policy = grid["policy"]
        test_all = sum(p["test_inputs"] for p in per.values())
        add("train_iid", "iid", "vanilla", tid, iid["train"] * iid_stage["epochs"], 0, cost([iid_stage["batch_size"]]),
            steps=(iid["train"], iid_stage["epochs"], [iid_stage["batch_size"]]))
        n_ood = ood_size(tcfg)
        add("predict", "iid", "vanilla", tid, 0, test_all + iid["test"] + n_ood, cost([]))
        if not has_suite(tcfg):   # no folds, trials or inoculation (beluga.workflow.runs.check_suiteless)
            continue
        folds = folds_mod.enumerate_folds(funcs, list(config["partitions"]))
        seen = folds_mod.enumerate_folds(funcs, ["seen"])[0]
        mix_n = iid["train"] if training["iid_in_mix"] is None else min(iid["train"], training["iid_in_mix"])
        starts = runs.start_methods(config, tcfg, config["methods"])
        methods = list(dict.fromkeys([*config["methods"], *sorted(starts)]))
        hparams = {m: runs.stage_hparams(config, tcfg, "suite", m) for m in methods}
        # whose grid trials give each method its hyper-parameters (LP-FT may take vanilla's); their grids
        selectors = {m: runs.selection_method(config, tcfg, m) for m in methods}
        grids = {m: method_grid(grid, m) for m in dict.fromkeys(selectors.values())}
        for conf in config["configurations"]:
            mix = configuration(conf).mixes_iid
            for method in methods:   # a method without a rate of its own (LP-FT's LP stage): its selector's
                factor = float(method_cost.get(method, method_cost.get(selectors[method], 1.0)))
                sel_grid = grids[selectors[method]]
                epochs = _epochs_estimate(suite_stage, sel_grid if grid_points(sel_grid) else {})
                fin_batches = batches_estimate(suite_stage, sel_grid if grid_points(sel_grid) else {})
                fin_cost = cost(fin_batches)
                epochs = float(job_hparams(method, hparams[method], {"epochs": epochs})["epochs"])
                for f in folds:
                    train_f = folds_mod.training_functionalities(f, all_funcs)
                    items = sum(per[x]["seqs"] for x in train_f) + (mix_n if mix else 0)
                    scored = all_funcs if scope == "all" else f["held_out"]
                    n_iid = folds_mod.fold_iid_examples(f["partition"], tcfg.get("scenario_iid", "folds"),
                                                        config["predict"].get("fold_iid_examples"))
                    pred = sum(per[x]["test_inputs"] for x in scored) + min(iid["test"], n_iid or iid["test"])
                    if f["partition"] == "seen" or config["predict"]["ood_models"] == "all":
                        pred += n_ood
                    if keep:   # a start method's model (LP for LP-FT) is predicted only when it is a method
                        add("finetune_model", conf, method, tid, items * epochs, 0, fin_cost, factor,
                            (items, epochs, fin_batches))
                        if method in config["methods"]:
                            add("predict", conf, method, tid, 0, pred, fin_cost)
                    else:   # a model another method starts from is also written (rule finetune_keep)
                        add("finetune_keep" if method in starts else "finetune", conf, method, tid,
                            items * epochs, pred, fin_cost, factor, (items, epochs, fin_batches))
            for method, sel_grid in grids.items():   # trials of every method whose selection is used
                factor = float(method_cost.get(method, 1.0))
                points = grid_points(sel_grid)
                if points:
                    sel_folds = [seen] if policy == "seen" else folds
                    for f in sel_folds:
                        train_f = folds_mod.training_functionalities(f, all_funcs)
                        items = sum(per[x]["seqs"] for x in train_f) + (mix_n if mix else 0)
                        val = sum(per[x]["val_inputs"] for x in train_f)
                        for point in points.values():
                            ep = point.get("epochs", suite_stage["epochs"])
                            b = point.get("batch_size", suite_stage["batch_size"])
                            add("trial", conf, method, tid, items * ep, val, cost([b]), factor, (items, ep, [b]))
        if inoc["enabled"] and tid in the_runs.inoc_units:
            ep = inoculation_epochs(inoc)
            for unit, spec in the_runs.inoc_units[tid].items():
                if spec.get("challenge") is not None:   # a challenge set: its training part, examples
                    sets = the_runs.ood_sets[tid]
                    n_set = ood_entry_size(sets[spec["challenge"]])
                    n_test = inoc_analysis.challenge_test_size(
                        n_set, inoc["challenge_test_fraction"], has_train_set=spec["challenge_train"] is not None,
                        train_size=spec["train_size"])
                    # the doses' pool: known from the config (train_size, a cap) as the DAG's doses, else the sizes
                    n_train = inoc_analysis.challenge_train_size(
                        sets[spec["challenge"]], inoc["challenge_test_fraction"], the_runs.inoc_dev_fraction,
                        train_entry=sets.get(spec["challenge_train"]), train_size=spec["train_size"],
                        distinct=spec["distinct"])
                    if n_train is None:
                        n_train = ood_entry_size(sets[spec["challenge_train"]]) \
                            if spec["challenge_train"] is not None else n_set - n_test
                    seqs_per_case, extra = 1.0, n_test
                else:   # suite cases: their sequences as the fold jobs train them; the unit's T_val
                    funcs_u = spec["functionalities"]
                    n_train = inoc_analysis.train_cases_per_unit(the_runs.func_tables[tid], funcs_u,
                                                                 config["split"]["fractions"])
                    seqs_per_case = sum(per[x]["seqs"] for x in funcs_u) / max(1, n_train)
                    extra = sum(per[x]["val_inputs"] for x in funcs_u)
                released = the_runs.inoc_released_files(tid, unit)     # a released sample: its dose's size
                for dose in the_runs.inoc_doses(tid, unit):
                    cases = int(dose) if dose in released else inoc_analysis.dose_size(dose, n_train)
                    for _lr in the_runs.inoc_lrs[tid]:
                        add("inoculate", "iid_to_t", "vanilla", tid, cases * seqs_per_case * ep,
                            iid["val"] * ep + test_all + iid["test"] + extra, cost([suite_stage["batch_size"]]),
                            steps=(cases * seqs_per_case, ep, [suite_stage["batch_size"]]))
    if comb["enabled"]:
        n_cells = len(comb_analysis.CELLS) * int(comb["n_test"])   # every test input in its three cells
        ref = rows["reference"]
        for name, v in the_runs.comb_variants.items():
            model, n = str(v["model"]), int(v["max_length"])
            shapes["combinational"] = (model_size(model), "sent", n, "project")
            b = v["training"]["batch_size"]
            cost = (train_s_per_seq(ref, model, b, n) if device == "cpu" else 0.0,
                    predict_s_per_seq(ref, ref, model, n))
            ep = float(v["training"]["epochs"])
            evaluations = math.ceil(ep) if comb["per_epoch"] else 1   # the last epoch's is the final one
            for k in v["ks"]:   # the variant's own K values (default the block's)
                add("combinational_train", name, "vanilla", "combinational",
                    len(comb_analysis.TRAIN_CELLS) * int(k) * ep, evaluations * n_cells, cost,
                    steps=(len(comb_analysis.TRAIN_CELLS) * int(k), ep, [b]))
    return list(lines.values())


#: bytes per parameter of an epoch checkpoint (fp32 weights + AdamW's two moments) and of a saved model (fp32)
CHECKPOINT_BYTES, MODEL_BYTES = 12, 4


def disk_plan(config: dict, lines: list[Line], concurrent: int) -> dict:
    """Peak scratch disk of a run (bytes), an upper bound from its parts:
    the epoch checkpoints of ``concurrent`` training jobs running at once
    (weights, optimizer moments; the largest models first), the fold models
    a run keeps on disk (the IID models; every fold model with
    ``keep_models``; LP models that LP-FT starts from, temporary: deleted
    once their LP-FT job is done, all counted as if alive at once), and each
    pre-trained model's copy in the Hugging Face cache."""
    tasks = config["tasks"]
    params = {t: n_parameters(str(c["model"])) for t, c in tasks.items()}
    training_jobs = []  # checkpoint bytes of every training job
    n_seeds = len(config.get("seeds") or [config["seed"]])
    kept = {t: n_seeds * MODEL_BYTES * params[t] for t in tasks}  # the IID models (one per training seed)
    lp_models = 0
    for ln in lines:   # inoculation and combinational jobs write no checkpoint (their best weights stay in memory)
        for t, n in ln.task_jobs.items():
            if ln.rule in ("train_iid", "finetune", "finetune_keep", "finetune_model", "trial"):
                training_jobs += [CHECKPOINT_BYTES * params[t]] * n
            if ln.rule == "finetune_model":
                kept[t] += MODEL_BYTES * params[t] * n
            if ln.rule == "finetune_keep":
                lp_models += MODEL_BYTES * params[t] * n
    training_jobs.sort(reverse=True)
    checkpoints = sum(training_jobs[:concurrent])
    models = {str(tasks[t]["model"]): params[t] for t in tasks}
    if config["combinational"]["enabled"]:   # the variants' pre-trained models
        for v in comb_analysis.variants(config["combinational"]).values():
            models.setdefault(str(v["model"]), n_parameters(str(v["model"])))
    cache = sum(MODEL_BYTES * n for n in models.values())
    largest = max((CHECKPOINT_BYTES * p for p in params.values()), default=0)
    return {"concurrent_jobs": concurrent, "checkpoints": checkpoints, "largest_checkpoint": largest,
            "kept_models": sum(kept.values()), "temporary_lp_models": lp_models, "model_cache": cache,
            "peak": checkpoints + sum(kept.values()) + lp_models + cache}


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB"


def render_disk(d: dict) -> str:
    return (f"peak scratch disk: about {_gb(d['peak'])} (upper bound) = epoch checkpoints of "
            f"{d['concurrent_jobs']} training jobs at once ({_gb(d['checkpoints'])}; up to "
            f"{_gb(d['largest_checkpoint'])} each) + fold models kept on disk ({_gb(d['kept_models'])}) + "
            f"temporary LP models for LP-FT ({_gb(d['temporary_lp_models'])}) + pre-trained models in the "
            f"Hugging Face cache ({_gb(d['model_cache'])}); predictions and data are small beside them\n")


def render(lines: list[Line], device: str, source: str, config_name: str, seeds: list[int] | None = None,
           iid_used: dict | None = None, notes: list[str] = (), tail: list[str] = ()) -> str:
    """The plan's text: machine time (GPU- or core-time, in the unit that suits its total:
    :func:`~beluga.workflow.schedule.time_unit`) per rule, configuration and method; ``notes`` after
    the head, ``tail`` after the table."""
    u, per = time_unit(sum(ln.hours for ln in lines) * 3600)
    unit = f"{'GPU' if device == 'cuda' else 'core'}-{u}"
    scaled = {id(ln): ln.hours * 3600 / per for ln in lines}
    total = sum(scaled.values())
    rows = sorted(lines, key=lambda ln: -ln.hours)
    several = f" ({len(seeds)} training seeds: {', '.join(map(str, seeds))}; every job once per seed)" \
        if seeds and len(seeds) > 1 else ""
    out = [f"cost plan for {config_name}: {sum(ln.jobs for ln in lines):,} training / prediction jobs{several}, "
           f"{total:,.1f} {unit} in all ({device}; throughput: {source})"]
    out += [f"i.i.d. sizes of {t}: {text}" for t, text in (iid_used or {}).items()] + list(notes) + [""]
    wr = max([15] + [len(ln.rule) for ln in lines])   # a combinational line names its variant
    wc = max([18] + [len(ln.configuration) for ln in lines])
    head = f"{'rule':<{wr}} {'configuration':<{wc}} {'method':<10} {'jobs':>7} {'train seq/job':>14} " \
           f"{'predict seq/job':>16} {unit:>10} {'share':>6}"
    out += [head, "-" * len(head)]
    for ln in rows:
        out.append(f"{ln.rule:<{wr}} {ln.configuration:<{wc}} {ln.method:<10} {ln.jobs:>7,} "
                   f"{ln.train_seqs / ln.jobs:>14,.0f} {ln.predict_seqs / ln.jobs:>16,.0f} {scaled[id(ln)]:>10,.2f} "
                   f"{(scaled[id(ln)] / total if total else 0):>6.1%}")
    by_rule: dict[str, float] = {}
    by_task: dict[str, float] = {}
    for ln in lines:
        by_rule[ln.rule] = by_rule.get(ln.rule, 0.0) + scaled[id(ln)]
        for t, h in ln.task_hours.items():
            by_task[t] = by_task.get(t, 0.0) + h * 3600 / per
    out += ["-" * len(head), "per rule: " + ", ".join(f"{r} {h:,.1f} {unit}" for r, h in
                                                      sorted(by_rule.items(), key=lambda kv: -kv[1])),
            "per task: " + ", ".join(f"{t} {h:,.1f} {unit}" for t, h in by_task.items()),
            f"total: {total:,.1f} {unit}"]
    if rows:
        top = rows[0]
        out.append(f"largest part: {top.rule} {top.configuration}/{top.method} "
                   f"({scaled[id(top)] / total if total else 0:.0%})")
    return "\n".join([*out, *tail]) + "\n"


def plan_command(configfile: str | None, throughput: str | None = None, train_rate: float | None = None,
                 predict_rate: float | None = None, fixed_s: float | None = None, as_json: str | None = None,
                 concurrent_jobs: int | None = None, overrides: list[str] = (), assume_paper_data: bool = True,
                 gpus: list[int] | None = None, cores: int | None = None, calibrate: bool = False,
                 recalibrate: bool = False) -> str:
    """The plan's text. ``concurrent_jobs``: training jobs running at once
    (the disk estimate; default: the Slurm profile's 100 jobs on GPUs, the
    machine's cores / job_threads on CPUs); ``assume_paper_data``: :func:`iid_sizes`; ``gpus``: the
    GPU counts whose wall-clock a GPU plan prints (default: 1 and the GPUs the Slurm profile's jobs
    fill); ``cores``: the cores of a CPU plan's wall-clock (default: this machine's). ``calibrate`` (the
    command's default; ``recalibrate``: measured again, not read from the cache): a CPU plan without a throughput
    table or rates given takes this machine's calibrated rates
    (:func:`beluga.workflow.calibrate.machine_rates`); an uncalibrated plan on the
    built-in CPU reference prints its times as a range (:data:`~beluga.workflow.cost.NO_BF16_FACTOR`)."""

    path = config_path(configfile)
    if as_json:
        from beluga.core.io import check_not_input

        check_not_input("plan", "--json", as_json, [("config file", path), ("throughput table", throughput)])
    config = load_config(configfile, overrides)
    device = "cuda" if int(config.get("gpus", 0)) > 0 else "cpu"
    if concurrent_jobs is None:
        concurrent_jobs = 100 if device == "cuda" else max(1, (os.cpu_count() or 1) // int(config["job_threads"]))
    if concurrent_jobs < 1:
        raise ConfigError(f"--concurrent-jobs: must be positive, got {concurrent_jobs}")
    if train_rate is not None and device == "cuda":
        raise ConfigError("--train-rate: field 'gpus': a GPU plan prices training by optimizer steps (the GPU "
                          "session's measured steps, benchmarks/gpu/); --train-rate is for a CPU plan")
    rates, source = throughput_table(throughput, device)
    rates = dict(rates, origin=dict(rates.get("origin", {})))
    given_here = "given on the command line"
    given = {"train_seq_per_s": train_rate, "predict_seq_per_s": predict_rate, "fixed_s_per_job": fixed_s}
    for k, v in given.items():
        if v is not None:
            if not (math.isfinite(v) and (v > 0 or (k == "fixed_s_per_job" and v == 0))):
                raise ConfigError(f"--{k}: must be a finite positive number, got {v}")
            rates[k] = v
            source = "numbers given on the command line" if k != "fixed_s_per_job" else source
            rates.setdefault("origin", {})[k] = given_here
    if gpus is not None and device != "cuda":
        raise ConfigError("--gpus: field 'gpus': the configuration runs on CPUs (gpus: 0); add --config gpus=1 "
                          "for a GPU plan")
    if cores is not None and device == "cuda":
        raise ConfigError("--cores: field 'gpus': the configuration runs on GPUs; give --gpus N")
    for name, values in (("--gpus", gpus or []), ("--cores", [] if cores is None else [cores])):
        if any(v < 1 for v in values):
            raise ConfigError(f"{name}: must be positive, got {min(values)}")
    calibration, spread, line, rest = None, None, None, None
    if device == "cpu" and all(rates["origin"][k].startswith("built-in reference") for k in RATE_KEYS):
        def streams(tid):
            """The task's training streams; None where its data are counted from published sizes (not staged)."""
            tcfg = config["tasks"][tid]
            batching = runs.task_training(config, tcfg).get("batching", "project")
            counts = task_counts(tcfg, config["split"], assume_paper_data, batching)
            return None if counts["published"] else counts["streams"]

        rates, source, calibration, line = calib.machine_rates(
            config, checked_runs(config, [path], published=assume_paper_data) if calibrate or recalibrate else None,
            streams, rates, source, calibrate or recalibrate, recalibrate)
        spread = None if calibration else NO_BF16_FACTOR
    profile = slurm_profile()
    if device == "cuda":
        counts = gpus or sorted({1, (profile["jobs"] or 1) * int(config["gpus"]) // int(config["gpu_jobs"]) or 1})
    else:
        counts = [cores or os.cpu_count() or 1]
    iid_used: dict[str, str] = {}
    rates_used: dict[str, dict] = {}
    details: dict = {}
    lines = plan(config, rates, [path], assume_paper_data, iid_used, rates_used, details)
    disk = disk_plan(config, lines, concurrent_jobs)
    sizes = published_sizes_line(paper_sizes_line(config) if assume_paper_data else None, details)
    notes = size_lines(details["sizes"]) + ([sizes] if sizes else []) + ([line] if line else []) \
        + rate_lines(config, rates, rates_used, device)
    jobs = details["jobs"]
    if calibration:
        rest, said = calib.run_rest(path, overrides, calibration["figures"], {ln.rule for ln in lines})
        notes.append(said)
    scenarios = None
    if device == "cuda":
        step_rows = details["step_rows"]   # the GPU sessions' files, read once by plan()
        scenarios = steps_mod.scenario_hours(details["step_jobs"], step_rows, steps_mod.scenario_k(config))
        notes += steps_mod.scenario_lines(details["step_jobs"], step_rows, config, hours=scenarios)
        unmeasured = [f"{t}: {w}" for t, w in details.get("lengths", {}).items() if not w.startswith("measured")]
        if unmeasured:
            notes.append("token lengths published, not measured: " + "; ".join(unmeasured))
    rows = slurm_rows(details["runs"], jobs, profile)
    k = int(config["gpu_jobs"]) if device == "cuda" else 1
    shared = (f"with gpu_jobs {k} jobs sharing a GPU, s/job and longest are x {k} / the GPU's speedup" if k > 1
              else None)
    tail = ["", *job_lines(rows, profile, shared), "", *wall_clock_lines(config, jobs, device, counts, profile, spread,
                                                                                rest)]
    text = render(lines, device, source, configfile or "config.yaml", config.get("seeds"), iid_used, notes,
                  tail) + render_disk(disk)
    if as_json:
        from beluga.core.io import write_json

        write_json({"device": device, "source": source, "rates": rates, "calibration": calibration,
                    "no_bf16_factor": spread, "disk": disk, "iid_sizes": iid_used,
                    "task_rates": rates_used, "gpu_scenarios": scenarios, "notes": notes, "sizes": details["sizes"],
                    "job_kinds": rows,
                    "jobs": [dict(j.__dict__, seconds=j.seconds) for j in jobs], "wall_clock": tail,
                    "lines": [dict(ln.__dict__) for ln in lines]}, as_json)
    return text
