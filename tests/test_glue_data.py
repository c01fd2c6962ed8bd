"""GLUE's MNLI, QNLI, RTE, CoLA and STS-B as i.i.d. sources (beluga.data.glue, issue 40): tiny
files in each official shape (GLUE's zip layouts, headers, CoLA's headerless TSV) built in
tmp_path, read by column name, labels mapped by name, split as SST-2 (train; dev halved), the
forms' precedence, source_files / describe_source, the fetch entries, and one-line errors."""

import zipfile
from pathlib import Path

import pytest

from beluga.core.errors import DataError
from beluga.core.tasks import TASK_TYPES
from beluga.data import fetch, remotes
from beluga.data.glue import GLUE_SPECS, TASK_LABELS
from beluga.data.glue import load_glue as load_located
from beluga.data.iid import SOURCE_TASK_TYPES, describe_source, load_splits, source_files
from beluga.data.paper_data import DATASET_SOURCES, locate, located, paper_sizes


def load_glue(folder, source: str, seed: int):
    """The i.i.d. reader's path: the folder located (beluga.data.paper_data.located), then read."""
    return load_located(located({"source": source, "path": str(folder)}), seed)

HEADERS = {
    "mnli": ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
             "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"],
    "qnli": ["index", "question", "sentence", "label"],
    "rte": ["index", "sentence1", "sentence2", "label"],
    "stsb": ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2",
             "score"],
}
LABELS = {"mnli": ["entailment", "neutral", "contradiction"], "qnli": ["entailment", "not_entailment"],
          "rte": ["not_entailment", "entailment"], "stsb": ["5.000", "0.250", "3.8"], "cola": ["1", "0"]}


def row(source: str, i: int, label: str) -> str:
    """One data row of ``source``'s official TSV (a ``"`` inside a text is text: GLUE writes unquoted)."""
    a, b = f'premise {i} with a "quote', f"hypothesis {i}"
    if source == "cola":
        return "\t".join(["gj04", label, "*" if label == "0" else "", f"sentence {i} ."])
    fields = {"index": str(i), "promptID": str(100 + i), "pairID": f"{100 + i}e", "genre": "fiction",
              "sentence1_binary_parse": "( x )", "sentence2_binary_parse": "( y )", "sentence1_parse": "(ROOT x)",
              "sentence2_parse": "(ROOT y)", "sentence1": a, "sentence2": b, "label1": label, "gold_label": label,
              "question": b, "sentence": a, "label": label, "filename": "f", "year": "2012",
              "old_index": str(i), "source1": "none", "source2": "none", "score": label}
    return "\t".join(fields[c] for c in HEADERS[source])


def tsv(source: str, n: int) -> str:
    lines = [] if source == "cola" else ["\t".join(HEADERS[source])]
    lines += [row(source, i, LABELS[source][i % len(LABELS[source])]) for i in range(n)]
    return "\n".join(lines) + "\n"


def glue_zip(folder: Path, source: str, n_train: int = 6, n_dev: int = 5, dev_text: str | None = None) -> Path:
    """GLUE's archive of ``source`` as dl.fbaipublicfiles.com ships it: <Folder>/train.tsv, <Folder>/<dev>."""
    spec = GLUE_SPECS[source]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / spec.archives[0]
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{spec.folder}/train.tsv", tsv(source, n_train))
        z.writestr(f"{spec.folder}/{spec.dev}", dev_text if dev_text is not None else tsv(source, n_dev))
        if source == "mnli":   # the archive's other files are not read
            z.writestr("MNLI/dev_mismatched.tsv", tsv(source, 3))
    return path


def one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("source", ["mnli", "qnli", "rte", "cola"])
def test_archive_read_by_name_labels_mapped_and_dev_halved(tmp_path, source):
    glue_zip(tmp_path, source)
    parts = load_glue(tmp_path, source, seed=42)
    assert [len(parts[s]) for s in ("train", "val", "test")] == [6, 2, 3]
    train = parts["train"]
    assert list(train["example_id"][:2]) == [f"{source}-train-0", f"{source}-train-1"]
    table = TASK_LABELS[GLUE_SPECS[source].task_type]
    names = LABELS[source] if source != "cola" else [{"1": "acceptable", "0": "unacceptable"}[v]
                                                     for v in LABELS["cola"]]
    assert list(train["label"][:len(names)]) == [table[n.replace("_", " ")] for n in names]   # RTE's not_entailment
    if source == "cola":
        assert "text_b" not in train and train["text"][0] == "sentence 0 ."
    else:
        premise_col = "text_b" if source == "qnli" else "text"     # QNLI: question first, then its sentence
        assert train[premise_col][0] == 'premise 0 with a "quote'
    val, test = set(parts["val"]["example_id"]), set(parts["test"]["example_id"])
    assert val | test == {f"{source}-dev-{i}" for i in range(5)} and not val & test


def test_stsb_scores_are_floats_in_range(tmp_path):
    glue_zip(tmp_path, "stsb")
    parts = load_glue(tmp_path, "stsb", seed=1)
    assert parts["train"]["label"].dtype.kind == "f"
    assert list(parts["train"]["label"][:3]) == [5.0, 0.25, 3.8]
    assert list(parts["train"]["text_b"][:1]) == ["hypothesis 0"]


def test_mnli_reads_the_matched_dev_set(tmp_path):
    glue_zip(tmp_path, "mnli", n_dev=4)
    parts = load_glue(tmp_path, "mnli", seed=0)
    assert len(parts["val"]) + len(parts["test"]) == 4      # not the mismatched file's 3 rows
    assert describe_source({"source": "mnli", "path": str(tmp_path)})["split"].startswith(
        "train.tsv -> train; dev_matched.tsv halved")


def test_split_is_seeded_and_stable(tmp_path):
    glue_zip(tmp_path, "rte", n_dev=9)
    a, b, c = (load_glue(tmp_path, "rte", seed=s) for s in (3, 3, 4))
    assert list(a["val"]["example_id"]) == list(b["val"]["example_id"])
    assert list(a["val"]["example_id"]) != list(c["val"]["example_id"]) or list(a["test"]["example_id"]) != list(
        c["test"]["example_id"])


def test_precedence_archive_then_folder_then_tsvs(tmp_path):
    (tmp_path / "RTE").mkdir()
    (tmp_path / "RTE" / "train.tsv").write_text(tsv("rte", 4))
    (tmp_path / "RTE" / "dev.tsv").write_text(tsv("rte", 2))
    (tmp_path / "train.tsv").write_text(tsv("rte", 3))
    assert locate(tmp_path, "rte").form == "glue-dir"
    assert len(load_glue(tmp_path, "rte", 1)["train"]) == 4
    glue_zip(tmp_path, "rte", n_train=7)
    assert locate(tmp_path, "rte").form == "glue-zip"
    assert source_files({"source": "rte", "path": str(tmp_path)}) == [str(tmp_path / "RTE.zip")]


def test_qnli_accepts_both_archive_names(tmp_path):
    path = glue_zip(tmp_path, "qnli")
    path.rename(tmp_path / "QNLI.zip")
    assert locate(tmp_path, "qnli").form == "glue-zip"
    assert len(load_glue(tmp_path, "qnli", 1)["train"]) == 6


def test_load_splits_caps_and_pool(tmp_path):
    glue_zip(tmp_path, "mnli", n_train=10)
    out = load_splits({"source": "mnli", "path": str(tmp_path), "n_train": 4, "seed": 42}, "classification",
                      {0, 1, 2}, pair=True)
    assert len(out["train"]) == 4 and len(out["pool"]) == 6


def test_missing_folder_files_named_before_reading(tmp_path):
    assert source_files({"source": "cola", "path": str(tmp_path / "absent")}) == [
        str(tmp_path / "absent" / "train.tsv"), str(tmp_path / "absent" / "dev.tsv")]
    assert source_files({"source": "mnli", "path": str(tmp_path)}) == [str(tmp_path / "MNLI.zip")]
    (tmp_path / "train.tsv").write_text(tsv("mnli", 2))
    with pytest.raises(DataError) as e:
        describe_source({"source": "mnli", "path": str(tmp_path)})
    assert "lacks dev_matched.tsv" in one_line(e)


def test_missing_column_is_one_line_naming_file_and_field(tmp_path):
    text = tsv("rte", 3).replace("sentence2", "hypothesis", 1)
    glue_zip(tmp_path, "rte", dev_text=text)
    with pytest.raises(DataError) as e:
        load_glue(tmp_path, "rte", 1)
    msg = one_line(e)
    assert "RTE.zip (member RTE/dev.tsv)" in msg and "field 'sentence2'" in msg


@pytest.mark.parametrize("source,bad,field", [("mnli", "neutrall", "gold_label"), ("qnli", "1", "label"),
                                               ("cola", "2", "label"), ("stsb", "5.5", "score"),
                                               ("stsb", "high", "score")])
def test_unknown_label_is_refused_naming_file_row_and_field(tmp_path, source, bad, field):
    lines = tsv(source, 3).splitlines()
    first = 0 if source == "cola" else 1
    lines[first + 2] = row(source, 2, bad)
    glue_zip(tmp_path, source, dev_text="\n".join(lines) + "\n")
    with pytest.raises(DataError) as e:
        load_glue(tmp_path, source, 1)
    msg = one_line(e)
    assert f"{GLUE_SPECS[source].dev}" in msg and "row 2" in msg and f"field '{field}'" in msg and repr(bad) in msg


def test_cola_row_without_its_four_fields_is_refused(tmp_path):
    glue_zip(tmp_path, "cola", dev_text="gj04\t1\tonly three fields\n")
    with pytest.raises(DataError) as e:
        load_glue(tmp_path, "cola", 1)
    assert "CoLA.zip (member CoLA/dev.tsv): row 0" in one_line(e)


def test_label_tables_match_the_task_types_by_name():
    for name, table in TASK_LABELS.items():
        if name in TASK_TYPES:       # nli_binary comes with its task type (another part of issue 40)
            assert {v: k for k, v in table.items()} == TASK_TYPES[name].iid_labels
    assert {s: SOURCE_TASK_TYPES[s] for s in GLUE_SPECS} == {
        "mnli": "nli", "qnli": "nli_binary", "rte": "nli_binary", "cola": "acceptability", "stsb": "similarity"}


def test_fetch_entries_and_paper_sizes_are_consistent():
    for src, rel in remotes.IID_FILES.items():
        assert src in DATASET_SOURCES and fetch.DATASET_FILES[src] == (rel,)
        remote = fetch.REMOTES[rel]
        assert remote.url == f"https://dl.fbaipublicfiles.com/glue/data/{Path(rel).name}"
        assert Path(rel).parent.as_posix() == f"iid/{src}" and Path(rel).name == GLUE_SPECS[src].archives[0]
        assert remote.sha256 is None            # no published checksum: recorded at the first download
    assert paper_sizes("mnli") == {"train": 392_702, "val": 4_907, "test": 4_908}


def test_config_fetches_the_archive_of_a_glue_source(tmp_path):
    config = {"data_dir": str(tmp_path), "tasks": {"t": {"model": "tiny-random", "iid": {
        "source": "cola", "path": "iid/cola"}}}}
    fetch.resolve_data_paths(config)
    assert [r.path for r in fetch.config_files(config)] == ["iid/cola/CoLA.zip"]
    (tmp_path / "iid" / "cola" / "CoLA").mkdir(parents=True)       # a copy laid out by hand: nothing to fetch
    assert fetch.config_files(config) == []
