"""Compute benchmark: where the time of a BELUGA run goes, measured side by side.

    .venv/bin/python scripts/benchmark.py [--device cpu|cuda] [--reps 3] [--run-dir .]
        [--profile] [--variants] [--large] [--fixed-cost] [--warmup N] [--steps N] [--jobs-per-gpu 1,2,4,8]

Prints one table (figure, value, baseline measured in the same run, ratio,
target) and writes it as JSON, ``benchmarks/benchmark-<device>.json`` (with
the throughput table ``python -m beluga plan`` reads). Every ratio is a
median over ``--reps`` repetitions measured in this run, on one torch
thread (as the pipeline's jobs), with the default model (all-MiniLM-L6-v2),
sequences of at most 48 tokens and batches of 16:

- training loop: ``beluga.training.train`` vs a raw PyTorch loop over the same
  minibatches (same losses, optimizer, clipping, schedule): target >= 0.95;
- precision: fp32 vs bf16 autocast vs bf16 + fused AdamW (training), and
  prediction in fp32 / bf16;
- prediction: ``beluga.modeling.predict_probs`` vs a raw ``inference_mode``
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
  syncs per step. JSON: ``profile``.
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
  aggregate = K x the window's sequences / (the last end - the common start));
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

On an H100, the GPU loop's parts only (the throughput table gets the base
block's figures):

    .venv/bin/python scripts/benchmark.py --device cuda --skip training prediction methods fold run dry-run

Compiling (``graphs``: a graph per shape bucket) and eight BERT-large jobs
take minutes; where one command must stay short, split it: ``--no-large
--compile-variants none``, then ``--no-profile --no-variants --no-fixed-cost
--large --out ...``, then ``--no-profile --no-fixed-cost --jobs-per-gpu ''
--out ...`` (the compile variants).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_T_SCRIPT = time.time()   # the script's first line (after the standard library): the interpreter has started
REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve()
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")   # no "Loading weights" bar per model load

MAX_LENGTH, BATCH, MODEL = 48, 16, "default"   # --max-length, --batch-size, --model (CUDA: 128, 16, bert-base)
ROWS: list[dict] = []
DEVICE = None   # torch.device, set by main()


def prec(name: str, fused: bool):
    """A Precision on the benchmark's device (TF32 with bf16 on CUDA, as the pipeline's jobs)."""
    from beluga.precision import Precision

    return Precision(name, DEVICE.type, fused, DEVICE.type == "cuda" and name != "fp32")


def sync():
    import torch

    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def row(figure: str, value: float, unit: str = "", baseline: float | None = None, target: str = "",
        ok: bool | None = None, note: str = "") -> None:
    ratio = None if baseline in (None, 0) else value / baseline
    ROWS.append({"figure": figure, "value": value, "unit": unit, "baseline": baseline, "ratio": ratio,
                 "target": target, "ok": ok, "note": note})
    b = "" if baseline is None else f"{baseline:10.3f}"
    r = "" if ratio is None else f"{ratio:6.2f}x"
    flag = "" if ok is None else ("ok" if ok else "MISSED")
    print(f"{figure:<58} {value:10.3f} {unit:<10} {b:>10} {r:>8}  {target:<10} {flag}", flush=True)


def median(xs):
    return float(statistics.median(xs))


# --------------------------------------------------------------------------- data: the default suite and a fold
def default_fold(tmp: Path):
    """The embedded default's suite and i.i.d. data (built in ``tmp``), and the
    training streams of the seen fold of IID→(IID+T) with the default's mix."""
    import pandas as pd

    from beluga.steps import data
    from beluga.suites.build import split_cases
    from beluga.tasks import get_task_type
    from beluga.training import build_streams
    from beluga.workflow.plan import load_config

    cfg = load_config(str(REPO / "config.yaml"))   # validated, the schema's defaults filled
    task_cfg = cfg["tasks"]["sent"]
    iid = {k: str(tmp / f"{k}.parquet") for k in ("train", "val", "test", "pool")}
    data.prepare_iid(iid=task_cfg["iid"], task_type="sent", outputs=iid)
    data.build_suite(suite=task_cfg["suite"], task_type="sent", pool=iid["pool"], out_suite=str(tmp / "suite.parquet"))
    data.split_suite(suite=str(tmp / "suite.parquet"), task_type="sent", fractions=cfg["split"]["fractions"],
                     seed=cfg["split"]["seed"], out_split=str(tmp / "split.parquet"),
                     out_summary=str(tmp / "summary.tsv"))
    ttype = get_task_type("sent")
    suite_train = split_cases(str(tmp / "suite.parquet"), str(tmp / "split.parquet"), "sent", "train")
    mix = pd.read_parquet(iid["train"])
    n_mix = cfg["training"]["iid_in_mix"]
    if n_mix is not None and len(mix) > n_mix:
        mix = mix.sample(n=int(n_mix), random_state=1).reset_index(drop=True)
    return ttype, build_streams(ttype, mix, suite_train), cfg, iid


def bench_run(method: str, precision: str):
    """The FoldRun (beluga/settings.py) of a timed epoch: the default config's
    settings, the method's defaults, lr 5e-5, one epoch, no checkpoints."""
    import dataclasses

    from beluga.methods import method_hparams
    from beluga.settings import fold_run
    from beluga.workflow.plan import load_config

    cfg = load_config(str(REPO / "config.yaml"))
    run = fold_run(cfg, cfg["training"], task="bench", task_type="sent", configuration="iid_to_iid_plus_t",
                   method=method, partition="seen", fold="all", held_out=(), functionalities=(), model=MODEL,
                   start_label=MODEL, hparams={"lr": 5e-5, "batch_size": BATCH, "epochs": 1, **method_hparams(method)},
                   checkpoint_dir=None)
    return dataclasses.replace(run, seed=1, precision=precision, threads=1, checkpoint_every_s=0.0,
                               max_length=MAX_LENGTH, iid_in_mix=None)


#: BERT sizes by name (``--model`` / ``--large-model``): the hub model when it is in the Hugging Face cache, else
#: its architecture built from its config (random weights; the default model's tokenizer: BERT's uncased vocabulary)
SIZED = {"bert-base": ("bert-base-uncased", {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                                              "intermediate_size": 3072}),
         "bert-large": ("bert-large-uncased", {"hidden_size": 1024, "num_hidden_layers": 24,
                                                "num_attention_heads": 16, "intermediate_size": 4096})}
MODEL_SOURCE: dict[str, str] = {}   # spec -> where its weights came from (printed, in the JSON)


def load_bench_model(spec: str, overrides: dict | None = None):
    """(model, tokenizer) of a model spec, on the CPU (see :data:`SIZED`)."""
    from beluga.errors import ModelError
    from beluga.modeling import load_model

    if spec not in SIZED:
        MODEL_SOURCE.setdefault(spec, spec)
        return load_model(spec, 2, config_overrides=overrides or None)
    hub, size = SIZED[spec]
    try:
        out = load_model(hub, 2, config_overrides=overrides or None)
        MODEL_SOURCE.setdefault(spec, f"{hub} (Hugging Face cache)")
        return out
    except ModelError:
        pass
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig

    from beluga.modeling import default_model_path

    tok = AutoTokenizer.from_pretrained(default_model_path())
    config = BertConfig(vocab_size=tok.vocab_size, max_position_embeddings=512, **size,
                        **{"num_labels": 2, **(overrides or {})})
    MODEL_SOURCE.setdefault(spec, f"{hub} architecture from its config, random weights ({hub} is not in the cache)")
    return AutoModelForSequenceClassification.from_config(config), tok


def fresh_model(spec: str | None = None, **overrides):
    """The model ``spec`` (default ``--model``) on the benchmark's device, from the same start every time."""
    from beluga.modeling import set_seed

    set_seed(1)
    model, tok = load_bench_model(spec or MODEL, overrides)
    return model.to(DEVICE), tok


def non_embedding_params(model) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if "embeddings" not in n)


#: dense bf16 peak FLOP/s by device name (the first key the name contains); MFU's denominator
PEAK_BF16 = (("H100 PCIe", 756e12), ("H100 NVL", 835e12), ("H100", 989e12), ("H200", 989e12), ("A100", 312e12),
             ("L40S", 362e12), ("A10G", 70e12), ("L4", 121e12))
PEAK_OVERRIDE: float | None = None   # --peak-flops


def peak_flops() -> tuple[float | None, str]:
    """(dense bf16 peak FLOP/s or None, device name) of the benchmark's device (None on the CPU)."""
    if DEVICE.type != "cuda":
        return None, "CPU"
    import torch

    name = torch.cuda.get_device_name(DEVICE)
    if PEAK_OVERRIDE:
        return PEAK_OVERRIDE, name
    return next((v for k, v in PEAK_BF16 if k in name), None), name


# --------------------------------------------------------------------------- training loop and precision
def raw_loop(model, tokenizer, batches, precision, lr=5e-5):
    """The reference: a plain PyTorch loop over the same minibatches (same loss
    code, AdamW, clipping at 1.0, linear decay), nothing else."""
    import torch

    from beluga.training import LossFn

    loss_fn = LossFn(tokenizer, MAX_LENGTH, precision=precision)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, fused=precision.fused_optimizer or None)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / len(batches)))
    model.train()
    sync()
    t = time.perf_counter()
    for b in batches:
        loss = loss_fn(model, b).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    sync()
    return time.perf_counter() - t


def subset(streams, n_items: int) -> dict:
    """The first items of every stream, ``n_items`` in all (proportionally)."""
    total = sum(len(v) for v in streams.values())
    return {k: v[:max(1, round(len(v) * n_items / total))] for k, v in streams.items()}


def bench_training(streams, reps: int, n_items: int) -> dict:
    import numpy as np

    from beluga.precision import resolve
    from beluga.training import epoch_batches, train

    small = subset(streams, n_items)
    items = sum(len(v) for v in small.values())
    fp32, bf16, bf16f = prec("fp32", False), prec("bf16", False), prec("bf16", True)
    times = {k: [] for k in ("raw fp32", "loop fp32", "raw bf16", "raw bf16+fused", "loop bf16+fused")}
    for _ in range(reps):
        for name, p in (("fp32", fp32), ("bf16+fused", bf16f)):
            model, tok = fresh_model()
            batches = epoch_batches(small, BATCH, np.random.default_rng([1, 0]))  # train()'s epoch-0 batches
            times[f"raw {name}"].append(raw_loop(model, tok, batches, p))
            model, tok = fresh_model()
            summary = train(model, tok, small, bench_run("vanilla", p.name), precision=resolve(p.name, DEVICE))
            times[f"loop {name}"].append(summary["wall_time_s"])
        model, tok = fresh_model()
        batches = epoch_batches(small, BATCH, np.random.default_rng([1, 0]))
        times["raw bf16"].append(raw_loop(model, tok, batches, bf16))
    rate = {k: items / median(v) for k, v in times.items()}
    ratio = [r / lp for r, lp in zip(times["raw bf16+fused"], times["loop bf16+fused"])]
    row("training loop / raw PyTorch loop (bf16+fused)", median(ratio), "x", target=">= 0.95",
        ok=median(ratio) >= 0.95, note="speed of beluga.training.train relative to the raw loop")
    ratio32 = [r / lp for r, lp in zip(times["raw fp32"], times["loop fp32"])]
    row("training loop / raw PyTorch loop (fp32)", median(ratio32), "x", target=">= 0.95",
        ok=median(ratio32) >= 0.95)
    row("training items/s fp32 (raw loop)", rate["raw fp32"], "items/s")
    row("training items/s bf16 autocast", rate["raw bf16"], "items/s", baseline=rate["raw fp32"])
    row("training items/s bf16 + fused AdamW", rate["raw bf16+fused"], "items/s", baseline=rate["raw fp32"])
    row("training items/s, the loop as the pipeline runs it", rate["loop bf16+fused"], "items/s",
        baseline=rate["loop fp32"])
    seqs = sum(len(v) * (1 if k in ("MFT", "iid") else 2) for k, v in small.items())
    out = {"train_items_per_s": rate, "train_items": items, "train_seq_per_s": rate["loop bf16+fused"] * seqs / items}
    if DEVICE.type == "cuda":
        model, tok = fresh_model()
        n_params = non_embedding_params(model)
        texts = [t for v in small.values() for it in v for t in it.inputs[:2]]
        tokens = sum(len(x) for x in tok(texts, truncation=True, max_length=MAX_LENGTH)["input_ids"])
        achieved = 6 * n_params * tokens / (items / rate["loop bf16+fused"])
        peak, name = peak_flops()
        if peak:
            out["mfu"] = achieved / peak
            row("training model FLOP utilisation (CUDA, bf16)", out["mfu"], "share",
                note=f"6 x {n_params / 1e6:.1f}M non-embedding params x real tokens / {name} dense bf16 peak")
    return out


def bench_prediction(iid, reps: int, n: int) -> dict:
    import pandas as pd
    import torch

    from beluga.modeling import predict_probs

    texts = list(pd.read_parquet(iid["pool"])["text"][:n])
    model, tok = fresh_model()
    model.eval()
    fp32, bf16 = prec("fp32", True), prec("bf16", True)

    def raw(prec):
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        sync()
        t = time.perf_counter()
        with torch.inference_mode():
            for s in range(0, len(order), 64):
                enc = tok([texts[i] for i in order[s:s + 64]], padding=True, truncation=True, max_length=MAX_LENGTH,
                          return_tensors="pt")
                with prec.autocast():
                    logits = model(**{k: v.to(DEVICE) for k, v in enc.items()}).logits
                torch.softmax(logits.float(), -1).cpu()
        sync()
        return time.perf_counter() - t

    def ours(prec):
        sync()
        t = time.perf_counter()
        predict_probs(model, tok, texts, None, 64, MAX_LENGTH, precision=prec)
        sync()
        return time.perf_counter() - t

    times = {k: [] for k in ("raw fp32", "ours fp32", "raw bf16", "ours bf16")}
    for _ in range(reps):
        for name, p in (("fp32", fp32), ("bf16", bf16)):
            times[f"raw {name}"].append(raw(p))
            times[f"ours {name}"].append(ours(p))
    ratio = [r / o for r, o in zip(times["raw bf16"], times["ours bf16"])]
    row("prediction / raw inference_mode loop (bf16)", median(ratio), "x", target=">= 0.95", ok=median(ratio) >= 0.95)
    rate = {k: len(texts) / median(v) for k, v in times.items()}
    row("prediction inputs/s fp32", rate["ours fp32"], "inputs/s")
    row("prediction inputs/s bf16", rate["ours bf16"], "inputs/s", baseline=rate["ours fp32"])
    p32 = predict_probs(model, tok, texts, None, 64, MAX_LENGTH, precision=fp32)
    p16 = predict_probs(model, tok, texts, None, 64, MAX_LENGTH, precision=bf16)
    same = float((p32.argmax(1) == p16.argmax(1)).mean())
    row("bf16 vs fp32: same predicted class", same, "share", note=f"max |dp| {abs(p32 - p16).max():.4f}")
    return {"predict_inputs_per_s": rate, "predict_seq_per_s": rate["ours bf16"], "bf16_same_class": same}


def bench_methods(streams, reps: int, n_items: int) -> dict:
    from beluga.methods import ALGORITHMS, get_algorithm, method_hparams
    from beluga.precision import resolve
    from beluga.training import train

    small = subset(streams, n_items)
    p = prec("bf16", True)
    per_epoch = {}
    # lp_ft's cost is full fine-tuning (its start model, an LP model, is another job)
    for method in ["vanilla"] + sorted(m for m in ALGORITHMS if m != "vanilla"):
        ts = []
        for _ in range(reps):
            model, tok = fresh_model(**get_algorithm(method).config_overrides(method_hparams(method)))
            ts.append(train(model, tok, small, bench_run(method, p.name),
                           precision=resolve(p.name, DEVICE))["wall_time_s"])
        per_epoch[method] = median(ts)
    for method, t in per_epoch.items():
        rel = t / per_epoch["vanilla"]
        row(f"method cost per epoch: {method}", rel, "x vanilla", target="<= 1.5", ok=rel <= 1.5,
            note=f"{t:.1f} s per epoch of {sum(len(v) for v in small.values())} items")
    return {"method_cost": {m: t / per_epoch["vanilla"] for m, t in per_epoch.items()}}


# --------------------------------------------------------------------------- a fold job as a process
FOLD_JOB = """
import json, os, sys, time
from beluga.clock import process_start_time
from beluga.steps import train
args = json.loads(sys.argv[1])
parts = train.finetune(**args)
rec = json.load(open(args["out_run"]))
print(json.dumps({"process_start": process_start_time(), "timing": rec["timing"], "parts": parts,
                  "end": time.time()}), flush=True)
if os.environ.get("BELUGA_FULL_EXIT") != "1":
    os._exit(0)
"""


def bench_fold_job(tmp: Path, cfg: dict, reps: int) -> dict:
    """A seen fold of IID+T (no IID model needed) of the default, as one process."""
    from beluga.methods import method_hparams
    from beluga.settings import fold_run
    from beluga.workflow.dag import task_folds

    task_cfg = cfg["tasks"]["sent"]
    funcs, _, seen = task_folds(task_cfg["suite"], "sent", ["seen"])
    training = cfg["training"]
    run = fold_run(cfg, training, task="sent", task_type="sent", configuration="iid_plus_t", method="vanilla",
                   partition="seen", fold="all", held_out=tuple(seen["held_out"]),
                   functionalities=tuple(funcs["functionality"]), model="default", start_label="default",
                   hparams={**training["suite"], **method_hparams("vanilla")}, checkpoint_dir=None)
    args = {"run": run.to_dict(), "suite": str(tmp / "suite.parquet"), "split": str(tmp / "split.parquet"),
            "iid_train": str(tmp / "train.parquet"), "iid_test": str(tmp / "test.parquet"), "start": None,
            "selected": None, "batch_size": cfg["predict"]["batch_size"], "scope": cfg["predict"]["scope"],
            "out_predictions": str(tmp / "p.parquet"), "out_run": str(tmp / "p.json"),
            "out_outcomes": str(tmp / "o.parquet")}
    out = {}
    for mode in ("fast exit", "full exit"):
        shares, walls, startups, tails = [], [], [], []
        for _ in range(reps):
            path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
            env = dict(os.environ, PYTHONPATH=path, BELUGA_FULL_EXIT="1" if mode == "full exit" else "0")
            t0 = time.time()
            res = subprocess.run([sys.executable, "-c", FOLD_JOB, json.dumps(args)], capture_output=True, text=True,
                                 env=env, cwd=tmp)
            t_exit = time.time()
            if res.returncode != 0:
                raise RuntimeError(f"fold job failed: {res.stderr[-2000:]}")
            rec = json.loads(res.stdout.strip().splitlines()[-1])
            # from the launch: /proc's process start is relative to a boot time in whole seconds (up to 1 s early)
            start = t0
            first = rec["process_start"] + rec["timing"]["train_start_at_s"]
            last = first + rec["parts"]["train"]
            wall = t_exit - start
            science = sum(rec["parts"].get(k, 0.0) for k in ("train", "predict", "score"))
            walls.append(wall)
            startups.append(first - start)
            tails.append(t_exit - last)
            shares.append((wall - science) / wall)
        out[mode] = {"wall_s": median(walls), "start_to_first_step_s": median(startups),
                     "last_step_to_exit_s": median(tails), "fixed_share": median(shares)}
    f, b = out["fast exit"], out["full exit"]
    row("fold job: process start -> first training step", f["start_to_first_step_s"], "s")
    row("fold job: last training step -> exit (predict, score, write)", f["last_step_to_exit_s"], "s",
        baseline=b["last_step_to_exit_s"], note="baseline: the interpreter's full teardown")
    row("fold job: wall", f["wall_s"], "s", baseline=b["wall_s"])
    row("fold job: fixed cost share of its wall", f["fixed_share"], "share", baseline=b["fixed_share"],
        note="fixed = wall - (training + prediction + scoring)")
    return {"fold_job": out}


# --------------------------------------------------------------------------- a finished run's records
def run_share(run_dir: Path) -> dict:
    """Job-seconds of the run whose logs are under ``run_dir/logs`` (the last
    run of each job), split into science and fixed per-process cost."""
    from beluga.workflow.smk import SCIENCE_PARTS, TIMING_TAG

    jobs = []
    for log in sorted((run_dir / "logs").rglob("*.log")):
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith(TIMING_TAG)]
        if lines:
            jobs.append(json.loads(lines[-1][len(TIMING_TAG):]))
    if not jobs:
        print(f"(no finished run under {run_dir}/logs: run the README's first command, then this benchmark)")
        return {}
    total = fixed = 0.0
    per_rule: dict[str, list[float]] = {}
    for j in jobs:
        wall = j["call_end"] - j["process_start"]
        sci = sum(j["science"].get(k, 0.0) for k in SCIENCE_PARTS) if j["science"] else j["call_end"] - j["call_start"]
        total += wall
        fixed += wall - sci
        r = per_rule.setdefault(j["rule"], [0, 0.0, 0.0])
        r[0] += 1
        r[1] += wall
        r[2] += wall - sci
    share = fixed / total
    row(f"run {run_dir.name or '.'}: job-seconds ({len(jobs)} jobs)", total, "s")
    row("run: fixed per-process share of job-seconds", share, "share", target="<= 0.15", ok=share <= 0.15)
    for rule, (n, w, f) in sorted(per_rule.items(), key=lambda kv: -kv[1][1]):
        if w / total >= 0.01:
            row(f"  {rule}: {n} jobs, fixed share", f / w, "share", note=f"{w:.0f} job-s")
    return {"run": {"jobs": len(jobs), "job_seconds": total, "fixed_seconds": fixed, "fixed_share": share,
                    "per_rule": {k: {"jobs": v[0], "job_seconds": v[1], "fixed_seconds": v[2]}
                                 for k, v in per_rule.items()}}}


def online_env() -> dict:
    """The environment without HF_HUB_OFFLINE: offline, the paper DAG stops on its hub models that are not
    cached (their fetch could not succeed); a dry run opens no connection."""
    return {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}


def bench_dry_run(reps: int) -> dict:
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    ts = []
    # in the repository (the config's data paths are relative to it); a dry run writes no results
    for _ in range(reps):
        t = time.perf_counter()
        res = subprocess.run([snakemake, "-n", "-q", "-s", str(REPO / "Snakefile"), "-d", str(REPO),
                              "--configfile", str(REPO / "configs" / "paper.yaml")], capture_output=True,
                             text=True, cwd=REPO, env=online_env())
        ts.append(time.perf_counter() - t)
        if res.returncode != 0:
            row("snakemake -n configs/paper.yaml", float("nan"), "s", note="failed: " +
                " ".join((res.stderr or res.stdout).split()[-30:]))
            return {}
    row("snakemake -n configs/paper.yaml", median(ts), "s")
    return {"paper_dry_run_s": median(ts)}


# --------------------------------------------------------------------------- the GPU training loop (issue 22)
WORKER_TAG = "BENCH_WORKER "


def setup_torch(device: str) -> None:
    """As the pipeline's jobs (beluga.modeling.configure_torch): one intra-op thread, deterministic
    algorithms on the CPU only."""
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(device == "cpu", warn_only=True)


def free() -> None:
    import gc

    import torch

    gc.collect()
    if DEVICE.type == "cuda":
        torch.cuda.empty_cache()


def peak_mem_mib() -> float:
    """CUDA: the peak of allocated memory since the last reset; CPU: the process's max RSS so far (VmHWM:
    getrusage's ru_maxrss would carry the parent's over exec)."""
    import torch

    if DEVICE.type == "cuda":
        return torch.cuda.max_memory_allocated(DEVICE) / 2**20
    with contextlib.suppress(OSError, StopIteration, ValueError):
        with open("/proc/self/status") as fh:
            return int(next(ln.split()[1] for ln in fh if ln.startswith("VmHWM:"))) / 1024   # kB
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compile_field() -> bool:
    """Whether this checkout's FoldRun has the ``compile`` setting (off / default / graphs)."""
    import dataclasses

    from beluga.settings import FoldRun

    return "compile" in {f.name for f in dataclasses.fields(FoldRun)}


@dataclass
class Workload:
    """What a block of variants trains: the model, its length and batch size, the streams (all variants draw
    the same seeded batches from them: ``beluga.training.epoch_batches`` with the generator (seed, epoch)) and
    the held-out i.i.d. batch the drift's loss is measured on."""

    name: str            # base / large
    model: str
    max_length: int
    batch: int
    data: str            # fold (the default suite's seen fold) / long (i.i.d. sentences joined into full windows)
    streams: dict
    heldout: list
    seed: int = 1

    def save(self, path: Path) -> Path:
        """As JSON (the worker processes read it; no pickle: tests/test_safety.py)."""
        import dataclasses

        d = dict(self.__dict__)
        d["streams"] = {k: [dataclasses.asdict(it) for it in v] for k, v in self.streams.items()}
        d["heldout"] = [dataclasses.asdict(it) for it in self.heldout]
        path.write_text(json.dumps(d))
        return path

    @classmethod
    def load(cls, path: str) -> Workload:
        from beluga.training import TrainItem

        d = json.loads(Path(path).read_text())
        d["streams"] = {k: [TrainItem(**it) for it in v] for k, v in d["streams"].items()}
        d["heldout"] = [TrainItem(**it) for it in d["heldout"]]
        return cls(**d)


def long_items(ttype, df, length: int) -> list:
    """i.i.d. sentences joined in order until a text has 8 characters per token of ``length`` (so it fills a
    window of ``length`` tokens and is truncated there), with the first sentence's label: full windows."""
    import numpy as np

    from beluga.training import TrainItem

    items, parts, size, label = [], [], 0, 0
    eye = np.eye(ttype.num_model_labels)
    for text, y in zip(df["text"], df["label"]):
        if not parts:
            label = int(y)
        parts.append(str(text))
        size += len(text) + 1
        if size >= 8 * length:
            items.append(TrainItem("iid", [" ".join(parts)], None, list(eye[label])))
            parts, size = [], 0
    return items


def make_workload(name: str, model: str, length: int, batch: int, data: str, ttype, streams, iid) -> Workload:
    import pandas as pd

    from beluga.training import build_streams

    test = pd.read_parquet(iid["test"])
    if data == "long":
        streams = {"iid": long_items(ttype, pd.read_parquet(iid["train"]), length)}
        heldout = long_items(ttype, test, length)[:batch]
    else:
        heldout = build_streams(ttype, test.head(batch), None)["iid"]
    return Workload(name, model, length, batch, data, streams, heldout)


_BASE_RUN = []   # the FoldRun the variants start from (workers get it from their parent: no config to read)


def base_run(given: dict | None = None):
    from beluga.settings import FoldRun

    if not _BASE_RUN:
        _BASE_RUN.append(FoldRun.from_dict(given) if given else bench_run("vanilla", "auto"))
    return _BASE_RUN[0]


def variant_run(wl: Workload, total: int, compile_mode: str):
    """The FoldRun of ``total`` updates of vanilla on ``wl`` (the default config's settings, precision auto as
    the pipeline's jobs: bf16 + fused AdamW + TF32 on an H100)."""
    import dataclasses

    from beluga.training import n_batches

    run = base_run()
    spe = n_batches(wl.streams, wl.batch)
    run = dataclasses.replace(run, model=wl.model, start_label=wl.model, max_length=wl.max_length, seed=wl.seed,
                              precision="auto", hparams={**run.hparams, "batch_size": wl.batch, "epochs": total / spe})
    if compile_field():
        run = dataclasses.replace(run, compile=compile_mode)
    return run


class StepTimer:
    """Hooks around every update ``train`` makes (its algorithm's ``update``, wrapped while
    :meth:`installed`): after ``warmup`` updates the device is synchronised, the optional barrier is
    passed, the optional profiler started and the clock started; after ``steps`` more, synchronised
    and stopped. ``host``: the host's time inside each timed update (no added sync)."""

    def __init__(self, warmup: int, steps: int, barrier=None, profiler=None, frames=None):
        self.warmup, self.steps, self.barrier, self.profiler = warmup, steps, barrier, profiler
        self.frames = frames   # dynamo's frame counters (compile): graphs compiled inside the timed steps
        self.compiled_in_window = 0
        self.n = 0
        self.host: list[float] = []
        self.t_first = self.t_start = self.t_end = self.h0 = 0.0
        self.wall_start = self.wall_end = 0.0

    def before(self) -> None:
        if self.n == 0:
            self.t_first = time.perf_counter()
        if self.n == self.warmup:
            sync()
            if self.barrier is not None:
                self.barrier()
            if self.profiler is not None:
                self.profiler.start()
            if self.frames is not None:
                self.compiled_in_window = -self.frames["total"]
            self.wall_start, self.t_start = time.time(), time.perf_counter()
        self.h0 = time.perf_counter()

    def after(self) -> None:
        if self.n >= self.warmup:
            self.host.append(time.perf_counter() - self.h0)
        self.n += 1
        if self.n == self.warmup + self.steps:
            sync()
            self.t_end, self.wall_end = time.perf_counter(), time.time()
            if self.frames is not None:
                self.compiled_in_window += self.frames["total"]
            if self.profiler is not None:
                self.profiler.stop()

    @contextlib.contextmanager
    def installed(self):
        import beluga.training as training

        real, timer = training.get_algorithm, self

        def timed_algorithm(name):
            cls = real(name)

            class Timed(cls):
                def update(self, minibatches):
                    timer.before()
                    out = super().update(minibatches)
                    timer.after()
                    return out

            Timed.__name__ = Timed.__qualname__ = cls.__name__
            return Timed

        training.get_algorithm = timed_algorithm
        try:
            yield self
        finally:
            training.get_algorithm = real


def timed_train(wl: Workload, model, tok, hygiene: bool, compile_mode: str, warmup: int, steps: int,
                barrier=None, profiler=None) -> dict:
    """``beluga.training.train`` for ``warmup + steps`` updates of ``wl`` (the loop as the pipeline runs it),
    timing the last ``steps``."""
    import torch

    from beluga.modeling import set_seed
    from beluga.precision import resolve
    from beluga.training import train

    frames = None
    if compile_mode != "off":
        from torch._dynamo.utils import counters

        frames = counters["frames"]
    timer = StepTimer(warmup, steps, barrier, profiler, frames)
    run = variant_run(wl, warmup + steps, compile_mode)
    if DEVICE.type == "cuda":
        torch.cuda.reset_peak_memory_stats(DEVICE)
    set_seed(wl.seed)   # the same dropout masks in every variant
    with timer.installed():
        summary = train(model, tok, wl.streams, run, precision=resolve(run.precision, DEVICE), host_hygiene=hygiene)
    if summary["steps"] != warmup + steps or timer.n != warmup + steps:
        raise RuntimeError(f"benchmark: {summary['steps']} updates ran, {warmup + steps} were planned")
    return {"elapsed_s": timer.t_end - timer.t_start, "warmup_s": timer.t_start - timer.t_first,
            "wall_start": timer.wall_start, "wall_end": timer.wall_end,
            "host_s_per_step": statistics.fmean(timer.host), "peak_mem_mib": peak_mem_mib(),
            "tokenize_s": summary.get("tokenize_s"), "compile_s": summary.get("compile_s"),
            "compiles": summary.get("compiles"), "compiles_in_timed_steps": timer.compiled_in_window}


def window_counts(wl: Workload, tok, first: int, n: int) -> tuple[int, int, int]:
    """(sequences, real tokens, padded tokens) of updates ``first`` .. ``first + n - 1``: the batches ``train``
    draws (pooled sampling), tokenized as the loop does."""
    import numpy as np

    from beluga.training import epoch_batches, n_batches

    spe = n_batches(wl.streams, wl.batch)
    epochs: dict[int, list] = {}
    seqs = real = padded = 0
    for s in range(first, first + n):
        e, i = divmod(s, spe)
        if e not in epochs:
            epochs[e] = epoch_batches(wl.streams, wl.batch, np.random.default_rng([wl.seed, e]))
        b = epochs[e][i]
        lens = [len(x) for x in tok(b.texts, b.texts_b, truncation=True, max_length=wl.max_length)["input_ids"]]
        seqs, real, padded = seqs + len(lens), real + sum(lens), padded + len(lens) * max(lens)
    return seqs, real, padded


def weights_of(model) -> dict:
    return {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items() if v.is_floating_point()}


def max_diff(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def heldout_loss(model, tok, wl: Workload) -> float:
    """The mean loss on the held-out batch (eval mode, the run's precision, tokenized as the current loop)."""
    import numpy as np
    import torch

    from beluga.precision import resolve
    from beluga.training import LossFn, epoch_batches

    batch = epoch_batches({"iid": wl.heldout}, len(wl.heldout), np.random.default_rng(0))[0]
    loss_fn = LossFn(tok, wl.max_length, precision=resolve("auto", DEVICE), host_hygiene=False)
    model.eval()
    with torch.no_grad():
        value = float(loss_fn(model, batch).mean())
    model.train()
    return value


# ---- the profile
def profile_summary(prof, steps: int, wall_s: float, host_s: float) -> dict:
    from collections import Counter

    from torch.autograd import DeviceType

    events = list(prof.events())
    cpu = [e for e in events if e.device_type == DeviceType.CPU]
    aten = [e for e in cpu if e.name.startswith("aten::")]
    top = [e for e in aten if e.cpu_parent is None]
    out = {"steps": steps, "wall_ms_per_step": 1e3 * wall_s / steps, "host_ms_per_step": 1e3 * host_s,
           "aten_ops_per_step": len(aten) / steps, "top_level_ops_per_step": len(top) / steps,
           "most_called_ops_per_step": {k: c / steps for k, c in Counter(e.name for e in top).most_common(8)}}
    if DEVICE.type == "cuda":
        # the device's activities: kernels, copies, sets (not the GPU-side ranges of annotations such as
        # "Optimizer.step#AdamW.step", which span kernels already counted)
        dev = [e for e in events if e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False)
               and "#" not in e.name]
        kernels = [e for e in dev if not e.name.lower().startswith(("memcpy", "memset"))]
        kernel_s = sum(e.time_range.elapsed_us() for e in kernels) / 1e6
        spans, busy, end = sorted((e.time_range.start, e.time_range.end) for e in dev), 0.0, float("-inf")
        for a, b in spans:   # the union of the device's busy intervals (streams may overlap)
            if b > end:
                busy += b - max(a, end)
                end = b
        runtime = Counter(e.name for e in cpu if e.name.startswith("cu"))
        syncs = sum(c for k, c in runtime.items() if "Synchronize" in k) - 1   # less the window's closing sync
        out.update(gpu_busy_fraction=kernel_s / wall_s, gpu_busy_fraction_incl_copies=busy / 1e6 / wall_s,
                   kernels_per_step=len(kernels) / steps, kernel_ms_per_step=1e3 * kernel_s / steps,
                   copies_per_step=(len(dev) - len(kernels)) / steps, syncs_per_step=max(0, syncs) / steps,
                   runtime_calls_per_step={k: c / steps for k, c in runtime.most_common(8)})
    return out


def bench_profile(wl: Workload, warmup: int, steps: int) -> dict:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE.type == "cuda" else [])
    print(f"\nprofile: {steps} steps of each loop after {warmup} warm-up steps, {wl.model} at {wl.max_length} "
          f"tokens, batch {wl.batch} (torch.profiler: {', '.join(a.name for a in activities)})", flush=True)
    out: dict = {"model": wl.model, "max_length": wl.max_length, "batch_size": wl.batch, "warmup": warmup,
                 "steps": steps, "device": peak_flops()[1]}
    for key, hygiene in (("current", False), ("host_hygiene", True)):
        model, tok = fresh_model(wl.model)
        prof = profile(activities=activities)
        r = timed_train(wl, model, tok, hygiene, "off", warmup, steps, profiler=prof)
        out[key] = profile_summary(prof, steps, r["elapsed_s"], r["host_s_per_step"])
        del model, prof
        free()
    head = f"{'loop':<26} {'wall ms/step':>12} {'host ms/step':>12} {'aten ops':>9} {'top ops':>8}"
    if DEVICE.type == "cuda":
        head += f" {'GPU busy':>9} {'kernels':>8} {'kernel ms':>9} {'copies':>7} {'syncs':>6}"
    print(head)
    for key, label in (("current", "(a) current loop"), ("host_hygiene", "(b) host hygiene")):
        p = out[key]
        line = (f"{label:<26} {p['wall_ms_per_step']:12.2f} {p['host_ms_per_step']:12.2f} "
                f"{p['aten_ops_per_step']:9.0f} {p['top_level_ops_per_step']:8.0f}")
        if DEVICE.type == "cuda":
            line += (f" {p['gpu_busy_fraction']:9.1%} {p['kernels_per_step']:8.0f} {p['kernel_ms_per_step']:9.2f} "
                     f"{p['copies_per_step']:7.1f} {p['syncs_per_step']:6.1f}")
        print(line, flush=True)
    if DEVICE.type != "cuda":
        print("(CPU: no GPU figures; per step: host time, aten ops in all and at top level: not inside another op)")
    ops = ", ".join(f"{k} {v:.0f}" for k, v in out["host_hygiene"]["most_called_ops_per_step"].items())
    print(f"most called top-level ops per step (host hygiene): {ops}")
    row("profile: host ms per step, host hygiene", out["host_hygiene"]["host_ms_per_step"], "ms",
        baseline=out["current"]["host_ms_per_step"], note="baseline: the current loop; under the profiler")
    if DEVICE.type == "cuda":
        row("profile: GPU busy fraction, host hygiene", out["host_hygiene"]["gpu_busy_fraction"], "share",
            baseline=out["current"]["gpu_busy_fraction"], note="sum of kernel time / wall time of the steps")
    return {"profile": out}


# ---- K jobs per GPU: worker processes of this script
PARENT_PID: int | None = None   # a worker's parent: the worker stops when it is gone


def check_workers(procs) -> bool:
    """Whether every worker has exited 0; a failed worker raises its error."""
    for proc, _, err in procs:
        if proc.poll() not in (None, 0):
            raise RuntimeError(f"benchmark worker failed (exit {proc.returncode}): "
                               f"{Path(err.name).read_text()[-3000:]}")
    return all(proc.poll() == 0 for proc, _, _ in procs)


def wait_files(paths: list[Path], procs=(), timeout: float = 3600.0) -> None:
    """Until every path exists; a worker that failed (in ``procs``) stops the wait with its error."""
    deadline = time.time() + timeout
    while not all(p.exists() for p in paths):
        check_workers(procs)
        if PARENT_PID is not None and os.getppid() != PARENT_PID:
            raise SystemExit("benchmark worker: the benchmark has stopped")
        if time.time() > deadline:
            raise TimeoutError(f"benchmark: waited {timeout:.0f} s for {[str(p) for p in paths]}")
        time.sleep(0.002)


def touch(path: Path, text: str = "") -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(text)
    os.replace(tmp, path)


def run_jobs(wl_path: Path, K: int, reps: int, warmup: int, steps: int, tmp: Path, save_weights: bool) -> dict:
    """K workers (``--worker``) on the device at once, ``reps`` rounds; each round starts them together
    (they pass a file barrier after their warm-up, then start at one wall-clock time) and ends when all are
    done (a second barrier: no worker loads its next model while another one times). Returns the common
    start times and every worker's records."""
    d = tmp / f"jobs-{wl_path.stem}-{K}"
    d.mkdir()
    procs = []
    try:
        for rank in range(K):
            spec = {"workload": str(wl_path), "rank": rank, "jobs": K, "reps": reps, "warmup": warmup,
                    "steps": steps, "dir": str(d), "device": DEVICE.type, "parent": os.getpid(),
                    "run": base_run().to_dict(),
                    "weights": str(d / "weights.pt") if rank == 0 and save_weights else None}
            (d / f"spec-{rank}.json").write_text(json.dumps(spec))
            out, err = open(d / f"out-{rank}.txt", "w"), open(d / f"err-{rank}.txt", "w")
            procs.append((subprocess.Popen([sys.executable, str(SCRIPT), "--worker", str(d / f"spec-{rank}.json")],
                                           stdout=out, stderr=err, cwd=REPO), out, err))
        starts = []
        for rep in range(reps):
            wait_files([d / f"ready-{rep}-{r}" for r in range(K)], procs)
            starts.append(time.time() + 0.25)
            touch(d / f"go-{rep}", repr(starts[-1]))
        deadline = time.time() + 3600
        while not check_workers(procs):   # a failed worker stops the others (the finally clause)
            if time.time() > deadline:
                raise TimeoutError(f"benchmark: {K} workers still running after an hour")
            time.sleep(0.05)
    finally:
        for proc, out, err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out.close()
            err.close()
    records = []
    for rank in range(K):
        lines = (d / f"out-{rank}.txt").read_text().splitlines()
        records += [json.loads(ln[len(WORKER_TAG):]) for ln in lines if ln.startswith(WORKER_TAG)]
    return {"starts": starts, "records": records, "weights": d / "weights.pt" if save_weights else None}


def worker(spec_path: str) -> int:
    """One of K jobs on the device (``--worker``): trains the workload ``reps`` times from the same start with
    host hygiene, timing the steps after the barrier; prints one record per round."""
    global DEVICE, PARENT_PID
    import torch

    spec = json.loads(Path(spec_path).read_text())
    DEVICE, PARENT_PID = torch.device(spec["device"]), spec["parent"]
    setup_torch(spec["device"])
    base_run(spec["run"])
    wl = Workload.load(spec["workload"])
    d, rank, K = Path(spec["dir"]), spec["rank"], spec["jobs"]
    for rep in range(spec["reps"]):
        model, tok = fresh_model(wl.model)

        def barrier(rep=rep):
            touch(d / f"ready-{rep}-{rank}")
            wait_files([d / f"go-{rep}"])
            time.sleep(max(0.0, float((d / f"go-{rep}").read_text()) - time.time()))

        r = timed_train(wl, model, tok, True, "off", spec["warmup"], spec["steps"], barrier=barrier)
        touch(d / f"done-{rep}-{rank}")
        wait_files([d / f"done-{rep}-{k}" for k in range(K)])
        if rep == 0 and spec["weights"]:
            torch.save(weights_of(model), spec["weights"])
            r["heldout_loss"] = heldout_loss(model, tok, wl)
        print(WORKER_TAG + json.dumps({"rep": rep, "rank": rank, **r}), flush=True)
        del model
        free()
    return 0


# ---- the variants side by side
def bench_variants(wl: Workload, args, tmp: Path) -> dict:
    """(a) current loop, (b) host hygiene, (c) K jobs per GPU, (d) / (e) compile default / graphs on the same
    seeded batches of ``wl``; see the module docstring."""
    import torch

    warmup, steps, reps = args.warmup, args.steps, args.reps
    model, tok = fresh_model(wl.model)
    n_params = non_embedding_params(model)
    del model
    seqs, real, padded = window_counts(wl, tok, warmup, steps)
    peak, gpu = peak_flops()
    per_gpu = "per GPU" if DEVICE.type == "cuda" else "on the CPU"
    data = ("the default suite's seen fold of IID->(IID+T)" if wl.data == "fold" else
            "i.i.d. sentences joined into full windows, trained as classification")
    print(f"\nvariants [{wl.name}]: {wl.model} ({MODEL_SOURCE.get(wl.model)}; {n_params / 1e6:.1f}M non-embedding "
          f"parameters) at {wl.max_length} tokens, batch {wl.batch}, on {gpu}; data: {data}; {warmup} warm-up + "
          f"{steps} timed steps ({seqs / steps:.1f} sequences, {real / steps:.0f} real tokens per step, "
          f"{1 - real / padded:.0%} padding), median of {reps}", flush=True)
    variants = [("current", "(a) current loop", False, "off"), ("host_hygiene", "(b) host hygiene", True, "off")]
    skipped = {}
    for mode, letter in (("default", "d"), ("graphs", "e")):
        key = f"compile_{mode}"
        if mode not in args.compile_variants:
            skipped[key] = "not asked for (--compile-variants)"
        elif not compile_field():
            skipped[key] = "FoldRun has no 'compile' setting in this checkout"
        elif mode == "graphs" and DEVICE.type != "cuda":
            skipped[key] = "CUDA only"
        else:
            variants.append((key, f"({letter}) compile {mode} + host hygiene", True, mode))
    for key, why in skipped.items():
        print(f"  ({key}: skipped: {why})")
    elapsed: dict[str, list] = {k: [] for k, *_ in variants}
    records: dict[str, list] = {k: [] for k, *_ in variants}
    drift: dict[str, tuple] = {}
    ref_w = ref_loss = None
    for rep in range(reps):
        for key, label, hygiene, mode in variants:
            model, tok = fresh_model(wl.model)
            r = timed_train(wl, model, tok, hygiene, mode, warmup, steps)
            elapsed[key].append(r["elapsed_s"])
            records[key].append(r)
            if rep == 0:
                w, loss = weights_of(model), heldout_loss(model, tok, wl)
                if key == "current":
                    ref_w, ref_loss = w, loss
                drift[key] = (max_diff(w, ref_w), abs(loss - ref_loss))
                del w
            del model
            free()
            comp = f" (compiling {r['compile_s']:.1f} s, {r['compiles']} graph(s))" if r.get("compiles") else ""
            if r["compiles_in_timed_steps"]:
                comp += f"; {r['compiles_in_timed_steps']} compiled in the timed steps: raise --warmup"
            print(f"  {label}, round {rep + 1}: {steps / r['elapsed_s']:.2f} steps/s, warm-up {r['warmup_s']:.1f} s"
                  f"{comp}", flush=True)

    def rates(seconds: float, k: int = 1) -> dict:
        return {"steps_per_s": k * steps / seconds, "seq_per_s": k * seqs / seconds,
                "tokens_per_s": k * real / seconds,
                "mfu": None if peak is None else 6 * n_params * k * real / seconds / peak}

    out: dict = {}
    for key, label, _, _ in variants:
        t = median(elapsed[key])
        out[key] = {"label": label, "jobs": 1, **rates(t), "elapsed_s": elapsed[key],
                    "warmup_s": median([r["warmup_s"] for r in records[key]]),
                    "host_ms_per_step": 1e3 * median([r["host_s_per_step"] for r in records[key]]),
                    "peak_mem_mib": max(r["peak_mem_mib"] for r in records[key]),
                    "weight_drift": drift[key][0], "loss_drift": drift[key][1],
                    "tokenize_s": records[key][0]["tokenize_s"],
                    "compile_s": median([r["compile_s"] or 0.0 for r in records[key]]),
                    "compiles_in_timed_steps": max(r["compiles_in_timed_steps"] for r in records[key])}
    if any(mode != "off" for *_, mode in variants):
        torch._dynamo.reset()   # compiled code and CUDA graph pools: not kept while the workers run
    free()
    for K in args.jobs_per_gpu:
        key = f"jobs_{K}"
        print(f"  (c) {K} job{'s' if K > 1 else ''} {per_gpu}: {K} worker process{'es' if K > 1 else ''}, "
              f"{reps} round{'s' if reps > 1 else ''}", flush=True)
        res = run_jobs(wl.save(tmp / f"workload-{wl.name}.json"), K, reps, warmup, steps, tmp, save_weights=True)
        spans, sums = [], []
        for rep, start in enumerate(res["starts"]):
            recs = [r for r in res["records"] if r["rep"] == rep]
            spans.append(max(r["wall_end"] for r in recs) - start)
            sums.append(sum(seqs / r["elapsed_s"] for r in recs))
        first = [r for r in res["records"] if r["rep"] == 0 and "heldout_loss" in r]
        w = torch.load(res["weights"], weights_only=True)
        label = f"(c) {K} job{'s' if K > 1 else ''} {per_gpu}, aggregate"
        out[key] = {"label": label, "jobs": K, **rates(median(spans), K),
                    "elapsed_s": spans, "seq_per_s_sum_of_jobs": median(sums),
                    "warmup_s": median([r["warmup_s"] for r in res["records"]]),
                    "host_ms_per_step": 1e3 * median([r["host_s_per_step"] for r in res["records"]]),
                    "peak_mem_mib": max(r["peak_mem_mib"] for r in res["records"]),
                    "peak_mem_mib_all_jobs": median([sum(r["peak_mem_mib"] for r in res["records"] if r["rep"] == i)
                                                     for i in range(reps)]),
                    "weight_drift": max_diff(w, ref_w), "loss_drift": abs(first[0]["heldout_loss"] - ref_loss)}
        del w
        res["weights"].unlink()
    base = out["current"]["seq_per_s"]
    head = (f"{'variant':<40} {'steps/s':>8} {'seq/s':>9} {'tokens/s':>10} {'MFU':>7} {'peak MiB':>9} "
            f"{'max|dW|':>9} {'|dloss|':>9} {'x (a)':>7}")
    print(head)
    for v in out.values():
        v["ratio"] = v["seq_per_s"] / base
        mfu = "n/a" if v["mfu"] is None else f"{v['mfu']:.2%}"
        print(f"{v['label']:<40} {v['steps_per_s']:8.2f} {v['seq_per_s']:9.1f} {v['tokens_per_s']:10.0f} {mfu:>7} "
              f"{v['peak_mem_mib']:9.0f} {v['weight_drift']:9.2e} {v['loss_drift']:9.2e} {v['ratio']:6.2f}x",
              flush=True)
    if DEVICE.type != "cuda":
        print("(CPU: MFU n/a; peak memory: the process's max RSS so far; jobs: 1 thread each, sharing the cores)")
    best = max(out, key=lambda k: out[k]["seq_per_s"])
    speedup = out[best]["seq_per_s"] / base
    cuda = DEVICE.type == "cuda"
    row(f"[{wl.name}] training seq/s{' per GPU' if cuda else ''}, {best} vs (a) current loop", out[best]["seq_per_s"],
        "seq/s", baseline=base, target=">= 10x" if wl.name == "base" else "",
        ok=(speedup >= 10) if cuda and wl.name == "base" else None, note="target on an H100, at 128 tokens")
    mfus = {k: v["mfu"] for k, v in out.items() if v["mfu"] is not None}
    if mfus:
        top = max(mfus, key=mfus.get)
        row(f"[{wl.name}] training MFU on real tokens, best ({top})", mfus[top], "share", target=">= 0.25",
            ok=mfus[top] >= 0.25, note=f"6 x {n_params / 1e6:.1f}M x real tokens/s / {gpu} dense bf16 peak")
    return {"model": wl.model, "model_source": MODEL_SOURCE.get(wl.model), "max_length": wl.max_length,
            "batch_size": wl.batch, "data": wl.data, "params_non_embedding": n_params, "warmup": warmup,
            "steps": steps, "reps": reps, "device": gpu, "peak_flops": peak, "seq_per_step": seqs / steps,
            "real_tokens_per_step": real / steps, "padding_share": 1 - real / padded,
            "precision": variant_run(wl, 1, "off").precision, "best": best, "variants": out, "skipped": skipped}


# ---- the fixed cost of a GPU job
def fixed_cost_worker(spec_path: str) -> int:
    """A fresh process (``--fixed-cost-worker``): wall-clock times of its parts up to its first training step."""
    global DEVICE
    t = {"script": _T_SCRIPT}
    import torch

    t["torch"] = time.time()
    import transformers  # noqa: F401

    import beluga.modeling  # noqa: F401
    import beluga.training  # noqa: F401

    t["libraries"] = time.time()
    spec = json.loads(Path(spec_path).read_text())
    DEVICE = torch.device(spec["device"])
    setup_torch(spec["device"])
    base_run(spec["run"])
    if DEVICE.type == "cuda":
        torch.cuda.init()
        torch.empty(1, device=DEVICE)
        torch.cuda.synchronize()
    t["cuda"] = time.time()
    wl = Workload.load(spec["workload"])
    model, tok = fresh_model(wl.model)
    sync()
    t["model"] = time.time()
    r = timed_train(wl, model, tok, True, "off", 0, 1)
    t["first_step"] = time.time()
    print(WORKER_TAG + json.dumps({"t": t, "tokenize_s": r["tokenize_s"], "model_source": MODEL_SOURCE[wl.model]}),
          flush=True)
    sys.stdout.flush()
    os._exit(0)


FIXED_PARTS = (("interpreter_s", "interpreter start (launch -> the script's first line)", "launched", "script"),
               ("import_torch_s", "import torch", "script", "torch"),
               ("import_transformers_s", "import transformers + beluga", "torch", "libraries"),
               ("cuda_context_s", "CUDA context (torch.cuda.init + first allocation)", "libraries", "cuda"),
               ("model_load_s", "model load to the device", "cuda", "model"),
               ("first_step_s", "first training step (with tokenizing the fold, optimizer)", "model", "first_step"),
               ("total_s", "process start -> first training step done", "launched", "first_step"))


def bench_fixed_cost(wl: Workload, reps: int, tmp: Path) -> dict:
    spec = tmp / "fixed-cost.json"
    spec.write_text(json.dumps({"workload": str(wl.save(tmp / f"workload-{wl.name}.json")), "device": DEVICE.type,
                                "run": base_run().to_dict()}))
    runs = []
    for _ in range(reps):
        # the process starts when it is launched (fork + exec take milliseconds); /proc's start time is
        # relative to the boot time, which /proc/stat gives in whole seconds (up to 1 s early)
        launched = time.time()
        res = subprocess.run([sys.executable, str(SCRIPT), "--fixed-cost-worker", str(spec)], capture_output=True,
                             text=True, cwd=REPO)
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith(WORKER_TAG)]
        if res.returncode != 0 or not lines:
            raise RuntimeError(f"fixed-cost process failed (exit {res.returncode}): {res.stderr[-3000:]}")
        runs.append(json.loads(lines[-1][len(WORKER_TAG):]))
        runs[-1]["t"]["launched"] = launched
    parts = {key: median([r["t"][b] - r["t"][a] for r in runs]) for key, _, a, b in FIXED_PARTS}
    if DEVICE.type != "cuda":
        parts["cuda_context_s"] = None
    print(f"\nfixed cost of a {'GPU' if DEVICE.type == 'cuda' else 'CPU'} job: {wl.model} ({runs[0]['model_source']}), "
          f"fresh process, median of {reps}", flush=True)
    for key, label, _, _ in FIXED_PARTS:
        v = parts[key]
        print(f"  {label:<60} {'n/a (CPU)' if v is None else f'{v:8.2f} s'}")
    print(f"  (of the first step: tokenizing the fold {median([r['tokenize_s'] or 0.0 for r in runs]):.2f} s)")
    row("GPU job fixed cost: process start -> first step done" if DEVICE.type == "cuda" else
        "job fixed cost: process start -> first step done", parts["total_s"], "s")
    return {"fixed_cost": {"model": wl.model, "model_source": runs[0]["model_source"], "reps": reps,
                           "parts_s": parts, "tokenize_s": median([r["tokenize_s"] or 0.0 for r in runs])}}


def int_list(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", "").split(",") if x]


def main(argv=None) -> int:
    global DEVICE, PEAK_OVERRIDE
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
    ap.add_argument("--profile", action=argparse.BooleanOptionalAction, default=None,
                    help=f"profile the current and the new training loop {on_cuda}")
    ap.add_argument("--profile-steps", type=int, default=20, help="profiled steps per loop (default 20)")
    ap.add_argument("--variants", action=argparse.BooleanOptionalAction, default=None,
                    help=f"the training variants side by side at --model / --max-length / --batch-size {on_cuda}")
    ap.add_argument("--large", action=argparse.BooleanOptionalAction, default=None,
                    help=f"the variants at BERT-large size, 384 tokens, batch 3 (READ's shape) {on_cuda}")
    ap.add_argument("--large-model", default="bert-large", help="the large block's model (default bert-large)")
    ap.add_argument("--large-max-length", type=int, default=384)
    ap.add_argument("--large-batch-size", type=int, default=3)
    ap.add_argument("--base-data", choices=["fold", "long"], default="fold",
                    help="the base block's data: the default fold (default) or full windows of i.i.d. sentences")
    ap.add_argument("--fixed-cost", action=argparse.BooleanOptionalAction, default=True,
                    help="a job's fixed cost, process start -> first step, in parts (default: on)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps per variant (default 20 CUDA, 5 CPU)")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per variant (default 200 CUDA, 40 CPU)")
    ap.add_argument("--jobs-per-gpu", type=int_list, default=[1, 2, 4, 8],
                    help="K of the K-jobs-per-GPU variant (default 1,2,4,8; empty: none)")
    ap.add_argument("--compile-variants", type=lambda t: [x for x in t.split(",") if x and x != "none"],
                    default=["default", "graphs"], help="compile modes to time (default default,graphs; none)")
    ap.add_argument("--peak-flops", type=float, default=None, help="the GPU's dense bf16 peak FLOP/s (MFU)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--fixed-cost-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.fixed_cost_worker:
        return fixed_cost_worker(args.fixed_cost_worker)
    import torch

    from beluga.io import write_json
    from beluga.workflow.plan import model_size

    global MAX_LENGTH, BATCH, MODEL
    cuda = args.device == "cuda"
    args.model = args.model or ("bert-base" if cuda else "default")
    args.max_length = args.max_length or (128 if cuda else 48)
    for name, default in (("profile", cuda), ("variants", cuda), ("large", cuda)):
        if getattr(args, name) is None:
            setattr(args, name, default)
    args.warmup = (20 if cuda else 5) if args.warmup is None else args.warmup
    args.steps = (200 if cuda else 40) if args.steps is None else args.steps
    if args.steps < 1 or args.warmup < 0 or args.reps < 1 or any(k < 1 for k in args.jobs_per_gpu):
        ap.error("--steps, --reps and --jobs-per-gpu must be positive, --warmup not negative")
    MAX_LENGTH, BATCH, MODEL = args.max_length, args.batch_size, args.model
    PEAK_OVERRIDE = args.peak_flops
    DEVICE = torch.device(args.device)
    out_path = args.out or str(REPO / "benchmarks" / f"benchmark-{args.device}.json")
    setup_torch(args.device)
    machine = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
               "torch": torch.__version__, "threads": 1, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
               "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as fh:
            machine["cpu"] = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    print(f"machine: {machine}; measured on {args.device}")
    print(f"{'figure':<58} {'value':>10} {'unit':<10} {'baseline':>10} {'ratio':>8}  {'target':<10}")
    results = {"machine": machine, "device": args.device, "model": MODEL, "max_length": MAX_LENGTH,
               "batch_size": BATCH, "reps": args.reps, "when": time.strftime("%Y-%m-%d %H:%M")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        task, streams, cfg, iid = default_fold(tmp)
        if "training" not in args.skip:
            results.update(bench_training(streams, args.reps, args.items))
        if "prediction" not in args.skip:
            results.update(bench_prediction(iid, args.reps, 1000))
        if "methods" not in args.skip:
            results.update(bench_methods(streams, args.reps, args.items))
        if "fold" not in args.skip:
            results.update(bench_fold_job(tmp, cfg, args.reps))
        base = make_workload("base", MODEL, MAX_LENGTH, BATCH, args.base_data, task, streams, iid)
        if args.profile:
            results.update(bench_profile(base, args.warmup, args.profile_steps))
        if args.variants:
            results.setdefault("variants", {})["base"] = bench_variants(base, args, tmp)
        if args.large:
            large = make_workload("large", args.large_model, args.large_max_length, args.large_batch_size, "long",
                                  task, streams, iid)
            results.setdefault("variants", {})["large"] = bench_variants(large, args, tmp)
        if args.fixed_cost:
            free()
            results.update(bench_fixed_cost(base, args.reps, tmp))
    if "run" not in args.skip:
        results.update(run_share(Path(args.run_dir)))
    if "dry-run" not in args.skip:
        results.update(bench_dry_run(args.reps))
    # the throughput table `python -m beluga plan` reads (sequences/s of the model at its length, one job)
    fixed = results.get("fold_job", {}).get("fast exit")
    table = {
        "machine": f"{machine['cuda'] if args.device == 'cuda' else machine['cpu']}, measured {results['when']}",
        "ref_size": list(model_size(MODEL)), "ref_length": MAX_LENGTH, "batch_size": BATCH,
        "train_seq_per_s": results.get("train_seq_per_s"), "predict_seq_per_s": results.get("predict_seq_per_s"),
        "fixed_s_per_job": None if fixed is None else fixed["wall_s"] * fixed["fixed_share"],
        "method_cost": results.get("method_cost", {})}
    chosen = results.get("variants", {}).get("base")
    if chosen and chosen["data"] == "fold":
        # the steady-state figures of the variants (same model, length and batch as the table's reference)
        v = chosen["variants"]
        jobs = {k: x for k, x in v.items() if k.startswith("jobs_")}
        best = max(jobs.values(), key=lambda x: x["seq_per_s"]) if jobs else None
        table.update({"train_seq_per_s": v["host_hygiene"]["seq_per_s"], "train_loop": "host hygiene, one job",
                      "train_seq_per_s_current_loop": v["current"]["seq_per_s"],
                      "jobs_per_gpu": None if best is None else best["jobs"],
                      "train_seq_per_s_per_gpu": None if best is None else best["seq_per_s"],
                      "mfu": (best or v["host_hygiene"])["mfu"]})
    results["throughput"] = {args.device: table}
    results["rows"] = ROWS
    write_json(results, out_path)
    print(f"written: {out_path}")
    missed = [r["figure"] for r in ROWS if r["ok"] is False]
    if missed:
        print("targets missed: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
