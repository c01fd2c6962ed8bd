import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from beluga.core.errors import DataError
from beluga.data.squad import _article_key, halve_squad_by_article, load_squad, split_squad_by_article

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SQUAD_DEV = SHARED_DATA / "iid" / "squad" / "dev-v1.1.reconstructed.json.gz"


def squad_doc(n_articles=6, n_para=2, n_q=3):
    data = []
    for a in range(n_articles):
        paras = []
        for p in range(n_para):
            ctx = f"Article {a} paragraph {p} mentions Chicago and New York."
            qas = [{"id": f"q{a}-{p}-{k}", "question": f"Which city {k}?",
                    "answers": [{"text": "Chicago", "answer_start": ctx.index("Chicago")},
                                {"text": "New York", "answer_start": ctx.index("New York")}]}
                   for k in range(n_q)]
            paras.append({"context": ctx, "qas": qas})
        data.append({"title": f"Title_{a}", "paragraphs": paras})
    return {"version": "1.1", "data": data}


def write(tmp_path, doc, name="dev.json.gz"):
    path = tmp_path / name
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def test_load_synthetic(tmp_path):
    df = load_squad(write(tmp_path, squad_doc()))
    assert list(df.columns) == ["example_id", "title", "context", "question", "answers", "answer_starts"]
    assert len(df) == 6 * 2 * 3 and df["example_id"].is_unique
    r = df.iloc[0]
    assert r["answers"] == ["Chicago", "New York"]
    assert [r["context"][s:s + len(t)] for s, t in zip(r["answer_starts"], r["answers"])] == r["answers"]
    plain = tmp_path / "dev.json"
    plain.write_text(json.dumps(squad_doc()))
    pd.testing.assert_frame_equal(load_squad(plain), df)


def test_load_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_squad(tmp_path / "missing.json.gz")
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match=r"bad\.json\.gz.*cannot be parsed"):
        load_squad(bad)
    doc = squad_doc()
    del doc["data"][1]["paragraphs"][0]["qas"][2]["question"]
    with pytest.raises(DataError, match=r"data\[1\]\.paragraphs\[0\]\.qas\[2\]: field 'question' is missing"):
        load_squad(write(tmp_path, doc))
    doc = squad_doc()
    doc["data"][0]["paragraphs"][1]["qas"][0]["answers"][0]["answer_start"] = 0
    with pytest.raises(DataError, match="field 'answer_start'"):
        load_squad(write(tmp_path, doc))
    doc = squad_doc()
    doc["data"][2]["title"] = 3
    with pytest.raises(DataError, match="field 'title' must be a str"):
        load_squad(write(tmp_path, doc))
    with pytest.raises(DataError, match="field 'data' is missing"):
        load_squad(write(tmp_path, {"version": "1.1"}))


def _titles(splits):
    return {k: set(v["title"]) for k, v in splits.items()}


def test_split_synthetic_rules(tmp_path):
    df = load_squad(write(tmp_path, squad_doc(n_articles=10)))
    s1 = split_squad_by_article(df, sizes=(None, 2, 3), seed=7)
    t = _titles(s1)
    assert [len(t[k]) for k in ("train", "val", "test")] == [5, 2, 3]
    assert not (t["train"] & t["val"] or t["train"] & t["test"] or t["val"] & t["test"])
    s2 = split_squad_by_article(df.sample(frac=1, random_state=0), sizes=(None, 2, 3), seed=7)
    assert _titles(s2) == t  # independent of row order
    s3 = split_squad_by_article(df, sizes={"train": 4, "val": 2, "test": 3}, seed=7)
    assert sum(len(v) for v in _titles(s3).values()) == 9
    fr = split_squad_by_article(df, fractions=(0.6, 0.2, 0.2), seed=7)
    assert [fr[k]["title"].nunique() for k in ("train", "val", "test")] == [6, 2, 2]
    capped = split_squad_by_article(df, fractions=(0.6, 0.2, 0.2), seed=7, max_examples={"train": 5})
    assert len(capped["train"]) == 5 and set(capped["train"]["example_id"]) <= set(fr["train"]["example_id"])
    assert capped["val"].equals(fr["val"])
    with pytest.raises(DataError, match="sizes"):
        split_squad_by_article(df, sizes=(8, 2, 3), seed=7)
    with pytest.raises(DataError, match="received no article"):
        split_squad_by_article(df, fractions=(0.98, 0.01, 0.01), seed=7)


def test_halve_by_article_synthetic(tmp_path):
    """The paper's halving of an official dev set, by whole articles: articles in
    hash order go to val while the questions before them are under half."""
    df = load_squad(write(tmp_path, squad_doc(n_articles=7)))
    val, test = halve_squad_by_article(df, seed=7)
    assert len(val) + len(test) == len(df) and not set(val["title"]) & set(test["title"])
    order = sorted(df["title"].unique(), key=lambda t: _article_key(7, t))
    assert set(val["title"]) == set(order[:4])      # 6 questions an article: 0, 6, 12, 18 before it < 42 / 2
    again = halve_squad_by_article(df.sample(frac=1, random_state=1), seed=7)
    assert set(again[0]["example_id"]) == set(val["example_id"])              # independent of row order
    with pytest.raises(DataError, match="at least two"):
        halve_squad_by_article(df[df["title"] == "Title_0"], seed=7)


@pytest.fixture(scope="module")
def squad_dev():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared reference data folder {SHARED_DATA} is absent")
    if not SQUAD_DEV.exists():
        pytest.skip(f"staged SQuAD dev file {SQUAD_DEV} is absent")
    return load_squad(SQUAD_DEV)


def test_real_squad_dev(squad_dev):
    df = squad_dev
    assert len(df) == 10_570 and df["example_id"].is_unique
    assert df["title"].nunique() == 48
    assert df["answers"].map(len).min() >= 1
    r = df.iloc[0]
    assert r["example_id"] == "56be4db0acb8001400a502ec" and r["answers"][0] == "Denver Broncos"


def test_real_squad_split_by_article(squad_dev):
    s = split_squad_by_article(squad_dev, fractions=(0.8, 0.1, 0.1), seed=42)
    t = _titles(s)
    assert not (t["train"] & t["val"] or t["train"] & t["test"] or t["val"] & t["test"])
    assert sum(len(v) for v in s.values()) == 10_570
    assert 0.7 < len(s["train"]) / 10_570 < 0.9 and len(s["val"]) > 300 and len(s["test"]) > 300
    again = split_squad_by_article(squad_dev, fractions=(0.8, 0.1, 0.1), seed=42)
    for k in s:
        pd.testing.assert_frame_equal(s[k], again[k])
    other = split_squad_by_article(squad_dev, fractions=(0.8, 0.1, 0.1), seed=43)
    assert _titles(other) != t
    small = split_squad_by_article(squad_dev, seed=42, max_examples=(200, 50, 50))
    assert [len(small[k]) for k in ("train", "val", "test")] == [200, 50, 50]
    assert set(small["test"]["title"]) <= t["test"]
    assert small["train"].equals(split_squad_by_article(squad_dev, seed=42, max_examples=(200, 50, 50))["train"])


def test_real_squad_dev_halved_by_article(squad_dev):
    """The paper's val / test from the official dev set: about 5k questions each, no article shared."""
    val, test = halve_squad_by_article(squad_dev, seed=42)
    assert len(val) + len(test) == 10_570 and not set(val["title"]) & set(test["title"])
    assert abs(len(val) - len(test)) < 2 * squad_dev["title"].value_counts().max()
    assert 4_500 < len(val) < 6_100 and 4_500 < len(test) < 6_100
    again = halve_squad_by_article(squad_dev, seed=42)
    pd.testing.assert_frame_equal(again[0], val)
