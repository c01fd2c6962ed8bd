"""Warm job starts: a local run's jobs run in forked copies of one process that has imported what they import.

A job of this workflow is a new Python process that imports pandas, torch (with its compiler, which
transformers' model code imports), transformers and this package before it does any work: about 4.5 s of
CPU, against a fraction of a second of training a tiny model, or a minute of a real one. In a local run
(Snakemake's local executor; ``warm_jobs: true``, the default) the Snakefile's ``onstart`` starts a job
server (:func:`start`): one process that imports all of it once and waits on a Unix socket. Every workflow
script's first call is :func:`hand_off`: the job process sends the server the path of the script it runs
(Snakemake's temporary script: the preamble that gives it its ``snakemake`` object, then the workflow
script), its working folder, its environment and its stdin / stdout / stderr; the server forks, and the copy
runs that same file, writing to the job's own output streams, while the job process waits for it and exits
with its exit status.
A fork starts with its modules imported and nothing run: a job gets the same inputs, settings and seeds, and
writes the same bytes, as a job that imported everything itself (tests/test_warm.py compares them).

The server declines a job, which then runs in its own process as it always did, whenever anything could
differ:

- the job's environment is not the server's (a variable read when a library is imported, such as a thread
  count or a Hugging Face setting, would keep the server's value): the server runs with the environment
  Snakemake gives a one-thread job, so a job with another thread count (the IID model) runs in its own process;
- a file of this package changed since the server imported it;
- the server is not single-threaded after its imports (a fork copies only the thread that forks: a library
  that had started a thread pool would hang in the copy), or it is busy starting.

A job whose process is killed (Ctrl-C, a timeout) takes its copy with it: the server kills a copy whose job
has gone. The server stops when the run ends or when Snakemake is gone. What changes for the user: the job's
``benchmark`` file times the job as before (wall seconds), but its CPU time and memory are the waiting
process's, not the copy's (``warm_jobs: false`` for those figures; docs/PIPELINE.md).
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

#: where a job finds its run's server (set by :func:`start` in Snakemake's process, inherited by local jobs)
SOCKET_ENV = "BELUGA_WARM_SOCKET"
#: the variables the server's environment adds to Snakemake's, as Snakemake sets them for a one-thread job
#: (snakemake/shell.py) with the default temporary folder (its ``tmpdir`` resource)
THREAD_VARS = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
TMP_VARS = ("TMPDIR", "TEMP", "TMP", "TEMPDIR")
#: variables a job's environment may differ in: the shell's last command, and the server's own address
IGNORED_VARS = ("_", SOCKET_ENV)
#: pyarrow's jemalloc settings (its background thread off: see :func:`start`)
JEMALLOC_ENV = "JE_ARROW_MALLOC_CONF"
#: ``BELUGA_WARM_JOBS=0``: no server; every job imports what it needs itself
SWITCH_ENV = "BELUGA_WARM_JOBS"
#: what the server imports before it serves (the jobs' heavy imports; a module a job needs beyond these is
#: imported by its copy)
PRELOAD = ("numpy", "pandas", "pyarrow.parquet", "torch", "transformers", "transformers.modeling_utils",
           "transformers.masking_utils", "transformers.models.bert.modeling_bert",
           "transformers.models.auto.modeling_auto", "transformers.models.auto.tokenization_auto",
           "beluga.steps.data", "beluga.steps.train", "beluga.steps.evaluate", "beluga.steps.aggregate",
           "beluga.steps.statistics", "beluga.steps.plots", "beluga.steps.ood", "beluga.steps.inoculation",
           "beluga.steps.combinational", "beluga.train.fold", "beluga.train.loop", "beluga.model.modeling",
           "beluga.score.predict")

_IN_COPY = False   # True in a forked copy: hand_off returns at once


# ---------------------------------------------------------------- the job's side
def in_copy() -> bool:
    """Whether this process is a server's copy running a job (its timing line says ``warm``)."""
    return _IN_COPY


def hand_off(snakemake) -> None:
    """A workflow script's first call: in a local run with a job server, have the server's forked copy run
    this job's script and exit with its exit status; otherwise (no server, or it declined) return, and the
    script goes on in this process. The copy runs the very file this process runs (Snakemake's temporary
    script: its preamble, which unpickles this ``snakemake`` object, then the workflow script), so it gets the
    same object the way this process got it."""
    path = os.environ.get(SOCKET_ENV)
    if _IN_COPY or not path:
        return
    script = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError as e:
        if os.environ.get("BELUGA_WARM_DEBUG"):
            print(f"warm job server: not reached ({e})", file=sys.stderr)
        return   # no server (not started, already stopped, or another machine's): run here
    res = getattr(snakemake, "resources", None) or {}
    gpus = sum(int(res.get(k, 0) or 0) for k in ("gpu", "gpu_slot") if isinstance(res.get(k, 0), (int, float)))
    with conn:
        request = json.dumps({"script": script, "cwd": os.getcwd(), "env": dict(os.environ),
                              "gpus": gpus}).encode()
        try:
            socket.send_fds(conn, [struct.pack("!I", len(request))], [0, 1, 2])
            conn.sendall(request)
            answer = _read_line(conn)
        except OSError:
            return
        if os.environ.get("BELUGA_WARM_DEBUG"):
            print(f"warm job server: {answer}", file=sys.stderr)
        if not answer.startswith("PID "):   # declined: run here
            return
        status = _read_line(conn)
    code = int(status.split()[1]) if status.startswith("EXIT ") else 1
    if not status.startswith("EXIT "):
        print("error: the run's warm job server stopped while it ran this job (rerun the job)", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _read_line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(256)
        if not chunk:
            return data.decode(errors="replace")
        data += chunk
    return data.decode(errors="replace").strip()


# ---------------------------------------------------------------- starting and stopping (the Snakefile)
def job_environment(workdir: str, base: dict | None = None) -> dict:
    """The environment Snakemake gives a one-thread local job in ``workdir``: its own, the thread counts at 1,
    the temporary folder variables, and the shell's ``PWD`` (the job's command runs in a shell)."""
    env = dict(os.environ if base is None else base)
    env.update({v: "1" for v in THREAD_VARS})
    env.update({v: tempfile.gettempdir() for v in TMP_VARS})
    env["PWD"] = workdir
    env.pop(SOCKET_ENV, None)
    return env


def wanted(local: bool) -> bool:
    """Whether a run starts a server: a local run (Snakemake's local executor: a cluster's jobs run on other
    machines, under the scheduler's accounting) on Linux (a copy dies with its server: ``PR_SET_PDEATHSIG``)
    unless ``BELUGA_WARM_JOBS=0``."""
    return (local and sys.platform == "linux"
            and os.environ.get(SWITCH_ENV, "1") not in ("0", "false", "False", ""))


def start(workdir: str) -> subprocess.Popen | None:
    """Start the run's job server (from the Snakefile's ``onstart``: Snakemake's process is its parent) and
    point this process's jobs at it. Returns the server process."""
    # pyarrow's allocator (jemalloc) starts a purging thread when pandas is imported: not in a process that
    # forks; the run's jobs get the same setting, whether they start warm or not
    os.environ.setdefault(JEMALLOC_ENV, "background_thread:false")
    folder = tempfile.mkdtemp(prefix="beluga-warm-")   # a short path: a Unix socket's is at most 107 bytes
    path = os.path.join(folder, "jobs.sock")
    with open(os.path.join(folder, "server.log"), "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "beluga.workflow.warm", path, str(os.getpid())],
                                env=job_environment(workdir), cwd=workdir, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    os.environ[SOCKET_ENV] = path
    return proc


def stop(proc: subprocess.Popen | None) -> None:
    """Stop the run's server (``onsuccess`` / ``onerror``) and forget its socket."""
    path = os.environ.pop(SOCKET_ENV, None)
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    if path:
        for p in (path, os.path.join(os.path.dirname(path), "server.log")):
            try:
                os.unlink(p)
            except OSError:
                pass
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass


# ---------------------------------------------------------------- the server
def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1   # unknown: not served


def _package_state() -> dict[str, int]:
    root = Path(__file__).resolve().parents[1]
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*.py")}


def serve(path: str, parent: int) -> int:
    """The server's loop: import :data:`PRELOAD`, check that this process is single-threaded, listen on
    ``path``; for each job, decline it or fork a copy that runs it; report each copy's exit status to its
    job; kill a copy whose job has gone; stop when ``parent`` (Snakemake) is gone or on SIGTERM."""
    started = time.time()
    env = {k: v for k, v in os.environ.items() if k not in IGNORED_VARS}   # a job's, before its imports
    for name in PRELOAD:
        importlib.import_module(name)
    package = _package_state()
    # what the imports set (torch: TORCHINDUCTOR_CACHE_DIR...): a copy's environment is its job's plus these,
    # as a job's own process would have after the same imports
    added = {k: v for k, v in os.environ.items() if k not in IGNORED_VARS and env.get(k) != v}
    threads = _threads()
    if threads != 1:
        print(f"warm job server: {threads} threads after the imports, not 1: no job is served", file=sys.stderr)
        return 0
    import torch

    if torch.cuda.is_initialized():   # a fork cannot use a CUDA context its parent started
        print("warm job server: CUDA started by the imports: no job is served", file=sys.stderr)
        return 0
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)   # the socket appears only once the server is ready
    print(f"warm job server: ready in {time.time() - started:.1f} s", file=sys.stderr, flush=True)
    copies: dict[int, socket.socket] = {}   # pid -> its job's connection
    try:
        while not stopping and os.getppid() == parent:
            ready, _, _ = select.select([listener, *copies.values()], [], [], 0.5)
            for conn in ready:
                if conn is listener:
                    _accept(listener, env, added, package, copies)
                else:   # a job's connection readable: the job has gone (it sends nothing after its request)
                    pid = next(p for p, c in copies.items() if c is conn)
                    _kill(pid)
            _reap(copies)
    finally:
        for pid in list(copies):
            _kill(pid)
        _reap(copies, block=True)
        listener.close()
    return 0


def _accept(listener, env: dict, added: dict, package: dict, copies: dict) -> None:
    conn, _ = listener.accept()
    try:
        msg, fds, _, _ = socket.recv_fds(conn, 4, 3)
        (n_request,) = struct.unpack("!I", msg)
        data = b""
        while len(data) < n_request:
            chunk = conn.recv(min(1 << 20, n_request - len(data)))
            if not chunk:
                raise OSError("the job closed its connection")
            data += chunk
        request = json.loads(data)
    except (OSError, ValueError, struct.error):
        conn.close()
        return
    why = _decline(request, env, package, fds)
    if why:
        for fd in fds:
            os.close(fd)
        conn.sendall(f"DECLINE {why}\n".encode())
        conn.close()
        return
    pid = os.fork()
    if pid == 0:   # the copy
        _run_copy(listener, conn, copies, fds, {**request, "env": {**request["env"], **added}})
    for fd in fds:
        os.close(fd)
    copies[pid] = conn
    conn.sendall(f"PID {pid}\n".encode())


def _decline(request: dict, env: dict, package: dict, fds: list) -> str | None:
    if len(fds) != 3:
        return "not given the job's stdin, stdout and stderr"
    if request.get("gpus"):
        return "a GPU job (its CUDA context is started in its own process)"
    theirs = {k: v for k, v in request["env"].items() if k not in IGNORED_VARS}
    if theirs != env:
        keys = sorted(k for k in theirs.keys() | env.keys() if theirs.get(k) != env.get(k))
        return f"the job's environment differs ({', '.join(keys[:5])})"
    if _package_state() != package:
        return "the package changed since the server imported it"
    if not os.path.isfile(request["script"]):
        return "no script"
    return None


def _run_copy(listener, conn, copies: dict, fds: list, request: dict) -> None:
    """In the forked copy: become the job (its streams, folder, environment) and run its script (as
    ``python SCRIPT`` would: a ``__main__`` namespace with the script's ``__file__``)."""
    global _IN_COPY
    code = 1
    try:
        _IN_COPY = True
        _die_with_parent()
        listener.close()
        conn.close()
        for other in copies.values():
            other.close()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        sys.stdin, sys.stdout, sys.stderr = (open(0, closefd=False), open(1, "w", closefd=False),
                                             open(2, "w", closefd=False))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        script = request["script"]
        sys.argv = [script]
        source = Path(script).read_text()
        exec(compile(source, script, "exec"), {"__name__": "__main__", "__file__": script,
                                               "__builtins__": __builtins__})
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _die_with_parent() -> None:
    """The copy is killed when the server dies (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``): a job whose
    server has gone is never left running beside its rerun."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:   # PR_SET_PDEATHSIG
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() == 1:   # the server died before the call
        os._exit(1)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap(copies: dict, block: bool = False) -> None:
    for pid in list(copies):
        try:
            done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 1 << 8
        if done:
            conn = copies.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            try:
                conn.sendall(f"EXIT {code if code >= 0 else 128 - code}\n".encode())
            except OSError:
                pass
            conn.close()


if __name__ == "__main__":   # (python -m: the module is __main__; the copies' scripts import beluga.workflow.warm)
    from beluga.workflow import warm

    sys.exit(warm.serve(sys.argv[1], int(sys.argv[2])))
