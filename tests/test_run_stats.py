"""The statistics stage on hand-built outcome files: unit alignment, agreement
with the aggregate scores, significance and Table 3 assembly."""

import numpy as np
import pandas as pd
import pytest

from beluga.core.errors import DataError
from beluga.core.seeds import per_seed_frame
from beluga.report import run_stats, stats, tables
from beluga.score.metrics import score_runs, scores_over_seeds

FUNCS = pd.DataFrame({"functionality": ["f1", "f2", "f3"], "capability": ["c1", "c1", "c2"],
                      "test_type": ["MFT", "INV", "DIR"]})
CASES = {f: [f"{f}-{i}" for i in range(6)] for f in FUNCS.functionality}
IID = [f"ex{i:02d}" for i in range(20)]


def outcome_frame(rng, held_out, p_pass=0.5, p_correct=0.7, flip=None):
    rows = []
    for f, ids in CASES.items():
        for cid in ids:
            st = rng.choice(["pass", "fail", "filtered"], p=[p_pass, 0.9 - p_pass, 0.1])
            rows.append({"case_id": cid, "functionality": f, "status": st, "split": "suite_test",
                         "held_out": f in held_out})
    gold = np.arange(len(IID)) % 2
    pred = np.where(rng.random(len(IID)) < p_correct, gold, 1 - gold)
    for i, ex in enumerate(IID):
        rows.append({"case_id": ex, "functionality": None, "status": None, "split": "iid_test", "held_out": False,
                     "pred_label": int(pred[i]), "gold_label": int(gold[i]), "correct": bool(pred[i] == gold[i])})
    df = pd.DataFrame(rows)
    df["correct"] = df["correct"].astype("boolean")
    return df.sample(frac=1, random_state=int(rng.integers(1 << 30)))  # ids, never row order


def write_runs(tmp_path, rng, systems):
    """systems: {(conf, method): p_pass}; folds: seen (all), func (one per functionality)."""
    runs = []

    def add(conf, method, partition, fold, held_out, p_pass):
        path = tmp_path / f"{conf}-{method}-{partition}-{fold}.parquet"
        outcome_frame(rng, held_out, p_pass).to_parquet(path)
        runs.append({"configuration": conf, "method": method, "partition": partition, "fold": fold,
                     "path": str(path)})

    add("iid", "vanilla", "standard", "all", set(CASES), 0.3)
    for (conf, method), p in systems.items():
        add(conf, method, "seen", "all", set(CASES), p)
        for f in CASES:
            add(conf, method, "func", f, {f}, p)
    return runs


def test_units_align_and_scores_match_the_score_runs(tmp_path):
    rng = np.random.default_rng(0)
    runs = write_runs(tmp_path, rng, {("iid_to_t", "vanilla"): 0.7})
    long = run_stats.outcomes_per_unit(runs, "sent")
    func_rows = long[(long.scenario == "func") & (long.unit == "case")]
    assert len(func_rows) == sum(map(len, CASES.values())) and func_rows["id"].is_unique
    assert set(long.loc[long.unit == "iid", "n_models"]) == {1, 3}
    data = run_stats.task_data(long, FUNCS, "sent")
    assert data.scenarios == ["seen", "func"]
    loaded = [dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs]
    _, scores = score_runs(loaded, FUNCS, task_type="sent")
    got = stats.scores(data.systems[("iid_to_t", "vanilla")], data.func_index, 3, "sent")
    row = scores[scores.configuration == "iid_to_t"].iloc[0]
    np.testing.assert_allclose(got["G"], [row.G_seen, row.G_func])
    np.testing.assert_allclose(got["s_T"], [row.s_seen, row.s_func])
    base = stats.scores(data.base, data.func_index, 3, "sent")
    np.testing.assert_allclose(base["G"], [scores.iloc[0].G_standard])


def test_missing_fold_is_reported(tmp_path):
    rng = np.random.default_rng(1)
    runs = write_runs(tmp_path, rng, {("iid_to_t", "vanilla"): 0.7})
    runs = [r for r in runs if r["fold"] != "f2"]
    long = run_stats.outcomes_per_unit(runs, "sent")
    with pytest.raises(ValueError, match="field 'id'"):
        run_stats.task_data(long, FUNCS, "sent")


def test_significance_identical_system_is_not_significant(tmp_path):
    rng = np.random.default_rng(2)
    runs = write_runs(tmp_path, rng, {("iid_to_t", "vanilla"): 0.6})
    long = run_stats.outcomes_per_unit(runs, "sent")
    # a pair whose outcomes are the baseline's in every scenario
    base = long[long.configuration == "iid"]
    clone = pd.concat([base.assign(configuration="iid_plus_t", method="vanilla", scenario=s)
                       for s in ("seen", "func")], ignore_index=True)
    data = run_stats.task_data(pd.concat([long, clone], ignore_index=True), FUNCS, "sent")
    table, null = run_stats.significance_table([data], R=500, seeds=[1])
    same = table[table.configuration == "iid_plus_t"]
    assert (same["p_value"] == 1.0).all() and (same["direction"] == 0).all()
    assert set(same["column"]) == {"iid", "G_seen", "G_func", "G_avg"}
    assert len(null) == 2 * 500


@pytest.mark.parametrize("scenario_iid", ["folds", "seen"])
@pytest.mark.parametrize("task_type", ["sent", "para"])
def test_tested_delta_g_is_the_displayed_delta_g(tmp_path, task_type, scenario_iid):
    """The randomization test's observed ΔG equals the difference of the G values in scores.csv / Table 3,
    also for PARA, whose duplicate-class F1 is not a mean over examples: a scenario's s_iid pools its fold
    models' i.i.d. predictions in both places (docs/STATISTICS.md); or, with ``scenario_iid: seen``, is the
    seen model's in both places."""
    rng = np.random.default_rng(7)
    runs = write_runs(tmp_path, rng, {("iid_to_t", "vanilla"): 0.7, ("iid_plus_t", "vanilla"): 0.4})
    loaded = [dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs]
    _, scores = score_runs(loaded, FUNCS, task_type=task_type, scenario_iid=scenario_iid)
    data = run_stats.task_data(run_stats.outcomes_per_unit(runs, task_type, scenario_iid), FUNCS, task_type)
    table, _ = run_stats.significance_table([data], R=200, seeds=[0])
    base_g = scores.iloc[0].G_standard
    for conf in ("iid_to_t", "iid_plus_t"):
        row = scores[scores.configuration == conf].iloc[0]
        got = table[table.configuration == conf].set_index("column")
        for sc in ("seen", "func"):
            assert got.at[f"G_{sc}", "value"] == pytest.approx(row[f"G_{sc}"], abs=1e-12)
            assert got.at[f"G_{sc}", "delta"] == pytest.approx(row[f"G_{sc}"] - base_g, abs=1e-12)
        assert got.at["G_avg", "delta"] == pytest.approx((row.G_seen + row.G_func) / 2 - base_g, abs=1e-12)
    if scenario_iid == "seen":
        assert (scores.s_iid_func == scores.s_iid_seen).all()
        with pytest.raises(ValueError, match="scenario_iid.*no seen run"):
            score_runs([r for r in loaded if r["partition"] != "seen"], FUNCS, task_type=task_type,
                      scenario_iid="seen")
        with pytest.raises(DataError, match="scenario_iid.*no seen run"):
            run_stats.outcomes_per_unit([r for r in runs if r["partition"] != "seen"], task_type, "seen")
    elif task_type == "para":   # the data tells the two definitions apart: pooled counts, not the mean of F1s
        from beluga.score.metrics import iid_metrics

        folds = [r["outcomes"] for r in loaded if (r["configuration"], r["partition"]) == ("iid_to_t", "func")]
        mean_of_f1s = np.mean([iid_metrics(o, "para")["f1"] for o in folds])
        pooled = iid_metrics(pd.concat(folds), "para")
        row = scores[scores.configuration == "iid_to_t"].iloc[0]
        assert abs(mean_of_f1s - pooled["f1"]) > 1e-3
        assert row.s_iid_func == pytest.approx((pooled["accuracy"] + pooled["f1"]) / 2, abs=1e-12)


@pytest.mark.parametrize("task_type", ["sent", "para"])
def test_under_scenario_iid_seen_no_score_reads_the_fold_models_iid_rows(tmp_path, task_type):
    """predict.fold_iid_examples: under scenario_iid seen the func / class / type fold models predict only a
    sample of the i.i.d. test set (beluga.suites.folds.predicted_iid); scores and the randomization test read the
    seen model's rows, so they are the same as with every example predicted."""
    from beluga.suites.folds import predicted_iid

    rng = np.random.default_rng(11)
    runs = write_runs(tmp_path, rng, {("iid_to_t", "vanilla"): 0.7, ("iid_plus_t", "vanilla"): 0.4})
    sampled = []
    for r in runs:
        out = pd.read_parquet(r["path"])
        if r["partition"] == "func":
            iid = out[out["split"] == "iid_test"].sort_values("case_id")   # one i.i.d. test file for all
            keep = set(predicted_iid(iid.rename(columns={"case_id": "example_id"}), 5)["example_id"])
            out = out[(out["split"] != "iid_test") | out["case_id"].isin(keep)]
            assert (out["split"] == "iid_test").sum() == 5 < len(iid)
        path = tmp_path / ("s-" + r["path"].rsplit("/", 1)[1])
        out.to_parquet(path)
        sampled.append(dict(r, path=str(path)))
    results = []
    for rs in (runs, sampled):
        loaded = [dict(r, outcomes=pd.read_parquet(r["path"])) for r in rs]
        _, scores = score_runs(loaded, FUNCS, task_type=task_type, scenario_iid="seen")
        data = run_stats.task_data(run_stats.outcomes_per_unit(rs, task_type, "seen"), FUNCS, task_type)
        table, _ = run_stats.significance_table([data], R=200, seeds=[0])
        results.append((scores, table))
    pd.testing.assert_frame_equal(results[0][0], results[1][0])
    pd.testing.assert_frame_equal(results[0][1], results[1][1])


def test_holm_marks_fewer(tmp_path):
    table = pd.DataFrame({"configuration": ["a", "b", "c"], "method": "vanilla", "column": "G_seen",
                          "p_value": [0.01, 0.03, 0.04], "delta": [0.1, -0.2, 0.3]})
    plain = run_stats.mark(table, 0.05, "none")
    holm = run_stats.mark(table, 0.05, "holm")
    assert plain["significant"].all() and list(plain["direction"]) == [1, -1, 1]
    np.testing.assert_allclose(holm["p_adjusted"], [0.03, 0.06, 0.06])
    assert list(holm["significant"]) == [True, False, False] and list(holm["direction"]) == [1, 0, 0]
    with pytest.raises(ValueError, match="statistics.correction"):
        run_stats.mark(table, 0.05, "bonferroni")


def test_table3_long_with_two_tasks_has_avg(tmp_path):
    per_task = {}
    for k, task in enumerate(("sent", "para")):
        rng = np.random.default_rng(10 + k)
        (tmp_path / task).mkdir()
        runs = write_runs(tmp_path / task, rng, {("iid_to_t", "vanilla"): 0.8})
        loaded = [dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs]
        _, scores = score_runs(loaded, FUNCS, task_type="sent")
        data = run_stats.task_data(run_stats.outcomes_per_unit(runs, "sent"), FUNCS, "sent")
        sig, null = run_stats.significance_table([data], R=300, seeds=[k])
        per_task[task] = {"scores": scores_over_seeds(per_seed_frame({0: scores})),
                          "seed_scores": per_seed_frame({0: scores}), "significance": sig, "null": null,
                          "intervals": run_stats.interval_table([data], R=200, seeds=[k])}
    long = run_stats.table3_long(per_task, 0.05, "none")
    avg = long[long.task == "all"]
    assert list(avg["column"].unique()) == ["Avg"] and len(avg) == 2
    base = long[long.configuration == "iid"]
    assert not base["significant"].any() and base["p_value"].isna().all()
    pair_avg = avg[avg.configuration == "iid_to_t"].iloc[0]
    g = long[(long.column == "G_avg") & (long.configuration == "iid_to_t")]["value"].mean()
    assert pair_avg["value"] == pytest.approx(g) and 0 < pair_avg["p_value"] <= 1
    seen = long[(long.task == "sent") & (long.column == "G_seen") & (long.configuration == "iid_to_t")].iloc[0]
    assert seen["ci_lo"] <= seen["value"] <= seen["ci_hi"]


def test_table3_shows_each_metric_of_a_two_metric_task(tmp_path):
    rng = np.random.default_rng(5)
    runs = write_runs(tmp_path, rng, {("iid_to_t", "vanilla"): 0.8})
    loaded = [dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs]
    _, scores = score_runs(loaded, FUNCS, task_type="para")
    data = run_stats.task_data(run_stats.outcomes_per_unit(runs, "para"), FUNCS, "para")
    sig, null = run_stats.significance_table([data], R=200, seeds=[0])
    long = run_stats.table3_long({"para": {"scores": scores_over_seeds(per_seed_frame({0: scores})),
                                          "seed_scores": per_seed_frame({0: scores}), "significance": sig,
                                          "null": null, "intervals": run_stats.interval_table([data], R=100)}},
                                 0.05, "none")
    f1 = long[(long.column == "iid_f1")]
    assert len(f1) == 2 and not f1["significant"].any()
    assert f1["value"].tolist() == pytest.approx(scores["iid_f1"].tolist())
    pair_iid = long[(long.column == "iid") & (long.configuration == "iid_to_t")].iloc[0]
    assert pair_iid["value"] == pytest.approx((scores.iid_accuracy[1] + scores.iid_f1[1]) / 2)
    assert "iid_f1" in tables.table3_markdown(long, 0.05, None)
