"""The memory a job that trains or predicts asks for, from measurements, and where its benchmark goes.

Every rule that trains or predicts has a ``benchmark:`` directive (:func:`job_benchmark`):
Snakemake writes one TSV per job (wall seconds ``s``, ``max_rss``, ``cpu_time``, ...) under
``benchmarks/jobs/``, in the layout of the job's log under ``logs/``. The memory requests of those
rules (:meth:`beluga.workflow.runs.Runs.job_resources`) start from :data:`BASE_MEM_MB`, derived from
:data:`MEASURED_MAX_RSS_MIB`: the peak RSS of each job kind and model, measured exactly (the job
process's ``ru_maxrss``, ``/usr/bin/time``) on the CPU machine of docs/COMPUTE.md ("Memory
requests": the machine, the date, the commands), kept in
benchmarks/memory/2026-11-27-cpu/max_rss.tsv; times :data:`MARGIN`. tests/test_resources.py checks
that this table is that file's and that every request covers it.
"""

from __future__ import annotations

import math
import os

#: peak RSS (MiB) per job kind and model: the largest ``max_rss_kib`` / 1024 of the kind's jobs in
#: benchmarks/memory/2026-11-27-cpu/max_rss.tsv (``train``: train_iid and finetune; ``predict``:
#: predict), max_length 32 (tiny-random) and 48 (default, all-MiniLM-L6-v2), CPU, torch 2.13.0
MEASURED_MAX_RSS_MIB = {
    ("train", "tiny-random"): 539.1,
    ("train", "default"): 1027.3,
    ("predict", "tiny-random"): 501.0,
    ("predict", "default"): 596.6,
}

#: the measured peak is one run on one machine with the tiny data sets (40 training examples, suites of
#: 12 cases): larger data, other CPUs, thread counts and allocators add to it, so the request is this
#: much larger
MARGIN = 1.5

#: NOT measured: the host memory a job on a CUDA GPU adds (the CUDA context, cuBLAS / cuDNN and torch's
#: CUDA libraries mapped into the process), an estimate added to the request when the configuration sets
#: ``gpus``; to be replaced by a measured figure (docs/COMPUTE.md, "Memory requests")
CUDA_HOST_MB = 2000

#: model scale of each measured model (beluga.workflow.runs.model_scale: tiny-random 0.5, MiniLM 1)
MEASURED_SCALE = {"tiny-random": 0.5, "default": 1.0}


#: MB (Snakemake's mem_mb, 10^6 bytes) per MiB (the measured RSS, 2^20 bytes)
MB_PER_MIB = 1.048576


def base_mem_mb(kind: str) -> int:
    """The first attempt's request (MB) of a ``kind`` job at model scale 1 and max_length <= 128:
    the largest measured peak of that kind, each divided by its model's scale (so that the scaled
    request of every measured model is at least its peak: most of a small model's peak is torch
    itself, which does not shrink with the model), times :data:`MARGIN`, in MB, rounded up to
    100 MB."""
    peaks = [mib / MEASURED_SCALE[model] for (k, model), mib in MEASURED_MAX_RSS_MIB.items() if k == kind]
    return int(math.ceil(max(peaks) * MARGIN * MB_PER_MIB / 100) * 100)


#: a training / prediction job's memory (MB) at model scale 1, first attempt (from the measurements)
BASE_MEM_MB = {kind: base_mem_mb(kind) for kind in ("train", "predict")}


def job_benchmark(log: str) -> str:
    """The ``benchmark:`` pattern of a rule whose ``log:`` pattern is ``log`` (``logs/<rest>.log``):
    ``benchmarks/jobs/<rest>.tsv``, the same wildcards, so one file per job. ``benchmarks/jobs/``
    is ignored by git and apart from the tracked ``benchmarks/gpu/`` (whatever the task names)."""
    if not (log.startswith("logs/") and log.endswith(".log")):
        raise ValueError(f"a job log pattern is logs/<...>.log, not {log!r}")
    return "benchmarks/jobs/" + log[len("logs/"):-len(".log")] + ".tsv"


#: the environment variable envs/beluga.post-deploy.sh installs the project from (--use-conda)
ROOT_VARIABLE = "BELUGA_ROOT"


def export_workflow_root(basedir: str) -> None:
    """Put the workflow's folder in ``BELUGA_ROOT`` for envs/beluga.post-deploy.sh, which snakemake
    runs (as a copy next to the environment, from its working directory) in a child process after
    creating the rules' conda environment: the script installs the project from there."""
    os.environ[ROOT_VARIABLE] = str(basedir)
