"""The related analyses (docs/ANALYSES.md): a tiny end-to-end run of inoculation by fine-tuning
(its unit tests: tests/test_inoculation.py; combinational OOD: tests/test_combinational.py)."""

import json

import pandas as pd
import pytest
import yaml
from conftest import REPO, job_counts, pipeline

# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def analyses_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analyses")
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["configurations"], cfg["partitions"] = ["iid_to_t"], ["seen"]
    cfg["tasks"]["sent"]["ood"] = [{"name": "nyt", "source": "hutto", "set": "nyt", "max_examples": 40},
                                   {"name": "amazon", "source": "hutto", "set": "amazon", "max_examples": 20},
                                   {"name": "tweets", "source": "hutto", "set": "tweets", "max_examples": 12}]
    # nyt split by id; amazon tested whole, trained from another set (the stress tests' own training splits)
    cfg["inoculation"] = {"units": ["class", "suite"], "doses": [1, "all"], "lrs": [1.0e-3, 1.0e-4],
                          "max_epochs": 3, "patience": 1, "challenge": ["nyt", {"set": "amazon", "train": "tweets"}],
                          "select_on": "dev"}     # the default since issue 34, named: held-out selection
    cfg_file = tmp / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp / "run"
    pipeline(wd, "--cores", "2", "inoculation_all", configfiles=(cfg_file,))
    return wd, cfg_file


def test_inoculation_end_to_end_and_reruns_only_what_is_missing(analyses_run):
    wd, cfg_file = analyses_run
    res = wd / "results" / "sent" / "inoculation"
    runs = sorted(p.relative_to(res / "runs").as_posix() for p in (res / "runs").rglob("*.json"))
    units = ["class-negation", "class-robustness", "class-vocabulary", "suite", "set-nyt", "set-amazon"]
    assert runs == sorted(f"{u}/{d}/{lr}.json" for u in units for d in ("1", "all") for lr in ("lr0.001", "lr0.0001"))
    rec = json.loads((res / "runs" / "suite" / "all" / "lr0.001.json").read_text())
    assert rec["unit"] == "suite" and rec["dose"] == "all" and rec["n_cases"] == 6 and rec["lr"] == 1e-3
    assert 1 <= rec["epochs_trained"] <= 3 and len(rec["dev_curve"]) == rec["epochs_trained"]
    assert set(rec["pass_rates"]) == {"add positive phrases", "typos", "simple negations: negative"}
    one = json.loads((res / "runs" / "class-negation" / "1" / "lr0.001.json").read_text())
    assert one["n_cases"] == 1 and one["functionalities"] == ["simple negations: negative"]
    table = pd.read_csv(res / "table.csv", keep_default_na=False)
    assert list(table.groupby("unit", sort=False)["dose"].apply(list)) == [["0", "1", "all"]] * 6
    outcomes = pd.read_csv(res / "outcomes.csv")
    assert set(outcomes["unit"]) == set(units)
    assert set(outcomes["outcome"]) <= {"1", "2", "3", "between", "no gap"} and outcomes["reason"].str.len().min() > 10
    # decided by tests at the schema's level, every score with its interval, the per-case outcomes kept
    assert set(outcomes["decided_by"]) == {"tests at level 0.05, margins 2 pp (gap) / 2 pp (drop)"}
    assert outcomes["p_gain"].between(0, 1).all() and (outcomes["gap_last_lo"] <= outcomes["gap_last_hi"]).all()
    dosed = table[table["dose"] != "0"]
    assert (dosed["challenge_lo"].astype(float) <= dosed["challenge"].astype(float) + 1e-9).all()
    # the tiny suite: one MFT functionality of one label, an INV and a DIR one -> every unit flagged
    assert dict(zip(outcomes["unit"], outcomes["label_skew"])) == {
        "class-vocabulary": "no label", "class-robustness": "no label", "class-negation": "single label",
        "suite": "single label", "set-nyt": "mixed", "set-amazon": "mixed"}
    assert list(outcomes["informative_3"]) == [False] * 4 + [True] * 2
    # the external challenge set (20 NYT sentences to test; of the other 20, round(20 × 0.2) = 4 held out as its
    # dev part, where the learning rate is chosen, and 16 to train) is scored with the i.i.d. metric
    nyt = table[table["unit"] == "set-nyt"]
    assert set(nyt["measure"]) == {"accuracy"}
    assert set(table.loc[~table["unit"].str.startswith("set-"), "measure"]) == {"pass rate"}
    rec_nyt = json.loads((res / "runs" / "set-nyt" / "all" / "lr0.001.json").read_text())
    assert rec_nyt["n_cases"] == 16 and rec_nyt["challenge_set"] == "nyt" and rec_nyt["challenge_dev_examples"] == 4
    assert rec_nyt["challenge_val"] in {k / 4 for k in range(5)}      # accuracy on 4 dev sentences
    dosed_nyt = nyt[nyt["dose"] != "0"]
    assert dosed_nyt["challenge_val"].astype(float).notna().all()
    # every dose's learning rate chosen on held-out data (suite units: T_val), and said so
    assert set(table["lr_selected_on"]) == {"dev (held out)"} and set(outcomes["lr_selected_on"]) == {"dev (held out)"}
    for r in dosed.itertuples(index=False):
        runs_of = [json.loads((res / "runs" / r.unit / r.dose / f"{lr}.json").read_text())
                   for lr in ("lr0.001", "lr0.0001")]
        best = max(runs_of, key=lambda x: x["challenge_val"])       # ties: the first learning rate
        assert float(r.lr) == best["lr"], (r.unit, r.dose)
        # the original score from the rate best on the original dev set at its kept epoch (original_from:
        # original_dev, the schema's default)
        dev = [x["dev_curve"][x["best_epoch"] - 1] for x in runs_of]
        best_dev = runs_of[dev.index(max(dev))]                       # ties: the first learning rate
        assert float(r.lr_original) == best_dev["lr"] and float(r.original_dev) == pytest.approx(100 * max(dev))
        assert float(r.original) == pytest.approx(100 * best_dev["original"]), (r.unit, r.dose)
    assert "optimistic" not in (res / "inoculation.md").read_text()
    nyt_cases = pd.read_parquet(res / "runs" / "set-nyt" / "all" / "lr0.001.parquet")
    assert (nyt_cases["split"] == "ood:nyt").sum() == 20
    # amazon: trained on the 12 tweets (round(12 × 0.2) = 2 held out as the dev part), tested on all 20
    rec_am = json.loads((res / "runs" / "set-amazon" / "all" / "lr0.001.json").read_text())
    assert rec_am["n_cases"] == 10 and rec_am["challenge_dev_examples"] == 2
    am_cases = pd.read_parquet(res / "runs" / "set-amazon" / "all" / "lr0.001.parquet")
    assert (am_cases["split"] == "ood:amazon").sum() == 20
    assert rec["schedule"] == "halve_on_plateau" and len(rec["lr_factors"]) == rec["epochs_trained"]
    cases = pd.read_parquet(res / "runs" / "class-negation" / "1" / "lr0.001.parquet")
    assert set(cases["split"]) == {"suite_test", "iid_test"}
    assert set(cases.loc[cases["split"] == "suite_test", "functionality"]) == {"simple negations: negative"}
    for name in ("curves.png", "transfer.png", "inoculation.md"):
        assert (res / name).stat().st_size > 0
    # a second run does nothing; deleting one (unit, dose) result reruns that job and what depends on it
    out = pipeline(wd, "-n", "inoculation_all", configfiles=(cfg_file,))
    assert "Nothing to be done" in out.stdout + out.stderr
    (res / "runs" / "class-negation" / "1" / "lr0.001.json").unlink()
    out = pipeline(wd, "-n", "inoculation_all", configfiles=(cfg_file,))
    assert job_counts(out.stdout + out.stderr) == {"inoculate": 1, "inoculation": 1, "inoculation_all": 1}
