import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import case, make_tiny_suite

from beluga.core.errors import SuiteError
from beluga.suites.format import COLUMNS, functionality_table, load_suite, save_suite, validate_suite

LABELS = (0, 1, 2)


def test_roundtrip(tmp_path):
    df = make_tiny_suite(3)
    path = tmp_path / "s.parquet"
    save_suite(df, path, declared=[{"functionality": f} for f in df.functionality.unique()])
    back = load_suite(path, LABELS)
    assert list(back.case_id) == list(df.case_id)
    assert list(back.inputs.iloc[1]) == list(df.inputs.iloc[1])
    ft = functionality_table(back)
    assert list(ft.n_cases) == [3, 3, 3, 3]


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.assign(test_type=["FOO"] + list(d.test_type[1:])), "test_type"),
    (lambda d: d.assign(labels=[None] + list(d.labels[1:])), "labels"),
    (lambda d: d.assign(labels=[[7]] + list(d.labels[1:])), "labels"),
    (lambda d: d.assign(case_id=["x"] * len(d)), "case_id"),
    (lambda d: d.assign(expect=["nope"] + list(d.expect[1:])), "expect"),
    (lambda d: d.assign(agg_fn=["some"] + list(d.agg_fn[1:])), "agg_fn"),
])
def test_bad_rows_name_file_row_field(mutate, field):
    df = mutate(make_tiny_suite(3))
    with pytest.raises(SuiteError) as e:
        validate_suite(df, "my_suite.parquet", LABELS)
    msg = str(e.value)
    assert "my_suite.parquet" in msg and "row 0" in msg and f"'{field}'" in msg


def test_inv_without_perturbation():
    df = make_tiny_suite(3)
    i = int(df.index[df.test_type == "INV"][0])
    df.at[i, "inputs"] = ["only the original"]
    with pytest.raises(SuiteError, match=f"row {i}.*'inputs'.*perturbation"):
        validate_suite(df, "s", LABELS)


def test_declared_functionality_without_cases():
    df = make_tiny_suite(3)
    declared = [{"functionality": f} for f in df.functionality.unique()] + [{"functionality": "ghost"}]
    with pytest.raises(SuiteError, match="'ghost' has no test cases"):
        validate_suite(df, "s", LABELS, declared)


def test_missing_and_not_parquet(tmp_path):
    with pytest.raises(SuiteError, match="does not exist"):
        load_suite(tmp_path / "nope.parquet")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(SuiteError, match="not a readable Parquet"):
        load_suite(bad)


def test_empty_suite():
    df = make_tiny_suite(1).iloc[:0]
    with pytest.raises(SuiteError, match="no test cases"):
        validate_suite(pd.DataFrame(df), "s", LABELS)


# ---------------------------------------------------------------- answers, new expectations and params
def qa_suite():
    return pd.DataFrame([
        dict(case("q0", "who", "Vocabulary", "MFT", ["ctx a", "ctx b"], expect="squad"), inputs_b=["q?", "q2?"],
             answers=["Anna", "Bob"]),
        dict(case("q1", "who eq", "Vocabulary", "MFT", ["ctx"], expect="eq"), inputs_b=["q?"], answers=["Anna"]),
        dict(case("q2", "names", "NER", "INV", ["c0", "c1"], expect="same_answer"), inputs_b=["q", "q"],
             meta=json.dumps([{}, ["Anna", "Eve"]])),
    ])


def test_old_file_without_answers_loads(tmp_path):
    df = make_tiny_suite(2)
    old_cols = [c for c in COLUMNS if c != "answers"]
    path = tmp_path / "old.parquet"
    pq.write_table(pa.Table.from_pandas(df[old_cols], preserve_index=False), path)
    back = load_suite(path, LABELS)
    assert list(back.columns) == COLUMNS
    assert back["answers"].isna().all()


def test_answers_roundtrip_and_qa_validation(tmp_path):
    df = qa_suite()
    path = tmp_path / "qa.parquet"
    save_suite(df, path)
    back = load_suite(path, None, head="qa")
    assert list(back.answers.iloc[0]) == ["Anna", "Bob"]
    assert back.labels.isna().all()
    bad = df.copy()
    bad.at[0, "answers"] = ["Anna"]
    with pytest.raises(SuiteError, match=r"row 0 \(case_id='q0'\): field 'answers': has 1 entries for 2"):
        validate_suite(bad, "qa.parquet", None)
    bad = df.copy()
    bad.at[1, "answers"] = None
    with pytest.raises(SuiteError, match=r"qa.parquet: row 1 .*field 'answers': .*'eq' needs an answer"):
        validate_suite(bad, "qa.parquet", None, head="qa")
    with pytest.raises(SuiteError, match=r"row 1 .*field 'labels'"):
        validate_suite(bad, "qa.parquet", None)
    bad = df.copy()
    bad.at[0, "answers"] = None
    with pytest.raises(SuiteError, match=r"row 0 .*field 'answers': expectation 'squad'"):
        validate_suite(bad, "qa.parquet", None)
    bad = df.copy()
    bad.at[2, "meta"] = json.dumps([["Anna", "Eve"]])
    with pytest.raises(SuiteError, match=r"row 2 .*field 'meta': expectation 'same_answer'"):
        validate_suite(bad, "qa.parquet", None)


@pytest.mark.parametrize("expect, ttype, inputs, labels, params, field, msg", [
    ("eq", "DIR", ["o", "p"], None, {"val": 0, "slice": "nope"}, "expect_params", "unknown slice"),
    ("eq", "DIR", ["o", "p"], None, {"val": 0, "slice": "orig_pred_eq"}, "expect_params", "slice_value"),
    ("eq", "MFT", ["o"], [1], {"train": {"as": "XYZ"}}, "expect_params", "'train'"),
    ("inv", "INV", ["o"], None, {"tolerance": 0.1}, "inputs", "perturbation"),
    ("triplet", "DIR", ["a", "b"], None, {}, "inputs", "exactly 3 inputs"),
    ("eq_or_not_negative", "MFT", ["o"], None, {}, "labels", "needs a label"),
    ("not_negative", "INV", ["o", "p"], None, {}, "expect", "does not apply to INV"),
    ("eq", "MFT", ["o"], ["x"], {}, "labels", "not an integer"),
])
def test_new_params_validation(expect, ttype, inputs, labels, params, field, msg):
    df = pd.DataFrame([case("c0", "f", "C", ttype, inputs, labels, expect=expect, params=params)])
    with pytest.raises(SuiteError) as e:
        validate_suite(df, "s.parquet", (0, 1))
    assert f"field '{field}'" in str(e.value) and msg in str(e.value) and "case_id='c0'" in str(e.value)


def test_new_params_accepted():
    rows = [
        case("a", "dir", "C", "DIR", ["o", "p"], expect="eq", params={"val": 0, "slice": "orig_pred_eq",
                                                                       "slice_value": 1}),
        case("b", "syn", "T", "INV", ["o"], expect="inv",
             params={"tolerance": 0.1, "unperturbed": True, "train": {"as": "MFT", "label": 1}}),
        case("c", "impl", "L", "DIR", ["x", "y", "z"], [0, 1, 0], expect="triplet"),
        case("d", "qa no", "S", "MFT", ["x"], [1], expect="eq_or_not_negative"),
    ]
    out = validate_suite(pd.DataFrame(rows), "s.parquet", (0, 1, 2))
    assert list(out.case_id) == ["a", "b", "c", "d"]
