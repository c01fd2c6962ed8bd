"""Atomic writes: every file a job produces appears complete or not at all, and a command's ``--out``
folder as a whole or not at all."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from beluga.core.errors import BelugaError, DataError, OutputError

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
    except (ProcessLookupError, OverflowError):   # no such process (a pid beyond the system's range: none)
        return False
    except PermissionError:
        return True
    return True


def _lock_record(workdir: Path) -> bytes:
    return (json.dumps({"workdir": str(workdir), "pid": os.getpid(), "host": socket.gethostname(),
                        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2, sort_keys=True) + "\n").encode()


def _create_lock(lock: Path, record: bytes) -> bool:
    """Create ``lock`` holding ``record`` if no lock exists, atomically: True if this call created it. The record
    is written to a temporary sibling and hard-linked as the lock (the link fails when the lock exists, as
    ``O_CREAT | O_EXCL`` does), so no process ever reads a half-written lock. Where hard links are not
    supported, ``O_CREAT | O_EXCL`` and the record written after (an empty lock counts as stale: taken over)."""
    tmp = _tmp_sibling(lock)
    try:
        tmp.write_bytes(record)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, lock)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV,
                               errno.ENOSYS):
                raise
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(record)
        return True
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


@contextlib.contextmanager
def _locked_lock_file(lock: Path):
    """The open lock file under an exclusive ``fcntl.flock``, or None when there is no lock file. Every
    process that reads, decides on and replaces or removes the lock does it under this flock, so a takeover
    is atomic. A lock removed or replaced while this process waited for the flock is opened again: the
    flock must be on the file the path names (read-only: a lock another user wrote can be taken over)."""
    while True:
        try:
            f = open(lock, "rb")
        except FileNotFoundError:
            yield None
            return
        try:
            try:
                fcntl.flock(f, fcntl.LOCK_EX)
            except OSError as e:   # a file system without flock: the check below still narrows the window
                if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.EBADF):
                    raise
            try:
                same = os.fstat(f.fileno()).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield f
                return
        finally:
            f.close()   # closing releases the flock


def _read_lock_record(f) -> dict:
    f.seek(0)
    try:
        held = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return held if isinstance(held, dict) else {}


def acquire_results_lock(folder: str | os.PathLike, workdir: str | os.PathLike) -> Path:
    """Claim ``folder`` (the config's ``results``) for the run in ``workdir``:
    snakemake locks its own working directory, not a results folder that two
    working directories share. A lock of the same working directory, or of a
    process that no longer runs on this host (or an unreadable lock), is taken
    over; one held by a live run of another working directory (or on another
    host, or with no valid pid: a process that cannot be checked) is refused
    in one line.

    The claim is atomic: a new lock is created as a whole only if none exists
    (:func:`_create_lock`), and a takeover reads, decides and replaces the lock
    under an exclusive ``fcntl.flock`` on it (:func:`_locked_lock_file`), so of
    several runs claiming one folder at the same moment exactly one gets it."""

    folder, workdir = Path(folder).absolute(), Path(workdir).absolute()
    lock = folder / RESULTS_LOCK_NAME
    host = socket.gethostname()
    record = _lock_record(workdir)
    with _write_errors(lock):
        folder.mkdir(parents=True, exist_ok=True)
        while True:
            if _create_lock(lock, record):
                return lock
            with _locked_lock_file(lock) as f:
                if f is None:      # released between the two steps: create it again
                    continue
                held = _read_lock_record(f)
                other = held.get("workdir")
                if other and Path(str(other)) != workdir:
                    same_host = held.get("host") == host
                    pid = held.get("pid")
                    checkable = isinstance(pid, int) and not isinstance(pid, bool) and pid > 0
                    if not same_host or not checkable or _alive(pid):   # a process that cannot be checked: held
                        where = f"pid {held.get('pid')} on {held.get('host')}, since {held.get('started')}"
                        raise OutputError(f"output folder {folder}: field 'results': in use by the run in the "
                                          f"working directory {other} ({where}); wait for it to finish, give this "
                                          f"run another results folder, or delete {lock} if that run is gone")
                tmp = _tmp_sibling(lock)   # replaced as a whole, still under the flock of the one replaced
                try:
                    tmp.write_bytes(record)
                    os.chmod(tmp, 0o644)
                    os.replace(tmp, lock)
                finally:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
                return lock


def release_results_lock(folder: str | os.PathLike, workdir: str | os.PathLike) -> None:
    """Remove the lock this working directory holds on ``folder`` (if it holds it), under the lock's flock."""
    lock = Path(folder).absolute() / RESULTS_LOCK_NAME
    try:
        with _locked_lock_file(lock) as f:
            if f is not None and Path(str(_read_lock_record(f).get("workdir", ""))) == Path(workdir).absolute():
                lock.unlink()
    except OSError:
        pass


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


def _identity(path: Path, follow: bool = True) -> tuple[int, int] | None:
    try:
        st = path.stat() if follow else path.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_not_input(command: str, option: str, out: str | os.PathLike,
                    inputs: dict[str, str | os.PathLike | None] | list[tuple[str, str | os.PathLike | None]],
                    nested: bool = False, link: bool = False) -> None:
    """Before any work: the output ``out`` of ``command`` (given as ``option``) is none of its ``inputs``
    (label -> path, or (label, path) pairs) -- not the same resolved path, not the same file (``st_dev`` and
    ``st_ino``: a symbolic or a hard link to it); with ``nested`` (an output folder) neither holds an input
    nor lies inside an input folder; with ``link`` (an output that is a symbolic link to an input, what
    ``data stage`` makes) the link itself is compared, not the file it names. Otherwise one line naming the
    option and both files."""
    o = Path(out).expanduser()
    real = o.parent.resolve() / o.name if link else o.resolve()
    ident = _identity(o, follow=not link)
    for label, path in (inputs.items() if isinstance(inputs, dict) else inputs):
        if not path:
            continue
        p = Path(path).expanduser()
        rp = p.resolve()
        how = None
        if rp == real or (ident is not None and ident == _identity(p)):
            how = f"is the {label} itself ({path}, the same file)"
        elif nested and real in rp.parents:
            how = f"holds the {label} {path}"
        elif nested and rp in real.parents:
            how = f"lies inside the {label} {path}"
        if how:
            raise BelugaError(f"output {out}: field '{option}': {how} that {command} reads; {command} never "
                              f"writes over its inputs: choose another {option}")


def _is_leftover(name: str) -> bool:
    """A temporary file of an interrupted atomic write (``.<name>.*.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def _hidden_earlier(target: Path) -> list[Path]:
    """The hidden ``.<name>.XXXXXXXX.old`` siblings of ``target`` (the name :func:`write_out_folder` gives
    the earlier folder during its swap): an earlier run's folder that an interrupted swap left behind,
    newest first."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.old")
    try:
        found = [p for p in target.parent.iterdir() if pattern.fullmatch(p.name) and p.is_dir()
                 and not p.is_symlink()]
        return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []


def _holds(folder: Path) -> str:
    try:
        names = sorted(e.name for e in folder.iterdir())
    except OSError:
        return "unreadable"
    if not names:
        return "nothing"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(folder.stat().st_mtime))
    return (f"{len(names)} file(s): {', '.join(names[:5])}" + (", ..." if len(names) > 5 else "")
            + f"; last written {when}")


def recover_out_folder(command: str, out_dir: str) -> list[str]:
    """An earlier run's ``--out`` folder that an interrupted swap (:func:`write_out_folder`) left only in a
    hidden ``.<name>.*.old`` sibling is never lost silently: when ``out_dir`` is missing, the newest such
    folder is renamed back to ``out_dir`` (restored); every one still hidden after that is reported. Returns
    the lines (one per folder), which are also printed to stderr as ``warning: ...``; deletes nothing."""
    out = Path(out_dir).expanduser()
    target = Path(os.path.realpath(out)) if out.is_symlink() else out.absolute()   # as write_out_folder
    if target.exists() and not target.is_dir():
        return []
    hidden = _hidden_earlier(target)
    lines = []
    if hidden and not target.exists():
        try:
            os.rename(hidden[0], target)
        except OSError as e:
            lines.append(f"output folder {out_dir}: field '--out': is missing and an interrupted earlier {command} "
                         f"left the earlier folder hidden in {hidden[0]} ({_holds(hidden[0])}), which cannot be "
                         f"restored ({' '.join(str(e.strerror or e).split())}): move it back to {out_dir} by hand")
        else:
            lines.append(f"output folder {out_dir}: field '--out': restored from {hidden[0]}, where an interrupted "
                         f"earlier {command} had left it hidden ({_holds(target)})")
        hidden = hidden[1:]
    for h in hidden:
        lines.append(f"output folder {out_dir}: field '--out': an interrupted earlier {command} left an earlier "
                     f"folder hidden in {h} ({_holds(h)}); kept: look through it and move or delete it")
    for line in lines:
        print(f"warning: {line}", file=sys.stderr)
    return lines


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
    recover_out_folder(command, out_dir)
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


def _put_back(old: Path | None, target: Path) -> None:
    """The earlier folder renamed aside by a swap that did not finish, renamed back (if ``target`` is free)."""
    if old is not None and old.exists() and not target.exists():
        with contextlib.suppress(OSError):
            os.rename(old, target)


def write_out_folder(out_dir: str, writers: dict) -> None:
    """Write ``--out`` as a whole or not at all: every file (name ->
    ``writer(path)``) into a temporary sibling folder, then that folder
    swapped in for ``out_dir``: the earlier run's folder, if any, renamed to
    a hidden ``.<name>.*.old`` sibling, the new one renamed in, then the
    earlier one removed. A failure (an exception, Ctrl-C included) leaves the
    earlier folder as it was (or none) and no file of this run; an error
    names the final file. A process killed between the two renames leaves
    the earlier folder only in the hidden sibling: the next
    :func:`check_out_folder` restores it (or reports it). Call
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
        _put_back(old, target)
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OutputError):
            raise
        raise output_error(out_dir, e, what="output folder", field="--out") from None
    except BaseException:   # e.g. Ctrl-C between the two renames: the earlier folder back where it was
        _put_back(old, target)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)
