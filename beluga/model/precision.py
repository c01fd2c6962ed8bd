"""Numerical precision of training and prediction jobs (config ``precision``).

- ``fp32``: everything in float32 (TF32 off on CUDA);
- ``bf16``: the model's forward passes under ``torch.autocast`` with bfloat16
  (weights, gradients, optimizer state and every loss stay float32: logits
  are cast to float32 before any softmax / loss);
- ``auto`` (default): ``bf16`` on CUDA devices that support it and on CPUs with
  native bf16 instructions (AVX512-BF16 or AMX), else ``fp32``.

Independently of the precision, AdamW runs fused (one kernel over all
parameters) where the device has a fused implementation (CPU and CUDA in the
pinned torch), and on CUDA TF32 matrix products are allowed unless the
precision is ``fp32``. A run is bit-for-bit reproducible for the same config,
seed, threads and precision (autocast on the CPU is deterministic).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

import torch

_log = logging.getLogger(__name__)

CHOICES = ("auto", "fp32", "bf16")


def native_bf16(device: torch.device) -> bool:
    """Whether the device computes bf16 natively (fast autocast)."""
    if device.type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        # torch's kernels run at the instruction set ATEN_CPU_CAPABILITY allows (an AVX-512 machine told
        # ``avx2`` computes as an AVX2-only one: bf16 emulated, slow)
        if torch.backends.cpu.get_cpu_capability() != "AVX512":
            return False
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    return False


def fused_adamw_available(device: torch.device) -> bool:
    """torch has fused AdamW kernels for CPU and CUDA tensors."""
    return device.type in ("cpu", "cuda")


@dataclass(frozen=True)
class Precision:
    """The resolved precision of one job (see the module docstring)."""

    name: str = "fp32"             # "fp32" or "bf16"
    device_type: str = "cpu"
    fused_optimizer: bool = False
    tf32: bool = False

    def autocast(self):
        """Context for a model's forward pass."""
        if self.name == "bf16":
            return torch.autocast(self.device_type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def record(self) -> dict:
        return {"precision": self.name, "fused_optimizer": self.fused_optimizer, "tf32": self.tf32}


def full(t: torch.Tensor) -> torch.Tensor:
    """A forward pass's output in full precision: bf16 / fp16 (autocast) to
    float32; float32 / float64 unchanged. Losses and softmaxes use this."""
    return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t


#: library default (unit tests, direct calls): plain float32, unfused optimizer
FP32 = Precision()


def resolve(setting: str, device: torch.device) -> Precision:
    """The job's precision for a config value ``auto`` / ``fp32`` / ``bf16``
    on ``device``; also switches TF32 on CUDA (global, per process)."""
    if setting not in CHOICES:
        raise ValueError(f"field 'precision': {setting!r} is not one of {', '.join(CHOICES)}")
    native = native_bf16(device)
    name = ("bf16" if native else "fp32") if setting == "auto" else setting
    if name == "bf16" and not native:
        _log.warning("precision bf16 on %s without native bf16 support: correct but slow", device)
    tf32 = device.type == "cuda" and name != "fp32"
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    return Precision(name=name, device_type=device.type, fused_optimizer=fused_adamw_available(device), tf32=tf32)


def start_line(setting: str, gpus: int = 0) -> str:
    """The line a run prints when it starts: the precision its jobs use (``auto`` resolved on this
    machine's CPU) and what it means for the numbers (docs/COMPUTE.md, "How long the default run takes")."""
    tail = ("; another precision writes other bytes, with numbers within noise of these: the findings are what "
            "reproduces, and several seeds are how to check them (docs/COMPUTE.md)")
    if gpus:
        return f"precision: {setting} (GPU jobs: bf16 where the GPU supports it, under auto){tail}"
    resolved = resolve(setting, torch.device("cpu")).name
    native = native_bf16(torch.device("cpu"))
    why = ("this CPU has native bf16 (AVX512-BF16 / AMX)" if native
           else "this CPU has no native bf16: fp32 takes about 2-2.5x the training time of a CPU with it")
    return f"precision: {setting} -> {resolved} on this CPU ({why}){tail}"
