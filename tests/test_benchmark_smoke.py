"""scripts/benchmark.py's GPU-loop parts (issue 22) run end to end on the CPU with tiny settings: the profile,
the training variants side by side (K jobs as worker processes), the large block and the fixed cost of a job;
the JSON has their keys and the throughput table the plan reads stays readable."""

import json
import subprocess
import sys

import pytest
from conftest import REPO


@pytest.mark.slow
def test_benchmark_gpu_loop_parts_on_cpu(tmp_path):
    out = tmp_path / "bench.json"
    cmd = [sys.executable, str(REPO / "scripts" / "benchmark.py"), "--device", "cpu", "--model", "tiny-random",
           "--steps", "3", "--warmup", "1", "--reps", "1", "--jobs-per-gpu", "1,2", "--profile", "--profile-steps", "3",
           "--variants", "--large", "--large-model", "tiny-random", "--large-max-length", "64", "--large-data", "long",
           "--compile-variants", "none", "--skip", "training", "prediction", "methods", "fold", "run", "dry-run",
           "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    bench = json.loads(out.read_text())

    for loop in ("current", "host_hygiene"):
        p = bench["profile"][loop]
        assert p["steps"] == 3 and p["host_ms_per_step"] > 0 and p["aten_ops_per_step"] > 0
        assert "gpu_busy_fraction" not in p   # no GPU figures on the CPU

    for block, length, batch in (("base", 48, 16), ("large", 64, 3)):
        b = bench["variants"][block]
        assert (b["max_length"], b["batch_size"], b["steps"], b["warmup"]) == (length, batch, 3, 1)
        assert set(b["variants"]) == {"current", "host_hygiene", "jobs_1", "jobs_2"}
        assert {"compile_default", "compile_graphs"} <= set(b["skipped"])
        for name, v in b["variants"].items():
            for key in ("steps_per_s", "seq_per_s", "tokens_per_s", "peak_mem_mib", "weight_drift", "loss_drift",
                        "ratio"):
                assert v[key] >= 0, (block, name, key)
            assert v["mfu"] is None   # n/a on the CPU
        assert b["variants"]["current"]["ratio"] == 1.0
        assert b["variants"]["jobs_2"]["jobs"] == 2
        # the same start, the same batches: host hygiene trains the current loop's weights on the CPU
        assert b["variants"]["host_hygiene"]["weight_drift"] < 1e-5
    assert bench["variants"]["large"]["padding_share"] == 0   # full windows

    parts = bench["fixed_cost"]["parts_s"]
    assert parts["cuda_context_s"] is None
    assert parts["total_s"] > parts["import_torch_s"] > 0 and parts["first_step_s"] > 0

    table = bench["throughput"]["cpu"]
    assert table["train_seq_per_s"] == bench["variants"]["base"]["variants"]["host_hygiene"]["seq_per_s"]
    assert table["jobs_per_gpu"] in (1, 2) and table["train_seq_per_s_per_gpu"] > 0
    assert table["train_seq_per_s_current_loop"] > 0

    from beluga.workflow.cost import throughput_table

    rates, _ = throughput_table(str(out), "cpu")
    assert rates["train_seq_per_s"] == table["train_seq_per_s"]
    assert rates["fixed_s_per_job"] > 0 and rates["predict_seq_per_s"] > 0   # not measured: the reference's
