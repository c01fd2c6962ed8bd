"""The plan's calibration (beluga/workflow/calibrate.py): what it measures for, its cache (key, hit, miss, a
file that is not its record, a folder it cannot write), the plan that uses it or says why not (the reference
machine named, its precision, a range), and the measurement itself on the tiny model (slow: a process)."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from conftest import CONFIGS, REPO

from beluga.workflow import calibrate as calib
from beluga.workflow.config import checked_runs
from beluga.workflow.cost import NO_BF16_FACTOR, REFERENCE
from beluga.workflow.plan import load_config, plan_command

TINY = CONFIGS / "tiny.yaml"


def tiny_target(overrides=()) -> calib.Target:
    """The tiny config's target as the plan makes it: on the task's own training sequences."""
    from beluga.workflow.sizes import task_counts

    config = load_config(str(TINY), list(overrides))
    return calib.target(config, checked_runs(config, [TINY]),
                        lambda tid: task_counts(config["tasks"][tid], config["split"])["streams"])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder for the test."""
    monkeypatch.setenv(calib.CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def figures(train=123.0, predict=456.0, fixed=7.5) -> dict:
    """A calibration's figures: a warm job's fixed seconds ``fixed`` (its start 0.5 s and its own work), a cold
    one's 4 s more (the imports the warm job server saves)."""
    return {"train_seq_per_s": train, "predict_seq_per_s": predict, "job_start_s": 0.5, "launch_s": 0.2,
            "start_s": 4.2, "load_s": 0.3, "setup_s": 0.1, "data_s": 0.7,
            "fixed_s_warm": fixed, "fixed_s_cold": fixed + 4.0, "rounds": 3, "seconds": 9.0}


#: the whole run of the tiny config as Snakemake's dry run counts it (tests/test_workflow.py runs it)
TINY_RUN = {"prepare_iid": 1, "build_suite": 1, "split_suite": 1, "train_iid": 1, "predict": 1, "outcomes": 1,
            "finetune": 30, "aggregate": 1, "heatmap": 4, "unit_outcomes": 1, "significance": 1, "intervals": 1,
            "diagnostics": 1, "failures": 1, "figure1": 1, "table3": 1, "run_config": 1, "all": 1}


@pytest.fixture
def dry_run(monkeypatch):
    """Snakemake's dry run of the tiny config (a process) as its job counts, taking 2 s."""
    monkeypatch.setattr(calib, "run_job_counts", lambda path, overrides=(): (dict(TINY_RUN), 2.0))


def test_the_target_is_the_configured_model_length_batch_precision_and_threads():
    from beluga.workflow.sizes import task_counts

    config = load_config(str(TINY))
    streams = task_counts(config["tasks"]["sent"], config["split"])["streams"]
    t = tiny_target()
    # the task's own training sequences: every input of every item (a pair's two), here fewer than SAMPLE
    assert len(t.sequences) == sum(len(it.inputs) for items in streams.values() for it in items) == 14
    assert all(b is None for _, b in t.sequences) and "not" in " ".join(a for a, _ in t.sequences)
    assert t.data_s > 0   # the task's data built in memory, timed: a data job's own work
    assert calib.target(config, checked_runs(config, [TINY])).data_s is None   # no streams: not timed
    t = tiny_target(["job_threads=2", "precision=fp32"])
    assert (t.task, t.model, t.size, t.max_length) == ("sent", "tiny-random", (2, 32, 64), 32)
    assert (t.batch_size, t.predict_batch_size, t.precision, t.threads) == (4, 32, "fp32", 2)
    # a vanilla fold job's training call: the suite stage's hyper-parameters, no checkpoints
    assert (t.run.method, t.run.hparams["batch_size"], t.run.hparams["lr"], t.run.checkpoint_dir, t.run.compile) == \
        ("vanilla", 4, 1.0e-3, None, "off")
    assert tiny_target(['training={"compile": "default"}']).run.compile == "off"


def test_the_most_expensive_task_is_calibrated():
    config = load_config(str(CONFIGS / "tiny_para.yaml"))
    config["tasks"] = {"small": config["tasks"][next(iter(config["tasks"]))],
                       **{"big": {**config["tasks"][next(iter(config["tasks"]))], "model": "default"}}}
    t = calib.target(config, checked_runs(config, [CONFIGS / "tiny_para.yaml"]))
    assert (t.task, t.model, t.size) == ("big", "default", (6, 384, 1536))


def test_the_cache_key_names_the_machine_model_precision_and_shape(cache, monkeypatch):
    t = tiny_target()
    key = calib.cache_key(t)
    assert key["cpu"] == calib.cpu_name() and key["bf16"] in ("native", "emulated")
    assert key["capability"] in ("AVX512", "AVX2", "DEFAULT") and key["torch"].split("+")[0].count(".") == 2
    assert key["precision"] == ("bf16" if key["bf16"] == "native" else "fp32")   # auto, resolved on this CPU
    assert {k: key[k] for k in ("model", "size", "threads", "max_length", "batch_size", "predict_batch_size")} == \
        {"model": "tiny-random", "size": [2, 32, 64], "threads": 1, "max_length": 32, "batch_size": 4,
         "predict_batch_size": 32}
    file = calib.cache_file(key)
    assert file.parent == cache and re.fullmatch(r"calibration-[0-9a-f]{16}\.json", file.name)
    assert calib.cache_file(calib.cache_key(tiny_target())) == file   # the same key, the same file
    assert calib.cache_key(dataclasses.replace(t, precision=key["precision"])) == key   # auto = what it resolves to
    others = [calib.cache_key(dataclasses.replace(t, precision="fp32" if key["precision"] == "bf16" else "bf16")),
              calib.cache_key(dataclasses.replace(t, batch_size=8)),
              calib.cache_key(dataclasses.replace(t, max_length=48)),
              calib.cache_key(dataclasses.replace(t, threads=2)),
              calib.cache_key(dataclasses.replace(t, predict_batch_size=64)),
              calib.cache_key(dataclasses.replace(t, model="default", size=(6, 384, 1536))),
              calib.cache_key(dataclasses.replace(t, sequences=(("a film", None),))),
              calib.cache_key(dataclasses.replace(t, sequences=(("another film", None),))),
              calib.cache_key(t, {**calib.machine(), "torch": "0.0.1"}),
              calib.cache_key(t, {**calib.machine(), "cpu": "another CPU"})]
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")   # an instruction-set limit set: another machine
    others.append(calib.cache_key(t))
    assert others[-1]["isa_limits"] == {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    files = {calib.cache_file(k) for k in others}
    assert len(files) == len(others) and file not in files


def test_the_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(calib.CACHE_DIR_ENV, str(tmp_path / "own"))
    assert calib.cache_dir() == tmp_path / "own"
    monkeypatch.delenv(calib.CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert calib.cache_dir() == tmp_path / "xdg" / "beluga"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert calib.cache_dir() == tmp_path / "home" / ".cache" / "beluga"


def test_a_miss_measures_and_writes_the_record_a_hit_reads_it(cache, monkeypatch):
    t = tiny_target()
    measured = []
    monkeypatch.setattr(calib, "measure", lambda target: measured.append(target) or figures())
    record, how = calib.calibration(t)
    assert how == "measured" and measured == [t]
    on_disk = json.loads(calib.cache_file(calib.cache_key(t)).read_text())
    assert on_disk["key"] == calib.cache_key(t) and on_disk["figures"] == figures()
    assert record["file"] == str(calib.cache_file(calib.cache_key(t)))
    assert [p.name for p in cache.iterdir()] == [calib.cache_file(calib.cache_key(t)).name]   # no temporary left
    record, how = calib.calibration(t)   # the same key: read, not measured
    assert how == "cached" and len(measured) == 1 and record["figures"] == figures()
    monkeypatch.setattr(calib, "measure", lambda target: measured.append(target) or figures(train=50.0))
    record, how = calib.calibration(t, recalibrate=True)   # measured again, the record replaced
    assert how == "measured" and len(measured) == 2
    assert json.loads(calib.cache_file(calib.cache_key(t)).read_text())["figures"]["train_seq_per_s"] == 50.0


@pytest.mark.parametrize("content", ["not json", "[]", '{"key": {}, "figures": {}}',
                                     "FIGURES_OF_ANOTHER_VERSION", "A_ZERO_RATE"])
def test_a_file_that_is_not_the_keys_record_is_measured_again(cache, monkeypatch, content):
    t = tiny_target()
    key = calib.cache_key(t)
    if content == "FIGURES_OF_ANOTHER_VERSION":
        content = json.dumps({"key": {**key, "version": calib.CACHE_VERSION - 1}, "figures": figures()})
    elif content == "A_ZERO_RATE":
        content = json.dumps({"key": key, "figures": figures(train=0.0)})
    path = calib.cache_file(key)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    monkeypatch.setattr(calib, "measure", lambda target: figures())
    record, how = calib.calibration(t)
    assert how == "measured" and json.loads(path.read_text())["figures"] == figures()


def test_a_cache_folder_it_cannot_write_still_gives_the_figures(tmp_path, monkeypatch):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(calib.CACHE_DIR_ENV, str(blocker / "cache"))   # under a file: cannot be made
    monkeypatch.setattr(calib, "measure", lambda target: figures())
    record, how = calib.calibration(tiny_target())
    assert record["figures"] == figures() and record["file"] is None
    assert how.startswith(f"measured, not cached ({blocker / 'cache'}"), how


def time_of(text: str) -> float:
    """Seconds of a duration the plan prints (``42 s``, ``6.4 min``, ``2.1 h``)."""
    value, unit = text.split()
    return float(value.replace(",", "")) * {"s": 1, "min": 60, "h": 3600}[unit]


def test_a_calibrated_plan_uses_the_measured_rates_and_says_where(cache, monkeypatch, dry_run):
    monkeypatch.setattr(calib, "measure", lambda target: figures(train=40.0, predict=80.0, fixed=2.0))
    text = plan_command(str(TINY), cores=2, calibrate=True)
    key = calib.cache_key(tiny_target())
    where = f"calibrated on this machine ({key['cpu']}, bf16 {key['bf16']}), cached at {calib.cache_file(key)}"
    assert f"(cpu; throughput: {where})" in text.splitlines()[0]
    assert f"times: {where} -- the rates below" in text
    assert "training, one job: 40.0 seq/s, tiny-random size at 32 tokens, batch 4 -- [1]" in text
    assert "prediction: 80.0 seq/s" in text and "fixed seconds per job: 2.0 -- [1]" in text
    assert "sent: tiny-random at 32 tokens: batch 4: 40.0 seq/s per job -- the training row's own model" in text
    assert f"[1] calibrated on this machine ({key['cpu']}, bf16 {key['bf16']}: torch CPU capability" in text
    assert "up to about" not in text   # measured here: one time, no range
    # a warm job's fixed seconds (a local run), the cold one's named; the run's 17 other jobs and its start
    assert "a job's fixed seconds are those of a job forked warm by the local run's job server (2.0 s; 6.0 s for " \
           "one started in its own process" in text
    assert "the run's other jobs: 17 of its 49 (Snakemake's dry run, 2.0 s), each 1.2 s as calibrated" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("  on 2 cores: "))
    start = 2.0 + (4.2 - 0.2)   # the dry run, the imports of the warm job server
    assert f"with the run's start ({start:.1f} s: Snakemake's DAG, the job server's imports) and its 17 other " \
           "jobs one after another" in line, line
    jobs_only = time_of(next(ln for ln in text.splitlines() if ln.startswith("  with a slot for every job"))
                        .split(": ")[-1])
    assert time_of(re.search(r"about (.+?) -- ", line).group(1)) >= jobs_only + start + 17 * 1.2 - 0.5
    # the seconds per job are the measured ones: the fixed seconds, the fold jobs' 23 predicted sequences at 80/s
    row = next(ln.split() for ln in text.splitlines() if ln.startswith("finetune ") and " sent " in ln)
    assert row[:4] == ["finetune", "sent", "30", "2.0"] and float(row[5]) == pytest.approx(23 / 80, abs=0.01), row
    again = plan_command(str(TINY), cores=2, calibrate=True)
    assert "(measured before; --recalibrate measures again)" in again
    monkeypatch.setenv("BELUGA_WARM_JOBS", "0")   # a run whose jobs start cold: the cold job's seconds
    cold = plan_command(str(TINY), cores=2, calibrate=True)
    assert "fixed seconds per job: 6.0 -- [1]" in cold and "each 5.2 s as calibrated" in cold


def test_without_calibration_the_plan_names_the_reference_and_prints_a_range():
    text = plan_command(str(TINY), cores=2)   # calibrate=False: the command's --no-calibrate
    assert "times: not calibrated (--no-calibrate): the rates are the reference machine's " \
           f"({REFERENCE['cpu']['machine']})" in text
    assert "native bf16" in REFERENCE["cpu"]["machine"] and "bf16 + fused AdamW" in REFERENCE["cpu"]["machine"]
    line = next(ln for ln in text.splitlines() if ln.startswith("  on 2 cores: "))
    low, high = re.search(r"about (.+?) on a CPU with native bf16 as the reference's, up to about (.+?) on one "
                          r"without \(x4: fp32\)", line).groups()
    assert time_of(high) == pytest.approx(NO_BF16_FACTOR * time_of(low), rel=0.05), line


@pytest.mark.parametrize("given", [{"train_rate": 50.0}, {"fixed_s": 1.0}, {"overrides": ["gpus=1"]}])
def test_rates_given_or_a_gpu_plan_are_not_calibrated(cache, monkeypatch, given):
    monkeypatch.setattr(calib, "measure", lambda target: pytest.fail("measured"))
    text = plan_command(str(TINY), calibrate=True, **given)
    assert "calibrated" not in text and "up to about" not in text and not cache.exists()


def test_a_throughput_table_is_not_calibrated(cache, monkeypatch, tmp_path):
    table = tmp_path / "bench.json"
    table.write_text(json.dumps({"throughput": {"cpu": {"train_seq_per_s": 10.0, "predict_seq_per_s": 20.0,
                                                        "fixed_s_per_job": 1.0}}}))
    monkeypatch.setattr(calib, "measure", lambda target: pytest.fail("measured"))
    text = plan_command(str(TINY), throughput=str(table), calibrate=True, cores=2)
    assert f"throughput: {table}" in text.splitlines()[0] and "up to about" not in text


def test_a_calibration_that_stops_falls_back_to_the_reference(cache, monkeypatch, dry_run):
    def stop(target):
        raise calib.NotCalibrated("model tiny-random cannot be loaded (no such thing)")

    monkeypatch.setattr(calib, "measure", stop)
    text = plan_command(str(TINY), cores=2, calibrate=True)
    assert ("times: not calibrated (the calibration could not run here: model tiny-random cannot be loaded (no "
            "such thing)): the rates are the reference machine's") in text
    assert "up to about" in text and not cache.exists()


@pytest.mark.slow   # a process: a job's imports (~5 s), the tiny model's load and steps
def test_the_tiny_model_is_measured_in_a_fresh_process(cache):
    t = tiny_target()
    got = calib.measure(t)
    assert got["train_seq_per_s"] > 0 and got["predict_seq_per_s"] > 0 and 1 <= got["rounds"] <= calib.ROUNDS
    assert got["precision_run"] == calib.cache_key(t)["precision"]
    # a fresh interpreter's imports take time; those before a warm hand-off a fraction of them
    assert 0 < got["launch_s"] < got["start_s"] and got["start_s"] > 0.5
    assert got["job_start_s"] > 0 and got["data_s"] == t.data_s > 0   # the micro-workflow; the data, built
    assert got["fixed_s_warm"] == pytest.approx(got["job_start_s"] + got["load_s"] + got["setup_s"] + got["data_s"])
    assert got["fixed_s_cold"] == pytest.approx(got["fixed_s_warm"] + got["start_s"] - got["launch_s"])


@pytest.mark.slow   # a process: the child stops at the model's load
def test_a_model_that_cannot_be_loaded_offline_is_not_calibrated(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = tmp_path / "hub.yaml"
    cfg.write_text(TINY.read_text().replace("model: tiny-random", "model: bert-base-uncased"))
    text = plan_command(str(cfg), cores=2, calibrate=True)
    assert "times: not calibrated (the calibration could not run here: model bert-base-uncased cannot be " \
           "loaded (" in text
    assert "up to about" in text and not cache.exists()


def test_the_cli_calibrates_by_default():
    from beluga.cli.parser import build_parser

    p = build_parser()
    args = p.parse_args(["plan"])
    assert args.calibrate is True and args.recalibrate is False
    assert p.parse_args(["plan", "--no-calibrate"]).calibrate is False
    assert p.parse_args(["plan", "--recalibrate"]).recalibrate is True


def test_the_documented_tiny_plan_is_what_plan_prints(monkeypatch):
    """docs/RUNNING.md's example, ``plan --configfile tests/configs/tiny.yaml --cores 2 --no-calibrate``, is the
    command's output (the reference's: the same on every machine)."""
    text = REPO.joinpath("docs", "RUNNING.md").read_text()
    shown = text[text.index("```text\ncost plan for tests/configs/tiny.yaml") + len("```text\n"):]
    shown = shown[:shown.index("```")]
    monkeypatch.chdir(REPO)
    assert plan_command("tests/configs/tiny.yaml", cores=2) == shown
