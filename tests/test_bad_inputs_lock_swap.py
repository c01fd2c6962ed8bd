"""The bad-input catalogue, concurrent and interrupted runs (issue 36, round 4;
the conventions of tests/test_bad_inputs.py):

- the results lock (``io.acquire_results_lock``) is claimed atomically: of
  several processes claiming one results folder at the same moment (released
  together by a barrier) exactly one gets it, in every trial -- for a new lock
  and for the takeover of a stale one (a dead process's lock);
- a ``--out`` swap (``io.write_out_folder``) killed between its two renames
  leaves the earlier run's folder only in a hidden ``.<name>.*.old`` sibling:
  the next run restores it when the visible folder is missing, reports it in
  one line otherwise, and deletes nothing.
"""

import hashlib
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_tiny_suite, score_argv

from beluga.cli import main
from beluga.cli.score import SCORE_OUTPUTS
from beluga.core import io
from beluga.core.errors import OutputError
from beluga.suites.format import save_suite

REPO = Path(__file__).resolve().parents[1]
DEAD_PID = 2**22 + 12345          # beyond any Linux pid_max: no such process


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- the results lock: one winner
def _claimer(root: str, idx: int, trials: int, barrier, results) -> None:
    """Claim ``root/<trial>`` for the working directory ``wd<idx>`` once per trial, all workers released by
    ``barrier`` at the same moment; stay alive until every worker is done (a winner's pid must be alive)."""
    for t in range(trials):
        barrier.wait()
        try:
            io.acquire_results_lock(Path(root) / str(t), Path(root) / f"wd{idx}")
            results.put((t, idx, "won"))
        except OutputError as e:
            results.put((t, idx, "refused" if "in use by the run in the working directory" in str(e) else str(e)))
        except Exception as e:   # anything else is a failure of the test
            results.put((t, idx, f"{type(e).__name__}: {e}"))
    barrier.wait()


def race(root: Path, workers: int, trials: int) -> dict[int, list[str]]:
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(str(root), i, trials, barrier, results)) for i in range(workers)]
    for p in procs:
        p.start()
    outcome: dict[int, list[str]] = {}
    for _ in range(workers * trials):
        t, _i, what = results.get(timeout=120)
        outcome.setdefault(t, []).append(what)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return outcome


def check_one_winner(outcome: dict[int, list[str]], workers: int, trials: int) -> None:
    assert sorted(outcome) == list(range(trials))
    bad = {t: o for t, o in outcome.items() if sorted(o) != ["refused"] * (workers - 1) + ["won"]}
    assert not bad, f"{len(bad)} of {trials} trials without exactly one winner: {list(bad.items())[:3]}"


@pytest.mark.slow
def test_results_lock_race_new_lock(tmp_path):
    """Four processes claim a fresh results folder at the same moment: exactly one wins, 50 trials of 50."""
    workers, trials = 4, 50
    outcome = race(tmp_path, workers, trials)
    check_one_winner(outcome, workers, trials)
    for t in range(trials):   # the lock names the winner; no temporary file is left
        held = json.loads((tmp_path / str(t) / io.RESULTS_LOCK_NAME).read_text())
        assert held["host"] == socket.gethostname() and Path(held["workdir"]).name.startswith("wd")
        assert sorted(os.listdir(tmp_path / str(t))) == [io.RESULTS_LOCK_NAME]


@pytest.mark.slow
def test_results_lock_race_stale_takeover(tmp_path):
    """A dead process's lock, taken over by four processes at the same moment: exactly one wins, every trial."""
    workers, trials = 4, 50
    for t in range(trials):
        (tmp_path / str(t)).mkdir()
        (tmp_path / str(t) / io.RESULTS_LOCK_NAME).write_text(json.dumps(
            {"workdir": str(tmp_path / "gone"), "pid": DEAD_PID, "host": socket.gethostname(), "started": "earlier"}))
    outcome = race(tmp_path, workers, trials)
    check_one_winner(outcome, workers, trials)


def test_results_lock_semantics(tmp_path):
    """In one process: the rules a claim follows (the same as before the lock became atomic)."""
    folder, a, b = tmp_path / "results", tmp_path / "a", tmp_path / "b"
    lock = io.acquire_results_lock(folder, a)                      # a new lock
    assert json.loads(lock.read_text())["workdir"] == str(a)
    assert io.acquire_results_lock(folder, a) == lock              # the same working directory: taken over
    with pytest.raises(OutputError) as excinfo:                    # another working directory, this live process
        io.acquire_results_lock(folder, b)
    msg = str(excinfo.value)
    assert "\n" not in msg and f"output folder {folder}: field 'results'" in msg
    assert f"in use by the run in the working directory {a}" in msg and f"delete {lock}" in msg
    io.release_results_lock(folder, b)                             # not b's: kept
    assert lock.exists()
    io.release_results_lock(folder, a)
    assert not lock.exists()
    host = socket.gethostname()
    for held, taken in [({"workdir": str(a), "pid": DEAD_PID, "host": host}, True),          # dead process
                        ({"workdir": str(a), "pid": 2**70, "host": host}, True),             # beyond any pid
                        ({"workdir": str(a), "pid": os.getpid(), "host": "elsewhere"}, False),   # another host
                        ({"workdir": str(a), "pid": "12", "host": host}, False),             # cannot be checked
                        ({"workdir": str(a), "host": host}, False),
                        ("not json {", True), ([1, 2], True), ("", True)]:                # unreadable: stale
        lock.write_text(held if isinstance(held, str) else json.dumps(held))
        if taken:
            io.acquire_results_lock(folder, b)
            assert json.loads(lock.read_text())["workdir"] == str(b), held
        else:
            with pytest.raises(OutputError, match="in use by the run"):
                io.acquire_results_lock(folder, b)
            assert lock.read_text() == json.dumps(held)
    # a stale lock this user cannot write (another user's, in a shared folder) is replaced as a whole
    lock.write_text(json.dumps({"workdir": str(a), "pid": DEAD_PID, "host": host}))
    lock.chmod(0o444)
    io.acquire_results_lock(folder, b)
    assert json.loads(lock.read_text())["workdir"] == str(b)
    assert sorted(os.listdir(folder)) == [io.RESULTS_LOCK_NAME]


# ---------------------------------------------------------------- an interrupted --out swap
def earlier_run(out: Path) -> dict[str, str]:
    io.write_out_folder(str(out), {name: (lambda p, n=name: Path(p).write_text(f"earlier {n}"))
                                   for name in SCORE_OUTPUTS})
    return digest(out)


KILLED_SWAP = """
import os, signal, sys
from pathlib import Path
from beluga.core import io
real, calls = os.rename, []
def rename(a, b):   # the second rename of the swap (the new folder in) never happens: killed before it
    calls.append(a)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    real(a, b)
io.os.rename = rename
io.write_out_folder(sys.argv[1], {n: (lambda p, n=n: Path(p).write_text("new " + n)) for n in sys.argv[2:]})
"""


def killed_swap(out: Path) -> None:
    """``write_out_folder`` into ``out`` in a process killed (SIGKILL) between the swap's two renames."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", KILLED_SWAP, str(out), *SCORE_OUTPUTS], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


@pytest.mark.slow
def test_killed_swap_is_restored_by_the_next_run(tmp_path, capsys):
    out = tmp_path / "scored"
    before = earlier_run(out)
    killed_swap(out)
    hidden = [p for p in tmp_path.iterdir() if p.name.endswith(".old")]
    assert not out.exists() and len(hidden) == 1 and digest(hidden[0]) == before     # what the issue found
    capsys.readouterr()
    io.check_out_folder("score", str(out), SCORE_OUTPUTS, {})
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"warning: output folder {out}: field '--out': restored from "
                                               f"{hidden[0]}"), err
    assert "5 file(s): cases.parquet, functionalities.csv, run.json, summary.html, summary.md" in err[0]
    assert digest(out) == before and not hidden[0].exists()
    # nothing more to say the next time
    io.check_out_folder("score", str(out), SCORE_OUTPUTS, {})
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_killed_swap_is_reported_when_the_folder_is_back(tmp_path, capsys):
    """The visible folder exists again (a later run wrote it before this fix): the hidden earlier folder is named
    in one line with what it holds, every run, and neither folder is touched."""
    out = tmp_path / "scored"
    before = earlier_run(out)
    killed_swap(out)
    hidden = next(p for p in tmp_path.iterdir() if p.name.endswith(".old"))
    out.mkdir()
    (out / "cases.parquet").write_text("later")
    later = digest(out)
    for _ in range(2):
        capsys.readouterr()
        io.check_out_folder("score", str(out), SCORE_OUTPUTS, {})
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1, err
        assert err[0].startswith(f"warning: output folder {out}: field '--out': an interrupted earlier score left "
                                 f"an earlier folder hidden in {hidden} (5 file(s): cases.parquet, "
                                 "functionalities.csv, run.json, summary.html, summary.md; last written "), err
        assert "kept" in err[0]
        assert digest(out) == later and digest(hidden) == before


def test_score_restores_a_hidden_earlier_folder(tmp_path, capsys):
    """Through the command line: ``score`` into an --out whose earlier folder an interrupted swap hid restores it,
    says so in one line, then replaces it as a whole; the earlier folder is deleted only by the swap that
    completes."""
    suites = tmp_path / "suites"
    suites.mkdir()
    save_suite(make_tiny_suite(2), suites / "sent.parquet")
    out = tmp_path / "scored"
    argv = score_argv(suites / "sent.parquet", tmp_path, out)
    assert main(argv) == 0
    hidden = tmp_path / ".scored.abcd_123.old"
    os.rename(out, hidden)                                    # as a swap killed between its renames leaves it
    capsys.readouterr()
    assert main(argv) == 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("warning: ")]
    assert len(err) == 1 and f"restored from {hidden}" in err[0], err
    assert sorted(os.listdir(out)) == sorted(SCORE_OUTPUTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.parquet", "scored", "suites"]


def test_interrupted_swap_in_process_puts_the_earlier_folder_back(tmp_path, monkeypatch):
    """Ctrl-C (or any exception) between the swap's two renames: the earlier folder is renamed back at once."""
    out = tmp_path / "scored"
    before = earlier_run(out)
    real, calls = os.rename, []

    def rename(a, b):
        calls.append(a)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(a, b)
    monkeypatch.setattr(io.os, "rename", rename)
    with pytest.raises(KeyboardInterrupt):
        io.write_out_folder(str(out), {n: (lambda p, n=n: Path(p).write_text("new")) for n in SCORE_OUTPUTS})
    monkeypatch.undo()
    assert digest(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scored"]


def test_hidden_folders_of_other_names_are_not_taken(tmp_path, capsys):
    """Only ``.<name>.XXXXXXXX.old`` belongs to ``<name>``: a hidden folder of ``scored.v2`` is left alone."""
    (tmp_path / ".scored.v2.abcd1234.old").mkdir()
    (tmp_path / ".scored.abc.old").mkdir()
    (tmp_path / ".scored.abcd1234.old").write_text("a file, not a folder")
    assert io.recover_out_folder("score", str(tmp_path / "scored")) == []
    assert not (tmp_path / "scored").exists() and capsys.readouterr().err == ""
