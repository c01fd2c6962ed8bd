"""The GPU sessions' files as the GPU plan's table of measured steps (:func:`beluga.workflow.steps.measured_steps`).
Light: no torch.

Two layouts, both read from the measurements' folder (benchmarks/gpu/):

- a session folder (``benchmarks/gpu/<date>-<machine>/``, written by ``scripts/gpu_session.sh OUT_DIR``):
  ``s0_env.json`` (the machine: the GPU's name, versions, whether MPS worked) and the stages' scripts/benchmark.py
  files, ``s1_eager.json``, ``s2_jobs_mps_off.json`` / ``s2_jobs_mps_on.json``, ``s3_read.json``,
  ``s4_graphs.json``; a folder that itself holds ``s0_env.json`` is read as one session;
- flat scripts/benchmark.py files (``*.json`` beside the session folders: the first session's), one session.

From every benchmark file, per measured block (``variants.<name>`` once the block ended: its ``model``,
``batch_size``, ``steps``; ``partial.<name>`` where it stopped at its limit: the file's ``model`` /
``batch_size`` or the ``--large-*`` arguments, ``--steps``): the eager step, the fastest timed round of host
hygiene over its steps (the first round in a process is cold); the aggregate factor of K eager jobs (``jobs_K``:
K x one job's round over the K jobs' round); the whole-step CUDA graphs' step (``compile_graphs``) and the
factor of K graphed jobs (``jobs_K`` with ``compile: graphs``) over one graphed job. From ``profiles`` (S1, S3):
the CUDA-event device time of a step (host hygiene's ``device_ms_per_step``, clock ``CUDA events``), on the row
of the same model, data and batch, and a row of its own for a profiled shape no loop timed (its step under
torch.profiler: marked ``profiled``). S2: the MPS-on file where S0 says MPS works and it measured K jobs,
else the MPS-off one; the other is not read.

Each session's rows name their source (file, GPU, date, versions); a model size's rows come from the newest
session (S0's ``when``; the flat files': their latest ``when``) that measured it. A file of a run without a GPU
(``device`` not ``cuda``, S0's ``gpu`` null: ``--cpu-dry-run``) is refused in one line naming it and the field,
as is a malformed field: a dry run's figures read as a GPU's would price the plan silently wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from beluga.core.errors import ConfigError
from beluga.workflow.cost import model_size

#: the session's machine file (scripts/bench/session_env.py) and its K-jobs files without and with MPS
SESSION_ENV, S2_OFF, S2_ON = "s0_env.json", "s2_jobs_mps_off.json", "s2_jobs_mps_on.json"


@dataclass(frozen=True)
class StepRow:
    """A measured eager step: ``step_s`` seconds a step of a model of ``size`` at batch ``batch`` (one job), and
    where measured, K jobs on one GPU: ``factors``, (K, their aggregate factor: the GPU's sequences / s over one
    job's) by K. ``device_s``: the step's CUDA-event device time; ``profiled``: ``step_s`` is a round under
    torch.profiler (no timed loop at this shape); ``graphed_s``: a step as whole-step CUDA graphs, one job, with
    ``graphed_factors`` of K graphed jobs; ``shape``: (rows, padded length) of the measured step, where recorded;
    ``when``: the session's date; ``gpu``: the GPU's name as recorded."""
    size: tuple
    batch: int
    step_s: float
    source: str                      # file, machine, date, versions
    factors: tuple = ()
    device_s: float | None = None
    profiled: bool = False
    graphed_s: float | None = None
    graphed_factors: tuple = ()
    shape: tuple | None = None
    when: str = ""
    gpu: str = ""


def read_measurements(folder: Path) -> list[StepRow]:
    """The measured steps of ``folder`` (module docstring): the newest session's rows for each model size, the
    newest session first."""
    folder = Path(folder)
    sessions = []
    if (folder / SESSION_ENV).is_file():
        sessions.append(read_session(folder, folder.name))
    else:
        flat = [r for p in sorted(folder.glob("*.json")) for r in read_benchmark(p, p.name)]
        if flat:
            sessions.append(flat)
        for d in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else ():
            if (d / SESSION_ENV).is_file():
                sessions.append(read_session(d, d.name))
            elif any(d.glob("*.json")):
                raise ConfigError(f"GPU measurement {d}: field '{SESSION_ENV}': missing: a session folder needs "
                                  "its machine file (scripts/gpu_session.sh writes it)")
    sessions = [rows for rows in sessions if rows]
    # newest first; a file without a date (v1 files could lack one) counts as the oldest
    sessions.sort(key=lambda rows: max(r.when if r.when[:1].isdigit() else "" for r in rows), reverse=True)
    out, seen = [], set()
    for rows in sessions:
        out += [r for r in rows if r.size not in seen]
        seen |= {r.size for r in rows}
    return out


def read_session(folder: Path, name: str) -> list[StepRow]:
    """One session folder's rows: S2 (the factor the plan takes) first, then the other stages' files."""
    path = folder / SESSION_ENV
    env = _load(path)
    gpu = env.get("gpu")
    if gpu is None:
        raise ConfigError(f"GPU measurement {path}: field 'gpu': null: the session ran without a GPU (a "
                          "--cpu-dry-run); its files are not GPU measurements: keep them out of the GPU "
                          "measurements' folder")
    if not isinstance(gpu, dict) or not isinstance(gpu.get("name"), str):
        raise ConfigError(f"GPU measurement {path}: field 'gpu.name': the GPU's name is needed")
    mps = env.get("mps")
    if not isinstance(mps, dict) or not isinstance(mps.get("status"), str):
        raise ConfigError(f"GPU measurement {path}: field 'mps.status': works / failed / unavailable is needed")
    when, versions = str(env.get("when", "")), env.get("versions")
    if not when:
        raise ConfigError(f"GPU measurement {path}: field 'when': the session's date is needed")
    if not isinstance(versions, dict):
        raise ConfigError(f"GPU measurement {path}: field 'versions': an object is needed")
    machine = (gpu["name"], when, versions)
    s2 = []
    if mps["status"] == "works" and (folder / S2_ON).is_file():
        s2 = read_benchmark(folder / S2_ON, f"{name}/{S2_ON}", machine, "MPS on")
    if not any(r.factors for r in s2):
        why = (f"MPS {mps['status']}" if mps["status"] != "works" else
               f"MPS works, but {S2_ON} " + ("measured no K jobs" if s2 else "is absent"))
        s2 = read_benchmark(folder / S2_OFF, f"{name}/{S2_OFF}", machine, f"MPS off: {why}") \
            if (folder / S2_OFF).is_file() else []
    rest = [r for p in sorted(folder.glob("*.json")) if p.name not in (SESSION_ENV, S2_OFF, S2_ON)
            for r in read_benchmark(p, f"{name}/{p.name}", machine)]
    return s2 + rest


def read_benchmark(path: Path, name: str, machine: tuple | None = None, words: str = "") -> list[StepRow]:
    """The rows of one scripts/benchmark.py file (module docstring); ``machine``: (GPU, date, versions) of its
    session (S0), else the file's own."""
    what = f"GPU measurement {path}"
    bench = _load(path)
    if not isinstance(bench.get("partial", {}), dict) or not isinstance(bench.get("variants", {}), dict):
        raise ConfigError(f"{what}: field 'partial': an object of measured rows is needed")
    device = bench.get("device")
    if device is not None and device != "cuda":
        raise ConfigError(f"{what}: field 'device': {device!r}: a run without a GPU (a --cpu-dry-run) is not a GPU "
                          "measurement: keep it out of the GPU measurements' folder")
    argv = [str(a) for a in bench.get("argv", [])]
    n_steps = _arg(argv, "--steps", "0")
    if not n_steps.isdigit():
        raise ConfigError(f"{what}: field 'argv': --steps {n_steps!r} is not a number of steps")
    if not isinstance(bench.get("machine") or {}, dict):
        raise ConfigError(f"{what}: field 'machine': an object is needed")
    if machine is None:
        versions = bench.get("versions") or {}
        gpu = (bench.get("machine") or {}).get("cuda", "GPU not recorded")
        machine = (gpu, bench.get("when", "date not recorded"), versions)
    elif (bench.get("machine") or {}).get("cuda") is None:
        raise ConfigError(f"{what}: field 'machine.cuda': null: the run saw no GPU")
    gpu, when, versions = machine
    shown = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if k in ("torch", "transformers"))
    stopped = "" if bench.get("complete", True) else "stopped at its limit: what ended"
    tail = "; ".join(w for w in (shown or "versions not recorded", words, stopped) if w)
    source = f"{name} ({gpu}, {when}; {tail})"
    blocks = [(k, v, True) for k, v in bench.get("variants", {}).items()]
    blocks += [(k, v, False) for k, v in bench.get("partial", {}).items() if k not in bench.get("variants", {})]
    rows, keyed = [], {}   # keyed: (model size, batch, data) -> the row's index, for the profiles
    data = {"base": _arg(argv, "--base-data"), "large": _arg(argv, "--large-data")}
    for key, block, ended in blocks:
        if key not in ("base", "large"):
            continue
        if not isinstance(block, dict):
            raise ConfigError(f"{what}: field '{'variants' if ended else 'partial'}.{key}': an object is needed")
        row = _block_row(bench, argv, int(n_steps), key, block, ended, f"{what}: field "
                         f"'{'variants' if ended else 'partial'}.{key}", source, str(when), str(gpu))
        if row is not None:
            keyed.setdefault((row.size, row.batch, block.get("data") or data[key]), len(rows))
            rows.append(row)
    return _with_profiles(rows, keyed, bench, what, source, str(when), str(gpu))


def _block_row(bench, argv, n_steps, key, block, ended, field, source, when, gpu) -> StepRow | None:
    """A measured block's row, or None where it timed no host-hygiene round."""
    if ended:
        model, batch, n_steps = block.get("model"), block.get("batch_size"), block.get("steps")
    elif key == "base":
        model, batch = bench.get("model"), bench.get("batch_size")
    else:
        model, batch = _arg(argv, "--large-model"), _arg(argv, "--large-batch-size")
    variants, records = block.get("variants") or {}, block.get("records") or {}
    if not isinstance(variants, dict) or not isinstance(records, dict):
        raise ConfigError(f"{field}.variants': an object of variants is needed")
    if not isinstance(n_steps, int) or isinstance(n_steps, bool) or n_steps < 0:
        raise ConfigError(f"{field}.steps': {n_steps!r} is not a number of steps")
    hyg = variants.get("host_hygiene") or {}
    one = _fastest(variants, records, "host_hygiene", field) if n_steps else None
    if one:
        step = one / n_steps
    elif hyg.get("steps_per_s"):
        step = 1.0 / _number(hyg["steps_per_s"], f"{field}.variants.host_hygiene.steps_per_s'")
    else:
        return None
    graphed = _fastest(variants, records, "compile_graphs", field) if n_steps else None
    jobs, gjobs = [], []
    for name, v in sorted(variants.items()):
        if not name.startswith("jobs_"):
            continue
        if not isinstance(v, dict):
            raise ConfigError(f"{field}.variants.{name}': an object is needed")
        if not v.get("jobs"):
            continue
        k = int(_number(v["jobs"], f"{field}.variants.{name}.jobs'"))
        k_round = _fastest(variants, records, name, field) if one else None
        if v.get("compile", "off") == "graphs":
            if graphed and k_round:
                gjobs.append((k, k * graphed / k_round))
        elif v.get("compile", "off") not in ("off", False):   # compile: default's K jobs: neither factor
            continue
        elif k_round:
            jobs.append((k, k * one / k_round))
        elif v.get("seq_per_s") and hyg.get("seq_per_s"):
            jobs.append((k, float(v["seq_per_s"]) / float(hyg["seq_per_s"])))
    if model is None or batch is None:
        raise ConfigError(f"{field}': the model or batch size of the row is not recorded")
    if not str(batch).isdigit() or int(batch) < 1:
        raise ConfigError(f"{field}.batch_size': {batch!r} is not a batch size")
    shape = None
    # (a stage stopped at its limit writes the window's shape into ``partial`` too: its graphed rounds count)
    if all(isinstance(block.get(f), (int, float)) for f in ("seq_per_step", "real_tokens_per_step",
                                                            "padding_share")):
        if block["seq_per_step"] <= 0:
            raise ConfigError(f"{field}.seq_per_step': {block['seq_per_step']!r} is not a positive number")
        if not 0 <= block["padding_share"] < 1:
            raise ConfigError(f"{field}.padding_share': {block['padding_share']!r} is not a share below 1")
        shape = (block["seq_per_step"], block["real_tokens_per_step"] / (1 - block["padding_share"])
                 / block["seq_per_step"])
    return StepRow(model_size(str(model)), int(batch), step, source, tuple(sorted(jobs)),
                   graphed_s=graphed / n_steps if graphed else None, graphed_factors=tuple(sorted(gjobs)),
                   shape=shape, when=when, gpu=gpu)


def _with_profiles(rows, keyed, bench, what, source, when, gpu) -> list[StepRow]:
    """``rows`` with the CUDA-event device time of the profile of their model, data and batch; a row of its own
    (``profiled``) for a profile no timed row matches."""
    profiles = bench.get("profiles") or (bench.get("partial") or {}).get("profiles") or {}
    if not isinstance(profiles, dict):
        raise ConfigError(f"{what}: field 'profiles': an object of profiles is needed")
    out = list(rows)
    for name, p in profiles.items():
        field = f"{what}: field 'profiles.{name}"
        if not isinstance(p, dict) or not isinstance(p.get("host_hygiene"), dict):
            raise ConfigError(f"{field}.host_hygiene': an object is needed")
        hyg = p["host_hygiene"]
        device = hyg.get("device_ms_per_step") if hyg.get("clock") == "CUDA events" else None
        device = None if device is None else _number(device, f"{field}.host_hygiene.device_ms_per_step'") / 1e3
        if not str(p.get("batch_size")).isdigit() or not p.get("model"):
            raise ConfigError(f"{field}.batch_size': the model and batch size of the profile are needed")
        size, batch = model_size(str(p["model"])), int(p["batch_size"])
        at = keyed.get((size, batch, p.get("data")))
        if at is not None:
            if device is not None:
                out[at] = _replace(out[at], device_s=device)
            continue
        wall = _number(hyg.get("wall_ms_per_step"), f"{field}.host_hygiene.wall_ms_per_step'") / 1e3
        out.append(StepRow(size, batch, wall, f"{source}, profile {name}: under torch.profiler", device_s=device,
                           profiled=True, when=when, gpu=gpu))
    return out


def _replace(row: StepRow, **kw) -> StepRow:
    return StepRow(**{**row.__dict__, **kw})


def _load(path: Path) -> dict:
    try:
        got = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"GPU measurement {path}: field '(top level)': not JSON ({e})") from None
    except OSError as e:
        raise ConfigError(f"GPU measurement {path}: field '(file)': cannot be read ({e.strerror})") from None
    if not isinstance(got, dict):
        raise ConfigError(f"GPU measurement {path}: field '(top level)': an object is needed")
    return got


def _number(v, field: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ConfigError(f"{field}: {v!r} is not a positive number")
    return float(v)


def _arg(argv: list, flag: str, default=None):
    """The value of ``flag``'s last occurrence (as argparse takes it)."""
    at = [i for i, a in enumerate(argv) if a == flag]
    return argv[at[-1] + 1] if at and at[-1] + 1 < len(argv) else default


def _fastest(variants: dict, records: dict, key: str, field: str) -> float | None:
    """The fastest of a variant's timed rounds (seconds), or None where none is recorded."""
    got = (variants.get(key) or {}).get("elapsed_s") or [r.get("elapsed_s") for r in records.get(key) or []]
    if not isinstance(got, list):
        raise ConfigError(f"{field}.variants.{key}.elapsed_s': a list of seconds is needed")
    return min((_number(e, f"{field}.variants.{key}.elapsed_s'") for e in got), default=None)
