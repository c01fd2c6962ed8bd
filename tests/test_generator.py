"""Tests for the generated movie-review sentiment suite (beluga.suites.generator/perturb/lexicons)."""

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from beluga.suites import format as fmt  # noqa: E402
from beluga.suites import lexicons as lex  # noqa: E402
from beluga.suites import perturb  # noqa: E402
from beluga.suites.generator import SENT_LABELS, generate_sent_suite, sent_catalogue  # noqa: E402

SENTENCES = [
    "The movie was great.",
    "I didn't like it at all.",
    "What a waste of two hours!",
    "It's not bad, but it isn't good either.",
    "The acting is wooden and the plot is thin.",
    "A charming, funny and warm film",
    "Nobody will remember this one next year.",
    "The soundtrack alone is worth the price of admission.",
    "It is a slow, dull and joyless affair.",
    "I can't recommend it enough.",
    "The director does not know what to do with his cast.",
    "You're going to love the ending.",
    "There is nothing new here.",
    "A triumph of style over substance.",
    "The jokes fall flat, one after another.",
    "Beautifully shot and wonderfully acted.",
    "It should have been much shorter.",
    "I am not sure what the point was.",
    "They are trying too hard to be clever.",
    "An instant classic.",
    "The dialogue is clunky and the pacing is off.",
    "This is the best comedy of the summer!",
    "We have seen this story a hundred times before.",
    "The special effects are impressive, though.",
    "Sadly, it's a mess from start to finish.",
    "John gave a wonderful performance in London.",
    "Maria and Kenji are terrific as the estranged couple.",
    "It runs 148 minutes and feels even longer.",
    "Shot on location in Tokyo and Mexico City, it looks gorgeous.",
    "The 1999 original was far better than this 2019 remake.",
    "Sarah Smith directed it with 12 cameras in Paris.",
    "word " * 45 + "end.",  # too long: must be skipped
]

N = 12


@pytest.fixture(scope="module")
def suite():
    return generate_sent_suite(SENTENCES, seed=7, cases_per_functionality=N)


# ----------------------------------------------------------------- catalogue
def test_catalogue_shape():
    cat = sent_catalogue()
    assert len(cat) == 20
    assert len({c["functionality"] for c in cat}) == 20
    assert len({c["capability"] for c in cat}) >= 6
    assert {c["test_type"] for c in cat} == {"MFT", "INV", "DIR"}
    keys = {"functionality", "capability", "test_type", "expect", "expect_params", "agg_fn", "description"}
    for c in cat:
        assert set(c) == keys
        assert c["test_type"] in fmt.EXPECTATIONS[c["expect"]]["types"]
        assert isinstance(c["expect_params"], dict)
        assert c["agg_fn"] == ("all" if c["test_type"] == "MFT" else "all_except_first")
        assert c["description"]
    assert SENT_LABELS == {0: "negative", 1: "neutral", 2: "positive"}


def test_catalogue_is_a_copy():
    cat = sent_catalogue()
    cat[1]["expect_params"]["tolerance"] = 99
    cat.pop()
    assert sent_catalogue()[1]["expect_params"]["tolerance"] == 0.1
    assert len(sent_catalogue()) == 20


def test_catalogue_expected_entries():
    by = {c["functionality"]: c for c in sent_catalogue()}
    assert by["intensifiers"]["expect_params"] == {"increasing": True, "tolerance": 0.1, "slice": "orig_not_neutral"}
    assert by["reducers"]["expect_params"]["increasing"] is False
    assert by["add positive phrases"]["expect"] == "diff_up"
    assert by["add negative phrases"]["expect"] == "diff_down"
    assert by["simple negations: not negative"]["expect"] == "not_negative"
    assert by["Q & A: no"]["expect"] == "not_negative"
    for name in ("typos", "contractions", "punctuation", "change names", "change locations",
                 "change numbers", "protected: race", "protected: nationality"):
        assert by[name]["test_type"] == "INV" and by[name]["expect_params"] == {"tolerance": 0.1}


# ----------------------------------------------------------------- generated suite
def test_suite_validates(suite):
    assert list(suite.columns) == fmt.COLUMNS
    fmt.validate_suite(suite, "generated", label_set=(0, 1, 2))


def test_exact_counts_and_order(suite):
    cat = sent_catalogue()
    counts = suite.groupby("functionality", sort=False).size()
    assert list(counts.index) == [c["functionality"] for c in cat]
    assert (counts == N).all()
    assert len(suite) == 20 * N
    for fi, c in enumerate(cat):
        g = suite[suite.functionality == c["functionality"]]
        assert list(g.case_id) == [f"sent-{fi:02d}-{ci:05d}" for ci in range(N)]
        assert (g.capability == c["capability"]).all() and (g.test_type == c["test_type"]).all()
        assert (g.expect == c["expect"]).all() and (g.agg_fn == c["agg_fn"]).all()
        assert (g.expect_params == json.dumps(c["expect_params"], sort_keys=True)).all()


def test_row_format(suite):
    for r in suite.itertuples():
        assert r.inputs_b is None
        assert r.meta is None or isinstance(json.loads(r.meta), dict)
        if r.test_type == "MFT":
            assert len(r.inputs) == 1
            if r.expect == "eq":
                assert len(r.labels) == 1 and r.labels[0] in SENT_LABELS
            else:
                assert r.labels is None
        else:
            assert r.labels is None
            assert 2 <= len(r.inputs) <= 4


def test_mixed_labels(suite):
    labels = suite[suite.functionality == "sentiment words in context"].labels.map(lambda x: x[0])
    assert set(labels) == {0, 1, 2}
    for name in ("used to, but now", "my opinion is what matters"):
        assert set(suite[suite.functionality == name].labels.map(lambda x: x[0])) == {0, 2}
    assert set(suite[suite.functionality == "simple negations: negative"].labels.map(lambda x: x[0])) == {0}
    neutral = suite.functionality == "simple negations: not neutral is still neutral"
    assert set(suite[neutral].labels.map(lambda x: x[0])) == {1}


def test_perturbations_differ_from_original(suite):
    for r in suite[suite.test_type != "MFT"].itertuples():
        assert all(p != r.inputs[0] for p in r.inputs[1:]), r.inputs
        assert len(set(r.inputs)) == len(r.inputs), r.inputs


def test_distinct_inputs_within_functionality(suite):
    for _, g in suite.groupby("functionality", sort=False):
        assert g.inputs.map(lambda x: x[0]).nunique() == len(g)


def test_long_sentences_skipped(suite):
    assert not any(len(x.split()) > 40 for inputs in suite.inputs for x in inputs)


def test_real_sentences_used(suite):
    pool = {" ".join(s.split()) for s in SENTENCES}
    for name in ("typos", "punctuation", "add positive phrases", "change names", "change locations",
                 "change numbers"):
        g = suite[suite.functionality == name]
        assert any(json.loads(m)["source"] == "real" and x[0] in pool for m, x in zip(g.meta, g.inputs)), name


def test_ner_filled_with_templates():
    df = generate_sent_suite(["The movie was great.", "It was bad."], seed=1, cases_per_functionality=15)
    for name in ("change names", "change locations", "change numbers"):
        g = df[df.functionality == name]
        assert len(g) == 15
        assert all(json.loads(m)["source"] == "template" for m in g.meta)
    fmt.validate_suite(df, "generated", label_set=(0, 1, 2))


def test_empty_pool():
    df = generate_sent_suite([], seed=0, cases_per_functionality=5)
    assert (df.groupby("functionality").size() == 5).all()
    fmt.validate_suite(df, "generated", label_set=(0, 1, 2))


def test_determinism(suite):
    again = generate_sent_suite(list(SENTENCES), seed=7, cases_per_functionality=N)
    assert again.equals(suite)


def test_different_seed_differs(suite):
    other = generate_sent_suite(SENTENCES, seed=8, cases_per_functionality=N)
    assert not other.equals(suite)
    differing = sum(list(a) != list(b) for a, b in zip(suite.inputs, other.inputs))
    assert differing > len(suite) // 2
    for name in ("sentiment words in context", "protected: race", "typos"):
        a = suite[suite.functionality == name].inputs.map(tuple).tolist()
        b = other[other.functionality == name].inputs.map(tuple).tolist()
        assert a != b, name


def test_max_perturbations():
    df = generate_sent_suite(SENTENCES, seed=3, cases_per_functionality=6, max_perturbations=1)
    assert (df[df.test_type != "MFT"].inputs.map(len) == 2).all()
    df = generate_sent_suite(SENTENCES, seed=3, cases_per_functionality=6, max_perturbations=5)
    assert df[df.test_type != "MFT"].inputs.map(len).max() == 6


def test_bad_arguments():
    with pytest.raises(ValueError):
        generate_sent_suite(SENTENCES, seed=0, cases_per_functionality=0)
    with pytest.raises(ValueError):
        generate_sent_suite(SENTENCES, seed=0, cases_per_functionality=3, max_perturbations=0)


def test_save_and_load_roundtrip(suite, tmp_path):
    path = tmp_path / "suite.parquet"
    declared = [{k: c[k] for k in ("functionality", "capability", "test_type", "description")}
                for c in sent_catalogue()]
    fmt.save_suite(suite, path, declared=declared)
    back = fmt.load_suite(path, label_set=(0, 1, 2))
    assert len(back) == len(suite)
    assert [list(x) for x in back.inputs] == [list(x) for x in suite.inputs]


def test_templates_grammar(suite):
    for inputs in suite.inputs:
        for x in inputs:
            assert "{" not in x and "}" not in x and "\x00" not in x and "  " not in x
            assert not re.search(r"\ba [aeiou]", x.lower().replace("a one", "")), x


# ----------------------------------------------------------------- lexicons
def test_lexicons_have_no_duplicates():
    for name in dir(lex):
        val = getattr(lex, name)
        if name.isupper() and isinstance(val, tuple):
            assert len(val) == len(set(val)), name
    assert not set(lex.POSITIVE_ADJS) & set(lex.NEGATIVE_ADJS)
    assert not set(lex.POSITIVE_ADJS) & set(lex.NEUTRAL_ADJS)
    assert not set(lex.CITIES) & set(lex.COUNTRIES)


# ----------------------------------------------------------------- perturbations
def rng(seed=0):
    return np.random.default_rng(seed)


def test_typos():
    text = "The plot is good."
    out = perturb.typos(text, rng(), n=3)
    assert len(out) == 3 and len(set(out)) == 3
    for o in out:
        assert o != text and len(o) == len(text) and sorted(o) == sorted(text)
        diff = [i for i in range(len(text)) if text[i] != o[i]]
        assert len(diff) == 2 and diff[1] == diff[0] + 1
        assert text[diff[0]].isalpha() and text[diff[1]].isalpha()
    assert perturb.typos(text, rng(5)) == perturb.typos(text, rng(5))
    assert perturb.typos("1 2 3 !", rng()) == []
    assert perturb.typos("aa bb", rng()) == []


def test_contractions():
    assert perturb.contractions("It is not a good movie.", rng()) == ["It isn't a good movie."]
    assert perturb.contractions("I didn't like it. It's awful!", rng()) == ["I did not like it. It is awful!"]
    assert perturb.contractions("You won\u2019t need it.", rng()) == ["You will not need it."]
    assert perturb.contractions("We are sure it isn't bad.", rng()) == [
        "We are sure it is not bad.", "We're sure it isn't bad."]
    assert perturb.contractions("It cannot be said.", rng()) == ["It can't be said."]
    assert perturb.contractions("It's been a while.", rng()) == []  # "it has been", not "it is been"
    assert perturb.contractions("They have a point.", rng()) == []  # "have" as a main verb stays
    assert perturb.contractions("They have seen it.", rng()) == ["They've seen it."]
    assert perturb.contractions("No contraction here.", rng()) == []


def test_punctuation():
    assert perturb.punctuation("Great film!!", rng()) == ["Great film", "Great film."]
    assert perturb.punctuation("Great film.", rng()) == ["Great film"]
    assert perturb.punctuation("Great film", rng()) == ["Great film."]
    assert perturb.punctuation("...", rng()) == []


def test_change_names():
    text = "John said Maria loved the film."
    out = perturb.change_names(text, rng(), n=3)
    assert len(out) == 3
    for o in out:
        assert o != text
        words = set(re.findall(r"\w+", o)) - set(re.findall(r"\w+", text))
        assert len(words) == 1 and words.pop() in lex.FIRST_NAMES
    assert perturb.change_names(text, rng(1)) == perturb.change_names(text, rng(1))
    assert perturb.change_names("Nobody is named here.", rng()) == []
    assert perturb.change_names("johnny and mary", rng()) == []  # whole, capitalised words only


def test_change_locations():
    text = "Shot in New York and set in South Korea."
    out = perturb.change_locations(text, rng(), n=3)
    assert len(out) == 3
    for o in out:
        assert o != text
        city_changed = "New York" not in o and "South Korea" in o
        country_changed = "South Korea" not in o and "New York" in o
        assert city_changed or country_changed
        if city_changed:
            assert any(f"Shot in {c} and" in o for c in lex.CITIES)
        else:
            assert any(f"set in {c}." in o for c in lex.COUNTRIES)
    assert perturb.change_locations("It was made on Mars.", rng()) == []


def test_change_numbers():
    text = "It runs 120 minutes and costs 3.5 million."
    out = perturb.change_numbers(text, rng(), n=3)
    assert len(out) == 3
    for o in out:
        m = re.match(r"It runs (\d+) minutes and costs 3\.5 million\.$", o)
        assert m, o
        v = int(m.group(1))
        assert v != 120 and 96 <= v <= 144
    assert perturb.change_numbers("I gave it 3 stars.", rng()) == []  # no other integer within 20%
    assert perturb.change_numbers("Rated 4.5 at 10:30 in 3D.", rng()) == []
    assert perturb.change_numbers("No numbers.", rng()) == []
    assert perturb.change_numbers(text, rng(2)) == perturb.change_numbers(text, rng(2))


def test_add_phrases():
    pos = perturb.add_positive_phrase("The movie was fine", rng(), n=2)
    assert len(pos) == 2
    for o in pos:
        assert o.startswith("The movie was fine. ") and o[len("The movie was fine. "):] in lex.POSITIVE_PHRASES
    neg = perturb.add_negative_phrase("Fine movie!", rng(), n=3)
    assert len(neg) == 3 and len(set(neg)) == 3
    for o in neg:
        assert o.startswith("Fine movie! ") and o[len("Fine movie! "):] in lex.NEGATIVE_PHRASES
    assert perturb.add_positive_phrase("   ", rng()) == []
