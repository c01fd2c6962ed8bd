"""What a training / prediction job runs on (shared by the training and
evaluation steps): torch threads and determinism, the device, the resolved
precision, and what the run record says about them; :func:`begin` starts a
step's job and its clock."""

from __future__ import annotations

import os
from dataclasses import dataclass

from beluga.core import provenance
from beluga.core.clock import Clock

#: the run record written beside a model on disk
RUN_FILE = "beluga_run.json"


def _device_name(dev) -> str:
    import torch

    return f"{dev} ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else str(dev)


def _versions() -> dict:
    """The versions of the packages that shape results (:func:`beluga.core.provenance.versions`), torch's as it
    reports itself (with its build, e.g. ``2.13.0+cpu``)."""
    import torch

    return {**provenance.versions(), "torch": torch.__version__}


@dataclass
class Job:
    device: object
    precision: object   # beluga.model.precision.Precision
    threads: int

    def record(self) -> dict:
        """The job's part of a run record: versions, device, threads, precision, and the provenance (git commit
        and dirty flag, the rule and wildcards, the user-given inputs' SHA-256: :mod:`beluga.core.provenance`)."""
        prov = provenance.record()
        return {"versions": _versions(), "device": _device_name(self.device), "torch_threads": self.threads,
                **self.precision.record(), "git": prov["git"], "command": prov["command"], "inputs": prov["inputs"]}


def start_job(threads: int, precision: str, gpus: int = 0) -> Job:
    """Per job, before any model is built: fixed torch threads and
    deterministic algorithms (on CUDA only with BELUGA_CUDA_DETERMINISTIC=1),
    the device, the resolved precision (:mod:`beluga.model.precision`). A job
    configured for a GPU (``gpus`` > 0) that finds none stops with one line
    instead of training on the CPU."""
    from beluga.model.modeling import configure_torch, pick_device, require_gpu
    from beluga.model.precision import resolve

    configure_torch(threads, cuda_deterministic=os.environ.get("BELUGA_CUDA_DETERMINISTIC", "0") == "1")
    dev = pick_device()
    if gpus:
        require_gpu(dev, gpus)
    return Job(dev, resolve(precision, dev), int(threads))


def begin(threads: int, precision: str, gpus: int = 0) -> tuple[Job, Clock]:
    """A step's start: its clock (the process start, named parts) and its job
    (:func:`start_job`: threads, determinism, device, the precision resolved
    once for the whole job)."""
    clock = Clock()
    return start_job(threads, precision, gpus), clock
