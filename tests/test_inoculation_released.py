"""Liu et al.'s released doses (seed 001's inoculation; docs/ANALYSES.md): the per-dose files their configs
train on, as fetch rows (beluga.data.remotes) and as a dose's examples (inoculation.samples: released,
beluga.analyses.inoculation.train); the all dose; Adversarial SQuAD drawn as their sampling script draws it
(one question per article while the dose fits the articles, then per paragraph), on tiny files in the
release's formats built here."""

import json
from pathlib import Path

import pandas as pd
import pytest

from beluga.analyses.inoculation import plan as ino_plan
from beluga.analyses.inoculation.train import challenge_parts, released_ids
from beluga.core.errors import ConfigError, DataError
from beluga.data import challenge, fetch, remotes
from beluga.data.ood_sets import load_ood

NAIK_TRAIN = {"source": "naik", "set": "negation", "split": "train"}
SQUAD_TRAIN = {"source": "adversarial_squad", "set": "AddSent", "split": "train"}


def one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg, msg
    return msg


# ---------------------------------------------------------------- the released files and their fetch rows
def test_released_dose_files_are_liu_et_als_config_paths():
    # training_configs/nli_stress_test/esim_original/matched_negation_adversary/*.5.json, train_data_path
    assert remotes.released_dose(NAIK_TRAIN, 5) == \
        "liu2019/negation_adversary/multinli_0.9_train_negation_adversary.5.jsonl"
    assert remotes.released_dose({**NAIK_TRAIN, "set": "word_overlap"}, "1000") == \
        "liu2019/word_overlap_adversary/multinli_0.9_train_word_overlap_adversary.1000.jsonl"
    # numerical reasoning's training split is the 1,000 sample itself; its smaller doses share the stem
    nr = {**NAIK_TRAIN, "set": "numerical_reasoning"}
    assert remotes.released_dose(nr, 750) == \
        "liu2019/numerical_reasoning_adversary/numerical_reasoning_adversary_train.750.jsonl"
    assert remotes.released_dose(nr, 1000) == f"liu2019/{remotes.NAIK_SETS['numerical_reasoning'][1]}"
    # training_configs/adversarial_squad/bidaf/fine_tune_bidaf.400.json
    assert remotes.released_dose(SQUAD_TRAIN, 400) == "liu2019/adversarial-train-set.400.json"
    # no released sample: all (the split itself), another dose, an evaluation split, antonym, another source
    for entry, dose in ((NAIK_TRAIN, "all"), (NAIK_TRAIN, 20), ({**NAIK_TRAIN, "split": "evaluation"}, 5),
                        ({**NAIK_TRAIN, "set": "antonym"}, 5), ({"source": "snli", "split": "train"}, 5)):
        assert remotes.released_dose(entry, dose) is None, (entry, dose)
    assert list(remotes.released_doses(SQUAD_TRAIN)) == ["5", "10", "50", "100", "400", "500", "750", "1000"]


def test_every_released_file_is_a_fetch_row_under_liu_et_als_bucket():
    expected = {}
    for entry in [{**NAIK_TRAIN, "set": s} for s in remotes.NAIK_SETS] + [SQUAD_TRAIN]:
        folder = remotes.OOD_DIRS[entry["source"]]
        bucket = {"naik": "nli_stress_test", "adversarial_squad": "adversarial_squad"}[entry["source"]]
        for rel in remotes.released_doses(entry).values():
            expected[f"{folder}/{rel}"] = remotes.LIU_URL.format(name=f"{bucket}/{rel.removeprefix('liu2019/')}")
    # 4 stress tests x 8 doses, numerical reasoning's 7 besides its split, Adversarial SQuAD's 8 (+ the split)
    assert len(expected) == 4 * 8 + 8 + 8
    for rel, url in expected.items():
        r = fetch.REMOTES[rel]
        assert r.url == url and r.sha256 is None and "Liu et al." in r.what   # the lock records a SHA-256
    paths = [row[0] for row in remotes.remote_rows()]
    assert len(paths) == len(set(paths))


def test_a_config_fetches_the_released_samples_only_when_it_trains_on_them(tmp_path):
    def config(**inoculation):
        c = {"data_dir": str(tmp_path), "inoculation": inoculation,
             "tasks": {"t": {"model": "tiny-random", "ood": [{"name": "neg_train", **NAIK_TRAIN}]}}}
        fetch.resolve_data_paths(c)
        return [r.path for r in fetch.config_files(c)]

    split = "ood/naik/liu2019/negation_adversary/multinli_0.9_train_negation_adversary.jsonl"
    assert config() == config(samples="drawn") == [split]
    got = config(samples="released")
    assert got == sorted([split] + [f"ood/naik/liu2019/negation_adversary/multinli_0.9_train_negation_adversary.{d}"
                                    ".jsonl" for d in remotes.LIU_DOSES])


# ---------------------------------------------------------------- a released sample as a dose's examples
def nli_line(i: int, label: str) -> str:
    return json.dumps({"gold_label": label, "sentence1": f"Premise {i % 4} .", "sentence2": f"Hypothesis {i % 4} .",
                       "pairID": f"{i}"})


def test_a_released_stress_test_sample_is_found_in_its_training_split(tmp_path):
    # the split: 6 lines, two of them the same pair with the same label (lines 1 and 5: i % 4 == 0 ... both
    # "neutral"), a '-' line (no gold label: dropped by the split's reader and by the sample's)
    labels = ["neutral", "entailment", "contradiction", "-", "neutral", "entailment"]
    folder = tmp_path / "liu2019" / "negation_adversary"
    folder.mkdir(parents=True)
    (folder / "multinli_0.9_train_negation_adversary.jsonl").write_text(
        "\n".join(nli_line(i, lab) for i, lab in enumerate(labels)) + "\n")
    pool = load_ood({"name": "neg_train", "path": str(tmp_path), **NAIK_TRAIN}, "classification", {0, 1, 2},
                    pair=True, task_labels={0: "entailment", 1: "neutral", 2: "contradiction"})
    assert sorted(pool["example_id"]) == [f"naik-negation-train-{n}" for n in (1, 2, 3, 5, 6)]
    sample = folder / "multinli_0.9_train_negation_adversary.5.jsonl"
    # split lines 3 and 1, then line 1's pair again (the split holds it twice: lines 1 and 5), a '-' line
    sample.write_text("\n".join([nli_line(2, "contradiction"), nli_line(0, "neutral"), nli_line(4, "neutral"),
                                 nli_line(3, "-")]) + "\n")
    released = challenge.read_released_sample(sample)
    assert list(released["row"]) == [1, 2, 3] and list(released["label_name"]) == ["contradiction", "neutral",
                                                                                    "neutral"]
    assert released_ids(pool, released, str(sample)) == [f"naik-negation-train-{n}" for n in (1, 3, 5)]
    data = pool.assign(example_id="eval-" + pool["example_id"])
    train, test, dev = challenge_parts(data, "negation", "5", 11, "set-negation", train_data=pool, released=released,
                                       released_from=str(sample))
    assert sorted(train["example_id"]) == [f"naik-negation-train-{n}" for n in (1, 3, 5)]
    assert dev is None and test.equals(data)
    # a pair the split lacks (its label differs), or once more than the split holds it: one line naming the file
    sample.write_text(nli_line(1, "neutral") + "\n")
    with pytest.raises(DataError) as e:
        released_ids(pool, challenge.read_released_sample(sample), str(sample))
    assert one_line(e) == (f"{sample}: line 1: field 'sentence1': this pair (label neutral) is not in the "
                           "training split")
    sample.write_text("\n".join([nli_line(0, "neutral")] * 3) + "\n")
    with pytest.raises(DataError, match=r"line 3: .*\(or the sample repeats it more often\)"):
        released_ids(pool, challenge.read_released_sample(sample), str(sample))


def squad_file(path: Path, articles) -> Path:
    """A file in SQuAD v1.1's (and the release's) format: articles of (title, paragraphs of (context, ids))."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": "1.1", "data": [
        {"title": title, "paragraphs": [
            {"context": ctx, "qas": [{"id": q, "question": f"Who {q}?",
                                      "answers": [{"text": "Denver", "answer_start": ctx.index("Denver")}]}
                                     for q in qids]} for ctx, qids in paragraphs]}
        for title, paragraphs in articles]}))
    return path


#: three articles, six paragraphs, nine questions (ids a<article><paragraph><question>)
ARTICLES = [("A", [("Denver A0.", ["a00", "a01"]), ("Denver A1.", ["a10"])]),
            ("B", [("Denver B0.", ["b00", "b01", "b02"])]),
            ("C", [("Denver C0.", ["c00"]), ("Denver C1.", ["c10"]), ("Denver C2.", ["c20"])])]


def addsent_train(tmp_path) -> pd.DataFrame:
    squad_file(tmp_path / "liu2019" / "adversarial-train-set.json", ARTICLES)
    return load_ood({"name": "addsent_train", "path": str(tmp_path), **SQUAD_TRAIN}, "qa", set(), pair=True)


def test_a_released_adversarial_squad_sample_is_found_by_question_id(tmp_path):
    pool = addsent_train(tmp_path)
    sample = squad_file(tmp_path / "liu2019" / "adversarial-train-set.5.json",
                        [("C", [("Denver C1.", ["c10"])]), ("A", [("Denver A0.", ["a01"])])])
    assert released_ids(pool, challenge.read_released_sample(sample), str(sample)) == ["a01", "c10"]
    squad_file(sample, [("D", [("Denver D0.", ["d00"])])])
    with pytest.raises(DataError) as e:
        released_ids(pool, challenge.read_released_sample(sample), str(sample))
    assert one_line(e) == f"{sample}: question 1: field 'id': 'd00' is not in the training split"


# ---------------------------------------------------------------- AddSent drawn as Liu et al.'s script
def test_adversarial_squad_is_drawn_by_article_then_by_paragraph(tmp_path):
    pool = addsent_train(tmp_path)
    # the release's articles and paragraphs, by their position in the file
    assert dict(zip(pool["example_id"], pool["article_id"])) == {
        "a00": "0", "a01": "0", "a10": "0", "b00": "1", "b01": "1", "b02": "1", "c00": "2", "c10": "2", "c20": "2"}
    assert pool.set_index("example_id").loc[["a10", "b02", "c20"], "passage_id"].tolist() == ["0-1", "1-0", "2-2"]
    ids = list(pool["example_id"])
    article, passage = (dict(zip(pool["example_id"], pool[c])) for c in ("article_id", "passage_id"))
    for seed in range(20):
        doses = {d: ino_plan.dose_sample(ids, d, seed, "set-addsent", [article, passage])
                 for d in ("1", "2", "3", "4", "5", "6", "9", "all")}
        # doses 1-3 fit the 3 articles: one question of each of that many distinct articles
        for d in ("1", "2", "3"):
            assert len(doses[d]) == int(d) and len({article[i] for i in doses[d]}) == int(d)
        # doses 4-6 fit the 6 paragraphs: distinct paragraphs (nested: every article keeps its question)
        for d in ("4", "5", "6"):
            assert len(doses[d]) == int(d) and len({passage[i] for i in doses[d]}) == int(d)
            assert {article[i] for i in doses[d]} == {"0", "1", "2"}
        # above the paragraphs: one of each; all: every question (Liu et al.'s all, the whole split)
        assert sorted(passage[i] for i in doses["9"]) == sorted(set(passage.values()))
        assert sorted(doses["all"]) == sorted(ids)
        order = doses["all"]
        assert all(doses[d] == order[:len(doses[d])] for d in doses)                   # nested
        # dose 6, every paragraph once: its one-question paragraphs' questions, one of A0's, one of B0's
        six = set(doses["6"])
        assert {"a10", "c00", "c10", "c20"} <= six
        assert len(six & {"a00", "a01"}) == len(six & {"b00", "b01", "b02"}) == 1
    three = ino_plan.dose_sample(ids, "3", 1, "set-addsent", [article, passage])
    # the rule through the job's parts: distinct: [article_id, passage_id]
    data = pool.assign(example_id="eval-" + pool["example_id"])
    train, _, _ = challenge_parts(data, "addsent", "3", 1, "set-addsent", train_data=pool,
                                  distinct=["article_id", "passage_id"])
    assert sorted(train["example_id"]) == sorted(three)


# ---------------------------------------------------------------- the config's checks
def test_released_samples_checks():
    ino_plan.check_samples("drawn", "dev")
    ino_plan.check_samples("released", "test")
    with pytest.raises(ConfigError) as e:
        ino_plan.check_samples("released", "dev")
    assert one_line(e).startswith("config: field 'inoculation.samples': released samples are drawn from the whole")
    spec = {"label": "negation", "train_size": None}
    files = ino_plan.released_samples(spec, NAIK_TRAIN, "released")
    assert files == remotes.released_doses(NAIK_TRAIN) and len(files) == 8
    assert ino_plan.released_samples(spec, NAIK_TRAIN, "drawn") == {}
    assert ino_plan.released_samples(spec, {"source": "snli", "split": "train"}, "released") == {}
    assert ino_plan.released_samples(spec, None, "released") == {}
    with pytest.raises(ConfigError, match=r"field 'inoculation.challenge\[\].train_size': challenge set 'negation'"):
        ino_plan.released_samples({**spec, "train_size": 1000}, NAIK_TRAIN, "released")
    ino_plan.check_released_doses(["5", "1000", "all"], files, "negation")
    ino_plan.check_released_doses(["20"], {}, "nyt")                 # a drawn unit: any dose
    with pytest.raises(ConfigError) as e:
        ino_plan.check_released_doses(["5", "20", "all"], files, "negation")
    assert one_line(e).startswith("config: field 'inoculation.doses': dose 20 has no released sample of 'negation'")
    assert ino_plan.challenge_spec({"set": "a", "distinct": ["article_id", "passage_id"]})["distinct"] == \
        ["article_id", "passage_id"]
    for bad in ([], ["x", "x"], [""], 3):
        with pytest.raises(ConfigError, match=r"field 'distinct': a column, or a list"):
            ino_plan.challenge_spec({"set": "a", "distinct": bad})
