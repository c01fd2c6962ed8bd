"""The GPU plan reads the GPU session's files as its table (issue 58): a session folder of scripts/gpu_session.sh
(s0_env.json, s1_eager.json, s2_jobs_mps_off / _on.json, s3_read.json, s4_graphs.json; fixtures written here in the
shape of its dry run's output) gives the eager step per model and batch with its device time, the K-jobs factor
(MPS on where it worked), the graphed step that replaces the floor; a dry run's files are refused; a malformed
field is one line; the first session's flat files are still read."""

from __future__ import annotations

import json

import pytest

from beluga.core.errors import ConfigError
from beluga.workflow.steps import (
    StepJob,
    aggregate_factor,
    eager_step_s,
    floor_step_s,
    graphed_step_s,
    measured_steps,
    padded_length,
    scenario_hours,
    scenario_lines,
)

BASE, LARGE = (12, 768, 3072), (24, 1024, 4096)
GPU, WHEN = "NVIDIA H100 80GB HBM3", "2026-12-08 10:00:00"


def block(model, batch, data, steps, rounds, jobs=None, graphed=None, gjobs=None, seq=16.0, real=320.0, pad=0.2):
    """A ended block of scripts/benchmark.py's ``variants``: host hygiene's rounds (seconds of ``steps`` steps),
    K eager jobs' rounds by K, the graphed variant's rounds and K graphed jobs'."""
    v = {"current": {"jobs": 1, "elapsed_s": [2 * r for r in rounds]}, "host_hygiene": {"jobs": 1, "elapsed_s": rounds}}
    for k, r in (jobs or {}).items():
        v[f"jobs_{k}"] = {"jobs": k, "compile": "off", "elapsed_s": r}
    if graphed:
        v["compile_graphs"] = {"jobs": 1, "elapsed_s": graphed}
    for k, r in (gjobs or {}).items():
        v[f"jobs_{k}"] = {"jobs": k, "compile": "graphs", "elapsed_s": r}
    return {"model": model, "batch_size": batch, "data": data, "steps": steps, "seq_per_step": seq,
            "real_tokens_per_step": real, "padding_share": pad, "variants": v}


def profile(model, data, batch, wall_ms, device_ms):
    loop = {"wall_ms_per_step": wall_ms, "host_ms_per_step": wall_ms, "device_ms_per_step": device_ms,
            "optimizer_ms_per_step": 1.0, "clock": "CUDA events", "steps": 10}
    return {"model": model, "data": data, "batch_size": batch, "max_length": 128, "steps": 10,
            "current": dict(loop, wall_ms_per_step=2 * wall_ms), "host_hygiene": loop}


def bench(variants=None, profiles=None, argv=("--steps", "40"), device="cuda", **more):
    return {"machine": {"cuda": None if device == "cpu" else GPU}, "device": device, "model": "bert-base",
            "batch_size": 16, "when": WHEN[:16], "versions": {"torch": "2.13.0"}, "argv": list(argv),
            "complete": True, **({"variants": variants} if variants else {}),
            **({"profiles": profiles} if profiles else {}), **more}


def session(folder, mps="works", s2_on=True, s4=True, gpu=GPU, when=WHEN):
    """A session folder in gpu_session.sh's layout (a GPU run)."""
    folder.mkdir(parents=True)
    files = {
        "s0_env.json": {"when": when, "gpu": gpu and {"name": gpu, "memory_gib": 79.2},
                        "versions": {"torch": "2.13.0", "transformers": "5.23.0"},
                        "mps": {"status": mps, "detail": "words"}, "complete": True},
        "s1_eager.json": bench({"base": block("bert-base", 16, "sst2", 40, [2.4, 2.0])},
                               {f"bert-base {d} b{b}": profile("bert-base", d, b, 70.0 + b, 3.0 + b / 8)
                                for d in ("sst2", "qqp") for b in (8, 16)}),
        "s2_jobs_mps_off.json": bench({"base": block("bert-base", 16, "sst2", 40, [2.0], jobs={2: [2.0], 4: [3.2]})}),
        "s3_read.json": bench({"large": block("bert-large", 3, "qa", 40, [4.0], jobs={2: [5.0]}, seq=3.0)},
                              {f"bert-large qa b{b}": profile("bert-large", "qa", b, 100.0, 10.0 + b) for b in (2, 3)}),
    }
    if s2_on:
        files["s2_jobs_mps_on.json"] = bench({"base": block("bert-base", 16, "sst2", 40, [2.0], jobs={2: [1.6]})})
    if s4:
        files["s4_graphs.json"] = bench({"base": block("bert-base", 16, "sst2", 20, [1.0], graphed=[0.2, 0.1],
                                                       gjobs={2: [0.16]}, real=245.0, pad=0.3)},
                                        argv=("--steps", "40", "--steps", "20"))
    for name, d in files.items():
        (folder / name).write_text(json.dumps(d))
    return folder


def test_a_session_gives_the_step_of_each_model_and_batch(tmp_path):
    rows = measured_steps(session(tmp_path / "2026-12-08-h100"))
    src = f"2026-12-08-h100/s1_eager.json ({GPU}, {WHEN}; torch 2.13.0, transformers 5.23.0)"
    s1 = [r for r in rows if r.source.startswith(src)]
    timed = next(r for r in s1 if not r.profiled)
    # the fastest round over its 40 steps; the device time of its profile (sst2, batch 16)
    assert (timed.size, timed.batch, timed.step_s, timed.device_s) == (BASE, 16, 2.0 / 40, 5e-3)
    assert timed.source == src
    profiled = sorted((r.batch, r.source.rsplit("profile ", 1)[1], r.step_s, r.device_s) for r in s1 if r.profiled)
    assert profiled == [(8, "bert-base qqp b8: under torch.profiler", 0.078, 0.004),
                        (8, "bert-base sst2 b8: under torch.profiler", 0.078, 0.004),
                        (16, "bert-base qqp b16: under torch.profiler", 0.086, 0.005)]
    read = [r for r in rows if r.size == LARGE]
    assert [(r.batch, r.step_s, r.profiled, r.device_s, r.factors) for r in read] == [
        (3, 0.1, False, 0.013, ((2, 1.6),)), (2, 0.1, True, 0.012, ())]
    graphed = next(r for r in rows if r.graphed_s)
    assert graphed.source.startswith("2026-12-08-h100/s4_graphs.json")
    assert graphed.step_s == 1.0 / 20 and graphed.graphed_s == 0.1 / 20     # the block's 20 steps, not argv's 40
    assert graphed.graphed_factors == ((2, 2 * 0.1 / 0.16),) and graphed.factors == ()
    assert graphed.shape == pytest.approx((16.0, 245.0 / 0.7 / 16))
    # the eager step: the timed loops' slowest at the batch; batch 8 only profiled: the timed row, not measured
    assert eager_step_s(rows, BASE, 16, 0.001) == (0.05, True)
    assert eager_step_s(rows, BASE, 8, 0.001) == (0.05, False)
    assert eager_step_s(rows, LARGE, 3, 0.001) == (0.1, True)


def test_the_k_factor_is_mps_on_where_it_worked_else_off(tmp_path):
    rows = measured_steps(session(tmp_path / "on"))
    factor, words, measured = aggregate_factor(rows, 2)
    assert (factor, measured) == (2 * 2.0 / 1.6, True)
    assert "on/s2_jobs_mps_on.json" in words and "MPS on" in words
    assert not any("s2_jobs_mps_off" in r.source for r in rows)
    rows = measured_steps(session(tmp_path / "failed", mps="failed"))
    factor, words, _ = aggregate_factor(rows, 4)
    assert factor == 4 * 2.0 / 3.2 and "s2_jobs_mps_off.json" in words and "MPS off: MPS failed" in words
    rows = measured_steps(session(tmp_path / "absent", s2_on=False))
    assert "MPS off: MPS works, but s2_jobs_mps_on.json is absent" in aggregate_factor(rows, 2)[1]


def test_the_graphed_step_replaces_the_floor_and_is_measured(tmp_path):
    rows = measured_steps(session(tmp_path / "s"))
    shape = (BASE, "sent", 128, "project")
    job = StepJob(shape, 2, 1000.0, [16], 1.0, 10.0, 5.0)
    floor = floor_step_s(BASE, 16, padded_length("sent", 16, 128))
    graphed = 0.1 / 20 * floor / floor_step_s(BASE, 16.0, 245.0 / 0.7 / 16) / (2 * 0.1 / 0.16)
    got = scenario_hours([job], rows, 2)["graphs_k"]
    assert got["hours"] == pytest.approx(2 * (1000 * graphed + 15 / 2) / 3600)
    assert got["measured"] and got["measured_share"] == 1.0
    text = "\n".join(scenario_lines([job], rows, {"gpu_jobs": 2, "tasks": {}}))
    assert "measured graphed steps for 100% of the steps (BERT-base batch 16: 5.0 ms, 2 jobs 1.25x" in text
    assert "PROJECTED" not in text
    # another batch, and a K the session did not measure: the measured step, not measured; the floor elsewhere
    other = StepJob((LARGE, "read", 384, "project"), 1, 3000.0, [3], 1.0, 0.0, 0.0)
    got = scenario_hours([job, other], rows, 2)["graphs_k"]
    assert not got["measured"] and got["measured_share"] == pytest.approx(2000 / 5000)
    assert "the rest (another model, batch or K) PROJECTED" in "\n".join(scenario_lines([job, other], rows,
                                                                                        {"gpu_jobs": 2, "tasks": {}}))
    assert not scenario_hours([job], rows, 4)["graphs_k"]["measured"]   # 4 graphed jobs not measured
    # a session without S4: the floor, PROJECTED
    rows = measured_steps(session(tmp_path / "no-s4", s4=False))
    got = scenario_hours([job], rows, 2)["graphs_k"]
    assert got["hours"] == pytest.approx(2 * (1000 * floor + 15 / 2) / 3600) and not got["measured"]


def test_a_graphed_step_is_its_own_gpus_and_k_factors_their_own_models(tmp_path):
    """A graphed step is GPU time: one measured on an H200 is scaled to the plan's H100 through the H200's floor;
    on a GPU the floor model does not know, it is not measured. An eager K-jobs factor is measured for the model
    it was measured on; another model's jobs take it ESTIMATED. K jobs under ``compile: default`` are neither
    the eager nor the graphed factor."""
    floor = floor_step_s(BASE, 16, padded_length("sent", 16, 128))
    shape = (16.0, 245.0 / 0.7 / 16)
    for name, gpu, measured in (("h200", "NVIDIA H200", True), ("a100", "NVIDIA A100-SXM4-80GB", False)):
        rows = measured_steps(session(tmp_path / name, gpu=gpu))
        step, got, _ = graphed_step_s(rows, BASE, 16, floor, 2)
        on = "H200" if measured else "H100"
        assert step == pytest.approx(0.1 / 20 * floor / floor_step_s(BASE, *shape, on) / (2 * 0.1 / 0.16))
        assert got is measured
    rows = measured_steps(session(tmp_path / "h100"))
    assert aggregate_factor(rows, 2, BASE)[2] and aggregate_factor(rows, 2, LARGE)[2]   # S2's and S3's own
    only_read = [r for r in rows if r.size == LARGE]
    factor, words, measured = aggregate_factor(only_read, 2, BASE)
    assert factor == 2 * 4.0 / 5.0 and not measured and "ESTIMATED for BERT-base: measured on BERT-large" in words
    folder = session(tmp_path / "default-k")
    d = json.loads((folder / "s2_jobs_mps_on.json").read_text())
    d["variants"]["base"]["variants"]["jobs_2"]["compile"] = "default"
    (folder / "s2_jobs_mps_on.json").write_text(json.dumps(d))
    assert "s2_jobs_mps_off.json" in aggregate_factor(measured_steps(folder), 2, BASE)[1]   # MPS on measured none


def test_a_dateless_file_is_the_oldest_measurement(tmp_path):
    folder = session(tmp_path / "gpu" / "2026-12-08-h100")
    old = bench({"base": block("bert-base", 16, "sst2", 40, [4.0])})
    del old["when"]
    (folder.parent / "old.json").write_text(json.dumps(old))
    rows = measured_steps(folder.parent)
    assert all(r.source.startswith("2026-12-08-h100/") for r in rows if r.size == BASE)


def test_a_dry_run_session_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"cpu/s0_env.json: field 'gpu': null: the session ran without a GPU"):
        measured_steps(session(tmp_path / "gpu" / "cpu", gpu=None).parent)
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "s1_eager.json").write_text(json.dumps(bench(device="cpu")))
    with pytest.raises(ConfigError, match=r"flat/s1_eager.json: field 'device': 'cpu': a run without a GPU"):
        measured_steps(flat)
    (tmp_path / "bare" / "2026-12-08-x").mkdir(parents=True)
    (tmp_path / "bare" / "2026-12-08-x" / "s1_eager.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"2026-12-08-x: field 's0_env.json': missing"):
        measured_steps(tmp_path / "bare")


@pytest.mark.parametrize(("file", "edit", "field"), [
    ("s1_eager.json", lambda d: d["variants"]["base"]["variants"]["host_hygiene"].update(elapsed_s=["x"]),
     "variants.base.variants.host_hygiene.elapsed_s"),
    ("s3_read.json", lambda d: d["variants"]["large"].update(batch_size="three"), "variants.large.batch_size"),
    ("s1_eager.json", lambda d: d["profiles"]["bert-base qqp b8"]["host_hygiene"].update(device_ms_per_step=-1),
     "profiles.bert-base qqp b8.host_hygiene.device_ms_per_step"),
    ("s0_env.json", lambda d: d["gpu"].pop("name"), "gpu.name"),
    ("s0_env.json", lambda d: d.update(mps="works"), "mps.status"),
    ("s2_jobs_mps_on.json", lambda d: d["variants"]["base"]["variants"].update(jobs_2=[1.6]),
     "variants.base.variants.jobs_2"),
    ("s1_eager.json", lambda d: d.update(machine="H100"), "machine"),
    ("s1_eager.json", lambda d: d["variants"]["base"].update(seq_per_step=0), "variants.base.seq_per_step"),
])
def test_a_malformed_field_is_one_line_naming_file_and_field(tmp_path, file, edit, field):
    folder = session(tmp_path / "s")
    d = json.loads((folder / file).read_text())
    edit(d)
    (folder / file).write_text(json.dumps(d))
    with pytest.raises(ConfigError, match=rf"GPU measurement \S*{file}: field '{field}'") as e:
        measured_steps(folder)
    assert len(str(e.value).splitlines()) == 1


def test_a_stopped_stage_and_the_first_sessions_flat_files(tmp_path):
    """A stage stopped at its limit: its ``partial`` rounds over the last ``--steps``; flat benchmark files (the
    first session's layout) beside a session folder: a model's rows from the newest session that measured it."""
    folder = tmp_path / "gpu"
    session(folder / "2026-12-08-h100", s4=False)
    stopped = bench(argv=("--steps", "40", "--steps", "20", "--large-model", "bert-large", "--large-batch-size", "3"),
                    partial={"large": {"records": {"host_hygiene": [{"elapsed_s": 3.0}, {"elapsed_s": 2.0}],
                                                   "compile_graphs": [{"elapsed_s": 0.5}]},
                                       "seq_per_step": 3.0, "real_tokens_per_step": 600.0, "padding_share": 0.2}})
    stopped.update(complete=False, when="2026-12-09 09:00")
    (folder / "2026-12-08-h100" / "s4_graphs.json").write_text(json.dumps(stopped))
    old = bench({"base": block("bert-base", 16, "sst2", 60, [3.0], jobs={2: [2.0]})}, when="2026-11-27 16:24")
    (folder / "old-a_eager.json").write_text(json.dumps(old))
    old = bench(argv=("--steps", "60", "--large-model", "bert-large", "--large-batch-size", "2"),
                partial={"large": {"variants": {"host_hygiene": {"elapsed_s": [9.0]}}}}, when="2026-11-27 16:27")
    old["machine"]["cuda"] = "NVIDIA H200"
    (folder / "old-d_read.json").write_text(json.dumps(old))
    rows = measured_steps(folder)
    assert not any(r.source.startswith("old-") for r in rows)   # the session measured both models
    large = next(r for r in rows if r.source.startswith("2026-12-08-h100/s4_graphs.json"))
    assert (large.size, large.batch, large.step_s) == (LARGE, 3, 2.0 / 20)
    assert "stopped at its limit: what ended" in large.source
    # its graphed rounds so far count, at the window's shape written into ``partial``
    assert large.graphed_s == 0.5 / 20 and large.shape == pytest.approx((3.0, 600.0 / 0.8 / 3.0))
    for name in ("s3_read.json", "s4_graphs.json"):
        (folder / "2026-12-08-h100" / name).unlink()
    rows = measured_steps(folder)   # BERT-large now from the flat files, BERT-base from the newer session
    assert rows[0].source.startswith("2026-12-08-h100/s2_jobs_mps_on.json")
    assert [(r.batch, r.step_s, r.source) for r in rows if r.size == LARGE] == [
        (2, 9.0 / 60, "old-d_read.json (NVIDIA H200, 2026-11-27 16:27; torch 2.13.0)")]
    assert not any(r.source.startswith("old-a_eager") for r in rows)


def test_the_plan_reprices_from_a_session_folder(tmp_path, monkeypatch):
    """A session's folder beside the first session's flat files: the paper plan's scenarios take its steps, its
    K factor and its graphed step, with no code change."""
    from conftest import REPO

    from beluga.workflow import steps
    from beluga.workflow.plan import plan_command

    folder = tmp_path / "gpu"
    folder.mkdir()
    for p in steps.GPU_BENCHMARKS.glob("*.json"):
        (folder / p.name).write_text(p.read_text())
    session(folder / "2026-12-08-h100")
    monkeypatch.setattr(steps, "GPU_BENCHMARKS", folder)
    lines = plan_command(str(REPO / "configs" / "paper.yaml"), overrides=["gpus=1"]).splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("GPU scenarios ("))
    assert "2 jobs: 2.50x one job's sequences / s, measured (2026-12-08-h100/s2_jobs_mps_on.json" in lines[at + 2]
    assert "measured graphed steps for " in lines[at + 3] and "PROJECTED" in lines[at + 3]   # READ: the floor
    assert "2026-11-27-h200" not in lines[at + 4]   # both models measured by the newer session
