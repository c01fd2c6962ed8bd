"""No ▲ / ▼ contradicts its test: a cell's mark comes from a test of the score the cell shows (Table 3's
i.i.d. column, the OOD tables), and the randomization test of G swaps as ``statistics.swaps`` says.

The worked example (issue 34) at QQP's test size, 20,000 pairs, 7,400 of them duplicates (class 1):
  baseline  tp 4,993  fp 393    fn 2,407   accuracy 17,200 / 20,000 = 86.0   F1 9,986 / 12,786 = 78.10
  system    tp 7,247  fp 3,007  fn 153     accuracy 16,840 / 20,000 = 84.2   F1 14,494 / 17,654 = 82.10
  ("variant": system F1 80.5)  tp 6,523  fp 2,283  fn 877   accuracy 84.2   F1 13,046 / 16,206 = 80.50
(F1 = 2 tp / (2 tp + fp + fn)). Pairing: as few discordant examples as the counts allow (a duplicate right for
the baseline is right for the system; a non-duplicate right for the system is right for the baseline):
4,868 discordant examples, 2,254 right for the system only, 2,614 for the baseline only — the exact binomial
test of accuracy gives p = 2.6e-7 (variant: 3,420 discordant, 1,530 / 1,890, p = 8.0e-10). The mean of accuracy
and F1 rises: 82.05 -> 83.15 (+1.10; variant 82.35, +0.30). Before the fix the i.i.d. cell took p from the
accuracy test and the direction from the mean (▲ on the variant, whose mean does not change significantly);
the OOD cell took both from accuracy (▼ on a cell whose value rose).
"""

import numpy as np
import pandas as pd
import pytest

from beluga.analyses import ood_report
from beluga.analyses.ood_scores import evaluate, ood_significance
from beluga.core.seeds import per_seed_frame
from beluga.report import paired, run_stats, stats, tables
from beluga.report.tables import DOWN, UP
from beluga.score.metrics import scores_over_seeds

N, P = 20_000, 7_400
BASE = (4_993, 393, 2_407)            # tp, fp, fn
SYSTEM = (7_247, 3_007, 153)          # the worked example
VARIANT = (6_523, 2_283, 877)         # system F1 80.5: the mean rises by 0.3 points only


def predictions(base=BASE, system=SYSTEM):
    """(gold, baseline predictions, system predictions) with the counts above and the fewest discordant pairs."""
    gold = np.r_[np.ones(P, dtype=int), np.zeros(N - P, dtype=int)]

    def right(tp, fp):   # duplicates: the last tp right; non-duplicates: the first N - P - fp right
        return np.r_[np.arange(P) >= P - tp, np.arange(N - P) < N - P - fp]

    b_right, s_right = right(*base[:2]), right(*system[:2])
    return gold, np.where(b_right, gold, 1 - gold), np.where(s_right, gold, 1 - gold)


def features(gold, pred):
    return stats.iid_features(pd.DataFrame({"correct": (pred == gold).astype(float), "pred_label": pred,
                                            "gold_label": gold}), "para")


def test_the_example_has_the_stated_counts():
    gold, b, s = predictions()
    _, _, v = predictions(system=VARIANT)
    for pred, (tp, fp, fn), acc, f1 in ((b, BASE, 0.86, 0.781), (s, SYSTEM, 0.842, 0.821), (v, VARIANT, 0.842, 0.805)):
        assert ((pred == 1) & (gold == 1)).sum() == tp and ((pred == 1) & (gold == 0)).sum() == fp
        assert ((pred == 0) & (gold == 1)).sum() == fn
        f = features(gold, pred).mean(axis=0)
        assert stats.iid_statistic(f, "para", "accuracy") == pytest.approx(acc, abs=1e-12)
        assert stats.iid_statistic(f, "para", "f1") == pytest.approx(f1, abs=5e-5)
    t = stats.binomial_test(b == gold, s == gold)
    assert (t["n_discordant"], t["b_only"], t["a_only"]) == (4_868, 2_254, 2_614) and t["p_value"] < 1e-6


# ---------------------------------------------------------------- Table 3
FUNCS = ["f1", "f2"]


def task_data(system=SYSTEM, seeds=1) -> list[run_stats.TaskData]:
    """One pair (iid_to_t / vanilla, scenarios seen and func) against the IID model: the suite outcomes the
    same for both (G differs through s_iid only), the i.i.d. examples those of :func:`predictions`."""
    gold, b, s = predictions(system=system)
    passed = np.array([1, 0, 1, 1, 0, 1], dtype=float)
    fi = np.array([0, 0, 0, 1, 1, 1])
    base = stats.Outcomes(passed, np.ones(6), features(gold, b))
    sys_ = stats.Outcomes(np.stack([passed, passed]), np.ones((2, 6)), np.stack([features(gold, s)] * 2))
    return [run_stats.TaskData("para", np.array([f"c{i}" for i in range(6)]), fi, FUNCS,
                               np.array([f"e{i:05d}" for i in range(N)]), ["seen", "func"], base,
                               {("iid_to_t", "vanilla"): sys_}) for _ in range(seeds)]


def table3(data: run_stats.TaskData, iid_metric: str, R: int = 1000) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    sig, null = run_stats.significance_table([data], iid_metric=iid_metric, R=R, seeds=[3])
    rows = []
    for conf, method, o, scen in ((("iid", "vanilla", data.base, ["standard"])),
                                  ("iid_to_t", "vanilla", data.systems[("iid_to_t", "vanilla")], data.scenarios)):
        sc = stats.scores(o, data.func_index, len(FUNCS), "para", iid_metric)
        f = o.iid[0].mean(axis=0)
        rows.append({"configuration": conf, "method": method, "iid_score": float(sc["s_iid"][0]),
                     "iid_accuracy": float(stats.iid_statistic(f, "para", "accuracy")),
                     "iid_f1": float(stats.iid_statistic(f, "para", "f1")),
                     **{f"G_{s}": float(sc["G"][k]) for k, s in enumerate(scen)}})
    scores = pd.DataFrame(rows)
    long = run_stats.table3_long({"para": {"scores": scores_over_seeds(per_seed_frame({0: scores})),
                                           "seed_scores": per_seed_frame({0: scores}), "significance": sig,
                                           "null": null,
                                           "intervals": run_stats.interval_table([data], iid_metric=iid_metric,
                                                                                 R=100)}}, 0.05, "none")
    return sig.set_index("column"), long, tables.table3_markdown(long, 0.05, "none")


def iid_cell(md: str) -> str:
    """The pair's i.i.d. cell of Table 3's Markdown, bold marks removed."""
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in md.splitlines() if ln.startswith("| ")]
    head, pair = rows[0], next(r for r in rows if r[0] == "IID→T")
    return pair[head.index("PARA · i.i.d.")].replace("**", "")


def test_table3_iid_cell_of_a_two_metric_mean_is_not_marked_by_the_accuracy_test():
    """The variant: accuracy drops significantly (binomial p = 8.0e-10), the mean of accuracy and F1 rises by 0.3
    points, not significantly — before the fix the cell showed 82.4 ▲ (accuracy's p, the mean's sign)."""
    data, = task_data(VARIANT)
    sig, long, md = table3(data, "mean")
    row = sig.loc["iid"]
    hand = ((0.842 - 0.860) + (13_046 / 16_206 - 9_986 / 12_786)) / 2     # = 0.0030000
    assert row["test"] == "randomization" and row["delta"] == pytest.approx(hand, abs=1e-12)
    gold, b, v = predictions(system=VARIANT)
    again = paired.paired_randomization([(features(gold, b), features(gold, v))], "para", "mean", R=1000, seeds=[3])
    assert row["p_value"] == again["p_value"] and row["p_value"] > 0.05    # the one code path, the same draws
    assert row["n_discordant"] == 3_420 and row["direction"] == 0
    assert iid_cell(md) == "82.4"


def test_table3_iid_cell_of_the_worked_example_is_tested_on_the_mean():
    """The worked example's mean rises by 1.1 points; its own test (paired randomization, accuracy and F1
    recomputed per draw) finds that rise significant, p ≈ 0.006 — not the accuracy test's 2.6e-7."""
    data, = task_data(SYSTEM)
    sig, _, md = table3(data, "mean")
    row = sig.loc["iid"]
    gold, b, s = predictions()
    again = paired.paired_randomization([(features(gold, b), features(gold, s))], "para", "mean", R=1000, seeds=[3])
    assert row["test"] == "randomization" and row["p_value"] == again["p_value"] >= 1 / 1001
    assert 0.002 < row["p_value"] < 0.02 and row["delta"] > 0 and row["direction"] == 1
    assert iid_cell(md) == f"83.2 {UP}"


def test_table3_iid_cell_showing_accuracy_keeps_the_binomial_test():
    data, = task_data(VARIANT)
    sig, _, md = table3(data, "accuracy")
    row = sig.loc["iid"]
    assert row["test"] == "binomial" and row["p_value"] < 1e-8 and row["direction"] == -1
    assert np.isnan(row["R"]) and (row["baseline_only"], row["system_only"]) == (1_890, 1_530)
    assert iid_cell(md) == f"84.2 {DOWN}"


def test_table3_iid_randomization_over_training_seeds_is_the_pooled_test():
    datas = task_data(VARIANT, seeds=2)
    sig, _ = run_stats.significance_table(datas, iid_metric="mean", R=200, seeds=[5, [5, 1]], training_seeds=[0, 1])
    row = sig.set_index("column").loc["iid"]
    gold, b, v = predictions(system=VARIANT)
    pair = (features(gold, b), features(gold, v))
    want = paired.paired_randomization([pair, pair], "para", "mean", R=200, seeds=[5, [5, 1]])
    assert row["p_value"] == want["p_value"] and row["n_seeds"] == 2 and row["test"] == "randomization"


# ---------------------------------------------------------------- OOD table
def ood_runs(system=SYSTEM, task_type="para"):
    gold, b, s = predictions(system=system)
    ids = [f"e{i:05d}" for i in range(N)]

    def out(pred):
        part = pd.DataFrame({"case_id": ids, "correct": pd.array(pred == gold, dtype="boolean"),
                             "pred_label": pred, "gold_label": gold})
        return pd.concat([part.assign(split="iid_test"), part.assign(split="ood:s")], ignore_index=True)

    return [{"configuration": "iid", "method": "vanilla", "partition": "standard", "fold": "all", "path": "b",
             "outcomes": out(b)},
            {"configuration": "iid_to_t", "method": "vanilla", "partition": "seen", "fold": "all", "path": "s",
             "outcomes": out(s)}]


@pytest.mark.parametrize(("system", "direction", "cell"), [(SYSTEM, 1, f"83.2{UP}"), (VARIANT, 0, "82.4")])
def test_ood_cell_is_marked_by_a_test_of_its_own_score(system, direction, cell):
    """The OOD cell shows the mean of accuracy and F1; before the fix both cases were ▼ (the accuracy test)."""
    res = evaluate(ood_runs(system), ["s"], "para", "para", R=1000, seed=0)
    sig = res.sig.set_index("configuration").loc["iid_to_t"]
    r = res.table.set_index("configuration").loc["iid_to_t"]
    assert sig["test"] == "randomization" and r["s_delta"] > 0 and r["s_direction"] == direction
    assert sig["delta"] == pytest.approx(r["s_delta"] / 100, abs=1e-12)
    row = next(ln for ln in ood_report.ood_table_markdown(res.table, ["s"], "para", 0.05, "none",
                                                          task_type="para").splitlines() if "IID→T" in ln)
    assert row.split("|")[3].strip() == cell


def test_ood_read_is_tested_on_the_mean_of_em_and_f1():
    """READ: EM and F1 per example; the cell's score is their mean. Baseline EM 1,0,0,0 / F1 1,.5,.5,0;
    system EM 0,1,0,0 / F1 .5,1,.5,.5: Δ = ((1/4 - 1/4) + (2.5/4 - 2/4)) / 2 = 1/16."""
    def out(em, f1):
        return pd.DataFrame({"case_id": list("abcd"), "split": "ood:s", "correct": pd.array(em, dtype="boolean"),
                             "em": em, "f1": f1})

    runs = [{"configuration": "iid", "method": "vanilla", "path": "b", "outcomes": out([1., 0, 0, 0], [1, .5, .5, 0])},
            {"configuration": "iid_to_t", "method": "vanilla", "path": "s",
             "outcomes": out([0., 1, 0, 0], [.5, 1, .5, .5])}]
    sig = ood_significance(runs, ["s"], 0.05, "none", task_type="read", R=500, seed=1, task="read").iloc[0]
    assert sig["test"] == "randomization" and sig["delta"] == pytest.approx(1 / 16)
    # three examples differ: 2^3 swap patterns, |Δ'| >= 1/16 in all but those giving Δ' = 0
    assert sig["n_discordant"] == 3 and 0.5 < sig["p_value"] <= 1


# ---------------------------------------------------------------- statistics.swaps
def two_scenarios(c: int = 2):
    """SENT, one functionality of c cases the baseline fails and the system passes in both scenarios
    (seen, func); two i.i.d. examples, the same for both (accuracy 1/2). G(baseline) = 0 (s_T = 0),
    G(system) = 2 * 1 * 0.5 / 1.5 = 2/3 in each scenario: ΔG = ΔG_avg = 2/3."""
    iid = np.array([[1.0], [0.0]])
    base = stats.Outcomes(np.zeros(c), np.ones(c), iid)
    system = stats.Outcomes(np.ones((2, c)), np.ones((2, c)), np.stack([iid, iid]))
    return base, system, np.zeros(c, dtype=int)


def test_swaps_shared_and_independent_exact_p_by_hand():
    """c = 2 cases. shared: j of the 2 cases swapped in both scenarios (j = 0, 1, 2 with 1/4, 1/2, 1/4):
    ΔG_avg' = 2/3, 0, -2/3, p_avg = P(|ΔG_avg'| >= 2/3) = 1/2. independent: j1, j2 per scenario, ΔG_avg' =
    (Δ1' + Δ2') / 2 reaches ±2/3 only when both scenarios are at the same extreme: p_avg = 2 (1/4)² = 1/8.
    A scenario's own p: P(|Δ'| >= 2/3) = 1/2 either way."""
    base, system, fi = two_scenarios()
    shared = stats.exact_randomization_p(base, system, fi, 1, "sent")
    indep = stats.exact_randomization_p(base, system, fi, 1, "sent", swaps="independent")
    assert shared["n_units"] == 2 and indep["n_units"] == 4
    assert shared["delta_avg"] == indep["delta_avg"] == pytest.approx(2 / 3)
    assert shared["p_avg"] == 0.5 and indep["p_avg"] == 0.125
    np.testing.assert_array_equal(shared["p"], [0.5, 0.5])
    np.testing.assert_array_equal(indep["p"], [0.5, 0.5])
    approx = stats.randomization_test(base, system, fi, 1, "sent", R=20_000, seed=4, swaps="independent")
    assert approx["p_avg"] == pytest.approx(0.125, abs=0.01) and approx["p"] == pytest.approx([0.5, 0.5], abs=0.015)
    with pytest.raises(ValueError, match="statistics.swaps"):
        stats.randomization_test(base, system, fi, 1, "sent", R=10, swaps="per-scenario")


def test_swaps_independent_keeps_one_swap_per_iid_example():
    """Suite outcomes equal, one i.i.d. example differing: shared and independent draw the same ΔG_avg' (the
    example swaps in both scenarios at once), exactly: p_avg = 1 both ways (Δ' = ±Δ)."""
    iid_b, iid_s = np.array([[1.0], [0.0]]), np.array([[1.0], [1.0]])
    base = stats.Outcomes(np.array([1.0, 0.0]), np.ones(2), iid_b)
    system = stats.Outcomes(np.array([[1.0, 0.0]] * 2), np.ones((2, 2)), np.stack([iid_s, iid_s]))
    for swaps in stats.SWAPS:
        ex = stats.exact_randomization_p(base, system, np.zeros(2, dtype=int), 1, "sent", swaps=swaps,
                                         return_null=True)
        assert ex["n_units"] == 1 and ex["p_avg"] == 1.0
        np.testing.assert_allclose(np.sort(ex["null_avg"]), [-ex["delta_avg"], ex["delta_avg"]])


def test_swaps_independent_with_one_scenario_is_shared():
    rng = np.random.default_rng(0)
    fi = np.repeat(np.arange(3), 30)
    base = stats.Outcomes(rng.integers(0, 2, 90).astype(float), np.ones(90), rng.integers(0, 2, (50, 1)))
    system = stats.Outcomes(rng.integers(0, 2, 90).astype(float), np.ones(90), rng.integers(0, 2, (50, 1)))
    a, b = (stats.randomization_test(base, system, fi, 3, "sent", R=300, seed=1, return_null=True, swaps=s)
            for s in stats.SWAPS)
    np.testing.assert_array_equal(a["null"], b["null"])


def test_significance_table_passes_swaps_to_the_g_test():
    base, system, fi = two_scenarios()
    data = run_stats.TaskData("sent", np.array(["c0", "c1"]), fi, ["f"], np.array(["e0", "e1"]), ["seen", "func"],
                              base, {("iid_to_t", "vanilla"): system})
    shared, _ = run_stats.significance_table([data], R=300, seeds=[0])
    indep, _ = run_stats.significance_table([data], R=300, seeds=[0], swaps="independent")
    s, i = shared.set_index("column"), indep.set_index("column")
    assert s.at["iid", "p_value"] == i.at["iid", "p_value"] and s.at["G_avg", "delta"] == i.at["G_avg", "delta"]
    assert s.at["G_avg", "p_value"] != i.at["G_avg", "p_value"]
