"""A tiny fold job's fixed cost: CPU seconds from its process's start to its first training step, and to its exit.

    .venv/bin/python scripts/job_start_cost.py [--reps 7] [--checkout DIR ...]

Runs the tiny test config (tests/configs/tiny.yaml) to one fold of IID->T with snakemake, keeping the fold
job's script (``--skip-script-cleanup``: Snakemake's preamble and workflow_scripts/finetune.py), then runs that
script again ``--reps`` times as its own process, in three ways:

- ``cold``: the job imports everything itself (``BELUGA_WARM_JOBS=0``);
- ``warm``: a job server of beluga/workflow/warm.py is running (as a local run's ``onstart`` starts it); the
  job's process hands off to a forked copy, and the figure is the job process's CPU plus the copy's (a fork's
  CPU counters start at zero);
- ``cold`` of every ``--checkout DIR`` given (another checkout of this project, say the commit before a change:
  its package, its python if it has a .venv), for a before / after on the same machine.

CPU at the first training step: when ``beluga.train.loop.train`` is called (an import hook wraps it before the
job imports it); at exit: when the job calls ``os._exit`` (its fast exit). Prints the median, minimum and
maximum of each and writes them as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = "results/sent/predictions/iid_to_t/vanilla/type/inv.parquet"

#: run before the job's own code (``python -c HOOK SCRIPT``, or in the server before its imports): the CPU of
#: this process when beluga.train.loop.train is first called and when os._exit is called, appended to a file
HOOK = r'''
import importlib.abc, importlib.machinery, json, os, resource, sys
def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
_marks = {}
class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "beluga.train.loop":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        real = spec.loader.exec_module
        def exec_module(mod):
            real(mod)
            train = mod.train
            def hooked(*a, **k):
                _marks.setdefault("first_step", _cpu())
                return train(*a, **k)
            mod.train = hooked
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Hook())
_exit = os._exit
def _hooked_exit(code=0):
    _marks["exit"] = _cpu()
    with open(os.environ["JOB_START_MARKS"], "a") as f:
        f.write(json.dumps({"pid": os.getpid(), **_marks}) + "\n")
    _exit(code)
os._exit = _hooked_exit
'''


def _snakemake(python: str, checkout: Path, workdir: Path, *args: str, env: dict) -> None:
    cmd = [str(Path(python).with_name("snakemake")), "-s", str(checkout / "Snakefile"), "-d", str(workdir),
           "--cores", "2", *args, "--configfile", str(REPO / "tests" / "configs" / "tiny.yaml")]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}")


def prepare(python: str, checkout: Path, workdir: Path, env: dict) -> Path:
    """The tiny run to the fold's inputs, then the fold job once with its script kept: that script."""
    _snakemake(python, checkout, workdir, TARGET, env=env)
    (workdir / TARGET).unlink()
    _snakemake(python, checkout, workdir, "--skip-script-cleanup", TARGET, env=env)
    scripts = sorted((workdir / ".snakemake" / "scripts").glob("*.finetune.py"))
    if not scripts:
        raise SystemExit("no kept finetune script")
    return scripts[-1]


def _cpu_of_children() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cold(python: str, script: Path, workdir: Path, env: dict, reps: int) -> list[dict]:
    out = []
    for _ in range(reps):
        marks = workdir / "marks.jsonl"
        marks.unlink(missing_ok=True)
        res = subprocess.run([python, "-c", HOOK + f"\nexec(compile(open({str(script)!r}).read(), {str(script)!r}, "
                              "'exec'), {'__name__': '__main__', '__file__': " + repr(str(script)) + "})"],
                             cwd=workdir, env={**env, "JOB_START_MARKS": str(marks)}, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"the job failed:\n{res.stderr[-3000:]}")
        out.append(json.loads(marks.read_text().splitlines()[-1]))
    return out


def warm(python: str, script: Path, workdir: Path, env: dict, reps: int) -> list[dict]:
    """The job with a warm server running: its own process's CPU (from outside) plus its copy's."""
    sys.path.insert(0, str(REPO))
    from beluga.workflow import warm as server_mod

    marks = workdir / "marks.jsonl"
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({**env, "JOB_START_MARKS": str(marks)})
    folder = Path(tempfile.mkdtemp(prefix="beluga-warm-"))
    sock = folder / "jobs.sock"
    try:
        os.environ.setdefault(server_mod.JEMALLOC_ENV, "background_thread:false")
        server_env = server_mod.job_environment(str(workdir))
        job_env = {**server_env, server_mod.SOCKET_ENV: str(sock)}
        code = HOOK + ("\nfrom beluga.workflow import warm\n"
                       f"sys.exit(warm.serve({str(sock)!r}, {os.getpid()}))\n")
        proc = subprocess.Popen([python, "-c", code], env=server_env, cwd=workdir, stdout=subprocess.DEVNULL,
                                stderr=open(folder / "server.log", "w"))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        deadline = time.time() + 120
        while not sock.exists():
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"the server did not start: {(folder / 'server.log').read_text()[-2000:]}")
            time.sleep(0.1)
        out = []
        for _ in range(reps):
            marks.unlink(missing_ok=True)
            before = _cpu_of_children()
            res = subprocess.run([python, str(script)], cwd=workdir, env=job_env, capture_output=True, text=True)
            own = _cpu_of_children() - before
            if res.returncode != 0:
                raise SystemExit(f"the job failed:\n{res.stderr[-3000:]}")
            copy = json.loads(marks.read_text().splitlines()[-1])
            out.append({"first_step": own + copy["first_step"], "exit": own + copy["exit"], "job_process": own,
                        "copy_first_step": copy["first_step"], "copy_exit": copy["exit"]})
        return out
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def summary(runs: list[dict]) -> dict:
    return {k: {"median": round(statistics.median(r[k] for r in runs), 3), "min": round(min(r[k] for r in runs), 3),
                "max": round(max(r[k] for r in runs), 3)} for k in ("first_step", "exit")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--checkout", action="append", default=[], help="another checkout: its cold job, as baseline")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "BELUGA_WARM_JOBS": "0"}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, checkout in [("this checkout", REPO)] + [(f"checkout {c}", Path(c).resolve()) for c in args.checkout]:
            python = str(checkout / ".venv" / "bin" / "python") if (checkout / ".venv").exists() else sys.executable
            wd = Path(tmp) / f"run{len(results)}"
            cenv = {**env, "PYTHONPATH": str(checkout)}
            script = prepare(python, checkout, wd, cenv)
            results[f"cold ({name})"] = summary(cold(python, script, wd, cenv, args.reps))
            if checkout == REPO:
                results[f"warm ({name})"] = summary(warm(python, script, wd, cenv, args.reps))
    print(f"{'CPU seconds, median (min-max) of ' + str(args.reps):44s} {'first training step':>24s} {'exit':>24s}")
    for name, r in results.items():
        cells = [f"{r[k]['median']:.2f} ({r[k]['min']:.2f}-{r[k]['max']:.2f})" for k in ("first_step", "exit")]
        print(f"{name:44s} {cells[0]:>24s} {cells[1]:>24s}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
