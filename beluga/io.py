"""Atomic writes: every file a job produces appears complete or not at all, and a command's ``--out``
folder as a whole or not at all."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from beluga.errors import BelugaError, DataError, OutputError

# errors that mean "this output cannot be written here" (read-only or full disk,
# no permission): reported as one line naming the file instead of a traceback
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG})


def output_error(path: str | os.PathLike, e: OSError, what: str = "output file", field: str = "path") -> OutputError:
    """An OutputError (a BelugaError and an OSError) naming the file (or folder) that cannot be written."""
    reason = " ".join(str(e.strerror or e).split())
    code = errno.errorcode.get(e.errno or 0)
    err = OutputError(f"{what} {path}: field '{field}': cannot be written: {reason}" + (f" ({code})" if code else ""))
    err.errno = e.errno
    return err


def _errno_of(e: BaseException) -> int | None:
    """The OS error number inside an exception from a library that wraps it in
    its own type (safetensors: ``... Os { code: 28, ... }`` / ``os error 28``)."""
    m = re.search(r"(?:code: |os error )(\d+)", str(e))
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def _write_errors(path: Path):
    """Re-raise an OSError (or a library error wrapping one, e.g. safetensors')
    that means ``path`` cannot be written as an OutputError naming it."""
    try:
        yield
    except OutputError:
        raise
    except OSError as e:
        if e.errno in WRITE_ERRNOS:
            raise output_error(path, e) from None
        raise
    except Exception as e:
        code = _errno_of(e) if type(e).__name__ == "SafetensorError" else None
        if code in WRITE_ERRNOS:
            raise output_error(path, OSError(code, os.strerror(code))) from None
        raise


def read_parquet(path: str | os.PathLike, what: str = "file", columns: list[str] | None = None) -> pd.DataFrame:
    """A Parquet input, or one line naming it when it is missing or unreadable
    (a truncated or corrupted file: delete it, and snakemake re-creates it)."""
    try:
        return pd.read_parquet(path, columns=columns)
    except FileNotFoundError:
        raise DataError(f"{what} {path}: field 'path': file does not exist") from None
    except (pa.ArrowInvalid, OSError) as e:
        reason = " ".join(str(e).split())[:200]
        raise DataError(f"{what} {path}: field 'path': not a readable Parquet file ({reason}); delete it and run "
                        "snakemake again, which re-creates it from its inputs") from None


def _tmp_sibling(path: Path, suffix: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f"{suffix}.tmp", dir=path.parent)
    os.close(fd)
    return Path(name)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary sibling path; rename it onto ``path`` only on success."""
    path = Path(path)
    with _write_errors(path):
        tmp = _tmp_sibling(path)
        try:
            yield tmp
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary sibling directory; it replaces ``path`` only on success."""
    path = Path(path)
    with _write_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            yield tmp
            for f in tmp.rglob("*"):
                os.chmod(f, 0o755 if f.is_dir() else 0o644)
            os.chmod(tmp, 0o755)
            if path.exists():
                shutil.rmtree(path)
            os.replace(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def write_parquet(df: pd.DataFrame | pa.Table, path: str | os.PathLike,
                  metadata: dict[str, str] | None = None) -> None:
    table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): v.encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


def write_json(obj, path: str | os.PathLike) -> None:
    write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", path)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def check_writable(folder: str | os.PathLike, field: str = "results") -> None:
    """Fail early, with one line naming the folder and the config field, when
    outputs cannot be created under ``folder`` (read-only file system, no
    permission): the nearest existing ancestor must be a writable folder."""
    path = Path(folder).absolute()
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(f"output folder {folder}: field '{field}': {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        try:  # access() is not the last word (e.g. some network file systems): try for real
            tempfile.TemporaryDirectory(prefix=".beluga-probe.", dir=probe).cleanup()
        except OSError as e:
            raise output_error(folder, e, what="output folder", field=field) from None


# ---------------------------------------------------------------- one run per results folder
RESULTS_LOCK_NAME = ".beluga-run.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def acquire_results_lock(folder: str | os.PathLike, workdir: str | os.PathLike) -> Path:
    """Claim ``folder`` (the config's ``results``) for the run in ``workdir``:
    snakemake locks its own working directory, not a results folder that two
    working directories share. A lock of the same working directory, or of a
    process that no longer runs on this host, is taken over; one held by a
    live run of another working directory (or on another host, whose process
    cannot be checked) is refused in one line."""

    folder, workdir = Path(folder).absolute(), Path(workdir).absolute()
    lock = folder / RESULTS_LOCK_NAME
    host = socket.gethostname()
    if lock.exists():
        try:
            held = json.loads(lock.read_text())
        except (OSError, ValueError):
            held = {}
        other = held.get("workdir")
        if other and Path(other) != workdir:
            same_host = held.get("host") == host
            if not same_host or _alive(int(held.get("pid", -1))):
                where = f"pid {held.get('pid')} on {held.get('host')}, since {held.get('started')}"
                raise OutputError(f"output folder {folder}: field 'results': in use by the run in the working "
                                  f"directory {other} ({where}); wait for it to finish, give this run another "
                                  f"results folder, or delete {lock} if that run is gone")
    folder.mkdir(parents=True, exist_ok=True)
    write_json({"workdir": str(workdir), "pid": os.getpid(), "host": host,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, lock)
    return lock


def release_results_lock(folder: str | os.PathLike, workdir: str | os.PathLike) -> None:
    """Remove the lock this working directory holds on ``folder`` (if it holds it)."""
    lock = Path(folder).absolute() / RESULTS_LOCK_NAME
    try:
        held = json.loads(lock.read_text())
    except (OSError, ValueError):
        return
    if Path(held.get("workdir", "")) == Path(workdir).absolute():
        with contextlib.suppress(OSError):
            lock.unlink()


# ---------------------------------------------------------------- an output folder written as a whole
def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file (the same inode when both exist, else the same resolved path)."""
    x, y = Path(a), Path(b)
    try:
        if x.exists() and y.exists():
            return x.samefile(y)
    except OSError:
        pass
    return x.resolve() == y.resolve()


def _is_leftover(name: str) -> bool:
    """A temporary file of an interrupted atomic write (``.<name>.*.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def check_out_folder(command: str, out_dir: str, own: tuple[str, ...],
                     inputs: dict[str, str | None] | list[tuple[str, str | None]]) -> None:
    """Before any work: ``--out`` can be replaced as a whole by what
    ``command`` writes (``own``), or one line says why not -- it is a file,
    the working directory (or holds it), it holds one of the command's
    ``inputs`` (label -> path, or (label, path) pairs where a label repeats:
    the suite, the predictions, each model folder; checked in that order),
    or it holds files the command does not write (never deleted: choose a new
    or empty folder, or one an earlier run of the command wrote)."""
    out = Path(out_dir)
    where = f"output folder {out_dir}: field '--out'"
    if out.exists() and not out.is_dir():
        raise BelugaError(f"{where}: is a file, not a folder")
    real = Path(out_dir).expanduser().resolve()
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise BelugaError(f"{where}: is the working directory or holds it; {command} replaces its --out folder "
                          "as a whole: name a folder of its own, e.g. --out results")
    for label, path in (inputs.items() if isinstance(inputs, dict) else inputs):
        if not path:
            continue
        p = Path(path).expanduser()
        if not p.exists():
            continue
        rp = p.resolve()
        inside = rp == real or real in rp.parents
        same = any((out / name).exists() and same_file(out / name, p) for name in own)
        if inside or same:
            raise BelugaError(f"{where}: holds the {label} {path} that {command} reads, and {command} replaces the "
                              "folder as a whole; choose another --out")
    if out.is_dir():
        foreign = sorted(e.name for e in out.iterdir() if e.name not in own and not _is_leftover(e.name))
        if foreign:
            shown = ", ".join(foreign[:3]) + (f", ... ({len(foreign)} in all)" if len(foreign) > 3 else "")
            raise BelugaError(f"{where}: holds {len(foreign)} file(s) {command} does not write ({shown}); "
                              f"{command} replaces its --out folder as a whole (its files: {', '.join(own)}): "
                              "choose a new or empty folder, or one an earlier run wrote")


def write_out_folder(out_dir: str, writers: dict) -> None:
    """Write ``--out`` as a whole or not at all: every file (name ->
    ``writer(path)``) into a temporary sibling folder, then that folder
    swapped in for ``out_dir`` (the earlier run's folder, if any, removed
    after). A failure leaves the earlier folder as it was (or none) and no
    file of this run; an error names the final file. Call
    :func:`check_out_folder` first."""
    out = Path(out_dir).expanduser()
    target = Path(os.path.realpath(out)) if out.is_symlink() else out.absolute()
    first = Path(out_dir) / next(iter(writers))

    def reason(e: OSError) -> str:
        return " ".join(str(e.strerror or e).split())
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as e:
        if target.is_dir() and e.errno in WRITE_ERRNOS and not os.access(target, os.W_OK):
            raise output_error(first, e) from None   # the folder itself cannot be written either
        if target.is_dir():
            raise BelugaError(f"output folder {out_dir}: field '--out': cannot be replaced as a whole: "
                              f"{target.parent} is not writable ({reason(e)}); choose an --out in a writable "
                              "folder") from None
        raise BelugaError(f"output folder {out_dir}: field '--out': cannot be created: {reason(e)}") from None
    old = None
    try:
        for name, write in writers.items():
            try:
                write(tmp / name)
            except OutputError as e:   # named after the staging folder: name the file the user asked for
                code = getattr(e, "errno", None) or errno.EIO
                raise output_error(Path(out_dir) / name, OSError(code, os.strerror(code))) from None
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        os.chmod(tmp, 0o755)
        if target.exists():
            old = target.parent / f"{tmp.name[:-len('.tmp')]}.old"
            os.rename(target, old)
        try:
            os.rename(tmp, target)
        except OSError:
            if old is not None:
                os.rename(old, target)
                old = None
            raise
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OutputError):
            raise
        raise output_error(out_dir, e, what="output folder", field="--out") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)
