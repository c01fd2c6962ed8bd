"""Inoculation by fine-tuning (docs/ANALYSES.md; beluga/analyses/inoculation/, beluga/report/paired.py): dose samples,
units, the learning-rate grids, the seed's schedule (halving on a dev plateau, early stopping),
the tests behind every outcome and the label-skew flag. The end-to-end run is in
tests/test_analyses.py."""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import fold_run, make_tiny_suite

from beluga.analyses.inoculation import outcomes as ino_outcomes
from beluga.analyses.inoculation import plan as ino_plan
from beluga.analyses.inoculation import summary as ino_summary
from beluga.analyses.inoculation import train as ino_train
from beluga.core.errors import ConfigError, DataError
from beluga.report import paired

# ---------------------------------------------------------------- units and doses


def test_dose_samples_are_nested_seeded_and_keyed_by_id():
    ids = [f"c{i:03d}" for i in range(60)]
    d5, d10, d50 = (ino_plan.dose_sample(ids, d, 11, "class-negation") for d in ("5", "10", "50"))
    assert d10[:5] == d5 and d50[:10] == d10                          # nested
    assert set(d50) <= set(ids) and len(set(d50)) == 50
    assert ino_plan.dose_sample(list(reversed(ids)), "10", 11, "class-negation") == d10   # ids, not row order
    assert ino_plan.dose_sample(ids, "10", 12, "class-negation") != d10     # the seed matters
    assert ino_plan.dose_sample(ids, "10", 11, "suite") != d10              # and the unit
    assert sorted(ino_plan.dose_sample(ids, "all", 11, "suite")) == ids
    assert ino_plan.dose_sample(ids, "100", 11, "suite") == ino_plan.dose_sample(ids, "all", 11, "suite")
    # doses a unit runs: numbers below its size, 'all' once
    assert ino_plan.doses_for(30, [5, 10, 50, "all"]) == ["5", "10", "all"]
    assert ino_plan.doses_for(30, [10, 5, 40]) == ["5", "10", "all"]
    assert ino_plan.doses_for(30, [5, 10]) == ["5", "10"]


def test_units_per_level():
    funcs = pd.DataFrame({"functionality": ["a", "b", "c"], "capability": ["Negation", "Negation", "Vocabulary"],
                          "test_type": ["MFT", "INV", "DIR"], "n_cases": [10, 10, 8]})
    units = ino_plan.units(funcs, ["suite", "class", "functionality"])
    assert units["suite"]["functionalities"] == ["a", "b", "c"]
    assert units["class-negation"]["functionalities"] == ["a", "b"]
    assert units["func-c"] == {"level": "functionality", "label": "c", "functionalities": ["c"]}
    # T_train sizes before the split (fractions 0.5 / 0.25 / 0.25: 10 -> 6 / 2 / 2 ... as folds.assign_splits)
    from beluga.suites.folds import split_sizes
    assert ino_plan.train_cases_per_unit(funcs, ["a", "b"], (0.5, 0.25, 0.25)) == \
        2 * split_sizes(10, (0.5, .25, .25))[0]
    with pytest.raises(ConfigError, match="inoculation.units"):
        ino_plan.units(funcs, ["capability"])


def test_lr_choice_per_dose():
    df = pd.DataFrame({"unit": "u", "dose": ["1", "1", "2", "2"], "lr": [1e-5, 1e-4, 1e-5, 1e-4],
                       "lr_order": [0, 1, 0, 1], "challenge": [0.2, 0.5, 0.6, 0.6],
                       "challenge_val": [0.9, 0.1, 0.3, 0.4]})
    one_rate = "challenge_best"        # the original score read from the same run (its own test below)
    assert list(ino_summary.choose(df, "test", one_rate)["lr"]) == [1e-4, 1e-5]     # ties: the first learning rate
    assert list(ino_summary.choose(df, "dev", one_rate)["lr"]) == [1e-5, 1e-4]      # held out: T_val / the dev part
    assert list(ino_summary.choose(df, "val", one_rate)["lr"]) == [1e-5, 1e-4]      # val: dev's name before issue 34
    one = df.assign(challenge_val=[None, 0.2, 0.3, 0.4])                  # a rate without a score is not chosen
    assert list(ino_summary.choose(one, "dev", one_rate)["lr"]) == [1e-4, 1e-4]
    none = df.assign(challenge_val=[None, None, 0.3, 0.4], case_outcomes=[f"runs/u/{d}/{lr:g}.parquet" for d, lr in
                                                                        zip(df["dose"], df["lr"])])
    with pytest.raises(DataError, match=r"^runs/u/1/1e-05\.json: field 'challenge_val': no learning rate of unit "
                                        r"u, dose 1 has a held-out challenge score"):
        ino_summary.choose(none, "dev", one_rate)           # never the first rate silently
    assert list(ino_summary.choose(none, "test", one_rate)["lr"]) == [1e-4, 1e-5]
    with pytest.raises(ConfigError, match="field 'inoculation.select_on': 'train' is not one of dev, val, test"):
        ino_summary.choose(df, "train", one_rate)
    assert [ino_plan.selection(v) for v in ("dev", "val", "test")] == ["dev", "dev", "test"]
    # the dev part of an external set is held out only when it is chosen on
    assert ino_plan.dev_fraction({"select_on": "dev", "challenge_dev_fraction": 0.2}) == 0.2
    assert ino_plan.dev_fraction({"select_on": "val", "challenge_dev_fraction": 0.3}) == 0.3
    assert ino_plan.dev_fraction({"select_on": "test", "challenge_dev_fraction": 0.2}) == 0.0


def dev_grid() -> pd.DataFrame:
    """A constructed grid, unit u × doses 5 / all × learning rates 1e-5, 1e-4, 1e-3 (configured in that order):
    each run's challenge test score, original test score and original dev curve with its best epoch, and its
    outcomes file. Dose 5: the challenge best at 1e-3 (0.90), the original dev best at 1e-5 (0.84, epoch 2 of
    3: the kept weights' score, not the last epoch's); dose all: 1e-5 and 1e-4 tie on the original dev set
    (0.86), the challenge best at 1e-4."""
    grid = [  # dose, lr, challenge, original (test), dev curve, best epoch
        ("5", 1e-5, 0.40, 0.83, [0.80, 0.84, 0.81], 2),
        ("5", 1e-4, 0.55, 0.80, [0.82], 1),
        ("5", 1e-3, 0.90, 0.60, [0.50, 0.70, 0.83], 3),
        ("all", 1e-5, 0.70, 0.84, [0.86], 1),
        ("all", 1e-4, 0.95, 0.78, [0.83, 0.86, 0.85], 2),
        ("all", 1e-3, 0.93, 0.50, [0.40], 1),
    ]
    return pd.DataFrame([{"unit": "u", "dose": d, "lr": lr, "lr_order": [1e-5, 1e-4, 1e-3].index(lr), "challenge": c,
                          "challenge_val": None, "original": o, "dev_curve": curve, "best_epoch": best,
                          "degenerate": lr == 1e-3, "case_outcomes": f"runs/u/{d}/lr{lr:g}.parquet"}
                         for d, lr, c, o, curve, best in grid])


def test_original_score_from_the_original_dev_set():
    """The seed's reading (original_from: original_dev): per dose the challenge score from the challenge-best
    rate, the original score from the rate with the best original dev score, both rates recorded; the single
    rate of original_from: challenge_best reads both off the challenge-best run."""
    grid = dev_grid()
    seed = ino_summary.choose(grid, "test", "original_dev").set_index("dose")
    assert seed.loc["5", "lr"] == 1e-3 and seed.loc["5", "challenge"] == 0.90          # challenge-best
    assert seed.loc["5", "lr_original"] == 1e-5 and seed.loc["5", "original"] == 0.83   # dev 0.84 at epoch 2
    assert seed.loc["5", "original_dev"] == 0.84
    assert seed.loc["5", "case_outcomes_original"] == "runs/u/5/lr1e-05.parquet"
    assert seed.loc["5", "case_outcomes"] == "runs/u/5/lr0.001.parquet"
    assert bool(seed.loc["5", "degenerate"]) and not bool(seed.loc["5", "degenerate_original"])
    assert seed.loc["all", "lr"] == 1e-4 and seed.loc["all", "lr_original"] == 1e-5    # the dev tie: the first rate
    assert seed.loc["all", "original"] == 0.84 and seed.loc["all", "original_dev"] == 0.86
    one = ino_summary.choose(grid, "test", "challenge_best").set_index("dose")
    assert list(one["lr_original"]) == list(one["lr"]) == [1e-3, 1e-4]
    assert list(one["original"]) == [0.60, 0.78] and list(one["original_dev"]) == [0.83, 0.86]
    assert list(one["case_outcomes_original"]) == list(one["case_outcomes"])
    # the kept weights' dev score is the curve at best_epoch (epochs from 1); none without a curve
    assert ino_summary.original_dev_score({"dev_curve": [0.5, 0.7, 0.6], "best_epoch": 2}) == 0.7
    assert np.isnan(ino_summary.original_dev_score({"best_epoch": 2}))
    assert np.isnan(ino_summary.original_dev_score({"dev_curve": [0.5], "best_epoch": 0}))
    # a rate without a dev score is not chosen; no rate with one is refused, naming a record and the field
    part = grid.assign(dev_curve=[None, [0.1], [0.5, 0.6, 0.2], None, [0.9], [0.2]])   # all, 1e-4: epoch 2 of 1
    assert list(ino_summary.choose(part, "test", "original_dev")["lr_original"]) == [1e-3, 1e-3]
    with pytest.raises(DataError, match=r"^runs/u/5/lr1e-05\.json: field 'dev_curve': no learning rate of unit u, "
                                        r"dose 5 has an original dev score"):
        ino_summary.choose(grid.assign(dev_curve=None), "test", "original_dev")
    assert list(ino_summary.choose(grid.assign(dev_curve=None), "test", "challenge_best")["lr"]) == [1e-3, 1e-4]
    with pytest.raises(ConfigError, match="field 'inoculation.original_from': 'original_test' is not one of "
                                          "original_dev, challenge_best"):
        ino_summary.choose(grid, "test", "original_test")


def test_the_seeds_learning_rate_grids_by_name():
    assert ino_plan.lr_grid("paper_nli") == [1e-6, 1e-5, 1e-4, 4e-4, 1e-3, 1e-2]        # appendix A, NLI
    assert ino_plan.lr_grid("paper_squad") == [1e-5, 1e-4, 1e-3, 1e-2]                   # appendix A, SQuAD
    assert ino_plan.lr_grid([2e-5, 1e-4]) == [2e-5, 1e-4]
    with pytest.raises(ConfigError, match="inoculation.lrs"):
        ino_plan.lr_grid("paper")


# ---------------------------------------------------------------- the schedule


def test_halve_on_plateau_and_patience():
    sched = ino_train.HalveOnPlateau(patience=5)
    dev = [0.70, 0.72, 0.71, 0.72, 0.73, 0.70, 0.70, 0.70, 0.70, 0.70]
    stops = [sched.epoch_end(e, s) for e, s in enumerate(dev, start=1)]
    # improvements at epochs 1, 2, 5; halved after 3, 4 (0.72 is no improvement on 0.72) and 6...
    assert sched.lrs == [1, 1, 1, 0.5, 0.25, 0.25, 0.125, 0.0625, 0.03125, 0.015625]
    assert sched.best_epoch == 5 and sched.best == 0.73
    assert stops == [False] * 9 + [True]             # 5 epochs without improvement after epoch 5
    linear = ino_train.HalveOnPlateau(patience=2, halve=False)  # schedule: linear keeps only the early stopping
    assert [linear.epoch_end(e, s) for e, s in enumerate([0.5, 0.4, 0.4], start=1)] == [False, False, True]
    assert linear.lr_factor() == 1.0


def test_training_loop_follows_the_callers_lr_factor():
    """training.train(lr_factor=...) sets the optimizer's rate from the factor at the start and after
    every epoch's hook (the hook halves it); without it, the method's linear decay, unchanged."""
    from beluga.core.tasks import SENT
    from beluga.model.modeling import TINY_RANDOM, load_model, set_seed
    from beluga.model.precision import resolve
    from beluga.train.loop import train
    from beluga.train.streams import build_streams

    seen = []
    orig_step = torch.optim.AdamW.step

    def spy(self, *a, **k):
        seen.append(self.param_groups[0]["lr"])
        return orig_step(self, *a, **k)

    suite = make_tiny_suite(2)
    sched = ino_train.HalveOnPlateau(patience=5)
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
    cases, _ = ino_outcomes.unit_case_arrays(out, ["f"])
    rows = ino_outcomes.original_rows(out)
    return cases, rows


def summary_rows(base, last, level=0.05):
    """(first, last) rows as the inoculation step builds them, from two models' outcomes."""
    from beluga.report.stats import iid_features

    rows = []
    for out in (base, last):
        cases, iid = scores(out)
        hits = ino_outcomes.original_hits(iid, "sent")
        feats = iid_features(iid, "sent")
        lo, hi = paired.suite_gap_interval([(cases["passed"].to_numpy(), cases["scored"].to_numpy(), feats, hits)],
                                           np.zeros(len(cases), int), 1, "sent", "mean", R=1000, level=1 - level)
        rows.append({"challenge": 100 * cases["passed"].mean(), "original": 100 * hits.mean(),
                     "original_same": 100 * hits.mean(), "cases": cases, "feats": feats, "hits": hits,
                     "gap_lo": lo, "gap_hi": hi,
                     "p_gap": paired.gap_test([(int(cases["passed"].sum()), len(cases), int(hits.sum()), len(hits))])})
    first, lastr = rows
    lastr.update(ino_outcomes.dose_tests([(first["cases"], lastr["cases"], first["feats"], lastr["feats"],
                                           first["hits"], lastr["hits"])], "sent", "mean"))
    gap0 = first["original_same"] - first["challenge"]
    lastr["gap_closed"] = (lastr["challenge"] - first["challenge"]) / gap0 if gap0 > 0 else np.nan
    keep = ("challenge", "original", "original_same", "p_gap", "p_gain", "p_original", "gap_closed", "gap_lo", "gap_hi")
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
    (flip(BASE_PASS, 32, True), BASE_ORIG, "1"),                  # every case passes: gap -10 pp, CI below 2 pp
    (flip(BASE_PASS, 2, True), BASE_ORIG, "2"),                   # +5 pp (2 cases): not significant
    (flip(BASE_PASS, 28, True), flip(BASE_ORIG, 20, False), "3"), # original 90 -> 80 %: -10 pp, significant
    (flip(BASE_PASS, 14, True), BASE_ORIG, "between"),            # +35 pp, significant; 55 % still below 90 %
    (flip(BASE_PASS, 28, True), BASE_ORIG, "between"),            # 90 % vs 90 %, but 40 cases: the gap's CI
])                                                                # reaches ~10 pp, beyond the 2-pp margin
def test_outcome_decided_by_tests(passed, original, outcome):
    first, last = summary_rows(unit_outcomes(BASE_PASS, BASE_ORIG), unit_outcomes(passed, original))
    label, reason = ino_outcomes.decide(first, last, level=0.05)
    assert label == outcome, reason
    assert ("at level 0.05" in reason or "95% CI" in reason) and "p " in reason


def test_no_gap_and_the_tests_behind_the_labels():
    # the IID model passes every case vs 90 % of the original examples: the gap's CI lies below the margin
    first, last = summary_rows(unit_outcomes([True] * 40, BASE_ORIG), unit_outcomes([True] * 40, BASE_ORIG))
    assert first.gap_hi < 0 and ino_outcomes.decide(first, last)[0] == "no gap"
    # 34 of 40 (85 %) vs 90 %: not significantly below, but the CI reaches past the margin: a gap is not ruled
    # out, so not "no gap"; 2 more cases passed is no significant gain
    base = unit_outcomes([True] * 34 + [False] * 6, BASE_ORIG)
    first, last = summary_rows(base, unit_outcomes([True] * 36 + [False] * 4, BASE_ORIG))
    assert first.p_gap >= 0.05 and first.gap_hi > 2
    assert ino_outcomes.decide(first, last)[0] == "2"
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
    assert ino_outcomes.decide(first, last, level=0.05)[0] == "between"
    assert ino_outcomes.decide(first, last, level=0.01)[0] == "2"


def dose_row(challenge, original, gap_lo=None, gap_hi=None, p_gain=np.nan, p_original=np.nan, p_gap=0.001,
             original_same=None):
    """A constructed row of the dose table (scores in %): the gap left is original_same − challenge."""
    same = original if original_same is None else original_same
    gap = same - challenge
    return pd.Series({"challenge": challenge, "original": original, "original_same": same, "p_gain": p_gain,
                      "p_original": p_original, "p_gap": p_gap, "gap_closed": np.nan,
                      "gap_lo": gap if gap_lo is None else gap_lo, "gap_hi": gap if gap_hi is None else gap_hi})


DOSE0 = dose_row(50.0, 90.0, gap_lo=35.0, gap_hi=45.0)         # a 40-pp gap at dose 0, CI [35, 45]


@pytest.mark.parametrize("last, outcome", [
    # the gap's CI inside the 2-pp margin: closed, whatever the p-value of the gap
    (dose_row(89.5, 90.0, gap_lo=-1.0, gap_hi=1.5, p_gain=1e-9, p_original=1.0, p_gap=0.01), "1"),
    # straddling the margin: a significant gain is "between", no significant gain is "2"
    (dose_row(88.5, 90.0, gap_lo=0.5, gap_hi=3.0, p_gain=1e-9, p_original=1.0, p_gap=0.3), "between"),
    (dose_row(52.0, 90.0, gap_lo=0.5, gap_hi=3.0, p_gain=0.4, p_original=1.0), "2"),
    # outside it: "between" (the old rule's "1" when the gap was not significant on a small set)
    (dose_row(84.0, 90.0, gap_lo=4.0, gap_hi=8.0, p_gain=1e-9, p_original=1.0, p_gap=0.2), "between"),
    # a significant original drop of 1.5 pp (within the 2-pp margin) is not outcome 3: the gap closes
    (dose_row(88.0, 88.5, gap_lo=-1.0, gap_hi=1.9, p_gain=1e-9, p_original=1e-4), "1"),
    # a drop of 5 pp: outcome 3 when significant, not when not
    (dose_row(85.0, 85.0, gap_lo=-1.0, gap_hi=1.0, p_gain=1e-9, p_original=1e-4), "3"),
    (dose_row(85.0, 85.0, gap_lo=-1.0, gap_hi=1.0, p_gain=1e-9, p_original=0.2), "1"),
    # a drop of exactly the margin is not more than it
    (dose_row(88.0, 88.0, gap_lo=-1.0, gap_hi=1.0, p_gain=1e-9, p_original=1e-6), "1"),
])
def test_outcome_margins_on_constructed_dose_tables(last, outcome):
    label, reason = ino_outcomes.decide(DOSE0, last, level=0.05)
    assert label == outcome, reason
    assert ("margin" in reason) == (outcome != "2") and ("gap left" in reason) == (outcome != "3")


def test_outcome_margins_are_configurable_and_said():
    straddle = dose_row(88.5, 90.0, gap_lo=0.5, gap_hi=3.0, p_gain=1e-9, p_original=1.0)
    assert ino_outcomes.decide(DOSE0, straddle, gap_margin=3.0)[0] == "1"
    assert ino_outcomes.decide(DOSE0, straddle, gap_margin=2.9)[0] == "between"
    drop = dose_row(85.0, 85.0, gap_lo=-1.0, gap_hi=1.0, p_gain=1e-9, p_original=1e-4)   # -5 pp
    assert ino_outcomes.decide(DOSE0, drop, drop_margin=5.0)[0] == "1"
    label, reason = ino_outcomes.decide(DOSE0, drop, drop_margin=4.5)
    assert label == "3" and "original dropped by 5.0 pp, more than the 4.5-pp margin" in reason
    small = dose_row(88.0, 88.5, gap_lo=-1.0, gap_hi=1.9, p_gain=1e-9, p_original=1e-4)
    assert "a significant drop within the 2-pp margin" in ino_outcomes.decide(DOSE0, small)[1]
    label, reason = ino_outcomes.decide(DOSE0, straddle)
    assert "95% CI [0.5, 3.0] pp" in reason and "gap left 1.5 pp of 40.0" in reason
    # no gap: dose 0's CI already inside the margin (the margin, not the test, decides)
    closed0 = dose_row(89.0, 90.0, gap_lo=-0.5, gap_hi=2.0, p_gap=0.04)
    assert ino_outcomes.decide(closed0, straddle)[0] == "no gap"
    open0 = dose_row(89.0, 90.0, gap_lo=-0.5, gap_hi=2.5, p_gap=0.04)      # reaches past it: a gap to close
    assert ino_outcomes.decide(open0, straddle)[0] == "2"                    # 89 -> 88.5: no gain


def test_a_drop_on_a_single_label_unit_is_flagged_uninformative():
    first, last = summary_rows(unit_outcomes(BASE_PASS, BASE_ORIG),
                               unit_outcomes([True] * 40, flip(BASE_ORIG, 30, False)))
    label, reason = ino_outcomes.decide(first, last, informative_3=False)
    assert label == "3" and "uninformative" in reason and "§3.3" in reason
    assert "uninformative" not in ino_outcomes.decide(first, last, informative_3=True)[1]


def test_paired_tests_match_on_binary_outcomes_and_intervals_cover():
    rng = np.random.default_rng(0)
    a = rng.random(300) < 0.8
    b = a.copy()
    b[:30] = True
    b[30:36] = False
    r = paired.paired_randomization([(a[:, None].astype(float), b[:, None].astype(float))], "sent", "accuracy",
                                    R=20_000, seeds=[1])
    m = paired.mcnemar([(a, b)])
    assert r["delta"] == pytest.approx(b.mean() - a.mean())
    assert r["p_value"] == pytest.approx(m["p_value"], abs=0.01)     # the randomization approaches McNemar
    assert paired.binary_iid_metric("sent", "mean") and paired.binary_iid_metric("read", "em")
    assert not paired.binary_iid_metric("para", "mean") and not paired.binary_iid_metric("read", "f1")
    ci = paired.score_intervals([(np.array([True] * 30 + [False] * 10), np.ones(40, bool), b[:, None].astype(float))],
                                np.zeros(40, int), 1, "sent", "accuracy", R=500)
    assert ci["challenge"][0] < 75 < ci["challenge"][1] and ci["original"][0] < 100 * b.mean() < ci["original"][1]
    assert paired.gap_test([(30, 40, 0, 0)]) == 1.0


def test_gap_intervals_resample_each_side_on_its_own():
    """The gap left's interval (original − challenge, pp): each side resampled on its own, the challenge side
    with the draws of its own interval; hand-checked on sides without spread and against the normal
    approximation of a resampled proportion."""
    from beluga.report.stats import iid_features

    def sides(passed, original_correct):
        cases, iid = scores(unit_outcomes(passed, original_correct))
        return (cases["passed"].to_numpy(), cases["scored"].to_numpy(), iid_features(iid, "sent"),
                ino_outcomes.original_hits(iid, "sent"))

    fi = np.zeros(40, int)
    everything = sides([True] * 40, [True] * 200)
    assert paired.suite_gap_interval([everything], fi, 1, "sent", "mean", R=300) == (0.0, 0.0)
    # every example right: the gap is 100 − the challenge score, so its interval is the challenge interval turned
    # over, draw for draw (the same draws as score_intervals)
    item = sides([True] * 30 + [False] * 10, [True] * 200)
    lo, hi = paired.suite_gap_interval([item], fi, 1, "sent", "mean", R=500)
    c_lo, c_hi = paired.score_intervals([item[:3]], fi, 1, "sent", "mean", R=500)["challenge"]
    assert (lo, hi) == (pytest.approx(100 - c_hi), pytest.approx(100 - c_lo)) and lo < 25 < hi
    # every case passes, 180 of 200 examples right: gap -10 pp, CI ≈ -10 ± 1.96 √(0.9 · 0.1 / 200) = ± 4.16 pp
    item = sides([True] * 40, [True] * 180 + [False] * 20)
    lo, hi = paired.suite_gap_interval([item], fi, 1, "sent", "mean", R=4000)
    assert lo == pytest.approx(-14.16, abs=0.6) and hi == pytest.approx(-5.84, abs=0.6)
    lo90, hi90 = paired.suite_gap_interval([item], fi, 1, "sent", "mean", R=4000, level=0.90)
    assert lo < lo90 < hi90 < hi
    # a challenge set: the i.i.d. metric on both sides; two seeds alike average two resamples: ± 4.16 / √2
    chal, orig = item[2][:40].copy(), item[2]
    chal[:] = everything[2][:40]
    lo, hi = paired.set_gap_interval([chal], [orig], "sent", "mean", R=4000)
    assert lo == pytest.approx(-14.16, abs=0.6) and hi == pytest.approx(-5.84, abs=0.6)
    lo, hi = paired.set_gap_interval([chal, chal], [orig, orig], "sent", "mean", R=4000, seeds=[0, [0, 8]])
    assert lo == pytest.approx(-10 - 4.16 / np.sqrt(2), abs=0.6) and hi == pytest.approx(-10 + 4.16 / np.sqrt(2),
                                                                                         abs=0.6)


def test_label_skew_of_a_unit():
    suite = make_tiny_suite(3)
    by = {f: suite[suite["functionality"] == f] for f in suite["functionality"].unique()}
    one = ino_outcomes.label_skew(by["neg words"])                           # MFT, every case label 0
    assert one["label_skew"] == "single label" and not one["informative_3"] and one["labels"] == "0: 100%"
    none = ino_outcomes.label_skew(pd.concat([by["typos"], by["add positive"]]))   # INV / DIR: no labels
    assert none["label_skew"] == "no label" and not none["informative_3"]
    mixed = suite.iloc[:2].copy()
    mixed["labels"] = [[0], [1]]
    assert ino_outcomes.label_skew(mixed) == {"label_skew": "mixed", "labels": "0: 50%, 1: 50%", "informative_3": True}
    class_unit = ino_outcomes.label_skew(pd.concat([by["neg words"], by["add positive"]]))   # one label + unlabelled
    assert class_unit["label_skew"] == "single label" and "without a label" in class_unit["labels"]
    assert ino_outcomes.label_skew(by["typos"], head="qa")["informative_3"]
    named = ino_outcomes.label_skew(mixed, names={0: "negative", 1: "neutral", 2: "positive"})   # the task's label set
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
    label, reason = ino_outcomes.classify(*curve)
    assert label == outcome, reason
    c0, o0, c, o = curve
    assert f"{int(round(c - c0)):+d} pp" in reason and "original" in reason


def test_outcome_reason_in_words():
    assert ino_outcomes.classify(40, 90, 78, 89, close_within=15)[1] == \
        "challenge +38 pp to within 15 pp of original (78 vs 89); original -1 pp (90 → 89)"


# ---------------------------------------------------------------- external challenge sets


def test_challenge_set_units_split_and_doses():
    ood = {"nyt": {"name": "nyt", "source": "hutto", "set": "nyt", "max_examples": 500},
           "amazon_polarity": {"name": "amazon_polarity", "source": "hub"}}
    units = ino_plan.challenge_units(["nyt", "amazon_polarity", "imdb"], ood)      # imdb: not an OOD set of this task
    rest = {"challenge_train": None, "train_size": None, "distinct": None}
    assert units == {"set-nyt": {"level": "challenge set", "label": "nyt", "functionalities": [], "challenge": "nyt",
                                 **rest},
                     "set-amazon-polarity": {"level": "challenge set", "label": "amazon_polarity",
                                             "functionalities": [], "challenge": "amazon_polarity", **rest}}
    assert ino_plan.challenge_train_size(ood["nyt"], 0.5) == 250 and \
        ino_plan.challenge_train_size(ood["amazon_polarity"], 0.5) is None
    assert ino_plan.doses_for(250, [4, 16, "all"]) == ["4", "16", "all"]
    assert ino_plan.doses_for(None, [4, 16]) == ["4", "16", "all"]       # size unknown before the set is prepared
    ids = [f"nyt-{i}" for i in range(41)]
    train, test = ino_plan.challenge_split(ids, 0.5, 11, "nyt")
    assert len(test) == 20 and len(train) == 21 and not set(train) & set(test) and set(train) | set(test) == set(ids)
    assert ino_plan.challenge_split(list(reversed(ids)), 0.5, 11, "nyt") == (train, test)   # by id, not row order
    assert ino_plan.challenge_split(ids, 0.5, 12, "nyt") != (train, test)
    # select_on: dev holds round(21 × 0.2) = 4 of the training part out; the test part is the same
    rest, dev = ino_plan.challenge_dev_split(train, 0.2, 11, "nyt")
    assert len(dev) == 4 and len(rest) == 17 and sorted(rest + dev) == sorted(train) and not set(dev) & set(test)
    assert ino_plan.challenge_dev_split(list(reversed(train)), 0.2, 11, "nyt") == (rest, dev)
    assert ino_plan.challenge_dev_split(train, 0.2, 12, "nyt") != (rest, dev)
    assert ino_plan.challenge_dev_split(train, 0.0, 11, "nyt") == (sorted(train), [])   # select_on: test
    assert ino_plan.dev_size(3, 0.1) == 1                  # round(0.3) = 0, but a dev score needs an example
    with pytest.raises(DataError, match="challenge set nyt: field 'inoculation.challenge_dev_fraction': its "
                                        "training part has 1 example"):
        ino_plan.challenge_dev_split(["a"], 0.2, 11, "nyt")
    # the doses' sizes before the set is prepared: 500 -> 250 to train -> round(250 × 0.2) = 50 dev, 200 left
    assert ino_plan.challenge_train_size(ood["nyt"], 0.5, 0.2) == 200
    assert ino_plan.challenge_train_size({"max_examples": 40}, 0.5, 0.2) == 16     # 20 - round(4.0)
    skew = ino_outcomes.set_label_skew(pd.DataFrame({"label": [1, 1, 0, 1]}))
    assert skew == {"label_skew": "mixed", "labels": "0: 25%, 1: 75%", "informative_3": True}
    assert not ino_outcomes.set_label_skew(pd.DataFrame({"label": [1, 1]}))["informative_3"]


def test_challenge_items_as_objects_are_checked_in_one_line():
    assert ino_plan.challenge_spec("nyt") == {"set": "nyt", "train": None, "train_size": None, "distinct": None}
    assert ino_plan.challenge_spec({"set": "addsent", "train": "addsent_train", "distinct": "context"}) == \
        {"set": "addsent", "train": "addsent_train", "train_size": None, "distinct": "context"}
    bad = [({"set": "a", "train": "a"}, r"field 'train': 'a' is the challenge set itself"),
           ({"set": "a", "trian": "b"}, r"unknown key 'trian'"),
           ({"set": "a", "train_size": 0}, r"field 'train_size': a positive integer, got 0"),
           ({"train": "a"}, r"an OOD set's name, or an object with 'set'")]
    for item, msg in bad:
        with pytest.raises(ConfigError, match=r"inoculation\.challenge\[2\]'?.*" + msg):
            ino_plan.challenge_spec(item, 2)
    with pytest.raises(ConfigError, match=r"challenge\[1\]': 'nyt' is listed twice"):
        ino_plan.challenge_specs(["nyt", {"set": "nyt", "train_size": 3}])
    ood = {"a": {"name": "a", "max_examples": 100}, "b": {"name": "b", "max_examples": 30}}
    units = ino_plan.challenge_units([{"set": "a", "train": "b"}], ood)
    assert units["set-a"]["challenge_train"] == "b"
    with pytest.raises(ConfigError, match=r"challenge\[0\]\.train': 'c' is not an OOD set"):
        ino_plan.challenge_units([{"set": "a", "train": "c"}], ood)
    # the training part's size before the sets are prepared: the train set's cap, train_size, or unknown (groups)
    assert ino_plan.challenge_train_size(ood["a"], 0.5, train_entry=ood["b"]) == 30
    assert ino_plan.challenge_train_size(ood["a"], 0.5, 0.2, train_size=40) == 32          # 40 - round(8.0)
    assert ino_plan.challenge_train_size(ood["a"], 0.5, train_size=400) == 100             # at most the cap
    assert ino_plan.challenge_train_size(ood["a"], 0.5, distinct="context") is None
    assert ino_plan.challenge_train_size(ood["a"], 0.5, train_entry={"name": "t"}, train_size=1000,
                                         distinct="context") == 1000                   # the seed's 1,000 a set
    assert ino_plan.challenge_train_size(ood["a"], 0.5, train_entry=ood["b"], train_size=1000) == 30
    assert ino_plan.challenge_test_size(100, 0.5, has_train_set=True) == 100
    assert ino_plan.challenge_test_size(100, 0.5, train_size=30) == 70
    assert ino_plan.challenge_test_size(100, 0.25) == 25


def test_challenge_split_by_count_and_by_group_and_doses_of_distinct_passages():
    ids = [f"q{i:03d}" for i in range(50)]
    # without groups the split is what it was: a permutation of the sorted ids seeded by (seed, name)
    order = np.random.default_rng(ino_plan.stable_int(11, "challenge:s")).permutation(50)
    assert ino_plan.challenge_split(ids, 0.4, 11, "s") == (sorted(ids[i] for i in order[20:]),
                                                           sorted(ids[i] for i in order[:20]))
    # train_size: that many to training (the numerical-reasoning set: 1,000 sampled, the rest evaluated)
    train, test = ino_plan.challenge_split(ids, 0.4, 11, "s", train_size=12)
    assert len(train) == 12 and len(test) == 38 and sorted(train + test) == ids
    assert train == sorted(ids[i] for i in order[:12])
    with pytest.raises(DataError, match="challenge set s: field 'inoculation.challenge': its 50 example"):
        ino_plan.challenge_split(ids, 0.4, 11, "s", train_size=50)
    # groups (5 questions a passage): a passage goes whole to one part, the count is of passages / examples
    passage = {i: f"p{int(i[1:]) // 5}" for i in ids}
    train, test = ino_plan.challenge_split(ids, 0.4, 11, "s", groups=passage)
    assert len(test) == 20 and not {passage[i] for i in train} & {passage[i] for i in test}
    train, test = ino_plan.challenge_split(ids, 0.4, 11, "s", train_size=12, groups=passage)
    assert len(train) == 15 and not {passage[i] for i in train} & {passage[i] for i in test}   # 3 whole passages
    rest, dev = ino_plan.challenge_dev_split(train, 0.34, 11, "s", passage)
    assert len(dev) == 5 and not {passage[i] for i in rest} & {passage[i] for i in dev}
    # a dose draws at most one question per passage; doses nested; a number above the passages: one of each;
    # 'all' = every question (Liu et al.'s all: the whole training split)
    pool = [i for i in ids if passage[i] not in {"p0", "p1"}]
    doses = {d: ino_plan.dose_sample(pool, d, 7, "set-s", passage) for d in ("2", "5", "20", "all")}
    assert [len(v) for v in doses.values()] == [2, 5, 8, 40]
    assert all(len({passage[i] for i in v}) == len(v) for v in list(doses.values())[:3])
    assert doses["20"][:5] == doses["5"] and doses["5"][:2] == doses["2"] and doses["all"][:8] == doses["20"]
    assert sorted(doses["all"]) == sorted(pool)
    assert ino_plan.dose_sample(pool, "5", 7, "set-s") == ino_plan.dose_sample(list(reversed(pool)), "5", 7, "set-s")


def test_challenge_parts_of_a_set_split_by_count_or_trained_from_another_set():
    from beluga.analyses.inoculation.train import challenge_parts

    data = pd.DataFrame({"example_id": [f"t{i}" for i in range(30)], "text": [f"s{i}" for i in range(30)],
                         "label": [i % 2 for i in range(30)], "context": [f"p{i // 3}" for i in range(30)]})
    train, test, dev = challenge_parts(data, "num", "all", 5, "set-num", train_size=10, dev_fraction=0.2)
    assert len(train) == 8 and len(dev) == 2 and len(test) == 20
    parts = [set(x["example_id"]) for x in (train, test, dev)]
    assert not parts[0] & parts[1] and not parts[2] & parts[0] and not parts[2] & parts[1]
    other = data.assign(example_id=[f"o{i}" for i in range(30)])
    train, test, dev = challenge_parts(data, "addsent", "4", 5, "set-addsent", train_data=other, distinct="context")
    assert dev is None and test.equals(data) and len(train) == 4
    assert set(train["example_id"]) <= set(other["example_id"])
    assert train["context"].is_unique
    train_all, _, _ = challenge_parts(data, "addsent", "all", 5, "set-addsent", train_data=other, distinct="context")
    assert len(train_all) == 30 and set(train["example_id"]) <= set(train_all["example_id"])   # all: every one
    # train_size with a training set: a seeded pool of that many (one a passage), the doses nested in it
    pool, _, _ = challenge_parts(data, "addsent", "all", 5, "set-addsent", train_data=other, train_size=6,
                                 distinct="context")
    four, _, _ = challenge_parts(data, "addsent", "4", 5, "set-addsent", train_data=other, train_size=6,
                                 distinct="context")
    assert len(pool) == 6 and pool["context"].is_unique and set(four["example_id"]) < set(pool["example_id"])
    with pytest.raises(DataError, match=r"challenge set addsent \(its training set\): field "
                                        r"'inoculation.challenge\[\]\.distinct': no column 'passage'"):
        challenge_parts(data, "addsent", "4", 5, "u", train_data=other, distinct="passage")


def test_challenge_set_tests_in_the_tasks_metric():
    # accuracy: exact McNemar for the change, Fisher exact for the gap (a 0/1 metric)
    base = np.array([True] * 10 + [False] * 30)
    now = np.array([True] * 30 + [False] * 10)
    p, name = paired.paired_metric_test([base[:, None].astype(float)], [now[:, None].astype(float)], [base], [now],
                                        "sent", "accuracy")
    assert name == "exact McNemar" and p == pytest.approx(2 * 0.5 ** 20)
    orig = np.array([True] * 36 + [False] * 4)
    assert paired.set_gap_test([base[:, None]], [base], [orig[:, None]], [orig], "sent", "accuracy") < 0.001
    assert paired.set_gap_test([orig[:, None]], [orig], [orig[:, None]], [orig], "sent", "accuracy") > 0.5
    # SQuAD F1 (not a 0/1 mean): paired randomization and a one-sided permutation test
    rng = np.random.default_rng(0)
    f_base = np.column_stack([rng.random(60) < 0.3, rng.random(60)]).astype(float)
    f_now = f_base.copy()
    f_now[:, 1] = np.minimum(1, f_now[:, 1] + 0.4)
    p, name = paired.paired_metric_test([f_base], [f_now], [f_base[:, 0] > 0], [f_now[:, 0] > 0], "read", "f1",
                                        R=2000)
    assert name.startswith("paired randomization") and p < 0.01
    assert paired.unpaired_permutation([f_base], [f_now], "read", "f1", R=2000) < 0.01     # challenge below original
    assert paired.unpaired_permutation([f_now], [f_base], "read", "f1", R=2000) > 0.9
    lo, hi = paired.metric_interval([f_base], "read", "f1", R=500)
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

    def runs(ood_extra=False, **inoc):
        cfg = yaml.safe_load((CONFIGS / "tiny.yaml").read_text())
        cfg["tasks"]["sent"]["ood"] = [{"name": "nyt", "source": "hutto", "set": "nyt", "max_examples": 40}] + (
            [{"name": "tweets", "source": "hutto", "set": "tweets", "max_examples": 30}] if ood_extra else [])
        cfg["inoculation"] = copy.deepcopy(inoc)
        validate(cfg, str(REPO / "schemas" / "config.schema.yaml"))
        resolve_data_paths(cfg)
        return Runs(cfg, Paths(cfg["results"]), str(cfg["data_dir"]))

    # select_on: test (the seed's): no dev part, the doses are drawn from the whole training part
    r = runs(units=["class"], doses=[4, 16, 100], lrs="paper_squad", challenge=["nyt"], select_on="test")
    assert r.inoc_units["sent"]["set-nyt"]["challenge"] == "nyt"
    assert r.inoc_doses("sent", "set-nyt") == ["4", "16", "all"]            # 40 examples: 20 to train
    assert r.inoc_challenge("sent", "set-nyt") == ["results/sent/ood/data/nyt.parquet"]
    assert r.inoc_challenge("sent", "class-negation") == []
    assert r.inoc_lrs == {"sent": [1e-5, 1e-4, 1e-3, 1e-2]}
    results = r.inoc_results("sent", "parquet")
    assert "results/sent/inoculation/runs/set-nyt/16/lr0.001.parquet" in results
    assert [p.replace(".parquet", ".json") for p in results] == r.inoc_results("sent")
    job = r.settings("inoculate", {"task": "sent", "unit": "set-nyt", "dose": "4", "lr": "lr1e-05"})
    assert job["hparams"]["lr"] == 1e-5 and job["hparams"]["epochs"] == 30      # the schema's max_epochs
    with pytest.raises(ConfigError, match=r"inoculation\.challenge': 'imdb'"):
        runs(units=["class"], challenge=["imdb"])
    # the default, select_on: dev, holds round(20 × 0.2) = 4 of the training part out: 16 left, dose 16 is 'all'
    r = runs(units=["class"], doses=[4, 16, 100], challenge=["nyt"])
    assert (r.inoc_select_on, r.inoc_dev_fraction) == ("dev", 0.2)
    assert r.inoc_doses("sent", "set-nyt") == ["4", "all"]
    assert runs(units=["class"], challenge=["nyt"], select_on="val").inoc_select_on == "dev"
    # an object item: its training part is another OOD set (an input of its jobs), the set tested whole
    r = runs(units=["class"], doses=[4, 100], challenge=[{"set": "nyt", "train": "tweets"}], select_on="test",
             ood_extra=True)
    assert r.inoc_challenge("sent", "set-nyt", "challenge_train") == ["results/sent/ood/data/tweets.parquet"]
    assert r.inoc_doses("sent", "set-nyt") == ["4", "all"]                  # the tweets set's 30 examples
    with pytest.raises(ConfigError, match=r"challenge\[0\]\.train': 'amazon' is not an OOD set"):
        runs(units=["class"], challenge=[{"set": "nyt", "train": "amazon"}])


# ---------------------------------------------------------------- several training seeds (issue 26)
FIX_LRS = [1e-3, 1e-4]
FIX_DOSES = {"class-vocabulary": ["2", "all"], "class-negation": ["2", "all"], "suite": ["2", "all"],
             "set-nyt": ["4", "all"]}
#: the fixture's settings: one learning rate per dose for both scores (original_from: challenge_best, the reading
#: the pinned outputs below were made with); the seed's two-rate reading: test_original_score_from_the_original_dev_set
FIX_SETTINGS = dict(task_type="sent", iid_metric="mean", select_on="test", lrs=FIX_LRS, decide_by="tests",
                    thresholds={"close_within": 5.0, "original_drop": 2.0, "min_gain": 5.0}, level=0.05,
                    bootstrap=200, randomization=200, original_from="challenge_best")
OUTPUTS = ("table.csv", "outcomes.csv", "inoculation.md", "curves.png", "transfer.png")
#: sha256 of the summary's outputs on the fixture below (seed 7): table.csv by the step before training seeds
#: (commit a54fbd4, beluga/steps/inoculation.py with one iid_outcomes path), without the columns added since
#: (:data:`ADDED_COLUMNS`); outcomes.csv (without its added columns) and inoculation.md by the step that decides
#: with the margins (original_from: challenge_best, gap_margin / drop_margin 2), whose outcomes and words changed
ONE_SEED_SHA256 = {
    "table.csv": "0f5c59c7abdc5f78499628a873249bc1ea73bb49f6f6a50a788ebc37d075598e",
    "outcomes.csv": "2f9a0e6c7549f1265b5d548e785a0d568c8bb3a97b007f1f33a494e4be5ec9e2",
    "inoculation.md": "5201d1132e85ad566f4a94d9a129562a57b856b117398e278a86e904ff14a3f9",
}


def fixture_units(suite):
    from beluga.suites.format import functionality_table

    units = ino_plan.units(functionality_table(suite), ["class", "suite"])
    units = {u: units[u] for u in ("class-vocabulary", "class-negation", "suite")}
    units.update(ino_plan.challenge_units(["nyt"], {"nyt": {"name": "nyt"}}))
    return units


def seed_inputs(folder, suite, units, seed, shift=0.0):
    """One training seed's inputs of the summary, drawn from a generator seeded by the seed: the IID
    model's outcomes (dose 0) and per unit, dose and learning rate a record and its outcomes file
    (T_test: the cases numbered below 6; 120 i.i.d. test examples; 30 examples of the challenge set nyt).
    Returns (record files, outcome files, the IID model's outcome file)."""
    import json

    rng = np.random.default_rng(1000 + seed)
    test = suite[suite["case_id"].str.split("-").str[1].astype(int) < 6]
    iid_ids, set_ids = [f"x{i:04d}" for i in range(120)], [f"n{i:03d}" for i in range(30)]
    funcs = list(dict.fromkeys(suite["functionality"]))

    def examples(ids, split, p):
        gold = np.arange(len(ids)) % 2
        correct = rng.random(len(ids)) < p
        return pd.DataFrame({"case_id": ids, "functionality": None, "status": None, "split": split, "held_out": False,
                             "correct": pd.array(correct, "boolean"), "gold_label": gold,
                             "pred_label": np.where(correct, gold, 1 - gold)})

    def outcomes(p_suite, p_iid, p_set, unit_funcs=None, with_set=True):
        rows = test if unit_funcs is None else test[test["functionality"].isin(set(unit_funcs))]
        u = rng.random(len(rows))
        p = rows["functionality"].map(p_suite).to_numpy(dtype=float)
        status = np.where(u < 0.05, "filtered", np.where(u < 0.05 + 0.95 * p, "pass", "fail"))
        parts = [pd.DataFrame({"case_id": rows["case_id"].to_numpy(), "functionality": rows["functionality"],
                               "status": status, "split": "suite_test", "held_out": True}),
                 examples(iid_ids, "iid_test", p_iid)]
        if with_set:
            parts.append(examples(set_ids, "ood:nyt", p_set))
        return pd.concat(parts, ignore_index=True)

    folder.mkdir(parents=True, exist_ok=True)
    base_path = folder / "iid_outcomes.parquet"
    outcomes({f: 0.3 + shift for f in funcs}, 0.85, 0.55).to_parquet(base_path)
    recs, paths = [], []
    for uid, spec in units.items():
        is_set = spec.get("challenge") is not None
        for k, dose in enumerate(FIX_DOSES[uid]):
            for j, lr in enumerate(FIX_LRS):
                gain = 0.25 * (k + 1) + 0.1 * j + shift
                p_suite = {f: min(0.95, 0.3 + gain) if f in spec["functionalities"] else 0.3 for f in funcs}
                out = outcomes(p_suite, 0.85 - 0.05 * k, min(0.95, 0.55 + gain) if is_set else 0.55,
                               unit_funcs=None if is_set else spec["functionalities"], with_set=is_set)
                path = folder / f"{uid}-{dose}-{j}.parquet"
                out.to_parquet(path)
                s = out[out["split"] == "suite_test"]
                rates = {f: float((g["status"] == "pass").sum() / max(1, (g["status"] != "filtered").sum()))
                         for f, g in s.groupby("functionality")}
                chal = (float(out.loc[out["split"] == "ood:nyt", "correct"].astype(float).mean()) if is_set else
                        float(np.mean([rates[f] for f in spec["functionalities"] if f in rates])))
                rec = {"unit": uid, "dose": dose, "n_cases": 4 if dose != "all" else (12 if is_set else 8), "lr": lr,
                       "challenge": chal, "challenge_val": None if is_set else float(rng.random()),
                       "original": float(out.loc[out["split"] == "iid_test", "correct"].astype(float).mean()),
                       "epochs_trained": 3 + j + k, "best_epoch": 1 + k, "pass_rates": rates, "seed": seed,
                       "degenerate": False, "degenerate_on": ""}
                rec_path = folder / f"{uid}-{dose}-{j}.json"
                rec_path.write_text(json.dumps(rec))
                recs.append(str(rec_path))
                paths.append(str(path))
    return recs, paths, str(base_path)


@pytest.fixture(scope="module")
def seeds_fixture(tmp_path_factory):
    from beluga.suites.format import save_suite

    tmp = tmp_path_factory.mktemp("inoculation_seeds")
    suite = make_tiny_suite(12)
    save_suite(suite, tmp / "suite.parquet")
    units = fixture_units(suite)
    inputs = {s: seed_inputs(tmp / f"seed{s}", suite, units, s, shift=0.05 * i) for i, s in enumerate((7, 8))}
    return {"suite": str(tmp / "suite.parquet"), "cases": suite, "units": units, "inputs": inputs}


def run_summary(fx, seeds, out, iid_outcomes=None, **kw):
    """The step over the fixture's ``seeds`` (None: the one-seed call of the step before training seeds)."""
    from beluga.steps import inoculation as step

    use = seeds or [7]
    out.mkdir(parents=True, exist_ok=True)
    step.inoculation(
        task="sent", units=fx["units"], suite=fx["suite"], seeds=seeds,
        results=[p for s in use for p in fx["inputs"][s][0]],
        case_outcomes=[p for s in use for p in fx["inputs"][s][1]],
        iid_outcomes=iid_outcomes or [fx["inputs"][s][2] for s in use],
        **{f"out_{k}": str(out / n) for k, n in zip(("table", "outcomes", "markdown", "curves", "transfer"), OUTPUTS)},
        **{**FIX_SETTINGS, **kw})
    return out


def one_seed_tables(fx, seed):
    """The one-seed summary (beluga/analyses/inoculation/summary.py summary_tables) of one seed of the fixture."""
    import json
    from pathlib import Path

    recs_paths, outs, base = fx["inputs"][seed]
    return ino_summary.summary_tables([(seed, [json.loads(Path(p).read_text()) for p in recs_paths], outs,
                                        pd.read_parquet(base))], units=fx["units"], cases_all=fx["cases"],
                                      **FIX_SETTINGS)


#: the columns over training seeds that table.csv / outcomes.csv have whatever the number of seeds
SPREAD_COLUMNS = {"table.csv": ["n_seeds", "lrs", *(f"{v}_{x}" for v in ino_summary.SEED_VALUES
                                                   for x in ("sd", "min", "max"))],
                  "outcomes.csv": ["challenge_last_sd", "original_last_sd", "n_seeds", "seeds"]}


#: the columns added since the pinned outputs: the original score's learning rate and what it was chosen on, its
#: original dev score, the gap left with its interval (table.csv); the rates, gaps and margins (outcomes.csv)
ADDED_COLUMNS = {"table.csv": ["lr_original", "lrs_original", "original_selected_on", "original_dev", "gap", "gap_lo",
                               "gap_hi"],
                 "outcomes.csv": ["lr_last", "lr_original_last", "gap_0_lo", "gap_0_hi", "gap_last", "gap_last_lo",
                                  "gap_last_hi", "gap_margin", "drop_margin", "original_selected_on"]}


def without_selection_warning(path) -> bytes:
    """An output of select_on: test as it was before issue 34 (the step of ONE_SEED_SHA256): without the
    lr_selected_on column (table.csv, outcomes.csv) or the optimistic p-values paragraph (inoculation.md), and
    without the columns over training seeds (one seed: n_seeds 1, every sd empty), :data:`ADDED_COLUMNS` and table.csv's
    ``sample`` (where a dose's examples come from: empty where the records do not say, as the fixture's)."""
    import io

    from beluga.analyses.inoculation.report import OPTIMISTIC

    if path.suffix == ".md":
        text = path.read_text()
        assert text.count(OPTIMISTIC + "\n\n") == 1
        return text.replace(OPTIMISTIC + "\n\n", "").encode()
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert set(df["lr_selected_on"]) == {ino_summary.SELECTED_ON["test"]}
    spread = SPREAD_COLUMNS[path.name] + (["sample"] if path.name == "table.csv" else [])
    assert path.name != "table.csv" or set(df["sample"]) == {""}
    assert set(df["n_seeds"]) == {"1"} and (df[[c for c in spread if c.endswith("_sd")]] == "").all().all()
    buf = io.StringIO()
    df.drop(columns=["lr_selected_on", *spread, *ADDED_COLUMNS[path.name]]).to_csv(buf, index=False)
    return buf.getvalue().encode()


def test_one_seed_summary_is_byte_identical_to_todays(seeds_fixture, tmp_path):
    import hashlib

    new = run_summary(seeds_fixture, [7], tmp_path / "seeds7", base_seed=7)
    old_call = run_summary(seeds_fixture, None, tmp_path / "old", iid_outcomes=seeds_fixture["inputs"][7][2])
    for name in OUTPUTS:          # the PNGs too (same matplotlib); the seeds column names the seed (unnamed: 0)
        if name == "outcomes.csv":
            pd.testing.assert_frame_equal(pd.read_csv(new / name).drop(columns="seeds"),
                                          pd.read_csv(old_call / name).drop(columns="seeds"))
            continue
        assert (new / name).read_bytes() == (old_call / name).read_bytes(), name
    for name, digest in ONE_SEED_SHA256.items():
        assert hashlib.sha256(without_selection_warning(new / name)).hexdigest() == digest, name
    table = pd.read_csv(new / "table.csv")
    tail = [c for c in SPREAD_COLUMNS["table.csv"] if c != "lrs"]     # lrs beside lr
    assert list(table.columns[-len(tail):]) == tail and table.columns.get_loc("lrs") == table.columns.get_loc("lr") + 1
    assert "training seed" not in (new / "inoculation.md").read_text()


def test_held_out_selection_is_the_default_and_test_selection_is_flagged(seeds_fixture, tmp_path):
    """select_on: dev (the schema's default) chooses each dose's rate on challenge_val (a suite unit's T_val,
    an external set's dev part) and says so; select_on: test says its p-values are optimistic; an external
    set trained without a dev part (challenge_val null) cannot be chosen on dev."""
    import json
    from pathlib import Path

    import yaml
    from conftest import REPO

    from beluga.analyses.inoculation.report import OPTIMISTIC

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    assert schema["properties"]["inoculation"]["properties"]["select_on"]["default"] == "dev"
    fx = seeds_fixture
    with pytest.raises(DataError, match=r"set-nyt-4-0\.json: field 'challenge_val': no learning rate of unit "
                                        "set-nyt, dose 4"):
        run_summary(fx, [7], tmp_path / "no_dev", base_seed=7, select_on="dev")
    # the set's records with a dev score: the second rate best at dose 4, the first at 'all'
    folder = tmp_path / "with_dev"
    folder.mkdir()
    recs = []
    for p in fx["inputs"][7][0]:
        rec = json.loads(Path(p).read_text())
        if rec["unit"] == "set-nyt":
            rec["challenge_val"] = {("4", 1e-3): 0.50, ("4", 1e-4): 0.75, ("all", 1e-3): 0.8,
                                    ("all", 1e-4): 0.6}[(rec["dose"], rec["lr"])]
        path = folder / Path(p).name
        path.write_text(json.dumps(rec))
        recs.append(str(path))
    dev_fx = {**fx, "inputs": {7: (recs, *fx["inputs"][7][1:])}}
    out = run_summary(dev_fx, [7], tmp_path / "dev", base_seed=7, select_on="dev")
    table = pd.read_csv(out / "table.csv", keep_default_na=False, na_values=[""])
    table["dose"] = table["dose"].astype(str)
    by = table.set_index(["unit", "dose"])
    assert by.loc[("set-nyt", "4"), "lr"] == 1e-4 and by.loc[("set-nyt", "all"), "lr"] == 1e-3
    assert by.loc[("set-nyt", "4"), "challenge_val"] == pytest.approx(75.0)
    for uid in ("class-vocabulary", "class-negation", "suite"):       # suite units: the records' T_val
        for dose in ("2", "all"):
            vals = [json.loads(Path(p).read_text()) for p in recs]
            vals = [r for r in vals if r["unit"] == uid and r["dose"] == dose]
            best = max(vals, key=lambda r: r["challenge_val"])
            assert by.loc[(uid, dose), "lr"] == best["lr"] and \
                by.loc[(uid, dose), "challenge_val"] == pytest.approx(100 * best["challenge_val"])
    assert set(table["lr_selected_on"]) == {"dev (held out)"}
    assert set(pd.read_csv(out / "outcomes.csv")["lr_selected_on"]) == {"dev (held out)"}
    md = (out / "inoculation.md").read_text()
    assert OPTIMISTIC not in md and "lr (challenge) picked on held-out challenge data" in md
    # val: the same choice under its old name; test: the paper's choice, flagged in every table and the page
    val = run_summary(dev_fx, [7], tmp_path / "val", base_seed=7, select_on="val")
    assert (val / "table.csv").read_bytes() == (out / "table.csv").read_bytes()
    test = run_summary(dev_fx, [7], tmp_path / "test", base_seed=7, select_on="test")
    for name in ("table.csv", "outcomes.csv"):
        assert set(pd.read_csv(test / name)["lr_selected_on"]) == {ino_summary.SELECTED_ON["test"]}
        assert "p-values optimistic" in ino_summary.SELECTED_ON["test"]
    md = (test / "inoculation.md").read_text()
    assert md.index(OPTIMISTIC) < md.index("| unit | outcome |") and "p-values are optimistic" in OPTIMISTIC


def test_two_seeds_mean_sd_per_unit_and_dose_from_each_seeds_own_summary(seeds_fixture, tmp_path):
    out = run_summary(seeds_fixture, [7, 8], tmp_path / "two", base_seed=7)
    table = pd.read_csv(out / "table.csv", keep_default_na=False, na_values=[""])
    table["dose"] = table["dose"].astype(str)
    per = {s: one_seed_tables(seeds_fixture, s)[1].set_index(["unit", "dose"]) for s in (7, 8)}
    assert len(table) == len(per[7]) and list(zip(table["unit"], table["dose"])) == list(per[7].index)
    for r in table.itertuples(index=False):
        a, b = per[7].loc[(r.unit, r.dose)], per[8].loc[(r.unit, r.dose)]
        for col in ("challenge", "original", "original_same", "gap_closed", "epochs_trained"):
            x, y = float(a[col]), float(b[col])
            assert getattr(r, col) == pytest.approx((x + y) / 2), (r.unit, r.dose, col)
            assert getattr(r, f"{col}_sd") == pytest.approx(abs(x - y) / np.sqrt(2), abs=1e-12), (r.unit, col)
            assert getattr(r, f"{col}_min") == pytest.approx(min(x, y)) and getattr(r, f"{col}_max") == \
                pytest.approx(max(x, y))
        assert r.n_seeds == 2 and r.n_cases == a["n_cases"]
        if r.dose != "0":       # each seed's own learning-rate choice, in seed order
            assert r.lrs == f"{a['lr']:g} / {b['lr']:g}"
            assert (pd.isna(r.lr) if a["lr"] != b["lr"] else r.lr == a["lr"])
            assert r.challenge_lo <= r.challenge_hi and r.original_lo <= r.original_hi
    assert (table["lrs"].dropna().str.split(" / ").map(len) == 2).all()
    outcomes = pd.read_csv(out / "outcomes.csv")
    assert set(outcomes["n_seeds"]) == {2} and set(outcomes["seeds"]) == {"7 8"}
    assert set(outcomes["unit"]) == set(seeds_fixture["units"]) and outcomes["reason"].str.len().min() > 10
    md = (out / "inoculation.md").read_text()
    assert "2 training seeds (7, 8)" in md and " ± " in md and "stratified by seed" in md
    last = table[(table["unit"] == "suite") & (table["dose"] == "all")].iloc[0]
    assert f"{last.challenge:.1f} ± {last.challenge_sd:.1f} [" in md
    for name in ("curves.png", "transfer.png"):
        assert (out / name).stat().st_size > 0


def test_two_seeds_pooled_mcnemar_is_a_binomial_test_on_the_summed_counts(seeds_fixture, tmp_path):
    from scipy.stats import binomtest

    out = run_summary(seeds_fixture, [7, 8], tmp_path / "two", base_seed=7)
    table = pd.read_csv(out / "table.csv", keep_default_na=False, na_values=[""])
    table["dose"] = table["dose"].astype(str)
    funcs = seeds_fixture["units"]["suite"]["functionalities"]
    gained = lost = gained_orig = lost_orig = 0
    for s in (7, 8):
        chosen = one_seed_tables(seeds_fixture, s)[0]
        r = chosen[(chosen["unit"] == "suite") & (chosen["dose"] == "all")].iloc[0]
        base = pd.read_parquet(seeds_fixture["inputs"][s][2])
        now = pd.read_parquet(r.case_outcomes)
        b, _ = ino_outcomes.unit_case_arrays(base, funcs)
        n, _ = ino_outcomes.unit_case_arrays(now, funcs)
        both = (b["scored"] & n["scored"]).to_numpy()
        pb, pn = b["passed"].to_numpy()[both], n["passed"].to_numpy()[both]
        gained, lost = gained + int((pn & ~pb).sum()), lost + int((pb & ~pn).sum())
        hb = ino_outcomes.original_hits(ino_outcomes.original_rows(base), "sent")
        hn = ino_outcomes.original_hits(ino_outcomes.original_rows(now), "sent")
        gained_orig, lost_orig = gained_orig + int((hn & ~hb).sum()), lost_orig + int((hb & ~hn).sum())
    row = table[(table["unit"] == "suite") & (table["dose"] == "all")].iloc[0]
    assert gained + lost > 0
    assert row.p_gain == pytest.approx(binomtest(gained, gained + lost, 0.5).pvalue, rel=1e-12)
    assert row.p_original == pytest.approx(binomtest(gained_orig, gained_orig + lost_orig, 0.5).pvalue, rel=1e-12)
    assert row.original_test == "exact McNemar, pairs summed over 2 seeds"


def test_tests_over_seeds_combine_the_seeds_by_hand():
    """The tests stratified by seed against their definitions (one seed against the one-seed tests:
    tests/test_seed_lists.py)."""
    import math

    from scipy.stats import binomtest, fisher_exact

    # the gap: the exact stratified (CMH) test is Fisher's with one seed, the convolution of the seeds'
    # hypergeometric laws with several (checked by enumerating every pair of tables)
    for counts in [(3, 20, 40, 50), (18, 20, 45, 50), (0, 5, 5, 5)]:
        k_c, n_c, k_o, n_o = counts
        assert paired.gap_test([counts]) == \
            fisher_exact([[k_c, n_c - k_c], [k_o, n_o - k_o]], alternative="less").pvalue

    def law(k_c, n_c, k_o, n_o):
        m, k = n_c + n_o, k_c + k_o
        return {a: math.comb(k, a) * math.comb(m - k, n_c - a) / math.comb(m, n_c)
                for a in range(max(0, n_c - (m - k)), min(k, n_c) + 1)}

    strata = [(6, 20, 40, 50), (9, 20, 38, 50)]
    l1, l2 = law(*strata[0]), law(*strata[1])
    hand = sum(p1 * p2 for a1, p1 in l1.items() for a2, p2 in l2.items() if a1 + a2 <= 6 + 9)
    assert paired.gap_test(strata) == pytest.approx(hand, rel=1e-9)
    assert paired.gap_test([(0, 0, 3, 5), (2, 4, 0, 0)]) == 1.0           # no seed with both sides
    assert paired.gap_test([(0, 0, 3, 5), strata[0]]) == paired.gap_test(strata[:1])
    # McNemar: discordant counts summed over seeds
    rng = np.random.default_rng(4)
    pairs = [(rng.random(50) < 0.3, rng.random(50) < 0.6) for _ in range(3)]
    lost = sum(int((a & ~b).sum()) for a, b in pairs)
    gained = sum(int((b & ~a).sum()) for a, b in pairs)
    assert paired.mcnemar(pairs)["p_value"] == pytest.approx(binomtest(gained, gained + lost, 0.5).pvalue)
    # paired randomization (a non-0/1 metric, SQuAD F1): the mean of the per-seed changes against the mean of
    # the seeds' draws, draw by draw
    feats = []
    for _ in range(2):
        base = np.column_stack([rng.random(80) < 0.4, rng.random(80)]).astype(float)
        now = base.copy()
        now[:30, 1] = np.minimum(1, now[:30, 1] + rng.random(30) * 0.3)
        feats.append((base, now))
    runs = [paired.paired_draws(b, n, "read", "f1", R=300, seed=sd) for (b, n), sd in zip(feats, [0, [0, 8]])]
    delta, null = np.mean([r[0] for r in runs]), np.mean([r[1] for r in runs], axis=0)
    hand = (int((np.abs(null) >= abs(delta) - 1e-12).sum()) + 1) / 301
    assert paired.paired_randomization(feats, "read", "f1", R=300, seeds=[0, [0, 8]])["p_value"] == pytest.approx(hand)
    p, name = paired.paired_metric_test([f[0] for f in feats], [f[1] for f in feats], [None] * 2, [None] * 2,
                                        "read", "f1", R=300, seeds=[0, [0, 8]])
    assert p == pytest.approx(hand) and name == "paired randomization (R = 300), stratified over 2 seeds"
    # a challenge set's gap in a non-0/1 metric: permutations within each seed, the draws averaged
    chal, orig = [f[0][:30] for f in feats], [f[1][30:] for f in feats]
    draws = [paired.unpaired_permutation_draws(c, o, "read", "f1", R=300, seed=sd)
             for c, o, sd in zip(chal, orig, [0, [0, 8]])]
    delta, null = np.mean([d[0] for d in draws]), np.mean([d[1] for d in draws], axis=0)
    assert paired.set_gap_test(chal, [None] * 2, orig, [None] * 2, "read", "f1", R=300, seeds=[0, [0, 8]]) == \
        pytest.approx((int((null <= delta + 1e-12).sum()) + 1) / 301)
    # an undefined statistic (a constant predictor's correlation) has no p-value, whatever the seeds
    from beluga.report.stats import iid_features

    gold = np.linspace(0, 5, 20)
    flat = iid_features(pd.DataFrame({"pred_score": np.full(20, 2.5), "gold_score": gold}), "similarity")
    good = iid_features(pd.DataFrame({"pred_score": gold + rng.random(20), "gold_score": gold}), "similarity")
    r = paired.paired_randomization([(flat, good)], "similarity", "pearson", R=50)
    assert np.isnan(r["delta"]) and np.isnan(r["p_value"])


def test_training_seeds_that_do_not_line_up_are_refused(seeds_fixture, tmp_path):
    import json
    from pathlib import Path

    from beluga.core.errors import DataError

    fx = seeds_fixture
    res = {s: fx["inputs"][s][0] for s in (7, 8)}
    outs = {s: fx["inputs"][s][1] for s in (7, 8)}
    iid = [fx["inputs"][s][2] for s in (7, 8)]

    def recs(paths):
        return [json.loads(Path(p).read_text()) for p in paths]

    both_res, both_out = res[7] + res[8], outs[7] + outs[8]
    parts = ino_summary.split_by_seed(recs(both_res), both_res, both_out, iid, [7, 8])
    assert [p[0] for p in parts] == [7, 8] and parts[1][2] == outs[8] and parts[1][3] == iid[1]
    with pytest.raises(DataError, match="field 'iid_outcomes': 1 IID model outcome file"):
        ino_summary.split_by_seed(recs(both_res), both_res, both_out, iid[:1], [7, 8])
    with pytest.raises(DataError, match=r"seed7/class-vocabulary-2-0.json: field 'seed': trained with seed 7, "
                                        "listed for training seed 8"):
        ino_summary.split_by_seed(recs(res[7] + res[7]), res[7] + res[7], outs[7] + outs[7], iid, [7, 8])
    with pytest.raises(DataError, match="do not split into 2 training seeds"):
        ino_summary.split_by_seed(recs(both_res[:-1]), both_res[:-1], both_out[:-1], iid, [7, 8])
    other = recs(both_res)
    k = len(res[7])
    other[k + 1]["lr"] = 5e-4                         # seed 8's second run: another learning rate
    with pytest.raises(DataError, match=r"class-vocabulary-2-1.json: field 'lr': training seed 8 has 'lr0.0005' "
                                        "where training seed 7 has 'lr0.0001'"):
        ino_summary.split_by_seed(other, both_res, both_out, iid, [7, 8])
    with pytest.raises(DataError, match="field 'seed'"):        # one seed, another seed's records
        ino_summary.split_by_seed(recs(res[7]), res[7], outs[7], iid[:1], [8])
    # the step: two seeds whose IID models were scored on other examples
    bad = pd.read_parquet(iid[1])
    bad.loc[bad["split"] == "iid_test", "case_id"] = bad.loc[bad["split"] == "iid_test", "case_id"] + "b"
    bad_path = tmp_path / "iid8.parquet"
    bad.to_parquet(bad_path)
    with pytest.raises(DataError, match="IID model outcomes: field 'case_id': training seed 8 was scored on other "
                                        "i.i.d. test examples than training seed 7"):
        run_summary(fx, [7, 8], tmp_path / "bad", iid_outcomes=[iid[0], str(bad_path)])


def test_learning_rates_per_task():
    """The seed's two grids, one per task (its NLI and its SQuAD models); a mapping names every analysed task."""
    grids = ino_plan.task_lr_grids({"mnli": "paper_nli", "squad": [1e-4, 1e-3]}, ["mnli", "squad"])
    assert grids == {"mnli": [1e-6, 1e-5, 1e-4, 4e-4, 1e-3, 1e-2], "squad": [1e-4, 1e-3]}
    assert ino_plan.task_lr_grids("paper_squad", ["a", "b"]) == {t: [1e-5, 1e-4, 1e-3, 1e-2] for t in "ab"}
    with pytest.raises(ConfigError, match=r"field 'inoculation.lrs': no learning rates for task 'squad'"):
        ino_plan.task_lr_grids({"mnli": "paper_nli"}, ["mnli", "squad"])
    with pytest.raises(ConfigError, match=r"field 'inoculation.lrs.sst': not an analysed task"):
        ino_plan.task_lr_grids({"mnli": "paper_nli", "squad": [1e-4], "sst": [1e-4]}, ["mnli", "squad"])
    with pytest.raises(ConfigError, match=r"field 'inoculation.lrs.squad': 'paper' is not a named grid"):
        ino_plan.task_lr_grids({"mnli": "paper_nli", "squad": "paper"}, ["mnli", "squad"])


def test_challenge_sets_alone_as_units(tmp_path):
    """inoculation.units: [] with challenge sets (the seed's own experiment): allowed, and the transfer figure
    says there is no transfer between suite units; [] without a challenge set is refused in one line."""
    from beluga.analyses.inoculation import report

    ino_plan.check_units([], ["nyt"])
    with pytest.raises(ConfigError, match=r"field 'inoculation.units': \[\] with no challenge set analyses nothing"):
        ino_plan.check_units([], [])
    units = ino_plan.challenge_units(["nyt"], {"nyt": {"name": "nyt"}})
    chosen = pd.DataFrame({"unit": ["set-nyt"], "dose": ["all"], "seed": [1], "pass_rates": [{}]})
    mats = report.transfer_matrices(chosen, {1: {}}, {})
    out = tmp_path / "transfer.png"
    report.transfer_figure(mats, units, "mnli", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def flagged_records(fx, tmp_path, change) -> dict:
    """The fixture with seed 7's records rewritten by ``change(record)`` (a copy under ``tmp_path``)."""
    recs, outs, base = fx["inputs"][7]
    new = []
    tmp_path.mkdir(parents=True)
    for p in recs:
        rec = json.loads(Path(p).read_text())
        change(rec)
        path = tmp_path / Path(p).name
        path.write_text(json.dumps(rec))
        new.append(str(path))
    return {**fx, "inputs": {7: (new, outs, base)}}


def test_a_dose_computed_from_a_degenerate_model_is_marked(seeds_fixture, tmp_path):
    """Every learning rate of unit class-negation's last dose degenerate: its row's score cells and the unit's
    outcome are marked ⚠ with a legend, table.csv / outcomes.csv count its models; the other rows are not."""
    def flag(rec):
        rec["degenerate"] = rec["unit"] == "class-negation" and rec["dose"] == "all"

    out = run_summary(flagged_records(seeds_fixture, tmp_path / "recs", flag), [7], tmp_path / "out", base_seed=7)
    table = pd.read_csv(out / "table.csv").set_index(["unit", "dose"])
    assert table.loc[("class-negation", "all"), ["n_models", "n_degenerate"]].tolist() == [1, 1]
    assert table["n_degenerate"].sum() == 1 and table.loc[("suite", "0"), "n_models"] == 0   # dose 0: not given
    outcomes = pd.read_csv(out / "outcomes.csv").set_index("unit")
    assert outcomes["n_degenerate"].to_dict() == {u: int(u == "class-negation") for u in outcomes.index}
    md = (out / "inoculation.md").read_text()
    marked = [ln for ln in md.splitlines() if "⚠" in ln and ln.startswith("|")]
    assert len(marked) == 2 and marked[1].count("⚠") == 5 and "| all |" in marked[1], marked   # the gap left too
    assert "⚠: computed from a degenerate model (1 of the" in md

    def old(rec):
        rec.pop("degenerate")

    with pytest.raises(DataError, match=r"\.json: field 'degenerate': missing \(a record of an older run"):
        run_summary(flagged_records(seeds_fixture, tmp_path / "old", old), [7], tmp_path / "out_old", base_seed=7)


def test_the_seeds_reading_takes_the_original_score_from_its_own_rate(seeds_fixture, tmp_path):
    """original_from: original_dev on the fixture: records whose original dev curves make the rate that is not
    the challenge-best one the best on the original dev set, at every dose. Each dose row reads its challenge
    score off the challenge-best run and its original score, original pass rate, original test and gap off the
    other run, records both rates, and rests on both models; original_from: challenge_best reads one run."""
    from scipy.stats import binomtest

    from beluga.analyses.inoculation.report import OPTIMISTIC

    fx = seeds_fixture
    recs = {p: json.loads(Path(p).read_text()) for p in fx["inputs"][7][0]}
    outs = dict(zip(fx["inputs"][7][0], fx["inputs"][7][1]))
    best = {}
    for p, r in recs.items():       # select_on: test: the best challenge score, ties to the first rate (1e-3)
        key = (r["unit"], r["dose"])
        if key not in best or r["challenge"] > recs[best[key]]["challenge"]:
            best[key] = p

    def dev(rec, path):              # the other rate the best on the original dev set, at the best epoch
        rec["dev_curve"] = [0.5] * rec["epochs_trained"]
        rec["dev_curve"][rec["best_epoch"] - 1] = 0.7 if best[(rec["unit"], rec["dose"])] == path else 0.8
        rec["degenerate"] = best[(rec["unit"], rec["dose"])] != path      # the original's run, flagged

    folder = tmp_path / "recs"
    folder.mkdir()
    paths = []
    for p, r in recs.items():
        dev(r, p)
        paths.append(str(folder / Path(p).name))
        Path(paths[-1]).write_text(json.dumps(r))
    two = {**fx, "inputs": {7: (paths, *fx["inputs"][7][1:])}}
    out = run_summary(two, [7], tmp_path / "seed", base_seed=7, original_from="original_dev")
    table = pd.read_csv(out / "table.csv", keep_default_na=False, na_values=[""])
    table["dose"] = table["dose"].astype(str)
    base = pd.read_parquet(fx["inputs"][7][2])
    base_hits = ino_outcomes.original_hits(ino_outcomes.original_rows(base), "sent")
    assert set(table["original_selected_on"]) == {ino_summary.ORIGINAL_FROM["original_dev"]}
    for row in table[table["dose"] != "0"].itertuples(index=False):
        chal_path = best[(row.unit, row.dose)]
        orig_path = next(p for p, r in recs.items() if (r["unit"], r["dose"]) == (row.unit, row.dose)
                         and p != chal_path)
        c, o = recs[chal_path], recs[orig_path]
        assert (row.lr, row.lr_original) == (c["lr"], o["lr"]) and row.lr != row.lr_original
        assert row.challenge == pytest.approx(100 * c["challenge"])
        assert row.original == pytest.approx(100 * o["original"]) and row.original_dev == pytest.approx(80.0)
        hits = ino_outcomes.original_hits(ino_outcomes.original_rows(pd.read_parquet(outs[orig_path])), "sent")
        assert row.original_same == pytest.approx(100 * hits.mean())
        assert row.gap == pytest.approx(100 * hits.mean() - 100 * c["challenge"])
        assert row.gap_lo <= row.gap <= row.gap_hi
        gained, lost = int((hits & ~base_hits).sum()), int((base_hits & ~hits).sum())
        assert row.p_original == pytest.approx(binomtest(gained, gained + lost, 0.5).pvalue if gained + lost else 1.0)
        assert (row.n_models, row.n_degenerate) == (2, 1)      # the challenge's model and the original's
    outcomes = pd.read_csv(out / "outcomes.csv")
    last = table.groupby("unit", sort=False).tail(1).set_index("unit")
    assert list(outcomes["lr_last"]) == list(last["lr"]) and list(outcomes["lr_original_last"]) == \
        list(last["lr_original"])
    md = (out / "inoculation.md").read_text()
    assert "| lr (challenge) | lr (original) |" in md and "original_from: original_dev" in md
    assert OPTIMISTIC in md
    # the single-rate reading of the same records: one run, one rate, one model per dose row
    one = pd.read_csv(run_summary(two, [7], tmp_path / "one", base_seed=7, original_from="challenge_best") /
                      "table.csv", keep_default_na=False, na_values=[""])
    dosed = one[one["dose"].astype(str) != "0"]
    assert (dosed["lr"] == dosed["lr_original"]).all() and (dosed["original_dev"] == 70.0).all()
    assert set(one["original_selected_on"]) == {ino_summary.ORIGINAL_FROM["challenge_best"]}
    assert "n_models" not in one.columns       # only the challenge-best runs, none degenerate: no flag columns


def test_the_decision_rule_is_the_outcome_tables_legend_with_the_margins():
    """inoculation.md's legend under the outcome table, the figure's title line and the HTML report's captions
    state the rule with the configured margins (or the point thresholds with decide_by: thresholds)."""
    import jinja2
    from conftest import REPO

    from beluga.analyses.inoculation import report

    rule = report.decision_rule("tests", 0.05, gap_margin=3.0, drop_margin=1.5)
    assert "more than 1.5 points *and* significantly" in rule and "within 3 points" in rule
    assert "inoculation.gap_margin = 3, inoculation.drop_margin = 1.5" in rule and "95% bootstrap interval" in rule
    short = report.decision_rule("tests", 0.01, gap_margin=3.0, drop_margin=1.5, short=True)
    assert "original drop > 1.5 pp and significant" in short and "99% CI ≤ 3 pp" in short
    points = report.decision_rule("thresholds", 0.05, thresholds={"close_within": 4.0})
    assert "within 4 points" in points and "2 points or more" in points and "No test" in points
    outcomes = pd.DataFrame({"label": ["u"], "outcome": ["1"], "label_skew": ["mixed"], "informative_3": [True],
                             "reason": ["r"]})
    table = pd.DataFrame({"label": ["u"], "measure": ["pass rate"], "dose": ["0"], "n_cases": [0], "lr": [np.nan],
                          "lrs": [""], "challenge": [50.0], "original": [90.0], "original_same": [90.0],
                          "gap_closed": [0.0], "epochs_trained": [0], "best_epoch": [0]})
    md = report.inoculation_markdown("sent", table, outcomes, "dev", "tests", 0.05, gap_margin=3.0, drop_margin=1.5)
    lines = md.splitlines()
    legend = lines.index("| u | 1 | mixed | r |") + 2
    assert lines[legend] == rule
    cfg = {"inoculation": {"decide_by": "tests", "level": 0.05, "gap_margin": 3.0, "drop_margin": 1.5,
                           "original_from": "original_dev"}}
    sm = SimpleNamespace(config=cfg, wildcards=SimpleNamespace(task="sent"))
    for name in ("inoculation_table.rst", "inoculation_curves.rst"):
        text = " ".join(jinja2.Template((REPO / "report" / name).read_text()).render(snakemake=sm).split())
        assert "more than 1.5 points and significantly" in text and "within 3.0 points" in text, text
    cfg["inoculation"].update(decide_by="thresholds", original_from="challenge_best")
    text = jinja2.Template((REPO / "report" / "inoculation_table.rst").read_text()).render(snakemake=sm)
    assert "fixed point thresholds" in text and "1.5" not in text and "original_from: challenge_best" in text
