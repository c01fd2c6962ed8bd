"""The related papers' configurations (issue 40) on a data folder staged with tiny files in the official
shapes (tests/staging.py): each plans with ``python -m beluga plan`` (its cost printed) and builds its DAG
in a dry run, with the files of the real configuration and only ``data_dir`` overridden."""

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


def dry_run(config_file: Path, data: Path, workdir: Path, *targets: str) -> dict[str, int]:
    """Job counts of ``snakemake -n`` on ``config_file`` with ``data_dir`` = ``data``, offline, its hub
    models' configs staged in a cache of their own (tests/staging.py)."""
    env = dict(ENV, **stage_hub_models(staged_config(config_file, data), workdir / "hub"))
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir / "wd"), "-n", *targets, "--quiet", "rules",
           "--configfile", str(config_file), "--config", f"data_dir={data}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, f"{out.stdout[-3000:]}\n{out.stderr[-4000:]}"
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


def test_combinational_paper_plans_its_cost(combinational_data):
    text = plan_command(str(COMBINATIONAL), overrides=[f"data_dir={combinational_data}"])
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("combinational_train ")]
    variants = {r[1]: r for r in rows if r[2] == "vanilla"}   # one cost line per variant: 2 jobs (K), GPU-min
    assert len(variants) == 13 and all(r[3] == "2" for r in variants.values())
    assert float(variants["mnli_roberta_large"][6]) > float(variants["mnli_roberta_base"][6]) > 0
    assert any(r[1:3] == ["combinational", "26"] for r in rows)   # the seconds per job: 13 variants x 2 K
    assert "GPU-min" in _line(text, "total:")


@pytest.mark.slow
def test_combinational_paper_builds_its_dag(combinational_data, tmp_path):
    """Two pools (Yelp on the block, MNLI on its variants), 13 variants x K = 2,000 / 3,000."""
    counts = dry_run(COMBINATIONAL, combinational_data, tmp_path, "combinational_all")
    assert counts["combinational_train"] == 26 and counts["combinational_data"] == 2, counts
    assert counts["combinational"] == 13 and counts["combinational_comparison"] == 1, counts
    assert counts["fetch_model"] == 4       # BERT and RoBERTa, base and large: markers from the staged cache
