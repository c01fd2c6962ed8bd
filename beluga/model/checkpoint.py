"""Training checkpoints at epoch boundaries: an interrupted training job
(preempted node, killed process, time limit) resumes from its last completed
epoch, and the resumed run is bit for bit the run that never stopped (same
device kind, same torch threads).

Layout of a checkpoint directory (one per training job, outside the job's
declared outputs, which snakemake deletes when a job fails; the pipeline
passes ``results/{task}/checkpoints/<rule>/<conf>/<method>/<partition>/<fold>``
and deletes it once the job's outputs are written)::

    owner.json                 pid, host, fingerprint of the process training now
    epoch-0001/                the state after epoch 1 (only the newest is kept)
        model.safetensors      model weights (state_dict)
        optimizer.safetensors  the optimizer's tensors (Adam moments, step counts)
        rng.safetensors        torch CPU (and CUDA) generator states, uint8
        checksums.json         SHA-256 of the four files, verified on resume
        state.json             format, fingerprint, epochs / steps done, loss
                               history, optimizer structure and scalars, LR
                               scheduler, the method's own state (Group-DRO
                               weights, IRM counters...), the per-environment
                               sampler (numpy generator state, queues), python
                               ``random`` and numpy global generator states

Only safetensors and JSON are written and read: no pickle, no ``torch.load``.
An epoch directory is written under a temporary name, synced and renamed, so
it is complete or absent; older epochs are removed after the rename.

The *fingerprint* is a SHA-256 over everything that determines the run: the
method and its merged hyper-parameters, the seed, max_length / doc_stride,
the content of every training stream (each item's inputs, targets, envs), the
start model (class, config and every weight), the L2-SP reference weights when
given, the torch / transformers versions and the device kind. A checkpoint
with another fingerprint (other settings, data or start model) is never
resumed: it is discarded with a _log line and training starts from scratch.

``BELUGA_CHECKPOINT_PAUSE_S`` (tests only): seconds to sleep after writing a
checkpoint, a window in which a test kills the job.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import shutil
import socket
import time
from pathlib import Path

import numpy as np
import torch

from beluga.core.io import atomic_dir, write_json

_log = logging.getLogger(__name__)

FORMAT = 1
OWNER = "owner.json"
PREFIX = "epoch-"
CHECKSUMS = "checksums.json"
FILES = ("model.safetensors", "optimizer.safetensors", "rng.safetensors", "state.json")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verify(d: Path) -> None:
    """Every file of an epoch checkpoint has the checksum written with it (a
    file corrupted in place, even at the same size, is caught)."""
    sums = json.loads((d / CHECKSUMS).read_text(encoding="utf-8"))
    for f in FILES:
        if sums.get(f) != _sha256(d / f):
            raise ValueError(f"{f} does not match its checksum")

# Algorithm attributes that are not run state: the model, optimizer and
# scheduler are saved on their own; the others are rebuilt identically when the
# method is constructed on the start model (L2-SP anchor, Fish's inner clone,
# whose weights are overwritten at every update) or are inputs.
_NOT_STATE = frozenset({"model", "loss_fn", "optimizer", "scheduler", "reference_state", "anchor", "inner", "pairs",
                        "fused", "nonfinite"})


# --------------------------------------------------------------------------- fingerprint


def _hash_tensor(h, name: str, t: torch.Tensor) -> None:
    t = t.detach()
    h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
    if t.numel():
        h.update(t.cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())


#: item fields added after checkpoints were first fingerprinted: hashed only when set, so that a run whose items
#: do not use them keeps its fingerprint (and resumes from its checkpoints)
LATER_ITEM_FIELDS = ("dir_class",)


def item_record(item) -> dict:
    """A training item's fields as the fingerprint hashes them (:data:`LATER_ITEM_FIELDS` only when set)."""
    d = dataclasses.asdict(item)
    for k in LATER_ITEM_FIELDS:
        if d.get(k) is None:
            d.pop(k, None)
    return d


def fingerprint(*, model, method: str, hparams: dict, seed: int, streams: dict, extra: dict | None = None,
                reference_state: dict | None = None) -> str:
    """SHA-256 (hex) of the run's settings, training data and start model.
    Call it before training changes the model."""
    import transformers

    h = hashlib.sha256()
    dev = next(model.parameters()).device
    config = model.config.to_dict() if hasattr(model, "config") else {}
    config = {k: v for k, v in config.items() if k not in ("_name_or_path", "transformers_version")}  # not the run
    settings = {"format": FORMAT, "method": method, "hparams": hparams, "seed": int(seed), "extra": extra or {},
                "model_class": type(model).__name__, "model_config": config,
                "torch": torch.__version__, "transformers": transformers.__version__, "device": dev.type}
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    for name in sorted(streams):
        h.update(f"stream {name} {len(streams[name])}\n".encode())
        for it in streams[name]:
            h.update(json.dumps(item_record(it), sort_keys=True, default=str).encode())
            h.update(b"\n")
    for name, t in model.state_dict().items():
        _hash_tensor(h, name, t)
    for name in sorted(reference_state or {}):
        _hash_tensor(h, f"reference {name}", reference_state[name])
    return h.hexdigest()


# --------------------------------------------------------------------------- JSON-able state


def _jsonable(v) -> bool:
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_jsonable(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _jsonable(x) for k, x in v.items())
    return False


def method_state(algo) -> dict:
    """The method's own state: every attribute of the algorithm object other
    than the model, optimizer, scheduler and inputs (steps done, Group-DRO _log
    weights, IRM switch step and last penalty, ...). Dict order is kept (it
    sets the order of floating-point sums). An attribute that is neither JSON
    nor known to be rebuilt is an error: a method with such state must be
    added here, or it would resume differently."""
    out = {}
    for k, v in vars(algo).items():
        if k in _NOT_STATE or k.startswith("_"):   # "_": transient by convention (methods.base)
            continue
        if not _jsonable(v):
            raise TypeError(f"checkpoint: {type(algo).__name__}.{k} ({type(v).__name__}) is neither JSON nor "
                            "known to be rebuilt (checkpoint._NOT_STATE)")
        out[k] = v
    return out


def load_method_state(algo, state: dict) -> None:
    for k, v in state.items():
        if isinstance(getattr(algo, k, None), tuple):
            v = tuple(v)
        setattr(algo, k, v)


def _optimizer_state(opt: torch.optim.Optimizer) -> tuple[dict, dict[str, torch.Tensor]]:
    sd = opt.state_dict()
    tensors, entries = {}, {}
    for idx, entry in sd["state"].items():
        meta = {"tensors": [], "values": {}}
        for k, v in entry.items():
            if torch.is_tensor(v):
                tensors[f"{idx}.{k}"] = v.detach().cpu().contiguous()
                meta["tensors"].append(k)
            elif _jsonable(v):
                meta["values"][k] = v
            else:
                raise TypeError(f"checkpoint: optimizer state {idx}.{k} ({type(v).__name__}) is not a tensor or JSON")
        entries[str(idx)] = meta
    # a tensor learning rate (training.compile: graphs) is saved as its float and restored into the tensor
    groups = [{k: list(v) if isinstance(v, tuple) else _scalar(v) for k, v in g.items()} for g in sd["param_groups"]]
    for g in groups:
        for k, v in g.items():
            if not _jsonable(v):
                raise TypeError(f"checkpoint: optimizer param group field {k} ({type(v).__name__}) is not JSON")
    return {"state": entries, "param_groups": groups}, tensors


def _load_optimizer_state(opt: torch.optim.Optimizer, meta: dict, tensors: dict[str, torch.Tensor]) -> None:
    if len(meta["param_groups"]) != len(opt.param_groups):
        raise ValueError("checkpoint: the optimizer has another number of parameter groups")
    state = {}
    for idx, entry in meta["state"].items():
        s = {k: tensors[f"{idx}.{k}"] for k in entry["tensors"]}
        s.update(entry["values"])
        state[int(idx)] = s
    groups = [{k: tuple(v) if isinstance(fresh.get(k), tuple) else v for k, v in saved.items()}
              for fresh, saved in zip(opt.param_groups, meta["param_groups"])]
    tensors_at = [{k: v for k, v in g.items() if torch.is_tensor(v)} for g in opt.param_groups]
    opt.load_state_dict({"state": state, "param_groups": groups})
    for group, live in zip(opt.param_groups, tensors_at):   # the same tensor learning rate, its saved value
        for k, t in live.items():
            group[k] = t.fill_(float(group[k]))


def _scalar(v):
    """A 0-dim tensor (a tensor learning rate) as its Python float; anything else as it is."""
    return float(v) if torch.is_tensor(v) and v.dim() == 0 else v


def _scheduler_state(sched) -> dict:
    sd = {k: [_scalar(x) for x in v] if isinstance(v, list) else _scalar(v) for k, v in sched.state_dict().items()}
    if not _jsonable(sd):
        raise TypeError("checkpoint: the learning-rate scheduler state is not JSON")
    return sd


def _rng_state() -> tuple[dict, dict[str, torch.Tensor]]:
    tensors = {"torch_cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"torch_cuda.{i}"] = s
    py = random.getstate()
    npg = np.random.get_state(legacy=False)
    npg = {**npg, "state": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in npg["state"].items()}}
    return {"python": [py[0], list(py[1]), py[2]], "numpy": npg}, tensors


def _set_rng_state(meta: dict, tensors: dict[str, torch.Tensor]) -> None:
    torch.set_rng_state(tensors["torch_cpu"])
    cuda = sorted((k for k in tensors if k.startswith("torch_cuda.")), key=lambda k: int(k.split(".")[1]))
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([tensors[k] for k in cuda])
    py = meta["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    npg = meta["numpy"]
    npg = {**npg, "state": {k: (np.asarray(v, dtype=np.uint32) if k == "key" else v)
                            for k, v in npg["state"].items()}}
    np.random.set_state(npg)


# --------------------------------------------------------------------------- save / load


def _ascii_digits(s: str) -> bool:
    """"12", not "" nor "²" (``'²'.isdigit()`` is true, ``int('²')`` fails)."""
    return s.isascii() and s.isdigit()


def epoch_dirs(ckpt_dir: str | os.PathLike) -> list[Path]:
    """Complete epoch checkpoints, newest first."""
    d = Path(ckpt_dir)
    if not d.is_dir():
        return []
    found = [p for p in d.iterdir() if p.is_dir() and p.name.startswith(PREFIX) and _ascii_digits(p.name[len(PREFIX):])]
    return sorted(found, key=lambda p: int(p.name[len(PREFIX):]), reverse=True)


def write_owner(ckpt_dir: str | os.PathLike, fp: str) -> None:
    """``owner.json``: which process trains into this directory now."""
    Path(ckpt_dir).mkdir(parents=True, exist_ok=True)
    os.chmod(ckpt_dir, 0o755)
    write_json({"pid": os.getpid(), "host": socket.gethostname(), "fingerprint": fp,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, Path(ckpt_dir) / OWNER)


def _fsync_tree(root: Path) -> None:
    for f in root.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())


def save(ckpt_dir: str | os.PathLike, *, epoch: int, fp: str, model, algo, state: dict) -> Path:
    """Write the state after ``epoch`` completed epochs (atomically), then
    remove older epochs. ``state``: the training loop's own JSON state (steps,
    loss history, sampler...)."""
    from safetensors.torch import save_file, save_model

    target = Path(ckpt_dir) / f"{PREFIX}{epoch:04d}"
    opt_meta, opt_tensors = _optimizer_state(algo.optimizer)
    rng_meta, rng_tensors = _rng_state()
    record = {"format": FORMAT, "fingerprint": fp, "epoch": int(epoch), "optimizer": opt_meta,
              "scheduler": _scheduler_state(algo.scheduler), "method": method_state(algo), "rng": rng_meta,
              "loop": state, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    text = json.dumps(record, indent=1)   # insertion order kept (sums over dicts depend on it)
    with atomic_dir(target) as tmp:
        save_model(model, str(tmp / "model.safetensors"))
        save_file(opt_tensors, str(tmp / "optimizer.safetensors"))
        save_file(rng_tensors, str(tmp / "rng.safetensors"))
        (tmp / "state.json").write_text(text + "\n", encoding="utf-8")
        (tmp / CHECKSUMS).write_text(json.dumps({f: _sha256(tmp / f) for f in FILES}, indent=1) + "\n")
        _fsync_tree(tmp)
    for old in epoch_dirs(ckpt_dir):
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    _log.info("checkpoint: epoch %d saved to %s", epoch, target)
    pause = float(os.environ.get("BELUGA_CHECKPOINT_PAUSE_S", "0") or 0)
    if pause > 0:
        time.sleep(pause)
    return target


def _remove_stale_temps(ckpt_dir: str | os.PathLike) -> None:
    """Temporary epoch folders of an interrupted write (``.epoch-*.tmp``)."""
    for p in Path(ckpt_dir).glob(f".{PREFIX}*.tmp"):
        shutil.rmtree(p, ignore_errors=True)


@dataclasses.dataclass
class Checkpoint:
    path: Path
    record: dict
    model: dict[str, torch.Tensor]
    optimizer: dict[str, torch.Tensor]
    rng: dict[str, torch.Tensor]


def load(ckpt_dir: str | os.PathLike, fp: str) -> Checkpoint | None:
    """The newest complete checkpoint of this run (same fingerprint), read
    into memory, or None. Checkpoints of another run, or unreadable ones, are
    deleted with a _log line."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    _remove_stale_temps(ckpt_dir)   # left by a write that was killed
    for d in epoch_dirs(ckpt_dir):
        try:
            _verify(d)
            record = json.loads((d / "state.json").read_text(encoding="utf-8"))
            if record.get("format") != FORMAT:
                raise ValueError(f"format {record.get('format')!r}, expected {FORMAT}")
            if record.get("fingerprint") != fp:
                _log.warning("checkpoint %s is from a different run (fingerprint %s, this run %s: other "
                            "settings, data or start model): discarded, training from the start",
                            d, str(record.get("fingerprint"))[:12], fp[:12])
                shutil.rmtree(d, ignore_errors=True)
                continue
            return Checkpoint(d, record, load_file(str(d / "model.safetensors")),
                              load_file(str(d / "optimizer.safetensors")), load_file(str(d / "rng.safetensors")))
        except (OSError, ValueError, KeyError, TypeError, SafetensorError) as e:
            _log.warning("checkpoint %s cannot be read or fails its checksum (%s): discarded, training from the "
                        "start", d, str(e).splitlines()[0] if str(e) else e)
            shutil.rmtree(d, ignore_errors=True)
    return None


def restore(ckpt: Checkpoint, model, algo) -> dict:
    """Put the checkpoint's weights, optimizer, scheduler, method state and
    random generators in place (the algorithm must have been built on the
    start model, as in the original run). Returns the loop's state."""
    rec = ckpt.record
    own = model.state_dict()
    extra = sorted(set(ckpt.model) - set(own))
    if extra:
        raise ValueError(f"checkpoint {ckpt.path}: unexpected weights {extra[:3]}")
    # safetensors' save_model drops the duplicate names of shared (tied) tensors: loading the
    # saved name fills its twins, so a name may be absent only if it shares a saved tensor's storage
    saved = {own[n].data_ptr() for n in ckpt.model}
    missing = [n for n in own if n not in ckpt.model and own[n].data_ptr() not in saved]
    if missing:
        raise ValueError(f"checkpoint {ckpt.path}: weight {missing[0]!r} is missing")
    for name, t in ckpt.model.items():
        if tuple(t.shape) != tuple(own[name].shape):
            raise ValueError(f"checkpoint {ckpt.path}: weight {name!r} has shape {tuple(t.shape)}, "
                             f"the model's {tuple(own[name].shape)}")
    model.load_state_dict(ckpt.model, strict=False)
    load_method_state(algo, rec["method"])
    _load_optimizer_state(algo.optimizer, rec["optimizer"], ckpt.optimizer)
    algo.scheduler.load_state_dict(dict(rec["scheduler"]))
    _set_rng_state(rec["rng"], ckpt.rng)
    return rec["loop"]


def clear(ckpt_dir: str | os.PathLike | None) -> None:
    """Delete a job's checkpoint directory (after its outputs are written)."""
    if ckpt_dir is not None:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
