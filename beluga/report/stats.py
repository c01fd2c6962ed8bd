"""Significance tests and confidence intervals for the Table 3 scores (docs/PROCEDURE.md, §6).

Everything here works on *aligned per-unit outcomes* (:class:`Outcomes`): for one system, the pass / scored
indicator of every suite test case in every scenario, and the per-example i.i.d. features from which s_iid is
computed. The statistics are the ones of :mod:`beluga.score.metrics`: s_T = mean over scored functionalities of the pass
rate, s_iid = the task's i.i.d. metric(s), G = harmonic mean of s_T and s_iid.

- :func:`binomial_test`: two-sided exact sign test on the discordant i.i.d. examples (i.i.d. score vs the baseline).
- :func:`randomization_test`: approximate randomization (Yeh 2000) of ΔG between a system and the baseline, i.i.d.
  examples and suite cases swapped jointly; ``swaps``: one swap per unit shared by all scenarios (``shared``), or
  each scenario's suite cases by their own swaps (``independent``, the reference code's; the i.i.d. examples keep
  one swap per example). The scenarios' own p-values do not depend on it; ΔG_avg's null does.
  :func:`exact_randomization_p` enumerates every swap pattern (small cases; used to check the former).
- percentile bootstrap intervals of s_T, s_iid and G: :mod:`beluga.report.bootstrap`.
- :func:`holm`: Holm-Bonferroni adjusted p-values.

The resampling is vectorized and processed in chunks of draws of bounded size. Randomization: only units where the
two systems differ get a swap bit (swapping identical outcomes changes nothing); a draw's swap pattern is a few
random uint64 words, and the per-functionality sums of the swapped -1 / 0 / +1 differences are popcounts of the
pattern against precomputed bit vectors (no per-unit arrays, no BLAS threads).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binomtest, rankdata

from beluga.core.tasks import TASK_TYPES
from beluga.heads.classification import mcc_from_counts
from beluga.score import metrics

#: the scenarios of a configuration-method pair (metrics.SCENARIOS without the baseline's "standard")
SUITE_SCENARIOS = metrics.SCENARIOS[1:]
#: the per-example i.i.d. features of each task type (``TaskType.iid_features``; :func:`iid_features`)
IID_FEATURES = {name: t.iid_features for name, t in TASK_TYPES.items()}

#: |Δ'| >= |Δ| - TIE_TOL counts as "at least as extreme" (guards against rounding in ties)
TIE_TOL = 1e-12
#: statistics.swaps: one swap per unit for every scenario, or each scenario's T_test cases swapped on their own
SWAPS = ("shared", "independent")
#: elements (draws x words or units) of one chunk of resampling draws; bounds the temporary arrays
CHUNK_ELEMENTS = 1 << 22
MAX_CHUNK_DRAWS = 4096
_MAX_EXACT_UNITS = 20


def check_task_type(task_type: str, iid_metric: str | None = None) -> None:
    """ValueError for an unknown task type or (when given) i.i.d. metric."""
    if task_type not in IID_FEATURES:
        raise ValueError(f"field 'task_type': {task_type!r} is not one of {', '.join(IID_FEATURES)}")
    if iid_metric is not None:
        iid_statistic(np.zeros(len(IID_FEATURES[task_type])), task_type, iid_metric)


def n_draws(R) -> int:
    if int(R) != R or R < 1:
        raise ValueError(f"field 'R': {R!r} must be a positive integer")
    return int(R)


def _column(df: pd.DataFrame, name: str) -> np.ndarray:
    if name not in df.columns:
        raise ValueError(f"i.i.d. outcomes: field {name!r} is missing")
    return df[name].to_numpy(dtype=np.float64, na_value=np.nan)


def iid_features(iid_rows: pd.DataFrame, task_type: str) -> np.ndarray:
    """Per-example i.i.d. features (m, k), k = len(IID_FEATURES[task_type]), in the rows' order.

    sent, nli, nli_binary: ``correct``; para, acceptability: ``correct`` and the tp / fp / fn indicators of
    the class 1 from ``pred_label`` / ``gold_label``; read: ``em`` and ``f1``; similarity: the moments of
    ``pred_score`` / ``gold_score`` and of their ranks within the rows (:func:`_moment_features`). The mean of these
    over examples gives :func:`iid_statistic` its input."""
    check_task_type(task_type)
    names = IID_FEATURES[task_type]
    cols = {}
    if "tp" in names:
        pred = _column(iid_rows, "pred_label") == 1
        gold = _column(iid_rows, "gold_label") == 1
        cols.update(tp=pred & gold, fp=pred & ~gold, fn=~pred & gold)
    if "pred_sq" in names:
        cols.update(_moment_features(_column(iid_rows, "pred_score"), _column(iid_rows, "gold_score")))
    for name in names:
        if name not in cols:
            cols[name] = _column(iid_rows, name)
    return np.column_stack([np.asarray(cols[n], dtype=np.float64) for n in names]).astype(np.float64)


def _moment_features(pred: np.ndarray, gold: np.ndarray) -> dict[str, np.ndarray]:
    """SIMILARITY's per-example features (``tasks.SIMILARITY_FEATURES``): the scores, their squares and
    product, and the same of their ranks within these rows (mean ranks for ties), scaled to (0, 1] by the
    row count so that two systems' ranks on the same examples are on one scale."""
    if not (np.isfinite(pred).all() and np.isfinite(gold).all()):
        raise ValueError("i.i.d. outcomes: pred_score / gold_score must be finite numbers")
    n = max(len(pred), 1)
    rp, rg = rankdata(pred) / n, rankdata(gold) / n
    return {"pred_sq": pred * pred, "gold_sq": gold * gold, "pred_gold": pred * gold, "pred_rank": rp,
            "gold_rank": rg, "pred_rank_sq": rp * rp, "gold_rank_sq": rg * rg, "pred_gold_rank": rp * rg}


def _moment_correlation(f: np.ndarray, idx: dict[str, int], p: str, g: str, pp: str, gg: str, pg: str) -> np.ndarray:
    """Pearson's r from mean moments (E[p], E[g], E[p^2], E[g^2], E[p g]); NaN where a side is constant."""
    mp, mg = f[..., idx[p]], f[..., idx[g]]
    cov = f[..., idx[pg]] - mp * mg
    vp, vg = f[..., idx[pp]] - mp * mp, f[..., idx[gg]] - mg * mg
    den = np.sqrt(np.clip(vp, 0, None) * np.clip(vg, 0, None))
    tiny = 1e-12 * (1.0 + np.abs(f[..., idx[pp]]) + np.abs(f[..., idx[gg]]))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > tiny, cov / np.where(den > tiny, den, 1.0), np.nan)
    return np.clip(r, -1.0, 1.0)


def _iid_metrics(f: np.ndarray, task_type: str) -> dict[str, np.ndarray]:
    """The task's metrics (``TaskType.iid_metrics``, in order) from its mean features (..., k)."""
    idx = {n: i for i, n in enumerate(IID_FEATURES[task_type])}
    out = {}
    for m in metrics.IID_METRICS[task_type]:
        if m == "accuracy":
            out[m] = f[..., idx["correct"]]
        elif m in ("em", "f1") and m in idx:
            out[m] = f[..., idx[m]]
        elif m == "pearson":
            out[m] = _moment_correlation(f, idx, "pred_score", "gold_score", "pred_sq", "gold_sq", "pred_gold")
        elif m == "spearman":
            out[m] = _moment_correlation(f, idx, "pred_rank", "gold_rank", "pred_rank_sq", "gold_rank_sq",
                                         "pred_gold_rank")
        else:
            tp, fp, fn = f[..., idx["tp"]], f[..., idx["fp"]], f[..., idx["fn"]]
            if m == "mcc":
                out[m] = mcc_from_counts(tp, fp, fn, 1.0 - tp - fp - fn)
            else:
                den = 2 * tp + fp + fn
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[m] = np.where(tp > 0, 2 * tp / np.where(den > 0, den, 1.0),
                                      np.where(np.isnan(tp), np.nan, 0.0))
    return out


def iid_statistic(mean_features: np.ndarray, task_type: str, iid_metric: str = "mean") -> np.ndarray:
    """s_iid from per-example features averaged over examples: (..., k) -> (...).

    ``iid_metric``: ``mean`` of the task's metrics (sent, nli: accuracy; para: accuracy and F1 of class 1 =
    2tp / (2tp + fp + fn), 0 when tp = 0; read: em and f1; acceptability: MCC of the tp / fp / fn shares,
    tn = 1 - tp - fp - fn, and accuracy; similarity: Pearson's r of the score moments and Spearman's rho as
    Pearson's r of the rank moments, NaN for a constant side), or one metric name. Resampled or swapped rows
    keep the ranks taken on the full split, so Spearman's rho under the bootstrap / randomization is the
    rank correlation of the original ranks (exact on the observed rows)."""
    check_task_type(task_type)
    f = np.asarray(mean_features, dtype=np.float64)
    k = len(IID_FEATURES[task_type])
    if f.shape[-1:] != (k,):
        raise ValueError(f"mean_features: last axis has {f.shape[-1:] or 'no'} features, {task_type} needs {k}")
    named = _iid_metrics(f, task_type)
    if iid_metric == "mean":
        vals = list(named.values())
        return vals[0].copy() if len(vals) == 1 else sum(vals) / len(vals)
    if iid_metric not in named:
        raise ValueError(f"field 'iid_metric': {iid_metric!r} is not a metric of task type {task_type} "
                         f"(mean, {', '.join(named)})")
    return np.array(named[iid_metric], dtype=np.float64)


@dataclass
class Outcomes:
    """One system's per-unit outcomes, aligned with the task's unit lists.

    passed: (S, n) 0/1, case passed (0 where not scored); scored: (S, n) 0/1, case scored (not filtered);
    iid: (S, m, k) per-example i.i.d. features (several fold models in a scenario: their mean).
    S = number of scenarios; a baseline has S = 1 and is broadcast. 1-D passed / scored and 2-D iid are read as
    S = 1. Arrays are converted to float64; passed / scored other than 0 / 1, or passed where not scored, raise
    ValueError."""

    passed: np.ndarray
    scored: np.ndarray
    iid: np.ndarray

    def __post_init__(self):
        passed = np.asarray(self.passed, dtype=np.float64)
        scored = np.asarray(self.scored, dtype=np.float64)
        iid = np.asarray(self.iid, dtype=np.float64)
        passed = passed[None] if passed.ndim == 1 else passed
        scored = scored[None] if scored.ndim == 1 else scored
        iid = iid[None] if iid.ndim == 2 else iid
        if passed.ndim != 2 or passed.shape != scored.shape:
            raise ValueError(f"Outcomes: passed {passed.shape} and scored {scored.shape} must both be (S, n)")
        if iid.ndim != 3 or iid.shape[0] != passed.shape[0]:
            raise ValueError(f"Outcomes: iid {iid.shape} must be (S, m, k) with S = {passed.shape[0]}")
        for name, v in (("passed", passed), ("scored", scored)):
            if not np.all((v == 0) | (v == 1)):
                raise ValueError(f"Outcomes: field {name!r}: values must be 0 or 1")
        if np.any(passed > scored):
            raise ValueError("Outcomes: field 'passed': a case passed that is not scored")
        self.passed, self.scored, self.iid = passed, scored, iid

    @property
    def n_scenarios(self) -> int:
        return self.passed.shape[0]


def func_index_of(func_index, n_func: int, n: int) -> np.ndarray:
    fi = np.asarray(func_index)
    if fi.shape != (n,):
        raise ValueError(f"field 'func_index': shape {fi.shape}, expected ({n},)")
    fi = fi.astype(np.int64)
    if n and (fi.min() < 0 or fi.max() >= n_func):
        raise ValueError(f"field 'func_index': values must lie in [0, {n_func})")
    return fi


def _rate_part(p: np.ndarray, c: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Sum over ``axis`` of the pass rates of functionalities with a scored case, and their number."""
    valid = c > 0
    shape = np.broadcast_shapes(p.shape, c.shape)
    return np.divide(p, c, out=np.zeros(shape), where=valid).sum(axis=axis), valid.sum(axis=axis)


def suite_score(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Mean pass rate over functionalities (last axis) with at least one scored case; NaN if none."""
    total, n_valid = _rate_part(p, c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_valid > 0, total / np.maximum(n_valid, 1), np.nan)


def harmonic_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """G = 2ab / (a + b); 0 when either is 0 or below 0 (an MCC s_iid below chance:
    :func:`beluga.score.metrics.g_score`); NaN when either is NaN."""
    den = a + b
    pos = (a > 0) & (b > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(pos, 2 * a * b / np.where(pos, den, 1.0), 0.0)
    return np.where(np.isnan(den), np.nan, g)


def _func_sums(values: np.ndarray, fi: np.ndarray, n_func: int) -> np.ndarray:
    """(S, n) -> (S, n_func) sums per functionality."""
    return np.stack([np.bincount(fi, weights=v, minlength=n_func) for v in values]) if len(values) else \
        np.zeros((0, n_func))


def _mean_features(iid: np.ndarray) -> np.ndarray:
    m = iid.shape[1]
    return iid.sum(axis=1) / m if m else np.full((iid.shape[0], iid.shape[2]), np.nan)


def scores(o: Outcomes, func_index: np.ndarray, n_func: int, task_type: str, iid_metric: str = "mean") -> dict:
    """Point scores per scenario: {"s_T": (S,), "s_iid": (S,), "G": (S,), "G_avg": mean of G over scenarios}."""
    check_task_type(task_type)
    fi = func_index_of(func_index, n_func, o.passed.shape[1])
    s_t = suite_score(_func_sums(o.passed, fi, n_func), _func_sums(o.scored, fi, n_func))
    s_iid = iid_statistic(_mean_features(o.iid), task_type, iid_metric)
    g = harmonic_mean(s_t, s_iid)
    return {"s_T": s_t, "s_iid": s_iid, "G": g, "G_avg": float(np.mean(g))}


def binomial_test(a_correct, b_correct) -> dict:
    """Two-sided exact binomial (sign) test on the discordant pairs; a = baseline, b = system."""
    a = np.asarray(a_correct, dtype=bool)
    b = np.asarray(b_correct, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"binomial_test: paired arrays differ in shape ({a.shape} vs {b.shape})")
    return binomial_counts_test(int((a & ~b).sum()), int((b & ~a).sum()))


def binomial_counts_test(a_only: int, b_only: int) -> dict:
    """The two-sided exact sign test of :func:`binomial_test` from its discordant counts (a = baseline only,
    b = system only; several training seeds: the counts summed over seeds, a test stratified by seed)."""
    n = int(a_only) + int(b_only)
    p = float(binomtest(int(b_only), n, 0.5, alternative="two-sided").pvalue) if n else 1.0
    return {"n_discordant": n, "a_only": int(a_only), "b_only": int(b_only), "p_value": p}


def combine_randomization(results: list[dict]) -> dict:
    """One randomization test stratified by training seed from the per-seed tests' results (each from
    :func:`randomization_test` with ``return_null=True``, the same R): the statistic is the mean over seeds
    of the per-seed ΔG, its null the mean of the seeds' null draws, draw by draw (each seed's units are
    swapped by that seed's own independent draws); p = (#{|Δ'| >= |Δ| - 1e-12} + 1) / (R + 1)."""
    if not results:
        raise ValueError("combine_randomization: no per-seed test")
    if len({r["R"] for r in results}) != 1:
        raise ValueError("combine_randomization: the per-seed tests have different R")
    R = results[0]["R"]
    delta = np.mean([r["delta"] for r in results], axis=0)
    delta_avg = float(np.mean([r["delta_avg"] for r in results]))
    null = np.mean([r["null"] for r in results], axis=0)
    null_avg = np.mean([r["null_avg"] for r in results], axis=0)
    return {"delta": delta, "delta_avg": delta_avg,
            "p": _p_or_nan(_count_extreme(null, delta) + 1, R + 1, delta),
            "p_avg": float(_p_or_nan(_count_extreme(null_avg, delta_avg) + 1, R + 1, delta_avg)),
            "R": R, "n_units": sum(r["n_units"] for r in results), "null": null, "null_avg": null_avg}


def _bitvectors(sel: np.ndarray, bitpos: np.ndarray, n_words: int) -> np.ndarray:
    """sel (u, c) bool, bitpos (u,) -> (c, n_words) uint64 with bit bitpos[i] of column j set iff sel[i, j]."""
    full = np.zeros((sel.shape[1], n_words * 64), dtype=bool)
    full[:, bitpos] = sel.T
    return _pack_words(full)


def _pack_words(bits: np.ndarray) -> np.ndarray:
    """(..., 64 w) bool -> (..., w) uint64, bit t of word i = bits[..., 64 i + t]."""
    return np.packbits(bits, axis=-1, bitorder="little").view("<u8").astype(np.uint64, copy=False)


def _popcount_diff(words: np.ndarray, plus: np.ndarray, minus: np.ndarray) -> np.ndarray:
    """words (w, R), plus / minus (w, c) -> (w, c, R) int8: popcount(words & plus) - popcount(words & minus)
    (both at most 64, so the uint8 difference read as int8 is exact)."""
    w = words[:, None, :]
    a = np.bitwise_count(w & plus[:, :, None])
    return np.subtract(a, np.bitwise_count(w & minus[:, :, None]), out=a).view(np.int8)


class _PairedNull:
    """ΔG for swap patterns over the units where a system and the baseline differ.

    Units: the differing suite cases (sorted by functionality), then the differing i.i.d. examples. A pattern is
    packed into uint64 words: each functionality's differing cases fill a block of whole words, the i.i.d. examples
    a final block; bit set = the unit's outcomes are swapped (in every scenario). The swapped system's sums are its
    own plus the swapped units' differences (baseline - system). Suite outcomes are 0/1, so these differences are
    -1 / 0 / +1 and their per-functionality sums are popcounts of the pattern against +1 / -1 bit vectors; i.i.d.
    differences are handled the same way when they are -1 / 0 / +1 too, else by a matrix product. The swapped
    baseline's sums are the pair's totals minus the swapped system's."""

    def __init__(self, base: Outcomes, system: Outcomes, func_index, n_func: int, task_type: str, iid_metric: str,
                 iid_units: np.ndarray | None = None):
        check_task_type(task_type, iid_metric)
        self.task_type, self.iid_metric = task_type, iid_metric
        s = system.n_scenarios
        if base.n_scenarios not in (1, s):
            raise ValueError(f"randomization: baseline has {base.n_scenarios} scenarios, system {s} (need 1 or {s})")
        n = system.passed.shape[1]
        if base.passed.shape[1] != n or base.iid.shape[1:] != system.iid.shape[1:]:
            raise ValueError(f"randomization: unit lists differ (cases {base.passed.shape[1]} vs {n}, "
                             f"i.i.d. {base.iid.shape[1:]} vs {system.iid.shape[1:]})")
        k = len(IID_FEATURES[task_type])
        if system.iid.shape[2] != k:
            raise ValueError(f"randomization: i.i.d. features have {system.iid.shape[2]} columns, "
                             f"{task_type} needs {k}")
        fi = func_index_of(func_index, n_func, n)
        bp, bc = np.broadcast_to(base.passed, (s, n)), np.broadcast_to(base.scored, (s, n))
        sp, sc = system.passed, system.scored
        m = system.iid.shape[1]
        bi, si = np.broadcast_to(base.iid, (s, m, k)), system.iid
        self.s, self.k, self.m = s, k, m

        # suite cases: differing units sorted by functionality, one block of whole words per functionality
        diff = np.flatnonzero(np.any((sp != bp) | (sc != bc), axis=0))
        diff = diff[np.argsort(fi[diff], kind="stable")]
        d = np.concatenate([bp[:, diff] - sp[:, diff], bc[:, diff] - sc[:, diff]]).T  # (u_case, 2S)
        self.scored_varies = bool(np.any(d[:, s:]))
        if not self.scored_varies:
            d = d[:, :s]
        counts = np.bincount(fi[diff], minlength=n_func)
        self.present = np.flatnonzero(counts)
        n_words = (counts[self.present] + 63) // 64
        block = np.concatenate([[0], np.cumsum(n_words)])
        self.block_start, self.w_case = block[:-1], int(block[-1])
        self.single_words = bool(np.all(n_words == 1))
        self.extra_words = [(np.flatnonzero(n_words > j), self.block_start[n_words > j] + j)
                            for j in range(1, int(n_words.max(initial=1)))]
        rank = np.arange(len(diff)) - np.concatenate([[0], np.cumsum(counts)])[fi[diff]]
        word_of_func = np.zeros(n_func, dtype=np.int64)
        word_of_func[self.present] = self.block_start
        case_bitpos = word_of_func[fi[diff]] * 64 + rank
        self.case_plus = _bitvectors(d == 1, case_bitpos, self.w_case).T.copy()  # (words, columns)
        self.case_minus = _bitvectors(d == -1, case_bitpos, self.w_case).T.copy()
        self.case_dtype = np.int16 if counts.max(initial=0) < 2 ** 15 else np.int32
        self.u_case, self.case_units = len(diff), diff

        px, cx = _func_sums(sp, fi, n_func), _func_sums(sc, fi, n_func)
        pt, ct = px + _func_sums(bp, fi, n_func), cx + _func_sums(bc, fi, n_func)
        absent = np.setdiff1d(np.arange(n_func), self.present)
        self.rest_x = _rate_part(px[:, absent], cx[:, absent])  # functionalities without a differing case
        self.rest_y = _rate_part(pt[:, absent] - px[:, absent], ct[:, absent] - cx[:, absent])
        self.px, self.cx = px[:, self.present, None], cx[:, self.present, None]  # (S, F present, 1)
        self.pt, self.ct = pt[:, self.present, None], ct[:, self.present, None]

        # i.i.d. examples: one final block
        diff_i = np.flatnonzero(np.any(si != bi, axis=(0, 2))) if iid_units is None else np.asarray(iid_units)
        di = (bi[:, diff_i, :] - si[:, diff_i, :]).transpose(1, 0, 2).reshape(len(diff_i), s * k)
        self.u_iid, self.iid_units = len(diff_i), diff_i
        self.w_iid = (self.u_iid + 63) // 64
        self.iid_popcount = bool(np.all((di == 0) | (di == 1) | (di == -1)))
        if self.iid_popcount:
            pos = np.arange(self.u_iid)
            self.iid_plus = _bitvectors(di == 1, pos, self.w_iid).T.copy()
            self.iid_minus = _bitvectors(di == -1, pos, self.w_iid).T.copy()
        else:
            self.d_iid = np.ascontiguousarray(di)
        self.feat_x = si.sum(axis=1).reshape(s * k, 1)
        self.feat_t = self.feat_x + bi.sum(axis=1).reshape(s * k, 1)

        self.u = self.u_case + self.u_iid
        self.n_words = self.w_case + self.w_iid
        self.bitpos = np.concatenate([case_bitpos, self.w_case * 64 + np.arange(self.u_iid)]).astype(np.int64)

    def chunk(self) -> int:
        """Draws per chunk, bounding the temporary arrays (about 16 bytes per element counted here)."""
        per_draw = self.w_case * self.case_plus.shape[1] + self.w_iid * self.k * self.s + self.n_words * 64
        if not self.iid_popcount:
            per_draw += self.u_iid * 8
        return int(max(1, min(MAX_CHUNK_DRAWS, CHUNK_ELEMENTS // max(per_draw, 1))))

    def pack(self, mask: np.ndarray) -> np.ndarray:
        """(R, u) 0/1 in unit order (case_units, then iid_units) -> (n_words, R) packed swap patterns."""
        full = np.zeros((mask.shape[0], self.n_words * 64), dtype=bool)
        full[:, self.bitpos] = np.asarray(mask) != 0
        return np.ascontiguousarray(_pack_words(full).T)

    def null(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """words (n_words, R) uint64 swap patterns -> (ΔG (R, S), ΔG_avg (R,)).

        Works with draws on the last axis: (columns, functionalities, R)."""
        r, s = words.shape[1], self.s
        if self.u_case:
            per_word = _popcount_diff(words[:self.w_case], self.case_plus, self.case_minus)
            if self.single_words:
                cnt = per_word
            else:  # first word of each functionality's block, plus its further words
                cnt = per_word[self.block_start].astype(self.case_dtype)
                for blocks, words_j in self.extra_words:
                    cnt[blocks] += per_word[words_j]
            cnt = cnt.transpose(1, 0, 2)                               # (columns, F present, R)
            p_x = self.px + cnt[:s]
            c_x = self.cx + cnt[s:] if self.scored_varies else self.cx
        else:
            p_x, c_x = np.broadcast_to(self.px, (*self.px.shape[:2], r)), self.cx
        sum_x, n_x = _rate_part(p_x, c_x, axis=1)                      # (S, R)
        sum_y, n_y = _rate_part(self.pt - p_x, self.ct - c_x, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            st_x = ((sum_x + self.rest_x[0][:, None]) / (n_x + self.rest_x[1][:, None])).T  # (R, S)
            st_y = ((sum_y + self.rest_y[0][:, None]) / (n_y + self.rest_y[1][:, None])).T
        if self.u_iid:
            wi = words[self.w_case:]
            if self.iid_popcount:
                add = _popcount_diff(wi, self.iid_plus, self.iid_minus).sum(axis=0, dtype=np.int64)  # (S k, R)
            else:
                wi = np.ascontiguousarray(wi.T).astype("<u8", copy=False).view(np.uint8)
                bits = np.unpackbits(wi, axis=1, count=self.u_iid, bitorder="little")
                add = (bits.astype(np.float64) @ self.d_iid).T
            f_x = self.feat_x + add
        else:
            f_x = np.broadcast_to(self.feat_x, (s * self.k, r))
        f_y = self.feat_t - f_x
        with np.errstate(invalid="ignore", divide="ignore"):
            si_x = iid_statistic((f_x.T / self.m).reshape(r, s, self.k), self.task_type, self.iid_metric)
            si_y = iid_statistic((f_y.T / self.m).reshape(r, s, self.k), self.task_type, self.iid_metric)
        g_x, g_y = harmonic_mean(st_x, si_x), harmonic_mean(st_y, si_y)
        return g_x - g_y, g_x.mean(axis=1) - g_y.mean(axis=1)

    def observed(self) -> tuple[np.ndarray, float]:
        delta, delta_avg = self.null(np.zeros((self.n_words, 1), dtype=np.uint64))
        return delta[0], float(delta_avg[0])


class _ScenarioNulls:
    """:class:`_PairedNull`'s interface with ``swaps: independent``: each scenario's T_test cases swapped by their
    own bits, the i.i.d. examples by one bit per example shared by the scenarios (the reference code's
    significance script: one i.i.d. outcome per system, its suite outcomes per scenario). One one-scenario
    :class:`_PairedNull` per scenario, all on the same differing i.i.d. examples; a pattern's words are the
    scenarios' case words in scenario order, then the i.i.d. words."""

    def __init__(self, base: Outcomes, system: Outcomes, func_index, n_func: int, task_type: str, iid_metric: str):
        whole = _PairedNull(base, system, func_index, n_func, task_type, iid_metric)  # checks; the i.i.d. units
        b = [0] * system.n_scenarios if base.n_scenarios == 1 else range(system.n_scenarios)
        self.parts = [_PairedNull(Outcomes(base.passed[j], base.scored[j], base.iid[j]),
                                  Outcomes(system.passed[k], system.scored[k], system.iid[k]), func_index, n_func,
                                  task_type, iid_metric, iid_units=whole.iid_units) for k, j in enumerate(b)]
        self.s, self.w_iid, self.u_iid = len(self.parts), whole.w_iid, whole.u_iid
        ends = np.cumsum([0] + [p.w_case for p in self.parts])
        self.case_words = [slice(a, e) for a, e in zip(ends[:-1], ends[1:])]
        self.n_words = int(ends[-1]) + self.w_iid
        self.u = sum(p.u_case for p in self.parts) + self.u_iid

    def chunk(self) -> int:
        return min(p.chunk() for p in self.parts)

    def pack(self, mask: np.ndarray) -> np.ndarray:
        """(R, u) 0/1: each scenario's differing cases (scenario order), then the i.i.d. units -> (n_words, R)."""
        mask, at, words = np.asarray(mask), 0, []
        iid = mask[:, mask.shape[1] - self.u_iid:]
        for p in self.parts:
            packed = p.pack(np.concatenate([mask[:, at:at + p.u_case], iid], axis=1))
            words.append(packed[:p.w_case])
            at += p.u_case
        return np.concatenate(words + [packed[p.w_case:]])

    def null(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        iid = words[self.n_words - self.w_iid:]
        d = np.concatenate([p.null(np.concatenate([words[w], iid]))[0] for p, w in zip(self.parts, self.case_words)],
                           axis=1)
        return d, d.mean(axis=1)

    def observed(self) -> tuple[np.ndarray, float]:
        delta, delta_avg = self.null(np.zeros((self.n_words, 1), dtype=np.uint64))
        return delta[0], float(delta_avg[0])


def _null_of(base: Outcomes, system: Outcomes, func_index, n_func: int, task_type: str, iid_metric: str,
             swaps: str):
    if swaps not in SWAPS:
        raise ValueError(f"field 'statistics.swaps': {swaps!r} is not one of {', '.join(SWAPS)}")
    cls = _PairedNull if swaps == "shared" else _ScenarioNulls
    return cls(base, system, func_index, n_func, task_type, iid_metric)


def _count_extreme(null: np.ndarray, observed) -> np.ndarray:
    return (np.abs(null) >= np.abs(observed) - TIE_TOL).sum(axis=0)


def _p_or_nan(count, total, observed) -> np.ndarray:
    return np.where(np.isnan(observed), np.nan, count / total)


def randomization_test(base: Outcomes, system: Outcomes, func_index, n_func: int, task_type: str,
                       iid_metric: str = "mean", R: int = 10_000, seed: int = 0, return_null: bool = False,
                       swaps: str = "shared") -> dict:
    """Approximate randomization test of ΔG = G_system - G_base per scenario and of ΔG_avg.

    Each of R draws swaps, independently with probability 1/2 per unit (suite case or i.i.d. example), the two
    systems' outcomes of that unit in every scenario (``swaps: shared``); ``swaps: independent``: each scenario's
    suite cases by their own draws, an i.i.d. example still once for every scenario (:class:`_ScenarioNulls`).
    p = (#{|Δ'| >= |Δ| - 1e-12} + 1) / (R + 1).
    Returns {"delta": (S,), "delta_avg", "p": (S,), "p_avg", "R", "n_units"} (+ "null" (R, S), "null_avg" (R,)).
    Bit-reproducible for a given seed and input."""
    R = n_draws(R)
    pn = _null_of(base, system, func_index, n_func, task_type, iid_metric, swaps)
    delta, delta_avg = pn.observed()
    rng = np.random.default_rng(seed)
    null = np.empty((R, pn.s)) if return_null else None
    null_avg = np.empty(R) if return_null else None
    count, count_avg = np.zeros(pn.s, dtype=np.int64), 0
    if pn.u == 0:  # nothing to swap: every draw reproduces Δ
        count, count_avg = np.full(pn.s, R), R
        if return_null:
            null[:], null_avg[:] = delta, delta_avg
    else:
        step = pn.chunk()
        for start in range(0, R, step):
            rc = min(step, R - start)
            d, d_avg = pn.null(rng.integers(0, 2 ** 64, size=(pn.n_words, rc), dtype=np.uint64))
            count += _count_extreme(d, delta)
            count_avg += int(_count_extreme(d_avg, delta_avg))
            if return_null:
                null[start:start + rc], null_avg[start:start + rc] = d, d_avg
    out = {"delta": delta, "delta_avg": delta_avg,
           "p": _p_or_nan(count + 1, R + 1, delta), "p_avg": float(_p_or_nan(count_avg + 1, R + 1, delta_avg)),
           "R": R, "n_units": pn.u}
    if return_null:
        out["null"], out["null_avg"] = null, null_avg
    return out


def exact_randomization_p(base: Outcomes, system: Outcomes, func_index, n_func: int, task_type: str,
                          iid_metric: str = "mean", return_null: bool = False, swaps: str = "shared") -> dict:
    """The randomization statistic over all 2^u swap patterns of the u differing units (u <= 20; ``swaps:
    independent``: a scenario's differing cases are units of their own):
    {"delta", "delta_avg", "p": (S,), "p_avg", "n_units"}, p = #{|Δ'| >= |Δ| - 1e-12} / 2^u
    (+ "null" (2^u, S), "null_avg" (2^u,) if return_null, one row per pattern in an unspecified order)."""
    pn = _null_of(base, system, func_index, n_func, task_type, iid_metric, swaps)
    if pn.u > _MAX_EXACT_UNITS:
        raise ValueError(f"exact_randomization_p: {pn.u} differing units, at most {_MAX_EXACT_UNITS} can be enumerated")
    delta, delta_avg = pn.observed()
    total = 1 << pn.u
    shifts = np.arange(pn.u, dtype=np.int64)
    nulls, nulls_avg = [], []
    count, count_avg = np.zeros(pn.s, dtype=np.int64), 0
    step = pn.chunk()
    for start in range(0, total, step):
        codes = np.arange(start, min(total, start + step), dtype=np.int64)
        d, d_avg = pn.null(pn.pack((codes[:, None] >> shifts) & 1))
        count += _count_extreme(d, delta)
        count_avg += int(_count_extreme(d_avg, delta_avg))
        if return_null:
            nulls.append(d)
            nulls_avg.append(d_avg)
    out = {"delta": delta, "delta_avg": delta_avg, "p": _p_or_nan(count, total, delta),
           "p_avg": float(_p_or_nan(count_avg, total, delta_avg)), "n_units": pn.u}
    if return_null:
        out["null"], out["null_avg"] = np.concatenate(nulls), np.concatenate(nulls_avg)
    return out


def holm(pvalues) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values, same shape; NaNs are passed through and not counted."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = p.copy().ravel()
    ok = ~np.isnan(out)
    q = out[ok]
    k = q.size
    if k:
        order = np.argsort(q, kind="stable")
        adj = np.minimum(1.0, np.maximum.accumulate((k - np.arange(k)) * q[order]))
        res = np.empty(k)
        res[order] = adj
        out[ok] = res
    return out.reshape(p.shape)
