"""End-to-end: several training seeds on the tiny config (issue 26). A three-seed run; each seed's predictions
and outcomes are the bytes of a one-seed run with that seed; the tables' mean and standard deviation are the
per-seed scores' by hand; adding a seed to the finished run plans only that seed's training jobs and the
re-aggregation."""

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import TINY, job_counts, smk

pytestmark = pytest.mark.slow

SEEDS = [3, 4, 5]   # tiny.yaml's base seed is 3


def _config(tmp_path, name: str, seeds: list[int]):
    cfg = yaml.safe_load(TINY.read_text())
    cfg.update(seeds=seeds, configurations=["iid_to_iid_plus_t"], partitions=["seen", "type"])
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The three-seed run and one one-seed run per seed (the seed's training alone)."""
    tmp = tmp_path_factory.mktemp("seeds")
    out = {"all": tmp / "all"}
    smk(out["all"], "--cores", "2", configfiles=(_config(tmp, "all", SEEDS),))
    for s in SEEDS:   # (what the tests compare: every fold's predictions and outcomes, and scores.csv)
        out[s] = tmp / f"one{s}"
        smk(out[s], "--cores", "2", "results/sent/scores/scores.csv", configfiles=(_config(tmp, f"one{s}", [s]),))
    out["config"] = _config(tmp, "all", SEEDS)
    return out


def _run_files(root, seed: int, kind: str):
    sub = "" if seed == 3 else f"seeds/{seed}/"
    files = sorted((root / "results" / "sent" / f"{sub}{kind}").rglob("*.parquet"))
    assert files, (root, seed, kind)
    return {f.relative_to(root).as_posix(): f for f in files}


def test_each_seed_is_a_one_seed_run_with_that_seed(runs):
    for s in SEEDS:
        for kind in ("predictions", "outcomes"):
            many, one = _run_files(runs["all"], s, kind), _run_files(runs[s], s, kind)
            assert list(many) == list(one)
            for rel in many:
                assert many[rel].read_bytes() == one[rel].read_bytes(), (s, rel)
    # only training randomness differs between seeds: the same i.i.d. examples and T_test cases, other
    # probabilities; the base seed keeps the one-seed paths
    root = runs["all"] / "results" / "sent"
    a = pd.read_parquet(root / "predictions/iid/vanilla/standard/all.parquet")
    b = pd.read_parquet(root / "seeds/4/predictions/iid/vanilla/standard/all.parquet")
    assert a[["split", "case_id", "input_idx"]].equals(b[["split", "case_id", "input_idx"]])
    assert not np.allclose(np.stack(a["probs"]), np.stack(b["probs"]))


def test_tables_show_the_mean_and_sd_of_the_seeds_by_hand(runs):
    res = runs["all"] / "results"
    per_seed = pd.read_csv(res / "sent/scores/per_seed_scores.csv")
    table = pd.read_csv(res / "sent/scores/scores.csv").set_index(["configuration", "method"])
    assert sorted(set(per_seed["seed"])) == SEEDS and set(table["n_seeds"]) == {3}
    for (conf, method), rows in per_seed.groupby(["configuration", "method"]):
        for col in ("iid_score", "s_seen", "s_type", "G_seen", "G_type"):
            vals = rows[col].to_numpy(float)
            assert table.loc[(conf, method), col] == pytest.approx(vals.mean())
            assert table.loc[(conf, method), f"{col}_sd"] == pytest.approx(vals.std(ddof=1), abs=1e-12)
            assert table.loc[(conf, method), f"{col}_min"] == pytest.approx(vals.min())
    # each seed's scores are its one-seed run's scores.csv
    for s in SEEDS:
        one = pd.read_csv(runs[s] / "results/sent/scores/scores.csv")
        mine = per_seed[per_seed["seed"] == s].drop(columns="seed").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, one)
    t3 = pd.read_csv(res / "table3/table3.csv")
    g = t3[(t3.configuration == "iid_to_iid_plus_t") & (t3.column == "G_avg")].iloc[0]
    per = per_seed[per_seed.configuration == "iid_to_iid_plus_t"][["G_seen", "G_type"]].mean(axis=1).to_numpy()
    assert g["value"] == pytest.approx(per.mean()) and g["sd"] == pytest.approx(per.std(ddof=1), abs=1e-12)
    assert g["n_seeds"] == 3
    md = (res / "table3/table3.md").read_text()
    assert "±" in md and "3 training seeds" in md
    assert "3 training seeds (3, 4, 5)" in (res / "sent/scores/scores.md").read_text()
    sig = pd.read_csv(res / "sent/stats/significance.csv")
    assert set(sig["n_seeds"]) == {3} and {"seeds_better", "seeds_worse", "delta_sd"} <= set(sig.columns)
    assert "seed" in pd.read_csv(res / "sent/diagnostics/diagnostics.csv").columns


def test_adding_a_seed_trains_only_that_seed(runs):
    cfg = yaml.safe_load(runs["config"].read_text())
    cfg["seeds"] = SEEDS + [6]
    more = runs["config"].with_name("more.yaml")
    more.write_text(yaml.safe_dump(cfg, sort_keys=False))
    out = smk(runs["all"], "-n", configfiles=(more,))
    text = out.stdout + out.stderr
    jobs = job_counts(text)
    # seed 6: its IID model, its 1 seen + 3 type folds, the IID model's predictions and outcomes, its unit
    # outcomes; then every table that reads all seeds again
    assert jobs["train_iid"] == 1 and jobs["finetune"] == 4 and jobs["predict"] == 1 and jobs["outcomes"] == 1
    assert jobs["unit_outcomes"] == 1 and jobs["aggregate"] == 1 and jobs["table3"] == 1
    shown = re.findall(r"rule (train_iid|predict|outcomes|unit_outcomes):\n(?:    .*\n)*?    wildcards: ([^\n]*)", text)
    assert len(shown) == 4 and all("seeddir=seeds/6/" in w for _rule, w in shown), shown
    folds = re.findall(r"finetune sent (\S+):", text)   # a fold job's message names its seed folder
    assert len(folds) == 4 and all(f.startswith("seeds/6/iid_to_iid_plus_t/vanilla/") for f in folds), folds
