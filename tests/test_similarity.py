"""The SIMILARITY task type (a regression head; issue 40): the score
expectations and their scoring, the suite format's checks of them, the
losses, the streams and minibatches, the i.i.d. metrics (Pearson /
Spearman) and their paired bootstrap, and a tiny-random model trained
through the one training loop, saved, loaded and predicted."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import torch
from conftest import train_run

from beluga.core.errors import BelugaError, ConfigError, DataError, ModelError, SuiteError
from beluga.core.tasks import SENT, SIMILARITY, TASK_TYPES, get_task_type
from beluga.heads import get_head
from beluga.heads.score.correlation import paired_bootstrap, pearson, spearman
from beluga.score.outcomes import iid_outcomes, score_cases
from beluga.suites.format import validate_suite
from beluga.train.batches import TrainItem, epoch_batches
from beluga.train.losses import interval_loss, mse_loss, score_dir_loss, score_inv_loss
from beluga.train.streams import build_streams


def _case(cid, func, test_type, inputs, expect, params=None, labels=None, agg=None, inputs_b=None):
    return {"case_id": cid, "functionality": func, "capability": "C", "test_type": test_type, "inputs": inputs,
            "inputs_b": inputs_b if inputs_b is not None else [f"{t} (b)" for t in inputs], "labels": labels,
            "answers": None, "expect": expect, "expect_params": json.dumps(params or {}),
            "agg_fn": agg or ("all" if test_type == "MFT" else "all_except_first"), "meta": None}


def _preds(suite: pd.DataFrame, scores: dict) -> pd.DataFrame:
    rows = [(cid, j, s) for cid, ss in scores.items() for j, s in enumerate(ss)]
    return pd.DataFrame(rows, columns=["case_id", "input_idx", "score"])


def _status(expect, params, scores, test_type, labels=None, agg=None):
    suite = pd.DataFrame([_case("c", "f", test_type, [f"x{i}" for i in range(len(scores))], expect, params,
                                labels, agg)])
    out = score_cases(suite, _preds(suite, {"c": scores}), SIMILARITY, reasons=True)
    return out["status"].iat[0], out["filter_reason"].iat[0]


# --------------------------------------------------------------------------- the task type


def test_similarity_task_type():
    t = get_task_type("similarity")
    assert t is SIMILARITY and TASK_TYPES["similarity"] is SIMILARITY
    assert (t.head, t.pair, t.num_model_labels, t.score_range) == ("regression", True, 1, (0.0, 5.0))
    with pytest.raises(ConfigError, match="scores"):
        t.mft_target("eq", 1)
    with pytest.raises(ValueError, match="scores, not class probabilities"):
        t.suite_probs(np.zeros((1, 1)))


# --------------------------------------------------------------------------- scoring, tolerance edges


@pytest.mark.parametrize("scores, status", [([3.5], "pass"), ([2.5], "pass"), ([3.5001], "fail"),
                                            ([2.4999], "fail"), ([3.0, 3.25], "pass"), ([3.0, 4.0], "fail")])
def test_score_near_tolerance_is_inclusive(scores, status):
    assert _status("score_near", {"val": 3.0, "tolerance": 0.5}, scores, "MFT") == (status, None)


def test_score_near_default_tolerance_and_labels():
    assert _status("score_near", {}, [4.5, 1.5], "MFT", labels=[5, 1])[0] == "pass"   # default tolerance 0.5
    assert _status("score_near", {}, [4.49, 1.5], "MFT", labels=[5, 1])[0] == "fail"
    # val beats the labels; no value at all: nothing to score
    assert _status("score_near", {"val": 2.0, "tolerance": 0.1}, [2.05], "MFT", labels=[5])[0] == "pass"
    assert _status("score_near", {}, [2.0], "MFT") == ("filtered", "no input scored")


@pytest.mark.parametrize("params, score, status", [
    ({"min": 4.0}, 4.0, "pass"), ({"min": 4.0}, 3.99, "fail"), ({"max": 1.0}, 1.0, "pass"),
    ({"max": 1.0}, 1.01, "fail"), ({"min": 1.0, "max": 2.0}, 1.5, "pass"), ({"min": 1.0, "max": 2.0}, 2.5, "fail"),
])
def test_score_between_is_a_threshold_or_an_interval(params, score, status):
    assert _status("score_between", params, [score], "MFT")[0] == status


def test_score_inv_ignores_the_original_and_keeps_the_tolerance_edge():
    assert _status("score_inv", {"tolerance": 0.25}, [4.0, 4.25, 3.75], "INV")[0] == "pass"
    assert _status("score_inv", {"tolerance": 0.25}, [4.0, 4.25, 3.5], "INV")[0] == "fail"
    assert _status("score_inv", {}, [2.0, 2.5], "INV")[0] == "pass"      # default 0.5
    assert _status("score_inv", {}, [2.0, 2.51], "INV")[0] == "fail"


def test_score_dir_direction_margin_and_bound():
    assert _status("score_up", {}, [2.0, 2.0], "DIR")[0] == "pass"       # margin 0: not lower
    assert _status("score_up", {}, [2.0, 1.99], "DIR")[0] == "fail"
    assert _status("score_up", {"margin": 0.5}, [2.0, 2.5], "DIR")[0] == "pass"
    assert _status("score_up", {"margin": 0.5}, [2.0, 2.25], "DIR")[0] == "fail"
    assert _status("score_up", {"margin": -0.25}, [2.0, 1.75], "DIR")[0] == "pass"   # tolerates a small fall
    assert _status("score_down", {"margin": 1.0}, [3.0, 2.0, 1.5], "DIR")[0] == "pass"
    assert _status("score_down", {"margin": 1.0}, [3.0, 2.0, 2.5], "DIR")[0] == "fail"
    status, why = _status("score_up", {}, [5.0, 4.0], "DIR")
    assert status == "filtered" and "range's bound" in why
    assert _status("score_down", {}, [0.0, 1.0], "DIR")[0] == "filtered"
    assert _status("score_down", {}, [0.1, 0.0], "DIR")[0] == "pass"


def test_filter_conditions_of_score_expectations():
    from beluga.score.expectations import filter_condition

    assert "at the top of the score range" in filter_condition("score_up", {})
    assert "at the bottom of the score range" in filter_condition("score_down", {"margin": 1})
    assert filter_condition("score_inv", {}) is None and filter_condition("score_near", {"val": 1}) is None


def test_regression_scoring_refuses_bad_predictions_and_expectations():
    suite = pd.DataFrame([_case("c", "f", "MFT", ["a", "b"], "score_near", {"val": 1.0})])
    with pytest.raises(BelugaError, match="field 'input_idx': missing predictions for case 'c'"):
        score_cases(suite, _preds(suite, {"c": [1.0]}), SIMILARITY)
    with pytest.raises(DataError, match="field 'score': 1 score"):
        score_cases(suite, _preds(suite, {"c": [1.0, float("nan")]}), SIMILARITY)
    with pytest.raises(BelugaError, match="field 'score': missing column"):
        score_cases(suite, pd.DataFrame({"case_id": ["c"], "input_idx": [0], "probs": [[1.0]]}), SIMILARITY)
    bad = pd.DataFrame([_case("c", "f", "MFT", ["a"], "eq", labels=[1])])
    with pytest.raises(BelugaError, match="expectation 'eq' is not one a regression task can score"):
        score_cases(bad, _preds(bad, {"c": [1.0]}), SIMILARITY)


def test_iid_outcomes_carry_the_scores():
    gold = pd.DataFrame({"example_id": ["a", "b"], "text": ["x", "y"], "text_b": ["x", "z"], "label": [4.6, 0.2]})
    preds = pd.DataFrame({"case_id": ["b", "a"], "input_idx": 0, "score": [0.5, 4.0]})
    out = iid_outcomes(preds, gold, "regression")
    assert out["pred_score"].tolist() == [0.5, 4.0] and out["gold_score"].tolist() == [0.2, 4.6]
    assert out["correct"].isna().all() and str(out["correct"].dtype) == "boolean"
    with pytest.raises(DataError, match="field 'case_id'"):
        iid_outcomes(preds.iloc[:1], gold, "regression")


# --------------------------------------------------------------------------- the suite format


def _suite(*rows):
    return pd.DataFrame(list(rows))


def test_suite_format_admits_score_expectations_for_a_regression_head():
    suite = _suite(_case("m", "near", "MFT", ["a"], "score_near", {"val": 4.5, "tolerance": 0.25}),
                   _case("l", "near labels", "MFT", ["a", "b"], "score_near", labels=[5, 0]),
                   _case("t", "above", "MFT", ["a"], "score_between", {"min": 3.5}),
                   _case("i", "inv", "INV", ["a", "a!"], "score_inv", {"tolerance": 0.5}),
                   _case("d", "up", "DIR", ["a", "a a"], "score_up", {"margin": 0.5}))
    assert len(validate_suite(suite, "s.parquet", None, head="regression")) == 5


@pytest.mark.parametrize("row, field, words", [
    (_case("x", "f", "MFT", ["a"], "score_near", {"val": "high"}), "expect_params", "'val' must be a finite number"),
    (_case("x", "f", "MFT", ["a"], "score_near", {"val": 1, "tolerance": -1}), "expect_params", "'tolerance' must"),
    (_case("x", "f", "MFT", ["a"], "score_between", {}), "expect_params", "needs 'min', 'max' or both"),
    (_case("x", "f", "MFT", ["a"], "score_between", {"min": 3, "max": 2}), "expect_params", "'min' 3 is above"),
    (_case("x", "f", "MFT", ["a"], "score_near"), "labels", "needs a label for every input"),
    (_case("x", "f", "INV", ["a", "b"], "score_up"), "expect", "does not apply to INV tests"),
    (_case("x", "f", "MFT", ["a"], "eq", labels=[1]), "expect", "'eq' does not apply to a regression head"),
])
def test_suite_format_refuses_bad_score_cases_in_one_line(row, field, words):
    with pytest.raises(SuiteError, match=f"suite file s.parquet: row 0 \\(case_id='x'\\): field '{field}': .*{words}"):
        validate_suite(_suite(row), "s.parquet", None, head="regression")


def test_classification_suites_refuse_score_expectations():
    row = _case("x", "f", "MFT", ["a"], "score_near", {"val": 1.0})
    with pytest.raises(SuiteError, match="field 'expect': expectation 'score_near' does not apply to a classification"):
        validate_suite(_suite(row), "s.parquet", (0, 1), head="classification")


# --------------------------------------------------------------------------- losses


def test_loss_values():
    s = torch.tensor([1.0, 3.0, 6.0])
    assert mse_loss(s, torch.tensor([2.0, 3.0, 5.0])).tolist() == [1.0, 0.0, 1.0]
    inf = float("inf")
    assert interval_loss(s, torch.tensor([2.0, 2.0, -inf]), torch.tensor([2.0, 4.0, 5.5])).tolist() == [1.0, 0.0,
                                                                                                       0.25]
    assert score_inv_loss(torch.tensor([1.0]), torch.tensor([3.0])).tolist() == [4.0]
    d = score_dir_loss(torch.tensor([2.0, 2.0, 2.0]), torch.tensor([1.0, 3.0, 2.25]), torch.tensor([1.0, -1.0, 1.0]),
                       torch.tensor([0.0, 0.0, 0.5]))
    assert d.tolist() == [1.0, 1.0, 0.25]


def _grads(fn, *values):
    xs = [torch.tensor(v, requires_grad=True) for v in values]
    fn(*xs).sum().backward()
    return [None if x.grad is None else x.grad.tolist() for x in xs]


def test_loss_gradients_point_the_right_way():
    # gradient descent moves a score towards its target / interval
    g, _ = _grads(lambda s, t: mse_loss(s, t), [1.0, 4.0], [2.0, 2.0])
    assert g[0] < 0 < g[1]
    g, = _grads(lambda s: interval_loss(s, torch.tensor([2.0, 2.0, 2.0]), torch.tensor([3.0, 3.0, 3.0])),
                [1.0, 2.5, 4.0])
    assert g[0] < 0 and g[1] == 0 and g[2] > 0
    # INV: both scores move towards each other; the original stays with detach_orig
    g0, gi = _grads(lambda a, b: score_inv_loss(a, b), [1.0], [3.0])
    assert g0[0] < 0 < gi[0]
    g0, gi = _grads(lambda a, b: score_inv_loss(a, b, detach_orig=True), [1.0], [3.0])
    assert g0 is None and gi[0] > 0
    # DIR up that went down: the perturbation's score is pushed up, the original's down; one that moved enough: 0
    g0, gi = _grads(lambda a, b: score_dir_loss(a, b, torch.tensor([1.0, 1.0])), [2.0, 2.0], [1.0, 3.0])
    assert g0 == [1.0, 0.0] and gi == [-1.0, 0.0]
    g0, gi = _grads(lambda a, b: score_dir_loss(a, b, torch.tensor([-1.0])), [2.0], [3.0])
    assert g0 == [-1.0] and gi == [1.0]


def test_losses_train_a_toy_model_the_right_way():
    """A linear scorer trained by SGD on one loss at a time: the squared error reaches the target, INV
    closes the gap, DIR opens it the stated way by the margin."""
    torch.manual_seed(0)
    x0, x1 = torch.randn(1, 4), torch.randn(1, 4)

    def fit(loss):
        lin = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.05)
        for _ in range(300):
            opt.zero_grad()
            loss(lin(x0)[:, 0], lin(x1)[:, 0]).sum().backward()
            opt.step()
        with torch.no_grad():
            return float(lin(x0)[0, 0]), float(lin(x1)[0, 0])

    s0, _ = fit(lambda a, b: mse_loss(a, torch.tensor([3.0])))
    assert s0 == pytest.approx(3.0, abs=1e-3)
    s0, s1 = fit(lambda a, b: score_inv_loss(a, b))
    assert abs(s1 - s0) < 1e-3
    s0, s1 = fit(lambda a, b: score_dir_loss(a, b, torch.tensor([-1.0]), torch.tensor([1.0])))
    assert s0 - s1 >= 1.0 - 1e-6


# --------------------------------------------------------------------------- streams and minibatches


def _toy_suite():
    return pd.DataFrame([
        _case("m1", "same sentence", "MFT", ["a cat sat", "a dog ran"], "score_near", {"val": 5.0}),
        _case("m2", "unrelated", "MFT", ["stocks fell"], "score_between", {"max": 1.0}),
        _case("i1", "typos", "INV", ["a cat sat", "a cta sat", "a cat sta"], "score_inv"),
        _case("d1", "negation", "DIR", ["a cat sat", "no cat sat"], "score_down", {"margin": 1.0}),
        _case("d2", "lone", "DIR", ["x"], "score_up", {"unperturbed": True}),
    ])


def test_streams_and_batches():
    iid = pd.DataFrame({"text": ["a", "b"], "text_b": ["a", "c"], "label": [5.0, 1.2]})
    streams = build_streams(SIMILARITY, iid, _toy_suite())
    assert {k: len(v) for k, v in streams.items()} == {"DIR": 1, "INV": 1, "MFT": 3, "iid": 2}
    assert [it.target for it in streams["iid"]] == [[5.0, 5.0], [1.2, 1.2]]
    assert [it.target for it in streams["MFT"]] == [[5.0, 5.0], [5.0, 5.0], [-np.inf, 1.0]]
    assert (streams["DIR"][0].direction, streams["DIR"][0].margin) == (-1, 1.0)
    batches = epoch_batches(streams, 2, np.random.default_rng(0))
    assert sorted(b.kind for b in batches) == ["score_dir", "score_inv", "score_mft", "score_mft", "score_mft"]
    for b in batches:
        assert b.texts_b is not None and len(b.texts_b) == len(b.texts)
        if b.kind == "score_dir":
            assert b.directions.tolist() == [-1.0] and b.margins.tolist() == [1.0] and b.texts[1] == "no cat sat"
        if b.kind == "score_inv":
            assert b.texts[0] == "a cat sat" and b.texts[1] in ("a cta sat", "a cat sta")
    bad = pd.DataFrame([_case("x", "f", "MFT", ["a"], "eq", labels=[1])])
    with pytest.raises(DataError, match="expectation 'eq' has no regression training loss"):
        build_streams(SIMILARITY, None, bad)


def test_label_checked_perturbations_score_and_train_the_inputs_they_check():
    """A DIR checked against bounds (negating one sentence: at most 2) ignores the original when scoring
    and trains its perturbations alone, as MFTs; under ``all`` every input counts."""
    params = {"max": 2.0}
    assert _status("score_between", params, [4.5, 1.5, 2.0], "DIR")[0] == "pass"
    assert _status("score_between", params, [4.5, 1.5, 2.5], "DIR")[0] == "fail"
    assert _status("score_between", params, [4.5, 1.5], "DIR", agg="all")[0] == "fail"
    suite = pd.DataFrame([_case("d", "negated", "DIR", ["a cat sat", "no cat sat", "a cat never sat"],
                                "score_between", params),
                          _case("i", "same", "INV", ["a b", "a  b"], "score_near", {"val": 5.0}, agg="all")])
    streams = build_streams(SIMILARITY, None, suite)
    assert list(streams) == ["MFT"]
    assert [(it.inputs[0], it.target) for it in streams["MFT"]] == [
        ("no cat sat", [-np.inf, 2.0]), ("a cat never sat", [-np.inf, 2.0]), ("a b", [5.0, 5.0]),
        ("a  b", [5.0, 5.0])]


def test_classification_items_are_unchanged():
    """A classification item has the fields it had (checkpoint fingerprints hash them) and no regression flag."""
    item = build_streams(SENT, pd.DataFrame({"text": ["good"], "label": [1]}), None)["iid"][0]
    assert type(item) is TrainItem and not item.regression
    assert [f.name for f in dataclasses.fields(item)] == [
        "env", "inputs", "inputs_b", "target", "dir_fn", "dir_slice", "answer", "answer_start", "qa", "targets",
        "anchor", "dir_class"]
    # a field added later is hashed only when set: the item's fingerprint record is the one before it
    from beluga.model.checkpoint import item_record

    assert list(item_record(item)) == [f.name for f in dataclasses.fields(item)][:-1]
    assert item_record(dataclasses.replace(item, dir_class=0))["dir_class"] == 0


# --------------------------------------------------------------------------- metrics and the paired bootstrap


def test_metrics_match_scipy():
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 6, size=50).astype(float)          # ties, as STS-B's gold scores have
    pred = gold + rng.normal(0, 1.5, size=50)
    pred[:5] = 2.0                                             # ties on the predicted side too
    assert pearson(pred, gold) == pytest.approx(scipy.stats.pearsonr(pred, gold)[0], abs=1e-12)
    assert spearman(pred, gold) == pytest.approx(scipy.stats.spearmanr(pred, gold)[0], abs=1e-12)
    assert np.isnan(pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])) and np.isnan(spearman([1.0], [2.0]))
    with pytest.raises(ValueError, match="3 predictions for 2 gold scores"):
        pearson([1, 2, 3], [1, 2])


@pytest.mark.parametrize("metric", ["pearson", "spearman"])
def test_paired_bootstrap_known_answers(metric):
    rng = np.random.default_rng(2)
    gold = rng.uniform(0, 5, size=200)
    good = gold + rng.normal(0, 0.3, size=200)
    poor = gold + rng.normal(0, 3.0, size=200)
    same = paired_bootstrap(gold, good, good.copy(), metric, R=2000, seed=0)
    assert same["delta"] == 0.0 and same["p_value"] == 1.0 and same["ci_low"] == same["ci_high"] == 0.0
    better = paired_bootstrap(gold, poor, good, metric, R=2000, seed=0)
    assert better["delta"] > 0.2 and better["ci_low"] > 0 and better["p_value"] == pytest.approx(2 / 2001)
    assert paired_bootstrap(gold, poor, good, metric, R=2000, seed=0) == better          # seeded: reproducible
    worse = paired_bootstrap(gold, good, poor, metric, R=2000, seed=0)
    assert worse["delta"] == pytest.approx(-better["delta"]) and worse["p_value"] == better["p_value"]
    other = paired_bootstrap(gold, poor, good, metric, R=2000, seed=1)
    assert other["ci_low"] != better["ci_low"]
    # a small, noisy difference is not significant
    close = paired_bootstrap(gold, good, good + rng.normal(0, 0.01, size=200), metric, R=2000, seed=0)
    assert close["p_value"] > 0.05


def test_paired_bootstrap_refuses_undefined_inputs():
    with pytest.raises(ValueError, match="undefined"):
        paired_bootstrap([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="unknown regression metric 'kendall'"):
        paired_bootstrap([1.0, 2.0], [1.0, 2.0], [1.0, 2.0], metric="kendall")


# --------------------------------------------------------------------------- a tiny model, trained and predicted


def _toy_iid(n=24):
    rng = np.random.default_rng(3)
    words = ["cat", "dog", "stock", "market", "rain", "sun", "car", "road"]
    rows = []
    for i in range(n):
        a = " ".join(rng.choice(words, size=3))
        same = i % 2 == 0
        rows.append({"example_id": f"e{i}", "text": a, "text_b": a if same else " ".join(rng.choice(words, size=3)),
                     "label": 5.0 if same else 0.5})
    return pd.DataFrame(rows)


def test_tiny_model_trains_saves_loads_and_predicts(tmp_path):
    from beluga.model.modeling import TINY_RANDOM, load_model, load_trained, save_model, set_seed
    from beluga.model.precision import FP32
    from beluga.score.outcomes import run_outcomes
    from beluga.score.predict import predictions, predictions_table

    iid, suite = _toy_iid(), _toy_suite().iloc[:4]
    streams = build_streams(SIMILARITY, iid, suite)
    outs = []
    for _ in range(2):
        set_seed(0)
        model, tok = load_model(TINY_RANDOM, 1, head="regression", task_type="similarity")
        assert model.config.num_labels == 1 and model.config.problem_type == "regression"
        summary = train_run(model, tok, streams, "vanilla", {"lr": 1e-2, "batch_size": 4, "epochs": 4}, seed=0,
                            task_type="similarity", max_length=32)
        assert all(np.isfinite(summary["epoch_losses"])) and summary["epoch_losses"][-1] < summary["epoch_losses"][0]
        preds = predictions(model, tok, SIMILARITY, suite, iid, batch_size=8, max_length=32, doc_stride=16,
                            precision=FP32)
        outs.append(preds)
    pd.testing.assert_frame_equal(outs[0], outs[1])   # seeded: the same scores
    table = predictions_table(preds, SIMILARITY, "p.parquet")
    assert table.schema == get_head("regression").prediction_schema()
    iid_rows = preds[preds["split"] == "iid_test"]
    assert iid_rows["label"].tolist() == iid["label"].tolist() and suite_rows_null(preds)
    out = run_outcomes(SIMILARITY, suite, preds, iid, held_out=["typos"], source="p.parquet")
    assert set(out.loc[out["split"] == "suite_test", "status"]) <= {"pass", "fail", "filtered"}
    assert np.isfinite(pearson(out["pred_score"].dropna(), out["gold_score"].dropna()))

    save_model(model, tok, tmp_path / "m", task_type="similarity")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert cfg["beluga_task"] == {"task_type": "similarity", "head": "regression", "num_labels": 1}
    again, tok2 = load_trained(str(tmp_path / "m"), "regression", task_type="similarity")
    back = predictions(again, tok2, SIMILARITY, suite, iid, batch_size=8, max_length=32, doc_stride=16,
                       precision=FP32)
    np.testing.assert_allclose(back["score"].to_numpy(float), preds["score"].to_numpy(float), rtol=1e-5, atol=1e-5)
    with pytest.raises(ModelError, match="field 'task': the model has a regression head"):
        load_trained(str(tmp_path / "m"), "classification", task_type="similarity")
    bad = preds.copy()
    bad.loc[0, "score"] = float("inf")
    with pytest.raises(DataError, match="predictions p.parquet \\(not written\\): field 'score'"):
        predictions_table(bad, SIMILARITY, "p.parquet")


def suite_rows_null(preds: pd.DataFrame) -> bool:
    return preds.loc[preds["split"] == "suite_test", "label"].isna().all()


def test_a_classifier_is_not_loaded_as_a_regression_head(tmp_path):
    from beluga.model.modeling import TINY_RANDOM, load_model, load_trained, save_model

    model, tok = load_model(TINY_RANDOM, 2)
    save_model(model, tok, tmp_path / "c")
    with pytest.raises(ModelError, match="field 'num_labels': the model has 2 outputs"):
        load_trained(str(tmp_path / "c"), "regression", task_type="similarity")


@pytest.mark.parametrize("method, hparams", [("irm", {"irm_dummy": "scalar", "irm_penalty_anneal_iters": 1}),
                                             ("irm", {"irm_dummy": "per_class", "irm_penalty_anneal_iters": 1}),
                                             ("group_dro", {}), ("fish", {}), ("l2", {})])
def test_regression_streams_train_with_every_sampling_and_penalty(method, hparams):
    """The per-environment methods (one minibatch per environment, IRM's dummy scale on the scores) and a
    regulariser train a regression head through the same loop: finite losses, the planned steps."""
    from beluga.model.modeling import TINY_RANDOM, load_model, set_seed

    streams = build_streams(SIMILARITY, _toy_iid(8), _toy_suite().iloc[:4])
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 1, head="regression")
    summary = train_run(model, tok, streams, method, {"lr": 1e-3, "batch_size": 4, "epochs": 2, **hparams}, seed=0,
                        task_type="similarity", max_length=32)
    assert summary["steps"] == summary["total_steps"] > 0 and all(np.isfinite(summary["epoch_losses"]))
    if method == "irm":
        assert np.isfinite(summary["method_info"]["irm_final_penalty"])


def test_reference_batching_and_a_resumed_run(tmp_path):
    """Reference batching halves the INV / DIR minibatches of a regression head too; a run resumed from its
    epoch checkpoint (score items, infinite interval bounds included, fingerprinted) ends with the same scores."""
    from beluga.model.modeling import TINY_RANDOM, load_model, set_seed

    streams = build_streams(SIMILARITY, _toy_iid(8), _toy_suite().iloc[:4])
    hp = {"lr": 1e-3, "batch_size": 4, "epochs": 2}
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 1, head="regression")
    summary = train_run(model, tok, streams, "vanilla", hp, seed=0, task_type="similarity", max_length=32,
                        batching="reference")
    assert summary["steps"] == 2 * (2 + 1 + 1 + 1)   # iid 8 / 4, MFT 3 / 4, INV and DIR one case each (4 // 2)
    scores = []
    for _ in range(2):
        set_seed(0)
        model, tok = load_model(TINY_RANDOM, 1, head="regression")
        summary = train_run(model, tok, streams, "vanilla", hp, seed=0, task_type="similarity", max_length=32,
                            checkpoint_dir=str(tmp_path / "ckpt"), checkpoint_every_s=0.0)
        scores.append(get_head("regression").predict(model, tok, ["a cat sat"], ["a dog ran"], max_length=32))
    assert summary["resumed_from_epoch"] == 1
    np.testing.assert_array_equal(scores[0], scores[1])


def test_all_except_first_ignores_the_original_before_unscored_inputs_are_dropped():
    """A label-checked INV / DIR whose original has no label: the first perturbation's result counts (it was
    dropped with the original when the unscored inputs went first), and a case whose only labelled input is
    the original has nothing scored, never a pass of nothing."""
    from beluga.heads.score.cases import score_case_outcome
    from beluga.score.case_rows import FILTERED

    assert score_case_outcome("score_near", {}, "all_except_first", [3.0, 4.0, 4.0], [None, 1.0, 4.0]) == \
        ("fail", None)
    assert score_case_outcome("score_near", {}, "all_except_first", [3.0, 4.0], [None, 1.0]) == ("fail", None)
    assert score_case_outcome("score_near", {}, "all_except_first", [3.0, 1.2], [None, 1.0]) == ("pass", None)
    assert score_case_outcome("score_near", {}, "all_except_first", [3.0, 9.9], [3.0, None])[0] == FILTERED
    assert score_case_outcome("score_inv", {}, "all_except_first", [3.0], None)[0] == FILTERED
