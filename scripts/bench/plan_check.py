"""The calibrated plan against the run it plans (``--plan-check``): ``python -m beluga plan --recalibrate`` on the
tiny config (tests/configs/tiny.yaml) with ``--cores 2``, then that config's run with ``--cores 2`` in a fresh
folder right after it, on the same machine. Figure: the plan's wall-clock on 2 cores / the run's wall-clock (the
``snakemake`` process timed from outside), median of ``reps`` rounds: target within 0.5..2 (the plan measures the
machine in CPU seconds and gives the wall-clock of cores free for the run, so the benchmark runs alone; a test
where other work shares the cores would time that work, not the plan)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, median, row

CONFIG = REPO / "tests" / "configs" / "tiny.yaml"
CORES = 2
ABOUT = re.compile(rf"^  on {CORES} cores: about ([\d,.]+) (s|min|h) -- ", re.M)
UNIT_S = {"s": 1, "min": 60, "h": 3600}


def planned_s(text: str) -> float:
    """The plan's wall-clock on :data:`CORES` cores, in seconds, from its text."""
    m = ABOUT.search(text)
    if not m:
        raise SystemExit(f"benchmark --plan-check: no wall-clock on {CORES} cores in the plan:\n{text[-2000:]}")
    return float(m.group(1).replace(",", "")) * UNIT_S[m.group(2)]


def bench_plan_check(reps: int) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    plans, runs = [], []
    for _ in range(reps):
        res = subprocess.run([sys.executable, "-m", "beluga", "plan", "--configfile", str(CONFIG), "--cores",
                              str(CORES), "--recalibrate"], capture_output=True, text=True, cwd=REPO, env=env)
        if res.returncode != 0:
            raise SystemExit(f"benchmark --plan-check: plan failed:\n{res.stderr[-2000:]}")
        plans.append(planned_s(res.stdout))
        with tempfile.TemporaryDirectory() as wd:
            t = time.perf_counter()
            run = subprocess.run([snakemake, "-s", str(REPO / "Snakefile"), "-d", wd, "--cores", str(CORES),
                                  "--configfile", str(CONFIG)], capture_output=True, text=True, cwd=REPO, env=env)
            runs.append(time.perf_counter() - t)
        if run.returncode != 0:
            raise SystemExit(f"benchmark --plan-check: the tiny run failed:\n{run.stderr[-3000:]}")
    plan_s, run_s = median(plans), median(runs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    row(f"plan vs the tiny run: planned / measured on {CORES} cores", plan_s, "s", run_s, "0.5..2x",
        0.5 <= plan_s / run_s <= 2.0, note=f"load average after: {load:.1f}")
    return {"plan_check": {"config": str(CONFIG.relative_to(REPO)), "cores": CORES, "planned_s": plans,
                           "run_s": runs, "ratio": plan_s / run_s, "load_after": load}}

