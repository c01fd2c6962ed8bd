"""The cost plan's model of the paper's run (issue 35, item 5): the paper's i.i.d. sizes whatever is staged,
the step model (a per-step overhead and a per-sequence compute: batch size and length matter), READ's own
benchmark row, jobs sharing a GPU (``gpu_jobs``: the aggregate per-GPU rate), an empty ``method_cost`` and
where every rate comes from."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO, TINY

from beluga.core.errors import ConfigError
from beluga.workflow.cost import (
    READ_ROW,
    REFERENCE,
    Anchor,
    anchors,
    paper_iid_sizes,
    paper_sizes_line,
    relative_cost,
    task_rate,
    throughput_table,
    train_s_per_seq,
)
from beluga.workflow.plan import load_config, plan, plan_command

SHARED = (REPO / ".." / "shared" / "data").resolve()
needs_shared = pytest.mark.skipif(not (SHARED / "checklist" / "release").is_dir(),
                                  reason="../shared/data (the paper's suites) is absent")
BASE = Anchor("reference", (12, 768, 3072), 128, 16, 358.0, 0.9, 3660.0)


def table(tmp_path, figures: dict, device: str = "cuda"):
    p = tmp_path / f"benchmark-{device}.json"
    p.write_text(json.dumps({"throughput": {device: figures}}))
    return str(p)


# ---------------------------------------------------------------- the step model: batch size and length
def test_step_model_is_the_measurement_at_the_anchor_and_charges_small_batches():
    at = train_s_per_seq(BASE, "bert-base-uncased", 16, 128)
    assert at == pytest.approx(1 / 358.0)
    per_seq = {b: train_s_per_seq(BASE, "bert-base-uncased", b, 128) for b in (2, 3, 8, 16, 32)}
    assert per_seq[2] > per_seq[3] > per_seq[8] > per_seq[16] > per_seq[32]
    # step(B) = o + B c with o = 0.9 t, c = 0.1 t / 16 (t = 16 / 358): a batch of 8 costs o + 8c per 8 sequences
    t = 16 / 358.0
    assert per_seq[8] == pytest.approx((0.9 * t + 8 * 0.1 * t / 16) / 8)
    # longer sequences: only the compute part grows (x relative_cost); a larger model: the overhead x its layers
    rel = relative_cost("bert-base-uncased", 512, (12, 768, 3072), 128)
    assert train_s_per_seq(BASE, "bert-base-uncased", 16, 512) == pytest.approx((0.9 * t + 0.1 * t * rel) / 16)
    rel_l = relative_cost("bert-large-uncased", 384, (12, 768, 3072), 128)
    assert train_s_per_seq(BASE, "bert-large-uncased", 3, 384) == pytest.approx(
        (0.9 * t * 2 + 3 * 0.1 * t / 16 * rel_l) / 3)
    # a table without a batch size: the per-sequence rate scaled by the cost alone (the former model)
    nobatch = Anchor("reference", (12, 768, 3072), 128, None, 358.0, 0.9, 3660.0)
    assert train_s_per_seq(nobatch, "bert-base-uncased", 3, 512) == pytest.approx(rel / 358.0)


def test_plan_charges_a_small_batch_more_per_sequence():
    """The same plan (TINY on a GPU, no fixed seconds) at the fold stage's batch 4 and at 16: the fold jobs
    train the same sequences, the smaller batch in about 4 times the steps, each a host-bound eager step."""
    hours = {}
    for b in (4, 16):
        config = load_config(str(TINY), ["gpus=1", f"training={{suite: {{lr: 0.001, batch_size: {b}, epochs: 1}}}}"])
        lines = plan(config, {**REFERENCE["cuda"], "fixed_s_per_job": 0.0})
        hours[b] = sum(ln.hours for ln in lines if ln.rule == "finetune")
    assert hours[4] > 2 * hours[16]


def test_plan_counts_the_fold_models_iid_sample():
    """predict.fold_iid_examples under scenario_iid seen: a func / class / type fold job predicts that many
    i.i.d. test examples, the seen and IID models all of them (the dry run's jobs predict the same)."""
    seqs = {}
    for n in ("null", "5"):
        config = load_config(str(TINY), [f"predict={{fold_iid_examples: {n}}}"])
        for t in config["tasks"].values():
            t["scenario_iid"] = "seen"
        seqs[n] = {ln.configuration: (ln.predict_seqs, ln.jobs) for ln in plan(config, REFERENCE["cpu"])
                   if ln.rule == "finetune"}
        n_test = config["tasks"]["sent"]["iid"]["n_test"]
    assert seqs["5"] and n_test > 5
    for conf, (every, jobs) in seqs["null"].items():   # every fold job but the seen one predicts 5, not n_test
        assert every - seqs["5"][conf][0] == (jobs - 1) * (n_test - 5)


# ---------------------------------------------------------------- READ's own row
def test_reads_own_row_is_used_and_measured(tmp_path):
    row = {"model": "bert-large", "max_length": 384, "batch_size": 3, "train_seq_per_s": 20.0,
           "machine": "NVIDIA H100, measured 2026-12-01"}
    rates, _ = throughput_table(table(tmp_path, {"train_seq_per_s": 400.0, "batch_size": 16, READ_ROW: row},
                                      "cpu"), "cpu")
    rows = anchors(rates, "cpu")
    assert rows[READ_ROW].rate == 20.0 and rows[READ_ROW].size == (24, 1024, 4096)
    read_cfg = {"type": "read", "model": "bert-large-uncased-whole-word-masking"}
    training = {"max_length": 384, "suite": {"batch_size": 3}}
    got = task_rate(rows, rows[READ_ROW], read_cfg, training, {"grid": {"batch_size": [2, 3]}})
    assert got["measured"] and not got["estimated_read"]
    assert got["train_seq_per_s"] == pytest.approx(20.0) and got["by_batch"][2] < 20.0
    assert "NVIDIA H100, measured 2026-12-01" in rates["origin"][READ_ROW]
    # the benchmark writes the size it built (any name): the plan takes it
    rates, _ = throughput_table(table(tmp_path, {"train_seq_per_s": 400.0, "batch_size": 16,
                                                 READ_ROW: {**row, "model": "tiny", "size": [2, 32, 64]}}, "cpu"),
                                "cpu")
    assert anchors(rates, "cpu")[READ_ROW].size == (2, 32, 64)
    # without the row: READ is scaled from the reference row, flagged as an estimate
    rates, _ = throughput_table(table(tmp_path, {"train_seq_per_s": 400.0, "batch_size": 16}, "cpu"), "cpu")
    rows = anchors(rates, "cpu")
    assert READ_ROW not in rows
    got = task_rate(rows, rows["reference"], read_cfg, training, {})
    assert got["estimated_read"] and not got["measured"]


@pytest.mark.parametrize("row, field", [
    ({"model": "bert-large", "max_length": 384, "batch_size": 3}, "train_seq_per_s"),
    ({"model": "bert-large", "max_length": 384, "batch_size": 0, "train_seq_per_s": 9.0}, "batch_size"),
    ({"model": "gpt", "max_length": 384, "batch_size": 3, "train_seq_per_s": 9.0}, "model"),
    ({"model": "gpt", "max_length": 384, "batch_size": 3, "train_seq_per_s": 9.0, "size": [2, 32]}, "size"),
    ([1], "")])
def test_a_bad_read_row_is_one_line(tmp_path, row, field):
    with pytest.raises(ConfigError, match=f"field 'throughput.cuda.read{'.' + field if field else ''}'"):
        throughput_table(table(tmp_path, {"train_seq_per_s": 400.0, READ_ROW: row}), "cuda")


# ---------------------------------------------------------------- method costs
@pytest.mark.parametrize("method_cost", [{}, None, "absent"])
def test_an_empty_method_cost_keeps_the_reference_factors(tmp_path, method_cost):
    figures = {"train_seq_per_s": 400.0}
    if method_cost != "absent":
        figures["method_cost"] = method_cost
    rates, _ = throughput_table(table(tmp_path, figures), "cuda")
    assert rates["method_cost"] == REFERENCE["cuda"]["method_cost"]
    assert rates["origin"]["method_cost"].startswith("built-in reference")
    assert rates["origin"]["train_seq_per_s"].startswith(str(tmp_path))


def test_a_partial_method_cost_takes_the_rest_from_the_reference(tmp_path):
    rates, _ = throughput_table(table(tmp_path, {"train_seq_per_s": 400.0, "method_cost": {"irm": 2.0}}), "cuda")
    assert rates["method_cost"] == {**REFERENCE["cuda"]["method_cost"], "irm": 2.0}
    assert "for irm; the rest built-in reference" in rates["origin"]["method_cost"]


# ---------------------------------------------------------------- jobs sharing a GPU
def test_aggregate_factor_reads_the_measured_k_jobs(tmp_path):
    from beluga.workflow.steps import StepRow, aggregate_factor, measured_steps

    rows = measured_steps(measured_table(tmp_path, (3.0,), (2.0,)))     # 2 jobs: 2 x 60 steps in 2 s, 3x one job's
    assert aggregate_factor(rows, 1)[0] == 1.0
    assert aggregate_factor(rows, 2)[::2] == (3.0, True)
    assert aggregate_factor(rows, 4)[0] == 3.0 and not aggregate_factor(rows, 4)[2]   # saturated: an estimate
    four = [StepRow((12, 768, 3072), 16, 0.05, "m", ((2, 1.5), (4, 3.5)))]              # between measured K's: linear
    assert aggregate_factor(four, 3)[0] == pytest.approx(2.5) and aggregate_factor(four, 4)[::2] == (3.5, True)
    speed, words, measured = aggregate_factor([], 4)                                   # nothing measured: no gain
    assert speed == 1.0 and not measured and "no gain assumed" in words


def test_gpu_jobs_divides_the_gpu_hours_by_the_measured_factor(tmp_path, monkeypatch):
    from beluga.workflow import steps

    monkeypatch.setattr(steps, "GPU_BENCHMARKS", measured_table(tmp_path, (3.0,), (2.0,)))
    hours = {}
    for k in (1, 2):
        config = load_config(str(TINY), ["gpus=1", f"gpu_jobs={k}"])
        hours[k] = sum(ln.hours for ln in plan(config, REFERENCE["cuda"]))
    assert hours[2] == pytest.approx(hours[1] / 3)
    text = plan_command(str(TINY), overrides=["gpus=1", "gpu_jobs=2"])
    line = next(ln for ln in text.splitlines() if ln.startswith("  eager, 2 jobs per GPU"))
    assert "[the configuration's: the table below]" in line and "3.00x one job's sequences / s, measured" in line


# ---------------------------------------------------------------- the paper's sizes, whatever is staged
def test_paper_sizes_are_counted_without_reading_the_folder(tmp_path):
    task = {"iid": {"source": "squad", "path": str(tmp_path / "nothing-here")},
            "suite": {"path": "checklist/release/squad_suite.tar.gz"}}
    sizes, words = paper_iid_sizes(task)
    assert sizes["train"] == 87_599 and sizes["val"] + sizes["test"] == 10_570
    assert "not read" in words
    assert paper_iid_sizes({**task, "suite": {"generate": "sent_default"}}) is None   # a spec draws on the pool
    assert paper_iid_sizes({**task, "iid": {"source": "rotten_tomatoes"}}) is None
    line = paper_sizes_line({"tasks": {"read": task}})
    assert line == ("sizes: the paper's (read: SQuAD v1.1 train 87,599 questions, dev 10,570 halved into val / "
                    "test) -- staged data not read")


@needs_shared
@pytest.mark.slow  # the paper plan over the real suites (~12 s)
def test_the_paper_plan_counts_the_real_cost():
    """The acceptance: paper.yaml on the staged data counts SQuAD train's 87,599 questions, says so, names
    the scenarios' steps, and where every rate comes from."""
    text = plan_command(str(REPO / "configs" / "paper.yaml"), overrides=[f"data_dir={SHARED}", "gpus=1"])
    lines = text.splitlines()
    assert any(ln.startswith("sizes: the paper's (") and "SQuAD v1.1 train 87,599 questions" in ln
               and ln.endswith("staged data not read") for ln in lines)
    assert any(ln.startswith("i.i.d. sizes of read: 87,599 / ") for ln in lines)
    row = next(ln for ln in lines if ln.startswith("train_iid "))
    assert "489,594" in row      # per IID job: (67,349 x 3 + 363,846 x 3 + 87,599 x 2 epochs) / 3 tasks
    # READ's eager step, measured on an H200 (scripts/gpu_session.sh, stage d_read)
    assert any("BERT-large batch 3: 91.1 ms [2026-11-27-h200-d_read.json (NVIDIA H200" in ln for ln in lines)
    assert any(ln.startswith("  [1] built-in reference (NVIDIA H100") for ln in lines)


# ---------------------------------------------------------------- the GPU scenarios: optimizer steps at real lengths
def test_job_steps_are_the_loops_count_hand_counted():
    from beluga.workflow.steps import job_steps

    assert job_steps(100, 3, [16]) == 21            # ceil(100 / 16) = 7 steps an epoch, x 3
    assert job_steps(100, 1.5, [16]) == 11          # ceil(1.5 x 7)
    assert job_steps(100, 3, [8, 16]) == (39 + 21) / 2   # a grid's batch sizes: the mean of their steps


def test_the_gpu_plan_counts_each_jobs_steps(tmp_path):
    config = load_config(str(TINY), ["gpus=1", "training={suite: {lr: 0.001, batch_size: 4, epochs: 2}, "
                                               "iid: {lr: 0.001, batch_size: 8, epochs: 3}}"])
    details: dict = {}
    plan(config, REFERENCE["cuda"], details=details)
    jobs = details["step_jobs"]
    iid = next(j for j in jobs if j.batches == [8])
    n_train = next(iter(details["sizes"].values()))["iid"]
    train = int(n_train.split(" / ")[0].replace(",", ""))
    assert iid.steps == -(-train // 8) * 3
    assert all(j.steps == 0 and j.batches == [] for j in jobs if j.predict_s and not j.batches)
    assert sum(j.seeds for j in jobs) == sum(ln.jobs for ln in plan(config, REFERENCE["cuda"]))


def measured_table(tmp_path, one=(6.0, 3.0), two=(9.0, 4.0)):
    """A constructed GPU measurement in scripts/benchmark.py's format: BERT-base at batch 16, rounds of 60 timed
    steps of one job (``one``: seconds a round) and of 2 jobs (``two``); the fastest round counts."""
    d = tmp_path / "gpu"
    d.mkdir(exist_ok=True)
    (d / "x.json").write_text(json.dumps({
        "argv": ["--model", "bert-base", "--steps", "60"], "model": "bert-base", "batch_size": 16,
        "when": "2026-12-01 10:00", "machine": {"cuda": "NVIDIA H100"},
        "versions": {"torch": "2.11.0", "transformers": "5.17.0"},
        "partial": {"base": {"variants": {"host_hygiene": {"elapsed_s": list(one), "steps_per_s": 1.0},
                                          "jobs_2": {"jobs": 2, "elapsed_s": list(two)}}}}}))
    return d


def test_scenarios_price_steps_by_the_measured_table_and_the_floor(tmp_path):
    from beluga.workflow.steps import (
        StepJob,
        floor_step_s,
        measured_steps,
        padded_length,
        scenario_hours,
        scenario_lines,
    )

    rows = measured_steps(measured_table(tmp_path))
    assert [(r.size, r.batch, r.step_s, r.factors) for r in rows] == [((12, 768, 3072), 16, 0.05, ((2, 1.5),))]
    assert "x.json (NVIDIA H100, 2026-12-01 10:00; torch 2.11.0, transformers 5.17.0)" == rows[0].source
    shape = ((12, 768, 3072), "para", 128, "project")
    job = StepJob(shape, 2, 1000.0, [16], 1.0, 10.0, 5.0)
    floor = floor_step_s((12, 768, 3072), 16, padded_length("para", 16, 128))
    got = scenario_hours([job], rows, 2)
    assert got["eager"]["hours"] == pytest.approx(2 * (1000 * 0.05 + 15) / 3600) and got["eager"]["measured"]
    assert got["eager_k"]["hours"] == pytest.approx(2 * (1000 * 0.05 / 1.5 + 15 / 1.5) / 3600)
    assert got["eager_k"]["measured"]
    assert got["graphs_k"]["hours"] == pytest.approx(2 * (1000 * floor + 15 / 2) / 3600)
    assert not got["graphs_k"]["measured"]
    # a method's cost factor and a model not measured (scaled by layers: ESTIMATED)
    large = StepJob(((24, 1024, 4096), "para", 128, "project"), 1, 100.0, [16], 2.0, 0.0, 0.0)
    got = scenario_hours([large], rows, 2)
    assert got["eager"]["hours"] == pytest.approx(100 * 0.1 * 2 / 3600) and not got["eager"]["measured"]
    text = "\n".join(scenario_lines([job], rows, {"gpu_jobs": 2, "tasks": {}}))
    assert "PROJECTED" in text and "x.json" in text and "2 jobs: 1.50x" in text


def test_jobs_whose_updates_run_eagerly_under_graphs_are_priced_eager(tmp_path):
    """A job whose method's updates are not captured under ``compile: graphs`` (IRM, Group-DRO, Fish, or
    ``nonfinite: skip``: the training loop's own :func:`~beluga.model.graphs.eager_reason`) costs in the graphs +
    K scenario what it costs eager with K jobs, and the scenario says how many of its hours are such jobs."""
    from beluga.workflow.plan import _graph_eager
    from beluga.workflow.steps import StepJob, measured_steps, scenario_hours, scenario_lines

    rows = measured_steps(measured_table(tmp_path))
    shape = ((12, 768, 3072), "para", 128, "project")
    captured = StepJob(shape, 1, 1000.0, [16], 1.0, 10.0, 5.0)
    eager = StepJob(shape, 1, 1000.0, [16], 1.0, 10.0, 5.0, graph_eager="IRM: a second backward graph")
    both = scenario_hours([captured, eager], rows, 2)
    alone = scenario_hours([captured], rows, 2)
    assert both["graphs_k"]["hours"] == pytest.approx(alone["graphs_k"]["hours"] + alone["eager_k"]["hours"])
    assert both["graphs_k"]["eager_hours"] == pytest.approx(alone["eager_k"]["hours"])
    assert both["graphs_k"]["eager_why"] == ["IRM"] and alone["graphs_k"]["eager_hours"] == 0
    text = "\n".join(scenario_lines([captured, eager], rows, {"gpu_jobs": 2, "tasks": {}}))
    assert "GPU-h of it are jobs whose updates run eagerly under graphs (IRM), priced as eager with 2 jobs" in text
    # which (task, method) runs eagerly: the training loop's decision, per task's nonfinite setting
    config = load_config(str(TINY), ["gpus=1"])
    tid = next(iter(config["tasks"]))
    got = _graph_eager(config)
    assert got[(tid, "vanilla")] is None and got[(tid, "lora")] is None
    assert {m for (t, m), why in got.items() if why} == {"irm", "group_dro", "fish"}
    assert got[(tid, "group_dro")].startswith("Group-DRO: ")
    config["tasks"][tid].setdefault("training", {})["nonfinite"] = "skip"
    assert _graph_eager(config)[(tid, "vanilla")].startswith("training.nonfinite: skip")
    # a plan of IRM jobs: its training jobs eager under graphs, its prediction-only jobs not (they train nothing)
    config = load_config(str(TINY), ["gpus=1", "methods=[vanilla,irm]", "keep_models=true"])
    details: dict = {}
    plan(config, throughput_table(None, "cuda")[0], [str(TINY)], details=details)
    jobs = details["step_jobs"]
    assert any(j.graph_eager and j.graph_eager.startswith("IRM: ") for j in jobs if j.steps)
    assert any(not j.steps for j in jobs) and all(j.graph_eager is None for j in jobs if not j.steps)


def test_the_floor_model_reproduces_the_measured_kernel_time():
    from beluga.workflow.steps import floor_step_s

    # the H200 session's profile: BERT-base, batch 16 (21.9 rows, 449 real tokens at 26% padding), 3.63 ms of kernels
    got = floor_step_s((12, 768, 3072), 21.9, 449 / 0.74 / 21.9, "H200")
    assert got == pytest.approx(3.63e-3, rel=0.12)


def test_padded_length_follows_the_length_distribution():
    from beluga.workflow.steps import length_quantile, padded_length, windows_per_item

    assert length_quantile("para", 0.99) == pytest.approx(75.0)          # QQP's p99
    random16 = padded_length("para", 16, 512, "reference")
    assert 48 <= random16 <= 64 and random16 % 16 == 0                   # a random batch of 16 pads to ~60
    assert padded_length("para", 16, 512) < random16                      # length-sorted pools pad less
    assert padded_length("read", 3, 64) == 64                             # capped at max_length
    assert windows_per_item("read", 384) == pytest.approx(1.017) and windows_per_item("para", 128) == 1.0
    assert length_quantile("nli", 0.5) < 35.0 < length_quantile("nli", 0.6)   # the stated default: mean 35


def test_a_gpu_measurement_that_is_not_json_is_one_line(tmp_path):
    from beluga.workflow.steps import measured_steps

    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match=r"GPU measurement .*bad.json: field '\(top level\)'"):
        measured_steps(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"argv": ["--steps", "sixty"], "partial": {}}))
    with pytest.raises(ConfigError, match=r"bad.json: field 'argv': --steps 'sixty' is not a number of steps"):
        measured_steps(tmp_path)


def test_a_gpu_plan_prints_the_three_scenarios_with_their_sources():
    text = plan_command(str(TINY), overrides=["gpus=1"])
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("GPU scenarios ("))
    assert lines[at + 1].startswith("  eager, one job per GPU")
    assert lines[at + 2].startswith("  eager, 2 jobs per GPU")
    assert "measured (2026-11-27-h200-a_eager.json" in lines[at + 2]
    assert lines[at + 3].startswith("  whole-step CUDA graphs, 2 jobs per GPU") and "PROJECTED" in lines[at + 3]
    assert "GPU scenarios" not in plan_command(str(TINY), overrides=["gpus=0"], calibrate=False)
    with pytest.raises(ConfigError, match="--train-rate: field 'gpus': a GPU plan prices training by optimizer steps"):
        plan_command(str(TINY), overrides=["gpus=1"], train_rate=100.0)


def test_the_paper_gpu_plan_prints_its_three_scenarios():
    """The acceptance command (``plan --configfile configs/paper.yaml --config gpus=1``, data not staged: the
    published sizes): the three scenarios, each with its source, the graphs one PROJECTED by the floor model and
    the cheapest by far; the table is the configuration's (eager, one job per GPU)."""
    text = plan_command(str(REPO / "configs" / "paper.yaml"), overrides=["gpus=1"])
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("GPU scenarios ("))
    hours = [float(re.search(r": ([\d,.]+) GPU-h", lines[at + i]).group(1).replace(",", "")) for i in (1, 2, 3)]
    assert "[the configuration's: the table below]" in lines[at + 1]
    total = float(lines[0].split(" GPU-h in all")[0].rsplit(", ", 1)[1].replace(",", ""))
    assert total == pytest.approx(hours[0], abs=0.1)
    assert hours[0] > 2 * hours[1] > 3 * hours[2] and "PROJECTED" in lines[at + 3]
    # IRM, Group-DRO and Fish update eagerly under graphs: the graphs scenario prices their jobs as eager x K
    assert "jobs whose updates run eagerly under graphs (IRM, Group-DRO, Fish), priced as eager" in lines[at + 3]
    assert "d_read.json (NVIDIA H200, 2026-11-27 16:27; torch 2.11.0, transformers 5.17.0)" in lines[at + 4]
    # READ's K jobs were never measured: BERT-base's factor, said ESTIMATED for BERT-large
    assert "ESTIMATED for BERT-large: no K-jobs measurement of that model" in lines[at + 2]


def test_the_gpu_plans_json_holds_its_scenarios(tmp_path):
    out = tmp_path / "plan.json"
    plan_command(str(TINY), overrides=["gpus=1"], as_json=str(out))
    got = json.loads(out.read_text())
    assert set(got["gpu_scenarios"]) == {"eager", "eager_k", "graphs_k"} and got["task_rates"] == {}
    assert got["gpu_scenarios"]["graphs_k"]["measured"] is False
    total = sum(ln["hours"] for ln in got["lines"])
    assert got["gpu_scenarios"]["eager"]["hours"] == pytest.approx(total)
