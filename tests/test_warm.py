"""Warm job starts (beluga/workflow/warm.py): a local run's jobs run in forked copies of a server that imported
torch, transformers and the package once. A copy writes the bytes a job's own process writes, through the
job's own streams and exit status; the server declines a job whenever anything could differ (another
environment, a changed package, a GPU job) and the job runs in its own process; a job that is killed takes
its copy with it, and so does a server that dies."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ENV, smk

from beluga.workflow import warm

# ---------------------------------------------------------------- the server's decisions (in-process)


def _request(**changes) -> dict:
    req = {"script": __file__, "cwd": "/tmp", "env": {"A": "1", "_": "/bin/x"}, "gpus": 0}
    req.update(changes)
    return req


def test_a_job_is_declined_whenever_anything_could_differ(monkeypatch):
    package = warm._package_state()
    env = {"A": "1"}
    assert warm._decline(_request(), env, package, [0, 1, 2]) is None
    assert "environment differs (A)" in warm._decline(_request(env={"A": "2"}), env, package, [0, 1, 2])
    assert "environment differs (B)" in warm._decline(_request(env={"A": "1", "B": "x"}), env, package, [0, 1, 2])
    # the shell's last command and the server's address are not compared
    assert warm._decline(_request(env={"A": "1", warm.SOCKET_ENV: "/s"}), env, package, [0, 1, 2]) is None
    assert "GPU job" in warm._decline(_request(gpus=1), env, package, [0, 1, 2])
    assert "stdin, stdout and stderr" in warm._decline(_request(), env, package, [0, 1])
    assert "no script" in warm._decline(_request(script="/nonexistent.py"), env, package, [0, 1, 2])
    older = {**package, next(iter(package)): 0}
    assert "package changed" in warm._decline(_request(), env, older, [0, 1, 2])


def test_the_server_runs_with_a_one_thread_jobs_environment(monkeypatch, tmp_path):
    """What Snakemake adds to its environment for a one-thread local job (snakemake/shell.py), and the shell's
    PWD: a job with another thread count is declined."""
    env = warm.job_environment(str(tmp_path), {"HOME": "/root", warm.SOCKET_ENV: "/old"})
    assert {env[v] for v in warm.THREAD_VARS} == {"1"} and env["PWD"] == str(tmp_path)
    assert warm.SOCKET_ENV not in env and env["HOME"] == "/root" and env["TMPDIR"]
    monkeypatch.setenv(warm.SWITCH_ENV, "0")
    assert not warm.wanted(True)
    monkeypatch.setenv(warm.SWITCH_ENV, "1")
    assert warm.wanted(True) == (sys.platform == "linux") and not warm.wanted(False)


# ---------------------------------------------------------------- a server and its jobs (processes)
#: a stand-in workflow script: hands off, then does what params.json in its working folder says (in the copy,
#: or in its own process)
CLIENT = '''
import json, os, sys, time
snakemake = {"resources": {}}   # what a script's preamble gives it (here: a dict)
from beluga.workflow.warm import hand_off
hand_off(snakemake)
params = json.load(open("params.json"))
open("pid", "w").write(str(os.getpid()))
print("stdout of the job", flush=True)
print("stderr of the job", file=sys.stderr, flush=True)
time.sleep(params.get("sleep", 0))
sys.exit(params.get("exit", 0))
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A running server (started as the Snakefile starts it), with the environment its jobs get."""
    wd = tmp_path_factory.mktemp("warm")
    script = wd / "client.py"
    script.write_text(CLIENT)
    saved = dict(os.environ)
    os.environ.update(ENV)
    try:
        proc = warm.start(str(wd))
        job_env = {**warm.job_environment(str(wd)), warm.SOCKET_ENV: os.environ[warm.SOCKET_ENV]}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    sock = Path(job_env[warm.SOCKET_ENV])
    deadline = time.time() + 120
    while not sock.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert sock.exists(), (Path(sock.parent / "server.log").read_text() if sock.parent.exists() else "no log")
    yield {"proc": proc, "env": job_env, "script": script, "wd": wd}
    os.environ[warm.SOCKET_ENV] = str(sock)
    warm.stop(proc)
    assert proc.poll() is not None and not sock.parent.exists()


def _client(server, tmp_path, env=None, **params) -> subprocess.Popen:
    """A job running the stand-in script in ``tmp_path`` (its parameters in params.json there), with the
    environment of a one-thread job (``env`` on top)."""
    (tmp_path / "params.json").write_text(json.dumps(params))
    return subprocess.Popen([sys.executable, str(server["script"])], cwd=tmp_path, env={**server["env"], **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, seconds: float = 30) -> str:
    deadline = time.time() + seconds
    while not (path.exists() and path.read_text()) and time.time() < deadline:
        time.sleep(0.05)
    return path.read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return state not in ("Z", "X")


@pytest.mark.slow
def test_a_job_runs_in_a_copy_with_its_streams_and_exit_status(server, tmp_path):
    proc = _client(server, tmp_path, exit=3)
    out, err = proc.communicate(timeout=60)
    copy = int((tmp_path / "pid").read_text())
    assert copy != proc.pid   # it ran in the server's copy
    assert proc.returncode == 3 and "stdout of the job" in out and "stderr of the job" in err, (out, err)


@pytest.mark.slow
def test_another_environment_runs_the_job_in_its_own_process(server, tmp_path):
    proc = _client(server, tmp_path, env={"OMP_NUM_THREADS": "2"})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert int((tmp_path / "pid").read_text()) == proc.pid and "stdout of the job" in out


@pytest.mark.slow
def test_a_killed_job_takes_its_copy_with_it(server, tmp_path):
    proc = _client(server, tmp_path, sleep=60)
    copy = int(_wait_for(tmp_path / "pid"))
    assert copy != proc.pid and _alive(copy)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    while _alive(copy) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(copy)


@pytest.mark.slow
def test_a_copy_dies_with_its_server_and_the_job_says_so(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "client.py").write_text(CLIENT)
    saved = dict(os.environ)
    os.environ.update(ENV)
    try:
        srv = warm.start(str(wd))
        env = {**warm.job_environment(str(wd)), warm.SOCKET_ENV: os.environ[warm.SOCKET_ENV]}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    sock = Path(env[warm.SOCKET_ENV])
    deadline = time.time() + 120
    while not sock.exists() and time.time() < deadline:
        time.sleep(0.2)
    proc = _client({"env": env, "script": wd / "client.py"}, tmp_path, sleep=60)
    copy = int(_wait_for(tmp_path / "pid"))
    assert copy != proc.pid
    srv.kill()
    srv.wait()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "warm job server stopped" in err, err
    deadline = time.time() + 10
    while _alive(copy) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(copy)
    os.environ[warm.SOCKET_ENV] = str(sock)
    warm.stop(srv)


@pytest.mark.slow
def test_warm_and_cold_jobs_write_the_same_bytes(tiny_run, tmp_path):
    """The tiny run's jobs started warm (the session's real run: their timing lines say so); the IID model's
    predictions and a fold's, run again cold (BELUGA_WARM_JOBS=0) in a copy of it, are the same bytes."""
    from conftest import copy_run

    starts = [json.loads(ln.split(" ", 1)[1])["start"] for p in (tiny_run / "logs").rglob("*.log")
              for ln in p.read_text().splitlines() if ln.startswith("BELUGA_TIMING ")]
    assert starts.count("warm") > len(starts) / 2, starts   # (the first jobs start before the server is ready)
    targets = ["results/sent/predictions/iid/vanilla/standard/all.parquet",
               "results/sent/predictions/iid_to_t/vanilla/type/inv.parquet"]
    run = copy_run(tiny_run, tmp_path / "run")
    ENV[warm.SWITCH_ENV] = "0"
    try:
        smk(run, "--cores", "2", "--force", *targets)
    finally:
        ENV.pop(warm.SWITCH_ENV)
    for t in targets:
        assert (run / t).read_bytes() == (tiny_run / t).read_bytes(), t
    logs = [run / "logs/sent/predict/iid/vanilla/standard/all.log",
            run / "logs/sent/finetune/iid_to_t/vanilla/type/inv.log"]
    assert all('"start": "cold"' in p.read_text() for p in logs if p.exists())
