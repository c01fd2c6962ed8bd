"""Seconds to plan the paper's DAG: ``snakemake -n`` on ``configs/paper.yaml``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import REPO, median, row


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
