"""This machine's rates for a CPU cost plan: a short calibration of the configured model's training and prediction
at its precision, of a job's start and of its own work, cached per machine.

``python -m beluga plan`` (:func:`beluga.workflow.plan.plan_command`) calibrates a CPU plan unless told not to
(``--no-calibrate``) or given a throughput table or rates. It measures, on this machine, for the task whose model
costs most per sequence (:func:`target`):

- the training rate: the project's one training loop (:func:`beluga.train.loop.train`, the code every fold job
  runs) on the task's model at the configured precision (``auto`` resolved on this CPU), the jobs' torch threads
  (``job_threads``) and the fold stage's batch size, method vanilla (the plan applies the methods' relative costs),
  on a sample of the task's own training sequences (:func:`sample`; a task without a suite: sequences of
  ``max_length`` tokens). After one untimed call that warms the kernels, calls of :data:`SHORT_STEPS` and
  :data:`LONG_STEPS` steps alternate; the rate is their difference in sequences over their difference in seconds
  (medians), so a call's set-up (tokenizing, the optimizer) is not counted as training;
- the prediction rate: the task head's prediction (:meth:`beluga.heads.base.Head.outputs`, as a fold job predicts)
  of :data:`PREDICT_BATCHES` batches of ``predict.batch_size`` of the same sequences;
- a job's start: the imports before a local job's hand-off to the run's warm job server (``launch_s``) and all of a
  job's imports (:data:`beluga.workflow.warm.PRELOAD`: ``start_s``), in the fresh process; a Snakemake job's start
  and end around its work (:func:`snakemake_job_s`: a micro-workflow);
- a job's own work besides training and prediction (reading, scoring, writing): as a data job's, a third of the
  seconds the task's i.i.d. splits, suite and split took to build in memory, as the run's three data jobs build them.

A job's fixed seconds (:func:`fixed_s`) are its start (warm or cold), the model's load, a training call's set-up and
its own work. The training, prediction, load and imports are measured in one fresh process (:func:`measure`) by
the CPU seconds it spends (:func:`cpu_s`; a Snakemake job's start and the data: theirs), not the wall-clock: they
are what a job demands of a core, the same on a busy machine as on an idle one (a wall-clock measured while other
work shares the cores would be cached for every later plan); the plan's wall-clock is then that of cores free for
the run. Rounds repeat up to :data:`ROUNDS` times while the measuring has
taken less than :data:`BUDGET_S` seconds. The figures are a throughput-table row of the model at its length and
batch size (:func:`beluga.workflow.cost.calibrated_rates`): the plan scales the other tasks' models from it as from
the built-in reference. They are cached in the user's cache folder (:func:`cache_dir`), one JSON file per key
(:func:`cache_key`: the CPU model, torch's CPU capability and whether bf16 is native, the instruction-set limits set
in the environment, the torch version, the model, the precision, the threads, the batch shape and the sequences),
written atomically; a later plan with the same key reads them (``--recalibrate`` measures again). What cannot be
measured here (a hub model not in the Hugging Face cache, offline) is not calibrated: the plan says
why and uses the reference (:class:`NotCalibrated`).
"""

from __future__ import annotations

import datetime
import hashlib
import importlib
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from beluga.core.errors import BelugaError, ConfigError
from beluga.core.tasks import get_task_type
from beluga.heads import head_of
from beluga.train.settings import FoldRun, fold_run
from beluga.workflow import warm as warm_jobs
from beluga.workflow.cost import NO_BF16_FACTOR, REFERENCE, calibrated_rates, model_size, relative_cost
from beluga.workflow.schedule import RunRest
from beluga.workflow.warm import PRELOAD

#: the repository (its Snakefile: the run's dry run, :func:`run_job_counts`)
REPO = Path(__file__).resolve().parents[2]
#: the environment variable that names the cache folder (else ``$XDG_CACHE_HOME/beluga``, else ``~/.cache/beluga``)
CACHE_DIR_ENV = "BELUGA_CACHE_DIR"
#: the cache files' format; a file of another version is measured again
CACHE_VERSION = 4
#: training steps of the two timed calls of a round (the rate: their difference)
SHORT_STEPS, LONG_STEPS = 1, 8
#: full-length prediction batches timed in a round
PREDICT_BATCHES = 2
#: rounds at most, and the seconds after which no new round starts (the first always runs)
ROUNDS, BUDGET_S = 3, 5.0
#: the environment variables that limit the instruction sets torch and oneDNN use (part of the key)
ISA_LIMITS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
#: the text of the calibration's sequences where the task has no suite sequences, repeated to fill ``max_length``
FILLER = "the film was not as good as the book but the actors made it worth seeing again"
#: the most training sequences of the task a calibration takes (evenly spaced over its streams)
SAMPLE = 256


class NotCalibrated(BelugaError):
    """The calibration could not measure this configuration here (its one line says why)."""


@dataclass(frozen=True)
class Target:
    """What is calibrated: a task's model at its training length, the fold stage's batch size, the prediction
    batch size, the configured precision and the jobs' threads; ``run``, the training settings of its calls."""
    task: str
    model: str
    size: tuple
    max_length: int
    batch_size: int
    predict_batch_size: int
    precision: str
    threads: int
    run: object   # beluga.train.settings.FoldRun
    #: (text, text_b or None) the calibration trains on and predicts: a sample of the task's training sequences
    #: (:data:`SAMPLE` at most); none: sequences of ``max_length`` tokens (:data:`FILLER`)
    sequences: tuple = ()
    #: CPU seconds of a job's own work besides training and prediction (reading, writing, scoring): a third of the
    #: seconds the task's data took to prepare in memory (its i.i.d. splits, its suite and its split: the work of the
    #: run's three data jobs, :func:`target`); None: not timed
    data_s: float | None = None


def cache_dir() -> Path:
    """``$BELUGA_CACHE_DIR``, else ``$XDG_CACHE_HOME/beluga``, else ``~/.cache/beluga``."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "beluga"


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``; else what the platform says)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine() -> dict:
    """This machine as the calibration's key sees it: the CPU, torch's CPU capability (what its kernels run at),
    whether bf16 is native (:func:`beluga.model.precision.native_bf16`), the instruction-set limits set in the
    environment, the torch version."""
    import torch

    from beluga.model.precision import native_bf16

    return {"cpu": cpu_name(), "capability": torch.backends.cpu.get_cpu_capability(),
            "bf16": "native" if native_bf16(torch.device("cpu")) else "emulated",
            "isa_limits": {k: os.environ[k] for k in ISA_LIMITS if os.environ.get(k)}, "torch": torch.__version__}


def target(config: dict, the_runs, sequences_of=None) -> Target:
    """The task whose model costs most per sequence at its length (:func:`beluga.workflow.cost.relative_cost`; the
    first of equals), with the training settings of a vanilla job of the fold stage (:func:`fold_run`): its
    hyper-parameters (one epoch: a call trains the steps it is given), ``job_threads``, no checkpoints, non-finite
    losses skipped, eager (``training.compile`` would compile again in every timed call; on a CPU compiling gains
    no speed: docs/COMPUTE.md). ``sequences_of(task)``: the task's training streams (:func:`sample`'s input), built
    as the run's data jobs build its data, and timed (``data_s``); None, or a task's None (its data not staged: the
    plan counts published sizes), full-length sequences (:data:`FILLER`) and no data job's seconds."""
    from beluga.workflow.runs import stage_hparams, task_training

    def cost(tid):
        tcfg = config["tasks"][tid]
        return relative_cost(str(tcfg["model"]), int(task_training(config, tcfg)["max_length"]))

    tid = max(config["tasks"], key=cost)   # max keeps the first of equals
    tcfg = config["tasks"][tid]
    model = str(tcfg["model"])
    run = fold_run(config, {**task_training(config, tcfg), "nonfinite": "skip", "compile": "off"}, task=tid,
                   task_type=tcfg["type"], model=model, configuration="iid", method="vanilla", partition="standard",
                   fold="all", held_out=(), functionalities=(), start_label=model,
                   hparams=stage_hparams(config, tcfg, "suite", "vanilla", {"epochs": 1}), seed=int(config["seed"]),
                   threads=int(config["job_threads"]), checkpoint_dir=None, model_lock=the_runs.model_marker(tid))
    t0 = time.process_time()
    streams = sequences_of(tid) if sequences_of else None
    sequences = sample(streams) if streams is not None else ()
    data_s = (time.process_time() - t0) / 3 if streams is not None else None
    return Target(tid, model, tuple(model_size(model)), int(run.max_length), int(run.hparams["batch_size"]),
                  int(config["predict"]["batch_size"]), str(config["precision"]), int(run.threads), run, sequences,
                  data_s)


def sample(streams: dict) -> tuple:
    """(text, text_b or None) of the training streams' inputs (every input of an item: an INV / DIR pair is two
    sequences, as the plan counts them), :data:`SAMPLE` at most, evenly spaced in stream order."""
    seqs = [(text, (it.inputs_b[i] if it.inputs_b else None)) for items in streams.values() for it in items
            for i, text in enumerate(it.inputs)]
    if len(seqs) <= SAMPLE:
        return tuple(seqs)
    return tuple(seqs[i * len(seqs) // SAMPLE] for i in range(SAMPLE))


def resolved_precision(setting: str) -> str:
    """The precision a CPU job runs at for the config's ``precision`` (``auto``: bf16 where native)."""
    import torch

    from beluga.model.precision import native_bf16

    return ("bf16" if native_bf16(torch.device("cpu")) else "fp32") if setting == "auto" else setting


def cache_key(t: Target, where: dict | None = None) -> dict:
    """The key of a calibration: this machine (:func:`machine`, or ``where``), the model (its name and size), the
    precision the jobs run at, their threads and the batch shape."""
    sequences = hashlib.sha256(json.dumps(t.sequences).encode()).hexdigest()[:16] if t.sequences else "full length"
    return {"version": CACHE_VERSION, **(where or machine()), "model": t.model, "size": list(t.size),
            "precision": resolved_precision(t.precision), "threads": t.threads, "max_length": t.max_length,
            "batch_size": t.batch_size, "predict_batch_size": t.predict_batch_size, "sequences": sequences}


def cache_file(key: dict) -> Path:
    """The key's file in :func:`cache_dir`: ``calibration-<16 hex digits of the key's SHA-256>.json``."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"calibration-{digest}.json"


def read_cached(key: dict) -> dict | None:
    """The cached calibration of ``key``, or None: no file, or one that is not this key's readable record (it is
    measured again and replaced)."""
    path = cache_file(key)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key or not isinstance(record.get("figures"), dict):
        return None
    figures = record["figures"]
    needed = ("train_seq_per_s", "predict_seq_per_s", "fixed_s_warm", "fixed_s_cold", "job_start_s")
    if not all(isinstance(figures.get(k), (int, float)) and figures[k] > 0 for k in needed):
        return None
    return record


def _text(i: int) -> str:
    """A full-length calibration sequence: distinct, longer than any ``max_length`` (truncated to it)."""
    return f"{i} " + " ".join([FILLER] * 40)


#: what the child process runs (:func:`measure`): the imports of a local job's own process before its hand-off to
#: the run's warm job server (Snakemake's script preamble, beluga.workflow.warm), timed, then :func:`measure_main`
CHILD = ("import time, snakemake.script, beluga.workflow.warm\nlaunch = time.process_time()\n"
         "import sys, beluga.workflow.calibrate as c\nsys.exit(c.measure_main(launch))\n")


def measure(t: Target) -> dict:
    """The figures of :class:`Target` ``t`` measured here, in a fresh interpreter (:data:`CHILD`:
    :func:`measure_here`), in the CPU seconds the process spends (:func:`cpu_s`): train_seq_per_s,
    predict_seq_per_s, the parts of a job's fixed cost (launch_s: the interpreter and what a local job imports before
    its warm server forks it; start_s: that and what a job started in its own process imports; load_s: the model's
    load; setup_s: a training call's set-up), job_start_s (:func:`snakemake_job_s`), data_s (``t``'s) and
    :func:`fixed_s` of both starts; rounds; seconds, the calibration's wall-clock. :class:`NotCalibrated` with the
    process's last line where it stops."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    spec = {"run": t.run.to_dict(), "model": t.model, "max_length": t.max_length, "batch_size": t.batch_size,
            "predict_batch_size": t.predict_batch_size, "precision": t.precision, "threads": t.threads,
            "sequences": [list(x) for x in t.sequences]}
    started = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(spec), env=env, capture_output=True,
                         text=True, timeout=900)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith(RESULT)]
    if res.returncode != 0 or not lines:
        tail = (res.stderr.strip().splitlines() or [f"exit status {res.returncode}, no message"])[-1]
        raise NotCalibrated(tail.removeprefix("error: "))
    figures = json.loads(lines[-1][len(RESULT):])
    figures.update(job_start_s=snakemake_job_s(), data_s=t.data_s)
    figures.update(fixed_s_warm=fixed_s(figures, True), fixed_s_cold=fixed_s(figures, False),
                   seconds=time.perf_counter() - started)
    return figures


#: jobs of the micro-workflow that times a Snakemake job's start (:func:`snakemake_job_s`)
MICRO_JOBS = 6
MICRO_SNAKEFILE = """rule all:
    input: expand("out/{i}.txt", i=range(%d))

rule job:
    output: "out/{i}.txt"
    script: "job.py"
"""
#: the micro-workflow's job: what a local job of the run does before its hand-off to the warm job server
MICRO_JOB = "import beluga.workflow.warm\nopen(snakemake.output[0], 'w').write('')\n"


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's children that have ended."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def snakemake_job_s() -> float:
    """CPU seconds a local Snakemake job of this machine takes to start and end around its work: a micro-workflow of
    :data:`MICRO_JOBS` jobs (the script's preamble that gives a job its ``snakemake`` object, the imports before a
    warm hand-off) run one at a time, less its dry run (Snakemake's own start), per job: the job's process and
    Snakemake's own, between the jobs. :class:`NotCalibrated` where it fails."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    with tempfile.TemporaryDirectory(prefix="beluga-calibration-") as folder:
        Path(folder, "Snakefile").write_text(MICRO_SNAKEFILE % MICRO_JOBS)
        Path(folder, "job.py").write_text(MICRO_JOB)
        seconds = []
        for extra in (["-n"], ["--cores", "1"]):
            cmd = [sys.executable, "-m", "snakemake", "-s", str(Path(folder, "Snakefile")), "-d", folder, "--quiet",
                   "--workflow-profile", "none", *extra]
            before = _children_cpu_s()
            res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
            seconds.append(_children_cpu_s() - before)
            if res.returncode != 0:
                tail = ((res.stderr + res.stdout).strip().splitlines() or [f"exit status {res.returncode}"])[-1]
                raise NotCalibrated(f"a micro-workflow of {MICRO_JOBS} Snakemake jobs failed ({tail})")
    return max(0.0, seconds[1] - seconds[0]) / MICRO_JOBS


def fixed_s(figures: dict, warm: bool) -> float:
    """A job's fixed seconds: its start (a Snakemake job's, ``job_start_s``; ``warm``: forked by a local run's job
    server, which imported torch and the rest once, else a job in its own process: Slurm, ``BELUGA_WARM_JOBS=0``,
    with all its imports, ``start_s`` less ``launch_s``), the model's load, a training call's set-up and its own
    reading, scoring and writing (``data_s``, as a data job's)."""
    start = figures["job_start_s"] + (0.0 if warm else figures["start_s"] - figures["launch_s"])
    return start + figures["load_s"] + figures["setup_s"] + (figures.get("data_s") or 0.0)


#: the line that carries the figures of :func:`measure_here` on its standard output
RESULT = "BELUGA_CALIBRATION "


def cpu_s(threads: int) -> float:
    """This process's CPU seconds (user + system, every thread) over ``threads``: the seconds a job with that many
    threads, each busy, spends on free cores. CPU time, not the wall-clock: the figures are the machine's, not those
    of the moment's load (a busy machine's wall-clock would be cached for every later plan)."""
    return time.process_time() / max(1, int(threads))


def measure_here(spec: dict) -> dict:
    """The load, training and prediction figures of ``spec`` (:func:`measure`'s) measured in this process; see the
    module docstring."""
    import torch

    from beluga.model.modeling import load_model, quiet_transformers
    from beluga.model.precision import resolve
    from beluga.train.items import TrainItem
    from beluga.train.loop import train

    t0, threads = time.perf_counter(), int(spec["threads"])
    c0 = cpu_s(threads)
    run = FoldRun.from_dict(spec["run"])
    batch, pbatch, length = int(spec["batch_size"]), int(spec["predict_batch_size"]), int(spec["max_length"])
    torch.set_num_threads(threads)
    ttype = get_task_type("sent")   # a classification step: the model's forward and backward on the sequences
    try:
        with quiet_transformers():
            model, tokenizer = load_model(spec["model"], ttype.num_model_labels, model_lock=run.model_lock,
                                          max_length=length)
    except (BelugaError, OSError) as e:
        raise NotCalibrated(f"model {spec['model']} cannot be loaded ({str(e).splitlines()[0]})") from None
    load_s = cpu_s(threads) - c0
    precision = resolve(spec["precision"], torch.device("cpu"))
    target_row = ttype.mft_target("eq", 1)
    pool = [tuple(x) for x in spec["sequences"]] or [(_text(i), None) for i in range(SAMPLE)]
    random.Random(0).shuffle(pool)   # any prefix like the whole: the short and the long call train on alike sequences

    def seqs(n: int, offset: int = 0) -> list:
        return [pool[(offset + i) % len(pool)] for i in range(n)]

    def train_call(steps: int) -> tuple[float, int]:
        items = [TrainItem(env="calibration", inputs=[a], inputs_b=None if b is None else [b], target=list(target_row))
                 for a, b in seqs(steps * batch)]
        start = cpu_s(threads)
        train(model, tokenizer, {"MFT": items}, run, precision=precision, log_every=10 ** 9)
        return cpu_s(threads) - start, len(items)

    head = head_of(ttype)
    predicted = seqs(PREDICT_BATCHES * pbatch)
    texts, texts_b = [a for a, _ in predicted], [b for _, b in predicted]

    def predict_call() -> float:
        start = cpu_s(threads)
        head.outputs(model, tokenizer, texts, texts_b, pbatch, length, int(run.doc_stride), precision)
        return cpu_s(threads) - start

    train_call(SHORT_STEPS)   # untimed: the kernels' first calls
    predict_call()
    short, long_, pred = [], [], []
    while not short or (len(short) < ROUNDS and time.perf_counter() - t0 < BUDGET_S):
        short.append(train_call(SHORT_STEPS))
        long_.append(train_call(LONG_STEPS))
        pred.append(predict_call())
    t_short, n_short = statistics.median(s for s, _ in short), short[0][1]
    t_long, n_long = statistics.median(s for s, _ in long_), long_[0][1]
    per_seq = (t_long - t_short) / (n_long - n_short)
    if per_seq <= 0:   # noise larger than the extra steps: the long call's mean, set-up included
        per_seq = t_long / n_long
    return {"train_seq_per_s": 1.0 / per_seq, "predict_seq_per_s": len(texts) / statistics.median(pred),
            "load_s": load_s, "setup_s": max(0.0, t_short - n_short * per_seq), "rounds": len(short),
            "precision_run": precision.name}


def measure_main(launch_s: float) -> int:
    """The child process of :func:`measure` (:data:`CHILD`), whose start and imports before a job's hand-off took
    ``launch_s`` CPU seconds: the rest of a job's imports (:data:`beluga.workflow.warm.PRELOAD`), timed, then
    :func:`measure_here` of the spec on standard input; the figures on one :data:`RESULT` line, or one ``error:``
    line on standard error."""
    for name in PRELOAD:
        importlib.import_module(name)
    start_s = time.process_time()   # the interpreter's start and every import: one thread
    try:
        figures = measure_here(json.loads(sys.stdin.read()))
    except NotCalibrated as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    print(RESULT + json.dumps({**figures, "launch_s": launch_s, "start_s": start_s}), flush=True)
    return 0


def calibration(t: Target, recalibrate: bool = False) -> tuple[dict, str]:
    """(the cache record of ``t`` on this machine: key, figures, measured, file; how it was had: ``cached`` /
    ``measured`` / ``measured, not cached (why)``). Measured when the cache has no record of its key (or
    ``recalibrate``), then written to the cache atomically. :class:`NotCalibrated` where it cannot be measured."""
    from beluga.core.io import write_json

    key = cache_key(t)
    path = cache_file(key)
    if not recalibrate:
        cached = read_cached(key)
        if cached is not None:
            return {**cached, "file": str(path)}, "cached"
    figures = measure(t)
    record = {"key": key, "figures": figures,
              "measured": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(record, path)
    except OSError as e:
        return {**record, "file": None}, f"measured, not cached ({path}: {e.strerror or e})"
    return {**record, "file": str(path)}, "measured"


def describe(record: dict, how: str, t: Target) -> str:
    """The calibration in words: where it ran (CPU, bf16 native / emulated, the precision), what it measured
    and where it is cached."""
    key, fig = record["key"], record["figures"]
    limits = "".join(f", {k}={v}" for k, v in key["isa_limits"].items())
    seqs = (f"{len(t.sequences)} of {t.task}'s training sequences" if t.sequences
            else f"sequences of {t.max_length} tokens")
    where = (f"calibrated on this machine ({key['cpu']}, bf16 {key['bf16']}: torch CPU capability "
             f"{key['capability']}{limits}; {key['precision']}, {key['threads']} thread(s) per job, torch "
             f"{key['torch']}; {t.model}, {seqs} (at most {t.max_length} tokens), batch {t.batch_size}, prediction "
             f"batch {t.predict_batch_size}; measured {record['measured'][:10]} in {fig['seconds']:.1f} s")
    return f"{where}), " + (f"cached at {record['file']}" if record.get("file") else how)


# ---------------------------------------------------------------- the plan's calibrated rates and the run's rest
def machine_rates(config: dict, the_runs, streams_of, rates: dict, source: str, calibrate: bool,
                  recalibrate: bool) -> tuple[dict, str, dict | None, str]:
    """(rates, source, the calibration's record or None, the plan's line about it) of a CPU plan on the built-in
    reference: with ``calibrate``, this machine's calibrated rates (:func:`calibration`, cached; ``recalibrate``:
    measured again) of the :func:`target` of ``the_runs`` (the configuration's checked runs) on a sample of its
    task's training sequences (``streams_of(task)``; None where the task's data are not staged: filler) in place of
    the reference's, with the fixed seconds of a job forked warm by a local run's job server
    (:mod:`beluga.workflow.warm`; of a job started in its own process where the run's jobs start cold:
    ``BELUGA_WARM_JOBS=0``); else, or where the calibration cannot measure the configuration here, the reference's
    ``rates`` and ``source``, and a line naming the reference machine and its precision and saying how much longer
    the times may be here (:data:`~beluga.workflow.cost.NO_BF16_FACTOR`)."""
    why = "--no-calibrate"
    if calibrate:
        def streams(tid):
            got = streams_of(tid)
            if got is None:
                unstaged.add(tid)
            return got

        unstaged: set[str] = set()
        try:
            t = target(config, the_runs, streams)
            record, how = calibration(t, recalibrate)
        except NotCalibrated as e:
            why = f"the calibration could not run here: {e}"
        else:
            fig, key = record["figures"], record["key"]
            warm = warm_jobs.wanted(True)
            origin = describe(record, how, t)
            where = f"cached at {record['file']}" if record.get("file") else how
            short = f"calibrated on this machine ({key['cpu']}, bf16 {key['bf16']}), {where}"
            before = " (measured before; --recalibrate measures again)" if how == "cached" else ""
            if t.task in unstaged:
                before += (f" -- {t.task}'s data are not staged (published sizes): calibrated on filler sequences "
                           f"of {t.max_length} tokens, no data job measured")
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            busy = "" if load is None else f"; this machine's load average now: {load:.1f} on {os.cpu_count()} cores"
            starts = (f"a job's fixed seconds are those of a job forked warm by the local run's job server "
                      f"({fig['fixed_s_warm']:.1f} s; {fig['fixed_s_cold']:.1f} s for one started in its own process: "
                      "Slurm, BELUGA_WARM_JOBS=0)" if warm else
                      f"a job's fixed seconds are those of a job started in its own process ({fig['fixed_s_cold']:.1f} "
                      f"s; {fig['fixed_s_warm']:.1f} s forked warm by a local run's job server)")
            used = {**fig, "fixed_s_per_job": fig["fixed_s_warm" if warm else "fixed_s_cold"]}
            return (calibrated_rates(used, t.size, t.max_length, t.batch_size, origin), short, record,
                    f"times: {short}{before} -- the rates below, in CPU seconds: each wall-clock below is on cores "
                    f"free for the run (other work on them adds to it{busy}); {starts}")
    return rates, source, None, (
        f"times: not calibrated ({why}): the rates are the reference machine's ({REFERENCE['cpu']['machine']}); a "
        f"CPU without native bf16 computes in fp32 and may take up to x{NO_BF16_FACTOR:g} as long, so each wall-clock "
        "below is a range (without --no-calibrate, plan measures this machine)")


def run_job_counts(path: Path, overrides: list[str] = ()) -> tuple[dict[str, int], float]:
    """(jobs per rule of the whole run of the configuration file ``path`` with ``overrides``, the seconds it took):
    Snakemake's dry run of every job (``--forceall``: whatever is already done) in this working directory, as a
    local run plans it. :class:`~beluga.core.errors.ConfigError` with its last line where it fails."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", os.getcwd(), "-n", "--forceall",
           "--nolock", "--quiet", "rules", "--configfile", str(path), *(["--config", *overrides] if overrides else [])]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    took = time.perf_counter() - t
    if res.returncode != 0:
        tail = ((res.stderr + res.stdout).strip().splitlines() or [f"exit status {res.returncode}"])[-1]
        raise ConfigError(f"snakemake's dry run of {path}: {tail}")
    counts = {}
    for ln in (res.stdout + res.stderr).splitlines():
        parts = ln.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] not in ("total", "job") and not parts[0].endswith(":"):
            counts[parts[0]] = int(parts[1])
    return counts, took


def run_rest(path: Path, overrides: list[str], figures: dict, counted: set[str]) -> tuple[RunRest | None, str]:
    """(the run's start and other jobs, :class:`~beluga.workflow.schedule.RunRest`, or None; the plan's line about
    them) of a calibrated local CPU plan: the jobs of Snakemake's dry run (:func:`run_job_counts`) the plan does not
    count (``counted``: its rules; ``all``, the target, runs nothing), each the calibration's data job (a job's
    start, forked warm by the local run's job server unless ``BELUGA_WARM_JOBS=0``, and its own work,
    ``data_s``); the start: the dry run's seconds and, with warm jobs, the server's imports."""
    warm = warm_jobs.wanted(True)
    try:
        counts, dag_s = run_job_counts(path, overrides)
    except (ConfigError, OSError, subprocess.TimeoutExpired) as e:
        return None, f"the run's other jobs: not counted ({str(e).splitlines()[0]})"
    others = sum(n for rule, n in counts.items() if rule not in counted and rule != "all")
    imports = figures["start_s"] - figures["launch_s"]   # what the warm job server imports once
    job_s = figures["job_start_s"] + (0.0 if warm else imports) + (figures.get("data_s") or 0.0)
    server = imports if warm else 0.0
    rest = RunRest(dag_s + server, others, job_s)
    return rest, (f"the run's other jobs: {others} of its {sum(counts.values()) - counts.get('all', 0)} "
                  f"(Snakemake's dry run, {dag_s:.1f} s), each {job_s:.1f} s as calibrated; counted in the "
                  "wall-clock on N cores below")
