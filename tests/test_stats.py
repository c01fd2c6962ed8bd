import itertools

import numpy as np
import pandas as pd
import pytest

from beluga.heads.classification import positive_f1
from beluga.report.bootstrap import bootstrap_ci
from beluga.report.stats import (
    Outcomes,
    _PairedNull,
    binomial_test,
    exact_randomization_p,
    holm,
    iid_features,
    iid_statistic,
    randomization_test,
    scores,
)
from beluga.score.metrics import iid_metrics, iid_score

# ---------------------------------------------------------------- helpers


def loop_scores(passed, scored, func_index, n_func, mean_feats, task_type):
    """Straightforward reference: per scenario, per functionality, plain Python."""
    out = {"s_T": [], "s_iid": [], "G": []}
    for s in range(len(passed)):
        rates = []
        for f in range(n_func):
            members = [i for i in range(len(func_index)) if func_index[i] == f]
            n_scored = sum(scored[s][i] for i in members)
            if n_scored > 0:
                rates.append(sum(passed[s][i] for i in members) / n_scored)
        s_t = sum(rates) / len(rates)
        feats = mean_feats[s]
        if task_type == "sent":
            s_iid = feats[0]
        elif task_type == "read":
            s_iid = (feats[0] + feats[1]) / 2
        else:
            tp, fp, fn = feats[1], feats[2], feats[3]
            s_iid = (feats[0] + (2 * tp / (2 * tp + fp + fn) if tp > 0 else 0.0)) / 2
        out["s_T"].append(s_t)
        out["s_iid"].append(s_iid)
        out["G"].append(0.0 if s_t + s_iid == 0 else 2 * s_t * s_iid / (s_t + s_iid))
    return out


def random_iid(rng, task_type, shape, gold):
    """Per-example features (*shape, k) for a random system (para: fixed gold labels)."""
    if task_type == "sent":
        return (rng.random(shape) < 0.7).astype(float)[..., None]
    if task_type == "sent_frac":  # a scenario averaged over 5 fold models
        return (rng.integers(0, 6, size=shape) / 5.0)[..., None]
    if task_type == "read":
        em = rng.random(shape) < 0.6
        return np.stack([em.astype(float), np.where(em, 1.0, rng.random(shape) * 0.8)], axis=-1)
    pred = np.where(rng.random(shape) < 0.75, gold, 1 - gold)
    return np.stack([pred == gold, (pred == 1) & (gold == 1), (pred == 1) & (gold == 0),
                     (pred == 0) & (gold == 1)], axis=-1).astype(float)


def make_pair(rng, task_type="sent", n=40, n_func=5, m=30, S=4, n_diff_case=6, n_diff_iid=6, scored_flip=True):
    """Baseline (S=1) and system (S) that differ on exactly n_diff_case cases and n_diff_iid examples.
    Functionality n_func - 1 has nothing scored (in both systems)."""
    fi = rng.permutation(np.arange(n) % n_func)
    scored = (rng.random(n) < 0.85).astype(float)
    scored[fi == n_func - 1] = 0
    passed = (rng.random(n) < 0.6) * scored
    gold = (rng.random(m) < 0.4).astype(int)
    base = Outcomes(passed, scored, random_iid(rng, task_type, (m,), gold))
    sp, sc, si = np.tile(passed, (S, 1)), np.tile(scored, (S, 1)), np.tile(base.iid, (S, 1, 1))
    candidates = np.flatnonzero(fi != n_func - 1)
    for i in rng.choice(candidates, n_diff_case, replace=False):
        while np.all(sp[:, i] == passed[i]) and np.all(sc[:, i] == scored[i]):
            if scored_flip:
                sc[:, i] = np.where(rng.random(S) < 0.25, 1 - scored[i], scored[i])
            sp[:, i] = (rng.random(S) < 0.5) * sc[:, i]
    for j in rng.choice(m, n_diff_iid, replace=False):
        while np.all(si[:, j] == base.iid[0, j]):
            si[:, j] = random_iid(rng, task_type, (S,), np.full(S, gold[j]))
    return fi, base, Outcomes(sp, sc, si)


def naive_null(base, system, fi, n_func, task_type, case_mask, iid_mask):
    """ΔG after swapping the masked units, by building the swapped outcomes and calling scores()."""
    tt = task_of(task_type)
    bp, bs = np.broadcast_to(base.passed, system.passed.shape), np.broadcast_to(base.scored, system.scored.shape)
    bi = np.broadcast_to(base.iid, system.iid.shape)
    mc, mi = case_mask.astype(bool), iid_mask.astype(bool)[None, :, None]
    x = Outcomes(np.where(mc, bp, system.passed), np.where(mc, bs, system.scored), np.where(mi, bi, system.iid))
    y = Outcomes(np.where(mc, system.passed, bp), np.where(mc, system.scored, bs), np.where(mi, system.iid, bi))
    gx, gy = scores(x, fi, n_func, tt)["G"], scores(y, fi, n_func, tt)["G"]
    return gx - gy, gx.mean() - gy.mean()


def task_of(kind):
    return "sent" if kind == "sent_frac" else kind


# ---------------------------------------------------------------- features and scores


def test_iid_features_match_metrics_module():
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 2, 50)
    pred = np.where(rng.random(50) < 0.7, gold, 1 - gold)
    rows = pd.DataFrame({"split": "iid_test", "pred_label": pred, "gold_label": gold,
                         "correct": pd.array(pred == gold, dtype="boolean")})
    feats = iid_features(rows, "para")
    assert feats.shape == (50, 4)
    tp = ((pred == 1) & (gold == 1)).sum()
    assert feats[:, 1].sum() == tp and feats[:, 2].sum() == ((pred == 1) & (gold == 0)).sum()
    assert feats[:, 3].sum() == ((pred == 0) & (gold == 1)).sum()
    mean = feats.mean(axis=0)
    assert iid_statistic(mean, "para", "f1") == pytest.approx(positive_f1(pred, gold))
    assert iid_statistic(mean, "para", "accuracy") == pytest.approx((pred == gold).mean())
    assert iid_statistic(mean, "para") == pytest.approx(iid_score(iid_metrics(rows, "para"), "mean"))

    read = pd.DataFrame({"split": "iid_test", "correct": [True, False, False], "em": [1.0, 0.0, 0.0],
                         "f1": [1.0, 0.5, 0.0]})
    f = iid_features(read, "read")
    assert f.shape == (3, 2)
    assert iid_statistic(f.mean(0), "read") == pytest.approx(iid_score(iid_metrics(read, "read"), "mean"))
    assert iid_features(read, "sent").ravel().tolist() == [1.0, 0.0, 0.0]


def test_para_f1_is_zero_without_true_positives():
    # no true positive but false positives / negatives: F1 is 0, not 0/0
    assert iid_statistic(np.array([0.5, 0.0, 0.25, 0.25]), "para", "f1") == 0.0
    assert iid_statistic(np.array([0.5, 0.0, 0.25, 0.25]), "para") == pytest.approx(0.25)
    # batched: (..., k)
    out = iid_statistic(np.array([[[0.9, 0.3, 0.1, 0.1]], [[0.8, 0.0, 0.0, 0.2]]]), "para", "f1")
    assert out.shape == (2, 1)
    assert out[0, 0] == pytest.approx(0.6 / 0.8) and out[1, 0] == 0.0


def test_iid_statistic_metric_selection_and_error():
    f = np.array([0.4, 0.6])
    assert iid_statistic(f, "read", "em") == pytest.approx(0.4)
    assert iid_statistic(f, "read", "f1") == pytest.approx(0.6)
    assert iid_statistic(f, "read") == pytest.approx(0.5)
    assert iid_statistic(np.array([0.8]), "sent", "accuracy") == pytest.approx(0.8)
    with pytest.raises(ValueError, match="iid_metric"):
        iid_statistic(f, "read", "accuracy")
    with pytest.raises(ValueError, match="iid_metric"):
        iid_statistic(np.array([0.8]), "sent", "f1")
    with pytest.raises(ValueError, match="task_type"):
        iid_statistic(f, "qa")


@pytest.mark.parametrize("task_type", ["sent", "para", "read"])
def test_scores_agree_with_loop(task_type):
    rng = np.random.default_rng(7)
    S, n, n_func, m = 4, 60, 6, 25
    fi = rng.integers(0, n_func - 1, n)  # functionality n_func - 1 has no case at all
    scored = (rng.random((S, n)) < 0.8).astype(float)
    scored[:, fi == 2] = 0  # functionality 2: every case filtered
    passed = (rng.random((S, n)) < 0.55) * scored
    gold = rng.integers(0, 2, m)
    iid = random_iid(rng, task_type, (S, m), gold)
    got = scores(Outcomes(passed, scored, iid), fi, n_func, task_type)
    ref = loop_scores(passed, scored, fi, n_func, iid.mean(axis=1), task_type)
    for key in ("s_T", "s_iid", "G"):
        assert got[key].shape == (S,)
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-12)
    assert got["G_avg"] == pytest.approx(np.mean(ref["G"]))


def test_outcomes_validation():
    with pytest.raises(ValueError, match="passed"):
        Outcomes(np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.zeros((3, 1)))  # passed but not scored
    with pytest.raises(ValueError, match="passed"):
        Outcomes(np.array([0.5, 0.0]), np.array([1.0, 1.0]), np.zeros((3, 1)))
    o = Outcomes(np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.zeros((3, 1)))
    assert o.passed.shape == (1, 2) and o.iid.shape == (1, 3, 1)


# ---------------------------------------------------------------- binomial and Holm


def test_binomial_identical_and_all_discordant_for_system():
    a = np.array([True, False, True, True, False])
    r = binomial_test(a, a)
    assert r["n_discordant"] == 0 and r["p_value"] == 1.0
    base = np.zeros(50, dtype=bool)
    base[:20] = True
    system = base.copy()
    system[20:50] = True  # 30 discordant examples, all right for the system only
    r = binomial_test(base, system)
    assert (r["n_discordant"], r["a_only"], r["b_only"]) == (30, 0, 30)
    assert r["p_value"] < 1e-6
    assert r["p_value"] == pytest.approx(2 * 0.5 ** 30, rel=1e-9)
    # symmetric: the baseline right on all of them gives the same p
    assert binomial_test(system, base)["p_value"] == pytest.approx(r["p_value"], rel=1e-12)


def test_holm_hand_worked():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
    out = holm([0.01, np.nan, 0.04, 0.03, 0.005])
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[[0, 2, 3, 4]], [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])  # capped at 1
    np.testing.assert_allclose(holm([0.2]), [0.2])


# ---------------------------------------------------------------- randomization


def test_identical_systems_give_p_one():
    rng = np.random.default_rng(3)
    fi, base, _ = make_pair(rng)
    same = Outcomes(np.tile(base.passed, (4, 1)), np.tile(base.scored, (4, 1)), np.tile(base.iid, (4, 1, 1)))
    r = randomization_test(base, same, fi, 5, "sent", R=500, seed=1)
    assert r["n_units"] == 0
    np.testing.assert_array_equal(r["delta"], 0.0)
    np.testing.assert_array_equal(r["p"], 1.0)
    assert r["p_avg"] == 1.0
    assert exact_randomization_p(base, same, fi, 5, "sent")["p_avg"] == 1.0
    assert binomial_test(base.iid[0, :, 0] > 0.5, same.iid[1, :, 0] > 0.5)["p_value"] == 1.0


@pytest.mark.parametrize("kind", ["sent", "para", "read", "sent_frac"])
def test_exact_enumeration_matches_naive_recomputation(kind):
    rng = np.random.default_rng({"sent": 11, "para": 12, "read": 13, "sent_frac": 14}[kind])
    fi, base, system = make_pair(rng, kind, n_diff_case=4, n_diff_iid=4)
    tt = task_of(kind)
    ex = exact_randomization_p(base, system, fi, 5, tt, return_null=True)
    assert ex["n_units"] == 8
    bp = np.broadcast_to(base.passed, system.passed.shape)
    bs = np.broadcast_to(base.scored, system.scored.shape)
    cases = np.flatnonzero(np.any((bp != system.passed) | (bs != system.scored), axis=0))
    examples = np.flatnonzero(np.any(system.iid != base.iid, axis=(0, 2)))
    units = [("c", i) for i in cases] + [("e", j) for j in examples]
    obs, obs_avg = naive_null(base, system, fi, 5, kind, np.zeros(40), np.zeros(30))
    np.testing.assert_allclose(ex["delta"], obs, atol=1e-12)
    nulls, nulls_avg = [], []
    for pattern in itertools.product([0, 1], repeat=len(units)):
        mc, mi = np.zeros(40), np.zeros(30)
        for bit, (what, idx) in zip(pattern, units):
            (mc if what == "c" else mi)[idx] = bit
        d, d_avg = naive_null(base, system, fi, 5, kind, mc, mi)
        nulls.append(d)
        nulls_avg.append(d_avg)
    nulls, nulls_avg = np.array(nulls), np.array(nulls_avg)
    np.testing.assert_allclose(np.sort(ex["null"], axis=0), np.sort(nulls, axis=0), atol=1e-12)
    np.testing.assert_allclose(np.sort(ex["null_avg"]), np.sort(nulls_avg), atol=1e-12)
    np.testing.assert_allclose(ex["p"], (np.abs(nulls) >= np.abs(obs) - 1e-12).mean(axis=0))
    assert ex["p_avg"] == pytest.approx((np.abs(nulls_avg) >= abs(obs_avg) - 1e-12).mean())


@pytest.mark.parametrize("kind", ["para", "sent_frac"])
def test_vectorized_null_matches_naive_on_multiword_blocks(kind):
    # > 64 differing cases in one functionality (several packed words per block), scored flips, random masks
    rng = np.random.default_rng(5)
    fi, base, system = make_pair(rng, kind, n=400, n_func=3, m=150, n_diff_case=150, n_diff_iid=70)
    tt = task_of(kind)
    pn = _PairedNull(base, system, fi, 3, tt, "mean")
    assert pn.u_case == 150 and pn.u_iid == 70 and not pn.single_words and pn.scored_varies
    masks = (rng.random((20, pn.u)) < 0.5).astype(np.uint8)
    d, d_avg = pn.null(pn.pack(masks))
    for r in range(len(masks)):
        mc, mi = np.zeros(400), np.zeros(150)
        mc[pn.case_units] = masks[r, :pn.u_case]
        mi[pn.iid_units] = masks[r, pn.u_case:]
        ref, ref_avg = naive_null(base, system, fi, 3, kind, mc, mi)
        np.testing.assert_allclose(d[r], ref, atol=1e-12)
        assert d_avg[r] == pytest.approx(ref_avg, abs=1e-12)


@pytest.mark.parametrize("kind", ["sent", "para", "read"])
def test_randomization_agrees_with_exact(kind):
    rng = np.random.default_rng(21)
    fi, base, system = make_pair(rng, kind, n_diff_case=7, n_diff_iid=5)
    tt = task_of(kind)
    ex = exact_randomization_p(base, system, fi, 5, tt)
    assert ex["n_units"] == 12
    ap = randomization_test(base, system, fi, 5, tt, R=20_000, seed=3)
    np.testing.assert_allclose(ap["delta"], ex["delta"])
    np.testing.assert_allclose(ap["p"], ex["p"], atol=0.02)
    assert ap["p_avg"] == pytest.approx(ex["p_avg"], abs=0.02)
    assert np.all(ap["p"] > 0.03)  # a few swapped units among 12 cannot be significant: p is not tiny


def test_randomization_on_iid_only_differences_is_the_sign_test():
    # suite outcomes identical; 12 discordant i.i.d. examples, 9 right for the system only, 3 for the baseline only:
    # |ΔG'| grows with |#system-right - 6|, so the exact randomization p is the two-sided binomial p
    rng = np.random.default_rng(9)
    n, m = 30, 40
    fi = np.arange(n) % 3
    passed = (rng.random(n) < 0.6).astype(float)
    base_correct = np.zeros(m)
    base_correct[:20] = 1
    base_correct[20:23] = 1  # baseline-only
    sys_correct = np.zeros(m)
    sys_correct[:20] = 1
    sys_correct[23:32] = 1  # system-only
    base = Outcomes(passed, np.ones(n), base_correct[:, None])
    system = Outcomes(np.tile(passed, (4, 1)), np.ones((4, n)), np.tile(sys_correct[:, None], (4, 1, 1)))
    b = binomial_test(base_correct > 0, sys_correct > 0)
    assert (b["a_only"], b["b_only"]) == (3, 9)
    ex = exact_randomization_p(base, system, fi, 3, "sent")
    np.testing.assert_allclose(ex["p"], b["p_value"], rtol=1e-12)
    assert ex["p_avg"] == pytest.approx(b["p_value"], rel=1e-12)
    ap = randomization_test(base, system, fi, 3, "sent", R=20_000, seed=0)
    np.testing.assert_allclose(ap["p"], b["p_value"], atol=0.02)
    assert np.all(ap["delta"] > 0)


def test_same_swap_for_every_scenario():
    # a system with identical outcomes in its 4 scenarios: every permuted ΔG' is the same in all scenarios,
    # which fails if scenarios drew their own masks
    rng = np.random.default_rng(4)
    fi, base, system = make_pair(rng, S=1, n_diff_case=10, n_diff_iid=10)
    system4 = Outcomes(np.tile(system.passed, (4, 1)), np.tile(system.scored, (4, 1)), np.tile(system.iid, (4, 1, 1)))
    r = randomization_test(base, system4, fi, 5, "sent", R=300, seed=2, return_null=True)
    assert np.ptp(r["null"], axis=1).max() < 1e-12
    assert np.unique(np.round(r["null"][:, 0], 12)).size > 5  # and the draws do vary


def test_seeded_reproducibility_and_p_from_null():
    rng = np.random.default_rng(8)
    fi, base, system = make_pair(rng, "para", n=200, m=100, n_diff_case=60, n_diff_iid=40)
    a = randomization_test(base, system, fi, 5, "para", R=3000, seed=42, return_null=True)
    b = randomization_test(base, system, fi, 5, "para", R=3000, seed=42, return_null=True)
    c = randomization_test(base, system, fi, 5, "para", R=3000, seed=43, return_null=True)
    np.testing.assert_array_equal(a["p"], b["p"])
    np.testing.assert_array_equal(a["null"], b["null"])
    np.testing.assert_array_equal(a["null_avg"], b["null_avg"])
    assert a["p_avg"] == b["p_avg"]
    assert not np.array_equal(a["null"], c["null"])
    assert a["null"].shape == (3000, 4) and a["null_avg"].shape == (3000,)
    np.testing.assert_allclose(a["null_avg"], a["null"].mean(axis=1), atol=1e-12)
    count = (np.abs(a["null"]) >= np.abs(a["delta"]) - 1e-12).sum(axis=0)
    np.testing.assert_array_equal(a["p"], (count + 1) / 3001)
    count_avg = (np.abs(a["null_avg"]) >= abs(a["delta_avg"]) - 1e-12).sum()
    assert a["p_avg"] == (count_avg + 1) / 3001
    g_sys = scores(system, fi, 5, "para")["G"]
    g_base = scores(base, fi, 5, "para")["G"]
    np.testing.assert_allclose(a["delta"], g_sys - g_base, atol=1e-12)


def test_p_is_never_zero():
    n, m = 200, 100
    fi = np.arange(n) % 4
    base = Outcomes(np.zeros(n), np.ones(n), np.zeros((m, 1)))
    system = Outcomes(np.ones((4, n)), np.ones((4, n)), np.ones((4, m, 1)))
    r = randomization_test(base, system, fi, 4, "sent", R=199, seed=0)
    np.testing.assert_array_equal(r["p"], 1 / 200)
    assert r["p_avg"] == 1 / 200
    np.testing.assert_allclose(r["delta"], 1.0)


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_coverage():
    # 200 synthetic data sets: 4 functionalities x 50 Bernoulli(0.7) cases (s_T = 0.7), and 100 READ examples with
    # em ~ Bernoulli(0.6), f1 = 1 if em else Uniform(0, 0.8) (s_iid = mean(em, f1) = (0.6 + 0.76) / 2 = 0.68)
    rng = np.random.default_rng(2024)
    fi = np.repeat(np.arange(4), 50)
    cover_t = cover_iid = 0
    for rep in range(200):
        passed = (rng.random(200) < 0.7).astype(float)
        em = rng.random(100) < 0.6
        iid = np.stack([em.astype(float), np.where(em, 1.0, rng.random(100) * 0.8)], axis=-1)
        ci = bootstrap_ci([Outcomes(passed, np.ones(200), iid)], fi, 4, "read", R=300, seeds=[rep])
        cover_t += ci["s_T"][0, 0] <= 0.7 <= ci["s_T"][0, 1]
        cover_iid += ci["s_iid"][0, 0] <= 0.68 <= ci["s_iid"][0, 1]
    assert 0.88 <= cover_t / 200 <= 0.99
    assert 0.88 <= cover_iid / 200 <= 0.99


def test_bootstrap_is_stratified_by_functionality():
    # functionality 0 always passes, 1 never: every within-functionality resample has s_T = 0.5 exactly
    fi = np.repeat([0, 1], 30)
    o = Outcomes(np.repeat([1.0, 0.0], 30), np.ones(60), (np.arange(20) % 2).astype(float)[:, None])
    ci = bootstrap_ci([o], fi, 2, "sent", R=200, seeds=[0])
    np.testing.assert_array_equal(ci["s_T"], [[0.5, 0.5]])
    assert ci["s_iid"][0, 0] < 0.5 < ci["s_iid"][0, 1]


@pytest.mark.parametrize("kind", ["sent", "para", "read"])
def test_bootstrap_interval_contains_point_estimate(kind):
    rng = np.random.default_rng(6)
    fi, base, system = make_pair(rng, kind, n=300, m=200, n_diff_case=100, n_diff_iid=60)
    tt = task_of(kind)
    point = scores(system, fi, 5, tt)
    ci = bootstrap_ci([system], fi, 5, tt, R=400, seeds=[1], level=0.9)
    for key in ("s_T", "s_iid", "G"):
        assert ci[key].shape == (4, 2)
        assert np.all(ci[key][:, 0] <= point[key]) and np.all(point[key] <= ci[key][:, 1])
        assert np.all(ci[key][:, 0] < ci[key][:, 1])
    assert ci["G_avg"].shape == (2,)
    assert ci["G_avg"][0] <= point["G_avg"] <= ci["G_avg"][1]
    again = bootstrap_ci([system], fi, 5, tt, R=400, seeds=[1], level=0.9)
    np.testing.assert_array_equal(again["G"], ci["G"])

