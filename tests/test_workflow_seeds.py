"""End-to-end: several training seeds on the tiny config (issue 26). A three-seed run; a seed's
predictions and outcomes are the bytes of a one-seed run with that seed (the base seed: the session's
tiny run, which has more configurations and partitions; seed 4: a one-seed run of this config); the
tables' mean and standard deviation are the per-seed scores' by hand; adding a seed to the finished
run plans only that seed's training jobs and the re-aggregation."""

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import TINY, job_counts, pipeline

pytestmark = pytest.mark.slow

SEEDS = [3, 4, 5]   # tiny.yaml's base seed is 3


def _config(tmp_path, name: str, seeds: list[int]):
    cfg = yaml.safe_load(TINY.read_text())
    cfg.update(seeds=seeds, configurations=["iid_to_iid_plus_t"], partitions=["seen", "type"])
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


#: the seed whose one-seed run of this config is run here (the base seed's is the session's tiny run)
ONE = 4


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_run):
    """The three-seed run, a one-seed run of seed 4 and the tiny run (base seed 3, every configuration and
    partition: a fold's files do not depend on which other folds the config has)."""
    tmp = tmp_path_factory.mktemp("seeds")
    out = {"all": tmp / "all", 3: tiny_run, ONE: tmp / f"one{ONE}"}
    pipeline(out["all"], "--cores", "2", configfiles=(_config(tmp, "all", SEEDS),))
    # (what the tests compare: every fold's predictions and outcomes, and scores.csv)
    pipeline(out[ONE], "--cores", "2", "results/sent/scores/scores.csv",
             configfiles=(_config(tmp, f"one{ONE}", [ONE]),))
    out["config"] = _config(tmp, "all", SEEDS)
    return out


def _run_files(root, seed: int, kind: str):
    sub = "" if seed == 3 else f"seeds/{seed}/"
    files = sorted((root / "results" / "sent" / f"{sub}{kind}").rglob("*.parquet"))
    assert files, (root, seed, kind)
    return {f.relative_to(root).as_posix(): f for f in files}


def _this_config(files: dict) -> dict:
    """The i.i.d. model's and iid_to_iid_plus_t's seen and type files (the tiny run has more)."""
    keep = ("/iid/", "/iid_to_iid_plus_t/vanilla/seen/", "/iid_to_iid_plus_t/vanilla/type/")
    return {rel: f for rel, f in files.items() if any(k in rel for k in keep)}


def test_each_seed_is_a_one_seed_run_with_that_seed(runs):
    for s in (3, ONE):
        for kind in ("predictions", "outcomes"):
            many, one = _run_files(runs["all"], s, kind), _this_config(_run_files(runs[s], s, kind))
            assert list(many) == list(one) and len(many) == 5, (s, kind, list(many), list(one))
            for rel in many:
                assert many[rel].read_bytes() == one[rel].read_bytes(), (s, rel)
    # seed 5 (no one-seed run): its own files, its own training
    five = _run_files(runs["all"], 5, "predictions")
    assert [rel.replace("seeds/5/", "seeds/4/") for rel in five] == list(_run_files(runs["all"], 4, "predictions"))
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
    # seed 4's scores are its one-seed run's scores.csv (which adds n_seeds 1 and empty spreads); the base
    # seed's are the tiny run's on the same configuration and scenarios (its averages span more scenarios)
    one = pd.read_csv(runs[ONE] / "results/sent/scores/scores.csv")
    mine = per_seed[per_seed["seed"] == ONE].drop(columns="seed").reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, one[list(mine.columns)])
    assert set(one["n_seeds"]) == {1} and one["G_seen_sd"].isna().all()
    tiny = pd.read_csv(runs[3] / "results/sent/scores/scores.csv")
    tiny = tiny[tiny.configuration == "iid_to_iid_plus_t"].reset_index(drop=True)
    base = per_seed[(per_seed["seed"] == 3) & (per_seed.configuration == "iid_to_iid_plus_t")].reset_index(drop=True)
    cols = ["configuration", "method", "iid_score", "s_seen", "s_type", "G_seen", "G_type"]
    pd.testing.assert_frame_equal(base[cols], tiny[cols])
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
    out = pipeline(runs["all"], "-n", configfiles=(more,))
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
