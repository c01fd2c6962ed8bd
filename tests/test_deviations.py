"""docs/DEVIATIONS.md: every option it names exists (a schema key, or a method
hyper-parameter of the registry), and it covers the choices it must."""

import re

import pytest
import yaml
from conftest import REPO

from beluga.methods import ALGORITHMS

DOC = REPO / "docs" / "DEVIATIONS.md"
SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
COLUMNS = ["choice", "paper", "reference code", "this project's default", "option"]


def table_rows() -> list[dict]:
    lines = [ln for ln in DOC.read_text().splitlines() if ln.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == COLUMNS
    rows = []
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip().strip("|").split(" | ")]
        assert len(cells) == len(COLUMNS), ln
        rows.append(dict(zip(COLUMNS, cells)))
    return rows


def option_names(cell: str) -> list[str]:
    """Backticked dotted config keys of an option cell."""
    key = re.compile(r"(training|selection|split|tasks)(\.[\w<>]+)+")
    return [t for t in re.findall(r"`([^`]+)`", cell) if key.fullmatch(t)]


def _deref(node: dict) -> dict:
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].split("/")[-1]]
    return node


def method_keys(method: str) -> set[str]:
    if method == "<method>":
        return set().union(*(method_keys(m) for m in ALGORITHMS))
    cls = ALGORITHMS[method]
    return set(cls.defaults) | set(cls.shared_defaults)


def resolve(path: str) -> None:
    """Walk ``path`` through the schema; method_hparams.<method>.<name> is checked against the registry."""
    parts = path.split(".")
    node = SCHEMA
    for i, part in enumerate(parts):
        node = _deref(node)
        if part.startswith("<"):
            assert "additionalProperties" in node, f"{path}: {part} is not a free key at {'.'.join(parts[:i])}"
            node = node["additionalProperties"]
            continue
        assert part in node.get("properties", {}), f"{path}: no key {part!r} at {'.'.join(parts[:i]) or 'top'}"
        node = node["properties"][part]
        if part == "method_hparams" and len(parts) > i + 1:
            method = parts[i + 1]
            assert method == "<method>" or method in ALGORITHMS, f"{path}: unknown method {method!r}"
            if len(parts) > i + 2:
                assert parts[i + 2] in method_keys(method), f"{path}: {method} has no hyper-parameter {parts[i + 2]!r}"
                assert len(parts) == i + 3, path
            return


def test_every_option_in_the_table_exists():
    names = [n for r in table_rows() for n in option_names(r["option"])]
    assert len(names) >= 15
    for name in names:
        resolve(name)


@pytest.mark.parametrize("bad", ["training.qa_answer_mach", "training.method_hparams.l2.l2_decay_every",
                                 "tasks.<id>.suite.paper_fix", "selection.method_grids"])
def test_a_misspelt_option_is_caught(bad):
    with pytest.raises(AssertionError):
        resolve(bad)


def test_the_table_covers_the_required_choices():
    choices = " ".join(r["choice"] for r in table_rows())
    for words in ("L2", "LP learning rate", "LP-FT", "READ MFT span", "qqp label fixes", "PARA s_iid",
                  "READ INV", "two-metric s_iid", "G's s_iid", "sliced DIR", "IRM at the penalty switch",
                  "split seeds", "per-environment methods' budget", "selection"):
        assert words in choices, words
    for r in table_rows():
        assert all(r[c] for c in COLUMNS), r
