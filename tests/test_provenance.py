"""Provenance (issue 37 item 4): the record every run record, the run's run.json and every ``test`` / ``score``
output folder hold — versions of the packages that shape results, the git commit and dirty flag, what ran it,
the user-given inputs' SHA-256 (beluga/core/provenance.py)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest
from conftest import REPO, beluga_cli, make_tiny_suite, score_argv

from beluga.core import provenance
from beluga.suites.format import save_suite

HEX40 = re.compile(r"^[0-9a-f]{40}$")


def check_record(rec: dict, inputs: dict[str, Path] | None = None) -> None:
    """The provenance fields of a record: versions as installed, git as the checkout says, the inputs' digests."""
    assert rec["versions"]["python"] and rec["versions"]["beluga"] == metadata.version("beluga")
    assert rec["versions"]["transformers"] == metadata.version("transformers")
    assert set(provenance.PACKAGES) <= set(rec["versions"])
    git = rec["git"]
    assert HEX40.match(git["commit"]) and isinstance(git["dirty"], bool), git
    ancestor = subprocess.run(["git", "-C", str(REPO), "merge-base", "--is-ancestor", git["commit"], "HEAD"])
    assert ancestor.returncode == 0, git   # the checkout's commit when the record was made (HEAD or before it)
    for name, path in (inputs or {}).items():
        got = rec["inputs"][name]
        if path.is_dir():
            assert got["files"] and all(HEX40.match(v["sha256"] or "0" * 40) or len(v["sha256"]) == 64
                                        for v in got["files"].values()), got
        else:
            assert got["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), (name, got)


def test_versions_come_from_the_installed_metadata():
    v = provenance.versions()
    assert v["numpy"] == metadata.version("numpy") and v["snakemake"] == metadata.version("snakemake")
    assert set(provenance.PACKAGES) | {"python"} == set(v)


#: declared dependencies whose version cannot change a result (their reason): the rest must be recorded
NOT_RECORDED = {
    "snakemake-executor-plugin-slurm": "where a job runs (a Slurm cluster), not what it computes",
    "snakemake-storage-plugin-http": "downloads the data files, which are checked against SHA256SUMS when staged",
    "tqdm": "the commands' progress bars",
    "lm-eval": "never imported: `suite export` writes tasks for it, `score` reads its samples (their digests)",
}
#: recorded but not declared (brought by a declared one)
RECORDED_UNDECLARED = {"tokenizers": "transformers'", "accelerate": "peft's: a LoRA model's adapters"}
#: the optional dependency groups of tools (tests, lint, packaging), none of them run by the pipeline
TOOL_GROUPS = {"dev"}


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    """The distributions pyproject.toml's dependencies and optional dependencies (but the tools') name."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for group, items in project.get("optional-dependencies", {}).items():
        if group not in TOOL_GROUPS:
            reqs += items
    return {_normalised(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in reqs}


def test_versions_name_every_declared_package_that_shapes_a_result():
    """pyproject.toml is the list: a dependency added there and not to provenance.PACKAGES (or to
    NOT_RECORDED, with its reason) fails here (peft and accelerate were once missing: a LoRA model's record
    did not say which peft made its adapters)."""
    declared = _declared()
    assert set(NOT_RECORDED) <= declared, set(NOT_RECORDED) - declared   # an exclusion of a package still declared
    expected = (declared - set(NOT_RECORDED)) | set(RECORDED_UNDECLARED) | {"beluga"}
    recorded = {_normalised(p) for p in provenance.PACKAGES}
    assert recorded == expected, {"not recorded": sorted(expected - recorded),
                                  "recorded, not declared": sorted(recorded - expected)}
    v = provenance.versions()
    assert v["peft"] == metadata.version("peft") and v["accelerate"] == metadata.version("accelerate")


def test_git_state_of_a_checkout_and_of_a_folder_that_is_not_one(tmp_path):
    here = provenance.git_state()
    assert HEX40.match(here["commit"]) and isinstance(here["dirty"], bool)
    outside = provenance.git_state(str(tmp_path))
    assert outside["commit"] is None and "not in a git checkout" in outside["why"]


def test_dirty_flag(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    git("add", "a.txt")
    git("commit", "-qm", "a")
    clean = provenance.git_state.__wrapped__(str(tmp_path))
    (tmp_path / "untracked.txt").write_text("not ours\n")     # untracked files do not count
    assert clean["dirty"] is False and provenance.git_state.__wrapped__(str(tmp_path))["dirty"] is False
    (tmp_path / "a.txt").write_text("b\n")
    dirty = provenance.git_state.__wrapped__(str(tmp_path))
    assert dirty["dirty"] is True and dirty["commit"] == clean["commit"]


def test_file_digests_and_the_size_limit(tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(b"x" * 1000)
    assert provenance.file_digest(f)["sha256"] == hashlib.sha256(b"x" * 1000).hexdigest()
    assert provenance.file_digest(f, max_bytes=999) == {"path": str(f), "bytes": 1000, "sha256": None}
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "w.safetensors").write_bytes(b"w")
    assert provenance.file_digest(tmp_path / "d")["files"] == {
        "w.safetensors": {"bytes": 1, "sha256": hashlib.sha256(b"w").hexdigest()}}


def test_command_is_the_job_inside_a_job_else_the_command_line(monkeypatch):
    monkeypatch.setattr(provenance, "_JOB", {})
    assert "argv" in provenance.command()
    provenance.set_job("train_iid", {"task": "sent"}, [])
    assert provenance.command() == {"rule": "train_iid", "wildcards": {"task": "sent"}}
    assert provenance.record()["inputs"] == {}


@pytest.fixture(scope="module")
def tested(tmp_path_factory):
    """``test`` and ``score`` run in-process on the tiny suite (a tiny model saved with its task)."""
    from beluga.model.modeling import load_model, save_model, set_seed

    tmp = tmp_path_factory.mktemp("prov")
    assert provenance._JOB == {}, provenance._JOB   # no job left behind by an earlier test's job wrapper
    set_seed(0)
    model, tok = load_model("tiny-random", 2)
    save_model(model, tok, tmp / "model", task_type="sent")
    save_suite(make_tiny_suite(2), tmp / "suite.parquet")
    t = beluga_cli("test", "--model", str(tmp / "model"), "--suite", str(tmp / "suite.parquet"), "--out",
                   str(tmp / "test_out"), "--task", "sent")
    s = beluga_cli(*score_argv(tmp / "suite.parquet", tmp, tmp / "score_out"))
    assert t.returncode == 0 and s.returncode == 0, (t.stderr, s.stderr)
    return tmp


def test_test_output_folder_holds_its_provenance(tested):
    rec = json.loads((tested / "test_out" / "run.json").read_text())
    assert rec["subcommand"] == "test" and "argv" in rec["command"]
    assert rec["arguments"]["models"] == [str(tested / "model")]
    assert rec["arguments"]["suite"] == str(tested / "suite.parquet") and rec["arguments"]["task"] == "sent"
    assert rec["labels"][str(tested / "model")]["by"] == "id2label"
    check_record(rec, {"suite": tested / "suite.parquet", f"model {tested / 'model'}": tested / "model"})
    files = rec["inputs"][f"model {tested / 'model'}"]["files"]
    assert files["model.safetensors"]["sha256"] == hashlib.sha256(
        (tested / "model" / "model.safetensors").read_bytes()).hexdigest()


def test_score_output_folder_holds_its_provenance(tested):
    rec = json.loads((tested / "score_out" / "run.json").read_text())
    assert rec["subcommand"] == "score" and "argv" in rec["command"] and rec["arguments"]["task"] == "sent"
    check_record(rec, {"suite": tested / "suite.parquet", "predictions": tested / "preds.parquet"})


@pytest.mark.slow
def test_pipeline_records_hold_the_provenance(tiny_run):
    """The tiny run (shared): every model's run record and the run's run.json."""
    results = tiny_run / "results"
    records = sorted(results.rglob("beluga_run.json"))
    assert records
    for path in records:
        rec = json.loads(path.read_text())
        assert rec["command"]["rule"] in ("train_iid", "finetune", "finetune_model", "finetune_keep"), path
        assert HEX40.match(rec["git"]["commit"]) and set(provenance.PACKAGES) <= set(rec["versions"]), path
    iid = json.loads((results / "sent" / "models" / "iid" / "beluga_run.json").read_text()) \
        if (results / "sent" / "models" / "iid" / "beluga_run.json").exists() else json.loads(records[0].read_text())
    assert isinstance(iid["inputs"], dict)
    run = json.loads((results / "run.json").read_text())
    check_record(run)
    assert run["command"]["rule"] == "run_config"
    assert any(p.endswith(".yaml") and d["sha256"] for p, d in run["inputs"].items()), run["inputs"]
    head = (results / "run_config.yaml").read_text().splitlines()[:3]
    assert head[1] == f"# code: git {run['git']['commit']}" + (" (uncommitted changes)" if run["git"]["dirty"]
                                                                else "") and head[2].startswith("# versions:")
