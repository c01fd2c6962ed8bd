"""The bad-input catalogue, issue 36 item 5 (warnings where science is at stake): identical cases split across
T_train and T_test, a split left empty, fold ids that collide, a partition with a single group. Each stops
with one line (or, where a user may mean it, needs an explicit option: ``split.duplicates``); shown by direct
calls and a dry run, no pipeline run."""

from __future__ import annotations

import logging

import pandas as pd
import pytest
from conftest import case, config_with, load_error

from beluga.core.errors import ConfigError, SuiteError
from beluga.suites.folds import assign_splits, copies_across_splits, enumerate_folds, fold_ids, split_sizes

PADDED_SPEC = """spec_version: 1
name: padded
task: sent
functionalities:
- name: two fills
  class: Vocabulary
  type: MFT
  expect: eq
  templates:
  - templates: ['The {w} was fine.']
    label: positive
    lexicons: {w: [movie, plot]}
- name: many fills
  class: Vocabulary
  type: MFT
  expect: eq
  templates:
  - templates: ['The {noun} was {pos_adj}.']
    label: positive
"""


@pytest.fixture
def padded(tmp_path):
    """The pipeline's suite of a spec whose functionality 'two fills' makes 2 distinct cases, padded to 8."""
    from beluga.suites.build import make_suite
    (tmp_path / "padded.yaml").write_text(PADDED_SPEC)
    cfg = {"spec": str(tmp_path / "padded.yaml"), "cases_per_functionality": 8, "max_perturbations": 2,
           "max_words": 40, "seed": 0, "type_folds": "declared",
           "max_cases_per_functionality": None, "max_inputs_per_case": None}
    suite, _ = make_suite(cfg, "sent", None)
    return suite


def test_identical_cases_refused_by_default(padded):
    with pytest.raises(SuiteError) as e:
        assign_splits(padded, (0.5, 0.25, 0.25), 123)
    line = str(e.value)
    assert "\n" not in line and "functionality 'two fills'" in line and "6 of its 8 cases repeat" in line \
        and "split.duplicates: group" in line, line


def test_identical_cases_grouped_or_allowed(padded):
    three = padded[padded["functionality"] == "many fills"].head(3).assign(functionality="three fills")
    padded = pd.concat([padded, three, three.assign(case_id=three["case_id"] + "-copy")], ignore_index=True)
    grouped = assign_splits(padded[padded["functionality"] != "two fills"], (0.5, 0.25, 0.25), 123, "group")
    assert copies_across_splits(padded, grouped) == 0
    assert grouped[grouped["functionality"] == "three fills"]["split"].value_counts().to_dict() == \
        {"train": 2, "val": 2, "test": 2}
    with pytest.raises(SuiteError, match=r"'two fills'.*2 distinct case\(s\) \(of 8\); at least 3"):
        assign_splits(padded, (0.5, 0.25, 0.25), 123, "group")
    allowed = assign_splits(padded, (0.5, 0.25, 0.25), 123, "allow")
    assert copies_across_splits(padded, allowed) > 0
    # a functionality without repeats splits the same way whatever the option
    many = [s[s["functionality"] == "many fills"].reset_index(drop=True) for s in (grouped, allowed)]
    pd.testing.assert_frame_equal(*many)


def test_the_split_job_refuses_or_logs(tmp_path, padded, caplog):
    from beluga.steps.data import split_suite
    from beluga.suites.format import save_suite
    save_suite(padded, tmp_path / "suite.parquet")
    out = {"out_split": str(tmp_path / "split.parquet"), "out_summary": str(tmp_path / "summary.tsv")}
    with pytest.raises(SuiteError, match="repeat another case"):
        split_suite(suite=str(tmp_path / "suite.parquet"), task_type="sent", fractions=[0.5, 0.25, 0.25], seed=1,
                    **out)
    assert not (tmp_path / "split.parquet").exists()
    with caplog.at_level(logging.WARNING):
        split_suite(suite=str(tmp_path / "suite.parquet"), task_type="sent", fractions=[0.5, 0.25, 0.25], seed=1,
                    duplicates="allow", **out)
    assert "have an identical case in another split (split.duplicates: allow" in caplog.text


def test_duplicates_option_in_the_config(tmp_path):
    load_error(tmp_path / "wd", config_with(split={"duplicates": "sometimes"}), "split", "duplicates")


# ---------------------------------------------------------------- every split holds a case
@pytest.mark.parametrize("fractions", [(0.1, 0.1, 0.8), (0.8, 0.1, 0.1), (0.1, 0.8, 0.1), (0.4, 0.2, 0.4),
                                       (0.5, 0.25, 0.25), (0.02, 0.49, 0.49)])
def test_every_split_holds_a_case(fractions):
    for n in range(3, 41):
        sizes = split_sizes(n, fractions)
        assert sum(sizes) == n and min(sizes) >= 1, (n, sizes)
        # where the old rule (T_train's shortfall taken from T_val) kept T_val, the sizes are unchanged
        n_val, n_test = max(1, round(fractions[1] * n)), max(1, round(fractions[2] * n))
        if n - n_val - n_test >= 1:
            assert sizes == (n - n_val - n_test, n_val, n_test)
        elif n - 1 - n_test >= 1:
            assert sizes == (1, n - 1 - n_test, n_test)
    assert split_sizes(4, (0.1, 0.1, 0.8)) == (1, 1, 2)


def test_small_functionalities_get_a_validation_case():
    suite = pd.DataFrame([case(f"c{f}{i}", f"f{f}", "c", "MFT", [f"text {f} {i}"], [1]) for f in range(3)
                          for i in range(4)])
    split = assign_splits(suite, (0.1, 0.1, 0.8), 5)
    assert (split.groupby("functionality")["split"].nunique() == 3).all()


# ---------------------------------------------------------------- fold ids and single-group partitions
def test_fold_ids_never_collide():
    import hashlib
    crafted = "a-b-" + hashlib.sha1(b"a b").hexdigest()[:6]   # the suffixed id "a b" would get
    names = ["a b", "a-b", crafted, "A B!", "", "-", "x"]
    ids = fold_ids(names)
    assert len(set(ids.values())) == len(names), ids
    assert fold_ids(["typos", "negation"]) == {"typos": "typos", "negation": "negation"}


@pytest.mark.parametrize("part,col", [("class", "capability"), ("type", "test_type"), ("func", "functionality")])
@pytest.mark.parametrize("configurations", [["iid_to_t"], ["iid_plus_t", "iid_to_iid_plus_t"]])
def test_single_group_partition_refused(part, col, configurations):
    from beluga.workflow.dag import check_folds
    funcs = pd.DataFrame({"functionality": ["f1", "f2"], "capability": ["Vocabulary", "Vocabulary"],
                          "test_type": ["MFT", "MFT"]})
    if col == "functionality":
        funcs = funcs.iloc[:1]
    with pytest.raises(ConfigError) as e:
        check_folds("sent", enumerate_folds(funcs, ["seen", part]), funcs, configurations, ["c.yaml"])
    line = str(e.value)
    assert "\n" not in line and line.startswith(f"config file c.yaml: field 'partitions': fold {part}/") \
        and "holds out every functionality" in line, line
    assert ("nothing to train on" if configurations == ["iid_to_t"] else "i.i.d. data alone") in line, line
    check_folds("sent", enumerate_folds(funcs, ["seen"]), funcs, configurations)


def test_single_class_suite_refused_in_a_dry_run(tmp_path):
    cfg = config_with(partitions=["seen", "class"], configurations=["iid_plus_t"],
                      tasks__sent__suite__functionalities=["typos"])
    load_error(tmp_path / "wd", cfg, "fold class/robustness of task 'sent' holds out every functionality",
               "the suite has one class ('Robustness')", "drop 'class'")
