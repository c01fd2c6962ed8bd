"""End to end (issue 40, GLUE-X): one snakemake run of tasks without a suite (tiny random BERT, local i.i.d. TSVs):
each trains its IID model, which predicts its i.i.d. test set and its OOD sets; the OOD evaluation (scores, the
GLUE-X table with the IID model's system only) and the ranking of the tasks as backbones run; no suite, folds,
scores or Table 3. One task is STS-B-shaped: its float scores are read as five classes (``similarity_classes``).
One run, read by every test here."""

import pandas as pd
import pytest
import yaml
from conftest import pipeline
from test_challenge_data import sick_zip
from test_glue_data import glue_zip
from test_workflow_nli import nli_table

from beluga.core.tasks import SIMILARITY_CLASSES

HANS_COLLAPSE = {"entailment": "entailment", "neutral": "non-entailment", "contradiction": "non-entailment"}


def config(tmp) -> dict:
    files = {}
    for name, df in (("mnli", nli_table(80, "m", 1)), ("mnli_mm", nli_table(12, "mm", 2))):
        files[name] = tmp / f"{name}.tsv"
        df.to_csv(files[name], sep="\t", index=False)
    iid = {"n_train": 40, "n_val": 10, "n_test": 20, "seed": 42}
    task = {"type": "nli", "iid": {"source": str(files["mnli"]), **iid},
            "ood": [{"name": "mnli-mm", "source": "local", "path": str(files["mnli_mm"])}]}
    glue_zip(tmp / "stsb", "stsb", n_train=30, n_dev=12)      # GLUE's STS-B.zip: scores in [0, 5]
    sick_zip(tmp / "sick", [(i, "NEUTRAL", f"{1 + (i % 9) / 2:g}", "TEST") for i in range(10)])
    stsb = {"type": "similarity_classes", "iid": {"source": "stsb", "path": str(tmp / "stsb"), "seed": 42},
            "ood": [{"name": "sick", "source": "sick", "path": str(tmp / "sick")}]}
    return {
        "results": "results", "seed": 3,
        # one task per backbone (GLUE-X): two tasks on two (here equal) models
        "tasks": {"mnli_a": {**task, "model": "tiny-random", "backbone": "tiny-a"},
                  "mnli_b": {**task, "model": "tiny-random", "backbone": "tiny-b"},
                  "stsb_a": {**stsb, "model": "tiny-random", "backbone": "tiny-a"},
                  "stsb_b": {**stsb, "model": "tiny-random", "backbone": "tiny-b"}},
        "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen"],
        "training": {"max_length": 32, "iid": {"lr": 1.0e-3, "batch_size": 8, "epochs": 1},
                     "suite": {"lr": 1.0e-3, "batch_size": 4, "epochs": 1}},
        "predict": {"batch_size": 32},
        "statistics": {"randomization_R": 100, "bootstrap_R": 100},
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("suiteless")
    cfg = config(tmp)
    cfg_file = tmp / "suiteless.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp / "run"
    pipeline(wd, "--cores", "2", configfiles=(cfg_file,))
    return wd, cfg


def test_iid_model_and_its_ood_evaluation_only(run):
    wd, _ = run
    for task, ood in (("mnli_a", "mnli-mm"), ("mnli_b", "mnli-mm"), ("stsb_a", "sick"), ("stsb_b", "sick")):
        res = wd / "results" / task
        assert not (res / "suite").exists() and not (res / "scores").exists()
        assert sorted(p.name for p in (res / "outcomes").rglob("*.parquet")) == ["all.parquet"]
        out = pd.read_parquet(res / "outcomes" / "iid" / "vanilla" / "standard" / "all.parquet")
        assert set(out["split"]) == {"iid_test", f"ood:{ood}"}
        table = pd.read_csv(res / "ood" / "ood_table.csv")
        assert ood in table.columns and len(table) == 1 and table["system"].tolist() == ["iid/vanilla"]
    assert not (wd / "results" / "table3").exists()


def test_stsb_and_sick_are_five_classes(run):
    wd, _ = run
    res = wd / "results" / "stsb_a"
    test = pd.read_parquet(res / "iid" / "test.parquet")
    assert list(test["label"]) == list(SIMILARITY_CLASSES.score_classes(test["score"]))
    sick = pd.read_parquet(res / "ood" / "data" / "sick.parquet")
    assert list(sick["label"]) == list(SIMILARITY_CLASSES.score_classes(sick["score"]))
    preds = pd.read_parquet(res / "predictions" / "iid" / "vanilla" / "standard" / "all.parquet")
    assert {len(p) for p in preds["probs"]} == {5}


def test_gluex_tables_over_the_backbones(run):
    wd, _ = run
    ood = wd / "results" / "ood"
    ranking = pd.read_csv(ood / "ranking.csv")
    assert set(ranking["benchmark"]) == {"mnli_a", "stsb_a", "all"}
    t3 = pd.read_csv(ood / "gluex_table3.csv")
    t4 = pd.read_csv(ood / "gluex_table4.csv")
    assert sorted(t3["model"]) == ["tiny-a", "tiny-b"] and list(t3["model"]) == list(t4["model"])
    assert list(t4.columns) == ["model", "mnli", "stsb", "ood_avg", "decrease_ratio"]
    every = ranking[ranking["benchmark"] == "all"].set_index("system")
    for r in t3.to_dict("records"):
        assert r["ood_avg"] == pytest.approx(every.loc[f"{r['model']}/iid/vanilla", "ood_avg"])
    md = (ood / "gluex_tables.md").read_text()
    assert "# GLUE-X Table 3" in md and "| Model | mnli | stsb | Avg | Avg ↓ |" in md
