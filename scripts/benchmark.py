"""Compute benchmark: where the time of a BELUGA run goes, measured side by side.

    .venv/bin/python scripts/benchmark.py [--device cpu|cuda] [--reps 3] [--run-dir .]
        [--profile] [--variants] [--large] [--fixed-cost] [--warmup N] [--steps N] [--jobs-per-gpu 1,2,4,8]

Prints one table (figure, value, baseline measured in the same run, ratio,
target) and writes it as JSON, ``benchmarks/benchmark-<device>.json`` (with
the throughput table ``python -m beluga plan`` reads). Every ratio is a
median over ``--reps`` repetitions measured in this run, on one torch
thread (as the pipeline's jobs), with the default model (all-MiniLM-L6-v2),
sequences of at most 48 tokens and batches of 16:

- training loop: ``beluga.train.loop.train`` vs a raw PyTorch loop over the same
  minibatches (same losses, optimizer, clipping, schedule): target >= 0.95;
- precision: fp32 vs bf16 autocast vs bf16 + fused AdamW (training), and
  prediction in fp32 / bf16;
- prediction: ``beluga.model.modeling.predict_probs`` vs a raw ``inference_mode``
  loop over the same batches: target >= 0.95;
- methods: each method's cost per epoch relative to vanilla on a real fold
  (the default suite's seen fold of IID→(IID+T)): target <= 1.5;
- a fold job: process start to the first training step, and the last training
  step to the process's exit, as a share of its wall time (the job runs as a
  subprocess, timed from outside; with the fast exit and with a full
  interpreter teardown as the baseline);
- a finished run's job-seconds (``--run-dir``, default the repository: the
  ``BELUGA_TIMING`` line every job writes at the end of its log): the share that
  is fixed per-process cost (everything but training, prediction and scoring
  in model jobs): target <= 0.15;
- ``snakemake -n`` on ``configs/paper.yaml``: seconds to plan the DAG;
- ``--plan-check`` (on request, ~1 minute a rep): ``python -m beluga plan`` calibrated here on the tiny config
  against that config's run on 2 cores right after it: planned / measured wall-clock, target 0.5..2
  (:mod:`bench.plan_check`);
- ``--projection`` (on request, ~10 minutes): the default run's projected wall time on 2 cores with the CPU's
  native precision and on an emulated AVX2 / fp32 machine (a CPU without native bf16), from a sampled run of
  each in a fresh folder: job-seconds per rule x 1/cores (:mod:`bench.projection`);
- ``--device cuda``: the training, precision, prediction and method figures on
  the first GPU, plus the model FLOP utilisation of training; there the model
  is BERT-base-sized (``--model bert-base``: ``bert-base-uncased`` from the
  Hugging Face cache, else its architecture built from its config with random
  weights and the default model's tokenizer, the same uncased vocabulary) at
  128 tokens.

The GPU training loop (issue 22). ``--profile``, ``--variants`` and ``--large``
are on by default with ``--device cuda`` and on request on the CPU (where the
GPU figures read n/a); ``--fixed-cost`` is on by default on both:

- ``--profile``: ``--profile-steps`` (20) steps of the current loop
  (``train(..., host_hygiene=False)``: tokenized per batch, pageable copies)
  and of the new one (host hygiene: tokenized once before the first epoch,
  pinned non-blocking copies, no attention mask for unpadded batches) under
  ``torch.profiler``, after ``--warmup`` steps: wall time and host time per
  step (the Python thread inside the update, no sync added), aten ops per step
  (all, and top-level: not inside another op); on CUDA the GPU busy fraction (sum of the
  kernels' time / wall time of the steps), kernels launched, copies and host
  syncs per step; the device time of every timed update and of its optimizer step
  (CUDA events, no sync per step; the host clock on the CPU: ``device_ms_per_step``,
  ``optimizer_ms_per_step``). One profile per ``--profile-data`` x ``--profile-batches``
  on the ``--profile-block``'s model and length. JSON: ``profiles`` (by model, data and
  batch) and ``profile`` (the block's own data and batch).
- ``--variants`` (block ``base``: ``--model`` at ``--max-length``, batch
  ``--batch-size``; BERT-base size at 128 tokens, batch 16 on CUDA) and
  ``--large`` (block ``large``: ``--large-model`` bert-large at 384 tokens,
  batch 3, READ's shape: i.i.d. sentences joined into full windows, trained as
  classification): the training variants side by side on the same seeded
  batches (``base``: the default suite's seen fold of IID->(IID+T), or full
  windows with ``--base-data long``), ``--warmup`` untimed then ``--steps``
  timed steps (20 and 200 on CUDA, 5 and 40 on the CPU), median of
  ``--reps``: (a) the current loop; (b) host hygiene; (c) K jobs per GPU
  (``--jobs-per-gpu 1,2,4,8``: K worker processes of this script started
  together on the device, each with host hygiene; after its warm-up each
  passes a file barrier and starts timing at one common wall-clock time;
  aggregate = K x the window's sequences / (the last end - the common start); on CUDA the
  GPU's utilisation in the timed window, nvidia-smi sampled every 200 ms);
  (d) ``compile: default`` and (e) ``compile: graphs`` (CUDA only) with host
  hygiene (``--compile-variants``; skipped with a note where ``FoldRun`` has no
  ``compile`` setting). Per variant: steps/s, sequences/s, real (non-padding)
  tokens/s, MFU = 6 x non-embedding parameters x real tokens/s / the GPU's
  dense bf16 peak (:data:`PEAK_BF16` by device name, or ``--peak-flops``),
  peak memory (``torch.cuda.max_memory_allocated``, per process; CPU: the
  process's max RSS), the drift from (a) after the timed steps (max |weight
  difference| and |loss difference| on a held-out i.i.d. batch: same start,
  same batches, same dropout seed) and the ratio to (a); compile time, and the
  graphs compiled inside the timed steps (then ``--warmup`` was too short).
  JSON: ``variants.base`` / ``variants.large``.
- ``--fixed-cost``: the fixed cost of a job (a GPU job with ``--device
  cuda``), its launch -> its first training step done, in parts timed from
  inside a fresh process: interpreter start, ``import torch``, ``import
  transformers`` + beluga, CUDA context (``torch.cuda.init()`` + the first
  allocation; n/a on the CPU), model load to the device, the first step (with
  its set-up: tokenizing the fold, the optimizer). JSON: ``fixed_cost``.

Targets, on an H100: aggregate training throughput per GPU >= 10x the current
loop at 128 tokens (the best variant against (a)), and >= 25% MFU on real
tokens. The throughput table the plan reads (``throughput.<device>``) keeps its
keys; with ``--variants`` on the fold data, ``train_seq_per_s`` is the one-job
host-hygiene figure at the table's model size and length, and
``train_seq_per_s_current_loop``, ``jobs_per_gpu`` (the best K of (c)),
``train_seq_per_s_per_gpu`` (its aggregate), ``train_loop`` and ``mfu`` are
added (the plan reads the keys it knows).

On a bare GPU machine (python3 with torch, transformers, numpy, pandas, pyarrow, pyyaml, safetensors, scipy;
no snakemake, no project venv, no network), the GPU loop's parts run from a bundle made here
(``--make-bundle DIR``: the workloads as JSON, the run settings, the tokenizer; :mod:`bench.bundle`) with
``--bundle DIR``; ``scripts/gpu_session.sh OUT_DIR`` runs them in timed stages (docs/COMPUTE.md, "The GPU
session"). ``--large`` trains READ's shape with its span loss on SQuAD questions (``--large-data qa``, the
default) or full windows as classification (``--large-data long``); ``--base-data sst2`` / ``qqp`` trains on the
paper's SST-2 sentences / QQP pairs at their real lengths. Every block's figures are written to the
JSON as soon as the block ends (and a block's variants as they end, under ``partial``).

This script parses the arguments and runs the figures in order; each figure is a module of
``scripts/bench/`` (see its ``__init__``). The worker processes (``--worker``, ``--fixed-cost-worker``)
are this script again.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench import common
from bench.dry_run import bench_dry_run
from bench.fixed_cost import bench_fixed_cost, fixed_cost_worker
from bench.fold_job import bench_fold_job
from bench.jobs import worker
from bench.methods import bench_methods
from bench.plan_check import bench_plan_check
from bench.prediction import bench_prediction
from bench.profiling import bench_profiles
from bench.projection import bench_projection
from bench.run_share import run_share
from bench.summary import machine_info, throughput_table
from bench.training import bench_training
from bench.variants import bench_variants
from bench.workloads import default_fold, make_workload

# the script's first line (after the standard library and the benchmark's modules): the interpreter has started
_T_SCRIPT = time.time()
REPO = common.REPO
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")   # no "Loading weights" bar per model load


def versions() -> dict:
    """Python and the packages the figures depend on."""
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "tokenizers", "numpy", "pandas"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


#: the workloads' data (bench.workloads.make_workload)
DATA = ("fold", "long", "sst2", "qqp", "qa")


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", "").split(",") if x]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the training / prediction figures are measured (cuda: the first GPU)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per measurement (median; >= 3)")
    ap.add_argument("--items", type=int, default=400, help="training items per timed epoch")
    ap.add_argument("--model", default=None,
                    help="model spec (default: all-MiniLM-L6-v2 on the CPU, bert-base on CUDA: bert-base-uncased "
                         "from the Hugging Face cache, else its architecture with random weights; a local folder)")
    ap.add_argument("--max-length", type=int, default=None,
                    help="tokens per sequence (default 48 on the CPU, the default run's; 128 on CUDA)")
    ap.add_argument("--batch-size", type=int, default=16, help="training batch size (default 16)")
    ap.add_argument("--run-dir", default=str(REPO), help="a finished run's working directory (its logs/)")
    ap.add_argument("--out", default=None, help="JSON output (default: benchmarks/benchmark-<device>.json)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["training", "prediction", "methods", "fold", "run",
                                                               "dry-run"])
    on_cuda = "(default: on with --device cuda)"
    ap.add_argument("--projection", action="store_true",
                    help="the default run's projected wall time with native bf16 and on an emulated AVX2 / fp32 "
                         "machine, from a sampled run of each (~10 minutes; bench/projection.py)")
    ap.add_argument("--plan-check", action="store_true",
                    help="the calibrated plan of the tiny config against its run on 2 cores, planned / measured "
                         "(~1 minute a rep; bench/plan_check.py)")
    ap.add_argument("--profile", action=argparse.BooleanOptionalAction, default=None,
                    help=f"profile the current and the new training loop {on_cuda}")
    ap.add_argument("--profile-steps", type=int, default=20, help="profiled steps per loop (default 20)")
    ap.add_argument("--profile-block", choices=["base", "large"], default="base",
                    help="the block whose model and length are profiled (default base)")
    ap.add_argument("--profile-data", type=lambda t: [x for x in t.split(",") if x], default=None,
                    help="the data profiled, one profile each (comma-separated; default: the block's data)")
    ap.add_argument("--profile-batches", type=int_list, default=None,
                    help="the batch sizes profiled, one profile each per data (default: the block's batch size)")
    ap.add_argument("--variants", action=argparse.BooleanOptionalAction, default=None,
                    help=f"the training variants side by side at --model / --max-length / --batch-size {on_cuda}")
    ap.add_argument("--large", action=argparse.BooleanOptionalAction, default=None,
                    help=f"the variants at BERT-large size, 384 tokens, batch 3 (READ's shape) {on_cuda}")
    ap.add_argument("--large-model", default="bert-large", help="the large block's model (default bert-large)")
    ap.add_argument("--large-max-length", type=int, default=384)
    ap.add_argument("--large-batch-size", type=int, default=3)
    ap.add_argument("--base-data", choices=DATA, default="fold",
                    help="the base block's data: the default fold (default), full windows of i.i.d. sentences, the "
                         "paper's SST-2 or QQP sample (real lengths)")
    ap.add_argument("--fixed-cost", action=argparse.BooleanOptionalAction, default=True,
                    help="a job's fixed cost, process start -> first step, in parts (default: on)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps per variant (default 20 CUDA, 5 CPU)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per variant (default 200 CUDA, 40 CPU)")
    ap.add_argument("--jobs-per-gpu", type=int_list, default=[1, 2, 4, 8],
                    help="K of the K-jobs-per-GPU variant (default 1,2,4,8; empty: none)")
    ap.add_argument("--compile-variants", type=lambda t: [x for x in t.split(",") if x and x != "none"],
                    default=["default", "graphs"], help="compile modes to time (default default,graphs; none)")
    ap.add_argument("--peak-flops", type=float, default=None, help="the GPU's dense bf16 peak FLOP/s (MFU)")
    ap.add_argument("--compile-warmup", type=int, default=None,
                    help="untimed steps of the compile variants (default --warmup): enough that every shape "
                         "compiles before the timed steps")
    ap.add_argument("--jobs-reps", type=int, default=None, help="rounds of the K-jobs variants (default --reps)")
    ap.add_argument("--warm-round", action="store_true",
                    help="one untimed round of the current loop before a block's timed rounds (the process's "
                         "one-time costs: library handles, the allocator, kernel choice per shape)")
    ap.add_argument("--jobs-compile", default="off", choices=["off", "default", "graphs"],
                    help="training.compile of the K-jobs-per-GPU workers (default off)")
    ap.add_argument("--large-data", choices=DATA, default="qa",
                    help="the large block's data: SQuAD questions trained with READ's span loss (default) or "
                         "full windows of i.i.d. sentences trained as classification")
    ap.add_argument("--paper-data", default=None,
                    help="--make-bundle / the sst2, qqp and qa data without a bundle: the folder holding the paper's "
                         "sst2/, qqp/ and squad/ (default ../shared/data/iid)")
    ap.add_argument("--make-bundle", metavar="DIR", default=None,
                    help="write the GPU benchmark's bundle into DIR (with this environment) and stop")
    ap.add_argument("--bundle", metavar="DIR", default=None,
                    help="run the GPU-loop figures from a bundle (--make-bundle) with nothing but python3, torch, "
                         "transformers, numpy, pandas, pyarrow, pyyaml, safetensors and scipy: the figures that "
                         "need the project's environment (training, prediction, methods, fold, run, dry-run) "
                         "are not run")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--fixed-cost-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.fixed_cost_worker:
        return fixed_cost_worker(args.fixed_cost_worker, _T_SCRIPT)
    if args.make_bundle:
        from bench.bundle import make_bundle

        common.MAX_LENGTH, common.BATCH, common.MODEL = 48, args.batch_size, "default"
        make_bundle(Path(args.make_bundle), args.max_length or 384, args.paper_data)
        return 0
    if args.bundle:
        from bench.bundle import load_bundle

        common.BUNDLE = load_bundle(args.bundle)
        args.skip = ["training", "prediction", "methods", "fold", "run", "dry-run"]
    import torch

    cuda = args.device == "cuda"
    args.model = args.model or ("bert-base" if cuda else "default")
    args.max_length = args.max_length or (128 if cuda else 48)
    for name, default in (("profile", cuda), ("variants", cuda), ("large", cuda)):
        if getattr(args, name) is None:
            setattr(args, name, default)
    args.warmup = (20 if cuda else 5) if args.warmup is None else args.warmup
    args.steps = (200 if cuda else 40) if args.steps is None else args.steps
    args.compile_warmup = args.warmup if args.compile_warmup is None else args.compile_warmup
    if set(args.profile_data or ()) - set(DATA) or any(b < 1 for b in args.profile_batches or ()):
        ap.error(f"--profile-data: one of {', '.join(DATA)} each; --profile-batches: positive")
    if args.steps < 1 or args.warmup < 0 or args.reps < 1 or any(k < 1 for k in args.jobs_per_gpu):
        ap.error("--steps, --reps and --jobs-per-gpu must be positive, --warmup not negative")
    common.MAX_LENGTH, common.BATCH, common.MODEL = args.max_length, args.batch_size, args.model
    common.PEAK_OVERRIDE = args.peak_flops
    common.DEVICE = torch.device(args.device)
    out_path = args.out or str(REPO / "benchmarks" / f"benchmark-{args.device}.json")
    common.setup_torch(args.device)
    machine = machine_info()
    print(f"machine: {machine}; measured on {args.device}")
    print(f"{'figure':<58} {'value':>10} {'unit':<10} {'baseline':>10} {'ratio':>8}  {'target':<10}")
    results = {"machine": machine, "device": args.device, "model": common.MODEL, "max_length": common.MAX_LENGTH,
               "batch_size": common.BATCH, "reps": args.reps, "when": time.strftime("%Y-%m-%d %H:%M"),
               "versions": versions(), "argv": sys.argv[1:],
               "bundle": None if common.BUNDLE is None else {k: common.BUNDLE[k] for k in ("made", "commit")},
               "complete": False}   # True once every block ended; until then "block" names the one running
    common.RESULTS, common.OUT_PATH = results, out_path
    common.save()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        task = streams = cfg = iid = None
        if common.BUNDLE is None:
            task, streams, cfg, iid = default_fold(tmp)
        if "training" not in args.skip:
            results.update(bench_training(streams, args.reps, args.items))
        if "prediction" not in args.skip:
            results.update(bench_prediction(iid, args.reps, 1000))
        if "methods" not in args.skip:
            results.update(bench_methods(streams, args.reps, args.items))
        if "fold" not in args.skip:
            results.update(bench_fold_job(tmp, cfg, args.reps))
        common.save()
        base = make_workload("base", common.MODEL, common.MAX_LENGTH, common.BATCH, args.base_data, task, streams,
                             iid, tmp, args.paper_data)
        if args.profile:
            common.RESULTS["block"] = "profile"
            block = (("base", common.MODEL, common.MAX_LENGTH, common.BATCH, args.base_data)
                     if args.profile_block == "base" else
                     ("large", args.large_model, args.large_max_length, args.large_batch_size, args.large_data))
            name, model, length, batch, data = block
            pairs = [(d, b) for d in (args.profile_data or [data]) for b in (args.profile_batches or [batch])]
            pairs.sort(key=lambda db: db != (data, batch))   # the block's own first: it is ``profile``
            wls = [make_workload(name, model, length, b, d, task, streams, iid, tmp, args.paper_data)
                   for d, b in pairs]
            results.update(bench_profiles(wls, args.warmup, args.profile_steps, args.warm_round))
            common.save()
        if args.variants:
            common.RESULTS["block"] = "variants base"
            results.setdefault("variants", {})["base"] = bench_variants(base, args, tmp)
            common.save()
        if args.large:
            common.RESULTS["block"] = "variants large"
            large = make_workload("large", args.large_model, args.large_max_length, args.large_batch_size,
                                  args.large_data, task, streams, iid, tmp, args.paper_data)
            results.setdefault("variants", {})["large"] = bench_variants(large, args, tmp)
            common.save()
        if args.fixed_cost:
            common.RESULTS["block"] = "fixed cost"
            common.free()
            results.update(bench_fixed_cost(base, args.reps, tmp))
            common.save()
    if "run" not in args.skip:
        results.update(run_share(Path(args.run_dir)))
    if "dry-run" not in args.skip:
        results.update(bench_dry_run(args.reps))
    if args.plan_check:
        common.RESULTS["block"] = "plan check"
        results.update(bench_plan_check(args.reps))
        common.save()
    if args.projection:
        common.RESULTS["block"] = "projection"
        results.update(bench_projection(Path(args.run_dir)))
        common.save()
    # the throughput table `python -m beluga plan` reads (sequences/s of the model at its length, one job)
    results["throughput"] = {args.device: throughput_table(results, machine, args.device)}
    results.pop("partial", None)   # every block ended
    results.pop("block", None)
    results["complete"] = True
    common.save()
    print(f"written: {out_path}")
    missed = [r["figure"] for r in common.ROWS if r["ok"] is False]
    if missed:
        print("targets missed: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
