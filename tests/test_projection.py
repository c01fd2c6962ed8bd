"""scripts/bench/projection.py (issue 38): the default run's projected wall time from a sampled run's
BELUGA_TIMING lines — before the IID model + the IID model + (every fold kind's job-seconds x its count, the IID
model's predictions and the light jobs) / cores — and the light jobs' job-seconds of a finished run."""

import json
import sys
from collections import Counter

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
from bench.projection import CORES, light_job_seconds, project  # noqa: E402


def _log(root, name, rule, start, end, **wildcards):
    path = root / "logs" / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"rule": rule, "process_start": start, "call_start": start + 1, "call_end": end, "science": {},
            "wildcards": wildcards}
    path.write_text("some output\nBELUGA_TIMING " + json.dumps(line) + "\n")


def test_projection_from_a_sampled_run(tmp_path):
    _log(tmp_path, "prepare_iid", "prepare_iid", 100.0, 102.0)
    _log(tmp_path, "train_iid", "train_iid", 105.0, 205.0)                      # 5 s before it, 100 s
    _log(tmp_path, "predict", "predict", 205.0, 225.0, conf="iid", partition="standard")   # 20 s
    _log(tmp_path, "f1", "finetune", 205.0, 235.0, conf="iid_to_t", partition="func")      # 30 s x 20 folds
    _log(tmp_path, "f2", "finetune", 205.0, 245.0, conf="iid_to_t", partition="seen")      # 40 s x 1
    counts = Counter({("iid_to_t", "func"): 20, ("iid_to_t", "seen"): 1})
    p = project(tmp_path, counts, light_s=60.0)
    assert p["before_iid_s"] == 5.0 and p["train_iid_s"] == 100.0 and p["fold_jobs"] == 21
    assert p["fold_job_seconds"] == {"iid_to_t/func": 600.0, "iid_to_t/seen": 40.0}
    assert p["projected_s"] == pytest.approx(5 + 100 + (600 + 40 + 20 + 60) / CORES)
    assert project(tmp_path, counts, light_s=None)["projected_s"] == pytest.approx(5 + 100 + (600 + 40 + 20) / CORES)


def test_light_jobs_of_a_finished_run(tmp_path):
    assert light_job_seconds(tmp_path) == (None, 0)                     # no run
    _log(tmp_path, "train_iid", "train_iid", 0.0, 100.0)
    _log(tmp_path, "prepare_iid", "prepare_iid", 0.0, 3.0)              # before the IID model: not a light job
    _log(tmp_path, "aggregate", "aggregate", 0.0, 4.0)
    _log(tmp_path, "significance", "significance", 0.0, 11.0)
    assert light_job_seconds(tmp_path) == (15.0, 2)
