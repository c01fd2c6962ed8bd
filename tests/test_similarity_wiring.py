"""SIMILARITY (issue 40) wired into the i.i.d. metrics, the statistics' features and the config schema:
Pearson / Spearman from outcome rows (beluga.score.metrics), from mean moment features (beluga.report.stats),
the paired randomization test and G at or below 0."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr, spearmanr

from beluga.core.tasks import SIMILARITY_FEATURES, TASK_TYPES
from beluga.report import paired, stats
from beluga.score import metrics

REPO = Path(__file__).resolve().parents[1]


def _rows(pred, gold, split="iid_test"):
    return pd.DataFrame({"split": split, "pred_score": np.asarray(pred, float), "gold_score": np.asarray(gold, float),
                         "correct": None})


def _data(n=40, seed=0, noise=1.0):
    rng = np.random.default_rng(seed)
    gold = np.round(rng.uniform(0, 5, n), 1)
    pred = gold + rng.normal(0, noise, n)
    return pred, gold


def test_iid_metrics_are_pearson_and_spearman_of_the_rows():
    pred, gold = _data()
    pred[3] = pred[4]                                        # a tie in the ranks
    out = metrics.iid_metrics(_rows(pred, gold), "similarity")
    assert list(out) == ["pearson", "spearman"]
    assert out["pearson"] == pytest.approx(pearsonr(pred, gold)[0])
    assert out["spearman"] == pytest.approx(spearmanr(pred, gold)[0])
    assert metrics.iid_score(out, "mean") == pytest.approx((out["pearson"] + out["spearman"]) / 2)
    assert metrics.iid_score(out, "spearman") == out["spearman"]
    # another split's rows are not mixed in; a constant predictor is undefined (NaN), not 0 or 1
    mixed = pd.concat([_rows(pred, gold), _rows(np.full(40, 2.0), gold, "ood:x")], ignore_index=True)
    assert metrics.iid_metrics(mixed, "similarity") == pytest.approx(out)
    assert np.isnan(metrics.iid_metrics(mixed, "similarity", "ood:x")["pearson"])
    const = metrics.iid_metrics(_rows(np.full(40, 2.0), gold), "similarity")
    assert np.isnan(const["pearson"]) and np.isnan(const["spearman"])


def test_features_are_moments_and_the_statistic_matches_the_rows():
    pred, gold = _data(seed=1)
    f = stats.iid_features(_rows(pred, gold), "similarity")
    assert f.shape == (40, len(SIMILARITY_FEATURES)) == (40, 10)
    assert TASK_TYPES["similarity"].iid_features == SIMILARITY_FEATURES
    named = dict(zip(SIMILARITY_FEATURES, f.T))
    np.testing.assert_allclose(named["pred_gold"], pred * gold)
    mean = f.mean(axis=0)
    assert float(stats.iid_statistic(mean, "similarity", "pearson")) == pytest.approx(pearsonr(pred, gold)[0])
    assert float(stats.iid_statistic(mean, "similarity", "spearman")) == pytest.approx(spearmanr(pred, gold)[0])
    assert float(stats.iid_statistic(mean, "similarity")) == pytest.approx(
        metrics.iid_score(metrics.iid_metrics(_rows(pred, gold), "similarity")))
    # a constant predictor: NaN, G NaN; a negative correlation: G 0 (harmonic mean of positive values only)
    fc = stats.iid_features(_rows(np.full(40, 1.5), gold), "similarity").mean(axis=0)
    assert np.isnan(stats.iid_statistic(fc, "similarity", "pearson"))
    neg = float(stats.iid_statistic(stats.iid_features(_rows(-pred, gold), "similarity").mean(axis=0),
                                    "similarity", "pearson"))
    assert neg < 0
    assert float(stats.harmonic_mean(np.array(0.8), np.array(neg))) == 0.0
    assert metrics.g_score(0.8, neg) == 0.0 and metrics.g_score(0.8, 0.0) == 0.0
    with pytest.raises(ValueError, match="iid_metric"):
        stats.iid_statistic(mean, "similarity", "mcc")
    with pytest.raises(ValueError, match="pred_score"):
        stats.iid_features(pd.DataFrame({"gold_score": gold}), "similarity")


def test_paired_test_of_a_correlation_is_the_randomization_test():
    assert not paired.binary_iid_metric("similarity", "mean")
    assert not paired.binary_iid_metric("similarity", "pearson")
    pred, gold = _data(n=60, seed=2, noise=0.3)
    worse = gold + np.random.default_rng(3).normal(0, 2.0, 60)
    good = stats.iid_features(_rows(pred, gold), "similarity")
    bad = stats.iid_features(_rows(worse, gold), "similarity")
    res = paired.paired_randomization([(bad, good)], "similarity", "pearson", R=999, seeds=[0])
    assert res["delta"] == pytest.approx(pearsonr(pred, gold)[0] - pearsonr(worse, gold)[0])
    assert res["p_value"] < 0.01
    same = paired.paired_randomization([(good, good)], "similarity", "pearson", R=99, seeds=[0])
    assert same["p_value"] == 1.0 and same["delta"] == 0.0
    # a near-equal pair is not called significant
    jitter = stats.iid_features(_rows(pred + np.random.default_rng(4).normal(0, 1e-3, 60), gold), "similarity")
    assert paired.paired_randomization([(good, jitter)], "similarity", "mean", R=999, seeds=[0])["p_value"] > 0.05


def test_schema_admits_similarity_and_its_metrics():
    """similarity is admitted now that selection, diagnostics, the OOD tables and Table 3 read scores
    (tests/test_workflow_similarity.py runs it end to end)."""
    import yaml

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    task = schema["properties"]["tasks"]["additionalProperties"]["properties"]
    assert "similarity" in task["type"]["enum"] and "similarity (STS-B" in task["type"]["description"]
    assert {"pearson", "spearman"} <= set(task["iid_metric"]["enum"])
