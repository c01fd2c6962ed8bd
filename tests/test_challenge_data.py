"""The related papers' challenge / OOD sets as OOD sources (beluga.data.challenge, issue 40): tiny
files in each official shape (SNLI's zip of JSON lines, MNLI.zip's mismatched dev TSV, SICK.txt,
HANS's TSVs, SciTail's headerless TSVs, the NLI stress tests' archive and Liu et al.'s splits,
Adversarial SQuAD's JSON) built in tmp_path; labels by name, the two-class collapse, splits and
parts, passage ids; the fetch entries' paths and URLs; one-line errors naming the file and field."""

import json
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from beluga.core.errors import ConfigError, DataError
from beluga.core.tasks import NLI
from beluga.data import challenge, fetch, remotes
from beluga.data.ood_sets import load_ood, ood_source_files
from beluga.steps import data as data_steps
from beluga.workflow.sizes import ood_entry_count

NLI3 = NLI.iid_labels                                   # {0: entailment, 1: neutral, 2: contradiction}
NLI2 = {0: "entailment", 1: "not entailment"}           # the two-class NLI type of RTE / QNLI (by name)
CLS = "classification"


def one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    return msg


def write_zip(path: Path, members: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return path


def jsonl(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def nli_record(i: int, label: str, **extra) -> dict:
    return {"annotator_labels": [label], "captionID": f"{i}.jpg#0", "gold_label": label, "pairID": f"{i}.jpg#0r1n",
            "sentence1": f"A premise {i}.", "sentence1_binary_parse": "( x )", "sentence2": f"A hypothesis {i}.",
            "sentence2_binary_parse": "( y )", **extra}


def entry(source: str, folder: Path, **kw) -> dict:
    return {"name": source, "source": source, "path": str(folder), **kw}


def ood(e: dict, labels=NLI3, head=CLS) -> pd.DataFrame:
    return load_ood(e, head, set(labels), pair=True, task_labels=labels)


# ---------------------------------------------------------------- SNLI, MNLI mismatched
@pytest.fixture
def snli(tmp_path) -> Path:
    folder = tmp_path / "ood" / "snli"
    labels = {"train": ["entailment", "neutral"], "dev": ["contradiction"],
              "test": ["entailment", "-", "contradiction", "neutral"]}
    members = {f"snli_1.0/snli_1.0_{s}.jsonl": jsonl(nli_record(10 * k + i, lab) for i, lab in enumerate(ls))
               for k, (s, ls) in enumerate(labels.items())}
    members["snli_1.0/snli_1.0_test.txt"] = "not read\n"
    members["__MACOSX/snli_1.0/._snli_1.0_test.jsonl"] = "resource fork\n"
    write_zip(folder / "snli_1.0.zip", members)
    return folder


def test_snli_test_split_drops_no_gold_pairs_and_maps_labels_by_name(snli):
    df = ood(entry("snli", snli))
    assert list(df["label_name"]) == ["entailment", "contradiction", "neutral"]     # '-' dropped
    assert list(df["label"]) == [0, 2, 1]
    assert list(df.columns[:4]) == ["example_id", "text", "text_b", "label"]
    assert df["example_id"][0] == "snli-test-20.jpg#0r1n" and df["text_b"][0] == "A hypothesis 20."


def test_snli_all_splits_carry_their_part_and_a_two_class_task_maps_three_way_labels(snli):
    df = ood(entry("snli", snli, split="all"), labels=NLI2)
    assert sorted(df.groupby("part").size().items()) == [("dev", 1), ("test", 3), ("train", 2)]
    by_name = dict(zip(df["label_name"], df["label"]))
    assert by_name == {"entailment": 0, "neutral": 1, "contradiction": 1}      # neutral, contradiction: not entailed
    assert challenge.label_record(entry("snli", snli), NLI2) is None


def test_mnli_mismatched_reads_the_glue_archive(tmp_path):
    header = "index\tpromptID\tpairID\tgenre\tsentence1\tsentence2\tlabel1\tgold_label\n"
    rows = "".join(f"{i}\t1\t{i}n\tletters\tP {i}\tH {i}\t{lab}\t{lab}\n"
                   for i, lab in enumerate(["neutral", "entailment"]))
    write_zip(tmp_path / "MNLI.zip", {"MNLI/dev_mismatched.tsv": header + rows, "MNLI/dev_matched.tsv": header})
    df = ood(entry("mnli_mismatched", tmp_path))
    assert list(df["label"]) == [1, 0] and list(df["text"]) == ["P 0", "P 1"]
    unpacked = tmp_path / "copy"                       # the unpacked folder, as the mnli source's forms
    (unpacked / "MNLI").mkdir(parents=True)
    (unpacked / "MNLI" / "dev_mismatched.tsv").write_text(header + rows)
    e = entry("mnli_mismatched", unpacked)
    assert ood(e)["label"].tolist() == [1, 0]
    assert ood_source_files(e) == [str(unpacked / "MNLI" / "dev_mismatched.tsv")]


# ---------------------------------------------------------------- SICK
SICK_HEADER = ("pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\t"
               "entailment_BA\tsentence_A_original\tsentence_B_original\tsentence_A_dataset\t"
               "sentence_B_dataset\tSemEval_set\n")


def sick_zip(folder: Path, rows) -> Path:
    body = "".join(f"{pid}\tA {pid}\tB {pid}\t{lab}\t{score}\tA_x_B\tB_x_A\toa\tob\tFLICKR\tFLICKR\t{s}\n"
                   for pid, lab, score, s in rows)
    return write_zip(folder / "SICK.zip", {"SICK.txt": SICK_HEADER + body, "readme.txt": "x"})


def test_sick_nli_labels_or_relatedness_and_semeval_sets(tmp_path):
    sick_zip(tmp_path, [(1, "NEUTRAL", "4.5", "TRAIN"), (2, "ENTAILMENT", "3.6", "TEST"),
                        (3, "CONTRADICTION", "1", "TEST"), (4, "NEUTRAL", "2.9", "TRIAL")])
    test = ood(entry("sick", tmp_path))
    assert list(test["example_id"]) == ["sick-2", "sick-3"] and list(test["label"]) == [0, 2]
    scores = load_ood(entry("sick", tmp_path, split="all"), "regression", set(), pair=True, task_labels={})
    assert scores["label"].dtype.kind == "f" and list(scores["label"]) == [4.5, 3.6, 1.0, 2.9]
    assert list(scores["part"]) == ["train", "test", "test", "dev"]


def test_sick_bad_label_and_missing_column_are_one_line(tmp_path):
    sick_zip(tmp_path, [(1, "ENTAILS", "4.5", "TEST")])
    with pytest.raises(DataError) as e:
        ood(entry("sick", tmp_path))
    msg = one_line(e)
    assert "SICK.zip (member SICK.txt): line 2: field 'entailment_label': value 'ENTAILS'" in msg
    sick_zip(tmp_path, [(1, "NEUTRAL", "7", "TEST")])
    with pytest.raises(DataError) as e:
        load_ood(entry("sick", tmp_path), "regression", set(), pair=True, task_labels={})
    assert "field 'relatedness_score'" in one_line(e)
    write_zip(tmp_path / "SICK.zip", {"SICK.txt": SICK_HEADER.replace("SemEval_set", "set")})
    with pytest.raises(DataError) as e:
        ood(entry("sick", tmp_path))
    assert "field 'SemEval_set': column missing" in one_line(e)


# ---------------------------------------------------------------- HANS, SciTail: two-class sets
HANS_HEADER = ("gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\t"
               "sentence1\tsentence2\tpairID\theuristic\tsubcase\ttemplate\n")


def hans_files(folder: Path, labels=("non-entailment", "entailment")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, prefix in (("heuristics_evaluation_set.txt", "ex"), ("heuristics_train_set.txt", "ex")):
        body = "".join(f"{lab}\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tThe doctor saw the lawyer .\tThe lawyer saw the "
                       f"doctor .\t{prefix}{i}\tlexical_overlap\tln_subject/object_swap\ttemp1\n"
                       for i, lab in enumerate(labels))
        (folder / name).write_text(HANS_HEADER + body)
    return folder


def test_hans_under_a_three_class_task_keeps_its_labels_and_records_the_collapse(tmp_path):
    e = entry("hans", hans_files(tmp_path))
    df = ood(e)
    assert list(df["label_name"]) == ["not entailment", "entailment"] and list(df["label"]) == [1, 0]
    assert list(df["heuristic"]) == ["lexical_overlap"] * 2
    record = challenge.label_record(e, NLI3)
    assert record["labels"] == {"0": "entailment", "1": "not entailment"}
    assert record["collapse"] == {"0": 0, "1": 1, "2": 1}     # the model's neutral and contradiction: non-entailment


def test_hans_under_a_two_class_task_maps_by_name_and_all_reads_both_files(tmp_path):
    e = entry("hans", hans_files(tmp_path), split="all")
    df = ood(e, labels=NLI2)
    assert list(df["example_id"]) == ["hans-test-ex0", "hans-test-ex1", "hans-train-ex0", "hans-train-ex1"]
    assert list(df["label"]) == [1, 0, 1, 0] and challenge.label_record(e, NLI2) is None


def test_hans_unknown_label_names_the_file_line_and_field(tmp_path):
    hans_files(tmp_path, labels=("entailment", "contradiction"))
    with pytest.raises(DataError) as e:
        ood(entry("hans", tmp_path))
    msg = one_line(e)
    assert "heuristics_evaluation_set.txt: line 3: field 'gold_label': value 'contradiction'" in msg


def test_scitail_headerless_tsvs_and_their_labels(tmp_path):
    members = {f"SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv": f"Premise {s} .\tHypothesis {s} .\tentails\n"
               f"Other premise .\tOther hypothesis .\tneutral\n" for s in ("train", "dev", "test")}
    members["SciTailV1.1/snli_format/scitail_1.0_test.txt"] = "not read\n"
    write_zip(tmp_path / "SciTailV1.1.zip", members)
    df = ood(entry("scitail", tmp_path), labels=NLI2)
    assert list(df["label"]) == [0, 1] and list(df["label_name"]) == ["entailment", "not entailment"]
    assert df["text"][0] == "Premise test ." and df["example_id"][0] == "scitail-test-1"
    assert challenge.label_record(entry("scitail", tmp_path), NLI3)["collapse"] == {"0": 0, "1": 1, "2": 1}
    assert len(ood(entry("scitail", tmp_path, split="all"))) == 6


# ---------------------------------------------------------------- the NLI stress tests
def naik_folder(folder: Path) -> Path:
    write_zip(folder / "Stress_Tests.zip", {
        "Stress_Tests/Negation/multinli_0.9_negation_matched.jsonl":
            jsonl([nli_record(1, "contradiction"), nli_record(2, "entailment")]),
        "Stress_Tests/Negation/multinli_0.9_negation_mismatched.jsonl": jsonl([nli_record(9, "neutral")])})
    liu = folder / "liu2019" / "negation_adversary"
    liu.mkdir(parents=True)
    (liu / "multinli_0.9_train_negation_adversary.jsonl").write_text(
        jsonl(nli_record(i, lab) for i, lab in enumerate(["neutral", "entailment", "contradiction"])))
    (liu / "multinli_0.9_dev_matched_negation_adversary.jsonl").write_text(jsonl([nli_record(5, "neutral")]))
    return folder


def test_naik_test_split_reads_the_archive_member(tmp_path):
    df = ood(entry("naik", naik_folder(tmp_path), set="negation"))
    assert list(df["label"]) == [2, 0] and list(df["example_id"]) == ["naik-negation-test-1", "naik-negation-test-2"]


def test_naik_all_is_the_inoculation_papers_train_and_test_parts(tmp_path):
    e = entry("naik", naik_folder(tmp_path), set="negation", split="all")
    df = ood(e)
    assert df.groupby("part").size().to_dict() == {"test": 1, "train": 3}
    assert ood_source_files(e) == [
        str(tmp_path / "liu2019/negation_adversary/multinli_0.9_train_negation_adversary.jsonl"),
        str(tmp_path / "liu2019/negation_adversary/multinli_0.9_dev_matched_negation_adversary.jsonl")]


def test_naik_and_adversarial_squad_evaluation_is_liu_et_als_evaluation_file_alone(tmp_path):
    """split: evaluation -- the inoculation paper's test part, as an OOD set of its own (its training split is
    another entry, split: train; inoculation.challenge: {set: <evaluation>, train: <train>})."""
    e = entry("naik", naik_folder(tmp_path), set="negation", split="evaluation")
    df = ood(e)
    assert list(df["example_id"]) == ["naik-negation-evaluation-1"] and list(df["label"]) == [1]
    assert ood_source_files(e) == [
        str(tmp_path / "liu2019/negation_adversary/multinli_0.9_dev_matched_negation_adversary.jsonl")]
    squad_json(tmp_path / "liu2019/adversarial-train-set.json", [("A", [("Denver 1.", ["q1"])])])
    squad_json(tmp_path / "liu2019/adversarial-evaluation-set.json", [("B", [("Denver 3.", ["q3"])])])
    df = load_ood(entry("adversarial_squad", tmp_path, set="AddSent", split="evaluation"), "qa", set(), pair=True)
    assert list(df["example_id"]) == ["q3"] and "part" not in df


def test_naik_entry_checks(tmp_path):
    with pytest.raises(ConfigError) as e:
        ood(entry("naik", tmp_path, set="antonym", split="train"))
    assert "field 'split'" in one_line(e) and "no training split" in str(e.value)
    with pytest.raises(ConfigError) as e:
        ood(entry("naik", tmp_path, set="negation", split="validation"))
    assert "field 'split'" in one_line(e)
    with pytest.raises(DataError) as e:
        ood(entry("naik", tmp_path, set="negation"))
    assert "Stress_Tests.zip does not exist" in one_line(e)


def test_naik_bad_json_line_names_the_file_and_line(tmp_path):
    folder = naik_folder(tmp_path)
    path = folder / "liu2019/negation_adversary/multinli_0.9_train_negation_adversary.jsonl"
    path.write_text(jsonl([nli_record(1, "neutral")]) + json.dumps({"gold_label": "neutral", "sentence1": "x"}) + "\n")
    with pytest.raises(DataError) as e:
        ood(entry("naik", folder, set="negation", split="train"))
    assert f"ood file {path}: line 2: field 'sentence2': missing" in one_line(e)


def test_an_nli_set_under_a_non_nli_task_is_refused(tmp_path):
    with pytest.raises(ConfigError) as e:
        load_ood(entry("naik", naik_folder(tmp_path), set="negation"), CLS, {0, 1}, pair=True,
                 task_labels={0: "not duplicate", 1: "duplicate"})
    assert "field 'source'" in one_line(e)


# ---------------------------------------------------------------- Adversarial SQuAD
def squad_json(path: Path, articles) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = []
    for title, paragraphs in articles:
        data.append({"title": title, "paragraphs": [
            {"context": ctx, "qas": [{"id": qid, "question": f"Who {qid}?",
                                      "answers": [{"text": "Denver", "answer_start": ctx.index("Denver")}]}
                                     for qid in qids]} for ctx, qids in paragraphs]})
    path.write_text(json.dumps({"version": "1.1", "data": data}))
    return path


def test_adversarial_squad_keeps_title_passage_and_original_question(tmp_path):
    orig = "56be4db0acb8001400a502ec"
    squad_json(tmp_path / "sample1k-HCVerifyAll.json", [
        ("Super_Bowl_50", [("Denver won the game.", [orig]),
                           ("Denver won the game. Jeff Dean played in Champ Bowl 40.", [f"{orig}-high-conf-turk0"])]),
        ("Warsaw", [("Denver is not here.", ["5733be284776f41900661182"])])])
    df = load_ood(entry("adversarial_squad", tmp_path, set="AddSent"), "qa", set(), pair=True)
    assert list(df.columns) == ["example_id", "context", "question", "answers", "title", "article_id", "passage_id",
                                "original_id"]
    by_id = df.set_index("example_id")
    assert by_id.loc[f"{orig}-high-conf-turk0", "passage_id"] == "0-1"
    assert by_id.loc[f"{orig}-high-conf-turk0", "article_id"] == "0" and by_id.loc[orig, "article_id"] == "0"
    assert by_id.loc["5733be284776f41900661182", "article_id"] == "1"
    assert by_id.loc[f"{orig}-high-conf-turk0", "original_id"] == orig
    assert by_id.loc["5733be284776f41900661182", "title"] == "Warsaw" and list(by_id["answers"].iloc[0]) == ["Denver"]


def test_adversarial_squad_all_parts_and_its_task_check(tmp_path):
    squad_json(tmp_path / "liu2019/adversarial-train-set.json", [("A", [("Denver 1.", ["q1"]), ("Denver 2.", ["q2"])])])
    squad_json(tmp_path / "liu2019/adversarial-evaluation-set.json", [("B", [("Denver 3.", ["q3"])])])
    df = load_ood(entry("adversarial_squad", tmp_path, set="AddSent", split="all"), "qa", set(), pair=True)
    assert dict(zip(df["example_id"], df["passage_id"])) == {"q1": "train-0-0", "q2": "train-0-1", "q3": "test-0-0"}
    assert dict(zip(df["example_id"], df["article_id"])) == {"q1": "train-0", "q2": "train-0", "q3": "test-0"}
    assert list(df["part"]) == ["train", "train", "test"]
    with pytest.raises(ConfigError) as e:
        ood(entry("adversarial_squad", tmp_path, set="AddSent", split="all"))
    assert "a read task" in one_line(e)


# ---------------------------------------------------------------- fetch entries, prepared tables, plan
ENTRIES = [{"source": s, "split": sp, **({"set": st} if st else {})}
           for s in remotes.OOD_DIRS for sp in remotes.OOD_SPLITS[s]
           for st in ({"naik": list(remotes.NAIK_SETS), "adversarial_squad": list(remotes.ADVERSARIAL_SQUAD_SETS)}
                      .get(s, [None]))
           if not (s == "naik" and st == "antonym" and sp != "test")]


def test_every_file_an_entry_reads_is_a_fetch_entry_and_every_entry_is_read():
    read = set()
    for e in ENTRIES:
        paths = remotes.ood_paths(e)
        assert paths, e
        for name in paths:
            rel = f"{remotes.OOD_DIRS[e['source']]}/{name}"
            assert rel in fetch.REMOTES, rel
            read.add(rel)
    challenge_remotes = {p for p in fetch.REMOTES if p.startswith("ood/")}
    released = {f"{remotes.OOD_DIRS[e['source']]}/{rel}" for e in ENTRIES for rel in remotes.released_doses(e).values()}
    assert challenge_remotes <= read | released         # Liu et al.'s released doses: read by inoculation jobs
    for rel in challenge_remotes | set(remotes.IID_FILES.values()):
        r = fetch.REMOTES[rel]
        assert r.url.startswith("https://") and r.sha256 is None and r.what


def test_a_config_fetches_what_its_ood_entries_name(tmp_path):
    config = {"data_dir": str(tmp_path), "tasks": {"t": {"model": "tiny-random", "iid": {"source": "mnli",
                                                                                        "path": "iid/mnli"},
                                                         "ood": [{"name": "mm", "source": "mnli_mismatched"},
                                                                 {"name": "neg", "source": "naik", "set": "negation",
                                                                  "split": "all"},
                                                                 {"name": "h", "source": "hans"},
                                                                 {"name": "mine", "source": "hans",
                                                                  "path": str(tmp_path / "elsewhere")}]}}}
    fetch.resolve_data_paths(config)
    assert config["tasks"]["t"]["ood"][1]["path"] == fetch._under(str(tmp_path), "ood/naik")
    assert [r.path for r in fetch.config_files(config)] == [
        "iid/mnli/MNLI.zip", "ood/hans/heuristics_evaluation_set.txt",
        "ood/naik/liu2019/negation_adversary/multinli_0.9_dev_matched_negation_adversary.jsonl",
        "ood/naik/liu2019/negation_adversary/multinli_0.9_train_negation_adversary.jsonl"]


def test_prepared_table_records_the_collapse_for_a_three_class_task(tmp_path):
    out = tmp_path / "hans.parquet"
    data_steps.prepare_ood(entry=entry("hans", hans_files(tmp_path / "hans")), task_type="nli", out_data=str(out))
    meta = pq.read_schema(out).metadata
    assert json.loads(meta[b"beluga.ood_source"]) == {
        "source": "hans", "set": None, "split": "test", "files": [str(tmp_path / "hans/heuristics_evaluation_set.txt")]}
    # the evaluator's collapse record (beluga/data/ood_collapse.py): neutral and contradiction -> not entailment
    assert json.loads(meta[b"beluga.ood_collapse"]) == {"classes": ["entailment", "not entailment"],
                                                          "model_to_set": [0, 1, 1]}
    from beluga.data.ood_collapse import read_collapse

    assert read_collapse(out) == [0, 1, 1]
    assert pd.read_parquet(out)["label"].tolist() == [1, 0]


def test_plan_counts_published_sizes():
    assert ood_entry_count({"source": "hans", "split": "all"})[0] == 60_000
    assert ood_entry_count({"source": "sick", "split": "all"})[0] == 9_840
    assert ood_entry_count({"source": "naik", "set": "negation"}) == (
        0, "size unknown: a naik set without max_examples and without a published size, counted 0")


def test_a_short_row_names_the_file_line_and_missing_field(tmp_path):
    hans_files(tmp_path)
    path = tmp_path / "heuristics_evaluation_set.txt"
    path.write_text(HANS_HEADER + "entailment\t( x )\t( y )\n")
    with pytest.raises(DataError) as e:
        ood(entry("hans", tmp_path))
    assert f"ood file {path}: line 2: field 'sentence1': missing" in one_line(e)


def test_dag_check_names_a_missing_challenge_file_unless_the_fetch_provides_it(tmp_path):
    from beluga.workflow.dag import check_sources

    mnli = tmp_path / "iid" / "mnli"
    mnli.mkdir(parents=True)
    write_zip(mnli / "MNLI.zip", {"MNLI/train.tsv": "x\n", "MNLI/dev_matched.tsv": "x\n"})
    hans = tmp_path / "ood" / "hans"
    tasks = {"m": {"type": "nli", "model": "tiny-random", "iid": {"source": "mnli", "path": str(mnli)},
                   "ood": [{"name": "h", "source": "hans", "path": str(hans)}]}}
    with pytest.raises(ConfigError) as e:
        check_sources(tasks)
    msg = one_line(e)
    assert f"{hans / 'heuristics_evaluation_set.txt'}" in msg and "field 'tasks.m.ood[0].path'" in msg
    check_sources(tasks, not_fetched=[str(hans / "heuristics_evaluation_set.txt")])
    tasks["m"]["ood"][0].update(split="validation")
    with pytest.raises(ConfigError) as e:
        check_sources(tasks)
    assert "field 'split'" in one_line(e)


# ---------------------------------------------------------------- Yelp Review Full (combinational, seed 002)
def yelp_archive(path: Path, train: str, test: str = '"1","fine"\n') -> Path:
    import io
    import tarfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (("train.csv", train), ("test.csv", test), ("readme.txt", "Yelp Review Full")):
            data = text.encode()
            info = tarfile.TarInfo(f"yelp_review_full_csv/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_yelp_archive_read_in_memory_with_its_escapes_undone(tmp_path):
    from beluga.data.yelp import load_yelp

    path = yelp_archive(tmp_path / "yelp_review_full_csv.tar.gz",
                        '"5","dr. goldberg said ""hi"".\\nGreat."\n"3","okay, I guess"\n')
    df = load_yelp(path)
    assert list(df["example_id"]) == ["yelp-train-0", "yelp-train-1"] and list(df["label"]) == ["5", "3"]
    assert df["text"][0] == 'dr. goldberg said "hi".\nGreat.' and df["text"][1] == "okay, I guess"
    assert len(load_yelp(path, "all")) == 3
    yelp_archive(path, '"5","good"\n"6","too many stars"\n')
    with pytest.raises(DataError) as e:
        load_yelp(path)
    assert "(member yelp_review_full_csv/train.csv): row 1: field 'label': value '6'" in one_line(e)


def test_yelp_archive_is_fetched_when_the_combinational_data_names_it(tmp_path):
    config = {"data_dir": str(tmp_path), "tasks": {},
              "combinational": {"data": {"source": "local", "path": str(tmp_path / remotes.YELP_ARCHIVE)}}}
    assert [r.path for r in fetch.config_files(config)] == [remotes.YELP_ARCHIVE]
    assert fetch.REMOTES[remotes.YELP_ARCHIVE].url.startswith("https://drive.usercontent.google.com/")
