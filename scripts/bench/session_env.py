"""Stage S0 of ``scripts/gpu_session.sh``: the machine, the versions and the GPU, and whether a user-level MPS
daemon worked (the shell tried it: ``nvidia-cuda-mps-control -d`` in a temporary pipe directory, one CUDA client,
``quit``), as one JSON::

    python3 scripts/bench/session_env.py OUT.json MPS_STATUS MPS_DETAIL

``MPS_STATUS``: ``works`` / ``failed`` / ``unavailable``; ``MPS_DETAIL``: the shell's words. Imports only the
standard library and torch (a bare GPU machine)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time


def smi(query: str) -> list[str] | None:
    """nvidia-smi's answer to ``--query-gpu=QUERY`` (one line a GPU), None without nvidia-smi or on an error."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        res = subprocess.run([exe, f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip().splitlines() if res.returncode == 0 else None


def versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "tokenizers", "numpy", "pandas", "pyarrow", "safetensors", "scipy"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("works", "failed", "unavailable"):
        print("usage: session_env.py OUT.json works|failed|unavailable DETAIL", file=sys.stderr)
        return 2
    out, status, detail = argv
    import torch

    gpu = None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        gpu = {"name": p.name, "memory_gib": p.total_memory / 2**30, "capability": f"{p.major}.{p.minor}",
               "multiprocessors": p.multi_processor_count, "count": torch.cuda.device_count()}
    env = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "host": platform.node(), "kernel": platform.release(),
           "cpus": os.cpu_count(), "versions": versions(), "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None, "gpu": gpu,
           "nvidia_smi": smi("name,memory.total,driver_version,clocks.max.sm,compute_mode"),
           "mps": {"status": status, "detail": detail}, "complete": True}
    tmp = out + ".part"
    with open(tmp, "w") as fh:
        json.dump(env, fh, indent=1)
    os.replace(tmp, out)
    print(f"S0: {gpu['name'] if gpu else 'no GPU'}; torch {torch.__version__}; MPS {status}: {detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
