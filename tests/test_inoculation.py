"""Inoculation by fine-tuning (docs/ANALYSES.md; beluga/analyses/inoculation.py): dose samples,
units, the learning-rate grids, the seed's schedule (halving on a dev plateau, early stopping),
the tests behind every outcome and the label-skew flag. The end-to-end run is in
tests/test_analyses.py."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import fold_run, make_tiny_suite

from beluga.analyses import inoculation as ino
from beluga.errors import ConfigError

# ---------------------------------------------------------------- units and doses


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


def test_lr_choice_per_dose():
    df = pd.DataFrame({"unit": "u", "dose": ["1", "1", "2", "2"], "lr": [1e-5, 1e-4, 1e-5, 1e-4],
                       "lr_order": [0, 1, 0, 1], "challenge": [0.2, 0.5, 0.6, 0.6],
                       "challenge_val": [0.9, 0.1, 0.3, 0.4]})
    assert list(ino.choose(df, "test")["lr"]) == [1e-4, 1e-5]     # ties: the first learning rate
    assert list(ino.choose(df, "val")["lr"]) == [1e-5, 1e-4]


def test_the_seeds_learning_rate_grids_by_name():
    assert ino.lr_grid("paper_nli") == [1e-6, 1e-5, 1e-4, 4e-4, 1e-3, 1e-2]        # appendix A, NLI
    assert ino.lr_grid("paper_squad") == [1e-5, 1e-4, 1e-3, 1e-2]                   # appendix A, SQuAD
    assert ino.lr_grid([2e-5, 1e-4]) == [2e-5, 1e-4]
    with pytest.raises(ConfigError, match="inoculation.lrs"):
        ino.lr_grid("paper")


# ---------------------------------------------------------------- the schedule


def test_halve_on_plateau_and_patience():
    sched = ino.HalveOnPlateau(patience=5)
    dev = [0.70, 0.72, 0.71, 0.72, 0.73, 0.70, 0.70, 0.70, 0.70, 0.70]
    stops = [sched.epoch_end(e, s) for e, s in enumerate(dev, start=1)]
    # improvements at epochs 1, 2, 5; halved after 3, 4 (0.72 is no improvement on 0.72) and 6...
    assert sched.lrs == [1, 1, 1, 0.5, 0.25, 0.25, 0.125, 0.0625, 0.03125, 0.015625]
    assert sched.best_epoch == 5 and sched.best == 0.73
    assert stops == [False] * 9 + [True]             # 5 epochs without improvement after epoch 5
    linear = ino.HalveOnPlateau(patience=2, halve=False)  # schedule: linear keeps only the early stopping
    assert [linear.epoch_end(e, s) for e, s in enumerate([0.5, 0.4, 0.4], start=1)] == [False, False, True]
    assert linear.lr_factor() == 1.0


def test_training_loop_follows_the_callers_lr_factor():
    """training.train(lr_factor=...) sets the optimizer's rate from the factor at the start and after
    every epoch's hook (the hook halves it); without it, the method's linear decay, unchanged."""
    from beluga.modeling import TINY_RANDOM, load_model, set_seed
    from beluga.precision import resolve
    from beluga.tasks import SENT
    from beluga.training import build_streams, train

    seen = []
    orig_step = torch.optim.AdamW.step

    def spy(self, *a, **k):
        seen.append(self.param_groups[0]["lr"])
        return orig_step(self, *a, **k)

    suite = make_tiny_suite(2)
    sched = ino.HalveOnPlateau(patience=5)
    run = fold_run("vanilla", {"lr": 1e-3, "batch_size": 4, "epochs": 4}, seed=1)
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    streams = build_streams(SENT, None, suite)
    torch.optim.AdamW.step = spy
    try:
        summary = train(model, tok, streams, run, precision=resolve("fp32", torch.device("cpu")),
                        on_epoch_end=lambda e, m, t: sched.epoch_end(e, -e), lr_factor=sched.lr_factor)
        per = summary["steps"] // 4    # dev score -epoch: best after epoch 1, halved after epochs 2 and 3
        assert seen == pytest.approx([1e-3] * 2 * per + [5e-4] * per + [2.5e-4] * per)
        seen.clear()
        set_seed(0)
        model, tok = load_model(TINY_RANDOM, 2)
        summary = train(model, tok, streams, run, precision=resolve("fp32", torch.device("cpu")))
    finally:
        torch.optim.AdamW.step = orig_step
    total = summary["steps"]
    assert seen == pytest.approx([1e-3 * (1 - k / total) for k in range(total)])   # linear decay


# ---------------------------------------------------------------- outcomes from tests


def unit_outcomes(passed, original_correct, prefix="c"):
    """A model's outcomes: the unit's T_test cases (one functionality 'f') and the i.i.d. test examples."""
    suite = pd.DataFrame({"case_id": [f"{prefix}{i:03d}" for i in range(len(passed))], "functionality": "f",
                          "status": ["pass" if p else "fail" for p in passed], "split": "suite_test"})
    iid = pd.DataFrame({"case_id": [f"x{i:04d}" for i in range(len(original_correct))], "functionality": None,
                        "status": None, "split": "iid_test", "correct": pd.array(original_correct, "boolean")})
    return pd.concat([suite, iid], ignore_index=True)


def scores(out):
    cases, _ = ino.unit_case_arrays(out, ["f"])
    rows = ino.original_rows(out)
    return cases, rows


def summary_rows(base, last, level=0.05):
    """(first, last) rows as the inoculation step builds them, from two models' outcomes."""
    from beluga.report.stats import iid_features

    rows = []
    for out in (base, last):
        cases, iid = scores(out)
        hits = ino.original_hits(iid, "sent")
        rows.append({"challenge": 100 * cases["passed"].mean(), "original": 100 * hits.mean(),
                     "original_same": 100 * hits.mean(), "cases": cases, "feats": iid_features(iid, "sent"),
                     "hits": hits,
                     "p_gap": ino.gap_test(int(cases["passed"].sum()), len(cases), int(hits.sum()), len(hits))})
    first, lastr = rows
    lastr.update(ino.dose_tests(first["cases"], lastr["cases"], first["feats"], lastr["feats"], first["hits"],
                                lastr["hits"], "sent", "mean"))
    gap0 = first["original_same"] - first["challenge"]
    lastr["gap_closed"] = (lastr["challenge"] - first["challenge"]) / gap0 if gap0 > 0 else np.nan
    keep = ("challenge", "original", "original_same", "p_gap", "p_gain", "p_original", "gap_closed")
    return pd.Series({k: first.get(k) for k in keep}), pd.Series({k: lastr.get(k) for k in keep})


def flip(values, k, to):
    """The first k entries of ``values`` that differ from ``to`` set to ``to``."""
    out, n = list(values), 0
    for i, v in enumerate(out):
        if n < k and v != to:
            out[i], n = to, n + 1
    return out


BASE_PASS = [True] * 8 + [False] * 32           # challenge 20 % on 40 cases
BASE_ORIG = [True] * 180 + [False] * 20         # original 90 % on 200 examples


@pytest.mark.parametrize("passed, original, outcome", [
    (flip(BASE_PASS, 28, True), BASE_ORIG, "1"),                  # +70 pp to 90 %: gap closed, original kept
    (flip(BASE_PASS, 2, True), BASE_ORIG, "2"),                   # +5 pp (2 cases): not significant
    (flip(BASE_PASS, 28, True), flip(BASE_ORIG, 20, False), "3"), # original 90 -> 80 %: significant drop
    (flip(BASE_PASS, 14, True), BASE_ORIG, "between"),            # +35 pp, significant; 55 % still below 90 %
])
def test_outcome_decided_by_tests(passed, original, outcome):
    first, last = summary_rows(unit_outcomes(BASE_PASS, BASE_ORIG), unit_outcomes(passed, original))
    label, reason = ino.decide(first, last, level=0.05)
    assert label == outcome, reason
    assert "at level 0.05" in reason and "p " in reason


def test_no_gap_and_the_tests_behind_the_labels():
    # the IID model passes 34 of 40 (85 %) vs 90 % of the original examples: not significantly below
    base = unit_outcomes([True] * 34 + [False] * 6, BASE_ORIG)
    first, last = summary_rows(base, unit_outcomes([True] * 36 + [False] * 4, BASE_ORIG))
    assert first.p_gap >= 0.05
    assert ino.decide(first, last)[0] == "no gap"
    # exact McNemar: 28 cases gained, none lost -> p = 2 * 0.5^28; original unchanged -> p = 1
    first, last = summary_rows(unit_outcomes(BASE_PASS, BASE_ORIG), unit_outcomes(flip(BASE_PASS, 28, True),
                                                                                  BASE_ORIG))
    assert last.p_gain == pytest.approx(2 * 0.5 ** 28) and last.p_original == 1.0
    assert last.gap_closed == pytest.approx(70 / 70)
    # the same numbers decided at a stricter level: 2 of 40 gained is p = 0.5 either way; a gain of 6 cases
    # (p = 0.031) is significant at 0.05, not at 0.01
    first, last = summary_rows(unit_outcomes(BASE_PASS, BASE_ORIG), unit_outcomes(flip(BASE_PASS, 6, True),
                                                                                  BASE_ORIG))
    assert last.p_gain == pytest.approx(2 * 0.5 ** 6)
    assert ino.decide(first, last, level=0.05)[0] == "between"
    assert ino.decide(first, last, level=0.01)[0] == "2"


def test_a_drop_on_a_single_label_unit_is_flagged_uninformative():
    first, last = summary_rows(unit_outcomes(BASE_PASS, BASE_ORIG),
                               unit_outcomes([True] * 40, flip(BASE_ORIG, 30, False)))
    label, reason = ino.decide(first, last, informative_3=False)
    assert label == "3" and "uninformative" in reason and "§3.3" in reason
    assert "uninformative" not in ino.decide(first, last, informative_3=True)[1]


def test_paired_tests_match_on_binary_outcomes_and_intervals_cover():
    rng = np.random.default_rng(0)
    a = rng.random(300) < 0.8
    b = a.copy()
    b[:30] = True
    b[30:36] = False
    r = ino.paired_randomization(a[:, None].astype(float), b[:, None].astype(float), "sent", "accuracy",
                                 R=20_000, seed=1)
    m = ino.mcnemar(a, b)
    assert r["delta"] == pytest.approx(b.mean() - a.mean())
    assert r["p_value"] == pytest.approx(m["p_value"], abs=0.01)     # the randomization approaches McNemar
    assert ino.binary_iid_metric("sent", "mean") and ino.binary_iid_metric("read", "em")
    assert not ino.binary_iid_metric("para", "mean") and not ino.binary_iid_metric("read", "f1")
    ci = ino.score_intervals(np.array([True] * 30 + [False] * 10), np.ones(40, bool), np.zeros(40, int), 1,
                             b[:, None].astype(float), "sent", "accuracy", R=500)
    assert ci["challenge"][0] < 75 < ci["challenge"][1] and ci["original"][0] < 100 * b.mean() < ci["original"][1]
    assert ino.gap_test(30, 40, 0, 0) == 1.0


def test_label_skew_of_a_unit():
    suite = make_tiny_suite(3)
    by = {f: suite[suite["functionality"] == f] for f in suite["functionality"].unique()}
    one = ino.label_skew(by["neg words"])                           # MFT, every case label 0
    assert one["label_skew"] == "single label" and not one["informative_3"] and one["labels"] == "0: 100%"
    none = ino.label_skew(pd.concat([by["typos"], by["add positive"]]))   # INV / DIR: no labels
    assert none["label_skew"] == "no label" and not none["informative_3"]
    mixed = suite.iloc[:2].copy()
    mixed["labels"] = [[0], [1]]
    assert ino.label_skew(mixed) == {"label_skew": "mixed", "labels": "0: 50%, 1: 50%", "informative_3": True}
    class_unit = ino.label_skew(pd.concat([by["neg words"], by["add positive"]]))   # one label + unlabelled
    assert class_unit["label_skew"] == "single label" and "without a label" in class_unit["labels"]
    assert ino.label_skew(by["typos"], head="qa")["informative_3"]
    named = ino.label_skew(mixed, names={0: "negative", 1: "neutral", 2: "positive"})   # the task's label set
    assert named["labels"] == "negative: 50%, neutral: 50%; no positive case"


# ---------------------------------------------------------------- the fixed thresholds (decide_by: thresholds)


@pytest.mark.parametrize("curve, outcome", [
    ((40, 90, 88, 89), "1"),          # the gap closes, original kept
    ((40, 90, 42, 90), "2"),          # nothing changes
    ((40, 90, 85, 80), "3"),          # the original score drops (gap closed or not)
    ((40, 90, 41, 87), "3"),
    ((40, 90, 70, 90), "between"),    # +30 pp but still 20 pp below
    ((88, 90, 95, 90), "no gap"),     # the IID model already passed
])
def test_outcome_classification_by_thresholds(curve, outcome):
    label, reason = ino.classify(*curve)
    assert label == outcome, reason
    c0, o0, c, o = curve
    assert f"{int(round(c - c0)):+d} pp" in reason and "original" in reason


def test_outcome_reason_in_words():
    assert ino.classify(40, 90, 78, 89, close_within=15)[1] == \
        "challenge +38 pp to within 15 pp of original (78 vs 89); original -1 pp (90 → 89)"


# ---------------------------------------------------------------- external challenge sets


def test_challenge_set_units_split_and_doses():
    ood = {"nyt": {"name": "nyt", "source": "hutto", "set": "nyt", "max_examples": 500},
           "amazon_polarity": {"name": "amazon_polarity", "source": "hub"}}
    units = ino.challenge_units(["nyt", "amazon_polarity", "imdb"], ood)      # imdb: not an OOD set of this task
    assert units == {"set-nyt": {"level": "challenge set", "label": "nyt", "functionalities": [], "challenge": "nyt"},
                     "set-amazon-polarity": {"level": "challenge set", "label": "amazon_polarity",
                                             "functionalities": [], "challenge": "amazon_polarity"}}
    assert ino.challenge_train_size(ood["nyt"], 0.5) == 250 and ino.challenge_train_size(ood["amazon_polarity"],
                                                                                         0.5) is None
    assert ino.doses_for(250, [4, 16, "all"]) == ["4", "16", "all"]
    assert ino.doses_for(None, [4, 16]) == ["4", "16", "all"]       # size unknown before the set is prepared
    ids = [f"nyt-{i}" for i in range(41)]
    train, test = ino.challenge_split(ids, 0.5, 11, "nyt")
    assert len(test) == 20 and len(train) == 21 and not set(train) & set(test) and set(train) | set(test) == set(ids)
    assert ino.challenge_split(list(reversed(ids)), 0.5, 11, "nyt") == (train, test)   # by id, not row order
    assert ino.challenge_split(ids, 0.5, 12, "nyt") != (train, test)
    skew = ino.set_label_skew(pd.DataFrame({"label": [1, 1, 0, 1]}))
    assert skew == {"label_skew": "mixed", "labels": "0: 25%, 1: 75%", "informative_3": True}
    assert not ino.set_label_skew(pd.DataFrame({"label": [1, 1]}))["informative_3"]


def test_challenge_set_tests_in_the_tasks_metric():
    # accuracy: exact McNemar for the change, Fisher exact for the gap (a 0/1 metric)
    base = np.array([True] * 10 + [False] * 30)
    now = np.array([True] * 30 + [False] * 10)
    p, name = ino.paired_metric_test(base[:, None].astype(float), now[:, None].astype(float), base, now, "sent",
                                     "accuracy")
    assert name == "exact McNemar" and p == pytest.approx(2 * 0.5 ** 20)
    orig = np.array([True] * 36 + [False] * 4)
    assert ino.set_gap_test(base[:, None], base, orig[:, None], orig, "sent", "accuracy") < 0.001
    assert ino.set_gap_test(orig[:, None], orig, orig[:, None], orig, "sent", "accuracy") > 0.5
    # SQuAD F1 (not a 0/1 mean): paired randomization and a one-sided permutation test
    rng = np.random.default_rng(0)
    f_base = np.column_stack([rng.random(60) < 0.3, rng.random(60)]).astype(float)
    f_now = f_base.copy()
    f_now[:, 1] = np.minimum(1, f_now[:, 1] + 0.4)
    p, name = ino.paired_metric_test(f_base, f_now, f_base[:, 0] > 0, f_now[:, 0] > 0, "read", "f1", R=2000)
    assert name.startswith("paired randomization") and p < 0.01
    assert ino.unpaired_permutation(f_base, f_now, "read", "f1", R=2000) < 0.01     # challenge below original
    assert ino.unpaired_permutation(f_now, f_base, "read", "f1", R=2000) > 0.9
    lo, hi = ino.metric_interval(f_base, "read", "f1", R=500)
    assert lo < 100 * f_base[:, 1].mean() < hi


def test_runs_add_challenge_units_with_their_doses_inputs_and_grids():
    """beluga/workflow/runs.py: a challenge set named in inoculation.challenge is a unit of every analysed task
    that has it as an OOD set, with doses below its training part, its prepared set as an input; a named
    learning-rate grid is resolved; a name that is no OOD set of an analysed task is an error."""
    import copy

    import yaml
    from conftest import CONFIGS, REPO
    from snakemake.utils import validate

    from beluga.data.fetch import resolve_data_paths
    from beluga.workflow.paths import Paths
    from beluga.workflow.runs import Runs

    def runs(**inoc):
        cfg = yaml.safe_load((CONFIGS / "tiny.yaml").read_text())
        cfg["tasks"]["sent"]["ood"] = [{"name": "nyt", "source": "hutto", "set": "nyt", "max_examples": 40}]
        cfg["inoculation"] = copy.deepcopy(inoc)
        validate(cfg, str(REPO / "schemas" / "config.schema.yaml"))
        resolve_data_paths(cfg)
        return Runs(cfg, Paths(cfg["results"]), str(cfg["data_dir"]))

    r = runs(units=["class"], doses=[4, 16, 100], lrs="paper_squad", challenge=["nyt"])
    assert r.inoc_units["sent"]["set-nyt"]["challenge"] == "nyt"
    assert r.inoc_doses("sent", "set-nyt") == ["4", "16", "all"]            # 40 examples: 20 to train
    assert r.inoc_challenge("sent", "set-nyt") == ["results/sent/ood/data/nyt.parquet"]
    assert r.inoc_challenge("sent", "class-negation") == []
    assert r.inoc_lrs == [1e-5, 1e-4, 1e-3, 1e-2]
    results = r.inoc_results("sent", "parquet")
    assert "results/sent/inoculation/runs/set-nyt/16/lr0.001.parquet" in results
    assert [p.replace(".parquet", ".json") for p in results] == r.inoc_results("sent")
    job = r.settings("inoculate", {"task": "sent", "unit": "set-nyt", "dose": "4", "lr": "lr1e-05"})
    assert job["hparams"]["lr"] == 1e-5 and job["hparams"]["epochs"] == 30      # the schema's max_epochs
    with pytest.raises(ConfigError, match=r"inoculation\.challenge': 'imdb'"):
        runs(units=["class"], challenge=["imdb"])
