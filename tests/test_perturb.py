"""Tests for the perturbation library (beluga.suites.perturb, with the negation of
beluga.suites.negation): the registry (every perturbation callable by name with
parameters), the properties every perturbation has, the behaviour of each one (typos,
contractions, punctuation, names, locations, numbers, phrases, negation, URLs, handles,
synonyms, antonyms) and their word lists (beluga.suites.lexicons)."""

import ast
import dataclasses
import inspect
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from beluga.core.errors import ConfigError  # noqa: E402
from beluga.suites import lexicons as lex  # noqa: E402
from beluga.suites import perturb as P  # noqa: E402


def rng(seed=0):
    return np.random.default_rng(seed)


# name -> (params, a text it applies to, a text it does not apply to)
CASES = {
    "typos": ({}, "The movie was great.", "1 2 3 !"),
    "contractions": ({}, "It is not a good movie.", "No contraction here."),
    "punctuation": ({}, "Great film!!", "..."),
    "change_names": ({}, "John met Mary in the park.", "Nobody is named here."),
    "change_locations": ({}, "I saw it in Paris, France.", "It was made on Mars."),
    "change_numbers": ({}, "I watched it 100 times.", "No numbers."),
    "add_phrase": ({"phrases": ["Wow.", "Meh.", "Fine."]}, "Good movie", "   "),
    "add_positive_phrase": ({}, "Good movie", ""),
    "add_negative_phrase": ({}, "Good movie", " "),
    "add_negation": ({}, "The movie is great.", "Great movie!"),
    "remove_negation": ({}, "The movie is not great.", "The movie is great."),
    "add_url": ({}, "Great movie!", "  "),
    "add_handle": ({}, "Great movie!", ""),
    "synonyms": ({}, "The movie was great.", "I like it."),
    "antonyms": ({}, "I loved it.", "I like it."),
}

CORPUS = [
    "The movie was great.",
    "I didn't like it at all.",
    "What a waste of two hours!",
    "It's not bad, but it isn't good either.",
    "The acting is wooden and the plot is thin.",
    "A charming, funny and warm film",
    "Nobody will remember this one next year.",
    "I can't recommend it enough.",
    "The director does not know what to do with his cast.",
    "You're going to love the ending.",
    "There is nothing new here.",
    "Beautifully shot and wonderfully acted.",
    "It should have been much shorter.",
    "I am not sure what the point was.",
    "We have seen this story a hundred times before.",
    "Sadly, it's a mess from start to finish.",
    "John gave a wonderful performance in London.",
    "It runs 148 minutes and feels even longer.",
    "When I saw it, I loved it.",
    "She never liked the soundtrack.",
    "GOOD movie, BAD ending",
    "",
    "   ",
    "!!!",
]


def test_every_registered_perturbation_is_tested():
    assert set(CASES) == set(P.PERTURBATIONS)


# ------------------------------------------------------------------ every perturbation
@pytest.mark.parametrize("name", list(CASES))
def test_applies_and_returns_distinct_changed_strings(name):
    params, text, _ = CASES[name]
    out = P.perturb(name, text, rng(), **params)
    assert out, name
    assert all(isinstance(o, str) and o and o != text for o in out)
    assert len(set(out)) == len(out)


@pytest.mark.parametrize("name", list(CASES))
def test_empty_when_it_does_not_apply(name):
    params, _, text = CASES[name]
    assert P.perturb(name, text, rng(), **params) == []


@pytest.mark.parametrize("name", list(CASES))
def test_deterministic_for_a_seed(name):
    params = CASES[name][0]
    for text in [CASES[name][1], *CORPUS]:
        for seed in (0, 1, 42):
            assert P.perturb(name, text, rng(seed), **params) == P.perturb(name, text, rng(seed), **params)
            # the same through the function itself, with the checked parameters
            full = P.check_params(name, params, "test")
            assert P.PERTURBATIONS[name].fn(text, rng(seed), **full) == P.perturb(name, text, rng(seed), **params)


@pytest.mark.parametrize("name", list(CASES))
def test_never_the_unchanged_input(name):
    params = CASES[name][0]
    for text in [CASES[name][1], *CORPUS]:
        for seed in range(3):
            out = P.perturb(name, text, rng(seed), **params)
            assert text not in out and "" not in out, (name, text, out)
            assert len(set(out)) == len(out), (name, text, out)


@pytest.mark.parametrize("name", [n for n, p in P.PERTURBATIONS.items() if "n" in p.params])
def test_at_most_n(name):
    params = CASES[name][0]
    for text in [CASES[name][1], *CORPUS]:
        assert len(P.perturb(name, text, rng(), **params)) <= P.PERTURBATIONS[name].params["n"] == 3
        for n in (1, 2):
            assert len(P.perturb(name, text, rng(), **{**params, "n": n})) <= n


@pytest.mark.parametrize("name", [n for n, p in P.PERTURBATIONS.items() if "n" not in p.params])
def test_at_most_two_without_n(name):
    for text in [CASES[name][1], *CORPUS]:
        assert len(P.perturb(name, text, rng(), **CASES[name][0])) <= 2


# ----------------------------------------------------------------------- registry
def test_registry_entries():
    for name, p in P.PERTURBATIONS.items():
        assert p.name == name and callable(p.fn) and p.fn is getattr(P, name)
        assert p.kind in ("any", "pair")
        assert p.description and "\n" not in p.description
        assert isinstance(p.params, dict) and set(p.types) == set(p.params)
    with pytest.raises(dataclasses.FrozenInstanceError):
        P.PERTURBATIONS["typos"].name = "x"


def test_registry_defaults_are_the_functions_defaults():
    """A default given by lexicon name resolves to the very default of the function, so calling
    by name changes nothing for the existing perturbations."""
    for name, p in P.PERTURBATIONS.items():
        sig = inspect.signature(p.fn)
        assert list(sig.parameters)[:2] == ["text", "rng"]
        assert set(sig.parameters) - {"text", "rng"} == set(p.params), name
        if any(d is None for d in p.params.values()):
            continue
        full = P.check_params(name, {}, "test")
        for k, v in full.items():
            assert v == sig.parameters[k].default, (name, k)


def test_existing_perturbations_unchanged_by_the_registry():
    text = "John is not in Paris for 100 days, and it isn't fun"
    for name in ("typos", "contractions", "punctuation", "change_names", "change_locations", "change_numbers",
                 "add_positive_phrase", "add_negative_phrase"):
        assert P.perturb(name, text, rng(3)) == getattr(P, name)(text, rng(3))
    assert P.perturb("add_phrase", text, rng(3), phrases="POSITIVE_PHRASES", n=2) == \
        P.add_phrase(text, rng(3), lex.POSITIVE_PHRASES, n=2)


def test_unknown_perturbation_one_line():
    with pytest.raises(ConfigError) as e:
        P.get_perturbation("add_negatoin")
    msg = str(e.value)
    assert "\n" not in msg and "'add_negatoin'" in msg
    assert all(name in msg for name in P.PERTURBATIONS)
    with pytest.raises(ConfigError, match=r"^suite.yaml: functionality 'f': unknown perturbation 'nope' \(known: ty"):
        P.check_params("nope", {}, "suite.yaml: functionality 'f'")
    with pytest.raises(ConfigError, match="unknown perturbation"):
        P.perturb("nope", "text", rng())
    with pytest.raises(ConfigError, match="unknown perturbation"):
        P.get_perturbation(["typos"])
    assert P.get_perturbation("typos") is P.PERTURBATIONS["typos"]


@pytest.mark.parametrize("name, params, match", [
    ("typos", {"m": 3}, r"perturbation 'typos' has no parameter 'm' \(known: n\)"),
    ("punctuation", {"n": 3}, r"perturbation 'punctuation' has no parameter 'n' \(known: none\)"),
    ("typos", {"n": 0}, r"perturbation 'typos': parameter 'n': must be an integer from 1 to 100, got 0"),
    ("typos", {"n": True}, r"parameter 'n': must be an integer from 1 to 100, got True"),
    ("typos", {"n": "3"}, r"parameter 'n': must be an integer from 1 to 100, got '3'"),
    ("add_handle", {"digits": -1}, r"parameter 'digits': must be an integer from 0 to 18"),
    ("add_url", {"n": 10**9}, r"parameter 'n': must be an integer from 1 to 100, got 1000000000"),
    ("add_url", {"length": 10**11}, r"parameter 'length': must be an integer from 1 to 200"),
    ("add_url", {"position": "middle"}, r"parameter 'position': must be one of start, end, random, got 'middle'"),
    ("add_negation", {"contracted": "yes"}, r"parameter 'contracted': must be true or false, got 'yes'"),
    ("add_phrase", {}, r"parameter 'phrases' is required"),
    ("add_phrase", {"phrases": "nope"}, r"parameter 'phrases': unknown lexicon 'nope' \(known: movie_nouns, "),
    ("add_phrase", {"phrases": "synonyms"}, r"lexicon 'synonyms' is a list of word groups, not of words"),
    ("add_phrase", {"phrases": []}, r"parameter 'phrases': must be a non-empty list of strings"),
    ("add_phrase", {"phrases": ["ok", 3]}, r"parameter 'phrases': must be a non-empty list of strings"),
    ("change_names", {"names": "first_names x"}, r"unknown lexicon 'first_names x'"),
    ("contractions", {"pairs": "cities"}, r"lexicon 'cities' is a list of words, not of word groups"),
    ("contractions", {"pairs": [["is not"]]}, r"must be a non-empty list of \[word, word\] pairs"),
    ("synonyms", {"groups": [["good"]]}, r"must be a non-empty list of word groups"),
    ("synonyms", {"groups": ["good", "nice"]}, r"must be a non-empty list of word groups"),
    ("typos", [("n", 1)], r"perturbation 'typos': parameters must be a mapping"),
])
def test_bad_parameters_one_line(name, params, match):
    with pytest.raises(ConfigError, match=match) as e:
        P.check_params(name, params, "suite.yaml: functionality 'f'")
    msg = str(e.value)
    assert msg.startswith("suite.yaml: functionality 'f': ") and "\n" not in msg and len(msg) < 1000


def test_bad_parameter_through_perturb():
    with pytest.raises(ConfigError, match=r"^perturb\('typos'\): perturbation 'typos' has no parameter 'x'"):
        P.perturb("typos", "Some text", rng(), x=1)


def test_defaults_filled():
    assert P.check_params("typos", {}, "t") == {"n": 3}
    assert P.check_params("typos", None, "t") == {"n": 3}
    assert P.check_params("typos", {"n": None}, "t") == {"n": 3}
    assert P.check_params("add_url", {"n": 1}, "t") == {"n": 1, "position": "end", "length": 10}
    full = P.check_params("add_handle", {"position": "end"}, "t")
    assert full == {"n": 3, "position": "end", "names": lex.FIRST_NAMES, "digits": 2}
    full = P.check_params("change_locations", {"cities": ["Oslo", "Lima"]}, "t")
    assert full == {"cities": ("Oslo", "Lima"), "countries": lex.COUNTRIES, "n": 3}
    assert P.PERTURBATIONS["add_url"].params == {"n": 3, "position": "end", "length": 10}  # not mutated


def test_lexicon_names_resolve():
    for value in ("positive_phrases", "POSITIVE_PHRASES", "Positive_Phrases"):
        assert P.check_params("add_phrase", {"phrases": value}, "t")["phrases"] is lex.POSITIVE_PHRASES
    assert P.check_params("synonyms", {"groups": "SYNONYMS"}, "t")["groups"] is lex.SYNONYMS
    assert P.check_params("antonyms", {}, "t")["pairs"] is lex.ANTONYMS
    assert P.check_params("contractions", {"pairs": "contractions"}, "t")["pairs"] is lex.CONTRACTIONS
    # a lexicon of the caller's (a spec's own) is looked up first
    mine = {"my_names": ["Zed", "Quinn"], "first_names": ["Ada"]}
    assert P.check_params("change_names", {"names": "my_names"}, "t", lexicons=mine)["names"] == ("Zed", "Quinn")
    assert P.check_params("change_names", {}, "t", lexicons=mine)["names"] == ("Ada",)
    with pytest.raises(ConfigError, match=r"unknown lexicon 'their_names' \(known: my_names, first_names, movie_"):
        P.check_params("change_names", {"names": "their_names"}, "t", lexicons=mine)
    # and the lists given by name or by value do the same thing
    text = "Good movie"
    assert P.perturb("add_phrase", text, rng(1), phrases="negative_phrases") == \
        P.perturb("add_phrase", text, rng(1), phrases=list(lex.NEGATIVE_PHRASES)) == \
        P.add_negative_phrase(text, rng(1))


def test_lexicon_registries():
    for key, val in lex.LEXICONS.items():
        assert key == key.lower() and getattr(lex, key.upper()) is val
        assert isinstance(val, tuple) and val and all(isinstance(w, str) for w in val)
    for key, val in lex.WORD_GROUPS.items():
        assert key == key.lower() and getattr(lex, key.upper()) is val
        assert isinstance(val, tuple) and all(isinstance(g, tuple) and len(g) >= 2 for g in val)
    assert not set(lex.LEXICONS) & set(lex.WORD_GROUPS)


# ------------------------------------------------------------------ docstring examples
@pytest.mark.parametrize("name", ["add_negation", "remove_negation", "add_url", "add_handle", "synonyms", "antonyms"])
def test_docstring_examples(name):
    """Each new perturbation documents two examples; they hold (a fresh default_rng(0) each)."""
    doc = inspect.getdoc(getattr(P, name))
    examples = re.findall(r"^>>> (.*)\n(.*)$", doc, re.M)
    assert len(examples) == 2, name
    for call, expected in examples:
        env = {name: getattr(P, name), "rng": rng(0)}
        assert eval(call, env) == ast.literal_eval(expected), call


# ----------------------------------------- typos, contractions, punctuation, names, numbers, phrases
def test_typos():
    text = "The plot is good."
    out = P.typos(text, rng(), n=3)
    assert len(out) == 3 and len(set(out)) == 3
    for o in out:
        assert o != text and len(o) == len(text) and sorted(o) == sorted(text)
        diff = [i for i in range(len(text)) if text[i] != o[i]]
        assert len(diff) == 2 and diff[1] == diff[0] + 1
        assert text[diff[0]].isalpha() and text[diff[1]].isalpha()
    assert P.typos(text, rng(5)) == P.typos(text, rng(5))
    assert P.typos("1 2 3 !", rng()) == []
    assert P.typos("aa bb", rng()) == []


def test_contractions():
    assert P.contractions("It is not a good movie.", rng()) == ["It isn't a good movie."]
    assert P.contractions("I didn't like it. It's awful!", rng()) == ["I did not like it. It is awful!"]
    assert P.contractions("You won\u2019t need it.", rng()) == ["You will not need it."]
    assert P.contractions("We are sure it isn't bad.", rng()) == [
        "We are sure it is not bad.", "We're sure it isn't bad."]
    assert P.contractions("It cannot be said.", rng()) == ["It can't be said."]
    assert P.contractions("It's been a while.", rng()) == []  # "it has been", not "it is been"
    assert P.contractions("They have a point.", rng()) == []  # "have" as a main verb stays
    assert P.contractions("They have seen it.", rng()) == ["They've seen it."]
    assert P.contractions("No contraction here.", rng()) == []


def test_punctuation():
    assert P.punctuation("Great film!!", rng()) == ["Great film", "Great film."]
    assert P.punctuation("Great film.", rng()) == ["Great film"]
    assert P.punctuation("Great film", rng()) == ["Great film."]
    assert P.punctuation("...", rng()) == []


def test_change_names():
    text = "John said Maria loved the film."
    out = P.change_names(text, rng(), n=3)
    assert len(out) == 3
    for o in out:
        assert o != text
        words = set(re.findall(r"\w+", o)) - set(re.findall(r"\w+", text))
        assert len(words) == 1 and words.pop() in lex.FIRST_NAMES
    assert P.change_names(text, rng(1)) == P.change_names(text, rng(1))
    assert P.change_names("Nobody is named here.", rng()) == []
    assert P.change_names("johnny and mary", rng()) == []  # whole, capitalised words only


def test_change_locations():
    text = "Shot in New York and set in South Korea."
    out = P.change_locations(text, rng(), n=3)
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
    assert P.change_locations("It was made on Mars.", rng()) == []


def test_change_numbers():
    text = "It runs 120 minutes and costs 3.5 million."
    out = P.change_numbers(text, rng(), n=3)
    assert len(out) == 3
    for o in out:
        m = re.match(r"It runs (\d+) minutes and costs 3\.5 million\.$", o)
        assert m, o
        v = int(m.group(1))
        assert v != 120 and 96 <= v <= 144
    assert P.change_numbers("I gave it 3 stars.", rng()) == []  # no other integer within 20%
    assert P.change_numbers("Rated 4.5 at 10:30 in 3D.", rng()) == []
    assert P.change_numbers("No numbers.", rng()) == []
    assert P.change_numbers(text, rng(2)) == P.change_numbers(text, rng(2))


def test_add_phrases():
    pos = P.add_positive_phrase("The movie was fine", rng(), n=2)
    assert len(pos) == 2
    for o in pos:
        assert o.startswith("The movie was fine. ") and o[len("The movie was fine. "):] in lex.POSITIVE_PHRASES
    neg = P.add_negative_phrase("Fine movie!", rng(), n=3)
    assert len(neg) == 3 and len(set(neg)) == 3
    for o in neg:
        assert o.startswith("Fine movie! ") and o[len("Fine movie! "):] in lex.NEGATIVE_PHRASES
    assert P.add_positive_phrase("   ", rng()) == []


# ------------------------------------------------------------------------- negation
@pytest.mark.parametrize("text, plain, contracted", [
    ("The movie is great.", "The movie is not great.", "The movie isn't great."),
    ("They were bored.", "They were not bored.", "They weren't bored."),
    ("I am happy.", "I am not happy.", "I am not happy."),
    ("It can be fun.", "It cannot be fun.", "It can't be fun."),
    ("You will love it.", "You will not love it.", "You won't love it."),
    ("It should have been much shorter.", "It should not have been much shorter.",
     "It shouldn't have been much shorter."),
    ("I have seen it twice.", "I have not seen it twice.", "I haven't seen it twice."),
    ("I have always loved it.", "I have not always loved it.", "I haven't always loved it."),
    ("I have a dog.", "I do not have a dog.", "I don't have a dog."),
    ("He has to go.", "He does not have to go.", "He doesn't have to go."),
    ("I did it.", "I did not do it.", "I didn't do it."),
    ("I do love it.", "I do not love it.", "I don't love it."),
    ("She loved the ending.", "She did not love the ending.", "She didn't love the ending."),
    ("I like it.", "I do not like it.", "I don't like it."),
    ("The plot makes sense.", "The plot does not make sense.", "The plot doesn't make sense."),
    ("Tom loves it.", "Tom does not love it.", "Tom doesn't love it."),
    ("I really liked it.", "I did not really like it.", "I didn't really like it."),
    ("I think it is good.", "I do not think it is good.", "I don't think it is good."),
    ("Watch it now!", "Do not watch it now!", "Don't watch it now!"),
    ("Is it good?", "Is it not good?", "Isn't it good?"),
    ("When I saw it, I loved it.", "When I saw it, I did not love it.", "When I saw it, I didn't love it."),
    ("The film, which is long, was good.", "The film, which is long, was not good.",
     "The film, which is long, wasn't good."),
    ("It's a good movie.", "It's not a good movie.", "It's not a good movie."),
    ("We'll see.", "We will not see.", "We won't see."),
    ("I've seen it.", "I have not seen it.", "I haven't seen it."),
    ("I'd watch it again.", "I would not watch it again.", "I wouldn't watch it again."),
    ("Wow. This movie is great.", "Wow. This movie is not great.", "Wow. This movie isn't great."),
    ("The acting was superb and the plot was thin.", "The acting was not superb and the plot was thin.",
     "The acting wasn't superb and the plot was thin."),
    ("The film is good\u2026 it\u2019s fine.", "The film is not good\u2026 it\u2019s fine.",
     "The film isn\u2019t good\u2026 it\u2019s fine."),
    ("How do I become an actor?", "How do I not become an actor?", "How don't I become an actor?"),
    ("If it rains, how much does it cost?", "If it rains, how much does it not cost?",
     "If it rains, how much doesn't it cost?"),
    ('"The plot is thin," she said.', '"The plot is not thin," she said.', '"The plot isn\'t thin," she said.'),
    # tokenised text (SST-2)
    ("it 's a charming journey .", "it 's not a charming journey .", "it 's not a charming journey ."),
    ("the film 's plot is thin and it does n't work .", "the film 's plot is not thin and it does n't work .",
     "the film 's plot is n't thin and it does n't work ."),
])
def test_add_negation(text, plain, contracted):
    assert P.perturb("add_negation", text, rng()) == [plain]
    assert P.perturb("add_negation", text, rng(), contracted=True) == [contracted]


@pytest.mark.parametrize("text", [
    "I don't like it.",                  # already negated
    "I am not sure.",
    "It is never boring.",
    "Nobody will remember it.",
    "The director does not know what to do with his cast.",
    "Great movie!",                      # no verb
    "A great love story.",               # "love" is a noun here
    "Movies like this are rare.",        # "like" is a preposition
    "The film that I saw was good.",     # a relative clause first: ambiguous
    "I hoped it would be good.",         # a main verb outside the list: not the subordinate "would"
    "Loved it.",                         # no subject
    "One of the smartest takes on the genre.",         # "takes" is a noun here
    "A movie that reminds us how good cinema can be.",  # "can" is in an embedded clause
    "",
])
def test_add_negation_does_not_apply(text):
    assert P.add_negation(text, rng()) == []
    assert P.add_negation(text, rng(), contracted=True) == []


def test_add_negation_wh_question_without_pronoun_subject():
    """"What is not Java?" reads wrong; "What isn't Java?" is fine."""
    assert P.add_negation("What is Java?", rng()) == []
    assert P.add_negation("What is Java?", rng(), contracted=True) == ["What isn't Java?"]
    assert P.add_negation("Human Behavior: What is the one lie you tell?", rng()) == []  # ':' ends a sentence


@pytest.mark.parametrize("text, expected", [
    ("The acting isn't good.", "The acting is good."),
    ("The film isn\u2019t good.", "The film is good."),
    ("It is not bad.", "It is bad."),
    ("It's not bad.", "It's bad."),
    ("I am not sure.", "I am sure."),
    ("It cannot be said.", "It can be said."),
    ("I can not believe it.", "I can believe it."),
    ("I can't wait.", "I can wait."),
    ("It won't work.", "It will work."),
    ("You shouldn't watch it.", "You should watch it."),
    ("I do not like it.", "I like it."),
    ("I don't like it.", "I like it."),
    ("She does not like the ending.", "She likes the ending."),
    ("She doesn't really like it.", "She really likes it."),
    ("He didn't enjoy it.", "He enjoyed it."),
    ("He doesn't have a clue.", "He has a clue."),
    ("He did not do it.", "He did it."),
    ("Don't miss it!", "Miss it!"),
    ("Don't be silly.", "Be silly."),
    ("Doesn't it look great?", "Does it look great?"),
    ("Isn't it great?", "Is it great?"),
    ("I did not grok it.", "I did grok it."),  # a verb outside the list keeps its auxiliary
    ("I don't.", "I do."),
    ("I have never seen it.", "I have seen it."),
    ("She never liked the soundtrack.", "She liked the soundtrack."),
    ("They are not good, and it isn't fun.", "They are good, and it isn't fun."),  # the first one only
    # tokenised text (SST-2)
    ("it does n't work .", "it works ."),
    ("it wo n't work .", "it will work ."),
    ("i ca n't wait .", "i can wait ."),
    ("it is n't funny .", "it is funny ."),
    ("you 're not alone .", "you 're alone ."),
])
def test_remove_negation(text, expected):
    assert P.perturb("remove_negation", text, rng()) == [expected]


@pytest.mark.parametrize("text", [
    "The movie is great.", "There is no plot.", "Nothing happens.", "Nobody came.",
    "It is not only funny but also smart.", "Never again.", "Not bad.", "",
])
def test_remove_negation_does_not_apply(text):
    assert P.remove_negation(text, rng()) == []


def test_negation_round_trip():
    for text in ["The movie is great.", "She loved the ending.", "I like it.", "It can be fun.",
                 "The plot makes sense.", "You will love it."]:
        for contracted in (False, True):
            (neg,) = P.add_negation(text, rng(), contracted=contracted)
            assert P.remove_negation(neg, rng()) == [text]


# ------------------------------------------------------------------ URLs and handles
URL = r"https://t\.co/[A-Za-z0-9]{%d}"


def test_add_url_shape_and_positions():
    text = "Great movie!"
    out = P.perturb("add_url", text, rng())
    assert len(out) == 3
    assert all(re.fullmatch(re.escape(text) + " " + URL % 10, o) for o in out)
    out = P.perturb("add_url", text, rng(), position="start", length=6, n=2)
    assert len(out) == 2 and all(re.fullmatch(URL % 6 + " " + re.escape(text), o) for o in out)
    text = "The plot is thin and the acting is bad."
    out = P.perturb("add_url", text, rng(), position="random", n=3)
    assert len(out) == 3
    for o in out:
        urls = re.findall(URL % 10, o)
        assert len(urls) == 1
        assert re.sub(" ?" + URL % 10 + " ?", " ", o).strip() == text  # inserted at a word boundary
    assert P.perturb("add_url", text, rng(5)) != P.perturb("add_url", text, rng(6))


def test_add_url_keeps_surrounding_whitespace():
    (out,) = P.perturb("add_url", "  Fine.\n", rng(), n=1)
    assert re.fullmatch(r"  Fine\. " + URL % 10 + "\n", out)


def test_add_handle_shape_and_positions():
    text = "Loved it."
    out = P.perturb("add_handle", text, rng())
    assert len(out) == 3
    for o in out:
        m = re.fullmatch(r"@([A-Za-z]+)(\d\d) " + re.escape(text), o)
        assert m and m.group(1) in lex.FIRST_NAMES
    assert len({o.split()[0][:-2] for o in out}) == 3  # different names
    out = P.perturb("add_handle", text, rng(), position="end", digits=0)
    assert all(o.startswith(text + " @") and o.split("@")[1] in lex.FIRST_NAMES for o in out)
    out = P.perturb("add_handle", text, rng(), names=["Mary Jane", "Baha'i"], digits=3, n=5)
    assert sorted(re.sub(r"\d", "", o.split()[0]) for o in out) == ["@Bahai", "@MaryJane"]
    out = P.perturb("add_handle", "a b c d e f", rng(), position="random", n=3)
    assert all(re.sub(r" ?@\w+ ?", " ", o).strip() == "a b c d e f" for o in out)


# -------------------------------------------------------------- synonyms and antonyms
def _diff_words(a: str, b: str) -> list[tuple[str, str]]:
    wa, wb = a.split(), b.split()
    assert len(wa) == len(wb), (a, b)
    return [(x, y) for x, y in zip(wa, wb) if x != y]


def _group_of(word: str, groups) -> set[str]:
    return {w for g in groups for w in g if word.lower() in g}


def test_synonyms_replace_one_word_and_keep_the_rest():
    for text in ["The movie was great.", "Honestly, the plot is boring and the script is a mess.",
                 "It was a terrible, terrible mistake."]:
        for seed in range(5):
            out = P.perturb("synonyms", text, rng(seed))
            assert out
            changed = {x.strip(".,").lower() for o in out for x, _ in _diff_words(text, o)} - {"a", "an"}
            assert len(changed) == 1  # one word of the text (all its occurrences) per call
            for o in out:
                for x, y in _diff_words(text, o):
                    x, y = x.strip(".,"), y.strip(".,")
                    if x in ("a", "an"):  # "a terrible mistake" -> "an awful mistake"
                        continue
                    assert y.lower() in _group_of(x, lex.SYNONYMS) and y.lower() != x.lower()
                    assert x[0].isupper() == y[0].isupper()


def test_synonyms_case_articles_and_custom_groups():
    groups = [["good", "excellent"], ["movie", "film"]]
    assert P.perturb("synonyms", "It is a good thing.", rng(), groups=groups) == ["It is an excellent thing."]
    assert P.perturb("synonyms", "An excellent thing.", rng(), groups=groups) == ["A good thing."]
    assert P.perturb("synonyms", "Good thing.", rng(), groups=groups) == ["Excellent thing."]
    assert P.perturb("synonyms", "GOOD thing.", rng(), groups=groups) == ["EXCELLENT thing."]
    assert P.perturb("synonyms", "A good, good thing.", rng(), groups=groups) == ["An excellent, excellent thing."]
    assert P.perturb("synonyms", "goodness, gOOd, good-looking", rng(), groups=groups) == []  # whole words only
    assert P.perturb("synonyms", "The movie was great.", rng(), groups=[["great", "superb", "wonderful"]],
                     n=1) in (["The movie was superb."], ["The movie was wonderful."])
    assert P.synonyms("I like it.", rng()) == []
    # a capitalised word inside a sentence is a name or a title: left alone
    assert P.perturb("synonyms", "I watched Doctor Who with a doctor.", rng(), groups=[["doctor", "physician"]]) \
        == ["I watched Doctor Who with a physician."]
    assert P.perturb("synonyms", "Fine. Good show!", rng(), groups=groups) == ["Fine. Excellent show!"]
    assert P.perturb("synonyms", 'He said: "Good job."', rng(), groups=groups) == ['He said: "Excellent job."']
    assert P.perturb("synonyms", "The Good Wife", rng(), groups=groups) == []


def test_antonyms_both_directions_and_keep_the_rest():
    assert P.perturb("antonyms", "The acting was good.", rng()) == ["The acting was bad."]
    assert P.perturb("antonyms", "The acting was bad.", rng()) == ["The acting was good."]
    assert P.perturb("antonyms", "I loved it.", rng()) == ["I loved it.".replace("loved", "hated")]
    assert P.perturb("antonyms", "Hated it.", rng()) == ["Loved it."]
    assert P.perturb("antonyms", "It is an awful film.", rng()) == ["It is an excellent film."]
    assert P.perturb("antonyms", "It is a good film.", rng(), pairs=[["good", "awful"]]) == ["It is an awful film."]
    assert P.perturb("antonyms", "A dull plot.", rng(), pairs="ANTONYMS") == ["An exciting plot."]
    for a, b in lex.ANTONYMS:
        assert P.antonyms(f"It was {a} today.", rng()) == [f"It was {b} today."]
        assert P.antonyms(f"It was {b} today.", rng()) == [f"It was {a} today."]
    two = "The plot is interesting but the ending is sad."
    for seed in range(5):
        (out,) = P.perturb("antonyms", two, rng(seed))
        assert len(_diff_words(two, out)) == 1


def test_antonyms_several_partners():
    pairs = [["good", "bad"], ["good", "poor"]]
    out = P.perturb("antonyms", "A good film.", rng(), pairs=pairs)
    assert sorted(out) == ["A bad film.", "A poor film."]
    assert len(P.perturb("antonyms", "A good film.", rng(), pairs=pairs, n=1)) == 1


def test_word_lists():
    assert len(lex.SYNONYMS) >= 60 and len(lex.ANTONYMS) >= 60
    syn_words = [w for g in lex.SYNONYMS for w in g]
    assert len(syn_words) == len(set(syn_words))  # no word in two groups
    assert all(len(g) >= 2 for g in lex.SYNONYMS)
    assert all(len(p) == 2 and p[0] != p[1] for p in lex.ANTONYMS)
    ant_words = [w for p in lex.ANTONYMS for w in p]
    assert len(ant_words) == len(set(ant_words))
    for w in syn_words + ant_words:
        assert re.fullmatch(r"[a-z]+", w), w
    # a word and its antonym are never synonyms of each other
    for a, b in lex.ANTONYMS:
        assert b not in _group_of(a, lex.SYNONYMS)
    # ambiguous words are left out (see lexicons.py)
    for w in ("like", "little", "moving", "right", "kind", "well", "hard", "light"):
        assert w not in syn_words and w not in ant_words


def test_lexicons_have_no_duplicates():
    for name in dir(lex):
        val = getattr(lex, name)
        if name.isupper() and isinstance(val, tuple):
            assert len(val) == len(set(val)), name
    assert not set(lex.POSITIVE_ADJS) & set(lex.NEGATIVE_ADJS)
    assert not set(lex.POSITIVE_ADJS) & set(lex.NEUTRAL_ADJS)
    assert not set(lex.CITIES) & set(lex.COUNTRIES)


def test_negation_recipe_can_fail_and_the_old_one_warns(tmp_path):
    """docs/TESTING_MODELS.md's negation recipe: DIR not_negative on negated negative sentences is written (with the
    task it was built for) and scores a model that keeps the negated sentence negative as a failure; the
    monotonic DIR the docs used before says, when built, which cases it filters."""
    import pandas as pd

    from beluga.core.tasks import SENT
    from beluga.score.outcomes import FAIL, score_cases
    from beluga.suites.authoring import perturb_command
    from beluga.suites.format import load_suite

    src = tmp_path / "negative.txt"
    src.write_text("The plot was extremely predictable.\nI hated the ending.\n")
    text = perturb_command(str(src), "add_negation", "DIR", "not_negative", str(tmp_path / "neg.parquet"))
    assert "(DIR, not_negative): 2 cases" in text and "filtered" not in text
    suite = load_suite(tmp_path / "neg.parquet")
    assert suite.attrs["task_type"] == "sent"
    assert "The plot was not extremely predictable." in [x for xs in suite.inputs for x in xs]
    preds = pd.DataFrame([(c, j, [0.99, 0.01]) for c, xs in zip(suite.case_id, suite.inputs) for j in range(len(xs))],
                         columns=["case_id", "input_idx", "probs"])
    assert set(score_cases(suite, preds, SENT)["status"]) == {FAIL}
    old = perturb_command(str(src), "add_negation", "DIR", "monotonic", str(tmp_path / "old.parquet"),
                          expect_params=["increasing=false"])
    assert "when tested, a case whose original's confidence is >= 1 - tolerance 0.0 is filtered" in old
