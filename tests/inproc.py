"""The workflow in this process: Snakemake's own DAG of the config (rules/common.smk's functions: Runs, Paths,
settings), each job's own script (``workflow_scripts/<rule>.py``: ``snakemake.input / params / output`` into one
call of ``beluga.steps``), in dependency order, in the test's process.

What it changes from ``snakemake`` as a process is only where a job's script runs: Snakemake's local executor
starts ``python <script>`` for a ``script:`` rule; here the script's code runs in this process, one job at a time
(a lock: torch's threads, seeds and deterministic flags are per process), with the same ``snakemake`` object
(input, output, params, wildcards, threads, resources, log, config). Everything else is Snakemake's: the DAG, the
wildcards, the params functions, the output directories, temp files, the benchmark files, the metadata that makes
a finished run "Nothing to be done". So the files are the same, at the same paths, byte for byte (the tiny config:
every Parquet / CSV / TSV / Markdown / HTML file equal to a ``snakemake --cores 2`` run's), and torch,
transformers and the package are imported once per test process instead of once per job (~5.5 s of CPU each).

The plumbing that needs a process (the one-line error a job prints and its exit status, the fast exit, Slurm,
``--use-conda``) is tested by the real runs (conftest.smk, tests/test_rules_run.py)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: one job at a time in this process, whatever --cores says (the jobs' threads are Snakemake's, as in a real run)
_JOB_LOCK = threading.Lock()


class JobFailed(subprocess.CalledProcessError):
    """A job's script ended with a non-zero exit status (its one-line error is on stderr, as a process's)."""


@contextlib.contextmanager
def _torch_state():
    """The process's torch threads and deterministic flags as they were before the jobs set theirs."""
    import torch

    threads, det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(det, warn_only=warn)


@contextlib.contextmanager
def scripts_in_process():
    """Snakemake's Python ``script:`` jobs run in this process: the job's ``snakemake`` object built as Snakemake
    builds it for the script's preamble, the script's code executed with it, under the job lock; the root logger
    put back after each job (``beluga.workflow.smk.run`` points it at the job's log); ``BELUGA_FULL_EXIT=1`` (the
    fast exit, ``os._exit``, would end this process) and ``BELUGA_WARM_JOBS=0``."""
    from snakemake import script as smk_script
    from snakemake.iocontainers import Snakemake

    real_evaluate = smk_script.PythonScript.evaluate

    def evaluate(self, edit=False):
        sm = Snakemake(self.input, self.output, self.params, self.wildcards, self.threads, self.resources,
                       self.log, self.config, self.rulename, self.bench_iteration,
                       self.path.get_basedir().get_path_or_uri(secret_free=True))
        path = os.path.realpath(self.path.get_path_or_uri(secret_free=True))
        code = compile(self.source, path, "exec")
        root = logging.getLogger()
        with _JOB_LOCK:
            handlers, level = root.handlers[:], root.level
            started = time.time()
            try:
                exec(code, {"snakemake": sm, "__file__": path, "__name__": "__main__"})
            except SystemExit as e:   # beluga.workflow.smk.run: the job's error line printed, exit status 1
                if e.code not in (0, None):
                    raise JobFailed(e.code, f"{self.rulename} (in-process)") from None
            finally:
                if self.bench_record is not None:   # the benchmark file: the job's wall time, no process stats
                    self.bench_record.running_time = time.time() - started
                    self.bench_record.process_gone = True
                if "torch._dynamo" in sys.modules:   # a process's compiled code and its recompile counts are its own
                    sys.modules["torch._dynamo"].reset()
                for h in root.handlers:
                    if h not in handlers:
                        h.close()
                root.handlers[:] = handlers
                root.setLevel(level)

    smk_script.PythonScript.evaluate = evaluate
    # no fast exit (os._exit would end this process) and no warm job server (beluga/workflow/warm.py: it would
    # run the jobs in processes of its own)
    settings = {"BELUGA_FULL_EXIT": "1", "BELUGA_WARM_JOBS": "0"}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        with _torch_state():
            yield
    finally:
        smk_script.PythonScript.evaluate = real_evaluate
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


#: True while Snakemake parses a command line in this process (tests/conftest.py's inner-loop guard lets the
#: processes started then through: the first parse imports Snakemake's plugins, and the Slurm plugin asks the
#: machine for ``sacct`` and ``scontrol`` when it is imported, as it does in every snakemake process)
LOADING_PLUGINS = False


def _parse_args(argv: list[str]):
    """Snakemake's ``parse_args`` (its plugins imported by the first call in this process)."""
    global LOADING_PLUGINS
    LOADING_PLUGINS = True
    try:
        from snakemake.cli import parse_args

        return parse_args(argv)
    finally:
        LOADING_PLUGINS = False


def snakemake(workdir, *args, configfiles=(), check: bool = True) -> subprocess.CompletedProcess:
    """``snakemake -s Snakefile -d WORKDIR ARGS --configfile CONFIGFILES`` in this process: the command line
    parsed and run by Snakemake's own ``parse_args`` / ``args_to_api`` (with the workflow profile a process
    reads), the scripts in-process (:func:`scripts_in_process`). Returns what a process would: its exit status
    and what it printed (Snakemake's log on stdout, the jobs' output on stderr). ``check``: a failure raises
    with the end of that output."""
    argv = ["-s", str(REPO / "Snakefile"), "-d", str(workdir), *map(str, args)]
    if configfiles:
        argv += ["--configfile", *map(str, configfiles)]
    parser, parsed = _parse_args(argv)
    from snakemake.cli import args_to_api  # imported by _parse_args
    out_buf, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out_buf), scripts_in_process():
            try:
                ok = args_to_api(parsed, parser)
            except SystemExit as e:
                ok = e.code in (0, None)
            except Exception as e:   # what snakemake's main prints before exiting 1
                from snakemake.exceptions import print_exception

                print_exception(e)
                ok = False
    finally:
        os.chdir(cwd)
        for s, h in handlers.items():
            signal.signal(s, h)
    out = subprocess.CompletedProcess(["snakemake", *argv], 0 if ok else 1, out_buf.getvalue(), err.getvalue())
    if check and not ok:
        raise AssertionError(f"snakemake (in-process) {' '.join(map(str, args))} failed:\n{out.stderr[-6000:]}")
    return out
