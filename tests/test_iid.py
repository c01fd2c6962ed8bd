import pandas as pd
import pytest

from beluga.data.iid import load_rotten_tomatoes, load_source, load_table, split_iid
from beluga.errors import DataError


def test_rotten_tomatoes():
    df = load_rotten_tomatoes()
    assert len(df) > 12000 and set(df.label) == {0, 1}
    assert df.example_id.is_unique


def test_split_deterministic_disjoint():
    df = load_rotten_tomatoes()
    a = split_iid(df, {"train": 100, "val": 20, "test": 30}, seed=3)
    b = split_iid(df.sample(frac=1, random_state=0), {"train": 100, "val": 20, "test": 30}, seed=3)
    for k in ("train", "val", "test"):
        pd.testing.assert_frame_equal(a[k], b[k])
    ids = [set(a[k].example_id) for k in ("train", "val", "test", "pool")]
    assert sum(map(len, ids)) == len(df) and len(set().union(*ids)) == len(df)
    c = split_iid(df, {"train": 100, "val": 20, "test": 30}, seed=4)
    assert set(c["test"].example_id) != set(a["test"].example_id)


def test_local_tsv(tmp_path):
    p = tmp_path / "d.tsv"
    p.write_text("sentence\tlabel\ngood film\t1\nbad film\t0\n")
    df = load_source(str(p), {0, 1})
    assert list(df.label) == [1, 0] and list(df.text) == ["good film", "bad film"]
    p.write_text("sentence\tlabel\ngood film\t1\nbad film\t5\n")
    with pytest.raises(DataError, match=r"row 1: field 'label'"):
        load_table(p, {0, 1})
    with pytest.raises(DataError, match="does not exist"):
        load_table(tmp_path / "missing.tsv", {0, 1})


def test_hf_offline_fails_fast():
    with pytest.raises(DataError, match="not reachable"):
        load_source("hf:glue/sst2", {0, 1})
