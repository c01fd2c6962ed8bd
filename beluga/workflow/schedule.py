"""The plan's clock (:mod:`beluga.workflow.plan`): one job's seconds, the wall-clock of a run on N GPUs (or
a machine's cores), the time each rule asks Slurm for, and the data sizes the plan counted.

- A job's seconds (:class:`PlannedJob`): the throughput table's fixed per-process cost (interpreter, imports, model
  load: ``fixed_s_per_job`` of :data:`beluga.workflow.cost.REFERENCE`, measured) + its training (a CPU job: its
  sequences at its training rate; a GPU job: its optimizer steps x the step of the configuration's scenario,
  :func:`beluga.workflow.steps.job_parts`) + its predicted sequences at the prediction rate; with ``gpu_jobs: K``
  jobs sharing a GPU it runs K / speedup times as long (the GPU's aggregate factor with K jobs).
- The wall-clock (:func:`wall_clock`): the jobs scheduled on ``slots`` job slots (N GPUs x ``gpu_jobs`` /
  ``gpus`` per job; on CPUs cores / ``job_threads``), longest first within each dependency level, a job
  waiting for every job of the groups it depends on (:func:`dependencies`: the IID model before what starts
  from it, a selection's trials before the fold jobs they choose for, LP before LP-FT's trials and folds, a
  kept model before its predictions). No schedule is shorter than the longest job or the jobs' seconds over the slots.
- Slurm (:func:`slurm_rows`): the ``runtime`` (minutes) each rule's job asks for
  (:meth:`beluga.workflow.runs.Runs.job_resources`, doubling with each of the profile's ``retries``; a
  ``set-resources`` runtime in profiles/slurm/config.yaml overrides it), beside the longest job of the rule.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from pathlib import Path

import yaml

from beluga.core.errors import ConfigError

#: the Slurm profile whose retries, jobs and set-resources the plan reads
SLURM_PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "slurm" / "config.yaml"
#: the kind of resource request (:meth:`~beluga.workflow.runs.Runs.job_resources`) of every rule the plan
#: counts (finetune_keep: ``use rule finetune``)
RULE_KIND = {"train_iid": "train", "finetune": "train", "finetune_keep": "train", "finetune_model": "train",
             "trial": "train", "inoculate": "train", "combinational_train": "train", "predict": "predict"}


@dataclass
class PlannedJob:
    """``count`` identical jobs (one per training seed) of a rule: seconds of one job alone, by part, and
    ``wall``, its seconds with the GPU shared by ``gpu_jobs`` jobs (else the same)."""
    rule: str
    task: str
    configuration: str
    method: str
    count: int
    fixed_s: float
    train_s: float
    predict_s: float
    wall: float

    @property
    def seconds(self) -> float:
        return self.fixed_s + self.train_s + self.predict_s


# ---------------------------------------------------------------- units
def time_unit(seconds: float) -> tuple[str, float]:
    """(unit, seconds per unit) that suits a total of ``seconds``: s under 2 minutes, min under 2 hours,
    else h."""
    if seconds < 120:
        return "s", 1.0
    if seconds < 7200:
        return "min", 60.0
    return "h", 3600.0


def duration(seconds: float) -> str:
    """A wall-clock in words: ``42 s``, ``6.4 min``, ``5.2 h``, ``3.1 days (74 h)``."""
    if seconds >= 48 * 3600:
        return f"{seconds / 86400:,.1f} days ({seconds / 3600:,.0f} h)"
    unit, per = time_unit(seconds)
    decimals = 0 if unit == "s" and seconds >= 10 else 1
    return f"{seconds / per:,.{decimals}f} {unit}"


# ---------------------------------------------------------------- dependencies and the schedule
def dependencies(config: dict, jobs: list[PlannedJob]) -> list[tuple[tuple, tuple]]:
    """Per job: (its group, the groups it waits for), groups named within a task: ``("iid",)`` the IID
    model, ``("trial", conf, method)``, ``("fold", conf, method)`` a configuration's fold models of a
    method, ``("other",)`` the rest."""
    from beluga.suites.folds import configuration
    from beluga.workflow import runs

    trials = {(j.task, j.configuration, j.method) for j in jobs if j.rule == "trial"}
    out = []
    for j in jobs:
        tcfg = config["tasks"].get(j.task)
        from_iid = j.configuration != "iid" and j.task in config["tasks"] and configuration(j.configuration).from_iid
        if j.rule == "train_iid":
            out.append((("iid",), ()))
        elif j.rule == "combinational_train":
            out.append((("other",), ()))
        elif j.rule in ("inoculate",) or (j.rule == "predict" and j.configuration == "iid"):
            out.append((("other",), (("iid",),)))
        elif j.rule == "trial":   # from the fold's start model: the IID model, or the start method's
            start = runs.start_method(config, tcfg, j.method)
            after = ([("iid",)] if from_iid else []) + ([("fold", j.configuration, start)] if start else [])
            out.append((("trial", j.configuration, j.method), tuple(after)))
        elif j.rule == "predict":   # a kept fold model's predictions
            out.append((("other",), (("fold", j.configuration, j.method),)))
        else:   # finetune, finetune_keep, finetune_model
            after = [("iid",)] if from_iid else []
            selector = runs.selection_method(config, tcfg, j.method)
            if (j.task, j.configuration, selector) in trials:
                after.append(("trial", j.configuration, selector))
            start = runs.start_method(config, tcfg, j.method)
            if start is not None:
                after.append(("fold", j.configuration, start))
            out.append((("fold", j.configuration, j.method), tuple(after)))
    return out


def wall_clock(jobs: list[PlannedJob], deps: list[tuple[tuple, tuple]], slots: int | None) -> float:
    """Seconds from the first job's start to the last one's end, ``slots`` jobs at a time (None: as many as
    there are jobs, the critical path). Every job of a task's group runs once per seed (its own groups)."""
    after_of: dict[tuple, tuple] = {}   # the groups jobs wait for (iid, trial, fold) wait for the same groups
    for j, (group, after) in zip(jobs, deps):
        after_of[(j.task, group)] = after

    depth: dict[tuple, int] = {}

    def level(task: str, after: tuple) -> int:
        """A job's place in the order: after every group it waits for (1 + theirs)."""
        for g in after:
            if (task, g) not in depth:
                depth[(task, g)] = level(task, after_of.get((task, g), ()))
        return 1 + max((depth[(task, g)] for g in after), default=-1)

    order = sorted(((level(j.task, after), -j.wall, i, seed) for i, (j, (_, after)) in enumerate(zip(jobs, deps))
                    for seed in range(j.count)))
    finish: dict[tuple, float] = {}
    free = [0.0] * slots if slots else None
    end_all = 0.0
    for _depth, _neg, i, seed in order:
        j, (group, after) = jobs[i], deps[i]
        ready = max((finish.get((j.task, seed, g), 0.0) for g in after), default=0.0)
        start = max(heapq.heappop(free), ready) if free is not None else ready
        end = start + j.wall
        if free is not None:
            heapq.heappush(free, end)
        key = (j.task, seed, group)
        finish[key] = max(finish.get(key, 0.0), end)
        end_all = max(end_all, end)
    return end_all


def gpu_slots(config: dict, n_gpus: int, profile_jobs: int | None) -> tuple[int, str]:
    """(jobs at once on ``n_gpus`` GPUs, in words): ``n_gpus`` x ``gpu_jobs`` / ``gpus`` (per job), at most
    the Slurm profile's ``jobs``."""
    per_job, k = int(config["gpus"]), int(config.get("gpu_jobs", 1))
    if n_gpus < per_job:
        raise ConfigError(f"--gpus: field 'gpus': {n_gpus} GPU(s) cannot run a job that asks for {per_job} "
                          "(the configuration's gpus)")
    slots = n_gpus * k // per_job
    words = f"{slots} job(s) at once ({n_gpus} x gpu_jobs {k} / gpus {per_job} per job)"
    if profile_jobs and slots > profile_jobs:
        slots, words = profile_jobs, f"{profile_jobs} jobs at once (the Slurm profile's jobs: {profile_jobs})"
    return slots, words


@dataclass
class RunRest:
    """What a local run spends besides its training and prediction jobs (a calibrated CPU plan): ``start_s``
    before its jobs (Snakemake's start and DAG; the local job server's imports, once), and ``jobs`` other jobs
    (data preparation, scoring, statistics, tables, plots: Snakemake's dry run) of ``job_s`` seconds each."""
    start_s: float
    jobs: int
    job_s: float

    def words(self) -> str:
        return (f"with the run's start ({duration(self.start_s)}: Snakemake's DAG, the job server's imports) and its "
                f"{self.jobs} other jobs one after another (data preparation, scoring, statistics, tables, plots: "
                f"{self.job_s:.1f} s each, as calibrated)")


def wall_clock_lines(config: dict, jobs: list[PlannedJob], device: str, counts: list[int], profile: dict,
                     spread: float | None = None, rest: RunRest | None = None) -> list[str]:
    """The run's wall-clock on each of ``counts`` GPUs (``device`` cuda) or cores (cpu), with its lower
    bounds (the longest job, the jobs' seconds over the slots) and the critical path. ``spread`` (an uncalibrated
    CPU plan: :data:`beluga.workflow.cost.NO_BF16_FACTOR`): each wall-clock on N cores is a range, the reference
    CPU's (native bf16) up to ``spread`` times it (a CPU without native bf16). ``rest`` (a calibrated CPU plan): the
    wall-clock on N cores adds the run's start and its other jobs, one after another (most wait for another: the
    data before the training, the statistics, tables and plots after it, in chains)."""
    if not jobs:
        return []
    deps = dependencies(config, jobs)
    longest = max(jobs, key=lambda j: j.wall)
    total = sum(j.wall * j.count for j in jobs)
    head = ("the training and prediction jobs; on N cores also the run's start and its other jobs" if rest else
            "the training and prediction jobs only: data preparation, scoring, tables and plots are not counted")
    out = [f"wall-clock ({head}):",
           f"  longest job: {duration(longest.wall)} ({longest.rule} {longest.task} {longest.configuration}/"
           f"{longest.method})",
           f"  with a slot for every job (the critical path: the IID model, trials, fold jobs): "
           f"{duration(wall_clock(jobs, deps, None))}"]
    for n in counts:
        if device == "cuda":
            slots, words = gpu_slots(config, n, profile.get("jobs"))
            where = f"on {n} GPU{'s' if n > 1 else ''}"
        else:
            threads = int(config["job_threads"])
            slots = max(1, n // threads)
            words, where = f"{slots} job(s) at once ({n} / job_threads {threads})", f"on {n} core{'s' if n > 1 else ''}"
        got, least = wall_clock(jobs, deps, slots), max(longest.wall, total / slots)
        if rest:
            added = rest.start_s + rest.jobs * rest.job_s   # one after another: most wait for others
            got, least, words = got + added, least + added, f"{words}; {rest.words()}"
        about = (f"about {duration(got)} on a CPU with native bf16 as the reference's, up to about "
                 f"{duration(got * spread)} on one without (x{spread:g}: fp32)") if spread else f"about {duration(got)}"
        out.append(f"  {where}: {about} -- {words}; at least {duration(least)}"
                   f" (the longest job, the job-seconds {duration(total)} / {slots}{', and the rest' if rest else ''})")
    return out


# ---------------------------------------------------------------- Slurm
def slurm_profile(path: Path = SLURM_PROFILE) -> dict:
    """The profile's ``retries``, ``jobs`` and ``set-resources`` runtimes (rule -> minutes); ``path``."""
    what = f"Slurm profile {path}"
    if not path.exists():
        raise ConfigError(f"{what}: field 'path': file does not exist")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{what}: field '(top level)': not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what}: field '(top level)': a mapping is needed")
    shown = path.relative_to(SLURM_PROFILE.parents[2]) if path.is_relative_to(SLURM_PROFILE.parents[2]) else path
    out = {"path": str(shown), "retries": 0, "jobs": None, "runtime": {}}
    for key in ("retries", "jobs"):
        v = data.get(key)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{what}: field '{key}': {v!r} is not a non-negative integer")
            out[key] = v
    for rule, res in (data.get("set-resources") or {}).items():
        if isinstance(res, dict) and res.get("runtime") is not None:
            v = res["runtime"]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
                raise ConfigError(f"{what}: field 'set-resources.{rule}.runtime': {v!r} is not a positive number "
                                  "of minutes")
            out["runtime"][rule] = v
    return out


def slurm_minutes(the_runs, rule: str, wildcards: dict, profile: dict) -> list[float]:
    """The runtime (minutes) a job of ``rule`` with ``wildcards`` (``task``, or a combinational job's
    ``variant``) asks Slurm for at each attempt (1 + the profile's retries)."""
    attempts = range(1, int(profile["retries"]) + 2)
    if rule in profile["runtime"]:   # snakemake's set-resources: the same value at every attempt
        return [float(profile["runtime"][rule]) for _ in attempts]
    runtime = the_runs.job_resources(RULE_KIND[rule])["runtime"]
    return [float(runtime(wildcards, a)) for a in attempts]


def slurm_rows(the_runs, jobs: list[PlannedJob], profile: dict) -> list[dict]:
    """Per (rule, task): the jobs, their mean parts (fixed, training, prediction seconds), the mean and
    longest wall, and the minutes each attempt asks Slurm for."""
    groups: dict[tuple, list[PlannedJob]] = {}
    for j in jobs:
        groups.setdefault((j.rule, j.task), []).append(j)
    rows = []
    for (rule, task), js in groups.items():
        n = sum(j.count for j in js)
        wildcards = {"variant": js[0].configuration} if rule == "combinational_train" else {"task": task}
        minutes = slurm_minutes(the_runs, rule, wildcards, profile)
        longest = max(j.wall for j in js)
        rows.append({"rule": rule, "task": task, "jobs": n,
                     "fixed_s": sum(j.fixed_s * j.count for j in js) / n,
                     "train_s": sum(j.train_s * j.count for j in js) / n,
                     "predict_s": sum(j.predict_s * j.count for j in js) / n,
                     "mean_wall": sum(j.wall * j.count for j in js) / n, "longest": longest,
                     "slurm_minutes": minutes,
                     "fits": "yes" if longest <= minutes[0] * 60 else
                             "retry" if longest <= minutes[-1] * 60 else "no"})
    return sorted(rows, key=lambda r: (-r["longest"], r["rule"], r["task"]))


def _secs(v: float) -> str:
    """Seconds in a table cell: two decimals, four below 0.1 s (never a 0.00 that is not 0)."""
    return f"{v:,.2f}" if v >= 0.1 or v == 0 else f"{v:.4f}" if v >= 0.0001 else "<0.0001"


def job_lines(rows: list[dict], profile: dict, shared: str | None) -> list[str]:
    """The per-job table: per rule and task the jobs, one job's seconds by part, its mean and longest
    wall-clock, and the Slurm time it asks for."""
    from beluga.workflow.runs import BASE_RESOURCES

    if not rows:
        return []
    head = (f"{'rule':<20} {'task':<14} {'jobs':>6} {'fixed s':>8} {'train s':>10} {'predict s':>10} "
            f"{'s/job':>10} {'longest':>11}  Slurm time asked (attempt 1 / retries), longest fits?")
    out = ["seconds per job (one job: the fixed per-process cost + training + prediction, means over the "
           f"rule's jobs{'; ' + shared if shared else ''}):", head, "-" * len(head)]
    for r in rows:
        asked = " / ".join(f"{m:,.0f}" for m in r["slurm_minutes"]) + " min"
        fits = {"yes": "fits", "retry": "EXCEEDS attempt 1 (a retry fits)",
                "no": "EXCEEDS every attempt: set-resources runtime in the profile"}[r["fits"]]
        out.append(f"{r['rule']:<20} {r['task']:<14} {r['jobs']:>6,} {r['fixed_s']:>8,.1f} "
                   f"{_secs(r['train_s']):>10} {_secs(r['predict_s']):>10} {r['mean_wall']:>10,.1f} "
                   f"{duration(r['longest']):>11}  {asked}, {fits}")
    over = ", ".join(f"{k} {v:g} min" for k, v in profile["runtime"].items())
    base = BASE_RESOURCES
    out.append(f"Slurm: runtime from beluga/workflow/runs.py job_resources ({base['train'][1]} min a training job, "
               f"{base['predict'][1]} a prediction job, x the model's scale; x2 each retry), retries "
               f"{profile['retries']} from {profile['path']}"
               + (f"; set-resources there (every attempt): {over}" if over else ""))
    return out


# ---------------------------------------------------------------- data sizes
def size_lines(sizes: dict) -> list[str]:
    """Per task: the suite (where from, functionalities, cases and inputs per split) and the OOD sets the
    plan counted (the i.i.d. sizes have their own line: :func:`beluga.workflow.cost.iid_sizes`)."""
    out = []
    for tid, s in sizes.items():
        su = s["suite"]
        if su is None:
            out.append(f"data of {tid}: no suite (its IID model and OOD evaluation only)")
        else:
            split = ", ".join(f"{k} {su['cases'][k]:,} cases / {su['inputs'][k]:,} inputs"
                              for k in ("train", "val", "test"))
            out.append(f"data of {tid}: suite {su['source']}: {su['functionalities']} functionalities, {split} "
                       f"(split.fractions {'/'.join(f'{x:g}' for x in su['fractions'])}); fold jobs train on up "
                       f"to {su['train_seqs']:,} suite sequences an epoch (an INV / DIR item is a pair)")
        if s["ood"]:
            out.append("  OOD: " + "; ".join(f"{o['name']} {o['counted']:,} ({o['where']})" for o in s["ood"]))
    return out
