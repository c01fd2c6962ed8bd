"""configs/gluex_paper.yaml (GLUE-X, issue 40): it validates; on a data folder staged here with tiny files in the
official shapes (GLUE's SST-2 / QQP TSVs and MNLI / RTE / STS-B archives, SNLI, SICK, HANS, SciTail, MRPC as a
local table) ``python -m beluga plan`` prints its cost and a dry run builds its DAG: per task and backbone one IID
model, its predictions and its OOD evaluation, the ranking over backbones, and nothing of BELUGA's (no suite, folds
or Table 3). Hub models and hub sets are not contacted in a dry run (their fetch / prepare jobs are planned)."""

import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ENV, REPO, SNAKEMAKE, job_counts
from test_challenge_data import hans_files, jsonl, nli_record, sick_zip, write_zip
from test_glue_data import glue_zip

from beluga.workflow.plan import plan_command

CONFIG = REPO / "configs" / "gluex_paper.yaml"
GLUE_TASKS = ("sst2", "mnli", "rte", "mrpc", "qqp", "stsb")
BACKBONES = ("bert", "roberta", "electra")


def stage(data: Path) -> Path:
    """A data folder in the fetched layout, every file a few rows in its official shape."""
    sst2 = data / "iid" / "sst2"
    sst2.mkdir(parents=True)
    for split, n in (("train", 40), ("dev", 12)):
        (sst2 / f"{split}.tsv").write_text("sentence\tlabel\n" + "".join(
            f"a {'good' if i % 2 else 'bad'} film number {i} \t{i % 2}\n" for i in range(n)))
    qqp = data / "iid" / "qqp"
    qqp.mkdir(parents=True)
    for split, n in (("train", 40), ("dev", 12)):
        (qqp / f"{split}.tsv").write_text("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n" + "".join(
            f"{i}\t{2 * i}\t{2 * i + 1}\twhat is {i}?\twhat is {i % 5}?\t{int(i % 5 == i)}\n" for i in range(n)))
    for source in ("mnli", "rte", "stsb"):
        glue_zip(data / "iid" / source, source, n_train=12, n_dev=8)
    mrpc = data / "iid" / "mrpc"
    mrpc.mkdir(parents=True)
    (mrpc / "mrpc.tsv").write_text("id\ttext\ttext_b\tlabel\n" + "".join(
        f"m{i}\tHe said {i} things .\tHe told {i} things .\t{i % 2}\n" for i in range(600)))
    write_zip(data / "ood" / "snli" / "snli_1.0.zip", {
        f"snli_1.0/snli_1.0_{s}.jsonl": jsonl(nli_record(10 * k + i, lab) for i, lab in
                                              enumerate(("entailment", "neutral", "contradiction")))
        for k, s in enumerate(("train", "dev", "test"))})
    sick_zip(data / "ood" / "sick", [(1, "NEUTRAL", "4.5", "TRAIN"), (2, "ENTAILMENT", "3.6", "TEST"),
                                     (3, "CONTRADICTION", "1", "TRIAL")])
    hans_files(data / "ood" / "hans")
    write_zip(data / "ood" / "scitail" / "SciTailV1.1.zip", {
        f"SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv": "P .\tH .\tentails\nQ .\tG .\tneutral\n"
        for s in ("train", "dev", "test")})
    return data


def test_the_configuration_lists_every_task_for_every_backbone():
    cfg = yaml.safe_load(CONFIG.read_text())
    assert set(cfg["tasks"]) == {f"{t}_{b}" for t in GLUE_TASKS for b in BACKBONES}
    for tid, task in cfg["tasks"].items():
        assert "suite" not in task and task["ood"], tid
        assert task["backbone"] == task["model"]
        assert all(e["credit"].startswith("GLUE-X") for e in task["ood"]), tid
    assert cfg["tasks"]["stsb_bert"]["type"] == "similarity_classes"
    assert [e["source"] for e in cfg["tasks"]["mnli_bert"]["ood"]] == ["mnli_mismatched", "snli", "sick"]


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    return stage(tmp_path_factory.mktemp("gluex") / "data")


def test_plan_prints_its_cost(staged):
    text = plan_command(str(CONFIG), overrides=[f"data_dir={staged}"])
    lines = text.splitlines()
    assert any(ln.startswith("train_iid ") for ln in lines), text
    assert not any(ln.startswith(("finetune", "trial", "inoculate")) for ln in lines), text
    assert any(ln == "data of stsb_bert: no suite (its IID model and OOD evaluation only)" for ln in lines), text


@pytest.mark.slow
def test_dry_run_builds_the_dag_from_staged_files(staged, tmp_path):
    env = {k: v for k, v in ENV.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "-n", "--quiet", "rules",
           "--configfile", str(CONFIG), "--config", f"data_dir={staged}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    counts = job_counts(out.stdout + out.stderr)
    n = len(GLUE_TASKS) * len(BACKBONES)
    assert counts["train_iid"] == n and counts["predict"] == n and counts["ood"] == n, counts
    assert counts["ood_ranking"] == 1 and counts["gluex_tables"] == 1, counts
    assert not {"finetune", "build_suite", "split_suite", "table3", "trial"} & set(counts), counts
