"""Percentile bootstrap intervals of the Table 3 scores (docs/PROCEDURE.md, §6; the statistics of
:mod:`beluga.report.stats`, on its aligned per-unit :class:`~beluga.report.stats.Outcomes`).

- :func:`bootstrap_ci`: intervals of s_T, s_iid and G of the mean over N ≥ 1 training seeds: seeds resampled,
  then each picked seed's units (cases within functionality, i.i.d. examples); one seed: its units resampled.
- :func:`bootstrap_draws`: one training seed's draws.

Resampling count weights are drawn as multinomials over the distinct outcome rows of each functionality (and of
the i.i.d. examples), in chunks of draws of bounded size.
"""

from __future__ import annotations

import numpy as np

from beluga.report.stats import (
    CHUNK_ELEMENTS,
    IID_FEATURES,
    MAX_CHUNK_DRAWS,
    Outcomes,
    check_task_type,
    func_index_of,
    harmonic_mean,
    iid_statistic,
    n_draws,
    suite_score,
)


class _Resampler:
    """Resampling count weights over n units with replacement (one stratum). With 0 / 1 rows (suite outcomes, and
    i.i.d. features of single models) the weights are drawn as a multinomial over the distinct rows when there are
    few (same distribution as resampling the units, far fewer draws), else by drawing n unit indices."""

    def __init__(self, rows: np.ndarray):
        self.n, c = rows.shape
        self.by_type = False
        if self.n and c <= 62 and np.all((rows == 0) | (rows == 1)):
            codes = rows.astype(np.int64) @ (np.int64(1) << np.arange(c, dtype=np.int64))
            uniq, first, freq = np.unique(codes, return_index=True, return_counts=True)
            self.by_type = 8 * len(uniq) <= self.n
            if self.by_type:
                self.values, self.pvals = rows[first], freq / self.n
        if not self.by_type:
            self.values = rows

    def sums(self, rng: np.random.Generator, rc: int) -> np.ndarray:
        """(rc, c) sums of the rows over rc resamples."""
        if self.n == 0:
            return np.zeros((rc, self.values.shape[1]))
        if self.by_type:
            w = rng.multinomial(self.n, self.pvals, size=rc).astype(np.float64)
        else:
            idx = rng.integers(0, self.n, size=(rc, self.n)) + (np.arange(rc, dtype=np.int64) * self.n)[:, None]
            w = np.bincount(idx.ravel(), minlength=rc * self.n).reshape(rc, self.n).astype(np.float64)
        return w @ self.values


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"field 'level': {level!r} must lie in (0, 1)")


def _percentile_intervals(s_t: np.ndarray, s_iid: np.ndarray, g: np.ndarray, level: float) -> dict:
    """Percentile intervals of bootstrap draws (R, S) of s_T, s_iid and G, and of the mean G over scenarios;
    draws with an undefined score (NaN) are left out of its quantiles."""
    q = [(1 - level) / 2, (1 + level) / 2]

    def interval(x: np.ndarray) -> np.ndarray:
        if x.ndim == 2:
            return np.stack([interval(col) for col in x.T])
        ok = ~np.isnan(x)
        return np.quantile(x[ok], q) if ok.any() else np.full(2, np.nan)

    return {"s_T": interval(s_t), "s_iid": interval(s_iid), "G": interval(g), "G_avg": interval(g.mean(axis=1))}


def bootstrap_ci(outcomes: list[Outcomes], func_index, n_func: int, task_type: str, iid_metric: str = "mean",
                 R: int = 1000, seeds=None, outer_seed=0, level: float = 0.95) -> dict:
    """Percentile bootstrap intervals {"s_T": (S, 2), "s_iid": (S, 2), "G": (S, 2), "G_avg": (2,)} (lower,
    upper) of the mean over training seeds, resampling seeds, then units (docs/STATISTICS.md).

    ``outcomes``: one :class:`Outcomes` per training seed (the same units). A draw picks n seeds with
    replacement out of the n (``outer_seed`` seeds that generator) and, for each pick, an independent
    resample of that seed's units (:func:`bootstrap_draws`: the cases with replacement within each
    functionality, the i.i.d. examples with replacement, the same resample for every scenario; ``seeds[i]``
    seeds seed i's resamples, 0 by default); its s_T, s_iid and G are the means over the n picks of the
    picks' values (G per pick, then averaged, as the tables average G over seeds). One seed: every draw
    picks it, so the intervals are those of its units' resamples. Draws with an undefined score (NaN) are
    left out of its quantiles."""
    n = len(outcomes)
    if n == 0:
        raise ValueError("bootstrap_ci: no training seed")
    seeds = [0] * n if seeds is None else list(seeds)
    if len(seeds) != n:
        raise ValueError(f"bootstrap_ci: {len(seeds)} draw seeds for {n} training seeds")
    _check_level(level)
    R = n_draws(R)
    draws = [bootstrap_draws(o, func_index, n_func, task_type, iid_metric, R=R * n, seed=sd)
             for o, sd in zip(outcomes, seeds)]
    s_t = np.stack([d[0] for d in draws])     # (n seeds, R n, S)
    s_iid = np.stack([d[1] for d in draws])
    g = harmonic_mean(s_t, s_iid)
    pick = np.random.default_rng(outer_seed).integers(0, n, size=(R, n))
    rep = np.arange(R)[:, None] * n + np.arange(n)[None, :]       # each pick its own unit resample
    return _percentile_intervals(s_t[pick, rep].mean(axis=1), s_iid[pick, rep].mean(axis=1),
                                 g[pick, rep].mean(axis=1), level)


def bootstrap_draws(o: Outcomes, func_index, n_func: int, task_type: str, iid_metric: str = "mean",
                    R: int = 1000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One training seed's R bootstrap draws (R, S) of s_T and s_iid: each resamples the cases with
    replacement within each functionality and the i.i.d. examples with replacement, the same resample for
    every scenario."""
    check_task_type(task_type, iid_metric)
    R = n_draws(R)
    s, n = o.passed.shape
    m, k = o.iid.shape[1:]
    if k != len(IID_FEATURES[task_type]):
        raise ValueError(f"bootstrap: i.i.d. features have {k} columns, {task_type} needs "
                         f"{len(IID_FEATURES[task_type])}")
    fi = func_index_of(func_index, n_func, n)
    rows = np.concatenate([o.passed, o.scored]).T  # (n, 2S)
    strata = [(f, _Resampler(rows[fi == f])) for f in np.flatnonzero(np.bincount(fi, minlength=n_func))]
    iid = _Resampler(o.iid.transpose(1, 0, 2).reshape(m, s * k))
    rng = np.random.default_rng(seed)
    step = int(max(1, min(MAX_CHUNK_DRAWS, CHUNK_ELEMENTS // max(n + m, 1))))
    s_t, s_iid = np.empty((R, s)), np.empty((R, s))
    for start in range(0, R, step):
        rc = min(step, R - start)
        sums = np.zeros((rc, 2 * s, n_func))
        for f, res in strata:
            sums[:, :, f] = res.sums(rng, rc)
        s_t[start:start + rc] = suite_score(sums[:, :s], sums[:, s:])
        with np.errstate(invalid="ignore", divide="ignore"):
            feats = iid.sums(rng, rc).reshape(rc, s, k) / m
        s_iid[start:start + rc] = iid_statistic(feats, task_type, iid_metric)
    return s_t, s_iid
