"""Paired and unpaired tests of two systems' per-example outcomes, and their stratified versions
(docs/STATISTICS.md): the tests that compare one model with another on the same items (a fine-tuned
model against the model it started from) or one set of items with another, and the same tests
pooled over strata (training seeds) of the same items. Features and statistics are those of
:mod:`beluga.report.stats` (:func:`~beluga.report.stats.iid_features`, ``iid_statistic``).

- Paired, 0/1 outcomes: exact McNemar (:func:`mcnemar`; stratified: the discordant pairs summed over
  strata, :func:`pooled_mcnemar`).
- Paired, an i.i.d. metric that is not a mean over examples (F1, MCC, a mean of two metrics): paired
  approximate randomization, a paired permutation test over examples (:func:`paired_randomization`;
  stratified: each stratum swapped by its own draws, the statistic and its null the means over strata,
  :func:`pooled_randomization`); :func:`pooled_paired_metric_test` picks McNemar when the metric is
  the mean of a 0/1 outcome (:func:`binary_iid_metric`), else randomization.
- Unpaired, one-sided (a proportion / metric below another): Fisher's exact test (:func:`gap_test`;
  stratified: the exact conditional test of a common odds ratio, :func:`stratified_gap_test`) and a
  permutation test (:func:`unpaired_permutation`; stratified: :func:`pooled_set_gap_test`).
- Percentile-bootstrap intervals (%) of the suite score and the i.i.d. metric (:func:`score_intervals`,
  :func:`metric_interval`; over strata: the hierarchical bootstrap, :func:`seeds_score_intervals`,
  :func:`seeds_metric_interval`).

With one stratum every stratified function is its one-stratum function (it calls it: the same draws,
the same numbers).
"""

from __future__ import annotations

import numpy as np

from beluga.metrics import IID_METRICS
from beluga.report.bootstrap import bootstrap_ci, hierarchical_bootstrap_ci
from beluga.report.stats import (
    TIE_TOL,
    Outcomes,
    binomial_counts_test,
    binomial_test,
    combine_randomization,
    iid_statistic,
)

#: the seed of the hierarchical bootstrap's draws of strata (training seeds): a three-word key no
#: stratum's own draw seed (0, or [0, training seed]) uses
OUTER_SEED = [0, 0, 0]


def binary_iid_metric(task_type: str, iid_metric: str) -> bool:
    """The task's i.i.d. score is the mean of a 0/1 per-example outcome (accuracy, exact match; ``mean`` of a
    task whose one metric is accuracy: SENT, NLI, NLI_BINARY): the paired test of the original score is then
    exact McNemar. Otherwise (F1, MCC, a mean of two metrics) the statistic is not a sum over examples and
    the paired test is the paired randomization test (:func:`paired_randomization`)."""
    return (iid_metric == "mean" and IID_METRICS.get(task_type) == ("accuracy",)) or iid_metric in ("accuracy", "em")


def mcnemar(before, after) -> dict:
    """Exact McNemar test (two-sided exact binomial on the discordant pairs,
    :func:`~beluga.report.stats.binomial_test`) of paired 0/1 outcomes."""
    r = binomial_test(before, after)
    return {"p_value": r["p_value"], "n_discordant": r["n_discordant"], "gained": r["b_only"], "lost": r["a_only"]}


def mcnemar_counts(before, after) -> tuple[int, int]:
    """(lost, gained): the discordant pairs of paired 0/1 outcomes (right before only, right after only)."""
    b, a = np.asarray(before, dtype=bool), np.asarray(after, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"mcnemar_counts: paired arrays differ in shape ({b.shape} vs {a.shape})")
    return int((b & ~a).sum()), int((a & ~b).sum())


def pooled_mcnemar(pairs) -> dict:
    """Exact McNemar test stratified by training seed: ``pairs`` = [(before, after)] per seed; the discordant
    counts summed over the seeds, then the two-sided exact binomial test
    (:func:`~beluga.report.stats.binomial_counts_test`). One seed: :func:`mcnemar`."""
    pairs = list(pairs)
    if len(pairs) == 1:
        return mcnemar(*pairs[0])
    lost = gained = 0
    for before, after in pairs:
        lo, ga = mcnemar_counts(before, after)
        lost, gained = lost + lo, gained + ga
    r = binomial_counts_test(lost, gained)
    return {"p_value": r["p_value"], "n_discordant": r["n_discordant"], "gained": gained, "lost": lost}


def paired_randomization(base: np.ndarray, system: np.ndarray, task_type: str, iid_metric: str,
                         R: int = 10_000, seed: int = 0, return_null: bool = False) -> dict:
    """Paired approximate randomization of Δ = statistic(system) − statistic(base) on per-example
    i.i.d. features (m, k) (:func:`~beluga.report.stats.iid_features`): each draw swaps each
    example's two rows with probability 1/2. p = (#{|Δ'| ≥ |Δ|} + 1) / (R + 1), two-sided.
    ``return_null``: the R draws Δ' too (``null``; Δ itself for every draw when no example differs)."""
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


def pooled_randomization(pairs, task_type: str, iid_metric: str, R: int = 10_000, seeds=None) -> dict:
    """Paired randomization stratified by training seed: ``pairs`` = [(base features, system features)] per
    seed; each seed's examples swapped by that seed's own draws (``seeds[i]``, :func:`paired_randomization`),
    the statistic the mean over seeds of the per-seed Δ, its null the mean of the seeds' draws, draw by draw
    (:func:`~beluga.report.stats.combine_randomization`); two-sided. One seed: :func:`paired_randomization`."""
    pairs = list(pairs)
    seeds = [0] * len(pairs) if seeds is None else list(seeds)
    if len(pairs) == 1:
        (base, system), = pairs
        r = paired_randomization(base, system, task_type, iid_metric, R=R, seed=seeds[0])
        return {"delta": r["delta"], "p_value": r["p_value"], "n_discordant": r["n_discordant"]}
    parts = []
    for (base, system), sd in zip(pairs, seeds, strict=True):
        r = paired_randomization(base, system, task_type, iid_metric, R=R, seed=sd, return_null=True)
        parts.append({"delta": np.array([r["delta"]]), "delta_avg": r["delta"], "null": r["null"][:, None],
                      "null_avg": r["null"], "R": R, "n_units": r["n_discordant"]})
    c = combine_randomization(parts)
    return {"delta": c["delta_avg"], "p_value": float(c["p_avg"]), "n_discordant": c["n_units"]}


def paired_metric_test(base_feats: np.ndarray, feats: np.ndarray, base_hits: np.ndarray, hits: np.ndarray,
                       task_type: str, iid_metric: str, R: int = 10_000, seed: int = 0) -> tuple[float, str]:
    """(p, test name) of a change of the i.i.d. metric on the same examples: exact McNemar on the 0/1
    outcome when the metric is its mean (:func:`binary_iid_metric`), else paired randomization."""
    if binary_iid_metric(task_type, iid_metric):
        return mcnemar(base_hits, hits)["p_value"], "exact McNemar"
    return paired_randomization(base_feats, feats, task_type, iid_metric, R=R, seed=seed)["p_value"], \
        f"paired randomization (R = {R})"


def pooled_paired_metric_test(base_feats, feats, base_hits, hits, task_type: str, iid_metric: str,
                              R: int = 10_000, seeds=None) -> tuple[float, str]:
    """:func:`paired_metric_test` stratified by training seed (each argument: one array per seed): exact
    McNemar on the discordant pairs summed over seeds (:func:`pooled_mcnemar`) for a 0/1 metric, else
    :func:`pooled_randomization`. (p, test name). One seed: :func:`paired_metric_test`."""
    n = len(base_feats)
    if n == 1:
        return paired_metric_test(base_feats[0], feats[0], base_hits[0], hits[0], task_type, iid_metric, R=R,
                                  seed=0 if seeds is None else seeds[0])
    if binary_iid_metric(task_type, iid_metric):
        return pooled_mcnemar(zip(base_hits, hits, strict=True))["p_value"], \
            f"exact McNemar, pairs summed over {n} seeds"
    return pooled_randomization(zip(base_feats, feats, strict=True), task_type, iid_metric, R=R,
                                seeds=seeds)["p_value"], f"paired randomization (R = {R}), stratified over {n} seeds"


def gap_test(chal_passed: int, chal_n: int, orig_passed: int, orig_n: int) -> float:
    """One-sided Fisher exact test that the challenge pass proportion is below the original's
    (different items: unpaired); the p-value (1.0 when either side has no item)."""
    from scipy.stats import fisher_exact

    if chal_n == 0 or orig_n == 0:
        return 1.0
    table = [[chal_passed, chal_n - chal_passed], [orig_passed, orig_n - orig_passed]]
    return float(fisher_exact(table, alternative="less").pvalue)


def stratified_gap_test(counts) -> float:
    """:func:`gap_test` stratified by training seed: ``counts`` = [(challenge passed, challenge n, original
    passed, original n)] per seed. The one-sided exact conditional test of a common odds ratio of 1 across
    the seeds' 2×2 tables (the exact Cochran–Mantel–Haenszel test, as R's ``mantelhaen.test(exact = TRUE,
    alternative = "less")``): given each seed's margins its challenge passes are hypergeometric, the
    statistic is their sum over seeds, its null the convolution of the seeds' hypergeometric laws;
    p = P(T ≤ t). One seed: Fisher's exact test (:func:`gap_test`). A seed with no item on a side carries
    no information and is left out (1.0 when none is left)."""
    from scipy.stats import hypergeom

    counts = list(counts)
    if len(counts) == 1:
        return gap_test(*(int(x) for x in counts[0]))
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


def unpaired_permutation(chal: np.ndarray, orig: np.ndarray, task_type: str, iid_metric: str, R: int = 10_000,
                         seed: int = 0) -> float:
    """One-sided permutation test that the statistic on the challenge examples is below the one on the
    original examples (different examples, features (n, k) as :func:`~beluga.report.stats.iid_features`):
    p = (#{Δ' ≤ Δ} + 1) / (R + 1), Δ = statistic(challenge) − statistic(original)."""
    draws = unpaired_permutation_draws(chal, orig, task_type, iid_metric, R=R, seed=seed)
    if draws is None:
        return 1.0
    delta, null = draws
    return (int((null <= delta + TIE_TOL).sum()) + 1) / (R + 1)


def unpaired_permutation_draws(chal: np.ndarray, orig: np.ndarray, task_type: str, iid_metric: str,
                               R: int = 10_000, seed: int = 0) -> tuple[float, np.ndarray] | None:
    """(Δ, the R permutation draws Δ') of :func:`unpaired_permutation`; None when either side has no example."""
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


def set_gap_test(chal_feats: np.ndarray, chal_hits: np.ndarray, orig_feats: np.ndarray, orig_hits: np.ndarray,
                 task_type: str, iid_metric: str, R: int = 10_000, seed: int = 0) -> float:
    """One-sided test that a challenge set's i.i.d. metric is below the original test set's (different
    examples): Fisher exact on the 0/1 outcome when the metric is its mean, else a permutation test."""
    if binary_iid_metric(task_type, iid_metric):
        return gap_test(int(chal_hits.sum()), len(chal_hits), int(orig_hits.sum()), len(orig_hits))
    return unpaired_permutation(chal_feats, orig_feats, task_type, iid_metric, R=R, seed=seed)


def pooled_set_gap_test(chal_feats, chal_hits, orig_feats, orig_hits, task_type: str, iid_metric: str,
                        R: int = 10_000, seeds=None) -> float:
    """:func:`set_gap_test` stratified by training seed (each argument: one array per seed): the exact
    stratified test of :func:`stratified_gap_test` for a 0/1 metric, else a permutation test within each
    seed (each seed's own draws, ``seeds[i]``), the statistic the mean over seeds of the per-seed Δ, its null
    the mean of the seeds' draws, draw by draw; one-sided, p = (#{Δ' ≤ Δ} + 1) / (R + 1). One seed:
    :func:`set_gap_test`."""
    if len(chal_feats) == 1:
        return set_gap_test(chal_feats[0], chal_hits[0], orig_feats[0], orig_hits[0], task_type, iid_metric, R=R,
                            seed=0 if seeds is None else seeds[0])
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


def score_intervals(passed: np.ndarray, scored: np.ndarray, fi: np.ndarray, n_func: int, iid: np.ndarray,
                    task_type: str, iid_metric: str, R: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Percentile-bootstrap intervals (%) of the challenge score (mean pass rate over the unit's
    functionalities; cases resampled within functionality) and of the original score (the task's
    i.i.d. metric; examples resampled): :func:`~beluga.report.bootstrap.bootstrap_ci`."""
    o = Outcomes(passed.astype(float) * scored, scored.astype(float), iid)
    ci = bootstrap_ci(o, fi, n_func, task_type, iid_metric, R=R, seed=seed, level=level)
    return {"challenge": 100 * ci["s_T"][0], "original": 100 * ci["s_iid"][0]}


def seeds_score_intervals(items, fi: np.ndarray, n_func: int, task_type: str, iid_metric: str, R: int = 1000,
                          seeds=None, outer_seed=OUTER_SEED, level: float = 0.95) -> dict:
    """:func:`score_intervals` of the mean over training seeds: ``items`` = [(passed, scored, i.i.d.
    features)] per seed (the same cases and examples); a hierarchical percentile bootstrap, seeds resampled,
    then cases within functionality and examples within each picked seed
    (:func:`~beluga.report.bootstrap.hierarchical_bootstrap_ci`; ``seeds``: each seed's draw seed). One seed:
    :func:`score_intervals`."""
    items = list(items)
    if len(items) == 1:
        (passed, scored, iid), = items
        return score_intervals(np.asarray(passed), np.asarray(scored), fi, n_func, iid, task_type, iid_metric, R=R,
                               seed=0 if seeds is None else seeds[0], level=level)
    outs = [Outcomes(np.asarray(p).astype(float) * np.asarray(s), np.asarray(s).astype(float), f)
            for p, s, f in items]
    ci = hierarchical_bootstrap_ci(outs, fi, n_func, task_type, iid_metric, R=R, seeds=seeds,
                                   outer_seed=outer_seed, level=level)
    return {"challenge": 100 * ci["s_T"][0], "original": 100 * ci["s_iid"][0]}


def metric_interval(feats: np.ndarray, task_type: str, iid_metric: str, R: int = 1000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float]:
    """Percentile-bootstrap interval (%) of the i.i.d. metric on per-example features (a challenge set's)."""
    o = Outcomes(np.zeros(0), np.zeros(0), feats)
    lo, hi = bootstrap_ci(o, np.zeros(0, dtype=np.int64), 1, task_type, iid_metric, R=R, seed=seed,
                          level=level)["s_iid"][0]
    return 100 * lo, 100 * hi


def seeds_metric_interval(feats, task_type: str, iid_metric: str, R: int = 1000, seeds=None,
                          outer_seed=OUTER_SEED, level: float = 0.95) -> tuple[float, float]:
    """:func:`metric_interval` of the mean over training seeds (``feats``: one (n, k) array per seed, the
    same examples): hierarchical percentile bootstrap, seeds then examples. One seed: :func:`metric_interval`."""
    feats = list(feats)
    if len(feats) == 1:
        return metric_interval(feats[0], task_type, iid_metric, R=R, seed=0 if seeds is None else seeds[0],
                               level=level)
    outs = [Outcomes(np.zeros(0), np.zeros(0), f) for f in feats]
    lo, hi = hierarchical_bootstrap_ci(outs, np.zeros(0, dtype=np.int64), 1, task_type, iid_metric, R=R,
                                       seeds=seeds, outer_seed=outer_seed, level=level)["s_iid"][0]
    return 100 * lo, 100 * hi
