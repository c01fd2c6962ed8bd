import pandas as pd
import pytest
from conftest import make_tiny_suite

from beluga.errors import SuiteError
from beluga.folds import assign_splits, enumerate_folds, slugify, training_functionalities
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
