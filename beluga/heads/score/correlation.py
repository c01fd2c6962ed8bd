"""i.i.d. metrics of a regression head (SIMILARITY: STS-B / SICK, as GLUE and
GLUE-X report them) and the paired test of their difference.

Metric names (for the task's ``iid_metric``): ``pearson`` (Pearson's r of the
predicted and gold scores) and ``spearman`` (Spearman's rho: Pearson's r of
their ranks, ties given their mean rank, as ``scipy.stats.spearmanr``). Both
are undefined (NaN) when either side is constant or there are fewer than two
examples.

A correlation is not a mean of per-example outcomes, so the paired test of two
systems on the same examples is a paired bootstrap over examples
(:func:`paired_bootstrap`): the examples are resampled with replacement, both
systems' correlations computed on each resample, and the distribution of
their difference gives a percentile interval and a two-sided p-value, from a
seeded generator (the same inputs and seed give the same numbers).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: the regression head's i.i.d. metric names
REGRESSION_METRICS = ("pearson", "spearman")
#: examples x resamples drawn at once by :func:`paired_bootstrap` (memory, not the result)
CHUNK_CELLS = 2_000_000


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of ``x`` with the same row of ``y`` (2-D); NaN for a constant row."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    num = (xc * yc).sum(axis=-1)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return np.clip(r, -1.0, 1.0)


def _rowwise_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata  # scipy (~1 s to import) only where a Spearman is computed

    return _rowwise_pearson(rankdata(x, axis=-1), rankdata(y, axis=-1))


_ROWWISE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pearson": _rowwise_pearson, "spearman": _rowwise_spearman}


def _pair(pred, gold, what: str = "scores") -> tuple[np.ndarray, np.ndarray]:
    p, g = np.asarray(pred, dtype=np.float64).ravel(), np.asarray(gold, dtype=np.float64).ravel()
    if p.shape != g.shape:
        raise ValueError(f"{what}: {p.size} predictions for {g.size} gold scores")
    if not (np.isfinite(p).all() and np.isfinite(g).all()):
        raise ValueError(f"{what}: scores must be finite numbers")
    return p, g


def correlation(metric: str, pred, gold) -> float:
    """The metric (``pearson`` / ``spearman``) of predicted against gold scores; NaN when undefined."""
    if metric not in _ROWWISE:
        raise ValueError(f"unknown regression metric {metric!r} (known: {', '.join(REGRESSION_METRICS)})")
    p, g = _pair(pred, gold)
    if p.size < 2:
        return float("nan")
    return float(_ROWWISE[metric](p[None, :], g[None, :])[0])


def pearson(pred, gold) -> float:
    """Pearson's r of predicted and gold scores."""
    return correlation("pearson", pred, gold)


def spearman(pred, gold) -> float:
    """Spearman's rho of predicted and gold scores (mean ranks for ties)."""
    return correlation("spearman", pred, gold)


def paired_bootstrap(gold, pred_a, pred_b, metric: str = "pearson", R: int = 10_000, seed: int = 0,
                     level: float = 95.0) -> dict:
    """Paired bootstrap over examples of ``metric(pred_b) - metric(pred_a)``
    (system B against system A, both scored on the same examples' ``gold``).

    Returns ``delta`` (the observed difference), ``ci_low`` / ``ci_high`` (the
    percentile interval of the resampled differences at ``level`` %),
    ``p_value`` (two-sided: twice the smaller share of resampled differences
    on either side of 0, each counted with the observed one, (1 + k) / (1 +
    R), capped at 1: identical systems get 1), ``R`` (resamples drawn) and
    ``R_used`` (those where both correlations are defined: a resample of
    constant scores is dropped). Draws come from
    ``numpy.random.default_rng(seed)``."""
    if metric not in _ROWWISE:
        raise ValueError(f"unknown regression metric {metric!r} (known: {', '.join(REGRESSION_METRICS)})")
    if int(R) < 1:
        raise ValueError(f"paired_bootstrap: R must be >= 1, got {R}")
    if not 0 < level < 100:
        raise ValueError(f"paired_bootstrap: level must be in (0, 100), got {level}")
    a, g = _pair(pred_a, gold, "system A")
    b, _ = _pair(pred_b, gold, "system B")
    n = g.size
    delta = correlation(metric, b, g) - correlation(metric, a, g)
    if n < 2 or not np.isfinite(delta):
        raise ValueError(f"paired_bootstrap: {metric} is undefined on these {n} examples (constant scores or "
                         "fewer than two examples)")
    fn = _ROWWISE[metric]
    rng = np.random.default_rng(seed)
    draws = []
    chunk = max(1, CHUNK_CELLS // n)
    for start in range(0, int(R), chunk):
        idx = rng.integers(0, n, size=(min(chunk, int(R) - start), n))
        draws.append(fn(b[idx], g[idx]) - fn(a[idx], g[idx]))
    d = np.concatenate(draws)
    d = d[np.isfinite(d)]
    if not d.size:
        raise ValueError(f"paired_bootstrap: {metric} is undefined on every resample")
    below, above = int((d <= 0).sum()), int((d >= 0).sum())
    p = min(1.0, 2 * (1 + min(below, above)) / (1 + d.size))
    alpha = (100.0 - level) / 2
    lo, hi = np.percentile(d, [alpha, 100.0 - alpha])
    return {"metric": metric, "delta": float(delta), "ci_low": float(lo), "ci_high": float(hi), "p_value": p,
            "R": int(R), "R_used": int(d.size), "seed": seed, "level": level}
