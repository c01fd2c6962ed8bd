"""The bad-input catalogue, issue 36 item 1 (values checked where they enter), for suite specs and suite files:
a lexicon or slot named like a placeholder the engine fills itself, attribute and item access in templates,
YAML 1.1 numbers, booleans and dates in word lists, control characters in templates and words, expectation
parameters of the wrong type or outside the task's label set (NaN and infinities included), a regression's score
expectations outside its score range or covering it (every score passes) or beyond it (none can). Each refusal is one
line (a BelugaError) under the catalogue's time and memory limits (conftest.refused); what is accepted renders
what the spec says."""

from __future__ import annotations

import json

import pytest
from conftest import refused

HEAD = "spec_version: 1\nname: s\ntask: sent\n"


def func(body: str, kind: str = "MFT", expect: str = "eq") -> str:
    """One functionality ``f`` of type ``kind`` whose template groups are ``body`` (YAML, indented 2)."""
    return f"functionalities:\n- name: f\n  class: c\n  type: {kind}\n  expect: {expect}\n  templates:\n{body}"


MFT_GROUP = "  - templates: ['The {noun} was {pos_adj}.']\n    label: positive\n"
INV_GROUP = "  - templates: ['The {noun} was good.']\n    variants: ['The {noun} was very good.']\n"


def spec_refused(tmp_path, text: str, files: dict | None = None) -> str:
    (tmp_path / "s.yaml").write_text(HEAD + text)
    for name, body in (files or {}).items():
        (tmp_path / name).write_text(body)
    return refused(tmp_path, "from beluga.suites.spec import load_spec, load_sources, render_spec",
                   "render_spec(s := load_spec('s.yaml'), load_sources(s), cases_per_functionality=4)")


def rendered(tmp_path, text: str, files: dict | None = None, n: int = 8) -> list[str]:
    from beluga.suites.spec import load_sources, load_spec, render_spec
    (tmp_path / "s.yaml").write_text(HEAD + text)
    for name, body in (files or {}).items():
        (tmp_path / name).write_text(body)
    spec = load_spec(str(tmp_path / "s.yaml"))
    return render_spec(spec, load_sources(spec), cases_per_functionality=n)


# ---------------------------------------------------------------- placeholder names the engine fills itself
RESERVED = {
    "lexicon art": ("lexicons:\n  art: [xx, yy]\n" + func("  - templates: ['The {art} was fine.']\n"
                                                          "    label: positive\n"), {}, "field 'lexicons.art'"),
    "lexicon sentence": ("lexicons:\n  sentence: [xx]\n" + func(MFT_GROUP), {}, "field 'lexicons.sentence'"),
    "group lexicon art": (func("  - templates: ['The {noun} was fine.']\n    label: positive\n"
                               "    lexicons: {art: [xx]}\n"), {}, "field 'templates[0].lexicons.art'"),
    "slot art": (func("  - templates: ['The {noun} was {art}.']\n    swap_slot: {slot: art, values: [good, fine]}\n",
                      "INV", "inv"), {}, "field 'templates[0].swap_slot.slot'"),
    "lexicon file art": ("lexicon_files: [lex.yaml]\n" + func(MFT_GROUP), {"lex.yaml": "art: [xx]\n"},
                         "field 'lexicon_files[0].art'"),
}


@pytest.mark.parametrize("name", list(RESERVED))
def test_reserved_placeholder_names_refused(tmp_path, name):
    text, files, where = RESERVED[name]
    line = spec_refused(tmp_path, text, files)
    assert "s.yaml" in line and where in line and "reserved placeholder name" in line, line


@pytest.mark.parametrize("slot", ["self", "t", "template", "fill", "capitalize"])
def test_slots_named_like_python_arguments_render(tmp_path, slot):
    df = rendered(tmp_path, func(f"  - templates: ['The {{noun}} was {{{slot}}}.']\n"
                                 f"    swap_slot: {{slot: {slot}, values: [good, fine]}}\n", "INV", "inv"), n=4)
    for inputs in df["inputs"]:
        assert {x.rsplit(" ", 1)[1] for x in inputs} == {"good.", "fine."}, inputs


# ---------------------------------------------------------------- what a placeholder may read
@pytest.mark.parametrize("template,words", [
    ("The {noun.title} was fine.", ".title reads a key of a lexicon whose entries are mappings"),
    ("The {noun[0]} was fine.", "[0] reads an item of a lexicon whose entries are lists"),
    ("The {noun!s} was fine.", "no conversion (!s)"),
    ("The {noun:.3} was fine.", "no format spec (:.3)"),
])
def test_attribute_and_item_access_refused(tmp_path, template, words):
    line = spec_refused(tmp_path, func(f"  - templates: ['{template}']\n    label: positive\n"))
    assert "field 'templates[0].templates[0]'" in line and words in line, line


def test_mapping_keys_and_list_items_still_render(tmp_path):
    df = rendered(tmp_path, "lexicons:\n  p: [{v1: loved, v2: liked}]\n" + func(
        "  - templates: ['{subj} {p.v1} the {noun}, they {pos_verb[1]} it.']\n    label: positive\n"), n=4)
    assert all(" loved the " in x[0] for x in df["inputs"]), df["inputs"].tolist()


# ---------------------------------------------------------------- YAML 1.1 scalars in word lists
WORDS = "[007, 0x1F, 1_000, 1:30, yes, 1.50, 2001-01-01, ~]"
AS_WRITTEN = {"007", "0x1F", "1_000", "1:30", "yes", "1.50", "2001-01-01", "~"}


@pytest.mark.parametrize("where", ["spec", "lexicon file", "group", "slot"])
def test_yaml_11_scalars_in_word_lists_are_read_as_written(tmp_path, where):
    files = {}
    if where == "spec":
        text = f"lexicons:\n  code: {WORDS}\n" + func("  - templates: ['Agent {code} was fine.']\n    label: 2\n")
    elif where == "lexicon file":
        files = {"lex.yaml": f"code: {WORDS}\n"}
        text = "lexicon_files: [lex.yaml]\n" + func("  - templates: ['Agent {code} was fine.']\n    label: 2\n")
    elif where == "group":
        text = func(f"  - templates: ['Agent {{code}} was fine.']\n    label: 2\n    lexicons: {{code: {WORDS}}}\n")
    else:
        text = func(f"  - templates: ['Agent {{code}} was fine.']\n    swap_slot: {{slot: code, values: {WORDS}}}\n",
                    "INV", "inv")
    df = rendered(tmp_path, text, files)
    agents = {x.split(" ")[1] for inputs in df["inputs"] for x in inputs}
    assert agents <= AS_WRITTEN and len(agents) >= 4, agents


def test_yaml_booleans_and_dates_outside_word_lists_are_still_refused(tmp_path):
    line = spec_refused(tmp_path, func("  - templates: ['The {noun} was fine.']\n    label: yes\n"))
    assert "field 'templates[0].label'" in line and "quote the word" in line, line


# ---------------------------------------------------------------- control characters
CONTROL = {
    "unit separator in a template": (func("  - templates: [\"The {noun} was\\x1f fine.\"]\n    label: 2\n"), {},
                                     "templates[0].templates[0]", "U+001F"),
    "newline in a lexicon entry": ("lexicons:\n  w: [\"good\\nbad\"]\n" + func(
        "  - templates: ['The {noun} was {w}.']\n    label: 2\n"), {}, "lexicons.w[0]", "U+000A"),
    "block scalar's final newline": (func("  - templates:\n    - |\n      The {noun} was fine.\n    label: 2\n"), {},
                                     "templates[0].templates[0]", "use |- or >-"),
    "tab in a variant": (func("  - templates: ['The {noun} was good.']\n    variants: [\"The {noun}\\twas fine.\"]\n",
                              "INV", "inv"), {}, "templates[0].variants[0]", "U+0009"),
    "NUL in a lexicon file": ("lexicon_files: [lex.yaml]\n" + func("  - templates: ['The {noun} was {w}.']\n"
                                                                   "    label: 2\n"),
                              {"lex.yaml": "w: [\"go\\0od\"]\n"}, "lexicon_files[0].w[0]", "U+0000"),
}


@pytest.mark.parametrize("name", list(CONTROL))
def test_control_characters_refused(tmp_path, name):
    text, files, where, words = CONTROL[name]
    line = spec_refused(tmp_path, text, files)
    assert f"field '{where}'" in line and "control character" in line and words in line, line


# ---------------------------------------------------------------- expectation parameters
EXPECT = {
    "monotonic label out of range": ("{name: monotonic, label: 7}", "DIR", "expect.label", "7 is not a label"),
    "monotonic label unknown name": ("{name: monotonic, label: happy}", "DIR", "expect.label",
                                     "'happy' is not a label"),
    "monotonic label a date": ("{name: monotonic, label: 2001-01-01}", "DIR", "expect.label", "is not a label"),
    "train a date": ("{name: inv, train: 2001-01-01}", "INV", "expect.train", "must be {as: MFT / INV / DIR}"),
    "tolerance a date": ("{name: inv, tolerance: 2001-01-01}", "INV", "expect.tolerance", "finite number >= 0"),
    "tolerance NaN": ("{name: inv, tolerance: .nan}", "INV", "expect.tolerance", "got nan"),
    "tolerance infinite": ("{name: inv, tolerance: .inf}", "INV", "expect.tolerance", "got inf"),
    "increasing a word": ("{name: monotonic, increasing: up}", "DIR", "expect.increasing", "true or false"),
    "eq val out of range": ("{name: eq, val: 5}", "MFT", "expect.val", "5 is not a label"),
    "slice value out of range": ("{name: inv, slice: orig_pred_eq, slice_value: 9}", "INV", "expect.slice_value",
                                 "9 is not a label"),
}


@pytest.mark.parametrize("name", list(EXPECT))
def test_expectation_parameters_checked(tmp_path, name):
    expect, kind, where, words = EXPECT[name]
    line = spec_refused(tmp_path, func(INV_GROUP, kind, expect))
    assert f"field '{where}'" in line and words in line, line


def test_monotonic_label_name_is_stored_as_its_number(tmp_path):
    df = rendered(tmp_path, func(INV_GROUP, "DIR", "{name: monotonic, label: positive, tolerance: 0.1}"), n=2)
    assert {json.loads(p)["label"] for p in df["expect_params"]} == {2}


SUITE_PARAMS = {
    "monotonic label out of range": ('{"label": 7}', "monotonic", "DIR", "'label' is 7, outside the task's label set"),
    "monotonic label a name": ('{"label": "happy"}', "monotonic", "DIR", "'label' must be an integer class"),
    "eq val out of range": ('{"val": 9}', "eq", "MFT", "'val' is 9, outside the task's label set"),
    "tolerance NaN": ('{"tolerance": NaN}', "inv", "INV", "finite number >= 0, got nan"),
    "tolerance negative": ('{"tolerance": -1}', "inv", "INV", "finite number >= 0, got -1"),
    "tolerance infinite": ('{"tolerance": Infinity}', "inv", "INV", "finite number >= 0, got inf"),
    "increasing a string": ('{"increasing": "yes"}', "monotonic", "DIR", "'increasing' must be true or false"),
    "slice value out of range": ('{"slice": "orig_pred_eq", "slice_value": 4}', "inv", "INV",
                                 "'slice_value' is 4, outside"),
}


@pytest.mark.parametrize("name", list(SUITE_PARAMS))
def test_suite_file_expectation_parameters_checked(tmp_path, name):
    params, expect, kind, words = SUITE_PARAMS[name]
    row = {"case_id": "c1", "functionality": "f", "capability": "c", "test_type": kind,
           "inputs": ["a film", "a good film"] if kind != "MFT" else ["a film"], "labels": None if kind != "MFT"
           else [1], "expect": expect, "expect_params": params, "agg_fn": "all", "meta": None}
    (tmp_path / "s.jsonl").write_text(json.dumps(row) + "\n")
    line = refused(tmp_path, "from beluga.suites.tabular import read_suite_table",
                   "read_suite_table('s.jsonl', (0, 1, 2))")
    assert "s.jsonl" in line and "field 'expect_params'" in line and words in line, line


# ---------------------------------------------------------------- score expectations against the score range
SCORE_PARAMS = {   # a similarity task: scores in 0..5
    "between above the range": ("MFT", "score_between", {"min": 6, "max": 7}, "'min' 6 is outside the task's score "
                                "range 0..5"),
    "between max above": ("MFT", "score_between", {"min": 1, "max": 5.5}, "'max' 5.5 is outside"),
    "between wider than the range": ("MFT", "score_between", {"min": -100, "max": 100},
                                     "'score_between' [-100, 100] covers the whole score range 0..5"),
    "between the range itself": ("MFT", "score_between", {"min": 0, "max": 5}, "[0, 5] covers the whole score range"),
    "between min at the bottom, no max": ("DIR", "score_between", {"min": 0}, "[0, inf] covers the whole score range"),
    "between no min, max at the top": ("MFT", "score_between", {"max": 5}, "[-inf, 5] covers the whole score range"),
    "near tolerance the range's width": ("MFT", "score_near", {"tolerance": 5}, "'tolerance' 5 covers the whole "
                                         "score range"),
    "near tolerance around val": ("MFT", "score_near", {"val": 2.5, "tolerance": 2.5},
                                  "'tolerance' 2.5 around 'val' 2.5 covers the whole score range"),
    "inv tolerance the range's width": ("INV", "score_inv", {"tolerance": 6}, "'tolerance' 6 covers the whole"),
    "up margin beyond the range": ("DIR", "score_up", {"margin": 5.5}, "'margin' 5.5 is more than the score range "
                                   "0..5 spans (5): no score can move that far"),
    "down margin of minus the range": ("DIR", "score_down", {"margin": -5}, "every score passes"),
}


def score_row(kind: str, expect: str, params: dict, labels=None) -> dict:
    n = 1 if kind == "MFT" else 2
    return {"case_id": "c1", "functionality": "f", "capability": "c", "test_type": kind,
            "inputs": ["A man plays."] * n, "inputs_b": ["A man sings."] * n,
            "labels": [3] * n if labels is None and expect == "score_near" else labels,
            "expect": expect, "expect_params": json.dumps(params), "agg_fn": "all", "meta": None}


@pytest.mark.parametrize("name", list(SCORE_PARAMS))
def test_score_expectation_outside_or_covering_the_score_range_refused(tmp_path, name):
    """A score expectation is checked against the task's score range wherever a suite is read (read_suite, the
    one reader): its bounds inside it, and none every score passes or none can (before: score_between [6, 7]
    always failed, [-100, 100] always passed, scored as if they meant something)."""
    kind, expect, params, words = SCORE_PARAMS[name]
    (tmp_path / "s.jsonl").write_text(json.dumps(score_row(kind, expect, params)) + "\n")
    line = refused(tmp_path, "from beluga.suites.build import read_suite", "read_suite('s.jsonl', 'similarity')")
    assert "suite file s.jsonl: row 0 (case_id='c1'): field 'expect_params'" in line and words in line, line


def test_score_expectations_inside_the_range_are_read(tmp_path):
    rows = [dict(score_row(kind, expect, params), case_id=f"c{i}", functionality=f"f{i}")
            for i, (kind, expect, params) in enumerate([
                ("MFT", "score_between", {"min": 0, "max": 4.9}), ("MFT", "score_between", {"min": 4}),
                ("MFT", "score_near", {"val": 5, "tolerance": 4.9}), ("INV", "score_inv", {"tolerance": 4.9}),
                ("DIR", "score_up", {"margin": 5}), ("DIR", "score_down", {"margin": -4.9})])]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    from beluga.suites.build import read_suite
    assert len(read_suite(str(tmp_path / "s.jsonl"), "similarity")[0]) == 6


@pytest.mark.parametrize("label", [9, -3])
def test_gold_score_outside_the_range_refused(tmp_path, label):
    (tmp_path / "s.jsonl").write_text(json.dumps(score_row("MFT", "score_near", {}, labels=[label])) + "\n")
    line = refused(tmp_path, "from beluga.suites.build import read_suite", "read_suite('s.jsonl', 'similarity')")
    assert f"field 'labels': label {label} is outside the task's score range 0..5" in line, line


SIMILARITY_SPEC = """spec_version: 1
name: s
task: similarity
functionalities:
- name: f
  class: c
  type: MFT
  expect: {expect}
  templates:
  - templates: [['{{first_name}} is here.', '{{first_name}} is not here.']]
    label: 1
"""


@pytest.mark.parametrize("expect,words", [
    ("{name: score_between, min: -100, max: 100}", "'score_between' [-100, 100] covers the whole score range 0..5"),
    ("{name: score_between, min: 6, max: 7}", "'min' 6 is outside the task's score range 0..5"),
    ("{name: score_near, tolerance: 5}", "'tolerance' 5 covers the whole score range 0..5"),
])
def test_spec_score_expectation_checked_against_the_range(tmp_path, expect, words):
    (tmp_path / "s.yaml").write_text(SIMILARITY_SPEC.format(expect=expect))
    line = refused(tmp_path, "from beluga.suites.spec import load_spec", "load_spec('s.yaml')")
    assert "s.yaml" in line and "field 'expect'" in line and words in line, line
    from beluga.suites.spec import load_spec
    assert load_spec("similarity_default").task == "similarity"   # the packaged spec's expectations pass


# ---------------------------------------------------------------- numbers that look like digits, seeds in range
def test_spec_seed_beyond_numpy_and_torch_refused(tmp_path):
    line = spec_refused(tmp_path, "defaults: {seed: 4294967296}\n" + func(MFT_GROUP))
    assert "field 'defaults.seed'" in line and "4294967295" in line, line


def test_superscript_digits_are_not_numbers(tmp_path):
    from beluga.model.checkpoint import epoch_dirs
    from beluga.suites.templates import article
    assert article("²nd") == "a" and article("8-minute") == "an"
    (tmp_path / "epoch-²").mkdir()
    (tmp_path / "epoch-3").mkdir()
    assert [p.name for p in epoch_dirs(tmp_path)] == ["epoch-3"]
