"""End-to-end resilience: a finetune job killed after its first epoch (with
snakemake itself, as on a preempted node) resumes from its checkpoint on
``--rerun-incomplete``; only that fold and what depends on it rerun, and every
predictions file is byte for byte the one of an uninterrupted run."""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SNAKEMAKE, TINY, job_counts, planned_jobs, smk

pytestmark = pytest.mark.slow
FOLD = ("iid_to_t", "vanilla", "type", "inv")
CKPT = Path("results/sent/checkpoints/finetune", *FOLD)
PRED = Path("results/sent/predictions", *FOLD[:-1], f"{FOLD[-1]}.parquet")
LOG = Path("logs/sent/finetune", *FOLD[:-1], f"{FOLD[-1]}.log")


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    """The tiny config, one configuration and partition (three folds), three
    suite epochs (two epoch boundaries) and two IID epochs."""
    cfg = yaml.safe_load(TINY.read_text())
    cfg.update(configurations=["iid_to_t"], methods=["vanilla"], partitions=["type"])
    cfg["training"]["suite"]["epochs"] = 3
    cfg["checkpoint_every_s"] = 0   # a checkpoint after every epoch (tiny epochs take well under a second)
    cfg["training"]["iid"]["epochs"] = 2
    path = tmp_path_factory.mktemp("cfg") / "tiny_resume.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _parent(pid: int) -> int:
    stat_line = Path(f"/proc/{pid}/stat").read_text()
    return int(stat_line[stat_line.rindex(")") + 2:].split()[1])


def _is_descendant(pid: int, root: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        try:
            pid = _parent(pid)
        except (OSError, ValueError):
            return False
    return False


def _dry_run_jobs(workdir, cfg) -> tuple[dict[str, int], list[str]]:
    """(job counts per rule, finetune outputs) of a dry run with --rerun-incomplete."""
    out = smk(workdir, "-n", "--rerun-incomplete", configfiles=(cfg,))
    text = out.stdout + out.stderr
    outputs = []
    for line in text.splitlines():
        # a finetune job shows its message: "Job N: finetune <task> <conf>/<method>/<partition>/<fold>: ..."
        m = re.match(r"Job \d+: finetune (\S+) (\S+)/(\S+)/(\S+)/([^:\s]+):", line.strip())
        if m:
            task, conf, method, partition, fold = m.groups()
            outputs.append(f"results/{task}/predictions/{conf}/{method}/{partition}/{fold}.parquet")
    return job_counts(text), outputs


def test_killed_fold_resumes_and_matches_an_uninterrupted_run(tmp_path, config):
    timings = {}
    ref = tmp_path / "reference"
    t0 = time.time()
    smk(ref, "--cores", "1", configfiles=(config,))
    timings["reference run"] = time.time() - t0
    preds = sorted(p.relative_to(ref) for p in (ref / "results").rglob("predictions/**/*.parquet"))
    assert len(preds) == 4 and PRED in preds
    # finished jobs leave no checkpoint; the kept model is world-readable safetensors
    assert not any((ref / "results" / "sent" / "checkpoints").rglob("epoch-*"))
    iid_model = ref / "results/sent/models/iid/vanilla/standard/all"
    files = [p for p in iid_model.rglob("*") if p.is_file()]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in files)
    assert [p.name for p in files if p.suffix in (".safetensors", ".bin", ".pt")] == ["model.safetensors"]

    # a copy of the finished run, one fold's predictions gone: what reruns is that fold and its dependents
    wd = tmp_path / "interrupted"
    shutil.copytree(ref, wd, symlinks=True)
    (wd / PRED).unlink()
    others = {p: (wd / p).stat().st_mtime_ns for p in preds if p != PRED}
    expected = planned_jobs(wd, configfiles=(config,))
    assert expected["finetune"] == 1 and "predict" not in expected and "train_iid" not in expected, expected

    # start it, wait for the fold's first checkpoint, kill the trainer and snakemake (a preempted node)
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO), BELUGA_CHECKPOINT_PAUSE_S="120")
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(wd), "--cores", "1", "--configfile", str(config)]
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        state = wd / CKPT / "epoch-0001" / "state.json"
        while not state.exists():
            assert proc.poll() is None, "snakemake ended before the first checkpoint"
            assert time.time() - t0 < 600, "no checkpoint after 10 minutes"
            time.sleep(0.2)
        owner = json.loads((wd / CKPT / "owner.json").read_text())
        trainer = int(owner["pid"])
        assert _is_descendant(trainer, proc.pid), "the checkpoint's owner is not a job of this snakemake"
        timings["until the first checkpoint"] = time.time() - t0
        os.kill(proc.pid, signal.SIGKILL)
        os.kill(trainer, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # whatever else the killed session left (its own group)
        except ProcessLookupError:
            pass
    for _ in range(100):
        if not Path(f"/proc/{trainer}").exists() or "Z" in Path(f"/proc/{trainer}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    assert not (wd / PRED).exists() and not (wd / "results/sent/models" / Path(*FOLD)).exists()  # nothing written
    assert [p.name for p in (wd / CKPT).iterdir() if p.name.startswith("epoch-")] == ["epoch-0001"]

    # the rerun: exactly the killed fold's finetune and its dependents
    smk(wd, "--unlock", configfiles=(config,))
    counts, finetunes = _dry_run_jobs(wd, config)
    assert counts == expected, (counts, expected)
    assert finetunes == [str(PRED)], finetunes
    t0 = time.time()
    smk(wd, "--cores", "1", "--rerun-incomplete", configfiles=(config,))
    timings["resumed run"] = time.time() - t0
    assert "resumed from epoch 1 of 3" in (wd / LOG).read_text()
    assert not (wd / CKPT).exists()   # removed once the outputs were written
    assert planned_jobs(wd, configfiles=(config,)) == {}
    assert all((wd / p).stat().st_mtime_ns == t for p, t in others.items())   # nothing else was rewritten

    # every predictions file is byte for byte the uninterrupted run's
    assert sorted(p.relative_to(wd) for p in (wd / "results").rglob("predictions/**/*.parquet")) == preds
    for p in preds:
        assert (wd / p).read_bytes() == (ref / p).read_bytes(), p
    resumed = json.loads((wd / PRED.with_suffix(".json")).read_text())
    straight = json.loads((ref / PRED.with_suffix(".json")).read_text())
    assert resumed["resumed_from_epoch"] == 1 and straight["resumed_from_epoch"] == 0
    assert resumed["epoch_losses"] == straight["epoch_losses"] and resumed["steps"] == straight["steps"]
    print("timings (s):", {k: round(v, 1) for k, v in timings.items()})
