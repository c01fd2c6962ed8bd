import pandas as pd
import pytest
from conftest import make_tiny_suite

from beluga.errors import SuiteError
from beluga.suites.format import functionality_table, load_suite, save_suite, validate_suite

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
