"""Inoculation by fine-tuning (Liu, Schwartz & Smith, NAACL 2019; seed 001;
docs/ANALYSES.md): expose the IID model to increasing amounts ("doses") of a
unit's challenge data and watch the challenge score and the original score.

- A *unit* is the whole suite, a functionality class or a functionality; its
  challenge training data is its T_train cases, its challenge test set its
  T_test cases (score: the mean pass rate over its functionalities, as s_T),
  the original test set D_test and the original dev set D_val.
- Doses are numbers of T_train cases (``all``: every one); the samples are
  nested (a smaller dose is a prefix of a seeded permutation of the unit's
  case ids) and dose 0 is the IID model itself.
- Each (unit, dose, learning rate) is one job: training starts from the IID
  model, runs at most ``max_epochs`` and stops when the original dev score has
  not improved for ``patience`` epochs, keeping the best-dev weights (the
  seed's early stopping); per dose the reported learning rate is the one with
  the best challenge score (the seed: on the challenge test set;
  ``select_on: val``: on the unit's T_val).
- Learning rate: constant and halved after every epoch whose original dev
  score does not improve (``schedule: halve_on_plateau``, the seed's appendix
  A), or the project's linear decay (``linear``); the seed's grids by name
  (:data:`LR_GRIDS`).
- The outcome of a unit compares the last dose with dose 0 by tests at a
  stated level (:func:`decide`; :func:`classify`: the fixed point thresholds
  used before), with 95 % intervals of every score (:func:`score_intervals`)
  and a label-skew flag (:func:`label_skew`; the seed's §3.3 limitation).
- Several training seeds (config ``seeds``; :func:`seeds_summary_tables`): each
  seed's IID model is inoculated by its own jobs; per seed, unit and dose the
  learning rate is chosen and the scores are read as in a one-seed run, and
  the table reports the mean ± sd over seeds (``n_seeds``, ``_sd`` / ``_min``
  / ``_max``). The tests pool the seeds, stratified by seed: exact McNemar on
  the discordant pairs summed over seeds (:func:`pooled_mcnemar`); paired
  randomization with each seed's own draws, the null the mean of the seeds'
  draws draw by draw (:func:`pooled_randomization`); the gap by the exact
  conditional test of a common odds ratio over the seeds' 2×2 tables (exact
  Cochran–Mantel–Haenszel, :func:`stratified_gap_test`: Fisher's test with
  one seed; chosen over summing the 2×2 counts, which would read the seeds'
  models as one model on more items), or a within-seed permutation test for
  a non-0/1 metric (:func:`pooled_set_gap_test`). Intervals: hierarchical
  bootstrap, seeds then cases / examples (:func:`seeds_score_intervals`).
  With one seed the one-seed functions run, unchanged.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pandas as pd

from beluga.errors import ConfigError, DataError
from beluga.folds import fold_ids, split_sizes, stable_int
from beluga.tasks import get_task_type

LEVELS = ("suite", "class", "functionality")
LEVEL_PREFIX = {"suite": "suite", "class": "class", "functionality": "func"}

#: the seed's learning-rate grids (appendix A): NLI stress tests and Adversarial SQuAD
LR_GRIDS = {"paper_nli": [1.0e-6, 1.0e-5, 1.0e-4, 4.0e-4, 1.0e-3, 1.0e-2],
            "paper_squad": [1.0e-5, 1.0e-4, 1.0e-3, 1.0e-2]}
SCHEDULES = ("halve_on_plateau", "linear")
OUTCOMES = ("1", "2", "3", "between", "no gap")


def check_tasks(tasks, config_tasks) -> None:
    """``inoculation.tasks``: null (every task) or a non-empty list of the config's tasks."""
    if tasks is None:
        return
    if not tasks:
        raise ConfigError("config: field 'inoculation.tasks': [] analyses no task; list the tasks to analyse, or "
                          "leave it null (every task)")
    unknown = [t for t in tasks if t not in config_tasks]
    if unknown:
        raise ConfigError(f"config: field 'inoculation.tasks': {unknown[0]!r} is not a task of this config "
                          f"(tasks: {', '.join(config_tasks)})")


def lr_grid(lrs) -> list[float]:
    """The learning rates of ``inoculation.lrs``: a list, or a grid of the seed by name (:data:`LR_GRIDS`).
    Each is one job (its :func:`lr_id` names its files): two rates with the same id are refused,
    as the selection grid's trial ids (beluga/workflow/dag.py grid_points)."""
    if isinstance(lrs, str):
        if lrs not in LR_GRIDS:
            raise ConfigError(f"config: field 'inoculation.lrs': {lrs!r} is not a named grid ({', '.join(LR_GRIDS)})")
        return list(LR_GRIDS[lrs])
    out = [float(x) for x in lrs]
    ids = [lr_id(x) for x in out]
    for i, x in enumerate(out):
        j = ids.index(ids[i])
        if j < i:
            same = "is listed twice" if out[j] == x else f"and {lrs[i]!r} have the same job id"
            raise ConfigError(f"config: field 'inoculation.lrs': {lrs[j]!r} {same} ({ids[i]}: the second would "
                              "be dropped); list each learning rate once, with values that differ in 6 "
                              "significant digits")
    return out


class HalveOnPlateau:
    """The seed's schedule and early stopping (appendix A: "the learning rate
    is halved whenever validation performance does not improve, and we employ
    early stopping with a patience of 5"): after each epoch, :meth:`epoch_end`
    takes the original dev score; a score above the best so far becomes the
    best (its epoch is kept), otherwise the learning-rate factor is halved
    (``halve``: False keeps it, the ``linear`` schedule's early stopping).
    Returns True when ``patience`` epochs have passed without improvement."""

    def __init__(self, patience: int, halve: bool = True):
        self.patience, self.halve = int(patience), bool(halve)
        self.best, self.best_epoch, self.factor = -np.inf, 0, 1.0
        self.curve: list[float] = []
        self.lrs: list[float] = []       # the factor each epoch trained with

    def lr_factor(self) -> float:
        return self.factor

    def epoch_end(self, epoch: int, score: float) -> bool:
        self.lrs.append(self.factor)
        self.curve.append(float(score))
        if score > self.best:
            self.best, self.best_epoch = float(score), int(epoch)
        elif self.halve:
            self.factor *= 0.5
        return epoch - self.best_epoch >= self.patience


def units(funcs: pd.DataFrame, levels) -> dict[str, dict]:
    """unit id -> {level, label, functionalities} for the configured levels
    (funcs: the functionality table with ``functionality`` and ``capability``)."""
    out: dict[str, dict] = {}
    for level in levels:
        if level not in LEVELS:
            raise ConfigError(f"config: field 'inoculation.units': unknown unit level {level!r} ({', '.join(LEVELS)})")
        if level == "suite":
            out["suite"] = {"level": level, "label": "whole suite", "functionalities": list(funcs["functionality"])}
            continue
        col = "capability" if level == "class" else "functionality"
        groups = list(dict.fromkeys(funcs[col]))
        for name, gid in fold_ids(groups).items():
            members = list(funcs.loc[funcs[col] == name, "functionality"])
            out[f"{LEVEL_PREFIX[level]}-{gid}"] = {"level": level, "label": str(name), "functionalities": members}
    return out


def challenge_units(names, ood_sets: dict) -> dict[str, dict]:
    """unit id (``set-<name>``) -> {level ``challenge set``, label, functionalities [], challenge: name} for
    each configured challenge set that is one of the task's OOD sets (``ood_sets``: name -> entry)."""
    out = {}
    for i, name in enumerate(names):
        if name in ood_sets:
            uid = "set-" + re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")
            if uid in out:
                raise ConfigError(f"config: field 'inoculation.challenge[{i}]': {name!r} and "
                                  f"{out[uid]['label']!r} have the same unit id ({uid}); name one OOD set "
                                  "otherwise (or list it once)")
            out[uid] = {"level": "challenge set", "label": str(name), "functionalities": [], "challenge": name}
    return out


def challenge_train_size(entry: dict, test_fraction: float) -> int | None:
    """Training part of a challenge set, known before it is prepared only when it is capped
    (``max_examples``); None otherwise (every configured dose runs, ``all`` added)."""
    n = entry.get("max_examples")
    return None if n is None else int(n) - int(round(int(n) * float(test_fraction)))


def challenge_split(example_ids, test_fraction: float, seed: int, name: str) -> tuple[list[str], list[str]]:
    """(training ids, test ids) of a challenge set: a permutation of the sorted ids seeded by (seed, name),
    the first round(n × test_fraction) to the test part."""
    ids = sorted(map(str, example_ids))
    order = np.random.default_rng(stable_int(seed, f"challenge:{name}")).permutation(len(ids))
    n_test = int(round(len(ids) * float(test_fraction)))
    return sorted(ids[i] for i in order[n_test:]), sorted(ids[i] for i in order[:n_test])


def train_cases_per_unit(funcs: pd.DataFrame, unit_funcs: list[str], fractions) -> int:
    """T_train cases of a unit, known before the suite is split (``n_cases`` per functionality)."""
    n = funcs.set_index("functionality")["n_cases"]
    return int(sum(split_sizes(int(n[f]), fractions)[0] for f in unit_funcs))


def doses_for(n_train: int | None, doses) -> list[str]:
    """The dose ids a unit runs: every configured number below its T_train size,
    plus ``all`` when it is listed or a number reaches the size (no two doses
    train on the same cases)."""
    ids, use_all = [], n_train is None
    for d in doses:
        if d == "all" or (n_train is not None and int(d) >= n_train):
            use_all = True
        elif int(d) > 0:
            ids.append(int(d))
    out = [str(d) for d in sorted(set(ids))]
    return out + (["all"] if use_all else [])


def dose_size(dose: str, n_train: int) -> int:
    return n_train if dose == "all" else min(int(dose), n_train)


def dose_sample(case_ids, dose: str, seed: int, unit: str) -> list[str]:
    """The cases of a dose: the first ``dose`` ids of a permutation of the
    sorted ids seeded by (seed, unit) — nested across doses."""
    ids = sorted(map(str, case_ids))
    order = np.random.default_rng(stable_int(seed, unit)).permutation(len(ids))
    return [ids[i] for i in order[:dose_size(dose, len(ids))]]


def lr_id(lr: float) -> str:
    return f"lr{float(lr):g}"


def choose(results: pd.DataFrame, select_on: str) -> pd.DataFrame:
    """Per (unit, dose): the learning rate with the best challenge score
    (``test``: the challenge test set, as the seed; ``val``: the unit's T_val);
    ties go to the first learning rate in the configured order."""
    col = {"test": "challenge", "val": "challenge_val"}.get(select_on)
    if col is None:
        raise ConfigError(f"config: field 'inoculation.select_on': {select_on!r} is not test or val")
    rows = []
    for _, g in results.groupby(["unit", "dose"], sort=False):
        g = g.sort_values("lr_order", kind="stable")
        score = g[col].astype(float).fillna(-np.inf)
        rows.append(g.loc[score.idxmax()])
    return pd.DataFrame(rows).reset_index(drop=True)


def classify(challenge0: float, original0: float, challenge: float, original: float, close_within: float = 5.0,
             original_drop: float = 2.0, min_gain: float = 5.0) -> tuple[str, str]:
    """The seed's outcome of a unit, from its dose-0 and last-dose scores (all in
    percentage points): ``3`` when the original score drops by ``original_drop``
    or more; else ``1`` when the challenge score ends within ``close_within``
    of the original score (the gap closed); else ``2`` when the challenge score
    gained less than ``min_gain`` (nothing changed); else ``between``; and
    ``no gap`` (after outcome 3) when the IID model's challenge score was
    already within ``close_within`` of its original score, so there was no gap
    to close. Returns (label, the reason in words)."""
    d_chal, d_orig = challenge - challenge0, original - original0

    def pp(x: float) -> str:   # signed whole points, never "-0"
        return f"{int(round(x)):+d} pp"
    tail = f"original {pp(d_orig)} ({original0:.0f} → {original:.0f})"
    if d_orig <= -original_drop:
        return "3", (f"original {pp(d_orig)} (≤ −{original_drop:g}: the challenge conflicts with the original "
                     f"data); challenge {pp(d_chal)}")
    if challenge0 >= original0 - close_within:
        return "no gap", (f"no gap at dose 0: challenge {challenge0:.0f} vs original {original0:.0f} (the IID model "
                          f"already passes); challenge {pp(d_chal)}; {tail}")
    if challenge >= original - close_within:
        return "1", (f"challenge {pp(d_chal)} to within {close_within:g} pp of original "
                     f"({challenge:.0f} vs {original:.0f}); {tail}")
    if d_chal < min_gain:
        return "2", f"challenge {pp(d_chal)} (< {min_gain:g}: a weakness of the model); {tail}"
    return "between", (f"challenge {pp(d_chal)} but {original - challenge:.0f} pp below original; {tail}")


# ---------------------------------------------------------------- outcomes from evidence
def label_skew(cases: pd.DataFrame, head: str = "classification", names: dict | None = None) -> dict:
    """Whether a unit's suite cases (every split) can inform outcome 3: the
    seed (§3.3) warns that on a challenge set of one label fine-tuning learns
    to predict that label, which reads as outcome 3 without saying anything.
    ``{"label_skew": words, "labels": "label: share, ...", "informative_3": bool}``:
    ``no label`` when no case carries a label (INV / DIR), ``single label``
    when every label of the labelled cases is one label, else ``mixed``; QA
    cases (answers, no label set): ``n/a (QA)``, informative. ``names`` (label
    id -> name, the task's label set): shares by name, and the labels no case has."""
    if head == "qa":
        return {"label_skew": "n/a (QA)", "labels": "", "informative_3": True}
    labels = [int(x) for v in cases["labels"] if v is not None for x in np.asarray(v).ravel()]
    n_unlabelled = int(sum(v is None for v in cases["labels"]))
    if not labels:
        return {"label_skew": "no label", "labels": "", "informative_3": False}
    counts = pd.Series(labels).value_counts().sort_index()
    names = names or {}
    shares = ", ".join(f"{names.get(k, k)}: {100 * v / len(labels):.0f}%" for k, v in counts.items())
    kind = "single label" if len(counts) == 1 else "mixed"
    absent = [str(v) for k, v in sorted(names.items()) if k not in counts.index]
    if absent:
        shares += f"; no {' / '.join(absent)} case"
    if n_unlabelled:
        shares += f"; {n_unlabelled} case(s) without a label"
    return {"label_skew": kind, "labels": shares, "informative_3": kind != "single label"}


def set_label_skew(examples: pd.DataFrame, head: str = "classification", names: dict | None = None) -> dict:
    """:func:`label_skew` of a challenge set (one label per example)."""
    if head == "qa":
        return label_skew(examples, head)
    return label_skew(pd.DataFrame({"labels": [[int(y)] for y in examples["label"]]}), head, names)


def unpaired_permutation(chal: np.ndarray, orig: np.ndarray, task_type: str, iid_metric: str, R: int = 10_000,
                         seed: int = 0) -> float:
    """One-sided permutation test that the statistic on the challenge examples is below the one on the
    original examples (different examples, features (n, k) as :func:`beluga.report.stats.iid_features`):
    p = (#{Δ' ≤ Δ} + 1) / (R + 1), Δ = statistic(challenge) − statistic(original)."""
    from beluga.report.stats import TIE_TOL

    draws = unpaired_permutation_draws(chal, orig, task_type, iid_metric, R=R, seed=seed)
    if draws is None:
        return 1.0
    delta, null = draws
    return (int((null <= delta + TIE_TOL).sum()) + 1) / (R + 1)


def unpaired_permutation_draws(chal: np.ndarray, orig: np.ndarray, task_type: str, iid_metric: str,
                               R: int = 10_000, seed: int = 0) -> tuple[float, np.ndarray] | None:
    """(Δ, the R permutation draws Δ') of :func:`unpaired_permutation`; None when either side has no example."""
    from beluga.report.stats import iid_statistic

    chal, orig = np.asarray(chal, dtype=np.float64), np.asarray(orig, dtype=np.float64)
    if not len(chal) or not len(orig):
        return None
    pool, n = np.concatenate([chal, orig]), len(chal)
    delta = float(iid_statistic(chal.mean(axis=0), task_type, iid_metric)
                  - iid_statistic(orig.mean(axis=0), task_type, iid_metric))
    rng, null = np.random.default_rng(seed), np.empty(R)
    total = pool.sum(axis=0)
    for i in range(R):
        pick = rng.permutation(len(pool))[:n]
        a = pool[pick].sum(axis=0)
        null[i] = iid_statistic(a / n, task_type, iid_metric) - iid_statistic((total - a) / (len(pool) - n),
                                                                              task_type, iid_metric)
    return delta, null


def unit_case_arrays(outcomes: pd.DataFrame, unit_funcs: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """The unit's T_test cases of a model's outcomes, sorted by case id:
    (rows with case_id / functionality / passed / scored, functionality index)."""
    from beluga.scoring import FILTERED, PASS

    rows = outcomes[(outcomes["split"] == "suite_test") & outcomes["functionality"].isin(set(unit_funcs))]
    rows = rows.sort_values("case_id", kind="stable").reset_index(drop=True)
    out = pd.DataFrame({"case_id": rows["case_id"].astype(str), "functionality": rows["functionality"],
                        "passed": (rows["status"] == PASS).to_numpy(),
                        "scored": (rows["status"] != FILTERED).to_numpy()})
    fi = out["functionality"].map({f: i for i, f in enumerate(unit_funcs)}).to_numpy(dtype=np.int64)
    return out, fi


def original_rows(outcomes: pd.DataFrame) -> pd.DataFrame:
    """The i.i.d. test rows of a model's outcomes, sorted by example id."""
    rows = outcomes[outcomes["split"] == "iid_test"].copy()
    rows["case_id"] = rows["case_id"].astype(str)
    return rows.sort_values("case_id", kind="stable").reset_index(drop=True)


def original_hits(rows: pd.DataFrame, task_type: str) -> np.ndarray:
    """Per i.i.d. test example, right or not: ``correct`` (classification; SQuAD: exact match) —
    the pass / fail of the example read as a one-input MFT case, the original's pass rate."""
    col = "em" if task_type == "read" else "correct"
    return rows[col].astype(float).fillna(0).to_numpy() > 0.5


def binary_iid_metric(task_type: str, iid_metric: str) -> bool:
    """The task's i.i.d. score is the mean of a 0/1 per-example outcome (accuracy, exact match):
    the paired test of the original score is then exact McNemar."""
    return (task_type == "sent" and iid_metric in ("mean", "accuracy")) or iid_metric in ("accuracy", "em")


def paired_randomization(base: np.ndarray, system: np.ndarray, task_type: str, iid_metric: str,
                         R: int = 10_000, seed: int = 0, return_null: bool = False) -> dict:
    """Paired approximate randomization of Δ = statistic(system) − statistic(base) on per-example
    i.i.d. features (m, k) (:func:`beluga.report.stats.iid_features`): each draw swaps each
    example's two rows with probability 1/2. p = (#{|Δ'| ≥ |Δ|} + 1) / (R + 1), two-sided.
    ``return_null``: the R draws Δ' too (``null``; Δ itself for every draw when no example differs)."""
    from beluga.report.stats import TIE_TOL, iid_statistic

    base, system = np.asarray(base, dtype=np.float64), np.asarray(system, dtype=np.float64)
    m = base.shape[0]
    delta = float(iid_statistic(system.mean(axis=0), task_type, iid_metric) -
                  iid_statistic(base.mean(axis=0), task_type, iid_metric))
    diff = system - base
    moving = np.flatnonzero(np.any(diff != 0, axis=1))
    if not len(moving):
        out = {"delta": delta, "p_value": 1.0, "n_discordant": 0}
        return {**out, "null": np.full(R, delta)} if return_null else out
    rng = np.random.default_rng(seed)
    total_b, total_s, d = base.sum(axis=0), system.sum(axis=0), diff[moving]
    count, step = 0, max(1, min(R, (1 << 22) // len(moving)))
    nulls = []
    for start in range(0, R, step):
        swap = rng.integers(0, 2, size=(min(step, R - start), len(moving))).astype(np.float64)
        s_sum = total_s - swap @ d          # swapped examples give the system the base's row
        b_sum = total_b + swap @ d
        null = iid_statistic(s_sum / m, task_type, iid_metric) - iid_statistic(b_sum / m, task_type, iid_metric)
        count += int((np.abs(null) >= abs(delta) - TIE_TOL).sum())
        if return_null:
            nulls.append(null)
    out = {"delta": delta, "p_value": (count + 1) / (R + 1), "n_discordant": int(len(moving))}
    return {**out, "null": np.concatenate(nulls)} if return_null else out


def mcnemar(before, after) -> dict:
    """Exact McNemar test (two-sided exact binomial on the discordant pairs,
    :func:`beluga.report.stats.binomial_test`) of paired 0/1 outcomes."""
    from beluga.report.stats import binomial_test

    r = binomial_test(before, after)
    return {"p_value": r["p_value"], "n_discordant": r["n_discordant"], "gained": r["b_only"], "lost": r["a_only"]}


def gap_test(chal_passed: int, chal_n: int, orig_passed: int, orig_n: int) -> float:
    """One-sided Fisher exact test that the challenge pass proportion is below the original's
    (different items: unpaired); the p-value (1.0 when either side has no item)."""
    from scipy.stats import fisher_exact

    if chal_n == 0 or orig_n == 0:
        return 1.0
    table = [[chal_passed, chal_n - chal_passed], [orig_passed, orig_n - orig_passed]]
    return float(fisher_exact(table, alternative="less").pvalue)


def score_intervals(passed: np.ndarray, scored: np.ndarray, fi: np.ndarray, n_func: int, iid: np.ndarray,
                    task_type: str, iid_metric: str, R: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Percentile-bootstrap intervals (%) of the challenge score (mean pass rate over the unit's
    functionalities; cases resampled within functionality) and of the original score (the task's
    i.i.d. metric; examples resampled): :func:`beluga.report.stats.bootstrap_ci`."""
    from beluga.report.stats import Outcomes, bootstrap_ci

    o = Outcomes(passed.astype(float) * scored, scored.astype(float), iid)
    ci = bootstrap_ci(o, fi, n_func, task_type, iid_metric, R=R, seed=seed, level=level)
    return {"challenge": 100 * ci["s_T"][0], "original": 100 * ci["s_iid"][0]}


def dose_tests(base_cases: pd.DataFrame, cases: pd.DataFrame, base_iid: np.ndarray, iid: np.ndarray,
               base_hits: np.ndarray, hits: np.ndarray, task_type: str, iid_metric: str, R: int = 10_000,
               seed: int = 0) -> dict:
    """A dose's model against the IID model (dose 0), on the same items: the
    challenge gain (exact McNemar on the unit's scored T_test cases, pooled
    over its functionalities), the original change (exact McNemar on the
    0/1 i.i.d. outcome when the i.i.d. score is its mean, else a paired
    randomization test of the score), and the gap left between the challenge
    pass rate and the original pass rate (:func:`original_hits`; one-sided
    Fisher exact test, cases pooled). Cases and examples are aligned by id."""
    merged = base_cases.merge(cases, on="case_id", suffixes=("_0", ""), validate="one_to_one")
    both = (merged["scored_0"] & merged["scored"]).to_numpy()
    chal = mcnemar(merged["passed_0"].to_numpy()[both], merged["passed"].to_numpy()[both])
    if binary_iid_metric(task_type, iid_metric):
        orig = mcnemar(base_hits, hits)
        orig_test = "exact McNemar"
    else:
        orig = paired_randomization(base_iid, iid, task_type, iid_metric, R=R, seed=seed)
        orig_test = f"paired randomization (R = {R})"
    n_c, k_c = int(cases["scored"].sum()), int((cases["passed"] & cases["scored"]).sum())
    return {"p_gain": chal["p_value"], "discordant_cases": chal["n_discordant"], "p_original": orig["p_value"],
            "original_test": orig_test, "p_gap": gap_test(k_c, n_c, int(hits.sum()), len(hits))}


def metric_interval(feats: np.ndarray, task_type: str, iid_metric: str, R: int = 1000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap interval (%) of the i.i.d. metric on per-example features (a challenge set's)."""
    from beluga.report.stats import Outcomes, bootstrap_ci

    o = Outcomes(np.zeros(0), np.zeros(0), feats)
    lo, hi = bootstrap_ci(o, np.zeros(0, dtype=np.int64), 1, task_type, iid_metric, R=R, seed=seed,
                          level=level)["s_iid"][0]
    return 100 * lo, 100 * hi


def paired_metric_test(base_feats: np.ndarray, feats: np.ndarray, base_hits: np.ndarray, hits: np.ndarray,
                       task_type: str, iid_metric: str, R: int = 10_000, seed: int = 0) -> tuple[float, str]:
    """(p, test name) of a change of the i.i.d. metric on the same examples: exact McNemar on the 0/1
    outcome when the metric is its mean (:func:`binary_iid_metric`), else paired randomization."""
    if binary_iid_metric(task_type, iid_metric):
        return mcnemar(base_hits, hits)["p_value"], "exact McNemar"
    return paired_randomization(base_feats, feats, task_type, iid_metric, R=R, seed=seed)["p_value"], \
        f"paired randomization (R = {R})"


def set_gap_test(chal_feats: np.ndarray, chal_hits: np.ndarray, orig_feats: np.ndarray, orig_hits: np.ndarray,
                 task_type: str, iid_metric: str, R: int = 10_000, seed: int = 0) -> float:
    """One-sided test that a challenge set's i.i.d. metric is below the original test set's (different
    examples): Fisher exact on the 0/1 outcome when the metric is its mean, else a permutation test."""
    if binary_iid_metric(task_type, iid_metric):
        return gap_test(int(chal_hits.sum()), len(chal_hits), int(orig_hits.sum()), len(orig_hits))
    return unpaired_permutation(chal_feats, orig_feats, task_type, iid_metric, R=R, seed=seed)


def decide(first: pd.Series, last: pd.Series, level: float = 0.05, informative_3: bool = True) -> tuple[str, str]:
    """The seed's outcome of a unit from tests at ``level`` (scores in %, p-values of
    :func:`dose_tests` of the last dose; ``first`` = dose 0 with its ``p_gap``):

    - **3** when the original score dropped significantly (``p_original`` < level, score down);
    - **no gap** when the IID model's challenge pass rate was not significantly below the
      original pass rate (dose 0's ``p_gap`` ≥ level): nothing to close;
    - **2** when the challenge score did not rise significantly (``p_gain`` ≥ level or no rise);
    - **1** when it rose significantly and the gap left is not significant (``p_gap`` ≥ level);
    - **between** when it rose significantly but a significant gap is left.

    ``informative_3`` False (a single-label or unlabelled unit) adds the seed's warning to the
    words. Returns (label, the reason in words)."""
    def pp(x: float) -> str:   # signed whole points, never "-0"
        return f"{int(round(x)):+d} pp"

    def p(x: float) -> str:
        return "p < 0.001" if x < 0.001 else f"p = {x:.3f}"

    d_chal, d_orig = last.challenge - first.challenge, last.original - first.original
    gain = bool(last.p_gain < level and d_chal > 0)
    drop = bool(last.p_original < level and d_orig < 0)
    chal = f"challenge {pp(d_chal)} ({first.challenge:.0f} → {last.challenge:.0f}, {p(last.p_gain)})"
    orig = f"original {pp(d_orig)} ({first.original:.0f} → {last.original:.0f}, {p(last.p_original)})"
    gap0 = first.original_same - first.challenge
    share = "" if pd.isna(last.gap_closed) else f"; {100 * last.gap_closed:.0f}% of the dose-0 gap closed"
    at = f"at level {level:g}"
    if drop:
        label, why = "3", f"original dropped significantly {at}: {orig}; {chal}"
        if not informative_3:
            why += (" — uninformative: every labelled case of the unit has one label (or none has a label), "
                    "so fine-tuning can learn to predict that label (the seed's §3.3)")
        return label, why
    if first.p_gap >= level:
        measure = first.get("measure", "pass rate")
        return "no gap", (f"no significant gap at dose 0 {at} ({measure}: challenge {first.challenge:.0f} vs original "
                          f"{first.original_same:.0f}, {p(first.p_gap)}); {chal}; {orig}")
    if not gain:
        return "2", f"no significant challenge gain {at}: {chal}; {orig} (both unchanged)"
    left = f"gap left {last.original_same - last.challenge:.0f} pp of {gap0:.0f} ({p(last.p_gap)}){share}"
    if last.p_gap >= level:
        return "1", f"challenge gained significantly and no significant gap is left {at}: {chal}; {left}; {orig}"
    return "between", f"challenge gained significantly but a significant gap is left {at}: {chal}; {left}; {orig}"


def dose_number(dose: str, n_cases: int) -> int:
    return int(n_cases) if dose == "all" else int(dose)


def curves_figure(table: pd.DataFrame, outcomes: pd.DataFrame, task: str, out_png: str, level: float = 0.05) -> None:
    """Challenge and original score against the dose (symmetric log axis, dose 0
    = the IID model), one panel per unit, the outcome in the panel title. A table over
    several training seeds (``n_seeds`` > 1): the means with the seeds' sd as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.io import atomic_path

    unit_ids = list(dict.fromkeys(table["unit"]))
    n = len(unit_ids)
    cols = min(4, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False, sharey=True)
    out = outcomes.set_index("unit")
    n_seeds = int(table["n_seeds"].max()) if "n_seeds" in table.columns and len(table) else 1
    several = n_seeds > 1
    for k, unit in enumerate(unit_ids):
        ax = axes[k // cols][k % cols]
        g = table[table["unit"] == unit].sort_values("n_cases")
        if several:   # the mean over training seeds with the seeds' standard deviation
            ax.errorbar(g["n_cases"], g["challenge"], yerr=g["challenge_sd"].fillna(0), fmt="o-", color="tab:red",
                        capsize=2, label="challenge (unit's test part)")
            ax.errorbar(g["n_cases"], g["original"], yerr=g["original_sd"].fillna(0), fmt="s--", color="tab:blue",
                        capsize=2, label="original (D_test)")
        else:
            ax.plot(g["n_cases"], g["challenge"], "o-", color="tab:red", label="challenge (unit's test part)")
            ax.plot(g["n_cases"], g["original"], "s--", color="tab:blue", label="original (D_test)")
        for col, color in (("challenge", "tab:red"), ("original", "tab:blue")):
            if f"{col}_lo" in g:   # the score's interval
                ax.fill_between(g["n_cases"], g[f"{col}_lo"], g[f"{col}_hi"], color=color, alpha=0.15, lw=0)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_ylim(-3, 103)
        if unit in out.index:
            o = out.loc[unit]
            flag = "" if o.get("informative_3", True) in (True, "True") else f" ({o.get('label_skew', 'skewed')}*)"
            ax.set_title(f"{o['label'][:30]}: outcome {o['outcome']}{flag}", fontsize=8)
            ax.annotate(str(o["outcome"]), xy=(0.97, 0.05), xycoords="axes fraction", ha="right", va="bottom",
                        fontsize=14, fontweight="bold", color="0.35")
        else:
            ax.set_title(unit, fontsize=8)
        ax.tick_params(labelsize=7)
        if k % cols == 0:
            ax.set_ylabel("score (%)", fontsize=8)
        if k // cols == rows - 1:
            ax.set_xlabel("dose (challenge training cases)", fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=7, loc="upper left", ncol=2)
    if several:
        fig.suptitle(f"{task.upper()}: inoculation by fine-tuning, mean ± sd over {n_seeds} training seeds\n(bands: "
                     f"{100 * (1 - level):g}% hierarchical bootstrap intervals; outcome in the corner; * uninformative "
                     "for outcome 3)", fontsize=9)
    else:
        fig.suptitle(f"{task.upper()}: inoculation by fine-tuning (bands: {100 * (1 - level):g}% bootstrap intervals; "
                     "outcome in the corner; * uninformative for outcome 3)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def transfer_matrix(chosen: pd.DataFrame, base_rates: dict, unit_map: dict, dose: str) -> pd.DataFrame:
    """Rows: the unit trained on at ``dose``; columns: every unit evaluated;
    values: the change (pp) of the evaluated unit's mean pass rate against
    the IID model."""
    def unit_score(rates: dict, funcs) -> float:
        vals = [rates.get(f) for f in funcs if rates.get(f) is not None and not pd.isna(rates.get(f))]
        return float(np.mean(vals)) if vals else np.nan

    sub = chosen[chosen["dose"] == dose]
    mat = pd.DataFrame(index=list(sub["unit"]), columns=list(unit_map), dtype=float)
    for r in sub.itertuples(index=False):
        for u, spec in unit_map.items():
            mat.at[r.unit, u] = 100 * (unit_score(r.pass_rates, spec["functionalities"])
                                       - unit_score(base_rates, spec["functionalities"]))
    return mat


def transfer_figure(mats: dict[str, pd.DataFrame], unit_map: dict, task: str, out_png: str, n_seeds: int = 1) -> None:
    """Per dose, unit trained on × unit evaluated: the pass-rate change against the IID model
    (``n_seeds`` > 1: the mean over training seeds, :func:`seeds_transfer_matrices`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.io import atomic_path

    n = max(1, len(mats))
    size = max(3.2, 0.32 * len(unit_map) + 2)
    fig, axes = plt.subplots(1, n, figsize=(size * n, size), squeeze=False)
    for k, (dose, mat) in enumerate(mats.items()):
        ax = axes[0][k]
        im = ax.imshow(mat.to_numpy(dtype=float), cmap="RdBu", vmin=-100, vmax=100, aspect="auto")
        ax.set_xticks(range(mat.shape[1]))
        ax.set_xticklabels([unit_map[u]["label"][:22] for u in mat.columns], rotation=90, fontsize=6)
        ax.set_yticks(range(mat.shape[0]))
        ax.set_yticklabels([unit_map[u]["label"][:22] for u in mat.index] if k == 0 else [], fontsize=6)
        ax.set_title(f"dose {dose}", fontsize=9)
        ax.set_xlabel("evaluated unit", fontsize=7)
        if k == 0:
            ax.set_ylabel("unit trained on", fontsize=7)
    if n_seeds > 1:
        fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="mean pass-rate change vs IID model (pp)")
        fig.suptitle(f"{task.upper()}: transfer of inoculation to other units (mean over {n_seeds} training seeds)",
                     fontsize=10)
    else:
        fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="pass-rate change vs IID model (pp)")
        fig.suptitle(f"{task.upper()}: transfer of inoculation to other units", fontsize=10)
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)


def summary_tables(recs: list[dict], case_outcomes: list[str], *, task_type: str, iid_metric: str, units: dict,
                   base_out: pd.DataFrame, cases_all: pd.DataFrame, lrs: list[float], select_on: str,
                   thresholds: dict, decide_by: str, level: float, bootstrap: int, randomization: int):
    """The analysis' tables from its jobs' records (``recs``; ``case_outcomes``: each one's per-case
    outcomes file) and the IID model's outcomes (``base_out``, dose 0): (chosen runs, table, outcomes,
    base pass rates). Per unit and dose the learning rate with the best challenge score, its challenge
    and original scores with their intervals at 1 - ``level``, the share of the dose-0 gap closed and
    the tests against dose 0; the outcome of every unit decided by those tests at ``level``
    (``decide_by: thresholds``: by the fixed point thresholds) with its label-skew flag."""
    # scipy / pyarrow: imported here, so that the DAG (beluga/workflow/runs.py) imports this module light
    from beluga.suites.format import functionality_table

    st = _seed_state(0, recs, case_outcomes, base_out, task_type=task_type, iid_metric=iid_metric,
                     funcs=functionality_table(cases_all), lrs=lrs, select_on=select_on)
    chosen, base_rates, base_original = st.chosen, st.base_rates, st.base_original
    base_iid, base_feats, base_hits = st.base_iid, st.base_feats, st.base_hits
    conf = 1 - float(level)

    def evidence(cases: pd.DataFrame, fi: np.ndarray, n_func: int, feats: np.ndarray, hits: np.ndarray) -> dict:
        ci = score_intervals(cases["passed"].to_numpy(), cases["scored"].to_numpy(), fi, n_func, feats,
                                 task_type, iid_metric, R=bootstrap, level=conf)
        n_c = int(cases["scored"].sum())
        return {"challenge_lo": ci["challenge"][0], "challenge_hi": ci["challenge"][1],
                "original_lo": ci["original"][0], "original_hi": ci["original"][1],
                "original_same": 100 * float(hits.mean()) if len(hits) else np.nan,
                "p_gap": gap_test(int((cases["passed"] & cases["scored"]).sum()), n_c, int(hits.sum()),
                                      len(hits))}

    rows, skew = [], {}
    for uid, spec in units.items():
        if spec.get("challenge") is not None:   # an external challenge set: scored with the i.i.d. metric
            unit_rows, skew[uid] = challenge_set_rows(uid, spec, chosen[chosen["unit"] == uid], base_out, base_iid,
                                                      task_type, iid_metric, randomization, bootstrap, conf)
            rows += unit_rows
            continue
        ufuncs = list(spec["functionalities"])
        skew[uid] = label_skew(cases_all[cases_all["functionality"].isin(set(ufuncs))],
                               get_task_type(task_type).head, get_task_type(task_type).suite_labels)
        base_cases, fi0 = unit_case_arrays(base_out, ufuncs)
        vals = [base_rates.get(f) for f in ufuncs if not pd.isna(base_rates.get(f, np.nan))]
        first = {"unit": uid, "level": spec["level"], "label": spec["label"], "dose": "0", "n_cases": 0,
                 "lr": np.nan, "challenge": 100 * float(np.mean(vals)) if vals else np.nan,
                 "challenge_val": np.nan, "original": 100 * base_original, "epochs_trained": 0, "best_epoch": 0,
                 **evidence(base_cases, fi0, len(ufuncs), base_feats, base_hits),
                 "gap_closed": 0.0, "p_gain": np.nan, "p_original": np.nan, "original_test": "",
                 "measure": "pass rate"}
        gap0 = first["original_same"] - first["challenge"]
        first["gap_closed"] = 0.0 if gap0 > 0 else np.nan
        rows.append(first)
        for r in chosen[chosen["unit"] == uid].itertuples(index=False):
            row = {"unit": r.unit, "level": spec["level"], "label": spec["label"], "dose": r.dose,
                   "n_cases": int(r.n_cases), "lr": float(r.lr),
                   "challenge": np.nan if r.challenge is None else 100 * float(r.challenge),
                   "challenge_val": np.nan if r.challenge_val is None else 100 * float(r.challenge_val),
                   "original": 100 * float(r.original), "epochs_trained": int(r.epochs_trained),
                   "best_epoch": int(r.best_epoch), "measure": "pass rate"}
            if r.case_outcomes:
                cases, fi, feats, hits = _dose_outcomes(r.case_outcomes, ufuncs, base_iid, task_type)
                row.update(evidence(cases, fi, len(ufuncs), feats, hits))
                row.update(dose_tests(base_cases, cases, base_feats, feats, base_hits, hits, task_type,
                                          iid_metric, R=randomization))
                row["gap_closed"] = (row["challenge"] - first["challenge"]) / gap0 if gap0 > 0 else np.nan
            rows.append(row)
    table = pd.DataFrame(rows)
    table["_unit"] = table["unit"].map({u: i for i, u in enumerate(units)})
    table = table.sort_values(["_unit", "n_cases"], kind="stable").drop(columns="_unit").reset_index(drop=True)
    cols = ["unit", "level", "label", "measure", "dose", "n_cases", "lr", "challenge", "challenge_lo", "challenge_hi",
            "original", "original_lo", "original_hi", "original_same", "gap_closed", "p_gain", "p_original",
            "original_test", "p_gap", "challenge_val", "epochs_trained", "best_epoch"]
    table = table[[c for c in cols if c in table.columns]]
    outcomes = outcome_rows(table, skew, decide_by, level, thresholds)
    return chosen, table, outcomes, base_rates


def outcome_rows(table: pd.DataFrame, skew: dict, decide_by: str, level: float, thresholds: dict) -> pd.DataFrame:
    """outcomes.csv: per unit of ``table`` (its first row dose 0, its last the last dose) the outcome
    (:func:`decide` at ``level``, or :func:`classify` by ``thresholds``), its reason and the numbers behind it,
    with the unit's label skew (``skew``: unit -> :func:`label_skew`)."""
    outcomes = []
    for uid, g in table.groupby("unit", sort=False):
        first, last = g.iloc[0], g.iloc[-1]
        if decide_by == "tests":
            label, reason = decide(first, last, level, skew[uid]["informative_3"])
            how = f"tests at level {level:g}"
        else:
            label, reason = classify(first.challenge, first.original, last.challenge, last.original, **thresholds)
            how = "point thresholds"
        outcomes.append({"unit": uid, "label": first.label, "level": first.level, "outcome": label,
                         "reason": reason, "decided_by": how, "last_dose": last.dose,
                         "challenge_0": first.challenge, "challenge_last": last.challenge,
                         "challenge_last_lo": last.get("challenge_lo"), "challenge_last_hi": last.get("challenge_hi"),
                         "original_0": first.original, "original_last": last.original,
                         "original_last_lo": last.get("original_lo"), "original_last_hi": last.get("original_hi"),
                         "gap_measure": first.measure, "gap_0": first.original_same - first.challenge,
                         "gap_closed": last.get("gap_closed"), "p_gain": last.get("p_gain"),
                         "p_original": last.get("p_original"), "original_test": last.get("original_test"),
                         "p_gap_0": first.p_gap, "p_gap_last": last.get("p_gap"), **skew[uid]})
    return pd.DataFrame(outcomes)


def challenge_set_rows(uid: str, spec: dict, chosen: pd.DataFrame, base_out: pd.DataFrame, base_iid: pd.DataFrame,
                       task_type: str, iid_metric: str, R: int, bootstrap: int, conf: float) -> tuple[list, dict]:
    """The table rows (dose 0, then each chosen dose) and the label skew of an external challenge set:
    its test part scored with the task's i.i.d. metric, the gap against the original score in that
    measure, the tests on the same examples against the IID model (dose 0)."""
    from beluga.io import read_parquet
    from beluga.metrics import iid_metrics, iid_score

    name, skew, measure = _set_head(spec, base_out, task_type, iid_metric)
    if not len(chosen):
        return [], skew

    def evidence(p) -> dict:
        c_lo, c_hi = metric_interval(p.ch_f, task_type, iid_metric, R=bootstrap, level=conf)
        o_lo, o_hi = metric_interval(p.orig_f, task_type, iid_metric, R=bootstrap, level=conf)
        original = 100 * iid_score(iid_metrics(p.orig, task_type), iid_metric)
        return {"challenge": 100 * iid_score(iid_metrics(p.ch, task_type, split=name), iid_metric),
                "challenge_lo": c_lo, "challenge_hi": c_hi, "original": original,
                "original_lo": o_lo, "original_hi": o_hi, "original_same": original, "measure": measure,
                "p_gap": set_gap_test(p.ch_f, p.ch_h, p.orig_f, p.orig_h, task_type, iid_metric, R=R)}

    first_out = read_parquet(chosen.iloc[0].case_outcomes, "inoculation outcomes")    # read once (first dose)
    test_ids = set(first_out.loc[first_out["split"] == name, "case_id"].astype(str))
    base = _set_parts(base_out, name, task_type, test_ids)
    if list(base.orig["case_id"]) != list(base_iid["case_id"]):
        raise ValueError("IID model outcomes: field 'case_id': i.i.d. test examples out of order")
    head_row = {"unit": uid, "level": spec["level"], "label": spec["label"]}
    first = {**head_row, "dose": "0", "n_cases": 0, "lr": np.nan, "challenge_val": np.nan, "epochs_trained": 0,
             "best_epoch": 0, **evidence(base), "p_gain": np.nan, "p_original": np.nan, "original_test": ""}
    gap0 = first["original_same"] - first["challenge"]
    first["gap_closed"] = 0.0 if gap0 > 0 else np.nan
    rows = [first]
    for i, r in enumerate(chosen.itertuples(index=False)):
        out = first_out if i == 0 else read_parquet(r.case_outcomes, "inoculation outcomes")
        now = _set_parts(out, name, task_type, test_ids)
        if (list(now.ch["case_id"]) != list(base.ch["case_id"])
                or list(now.orig["case_id"]) != list(base.orig["case_id"])):
            raise ValueError(f"{r.case_outcomes}: field 'case_id': the examples differ from the IID model's")
        row = {**head_row, "dose": r.dose, "n_cases": int(r.n_cases), "lr": float(r.lr), "challenge_val": np.nan,
               "epochs_trained": int(r.epochs_trained), "best_epoch": int(r.best_epoch), **evidence(now)}
        row["p_gain"], _ = paired_metric_test(base.ch_f, now.ch_f, base.ch_h, now.ch_h, task_type, iid_metric, R=R)
        row["p_original"], row["original_test"] = paired_metric_test(base.orig_f, now.orig_f, base.orig_h,
                                                                     now.orig_h, task_type, iid_metric, R=R)
        row["gap_closed"] = (row["challenge"] - first["challenge"]) / gap0 if gap0 > 0 else np.nan
        rows.append(row)
    return rows, skew


# ---------------------------------------------------------------- several training seeds
#: the seed of the hierarchical bootstrap's draws of training seeds (a three-word key no :func:`seed_draw_seed` uses)
OUTER_SEED = [0, 0, 0]
#: the per-seed values of a (unit, dose) that the table reports as mean ± sd over seeds
SEED_VALUES = ["challenge", "original", "original_same", "gap_closed", "challenge_val", "epochs_trained",
               "best_epoch"]


def seed_draw_seed(training_seed: int, base_seed: int | None = None):
    """The seed of one training seed's bootstrap / randomization draws in a summary over several seeds: a
    one-seed run's (0) for the base seed, [0, training seed] for another (independent draws)."""
    return 0 if base_seed is not None and int(training_seed) == int(base_seed) else [0, int(training_seed)]


def split_by_seed(recs: list[dict], results: list[str], case_outcomes: list[str], iid_outcomes: list[str],
                  seeds) -> list[tuple[int, list[dict], list[str], str]]:
    """The summary's inputs per training seed: [(seed, records, per-case outcome files, the seed's IID model
    outcomes)] from the rule's seed-major lists (``results`` / ``case_outcomes``: every seed's runs, seed by
    seed, the same (unit, dose, lr) order in each; ``iid_outcomes``: one file per seed, in ``seeds`` order).
    DataError (one line naming the file and field) when the lists do not split evenly, a record was trained
    with another seed, or two seeds ran other units, doses, learning rates or dose sizes."""
    seeds = [int(s) for s in seeds]
    n = len(seeds)
    names = ", ".join(map(str, seeds))
    if not n:
        raise DataError("inoculation: field 'seeds': no training seed")
    if len(iid_outcomes) != n:
        raise DataError(f"inoculation: field 'iid_outcomes': {len(iid_outcomes)} IID model outcome file(s) for "
                        f"{n} training seed(s) ({names}); one per seed, in the seeds' order")
    if len(case_outcomes) != len(results) or len(recs) != len(results):
        raise DataError(f"inoculation: field 'case_outcomes': {len(case_outcomes)} outcome file(s) for "
                        f"{len(results)} result(s); one per result, in the same order")
    if len(results) % n:
        raise DataError(f"inoculation: field 'results': {len(results)} result(s) do not split into {n} training "
                        f"seeds ({names}); every seed needs the same runs")
    k = len(results) // n
    out, first = [], None
    for i, s in enumerate(seeds):
        part = slice(i * k, (i + 1) * k)
        r, paths = recs[part], results[part]
        for rec, path in zip(r, paths):
            if rec.get("seed") is not None and int(rec["seed"]) != s:
                raise DataError(f"{path}: field 'seed': trained with seed {rec['seed']}, listed for training seed {s}")
        keys = [{"unit": str(rec.get("unit")), "dose": str(rec.get("dose")), "lr": lr_id(rec.get("lr", np.nan)),
                 "n_cases": rec.get("n_cases")} for rec in r]
        if first is None:
            first = keys
        for j, (a, b) in enumerate(zip(keys, first)):
            field = next((f for f in ("unit", "dose", "lr", "n_cases") if a[f] != b[f]), None)
            if field is not None:
                raise DataError(f"{paths[j]}: field {field!r}: training seed {s} has {a[field]!r} where training "
                                f"seed {seeds[0]} has {b[field]!r} (its run {j + 1}); every seed needs the same "
                                "units, doses, learning rates and dose samples")
        out.append((s, r, list(case_outcomes[part]), iid_outcomes[i]))
    return out


def mcnemar_counts(before, after) -> tuple[int, int]:
    """(lost, gained): the discordant pairs of paired 0/1 outcomes (right before only, right after only)."""
    b, a = np.asarray(before, dtype=bool), np.asarray(after, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"mcnemar_counts: paired arrays differ in shape ({b.shape} vs {a.shape})")
    return int((b & ~a).sum()), int((a & ~b).sum())


def pooled_mcnemar(pairs) -> dict:
    """Exact McNemar test stratified by training seed: ``pairs`` = [(before, after)] per seed; the discordant
    counts summed over the seeds, then the two-sided exact binomial test
    (:func:`beluga.report.stats.binomial_counts_test`). One seed: :func:`mcnemar`."""
    from beluga.report.stats import binomial_counts_test

    lost = gained = 0
    for before, after in pairs:
        lo, ga = mcnemar_counts(before, after)
        lost, gained = lost + lo, gained + ga
    r = binomial_counts_test(lost, gained)
    return {"p_value": r["p_value"], "n_discordant": r["n_discordant"], "gained": gained, "lost": lost}


def pooled_randomization(pairs, task_type: str, iid_metric: str, R: int = 10_000, seeds=None) -> dict:
    """Paired randomization stratified by training seed: ``pairs`` = [(base features, system features)] per
    seed; each seed's examples swapped by that seed's own draws (``seeds[i]``, :func:`paired_randomization`),
    the statistic the mean over seeds of the per-seed Δ, its null the mean of the seeds' draws, draw by draw
    (:func:`beluga.report.stats.combine_randomization`); two-sided. One seed: :func:`paired_randomization`."""
    from beluga.report.stats import combine_randomization

    pairs = list(pairs)
    seeds = [0] * len(pairs) if seeds is None else list(seeds)
    parts = []
    for (base, system), sd in zip(pairs, seeds, strict=True):
        r = paired_randomization(base, system, task_type, iid_metric, R=R, seed=sd, return_null=True)
        parts.append({"delta": np.array([r["delta"]]), "delta_avg": r["delta"], "null": r["null"][:, None],
                      "null_avg": r["null"], "R": R, "n_units": r["n_discordant"]})
    c = combine_randomization(parts)
    return {"delta": c["delta_avg"], "p_value": float(c["p_avg"]), "n_discordant": c["n_units"]}


def pooled_paired_metric_test(base_feats, feats, base_hits, hits, task_type: str, iid_metric: str,
                              R: int = 10_000, seeds=None) -> tuple[float, str]:
    """:func:`paired_metric_test` stratified by training seed (each argument: one array per seed): exact
    McNemar on the discordant pairs summed over seeds (:func:`pooled_mcnemar`) for a 0/1 metric, else
    :func:`pooled_randomization`. (p, test name)."""
    n = len(base_feats)
    if binary_iid_metric(task_type, iid_metric):
        return pooled_mcnemar(zip(base_hits, hits, strict=True))["p_value"], \
            f"exact McNemar, pairs summed over {n} seeds"
    return pooled_randomization(zip(base_feats, feats, strict=True), task_type, iid_metric, R=R,
                                seeds=seeds)["p_value"], f"paired randomization (R = {R}), stratified over {n} seeds"


def stratified_gap_test(counts) -> float:
    """:func:`gap_test` stratified by training seed: ``counts`` = [(challenge passed, challenge n, original
    passed, original n)] per seed. The one-sided exact conditional test of a common odds ratio of 1 across
    the seeds' 2×2 tables (the exact Cochran–Mantel–Haenszel test, as R's ``mantelhaen.test(exact = TRUE,
    alternative = "less")``): given each seed's margins its challenge passes are hypergeometric, the
    statistic is their sum over seeds, its null the convolution of the seeds' hypergeometric laws;
    p = P(T ≤ t). One seed: Fisher's exact test (:func:`gap_test`). A seed with no item on a side carries
    no information and is left out (1.0 when none is left)."""
    from scipy.stats import hypergeom

    dist, t, low, used = np.ones(1), 0, 0, False
    for k_c, n_c, k_o, n_o in counts:
        k_c, n_c, k_o, n_o = int(k_c), int(n_c), int(k_o), int(n_o)
        if n_c == 0 or n_o == 0:
            continue
        used = True
        total, passed = n_c + n_o, k_c + k_o
        lo, hi = max(0, n_c - (total - passed)), min(passed, n_c)
        dist = np.convolve(dist, hypergeom.pmf(np.arange(lo, hi + 1), total, passed, n_c))
        t, low = t + k_c, low + lo
    if not used:
        return 1.0
    return float(min(1.0, dist[:t - low + 1].sum()))


def pooled_set_gap_test(chal_feats, chal_hits, orig_feats, orig_hits, task_type: str, iid_metric: str,
                        R: int = 10_000, seeds=None) -> float:
    """:func:`set_gap_test` stratified by training seed (each argument: one array per seed): the exact
    stratified test of :func:`stratified_gap_test` for a 0/1 metric, else a permutation test within each
    seed (each seed's own draws, ``seeds[i]``), the statistic the mean over seeds of the per-seed Δ, its null
    the mean of the seeds' draws, draw by draw; one-sided, p = (#{Δ' ≤ Δ} + 1) / (R + 1)."""
    from beluga.report.stats import TIE_TOL

    if binary_iid_metric(task_type, iid_metric):
        return stratified_gap_test([(int(np.sum(c)), len(c), int(np.sum(o)), len(o))
                                    for c, o in zip(chal_hits, orig_hits, strict=True)])
    seeds = [0] * len(chal_feats) if seeds is None else list(seeds)
    draws = [unpaired_permutation_draws(c, o, task_type, iid_metric, R=R, seed=sd)
             for c, o, sd in zip(chal_feats, orig_feats, seeds, strict=True)]
    draws = [d for d in draws if d is not None]
    if not draws:
        return 1.0
    delta = float(np.mean([d[0] for d in draws]))
    null = np.mean([d[1] for d in draws], axis=0)
    return (int((null <= delta + TIE_TOL).sum()) + 1) / (R + 1)


def seeds_score_intervals(items, fi: np.ndarray, n_func: int, task_type: str, iid_metric: str, R: int = 1000,
                          seeds=None, outer_seed=OUTER_SEED, level: float = 0.95) -> dict:
    """:func:`score_intervals` of the mean over training seeds: ``items`` = [(passed, scored, i.i.d.
    features)] per seed (the same cases and examples); a hierarchical percentile bootstrap, seeds resampled,
    then cases within functionality and examples within each picked seed
    (:func:`beluga.report.stats.hierarchical_bootstrap_ci`; ``seeds``: each seed's draw seed)."""
    from beluga.report.stats import Outcomes, hierarchical_bootstrap_ci

    outs = [Outcomes(np.asarray(p).astype(float) * np.asarray(s), np.asarray(s).astype(float), f)
            for p, s, f in items]
    ci = hierarchical_bootstrap_ci(outs, fi, n_func, task_type, iid_metric, R=R, seeds=seeds,
                                   outer_seed=outer_seed, level=level)
    return {"challenge": 100 * ci["s_T"][0], "original": 100 * ci["s_iid"][0]}


def seeds_metric_interval(feats, task_type: str, iid_metric: str, R: int = 1000, seeds=None,
                          outer_seed=OUTER_SEED, level: float = 0.95) -> tuple[float, float]:
    """:func:`metric_interval` of the mean over training seeds (``feats``: one (n, k) array per seed, the
    same examples): hierarchical percentile bootstrap, seeds then examples."""
    from beluga.report.stats import Outcomes, hierarchical_bootstrap_ci

    outs = [Outcomes(np.zeros(0), np.zeros(0), f) for f in feats]
    lo, hi = hierarchical_bootstrap_ci(outs, np.zeros(0, dtype=np.int64), 1, task_type, iid_metric, R=R,
                                       seeds=seeds, outer_seed=outer_seed, level=level)["s_iid"][0]
    return 100 * lo, 100 * hi


def pooled_dose_tests(pairs, task_type: str, iid_metric: str, R: int = 10_000, seeds=None) -> dict:
    """:func:`dose_tests` stratified by training seed: ``pairs`` = per seed (base cases, cases, base i.i.d.
    features, i.i.d. features, base hits, hits) as :func:`dose_tests` takes them. The challenge gain by
    exact McNemar on the discordant cases summed over seeds, the original change by
    :func:`pooled_paired_metric_test`, the gap left by :func:`stratified_gap_test`."""
    chal_pairs, gap = [], []
    for base_cases, cases, _, _, _, hits in pairs:
        merged = base_cases.merge(cases, on="case_id", suffixes=("_0", ""), validate="one_to_one")
        both = (merged["scored_0"] & merged["scored"]).to_numpy()
        chal_pairs.append((merged["passed_0"].to_numpy()[both], merged["passed"].to_numpy()[both]))
        gap.append((int((cases["passed"] & cases["scored"]).sum()), int(cases["scored"].sum()), int(hits.sum()),
                    len(hits)))
    chal = pooled_mcnemar(chal_pairs)
    p_orig, orig_test = pooled_paired_metric_test([p[2] for p in pairs], [p[3] for p in pairs],
                                                  [p[4] for p in pairs], [p[5] for p in pairs], task_type,
                                                  iid_metric, R=R, seeds=seeds)
    return {"p_gain": chal["p_value"], "discordant_cases": chal["n_discordant"], "p_original": p_orig,
            "original_test": orig_test, "p_gap": stratified_gap_test(gap)}


def _same_ids(ids_per_seed: list, seeds: list[int], source: str, what: str) -> None:
    first = [str(x) for x in ids_per_seed[0]]
    for s, ids in zip(seeds[1:], ids_per_seed[1:]):
        if [str(x) for x in ids] != first:
            raise DataError(f"{source}: field 'case_id': training seed {s} was scored on other {what} than "
                            f"training seed {seeds[0]}")


def _seed_state(seed: int, recs: list[dict], case_outcomes: list[str], base_out: pd.DataFrame, *, task_type: str,
                iid_metric: str, funcs: pd.DataFrame, lrs, select_on: str):
    """One training seed's chosen runs and its IID model (dose 0), as :func:`summary_tables` reads them."""
    from beluga.metrics import fold_pass_rates, iid_metrics, iid_score
    from beluga.report.stats import iid_features

    order = {float(lr): i for i, lr in enumerate(lrs)}
    df = pd.DataFrame(recs)
    df["lr_order"] = df["lr"].map(lambda v: order.get(float(v), len(order)))
    df["case_outcomes"] = list(case_outcomes)
    base_iid = original_rows(base_out)
    return SimpleNamespace(
        seed=int(seed), chosen=choose(df, select_on), base_out=base_out,
        base_rates=fold_pass_rates(base_out, funcs).set_index("functionality")["pass_rate"].to_dict(),
        base_original=iid_score(iid_metrics(base_out, task_type), iid_metric), base_iid=base_iid,
        base_feats=iid_features(base_iid, task_type), base_hits=original_hits(base_iid, task_type))


def _chosen_row(st, uid: str, dose: str):
    c = st.chosen
    return c[(c["unit"] == uid) & (c["dose"] == dose)].iloc[0]


def _seeds_suite_unit(uid: str, spec: dict, states: list, cases_all: pd.DataFrame, *, task_type: str,
                      iid_metric: str, R: int, bootstrap: int, conf: float, draws: list) -> tuple[list, dict, dict]:
    """A suite unit over several training seeds: (per-seed rows, pooled evidence per (unit, dose), label skew)."""
    seeds = [st.seed for st in states]
    ufuncs = list(spec["functionalities"])
    skew = label_skew(cases_all[cases_all["functionality"].isin(set(ufuncs))], get_task_type(task_type).head,
                      get_task_type(task_type).suite_labels)
    info = {"unit": uid, "level": spec["level"], "label": spec["label"], "measure": "pass rate"}
    base = [unit_case_arrays(st.base_out, ufuncs) for st in states]
    _same_ids([c["case_id"] for c, _ in base], seeds, "IID model outcomes", f"T_test cases of unit {uid}")

    def evidence(items, fi) -> dict:    # items: per seed (cases, i.i.d. features, hits)
        ci = seeds_score_intervals([(c["passed"].to_numpy(), c["scored"].to_numpy(), f) for c, f, _ in items], fi,
                                   len(ufuncs), task_type, iid_metric, R=bootstrap, seeds=draws, level=conf)
        return {"challenge_lo": ci["challenge"][0], "challenge_hi": ci["challenge"][1],
                "original_lo": ci["original"][0], "original_hi": ci["original"][1],
                "p_gap": stratified_gap_test([(int((c["passed"] & c["scored"]).sum()), int(c["scored"].sum()),
                                               int(h.sum()), len(h)) for c, _, h in items])}

    rows, first = [], []
    for st in states:
        vals = [st.base_rates.get(f) for f in ufuncs if not pd.isna(st.base_rates.get(f, np.nan))]
        row = {**info, "seed": st.seed, "dose": "0", "n_cases": 0, "lr": np.nan,
               "challenge": 100 * float(np.mean(vals)) if vals else np.nan, "challenge_val": np.nan,
               "original": 100 * st.base_original,
               "original_same": 100 * float(st.base_hits.mean()) if len(st.base_hits) else np.nan,
               "epochs_trained": 0, "best_epoch": 0}
        row["gap_closed"] = 0.0 if row["original_same"] - row["challenge"] > 0 else np.nan
        rows.append(row)
        first.append(row)
    pooled = {(uid, "0"): {**evidence([(c, st.base_feats, st.base_hits) for (c, _), st in zip(base, states)],
                                      base[0][1]), "p_gain": np.nan, "p_original": np.nan, "original_test": ""}}
    for dose in dict.fromkeys(states[0].chosen.loc[states[0].chosen["unit"] == uid, "dose"]):
        items, pairs, fis = [], [], []
        for st, (cases0, _), row0 in zip(states, base, first):
            r = _chosen_row(st, uid, dose)
            row = {**info, "seed": st.seed, "dose": r.dose, "n_cases": int(r.n_cases), "lr": float(r.lr),
                   "challenge": np.nan if r.challenge is None else 100 * float(r.challenge),
                   "challenge_val": np.nan if r.challenge_val is None else 100 * float(r.challenge_val),
                   "original": 100 * float(r.original), "original_same": np.nan, "gap_closed": np.nan,
                   "epochs_trained": int(r.epochs_trained), "best_epoch": int(r.best_epoch)}
            if r.case_outcomes:
                cases, fi, feats, hits = _dose_outcomes(r.case_outcomes, ufuncs, st.base_iid, task_type)
                row["original_same"] = 100 * float(hits.mean()) if len(hits) else np.nan
                gap0 = row0["original_same"] - row0["challenge"]
                row["gap_closed"] = (row["challenge"] - row0["challenge"]) / gap0 if gap0 > 0 else np.nan
                items.append((cases, feats, hits))
                pairs.append((cases0, cases, st.base_feats, feats, st.base_hits, hits))
                fis.append(fi)
            rows.append(row)
        ev = {}
        if len(items) == len(states):     # every seed kept its per-case outcomes: the pooled evidence
            _same_ids([c["case_id"] for c, _, _ in items], seeds, f"inoculation outcomes of {uid}, dose {dose}",
                      "T_test cases")
            ev = {**evidence(items, fis[0]), **pooled_dose_tests(pairs, task_type, iid_metric, R=R, seeds=draws)}
        pooled[(uid, dose)] = ev
    return rows, pooled, skew


def _dose_outcomes(path: str, ufuncs: list, base_iid: pd.DataFrame, task_type: str):
    """A suite unit's dose from its per-case outcomes file: (the unit's T_test cases, their functionality
    indices, the i.i.d. test examples' features, their 0/1 hits), the i.i.d. examples checked against the
    IID model's (``base_iid``)."""
    from beluga.io import read_parquet
    from beluga.report.stats import iid_features

    out = read_parquet(path, "inoculation outcomes")
    cases, fi = unit_case_arrays(out, ufuncs)
    iid_rows = original_rows(out)
    if list(iid_rows["case_id"]) != list(base_iid["case_id"]):
        raise DataError(f"{path}: field 'case_id': the i.i.d. test examples differ from the IID model's")
    return cases, fi, iid_features(iid_rows, task_type), original_hits(iid_rows, task_type)


def _set_head(spec: dict, base_out: pd.DataFrame, task_type: str, iid_metric: str) -> tuple[str, dict, str]:
    """An external challenge set's split name, its label skew (from the IID model's outcomes) and the name of
    the measure it is scored with."""
    from beluga.data.ood_sets import split_name
    from beluga.metrics import IID_METRICS

    name = split_name(spec["challenge"])
    head = get_task_type(task_type).head
    base_set = base_out[base_out["split"] == name]
    if head == "qa":
        skew = label_skew(base_set, head)
    else:
        skew = set_label_skew(pd.DataFrame({"label": base_set["gold_label"].astype(int)}), head,
                              get_task_type(task_type).iid_labels)
    names = IID_METRICS[task_type] if iid_metric == "mean" else [iid_metric]
    return name, skew, " / ".join(names) + (" (mean)" if len(names) > 1 else "")


def _set_parts(out: pd.DataFrame, name: str, task_type: str, test_ids=None):
    """A challenge set's test examples and the i.i.d. test examples of a model's outcomes, with their features
    and 0/1 hits (as :func:`challenge_set_rows` reads them)."""
    from beluga.report.stats import iid_features

    ch = out[out["split"] == name].copy()
    ch["case_id"] = ch["case_id"].astype(str)
    if test_ids is not None:
        ch = ch[ch["case_id"].isin(test_ids)]
    ch = ch.sort_values("case_id", kind="stable").reset_index(drop=True)
    orig = original_rows(out)
    return SimpleNamespace(ch=ch, ch_f=iid_features(ch, task_type), ch_h=original_hits(ch, task_type), orig=orig,
                           orig_f=iid_features(orig, task_type), orig_h=original_hits(orig, task_type))


def _seeds_set_unit(uid: str, spec: dict, states: list, cases_all: pd.DataFrame, *, task_type: str,
                    iid_metric: str, R: int, bootstrap: int, conf: float, draws: list) -> tuple[list, dict, dict]:
    """An external challenge set over several training seeds (:func:`challenge_set_rows` per seed, pooled
    evidence): (per-seed rows, pooled evidence per (unit, dose), label skew)."""
    from beluga.io import read_parquet
    from beluga.metrics import iid_metrics, iid_score

    seeds = [st.seed for st in states]
    name, skew, measure = _set_head(spec, states[0].base_out, task_type, iid_metric)
    chosen = [st.chosen[st.chosen["unit"] == uid] for st in states]
    if not len(chosen[0]):
        return [], {}, skew
    info = {"unit": uid, "level": spec["level"], "label": spec["label"], "measure": measure}

    def point(p) -> dict:
        original = 100 * iid_score(iid_metrics(p.orig, task_type), iid_metric)
        return {"challenge": 100 * iid_score(iid_metrics(p.ch, task_type, split=name), iid_metric),
                "original": original, "original_same": original}

    def evidence(parts) -> dict:
        c_lo, c_hi = seeds_metric_interval([p.ch_f for p in parts], task_type, iid_metric, R=bootstrap,
                                           seeds=draws, level=conf)
        o_lo, o_hi = seeds_metric_interval([p.orig_f for p in parts], task_type, iid_metric, R=bootstrap,
                                           seeds=draws, level=conf)
        return {"challenge_lo": c_lo, "challenge_hi": c_hi, "original_lo": o_lo, "original_hi": o_hi,
                "p_gap": pooled_set_gap_test([p.ch_f for p in parts], [p.ch_h for p in parts],
                                             [p.orig_f for p in parts], [p.orig_h for p in parts], task_type,
                                             iid_metric, R=R, seeds=draws)}

    firsts = {c.iloc[0].case_outcomes: read_parquet(c.iloc[0].case_outcomes, "inoculation outcomes")
              for c in chosen}      # each seed's first dose, read once (used again in the dose loop)
    test_ids = [sorted(set(firsts[c.iloc[0].case_outcomes].loc[lambda o: o["split"] == name, "case_id"].astype(str)))
                for c in chosen]
    _same_ids(test_ids, seeds, f"inoculation outcomes of {uid}", f"{spec['challenge']} test examples")
    ids = set(test_ids[0])
    base = [_set_parts(st.base_out, name, task_type, ids) for st in states]
    for st, b in zip(states, base):
        if list(b.orig["case_id"]) != list(st.base_iid["case_id"]):
            raise DataError("IID model outcomes: field 'case_id': i.i.d. test examples out of order")
    _same_ids([b.ch["case_id"] for b in base], seeds, "IID model outcomes", f"{spec['challenge']} examples")
    rows, first = [], []
    for st, b in zip(states, base):
        row = {**info, "seed": st.seed, "dose": "0", "n_cases": 0, "lr": np.nan, "challenge_val": np.nan,
               "epochs_trained": 0, "best_epoch": 0, **point(b)}
        row["gap_closed"] = 0.0 if row["original_same"] - row["challenge"] > 0 else np.nan
        rows.append(row)
        first.append(row)
    pooled = {(uid, "0"): {**evidence(base), "p_gain": np.nan, "p_original": np.nan, "original_test": ""}}
    for dose in dict.fromkeys(chosen[0]["dose"]):
        now = []
        for st, b, row0 in zip(states, base, first):
            r = _chosen_row(st, uid, dose)
            out = firsts.pop(r.case_outcomes) if r.case_outcomes in firsts else \
                read_parquet(r.case_outcomes, "inoculation outcomes")
            p = _set_parts(out, name, task_type, ids)
            if list(p.ch["case_id"]) != list(b.ch["case_id"]) or list(p.orig["case_id"]) != list(b.orig["case_id"]):
                raise DataError(f"{r.case_outcomes}: field 'case_id': the examples differ from the IID model's")
            row = {**info, "seed": st.seed, "dose": r.dose, "n_cases": int(r.n_cases), "lr": float(r.lr),
                   "challenge_val": np.nan, "epochs_trained": int(r.epochs_trained),
                   "best_epoch": int(r.best_epoch), **point(p)}
            gap0 = row0["original_same"] - row0["challenge"]
            row["gap_closed"] = (row["challenge"] - row0["challenge"]) / gap0 if gap0 > 0 else np.nan
            rows.append(row)
            now.append(p)
        ev = evidence(now)
        ev["p_gain"], _ = pooled_paired_metric_test([b.ch_f for b in base], [p.ch_f for p in now],
                                                    [b.ch_h for b in base], [p.ch_h for p in now], task_type,
                                                    iid_metric, R=R, seeds=draws)
        ev["p_original"], ev["original_test"] = pooled_paired_metric_test(
            [b.orig_f for b in base], [p.orig_f for p in now], [b.orig_h for b in base], [p.orig_h for p in now],
            task_type, iid_metric, R=R, seeds=draws)
        pooled[(uid, dose)] = ev
    return rows, pooled, skew


def seeds_summary_tables(per_seed: list[tuple[int, list[dict], list[str], pd.DataFrame]], *, task_type: str,
                         iid_metric: str, units: dict, cases_all: pd.DataFrame, lrs: list[float], select_on: str,
                         thresholds: dict, decide_by: str, level: float, bootstrap: int, randomization: int,
                         base_seed: int | None = None):
    """:func:`summary_tables` over several training seeds: ``per_seed`` = [(training seed, records, per-case
    outcome files, the seed's IID model outcomes)] (:func:`split_by_seed`). Per seed, unit and dose the
    learning rate is chosen and the challenge / original scores are read exactly as in a one-seed run; the
    table has per unit × dose the mean over seeds of each value of :data:`SEED_VALUES` (with ``n_seeds`` and
    ``_sd`` / ``_min`` / ``_max``), ``lr`` (the seeds' learning rate where they agree, else empty) and ``lrs``
    (each seed's, in seed order), the intervals of a hierarchical bootstrap (seeds, then cases / examples) and
    the tests stratified by seed (:func:`pooled_dose_tests`, :func:`stratified_gap_test`,
    :func:`pooled_set_gap_test`); each seed's draws are seeded by :func:`seed_draw_seed`. The outcome of a unit
    is decided from the means and the pooled p-values (:func:`outcome_rows`). Returns (every seed's chosen
    runs with a ``seed`` column, table, outcomes, {seed: the IID model's pass rates})."""
    from beluga.seeds import over_seeds
    from beluga.suites.format import functionality_table

    funcs = functionality_table(cases_all)
    states = [_seed_state(s, recs, co, base_out, task_type=task_type, iid_metric=iid_metric, funcs=funcs, lrs=lrs,
                          select_on=select_on) for s, recs, co, base_out in per_seed]
    seeds = [st.seed for st in states]
    _same_ids([st.base_iid["case_id"] for st in states], seeds, "IID model outcomes", "i.i.d. test examples")
    ctx = {"task_type": task_type, "iid_metric": iid_metric, "R": randomization, "bootstrap": bootstrap,
           "conf": 1 - float(level), "draws": [seed_draw_seed(s, base_seed) for s in seeds]}
    rows, pooled, skew = [], {}, {}
    for uid, spec in units.items():
        unit = _seeds_set_unit if spec.get("challenge") is not None else _seeds_suite_unit
        unit_rows, unit_pooled, skew[uid] = unit(uid, spec, states, cases_all, **ctx)
        rows += unit_rows
        pooled.update(unit_pooled)
    per = pd.DataFrame(rows)
    table = over_seeds(per, ["unit", "dose"], SEED_VALUES)
    lr_lists = [list(g) for _, g in per.groupby(["unit", "dose"], sort=False)["lr"]]
    table["lr"] = [lst[0] if len({f"{x:g}" for x in lst}) == 1 else np.nan for lst in lr_lists]
    table["lrs"] = [" / ".join("" if pd.isna(x) else f"{x:g}" for x in lst) if not pd.isna(lst).all() else ""
                    for lst in lr_lists]
    evidence = pd.DataFrame([pooled.get((u, d), {}) for u, d in zip(table["unit"], table["dose"])],
                            index=table.index)
    for col in evidence.columns:
        table[col] = evidence[col]
    table["_unit"] = table["unit"].map({u: i for i, u in enumerate(units)})
    table = table.sort_values(["_unit", "n_cases"], kind="stable").drop(columns="_unit").reset_index(drop=True)
    cols = ["unit", "level", "label", "measure", "dose", "n_cases", "lr", "lrs", "challenge", "challenge_lo",
            "challenge_hi", "original", "original_lo", "original_hi", "original_same", "gap_closed", "p_gain",
            "p_original", "original_test", "p_gap", "challenge_val", "epochs_trained", "best_epoch"]
    spread = ["n_seeds"] + [f"{v}_{s}" for v in SEED_VALUES for s in ("sd", "min", "max")]
    table = table[[c for c in cols if c in table.columns] + spread]
    outcomes = outcome_rows(table, skew, decide_by, level, thresholds)
    last = table.groupby("unit", sort=False).tail(1).set_index("unit")
    for col in ("challenge", "original"):
        outcomes[f"{col}_last_sd"] = outcomes["unit"].map(last[f"{col}_sd"])
    outcomes["n_seeds"] = len(seeds)
    outcomes["seeds"] = " ".join(map(str, seeds))
    chosen = pd.concat([st.chosen.assign(seed=st.seed) for st in states], ignore_index=True)
    return chosen, table, outcomes, {st.seed: st.base_rates for st in states}


def seeds_transfer_matrices(chosen: pd.DataFrame, base_rates: dict, unit_map: dict) -> dict[str, pd.DataFrame]:
    """Per dose the mean over training seeds of each seed's :func:`transfer_matrix` (``chosen``: every seed's
    chosen runs with a ``seed`` column; ``base_rates``: seed -> the seed's IID model pass rates)."""
    out = {}
    for dose in dict.fromkeys(chosen["dose"]):
        mats = [transfer_matrix(chosen[chosen["seed"] == s], rates, unit_map, dose) for s, rates in base_rates.items()]
        mean = pd.concat(mats).groupby(level=0, sort=False).mean()
        out[dose] = mean.reindex(index=mats[0].index, columns=mats[0].columns)
    return out


def inoculation_markdown(task: str, table: pd.DataFrame, outcomes: pd.DataFrame, select_on: str, decide_by: str,
                         level: float, seeds=None) -> str:
    """inoculation.md: the outcome of every unit, then per unit and dose its scores, tests and epochs. With
    several training ``seeds`` (:func:`seeds_summary_tables`) every score is the mean ± sd over the seeds, the
    seeds are named and the pooling explained."""
    from beluga.seeds import plus_minus

    several = seeds is not None and len(seeds) > 1

    def num(x, fmt="{:.1f}") -> str:
        return "" if x is None or pd.isna(x) else fmt.format(x)

    def pm(r, col: str, scale: float = 1.0, digits: int = 1) -> str:
        return plus_minus(getattr(r, col, None), getattr(r, f"{col}_sd", None), scale=scale, digits=digits)

    def value(r, col: str) -> str:
        return pm(r, col) if several else f"{getattr(r, col):.1f}"

    def ci(r, col) -> str:
        lo, hi = getattr(r, f"{col}_lo", None), getattr(r, f"{col}_hi", None)
        return f"{value(r, col)} [{num(lo, '{:.0f}')}, {num(hi, '{:.0f}')}]" if lo is not None else value(r, col)

    def lr(r) -> str:
        return r.lrs if several and pd.isna(r.lr) else num(r.lr, "{:g}")

    def gap(r) -> str:
        if not several:
            return num(getattr(r, "gap_closed", None), "{:.0%}")
        text = pm(r, "gap_closed", scale=100, digits=0)
        return text.replace(" ± ", "% ± ") + "%" if text else ""

    def epochs(r) -> str:
        if not several:
            return f"{r.epochs_trained} ({r.best_epoch})"
        return f"{num(r.epochs_trained, '{:g}')} ({num(r.best_epoch, '{:g}')})"

    conf = f"{100 * (1 - level):g}%"
    md = [f"# {task.upper()}: inoculation by fine-tuning", ""] + ([inoculation_seeds_note(seeds), ""] if several
                                                                 else [])
    md += ["| unit | outcome | label skew | why |", "|---|---|---|---|"]
    md += [f"| {r.label} | {r.outcome} | {r.label_skew}{'' if r.informative_3 else ' (uninformative for 3)'} | "
           f"{r.reason} |" for r in outcomes.itertuples(index=False)]
    md += ["", f"| unit | measure | dose | cases | lr | challenge ({conf} CI) | original ({conf} CI) | "
           "original in the measure | gap closed | p gain | p original | p gap left | epochs (best) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    md += [f"| {r.label} | {r.measure} | {r.dose} | {r.n_cases} | {lr(r)} | {ci(r, 'challenge')} | "
           f"{ci(r, 'original')} | "
           f"{pm(r, 'original_same') if several else num(getattr(r, 'original_same', None))} | {gap(r)} | "
           f"{num(getattr(r, 'p_gain', None), '{:.3g}')} | {num(getattr(r, 'p_original', None), '{:.3g}')} | "
           f"{num(getattr(r, 'p_gap', None), '{:.3g}')} | {epochs(r)} |"
           for r in table.itertuples(index=False)]
    md += ["", markdown_note(select_on, decide_by, level)] + (["", seeds_markdown_note(level)] if several else [])
    return "\n".join(md) + "\n"


def markdown_note(select_on: str, decide_by: str, level: float) -> str:
    """inoculation.md's closing paragraph: the outcomes, how they were decided, the gap closed, the intervals,
    the label skew and the learning-rate choice."""
    conf = f"{100 * (1 - level):g}%"
    how = (f"decided by tests at level {level:g} (unadjusted, last dose against dose 0): the challenge gain by an "
           "exact McNemar test on the unit's T_test cases (pooled over its functionalities), the original change by "
           "an exact McNemar test on the i.i.d. test examples (a paired randomization test when the i.i.d. score is "
           "not the mean of a 0/1 outcome), the gap by a one-sided Fisher exact test of the challenge pass rate "
           "against the original pass rate (the share of D_test examples the model gets right, each read as a "
           "one-input MFT case: the gap is measured in one measure, the pass rate); for an external challenge set, "
           "scored with the task's i.i.d. metric, the same tests on its examples (exact McNemar / Fisher for a 0/1 "
           "metric, paired randomization / permutation otherwise) against the original score in that metric"
           if decide_by == "tests" else
           "decided by the fixed point thresholds of inoculation.thresholds")
    return ("Outcome 1: the gap closes (a significant challenge gain, no significant gap left, no significant "
            "original drop); 2: nothing changes (no significant challenge gain); 3: the original score drops "
            "significantly (the challenge conflicts with the original data); between: a significant gain but a "
            "significant gap left; no gap: no significant gap at dose 0. Outcomes " + how + ". Gap closed: the "
            "challenge gain as a share of the dose-0 gap between the original and the challenge score in one measure. "
            f"Intervals: {conf} percentile bootstrap (cases resampled within functionality, examples resampled). "
            "A unit whose labelled cases share one label, or that has no labelled case (INV / DIR), is uninformative "
            "for outcome 3 (the seed's §3.3). Dose 0 is the IID model; lr picked on the challenge "
            f"{'test set (as the seed)' if select_on == 'test' else 'validation cases'}.")


def inoculation_seeds_note(seeds) -> str:
    """The line of inoculation.md that states the training seeds behind every cell."""
    seeds = [int(s) for s in seeds]
    return (f"{len(seeds)} training seeds ({', '.join(map(str, seeds))}): every score, gap closed and epoch count is "
            "the mean ± the standard deviation over the seeds (min–max and n_seeds in table.csv); each seed's "
            "learning rate is chosen per unit and dose as in a one-seed run (lr: each seed's, in seed order, where "
            "they differ).")


def seeds_markdown_note(level: float) -> str:
    """inoculation.md's paragraph on how the tests and intervals pool the training seeds."""
    conf = f"{100 * (1 - level):g}%"
    return ("Training seeds: the tests pool the seeds, stratified by seed — exact McNemar on the discordant cases "
            "(examples) summed over the seeds; paired randomization with each seed's examples swapped by that "
            "seed's own draws, the statistic the mean over seeds of the per-seed change and its null the mean of "
            "the seeds' draws, draw by draw; the gap by the one-sided exact conditional test of a common odds ratio "
            "over the seeds' 2×2 tables (exact Cochran–Mantel–Haenszel: each seed's margins fixed, the challenge "
            "passes summed over seeds; with one seed, Fisher's exact test), or for a non-0/1 metric a permutation "
            "test within each seed with the seeds' draws averaged. The outcomes are decided from the means and "
            f"these pooled p-values. Intervals: {conf} hierarchical percentile bootstrap (seeds resampled, then "
            "cases within functionality and examples within each picked seed).")


