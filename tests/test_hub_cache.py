"""The hub's own API (issue 37): beluga.data.fetch asks huggingface_hub and datasets whether a model or a
dataset is cached and whether they are offline (their constants, ``try_to_load_from_cache``,
``scan_cache_dir``, ``load_dataset_builder``), never a copy of their cache layouts; ``test --revision``
loads a hub model's revision from the cache and records it with its commit. Offline: the caches are temporary
folders, the libraries' settings patched where they read them (conftest.hf_flags)."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import ENV, REPO, config_with, hf_flags, make_tiny_suite

from beluga.cli import main
from beluga.core.errors import BelugaError
from beluga.data import fetch
from beluga.suites.format import save_suite

NAME = "org/tiny"
COMMIT_A = "a" * 40   # main
COMMIT_B = "b" * 40   # tag v1
COMMIT_C = "c" * 40   # a snapshot without config.json (an interrupted download)


def add_snapshot(cache: Path, name: str, commit: str, src: Path | None, refs=()) -> Path:
    """A snapshot of ``name`` at ``commit`` laid out as huggingface_hub downloads one (files in
    ``snapshots/<commit>`` linking to ``blobs/<sha256>``; ``refs/<ref>`` holding the commit), holding the
    files of the folder ``src`` (none: a snapshot with only a README)."""
    repo = cache / ("models--" + name.replace("/", "--"))
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "blobs").mkdir(exist_ok=True)
    files = {f.name: f.read_bytes() for f in src.iterdir() if f.is_file()} if src else {"README.md": b"# x\n"}
    for fname, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snap / fname).symlink_to(os.path.relpath(blob, snap))
    for ref in refs:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
    return snap


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Two tiny trained models (seeds 0 and 1: different weights)."""
    from beluga.model.modeling import load_model, save_model, set_seed

    out = []
    for seed in (0, 1):
        set_seed(seed)
        model, tok = load_model("tiny-random", 2)
        folder = tmp_path_factory.mktemp("model") / f"tiny{seed}"
        save_model(model, tok, folder, task_type="sent")   # classes named (beluga/model/labels.py)
        out.append(folder)
    return out


@pytest.fixture
def hub_cache(tmp_path, tiny_models, monkeypatch):
    """A hub cache offline: ``org/tiny`` at main (commit A), v1 (commit B) and a config-less commit C."""
    cache = tmp_path / "hub"
    add_snapshot(cache, NAME, COMMIT_A, tiny_models[0], refs=("main",))
    add_snapshot(cache, NAME, COMMIT_B, tiny_models[1], refs=("v1",))
    add_snapshot(cache, NAME, COMMIT_C, None)
    hf_flags(monkeypatch, offline=True, hub_cache=cache)
    return cache


# ---------------------------------------------------------------- flags and folders: the libraries' own
def test_flags_and_folders_are_the_libraries(tmp_path, monkeypatch):
    hf_flags(monkeypatch, offline=True, hub_cache=tmp_path / "h", datasets_cache=tmp_path / "d")
    assert fetch.hub_offline() and fetch.datasets_offline()
    assert fetch.hub_cache_dir() == tmp_path / "h" and fetch.dataset_cache_folder() == tmp_path / "d"
    hf_flags(monkeypatch, offline=False)
    assert not fetch.hub_offline() and not fetch.datasets_offline()


@pytest.mark.slow
def test_environment_read_as_the_libraries_read_it(tmp_path):
    """In a fresh process: HF_HOME places both caches, HF_DATASETS_OFFLINE=0 keeps datasets online while the
    hub is offline (datasets' own precedence), TRANSFORMERS_OFFLINE alone makes the hub offline."""
    env = {k: v for k, v in ENV.items() if not k.startswith(("HF_", "TRANSFORMERS_", "HUGGINGFACE_"))}
    code = ("from beluga.data import fetch; print(fetch.hub_cache_dir(), fetch.dataset_cache_folder(), "
            "fetch.hub_offline(), fetch.datasets_offline())")
    cases = [({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "0"}, "True False"),
             ({"TRANSFORMERS_OFFLINE": "1"}, "True True"), ({}, "False False")]
    for extra, flags in cases:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                             env=dict(env, HF_HOME=str(tmp_path / "home"), **extra))
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split() == [str(tmp_path / "home" / "hub"), str(tmp_path / "home" / "datasets"),
                                      *flags.split()], (extra, out.stdout)


# ---------------------------------------------------------------- models
def test_hub_model_cached_asks_huggingface_hub(hub_cache, tmp_path, monkeypatch):
    assert fetch.hub_model_cached(NAME, None)                    # refs/main -> A
    assert fetch.hub_model_cached(NAME, "v1")                    # a tag -> B
    assert fetch.hub_model_cached(NAME, COMMIT_B)                # a commit
    assert fetch.hub_model_cached(NAME, "v2", commit=COMMIT_A)   # a fetched marker's commit wins
    assert not fetch.hub_model_cached(NAME, "v2")                # a revision the cache does not resolve
    assert not fetch.hub_model_cached(NAME, COMMIT_C)            # a snapshot without config.json
    assert not fetch.hub_model_cached(NAME, None, commit="f" * 40)
    assert fetch.hub_model_cached(NAME, "v2", any_snapshot=True)
    assert not fetch.hub_model_cached("org/other", None, any_snapshot=True)
    hf_flags(monkeypatch, hub_cache=tmp_path / "absent")
    assert not fetch.hub_model_cached(NAME, None) and not fetch.hub_model_cached(NAME, None, any_snapshot=True)


def test_snapshot_commit_from_scan_cache_dir(hub_cache, tmp_path):
    from beluga.model.modeling import resolve_model

    path = resolve_model(NAME, revision="v1")
    assert fetch.snapshot_commit(NAME, path) == COMMIT_B
    assert fetch.snapshot_commit(NAME, resolve_model(NAME)) == COMMIT_A
    assert fetch.snapshot_commit(NAME, tmp_path) is None
    with pytest.raises(BelugaError, match="revision 'v2' is not in the Hugging Face cache"):
        resolve_model(NAME, revision="v2")


# ---------------------------------------------------------------- datasets
def test_hub_dataset_cached_asks_datasets(tmp_path, monkeypatch):
    import datasets

    hf_flags(monkeypatch, offline=True, datasets_cache=tmp_path / "cache")
    assert not fetch.hub_dataset_cached("mini_reviews")
    src = tmp_path / "src" / "mini_reviews"
    src.mkdir(parents=True)
    pd.DataFrame({"text": ["good", "bad"], "label": [1, 0]}).to_csv(src / "test.csv", index=False)
    datasets.load_dataset(str(src), split="test", cache_dir=str(tmp_path / "cache"))   # prepared as a download
    assert fetch.hub_dataset_cached("mini_reviews")
    assert fetch.hub_dataset_cached("mini_reviews", "default", revision="v1")   # offline: the latest copy
    assert not fetch.hub_dataset_cached("mini_reviews", "other")
    assert not fetch.hub_dataset_cached("org/mini_reviews")
    hf_flags(monkeypatch, datasets_cache=tmp_path / "elsewhere")
    assert not fetch.hub_dataset_cached("mini_reviews")
    hf_flags(monkeypatch, offline=False)
    with pytest.raises(ValueError, match="online"):   # online, datasets' lookup would ask the hub
        fetch.hub_dataset_cached("mini_reviews")


def test_revision_reaches_load_dataset_and_the_records(monkeypatch):
    """iid.revision and an OOD hub set's revision are passed to datasets.load_dataset and recorded (iid/source.json,
    the prepared OOD table's metadata)."""
    import datasets

    from beluga.data import iid, ood_sets

    calls = []

    def fake_load(path, name=None, split=None, revision=None, **kw):
        calls.append((path, name, split, revision))
        return datasets.Dataset.from_dict({"sentence": ["good", "bad", "fine", "awful"], "text": ["a", "b", "c", "d"],
                                           "label": [1, 0, 1, 0]})

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    hf_flags(monkeypatch, offline=False)
    monkeypatch.setattr("beluga.data.tables.hub_reachable", lambda: True)
    cfg = {"source": "hf:org/reviews", "revision": "v1.0", "n_train": 2, "n_val": 1, "n_test": 1}
    iid.load_splits(cfg, "classification", {0, 1}, pair=False)
    assert calls[-1] == ("org/reviews", None, "train", "v1.0")
    record = iid.describe_source(cfg)
    assert record["revision"] == "v1.0" and "revision v1.0" in record["origin"]
    assert iid.describe_source({**cfg, "revision": None})["revision"] is None
    assert "revision" not in iid.describe_source({"source": "rotten_tomatoes", "n_val": 1, "n_test": 1})
    entry = {"name": "rev", "source": "hub", "dataset": "org/reviews", "dataset_config": "plain", "revision": "abc",
             "split": "validation"}
    ood_sets.load_ood(entry, "classification", {0, 1}, pair=False)
    assert calls[-1] == ("org/reviews", "plain", "validation", "abc")
    assert ood_sets.hub_source_record(entry) == {"source": "hub", "dataset": "org/reviews",
                                                 "dataset_config": "plain", "revision": "abc", "split": "validation"}
    assert ood_sets.hub_source_record({"name": "t", "source": "hutto", "set": "nyt"}) is None


def test_prepare_ood_records_the_hub_source(tmp_path, monkeypatch):
    from beluga.steps import data as data_steps

    table = pd.DataFrame({"example_id": ["a", "b"], "text": ["good", "bad"], "label": [1, 0]})
    monkeypatch.setattr("beluga.data.ood_sets.load_ood", lambda *a, **k: table)
    entry = {"name": "rev", "source": "hub", "dataset": "imdb", "revision": "v2"}
    data_steps.prepare_ood(entry=entry, task_type="sent", out_data=str(tmp_path / "rev.parquet"))
    meta = pq.read_schema(tmp_path / "rev.parquet").metadata
    assert json.loads(meta[b"beluga.ood_source"]) == {"source": "hub", "dataset": "imdb", "dataset_config": None,
                                                      "revision": "v2", "split": "test"}


def test_revision_of_a_source_that_has_none_is_refused():
    from beluga.core.errors import ConfigError
    from beluga.workflow import dag

    task = json.loads(json.dumps(config_with()["tasks"]["sent"]))
    with pytest.raises(ConfigError) as excinfo:
        dag.check_sources({"sent": {**task, "iid": {**task["iid"], "revision": "v1"}}}, ["c.yaml"])
    line = str(excinfo.value)
    assert "\n" not in line and "config file c.yaml" in line and "field 'tasks.sent.iid.revision'" in line, line
    with pytest.raises(ConfigError) as excinfo:
        dag.check_sources({"sent": {**task, "ood": [{"name": "t", "source": "hutto", "set": "nyt", "revision": "v"}]}},
                          ["c.yaml"])
    assert "field 'tasks.sent.ood[0].revision'" in str(excinfo.value)


def test_schema_takes_revision_keys_and_keeps_configs_valid():
    import yaml

    from beluga.core.errors import ConfigError
    from beluga.workflow.config import validate_config

    for configfile in sorted((REPO / "configs").glob("*.yaml")):   # every shipped configuration still validates
        validate_config(yaml.safe_load(configfile.read_text()) or {}, [str(configfile)])
    validate_config(config_with(), ["c.yaml"])
    iid = {"source": "hf:org/reviews", "revision": "v1.0", "n_train": 10, "n_val": 5, "n_test": 5}
    hub = {"name": "h", "source": "hub", "dataset": "imdb", "revision": "refs/pr/1"}
    validate_config(config_with(tasks__sent__iid=iid, tasks__sent__ood=[hub]), ["c.yaml"])
    with pytest.raises(ConfigError) as excinfo:
        validate_config(config_with(tasks__sent__ood=[{**hub, "revision": 3}]), ["c.yaml"])
    line = str(excinfo.value)
    assert "\n" not in line and "tasks.sent.ood[0].revision" in line, line


# ---------------------------------------------------------------- test --revision
@pytest.fixture(scope="module")
def suite_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("suite") / "suite.parquet"
    save_suite(make_tiny_suite(4), path)
    return path


def test_test_revision_loads_the_revision_and_records_it(hub_cache, tiny_models, suite_file, tmp_path):
    args = ["--suite", str(suite_file), "--task", "sent"]
    assert main(["test", "--model", NAME, "--revision", "v1", "--out", str(tmp_path / "v1"), *args]) == 0
    assert main(["test", "--model", NAME, "--out", str(tmp_path / "main"), *args]) == 0
    assert main(["test", "--model", str(tiny_models[1]), "--out", str(tmp_path / "local"), *args]) == 0
    meta = pq.read_schema(tmp_path / "v1" / "predictions.parquet").metadata
    assert json.loads(meta[b"beluga.hub_models"]) == [{"model": NAME, "revision": "v1", "commit": COMMIT_B}]
    meta = pq.read_schema(tmp_path / "main" / "predictions.parquet").metadata
    assert json.loads(meta[b"beluga.hub_models"]) == [{"model": NAME, "revision": "main", "commit": COMMIT_A}]
    assert b"beluga.hub_models" not in (pq.read_schema(tmp_path / "local" / "predictions.parquet").metadata or {})
    probs = {k: pd.read_parquet(tmp_path / k / "predictions.parquet")["probs"].map(list).tolist()
             for k in ("v1", "main", "local")}
    assert probs["v1"] == probs["local"] and probs["v1"] != probs["main"]   # v1's weights, not main's
    assert f"{NAME} @ v1" in (tmp_path / "v1" / "summary.md").read_text()


@pytest.mark.parametrize("model", ["local", "default", "tiny-random"])
def test_test_revision_with_a_model_that_is_not_on_the_hub_is_refused(tiny_models, suite_file, tmp_path, capsys,
                                                                      model):
    spec = str(tiny_models[0]) if model == "local" else model
    assert main(["test", "--model", spec, "--revision", "v1", "--suite", str(suite_file), "--out",
                 str(tmp_path / "o"), "--task", "sent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field '--revision'" in err[0] and spec in err[0] and "not a Hugging Face hub" in err[0]
    assert not (tmp_path / "o").exists()
