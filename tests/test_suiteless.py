"""Tasks without a suite (issue 40, GLUE-X): the config check and the runs of a suite-less task (its IID model
only: no folds, no fold runs; the OOD systems are the IID model's), beside a task with a suite whose runs are
unchanged; inoculation asked of a suite-less task stops in one line naming the config file and the field; a
five-class STS-B task reads GLUE's STS-B source. Dry loads only (beluga.workflow.config.load_workflow)."""

import pytest
from conftest import dry_load, load_error
from test_glue_data import glue_zip
from test_workflow_nli import nli_suite, nli_table

from beluga.suites.format import save_suite
from beluga.workflow.paths import IID_RUN


def config(tmp, **extra) -> dict:
    nli_table(80, "m", 1).to_csv(tmp / "mnli.tsv", sep="\t", index=False)
    nli_table(12, "mm", 2).to_csv(tmp / "mm.tsv", sep="\t", index=False)
    save_suite(nli_suite(), tmp / "nli_suite.parquet", task="nli")
    glue_zip(tmp / "stsb", "stsb", n_train=12, n_dev=8)
    iid = {"source": str(tmp / "mnli.tsv"), "n_train": 40, "n_val": 10, "n_test": 20, "seed": 42}
    ood = [{"name": "mm", "source": "local", "path": str(tmp / "mm.tsv")}]
    return {"tasks": {
        "plain": {"type": "nli", "model": "tiny-random", "iid": iid, "ood": ood},
        "stsb": {"type": "similarity_classes", "model": "tiny-random",
                 "iid": {"source": "stsb", "path": str(tmp / "stsb")}, "ood": ood[:0]},
        "suited": {"type": "nli", "model": "tiny-random", "iid": iid, "ood": ood,
                   "suite": {"path": str(tmp / "nli_suite.parquet")}}},
        "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen", "func"], **extra}


def test_a_suiteless_task_has_its_iid_model_only(tmp_path):
    loaded, _ = dry_load(tmp_path / "w", config(tmp_path))
    runs = loaded.runs
    assert runs.suiteless == ["plain", "stsb"]
    assert runs.folds["plain"] == [] and runs.func_names["plain"] == [] and runs.func_tables["plain"] is None
    assert runs.run_keys("plain") == [IID_RUN] and runs.ood_keys("plain", "systems") == [IID_RUN]
    assert len(runs.run_keys("suited")) > 1 and "plain" not in runs.suite_specs


@pytest.mark.parametrize("inoc", [{"enabled": True, "tasks": ["plain"]}, {"tasks": ["suited", "stsb"]}])
def test_inoculation_of_a_suiteless_task_is_refused(tmp_path, inoc):
    named = inoc["tasks"][-1]
    line, cfg_file = load_error(tmp_path / "w", config(tmp_path, inoculation=inoc), "inoculation.tasks", named)
    assert str(cfg_file) in line and "has no suite" in line


def test_inoculation_with_no_suite_anywhere_is_refused(tmp_path):
    cfg = config(tmp_path, inoculation={"enabled": True})
    del cfg["tasks"]["suited"]
    line, _ = load_error(tmp_path / "w", cfg, "inoculation.enabled", "no task has a suite")
    assert "\n" not in line
