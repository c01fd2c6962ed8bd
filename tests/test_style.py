"""The house's static checks, as CI runs them: ruff, snakefmt --check, snakemake --lint."""

import subprocess
import sys
from pathlib import Path

from conftest import REPO, SNAKEMAKE

BIN = Path(sys.executable).parent


def _run(*cmd):
    out = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


def test_ruff():
    _run(BIN / "ruff", "check", ".")


def test_snakefmt():
    _run(BIN / "snakefmt", "--check", "Snakefile", "rules")


def test_lint():
    _run(SNAKEMAKE, "--lint", "-s", REPO / "Snakefile", "-d", REPO)
