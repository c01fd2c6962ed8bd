"""End to end (issue 40, GLUE-X): one snakemake run of tasks without a suite (tiny random BERT, local i.i.d. TSVs):
each trains its IID model, which predicts its i.i.d. test set and its OOD sets; the OOD evaluation (scores, the
GLUE-X table with the IID model's system only) and the ranking of the tasks as backbones run; no suite, folds,
scores or Table 3. One task is STS-B-shaped: its float scores are read as five classes (``similarity_classes``).
One run, read by every test here."""

import pandas as pd
import pytest
import yaml
from conftest import smk
from test_workflow_nli import nli_table

pytestmark = pytest.mark.slow

HANS_COLLAPSE = {"entailment": "entailment", "neutral": "non-entailment", "contradiction": "non-entailment"}


def config(tmp) -> dict:
    files = {}
    for name, df in (("mnli", nli_table(80, "m", 1)), ("mnli_mm", nli_table(12, "mm", 2))):
        files[name] = tmp / f"{name}.tsv"
        df.to_csv(files[name], sep="\t", index=False)
    iid = {"n_train": 40, "n_val": 10, "n_test": 20, "seed": 42}
    task = {"type": "nli", "iid": {"source": str(files["mnli"]), **iid},
            "ood": [{"name": "mnli-mm", "source": "local", "path": str(files["mnli_mm"])}]}
    return {
        "results": "results", "seed": 3,
        # one task per backbone (GLUE-X): the same task on two (here equal) models
        "tasks": {"mnli_a": {**task, "model": "tiny-random", "backbone": "tiny-a"},
                  "mnli_b": {**task, "model": "tiny-random", "backbone": "tiny-b"}},
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
    smk(wd, "--cores", "2", configfiles=(cfg_file,))
    return wd, cfg


def test_iid_model_and_its_ood_evaluation_only(run):
    wd, _ = run
    for task in ("mnli_a", "mnli_b"):
        res = wd / "results" / task
        assert not (res / "suite").exists() and not (res / "scores").exists()
        assert sorted(p.name for p in (res / "outcomes").rglob("*.parquet")) == ["all.parquet"]
        out = pd.read_parquet(res / "outcomes" / "iid" / "vanilla" / "standard" / "all.parquet")
        assert set(out["split"]) == {"iid_test", "ood:mnli-mm"}
        table = pd.read_csv(res / "ood" / "ood_table.csv")
        assert "mnli-mm" in table.columns and len(table) == 1
    assert not (wd / "results" / "table3").exists()
    assert (wd / "results" / "ood" / "ranking.csv").exists()
