"""What a result was made with: the versions of the packages that shape results, the git commit (and whether
the checkout had uncommitted changes) of the code that ran, what ran it (the command line, or the Snakemake rule
and wildcards) and the SHA-256 of the files the user gave it.

Every run record the pipeline writes (``beluga.model.job.Job.record``: beside each model, in each prediction,
inoculation and combinational result), the run's ``run.json`` beside ``run_config.yaml`` and the ``run.json`` of
every ``test`` / ``score`` output folder hold it (docs/PIPELINE.md, "Run records"). Versions are read from the
installed distributions' metadata, never by importing a package; git is asked once per process, with a timeout.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

#: the distributions whose versions shape results (their import names differ for some): every dependency
#: pyproject.toml declares but those that cannot (tests/test_provenance.py derives the list from it and names
#: each exclusion's reason), and tokenizers (transformers') and accelerate (peft's: a LoRA model's adapters)
PACKAGES = ("beluga", "torch", "transformers", "tokenizers", "safetensors", "numpy", "pandas", "pyarrow", "scipy",
            "huggingface_hub", "datasets", "snakemake", "pyyaml", "jsonschema", "matplotlib", "jinja2", "peft",
            "accelerate")
#: files larger than this are recorded by size only: ``test`` / ``score`` (hashing them would cost more than the
#: command), and a pipeline job (which would hash the same model weights or data in each of thousands of jobs; the
#: paper's data are verified against SHA256SUMS when staged)
MAX_HASHED_BYTES = 2 << 30
JOB_MAX_HASHED_BYTES = 64 << 20
#: what runs the code now: set by the job wrapper (beluga.workflow.smk.run) for a Snakemake job
_JOB: dict = {}


def versions() -> dict[str, str | None]:
    """python and each of :data:`PACKAGES` (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _checkout(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


@cache
def git_state(where: str | None = None) -> dict:
    """The git commit of the checkout the ``beluga`` package was imported from (or ``where``) and whether it had
    uncommitted changes to tracked files; ``{"commit": None, "why": ...}`` when it is not a checkout or git
    cannot say."""
    start = Path(where) if where else Path(__file__).resolve().parent
    root = _checkout(start)
    if root is None:
        return {"commit": None, "why": f"{start} is not in a git checkout (an installed package)"}
    try:   # one git process: the commit on the branch header line, a changed tracked file on any other
        out = subprocess.run(["git", "-C", str(root), "status", "--porcelain=v2", "--branch", "--untracked-files=no"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return {"commit": None, "why": f"git could not say ({type(e).__name__})", "checkout": str(root)}
    lines = out.splitlines()
    commit = next((ln.split()[2] for ln in lines if ln.startswith("# branch.oid ")), None)
    if commit is None or commit == "(initial)":
        return {"commit": None, "why": "git could not say (no commit)", "checkout": str(root)}
    return {"commit": commit, "dirty": any(not ln.startswith("#") for ln in lines if ln.strip()),
            "checkout": str(root)}


def set_job(rule: str | None, wildcards: dict | None = None, inputs: list[str] | None = None) -> None:
    """The Snakemake job this process runs (the job wrapper calls it before the step, and with None after it):
    its rule, wildcards and the input files the user gave it (not the results folder's)."""
    _JOB.clear()
    if rule is not None:
        _JOB.update(rule=rule, wildcards=dict(wildcards or {}), inputs=list(inputs or []))


_DIGESTS: dict[tuple, str | None] = {}


def _sha256(p: Path, size: int, max_bytes: int) -> str | None:
    st = p.stat()
    key = (str(p.resolve()), size, st.st_mtime_ns, max_bytes)
    if key not in _DIGESTS:
        if size > max_bytes:
            _DIGESTS[key] = None
        else:
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def file_digest(path: str | os.PathLike, max_bytes: int = MAX_HASHED_BYTES) -> dict:
    """{"path", "bytes", "sha256"} of a file (a folder: {"path", "files": {name: {"bytes", "sha256"}}}, its
    files sorted); a file over ``max_bytes`` has its size and ``"sha256": null``. Digests are computed once per
    process (keyed by path, size and modification time)."""
    p = Path(path)
    if p.is_dir():
        files = {}
        for f in sorted(p.rglob("*")):
            if f.is_file():
                size = f.stat().st_size
                files[f.relative_to(p).as_posix()] = {"bytes": size, "sha256": _sha256(f, size, max_bytes)}
        return {"path": str(p), "files": files}
    size = p.stat().st_size
    return {"path": str(p), "bytes": size, "sha256": _sha256(p, size, max_bytes)}


def command() -> dict:
    """What runs this process: the Snakemake rule and wildcards (inside a job), else the command line."""
    if _JOB:
        return {"rule": _JOB["rule"], "wildcards": _JOB["wildcards"]}
    return {"argv": [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv else []}


def record(inputs: dict[str, str | os.PathLike] | None = None, max_bytes: int | None = None) -> dict:
    """The provenance record: versions, git, what ran it and the SHA-256 of ``inputs`` (name -> file or folder;
    inside a Snakemake job, by default, the user-given inputs :func:`set_job` named, files over
    :data:`JOB_MAX_HASHED_BYTES` by size)."""
    if inputs is None and _JOB:
        inputs = {p: p for p in _JOB["inputs"]}
        max_bytes = JOB_MAX_HASHED_BYTES if max_bytes is None else max_bytes
    limit = MAX_HASHED_BYTES if max_bytes is None else max_bytes
    return {"versions": versions(), "git": git_state(), "command": command(),
            "inputs": {name: file_digest(p, limit) for name, p in (inputs or {}).items() if Path(p).exists()}}
