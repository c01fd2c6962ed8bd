"""K jobs per GPU: worker processes of ``scripts/benchmark.py`` (``--worker``) started together on the device
(:func:`run_jobs`), what one of them runs (:func:`worker`), and the GPU's utilisation meanwhile
(:class:`GpuSampler`: ``nvidia-smi`` sampled every 200 ms, summarised over the timed window by
:func:`utilisation_summary`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from bench import common
from bench.common import PYTHON, REPO, SCRIPT, WORKER_TAG, free, fresh_model, setup_torch
from bench.loop import base_run, heldout_loss, timed_train, weights_of
from bench.workloads import Workload

PARENT_PID: int | None = None   # a worker's parent: the worker stops when it is gone


def utilisation_summary(samples: list[tuple], windows: list[tuple]) -> dict | None:
    """The GPU's utilisation over the timed ``windows`` ((start, end) wall-clock seconds) from ``samples``
    ((time, utilisation %, memory used MiB), nvidia-smi's): the mean and max utilisation and the max memory of
    the samples inside a window; None when no sample falls in one (too short a window to say)."""
    inside = [(u, m) for t, u, m in samples if any(a <= t <= b for a, b in windows)]
    if not inside:
        return None
    utils = [u for u, _ in inside]
    return {"samples": len(inside), "gpu_util_mean_pct": sum(utils) / len(utils), "gpu_util_max_pct": max(utils),
            "mem_used_mib_max": max(m for _, m in inside)}


def parse_smi_line(line: str) -> tuple[float, float] | None:
    """(utilisation %, memory used MiB) of one ``nvidia-smi --query-gpu=utilization.gpu,memory.used
    --format=csv,noheader,nounits`` line of the first GPU; None for anything else ("[N/A]", a blank line)."""
    parts = [x.strip() for x in line.split(",")]
    try:
        return float(parts[0]), float(parts[1])
    except (ValueError, IndexError):
        return None


class GpuSampler:
    """``nvidia-smi`` sampling the first GPU's utilisation and memory every 200 ms in a child process while the
    ``with`` block runs (each line time-stamped as it arrives); ``samples`` empty and ``why`` set where there is
    no GPU or no nvidia-smi."""

    QUERY = ["--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits", "-i", "0", "-lms", "200"]

    def __init__(self):
        self.samples: list[tuple] = []
        self.why = None
        self.proc = self.thread = None

    def __enter__(self):
        smi = shutil.which("nvidia-smi")
        if common.DEVICE.type != "cuda" or smi is None:
            self.why = "no GPU" if common.DEVICE.type != "cuda" else "nvidia-smi not found"
            return self
        self.proc = subprocess.Popen([smi, *self.QUERY], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

        def read():
            for line in self.proc.stdout:
                v = parse_smi_line(line)
                if v is not None:
                    self.samples.append((time.time(), *v))

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait()
            self.thread.join(timeout=5)

    def summary(self, windows: list[tuple]) -> dict | None:
        if self.why:
            return {"unavailable": self.why}
        return utilisation_summary(self.samples, windows)


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


def run_jobs(wl_path: Path, K: int, reps: int, warmup: int, steps: int, tmp: Path, save_weights: bool,
             compile_mode: str = "off", warm_round: bool = False) -> dict:
    """K workers (``--worker``) on the device at once, ``reps`` rounds (after one untimed round each with
    ``warm_round``); each round starts them together
    (they pass a file barrier after their warm-up, then start at one wall-clock time) and ends when all are
    done (a second barrier: no worker loads its next model while another one times). Returns the common
    start times and every worker's records."""
    d = tmp / f"jobs-{wl_path.stem}-{K}"
    d.mkdir()
    procs = []
    try:
        for rank in range(K):
            spec = {"workload": str(wl_path), "rank": rank, "jobs": K, "reps": reps, "warmup": warmup,
                    "steps": steps, "dir": str(d), "device": common.DEVICE.type, "parent": os.getpid(),
                    "run": base_run().to_dict(), "compile": compile_mode, "warm_round": warm_round,
                    "bundle": None if common.BUNDLE is None else common.BUNDLE["path"],
                    "weights": str(d / "weights.pt") if rank == 0 and save_weights else None}
            (d / f"spec-{rank}.json").write_text(json.dumps(spec))
            out, err = open(d / f"out-{rank}.txt", "w"), open(d / f"err-{rank}.txt", "w")
            procs.append((subprocess.Popen([*PYTHON, str(SCRIPT), "--worker", str(d / f"spec-{rank}.json")],
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
    global PARENT_PID
    import torch

    spec = json.loads(Path(spec_path).read_text())
    common.DEVICE, PARENT_PID = torch.device(spec["device"]), spec["parent"]
    if spec.get("bundle"):
        from bench.bundle import load_bundle

        common.BUNDLE = load_bundle(spec["bundle"])
    setup_torch(spec["device"])
    base_run(spec["run"])
    wl = Workload.load(spec["workload"])
    d, rank, K = Path(spec["dir"]), spec["rank"], spec["jobs"]
    if spec.get("warm_round"):   # this process's one-time costs (per-shape kernel choice...), before the barrier
        model, tok = fresh_model(wl.model, wl.head)
        timed_train(wl, model, tok, True, spec.get("compile", "off"), spec["warmup"], spec["steps"])
        del model
        free()
    for rep in range(spec["reps"]):
        model, tok = fresh_model(wl.model, wl.head)

        def barrier(rep=rep):
            touch(d / f"ready-{rep}-{rank}")
            wait_files([d / f"go-{rep}"])
            time.sleep(max(0.0, float((d / f"go-{rep}").read_text()) - time.time()))

        r = timed_train(wl, model, tok, True, spec.get("compile", "off"), spec["warmup"], spec["steps"],
                        barrier=barrier)
        touch(d / f"done-{rep}-{rank}")
        wait_files([d / f"done-{rep}-{k}" for k in range(K)])
        if rep == 0 and spec["weights"]:
            torch.save(weights_of(model), spec["weights"])
            r["heldout_loss"] = heldout_loss(model, tok, wl)
        print(WORKER_TAG + json.dumps({"rep": rep, "rank": rank, **r}), flush=True)
        del model
        free()
    return 0
