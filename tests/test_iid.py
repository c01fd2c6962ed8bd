from pathlib import Path

import pandas as pd
import pytest

from beluga.core.errors import DataError
from beluga.data.iid import load_splits, split_iid
from beluga.data.paper_data import qqp_bucket
from beluga.data.tables import load_rotten_tomatoes, load_source, load_table


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


SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_shared = pytest.mark.skipif(not SHARED.exists(), reason=f"real data folder {SHARED} is absent")


@needs_shared
def test_sst2_dev_halved_like_the_paper():
    parts = load_splits({"source": "sst2", "path": str(SHARED / "iid" / "sst2"), "seed": 42}, "classification",
                        {0, 1})
    assert (len(parts["train"]), len(parts["val"]), len(parts["test"])) == (67349, 436, 436)
    assert not set(parts["val"].example_id) & set(parts["test"].example_id)
    again = load_splits({"source": "sst2", "path": str(SHARED / "iid" / "sst2"), "seed": 42}, "classification",
                        {0, 1})
    pd.testing.assert_frame_equal(parts["test"], again["test"])
    capped = load_splits({"source": "sst2", "path": str(SHARED / "iid" / "sst2"), "seed": 42, "n_train": 50},
                         "classification", {0, 1})
    assert len(capped["train"]) == 50 and len(capped["pool"]) == 67349 - 50


@needs_shared
def test_qqp_hash_split():
    parts = load_splits({"source": "qqp", "path": str(SHARED / "iid" / "qqp"), "n_train": 1000}, "classification",
                        {0, 1})
    n = 404043
    assert len(parts["train"]) == 1000
    assert abs(len(parts["val"]) - 0.05 * n) < 0.01 * n and abs(len(parts["test"]) - 0.05 * n) < 0.01 * n
    assert {"text", "text_b", "label"} <= set(parts["test"].columns)
    # the rule depends on the id alone: a pair's split never changes
    for eid in parts["test"].example_id[:20]:
        assert qqp_bucket(eid.removeprefix("qqp-")) >= 0.95


def test_named_dataset_needs_folder(tmp_path):
    with pytest.raises(DataError, match="field 'path'"):
        load_splits({"source": "sst2"}, "classification", {0, 1})
    with pytest.raises(DataError, match=r"holds none of the sst2 files \(SST-2.zip, .*\): fetch the configuration"):
        load_splits({"source": "sst2", "path": str(tmp_path)}, "classification", {0, 1})
    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood\t1\n")
    with pytest.raises(DataError, match="lacks dev.tsv"):
        load_splits({"source": "sst2", "path": str(tmp_path)}, "classification", {0, 1})
    with pytest.raises(DataError, match="is not a folder: fetch the configuration's inputs first"):
        load_splits({"source": "qqp", "path": str(tmp_path / "qqp")}, "classification", {0, 1})


def test_pair_table(tmp_path):
    p = tmp_path / "pairs.tsv"
    p.write_text("question1\tquestion2\tlabel\nhow old?\twhat age?\t1\nwhy?\twhere?\t0\n")
    df = load_table(p, {0, 1})
    assert list(df.text_b) == ["what age?", "where?"] and list(df.label) == [1, 0]
