import numpy as np
import pandas as pd
import pytest
from conftest import case

from beluga.scoring import FAIL, FILTERED, PASS, case_status, pass_rates, score_cases
from beluga.tasks import SENT, binary_to_three_class


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
