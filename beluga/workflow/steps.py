"""The GPU plan's cost of optimizer steps at real lengths (:mod:`beluga.workflow.plan`). Light: no torch.

GPU-seconds of a job = its optimizer steps x the time of one step (model, rows a step, padded length, method)
+ its prediction + a fixed cost, over the GPU's aggregate factor when K jobs share it. Three scenarios
(:data:`GPU_SCENARIOS`), each a per-step time and a factor:

- ``eager``: one job per GPU, today's loop. The step is host-bound (kernel launches, Python), so it is the measured
  step of the row with the model's layers (:func:`measured_steps`: the GPU sessions' files, benchmarks/gpu/, read
  by :mod:`beluga.workflow.gpu_files`), scaled by layers for another model; never below the floor.
- ``eager_k``: K jobs per GPU (``gpu_jobs``, else the K measured): the eager step over the measured aggregate
  factor of K jobs (one GPU's sequences / s with K jobs over one job's), never below the floor.
- ``graphs_k``: the whole step as CUDA graphs, K jobs: each step costs its GPU time, the measured graphed step of
  the model (the session's S4, over its measured factor of K graphed jobs; :func:`graphed_step_s`), else the
  floor (:func:`floor_step_s`), PROJECTED; the fixed cost and prediction are shared by the K jobs.

The padded length of a batch comes from the data's token-length distribution (:func:`padded_length`): the
task's record measured with its model's tokenizer on the staged data (``python -m beluga data lengths``,
:mod:`beluga.data.lengths`: a histogram, no fitting) where it exists and is fresh, else the published figures
of :data:`LENGTHS` (fitted as log-normal), :data:`DEFAULT_LENGTH` for another task type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist

from beluga.core.errors import ConfigError
from beluga.data.lengths import MeasuredLengths
from beluga.model.compiling import BUCKET  # the graphed loop pads a batch to a multiple of it
from beluga.workflow.cost import BENCHMARKS, model_size
from beluga.workflow.gpu_files import StepRow, read_measurements

#: the GPU session's files (scripts/gpu_session.sh): the measured steps the plan reads
GPU_BENCHMARKS = BENCHMARKS / "gpu"

#: the token lengths of the paper's data (WordPiece, bert-base-uncased; a pair: both texts with their separators):
#: (mean, a quantile, its probability). QQP pairs average 30.5 tokens, p99 75; SST-2 sentences 13 (p99 not
#: recorded: the spread of QQP's assumed); SQuAD question + context 175, 1.7% over 384. A task's suite is counted
#: at its i.i.d. source's distribution (the CheckList suites average 18 to 52 tokens: within these).
LENGTHS = {"sent": (13.0, None, None), "para": (30.5, 75.0, 0.99), "read": (175.0, 384.0, 0.983)}
#: the stated default distribution of a task type :data:`LENGTHS` does not name (NLI pairs, similarity classes,
#: ...): a mean of 35 tokens, the middle of the suites' 18 to 52, at QQP's spread
DEFAULT_LENGTH = (35.0, None, None)
#: the spread (log-normal sigma) where a distribution gives only its mean: QQP's
DEFAULT_SIGMA = 0.43
#: the training loop sorts pools of this many batches by length (``training.batching: project``)
POOL_BATCHES = 8

#: the floor model of one step's GPU time: AdamW's traffic in bytes a parameter (fp32 weights, gradients and two
#: moments read and written, bf16 copies) at this share of the memory bandwidth; the matrix products at this
#: share of the dense bf16 peak; the small kernels (layer norm, dropout, softmax, adds) a layer. With these it gives
#: 3.6 ms for the H200 session's BERT-base step (batch 16, 21.9 rows, 607 padded tokens), whose kernels measured
#: 3.63 ms (benchmarks/gpu/2026-11-27-h200-a_eager.json, profile).
OPTIMIZER_BYTES_PER_PARAM, BANDWIDTH_SHARE, MATMUL_SHARE, SMALL_KERNELS_S_PER_LAYER = 46, 0.8, 0.4, 1.5e-3 / 12
#: (memory bandwidth bytes / s, dense bf16 FLOP / s) of the GPUs the plan prices (the vendors' data sheets)
GPUS = {"H100": (3.35e12, 989e12), "H200": (4.8e12, 989e12)}
#: the GPU the plan prices its GPU-hours on
PLAN_GPU = "H100"

#: K of the K-jobs scenarios where the configuration's ``gpu_jobs`` is 1: the K the GPU session measured
DEFAULT_K = 2

GPU_SCENARIOS = {"eager": "eager, one job per GPU (today's loop)", "eager_k": "eager, {k} jobs per GPU",
             "graphs_k": "whole-step CUDA graphs, {k} jobs per GPU"}


def n_parameters(spec) -> int:
    """Parameters of a BERT-like model of ``spec``'s size (a name or (layers, hidden, intermediate); a 30,522-token
    vocabulary and 512 positions)."""
    layers, h, i = model_size(spec) if isinstance(spec, str) else spec
    return layers * (4 * h * h + 2 * h * i + 9 * h + i) + (30522 + 512 + 2) * h


def _sigma(mean: float, q: float | None, p: float | None) -> float:
    """The log-normal sigma with this mean and quantile ``q`` at probability ``p``:
    ln(q / mean) = z sigma - sigma^2 / 2."""
    if q is None:
        return DEFAULT_SIGMA
    z, r = NormalDist().inv_cdf(p), math.log(q / mean)
    return z - math.sqrt(z * z - 2 * r)


def length_quantile(task_type: str, p: float) -> float:
    """The token length at probability ``p`` of a task type's distribution (:data:`LENGTHS`, else
    :data:`DEFAULT_LENGTH`; log-normal)."""
    mean, q, prob = LENGTHS.get(task_type, DEFAULT_LENGTH)
    s = _sigma(mean, q, prob)
    return math.exp(math.log(mean) - s * s / 2 + s * NormalDist().inv_cdf(p))


def padded_length(task_type: str | MeasuredLengths, rows: int, max_length: int, batching: str = "project") -> float:
    """Mean padded length of a batch of ``rows`` sequences: the longest of the batch, capped at ``max_length`` and
    rounded up to :data:`BUCKET`. ``project`` batching sorts pools of :data:`POOL_BATCHES` batches by length, so
    batch j of a pool ends at the (j + 1) rows-th of its pool's lengths; ``reference`` draws at random: the longest
    of ``rows`` draws. ``task_type``: a task type (the published distribution, :func:`length_quantile`: the
    expected k-th of n draws taken at probability k / (n + 1)) or a measured record (:func:`measured_padded`)."""
    rows = max(1, int(rows))
    if isinstance(task_type, MeasuredLengths):
        return measured_padded(task_type.histogram, rows, max_length, batching)
    n = rows * (POOL_BATCHES if batching == "project" else 1)
    ends = [length_quantile(task_type, (j + 1) * rows / (n + 1)) for j in range(n // rows)]
    return sum(min(max_length, BUCKET * math.ceil(e / BUCKET)) for e in ends) / len(ends)


@lru_cache(maxsize=4096)
def measured_padded(hist: tuple, rows: int, max_length: int, batching: str = "project") -> float:
    """:func:`padded_length` from a measured histogram (``hist[b - 1]``: rows of :data:`BUCKET` (b - 1) + 1 to
    :data:`BUCKET` b tokens; a batch pads to its longest row's bucket, capped at ``max_length``): the exact
    expectation over ``rows`` independent draws (``reference``), or over each batch of a pool of
    :data:`POOL_BATCHES` batches sorted by length (``project``: batch j ends at the (j + 1) rows-th of the pool's
    8 rows draws; P(k-th of n <= bucket b) = P(Binomial(n, F(b)) >= k))."""
    total = float(sum(hist))
    cdf, acc = [0.0], 0
    for c in hist:
        acc += c
        cdf.append(acc / total)
    n = rows * (POOL_BATCHES if batching == "project" else 1)
    out = 0.0
    for k in range(rows, n + 1, rows):
        prev = 0.0
        for b in range(1, len(hist) + 1):
            at_most = _binomial_at_least(n, k, cdf[b])
            out += min(max_length, BUCKET * b) * (at_most - prev)
            prev = at_most
    return out / (n // rows)


def _binomial_at_least(n: int, k: int, p: float) -> float:
    """P(Binomial(n, p) >= k)."""
    if p >= 1.0:
        return 1.0
    if p <= 0.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    lg = math.lgamma(n + 1)
    return min(1.0, sum(math.exp(lg - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
                        for i in range(k, n + 1)))


def windows_per_item(task_type: str | MeasuredLengths, max_length: int) -> float:
    """Rows a training item makes: READ's question + context longer than ``max_length`` makes a second window
    (published: the share over ``max_length``; a measured record: its windows per item at the task's
    ``max_length`` and ``doc_stride``)."""
    if isinstance(task_type, MeasuredLengths):
        return task_type.windows_per_item
    if task_type != "read":
        return 1.0
    return 2.0 - NormalDist().cdf(_z(task_type, max_length))


def _z(task_type: str, length: float) -> float:
    mean, q, p = LENGTHS.get(task_type, DEFAULT_LENGTH)
    s = _sigma(mean, q, p)
    return (math.log(length) - (math.log(mean) - s * s / 2)) / s


def length_words(shapes) -> str:
    """Where the plan's lengths come from, per task type of the jobs' ``shapes`` (their second element: a task
    type or a measured record): ``measured: <file>`` with its mean, p99 and share over max_length, or the
    published mean (``published``; a type :data:`LENGTHS` does not name: the stated default)."""
    out = []
    for shape in sorted(set(shapes), key=lambda s: (_type_of(s[1]), str(s[1]))):
        t, max_length = shape[1], shape[2]
        if isinstance(t, MeasuredLengths):
            w = f", {t.windows_per_item:.3f} windows an item" if t.task_type == "read" else ""
            out.append(f"{t.task_type} measured: {t.path} (mean {t.mean:.1f}, p99 {t.p99}, {t.over:.2%} over "
                       f"{max_length}{w}; {t.tokenizer}'s tokenizer)")
        elif t in LENGTHS:
            out.append(f"{t} published, mean {LENGTHS[t][0]:g}")
        else:
            out.append(f"{t} the stated default, mean {DEFAULT_LENGTH[0]:g}")
    return "; ".join(dict.fromkeys(out))


def _type_of(t) -> str:
    return t.task_type if isinstance(t, MeasuredLengths) else str(t)


def floor_step_s(size, rows: float, length: float, gpu: str = PLAN_GPU) -> float:
    """One step's GPU time by the floor model: AdamW's traffic over the memory bandwidth, the matrix products of
    ``rows`` sequences of ``length`` tokens (forward and backward: 3 x 2 FLOPs a multiply-add; per-token weights and
    attention) at :data:`MATMUL_SHARE` of the peak, and the small kernels."""
    bandwidth, peak = GPUS[gpu]
    layers, h, i = size
    optimizer = OPTIMIZER_BYTES_PER_PARAM * n_parameters(size) / (BANDWIDTH_SHARE * bandwidth)
    macs = rows * layers * length * (4 * h * h + 2 * h * i + 2 * length * h)
    return optimizer + 6 * macs / (MATMUL_SHARE * peak) + SMALL_KERNELS_S_PER_LAYER * layers


def measured_steps(folder: Path | None = None) -> list[StepRow]:
    """The measured steps of the GPU sessions' files in ``folder`` (default :data:`GPU_BENCHMARKS`): session
    folders (``<date>-<machine>/``: s0_env.json and the stages' files of scripts/gpu_session.sh) and flat
    scripts/benchmark.py files; a model's rows from the newest session that measured it
    (:func:`beluga.workflow.gpu_files.read_measurements`). A file that is not such a JSON, or of a run without a
    GPU, is one line naming it and the field."""
    return read_measurements(Path(folder or GPU_BENCHMARKS))


def eager_row(rows: list[StepRow], size, batch: int | None = None) -> tuple[StepRow, bool]:
    """(the measured row for a model of ``size``, whether it is the same model): of the same size, the timed
    loops' rows (a profiled one only where none timed this model), at ``batch`` where one was (of several, the
    slowest step); else the one nearest in layers."""
    if not rows:
        raise ConfigError(f"GPU measurements {GPU_BENCHMARKS}: field '(files)': no measured eager step (the GPU "
                          "session's files: scripts/gpu_session.sh)")
    same = [r for r in rows if r.size == tuple(size)]
    same = [r for r in same if not r.profiled] or same
    same = [r for r in same if r.batch == batch] or same
    if same:   # several measurements of the model (other data): the slowest step
        return max(same, key=lambda r: r.step_s), True
    timed = [r for r in rows if not r.profiled] or rows
    return min(timed, key=lambda r: abs(r.size[0] - size[0])), False


def eager_step_s(rows: list[StepRow], size, batch: int, floor: float) -> tuple[float, bool]:
    """(one job's eager step, measured): the row's for the same model (host-bound: the same at any batch and
    length), else scaled by the layers (kernel launches grow with them); never below the floor. Measured: a
    timed loop's row of the model at this batch."""
    row, same = eager_row(rows, size, batch)
    step = row.step_s if same else row.step_s * size[0] / row.size[0]
    return max(step, floor), same and not row.profiled and row.batch == batch and step >= floor


def graphed_step_s(rows: list[StepRow], size, batch: int, floor: float, k: int,
                   gpu: str = PLAN_GPU) -> tuple[float, bool, StepRow | None]:
    """(a step's GPU-seconds as whole-step CUDA graphs with ``k`` jobs per GPU, measured, the row): the measured
    graphed step of the model (at ``batch`` where measured there, else the slowest), scaled to this step's floor
    over the measured step's (rows and padded length: the floor model), over the measured factor of ``k`` graphed
    jobs (none measured at ``k``: 1, no gain); no graphed step of the model: the floor (PROJECTED). Measured:
    the model at this batch, and ``k``'s factor."""
    got = [r for r in rows if r.size == tuple(size) and r.graphed_s and r.shape]
    got = [r for r in got if r.batch == batch] or got
    if not got:
        return floor, False, None
    row = max(got, key=lambda r: r.graphed_s)
    factor = 1.0 if k <= 1 else dict(row.graphed_factors).get(k)
    # the measured step over its own GPU's floor (a graphed step is the GPU's time: an H200's is not an H100's);
    # a GPU the floor model does not know: scaled as if it were the plan's, and not measured
    measured_on = gpu_of(row.gpu)
    step = row.graphed_s * floor / floor_step_s(tuple(size), *row.shape, measured_on or gpu) / (factor or 1.0)
    return step, row.batch == batch and factor is not None and measured_on is not None, row


def gpu_of(name: str) -> str | None:
    """The :data:`GPUS` entry a recorded GPU name is (``NVIDIA H100 80GB HBM3``: H100), or None."""
    got = [g for g in GPUS if g in str(name).upper()]
    return got[0] if len(got) == 1 else None


def aggregate_factor(rows: list[StepRow], k: int, size=None) -> tuple[float, str, bool]:
    """(the GPU's throughput with ``k`` eager jobs over one job's, in words, measured), from the first row with K
    jobs measured (of a model of ``size`` where given and measured; another model's factor is ESTIMATED for it):
    the factor measured at ``k``; between measured K's (and 1 job, 1x), linear; above the largest, its factor (the
    GPU saturated); none measured: 1 (no gain)."""
    if k <= 1:
        return 1.0, "one job", True
    got = [r for r in rows if r.factors]
    if not got:
        return 1.0, f"{k} jobs, no gain assumed (no jobs-per-GPU measurement)", False
    same = [r for r in got if size is None or r.size == tuple(size)]
    if not same:
        est, words, _ = aggregate_factor(got, k)
        return est, f"{words}; ESTIMATED for {_size_words(size)}: measured on {_size_words(got[0].size)}", False
    r = same[0]
    points = dict(r.factors)
    shown = ", ".join(f"{j} jobs {f:.2f}x" for j, f in r.factors)
    if k in points:
        return points[k], f"{k} jobs: {points[k]:.2f}x one job's sequences / s, measured ({r.source})", True
    pts = [(1, 1.0), *r.factors]
    if k > pts[-1][0]:
        est = pts[-1][1]
    else:
        (k0, f0), (k1, f1) = next((a, b) for a, b in zip(pts, pts[1:]) if a[0] < k < b[0])
        est = f0 + (f1 - f0) * (k - k0) / (k1 - k0)
    return est, f"{k} jobs: {est:.2f}x, ESTIMATED from the measured ({shown}; {r.source})", False


def job_steps(items: float, epochs: float, batches) -> float:
    """A job's optimizer steps: ceil(epochs x ceil(items / batch)), as the training loop counts them
    (:func:`beluga.train.loop.epoch_steps_total`), averaged over the batch sizes it may be given (a grid's)."""
    batches = list(batches)
    return sum(max(1, math.ceil(round(float(epochs) * math.ceil(items / int(b)), 9))) for b in batches) / len(batches)


@dataclass
class StepJob:
    """What the GPU plan's scenarios count of a job (``seeds`` of it): its task's shape (model size, task type,
    max_length, batching), its optimizer ``steps`` at the ``batches`` it may be given, its method's cost factor,
    its prediction's and fixed seconds."""
    shape: tuple
    seeds: int
    steps: float
    batches: list
    factor: float
    predict_s: float
    fixed_s: float
    #: why its updates run eagerly under ``compile: graphs`` (its method: IRM, Group-DRO, Fish; or ``nonfinite:
    #: skip``; :func:`beluga.model.graphs.eager_reason`), None where they are captured: the graphs + K scenario
    #: prices such a job as eager with K jobs
    graph_eager: str | None = None


def step_times(job: StepJob, rows: list[StepRow], gpu: str = PLAN_GPU) -> tuple[float, float, bool]:
    """(the job's eager step, its floor step, whether the eager step is measured), each the mean over the batch
    sizes it may be given: a batch of ``b`` items is ``b`` x :func:`windows_per_item` rows, padded to
    :func:`padded_length`."""
    size, ttype, max_length, batching = job.shape
    eager = floor = 0.0
    measured = True
    for b in job.batches:
        r = b * windows_per_item(ttype, max_length)
        f = floor_step_s(size, r, padded_length(ttype, round(r), max_length, batching), gpu)
        e, m = eager_step_s(rows, size, b, f)
        eager, floor, measured = eager + e / len(job.batches), floor + f / len(job.batches), measured and m
    return eager, floor, measured


def graphed_times(job: StepJob, rows: list[StepRow], k: int, gpu: str = PLAN_GPU) -> tuple[float, bool]:
    """(the job's step as whole-step CUDA graphs with ``k`` jobs per GPU, in GPU-seconds
    (:func:`graphed_step_s`), whether measured), the mean over the batch sizes it may be given."""
    size, ttype, max_length, batching = job.shape
    step, measured = 0.0, True
    for b in job.batches:
        r = b * windows_per_item(ttype, max_length)
        g, m, _ = graphed_step_s(rows, size, b, floor_step_s(size, r, padded_length(ttype, round(r), max_length,
                                                                                     batching), gpu), k, gpu)
        step, measured = step + g / len(job.batches), measured and m
    return step, measured


def job_parts(job: StepJob, rows: list[StepRow], k: int, scenario: str, gpu: str = PLAN_GPU) -> tuple:
    """(fixed seconds, training seconds, prediction seconds, speedup) of one job in ``scenario`` with ``k`` jobs per
    GPU (the K scenarios): the job's own seconds are the parts' sum x k / speedup, its GPU-seconds the sum /
    speedup. ``eager``: steps x the eager step, speedup 1; ``eager_k``: the same over the aggregate factor, the
    training never below the floor's GPU time; ``graphs_k``: each step its GPU time (:func:`graphed_times`: measured,
    else the floor's), the K jobs filling the GPU (speedup K; a job's training seconds K x its steps' time), except a
    job whose updates run eagerly under graphs (:attr:`StepJob.graph_eager`): as ``eager_k``."""
    eager, floor, _ = step_times(job, rows, gpu)
    steps = job.steps * job.factor
    if scenario == "eager":
        return job.fixed_s, steps * eager, job.predict_s, 1.0
    if scenario == "eager_k" or (scenario == "graphs_k" and job.graph_eager):
        factor = aggregate_factor(rows, k, job.shape[0])[0]
        return job.fixed_s, max(steps * eager, steps * floor * factor), job.predict_s, factor
    if scenario == "graphs_k":
        return job.fixed_s, steps * graphed_times(job, rows, k, gpu)[0] * max(1, k), job.predict_s, float(max(1, k))
    raise ValueError(f"scenario {scenario!r}: one of {', '.join(GPU_SCENARIOS)}")


def config_scenario(config: dict) -> str:
    """The scenario a GPU configuration runs: whole-step graphs where every task trains with ``training.compile:
    graphs``, else eager, K jobs where ``gpu_jobs`` > 1."""
    from beluga.workflow import runs

    if all(runs.task_training(config, t).get("compile") == "graphs" for t in config["tasks"].values()):
        return "graphs_k"
    return "eager_k" if int(config["gpu_jobs"]) > 1 else "eager"


def scenario_k(config: dict) -> int:
    """K of the K-jobs scenarios: the configuration's ``gpu_jobs`` where above 1, else :data:`DEFAULT_K`."""
    return int(config["gpu_jobs"]) if int(config["gpu_jobs"]) > 1 else DEFAULT_K


def scenario_hours(jobs: list[StepJob], rows: list[StepRow], k: int, gpu: str = PLAN_GPU) -> dict[str, dict]:
    """GPU-hours of the three scenarios (:data:`GPU_SCENARIOS`; ``k`` jobs per GPU in the K scenarios): per scenario
    ``hours``, ``train_hours`` and ``measured`` (every rate it takes measured); ``graphs_k`` also
    ``measured_share``, the share of its captured jobs' optimizer steps a measured graphed step prices,
    ``eager_hours``, the hours of its jobs whose updates run eagerly under graphs, and ``eager_why``, what makes
    them eager (the first words of each reason: IRM, Group-DRO, Fish, training.nonfinite)."""
    out = {s: {"hours": 0.0, "train_hours": 0.0, "measured": s != "graphs_k"} for s in GPU_SCENARIOS}
    out["graphs_k"].update(eager_hours=0.0, eager_why=[])
    for j in jobs:
        measured = step_times(j, rows, gpu)[2]
        for s in GPU_SCENARIOS:
            fixed, train, predict, speedup = job_parts(j, rows, k, s, gpu)
            out[s]["hours"] += j.seeds * (fixed + train + predict) / speedup / 3600
            out[s]["train_hours"] += j.seeds * train / speedup / 3600
            out[s]["measured"] &= measured or s == "graphs_k"
            if s == "graphs_k" and j.graph_eager and j.steps:
                out[s]["eager_hours"] += j.seeds * (fixed + train + predict) / speedup / 3600
                why = j.graph_eager.split(":")[0]
                if why not in out[s]["eager_why"]:
                    out[s]["eager_why"].append(why)
    out["eager_k"]["measured"] &= all(aggregate_factor(rows, k, j.shape[0])[2] for j in jobs if j.steps)
    graphed = [(j.seeds * j.steps, graphed_times(j, rows, k, gpu)[1]) for j in jobs   # graphs: measured steps
               if not j.graph_eager]
    total = sum(n for n, _ in graphed)
    out["graphs_k"]["measured_share"] = sum(n for n, m in graphed if m) / total if total else 0.0
    eager = [j for j in jobs if j.graph_eager]   # priced as eager_k: measured as that is
    eager_measured = all(step_times(j, rows, gpu)[2] and aggregate_factor(rows, k, j.shape[0])[2] for j in eager)
    out["graphs_k"]["measured"] = bool(graphed) and all(m for _, m in graphed) and eager_measured
    return out


def scenario_lines(jobs: list[StepJob], rows: list[StepRow], config: dict, gpu: str = PLAN_GPU,
                   hours: dict | None = None) -> list[str]:
    """The GPU plan's three scenarios (K: the configuration's ``gpu_jobs`` where above 1, else :data:`DEFAULT_K`):
    GPU-hours of each (``hours``: :func:`scenario_hours` of these jobs where the caller has them) and where each
    rate comes from (measured: file, machine, date, versions; or estimated / projected), and which one the
    configuration runs (the plan's table)."""
    k = scenario_k(config)
    runs_as = config_scenario(config)
    hours = hours or scenario_hours(jobs, rows, k, gpu)
    steps = sum(j.seeds * j.steps for j in jobs)
    _, kwords, _ = aggregate_factor(rows, k)
    unmeasured = sorted({_size_words(j.shape[0]) for j in jobs
                         if j.steps and not aggregate_factor(rows, k, j.shape[0])[2]})
    others = f"; ESTIMATED for {', '.join(unmeasured)}: no K-jobs measurement of that model" if unmeasured else ""
    lengths = length_words([j.shape for j in jobs])
    out = [f"GPU scenarios ({steps:,.0f} optimizer steps; a step's rows and padded length from the data's token "
           f"lengths ({lengths}; published: steps.py LENGTHS, tokens); the floor on an {gpu}, "
           "the eager steps as measured: host-bound, hardly the GPU's):"]
    for s, words in GPU_SCENARIOS.items():
        h = hours[s]
        how = {"eager": "measured" if h["measured"] else "measured where the model and batch were, else ESTIMATED "
                        "(scaled by layers)",
               "eager_k": f"eager step over the aggregate factor ({kwords}{others}); never below the floor",
               "graphs_k": _graphs_words(rows, h, k)
                           + (f"; {h['eager_hours']:,.1f} GPU-h of it are jobs whose updates run eagerly under "
                              f"graphs ({', '.join(h['eager_why'])}), priced as eager with {k} jobs per GPU"
                              if h.get("eager_hours") else "")}[s]
        this = " [the configuration's: the table below]" if s == runs_as else ""
        out.append(f"  {words.format(k=k)}{this}: {h['hours']:,.1f} GPU-h (training {h['train_hours']:,.1f}) -- {how}")
    shown = [f"{_size_words(r.size)} batch {r.batch}: {r.step_s * 1e3:.1f} ms" + (" (profiled)" if r.profiled else "")
             + (f", device {r.device_s * 1e3:.1f} ms" if r.device_s else "")
             + "".join(f", {j} jobs {f:.2f}x" for j, f in r.factors) + f" [{r.source}]" for r in rows]
    out.append("  measured eager steps (one job; a model's slowest counts): " + ("; ".join(shown) or "none"))
    return out


def _graphs_words(rows: list[StepRow], hours: dict, k: int) -> str:
    """Where the graphs scenario's steps come from: the measured graphed steps (the share of the steps they
    price), the rest PROJECTED by the floor model."""
    floor = ("each step its GPU time by the floor model (optimizer traffic "
             f"{OPTIMIZER_BYTES_PER_PARAM} B a parameter at {BANDWIDTH_SHARE:.0%} of the memory "
             f"bandwidth + matrix products at real lengths at {MATMUL_SHARE:.0%} of the bf16 peak + "
             f"{SMALL_KERNELS_S_PER_LAYER * 1e3:.3f} ms a layer of small kernels), not measured")
    graphed = [r for r in rows if r.graphed_s and r.shape]
    if not graphed:
        return "PROJECTED: " + floor
    shown = "; ".join(f"{_size_words(r.size)} batch {r.batch}: {r.graphed_s * 1e3:.1f} ms"
                      + "".join(f", {j} jobs {f:.2f}x" for j, f in r.graphed_factors) + f" [{r.source}]"
                      for r in graphed)
    share = hours.get("measured_share", 0.0)
    words = (f"measured graphed steps for {share:.0%} of the steps ({shown}), scaled to each job's rows and "
             f"padded length by the floor model, over the measured factor of {k} graphed jobs (none measured: 1)")
    return words if hours["measured"] else f"{words}; the rest (another model, batch or K) PROJECTED: {floor}"


def _size_words(size) -> str:
    return {(12, 768, 3072): "BERT-base", (24, 1024, 4096): "BERT-large"}.get(tuple(size), f"size {tuple(size)}")
