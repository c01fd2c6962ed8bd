"""The related analyses (docs/ANALYSES.md): inoculation by fine-tuning (dose
samples, units, outcomes) and combinational OOD (the nine combinations of
seed 002's Table 2), with tiny end-to-end runs of both."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, job_counts, smk

from beluga.analyses import combinational as comb
from beluga.analyses import inoculation as ino
from beluga.errors import ConfigError, DataError

# ---------------------------------------------------------------- inoculation


def test_dose_samples_are_nested_seeded_and_keyed_by_id():
    ids = [f"c{i:03d}" for i in range(60)]
    d5, d10, d50 = (ino.dose_sample(ids, d, 11, "class-negation") for d in ("5", "10", "50"))
    assert d10[:5] == d5 and d50[:10] == d10                          # nested
    assert set(d50) <= set(ids) and len(set(d50)) == 50
    assert ino.dose_sample(list(reversed(ids)), "10", 11, "class-negation") == d10   # ids, not row order
    assert ino.dose_sample(ids, "10", 12, "class-negation") != d10     # the seed matters
    assert ino.dose_sample(ids, "10", 11, "suite") != d10              # and the unit
    assert sorted(ino.dose_sample(ids, "all", 11, "suite")) == ids
    assert ino.dose_sample(ids, "100", 11, "suite") == ino.dose_sample(ids, "all", 11, "suite")
    # doses a unit runs: numbers below its size, 'all' once
    assert ino.doses_for(30, [5, 10, 50, "all"]) == ["5", "10", "all"]
    assert ino.doses_for(30, [10, 5, 40]) == ["5", "10", "all"]
    assert ino.doses_for(30, [5, 10]) == ["5", "10"]


def test_units_per_level():
    funcs = pd.DataFrame({"functionality": ["a", "b", "c"], "capability": ["Negation", "Negation", "Vocabulary"],
                          "test_type": ["MFT", "INV", "DIR"], "n_cases": [10, 10, 8]})
    units = ino.units(funcs, ["suite", "class", "functionality"])
    assert units["suite"]["functionalities"] == ["a", "b", "c"]
    assert units["class-negation"]["functionalities"] == ["a", "b"]
    assert units["func-c"] == {"level": "functionality", "label": "c", "functionalities": ["c"]}
    # T_train sizes before the split (fractions 0.5 / 0.25 / 0.25: 10 -> 6 / 2 / 2 ... as folds.assign_splits)
    from beluga.folds import split_sizes
    assert ino.train_cases_per_unit(funcs, ["a", "b"], (0.5, 0.25, 0.25)) == 2 * split_sizes(10, (0.5, .25, .25))[0]
    with pytest.raises(ConfigError, match="inoculation.units"):
        ino.units(funcs, ["capability"])


@pytest.mark.parametrize("curve, outcome", [
    ((40, 90, 88, 89), "1"),          # the gap closes, original kept
    ((40, 90, 42, 90), "2"),          # nothing changes
    ((40, 90, 85, 80), "3"),          # the original score drops (gap closed or not)
    ((40, 90, 41, 87), "3"),
    ((40, 90, 70, 90), "between"),    # +30 pp but still 20 pp below
    ((88, 90, 95, 90), "no gap"),     # the IID model already passed
])
def test_outcome_classification(curve, outcome):
    label, reason = ino.classify(*curve)
    assert label == outcome, reason
    c0, o0, c, o = curve
    assert f"{int(round(c - c0)):+d} pp" in reason and "original" in reason


def test_outcome_reason_in_words():
    assert ino.classify(40, 90, 78, 89, close_within=15)[1] == \
        "challenge +38 pp to within 15 pp of original (78 vs 89); original -1 pp (90 → 89)"


def test_lr_choice_per_dose():
    df = pd.DataFrame({"unit": "u", "dose": ["1", "1", "2", "2"], "lr": [1e-5, 1e-4, 1e-5, 1e-4],
                       "lr_order": [0, 1, 0, 1], "challenge": [0.2, 0.5, 0.6, 0.6],
                       "challenge_val": [0.9, 0.1, 0.3, 0.4]})
    assert list(ino.choose(df, "test")["lr"]) == [1e-4, 1e-5]     # ties: the first learning rate
    assert list(ino.choose(df, "val")["lr"]) == [1e-5, 1e-4]


# ---------------------------------------------------------------- combinational OOD


def pool(n=30):
    rows = [{"example_id": f"{r}{i:02d}", "text": f"sentence {r} {i}", "label": lab, "role": r}
            for r, lab in (("fst", "positive"), ("sec", "negative"), ("neu", "neutral")) for i in range(n)]
    return comb.split_pool(pd.DataFrame(rows), n_test=5, seed=3)


WORDS = {"fst": "great", "sec": "terrible", "neu": "okay"}


def test_nine_combinations_labels_and_disjoint_inputs():
    train, test = comb.build(pool(), 8, WORDS, "{S} It is {LABEL}.")
    role_word = {w: r for r, w in WORDS.items()}

    def pairs(df):
        return {(x.rsplit("|", 1)[0][:3], role_word[t.split("It is ")[1].rstrip(".")], y)
                for x, t, y in zip(df["example_id"], df["text"], df["label"])}
    assert pairs(train) == {("fst", "fst", 0), ("sec", "sec", 0), ("neu", "fst", 1), ("neu", "sec", 1)}
    assert pairs(test) == {("fst", "fst", 0), ("sec", "sec", 0), ("neu", "fst", 1), ("neu", "sec", 1),
                           ("fst", "sec", 1), ("sec", "fst", 1), ("fst", "neu", 1), ("sec", "neu", 1),
                           ("neu", "neu", 0)}
    assert set(test["cell"]) == {comb.cell_name(x, t) for x, t, _, _ in comb.CELLS}
    assert dict(test.groupby("group")["cell"].nunique()) == {"ID": 4, "COOD": 2, "OOD": 3}
    # 2K examples with ŷ = 0 and 2K with ŷ = 1; K inputs per label
    assert (train["label"] == 0).sum() == 16 and (train["label"] == 1).sum() == 16
    assert train.groupby(train["x_id"].str[:3])["x_id"].nunique().to_dict() == {"fst": 8, "neu": 8, "sec": 8}
    assert not set(train["x_id"]) & set(test["x_id"])                  # no test input is ever trained on
    assert test.groupby("cell").size().eq(5).all()
    assert all(t.endswith((" It is great.", " It is terrible.", " It is okay.")) for t in test["text"])


def test_training_sets_are_nested_in_k_and_the_pool_is_seeded():
    p = pool()
    small, _ = comb.build(p, 4, WORDS, "{S} It is {LABEL}.")
    large, _ = comb.build(p, 12, WORDS, "{S} It is {LABEL}.")
    assert set(small["x_id"]) < set(large["x_id"])
    again = pool()
    pd.testing.assert_frame_equal(p, again)
    with pytest.raises(DataError, match="K = 40 needs 40 training inputs"):
        comb.build(p, 40, WORDS, "{S} It is {LABEL}.")
    with pytest.raises(ConfigError, match="needs {S} and {LABEL}"):
        comb.build(p, 4, WORDS, "It is {LABEL}.")


def test_cell_accuracy():
    _, test = comb.build(pool(), 4, WORDS, "{S} It is {LABEL}.")
    pred = test["label"].to_numpy().copy()
    cood = (test["group"] == "COOD").to_numpy()
    pred[cood] = 1 - pred[cood]                        # the shortcut: every COOD example wrong
    acc = comb.cell_accuracy(test, pred)
    assert acc["ID"] == 1.0 and acc["COOD"] == 0.0 and acc["OOD"] == 1.0 and acc["fst/sec"] == 0.0


# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def analyses_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analyses")
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["configurations"], cfg["partitions"] = ["iid_to_t"], ["seen"]
    cfg["inoculation"] = {"units": ["class", "suite"], "doses": [1, "all"], "lrs": [1.0e-3, 1.0e-4],
                          "max_epochs": 3, "patience": 1}
    cfg["combinational"] = {"model": "tiny-random", "ks": [4, 8], "n_test": 6, "max_length": 32,
                            "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": 2}}
    cfg_file = tmp / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp / "run"
    smk(wd, "--cores", "2", "inoculation_all", "combinational_all", configfiles=(cfg_file,))
    return wd, cfg_file


@pytest.mark.slow
def test_inoculation_end_to_end_and_reruns_only_what_is_missing(analyses_run):
    wd, cfg_file = analyses_run
    res = wd / "results" / "sent" / "inoculation"
    runs = sorted(p.relative_to(res / "runs").as_posix() for p in (res / "runs").rglob("*.json"))
    units = ["class-negation", "class-robustness", "class-vocabulary", "suite"]
    assert runs == sorted(f"{u}/{d}/{lr}.json" for u in units for d in ("1", "all") for lr in ("lr0.001", "lr0.0001"))
    rec = json.loads((res / "runs" / "suite" / "all" / "lr0.001.json").read_text())
    assert rec["unit"] == "suite" and rec["dose"] == "all" and rec["n_cases"] == 6 and rec["lr"] == 1e-3
    assert 1 <= rec["epochs_trained"] <= 3 and len(rec["dev_curve"]) == rec["epochs_trained"]
    assert set(rec["pass_rates"]) == {"add positive phrases", "typos", "simple negations: negative"}
    one = json.loads((res / "runs" / "class-negation" / "1" / "lr0.001.json").read_text())
    assert one["n_cases"] == 1 and one["functionalities"] == ["simple negations: negative"]
    table = pd.read_csv(res / "table.csv", keep_default_na=False)
    assert list(table.groupby("unit", sort=False)["dose"].apply(list)) == [["0", "1", "all"]] * 4
    outcomes = pd.read_csv(res / "outcomes.csv")
    assert set(outcomes["unit"]) == set(units)
    assert set(outcomes["outcome"]) <= {"1", "2", "3", "between", "no gap"} and outcomes["reason"].str.len().min() > 10
    for name in ("curves.png", "transfer.png", "inoculation.md"):
        assert (res / name).stat().st_size > 0
    # a second run does nothing; deleting one (unit, dose) result reruns that job and what depends on it
    out = smk(wd, "-n", "inoculation_all", configfiles=(cfg_file,))
    assert "Nothing to be done" in out.stdout + out.stderr
    (res / "runs" / "class-negation" / "1" / "lr0.001.json").unlink()
    out = smk(wd, "-n", "inoculation_all", configfiles=(cfg_file,))
    assert job_counts(out.stdout + out.stderr) == {"inoculate": 1, "inoculation": 1, "inoculation_all": 1}


@pytest.mark.slow
def test_combinational_end_to_end(analyses_run):
    wd, _ = analyses_run
    res = wd / "results" / "combinational"
    table = pd.read_csv(res / "table.csv")
    assert list(table["K"]) == [4, 8] and list(table["n_train"]) == [16, 32]
    for cell in [comb.cell_name(x, t) for x, t, _, _ in comb.CELLS] + ["ID", "COOD", "OOD"]:
        assert table[cell].between(0, 1).all(), cell
    k8 = json.loads((res / "runs" / "k8.json").read_text())
    k4 = json.loads((res / "runs" / "k4.json").read_text())
    assert set(k4["train_x"]) < set(k8["train_x"])
    epochs = pd.read_csv(res / "epochs.csv")
    assert sorted(zip(epochs["K"], epochs["epoch"])) == [(4, 1), (4, 2), (8, 1), (8, 2)]
    test_x = pd.read_parquet(res / "pool.parquet").query("split == 'test'")["example_id"]
    assert not set(test_x) & set(k8["train_x"])
    assert (res / "accuracy.png").stat().st_size > 0 and np.isfinite(table["COOD"]).all()
