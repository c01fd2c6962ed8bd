"""The packaged NLI suite spec nli_default (issue 40, scope 4): it validates, renders offline and
deterministically, declares its classes and test types, and its labels are right by rule (HANS's word-overlap
heuristics, negation, antonyms, taxonomy, numbers, names); ``task: nli`` in the spec engine (premise /
hypothesis templates, ``apply_to``); the ``not_eq`` expectation (NLI's "not entailment") from spec to score and
training target; the other packaged specs render as before."""

import hashlib
import json
import re

import pandas as pd
import pytest
import yaml
from conftest import REPO

from beluga.core.errors import ConfigError, SuiteError
from beluga.core.tasks import get_task_type
from beluga.score.expectations import case_status
from beluga.score.outcomes import FAIL, PASS
from beluga.suites.authoring import build_command
from beluga.suites.build import make_suite
from beluga.suites.format import load_suite, validate_suite
from beluga.suites.spec import PACKAGED, catalogue, load_sources, load_spec, render_spec, spec_from_data

NLI = get_task_type("nli")
LABEL = {name: k for k, name in NLI.suite_labels.items()}   # labels by name
ENT, NEU, CON = LABEL["entailment"], LABEL["neutral"], LABEL["contradiction"]
CLASSES = {"Heuristics", "Negation", "Vocabulary", "Taxonomy", "Numbers", "NER", "Robustness"}
HEURISTICS = ("lexical overlap", "subsequence", "constituent")


def digest(df: pd.DataFrame) -> str:
    return hashlib.sha256(df.to_json(orient="records").encode()).hexdigest()


@pytest.fixture(scope="module")
def spec():
    return load_spec("nli_default")


@pytest.fixture(scope="module")
def suite(spec):
    return render_spec(spec, load_sources(spec), cases_per_functionality=40)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def cases(suite, functionality):
    rows = suite[suite.functionality == functionality]
    assert len(rows), functionality
    return rows


# ---------------------------------------------------------------------------------- the spec and its catalogue
def test_the_spec_is_packaged_and_admitted_by_the_config_schema(spec):
    assert "nli_default" in PACKAGED and spec.task == "nli"
    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    generate = schema["properties"]["tasks"]["additionalProperties"]["properties"]["suite"]["properties"]["generate"]
    assert set(PACKAGED) <= set(generate["enum"])


def test_classes_functionalities_and_test_types(spec):
    funcs = catalogue(spec)
    assert len(funcs) == 20 and {f["capability"] for f in funcs} == CLASSES
    by_name = {f["functionality"]: f for f in funcs}
    for h in HEURISTICS:   # each HANS heuristic: its non-entailed cases and its entailed controls
        assert by_name[f"{h}, not entailed"]["expect"] == "not_eq"
        assert by_name[f"{h}, not entailed"]["expect_params"] == {"val": ENT}
        assert by_name[f"{h}, entailed"]["expect"] == "eq"
    assert {f["test_type"] for f in funcs} == {"MFT", "INV", "DIR"}
    assert [f["functionality"] for f in funcs if f["test_type"] == "DIR"] == ["negating an entailed hypothesis"]
    assert by_name["negating an entailed hypothesis"]["expect_params"] == {"label": ENT, "increasing": False,
                                                                         "tolerance": 0.0}
    assert {f["functionality"] for f in funcs if f["test_type"] == "INV"} == {
        "change names in premise and hypothesis", "typos in the hypothesis", "contractions"}


def test_renders_offline_deterministically_in_the_suite_format(spec, suite):
    df = render_spec(spec, load_sources(spec))   # the spec's defaults: 20 cases per functionality
    assert load_sources(spec) == {}   # templates only: nothing read from disk or the network
    validate_suite(df, "nli_default", tuple(NLI.suite_labels), None, head="classification")
    assert df.groupby("functionality").size().eq(20).all() and len(df) == 20 * 20
    assert df["inputs_b"].notna().all()
    assert digest(render_spec(spec, load_sources(spec))) == digest(df)
    assert digest(render_spec(spec, load_sources(spec), seed=1)) != digest(df)
    for _, r in suite.iterrows():   # no placeholder left, articles agree (typos aside)
        for x in list(r["inputs"]) + list(r["inputs_b"]):
            assert "{" not in x and "}" not in x and "  " not in x, x
        for x in (r["inputs"][0], r["inputs_b"][0]):
            assert not re.search(r"\ban? [a-z]", x) or not re.search(r"\ba [aeiou]|\ban [^aeiou]", x), x
    firsts = suite.apply(lambda r: (r["functionality"], r["inputs"][0], r["inputs_b"][0]), axis=1)
    assert not firsts.duplicated().any()


def test_every_mft_label_is_an_nli_label(suite):
    mft = suite[suite.test_type == "MFT"]
    labelled = mft[mft.expect == "eq"]
    assert labelled["labels"].notna().all()
    assert {int(x) for ls in labelled["labels"] for x in ls} <= set(NLI.suite_labels)
    hans = mft[mft.expect == "not_eq"]
    assert len(hans) and hans["labels"].isna().all()
    assert {json.loads(p)["val"] for p in hans["expect_params"]} == {ENT}


# ---------------------------------------------------------------------------------- labels right by rule
def test_hans_heuristics_hold_by_construction(suite):
    """Lexical overlap: every hypothesis word is a premise word; subsequence and constituent: the hypothesis
    is a contiguous run of the premise's words."""
    for h in HEURISTICS:
        for name in (f"{h}, not entailed", f"{h}, entailed"):
            for _, r in cases(suite, name).iterrows():
                p, hyp = words(r["inputs"][0]), words(r["inputs_b"][0])
                assert set(hyp) <= set(p), (name, r["inputs"][0], r["inputs_b"][0])
                if h != "lexical overlap":
                    joined = " " + " ".join(p) + " "
                    assert " " + " ".join(hyp) + " " in joined, (name, r["inputs"][0], r["inputs_b"][0])
    # the non-entailed lexical-overlap cases are not the premise itself, reordered words at most
    for _, r in cases(suite, "lexical overlap, not entailed").iterrows():
        assert words(r["inputs"][0]) != words(r["inputs_b"][0])


def _differing(a: str, b: str) -> tuple[str, str]:
    """The part where two sentences differ (their common prefix and suffix of words removed)."""
    x, y = a.rstrip(".").split(), b.rstrip(".").split()
    while x and y and x[0] == y[0]:
        x, y = x[1:], y[1:]
    while x and y and x[-1] == y[-1]:
        x, y = x[:-1], y[:-1]
    return " ".join(x), " ".join(y)


def test_negation_antonyms_and_taxonomy_by_rule(spec, suite):
    lex = spec.lexicons
    for _, r in cases(suite, "negated hypothesis").iterrows():
        assert " not " in r["inputs_b"][0] and " not " not in r["inputs"][0] and r["labels"] == [CON]
    for _, r in cases(suite, "negated premise").iterrows():
        assert " not " in r["inputs"][0] and " not " not in r["inputs_b"][0] and r["labels"] == [CON]
    antonyms = {tuple(e[:2]) for e in lex["antonym"] + lex["verb_antonym"]}
    for _, r in cases(suite, "antonym in the hypothesis").iterrows():
        assert _differing(r["inputs"][0], r["inputs_b"][0]) in antonyms and r["labels"] == [CON]
    synonyms = {tuple(e) for e in lex["synonym"] + lex["verb_synonym"]}
    for _, r in cases(suite, "synonym in the hypothesis").iterrows():
        assert _differing(r["inputs"][0], r["inputs_b"][0]) in synonyms and r["labels"] == [ENT]
    general = {tuple(e) for e in lex["hypernym"] + lex["city_country"]}
    article = re.compile(r"^an? ")
    for name, label, order in (("hypernym in the hypothesis", ENT, 1), ("hyponym in the hypothesis", NEU, -1)):
        for _, r in cases(suite, name).iterrows():
            a, b = (article.sub("", s) for s in _differing(r["inputs"][0], r["inputs_b"][0]))
            assert (a, b)[::order] in general and r["labels"] == [label], (name, a, b)


def _count_label(premise: str, hypothesis: str) -> int:
    """The label of "X has exactly N things." against "X has [exactly | more than | fewer than | at least] M
    things.", by arithmetic (a number in words read as its digits)."""
    digits = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven "
                                         "twelve".split())}

    def number(w: str) -> int:
        return digits[w] if w in digits else int(w)

    n = number(re.search(r" has exactly (\w+) ", premise).group(1))
    m = re.search(r" has (exactly |more than |fewer than |at least )?(\w+) ", hypothesis)
    rel, k = (m.group(1) or "exactly ").strip(), number(m.group(2))
    holds = {"exactly": n == k, "more than": n > k, "fewer than": n < k, "at least": n >= k}[rel]
    return ENT if holds else CON


def test_numbers_by_arithmetic(suite):
    seen = set()
    for name in ("counts", "more than, fewer than"):
        for _, r in cases(suite, name).iterrows():
            want = _count_label(r["inputs"][0], r["inputs_b"][0])
            assert r["labels"] == [want], (r["inputs"][0], r["inputs_b"][0], r["labels"])
            seen.add(want)
    assert seen == {ENT, CON}


def test_names_and_places_by_rule(suite):
    names = set(get_names())
    for _, r in cases(suite, "different people").iterrows():
        a, b = _differing(r["inputs"][0], r["inputs_b"][0])
        assert a in names and b in names and a != b and r["labels"] == [NEU]
    for _, r in cases(suite, "different places").iterrows():
        a, b = _differing(r["inputs"][0], r["inputs_b"][0])
        assert a != b and r["labels"] == [CON]
    for _, r in cases(suite, "change names in premise and hypothesis").iterrows():
        (p0, h0), perts = (r["inputs"][0], r["inputs_b"][0]), list(zip(r["inputs"][1:], r["inputs_b"][1:]))
        assert perts and r["labels"] is None
        for p, h in perts:   # one name replaced by another, the same in both sentences
            old, new = _differing(p0, p)
            assert old in names and new in names and old != new
            assert h == re.sub(rf"\b{old}\b", new, h0)


def get_names():
    from beluga.suites.templates import BUILTIN_LEXICONS

    return BUILTIN_LEXICONS["first_name"]


def test_the_dir_and_the_robustness_invs_perturb_what_they_say(suite):
    for _, r in cases(suite, "negating an entailed hypothesis").iterrows():
        assert len(r["inputs"]) >= 2 and set(r["inputs"]) == {r["inputs"][0]}   # the premise untouched
        assert " not " not in r["inputs_b"][0] and all(" not " in h for h in r["inputs_b"][1:])
        assert r["agg_fn"] == "all_except_first"
    for _, r in cases(suite, "typos in the hypothesis").iterrows():
        assert set(r["inputs"]) == {r["inputs"][0]}   # the premise untouched
        for h in r["inputs_b"][1:]:
            assert h != r["inputs_b"][0] and sorted(h) == sorted(r["inputs_b"][0])
    for _, r in cases(suite, "contractions").iterrows():
        for p, h in zip(r["inputs"][1:], r["inputs_b"][1:]):
            assert "n't" in p + h and p.replace("n't", " not") == r["inputs"][0]
            assert h.replace("n't", " not") == r["inputs_b"][0]


# ---------------------------------------------------------------------------------- building and training
def test_suite_build_writes_an_nli_suite_file(tmp_path):
    out = tmp_path / "nli.parquet"
    text = build_command("nli_default", str(out), cases=6)
    assert text.startswith("nli_default (nli): 120 cases in 20 functionalities, seed 0")
    back = load_suite(str(out), label_set=tuple(NLI.suite_labels))
    assert len(back) == 120 and back["functionality"].nunique() == 20
    again = tmp_path / "again.parquet"
    build_command("nli_default", str(again), cases=6)
    assert out.read_bytes() == again.read_bytes()


def test_suite_perturb_for_nli_pairs(tmp_path):
    """`suite perturb --task nli`: a premise / hypothesis table, the hypotheses perturbed."""
    from beluga.suites.authoring import perturb_command

    pd.DataFrame({"premise": ["The doctor near the lawyer laughed.", "Anna is a director from Paris."],
                  "hypothesis": ["The lawyer laughed.", "Anna is a director."]}).to_csv(tmp_path / "p.csv", index=False)
    perturb_command(str(tmp_path / "p.csv"), "add_negation", "DIR", "monotonic", str(tmp_path / "n.parquet"),
                    expect_params=["label=entailment", "increasing=false"], task="nli", column="premise,hypothesis",
                    apply_to="hypothesis")
    df = load_suite(str(tmp_path / "n.parquet"), label_set=(0, 1, 2))
    assert sorted(tuple(x) for x in df["inputs_b"]) == [("Anna is a director.", "Anna is not a director."),
                                                      ("The lawyer laughed.", "The lawyer did not laugh.")]
    assert all(len(set(x)) == 1 for x in df["inputs"])   # premises kept
    assert json.loads(df["expect_params"].iloc[0]) == {"increasing": False, "label": ENT}


def test_the_pipeline_renders_nli_default_for_an_nli_task():
    cfg = {"generate": "nli_default", "seed": 0, "cases_per_functionality": 8, "max_perturbations": 2,
           "max_words": 25}
    df, declared = make_suite(cfg, "nli", None)
    assert len(df) == 160 and len(declared) == 20
    with pytest.raises(ConfigError, match="is a nli suite spec; this task's type is 'para'"):
        make_suite(cfg, "para", None)


def test_training_streams_of_the_nli_suite(suite):
    """MFTs train their one-hot label, not_eq entailment its rest evenly ([0, 1/2, 1/2]), INVs and the DIR
    their pairs."""
    from beluga.train.streams import build_streams

    streams = build_streams(NLI, None, suite)
    assert set(streams) == {"MFT", "INV", "DIR"}
    targets = {(it.env, tuple(it.target)) for it in streams["MFT"]}
    half = 1 / 2
    assert ("lexical overlap, not entailed", (0.0, half, half)) in targets
    assert ("negated hypothesis", (0.0, 0.0, 1.0)) in targets
    assert ("hyponym in the hypothesis", (0.0, 1.0, 0.0)) in targets
    assert {it.env for it in streams["DIR"]} == {"negating an entailed hypothesis"}
    # the DIR trains what it scores: P(entailment) (its label), not the original's top class (SENT's / PARA's)
    assert {it.dir_class for it in streams["DIR"]} == {ENT}
    import numpy as np

    from beluga.train.batches import _make_batch

    batch = _make_batch("DIR", streams["DIR"][:3], np.random.default_rng(0))
    assert batch.kind == "dir" and batch.dir_class.tolist() == [ENT] * 3


# ---------------------------------------------------------------------------------- not_eq
def test_not_eq_scores_any_class_but_val():
    assert NLI.mft_target("not_eq", ENT) == [0.0, 0.5, 0.5]
    assert get_task_type("acceptability").mft_target("not_eq", 0) == [0.0, 1.0]
    for pred, want in ((ENT, FAIL), (NEU, PASS), (CON, PASS)):
        assert case_status("not_eq", {"val": ENT}, "all", [pred], [[0.2, 0.3, 0.5]], None) == want


def _one_case(expect: str, params: dict, labels=None) -> pd.DataFrame:
    return pd.DataFrame([{"case_id": "c", "functionality": "f", "capability": "C", "test_type": "MFT",
                          "inputs": ["The doctor near the lawyer slept."], "inputs_b": ["The lawyer slept."],
                          "labels": labels, "answers": None, "expect": expect, "expect_params": json.dumps(params),
                          "agg_fn": "all", "meta": None}])


def test_not_eq_in_a_suite_file_needs_val_and_no_labels():
    validate_suite(_one_case("not_eq", {"val": ENT}), "s.parquet", (0, 1, 2))
    with pytest.raises(SuiteError, match="field 'expect_params': expectation 'not_eq' needs 'val'"):
        validate_suite(_one_case("not_eq", {}), "s.parquet", (0, 1, 2))
    with pytest.raises(SuiteError, match="field 'expect_params': 'val' is 3, outside the task's label set"):
        validate_suite(_one_case("not_eq", {"val": 3}), "s.parquet", (0, 1, 2))
    with pytest.raises(SuiteError, match="field 'labels': expectation 'not_eq' rules out the class 'val'"):
        validate_suite(_one_case("not_eq", {"val": ENT}, [NEU]), "s.parquet", (0, 1, 2))


def _nli_spec(func: dict) -> dict:
    return {"spec_version": 1, "name": "mine", "task": "nli",
            "functionalities": [{"name": "f", "class": "C", "type": "MFT", "expect": "eq", **func}]}


GROUP = {"templates": [["{first_name} is {a:role}.", "{first_name} is not {a:role}."]]}


@pytest.mark.parametrize("func, message", [
    ({"expect": "not_eq", "templates": [GROUP]}, "field 'expect.val': not_eq needs val"),
    ({"expect": {"name": "not_eq", "val": "maybe"}, "templates": [GROUP]},
     "field 'expect.val': 'maybe' is not a label of task 'nli' (0 entailment, 1 neutral, 2 contradiction)"),
    ({"expect": {"name": "not_eq", "val": "entailment"}, "templates": [{**GROUP, "label": "neutral"}]},
     "field 'templates[0].label': not_eq rules out the class val; its groups have no label"),
    ({"templates": [{**GROUP, "label": "contradiction", "templates": ["{first_name} is {a:role}."]}]},
     "field 'templates[0].templates[0]': a nli template is [premise, hypothesis]"),
    ({"type": "INV", "expect": "inv", "templates": [{**GROUP, "perturb": {"name": "typos", "apply_to": "second"}}]},
     "field 'templates[0].perturb.apply_to': 'second' does not apply to a nli input (premise, hypothesis, both)"),
])
def test_bad_nli_specs_stop_in_one_line(func, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as e:
        spec_from_data(_nli_spec(func), "mine.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("suite spec mine.yaml: functionality 'f'")


@pytest.mark.parametrize("apply_to, premise_changes, hypothesis_changes", [
    (None, False, True), ("hypothesis", False, True), ("premise", True, False), ("both", True, True)])
def test_apply_to_premise_hypothesis_both(apply_to, premise_changes, hypothesis_changes):
    group = {"templates": [["{first_name} met {first_name2} in Paris.", "{first_name} met {first_name2}."]],
             "perturb": {"name": "change_locations" if apply_to != "both" else "change_names",
                         **({"apply_to": apply_to} if apply_to else {})}}
    if apply_to in (None, "hypothesis"):
        group["templates"] = [["{first_name} met {first_name2}.", "{first_name} met {first_name2} in Paris."]]
    s = spec_from_data(_nli_spec({"type": "INV", "expect": "inv", "templates": [group]}), "mine.yaml")
    df = render_spec(s, {}, cases_per_functionality=4)
    for _, r in df.iterrows():
        assert len(r["inputs"]) > 1
        assert any(p != r["inputs"][0] for p in r["inputs"][1:]) == premise_changes
        assert any(h != r["inputs_b"][0] for h in r["inputs_b"][1:]) == hypothesis_changes


# ---------------------------------------------------------------------------------- the other specs unchanged
#: SHA-256 of para_default / read_default rendered with 5 cases per functionality (seed 0) by the engine before
#: it learnt task nli (commit fb4055d): adding nli leaves them byte-identical (sent_default's cases are pinned in
#: tests/test_suite_spec.py)
BEFORE_NLI = {
    "para_default": "1d4f3460a81f234e5d52af758b2b313f09194fb927eda27fc8965672443ad29b",
    "read_default": "7776b3c31c1e7426aae308ba1b6ca68497892d4673e5ad20a84e49e1622bac7f",
}


@pytest.mark.parametrize("name", sorted(BEFORE_NLI))
def test_the_other_packaged_specs_render_as_before(name):
    s = load_spec(name)
    assert digest(render_spec(s, load_sources(s), cases_per_functionality=5)) == BEFORE_NLI[name]
