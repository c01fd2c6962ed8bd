"""The related papers' configurations (issue 40) on a data folder staged with tiny files in the official
shapes (tests/staging.py): each plans with ``python -m beluga plan`` (its cost printed) and builds its DAG
in a dry run, with the files of the real configuration and only ``data_dir`` overridden."""

import re
import subprocess
from pathlib import Path

import pytest
from conftest import ENV, REPO, SNAKEMAKE, job_counts
from staging import stage_hub_models, staged_config

from beluga.workflow.plan import plan_command

INOCULATION = REPO / "configs" / "inoculation_paper.yaml"
COMBINATIONAL = REPO / "configs" / "combinational_paper.yaml"


@pytest.fixture(scope="module")
def inoculation_data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("inoculation_paper") / "data"
    staged_config(INOCULATION, data)
    return data


def dry_run(config_file: Path, data: Path, workdir: Path, *targets: str, jobs: list | None = None) -> dict[str, int]:
    """Job counts of ``snakemake -n`` on ``config_file`` with ``data_dir`` = ``data``, offline, its hub
    models' configs staged in a cache of their own (tests/staging.py). ``jobs``: a list that receives the
    lines the dry run prints for its jobs (without it, quiet: the counts only)."""
    env = dict(ENV, **stage_hub_models(staged_config(config_file, data), workdir / "hub"))
    quiet = ["--quiet", "rules"] if jobs is None else []
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir / "wd"), "-n", *targets, *quiet,
           "--configfile", str(config_file), "--config", f"data_dir={data}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, f"{out.stdout[-3000:]}\n{out.stderr[-4000:]}"
    if jobs is not None:
        jobs.extend((out.stdout + out.stderr).splitlines())
    return job_counts(out.stdout + out.stderr)


def _line(text: str, start: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith(start))


def test_inoculation_paper_plans_its_cost(inoculation_data):
    text = plan_command(str(INOCULATION), overrides=[f"data_dir={inoculation_data}"])
    # four NLI stress tests x 9 doses (5 ... 1000, all) and numerical reasoning x 8 (its 1,000-example split: its
    # 1000 is its all) x the NLI grid (6 rates) + AddSent x 9 doses x the SQuAD grid (4 rates)
    row = _line(text, "inoculate ").split()
    assert row[:4] == ["inoculate", "iid_to_t", "vanilla", "300"]
    # a released dose counts its own size (5 ... 1,000), whatever the staged splits' sizes
    assert int(row[4].replace(",", "")) > 1000
    assert "total:" in text and "GPU-min" in _line(text, "total:")


@pytest.mark.slow
def test_inoculation_paper_builds_its_dag(inoculation_data, tmp_path):
    counts = dry_run(INOCULATION, inoculation_data, tmp_path, "inoculation_all")
    assert counts["inoculate"] == 300 and counts["inoculation"] == 2 and counts["prepare_ood"] == 12
    assert counts["train_iid"] == 2 and counts["fetch_model"] == 1     # one hub model, its marker written
    everything = dry_run(INOCULATION, inoculation_data, tmp_path, "all")   # also the seen models and tables
    assert everything["inoculate"] == 300 and everything["table3"] == 1 and everything["ood"] == 2


# ---------------------------------------------------------------- combinational OOD (Fang et al. 2022)
@pytest.fixture(scope="module")
def combinational_data(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("combinational_paper") / "data"
    staged_config(COMBINATIONAL, data)     # Yelp's review archive and GLUE's MNLI.zip
    return data


#: the paper configuration's training jobs: Tables 2 and 3 at K = 2,000; Figure 3's RoBERTa variants over its
#: five K values (2,000 among them); Figure 2's two variants at K = 3,000
SWEEP = [f"{d}_roberta_{s}" for d in ("yelp", "mnli") for s in ("base", "large")]
FIGURE2 = ["yelp_bert_base_epochs", "yelp_roberta_base_epochs"]
TABLES = ["yelp_bert_base", "yelp_bert_large", "mnli_bert_base", "mnli_bert_large"] + [
    f"yelp_roberta_base_{t}" for t in ("cat", "train", "swapped", "sentence_is", "sound_like")]
K_SWEEP = [500, 1000, 2000, 3000, 4000]
COMB_JOBS = {(v, k) for v in TABLES for k in [2000]} | {(v, k) for v in SWEEP for k in K_SWEEP} | {
    (v, 3000) for v in FIGURE2}


def test_combinational_paper_plans_its_cost(combinational_data):
    text = plan_command(str(COMBINATIONAL), overrides=[f"data_dir={combinational_data}"])
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("combinational_train ")]
    variants = {r[1]: r for r in rows if r[2] == "vanilla"}   # one cost line per variant: its K values' jobs
    assert set(variants) == set(TABLES + SWEEP + FIGURE2)
    assert {v: int(r[3]) for v, r in variants.items()} == {
        v: sum(1 for w, _ in COMB_JOBS if w == v) for v in variants}
    assert float(variants["mnli_roberta_large"][6]) > float(variants["mnli_roberta_base"][6]) > 0
    # Figure 2's 10 epochs at K = 3,000 cost more than Table 2's 3 epochs at K = 2,000 of the same model
    assert float(variants["yelp_bert_base_epochs"][6]) > float(variants["yelp_bert_base"][6])
    assert any(r[1:3] == ["combinational", str(len(COMB_JOBS))] for r in rows)   # the seconds per job: 31 jobs
    assert "GPU-min" in _line(text, "total:")


@pytest.mark.slow
def test_combinational_paper_builds_its_dag(combinational_data, tmp_path):
    """Two pools (Yelp on the block, MNLI on its variants), 15 variants: a training job per variant and K
    value (Figure 3's sweep: one per K for each RoBERTa variant), the two figures across variants."""
    lines: list[str] = []
    counts = dry_run(COMBINATIONAL, combinational_data, tmp_path, "combinational_all", jobs=lines)
    # each training job's message: "Job <n>: combinational_train <variant> K=<k>"
    jobs = [re.fullmatch(r"Job \d+: combinational_train (\S+) K=(\d+)", ln.strip()) for ln in lines]
    listed = [(j[1], int(j[2])) for j in jobs if j]
    assert sorted(listed) == sorted(COMB_JOBS), sorted(set(listed) ^ COMB_JOBS)
    assert {k for v, k in listed if v == "yelp_roberta_large"} == set(K_SWEEP)
    assert counts["combinational_train"] == len(COMB_JOBS) == 31 and counts["combinational_data"] == 2, counts
    assert counts["combinational"] == 15 and counts["combinational_comparison"] == 1, counts
    assert counts["combinational_figure"] == 2, counts     # figure_epochs.png (Figure 2), figure_ks.png (Figure 3)
    assert counts["fetch_model"] == 4       # BERT and RoBERTa, base and large: markers from the staged cache
