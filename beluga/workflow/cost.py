"""The cost model of the plan (:mod:`beluga.workflow.plan`): the seconds a job
spends per sequence it trains on and predicts, from which the plan's
core-hours (CPU jobs) or GPU-hours (``gpus: N``) follow. Light: no torch.

The rates come from a throughput table (:func:`throughput_table`):

- the benchmark's JSON for this machine (``scripts/benchmark.py`` writes
  ``benchmarks/benchmark-<device>.json``), or a table given with ``--throughput``;
- otherwise the reference figures in :data:`REFERENCE` (measured by the
  benchmark on the machines named there);
- or numbers the user gives (``--train-rate`` / ``--predict-rate``: sequences
  per second of the default model at its reference length; ``--fixed-s``:
  seconds of fixed cost per job);
- or, for a CPU plan given none of these, this machine's calibration (:mod:`beluga.workflow.calibrate`:
  :func:`calibrated_rates`, a row of the configured model at its length and batch), unless the plan is told not to
  calibrate: then the reference's, each wall-clock a range up to :data:`NO_BF16_FACTOR` times it.

Throughput is measured for one model at one length and batch size (the
table's ``ref_size`` / ``ref_length`` / ``batch_size``: all-MiniLM-L6-v2 at 48
tokens on the CPU, a BERT-base-sized model at 128 tokens on a GPU, batch 16)
and scaled to other models, lengths and batch sizes by a step model
(:func:`train_s_per_seq`): a step costs a per-step overhead (a share of the
measured step, :data:`STEP_OVERHEAD_SHARE` unless the table gives
``step_overhead_share``; times the model's layers over the row's) plus, per
sequence, the measured compute times the model's per-token cost
(non-embedding parameters plus attention: :func:`relative_cost`; sizes from
:func:`model_size`) times the length. READ trains at its own row where the
table has one (``throughput.<device>.read``: :data:`READ_ROW`), else it is
scaled from the reference row and flagged as an estimate. A GPU plan
(``gpus: N``) takes from the table only the prediction rate, the fixed
seconds and the methods' costs: it prices training by optimizer steps
(:mod:`beluga.workflow.steps`: the GPU session's measured steps, the floor
model, K jobs per GPU). An empty or
missing ``method_cost`` keeps the reference's factors. The plan's rate lines
(:func:`rate_lines`) name the source (file, machine, date) of every rate and
mark the estimates.

The i.i.d. sizes of a paper source (sst2 / qqp / squad) are the paper's
official sizes whatever the folder holds, which is not read
(:func:`paper_iid_sizes`, ``--assume-paper-data``, the default: the plan is
for the run on the fetched files; one ``sizes:`` line says so:
:func:`paper_sizes_line`); with ``--no-assume-paper-data``, and for every
other source, the files' in each task's folder (:func:`iid_sizes`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from beluga.core.errors import ConfigError

#: where scripts/benchmark.py writes its throughput tables (``benchmark-<device>.json``)
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

#: Reference throughput (sequences / s of one job at its model size and length,
#: fixed seconds per job, method cost per epoch relative to vanilla), measured by
#: scripts/benchmark.py on the machines named; used when no benchmark JSON is given. A GPU plan takes only the
#: prediction rate, the fixed seconds and the methods' costs of the CUDA row.
REFERENCE = {
    "cpu": {"machine": "AMD EPYC Zen 4 (AVX-512, native bf16), 1 thread per job, bf16 + fused AdamW; "
                       "measured 2026-11-23",
            "ref_size": [6, 384, 1536], "ref_length": 48, "batch_size": 16, "step_overhead_share": 0.15,
            "train_seq_per_s": 100.0, "predict_seq_per_s": 363.0, "fixed_s_per_job": 3.9,
            "method_cost": {"vanilla": 1.0, "l2": 0.98, "dropout": 1.04, "lp": 0.38, "lp_ft": 0.94, "irm": 0.90,
                            "group_dro": 0.98, "fish": 0.93}},
    # CUDA: the prediction rate, a job's fixed seconds and the methods' costs (a GPU plan prices training by
    # optimizer steps: beluga/workflow/steps.py, from the GPU session's files)
    "cuda": {"machine": "NVIDIA H100 80GB, BERT-base size at 128 tokens, batch 16, bf16 + fused AdamW + TF32; "
                        "measured 2026-11-23 (host-bound at this batch size; the versions were not recorded)",
             "ref_size": [12, 768, 3072], "ref_length": 128, "batch_size": 16,
             "train_seq_per_s": 358.0, "predict_seq_per_s": 3660.0, "fixed_s_per_job": 16.9,
             "method_cost": {"vanilla": 1.0, "l2": 1.18, "dropout": 1.14, "lp": 0.51, "lp_ft": 1.24, "irm": 1.41,
                             "group_dro": 1.04, "fish": 0.93}},
}

#: Cost per epoch relative to vanilla of methods the reference figures were not measured for: ESTIMATES, not
#: measurements (a throughput table that measures them replaces them: scripts/benchmark.py times every public
#: method). ``lora``: its forward pass is vanilla's (the base weights plus the rank-r adapters, a few percent more
#: FLOPs at r = 8); its backward pass computes the activations' gradients but no gradient of the frozen base
#: weights, about half of full fine-tuning's backward (which costs about two forward passes), and AdamW updates
#: the adapters and the head only: (1 + 1) / (1 + 2) = 0.67 of a compute-bound step (CPU). The CUDA reference
#: step is host-bound (beluga/workflow/steps.py: the measured eager step), so the saved FLOPs save no time there: 1.0.
ESTIMATED_METHOD_COST = {"cpu": {"lora": 0.67}, "cuda": {"lora": 1.0}}
ESTIMATED = "an ESTIMATE (cost.py ESTIMATED_METHOD_COST), not measured"

#: Share of the reference training step of a CPU plan that does not grow with the batch or the sequence length
#: (the optimizer step, host work), where the throughput table gives none: an estimate, not a measurement. One
#: thread is compute-bound (bf16 2.5x fp32), the fused AdamW step over MiniLM's 22M weights a small part. See
#: :func:`train_s_per_seq`. (A GPU plan prices optimizer steps: :mod:`beluga.workflow.steps`.)
STEP_OVERHEAD_SHARE = {"cpu": 0.15}

#: (layers, hidden, intermediate) of known model names; local folders are read from config.json
KNOWN_SIZES = {
    "default": (6, 384, 1536), "tiny-random": (2, 32, 64),
    "bert-base-uncased": (12, 768, 3072), "bert-base-cased": (12, 768, 3072), "roberta-base": (12, 768, 3072),
    "bert-large-uncased": (24, 1024, 4096), "bert-large-uncased-whole-word-masking": (24, 1024, 4096),
    "roberta-large": (24, 1024, 4096), "distilbert-base-uncased": (6, 768, 3072),
}
REF_SIZE, REF_LENGTH = KNOWN_SIZES["default"], 48


def model_size(spec: str) -> tuple[int, int, int]:
    """(layers, hidden, intermediate) of a model spec."""
    if spec in KNOWN_SIZES:
        return KNOWN_SIZES[spec]
    cfg = Path(spec).expanduser() / "config.json"
    if cfg.exists():
        c = json.loads(cfg.read_text())
        layers = c.get("num_hidden_layers", c.get("n_layers"))
        hidden = c.get("hidden_size", c.get("dim"))
        inter = c.get("intermediate_size", c.get("hidden_dim", 4 * (hidden or 0)))
        if layers and hidden:
            return int(layers), int(hidden), int(inter)
    name = spec.lower()
    for key, size in (("large", KNOWN_SIZES["bert-large-uncased"]), ("base", KNOWN_SIZES["bert-base-uncased"])):
        if key in name:
            return size
    raise ConfigError(f"model {spec!r}: field 'model': unknown size for the cost plan (a local folder with "
                      "config.json, or a name containing 'base' / 'large'); give --train-rate / --predict-rate "
                      "measured for it")


def relative_cost(spec: str, length: int, ref_size=REF_SIZE, ref_length: int = REF_LENGTH) -> float:
    """Cost of one sequence of ``length`` tokens through ``spec`` relative to
    the throughput table's reference model and length (default: MiniLM, 48
    tokens): (per-token matmul FLOPs + attention) × length."""
    def per_seq(size, n):
        layers, h, i = size
        return layers * n * (4 * h * h + 2 * h * i + 2 * n * h)

    return per_seq(model_size(spec), length) / per_seq(tuple(ref_size), int(ref_length))


#: the throughput table's row measured on READ's own shape (``throughput.<device>.read``): model, max_length,
#: batch_size, train_seq_per_s (questions per second, one job, QA loss: the training examples the plan counts,
#: each of one or more windows of max_length tokens, so the row's rate includes the extra windows); optional size
#: ([layers, hidden, intermediate]; else from the model's name), predict_seq_per_s, jobs_per_gpu +
#: train_seq_per_s_per_gpu, step_overhead_share, machine
READ_ROW = "read"


@dataclass(frozen=True)
class Anchor:
    """A measured training rate the plan scales from: ``rate`` sequences / s of one job of a model of
    ``size`` at ``length`` tokens and batch ``batch`` (None: unknown, no batch scaling), the share of its
    step that is per-step overhead; the aggregate rate of ``jobs`` jobs on one GPU where measured."""
    name: str                     # "reference" / "read"
    size: tuple
    length: int
    batch: int | None
    rate: float
    overhead_share: float
    predict_rate: float | None = None
    jobs: int | None = None
    rate_per_gpu: float | None = None


def anchors(rates: dict, device: str = "cuda") -> dict[str, Anchor]:
    """The reference row of a throughput table and, where it has one, READ's own row (:data:`READ_ROW`)."""
    share = rates.get("step_overhead_share", STEP_OVERHEAD_SHARE.get(device, 0.0))
    batch = rates.get("batch_size")
    out = {"reference": Anchor("reference", tuple(rates.get("ref_size", REF_SIZE)),
                               int(rates.get("ref_length", REF_LENGTH)), None if batch is None else int(batch),
                               float(rates["train_seq_per_s"]), float(share), float(rates["predict_seq_per_s"]),
                               rates.get("jobs_per_gpu"), rates.get("train_seq_per_s_per_gpu"))}
    row = rates.get(READ_ROW)
    if row:
        size = tuple(row["size"]) if "size" in row else model_size(str(row["model"]))
        out[READ_ROW] = Anchor(READ_ROW, size, int(row["max_length"]),
                               int(row["batch_size"]), float(row["train_seq_per_s"]),
                               float(row.get("step_overhead_share", share)), row.get("predict_seq_per_s"),
                               row.get("jobs_per_gpu"), row.get("train_seq_per_s_per_gpu"))
    return out


def train_s_per_seq(anchor: Anchor, spec: str, batch: float | None, length: int) -> float:
    """Seconds one job spends per training sequence of ``spec`` at ``length`` tokens in batches of ``batch``:
    the step model ``step(B) = o + B * c`` calibrated on the anchor's measured step (``t = B_a / rate``):
    a per-step overhead ``o = share * t`` (kernel launches, optimizer, host work: the same for any batch and
    length, times the model's layers over the anchor's) and a per-sequence compute ``c = (1 - share) * t / B_a``
    times :func:`relative_cost` (per-token FLOPs and attention times the length, over the anchor's). At the
    anchor's model, length and batch it is the measured ``1 / rate``; a smaller batch pays the overhead over
    fewer sequences. Without a batch (a table that gives none, or a job whose batch is unknown) the
    per-sequence rate is scaled by the cost alone."""
    rel = relative_cost(spec, length, anchor.size, anchor.length)
    if anchor.batch is None or batch is None:
        return rel / anchor.rate
    step = anchor.batch / anchor.rate
    layers = model_size(spec)[0] / anchor.size[0]
    return (anchor.overhead_share * step * layers + batch * (1 - anchor.overhead_share) * step / anchor.batch
            * rel) / batch


def mean_train_s_per_seq(anchor: Anchor, spec: str, batches, length: int) -> float:
    """:func:`train_s_per_seq` averaged over the batch sizes a job may be given (a grid's, before selection)."""
    batches = list(batches) or [None]
    return sum(train_s_per_seq(anchor, spec, b, length) for b in batches) / len(batches)


def value_kind(value) -> str:
    """A YAML / JSON value's kind in words (list, string, number, boolean, ...)."""
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value),
                                                                                           type(value).__name__)


def file_text(path: Path, what: str) -> str:
    """A file's text; a file that is not UTF-8 text is one line naming it."""
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise ConfigError(f"{what}: field '(top level)': not a UTF-8 text file") from None


def batches_estimate(stage: dict, grid: dict) -> list:
    """The batch sizes a fold job may be given: the grid's (selection picks one), else the stage's."""
    return list(grid.get("batch_size") or [stage["batch_size"]])


def predict_s_per_seq(anchor: Anchor, reference: Anchor, spec: str, length: int) -> float:
    """Seconds per predicted sequence: the anchor's prediction rate where it has one, else the reference's,
    scaled by :func:`relative_cost` (prediction batches are large: ``predict.batch_size``)."""
    a = anchor if anchor.predict_rate else reference
    return relative_cost(spec, length, a.size, a.length) / float(a.predict_rate)


def task_rate(rows: dict, anchor: Anchor, tcfg: dict, training: dict, grid: dict) -> dict:
    """What a CPU plan counts for a task's training: its model, length and batch sizes, the rate of one job at
    the fold stage's batch size (:func:`train_s_per_seq`), which row it is scaled from and whether that is
    READ's own measurement."""
    from beluga.workflow.dag import method_grid

    model, length = str(tcfg["model"]), int(training["max_length"])
    batch = training["suite"]["batch_size"]
    batches = sorted({*batches_estimate(training["suite"], method_grid(grid, "vanilla")), batch})
    own = anchor.name == READ_ROW
    return {"model": model, "max_length": length, "batch_size": batch, "batches": batches,
            "train_seq_per_s": 1.0 / train_s_per_seq(anchor, model, batch, length),
            "by_batch": {b: 1.0 / train_s_per_seq(anchor, model, b, length) for b in batches},
            "row": anchor.name, "type": tcfg["type"],
            "measured": own and (anchor.size, anchor.length, anchor.batch) == (model_size(model), length, batch),
            "estimated_read": tcfg["type"] == "read" and not own}


def iid_sizes(iid_cfg: dict, found: dict[str, int], assume_paper_data: bool = True) -> tuple[dict[str, int], str]:
    """(train / val / test sizes the plan counts, where they come from in words) of a task's ``iid``
    block, given the ``found`` sizes of the files in its folder. With ``assume_paper_data``, a paper
    source (sst2 / qqp / squad) whose folder holds a fallback instead of the paper's files (the staged
    offline copy: the Quora release, the SQuAD dev set alone) counts the paper's official row counts
    (:func:`beluga.data.paper_data.paper_sizes`, each capped by ``n_train`` / ``n_val`` / ``n_test``):
    the run the plan is for reads the fetched files. Otherwise, and for every other source, the files
    found."""
    from beluga.data import iid as iid_mod
    from beluga.data.paper_data import paper_data_name, paper_sizes

    desc = iid_mod.describe_source(iid_cfg)
    shown = " / ".join(f"{found[s]:,}" for s in iid_mod.IID_SPLITS)
    if desc["fallback"] is None or not assume_paper_data:
        why = "" if desc["fallback"] is None else " -- not the paper's data (--assume-paper-data counts the paper's)"
        return ({s: found[s] for s in iid_mod.IID_SPLITS},
                f"{shown} train / val / test, the files found: {desc['origin']}{why}")
    sizes = {s: n if iid_cfg.get(f"n_{s}") is None else min(n, int(iid_cfg[f"n_{s}"]))
             for s, n in paper_sizes(desc["source"]).items()}
    halves = " (its dev set is halved by article: val / test a few questions off)" if desc["source"] == "squad" else ""
    return sizes, (f"{' / '.join(f'{sizes[s]:,}' for s in iid_mod.IID_SPLITS)} train / val / test, the paper's "
                   f"{paper_data_name(desc['source'])}{halves}, assumed (--assume-paper-data): the folder holds "
                   f"a fallback, {desc['origin']}: {shown}")


def paper_iid_sizes(task_cfg: dict) -> tuple[dict[str, int], str] | None:
    """(the paper's train / val / test sizes, where they come from in words) of a task whose ``iid`` block
    declares a paper source (sst2 / qqp / squad) and whose suite does not draw on the i.i.d. pool, without
    reading the task's data folder: the official row counts (:data:`beluga.data.paper_data.PAPER_FILES`, the
    one table of them; each capped by ``n_train`` / ``n_val`` / ``n_test``), whatever is staged there. None
    for any other task (its files are read: :func:`iid_sizes`)."""
    from beluga.data.paper_data import DATASET_SOURCES, paper_data_name, paper_sizes
    from beluga.suites.build import suite_spec_name

    iid_cfg = task_cfg["iid"]
    if iid_cfg.get("source") not in DATASET_SOURCES or suite_spec_name(task_cfg.get("suite") or {}):
        return None
    source = iid_cfg["source"]
    sizes = {s: n if iid_cfg.get(f"n_{s}") is None else min(n, int(iid_cfg[f"n_{s}"]))
             for s, n in paper_sizes(source).items()}
    halves = " (its dev set halved by article: val / test a few questions off)" if source == "squad" else ""
    return sizes, (f"{' / '.join(f'{sizes[s]:,}' for s in ('train', 'val', 'test'))} train / val / test, the "
                   f"paper's {paper_data_name(source)}{halves}; the data folder is not read "
                   "(--no-assume-paper-data counts its files)")


def paper_sizes_line(config: dict) -> str | None:
    """One line naming the paper's sizes the plan counts for the tasks of :func:`paper_iid_sizes`
    (None when no task has them)."""
    from beluga.data.paper_data import PAPER_FILES

    unit = {"sst2": "sentences", "qqp": "pairs", "squad": "questions", "cola": "sentences"}   # else pairs (GLUE)
    shown = []
    for tid, tcfg in config["tasks"].items():
        got = paper_iid_sizes(tcfg)
        if got is not None:
            name, _files, train, dev = PAPER_FILES[tcfg["iid"]["source"]]
            capped = "" if got[0]["train"] == train else f", {got[0]['train']:,} of them (n_train)"
            what = unit.get(tcfg["iid"]["source"], "pairs")
            shown.append(f"{tid}: {name} train {train:,} {what}{capped}, dev {dev:,} "
                         "halved into val / test")
    if not shown:
        return None
    return f"sizes: the paper's ({'; '.join(shown)}) -- staged data not read"


def throughput_table(path: str | None, device: str) -> tuple[dict, str]:
    """(rates, source) for ``device`` ("cpu" / "cuda"). A figure the table does not give is the built-in
    reference's (:data:`REFERENCE`); so is every method's cost where the table's ``method_cost`` is empty or
    missing (a benchmark run without the methods block), and a method it does not name (the plan takes a method
    neither names from :data:`ESTIMATED_METHOD_COST`). ``rates["origin"]``
    says, per figure, which of the two it comes from (the file, or the built-in reference, with its
    machine and date)."""
    candidates = [Path(path)] if path else [BENCHMARKS / f"benchmark-{device}.json"]
    ref = REFERENCE[device]
    builtin = f"built-in reference ({ref['machine']})"
    for p in candidates:
        if not p.exists():
            if path:
                raise ConfigError(f"throughput table {p}: field 'path': file does not exist")
            continue
        rates = _bench_rates(p, device)
        if rates:
            measured = f"{p} ({rates.get('machine', device)})"
            origin = {k: measured if k in rates else builtin for k in (*RATE_KEYS, "batch_size")}
            origin["step_overhead_share"] = measured if "step_overhead_share" in rates else ASSUMED
            if rates.get(READ_ROW):
                row = rates[READ_ROW]
                origin[READ_ROW] = f"{p} ({row.get('machine', rates.get('machine', device))})"
            mc = rates.pop("method_cost", None) or {}
            origin["method_cost"] = (measured if set(mc) >= set(ref["method_cost"]) else
                                     f"{measured} for {', '.join(sorted(mc))}; the rest {builtin}" if mc else
                                     f"{builtin} (the table's method_cost is empty)")
            # READ's row is the file's or none (the built-in one was measured on another machine)
            rates = {**{k: v for k, v in ref.items() if k != READ_ROW}, **rates,
                     "method_cost": {**ref["method_cost"], **mc}}
            rates["origin"] = origin
            return rates, measured
        if path:
            raise ConfigError(f"throughput table {p}: field 'throughput.{device}': no figures for {device}")
    origin = {k: builtin for k in (*RATE_KEYS, "batch_size", "method_cost")}
    origin["step_overhead_share"] = ASSUMED
    if ref.get(READ_ROW):
        origin[READ_ROW] = f"built-in reference ({ref[READ_ROW]['machine']})"
    return {**ref, "origin": origin}, builtin


def calibrated_rates(figures: dict, size, length: int, batch: int, origin: str) -> dict:
    """A CPU throughput table from this machine's calibration (:mod:`beluga.workflow.calibrate`): its measured
    training and prediction rates of a model of ``size`` at ``length`` tokens and batch ``batch``, and its fixed
    seconds per job, each from ``origin`` (the calibration in words); the per-step overhead share and the methods'
    costs are the built-in reference's (not measured by the calibration)."""
    ref = REFERENCE["cpu"]
    rates = {**ref, "ref_size": list(size), "ref_length": int(length), "batch_size": int(batch),
             **{k: float(figures[k]) for k in RATE_KEYS}}
    rates["origin"] = {**{k: origin for k in (*RATE_KEYS, "batch_size")}, "step_overhead_share": ASSUMED,
                       "method_cost": f"built-in reference ({ref['machine']})"}
    return rates


#: How much longer than the CPU reference's (:data:`REFERENCE`: a CPU with native bf16) a plan's times may be on a
#: CPU without native bf16, where the plan is not calibrated (``--no-calibrate``, or a model it cannot load): the
#: reference's times x 1 on a CPU like it, up to x this factor on one that computes in fp32 (AVX2 only), an upper
#: bound from two measurements (docs/COMPUTE.md): on the reference machine, training in fp32 ran 2.53x slower than in
#: bf16 autocast with fused AdamW (scripts/benchmark.py, all-MiniLM-L6-v2), and a real 2-core AVX2-only EPYC ran the
#: fold jobs 1.6x slower than this machine emulating AVX2 (``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2``);
#: 2.53 x 1.6 = 4.0 (a job's fixed cost grows less: the whole run less than that)
NO_BF16_FACTOR = 4.0


#: where the per-step overhead share comes from when the table gives none
ASSUMED = "assumed: an ESTIMATE (cost.py STEP_OVERHEAD_SHARE), not measured"
#: the figures of a throughput table the plan reads (sequences / s must be positive, fixed seconds not negative)
RATE_KEYS = ("train_seq_per_s", "predict_seq_per_s", "fixed_s_per_job")
#: the keys of READ's row (:data:`READ_ROW`): required, and optional positive numbers
READ_KEYS = ("model", "max_length", "batch_size", "train_seq_per_s")
READ_OPTIONAL = ("predict_seq_per_s", "jobs_per_gpu", "train_seq_per_s_per_gpu")


def _number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _positive(v) -> bool:
    return _number(v) and v > 0


def _bench_rates(p: Path, device: str) -> dict:
    """The figures for ``device`` of a benchmark JSON (``{"throughput": {device: {...}}}``) that are set;
    anything else is one line naming the file and the field."""
    what = f"throughput table {p}"
    try:
        bench = json.loads(file_text(p, what))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{what}: field '(top level)': not JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                          "scripts/benchmark.py writes one") from None
    if not isinstance(bench, dict):
        raise ConfigError(f"{what}: field '(top level)': a JSON object is needed (scripts/benchmark.py's "
                          f"output), not a {value_kind(bench)}")
    table = bench.get("throughput", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{what}: field 'throughput': an object of devices is needed, not a {value_kind(table)}")
    figures = table.get(device, {})
    if not isinstance(figures, dict):
        raise ConfigError(f"{what}: field 'throughput.{device}': an object of figures is needed, not a "
                          f"{value_kind(figures)}")
    rates = {k: v for k, v in figures.items() if v is not None}
    for k in RATE_KEYS:
        v = rates.get(k)
        if v is None:
            continue
        if not (_positive(v) or (k == "fixed_s_per_job" and _number(v) and v == 0)):
            raise ConfigError(f"{what}: field 'throughput.{device}.{k}': {v!r} is not a "
                              f"{'non-negative' if k == 'fixed_s_per_job' else 'positive'} number")
    for k in ("batch_size", "jobs_per_gpu", "train_seq_per_s_per_gpu"):
        if k in rates and not _positive(rates[k]):
            raise ConfigError(f"{what}: field 'throughput.{device}.{k}': {rates[k]!r} is not a positive number")
    share = rates.get("step_overhead_share")
    if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1):
        raise ConfigError(f"{what}: field 'throughput.{device}.step_overhead_share': {share!r} is not a number "
                          "in [0, 1)")
    if "method_cost" in rates and not isinstance(rates["method_cost"], dict):
        raise ConfigError(f"{what}: field 'throughput.{device}.method_cost': an object of methods is needed, not "
                          f"a {value_kind(rates['method_cost'])}")
    row = rates.get(READ_ROW)
    if row is not None:
        where = f"{what}: field 'throughput.{device}.{READ_ROW}"
        if not isinstance(row, dict):
            raise ConfigError(f"{where}': an object of figures is needed, not a {value_kind(row)}")
        row = {k: v for k, v in row.items() if v is not None}
        for k in READ_KEYS:
            if k not in row:
                raise ConfigError(f"{where}.{k}': missing (READ's row needs {', '.join(READ_KEYS)})")
        if not isinstance(row["model"], str):
            raise ConfigError(f"{where}.model': a model name is needed, not a {value_kind(row['model'])}")
        for k in (*READ_KEYS[1:], *READ_OPTIONAL):
            if k in row and not _positive(row[k]):
                raise ConfigError(f"{where}.{k}': {row[k]!r} is not a positive number")
        if "size" in row:   # (layers, hidden, intermediate), as the benchmark writes it
            if not (isinstance(row["size"], list) and len(row["size"]) == 3
                    and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in row["size"])):
                raise ConfigError(f"{where}.size': {row['size']!r} is not [layers, hidden, intermediate] "
                                  "(positive integers)")
        else:
            try:
                model_size(row["model"])
            except ConfigError:
                raise ConfigError(f"{where}.model': {row['model']!r}: unknown size (a name containing 'base' / "
                                  "'large', or give size: [layers, hidden, intermediate])") from None
        rates[READ_ROW] = row
    return rates


def _size_name(size) -> str:
    names = {v: k for k, v in reversed(KNOWN_SIZES.items())}
    names.update({KNOWN_SIZES["default"]: "MiniLM-L6", KNOWN_SIZES["bert-base-uncased"]: "BERT-base",
                  KNOWN_SIZES["bert-large-uncased"]: "BERT-large"})
    return f"{names.get(tuple(size), f'a model of size {tuple(size)}')} size"


def rate_lines(config: dict, rates: dict, rates_used: dict, device: str) -> list[str]:
    """The plan's account of its rates: which measurement (file, machine, date) each comes from, which are
    estimates, the rate each task trains at and the GPU sharing (jobs per GPU, utilisation) it assumes."""
    labels: dict[str, str] = {}

    def src(key: str, default: str = "given on the command line") -> str:
        """A figure's source as a short label ([1], [2], ...: named once, at the end)."""
        text = rates.get("origin", {}).get(key, default)
        return text if text.startswith("assumed") else labels.setdefault(text, f"[{len(labels) + 1}]")

    rows = anchors(rates, device)
    ref = rows["reference"]
    estimated = [m for m in ESTIMATED_METHOD_COST[device]   # the estimates of the methods the run trains
                 if m not in rates.get("method_cost", {}) and m in config.get("methods", ())]
    batch = "batch size not given: no batch scaling" if ref.batch is None else f"batch {ref.batch}"
    at = " at the same size and length" if device == "cpu" else f", {_size_name(ref.size)} at {ref.length} tokens"
    common = [f"  prediction: {ref.predict_rate:,.1f} seq/s{at} -- {src('predict_seq_per_s')}",
              f"  fixed seconds per job: {rates['fixed_s_per_job']:,.1f} -- {src('fixed_s_per_job')}",
              "  method cost per epoch vs vanilla: " + ", ".join(f"{m} {v:.2f}" for m, v in
                                                               rates.get("method_cost", {}).items() if m != "vanilla")
              + f" -- {src('method_cost')}"
              + "".join(f"; {m} {ESTIMATED_METHOD_COST[device][m]:.2f} -- {ESTIMATED}" for m in estimated)]
    if device == "cuda":   # training: optimizer steps (beluga/workflow/steps.py: the plan's GPU scenarios)
        return ["rates (and where each comes from):", *common,
                "  training: optimizer steps x the step of the scenario the configuration runs (GPU scenarios "
                "below; a throughput table's training rates are not used by a GPU plan)",
                "measurements:", *[f"  {label} {text}" for text, label in labels.items()]]
    out = ["rates (and where each comes from):",
           f"  training, one job: {ref.rate:,.1f} seq/s, {_size_name(ref.size)} at {ref.length} tokens, {batch} "
           f"-- {src('train_seq_per_s')}", *common,
           f"  step model: step = overhead + batch x per-sequence compute; overhead {ref.overhead_share:.0%} of the "
           f"measured step (x the model's layers over the row's), compute x per-token FLOPs and attention x length "
           f"(relative_cost) -- overhead share: {src('step_overhead_share', 'assumed')}"]
    if READ_ROW in rows:
        r = rows[READ_ROW]
        out.append(f"  READ's row: {r.rate:,.1f} seq/s, {_size_name(r.size)} at {r.length} tokens, batch {r.batch} "
                   f"-- {src(READ_ROW)} (throughput.{device}.{READ_ROW})")
    for tid, u in rates_used.items():
        by = ", ".join(f"batch {b}: {v:,.1f}" for b, v in u["by_batch"].items())
        if u["measured"]:
            how = f"measured (throughput.{device}.{READ_ROW})"
        elif u["row"] == READ_ROW:
            how = f"scaled from READ's row by the step model (throughput.{device}.{READ_ROW})"
        elif u["estimated_read"]:
            how = (f"ESTIMATED: scaled from the reference row by the step model (the table has no "
                   f"throughput.{device}.{READ_ROW} row measured on READ's shape)")
        elif (model_size(u["model"]), u["max_length"], set(u["by_batch"])) == (ref.size, ref.length, {ref.batch}):
            how = "the training row's own model, length and batch: its rate"
        else:
            how = "scaled from the reference row by the step model"
        out.append(f"  {tid}: {u['model']} at {u['max_length']} tokens: {by} seq/s per job -- {how}")
    out.append(f"CPU jobs: job_threads {config['job_threads']} core(s) each; core time = job-seconds x job_threads")
    out += ["measurements:"] + [f"  {label} {text}" for text, label in labels.items()]
    return out
