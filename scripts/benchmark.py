"""Compute benchmark: where the time of a BELUGA run goes, measured side by side.

    .venv/bin/python scripts/benchmark.py [--device cpu|cuda] [--reps 3] [--run-dir .]

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
  the first GPU, plus the model FLOP utilisation of training.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

MAX_LENGTH, BATCH, MODEL = 48, 16, "default"   # --max-length, --batch-size, --model
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

    from beluga.plan import load_config
    from beluga.steps import data
    from beluga.suites.build import split_cases
    from beluga.tasks import get_task_type
    from beluga.training import build_streams

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
    from beluga.plan import load_config
    from beluga.settings import fold_run

    cfg = load_config(str(REPO / "config.yaml"))
    run = fold_run(cfg, cfg["training"], task="bench", task_type="sent", configuration="iid_to_iid_plus_t",
                   method=method, partition="seen", fold="all", held_out=(), functionalities=(), model=MODEL,
                   start_label=MODEL, hparams={"lr": 5e-5, "batch_size": BATCH, "epochs": 1, **method_hparams(method)},
                   checkpoint_dir=None)
    return dataclasses.replace(run, seed=1, precision=precision, threads=1, checkpoint_every_s=0.0,
                               max_length=MAX_LENGTH, iid_in_mix=None)


def fresh_model(**overrides):
    from beluga.modeling import load_model, set_seed

    set_seed(1)
    model, tok = load_model(MODEL, 2, config_overrides=overrides or None)
    return model.to(DEVICE), tok


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
            summary = train(model, tok, small, bench_run("vanilla", p.name))
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
        n_params = sum(p.numel() for n, p in model.named_parameters() if "embeddings" not in n)
        texts = [t for v in small.values() for it in v for t in it.inputs[:2]]
        tokens = sum(len(x) for x in tok(texts, truncation=True, max_length=MAX_LENGTH)["input_ids"])
        achieved = 6 * n_params * tokens / (items / rate["loop bf16+fused"])
        import torch

        name = torch.cuda.get_device_name(DEVICE)
        peak = next((v for k, v in {"H100": 989e12, "H200": 989e12, "A100": 312e12}.items() if k in name), None)
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
    from beluga.training import train

    small = subset(streams, n_items)
    p = prec("bf16", True)
    per_epoch = {}
    # lp_ft's cost is full fine-tuning (its start model, an LP model, is another job)
    for method in ["vanilla"] + sorted(m for m in ALGORITHMS if m != "vanilla"):
        ts = []
        for _ in range(reps):
            model, tok = fresh_model(**get_algorithm(method).config_overrides(method_hparams(method)))
            ts.append(train(model, tok, small, bench_run(method, p.name))["wall_time_s"])
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
    from beluga.dag import task_folds
    from beluga.methods import method_hparams
    from beluga.settings import fold_run

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
            start = min(rec["process_start"], t0)
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
    from beluga.smk import SCIENCE_PARTS, TIMING_TAG

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


def bench_dry_run(reps: int) -> dict:
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    ts = []
    # in the repository (the config's data paths are relative to it); a dry run writes no results
    for _ in range(reps):
        t = time.perf_counter()
        res = subprocess.run([snakemake, "-n", "-q", "-s", str(REPO / "Snakefile"), "-d", str(REPO),
                              "--configfile", str(REPO / "configs" / "paper.yaml")], capture_output=True,
                             text=True, cwd=REPO)
        ts.append(time.perf_counter() - t)
        if res.returncode != 0:
            row("snakemake -n configs/paper.yaml", float("nan"), "s", note="failed: " +
                " ".join((res.stderr or res.stdout).split()[-30:]))
            return {}
    row("snakemake -n configs/paper.yaml", median(ts), "s")
    return {"paper_dry_run_s": median(ts)}


def main(argv=None) -> int:
    global DEVICE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the training / prediction figures are measured (cuda: the first GPU)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per measurement (median; >= 3)")
    ap.add_argument("--items", type=int, default=400, help="training items per timed epoch")
    ap.add_argument("--model", default="default",
                    help="model spec (default: all-MiniLM-L6-v2; e.g. a local bert-base folder for GPU figures)")
    ap.add_argument("--max-length", type=int, default=48, help="tokens per sequence (default 48, the default run's)")
    ap.add_argument("--batch-size", type=int, default=16, help="training batch size (default 16)")
    ap.add_argument("--run-dir", default=str(REPO), help="a finished run's working directory (its logs/)")
    ap.add_argument("--out", default=None, help="JSON output (default: benchmarks/benchmark-<device>.json)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["training", "prediction", "methods", "fold", "run",
                                                               "dry-run"])
    args = ap.parse_args(argv)
    import torch

    from beluga.io import write_json
    from beluga.plan import model_size

    global MAX_LENGTH, BATCH, MODEL
    MAX_LENGTH, BATCH, MODEL = args.max_length, args.batch_size, args.model
    DEVICE = torch.device(args.device)
    out_path = args.out or str(REPO / "benchmarks" / f"benchmark-{args.device}.json")
    torch.set_num_threads(1)
    # as the pipeline's jobs (beluga.modeling.configure_torch): deterministic algorithms on the CPU only
    torch.use_deterministic_algorithms(args.device == "cpu", warn_only=True)
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
    if "run" not in args.skip:
        results.update(run_share(Path(args.run_dir)))
    if "dry-run" not in args.skip:
        results.update(bench_dry_run(args.reps))
    # the throughput table `python -m beluga plan` reads (sequences/s of the model at its length, one job)
    fixed = results.get("fold_job", {}).get("fast exit")
    results["throughput"] = {args.device: {
        "machine": f"{machine['cuda'] if args.device == 'cuda' else machine['cpu']}, measured {results['when']}",
        "ref_size": list(model_size(MODEL)), "ref_length": MAX_LENGTH, "batch_size": BATCH,
        "train_seq_per_s": results.get("train_seq_per_s"), "predict_seq_per_s": results.get("predict_seq_per_s"),
        "fixed_s_per_job": None if fixed is None else fixed["wall_s"] * fixed["fixed_share"],
        "method_cost": results.get("method_cost", {})}}
    results["rows"] = ROWS
    write_json(results, out_path)
    print(f"written: {out_path}")
    missed = [r["figure"] for r in ROWS if r["ok"] is False]
    if missed:
        print("targets missed: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
