"""The plan's clock (issue 39): totals in the unit that suits them (minutes for a tiny run, never "0.0
core-h"), seconds per job by part with the measured fixed per-process cost, the data sizes it counted and
where from, the Slurm time each rule asks for, and the wall-clock on N GPUs (beluga/workflow/schedule.py)."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO, TINY
from test_resources import rule_blocks

from beluga.cli import main
from beluga.core.errors import ConfigError
from beluga.workflow.cost import REFERENCE
from beluga.workflow.plan import load_config, plan, plan_command
from beluga.workflow.runs import BASE_RESOURCES, model_scale
from beluga.workflow.schedule import (
    RULE_KIND,
    PlannedJob,
    dependencies,
    duration,
    gpu_slots,
    slurm_minutes,
    slurm_profile,
    time_unit,
    wall_clock,
)


def table_rows(text: str) -> dict[str, list[str]]:
    """The seconds-per-job table: rule -> its cells (rule, task, jobs, fixed s, train s, predict s, s/job,
    then the longest job and the Slurm request as one string)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("seconds per job"))
    out = {}
    for ln in lines[start + 3:]:
        if not ln or ln.startswith("Slurm:"):
            break
        cells = ln.split(None, 7)
        out[cells[0]] = cells
    return out


def number(cell: str) -> float:
    return 0.0001 if cell == "<0.0001" else float(cell.replace(",", ""))


def seconds_of(words: str) -> float:
    """A :func:`duration` back in seconds."""
    m = re.fullmatch(r"([\d,.]+) (s|min|h|days)(?: \(.*\))?", words.strip())
    return number(m[1]) * {"s": 1, "min": 60, "h": 3600, "days": 86400}[m[2]]


# ---------------------------------------------------------------- units
@pytest.mark.parametrize("seconds, unit", [(0.5, "s"), (119, "s"), (120, "min"), (7199, "min"), (7200, "h"),
                                           (4630 * 3600, "h")])
def test_time_unit_suits_the_total(seconds, unit):
    assert time_unit(seconds)[0] == unit


def test_duration_in_words():
    assert duration(4.04) == "4.0 s" and duration(42) == "42 s" and duration(384) == "6.4 min"
    assert duration(3 * 3600) == "3.0 h" and duration(80 * 3600) == "3.3 days (80 h)"
    for s in (4.04, 42, 384, 3 * 3600, 80 * 3600):
        assert seconds_of(duration(s)) == pytest.approx(s, rel=0.02)


# ---------------------------------------------------------------- a tiny run: minutes and seconds per job
def test_a_tiny_plan_prints_minutes_and_seconds_per_job():
    text = plan_command(str(TINY), cores=2)
    head = text.splitlines()[0]
    assert "core-h" not in text
    total = re.search(r"jobs, ([\d.]+) core-(s|min) in all", head)
    assert total and float(total[1]) > 0, head
    rows = table_rows(text)
    assert set(rows) == {"finetune", "train_iid", "predict"}
    fixed = REFERENCE["cpu"]["fixed_s_per_job"]   # the measured per-process cost, counted for every job
    for rule, cells in rows.items():
        assert number(cells[3]) == fixed, rule
        assert number(cells[6]) == pytest.approx(number(cells[3]) + number(cells[4]) + number(cells[5]), abs=0.06)
    assert number(rows["finetune"][4]) > 0 and number(rows["train_iid"][4]) > 0 and number(rows["predict"][5]) > 0
    # the table's machine time is the jobs' seconds (x job_threads 1): jobs x s/job
    assert number(rows["finetune"][2]) == 30
    minutes = number(total[1]) * (60 if total[2] == "min" else 1)
    assert minutes == pytest.approx(sum(number(c[2]) * number(c[6]) for c in rows.values()), rel=0.02)


def test_the_cli_names_the_new_options(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    out = capsys.readouterr().out
    assert "--gpus N [N ...]" in out and "--cores N" in out


def test_the_cli_prints_the_same_plan(capsys):
    assert main(["plan", "--configfile", str(TINY), "--cores", "2", "--no-calibrate"]) == 0
    assert capsys.readouterr().out == plan_command(str(TINY), cores=2)


# ---------------------------------------------------------------- the data sizes counted
def test_the_sizes_and_where_they_come_from(tmp_path):
    tsv = tmp_path / "reviews.tsv"
    tsv.write_text("text\tlabel\n" + "".join(f"review number {i}\t{i % 2}\n" for i in range(7)))
    ood = (f"tasks={{sent: {{ood: [{{name: reviews, source: local, path: {tsv}}}, "
           f"{{name: capped, source: local, path: {tsv}, max_examples: 3}}]}}}}")
    text = plan_command(str(TINY), cores=2, overrides=[ood])
    lines = text.splitlines()
    suite = next(ln for ln in lines if ln.startswith("data of sent: "))
    # tiny.yaml: 3 functionalities of 4 cases rendered from sent_default, split 0.5 / 0.25 / 0.25
    assert ("suite rendered from spec sent_default (4 cases a functionality, seed 7: the config's suite.seed, over the "
            "spec's defaults.seed 0): 3 functionalities") in suite
    cases = [int(n) for n in re.findall(r"(\d+) cases /", suite)]
    assert cases == [6, 3, 3] and "split.fractions 0.5/0.25/0.25" in suite
    assert any(ln.startswith("i.i.d. sizes of sent: 40 / 10 / 20 train / val / test") for ln in lines)
    oods = next(ln for ln in lines if ln.startswith("  OOD: "))
    assert f"reviews 7 (rows of {tsv})" in oods and "capped 3 (its max_examples, local set)" in oods
    # the OOD examples are predicted: by the IID model (and the seen fold models)
    config = load_config(str(TINY), [ood])
    iid_predict = next(ln for ln in plan(config, REFERENCE["cpu"]) if ln.rule == "predict")
    assert iid_predict.predict_seqs == 20 + 7 + 3 + 7   # T_test inputs + i.i.d. test + the two OOD sets


# ---------------------------------------------------------------- a GPU plan: wall-clock, longest job, Slurm
def test_a_gpu_plan_prints_the_wall_clock_the_longest_job_and_the_slurm_time():
    text = plan_command(str(TINY), overrides=["gpus=1"], gpus=[1, 4])
    lines = text.splitlines()
    longest = seconds_of(next(ln for ln in lines if ln.startswith("  longest job: "))
                         .split(": ", 1)[1].split(" (")[0])
    walls = {int(m[1]): seconds_of(m[2]) for ln in lines
             if (m := re.match(r"  on (\d+) GPUs?: about (.+?) -- ", ln))}
    assert set(walls) == {1, 4}
    total_h = re.search(r"jobs, ([\d.]+) GPU-(min|s) in all", lines[0])
    total = float(total_h[1]) * (60 if total_h[2] == "min" else 1)
    assert walls[1] == pytest.approx(total, rel=0.02)            # one GPU: every job one after the other
    for n, wall in walls.items():
        assert wall >= longest and wall >= total / n * 0.98, n
    assert walls[4] < walls[1]
    # every rule's Slurm request: job_resources' base minutes x tiny-random's scale, doubled per retry (2)
    rows = table_rows(text)
    for rule, cells in rows.items():
        first = BASE_RESOURCES[RULE_KIND[rule]][1] * model_scale("tiny-random")
        assert cells[7].endswith(f"{first:.0f} / {2 * first:.0f} / {4 * first:.0f} min, fits"), cells
        assert number(cells[3]) == REFERENCE["cuda"]["fixed_s_per_job"]


def test_the_schedule_is_bounded_by_the_longest_job_and_the_job_seconds():
    config = load_config(str(TINY), ["gpus=1", "methods=[vanilla, lp_ft]",
                                     "selection={grid: {lr: [0.001, 0.002]}, policy: seen}"])
    details: dict = {}
    plan(config, REFERENCE["cuda"], details=details)
    jobs = details["jobs"]
    deps = dependencies(config, jobs)
    assert {j.rule for j in jobs} >= {"train_iid", "trial", "finetune", "finetune_keep", "predict"}
    longest = max(j.wall for j in jobs)
    total = sum(j.wall * j.count for j in jobs)
    critical = wall_clock(jobs, deps, None)
    assert wall_clock(jobs, deps, 1) == pytest.approx(total)
    for slots in (2, 3, 8, 1000):
        got = wall_clock(jobs, deps, slots)
        assert got >= max(longest, total / slots) - 1e-9 and got >= critical - 1e-9
    # the critical path: the IID model, then a trial, then LP, then LP-FT (each waits for the one before)
    by_rule = {r: max(j.wall for j in jobs if j.rule == r) for r in ("train_iid", "trial", "finetune_keep")}
    assert critical >= sum(by_rule.values())
    assert wall_clock(jobs, deps, 1000) == pytest.approx(critical)


def test_dependencies_of_a_fold_job():
    config = load_config(str(TINY), ["methods=[vanilla, lp_ft]", "selection={grid: {lr: [0.001, 0.002]}}"])
    jobs = [PlannedJob("finetune", "sent", "iid_to_t", "lp_ft", 1, 1.0, 0, 0, 1.0),
            PlannedJob("finetune", "sent", "iid_plus_t", "vanilla", 1, 1.0, 0, 0, 1.0),
            PlannedJob("trial", "sent", "iid_to_t", "lp_ft", 1, 1.0, 0, 0, 1.0)]
    deps = dependencies(config, jobs)
    # IID->T LP-FT: the IID model, its own trials (LP-FT selects on its grid), the LP models it starts from
    assert deps[0] == (("fold", "iid_to_t", "lp_ft"), (("iid",), ("trial", "iid_to_t", "lp_ft"),
                                                       ("fold", "iid_to_t", "lp")))
    assert deps[1] == (("fold", "iid_plus_t", "vanilla"), ())   # IID+T: the pre-trained model; no trials listed
    assert deps[2] == (("trial", "iid_to_t", "lp_ft"), (("iid",), ("fold", "iid_to_t", "lp")))   # from LP's model


def test_jobs_sharing_a_gpu_take_longer_each_and_fill_more_slots(tmp_path, monkeypatch):
    from beluga.workflow import steps

    # a constructed GPU measurement: BERT-base's eager step at batch 16, 2 jobs 3x one job's sequences / s
    (tmp_path / "m.json").write_text(json.dumps({
        "model": "bert-base", "batch_size": 16, "partial": {"base": {"variants": {
            "host_hygiene": {"steps_per_s": 20.0, "seq_per_s": 100.0}, "jobs_2": {"jobs": 2, "seq_per_s": 300.0}}}}}))
    monkeypatch.setattr(steps, "GPU_BENCHMARKS", tmp_path)
    rates = REFERENCE["cuda"]
    walls = {}
    for k in (1, 2):
        config = load_config(str(TINY), ["gpus=1", f"gpu_jobs={k}"])
        details: dict = {}
        lines = plan(config, rates, details=details)
        walls[k] = {(j.rule, j.configuration): j.wall for j in details["jobs"]}
        gpu_s = sum(ln.hours for ln in lines) * 3600
        assert sum(j.wall * j.count for j in details["jobs"]) / k == pytest.approx(gpu_s)
    assert all(walls[2][key] == pytest.approx(w * 2 / 3) for key, w in walls[1].items())
    text = plan_command(str(TINY), overrides=["gpus=1", "gpu_jobs=4"], gpus=[2])
    assert "  on 2 GPUs: about " in text and "8 job(s) at once (2 x gpu_jobs 4 / gpus 1 per job)" in text


def test_the_slurm_profiles_jobs_cap_the_slots():
    config = load_config(str(TINY), ["gpus=1", "gpu_jobs=2"])
    assert gpu_slots(config, 8, 100)[0] == 16
    slots, words = gpu_slots(config, 200, 100)
    assert slots == 100 and "the Slurm profile's jobs: 100" in words


@pytest.mark.parametrize("fixed, words", [(1000.0, "fits"), (3000.0, "EXCEEDS attempt 1 (a retry fits)"),
                                          (8000.0, "EXCEEDS every attempt")])
def test_a_job_longer_than_its_slurm_time_is_flagged(fixed, words):
    """tiny-random's training jobs ask for 30 minutes, 60 and 120 on the retries."""
    rows = table_rows(plan_command(str(TINY), fixed_s=fixed, cores=2))
    assert words in rows["finetune"][7]


# ---------------------------------------------------------------- the Slurm profile and bad input
def test_the_profile_the_plan_reads(tmp_path):
    got = slurm_profile()
    assert got["path"] == "profiles/slurm/config.yaml" and got["retries"] == 2 and got["jobs"] == 100
    p = tmp_path / "config.yaml"
    p.write_text("retries: 1\nset-resources:\n  finetune:\n    runtime: 45\n")
    got = slurm_profile(p)
    assert got["retries"] == 1 and got["runtime"] == {"finetune": 45}
    # a set-resources runtime is asked at every attempt (snakemake does not double it)
    assert slurm_minutes(None, "finetune", {"task": "sent"}, got) == [45.0, 45.0]
    p.write_text("retries: two\n")
    with pytest.raises(ConfigError, match=f"Slurm profile {p}: field 'retries': 'two'"):
        slurm_profile(p)
    p.write_text("retries: [1\n")
    with pytest.raises(ConfigError, match=f"Slurm profile {p}: field '\\(top level\\)': not valid YAML"):
        slurm_profile(p)
    p.write_text("set-resources:\n  trial:\n    runtime: -5\n")
    with pytest.raises(ConfigError, match="field 'set-resources.trial.runtime'"):
        slurm_profile(p)


def test_the_rule_kinds_are_the_rules_requests():
    """RULE_KIND (the Slurm request of each rule the plan counts) is what rules/*.smk ask for."""
    asked = {name: re.search(r'\*\*job_resources\("(\w+)"\)', body)[1] for name, body in rule_blocks()
             if "**job_resources(" in body}
    assert "use rule finetune as finetune_keep" in (REPO / "rules" / "train.smk").read_text()
    assert {**asked, "finetune_keep": asked["finetune"]} == RULE_KIND


@pytest.mark.parametrize("kwargs, overrides, field", [
    ({"gpus": [2]}, [], "--gpus: field 'gpus': the configuration runs on CPUs"),
    ({"gpus": [0]}, ["gpus=1"], "--gpus: must be positive"),
    ({"gpus": [1]}, ["gpus=2"], "--gpus: field 'gpus': 1 GPU(s) cannot run a job that asks for 2"),
    ({"cores": 4}, ["gpus=1"], "--cores: field 'gpus'"),
    ({"cores": 0}, [], "--cores: must be positive")])
def test_bad_counts_are_one_line(kwargs, overrides, field):
    with pytest.raises(ConfigError, match=re.escape(field)) as e:
        plan_command(str(TINY), overrides=overrides, **kwargs)
    assert "\n" not in str(e.value)


def test_the_json_has_the_jobs_sizes_and_wall_clock(tmp_path):
    out = tmp_path / "plan.json"
    plan_command(str(TINY), as_json=str(out), cores=2)
    got = json.loads(out.read_text())
    assert got["sizes"]["sent"]["suite"]["cases"] == {"train": 6, "val": 3, "test": 3}
    assert {r["rule"] for r in got["job_kinds"]} == {"finetune", "train_iid", "predict"}
    assert all(j["seconds"] > j["fixed_s"] for j in got["jobs"] if j["rule"] != "predict")
    assert any(ln.startswith("  on 2 cores: about ") for ln in got["wall_clock"])
