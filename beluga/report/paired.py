"""Paired and unpaired tests of two systems' per-example outcomes, and percentile-bootstrap intervals, over
N ≥ 1 training seeds (docs/STATISTICS.md): the tests that compare one model with another on the same items (a
fine-tuned model against the model it started from) or one set of items with another. Every function takes
one item per training seed (a list; the seeds are strata of the same items) and is stratified by seed; one
seed (N = 1) is the plain test — the same draws, the same numbers. Features and statistics are those of
:mod:`beluga.report.stats` (:func:`~beluga.report.stats.iid_features`, ``iid_statistic``).

- Paired, 0/1 outcomes: exact McNemar on the discordant pairs summed over the seeds (:func:`mcnemar`).
- Paired, an i.i.d. metric that is not a mean over examples (F1, MCC, a mean of two metrics): paired
  approximate randomization, each seed's examples swapped by its own draws, the statistic and its null the
  means over seeds (:func:`paired_randomization`); :func:`paired_metric_test` picks McNemar when the metric
  is the mean of a 0/1 outcome (:func:`binary_iid_metric`), else randomization.
- Unpaired, one-sided (a proportion / metric below another): the exact conditional test of a common odds
  ratio over the seeds' 2×2 tables, Fisher's exact test for one (:func:`gap_test`), and a permutation test
  within each seed (:func:`unpaired_permutation`); :func:`set_gap_test` picks between them.
- Percentile-bootstrap intervals (%) of the suite score and the i.i.d. metric (:func:`score_intervals`,
  :func:`metric_interval`): the hierarchical bootstrap, seeds then units
  (:func:`~beluga.report.bootstrap.bootstrap_ci`); of a gap between two sets of items, the original score
  minus the challenge score (:func:`suite_gap_interval`, :func:`set_gap_interval`), each side resampled on
  its own.
"""

from __future__ import annotations

import numpy as np

from beluga.core.seeds import seeds_legend
from beluga.report.bootstrap import bootstrap_ci, bootstrap_draws
from beluga.report.stats import (
    TIE_TOL,
    Outcomes,
    binomial_counts_test,
    iid_statistic,
    n_draws,
)
from beluga.score.metrics import IID_METRICS

#: the seed of the hierarchical bootstrap's draws of strata (training seeds): a three-word key no
#: stratum's own draw seed (0, or [0, training seed]) uses
OUTER_SEED = [0, 0, 0]


def binary_iid_metric(task_type: str, iid_metric: str) -> bool:
    """The task's i.i.d. score is the mean of a 0/1 per-example outcome (accuracy, exact match; ``mean`` of a
    task whose one metric is accuracy: SENT, NLI, NLI_BINARY): the paired test of the original score is then
    exact McNemar. Otherwise (F1, MCC, a mean of two metrics) the statistic is not a sum over examples and
    the paired test is the paired randomization test (:func:`paired_randomization`)."""
    return (iid_metric == "mean" and IID_METRICS.get(task_type) == ("accuracy",)) or iid_metric in ("accuracy", "em")


def _strata(items) -> list:
    """The per-seed items as a list; ValueError when there is none."""
    items = list(items)
    if not items:
        raise ValueError("paired: no training seed")
    return items


def _draw_seeds(seeds, n: int) -> list:
    """Each training seed's draw seed (default 0 for each), one per seed."""
    seeds = [0] * n if seeds is None else list(seeds)
    if len(seeds) != n:
        raise ValueError(f"paired: {len(seeds)} draw seeds for {n} training seeds")
    return seeds


def mcnemar_counts(before, after) -> tuple[int, int]:
    """(lost, gained): the discordant pairs of paired 0/1 outcomes (right before only, right after only)."""
    b, a = np.asarray(before, dtype=bool), np.asarray(after, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"mcnemar_counts: paired arrays differ in shape ({b.shape} vs {a.shape})")
    return int((b & ~a).sum()), int((a & ~b).sum())


def mcnemar(pairs) -> dict:
    """Exact McNemar test of paired 0/1 outcomes, stratified by training seed: ``pairs`` = [(before, after)]
    per seed; the discordant pairs summed over the seeds, then the two-sided exact binomial test
    (:func:`~beluga.report.stats.binomial_counts_test`; one seed: its own discordant pairs)."""
    lost = gained = 0
    for before, after in _strata(pairs):
        lo, ga = mcnemar_counts(before, after)
        lost, gained = lost + lo, gained + ga
    r = binomial_counts_test(lost, gained)
    return {"p_value": r["p_value"], "n_discordant": r["n_discordant"], "gained": gained, "lost": lost}


def paired_draws(base: np.ndarray, system: np.ndarray, task_type: str, iid_metric: str, R: int = 10_000,
                 seed=0) -> tuple[float, np.ndarray, int]:
    """One training seed's paired approximate randomization draws of Δ = statistic(system) −
    statistic(base) on per-example i.i.d. features (m, k) (:func:`~beluga.report.stats.iid_features`): each
    draw swaps each example's two rows with probability 1/2. (Δ, the R draws Δ', the examples that differ);
    every draw is Δ when no example differs."""
    base, system = np.asarray(base, dtype=np.float64), np.asarray(system, dtype=np.float64)
    m = base.shape[0]
    delta = float(iid_statistic(system.mean(axis=0), task_type, iid_metric) -
                  iid_statistic(base.mean(axis=0), task_type, iid_metric))
    diff = system - base
    moving = np.flatnonzero(np.any(diff != 0, axis=1))
    if not len(moving):
        return delta, np.full(R, delta), 0
    rng = np.random.default_rng(seed)
    total_b, total_s, d = base.sum(axis=0), system.sum(axis=0), diff[moving]
    step = max(1, min(R, (1 << 22) // len(moving)))
    nulls = []
    for start in range(0, R, step):
        swap = rng.integers(0, 2, size=(min(step, R - start), len(moving))).astype(np.float64)
        s_sum = total_s - swap @ d          # swapped examples give the system the base's row
        b_sum = total_b + swap @ d
        nulls.append(iid_statistic(s_sum / m, task_type, iid_metric) - iid_statistic(b_sum / m, task_type, iid_metric))
    return delta, np.concatenate(nulls), int(len(moving))


def paired_randomization(pairs, task_type: str, iid_metric: str, R: int = 10_000, seeds=None) -> dict:
    """Paired approximate randomization stratified by training seed: ``pairs`` = [(base features, system
    features)] per seed; each seed's examples swapped by that seed's own draws (``seeds[i]``,
    :func:`paired_draws`), the statistic Δ the mean over seeds of the per-seed Δ, its null the mean of the
    seeds' draws, draw by draw. p = (#{|Δ'| ≥ |Δ| − 10⁻¹²} + 1) / (R + 1), two-sided; NaN when Δ is not
    defined. {"delta", "p_value", "n_discordant" (the differing examples, summed over seeds)}."""
    pairs = _strata(pairs)
    seeds = _draw_seeds(seeds, len(pairs))
    draws = [paired_draws(base, system, task_type, iid_metric, R=R, seed=sd)
             for (base, system), sd in zip(pairs, seeds, strict=True)]
    delta = float(np.mean([d[0] for d in draws]))
    null = np.mean([d[1] for d in draws], axis=0)
    count = int((np.abs(null) >= abs(delta) - TIE_TOL).sum())
    p = float("nan") if np.isnan(delta) else (count + 1) / (R + 1)
    return {"delta": delta, "p_value": p, "n_discordant": sum(d[2] for d in draws)}


def paired_metric_test(base_feats, feats, base_hits, hits, task_type: str, iid_metric: str, R: int = 10_000,
                       seeds=None) -> tuple[float, str]:
    """(p, test name) of a change of the i.i.d. metric on the same examples, stratified by training seed
    (each argument: one array per seed): exact McNemar on the 0/1 outcome when the metric is its mean
    (:func:`binary_iid_metric`; :func:`mcnemar`), else paired randomization (:func:`paired_randomization`)."""
    n = len(base_feats)
    over = seeds_legend(n, f", pairs summed over {n} seeds")
    if binary_iid_metric(task_type, iid_metric):
        return mcnemar(zip(base_hits, hits, strict=True))["p_value"], f"exact McNemar{over}"
    return paired_randomization(zip(base_feats, feats, strict=True), task_type, iid_metric, R=R,
                                seeds=seeds)["p_value"], \
        f"paired randomization (R = {R}){seeds_legend(n, f', stratified over {n} seeds')}"


def gap_test(counts) -> float:
    """One-sided test that the challenge pass proportion is below the original's (different items:
    unpaired), stratified by training seed: ``counts`` = [(challenge passed, challenge n, original passed,
    original n)] per seed. The exact conditional test of a common odds ratio of 1 across the seeds' 2×2
    tables (the exact Cochran–Mantel–Haenszel test, as R's ``mantelhaen.test(exact = TRUE, alternative =
    "less")``): given each seed's margins its challenge passes are hypergeometric, the statistic is their
    sum over seeds, its null the convolution of the seeds' hypergeometric laws; p = P(T ≤ t). With one
    table that carries information this is Fisher's exact test (scipy's ``fisher_exact``, the same
    number). A seed with no item on a side carries no information and is left out (1.0 when none is left)."""
    from scipy.stats import fisher_exact, hypergeom

    counts = [tuple(int(x) for x in c) for c in _strata(counts)]
    tables = [c for c in counts if c[1] and c[3]]
    if not tables:
        return 1.0
    if len(tables) == 1:    # one hypergeometric law: its tail, as scipy's Fisher test computes it
        k_c, n_c, k_o, n_o = tables[0]
        return float(fisher_exact([[k_c, n_c - k_c], [k_o, n_o - k_o]], alternative="less").pvalue)
    dist, t, low = np.ones(1), 0, 0
    for k_c, n_c, k_o, n_o in tables:
        total, passed = n_c + n_o, k_c + k_o
        lo, hi = max(0, n_c - (total - passed)), min(passed, n_c)
        dist = np.convolve(dist, hypergeom.pmf(np.arange(lo, hi + 1), total, passed, n_c))
        t, low = t + k_c, low + lo
    return float(min(1.0, dist[:t - low + 1].sum()))


def unpaired_permutation(chals, origs, task_type: str, iid_metric: str, R: int = 10_000, seeds=None) -> float:
    """One-sided permutation test that the statistic on the challenge examples is below the one on the
    original examples (different examples, features (n, k) as :func:`~beluga.report.stats.iid_features`),
    stratified by training seed (``chals`` / ``origs``: one array per seed): a permutation within each seed
    (``seeds[i]``: its draws, :func:`unpaired_permutation_draws`), the statistic Δ the mean over seeds of
    the per-seed Δ = statistic(challenge) − statistic(original), its null the mean of the seeds' draws, draw
    by draw; p = (#{Δ' ≤ Δ} + 1) / (R + 1). A seed with no example on a side is left out (1.0 when none is
    left)."""
    chals, origs = _strata(chals), list(origs)
    seeds = _draw_seeds(seeds, len(chals))
    draws = [unpaired_permutation_draws(c, o, task_type, iid_metric, R=R, seed=sd)
             for c, o, sd in zip(chals, origs, seeds, strict=True)]
    draws = [d for d in draws if d is not None]
    if not draws:
        return 1.0
    delta = float(np.mean([d[0] for d in draws]))
    null = np.mean([d[1] for d in draws], axis=0)
    return (int((null <= delta + TIE_TOL).sum()) + 1) / (R + 1)


def unpaired_permutation_draws(chal: np.ndarray, orig: np.ndarray, task_type: str, iid_metric: str,
                               R: int = 10_000, seed=0) -> tuple[float, np.ndarray] | None:
    """One training seed's (Δ, the R permutation draws Δ') of :func:`unpaired_permutation`; None when either
    side has no example."""
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


def set_gap_test(chal_feats, chal_hits, orig_feats, orig_hits, task_type: str, iid_metric: str, R: int = 10_000,
                 seeds=None) -> float:
    """One-sided test that a challenge set's i.i.d. metric is below the original test set's (different
    examples), stratified by training seed (each argument: one array per seed): :func:`gap_test` on the 0/1
    outcome when the metric is its mean, else :func:`unpaired_permutation`."""
    if binary_iid_metric(task_type, iid_metric):
        return gap_test([(int(np.sum(c)), len(c), int(np.sum(o)), len(o))
                         for c, o in zip(chal_hits, orig_hits, strict=True)])
    return unpaired_permutation(chal_feats, orig_feats, task_type, iid_metric, R=R, seeds=seeds)


def score_intervals(items, fi: np.ndarray, n_func: int, task_type: str, iid_metric: str, R: int = 1000,
                    seeds=None, outer_seed=OUTER_SEED, level: float = 0.95) -> dict:
    """Percentile-bootstrap intervals (%) of the mean over training seeds of the challenge score (mean pass
    rate over the unit's functionalities) and of the original score (the task's i.i.d. metric): ``items`` =
    [(passed, scored, i.i.d. features)] per seed (the same cases and examples); the hierarchical bootstrap,
    seeds resampled, then cases within functionality and examples within each picked seed
    (:func:`~beluga.report.bootstrap.bootstrap_ci`; ``seeds``: each seed's draw seed; one seed: its cases
    and examples resampled)."""
    outs = [Outcomes(np.asarray(p).astype(float) * np.asarray(s), np.asarray(s).astype(float), f)
            for p, s, f in items]
    ci = bootstrap_ci(outs, fi, n_func, task_type, iid_metric, R=R, seeds=seeds, outer_seed=outer_seed,
                      level=level)
    return {"challenge": 100 * ci["s_T"][0], "original": 100 * ci["s_iid"][0]}


def metric_interval(feats, task_type: str, iid_metric: str, R: int = 1000, seeds=None, outer_seed=OUTER_SEED,
                    level: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap interval (%) of the mean over training seeds of the i.i.d. metric on per-example
    features (a challenge set's; ``feats``: one (n, k) array per seed, the same examples): the hierarchical
    bootstrap, seeds then examples (one seed: its examples resampled)."""
    outs = [Outcomes(np.zeros(0), np.zeros(0), f) for f in feats]
    lo, hi = bootstrap_ci(outs, np.zeros(0, dtype=np.int64), 1, task_type, iid_metric, R=R, seeds=seeds,
                          outer_seed=outer_seed, level=level)["s_iid"][0]
    return 100 * lo, 100 * hi


def gap_draw_seed(seed) -> list[int]:
    """The draw seed of the original side of a gap interval, from a training seed's draw seed (0, or [0,
    training seed]): the seed's words followed by 0, 1 — a key no draw seed of the scores uses, so the two
    sides of the gap are resampled independently (they are different items)."""
    return [int(x) for x in np.ravel(seed)] + [0, 1]


def _gap_interval(chal_draws: list, orig_draws: list, R: int, outer_seed, level: float) -> tuple[float, float]:
    """Percentile interval (pp) of the mean over training seeds of original − challenge from each seed's R n
    draws of both sides (fractions): the hierarchical bootstrap of :func:`~beluga.report.bootstrap.bootstrap_ci`
    (n seeds picked with replacement by ``outer_seed``, each pick its own draw); draws with an undefined side
    (NaN) are left out; (NaN, NaN) when none is left."""
    if not 0 < level < 1:
        raise ValueError(f"field 'level': {level!r} must lie in (0, 1)")
    n = len(chal_draws)
    chal, orig = np.stack(chal_draws), np.stack(orig_draws)         # (n seeds, R n)
    pick = np.random.default_rng(outer_seed).integers(0, n, size=(R, n))
    rep = np.arange(R)[:, None] * n + np.arange(n)[None, :]
    gap = (orig[pick, rep] - chal[pick, rep]).mean(axis=1)
    gap = gap[~np.isnan(gap)]
    if not len(gap):
        return float("nan"), float("nan")
    lo, hi = np.quantile(gap, [(1 - level) / 2, (1 + level) / 2])
    return 100 * float(lo), 100 * float(hi)


def suite_gap_interval(items, fi: np.ndarray, n_func: int, task_type: str, iid_metric: str, R: int = 1000,
                       seeds=None, outer_seed=OUTER_SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap interval (pp) of a suite unit's gap, the original pass rate (the share of 0/1
    ``hits`` of the i.i.d. test examples) minus the challenge score (mean pass rate over the unit's
    functionalities), the mean over training seeds: ``items`` = [(passed, scored, i.i.d. features, hits)]
    per seed. Per seed the challenge side is resampled as :func:`score_intervals` resamples it (cases within
    functionality, the same draws: ``seeds[i]``), the original side on its own (a resampled 0/1 mean is
    binomial: k of m hits give Binomial(m, k / m) / m; draws seeded by :func:`gap_draw_seed`); then seeds
    as :func:`_gap_interval`. One seed: its items resampled."""
    items = _strata(items)
    n, R = len(items), n_draws(R)
    chal, orig = [], []
    for (passed, scored, feats, hits), sd in zip(items, _draw_seeds(seeds, len(items)), strict=True):
        scored = np.asarray(scored).astype(float)
        o = Outcomes(np.asarray(passed).astype(float) * scored, scored, feats)
        chal.append(bootstrap_draws(o, fi, n_func, task_type, iid_metric, R=R * n, seed=sd)[0][:, 0])
        hits = np.asarray(hits, dtype=bool)
        m = len(hits)
        orig.append(np.random.default_rng(gap_draw_seed(sd)).binomial(m, hits.mean(), size=R * n) / m if m else
                    np.full(R * n, np.nan))
    return _gap_interval(chal, orig, R, outer_seed, level)


def set_gap_interval(chal_feats, orig_feats, task_type: str, iid_metric: str, R: int = 1000, seeds=None,
                     outer_seed=OUTER_SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap interval (pp) of a challenge set's gap, the i.i.d. metric on the original test
    examples minus the one on the challenge set's examples, the mean over training seeds (each argument: one
    (n, k) feature array per seed). Per seed the challenge side is resampled as :func:`metric_interval`
    resamples it (the same draws: ``seeds[i]``), the original side on its own (:func:`gap_draw_seed`); then
    seeds as :func:`_gap_interval`."""
    chal_feats, orig_feats = _strata(chal_feats), list(orig_feats)
    n, R = len(chal_feats), n_draws(R)
    none = np.zeros(0, dtype=np.int64)

    def draws(feats, seed) -> np.ndarray:
        return bootstrap_draws(Outcomes(np.zeros(0), np.zeros(0), feats), none, 1, task_type, iid_metric,
                               R=R * n, seed=seed)[1][:, 0]

    chal, orig = [], []
    for c, o, sd in zip(chal_feats, orig_feats, _draw_seeds(seeds, n), strict=True):
        chal.append(draws(c, sd))
        orig.append(draws(o, gap_draw_seed(sd)))
    return _gap_interval(chal, orig, R, outer_seed, level)
