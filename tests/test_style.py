"""The house's static checks, as CI runs them: ruff, snakefmt --check, snakemake --lint."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE

BIN = Path(sys.executable).parent


def _run(*cmd):
    out = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


@pytest.mark.slow
def test_ruff():
    _run(BIN / "ruff", "check", ".")


@pytest.mark.slow
def test_snakefmt():
    _run(BIN / "snakefmt", "--check", "Snakefile", "rules")


@pytest.mark.slow
def test_lint():
    _run(SNAKEMAKE, "--lint", "-s", REPO / "Snakefile", "-d", REPO)


def test_every_rule_runs_the_step_named_after_it():
    """Rule R in rules/F.smk with a script runs workflow_scripts/R.py, which calls beluga.steps.F.R
    (a rule derived with `use rule` runs its parent's script and step)."""
    import importlib
    import re

    bad, seen = [], 0
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for rule, body in re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", smk.read_text(), re.M):
            script = re.search(r'script:\s*\n\s*"\.\./workflow_scripts/(\w+)\.py"', body)
            if not script:
                continue
            seen += 1
            if script.group(1) != rule:
                bad.append(f"{smk.name}: rule {rule} runs workflow_scripts/{script.group(1)}.py")
            step = importlib.import_module(f"beluga.steps.{smk.stem}")
            if not callable(getattr(step, rule, None)):
                bad.append(f"{smk.name}: rule {rule}: no function beluga.steps.{smk.stem}.{rule}")
            text = (REPO / "workflow_scripts" / f"{rule}.py").read_text()
            if f"{smk.stem}.{rule}(" not in text:
                bad.append(f"workflow_scripts/{rule}.py does not call {smk.stem}.{rule}(...)")
    assert seen > 20 and not bad, "\n".join(bad)
