"""The default run's projected wall time on two kinds of 2-core machine, measured side by side (``--projection``).

The README's first command runs the embedded default (``config.yaml``) with ``--cores 2``. Its time depends on
the CPU: with native bf16 (AVX512-BF16 / AMX) ``precision: auto`` trains and predicts under bf16 autocast; without
(AVX2-only CPUs: most laptops, Intel consumer CPUs, older Xeons) it runs in fp32. This block emulates the second
kind on the machine it runs on: fp32 (``--config precision=fp32``) with AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``,
``ONEDNN_MAX_CPU_ISA=AVX2``; MKL's matrix products keep their own code path).

For each machine kind it runs, in a fresh folder, the default run's sample with ``--cores 2`` (two jobs at a
time, as in the real run): the data preparation, the IID model, the IID model's predictions and one fold
job of every (configuration, partition), then projects the whole run from each job's ``BELUGA_TIMING`` line:

    projected = before the IID model + the IID model (it runs alone: every fold starts from it)
                + (every other model job's job-seconds: the sampled fold's x the folds of its kind) / cores
                + the light jobs (aggregation, statistics, figures) / cores

The light jobs do not depend on the CPU's vector units much; their job-seconds are read from a finished run's
logs (``--run-dir``) when there is one (else left out, and said so). The README's figures come from real runs
from a fresh clone; this projection is what the benchmark can measure in ~10 minutes, and the ratio between the
two machine kinds is measured in the same benchmark run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.common import REPO, row

CORES = 2
#: the machine kinds: label -> (environment added, config overrides)
KINDS = {
    "native (precision auto)": ({}, []),
    "AVX2 / fp32 (emulated)": ({"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}, ["precision=fp32"]),
}
MODEL_RULES = ("train_iid", "finetune", "predict")
PRED = re.compile(r"results/(?P<task>[^/]+)/predictions/(?P<conf>[^/]+)/(?P<method>[^/]+)/(?P<partition>[^/]+)/"
                  r"(?P<fold>[^/]+)\.parquet")


def _snakemake(workdir: Path, args: list[str], env: dict | None = None, timeout: float | None = None):
    exe = str(Path(sys.executable).with_name("snakemake"))
    cmd = [exe, "-s", str(REPO / "Snakefile"), "-d", str(workdir), "--configfile", str(REPO / "config.yaml"),
           "--workflow-profile", str(REPO / "profiles" / "default"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env={**os.environ, **(env or {})},
                          timeout=timeout)


def fold_counts(workdir: Path) -> tuple[Counter, list[str]]:
    """(fold jobs per (configuration, partition), one sampled prediction target per kind) of the default DAG."""
    dry = _snakemake(workdir, ["-n"]).stdout
    paths = sorted(set(m.group(0) for m in PRED.finditer(dry)))
    counts: Counter = Counter()
    sample: dict[tuple, str] = {}
    for p in paths:
        m = PRED.match(p)
        if m["conf"] == "iid":
            continue
        key = (m["conf"], m["partition"])
        counts[key] += 1
        sample.setdefault(key, p)
    return counts, list(sample.values())


def _timings(workdir: Path) -> list[dict]:
    from beluga.workflow.smk import TIMING_TAG

    out = []
    for log in sorted((workdir / "logs").rglob("*.log")):
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith(TIMING_TAG)]
        if lines:
            out.append(json.loads(lines[-1][len(TIMING_TAG):]))
    return out


def light_job_seconds(run_dir: Path) -> tuple[float | None, int]:
    """Job-seconds and count of the finished run's jobs that load no model (None: no finished run)."""
    total, n, models = 0.0, 0, 0
    for j in _timings(run_dir):
        if j["rule"] in MODEL_RULES:
            models += 1
        elif not j["rule"].startswith(("prepare_", "build_suite", "split_suite", "fetch")):
            total += j["call_end"] - j["process_start"]
            n += 1
    return (total, n) if models else (None, 0)


def project(workdir: Path, counts: Counter, light_s: float | None) -> dict:
    """The projection (module docstring) from a sampled run's logs."""
    jobs = _timings(workdir)
    wall = {j["rule"] if j["rule"] != "finetune" else ("finetune", j["wildcards"]["conf"],
                                                        j["wildcards"]["partition"]):
            j["call_end"] - j["process_start"] for j in jobs}
    first = min(j["process_start"] for j in jobs)
    iid = next(j for j in jobs if j["rule"] == "train_iid")
    before = iid["process_start"] - first
    fold_s = {f"{c}/{p}": n * wall[("finetune", c, p)] for (c, p), n in sorted(counts.items())}
    parallel = sum(fold_s.values()) + wall.get("predict", 0.0) + (light_s or 0.0)
    total = before + wall["train_iid"] + parallel / CORES
    return {"before_iid_s": before, "train_iid_s": wall["train_iid"], "predict_iid_s": wall.get("predict"),
            "fold_job_seconds": fold_s, "fold_jobs": sum(counts.values()),
            "sampled_fold_s": {f"{k[1]}/{k[2]}": v for k, v in wall.items() if isinstance(k, tuple)},
            "light_job_seconds": light_s, "cores": CORES, "projected_s": total}


def bench_projection(run_dir: Path, timeout: float = 3600) -> dict:
    light_s, n_light = light_job_seconds(run_dir)
    out: dict = {"kinds": {}, "light_jobs_from": str(run_dir) if light_s is not None else None}
    with tempfile.TemporaryDirectory(prefix="beluga-projection-") as tmp:
        base = Path(tmp)
        counts, sample = fold_counts(base)
        if not counts:
            row("projection: default run", float("nan"), "s", note="the dry run listed no fold job")
            return {}
        for label, (env, overrides) in KINDS.items():
            work = base / re.sub(r"\W+", "-", label).strip("-")
            work.mkdir()
            targets = ["results/sent/predictions/iid/vanilla/standard/all.parquet", *sample]
            t = time.perf_counter()
            res = _snakemake(work, ["--cores", str(CORES), *targets, *(["--config", *overrides] if overrides
                                                                        else [])], env=env, timeout=timeout)
            if res.returncode != 0:
                row(f"projection {label}", float("nan"), "s",
                    note="sample failed: " + " ".join((res.stderr or res.stdout).split()[-30:]))
                return {}
            p = project(work, counts, light_s)
            p["sample_wall_s"] = time.perf_counter() - t
            out["kinds"][label] = p
    native, avx2 = (out["kinds"][k] for k in KINDS)
    note = (f"light jobs: {n_light} from {run_dir}/logs" if light_s is not None
            else "light jobs left out (no finished run under --run-dir)")
    row("default run projected, native (precision auto)", native["projected_s"] / 60, "min", target="<= 12",
        ok=native["projected_s"] <= 12 * 60, note=note)
    row("default run projected, AVX2 / fp32 (emulated)", avx2["projected_s"] / 60, "min",
        baseline=native["projected_s"] / 60, target="<= 20", ok=avx2["projected_s"] <= 20 * 60)
    row("  IID model (train_iid), AVX2 / fp32 vs native", avx2["train_iid_s"], "s", baseline=native["train_iid_s"])
    for k in native["fold_job_seconds"]:
        row(f"  fold jobs {k}: job-s, AVX2 / fp32 vs native", avx2["fold_job_seconds"][k], "job-s",
            baseline=native["fold_job_seconds"][k])
    return {"projection": out}
