"""The packaged similarity and acceptability suite specs (issue 40): ``task: similarity`` in the spec engine
(sentence-pair templates, the regression's score expectations checked and rendered, gold-score labels) and
``task: acceptability`` (single sentences, CoLA's two classes by name); similarity_default and
acceptability_default validate, render offline and deterministically, declare their classes and test types, and
hold their expectations by construction; a rendered similarity suite goes through ``suite build`` and ``score``;
bad specs stop in one line; the other packaged specs render as before."""

import hashlib
import json
import re

import pandas as pd
import pytest
import yaml
from conftest import REPO

from beluga.cli import main
from beluga.core.errors import ConfigError
from beluga.core.tasks import get_task_type
from beluga.suites.authoring import build_command, perturb_command
from beluga.suites.build import make_suite
from beluga.suites.format import load_suite, validate_suite
from beluga.suites.spec import PACKAGED, catalogue, load_sources, load_spec, render_spec, spec_from_data

SIM = get_task_type("similarity")
ACC = get_task_type("acceptability")
ACC_LABEL = {name: k for k, name in ACC.suite_labels.items()}   # labels by name
SIM_CLASSES = {"Paraphrase", "Unrelated", "Negation", "Roles", "Numbers and places", "Robustness"}


def digest(df: pd.DataFrame) -> str:
    return hashlib.sha256(df.to_json(orient="records").encode()).hexdigest()


@pytest.fixture(scope="module")
def spec():
    return load_spec("similarity_default")


@pytest.fixture(scope="module")
def suite(spec):
    return render_spec(spec, load_sources(spec), cases_per_functionality=30)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def cases(suite, functionality):
    rows = suite[suite.functionality == functionality]
    assert len(rows), functionality
    return rows


# ---------------------------------------------------------------------------------- the similarity spec
def test_the_specs_are_packaged_and_admitted_by_the_config_schema(spec):
    assert {"similarity_default", "acceptability_default"} <= set(PACKAGED) and spec.task == "similarity"
    assert load_spec("acceptability_default").task == "acceptability"
    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    generate = schema["properties"]["tasks"]["additionalProperties"]["properties"]["suite"]["properties"]["generate"]
    assert set(PACKAGED) <= set(generate["enum"])


def test_classes_functionalities_and_expectations(spec):
    funcs = {f["functionality"]: f for f in catalogue(spec)}
    assert len(funcs) == 14 and {f["capability"] for f in funcs.values()} == SIM_CLASSES
    by_type = {t: {n for n, f in funcs.items() if f["test_type"] == t} for t in ("MFT", "INV", "DIR")}
    assert all(f["expect"] in ("score_near", "score_between") for n, f in funcs.items() if n in by_type["MFT"])
    assert {funcs[n]["expect"] for n in by_type["INV"]} == {"score_inv"}
    assert {funcs[n]["expect"] for n in by_type["DIR"]} == {"score_down", "score_up"}
    assert funcs["identical sentences"]["expect_params"] == {"tolerance": 0.5}
    assert funcs["active and passive voice"]["expect_params"] == {"min": 4.0}
    assert funcs["unrelated sentences"]["expect_params"] == {"tolerance": 1.0}
    assert funcs["negating one sentence"]["expect"] == "score_down"
    assert funcs["negating one sentence"]["expect_params"] == {"margin": 0.5}
    assert funcs["removing the negation"]["expect"] == "score_up"
    assert by_type["INV"] == {"typos in one sentence", "change names in both sentences", "order of the sentences"}


def test_renders_offline_deterministically_in_the_suite_format(spec, suite):
    df = render_spec(spec, load_sources(spec))   # the spec's defaults: 20 cases per functionality
    assert load_sources(spec) == {}   # templates only: nothing read from disk or the network
    validate_suite(df, "similarity_default", None, None, head="regression")
    assert df.groupby("functionality").size().eq(20).all() and len(df) == 14 * 20
    assert df["inputs_b"].notna().all()
    assert digest(render_spec(spec, load_sources(spec))) == digest(df)
    assert digest(render_spec(spec, load_sources(spec), seed=1)) != digest(df)
    for _, r in suite.iterrows():   # no placeholder left
        for x in list(r["inputs"]) + list(r["inputs_b"]):
            assert "{" not in x and "}" not in x and "  " not in x, x
    with pytest.raises(Exception, match="does not apply to a classification head"):
        validate_suite(df, "similarity_default", (0, 1), None, head="classification")


def test_mft_labels_are_gold_scores_by_rule(suite):
    identical = cases(suite, "identical sentences")
    assert all(list(r.inputs) == list(r.inputs_b) for r in identical.itertuples())
    assert {x for ls in identical["labels"] for x in ls} == {5}
    unrelated = cases(suite, "unrelated sentences")
    assert {x for ls in unrelated["labels"] for x in ls} == {0}
    for r in unrelated.itertuples():   # no content word shared
        shared = set(words(r.inputs[0])) & set(words(r.inputs_b[0])) - {"a", "an", "the", "in", "is"}
        assert not shared, (r.inputs[0], r.inputs_b[0])
    others = suite[suite.test_type != "MFT"]
    assert others["labels"].isna().all()
    for r in cases(suite, "active and passive voice").itertuples():   # the same content words
        a, b = set(words(r.inputs[0])), set(words(r.inputs_b[0])) - {"was", "by"}
        assert b <= a | {"the"} and " was " in r.inputs_b[0] and " by " in r.inputs_b[0], (a, b)


NUMBERS = {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
           "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}


def test_number_words_and_contractions_by_rule(suite):
    for r in cases(suite, "number words and digits").itertuples():
        a, b = words(r.inputs[0]), words(r.inputs_b[0])
        diff = [(x, y) for x, y in zip(a, b) if x != y]
        assert len(a) == len(b) and len(diff) == 1
        x, y = diff[0]
        assert NUMBERS.get(x) == y or NUMBERS.get(y) == x, diff
    for r in cases(suite, "contractions").itertuples():
        assert r.inputs[0].replace("is not", "isn't").replace("did not", "didn't") == r.inputs_b[0]


def test_the_dirs_and_invs_perturb_what_they_say(suite):
    for r in cases(suite, "negating one sentence").itertuples():
        assert r.inputs[0] == r.inputs_b[0] and all(x == r.inputs[0] for x in r.inputs)   # the first kept
        assert all(" not " in p and " not " not in r.inputs_b[0] for p in r.inputs_b[1:])
    for r in cases(suite, "removing the negation").itertuples():
        assert " not " in r.inputs_b[0] and all(p == r.inputs[0] for p in r.inputs_b[1:])
    for r in cases(suite, "swapped roles").itertuples():
        assert r.inputs[0] == r.inputs_b[0] and list(r.inputs_b) == [r.inputs_b[0]] * len(r.inputs_b)
        for p in r.inputs[1:]:   # the same words, another order
            assert sorted(words(p)) == sorted(words(r.inputs[0])) and p != r.inputs[0]
    for name in ("changed number", "changed city"):
        for r in cases(suite, name).itertuples():
            assert r.inputs[0] == r.inputs_b[0] and all(p != r.inputs_b[0] for p in r.inputs_b[1:])
            assert all(x == r.inputs[0] for x in r.inputs)
    for r in cases(suite, "typos in one sentence").itertuples():
        assert all(x == r.inputs[0] for x in r.inputs)
        assert all(len(p) == len(r.inputs_b[0]) and p != r.inputs_b[0] for p in r.inputs_b[1:])
    for r in cases(suite, "change names in both sentences").itertuples():
        name = r.inputs[0].split()[0]
        for a, b in zip(r.inputs[1:], r.inputs_b[1:]):
            new = a.split()[0]
            assert new != name and new in b and name not in b
    for r in cases(suite, "order of the sentences").itertuples():
        assert (r.inputs[1], r.inputs_b[1]) == (r.inputs_b[0], r.inputs[0])


def test_suite_build_then_score_infers_the_task(tmp_path):
    out = tmp_path / "sts.parquet"
    text = build_command("similarity_default", str(out), cases=4)
    assert text.startswith("similarity_default (similarity): 56 cases in 14 functionalities, seed 0")
    back = load_suite(str(out))
    rows = [(r.case_id, j) for r in back.itertuples() for j in range(len(r.inputs))]
    # a model that scores every pair 5 except those with a negation: by construction of each functionality
    neg = {(r.case_id, j) for r in back.itertuples() for j, b in enumerate(r.inputs_b) if " not " in b}
    preds = pd.DataFrame([(c, j, 1.0 if (c, j) in neg else 5.0) for c, j in rows],
                         columns=["case_id", "input_idx", "score"])
    preds.to_csv(tmp_path / "p.csv", index=False)
    assert main(["score", "--suite", str(out), "--predictions", str(tmp_path / "p.csv"),
                 "--out", str(tmp_path / "o")]) == 0
    funcs = pd.read_csv(tmp_path / "o" / "functionalities.csv").set_index("functionality")
    run = json.loads((tmp_path / "o" / "run.json").read_text())
    assert run["arguments"]["task"] == "similarity"   # from the suite's metadata
    rate = funcs["failure_rate"]
    assert rate["identical sentences"] == 0.0 and rate["unrelated sentences"] == 1.0
    assert rate["negating one sentence"] == 0.0 and rate["removing the negation"] == 0.0
    assert rate["swapped roles"] == 1.0 and rate["typos in one sentence"] == 0.0
    assert rate["contractions"] == 0.0 and rate["change names in both sentences"] == 0.0   # no " not " moved
    assert funcs.at["changed number", "n_scored"] == 4


def test_suite_perturb_for_similarity_pairs(tmp_path):
    pd.DataFrame({"a": ["Anna helped the doctor.", "The lawyer trusted Omar."],
                  "b": ["Anna helped the doctor.", "The lawyer trusted Omar."]}).to_csv(tmp_path / "p.csv",
                                                                                       index=False)
    perturb_command(str(tmp_path / "p.csv"), "add_negation", "DIR", "score_down", str(tmp_path / "n.parquet"),
                    expect_params=["margin=0.5"], task="similarity", column="a,b", apply_to="second")
    df = load_suite(str(tmp_path / "n.parquet"))
    assert sorted(tuple(x) for x in df["inputs_b"]) == [("Anna helped the doctor.", "Anna did not help the doctor."),
                                                      ("The lawyer trusted Omar.", "The lawyer did not trust Omar.")]
    assert json.loads(df["expect_params"].iloc[0]) == {"margin": 0.5}


def test_the_pipeline_renders_similarity_default_for_a_similarity_task():
    cfg = {"generate": "similarity_default", "seed": 0, "cases_per_functionality": 3, "max_perturbations": 2,
           "max_words": 25}
    df, declared = make_suite(cfg, "similarity", None)
    assert len(df) == 42 and len(declared) == 14
    with pytest.raises(ConfigError, match="is a similarity suite spec; this task's type is 'nli'"):
        make_suite(cfg, "nli", None)


# ---------------------------------------------------------------------------------- bad specs
def _spec(task: str, func: dict) -> dict:
    return {"spec_version": 1, "name": "mine", "task": task, "sources": {"s": {"pool": ["text", "text_b"]}},
            "functionalities": [{"name": "f", "class": "C", "type": "MFT", "expect": "score_near", **func}]}


PAIR = {"templates": [["{first_name} is {a:role}.", "{first_name} is not {a:role}."]]}
ONE = {"templates": ["{first_name} is {a:role}."]}


@pytest.mark.parametrize("task, func, message", [
    ("similarity", {"expect": "eq", "templates": [{**PAIR, "label": 5}]},
     "field 'expect': 'eq' does not apply to a similarity spec, a regression scored on scores"),
    ("similarity", {"expect": {"name": "score_near", "val": 4, "tol": 1}, "templates": [PAIR]},
     "field 'expect': 'score_near' has no parameter 'tol' (it reads: tolerance, val)"),
    ("similarity", {"expect": {"name": "score_near", "val": "high"}, "templates": [PAIR]},
     "field 'expect': 'val' must be a finite number, got 'high'"),
    ("similarity", {"expect": {"name": "score_between"}, "templates": [PAIR]},
     "field 'expect': expectation 'score_between' needs 'min', 'max' or both"),
    ("similarity", {"expect": {"name": "score_between", "min": 4, "max": 2}, "templates": [PAIR]},
     "field 'expect': 'min' 4 is above 'max' 2"),
    ("similarity", {"expect": {"name": "score_near", "tolerance": -1, "val": 2}, "templates": [PAIR]},
     "field 'expect': 'tolerance' must be >= 0, got -1"),
    ("similarity", {"templates": [PAIR]},
     "field 'templates[0]': expectation 'score_near' needs a label per case: give the group a 'label'"),
    ("similarity", {"templates": [{**PAIR, "label": 7}]},
     "field 'templates[0].label': 7 is not a score label of task 'similarity' (an integer in 0..5"),
    ("similarity", {"templates": [{**PAIR, "label": "high"}]},
     "field 'templates[0].label': 'high' is not a score label of task 'similarity'"),
    ("similarity", {"type": "INV", "expect": "score_up", "templates": [PAIR]},
     "field 'expect': 'score_up' does not apply to INV tests (DIR)"),
    ("similarity", {"templates": [{**ONE, "label": 5}]},
     "field 'templates[0].templates[0]': a similarity template is [sentence 1, sentence 2]"),
    ("similarity", {"type": "INV", "expect": "score_inv",
                    "templates": [{**PAIR, "perturb": {"name": "typos", "apply_to": "premise"}}]},
     "field 'templates[0].perturb.apply_to': 'premise' does not apply to a similarity input (first, second, both)"),
    ("similarity", {"type": "DIR", "source": "s", "perturb": {"name": "typos"}},
     "field 'expect': expectation 'score_near' needs a label or answer per input, which a source's sentences do not "
     "have (give val, or use score_between / score_inv / score_up / score_down)"),
    ("nli", {"expect": {"name": "score_near", "val": 4}, "templates": [PAIR]},
     "field 'expect': 'score_near' is a regression's score expectation; a nli spec is scored on classes"),
    ("acceptability", {"expect": "eq", "templates": [{**PAIR, "label": "acceptable"}]},
     "field 'templates[0].templates[0]': a acceptability template is a string"),
    ("acceptability", {"expect": "eq", "templates": [{**ONE, "label": "grammatical"}]},
     "field 'templates[0].label': 'grammatical' is not a label of task 'acceptability' (0 unacceptable, "
     "1 acceptable)"),
    ("acceptability", {"type": "INV", "expect": "inv",
                       "templates": [{**ONE, "perturb": {"name": "typos", "apply_to": "second"}}]},
     "field 'templates[0].perturb.apply_to': 'second' does not apply to a acceptability input (none)"),
    ("acceptability", {"type": "INV", "expect": "inv", "templates": [{**ONE, "swap_pair": True}]},
     "field 'templates[0].swap_pair': swap_pair swaps the two segments of a symmetric pair"),
])
def test_bad_specs_stop_in_one_line(task, func, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as e:
        spec_from_data(_spec(task, func), "mine.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("suite spec mine.yaml: functionality 'f'")


def test_a_score_near_with_val_needs_no_label_and_stores_numbers():
    s = spec_from_data(_spec("similarity", {"expect": {"name": "score_near", "val": 4.5, "tolerance": 0.25},
                                            "templates": [PAIR]}), "mine.yaml")
    df = render_spec(s, {}, cases_per_functionality=3)
    assert df["labels"].isna().all()
    assert {json.loads(p)["val"] for p in df["expect_params"]} == {4.5}
    validate_suite(df, "mine", None, None, head="regression")


# ---------------------------------------------------------------------------------- the acceptability spec
def test_acceptability_default_renders_with_labels_by_name():
    s = load_spec("acceptability_default")
    funcs = {f["functionality"]: f for f in catalogue(s)}
    assert len(funcs) == 7 and {f["test_type"] for f in funcs.values()} == {"MFT", "INV", "DIR"}
    assert funcs["breaking the agreement"]["expect_params"] == {"label": ACC_LABEL["acceptable"],
                                                                "increasing": False, "tolerance": 0.0}
    df = render_spec(s, load_sources(s))
    assert load_sources(s) == {} and len(df) == 7 * 20 and df["inputs_b"].isna().all()
    validate_suite(df, "acceptability_default", tuple(ACC.suite_labels), None, head="classification")
    assert digest(render_spec(s, load_sources(s))) == digest(df)
    mft = df[df.test_type == "MFT"]
    ok = mft[mft.functionality == "simple sentences"]
    assert {x for ls in ok["labels"] for x in ls} == {ACC_LABEL["acceptable"]}
    bad = mft[mft.functionality != "simple sentences"]
    assert {x for ls in bad["labels"] for x in ls} == {ACC_LABEL["unacceptable"]}
    # English agreement by rule: a plural subject ends in -s and its verb does not, and the other way round
    for r in df[df.functionality == "subject-verb agreement"].itertuples():
        subj, verb = r.inputs[0].split()[1], r.inputs[0].split()[2]
        assert subj.endswith("s") == verb.endswith("s"), r.inputs[0]
    for r in df[df.functionality == "breaking the agreement"].itertuples():
        (s0, v0), (s1, v1) = ((x.split()[1], x.split()[2]) for x in r.inputs)
        assert s0 == s1 and s0.endswith("s") != v0.endswith("s") and s1.endswith("s") == v1.endswith("s"), r.inputs


# ---------------------------------------------------------------------------------- the other specs unchanged
#: SHA-256 of the packaged pair specs rendered with 5 cases per functionality (seed 0) by the engine before it
#: learnt tasks similarity and acceptability (commit d7f74d1): byte-identical after
BEFORE = {
    "para_default": "1d4f3460a81f234e5d52af758b2b313f09194fb927eda27fc8965672443ad29b",
    "read_default": "7776b3c31c1e7426aae308ba1b6ca68497892d4673e5ad20a84e49e1622bac7f",
    "nli_default": "ab3772dd4c15d9540ce3f019d264cb8f14e91f994def1a7161752ccc47e29b85",
}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_other_packaged_specs_render_as_before(name):
    s = load_spec(name)
    assert digest(render_spec(s, load_sources(s), cases_per_functionality=5)) == BEFORE[name]


def test_training_streams_of_the_rendered_suites():
    """similarity_default trains its MFTs on their values / bounds, its DIRs in their direction with the margin,
    its INVs as pairs; acceptability_default's MFTs train the one-hot class by name."""
    from beluga.train.streams import build_streams

    s = load_spec("similarity_default")
    streams = build_streams(SIM, None, render_spec(s, load_sources(s), cases_per_functionality=3))
    assert set(streams) == {"MFT", "INV", "DIR"}
    mft = {i.env: i for i in streams["MFT"]}
    assert mft["identical sentences"].target[0] == 5.0 and mft["unrelated sentences"].target[0] == 0.0
    dirs = {i.env: (i.direction, i.margin) for i in streams["DIR"]}
    assert dirs["negating one sentence"] == (-1, 0.5) and dirs["removing the negation"] == (1, 0.5)
    assert dirs["changed number"] == (-1, 0.25)
    assert {i.env for i in streams["INV"]} == {"typos in one sentence", "change names in both sentences",
                                               "order of the sentences"}
    a = load_spec("acceptability_default")
    streams = build_streams(ACC, None, render_spec(a, load_sources(a), cases_per_functionality=3))
    targets = {i.env: i.target for i in streams["MFT"]}
    assert targets["simple sentences"] == [0.0, 1.0] and targets["word order"] == [1.0, 0.0]


def test_a_similarity_spec_perturbs_real_pairs_from_a_pool():
    """A pool source of (sentence 1, sentence 2) pairs: each pair with its perturbations (apply_to: first)."""
    s = spec_from_data(_spec("similarity", {"type": "INV", "expect": {"name": "score_inv", "tolerance": 0.25},
                                            "source": "s", "perturb": {"name": "typos", "apply_to": "first"}}),
                       "mine.yaml")
    pool = pd.DataFrame({"text": ["A man is playing a guitar on the stage.", "Two dogs run across a wide field."],
                         "text_b": ["Someone plays a guitar on a stage.", "A pair of dogs is running in a field."]})
    df = render_spec(s, load_sources(s, pool), cases_per_functionality=2)
    assert sorted(r.inputs_b[0] for r in df.itertuples()) == sorted(pool["text_b"])
    for r in df.itertuples():
        assert all(b == r.inputs_b[0] for b in r.inputs_b) and all(a != r.inputs[0] for a in r.inputs[1:])
    assert {json.loads(p)["tolerance"] for p in df["expect_params"]} == {0.25}
    validate_suite(df, "mine", None, None, head="regression")
