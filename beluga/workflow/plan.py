"""A cost plan before a run: ``python -m beluga plan [--configfile F]``.

For every rule that trains or predicts, and every (configuration, method), the
plan counts the jobs, the sequences each job trains on (items × epochs; an
INV / DIR item is a pair: original and one perturbation) and predicts (T_test
inputs of the functionalities a fold is scored on, the i.i.d. test set;
trials: T_val of the training functionalities), and estimates core-hours
(CPU jobs) or GPU-hours (``gpus: N``) from a throughput table:

- the benchmark's JSON for this machine (``scripts/benchmark.py`` writes
  ``benchmarks/benchmark-<device>.json``), or a table given with ``--throughput``;
- otherwise the reference figures in :data:`REFERENCE` (measured by the
  benchmark on the machines named there);
- or numbers the user gives (``--train-rate`` / ``--predict-rate``: sequences
  per second of the default model at its reference length; ``--fixed-s``:
  seconds of fixed cost per job).

Throughput is measured for one model at one length and batch size (the
table's ``ref_size`` / ``ref_length`` / ``batch_size``: all-MiniLM-L6-v2 at 48
tokens on the CPU, a BERT-base-sized model at 128 tokens on a GPU, batch 16)
and scaled to other models, lengths and batch sizes by a step model
(:func:`train_s_per_seq`): a step costs a per-step overhead (a share of the
measured step, :data:`STEP_OVERHEAD_SHARE` unless the table gives
``step_overhead_share``; times the model's layers over the row's) plus, per
sequence, the measured compute times the model's per-token cost
(non-embedding parameters plus attention: :func:`relative_cost`) times the
length. READ trains at its own row where the table has one
(``throughput.<device>.read``: :data:`READ_ROW`), else it is scaled from the
reference row and flagged as an estimate. With ``gpu_jobs: K`` jobs sharing a
GPU, GPU-hours are the jobs' seconds over the GPU's speedup with K jobs (the
table's aggregate ``train_seq_per_s_per_gpu`` at ``jobs_per_gpu`` over one
job's rate: :func:`gpu_speedup`). An empty or missing ``method_cost`` keeps
the reference's factors. The output names the source (file, machine, date)
of every rate and marks the estimates. It is an estimate: real sequences are often shorter than
``max_length`` (the plan assumes full length), READ contexts longer than
``max_length`` make several windows (the plan counts one), and the selected
number of epochs is unknown before selection (the plan uses the mean of the
grid's values; batch sizes: each grid value's cost, averaged). The i.i.d.
sizes of a paper source (sst2 / qqp / squad) are the paper's official sizes
whatever the folder holds, which is not read (:func:`paper_iid_sizes`,
``--assume-paper-data``, the default: the plan is for the run on the fetched
files; one ``sizes:`` line says so); with ``--no-assume-paper-data``, and for
every other source, the files' in each task's folder (:func:`iid_sizes`).

The related analyses count when they are part of the default target
(``enabled: true``), with the jobs of the dry run (the same units, doses,
learning rates, variants and Ks, from :class:`beluga.workflow.runs.Runs`):
an inoculation job trains on its dose (suite cases as the fold jobs' items,
or challenge-set examples) for the fewest epochs its early stopping allows
(``patience + 1``, at most ``max_epochs``; the most common in the default
runs, which stopped after 6 to 13 epochs with patience 5), scores the
original dev set after every epoch and predicts T_test, the i.i.d. test set,
the unit's T_val or the challenge test part; a combinational job trains on
its 4K templated inputs for the variant's epochs and predicts the nine cells
(9 × ``n_test``) after every epoch (``per_epoch``) and at the end, at the
variant's model and ``max_length``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from beluga.analyses import combinational as comb_analysis
from beluga.analyses.inoculation import plan as inoc_analysis
from beluga.errors import ConfigError
from beluga.methods import get_algorithm
from beluga.tasks import get_task_type
from beluga.workflow import runs
from beluga.workflow.config import CONFIG_SCHEMA, checked_runs, validate_config  # noqa: F401 (CONFIG_SCHEMA: the plan's schema)

REPO = Path(__file__).resolve().parents[2]

#: Reference throughput (sequences / s of one job at its model size and length,
#: fixed seconds per job, method cost per epoch relative to vanilla), measured by
#: scripts/benchmark.py on the machines named; used when no benchmark JSON is given.
REFERENCE = {
    "cpu": {"machine": "AMD EPYC Zen 4 (AVX-512, native bf16), 1 thread per job, bf16 + fused AdamW; "
                       "measured 2026-11-23",
            "ref_size": [6, 384, 1536], "ref_length": 48, "batch_size": 16, "step_overhead_share": 0.15,
            "train_seq_per_s": 100.0, "predict_seq_per_s": 363.0, "fixed_s_per_job": 3.9,
            "method_cost": {"vanilla": 1.0, "l2": 0.98, "dropout": 1.04, "lp": 0.38, "lp_ft": 0.94, "irm": 0.90,
                            "group_dro": 0.98, "fish": 0.93}},
    "cuda": {"machine": "NVIDIA H100 80GB, BERT-base size at 128 tokens, batch 16, bf16 + fused AdamW + TF32; "
                        "measured 2026-11-23 (host-bound at this batch size)",
             "ref_size": [12, 768, 3072], "ref_length": 128, "batch_size": 16, "step_overhead_share": 0.9,
             "train_seq_per_s": 358.0, "predict_seq_per_s": 3660.0, "fixed_s_per_job": 16.9,
             "method_cost": {"vanilla": 1.0, "l2": 1.18, "dropout": 1.14, "lp": 0.51, "lp_ft": 1.24, "irm": 1.41,
                             "group_dro": 1.04, "fish": 0.93}},
}

#: Share of the reference training step that does not grow with the batch or the sequence length (kernel
#: launches, the optimizer step, host work), where the throughput table gives none: an estimate, not a
#: measurement. CUDA: the benchmark's BERT-base step at batch 16 is host-bound (model FLOP utilisation 0.4%,
#: bf16 + fused AdamW no faster than fp32: 0.97x; its 2,048 tokens are about 1e12 FLOPs, 3.5 ms at 30% of an
#: H100's dense bf16 peak, of a 44.7 ms step), so at least 0.9. CPU: one thread is compute-bound (bf16 2.5x
#: fp32), the fused AdamW step over MiniLM's 22M weights a small part. See :func:`train_s_per_seq`.
STEP_OVERHEAD_SHARE = {"cpu": 0.15, "cuda": 0.9}

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
#: batch_size, train_seq_per_s (windows of max_length tokens per second, one job, QA loss); optional
#: predict_seq_per_s, jobs_per_gpu + train_seq_per_s_per_gpu, step_overhead_share, machine
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
        out[READ_ROW] = Anchor(READ_ROW, model_size(str(row["model"])), int(row["max_length"]),
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


def gpu_speedup(anchor: Anchor, jobs: int) -> tuple[float, str, bool]:
    """(throughput of one GPU running ``jobs`` jobs at once over one job's alone, in words, measured): the
    table's aggregate per-GPU rate at its ``jobs_per_gpu`` where ``jobs`` is that number; below it, linear in
    the jobs between 1 and the measured gain; above it, the measured gain (the GPU saturated); without a
    measurement, no gain (each job takes 1 / K of the GPU's time for K times as long)."""
    if jobs <= 1:
        return 1.0, "one job per GPU", True
    if not anchor.jobs or not anchor.rate_per_gpu:
        return 1.0, f"{jobs} jobs per GPU, no gain assumed (the table has no jobs_per_gpu measurement)", False
    gain = float(anchor.rate_per_gpu) / anchor.rate
    k = int(anchor.jobs)
    if jobs == k:
        return gain, f"{jobs} jobs per GPU: {anchor.rate_per_gpu:,.1f} seq/s per GPU, measured", True
    est = gain if jobs > k else 1.0 + (gain - 1.0) * (jobs - 1) / max(1, k - 1)
    return est, (f"{jobs} jobs per GPU, estimated from the measured {k} jobs ({anchor.rate_per_gpu:,.1f} seq/s "
                 f"per GPU, {gain:.2f}x one job)"), False


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
    config = _yaml(_text(path, f"config file {path}"), f"config file {path}: field '(top level)'")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ConfigError(f"config file {path}: field '(top level)': a mapping of keys to values is needed, not a "
                          f"{_kind(config)}")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config: field {item!r}: expected KEY=VALUE")
        update_config(config, {key: _yaml(value, f"--config: field {key!r}")})
    return validate_config(config, [path])   # as while the DAG is built (rules/common.smk)


def config_path(configfile: str | None) -> Path:
    """The config file the plan reads (default: the repository's config.yaml)."""
    return Path(configfile) if configfile else REPO / "config.yaml"


def _kind(value) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value),
                                                                                           type(value).__name__)


def _text(path: Path, what: str) -> str:
    """A file's text; a file that is not UTF-8 text is one line naming it."""
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise ConfigError(f"{what}: field '(top level)': not a UTF-8 text file") from None


def _yaml(text: str, where: str):
    """YAML ``text``; a syntax error is one line (``where``, the problem and its line and column)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML ({problem}{at})") from None


def _epochs_estimate(stage: dict, grid: dict) -> float:
    eps = grid.get("epochs")
    return float(sum(eps) / len(eps)) if eps else float(stage["epochs"])


def _batches_estimate(stage: dict, grid: dict) -> list:
    """The batch sizes a fold job may be given: the grid's (selection picks one), else the stage's."""
    return list(grid.get("batch_size") or [stage["batch_size"]])


def predict_s_per_seq(anchor: Anchor, reference: Anchor, spec: str, length: int) -> float:
    """Seconds per predicted sequence: the anchor's prediction rate where it has one, else the reference's,
    scaled by :func:`relative_cost` (prediction batches are large: ``predict.batch_size``)."""
    a = anchor if anchor.predict_rate else reference
    return relative_cost(spec, length, a.size, a.length) / float(a.predict_rate)


def task_rate(rows: dict, anchor: Anchor, tcfg: dict, training: dict, grid: dict, k_jobs: int) -> dict:
    """What the plan counts for a task's training: its model, length and batch sizes, the rate of one job at
    the fold stage's batch size (:func:`train_s_per_seq`), which row it is scaled from and whether that is
    READ's own measurement, and the GPU sharing (:func:`gpu_speedup`)."""
    from beluga.workflow.dag import method_grid

    model, length = str(tcfg["model"]), int(training["max_length"])
    batch = training["suite"]["batch_size"]
    batches = sorted({*_batches_estimate(training["suite"], method_grid(grid, "vanilla")), batch})
    speedup, sharing, measured = gpu_speedup(anchor, k_jobs)
    own = anchor.name == READ_ROW
    return {"model": model, "max_length": length, "batch_size": batch, "batches": batches,
            "train_seq_per_s": 1.0 / train_s_per_seq(anchor, model, batch, length),
            "by_batch": {b: 1.0 / train_s_per_seq(anchor, model, b, length) for b in batches},
            "row": anchor.name, "type": tcfg["type"],
            "measured": own and (anchor.size, anchor.length, anchor.batch) == (model_size(model), length, batch),
            "estimated_read": tcfg["type"] == "read" and not own,
            "speedup": speedup, "sharing": sharing, "sharing_measured": measured}


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
    if iid_cfg.get("source") not in DATASET_SOURCES or suite_spec_name(task_cfg["suite"]):
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

    unit = {"sst2": "sentences", "qqp": "pairs", "squad": "questions"}
    shown = []
    for tid, tcfg in config["tasks"].items():
        got = paper_iid_sizes(tcfg)
        if got is not None:
            name, _files, train, dev = PAPER_FILES[tcfg["iid"]["source"]]
            capped = "" if got[0]["train"] == train else f", {got[0]['train']:,} of them (n_train)"
            shown.append(f"{tid}: {name} train {train:,} {unit[tcfg['iid']['source']]}{capped}, dev {dev:,} "
                         "halved into val / test")
    if not shown:
        return None
    return f"sizes: the paper's ({'; '.join(shown)}) -- staged data not read"


def task_counts(task_cfg: dict, split_cfg: dict, assume_paper_data: bool = True, batching: str = "project") -> dict:
    """Per functionality: training items and sequences (T_train), T_val and
    T_test inputs; the i.i.d. split sizes (:func:`iid_sizes`) and ``iid_used``,
    where they come from. Builds the suite and the split in memory exactly as
    the pipeline does."""
    from beluga import folds as folds_mod
    from beluga.batches import LABEL_DIR, LABEL_DIR_DRAW, build_streams
    from beluga.data import iid as iid_mod
    from beluga.suites.build import make_suite, with_fold_types
    from beluga.suites.format import functionality_table

    ttype = get_task_type(task_cfg["type"])
    paper = paper_iid_sizes(task_cfg) if assume_paper_data else None
    if paper is not None:   # the paper's sizes, whatever is staged: the i.i.d. files are not read
        parts, (sizes, used) = {}, paper
    else:
        parts = iid_mod.load_splits(task_cfg["iid"], ttype.head, set(ttype.iid_labels))
        sizes, used = iid_sizes(task_cfg["iid"], {k: len(v) for k, v in parts.items()}, assume_paper_data)
    suite, _ = make_suite(task_cfg["suite"], task_cfg["type"], parts.get("pool"))
    split = folds_mod.assign_splits(suite, tuple(split_cfg["fractions"]), int(split_cfg["seed"]))
    which = dict(zip(split["case_id"], split["split"]))
    suite = suite.assign(split=suite["case_id"].map(which))
    n_inputs = suite["inputs"].map(len)
    funcs = with_fold_types(functionality_table(suite)[["functionality", "capability", "test_type"]], suite,
                            task_cfg["suite"]["type_folds"], "the task's suite")
    per = {}
    train = suite[suite["split"] == "train"]
    streams = build_streams(ttype, None, train.drop(columns="split"), batching=batching)
    for f in funcs["functionality"]:
        per[f] = {"items": 0, "seqs": 0,
                  "val_inputs": int(n_inputs[(suite["functionality"] == f) & (suite["split"] == "val")].sum()),
                  "test_inputs": int(n_inputs[(suite["functionality"] == f) & (suite["split"] == "test")].sum())}
    for stream, items in streams.items():
        for it in items:
            per[it.env]["items"] += 1
            # (reference batching: a label-checked DIR case trains at most 3 of its inputs an epoch)
            per[it.env]["seqs"] += {"MFT": 1, "iid": 1, LABEL_DIR: min(LABEL_DIR_DRAW, len(it.inputs))}.get(stream, 2)
    return {"funcs": funcs, "per": per, "iid": sizes, "iid_used": used}


def ood_entry_size(e: dict) -> int:
    """Examples of one OOD set (``max_examples`` where set; a hub set without it counts 0: its
    size is unknown offline)."""
    from beluga.data.ood_sets import load_hutto, read_table

    if e.get("max_examples") is not None:
        return int(e["max_examples"])
    if e["source"] == "hutto":
        return len(load_hutto(e["set"], float(e.get("threshold", 0.8))))
    if e["source"] == "local":
        return len(read_table(Path(e["path"]).expanduser(), "ood file"))
    return 0


def ood_size(task_cfg: dict) -> int:
    """Examples of a task's OOD sets (:func:`ood_entry_size`)."""
    return sum(ood_entry_size(e) for e in task_cfg.get("ood") or [])


def throughput_table(path: str | None, device: str) -> tuple[dict, str]:
    """(rates, source) for ``device`` ("cpu" / "cuda"). A figure the table does not give is the built-in
    reference's (:data:`REFERENCE`); so is every method's cost where the table's ``method_cost`` is empty or
    missing (a benchmark run without the methods block), and a method it does not name. ``rates["origin"]``
    says, per figure, which of the two it comes from (the file, or the built-in reference, with its
    machine and date)."""
    candidates = [Path(path)] if path else [REPO / "benchmarks" / f"benchmark-{device}.json"]
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
            rates = {**ref, **rates, "method_cost": {**ref["method_cost"], **mc}}
            rates["origin"] = origin
            return rates, measured
        if path:
            raise ConfigError(f"throughput table {p}: field 'throughput.{device}': no figures for {device}")
    origin = {k: builtin for k in (*RATE_KEYS, "batch_size", "method_cost")}
    origin["step_overhead_share"] = ASSUMED
    return {**ref, "origin": origin}, builtin


#: where the per-step overhead share comes from when the table gives none
ASSUMED = "assumed: an ESTIMATE (plan.py STEP_OVERHEAD_SHARE), not measured"
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
        bench = json.loads(_text(p, what))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{what}: field '(top level)': not JSON ({e.msg} at line {e.lineno}, column {e.colno}); "
                          "scripts/benchmark.py writes one") from None
    if not isinstance(bench, dict):
        raise ConfigError(f"{what}: field '(top level)': a JSON object is needed (scripts/benchmark.py's "
                          f"output), not a {_kind(bench)}")
    table = bench.get("throughput", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{what}: field 'throughput': an object of devices is needed, not a {_kind(table)}")
    figures = table.get(device, {})
    if not isinstance(figures, dict):
        raise ConfigError(f"{what}: field 'throughput.{device}': an object of figures is needed, not a "
                          f"{_kind(figures)}")
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
                          f"a {_kind(rates['method_cost'])}")
    row = rates.get(READ_ROW)
    if row is not None:
        where = f"{what}: field 'throughput.{device}.{READ_ROW}"
        if not isinstance(row, dict):
            raise ConfigError(f"{where}': an object of figures is needed, not a {_kind(row)}")
        row = {k: v for k, v in row.items() if v is not None}
        for k in READ_KEYS:
            if k not in row:
                raise ConfigError(f"{where}.{k}': missing (READ's row needs {', '.join(READ_KEYS)})")
        if not isinstance(row["model"], str):
            raise ConfigError(f"{where}.model': a model name is needed, not a {_kind(row['model'])}")
        for k in (*READ_KEYS[1:], *READ_OPTIONAL):
            if k in row and not _positive(row[k]):
                raise ConfigError(f"{where}.{k}': {row[k]!r} is not a positive number")
        try:
            model_size(row["model"])
        except ConfigError:
            raise ConfigError(f"{where}.model': {row['model']!r}: unknown size (a name containing 'base' / "
                              "'large')") from None
        rates[READ_ROW] = row
    return rates


def inoculation_epochs(inoc: dict) -> int:
    """Epochs the plan counts for an inoculation job: the fewest its early stopping allows."""
    return min(int(inoc["max_epochs"]), int(inoc["patience"]) + 1)


def plan(config: dict, rates: dict, configfiles=(), assume_paper_data: bool = True,
         iid_used: dict | None = None, rates_used: dict | None = None) -> list[Line]:
    """One Line per (rule, configuration, method) over all tasks (and per combinational variant).
    The runs come from :class:`beluga.workflow.runs.Runs`, as the DAG's: its checks stop the plan
    as they stop a dry run (``configfiles``: the config file(s) their line names). The i.i.d. sizes:
    :func:`paper_iid_sizes` / :func:`iid_sizes` (``assume_paper_data``); ``iid_used``, a dict, receives
    task -> where they come from; ``rates_used``, a dict, task -> the training rate counted (:func:`task_rate`).

    A job's seconds: the table's fixed seconds + training sequences x :func:`train_s_per_seq` (its model,
    length and batch; the method's cost per epoch) + predicted sequences x the prediction rate scaled by
    :func:`relative_cost`. GPU-hours: the seconds of every job x ``gpus`` / :func:`gpu_speedup` (``gpu_jobs``
    jobs sharing a GPU: the GPU's aggregate rate); core-hours: x ``job_threads``."""
    from beluga import folds as folds_mod
    from beluga.folds import configuration
    from beluga.workflow.dag import grid_points, method_grid

    the_runs = checked_runs(config, configfiles)   # its errors: the dry run's one line
    inoc, comb = config["inoculation"], config["combinational"]
    lines: dict[tuple, Line] = {}
    n_seeds = len(the_runs.seeds)   # every job the plan counts trains (or predicts a model) once per seed
    device = "cuda" if int(config["gpus"]) > 0 else "cpu"
    rows = anchors(rates, device)
    k_jobs = int(config.get("gpu_jobs", 1)) if device == "cuda" else 1
    per_job = max(1, int(config["gpus"]) or int(config["job_threads"]))

    def add(rule, conf, method, task, train_seqs, predict_seqs, cost, factor=1.0):
        """One job per training seed: ``cost`` = (seconds per training sequence, per predicted sequence, the
        GPU's speedup with ``gpu_jobs`` jobs); ``factor``: the method's training cost per sequence relative to
        vanilla."""
        train_s, predict_s, speedup = cost
        line = lines.setdefault((rule, conf, method), Line(rule, conf, method))
        line.jobs += n_seeds
        line.train_seqs += n_seeds * train_seqs
        line.predict_seqs += n_seeds * predict_seqs
        secs = rates["fixed_s_per_job"] + train_seqs * train_s * factor + predict_seqs * predict_s
        hours = n_seeds * secs * per_job / speedup / 3600
        line.hours += hours
        line.task_hours[task] = line.task_hours.get(task, 0.0) + hours
        line.task_jobs[task] = line.task_jobs.get(task, 0) + n_seeds

    scope = config["predict"]["scope"]
    method_cost = rates.get("method_cost", {})
    keep = bool(config["keep_models"])
    for tid, tcfg in config["tasks"].items():
        training = runs.task_training(config, tcfg)
        counts = task_counts(tcfg, config["split"], assume_paper_data, training.get("batching", "project"))
        if iid_used is not None:
            iid_used[tid] = counts["iid_used"]
        per, funcs, iid = counts["per"], counts["funcs"], counts["iid"]
        all_funcs = list(funcs["functionality"])
        iid_stage, suite_stage = training["iid"], training["suite"]
        length = int(training["max_length"])
        grid = runs.task_selection(config, tcfg)
        anchor = rows[READ_ROW] if tcfg["type"] == "read" and READ_ROW in rows else rows["reference"]
        predict_s = predict_s_per_seq(anchor, rows["reference"], str(tcfg["model"]), length)
        speedup = gpu_speedup(anchor, k_jobs)[0]

        def cost(batches, _a=anchor, _m=str(tcfg["model"]), _n=length, _p=predict_s, _g=speedup):
            """(seconds per training sequence at these batch sizes, per predicted sequence, the GPU's speedup)."""
            return mean_train_s_per_seq(_a, _m, batches, _n), _p, _g

        if rates_used is not None:
            rates_used[tid] = task_rate(rows, anchor, tcfg, training, grid, k_jobs)
        policy = grid["policy"]
        test_all = sum(p["test_inputs"] for p in per.values())
        add("train_iid", "iid", "vanilla", tid, iid["train"] * iid_stage["epochs"], 0, cost([iid_stage["batch_size"]]))
        n_ood = ood_size(tcfg)
        add("predict", "iid", "vanilla", tid, 0, test_all + iid["test"] + n_ood, cost([]))
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
                fin_cost = cost(_batches_estimate(suite_stage, sel_grid if grid_points(sel_grid) else {}))
                epochs = float(get_algorithm(method).final_hparams({**hparams[method], "epochs": epochs})["epochs"])
                for f in folds:
                    train_f = folds_mod.training_functionalities(f, all_funcs)
                    items = sum(per[x]["seqs"] for x in train_f) + (mix_n if mix else 0)
                    scored = all_funcs if scope == "all" else f["held_out"]
                    pred = sum(per[x]["test_inputs"] for x in scored) + iid["test"]
                    if f["partition"] == "seen" or config["predict"]["ood_models"] == "all":
                        pred += n_ood
                    if keep:   # a start method's model (LP for LP-FT) is predicted only when it is a method
                        add("finetune_model", conf, method, tid, items * epochs, 0, fin_cost, factor)
                        if method in config["methods"]:
                            add("predict", conf, method, tid, 0, pred, fin_cost)
                    else:   # a model another method starts from is also written (rule finetune_keep)
                        add("finetune_keep" if method in starts else "finetune", conf, method, tid,
                            items * epochs, pred, fin_cost, factor)
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
                            add("trial", conf, method, tid, items * ep, val,
                                cost([point.get("batch_size", suite_stage["batch_size"])]), factor)
        if inoc["enabled"] and tid in the_runs.inoc_units:
            ep = inoculation_epochs(inoc)
            for unit, spec in the_runs.inoc_units[tid].items():
                if spec.get("challenge") is not None:   # a challenge set: its training part, examples
                    n_set = ood_entry_size(the_runs.ood_sets[tid][spec["challenge"]])
                    n_test = int(round(n_set * float(inoc["challenge_test_fraction"])))
                    n_train, seqs_per_case, extra = n_set - n_test, 1.0, n_test
                else:   # suite cases: their sequences as the fold jobs train them; the unit's T_val
                    funcs_u = spec["functionalities"]
                    n_train = inoc_analysis.train_cases_per_unit(the_runs.func_tables[tid], funcs_u,
                                                                 config["split"]["fractions"])
                    seqs_per_case = sum(per[x]["seqs"] for x in funcs_u) / max(1, n_train)
                    extra = sum(per[x]["val_inputs"] for x in funcs_u)
                for dose in the_runs.inoc_doses(tid, unit):
                    cases = inoc_analysis.dose_size(dose, n_train)
                    for _lr in the_runs.inoc_lrs:
                        add("inoculate", "iid_to_t", "vanilla", tid, cases * seqs_per_case * ep,
                            iid["val"] * ep + test_all + iid["test"] + extra, cost([suite_stage["batch_size"]]))
    if comb["enabled"]:
        n_cells = len(comb_analysis.CELLS) * int(comb["n_test"])   # every test input in its three cells
        ref = rows["reference"]
        for name, v in the_runs.comb_variants.items():
            model, n = str(v["model"]), int(v["max_length"])
            cost = (train_s_per_seq(ref, model, v["training"].get("batch_size"), n),
                    predict_s_per_seq(ref, ref, model, n), gpu_speedup(ref, k_jobs)[0])
            ep = float(v["training"]["epochs"])
            evaluations = 1 + (math.ceil(ep) if comb["per_epoch"] else 0)
            for k in comb["ks"]:
                add("combinational_train", name, "vanilla", "combinational",
                    len(comb_analysis.TRAIN_CELLS) * int(k) * ep, evaluations * n_cells, cost)
    return list(lines.values())


def n_parameters(spec: str) -> int:
    """Parameters of a BERT-like model of ``spec``'s size (a 30,522-token vocabulary and 512 positions)."""
    layers, h, i = model_size(spec)
    return layers * (4 * h * h + 2 * h * i + 9 * h + i) + (30522 + 512 + 2) * h


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
    batch = "batch size not given: no batch scaling" if ref.batch is None else f"batch {ref.batch}"
    out = ["rates (and where each comes from):",
           f"  training, one job: {ref.rate:,.1f} seq/s, {_size_name(ref.size)} at {ref.length} tokens, {batch} "
           f"-- {src('train_seq_per_s')}",
           f"  prediction: {ref.predict_rate:,.1f} seq/s at the same size and length -- "
           f"{src('predict_seq_per_s')}",
           f"  fixed seconds per job: {rates['fixed_s_per_job']:,.1f} -- {src('fixed_s_per_job')}",
           "  method cost per epoch vs vanilla: " + ", ".join(f"{m} {v:.2f}" for m, v in
                                                            rates.get("method_cost", {}).items() if m != "vanilla")
           + f" -- {src('method_cost')}",
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
        else:
            how = "scaled from the reference row by the step model"
        out.append(f"  {tid}: {u['model']} at {u['max_length']} tokens: {by} seq/s per job -- {how}")
    if device == "cuda":
        k = int(config.get("gpu_jobs", 1))
        u = next(iter(rates_used.values()), None)
        sharing = u["sharing"] if u else f"{k} job(s) per GPU"
        best = [a for a in rows.values() if a.jobs and a.rate_per_gpu]
        if best:
            a = best[0]
            gain = a.rate_per_gpu / a.rate
            speed = u["speedup"] if u else 1.0
            util = (f"utilisation: {speed / gain:.0%} of the best measured per-GPU training throughput "
                    f"({a.jobs} jobs per GPU: {a.rate_per_gpu:,.1f} seq/s, {gain:.2f}x one job's)")
        else:
            util = ("utilisation: not measured (the table has no jobs_per_gpu / train_seq_per_s_per_gpu: "
                    "scripts/benchmark.py --variants on a GPU)")
        mfu = rates.get("mfu")
        if mfu is not None:
            util += f"; model FLOP utilisation of the measured step {mfu:.1%}"
        out.append(f"jobs per GPU: {k} (gpu_jobs: {k}, gpus: {config['gpus']} per job); {sharing}; GPU-hours = "
                   f"job-seconds x gpus / the GPU's speedup with {k} job(s) ({u['speedup'] if u else 1.0:.2f}); "
                   + util)
    else:
        out.append(f"CPU jobs: job_threads {config['job_threads']} core(s) each; core-hours = job-seconds x "
                   "job_threads")
    out += ["measurements:"] + [f"  {label} {text}" for text, label in labels.items()]
    return out


def render(lines: list[Line], device: str, source: str, config_name: str, seeds: list[int] | None = None,
           iid_used: dict | None = None, notes: list[str] = ()) -> str:
    unit = "GPU-h" if device == "cuda" else "core-h"
    total = sum(ln.hours for ln in lines)
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
                   f"{ln.train_seqs / ln.jobs:>14,.0f} {ln.predict_seqs / ln.jobs:>16,.0f} {ln.hours:>10,.2f} "
                   f"{(ln.hours / total if total else 0):>6.1%}")
    by_rule: dict[str, float] = {}
    by_task: dict[str, float] = {}
    for ln in lines:
        by_rule[ln.rule] = by_rule.get(ln.rule, 0.0) + ln.hours
        for t, h in ln.task_hours.items():
            by_task[t] = by_task.get(t, 0.0) + h
    out += ["-" * len(head), "per rule: " + ", ".join(f"{r} {h:,.1f} {unit}" for r, h in
                                                      sorted(by_rule.items(), key=lambda kv: -kv[1])),
            "per task: " + ", ".join(f"{t} {h:,.1f} {unit}" for t, h in by_task.items()),
            f"total: {total:,.1f} {unit}"]
    if rows:
        top = rows[0]
        out.append(f"largest part: {top.rule} {top.configuration}/{top.method} ({top.hours / total:.0%})")
    return "\n".join(out) + "\n"


def plan_command(configfile: str | None, throughput: str | None = None, train_rate: float | None = None,
                 predict_rate: float | None = None, fixed_s: float | None = None, as_json: str | None = None,
                 concurrent_jobs: int | None = None, overrides: list[str] = (), assume_paper_data: bool = True) -> str:
    """The plan's text. ``concurrent_jobs``: training jobs running at once
    (the disk estimate; default: the Slurm profile's 100 jobs on GPUs, the
    machine's cores / job_threads on CPUs); ``assume_paper_data``: :func:`iid_sizes`."""

    path = config_path(configfile)
    config = load_config(configfile, overrides)
    device = "cuda" if int(config.get("gpus", 0)) > 0 else "cpu"
    if concurrent_jobs is None:
        concurrent_jobs = 100 if device == "cuda" else max(1, (os.cpu_count() or 1) // int(config["job_threads"]))
    if concurrent_jobs < 1:
        raise ConfigError(f"--concurrent-jobs: must be positive, got {concurrent_jobs}")
    rates, source = throughput_table(throughput, device)
    rates = dict(rates, origin=dict(rates.get("origin", {})))
    given_here = "given on the command line"
    given = {"train_seq_per_s": train_rate, "predict_seq_per_s": predict_rate, "fixed_s_per_job": fixed_s}
    for k, v in given.items():
        if v is not None:
            if not v > 0 and not (k == "fixed_s_per_job" and v == 0):
                raise ConfigError(f"--{k}: must be positive, got {v}")
            rates[k] = v
            source = "numbers given on the command line" if k != "fixed_s_per_job" else source
            rates.setdefault("origin", {})[k] = given_here
    iid_used: dict[str, str] = {}
    rates_used: dict[str, dict] = {}
    lines = plan(config, rates, [path], assume_paper_data, iid_used, rates_used)
    disk = disk_plan(config, lines, concurrent_jobs)
    sizes = paper_sizes_line(config) if assume_paper_data else None
    notes = ([sizes] if sizes else []) + rate_lines(config, rates, rates_used, device)
    text = render(lines, device, source, configfile or "config.yaml", config.get("seeds"), iid_used, notes) \
        + render_disk(disk)
    if as_json:
        from beluga.io import write_json

        write_json({"device": device, "source": source, "rates": rates, "disk": disk, "iid_sizes": iid_used,
                    "task_rates": rates_used, "notes": notes,
                    "lines": [dict(ln.__dict__) for ln in lines]}, as_json)
    return text


