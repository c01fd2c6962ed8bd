"""The memory requests of the jobs that train or predict (beluga/workflow/resources.py): derived from
the measured peaks, kept in benchmarks/memory/ and tabled in docs/COMPUTE.md; every such rule writes a
``benchmark:`` TSV, apart from the tracked benchmarks/gpu/."""

import csv
import re

import pytest
from conftest import REPO
from test_runs import config, runs

from beluga.workflow import resources
from beluga.workflow.resources import BASE_MEM_MB, MARGIN, MB_PER_MIB, MEASURED_MAX_RSS_MIB, job_benchmark
from beluga.workflow.runs import model_scale

MEASURED = REPO / "benchmarks" / "memory"
#: the rules that train or predict, by the kind of request they make (job_resources("train" / "predict"))
KINDS = {"train_iid": "train", "finetune": "train", "finetune_model": "train", "trial": "train",
         "inoculate": "train", "combinational_train": "train", "predict": "predict"}


def rule_blocks():
    for smk in (REPO / "rules").glob("*.smk"):
        yield from re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", smk.read_text(), re.M)


def directive(body: str, name: str) -> str | None:
    m = re.search(rf"^    {name}:\n        (.+?),?\n", body, re.M)
    return m and m[1]


def test_rules_that_train_or_predict_write_a_benchmark_next_to_their_log():
    seen = {}
    for name, body in rule_blocks():
        if "**job_resources(" in body:
            seen[name] = re.search(r'\*\*job_resources\("(\w+)"\)', body)[1]
            assert directive(body, "benchmark") == f"job_benchmark({directive(body, 'log')})", name
        else:
            assert directive(body, "benchmark") is None, name
    assert seen == KINDS


def test_benchmark_paths():
    assert job_benchmark("logs/{task}/{seeddir}train_iid.log") == "benchmarks/jobs/{task}/{seeddir}train_iid.tsv"
    fold = "logs/{task}/{seeddir}trial/{conf}/{method}/{partition}/{fold}/{trial}.log"
    assert job_benchmark(fold) == "benchmarks/jobs/{task}/{seeddir}trial/{conf}/{method}/{partition}/{fold}/{trial}.tsv"
    with pytest.raises(ValueError, match="not 'results/x.log'"):
        job_benchmark("results/x.log")
    # benchmarks/jobs/ (a task named gpu included) is not the tracked benchmarks/gpu/, and git ignores it
    ignore = (REPO / ".gitignore").read_text().splitlines()
    assert "benchmarks/*" in ignore and "!benchmarks/gpu/" in ignore and "!benchmarks/jobs/" not in ignore
    assert "!benchmarks/memory/" in ignore   # the measurements the requests come from are kept


def measured_from_file() -> dict:
    """The peak RSS (MiB) per (kind, model) of the kept measurements (exact: /usr/bin/time's %M, KiB)."""
    out = {}
    with (MEASURED / "2026-11-27-cpu" / "max_rss.tsv").open() as f:
        for row in csv.DictReader(f, delimiter="\t"):
            assert KINDS[row["rule"]] == row["kind"], row
            key = (row["kind"], row["model"])
            out[key] = max(out.get(key, 0.0), round(int(row["max_rss_kib"]) / 1024, 1))
    return out


def test_measured_table_is_the_kept_measurements():
    assert measured_from_file() == MEASURED_MAX_RSS_MIB
    assert {m: model_scale(m) for m in resources.MEASURED_SCALE} == resources.MEASURED_SCALE


def test_docs_table_is_the_measured_table():
    text = (REPO / "docs" / "COMPUTE.md").read_text()
    rows = re.findall(r"^\| (train|predict) \| `?([\w-]+)`? \| [^|]+ \| ([0-9.]+) MiB \|", text, re.M)
    assert {(k, m): float(mb) for k, m, mb in rows} == MEASURED_MAX_RSS_MIB
    assert f"margin {MARGIN}" in text


@pytest.mark.parametrize("kind,model", sorted(MEASURED_MAX_RSS_MIB))
def test_requests_cover_the_measured_peaks(kind, model):
    cfg = config()
    cfg["tasks"]["sent"]["model"] = model
    r = runs(cfg)
    first = r.job_resources(kind)["mem_mb"]({"task": "sent"}, 1)   # MB
    assert first / MB_PER_MIB >= MEASURED_MAX_RSS_MIB[(kind, model)] * MARGIN, (first, kind, model)
    assert BASE_MEM_MB[kind] == resources.base_mem_mb(kind) and BASE_MEM_MB[kind] % 100 == 0


def test_a_gpu_job_adds_the_cuda_host_estimate():
    cpu, gpu = runs(config()), runs(config(gpus=1))
    for kind in ("train", "predict"):
        at = [r.job_resources(kind)["mem_mb"]({"task": "sent"}, 1) for r in (cpu, gpu)]
        assert at[1] == at[0] + resources.CUDA_HOST_MB, at
