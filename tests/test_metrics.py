import math

import pandas as pd
import pytest

from beluga.score.metrics import g_score, score_runs


def test_g_formula():
    assert math.isclose(g_score(0.5, 0.9), 2 * 0.5 * 0.9 / 1.4)
    assert g_score(0.0, 0.0) == 0.0
    assert math.isclose(g_score(0.8, 0.8), 0.8)


def outcomes(statuses: dict, held_out, iid_correct):
    rows = [{"split": "suite_test", "case_id": f"{f}-{i}", "functionality": f, "status": s,
             "held_out": f in held_out, "correct": None}
            for f, ss in statuses.items() for i, s in enumerate(ss)]
    rows += [{"split": "iid_test", "case_id": f"e{i}", "functionality": None, "status": None,
              "held_out": False, "correct": c} for i, c in enumerate(iid_correct)]
    return pd.DataFrame(rows)


def test_aggregate_scores():
    funcs = pd.DataFrame({"functionality": ["f1", "f2"], "capability": ["A", "B"], "test_type": ["MFT", "INV"]})
    runs = [
        {"configuration": "iid", "method": "vanilla", "partition": "standard", "fold": "all",
         "outcomes": outcomes({"f1": ["pass", "fail"], "f2": ["fail", "fail"]}, {"f1", "f2"}, [1, 1, 0, 0])},
        {"configuration": "iid_to_t", "method": "vanilla", "partition": "seen", "fold": "all",
         "outcomes": outcomes({"f1": ["pass", "pass"], "f2": ["pass", "filtered"]}, {"f1", "f2"}, [1, 0, 0, 0])},
        {"configuration": "iid_to_t", "method": "vanilla", "partition": "func", "fold": "f1",
         "outcomes": outcomes({"f1": ["pass", "fail"], "f2": ["pass", "pass"]}, {"f1"}, [1, 1, 1, 1])},
        {"configuration": "iid_to_t", "method": "vanilla", "partition": "func", "fold": "f2",
         "outcomes": outcomes({"f1": ["pass", "pass"], "f2": ["fail", "fail"]}, {"f2"}, [1, 1, 0, 0])},
    ]
    long, scores = score_runs(runs, funcs)
    s = scores.set_index("configuration")
    assert s.loc["iid", "s_standard"] == pytest.approx(0.25)
    assert s.loc["iid", "iid_score"] == pytest.approx(0.5)
    assert s.loc["iid", "G_standard"] == pytest.approx(2 * 0.25 * 0.5 / 0.75)
    assert s.loc["iid_to_t", "s_seen"] == pytest.approx(1.0)  # filtered case excluded
    assert s.loc["iid_to_t", "iid_score"] == pytest.approx(0.25)
    # func: held-out pass rates only: f1 from fold f1 (0.5), f2 from fold f2 (0.0)
    assert s.loc["iid_to_t", "s_func"] == pytest.approx(0.25)
    assert s.loc["iid_to_t", "s_iid_func"] == pytest.approx(0.75)
    assert s.loc["iid_to_t", "G_func"] == pytest.approx(g_score(0.25, 0.75))
    assert list(scores.configuration) == ["iid", "iid_to_t"]
    assert {"G_standard", "G_seen", "G_func", "G_class", "G_type"} <= set(scores.columns)
    assert len(long[long.scenario == "func"]) == 2


def test_positive_f1_and_para_metrics():
    from beluga.heads.classification import positive_f1
    from beluga.score.metrics import iid_metrics, iid_score
    from beluga.score.outcomes import iid_outcomes

    # tp=2, fp=1, fn=1 -> F1 = 4 / 6
    assert positive_f1([1, 1, 1, 0, 0], [1, 1, 0, 1, 0]) == pytest.approx(4 / 6)
    assert positive_f1([0, 0], [0, 0]) == 0.0
    preds = pd.DataFrame({"case_id": ["a", "b", "c", "d", "e"],
                          "probs": [[0.1, 0.9], [0.2, 0.8], [0.4, 0.6], [0.7, 0.3], [0.9, 0.1]]})
    gold = pd.DataFrame({"example_id": ["e", "d", "c", "b", "a"], "label": [0, 1, 0, 1, 1]})  # keyed by id
    out = iid_outcomes(preds, gold, "classification")
    m = iid_metrics(out, "para")
    assert m == {"accuracy": pytest.approx(3 / 5), "f1": pytest.approx(4 / 6)}
    assert iid_score(m) == pytest.approx((3 / 5 + 4 / 6) / 2)
    assert iid_score(m, "f1") == pytest.approx(4 / 6)
    with pytest.raises(ValueError, match="iid_metric"):
        iid_score(m, "em")


def test_iid_outcomes_reject_unknown_or_missing_ids():
    from beluga.core.errors import DataError
    from beluga.score.outcomes import iid_outcomes

    gold = pd.DataFrame({"example_id": ["a", "b"], "label": [0, 1]})
    with pytest.raises(DataError, match="unknown example 'z'"):
        iid_outcomes(pd.DataFrame({"case_id": ["a", "z"], "probs": [[1, 0], [0, 1]]}), gold, "classification")
    with pytest.raises(DataError, match="1 i.i.d. predictions for 2"):
        iid_outcomes(pd.DataFrame({"case_id": ["a"], "probs": [[1, 0]]}), gold, "classification")
