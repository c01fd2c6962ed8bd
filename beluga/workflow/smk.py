"""Glue for workflow_scripts: logging to the rule's log file, one-line errors,
the job's timing, and a fast exit.

Every job ends its log with one line ``BELUGA_TIMING {json}``: the rule, the
wildcards, when the process started (from the kernel), when the rule's step
was called and returned, the step's science parts (training, prediction,
scoring seconds) when it reports them, and whether it started warm (a copy
of the run's job server, :mod:`beluga.workflow.warm`) or cold. ``scripts/benchmark.py`` reads these
lines to split a run's job-seconds into science and fixed per-process cost.

A job that succeeded leaves through ``os._exit(0)`` once its outputs are
closed and its log is flushed: the interpreter's teardown (about a second
with torch and transformers loaded: module finalisers, garbage collection)
does nothing for the outputs. ``BELUGA_FULL_EXIT=1`` keeps the normal exit.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback

from beluga.core import provenance
from beluga.core.clock import process_start_time
from beluga.core.errors import BelugaError, unexpected_error_line, write_traceback
from beluga.workflow import warm

TIMING_TAG = "BELUGA_TIMING"


def timing_line(rule: str, wildcards: dict, started: float, called: float, returned: float,
                science: dict | None, start: str = "cold") -> str:
    """``start``: ``warm`` for a job run by a warm job server's copy (:mod:`beluga.workflow.warm`: its
    process started when it was forked, its imports done), ``cold`` for one that imported everything."""
    return TIMING_TAG + " " + json.dumps({
        "rule": rule, "wildcards": wildcards, "process_start": round(started, 3), "call_start": round(called, 3),
        "call_end": round(returned, 3), "science": {k: round(v, 3) for k, v in (science or {}).items()},
        "start": start}, sort_keys=True)


def user_inputs(snakemake) -> list[str]:
    """The job's input files and folders that are not the run's own outputs (not under its results folder): the
    config's files, suites, local data and models; a run record hashes them (:func:`beluga.core.provenance.record`)."""
    results = os.path.realpath(str((getattr(snakemake, "config", None) or {}).get("results", "results")))
    return [str(f) for f in snakemake.input
            if not (os.path.realpath(str(f)) + os.sep).startswith(results + os.sep)]


def run(snakemake, fn) -> None:
    """Call ``fn()`` with logging sent to the rule's log; a BelugaError ends
    the job with its one-line message (full traceback only in the log), any
    other exception with one line naming the rule, its wildcards and its
    input, and the log (the rule's, or a new file in the temporary folder
    for a rule without one) where the traceback is; exit status 1 for
    both. A
    dict returned by ``fn`` (name -> seconds: the step's training /
    prediction / scoring time) goes into the job's timing line."""
    started = process_start_time()
    log_path = snakemake.log[0] if len(snakemake.log) else None
    handlers = [logging.StreamHandler(sys.stderr)]
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        handlers=handlers, force=True)
    wildcards = dict(snakemake.wildcards.items()) if hasattr(snakemake.wildcards, "items") else {}
    provenance.set_job(snakemake.rule, wildcards, user_inputs(snakemake))
    called = time.time()
    try:
        out = fn()
    except BelugaError as e:
        logging.getLogger("beluga").debug(traceback.format_exc())
        if log_path:
            with open(log_path, "a") as fh:
                fh.write(traceback.format_exc())
        print("error: " + " ".join(str(e).splitlines()), file=sys.stderr)  # one line
        sys.exit(1)
    except Exception as e:  # the last resort: one line naming the job and its input, the traceback in the log
        log = write_traceback(log_path, prefix=f"beluga-{snakemake.rule}-")
        print("error: " + unexpected_error_line(job_name(snakemake), job_inputs(snakemake), e, log),
              file=sys.stderr)
        sys.exit(1)
    finally:
        provenance.set_job(None)   # nothing after the step is this job's (a process that runs more than one)
    science = {k: v for k, v in out.items() if k in SCIENCE_PARTS} if isinstance(out, dict) else None
    line = timing_line(snakemake.rule, wildcards, started, called, time.time(), science,
                       "warm" if warm.in_copy() else "cold")
    if log_path:
        with open(log_path, "a") as fh:
            fh.write(line + "\n")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    if os.environ.get("BELUGA_FULL_EXIT", "0") in ("0", "", "false", "False"):
        os._exit(0)


def job_name(snakemake) -> str:
    """``rule <name> (<wildcard>=<value>, ...)``: the job an error line names."""
    wildcards = dict(snakemake.wildcards.items()) if hasattr(snakemake.wildcards, "items") else {}
    shown = ", ".join(f"{k}={v}" for k, v in wildcards.items())
    return f"rule {snakemake.rule}" + (f" ({shown})" if shown else "")


def job_inputs(snakemake) -> list[str]:
    """The job's input files, flattened (named inputs that are lists included)."""
    out = []
    for v in (snakemake.input or []):
        out.extend([v] if isinstance(v, str) else list(v))
    return out


#: the parts of a job that are the science (everything else is fixed per-process cost)
SCIENCE_PARTS = ("train", "predict", "score")


def input_list(snakemake, name: str) -> list[str]:
    """A named input that is a list of files (possibly empty or of one file) as a list."""
    value = snakemake.input.get(name, [])
    return [value] if isinstance(value, str) else list(value)
