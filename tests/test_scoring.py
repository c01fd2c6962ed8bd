import numpy as np
import pandas as pd
import pytest
from conftest import case

from beluga.core.tasks import SENT, binary_to_three_class
from beluga.score.expectations import case_status
from beluga.score.metrics import pass_rates
from beluga.score.outcomes import FAIL, FILTERED, PASS, score_cases


def status(expect, params, agg, probs3, labels=None):
    probs3 = np.asarray(probs3, dtype=float)
    return case_status(expect, params, agg, probs3.argmax(-1).tolist(), probs3.tolist(), labels)


NEG, NEU, POS = [0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]


def test_eq_and_not_negative():
    assert status("eq", {}, "all", [POS], [2]) == PASS
    assert status("eq", {}, "all", [NEU], [2]) == FAIL
    assert status("eq", {"val": 1}, "all", [NEU], None) == PASS
    assert status("not_negative", {}, "all", [NEU]) == PASS
    assert status("not_negative", {}, "all", [NEG]) == FAIL


def test_inv_tolerance():
    # same predicted class -> pass
    assert status("inv", {"tolerance": 0.1}, "all_except_first", [POS, [0.2, 0.2, 0.6]]) == PASS
    # class changes but P(orig class) moved by <= 0.1 -> pass
    assert status("inv", {"tolerance": 0.1}, "all_except_first",
                  [[0.0, 0.48, 0.52], [0.0, 0.53, 0.47]]) == PASS
    assert status("inv", {"tolerance": 0.1}, "all_except_first", [POS, NEG]) == FAIL
    # one bad perturbation among several fails the case
    assert status("inv", {"tolerance": 0.1}, "all_except_first", [POS, POS, NEG]) == FAIL


def test_monotonic_with_slice():
    inc = {"increasing": True, "tolerance": 0.1, "slice": "orig_not_neutral"}
    dec = dict(inc, increasing=False)
    assert status("monotonic", inc, "all_except_first", [[0.1, 0.1, 0.8], [0.05, 0.05, 0.9]]) == PASS
    assert status("monotonic", inc, "all_except_first", [[0.1, 0.1, 0.8], [0.3, 0.1, 0.6]]) == FAIL
    assert status("monotonic", inc, "all_except_first", [[0.1, 0.1, 0.8], [0.15, 0.1, 0.75]]) == PASS
    # original predicted neutral -> sliced out
    assert status("monotonic", inc, "all_except_first", [NEU, POS]) == FILTERED
    # decreasing: cannot fail when P_orig(c) >= 1 - tol -> not scored
    assert status("monotonic", dec, "all_except_first", [[0.0, 0.05, 0.95], [0, 0, 1.0]]) == FILTERED
    assert status("monotonic", dec, "all_except_first", [[0.1, 0.1, 0.8], [0.0, 0.05, 0.95]]) == FAIL
    assert status("monotonic", dec, "all_except_first", [[0.1, 0.1, 0.8], [0.2, 0.1, 0.7]]) == PASS


def test_diff_up_down():
    # change = (Pneg(o) - Pneg(p)) + (Ppos(p) - Ppos(o))
    up = {"tolerance": 0.1}
    assert status("diff_up", up, "all_except_first", [[0.5, 0, 0.5], [0.3, 0, 0.7]]) == PASS
    assert status("diff_up", up, "all_except_first", [[0.5, 0, 0.5], [0.54, 0, 0.46]]) == PASS  # -0.08
    assert status("diff_up", up, "all_except_first", [[0.5, 0, 0.5], [0.6, 0, 0.4]]) == FAIL
    assert status("diff_down", up, "all_except_first", [[0.5, 0, 0.5], [0.6, 0, 0.4]]) == PASS
    assert status("diff_down", up, "all_except_first", [[0.5, 0, 0.5], [0.3, 0, 0.7]]) == FAIL


def test_binary_mapping_matches_checklist():
    pp = binary_to_three_class(np.array([0.1, 0.9, 0.5, 0.6, 0.4]))
    assert pp.argmax(-1).tolist() == [0, 2, 1, 1, 1]
    np.testing.assert_allclose(pp[0], [0.9, 0, 0.1])
    np.testing.assert_allclose(pp[3], [0, 1 - 3 * 0.1, 3 * 0.1])
    np.testing.assert_allclose(pp[4], [3 * 0.1, 1 - 3 * 0.1, 0])
    np.testing.assert_allclose(pp.sum(-1), 1)


def test_score_cases_and_pass_rates():
    suite = pd.DataFrame([case("a", "f1", "C", "MFT", ["x"], [2]), case("b", "f1", "C", "MFT", ["y"], [0]),
                          case("c", "f2", "C", "INV", ["o", "p"], expect="inv", params={"tolerance": 0.1})])
    preds = pd.DataFrame({"case_id": ["a", "b", "c", "c"], "input_idx": [0, 0, 0, 1],
                          "probs": [[0.1, 0.9], [0.05, 0.95], [0.2, 0.8], [0.25, 0.75]]})
    out = score_cases(suite, preds, SENT)
    assert out.set_index("case_id").status.to_dict() == {"a": PASS, "b": FAIL, "c": PASS}
    funcs = pd.DataFrame({"functionality": ["f1", "f2"], "capability": ["C", "C"], "test_type": ["MFT", "INV"]})
    pr = pass_rates(out, funcs).set_index("functionality")
    assert pr.loc["f1", "pass_rate"] == 0.5 and pr.loc["f2", "pass_rate"] == 1.0
    with pytest.raises(ValueError, match="missing predictions for case 'c'"):
        score_cases(suite, preds.iloc[:3], SENT)


# ---------------------------------------------------------------- expectations added for the CheckList suites
DUP, NOT = [0.1, 0.9], [0.9, 0.1]


def pstatus(expect, params, agg, probs2, labels=None):
    """Two-class (PARA) probabilities."""
    return status(expect, params, agg, probs2, labels)


def qstatus(expect, params, agg, preds, answers=None, meta=None):
    """QA: predicted answer strings, no probabilities."""
    return case_status(expect, params, agg, list(preds), None, None, answers, meta)


def test_eq_or_not_negative_q_and_a_no():
    # label 0: must be predicted negative; label 1 means "not negative"
    assert status("eq_or_not_negative", {}, "all", [NEG], [0]) == PASS
    assert status("eq_or_not_negative", {}, "all", [NEU], [0]) == FAIL
    assert status("eq_or_not_negative", {}, "all", [NEU], [1]) == PASS
    assert status("eq_or_not_negative", {}, "all", [POS], [1]) == PASS
    assert status("eq_or_not_negative", {}, "all", [NEG], [1]) == FAIL


@pytest.mark.parametrize("preds, expected", [
    ((DUP, DUP, DUP), PASS),
    ((DUP, DUP, NOT), FAIL),
    ((NOT, DUP, DUP), FAIL),
    ((NOT, DUP, NOT), FAIL),
    ((DUP, NOT, DUP), FILTERED),
    ((DUP, NOT, NOT), FILTERED),
    ((NOT, NOT, DUP), FILTERED),
    ((NOT, NOT, NOT), FILTERED),
])
def test_triplet_released_behaviour(preds, expected):
    # test-case level: agg_fn (all_except_first as released) and labels are ignored
    assert pstatus("triplet", {}, "all_except_first", list(preds), [0, 1, 0]) == expected
    assert pstatus("triplet", {}, "all", list(preds)) == expected


def test_qqp_slice_orig_pred_eq():
    p = {"val": 0, "slice": "orig_pred_eq", "slice_value": 1}
    assert pstatus("eq", p, "all_except_first", [DUP, NOT, NOT]) == PASS
    assert pstatus("eq", p, "all_except_first", [DUP, NOT, DUP]) == FAIL
    # original not predicted duplicate -> not scored
    assert pstatus("eq", p, "all_except_first", [NOT, DUP, DUP]) == FILTERED
    # "Keep entitites, fill in with gibberish": eq(0), all_except_first, no slice
    assert pstatus("eq", {"val": 0}, "all_except_first", [DUP, NOT, NOT]) == PASS
    # "(q, paraphrase(q))": eq(1) with all -> the original must be duplicate too
    assert pstatus("eq", {"val": 1}, "all", [NOT, DUP, DUP]) == FAIL
    assert pstatus("eq", {"val": 1}, "all", [DUP, DUP, DUP]) == PASS


def test_all_except_first_with_one_input_passes():
    # qqp synonyms INV as released: one pair per case, nothing left to check
    for probs in (DUP, NOT):
        assert pstatus("inv", {"tolerance": 0.1, "unperturbed": True}, "all_except_first", [probs]) == PASS
    # the first *remaining* result is dropped after Nones are removed
    from beluga.score.expectations import combine_inputs
    assert combine_inputs([None, True, False], "all_except_first") == FAIL
    assert combine_inputs([None, False, True], "all_except_first") == PASS
    assert combine_inputs([None, None], "all_except_first") == FILTERED


def test_inv_zero_tolerance_and_monotonic_not_scored():
    # tolerance 0: a changed class fails even if the probability barely moved
    assert status("inv", {"tolerance": 0}, "all_except_first", [[0.0, 0.49, 0.51], [0.0, 0.51, 0.49]]) == FAIL
    inc = {"increasing": True, "tolerance": 0.1, "slice": "orig_not_neutral", "label": None}
    # increasing and P_orig(c) <= tol cannot fail -> every result None -> filtered
    assert status("monotonic", dict(inc, label=0), "all_except_first", [POS, NEG]) == FILTERED
    # explicit label: confidence in that class must not drop
    assert status("monotonic", dict(inc, label=2), "all_except_first", [POS, [0.3, 0.1, 0.6]]) == FAIL


def test_qa_eq_exact_and_inv_exact():
    assert qstatus("eq", {}, "all", ["Anna", "Bob"], ["Anna", "Bob"]) == PASS
    assert qstatus("eq", {}, "all", ["Anna.", "Bob"], ["Anna", "Bob"]) == FAIL
    assert qstatus("inv", {"tolerance": 0.1}, "all_except_first", ["Anna", "Anna", "Anna"]) == PASS
    assert qstatus("inv", {"tolerance": 0.1}, "all_except_first", ["Anna", "Anna", "Anna."]) == FAIL


def test_squad_cleaning():
    from beluga.score.expectations import clean_squad
    assert clean_squad("the Anna.") == "Anna"
    assert clean_squad("in Paris..") == "Paris"
    # a character-set strip, not an article strip: 'then' and 'ethan' vanish, 'the nation' -> 'on'
    assert clean_squad("then") == "" and clean_squad("ethan") == ""
    assert clean_squad("the nation") == "on"
    assert clean_squad("Ethan") == "Ethan"  # case-sensitive
    assert clean_squad("[a, an] Bob") == "Bob"
    assert qstatus("squad", {}, "all", ["the Anna.", "Bob"], ["Anna", "an Bob"]) == PASS
    assert qstatus("squad", {}, "all", ["then", "Bob"], ["a tent", "Bob"]) == PASS  # both clean to ''
    assert qstatus("squad", {}, "all", ["Anna", "Anna"], ["Anna", "Bob"]) == FAIL
    assert qstatus("squad", {}, "all", [None], [""]) == PASS  # no answer = empty answer


def test_same_answer_with_meta():
    meta = [{}, ["Luther", "James"], ["Luther", "Shawn"]]
    assert qstatus("same_answer", {}, "all_except_first", ["Luther King", "James King", "Shawn King"],
                   meta=meta) == PASS
    assert qstatus("same_answer", {}, "all_except_first", ["Luther King", "James King", "Luther King"],
                   meta=meta) == FAIL
    # whole words only: 'Lutherans' is not renamed
    assert qstatus("same_answer", {}, "all_except_first", ["Lutherans", "Lutherans", "Lutherans"], meta=meta) == PASS
    assert qstatus("same_answer", {}, "all_except_first", ["Lutherans", "Jamesans", "Lutherans"], meta=meta) == FAIL
    # no meta: equal to the original answer
    assert qstatus("same_answer", {}, "all_except_first", ["x", "x"]) == PASS
    assert qstatus("same_answer", {}, "all_except_first", ["x", "y"]) == FAIL


def test_score_cases_qa_and_three_class_sent():
    from beluga.core.tasks import PARA, READ
    suite = pd.DataFrame([
        dict(case("q1", "who", "C", "MFT", ["ctx", "ctx"], expect="squad"), answers=["Anna", "Bob"]),
        dict(case("q2", "who", "C", "MFT", ["ctx"], expect="eq"), answers=["Anna"]),
        dict(case("q3", "names", "N", "INV", ["c0", "c1"], expect="same_answer"),
             meta='[{}, ["Anna", "Eve"]]'),
    ])
    preds = pd.DataFrame({"case_id": ["q1", "q1", "q2", "q3", "q3"], "input_idx": [0, 1, 0, 0, 1],
                          "answer": ["the Anna", "Bob.", "the Anna", "Anna Smith", "Eve Smith"],
                          "split": "suite_test"})
    out = score_cases(suite, preds, READ).set_index("case_id").status.to_dict()
    assert out == {"q1": PASS, "q2": FAIL, "q3": PASS}
    with pytest.raises(ValueError, match="field 'answer': missing column"):
        score_cases(suite, preds.drop(columns="answer"), READ)
    with pytest.raises(ValueError, match="duplicate prediction rows for case 'q1', input 0"):
        score_cases(suite, pd.concat([preds, preds.iloc[:1]]), READ)
    # SENT predictions may already be three-class
    s = pd.DataFrame([case("a", "f", "C", "MFT", ["x"], [1])])
    assert score_cases(s, pd.DataFrame({"case_id": ["a"], "input_idx": [0], "probs": [NEU]}), SENT
                       ).status.tolist() == [PASS]
    with pytest.raises(ValueError, match="field 'probs'"):
        score_cases(s, pd.DataFrame({"case_id": ["a"], "input_idx": [0], "probs": [[0.2, 0.3, 0.1, 0.4]]}), PARA)


def test_tolerances_include_their_boundary():
    """CheckList's comparisons are inclusive: a change of exactly the tolerance passes (the values are
    exact in binary floating point: 0.25 = 0.125 + 0.125)."""
    tol = {"tolerance": 0.25}
    assert status("diff_down", tol, "all_except_first", [[0.5, 0, 0.5], [0.375, 0, 0.625]]) == PASS   # +0.25
    assert status("diff_down", tol, "all_except_first", [[0.5, 0, 0.5], [0.25, 0, 0.75]]) == FAIL    # +0.5
    assert status("diff_up", tol, "all_except_first", [[0.5, 0, 0.5], [0.625, 0, 0.375]]) == PASS     # -0.25
    assert status("diff_up", tol, "all_except_first", [[0.5, 0, 0.5], [0.75, 0, 0.25]]) == FAIL      # -0.5
    # INV: the predicted class changes, P(original class) moves by exactly the tolerance
    assert status("inv", tol, "all_except_first", [[0, 0.375, 0.625], [0, 0.625, 0.375]]) == PASS
    assert status("inv", tol, "all_except_first", [[0, 0.25, 0.75], [0, 0.75, 0.25]]) == FAIL


def test_a_functionality_without_a_scored_case_has_no_failure_rate():
    """Every case filtered: no failure rate (NaN, shown as such), not 0% — nothing was scored."""
    from beluga.analyses.behavioral import failure_summary
    from beluga.core.tasks import get_task_type

    suite = pd.DataFrame([case("a", "all filtered", "Vocabulary", "DIR", ["x", "x y"], expect="diff_up"),
                          case("b", "scored", "Vocabulary", "MFT", ["z"], [0])])
    preds = pd.DataFrame({"case_id": ["a", "a", "b"], "input_idx": [0, 1, 0], "probs": [[0.5, 0.5]] * 3})
    st = pd.DataFrame({"case_id": ["a", "b"], "status": [FILTERED, FAIL]})
    funcs, _ = failure_summary(suite, [st], [preds], get_task_type("sent"), ["model"], k=1)
    rates = funcs.set_index("functionality")
    assert rates.at["all filtered", "n_scored"] == 0 and np.isnan(rates.at["all filtered", "failure_rate"])
    assert rates.at["scored", "failure_rate"] == 1.0


def outcome(expect, params, agg, probs3, labels=None):
    from beluga.score.expectations import case_outcome

    probs3 = np.asarray(probs3, dtype=float)
    return case_outcome(expect, params, agg, probs3.argmax(-1).tolist(), probs3.tolist(), labels,
                        class_names=dict(SENT.suite_labels))


def test_filtered_cases_say_why():
    """Every filtered case has its reason (the slice, the monotonic bound, the triplet, no input scored);
    scored cases have none."""
    assert outcome("inv", {"slice": "orig_not_neutral"}, "all_except_first", [NEU, POS]) == \
        (FILTERED, "original predicted neutral")
    assert outcome("inv", {"slice": "orig_not_neutral"}, "all_except_first", [POS, NEG]) == (FAIL, None)
    assert outcome("eq", {"slice": "orig_pred_eq", "slice_value": 2, "val": 2}, "all", [NEG]) == \
        (FILTERED, "original not predicted positive")
    confident = [[0.99, 0.005, 0.005], [0.98, 0.01, 0.01]]
    assert outcome("monotonic", {"increasing": False, "tolerance": 0.1}, "all_except_first", confident) == \
        (FILTERED, "original's confidence >= 1 - tolerance 0.1 (monotonic)")
    assert outcome("eq", {}, "all", [POS], [2]) == (PASS, None)


def test_score_cases_reasons_column_and_pass_rates():
    suite = pd.DataFrame([case("a", "f", "C", "INV", ["x", "y"], expect="inv", params={"slice": "orig_not_neutral"}),
                          case("b", "f", "C", "INV", ["x", "y"], expect="inv", params={"slice": "orig_not_neutral"}),
                          case("c", "g", "C", "MFT", ["z"], [0])])
    p_neutral, p_pos = [0.5, 0.5], [0.1, 0.9]     # binary SENT: 0.5 is neutral in the suite's three classes
    preds = pd.DataFrame({"case_id": ["a", "a", "b", "b", "c"], "input_idx": [0, 1, 0, 1, 0],
                          "probs": [p_neutral, p_pos, p_pos, p_pos, p_pos]})
    plain = score_cases(suite, preds, SENT)
    assert list(plain.columns) == ["case_id", "functionality", "status"]     # the pipeline's frame unchanged
    out = score_cases(suite, preds, SENT, reasons=True)
    assert out["filter_reason"].tolist() == ["original predicted neutral", None, None]
    rates = pass_rates(out, pd.DataFrame({"functionality": ["f", "g"], "capability": "C",
                                          "test_type": ["INV", "MFT"]})).set_index("functionality")
    assert rates.loc["f", ["n_filtered", "filtered", "status"]].tolist() == \
        [1, "1 filtered: original predicted neutral", "pass"]
    assert rates.loc["g", ["n_filtered", "filtered", "status"]].tolist() == [0, "", "fail"]


def test_status_words_and_filtered_note():
    from beluga.score.metrics import filter_counts, filtered_note, status_word

    assert [status_word(0, 0), status_word(4, 0), status_word(4, 1)] == ["no scored cases", "pass", "fail"]
    counts = filter_counts(["no input scored", None, "original predicted neutral", "original predicted neutral"])
    assert counts == {"original predicted neutral": 2, "no input scored": 1}
    assert filtered_note(counts) == "3 filtered: 2 original predicted neutral, 1 no input scored"
    assert filtered_note({"original predicted neutral": 10}) == "10 filtered: original predicted neutral"
    assert filtered_note({}) == ""


def test_not_negative_dir_fails_a_negation_the_model_ignores():
    """DIR not_negative (the negation recipe, docs/TESTING_MODELS.md): the negated sentence of a negative one may not
    stay negative; the original is not scored (all_except_first), so a confident model is scored, not filtered."""
    assert status("not_negative", {}, "all_except_first", [[0.99, 0.0, 0.01], [0.99, 0.0, 0.01]]) == FAIL
    assert status("not_negative", {}, "all_except_first", [[0.99, 0.0, 0.01], [0.1, 0.1, 0.8]]) == PASS
