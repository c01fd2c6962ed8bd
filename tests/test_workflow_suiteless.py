"""End to end (issue 40, GLUE-X): one snakemake run of tasks without a suite (tiny random BERT, local i.i.d. TSVs):
each trains its IID model, which predicts its i.i.d. test set and its OOD sets; the OOD evaluation (scores, the
GLUE-X table with the IID model's system only) and the ranking of the tasks as backbones run; no suite, folds,
scores or Table 3. One task is STS-B-shaped: its float scores are read as five classes (``similarity_classes``).
One run, read by every test here."""

import numpy as np
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
    # GLUE's STS-B metrics of the same model: its expected class against the gold score, in its OOD table
    out = pd.read_parquet(res / "outcomes" / "iid" / "vanilla" / "standard" / "all.parquet")
    probs = preds.set_index(["split", "case_id"])["probs"]
    for split, gold in (("iid_test", test), ("ood:sick", sick)):
        rows = out[out["split"] == split].set_index("case_id")
        expected = [float(np.dot(probs[(split, c)], np.arange(5))) for c in rows.index]
        np.testing.assert_allclose(rows["pred_score"], expected, atol=1e-6)
        assert rows["gold_score"].tolist() == gold.set_index("example_id").loc[rows.index, "score"].tolist()
        table = pd.read_csv(res / "ood" / "ood_table.csv").iloc[0]
        column = "pearson:id" if split == "iid_test" else "pearson:sick"
        assert table[column] == pytest.approx(100 * np.corrcoef(expected, rows["gold_score"])[0, 1], abs=1e-4)
    assert "## The same models in GLUE's STS-B metrics" in (res / "ood" / "ood_table.md").read_text()


def test_gluex_tables_over_the_backbones(run):
    wd, _ = run
    ood = wd / "results" / "ood"
    ranking = pd.read_csv(ood / "ranking.csv")
    assert set(ranking["benchmark"]) == {"mnli_a", "stsb_a", "all"}
    t3 = pd.read_csv(ood / "gluex_table3.csv")
    t4 = pd.read_csv(ood / "gluex_table4.csv")
    assert sorted(t3["model"]) == ["tiny-a", "tiny-b"] and list(t3["model"]) == list(t4["model"])
    assert list(t4.columns) == ["model", "mnli", "stsb", "ood_avg", "decrease_ratio", "stsb:pearson:id",
                                "stsb:pearson:ood", "stsb:spearman:id", "stsb:spearman:ood"]
    for backbone, task in (("tiny-a", "stsb_a"), ("tiny-b", "stsb_b")):   # each STS-B task's own table
        own = pd.read_csv(wd / "results" / task / "ood" / "ood_table.csv").iloc[0]
        row = t4.set_index("model").loc[backbone]
        assert row["stsb:pearson:id"] == pytest.approx(own["pearson:id"])
        assert row["stsb:spearman:ood"] == pytest.approx(own["spearman:sick"])
    every = ranking[ranking["benchmark"] == "all"].set_index("system")
    for r in t3.to_dict("records"):
        assert r["ood_avg"] == pytest.approx(every.loc[f"{r['model']}/iid/vanilla", "ood_avg"])
    md = (ood / "gluex_tables.md").read_text()
    assert "# GLUE-X Table 3" in md and "| Model | mnli | stsb (five-class accuracy) | Avg | Avg ↓ |" in md
    assert "# GLUE-X Table 4, stsb: the same models in GLUE's STS-B metrics" in md
