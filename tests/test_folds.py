import pandas as pd
import pytest
from conftest import make_tiny_suite

from beluga.core.errors import ConfigError, SuiteError
from beluga.suites.folds import (
    assign_splits,
    enumerate_folds,
    fold_iid_examples,
    predicted_iid,
    slugify,
    training_functionalities,
)
from beluga.suites.format import functionality_table


def test_split_invariants():
    suite = make_tiny_suite(8)
    split = assign_splits(suite, (0.5, 0.25, 0.25), seed=123)
    # every case exactly once (so all its perturbations stay with it)
    assert sorted(split.case_id) == sorted(suite.case_id)
    assert not split.case_id.duplicated().any()
    # every functionality present in each split, 50/25/25
    counts = split.groupby(["functionality", "split"]).size().unstack()
    assert (counts[["train", "val", "test"]] == [4, 2, 2]).all().all()


def test_split_seeded():
    suite = make_tiny_suite(8)
    a = assign_splits(suite, (0.5, 0.25, 0.25), 1)
    b = assign_splits(suite, (0.5, 0.25, 0.25), 1)
    c = assign_splits(suite, (0.5, 0.25, 0.25), 2)
    pd.testing.assert_frame_equal(a, b)
    assert not a.set_index("case_id").split.equals(c.set_index("case_id").split.reindex(a.case_id))


def test_split_needs_three_cases():
    with pytest.raises(SuiteError, match="at least 3"):
        assign_splits(make_tiny_suite(2), (0.5, 0.25, 0.25), 1)


def test_partitions_hold_out_each_functionality_once():
    funcs = functionality_table(make_tiny_suite(3))
    folds = enumerate_folds(funcs, ["seen", "func", "class", "type"])
    names = set(funcs.functionality)
    for part in ("func", "class", "type"):
        held = [f for fold in folds if fold["partition"] == part for f in fold["held_out"]]
        assert sorted(held) == sorted(names), part
    seen = [f for f in folds if f["partition"] == "seen"]
    assert len(seen) == 1 and training_functionalities(seen[0], list(names)) == list(names)
    assert len([f for f in folds if f["partition"] == "func"]) == 4
    assert len([f for f in folds if f["partition"] == "class"]) == 3
    assert {f["fold"] for f in folds if f["partition"] == "type"} == {"mft", "inv", "dir"}
    for f in folds:
        train = training_functionalities(f, list(names))
        if f["partition"] != "seen":
            assert not set(train) & set(f["held_out"])


def test_fold_ids_safe_stable_unique():
    assert slugify('simple negations: "not" X / Y') == "simple-negations-not-x-y"
    funcs = pd.DataFrame({"functionality": ["A b", "a-b", "c"], "capability": ["x", "x", "y"],
                          "test_type": ["MFT"] * 3})
    ids = [f["fold"] for f in enumerate_folds(funcs, ["func"])]
    assert len(set(ids)) == 3 and all(i.replace("-", "").isalnum() for i in ids)
    assert ids == [f["fold"] for f in enumerate_folds(funcs, ["func"])]


# ---------------------------------------------------------------- the type partition's grouping (suite.type_folds)
SYN = "(question, f(question)) where f(question) replaces synonyms?"
_INV = {"expression": "Expect.inv(tolerance=0.1)", "name": "Expect.inv", "params": {"tolerance": 0.1}, "slice": None}
_EQ = {"expression": "Expect.eq(val=None)", "name": "Expect.eq", "params": {"val": None}, "slice": None}


def _qqp_export(tmp_path):
    """A CheckList qqp export of three functionalities, three cases each: an MFT, a two-pair INV and the
    synonym test as released (an INV of one pair each, which the paper's fix trains as MFT label 1)."""
    import json

    funcs = [("m", "MFT", [["a?", "b?"]], [1], _EQ, "all"),
             ("i", "INV", [["c?", "d?"], ["c2?", "d?"]], None, _INV, "all_except_first"),
             (SYN, "INV", [["e?", "f?"]], None, _INV, "all_except_first")]
    lines = [json.dumps({"suite": "qqp", "case_id": f"qqp-{t:02d}-{k:05d}", "functionality": name,
                         "capability": "C", "test_type": ttype, "inputs": inputs, "labels": labels,
                         "agg_fn": agg, "expect": expect})
             for t, (name, ttype, inputs, labels, expect, agg) in enumerate(funcs) for k in range(3)]
    p = tmp_path / "qqp.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def _type_folds(path, paper_fixes: bool, type_folds: str) -> dict:
    from beluga.suites.build import suite_functionalities

    cfg = {"path": str(path), "paper_fixes": paper_fixes, "type_folds": type_folds,
           "max_cases_per_functionality": None}
    return {f["group"]: f["held_out"] for f in enumerate_folds(suite_functionalities(cfg, "para"), ["type"])}


def test_type_folds_trained_groups_the_qqp_synonym_test_with_the_mfts(tmp_path):
    """The reference code's make_suite notebook retypes the synonym test 'mft' (label 1) in its suite, so its
    type partition holds it out with the MFTs; the project's default keeps CheckList's INV."""
    p = _qqp_export(tmp_path)
    declared = {"MFT": ["m"], "INV": ["i", SYN]}
    assert _type_folds(p, True, "declared") == declared
    assert _type_folds(p, True, "trained") == {"MFT": ["m", SYN], "INV": ["i"]}
    # without the paper's fix the synonym test has no training hint: trained groups it as declared
    assert _type_folds(p, False, "trained") == declared


def test_with_fold_types_checks_the_hints():
    from beluga.core.errors import ConfigError
    from beluga.suites.build import with_fold_types

    table = pd.DataFrame({"functionality": ["a", "b"], "capability": ["C", "C"], "test_type": ["INV", "DIR"]})
    hint = '{"train": {"as": "MFT", "label": 1}}'
    cases = pd.DataFrame({"functionality": ["a", "a", "b"], "expect_params": [hint, hint, "{}"]})
    assert list(with_fold_types(table, cases, "trained", "s")["fold_type"]) == ["MFT", "DIR"]
    assert list(with_fold_types(table, cases, "declared", "s")["fold_type"]) == ["INV", "DIR"]
    # a spec's catalogue: the parameters as dicts, one row per functionality
    cat = pd.DataFrame({"functionality": ["a", "b"], "expect_params": [{"train": {"as": "MFT"}}, {}]})
    assert list(with_fold_types(table, cat, "trained", "s")["fold_type"]) == ["MFT", "DIR"]
    mixed = cases.assign(expect_params=[hint, "{}", "{}"])
    with pytest.raises(SuiteError, match=r"suite x: functionality 'a': field 'expect_params': .*differ"):
        with_fold_types(table, mixed, "trained", "suite x")
    with pytest.raises(SuiteError, match="'train.as' 'ZZZ' is not a test type"):
        with_fold_types(table, cases.assign(expect_params=['{"train": {"as": "ZZZ"}}'] * 3), "trained", "s")
    with pytest.raises(ConfigError, match="suite.type_folds"):
        with_fold_types(table, cases, "reference", "s")


def test_fold_iid_examples_and_the_predicted_sample():
    assert fold_iid_examples("func", "seen", 200) == 200
    assert fold_iid_examples("type", "seen", 200) == 200
    for partition, scenario_iid, n in [("seen", "seen", 200), ("standard", "seen", 200), ("func", "folds", 200),
                                       ("class", "seen", None)]:
        assert fold_iid_examples(partition, scenario_iid, n) is None
    with pytest.raises(ConfigError, match="fold_iid_examples"):
        fold_iid_examples("func", "seen", 0)
    iid = pd.DataFrame({"example_id": [f"e{i}" for i in range(100)], "label": [i // 50 for i in range(100)]})
    assert predicted_iid(iid, None) is iid and predicted_iid(iid, 100) is iid
    a, b = predicted_iid(iid, 30), predicted_iid(iid, 30)
    assert a.equals(b) and len(a) == 30 and a["example_id"].is_unique
    idx = [int(x[1:]) for x in a["example_id"]]
    assert idx == sorted(idx)                       # in the file's order
    assert 0 < a["label"].mean() < 1                # a sample, not the file's head (sorted by label here)
    shuffled = iid.sample(frac=1, random_state=3).reset_index(drop=True)
    assert len(predicted_iid(shuffled, 30)) == 30
