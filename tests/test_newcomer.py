"""A newcomer's first steps, scripted as the README gives them: the smoke test (configs/smoke.yaml), `test` on
a tiny suite with filtered cases (their count and reason in the summary), a suite built from a spec tested
without --task (the suite records its task), and `plan` on a tiny config printing minutes; and the pages a reader
meets: no history, no development paths, a README of at most 200 lines that starts with the two commands, links
that lead somewhere, task-type lists that are whole."""

import re
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
    res = beluga_cli("plan", "--configfile", CONFIGS / "tiny.yaml", "--cores", "2", "--no-calibrate")
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


def user_pages() -> list[Path]:
    """The pages a user reads: the README and docs/, less the two pages for developers."""
    return [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md")
                                        if p.name not in ("DEVELOPING.md", "CONTRIBUTING.md"))]


def test_the_readme_is_a_front_door():
    """At most 200 lines, and its first commands are the two a newcomer runs: set up and run the main job on the
    embedded default, then the tests."""
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200, len(text.splitlines())
    assert text.startswith("# BELUGA pipeline\n\n```bash\n"), text[:80]
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines() == ["bash scripts/setup.sh && time .venv/bin/snakemake --cores 2",
                                        ".venv/bin/python -m pytest -q tests"], first_block


def test_the_user_pages_name_no_development_paths():
    """A user has no ../shared: the data comes through the project's fetch, the papers through the
    bibliography."""
    pages = user_pages()
    found = [f"{p.relative_to(REPO)}:{i}: {line.strip()}" for p in pages
             for i, line in enumerate(p.read_text().splitlines(), 1) if "../shared" in line]
    assert len(pages) > 10 and not found, "\n".join(found)


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    import re

    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    import re

    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.*)", line)):
            anchors.add(_slug(m.group(1)))
    return anchors


def test_the_links_of_the_pages_lead_somewhere():
    """Every relative link of the README and docs/ names a file that exists and, with #anchor, one of its
    headings (the README's one-line pointers to the sections that live in docs/ included)."""
    import re

    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken, n = [], 0
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            n += 1
            path, _, anchor = target.partition("#")
            file = page.parent / path if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}: no such file")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{page.relative_to(REPO)}: {target}: no such heading")
    assert n > 30 and not broken, "\n".join(broken)


def _section(page: Path, heading: str) -> str:
    text = page.read_text()
    assert f"\n{heading}\n" in text, (page, heading)
    return text.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]


def test_the_task_type_lists_are_whole():
    """The pages that list task types list them all: RUNNING.md every type the pipeline implements
    (beluga.core.tasks.TASK_TYPES), SUITE_FORMAT.md every type a spec may be written for (the spec schema's)."""
    import re

    import yaml

    from beluga.core.tasks import TASK_TYPES
    from beluga.suites.spec import SPEC_SCHEMA

    listed = set(re.findall(r"`(\w+)`", _section(REPO / "docs" / "RUNNING.md",
                                                  "## Task types and the related papers' experiments")))
    assert set(TASK_TYPES) <= listed, set(TASK_TYPES) - listed
    spec_tasks = yaml.safe_load(SPEC_SCHEMA.read_text())["properties"]["task"]["enum"]
    top = _section(REPO / "docs" / "SUITE_FORMAT.md", "### The format").split("`functionalities`", 1)[0]
    assert set(spec_tasks) <= set(re.findall(r"`(\w+)`", top)), top


def test_the_contributing_map_names_every_module():
    """docs/CONTRIBUTING.md's map lists every module of the package under its package's line ("  model/",
    a subpackage indented under its package: "    span/" under "  heads/"; a package's __init__ by the line)."""
    text = (REPO / "docs" / "CONTRIBUTING.md").read_text()
    block = text[text.index("## The map"):]
    block = block[:block.index("\n```\n", block.index("```") + 3)]
    sections: dict[str, str] = {}
    top = current = None
    for line in block.splitlines():
        name = line[:23].strip()
        if line.startswith("  ") and not line.startswith(" " * 23) and name.endswith("/"):
            nested = line.startswith("    ")
            current = (top + name) if nested and top else name
            top = top if nested else name
            sections[current] = line[23:]
        elif current is not None and line.startswith(" " * 23):
            sections[current] += " " + line.strip()
        else:
            current = None
    missing = []
    for p in sorted((REPO / "beluga").rglob("*.py")):
        rel = p.relative_to(REPO / "beluga")
        if len(rel.parts) == 1:
            continue   # __init__ / __main__: the beluga/ line
        package = "/".join(rel.parts[:-1]) + "/"
        words = set(re.findall(r"[A-Za-z_0-9]+", sections.get(package, "")))
        if package not in sections or (p.stem != "__init__" and p.stem not in words):
            missing.append(str(rel))
    assert sections and not missing, "modules the map does not name: " + ", ".join(missing)


# ---------------------------------------------------------------- times that hold: the plan calibrated here
@pytest.mark.slow   # the calibration's processes and a real run of the tiny config (snakemake --cores 2)
def test_plan_calibrated_here_is_within_2x_of_the_tiny_run(tmp_path):
    """`plan` on the tiny config measures this machine (--recalibrate: now, beside the run it is compared with),
    says so, and its wall-clock on 2 cores is within 2x of the tiny run's. The plan's figures are CPU seconds, its
    wall-clock that of 2 cores free for the run; on a machine other work shares, the run's wall-clock is not that,
    so the run is measured by its CPU seconds (its processes', children included) over its 2 cores, and its
    wall-clock bounds the plan from above."""
    import resource
    import time

    from conftest import smk

    from beluga.workflow.calibrate import cpu_name

    res = beluga_cli("plan", "--configfile", CONFIGS / "tiny.yaml", "--cores", "2", "--recalibrate")
    assert res.returncode == 0, res.stderr
    head = res.stdout.splitlines()[0]
    assert re.search(rf"throughput: calibrated on this machine \({re.escape(cpu_name())}, bf16 (native|emulated)\), "
                     r"cached at \S+calibration-[0-9a-f]{16}\.json\)$", head), head
    assert "the run's other jobs: 17 of its 49 (Snakemake's dry run" in res.stdout, res.stdout
    planned = _duration_s(re.search(r"^  on 2 cores: about (.+?) -- ", res.stdout, re.M).group(1))
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    smk(tmp_path / "run", "--cores", "2")
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert 0.5 <= planned / (cpu / 2) <= 2.0 and planned <= 2 * wall, (planned, cpu, wall, res.stdout)


def _duration_s(text: str) -> float:
    value, unit = text.split()
    return float(value.replace(",", "")) * {"s": 1, "min": 60, "h": 3600}[unit]
