"""No code path deserializes user files with pickle: a static check of the
project's own sources (model weights and checkpoints are safetensors, see
tests/test_checkpoint.py)."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted([*REPO.glob("beluga/**/*.py"), *REPO.glob("workflow_scripts/*.py"), *REPO.glob("scripts/**/*.py")])
UNSAFE_MODULES = {"pickle", "dill", "cloudpickle", "joblib", "shelve", "marshal"}
#: the one module allowed to import pickle: CheckList's release suites are read by a restricted
#: Unpickler (an explicit allow-list of inert stand-ins; nothing from the pickle is imported or run),
#: which tests/test_release_suites.py feeds hostile pickles (os.system, eval, dill tricks)
RESTRICTED_UNPICKLER = REPO / "beluga" / "suites" / "release_pickle.py"


def unsafe_uses(path: Path) -> list[str]:
    """Imports of pickle-like modules, torch.load without weights_only=True, pandas.read_pickle."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names = {(node.module or "").split(".")[0]}
        else:
            names = set()
        if names & UNSAFE_MODULES and not (path == RESTRICTED_UNPICKLER and names == {"pickle"}):
            found.append(f"{path.name}:{node.lineno}: imports {sorted(names & UNSAFE_MODULES)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if node.func.attr == "load" and isinstance(base, ast.Name) and base.id == "torch":
                if not any(k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                           for k in node.keywords):
                    found.append(f"{path.name}:{node.lineno}: torch.load without weights_only=True")
            if node.func.attr == "read_pickle":
                found.append(f"{path.name}:{node.lineno}: read_pickle")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_pickle_and_no_unrestricted_torch_load(path):
    assert unsafe_uses(path) == []


def test_the_check_catches_unsafe_code(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import pickle\nimport torch\nimport pandas as pd\nx = torch.load('w.pt')\n"
                   "y = torch.load('w.pt', weights_only=True)\nz = pd.read_pickle('f')\n")
    assert unsafe_uses(bad) == ["bad.py:1: imports ['pickle']", "bad.py:4: torch.load without weights_only=True",
                                "bad.py:6: read_pickle"]
