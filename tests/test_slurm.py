"""Cluster runs: the tiny workflow through profiles/slurm on a real one-node Slurm.

scripts/slurm/local_cluster.py installs Debian's Slurm 22.05 (slurmctld,
slurmd, and slurmdbd on a private MariaDB), munge and MariaDB when missing,
and starts them on 127.0.0.1 with every file in a temporary folder. With
slurmdbd running, `sacct` answers: the plugin keeps its default status command
(sacct, as on a real site) and the test reads the jobs back from sacct.
Without slurmdbd, sacct cannot answer and the plugin waits for ever after the
jobs ended; `--slurm-status-command squeue` would then be needed, which reads
the controller's job records: those keep a finished job for MinJobAge seconds
(300 here), and the plugin only accepts squeue while MinJobAge >= 3 x
--slurm-init-seconds-before-status-checks (2 here).

A subset of the tiny configuration goes through Slurm (the whole of it would
be 60-odd sbatch jobs): the IID model, two fine-tuning folds (one from the IID
model, one from the pre-trained model) and their three predictions are sbatch
jobs; the rules declared `localrules` (data, suite, outcomes) run on the
submit host. The jobs in sacct must be exactly those snakemake submitted, all
COMPLETED on the node. Every Parquet file it makes must be the same, bit for
bit, as the session's local tiny run of the same config (tests/conftest.py
``tiny_run``).

Needs root and apt on Linux (CI's Debian 12); elsewhere the test skips and
says why, but under CI (CI set) that is a failure.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import record_rules

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
TINY = REPO / "tests" / "configs" / "tiny.yaml"
SLURM_PROFILE = REPO / "profiles" / "slurm"
pytestmark = pytest.mark.slow

_spec = importlib.util.spec_from_file_location("local_cluster", REPO / "scripts" / "slurm" / "local_cluster.py")
local_cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(local_cluster)

TARGETS = [
    "results/sent/outcomes/iid/vanilla/standard/all.parquet",
    "results/sent/outcomes/iid_to_t/vanilla/func/typos.parquet",
    "results/sent/outcomes/iid_plus_t/vanilla/seen/all.parquet",
]
# snakemake ignores SIGTERM while jobs run: `timeout -k` kills it 30 s later
SLURM_RUN_LIMIT_S = 480
# The plugin's polling, made short for a test (defaults: 40 s before the first
# check, then +10 s per check that sees no job finished, up to 180 s).
POLLING = ["--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "2"]
MIN_JOB_AGE = 300


def _unavailable(reason: str):
    msg = f"no local Slurm: {reason}"
    if os.environ.get("CI"):
        pytest.fail(f"{msg} (CI must run this test: root, Debian, apt)")
    pytest.skip(msg)


def _snakemake(workdir: Path, *args, env=None, prefix=(), timeout=900):
    cmd = [*prefix, SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args,
           "--configfile", str(TINY)]
    env = dict(env or os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    t0 = time.monotonic()
    out = record_rules(subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout))
    return out, time.monotonic() - t0


def _failed(what, out, workdir: Path) -> str:
    logs = ""
    for log in sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log"))[:3]:
        logs += f"\n--- {log}\n{log.read_text(errors='replace')[-2000:]}"
    return f"{what} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-6000:]}{logs}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not sys.platform.startswith("linux"):
        _unavailable(f"Slurm daemons need Linux, this is {sys.platform}")
    root = tmp_path_factory.mktemp("slurm")
    messages = []
    c = local_cluster.LocalSlurm(root, min_job_age=MIN_JOB_AGE, log=messages.append)
    t0 = time.monotonic()
    try:
        c.start()
    except (local_cluster.Unavailable, OSError, subprocess.SubprocessError) as e:
        c.stop()
        _unavailable(f"{e} {' '.join(messages)}".strip())
    print(f"local Slurm up in {time.monotonic() - t0:.1f} s ({root})")
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory, tiny_run):
    """(local workdir: the session's tiny run of the same config, slurm workdir, snakemake output of the
    Slurm run, sacct rows)."""
    local = tiny_run

    remote = tmp_path_factory.mktemp("on_slurm")
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    out, secs = _snakemake(
        remote, "--profile", str(SLURM_PROFILE), "--workflow-profile", "none", *POLLING, *TARGETS,
        env=cluster.env, prefix=("timeout", "-k", "30", str(SLURM_RUN_LIMIT_S)), timeout=SLURM_RUN_LIMIT_S + 60)
    assert out.returncode not in (124, 137), _failed(f"Slurm run timed out after {SLURM_RUN_LIMIT_S} s;", out, remote)
    assert out.returncode == 0, _failed("snakemake --profile profiles/slurm", out, remote)
    print(f"Slurm run: {secs:.0f} s")

    sacct = subprocess.run(
        ["sacct", "-X", "--parsable2", "--noheader", "--starttime", started, "--endtime", "now",
         "--format=JobIDRaw,JobName%60,State,ExitCode,Comment%300,NodeList"],
        capture_output=True, text=True, env=cluster.env, timeout=60)
    assert sacct.returncode == 0, sacct.stderr
    rows = [dict(zip(("id", "name", "state", "exit", "comment", "node"), line.split("|"), strict=True))
            for line in sacct.stdout.splitlines() if line.strip()]
    return local, remote, out.stdout + out.stderr, rows


def test_jobs_ran_under_slurm_and_show_in_sacct(runs, cluster):
    _, _, log, rows = runs
    # what snakemake submitted ("rule X:") and ran itself ("localrule X:")
    # (a rule with a message, e.g. finetune, shows "Job N: <rule> ..." instead of its "rule X:" block)
    submitted = Counter(re.findall(r"^rule (\w+):", log, re.M)) + \
        Counter(re.findall(r"^Job \d+: (finetune|finetune_keep|finetune_model|trial) ", log, re.M))
    local_jobs = Counter(re.findall(r"^localrule (\w+):", log, re.M))
    assert "SLURM run ID" in log and "has been submitted with SLURM jobid" in log, log[-3000:]
    in_sacct = Counter(re.match(r"rule_([a-z0-9_]+?)(?:_wildcards_.*)?$", r["comment"]).group(1) for r in rows)
    assert in_sacct == submitted, (in_sacct, submitted, rows)
    # training and prediction went through Slurm (a fold job trains, predicts and scores); the IID model's
    # outcomes (a localrule) did not
    assert in_sacct["train_iid"] == 1 and in_sacct["finetune"] == 2 and in_sacct["predict"] == 1, in_sacct
    assert local_jobs["outcomes"] == 1 and "outcomes" not in in_sacct, (local_jobs, in_sacct)
    for r in rows:
        assert r["state"] == "COMPLETED" and r["exit"] == "0:0", r
        assert r["node"] == cluster.node, r
    # one run: every job carries the run's id as its name (the plugin's status queries filter on it)
    assert len({r["name"] for r in rows}) == 1, rows


def test_slurm_results_equal_local_run(runs):
    local, remote, _, _ = runs
    # what the Slurm run made (the targets and what they need), each a file of the local run
    files = sorted(p.relative_to(remote) for p in (remote / "results").rglob("*.parquet"))
    assert len([f for f in files if "predictions" in f.parts]) == 3 and len(files) >= 10, files
    for f in files:
        a, b = pq.read_table(local / f), pq.read_table(remote / f)
        assert a.equals(b), f"{f} differs between the local and the Slurm run"
        assert (local / f).read_bytes() == (remote / f).read_bytes(), f"{f}: same values, other bytes"
    # the training recorded in the run records agrees too (wall times and the like aside)
    keys = ("epoch_losses", "epoch_risks", "steps", "hparams", "seed", "stream_sizes", "n_predictions")
    records = sorted((remote / "results").rglob("predictions/**/*.json"))
    assert len(records) == 3, records
    for rec in records:
        a = json.loads((local / rec.relative_to(remote)).read_text())
        b = json.loads(rec.read_text())
        assert {k: a.get(k) for k in keys} == {k: b.get(k) for k in keys}, rec


def test_profiles_lint_and_dry_run(tmp_path):
    """Both profiles are accepted: the workstation one (picked up by itself) and the Slurm one."""
    for args, says in (([], "workflow specific profile"),
                       (["--profile", str(SLURM_PROFILE), "--workflow-profile", "none"], "Using profile")):
        out, _ = _snakemake(tmp_path, "-n", *args, timeout=300)
        assert out.returncode == 0 and says in out.stderr, out.stderr[-3000:]
        lint = subprocess.run([SNAKEMAKE, "--lint", "-s", str(REPO / "Snakefile"), "-d", str(REPO), *args],
                              capture_output=True, text=True, cwd=REPO, timeout=300)
        assert lint.returncode == 0, lint.stdout[-3000:] + lint.stderr[-3000:]
