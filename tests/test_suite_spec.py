"""Suite specs (issue 27): the default suite rendered from its spec is the old generator's, the default
sentiment suite's catalogue and cases, the PARA and READ specs, the documented example, lexicon extension, bad
specs in one line, `suite build` / `suite perturb`, and CheckList release tests reproduced from their recorded
templates."""

import gzip
import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, beluga_cli

from beluga.core.errors import ConfigError
from beluga.core.tasks import get_task_type
from beluga.suites import format as fmt
from beluga.suites.format import load_suite, validate_suite
from beluga.suites.spec import PACKAGED, catalogue, load_sources, load_spec, render_spec, spec_from_data

SHARED = REPO.parent / "shared" / "data"
DOC = REPO / "docs" / "SUITE_FORMAT.md"


def digest(df: pd.DataFrame) -> str:
    return hashlib.sha256(df.to_json(orient="records").encode()).hexdigest()


def rt_pool(n_train, n_val, n_test) -> list[str]:
    from beluga.data.iid import load_splits

    parts = load_splits({"source": "rotten_tomatoes", "n_train": n_train, "n_val": n_val, "n_test": n_test,
                         "seed": 42}, "classification", {0, 1})
    return list(parts["pool"]["text"])


#: the sent task's labels (the default sentiment suite's)
SENT_LABELS = get_task_type("sent").suite_labels


def sent_catalogue() -> list[dict]:
    """The default sentiment suite's functionalities: the catalogue of the packaged spec sent_default."""
    return catalogue(load_spec("sent_default"))


def render_sent_suite(sentences, seed, cases_per_functionality, max_perturbations=3, max_words=40) -> pd.DataFrame:
    """The default sentiment suite: the packaged spec sent_default rendered with ``sentences`` as its source
    ``reviews``."""
    return render_spec(load_spec("sent_default"), {"reviews": list(sentences)}, seed=seed,
                       cases_per_functionality=cases_per_functionality, max_perturbations=max_perturbations,
                       max_words=max_words)


HAND = [f"The {w} was {a} and I watched it in Paris with Maria {i} times." for i, (w, a) in
        enumerate([("movie", "great"), ("plot", "dull"), ("cast", "fine")] * 10)]

#: the old generator's output (beluga/suites/generator.py before it became a spec, commit 290cb23), as the
#: SHA-256 of the suite's records: the default run's pool and settings, the tiny config's, no real sentence,
#: a handful of sentences
OLD_GENERATOR = {
    "default": ((2400, 200, 1200), 7, 50, 2, 22, "cc1bad6f401514175715aeb186a7018ba4e5e439ba92ed50ec409d4102c0778f"),
    "tiny": ((40, 10, 20), 7, 4, 2, 40, "90717549acc3f86c312bfa7c55f58be38c7d37416e8a401c0f73c3adfdb9813c"),
    "empty": (None, 0, 7, 3, 40, "535eec38f28773e3fdc971566c8bf4482cc29602f19abf2af345c78826e2721e"),
    "hand": ("hand", 11, 5, 1, 40, "fd891b31e3cfe441b14cf445bee9960cf01ffde237f2046aca6227290d28c2bd"),
}


@pytest.mark.parametrize("case", sorted(OLD_GENERATOR))
def test_the_default_spec_renders_the_old_generators_cases(case):
    pool, seed, n, max_p, max_words, want = OLD_GENERATOR[case]
    sentences = [] if pool is None else HAND if pool == "hand" else rt_pool(*pool)
    df = render_sent_suite(sentences, seed=seed, cases_per_functionality=n, max_perturbations=max_p,
                           max_words=max_words)
    assert digest(df) == want


def test_default_catalogue_from_the_spec():
    cat = sent_catalogue()
    assert len(cat) == 20 and len({c["capability"] for c in cat}) == 7
    assert [c["test_type"] for c in cat].count("MFT") == 7 and [c["test_type"] for c in cat].count("DIR") == 5


# ---------------------------------------------------------------------------------- the default sentiment suite
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
    return render_sent_suite(SENTENCES, seed=7, cases_per_functionality=N)


#: generate_sent_suite's output (beluga/suites/generator.py before its removal: the packaged spec sent_default
#: rendered with the sentences as its source ``reviews``) for the settings the tests below use, as the SHA-256 of
#: the suite's records: (sentences, seed, cases_per_functionality, max_perturbations, digest)
GENERATED = {
    "fixture": (SENTENCES, 7, N, 3, "ccc647969f323477d8d90da22a202f61d49377b68b6b0dd95be32d33807947e1"),
    "other seed": (SENTENCES, 8, N, 3, "f50361cba029bc94efd4bc347c2eb4986fcf3770f5d61df58ffeeffc6ebd3e7d"),
    "two sentences": (["The movie was great.", "It was bad."], 1, 15, 3,
                      "9a7220873ba80c8e7a3ad259ad450f577adef78fe5fa1ff64f867b73383a295b"),
    "empty pool": ([], 0, 5, 3, "cd58e85674c30be49ceb395dcb0b896a11700213afb24e5e203b516095b72f56"),
    "one perturbation": (SENTENCES, 3, 6, 1, "25928c101937d99d03e42fe9ec36af3418666cf235b8954017dd60ad420ed336"),
    "five perturbations": (SENTENCES, 3, 6, 5, "6272d196cc9ba201dfb31730f12a981786ddc42c59e27ee0ffa84f12051b3946"),
}


@pytest.mark.parametrize("case", list(GENERATED))
def test_the_default_spec_renders_generate_sent_suites_cases(case):
    sentences, seed, n, max_p, want = GENERATED[case]
    assert digest(render_sent_suite(sentences, seed=seed, cases_per_functionality=n, max_perturbations=max_p)) == want


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
    df = render_sent_suite(["The movie was great.", "It was bad."], seed=1, cases_per_functionality=15)
    for name in ("change names", "change locations", "change numbers"):
        g = df[df.functionality == name]
        assert len(g) == 15
        assert all(json.loads(m)["source"] == "template" for m in g.meta)
    fmt.validate_suite(df, "generated", label_set=(0, 1, 2))


def test_empty_pool():
    df = render_sent_suite([], seed=0, cases_per_functionality=5)
    assert (df.groupby("functionality").size() == 5).all()
    fmt.validate_suite(df, "generated", label_set=(0, 1, 2))


def test_determinism(suite):
    again = render_sent_suite(list(SENTENCES), seed=7, cases_per_functionality=N)
    assert again.equals(suite)


def test_different_seed_differs(suite):
    other = render_sent_suite(SENTENCES, seed=8, cases_per_functionality=N)
    assert not other.equals(suite)
    differing = sum(list(a) != list(b) for a, b in zip(suite.inputs, other.inputs))
    assert differing > len(suite) // 2
    for name in ("sentiment words in context", "protected: race", "typos"):
        a = suite[suite.functionality == name].inputs.map(tuple).tolist()
        b = other[other.functionality == name].inputs.map(tuple).tolist()
        assert a != b, name


def test_max_perturbations():
    df = render_sent_suite(SENTENCES, seed=3, cases_per_functionality=6, max_perturbations=1)
    assert (df[df.test_type != "MFT"].inputs.map(len) == 2).all()
    df = render_sent_suite(SENTENCES, seed=3, cases_per_functionality=6, max_perturbations=5)
    assert df[df.test_type != "MFT"].inputs.map(len).max() == 6


def test_bad_arguments():
    with pytest.raises(ValueError):
        render_sent_suite(SENTENCES, seed=0, cases_per_functionality=0)
    with pytest.raises(ValueError):
        render_sent_suite(SENTENCES, seed=0, cases_per_functionality=3, max_perturbations=0)


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


# ---------------------------------------------------------------------------------- packaged PARA / READ specs
CHECKLIST_CLASSES = {"Vocabulary", "Taxonomy", "Robustness", "NER", "Temporal", "Negation", "Coref", "SRL"}


@pytest.mark.parametrize("name", ["para_default", "read_default"])
def test_para_and_read_specs(name):
    spec = load_spec(name)
    funcs = catalogue(spec)
    assert len(funcs) >= 10 and CHECKLIST_CLASSES <= {f["capability"] for f in funcs}
    df = render_spec(spec, load_sources(spec), cases_per_functionality=5)
    labels = (0, 1) if spec.task == "para" else None
    validate_suite(df, name, labels, None)
    assert df.groupby("functionality").size().eq(5).all() and df["inputs_b"].notna().all()
    if spec.task == "read":   # every expected answer is a span of its context
        for _, r in df.iterrows():
            assert all(a in c for a, c in zip(r["answers"] if r["answers"] is not None else [], r["inputs"]))
        mft = df[df.test_type == "MFT"]
        assert mft["answers"].notna().all()
    else:
        assert df[df.test_type == "MFT"]["labels"].notna().all()
    again = render_spec(spec, load_sources(spec), cases_per_functionality=5)
    assert digest(again) == digest(df)
    other = render_spec(spec, load_sources(spec), cases_per_functionality=5, seed=1)
    assert digest(other) != digest(df)


def test_packaged_specs_are_listed():
    assert set(PACKAGED) == {p.stem for p in (REPO / "beluga" / "suites" / "packaged_specs").glob("*_default.yaml")}


# ---------------------------------------------------------------------------------- the documented example
REVIEWS = ["The movie was a delight from start to finish.", "I would not watch this again.",
           "A slow and tedious story about nothing.", "The soundtrack is wonderful and the cast is great.",
           "Nothing about this film works.", "It is funny, warm and surprisingly moving.",
           "The director wastes a great cast on a thin script.", "Every scene looks beautiful.",
           "The ending made me cry.", "Two hours I will never get back."]


def doc_example(tmp_path: Path) -> Path:
    """The spec shown in docs/SUITE_FORMAT.md, written beside a reviews.txt."""
    m = re.search(r"<!-- example-spec -->\n```yaml\n(.*?)```\n<!-- /example-spec -->", DOC.read_text(), re.S)
    assert m, "docs/SUITE_FORMAT.md lost its example spec"
    (tmp_path / "my_sentiment.yaml").write_text(m.group(1))
    (tmp_path / "reviews.txt").write_text("\n".join(REVIEWS) + "\n")
    return tmp_path / "my_sentiment.yaml"


def cli(*args, cwd=REPO):
    """``python -m beluga ARGS`` in ``cwd``, in-process (tests/conftest.py)."""
    return beluga_cli(*args, cwd=cwd)


def test_the_documented_example_builds_with_the_documented_command(tmp_path):
    spec = doc_example(tmp_path)
    assert "python -m beluga suite build --spec my_sentiment.yaml --out mine.parquet" in DOC.read_text()
    out = cli("suite", "build", "--spec", spec.name, "--out", "mine.parquet", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "my_sentiment (sent): 24 cases in 3 functionalities" in out.stdout
    assert "typos in real reviews (INV, inv): 8 cases" in out.stdout and "8 from real sentences" in out.stdout
    df = load_suite(tmp_path / "mine.parquet", (0, 1, 2))
    assert list(dict.fromkeys(df.test_type)) == ["MFT", "INV", "DIR"]
    mft = df[df.test_type == "MFT"]
    assert mft["labels"].map(lambda x: x[0]).isin([0, 2]).all()
    assert "sublime" in load_spec(str(spec)).lexicons["pos_adj"]      # the example's {extend: [sublime]}
    dirs = df[df.test_type == "DIR"]
    assert all(" not " in x[1] and " not " not in x[0] for x in dirs["inputs"])
    real = df[df.test_type == "INV"]
    assert set(x[0] for x in real["inputs"]) <= set(REVIEWS)
    # deterministic: the same bytes again; another seed another suite
    again = cli("suite", "build", "--spec", spec.name, "--out", "again.parquet", cwd=tmp_path)
    assert again.returncode == 0
    assert digest(pd.read_parquet(tmp_path / "again.parquet")) == digest(pd.read_parquet(tmp_path / "mine.parquet"))
    seed1 = cli("suite", "build", "--spec", spec.name, "--out", "s1.parquet", "--seed", "1", cwd=tmp_path)
    assert digest(pd.read_parquet(tmp_path / "s1.parquet")) != digest(pd.read_parquet(tmp_path / "mine.parquet"))
    assert seed1.returncode == 0
    # --out is a suite file (never the spec: see test_build_never_writes_over_a_file_the_spec_reads)
    over = cli("suite", "build", "--spec", spec.name, "--out", spec.name, cwd=tmp_path)
    assert over.returncode == 2 and "must be a .parquet suite file" in over.stderr


def test_lexicon_extension_replacement_and_files(tmp_path):
    (tmp_path / "more.yaml").write_text("dish: [soup, stew]\n")
    data = {"name": "lex", "task": "sent", "lexicon_files": ["more.yaml"],
            "lexicons": {"pos_adj": {"extend": ["sublime", "good"]}, "noun": ["salad"],
                         "both": {"concat": ["dish", "noun"]}},
            "functionalities": [{"name": "f", "class": "c", "type": "MFT", "expect": "eq",
                                 "templates": [{"label": "positive", "templates": ["The {both} is {pos_adj}."]}]}]}
    (tmp_path / "lex.yaml").write_text(yaml.safe_dump(data, sort_keys=False))   # lexicons resolve in order
    spec = load_spec(str(tmp_path / "lex.yaml"))
    assert spec.lexicons["pos_adj"][-1] == "sublime" and spec.lexicons["pos_adj"].count("good") == 1
    assert spec.lexicons["both"] == ("soup", "stew", "salad")
    df = render_spec(spec, {}, cases_per_functionality=500)
    texts = {x[0] for x in df["inputs"]}
    assert "The salad is sublime." in texts and "The stew is sublime." in texts
    assert not any("movie" in t for t in texts)   # noun replaced


# ---------------------------------------------------------------------------------- bad specs: one line each
def _spec(tmp_path, func: dict, **top) -> Path:
    data = {"name": "bad", "task": "sent", **top, "functionalities": [{"name": "f1", "class": "c", **func}]}
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


MFT = {"type": "MFT", "expect": "eq"}
BAD = [
    ("unknown placeholder", {**MFT, "templates": [{"label": 2, "templates": ["The {dish} is {pos_adj}."]}]}, {},
     r"functionality 'f1': field 'templates\[0\]\.templates\[0\]': placeholder \{dish\} names no lexicon"),
    ("unknown lexicon", {**MFT, "templates": [{"label": 2, "templates": ["The {noun} is good."]}]},
     {"lexicons": {"tasty": {"extend": ["yummy"]}}},
     r"field 'lexicons\.tasty': extends 'tasty', which is not a lexicon"),
    ("unknown group lexicon", {**MFT, "templates": [{"label": 2, "templates": ["The {x} is good."],
                                                    "lexicons": {"x": "no_such_list"}}]}, {},
     r"field 'templates\[0\]\.lexicons\.x': 'no_such_list' is not a lexicon"),
    ("template yields no case", {**MFT, "templates": [{"label": 2, "templates": ["{one} and {one2}."]}]},
     {"lexicons": {"one": ["alone"]}}, r"functionality 'f1': field '\(top level\)': no test case: no template yields"),
    ("perturbation changes nothing", {"type": "INV", "expect": "inv", "source": "s",
                                      "perturb": {"name": "change_numbers"}},
     {"sources": {"s": {"file": "s.txt"}}},
     r"no test case: perturbation 'change_numbers' changed none of the source's sentences"),
    ("unknown perturbation", {"type": "INV", "expect": "inv", "source": "s", "perturb": {"name": "shout"}},
     {"sources": {"s": {"file": "s.txt"}}}, r"field 'perturb\.name': .*unknown perturbation 'shout'"),
    ("unknown perturbation parameter", {"type": "INV", "expect": "inv", "source": "s",
                                        "perturb": {"name": "typos", "k": 2}},
     {"sources": {"s": {"file": "s.txt"}}}, r"perturbation 'typos' has no parameter 'k'"),
    ("label outside the task", {**MFT, "templates": [{"label": "great", "templates": ["Fine."]}]}, {},
     r"field 'templates\[0\]\.label': 'great' is not a label of task 'sent'"),
    ("expectation on the wrong type", {"type": "MFT", "expect": "inv", "templates": [{"templates": ["Fine."]}]}, {},
     r"field 'expect': 'inv' does not apply to MFT tests"),
    ("no label to check", {**MFT, "templates": [{"templates": ["Fine."]}]}, {},
     r"expectation 'eq' needs a label per case"),
    ("unknown key", {**MFT, "templates": [{"label": 2, "templates": ["Fine."]}], "colour": "red"}, {},
     r"functionality 'f1': field '\(top level\)': unknown key\(s\) \('colour' was unexpected\)"),
    ("missing source file", {"type": "INV", "expect": "inv", "source": "s", "perturb": {"name": "typos"}},
     {"sources": {"s": {"file": "gone.txt"}}}, r"field 'sources\.s\.file': .*gone.txt does not exist"),
    ("a lexicon of lists without an item", {**MFT, "templates": [{"label": 2, "templates": ["I {pos_verb} it."]}]},
     {}, r"placeholder \{pos_verb\}: lexicon 'pos_verb' holds lists or mappings; name an item"),
    ("an attribute of a word", {**MFT, "templates": [{"label": 2, "templates": ["The {noun.x}."]}]}, {},
     r"field 'templates\[0\]\.templates\[0\]': template 'The \{noun.x\}.': placeholder \{noun.x\}: \.x reads a "
     r"key of a lexicon whose entries are mappings; this entry is a string"),
    ("a string's method", {**MFT, "templates": [{"label": 2, "templates": ["The {noun.title}."]}]}, {},
     r"placeholder \{noun.title\}: \.title reads a key"),
    ("a string's letter", {**MFT, "templates": [{"label": 2, "templates": ["The {noun[0]}."]}]}, {},
     r"placeholder \{noun\[0\]\}: \[0\] reads an item of a lexicon whose entries are lists"),
    ("a conversion", {**MFT, "templates": [{"label": 2, "templates": ["The {noun!r}."]}]}, {},
     r"a placeholder takes no conversion \(!r\)"),
    ("a format spec", {**MFT, "templates": [{"label": 2, "templates": ["The {noun:>20}."]}]}, {},
     r"a placeholder takes no format spec \(:>20\)"),
    ("an item out of range", {**MFT, "templates": [{"label": 2, "templates": ["I {pos_verb[5]} it."]}]}, {},
     r"placeholder \{pos_verb\[5\]\}: the entry has 2 items, no \[5\]"),
    ("a variant's own placeholder", {"type": "DIR", "expect": "monotonic", "templates": [
        {"templates": ["The {noun} is good."], "variants": ["{holder} think {sentence}"]}]}, {},
     r"field 'templates\[0\]\.variants': variant .*placeholder \{holder\} is not in the group's template"),
    ("a misspelt expectation parameter", {"type": "INV", "expect": {"name": "inv", "tolerence": 0.1},
                                         "source": "s", "perturb": {"name": "typos"}},
     {"sources": {"s": {"file": "s.txt"}}}, r"field 'expect': 'inv' has no parameter 'tolerence'"),
    ("same_answer", {"type": "INV", "expect": "same_answer", "source": "s", "perturb": {"name": "typos"}},
     {"sources": {"s": {"file": "s.txt"}}}, r"same_answer needs each input's \[old, new\] replacement"),
    ("eq on real sentences", {"type": "INV", "expect": "eq", "source": "s", "perturb": {"name": "typos"}},
     {"sources": {"s": {"file": "s.txt"}}}, r"expectation 'eq' needs a label or answer per input"),
    ("a functionality label without pairs", {"type": "INV", "expect": "inv", "source": "s", "label": 2,
                                             "perturb": {"name": "typos"}},
     {"sources": {"s": {"file": "s.txt"}}}, r"field 'label': a functionality's label is for pairs"),
    ("a source joined into a lexicon", {**MFT, "templates": [{"label": 2, "templates": ["The {both} is good."]}]},
     {"sources": {"s": {"file": "s.txt"}}, "lexicons": {"rv": {"source": "s"}, "both": {"concat": ["noun", "rv"]}}},
     r"field 'lexicons\.both\.concat': 'rv' holds a source's sentences"),
    ("too many fills", {**MFT, "templates": [{"label": 2, "templates": [
        "{first_name} {first_name2} {first_name3} {first_name4} {first_name5} {first_name6} {first_name7} "
        "{first_name8}."]}]}, {}, r"its lexicons make .* fills, more than 1e\+12"),
    ("a YAML boolean label", {**MFT, "templates": [{"label": True, "templates": ["Say it."]}]}, {},
     r"YAML reads yes / no .* as booleans: quote the word"),
]


@pytest.mark.parametrize("what,func,top,message", BAD, ids=[b[0] for b in BAD])
def test_bad_specs_stop_in_one_line(tmp_path, what, func, top, message):
    (tmp_path / "s.txt").write_text("No number in this sentence at all.\nNor in this one, friend.\n")
    path = _spec(tmp_path, func, **top)
    with pytest.raises(ConfigError) as e:
        spec = load_spec(str(path))
        render_spec(spec, load_sources(spec), cases_per_functionality=3)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg, msg
    assert re.search(message, msg), msg
    out = cli("suite", "build", "--spec", str(path), "--out", str(tmp_path / "o.parquet"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and out.stderr.startswith("error: suite spec")
    assert not (tmp_path / "o.parquet").exists()


def test_a_yaml_syntax_error_names_the_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("name: x\ntask: sent\nfunctionalities: [\n")
    with pytest.raises(ConfigError, match=r"broken.yaml: line \d+: field '\(syntax\)'"):
        load_spec(str(p))


# ---------------------------------------------------------------------------------- suite perturb
def test_suite_perturb_turns_sentences_into_a_dir_suite(tmp_path):
    src = tmp_path / "sentences.txt"
    src.write_text("The movie is great.\nThe plot was dull.\nA film from 1999.\nIt is not bad at all.\n")
    out = cli("suite", "perturb", "--input", str(src), "--perturbation", "add_negation", "--type", "DIR",
              "--expect", "monotonic", "--expect-param", "increasing=false", "--expect-param", "tolerance=0.1",
              "--out", str(tmp_path / "neg.parquet"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("2 of 4 sentences perturbed by add_negation")
    df = load_suite(tmp_path / "neg.parquet", (0, 1, 2))
    assert sorted(tuple(x) for x in df["inputs"]) == [("The movie is great.", "The movie is not great."),
                                                    ("The plot was dull.", "The plot was not dull.")]
    assert set(df.expect) == {"monotonic"} and json.loads(df.expect_params.iloc[0]) == {"increasing": False,
                                                                                       "tolerance": 0.1}
    nothing = cli("suite", "perturb", "--input", str(src), "--perturbation", "change_names", "--type", "INV",
                  "--expect", "inv", "--out", str(tmp_path / "none.parquet"))
    assert nothing.returncode == 2 and "changed none of the 4 sentences" in nothing.stderr
    assert not (tmp_path / "none.parquet").exists()
    listed = cli("suite", "perturb", "--list")
    assert listed.returncode == 0 and "add_negation(contracted=False)" in listed.stdout


# ---------------------------------------------------------------------------------- CheckList's own templates
needs_checklist = pytest.mark.skipif(not (SHARED / "checklist").exists(),
                                     reason=f"CheckList exports not found at {SHARED / 'checklist'}")


def _release(suite: str, functionality: str) -> list[dict]:
    with gzip.open(SHARED / "checklist" / f"{suite}.jsonl.gz", "rt") as f:
        return [r for r in map(json.loads, f) if r["functionality"] == functionality]


def _groups(test: dict, task: str) -> list[dict]:
    """A release test's recorded template calls as spec groups (one per template, CheckList's crossproduct of
    contexts and questions too)."""
    groups = []
    for call, lexicons in test["templates"]:
        ts, labels = call["templates"], call["labels"]
        pairs = [([c, q], a) for c in ts["contexts"] for q, a in ts["qas"]] if isinstance(ts, dict) else \
            [(t, labels[j] if isinstance(labels, list) else labels) for j, t in enumerate([ts] if isinstance(ts, str)
                                                                                        else ts)]
        for t, lab in pairs:
            g = {"templates": [t], "lexicons": lexicons, "distinct": bool(call["remove_duplicates"])}
            if lab is not None:
                g["answer" if task == "read" else "label"] = lab
            groups.append(g)
    return groups


@needs_checklist
@pytest.mark.parametrize("suite,index,exact", [("sentiment", 3, True), ("sentiment", 36, True), ("squad", 2, False)])
def test_a_spec_reproduces_checklist_release_tests(suite, index, exact):
    test = json.loads((SHARED / "checklist" / f"{suite}_tests.json").read_text())[index]
    task = "read" if suite == "squad" else "sent"
    data = {"name": "roundtrip", "task": task, "functionalities": [{
        "name": test["functionality"], "class": test["capability"], "type": test["test_type"],
        "expect": "squad" if task == "read" else "eq", "templates": _groups(test, task)}]}
    spec = spec_from_data(data, f"{suite} test {index}")
    df = render_spec(spec, {}, cases_per_functionality=10_000, max_perturbations=1, fill_up=False)
    ours, theirs = set(), set()
    for _, r in df.iterrows():
        ours.add((r["inputs"][0], r["inputs_b"][0], r["answers"][0]) if task == "read"
                 else (r["inputs"][0], int(r["labels"][0])))
    for r in _release(suite, test["functionality"]):
        labels = r.get("labels") or [r.get("label")] * len(r["inputs"])
        for x, lab in zip(r["inputs"], labels):
            theirs.add((x[0], x[1], lab) if task == "read" else (x, lab))
    assert theirs and theirs <= ours
    if exact:   # a full product (nsamples None): the same cases, no more
        assert ours == theirs and len(theirs) == test["n_cases"]


# ---------------------------------------------------------------------------------- what a render must get right
def _render(tmp_path, data: dict, n=6, **settings) -> pd.DataFrame:
    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    spec = load_spec(str(p))
    return render_spec(spec, load_sources(spec), cases_per_functionality=n, **settings)


def test_read_answers_stay_in_their_contexts(tmp_path):
    """A perturbed context that lost the answer is left out of its case (else a perfect model would fail it);
    answers are whole words of the context."""
    func = {"name": "f", "class": "c", "type": "INV", "expect": "squad", "templates": [
        {"templates": [["{first_name} lives in {city}.", "Where does {first_name} live?"]], "answer": "{city}",
         "perturb": {"name": "change_names", "apply_to": "both"}}]}
    df = _render(tmp_path, {"name": "r", "task": "read", "functionalities": [func]})
    for _, r in df.iterrows():
        assert len(r["inputs"]) > 1 and all(a in c for a, c in zip(r["answers"], r["inputs"]))
    gone = dict(func, templates=[{**func["templates"][0], "answer": "{first_name}"}])
    with pytest.raises(ConfigError, match="no test case"):
        _render(tmp_path, {"name": "r", "task": "read", "functionalities": [gone]})
    sub = {"name": "f", "class": "c", "type": "MFT", "expect": "squad", "templates": [
        {"templates": [["{first_name} has a {thing}.", "What does {first_name} have?"]], "answer": "cat"}]}
    with pytest.raises(ConfigError, match=r"the answer 'cat' is not in the context"):
        _render(tmp_path, {"name": "r", "task": "read", "lexicons": {"thing": ["caterpillar"]},
                           "functionalities": [sub]})


def test_articles_names_and_exact_lexicon_names(tmp_path):
    func = {"name": "f", "class": "c", "type": "MFT", "expect": "eq", "templates": [
        {"label": 1, "templates": ["It is {a:minutes}-minute film, {a:title} kind of film.", "It is {top10}."]}]}
    df = _render(tmp_path, {"name": "a", "task": "sent", "lexicons": {"minutes": ["8", "7", "11", "80"],
                                                                      "title": ['"Avatar"'], "top10": ["tops"]},
                            "functionalities": [func]}, n=5)
    texts = {x[0] for x in df["inputs"]}
    assert 'It is an 8-minute film, an "Avatar" kind of film.' in texts
    assert 'It is a 7-minute film, an "Avatar" kind of film.' in texts and "It is tops." in texts
    assert not any("\x00" in t for t in texts)
    var = {"name": "v", "class": "c", "type": "DIR", "expect": {"name": "monotonic", "increasing": False},
           "templates": [{"templates": ["{first_name} loved the {noun}."], "variants": ["I think {sentence}"]}]}
    df = _render(tmp_path, {"name": "v", "task": "sent", "functionalities": [var]}, n=3)
    assert all(x[1].split()[2][0].isupper() for x in df["inputs"])   # "I think Anna loved ...", not "anna"


def test_perturbed_label_and_repeats(tmp_path):
    func = {"name": "negated", "class": "c", "type": "MFT", "expect": "eq", "templates": [
        {"label": "positive", "perturbed_label": "negative", "templates": ["The {noun} is {pos_adj}."],
         "perturb": {"name": "add_negation"}}]}
    df = _render(tmp_path, {"name": "l", "task": "sent", "functionalities": [func]}, n=4)
    assert all(list(x) == [2, 0] for x in df["labels"]) and all(" not " in x[1] for x in df["inputs"])
    from beluga.suites.authoring import summary

    few = {"name": "few", "class": "c", "type": "MFT", "expect": "eq", "templates": [
        {"label": 1, "templates": ["It is {w}."]}]}
    df = _render(tmp_path, {"name": "f", "task": "sent", "lexicons": {"w": ["here", "there"]},
                            "functionalities": [few]}, n=5)
    assert "only 2 distinct" in summary(df, get_task_type("sent"))


def test_a_perturbation_that_never_applies_to_a_huge_product_stops(tmp_path):
    func = {"name": "f", "class": "c", "type": "INV", "expect": "inv", "templates": [
        {"templates": ["{first_name} {last_name} from {city}, {country}!"], "perturb": {"name": "add_negation"}}]}
    with pytest.raises(ConfigError, match="no test case"):
        _render(tmp_path, {"name": "h", "task": "sent", "functionalities": [func]}, n=2)


def test_build_never_writes_over_a_file_the_spec_reads(tmp_path):
    (tmp_path / "data.parquet").write_bytes(b"not a suite")
    (tmp_path / "s.txt").write_text("The movie was great.\n")
    data = {"name": "o", "task": "sent", "sources": {"d": {"file": "data.parquet", "column": "text"}},
            "functionalities": [{"name": "f", "class": "c", "type": "MFT", "expect": "eq",
                                 "templates": [{"label": 2, "templates": ["Good."]}]}]}
    (tmp_path / "o.yaml").write_text(yaml.safe_dump(data))
    out = cli("suite", "build", "--spec", "o.yaml", "--out", "data.parquet", cwd=tmp_path)
    assert out.returncode == 2 and "is the file" in out.stderr
    assert (tmp_path / "data.parquet").read_bytes() == b"not a suite"
    ignored = cli("suite", "build", "--spec", "o.yaml", "--out", "x.parquet", "--source", "s.txt", cwd=tmp_path)
    assert ignored.returncode == 2 and "has no pool source" in ignored.stderr


def test_suite_perturb_for_read_pairs(tmp_path):
    pd.DataFrame({"context": ["Anna lives in Paris.", "Tom works in Rome."],
                  "question": ["Where does Anna live?", "Where does Tom work?"]}).to_csv(tmp_path / "qa.csv",
                                                                                        index=False)
    out = cli("suite", "perturb", "--input", "qa.csv", "--task", "read", "--column", "context,question",
              "--apply-to", "question", "--perturbation", "typos", "--type", "INV", "--expect", "inv",
              "--out", "r.parquet", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    df = load_suite(tmp_path / "r.parquet")
    assert len(df) == 2 and all(len(set(x)) == 1 for x in df["inputs"])   # contexts kept, questions changed


def test_suite_lexicons_lists_names_and_entries(capsys):
    """`suite lexicons`: every built-in word list with its size; NAME: its entries, one a line (a perturbation
    list case-insensitively); an unknown NAME is one line listing the names."""
    from beluga.cli import main
    from beluga.core.errors import ConfigError
    from beluga.suites import lexicons as lex
    from beluga.suites.authoring import lexicon_list
    from beluga.suites.templates import BUILTIN_LEXICONS

    listing = lexicon_list()
    for name, entries in [*BUILTIN_LEXICONS.items(), *lex.LEXICONS.items(), *lex.WORD_GROUPS.items()]:
        assert f"  {name} ({len(entries)}): " in listing, name
    assert lexicon_list("reducers").splitlines() == list(lex.REDUCERS)
    assert lexicon_list("REDUCERS") == lexicon_list("reducers")
    assert lexicon_list("pos_verb").splitlines()[0] == "love / loved"
    with pytest.raises(ConfigError, match=r"field 'NAME': unknown word list 'nope' \(known: .*reducers"):
        lexicon_list("nope")
    assert main(["suite", "lexicons", "neg_be"]) == 0
    assert capsys.readouterr().out.splitlines() == list(BUILTIN_LEXICONS["neg_be"])
    assert main(["suite", "lexicons", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: suite lexicons: field 'NAME'")
