"""Several training seeds (issue 26): the spread over seeds in the tables, the tests stratified by seed, the
hierarchical bootstrap, Table 3 with ±, and the seed dimension of the DAG (no pipeline run here: the end-to-end
checks are in tests/test_workflow_seeds.py)."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from test_run_stats import FUNCS, write_runs

from beluga.core.errors import DataError
from beluga.core.seeds import has_spread, over_seeds, per_seed_frame, plus_minus, seeds_legend, seeds_note, spread_text
from beluga.report import bootstrap, run_stats, stats, tables
from beluga.report.stats import Outcomes
from beluga.score.metrics import pass_rates_over_seeds, score_runs, scores_markdown, scores_over_seeds
from beluga.workflow.paths import Paths
from beluga.workflow.runs import Runs

# ---------------------------------------------------------------- the spread over seeds


def test_over_seeds_is_the_hand_computed_mean_sd_min_max():
    per_seed = pd.DataFrame({"seed": [1, 2, 3, 1, 2, 3], "cell": ["a"] * 3 + ["b"] * 3,
                             "score": [0.5, 0.7, 0.9, 0.2, 0.2, np.nan], "count": [4, 4, 4, 5, 5, 5]})
    out = over_seeds(per_seed, ["cell"], ["score"]).set_index("cell")
    a = [0.5, 0.7, 0.9]
    assert out.loc["a", "score"] == pytest.approx(sum(a) / 3)
    assert out.loc["a", "score_sd"] == pytest.approx(np.sqrt(sum((x - 0.7) ** 2 for x in a) / 2))
    assert (out.loc["a", "score_min"], out.loc["a", "score_max"]) == (0.5, 0.9)
    assert out.loc["b", "score"] == pytest.approx(0.2) and out.loc["b", "score_sd"] == pytest.approx(0.0)
    assert list(out["n_seeds"]) == [3, 3] and list(out["count"]) == [4, 5]
    assert list(out.reset_index().columns) == ["cell", "score", "count", "n_seeds", "score_sd", "score_min",
                                               "score_max"]
    with pytest.raises(ValueError, match="seed 1 appears twice"):
        over_seeds(pd.concat([per_seed, per_seed.iloc[:1]]), ["cell"], ["score"])


def test_over_one_seed_is_the_seed_with_the_same_columns():
    """N = 1: the same columns as N = 3, the seed's own values (a count stays a whole number), n_seeds 1 and
    every sd empty."""
    per_seed = pd.DataFrame({"seed": [4, 4], "cell": ["a", "b"], "score": [0.25, np.nan], "epochs": [3, 5]})
    out = over_seeds(per_seed, ["cell"], ["score", "epochs"])
    three = over_seeds(pd.concat([per_seed.assign(seed=s) for s in (4, 5, 6)]), ["cell"], ["score", "epochs"])
    assert list(out.columns) == list(three.columns)
    assert out["score"].iloc[0] == 0.25 and np.isnan(out["score"].iloc[1])
    assert out["epochs"].tolist() == [3, 5] and out["epochs"].dtype == per_seed["epochs"].dtype
    assert out["n_seeds"].tolist() == [1, 1] and out[["score_sd", "epochs_sd"]].isna().all().all()
    assert out.to_csv(index=False).splitlines()[1].startswith("a,0.25,3,1,,")
    mixed = over_seeds(pd.DataFrame({"seed": [1, 2], "cell": "a", "epochs": [2, 3]}), ["cell"], ["epochs"])
    assert mixed["epochs"].tolist() == [2.5]


def test_plus_minus_and_the_seeds_legend():
    assert plus_minus(0.8093, 0.0051) == "80.9 ± 0.5"
    assert plus_minus(0.8, float("nan")) == "80.0" and plus_minus(float("nan"), 0.1) == ""
    assert plus_minus(80.93, None, scale=1.0, missing="—") == "80.9" and plus_minus(None, 1, missing="—") == "—"
    assert plus_minus(0.5, 0.01, sep=r"\,$\pm$\,", style=r"\textbf{{{}}}") == r"\textbf{50.0}\,$\pm$\,1.0"
    assert spread_text(4.4, scale=1, digits=0, sep="±") == "±4" and spread_text(np.nan) == ""
    assert has_spread([np.nan, 0.0]) and not has_spread(np.full((2, 3), np.nan)) and not has_spread(None)
    assert seeds_legend(1, "over seeds") == "" and seeds_legend(2, "over seeds") == "over seeds"
    assert seeds_note([5]) == ""
    assert "3 training seeds (1, 2, 3)" in seeds_note([1, 2, 3])


def test_scores_over_seeds_equal_the_per_seed_scores_by_hand(tmp_path):
    """scores.csv of several seeds: each score's mean / sd / min / max over the seeds' own scores.csv rows."""
    per = {}
    for s, p in ((1, 0.6), (2, 0.75), (3, 0.9)):
        (tmp_path / str(s)).mkdir()
        runs = write_runs(tmp_path / str(s), np.random.default_rng(s), {("iid_to_t", "vanilla"): p})
        per[s] = score_runs([dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs], FUNCS)
    seed_scores = per_seed_frame({s: sc for s, (_lg, sc) in per.items()})
    table = scores_over_seeds(seed_scores)
    for col in ("iid_score", "s_seen", "s_func", "G_seen", "G_func", "G_standard"):
        vals = np.array([per[s][1].set_index("configuration").loc["iid_to_t", col] for s in per])
        row = table.set_index("configuration").loc["iid_to_t"]
        assert row[col] == pytest.approx(vals.mean())
        assert row[f"{col}_sd"] == pytest.approx(vals.std(ddof=1))
        assert (row[f"{col}_min"], row[f"{col}_max"]) == (vals.min(), vals.max())
    assert set(table["n_seeds"]) == {3}
    md = scores_markdown(table, "sent", [1, 2, 3])
    g = table.set_index("configuration").loc["iid_to_t"]
    assert plus_minus(g["G_seen"], g["G_seen_sd"]) in md and "3 training seeds (1, 2, 3)" in md
    # pass rates: the mean over seeds per functionality, n_passed summed
    rates = pass_rates_over_seeds(per_seed_frame({s: lg for s, (lg, _sc) in per.items()}))
    one = rates[(rates.configuration == "iid_to_t") & (rates.scenario == "seen") & (rates.functionality == "f1")]
    vals = [per[s][0].query("configuration == 'iid_to_t' and scenario == 'seen' and functionality == 'f1'")
            for s in per]
    assert one["pass_rate"].iloc[0] == pytest.approx(np.mean([v["pass_rate"].iloc[0] for v in vals]))
    assert one["n_passed"].iloc[0] == sum(int(v["n_passed"].iloc[0]) for v in vals)


def test_one_seed_scores_are_the_seed_s_with_empty_spread(tmp_path):
    """scores.csv / pass_rates.csv of one seed: the seed's own table plus n_seeds 1 and empty _sd; scores.md the
    one-seed Markdown: the scores alone, no line on seeds."""
    runs = write_runs(tmp_path, np.random.default_rng(0), {("iid_to_t", "vanilla"): 0.7})
    long, sc = score_runs([dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs], FUNCS)
    table, rates = scores_over_seeds(per_seed_frame({1: sc})), pass_rates_over_seeds(per_seed_frame({1: long}))
    assert table[list(sc.columns)].to_csv(index=False) == sc.to_csv(index=False)
    assert rates[list(long.columns)].to_csv(index=False) == long.to_csv(index=False)
    assert set(table["n_seeds"]) == {1} and table["G_seen_sd"].isna().all() and rates["pass_rate_sd"].isna().all()
    md = scores_markdown(table, "sent", [1])
    assert "±" not in md and "training seed" not in md
    g = table.set_index("configuration").loc["iid_to_t", "G_seen"]
    assert f"| {100 * g:.1f} |" in md


# ---------------------------------------------------------------- tests stratified by seed


def _pair(rng, n=12, m=8, flip_cases=3, flip_iid=2, better=True):
    """Baseline (S=1) and a system (S=2 scenarios) differing on a few units (few enough to enumerate)."""
    fi = np.arange(n) % 3
    scored = np.ones(n)
    passed = (rng.random(n) < 0.5).astype(float)
    iid = (rng.random(m) < 0.6).astype(float)[:, None]
    sp, si = np.tile(passed, (2, 1)), np.tile(iid, (2, 1, 1))
    for i in rng.choice(n, flip_cases, replace=False):
        sp[:, i] = 1.0 if better else 1 - passed[i]
        if sp[0, i] == passed[i]:
            sp[:, i] = 1 - passed[i]
    for j in rng.choice(m, flip_iid, replace=False):
        si[:, j, 0] = 1 - iid[j, 0]
    return fi, Outcomes(passed, scored, iid), Outcomes(sp, np.ones((2, n)), si)


def test_combined_randomization_p_by_hand_and_by_exact_enumeration():
    rng = np.random.default_rng(4)
    pairs = [_pair(rng), _pair(rng), _pair(rng)]
    R = 4000
    per_seed = [stats.randomization_test(b, s, fi, 3, "sent", R=R, seed=[7, k], return_null=True)
                for k, (fi, b, s) in enumerate(pairs)]
    comb = stats.combine_randomization(per_seed)
    # by hand: the statistic is the mean of the seeds' differences; its null the mean of their nulls
    delta = np.mean([r["delta"] for r in per_seed], axis=0)
    null = np.mean([r["null"] for r in per_seed], axis=0)
    hand = [(np.sum(np.abs(null[:, k]) >= abs(delta[k]) - 1e-12) + 1) / (R + 1) for k in range(2)]
    np.testing.assert_allclose(comb["delta"], delta)
    np.testing.assert_allclose(comb["p"], hand)
    null_avg = np.mean([r["null_avg"] for r in per_seed], axis=0)
    delta_avg = np.mean([r["delta_avg"] for r in per_seed])
    assert comb["p_avg"] == pytest.approx((np.sum(np.abs(null_avg) >= abs(delta_avg) - 1e-12) + 1) / (R + 1))
    # exact: every combination of the seeds' swap patterns (2^(u1+u2+u3) equally likely under the null)
    exact = [stats.exact_randomization_p(b, s, fi, 3, "sent", return_null=True) for fi, b, s in pairs]
    combos = np.array([np.mean(c, axis=0) for c in itertools.product(*[e["null_avg"] for e in exact])])
    p_exact = np.mean(np.abs(combos) >= abs(delta_avg) - 1e-12)
    assert abs(comb["p_avg"] - p_exact) < 4 * np.sqrt(p_exact * (1 - p_exact) / R) + 2 / R


def test_one_seed_tests_are_the_one_seed_tests():
    rng = np.random.default_rng(5)
    fi, b, s = _pair(rng)
    one = stats.randomization_test(b, s, fi, 3, "sent", R=500, seed=11, return_null=True)
    comb = stats.combine_randomization([one])
    np.testing.assert_array_equal(comb["p"], one["p"])
    assert comb["p_avg"] == one["p_avg"]
    a, c = np.array([1, 1, 0, 0, 1, 0], bool), np.array([1, 0, 1, 1, 1, 1], bool)
    assert stats.binomial_test(a, c) == stats.binomial_counts_test(1, 3)


def test_pooled_binomial_is_binomtest_on_the_summed_counts():
    got = stats.binomial_counts_test(3 + 1, 7 + 6)
    assert got["p_value"] == pytest.approx(binomtest(13, 17, 0.5).pvalue)
    assert got["n_discordant"] == 17


def test_hierarchical_bootstrap():
    rng = np.random.default_rng(6)
    fi, b, s = _pair(rng, n=60, m=40, flip_cases=10)
    one = bootstrap.bootstrap_ci([s], fi, 3, "sent", R=300, seeds=[3])
    same = bootstrap.bootstrap_ci([s], fi, 3, "sent", R=300, seeds=[3], outer_seed=[1, 0, 0])
    for q in one:   # one seed: every draw picks it, whatever the generator of the picks
        np.testing.assert_array_equal(one[q], same[q])
    # two seeds far apart: the interval of their mean covers it and is wider than that of two equal seeds
    # (the seed-to-seed spread counts, not only the units')
    worse = Outcomes(s.passed * (np.arange(60) % 2), s.scored, s.iid)
    both = bootstrap.bootstrap_ci([s, worse], fi, 3, "sent", R=400, seeds=[3, 4], outer_seed=[1, 0, 0])
    twins = bootstrap.bootstrap_ci([s, s], fi, 3, "sent", R=400, seeds=[3, 4], outer_seed=[1, 0, 0])
    g = np.mean([stats.scores(o, fi, 3, "sent")["G_avg"] for o in (s, worse)])
    assert both["G_avg"][0] <= g <= both["G_avg"][1]
    assert both["G_avg"][1] - both["G_avg"][0] > 1.5 * (twins["G_avg"][1] - twins["G_avg"][0])
    with pytest.raises(ValueError, match="2 draw seeds for 1"):
        bootstrap.bootstrap_ci([s], fi, 3, "sent", seeds=[1, 2])


# ---------------------------------------------------------------- the statistics of a run with several seeds


def _seed_data(tmp_path, seeds=(1, 2), p=(0.7, 0.8)):
    datas = []
    for s, pp in zip(seeds, p):
        d = tmp_path / f"seed{s}"
        d.mkdir()
        runs = write_runs(d, np.random.default_rng(10 + s), {("iid_to_t", "vanilla"): pp})
        datas.append(run_stats.task_data(run_stats.outcomes_per_unit(runs, "sent"), FUNCS, "sent"))
    return datas


def test_significance_over_seeds(tmp_path):
    datas = _seed_data(tmp_path)
    seeds = [run_stats.draw_seed(0, "sent", s, 1) for s in (1, 2)]
    assert seeds[0] == run_stats.task_seed(0, "sent") and seeds[1] == [run_stats.task_seed(0, "sent"), 2]
    table, null = run_stats.significance_table(datas, R=300, seeds=seeds, training_seeds=[1, 2])
    ones = [run_stats.significance_table([d], R=300, seeds=[sd])[0] for d, sd in zip(datas, seeds)]
    rows = table.set_index("column")
    for col in ("G_seen", "G_func", "G_avg"):
        per = [o.set_index("column").loc[col, "delta"] for o in ones]
        assert rows.loc[col, "delta"] == pytest.approx(np.mean(per))
        assert rows.loc[col, "delta_sd"] == pytest.approx(np.std(per, ddof=1))
        assert rows.loc[col, "seeds_better"] == sum(d > 0 for d in per)
        assert rows.loc[col, "n_seeds"] == 2
    b = [o.set_index("column").loc["iid"] for o in ones]
    assert rows.loc["iid", "p_value"] == pytest.approx(
        binomtest(int(sum(x["system_only"] for x in b)), int(sum(x["n_discordant"] for x in b)), 0.5).pvalue)
    assert len(null) == 300
    # one seed: the same columns, n_seeds 1, no spread
    assert list(ones[0].columns) == list(table.columns)
    assert set(ones[0]["n_seeds"]) == {1} and ones[0]["delta_sd"].isna().all()


def test_seeds_scored_on_other_units_are_refused(tmp_path):
    datas = _seed_data(tmp_path)
    datas[1].case_ids = datas[1].case_ids[::-1].copy()
    with pytest.raises(DataError, match="training seed 2 was scored on other"):
        run_stats.significance_table(datas, R=10, seeds=[0, 1], training_seeds=[1, 2])


def test_intervals_over_seeds(tmp_path):
    datas = _seed_data(tmp_path)
    both = run_stats.interval_table(datas, R=200, seeds=[5, [5, 2]], outer_seed=[5, 0, 0])
    single = [run_stats.interval_table([d], R=200, seeds=[5]).set_index(["configuration", "quantity"])
              for d in datas]
    got = both.set_index(["configuration", "quantity"])
    key = ("iid_to_t", "G_avg")
    assert got.loc[key, "estimate"] == pytest.approx(np.mean([s.loc[key, "estimate"] for s in single]))
    assert got.loc[key, "lo"] <= got.loc[key, "estimate"] <= got.loc[key, "hi"]
    assert set(both["n_seeds"]) == {2}


def test_table3_with_seeds_shows_mean_and_sd(tmp_path):
    per_seed = {}
    datas = _seed_data(tmp_path)
    for s in (1, 2):
        runs = write_runs(tmp_path / f"seed{s}", np.random.default_rng(10 + s), {("iid_to_t", "vanilla"): 0.7})
        per_seed[s] = score_runs([dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs], FUNCS)[1]
    seed_scores = per_seed_frame(per_seed)
    sig, null = run_stats.significance_table(datas, R=200, seeds=[0, [0, 2]], training_seeds=[1, 2])
    ci = run_stats.interval_table(datas, R=100, seeds=[0, [0, 2]])
    long = run_stats.table3_long({"sent": {"scores": scores_over_seeds(seed_scores), "seed_scores": seed_scores,
                                           "significance": sig, "intervals": ci, "null": null}}, 0.05, "none")
    row = long[(long.configuration == "iid_to_t") & (long.column == "G_avg")].iloc[0]
    g_avg = [np.mean([per_seed[s].set_index("configuration").loc["iid_to_t", c] for c in ("G_seen", "G_func")])
             for s in (1, 2)]
    assert row["value"] == pytest.approx(np.mean(g_avg)) and row["sd"] == pytest.approx(np.std(g_avg, ddof=1))
    assert row["n_seeds"] == 2
    md = tables.table3_markdown(long, 0.05, "none").replace("**", "")
    assert f"{100 * row['value']:.1f} ± {100 * row['sd']:.1f}" in md and "2 training seeds" in md
    tex = tables.table3_latex(long, 0.05, "none").replace(r"\textbf{", "").replace("}\\,", "\\,")
    assert rf"{100 * row['value']:.1f}\,$\pm$\,{100 * row['sd']:.1f}" in tex
    assert {"sd", "n_seeds"} <= set(tables.table3_csv(long).columns)


def test_table3_of_one_seed_has_the_columns_and_no_spread(tmp_path):
    """One seed: table3.csv keeps sd (empty) and n_seeds (1); the Markdown and LaTeX show the scores alone and
    say one seed. A scores.csv whose n_seeds is not its per-seed file's is refused, naming the file."""
    datas = _seed_data(tmp_path, seeds=(1,), p=(0.7,))
    runs = write_runs(tmp_path / "seed1", np.random.default_rng(11), {("iid_to_t", "vanilla"): 0.7})
    seed_scores = per_seed_frame({1: score_runs([dict(r, outcomes=pd.read_parquet(r["path"])) for r in runs],
                                                FUNCS)[1]})
    sig, null = run_stats.significance_table(datas, R=100, seeds=[0])
    task = {"scores": scores_over_seeds(seed_scores), "seed_scores": seed_scores, "significance": sig,
            "intervals": run_stats.interval_table(datas, R=50, seeds=[0]), "null": null,
            "paths": {"scores": "sent/scores.csv", "seed_scores": "sent/per_seed_scores.csv"}}
    long = run_stats.table3_long({"sent": task}, 0.05, "none")
    assert long["sd"].isna().all() and set(long["n_seeds"]) == {1}
    md, tex = tables.table3_markdown(long, 0.05, "none"), tables.table3_latex(long, 0.05, "none")
    assert "±" not in md and r"\pm" not in tex and "Every cell: one training seed (no spread over seeds)." in md
    for key, name in (("scores", "scores.csv"), ("significance", "significance.csv")):
        other = dict(task, paths={**task["paths"], key: f"sent/{name}"})
        other[key] = task[key].assign(n_seeds=2)       # a file written for other seeds
        with pytest.raises(DataError, match=rf"sent/{name}: field 'n_seeds': 2 for iid\S*/vanilla, but "
                                            r"sent/per_seed_scores.csv has 1 training seed"):
            run_stats.table3_long({"sent": other}, 0.05, "none")


# ---------------------------------------------------------------- the seed dimension of the DAG


def _runs(seeds=None):
    """The runs of tests/configs/tiny.yaml (base seed 3) with ``seeds``."""
    from test_runs import config, runs

    return runs(config(seeds=seeds))


def test_records_and_settings_per_seed():
    r = _runs([3, 8])
    assert r.seeds == [3, 8] and r.seeddirs() == ["", "seeds/8/"]
    recs = r.records("sent", "outcomes")
    assert [x["seed"] for x in recs] == [3] * (len(recs) // 2) + [8] * (len(recs) // 2)
    assert recs[len(recs) // 2]["path"].startswith("results/sent/seeds/8/outcomes/")
    w = {"task": "sent", "conf": "iid_to_t", "method": "vanilla", "partition": "func", "fold": "typos"}
    base, other = r.settings("finetune", w), r.settings("finetune", dict(w, seeddir="seeds/8/"))
    # another seed: only the training seed changes; the samples keep the base seed
    assert (base["seed"], base["sample_seed"]) == (3, 3) and (other["seed"], other["sample_seed"]) == (8, 3)
    assert {k for k in base if base[k] != other[k]} == {"seed", "checkpoint_dir"}
    assert other["checkpoint_dir"].startswith("results/sent/seeds/8/checkpoints/")
    assert r.start_model(dict(w, seeddir="seeds/8/"))[0] == "results/sent/seeds/8/models/iid/vanilla/standard/all"
    assert r.selected(dict(w, seeddir="seeds/8/")).startswith("results/sent/seeds/8/selection/")


def test_default_is_one_seed_at_the_one_seed_paths():
    r = _runs(None)
    assert r.seeds == [3] and r.seeddirs() == [""]
    assert all("seeds/" not in x["path"] for x in r.records("sent", "outcomes"))
    assert Paths("results").run("outcomes", "sent", "iid", "vanilla", "standard", "all", seeddir="") == \
        "results/sent/outcomes/iid/vanilla/standard/all.parquet"
    assert isinstance(r, Runs) and r.settings("train_iid", {"task": "sent"})["seed"] == 3


def test_figures_show_a_spread_only_where_it_is_defined():
    """The heatmap over three seeds: a "±sd" line under each value and the seeds named; over one seed (N = 1,
    the sd empty) the values alone and no word on seeds, as for the seed's own table."""
    import matplotlib.pyplot as plt
    from test_plot_layout import CONFS, METHODS, funcs_table, long_table

    from beluga.report.plots import build_heatmap

    funcs = funcs_table(3)
    texts = {}
    for name, long in (("three", {s: long_table(funcs, s) for s in (1, 2, 3)}), ("one", {5: long_table(funcs, 5)}),
                       ("table", long_table(funcs, 5))):
        fig = build_heatmap(long, funcs, "func", CONFS, METHODS, "T")
        texts[name] = [t.get_text() for t in fig.axes[0].texts] + [fig._suptitle.get_text()]
        plt.close(fig)
    assert sum(t.startswith("±") for t in texts["three"]) > 0 and "3 training seeds (1, 2, 3)" in texts["three"][-1]
    assert texts["one"] == texts["table"] and not any("±" in t or "seed" in t for t in texts["one"])
