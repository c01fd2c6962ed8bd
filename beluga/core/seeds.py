"""Scores over training seeds: the mean and the spread of a score over the seeds a cell was trained with.

A run over N ≥ 1 training seeds (config ``seeds``) computes every score once per seed, then reports per cell (a
configuration-method pair and scenario, an OOD set, an inoculation dose...) the **mean over seeds** under the
score's own name and, beside it, ``<score>_sd`` (the sample standard deviation over seeds, ``ddof=1``),
``<score>_min`` / ``<score>_max`` and ``n_seeds`` (docs/STATISTICS.md, "Training seeds"). One seed is N = 1:
the same columns, the mean its own score, ``n_seeds`` 1 and every ``_sd`` empty (NaN: the sample standard
deviation of one value is undefined).

The renderers show a cell by :func:`plus_minus` (no spread where the sd is empty) and word the seeds behind
their cells by :func:`seeds_legend` (nothing for N = 1), so that no renderer asks how many seeds there are.

Light (numpy / pandas only).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

#: the suffixes of the spread columns, in the order they are written
SPREAD_SUFFIXES = ("sd", "min", "max")
SEED_COLUMN = "seed"
N_SEEDS_COLUMN = "n_seeds"


def seed_order(values) -> list:
    """The distinct seeds of ``values`` in order of first appearance."""
    return list(dict.fromkeys(int(v) for v in values))


def over_seeds(per_seed: pd.DataFrame, keys: list[str], values: list[str], seed_column: str = SEED_COLUMN
               ) -> pd.DataFrame:
    """One row per ``keys`` group (in order of first appearance) of a per-seed frame: the mean over seeds of
    each of ``values`` under its own name, ``n_seeds``, then ``<value>_sd`` / ``_min`` / ``_max`` per value.

    Other columns (counts and labels) take the first seed's value. A group must have one row per seed (a
    repeated seed raises ValueError). NaN scores (a scenario without a scored functionality) are left out of
    their mean and spread, as the one-seed tables leave them blank."""
    if seed_column not in per_seed.columns:
        raise ValueError(f"over_seeds: field {seed_column!r} is missing")
    missing = [c for c in [*keys, *values] if c not in per_seed.columns]
    if missing:
        raise ValueError(f"over_seeds: field {missing[0]!r} is missing")
    dup = per_seed.duplicated([*keys, seed_column])
    if dup.any():
        r = per_seed[dup].iloc[0]
        raise ValueError(f"over_seeds: seed {int(r[seed_column])} appears twice for "
                         f"{'/'.join(str(r[k]) for k in keys)}")
    rest = [c for c in per_seed.columns if c not in (*keys, *values, seed_column)]
    groups = per_seed.groupby(keys, sort=False, dropna=False)
    out = groups[rest].first() if rest else pd.DataFrame(index=groups.size().index)
    vals = per_seed[[*keys, *values]].copy()
    counts = [v for v in values if pd.api.types.is_integer_dtype(per_seed[v])]
    for v in values:
        vals[v] = pd.to_numeric(vals[v], errors="raise").astype(float)
    g = vals.groupby(keys, sort=False, dropna=False)[values]
    mean, sd, lo, hi = g.mean(), g.std(ddof=1), g.min(), g.max()
    for v in counts:    # a count stays a whole number where every mean is one (one seed: the seed's count)
        lo[v], hi[v] = lo[v].astype(per_seed[v].dtype), hi[v].astype(per_seed[v].dtype)
        if (mean[v] == mean[v].round()).all():
            mean[v] = mean[v].astype(per_seed[v].dtype)
    for v in values:
        out[v] = mean[v]
    out[N_SEEDS_COLUMN] = groups.size().astype(int)
    for v in values:
        out[f"{v}_sd"], out[f"{v}_min"], out[f"{v}_max"] = sd[v], lo[v], hi[v]
    out = out.reset_index()
    order = [*keys, *[c for c in per_seed.columns if c in rest or c in values]]
    spread = [N_SEEDS_COLUMN] + [f"{v}_{s}" for v in values for s in SPREAD_SUFFIXES]
    return out[order + spread]


def spread_text(sd, scale: float = 100.0, digits: int = 1, sep: str = " ± ") -> str:
    """The spread of a cell: ``sep`` and the scaled standard deviation over seeds (``" ± 0.5"``); ``""`` when
    the sd is empty (NaN or None: one training seed, or one seed with a value)."""
    if sd is None or pd.isna(sd):
        return ""
    return f"{sep}{scale * float(sd):.{digits}f}"


def plus_minus(mean, sd, scale: float = 100.0, digits: int = 1, sep: str = " ± ", missing: str = "",
               style: str = "{}") -> str:
    """A cell over training seeds: ``"80.9 ± 0.5"`` (scaled; ``style`` wraps the mean, e.g. ``"**{}**"``), the
    mean alone when the sd is empty (:func:`spread_text`), ``missing`` for a missing mean."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)) or pd.isna(mean):
        return missing
    return style.format(f"{scale * float(mean):.{digits}f}") + spread_text(sd, scale, digits, sep)


def has_spread(sds) -> bool:
    """Whether any of ``sds`` (standard deviations over seeds) is defined: a figure draws its error bars,
    bands and ``±sd`` lines, and makes room for them, only then."""
    x = pd.to_numeric(pd.Series(np.ravel(np.asarray(sds, dtype=object))), errors="coerce").to_numpy(dtype=float)
    return bool(np.isfinite(x).any())


def seeds_legend(n_seeds: int, text: str) -> str:
    """The words of a table, page or figure on the training seeds behind its cells: ``text`` for N ≥ 2 seeds,
    ``""`` for N = 1 (a one-seed cell is the seed's own score: nothing to say). Every renderer words its seeds
    through this one function."""
    return text if int(n_seeds) > 1 else ""


def seeds_note(seeds: list[int]) -> str:
    """The sentence naming the training seeds behind every cell (:func:`seeds_legend`: ``""`` for one seed)."""
    seeds = [int(s) for s in seeds]
    return seeds_legend(len(seeds), f"Every cell: mean ± standard deviation over {len(seeds)} training seeds "
                                    f"({', '.join(map(str, seeds))}); min-max and per-seed values in the CSV files.")


def per_seed_frame(frames: dict[int, pd.DataFrame], seed_column: str = SEED_COLUMN) -> pd.DataFrame:
    """The per-seed frames stacked, with a leading ``seed`` column (seeds in the mapping's order)."""
    parts = [f.assign(**{seed_column: int(s)}) for s, f in frames.items()]
    out = pd.concat(parts, ignore_index=True)
    return out[[seed_column, *[c for c in out.columns if c != seed_column]]]


def seeds_sd(values) -> float:
    """The sample standard deviation (``ddof=1``) of one value per training seed: NaN with one seed (undefined)
    or when a seed's value is not finite."""
    x = np.asarray(list(values), dtype=float)
    return float(np.std(x, ddof=1)) if len(x) > 1 and np.isfinite(x).all() else float("nan")


def sample_sd(values) -> float:
    """The sample standard deviation (``ddof=1``) of finite values; NaN with fewer than two."""
    x = np.asarray(list(values), dtype=float)
    x = x[np.isfinite(x)]
    return float(np.std(x, ddof=1)) if len(x) > 1 else float("nan")
