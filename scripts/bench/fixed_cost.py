"""The fixed cost of a job (``--fixed-cost``): launch -> its first training step done, in parts timed from
inside a fresh process of ``scripts/benchmark.py`` (``--fixed-cost-worker``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import common
from bench.common import PYTHON, REPO, SCRIPT, WORKER_TAG, fresh_model, median, row, setup_torch, sync
from bench.loop import base_run, timed_train
from bench.workloads import Workload


def fixed_cost_worker(spec_path: str, t_script: float) -> int:
    """A fresh process (``--fixed-cost-worker``): wall-clock times of its parts up to its first training step
    (``t_script``: when the script's first line ran)."""
    t = {"script": t_script}
    import torch

    t["torch"] = time.time()
    import transformers  # noqa: F401

    import beluga.model.modeling  # noqa: F401
    import beluga.train.loop  # noqa: F401

    t["libraries"] = time.time()
    spec = json.loads(Path(spec_path).read_text())
    common.DEVICE = torch.device(spec["device"])
    if spec.get("bundle"):
        from bench.bundle import load_bundle

        common.BUNDLE = load_bundle(spec["bundle"])
    setup_torch(spec["device"])
    base_run(spec["run"])
    if common.DEVICE.type == "cuda":
        torch.cuda.init()
        torch.empty(1, device=common.DEVICE)
        torch.cuda.synchronize()
    t["cuda"] = time.time()
    wl = Workload.load(spec["workload"])
    model, tok = fresh_model(wl.model, wl.head)
    sync()
    t["model"] = time.time()
    r = timed_train(wl, model, tok, True, "off", 0, 1)
    t["first_step"] = time.time()
    print(WORKER_TAG + json.dumps({"t": t, "tokenize_s": r["tokenize_s"],
                                   "model_source": common.MODEL_SOURCE[wl.model]}), flush=True)
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
    spec.write_text(json.dumps({"workload": str(wl.save(tmp / f"workload-{wl.name}.json")),
                                "device": common.DEVICE.type, "run": base_run().to_dict(),
                                "bundle": None if common.BUNDLE is None else common.BUNDLE["path"]}))
    runs = []
    for _ in range(reps):
        # the process starts when it is launched (fork + exec take milliseconds); /proc's start time is
        # relative to the boot time, which /proc/stat gives in whole seconds (up to 1 s early)
        launched = time.time()
        res = subprocess.run([*PYTHON, str(SCRIPT), "--fixed-cost-worker", str(spec)], capture_output=True,
                             text=True, cwd=REPO)
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith(WORKER_TAG)]
        if res.returncode != 0 or not lines:
            raise RuntimeError(f"fixed-cost process failed (exit {res.returncode}): {res.stderr[-3000:]}")
        runs.append(json.loads(lines[-1][len(WORKER_TAG):]))
        runs[-1]["t"]["launched"] = launched
    parts = {key: median([r["t"][b] - r["t"][a] for r in runs]) for key, _, a, b in FIXED_PARTS}
    if common.DEVICE.type != "cuda":
        parts["cuda_context_s"] = None
    print(f"\nfixed cost of a {'GPU' if common.DEVICE.type == 'cuda' else 'CPU'} job: {wl.model} "
          f"({runs[0]['model_source']}), fresh process, median of {reps}", flush=True)
    for key, label, _, _ in FIXED_PARTS:
        v = parts[key]
        print(f"  {label:<60} {'n/a (CPU)' if v is None else f'{v:8.2f} s'}")
    print(f"  (of the first step: tokenizing the fold {median([r['tokenize_s'] or 0.0 for r in runs]):.2f} s)")
    row("GPU job fixed cost: process start -> first step done" if common.DEVICE.type == "cuda" else
        "job fixed cost: process start -> first step done", parts["total_s"], "s")
    return {"fixed_cost": {"model": wl.model, "model_source": runs[0]["model_source"], "reps": reps,
                           "parts_s": parts, "tokenize_s": median([r["tokenize_s"] or 0.0 for r in runs])}}
