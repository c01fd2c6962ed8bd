"""A fold job as a process: its start to its first training step and its last training step to its exit, as a
share of its wall time (fast exit, and the interpreter's full teardown as the baseline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import REPO, median, row

FOLD_JOB = """
import json, os, sys, time
from beluga.core.clock import process_start_time
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
    from beluga.train.settings import fold_run
    from beluga.workflow.dag import task_folds

    task_cfg = cfg["tasks"]["sent"]
    funcs, _, seen = task_folds(task_cfg["suite"], "sent", ["seen"])
    training = cfg["training"]
    run = fold_run(cfg, training, task="sent", task_type="sent", configuration="iid_plus_t", method="vanilla",
                   partition="seen", fold="all", held_out=tuple(seen["held_out"]),
                   functionalities=tuple(funcs["functionality"]), model="default", start_label="default",
                   hparams={**training["suite"], **method_hparams("vanilla")}, seed=cfg["seed"],
                   threads=cfg["job_threads"], checkpoint_dir=None)
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
