"""A newcomer's first steps, scripted as the README gives them: the smoke test (configs/smoke.yaml), `test` on
a tiny suite with filtered cases (their count and reason in the summary), a suite built from a spec tested
without --task (the suite records its task), and `plan` on a tiny config printing minutes."""

from pathlib import Path

import pandas as pd
import pytest
from conftest import CONFIGS, REPO, beluga_cli, case, output, pipeline


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    """The README's smoke test, run once: the whole pipeline on tiny-random; returns its results folder."""
    wd = tmp_path_factory.mktemp("smoke")
    out = pipeline(wd, "--cores", "2", configfiles=(REPO / "configs" / "smoke.yaml",))
    assert "precision:" in output(out)   # the run says which precision it uses when it starts
    return wd / "results" / "smoke"


def iid_model(results: Path) -> Path:
    return results / "sent" / "models" / "iid" / "vanilla" / "standard" / "all"


def test_smoke_run_writes_the_tables_and_figures(smoke):
    for rel in ("table3/table3.md", "table3/table3.tex", "sent/figures/figure1.png", "sent/scores/scores.csv",
                "sent/diagnostics/diagnostics.md", "sent/ood/ood_table.md", "sent/stats/significance.csv"):
        assert (smoke / rel).stat().st_size > 0, rel
    table = (smoke / "table3" / "table3.md").read_text()
    assert "IID→T" in table and "IID→(IID+T)" in table and "G_func" in table


def test_test_counts_filtered_cases_with_their_reason(smoke, tmp_path):
    # every sentence twice, sliced on the original's predicted class 0 and 1: whatever the model predicts,
    # exactly one case of each pair is filtered, with the reason "original not predicted <class>"
    n = 6
    rows = [case(f"c{i}-{k}", "typos sliced", "Robustness", "INV", [f"a fine film {i}", f"a fnie film {i}"],
                 expect="inv", params={"slice": "orig_pred_eq", "slice_value": k}) for i in range(n) for k in (0, 1)]
    suite = tmp_path / "sliced.parquet"
    pd.DataFrame(rows).to_parquet(suite)
    res = beluga_cli("test", "--model", iid_model(smoke), "--suite", suite, "--task", "sent", "--out", tmp_path / "t")
    assert res.returncode == 0, res.stderr
    assert f"{n} filtered: " in res.stdout and "original not predicted" in res.stdout, res.stdout
    funcs = pd.read_csv(tmp_path / "t" / "functionalities.csv")
    assert funcs["n_filtered"].tolist() == [n], funcs
    assert "original not predicted" in (tmp_path / "t" / "summary.md").read_text()


def test_a_spec_built_suite_needs_no_task(smoke, tmp_path):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("".join(f"It is a film that I do not like, part {i} of the story.\n" for i in range(40)))
    built = tmp_path / "mine.parquet"
    res = beluga_cli("suite", "build", "--spec", REPO / "configs" / "specs" / "my_suite.yaml",
                     "--source", sentences, "--out", built)
    assert res.returncode == 0, res.stderr
    res = beluga_cli("test", "--model", iid_model(smoke), "--suite", built, "--out", tmp_path / "t")
    assert res.returncode == 0, res.stderr
    assert "food sentiment" in res.stdout and "negated positive food" in res.stdout, res.stdout


def test_plan_of_a_tiny_config_prints_minutes():
    res = beluga_cli("plan", "--configfile", CONFIGS / "tiny.yaml", "--cores", "2")
    assert res.returncode == 0, res.stderr
    head = res.stdout.splitlines()[0]
    assert "core-min in all" in head and "core-h" not in head, head
    assert "seconds per job" in res.stdout and "on 2 cores: about" in res.stdout, res.stdout


def test_the_pages_a_reader_meets_carry_no_history():
    """The README and docs/ say what is, not when it came: no issue numbers."""
    import re

    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = [f"{p.relative_to(REPO)}:{i}: {line.strip()}" for p in pages
             for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\bissue [0-9]", line, re.I)]
    assert len(pages) > 10 and not found, "\n".join(found)
