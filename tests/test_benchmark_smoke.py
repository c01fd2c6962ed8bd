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


def _bench():
    """scripts/ on the path: the benchmark's modules import as ``bench.<module>`` (as the command runs them)."""
    if str(REPO / "scripts") not in sys.path:
        sys.path.insert(0, str(REPO / "scripts"))
    import torch
    from bench import common

    common.DEVICE = torch.device("cpu")
    return common


def test_utilisation_summary_keeps_the_timed_windows_only():
    _bench()
    from bench.jobs import parse_smi_line, utilisation_summary

    samples = [(0.5, 90.0, 1000.0), (1.0, 20.0, 500.0), (1.5, 40.0, 700.0), (3.0, 60.0, 800.0), (9.0, 99.0, 9e3)]
    s = utilisation_summary(samples, [(1.0, 2.0), (2.9, 3.1)])
    assert s == {"samples": 3, "gpu_util_mean_pct": 40.0, "gpu_util_max_pct": 60.0, "mem_used_mib_max": 800.0}
    assert utilisation_summary(samples, [(4.0, 5.0)]) is None   # no sample inside: nothing to say
    assert parse_smi_line("37, 1234\n") == (37.0, 1234.0)
    assert parse_smi_line("[N/A], 1234") is None and parse_smi_line("") is None


def test_step_clock_times_updates_and_optimizer_steps_on_the_cpu():
    """A timed update of 20 ms holding two optimizer steps of 5 ms: the clock's medians (host clock on the
    CPU); an update whose optimizer steps were not seen by the hooks gives no optimizer figure."""
    import time

    _bench()
    from bench.loop import StepClock

    clock = StepClock(cuda=False)
    for _ in range(3):
        clock.step_begin()
        for _ in range(2):
            clock.optimizer_begin()
            time.sleep(0.005)
            clock.optimizer_end()
        time.sleep(0.01)
        clock.step_end()
    s = clock.summary()
    assert s["timed_steps"] == s["optimizer_steps_timed"] == 3 and s["clock"].startswith("host clock")
    assert 9.5 <= s["optimizer_ms_per_step"] < 19 and s["device_ms_per_step"] >= 19.5
    assert s["device_ms_per_step"] > s["optimizer_ms_per_step"]
    bare = StepClock(cuda=False)
    bare.optimizer_begin()   # before any timed update: not counted
    bare.optimizer_end()
    bare.step_begin()
    bare.step_end()
    assert bare.summary()["optimizer_ms_per_step"] is None and bare.summary()["timed_steps"] == 1


def test_step_timer_reads_the_optimizer_steps_of_a_real_update():
    """StepTimer's hooks see ``Optimizer.step`` inside the timed updates only (after the warm-up)."""
    import torch

    common = _bench()
    from bench.loop import StepTimer

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters())
    timer = StepTimer(warmup=2, steps=3)
    with timer.installed():
        for _ in range(5):
            timer.before()
            model(torch.ones(8, 4)).sum().backward()
            opt.step()
            opt.zero_grad()
            timer.after()
    opt.step()   # outside: the hooks are removed
    s = timer.clock.summary()
    assert s["timed_steps"] == 3 and s["optimizer_steps_timed"] == 3 and s["optimizer_ms_per_step"] > 0
    assert common.DEVICE.type == "cpu"
