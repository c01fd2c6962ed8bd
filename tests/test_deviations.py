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
                  "split seeds", "per-environment methods' budget", "selection", "LoRA"):
        assert words in choices, words
    for r in table_rows():
        assert all(r[c] for c in COLUMNS), r


# ---------------------------------------------------------------- DEVIATIONS <-> schema <-> configs/paper.yaml
PAPER = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())
SETTING = re.compile(r"`([\w.<>]+): ([^`]+)`")


def beluga_rows() -> list[dict]:
    """The rows of the first table (the BELUGA paper's choices; the other tables are the related analyses')."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| choice"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return [dict(zip(COLUMNS, [c.strip() for c in ln.strip().strip("|").split(" | ")])) for ln in lines[start + 2:end]]


def paper_settings(cell: str) -> list[tuple[str, object]]:
    """(dotted key, value) of the ``paper.yaml sets `key: value`, ...`` clause of an option cell."""
    if "paper.yaml sets " not in cell:
        return []
    clause = cell.split("paper.yaml sets ", 1)[1]
    return [(k, yaml.safe_load(v)) for k, v in SETTING.findall(clause)]


def paper_value(key: str):
    node = PAPER
    for part in key.split("."):
        assert isinstance(node, dict) and part in node, f"configs/paper.yaml has no {key}"
        node = node[part]
    return node


def schema_key(key: str) -> str:
    """A concrete key as the schema names it: tasks.<id>.…, selection.method_grid.<method>.…"""
    parts = key.split(".")
    if parts[0] == "tasks":
        parts[1] = "<id>"
    if parts[:2] == ["selection", "method_grid"]:
        return "selection.method_grid"
    return ".".join(parts)


def test_every_row_says_what_paper_yaml_does():
    rows = beluga_rows()
    assert len(rows) >= 25
    for r in rows:
        assert "paper.yaml" in r["option"], f"{r['choice']}: the option cell does not say what paper.yaml does"


def paper_mismatches(settings) -> list[str]:
    """The settings a row names that paper.yaml does not have (each key checked against the schema first)."""
    bad = []
    for key, value in settings:
        if key.split(".")[0] != "statistics":
            resolve(schema_key(key))
        else:
            assert key.split(".")[1] in SCHEMA["properties"]["statistics"]["properties"], key
        if paper_value(key) != value:
            bad.append(f"configs/paper.yaml {key}: {paper_value(key)!r}, DEVIATIONS says {value!r}")
    return bad


def test_paper_yaml_sets_what_the_rows_say():
    settings = [s for r in beluga_rows() for s in paper_settings(r["option"])]
    assert len(settings) >= 25
    assert paper_mismatches(settings) == []


def test_the_reference_choices_of_issue_34_are_in_paper_yaml():
    """The reference code's procedure, each choice by its option (a row of DEVIATIONS says so too)."""
    wanted = {"training.method_hparams.fish.meta_lr": "reference", "selection.objective": "reference",
              "training.batching": "reference", "training.method_hparams.irm.irm_dummy": "per_class",
              "training.method_hparams.lp_ft.lp_epochs": 1.5, "training.eq_or_not_negative_target": "label",
              "tasks.para.suite.type_folds": "trained", "tasks.para.training.max_length": 512,
              "tasks.para.iid_metric": "accuracy", "tasks.read.iid_metric": "em",
              "tasks.read.scenario_iid": "seen", "training.qa_inv_scope": "sequence", "statistics.swaps": "independent"}
    said = dict(s for r in beluga_rows() for s in paper_settings(r["option"]))
    for key, value in wanted.items():
        assert paper_value(key) == value and said.get(key) == value, key


def test_a_row_contradicting_paper_yaml_is_caught():
    assert paper_mismatches(paper_settings("x; paper.yaml sets `training.batching: project`")) == [
        "configs/paper.yaml training.batching: 'reference', DEVIATIONS says 'project'"]
