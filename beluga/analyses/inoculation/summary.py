"""Inoculation's summary (docs/ANALYSES.md): from the jobs' records and per-case outcomes, per unit and
dose the chosen learning rate, the challenge and original scores with their intervals, the share of the
dose-0 gap closed and the tests against dose 0 (the IID model), and each unit's outcome.

- Per (unit, dose) the challenge score of the learning rate with the best challenge score (:func:`choose`;
  ``select_on: dev``: on held-out challenge data, a suite unit's T_val or an external set's dev part;
  ``test``, the seed: on the challenge test set the tests then use, so their p-values are optimistic —
  :data:`SELECTED_ON`), and the original score of the learning rate with the best original dev score
  (``original_from: original_dev``, the seed's "we tune the learning rate on the original development set")
  or of the same run (``challenge_best``) — :data:`ORIGINAL_FROM`; both rates recorded.
- The outcome of a unit compares the last dose with dose 0 by effect-size margins and tests at a stated
  level (:func:`decide`: the gap left's interval within ``gap_margin`` for outcome 1, an original drop
  beyond ``drop_margin`` and significant for outcome 3; :func:`classify`: the fixed point thresholds), with
  intervals at 1 − level of every score and of the gap, and a label-skew flag (:func:`label_skew`; the
  seed's §3.3 limitation).
- Training seeds (config ``seeds``; :func:`summary_tables` takes N ≥ 1): each seed's IID model is
  inoculated by its own jobs; per seed, unit and dose the learning rate is chosen and the scores are
  read as in a one-seed run. The tests pool the seeds, stratified by seed (:mod:`beluga.report.paired`:
  exact McNemar on the discordant pairs summed over seeds, paired randomization with each seed's own
  draws, the gap by the exact conditional test of a common odds ratio over the seeds' 2×2 tables — exact
  Cochran–Mantel–Haenszel, chosen over summing the 2×2 counts, which would read the seeds' models as one
  model on more items — or a within-seed permutation test for a non-0/1 metric); intervals: hierarchical
  bootstrap, seeds then cases / examples. The table reports the mean ± sd over seeds (``n_seeds``,
  ``_sd`` / ``_min`` / ``_max``); with one seed every test and interval is the one-seed one (the same
  draws), the means are the seed's values and every ``_sd`` is empty.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from beluga.analyses.inoculation.outcomes import (
    DROP_MARGIN,
    GAP_MARGIN,
    dose_tests,
    label_skew,
    original_hits,
    original_rows,
    outcome_rows,
    set_label_skew,
    unit_case_arrays,
)
from beluga.analyses.inoculation.plan import lr_id, selection
from beluga.core.errors import ConfigError, DataError
from beluga.core.tasks import get_task_type
from beluga.report.paired import (
    gap_test,
    metric_interval,
    paired_metric_test,
    score_intervals,
    set_gap_interval,
    set_gap_test,
    suite_gap_interval,
)

#: the ``lr_selected_on`` column of table.csv and outcomes.csv, by ``select_on``
SELECTED_ON = {"dev": "dev (held out)", "test": "test (p-values optimistic: lr chosen on the tested cases)"}


#: ``inoculation.original_from`` -> the run a dose's original score is read from (the ``original_selected_on``
#: column of table.csv and outcomes.csv)
ORIGINAL_FROM = {"original_dev": "original dev set (its own lr)",
                 "challenge_best": "the challenge-best run (one lr)"}


def original_from(value: str) -> str:
    """``inoculation.original_from``, checked: ConfigError naming the field when it is not one of
    :data:`ORIGINAL_FROM`."""
    if value not in ORIGINAL_FROM:
        raise ConfigError(f"config: field 'inoculation.original_from': {value!r} is not one of "
                          f"{', '.join(ORIGINAL_FROM)}")
    return value


def original_dev_score(rec) -> float:
    """A run's original dev score (the i.i.d. validation set, a fraction): the dev score of its best epoch,
    the weights the job kept (its record's ``dev_curve`` at ``best_epoch``, epochs counted from 1); NaN when
    the record has no curve or no epoch improved (``best_epoch`` 0)."""
    curve = rec.get("dev_curve")
    best = rec.get("best_epoch")
    if not isinstance(curve, (list, tuple, np.ndarray)) or best is None or pd.isna(best):
        return np.nan
    best = int(best)
    return float(curve[best - 1]) if 1 <= best <= len(curve) and curve[best - 1] is not None else np.nan


def choose(results: pd.DataFrame, select_on: str, original: str = "original_dev") -> pd.DataFrame:
    """Per (unit, dose) the runs the dose reports, as one row: the challenge-best run (``select_on``:
    ``dev``, or its alias ``val``: the best held-out ``challenge_val``, a suite unit's T_val or an external
    set's dev part; ``test``: the best challenge test score, as the seed) — its learning rate ``lr``, its
    challenge scores, pass rates and ``case_outcomes`` — and the run the original score is read from
    (``original``: ``original_dev``, the seed's "we tune the learning rate on the original development set":
    the best original dev score, :func:`original_dev_score`; ``challenge_best``: the challenge-best run
    itself) — its learning rate ``lr_original``, ``original``, ``original_metrics``, ``original_dev``,
    ``case_outcomes_original`` and ``degenerate_original``. Ties go to the first learning rate in the
    configured order. A (unit, dose) without a held-out score (``dev``) or an original dev score
    (``original_dev``) for any rate is refused (DataError naming a record): choosing would pick the first
    rate silently."""
    col = {"dev": "challenge_val", "test": "challenge"}[selection(select_on)]
    original = original_from(original)

    def record(g: pd.DataFrame) -> Path | str:   # the record beside its outcomes file: <lr>.json, <lr>.parquet
        return Path(g["case_outcomes"].iloc[0]).with_suffix(".json") if "case_outcomes" in g else "inoculation"

    rows = []
    for (unit, dose), g in results.groupby(["unit", "dose"], sort=False):
        g = g.sort_values("lr_order", kind="stable")
        score = pd.to_numeric(g[col], errors="coerce").astype(float)
        if col == "challenge_val" and score.isna().all():
            raise DataError(f"{record(g)}: field 'challenge_val': no learning rate of unit {unit}, dose {dose} has "
                            "a held-out challenge score (no scored T_val case, or an external set trained without a "
                            "dev part); rerun its jobs with select_on: dev, or choose on the test set "
                            "(select_on: test, optimistic p-values)")
        dev = pd.Series([original_dev_score(r) for r in g.to_dict("records")], index=g.index, dtype=float)
        if original == "original_dev" and dev.isna().all():
            raise DataError(f"{record(g)}: field 'dev_curve': no learning rate of unit {unit}, dose {dose} has an "
                            "original dev score at its best epoch (dev_curve, best_epoch), which original_from: "
                            "original_dev chooses the original score's learning rate on")
        best = g.loc[score.fillna(-np.inf).idxmax()]
        src = best if original == "challenge_best" else g.loc[dev.fillna(-np.inf).idxmax()]
        row = best.copy()
        row["lr_original"] = src["lr"]
        row["original_dev"] = dev[src.name]
        for key in ("original", "original_metrics"):
            if key in g:
                row[key] = src[key]
        for key in ("case_outcomes", "degenerate"):
            if key in g:
                row[f"{key}_original"] = src[key]
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def dose_flags(table: pd.DataFrame, outcomes: pd.DataFrame, chosen: pd.DataFrame,
               base_flags: dict[int, bool]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``table`` and ``outcomes`` with ``n_models`` / ``n_degenerate`` (:mod:`beluga.report.degenerate`): a
    dose's row rests on the models :func:`choose` picked for it in every training seed (``chosen``:
    :func:`summary_tables`' runs, each record's ``degenerate``): the challenge-best run and, when another
    learning rate gave the original score, that run too (``lr_original``, ``degenerate_original``); dose 0
    on each seed's IID model (``base_flags``: seed -> degenerate; none: not checked, 0 models); a unit's
    outcome on its dose 0 and last dose. A record without the flag is one DataError line naming it (a record
    of an older run)."""
    def flags(col: str, outcomes_col: str) -> pd.Series:
        flag = chosen[col] if col in chosen.columns else pd.Series(np.nan, index=chosen.index)
        bad = flag.isna()
        if bad.any():
            where = Path(str(chosen.loc[bad, outcomes_col].iloc[0])).with_suffix(".json") \
                if outcomes_col in chosen.columns else "inoculation"
            raise DataError(f"{where}: field 'degenerate': missing (a record of an older run: rerun its inoculate "
                            "job)")
        return flag.map(bool)

    flag = flags("degenerate", "case_outcomes")
    other = pd.Series(False, index=chosen.index)   # a second model: the original score's run, another rate
    if "lr_original" in chosen.columns:
        other = chosen["lr_original"].map(lr_id) != chosen["lr"].map(lr_id)
    flag_original = flags("degenerate_original", "case_outcomes_original") if other.any() else other
    dose = chosen["dose"].astype(str)
    n_models, n_deg = [], []
    for unit, d in zip(table["unit"], table["dose"].astype(str)):
        if d == "0":
            n, k = len(base_flags), sum(bool(v) for v in base_flags.values())
        else:
            sel = (chosen["unit"] == unit) & (dose == d)
            n = int(sel.sum() + (sel & other).sum())
            k = int(flag[sel].sum() + (flag_original[sel & other]).sum())
        n_models.append(n)
        n_deg.append(k)
    table = table.assign(n_models=n_models, n_degenerate=n_deg)
    ends = {u: [g.iloc[0]] + ([g.iloc[-1]] if len(g) > 1 else []) for u, g in table.groupby("unit", sort=False)}
    outcomes = outcomes.assign(n_models=[sum(int(r.n_models) for r in ends[u]) for u in outcomes["unit"]],
                               n_degenerate=[sum(int(r.n_degenerate) for r in ends[u]) for u in outcomes["unit"]])
    return table, outcomes


#: the per-seed values of a (unit, dose) that the table reports as mean ± sd over seeds
SEED_VALUES = ["challenge", "original", "original_same", "gap_closed", "challenge_val", "original_dev",
               "epochs_trained", "best_epoch"]


def seed_draw_seed(training_seed: int, base_seed: int):
    """The seed of one training seed's bootstrap / randomization draws: a one-seed run's (0) for the base
    seed, [0, training seed] for another (independent draws, unchanged when seeds are added)."""
    return 0 if int(training_seed) == int(base_seed) else [0, int(training_seed)]


def split_by_seed(recs: list[dict], results: list[str], case_outcomes: list[str], iid_outcomes: list[str],
                  seeds=None) -> list[tuple[int, list[dict], list[str], str]]:
    """The summary's inputs per training seed: [(seed, records, per-case outcome files, the seed's IID model
    outcomes)] from the rule's seed-major lists (``results`` / ``case_outcomes``: every seed's runs, seed by
    seed, the same (unit, dose, lr) order in each; ``iid_outcomes``: one file per seed, in ``seeds`` order).
    DataError (one line naming the file and field) when the lists do not split evenly, a record was trained
    with another seed, or two seeds ran other units, doses, learning rates or dose sizes. ``seeds`` None: one
    training seed that is not named (its records' seeds are not checked), labelled 0."""
    if seeds is None:
        if len(iid_outcomes) != 1:
            raise DataError(f"inoculation: field 'iid_outcomes': {len(iid_outcomes)} IID model outcome files for one "
                            "training seed")
        return [(0, list(recs), list(case_outcomes), iid_outcomes[0])]
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


def summary_tables(per_seed: list[tuple[int, list[dict], list[str], pd.DataFrame]], *, task_type: str,
                   iid_metric: str, units: dict, cases_all: pd.DataFrame, lrs: list[float], select_on: str,
                   thresholds: dict, decide_by: str, level: float, bootstrap: int, randomization: int,
                   base_seed: int | None = None, original_from: str = "original_dev", gap_margin: float = GAP_MARGIN,
                   drop_margin: float = DROP_MARGIN):
    """The analysis' tables from its jobs over N ≥ 1 training seeds: ``per_seed`` = [(training
    seed, records, per-case outcome files, the seed's IID model outcomes)] (:func:`split_by_seed`). Per
    seed, unit and dose the runs are chosen (:func:`choose`): the challenge score is read from the
    learning rate with the best challenge score, the original score from the one with the best original dev
    score (``original_from: original_dev``, the seed) or from the same run (``challenge_best``); per unit
    and dose the intervals at 1 - ``level`` (a hierarchical bootstrap, seeds then cases / examples) of
    both scores and of the gap left (:func:`~beluga.report.paired.suite_gap_interval`,
    :func:`~beluga.report.paired.set_gap_interval`), the share of the dose-0 gap closed and the tests
    against dose 0 stratified by seed (:func:`dose_tests`, :func:`~beluga.report.paired.gap_test`,
    :func:`~beluga.report.paired.set_gap_test`); the outcome of every unit decided by those intervals and
    tests at ``level`` with the margins ``gap_margin`` / ``drop_margin`` (:func:`decide`; ``decide_by:
    thresholds``: by the fixed point thresholds) with its label-skew flag (:func:`outcome_rows`).

    The table has per unit × dose the mean over seeds of each value of :data:`SEED_VALUES` (with ``n_seeds``
    and ``_sd`` / ``_min`` / ``_max``), ``lr`` (the seeds' learning rate where they agree, else empty) and
    ``lrs`` (each seed's, in seed order), the same of the original score's rate (``lr_original``,
    ``lrs_original``), ``original_selected_on`` (:data:`ORIGINAL_FROM`), and the gap left (``gap`` =
    ``original_same`` − ``challenge``, ``gap_lo`` / ``gap_hi``); each seed's draws are seeded by :func:`seed_draw_seed`
    (``base_seed``: the seed whose draws are a one-seed run's; None: the first); the outcomes add the last
    dose's ``_sd``, ``n_seeds`` and ``seeds``. One seed: the seed's own values (the mean of one), the
    one-seed tests and intervals (draw seed 0), every ``_sd`` empty. Returns (every seed's chosen runs
    with a ``seed`` column, table, outcomes, {seed: the IID model's pass rates})."""
    from beluga.core.seeds import over_seeds
    from beluga.suites.format import functionality_table

    funcs = functionality_table(cases_all)
    states = [_seed_state(s, recs, co, base_out, task_type=task_type, iid_metric=iid_metric, funcs=funcs, lrs=lrs,
                          select_on=select_on, original=original_from) for s, recs, co, base_out in per_seed]
    seeds = [st.seed for st in states]
    base = seeds[0] if base_seed is None else base_seed
    _same_ids([st.base_iid["case_id"] for st in states], seeds, "IID model outcomes", "i.i.d. test examples")
    ctx = {"task_type": task_type, "iid_metric": iid_metric, "R": randomization, "bootstrap": bootstrap,
           "conf": 1 - float(level), "draws": [seed_draw_seed(s, base) for s in seeds]}
    rows, pooled, skew = [], {}, {}
    for uid, spec in units.items():
        unit = _set_unit if spec.get("challenge") is not None else _suite_unit
        unit_rows, unit_pooled, skew[uid] = unit(uid, spec, states, cases_all, **ctx)
        rows += unit_rows
        pooled.update(unit_pooled)
    per = pd.DataFrame(rows)
    table = over_seeds(per, ["unit", "dose"], SEED_VALUES)
    for col, many in (("lr", "lrs"), ("lr_original", "lrs_original")):
        lr_lists = [list(g) for _, g in per.groupby(["unit", "dose"], sort=False)[col]]
        table[col] = [lst[0] if len({f"{x:g}" for x in lst}) == 1 else np.nan for lst in lr_lists]
        table[many] = [" / ".join("" if pd.isna(x) else f"{x:g}" for x in lst) if not pd.isna(lst).all() else ""
                       for lst in lr_lists]
    evidence = pd.DataFrame([pooled.get((u, d), {}) for u, d in zip(table["unit"], table["dose"])],
                            index=table.index)
    for col in evidence.columns:
        table[col] = evidence[col]
    table["_unit"] = table["unit"].map({u: i for i, u in enumerate(units)})
    table = table.sort_values(["_unit", "n_cases"], kind="stable").drop(columns="_unit").reset_index(drop=True)
    table["lr_selected_on"] = SELECTED_ON[selection(select_on)]
    table["original_selected_on"] = ORIGINAL_FROM[original_from]
    table["gap"] = table["original_same"] - table["challenge"]
    cols = ["unit", "level", "label", "measure", "dose", "n_cases", "lr", "lrs", "lr_selected_on", "lr_original",
            "lrs_original", "original_selected_on", "challenge", "challenge_lo", "challenge_hi", "original",
            "original_lo", "original_hi", "original_same", "gap", "gap_lo", "gap_hi", "gap_closed", "p_gain",
            "p_original", "original_test", "p_gap", "challenge_val", "original_dev", "epochs_trained", "best_epoch"]
    table["sample"] = dose_samples(states[0].chosen, table)     # where each dose's examples come from
    cols.insert(cols.index("n_cases") + 1, "sample")
    spread = ["n_seeds"] + [f"{v}_{s}" for v in SEED_VALUES for s in ("sd", "min", "max")]
    table = table[[c for c in cols if c in table.columns] + spread]
    outcomes = outcome_rows(table, skew, decide_by, level, thresholds, gap_margin=gap_margin, drop_margin=drop_margin)
    outcomes["lr_selected_on"] = SELECTED_ON[selection(select_on)]
    outcomes["original_selected_on"] = ORIGINAL_FROM[original_from]
    last = table.groupby("unit", sort=False).tail(1).set_index("unit")
    for col in ("challenge", "original"):
        outcomes[f"{col}_last_sd"] = outcomes["unit"].map(last[f"{col}_sd"])
    outcomes["n_seeds"] = len(seeds)
    outcomes["seeds"] = " ".join(map(str, seeds))
    chosen = pd.concat([st.chosen.assign(seed=st.seed) for st in states], ignore_index=True)
    return chosen, table, outcomes, {st.seed: st.base_rates for st in states}


def dose_samples(chosen: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """Per row of ``table`` (unit, dose) where its dose's examples come from, as its chosen run's record says
    (``sample``: ``released``, Liu et al.'s released sample; ``drawn``, the seeded draw; ``all``, the whole
    training part; empty for dose 0, the IID model, and for a record that does not say)."""
    if "sample" not in chosen.columns:
        return [""] * len(table)
    said = {(str(u), str(d)): ("" if pd.isna(v) else str(v))
            for u, d, v in zip(chosen["unit"], chosen["dose"], chosen["sample"])}
    return [said.get((str(u), str(d)), "") for u, d in zip(table["unit"], table["dose"])]


def _same_ids(ids_per_seed: list, seeds: list[int], source: str, what: str) -> None:
    first = [str(x) for x in ids_per_seed[0]]
    for s, ids in zip(seeds[1:], ids_per_seed[1:]):
        if [str(x) for x in ids] != first:
            raise DataError(f"{source}: field 'case_id': training seed {s} was scored on other {what} than "
                            f"training seed {seeds[0]}")


def _seed_state(seed: int, recs: list[dict], case_outcomes: list[str], base_out: pd.DataFrame, *, task_type: str,
                iid_metric: str, funcs: pd.DataFrame, lrs, select_on: str, original: str = "original_dev"):
    """One training seed's chosen runs and its IID model (dose 0), as :func:`summary_tables` reads them."""
    from beluga.report.stats import iid_features
    from beluga.score.metrics import fold_pass_rates, iid_metrics, iid_score

    order = {float(lr): i for i, lr in enumerate(lrs)}
    df = pd.DataFrame(recs)
    df["lr_order"] = df["lr"].map(lambda v: order.get(float(v), len(order)))
    df["case_outcomes"] = list(case_outcomes)
    base_iid = original_rows(base_out)
    return SimpleNamespace(
        seed=int(seed), chosen=choose(df, select_on, original), base_out=base_out,
        base_rates=fold_pass_rates(base_out, funcs).set_index("functionality")["pass_rate"].to_dict(),
        base_original=iid_score(iid_metrics(base_out, task_type), iid_metric), base_iid=base_iid,
        base_feats=iid_features(base_iid, task_type), base_hits=original_hits(base_iid, task_type))


def _chosen_row(st, uid: str, dose: str):
    c = st.chosen
    return c[(c["unit"] == uid) & (c["dose"] == dose)].iloc[0]


def _suite_unit(uid: str, spec: dict, states: list, cases_all: pd.DataFrame, *, task_type: str,
                iid_metric: str, R: int, bootstrap: int, conf: float, draws: list) -> tuple[list, dict, dict]:
    """A suite unit over the training seeds: (per-seed rows, pooled evidence per (unit, dose), label skew)."""
    seeds = [st.seed for st in states]
    ufuncs = list(spec["functionalities"])
    skew = label_skew(cases_all[cases_all["functionality"].isin(set(ufuncs))], get_task_type(task_type).head,
                      get_task_type(task_type).suite_labels)
    info = {"unit": uid, "level": spec["level"], "label": spec["label"], "measure": "pass rate"}
    base = [unit_case_arrays(st.base_out, ufuncs) for st in states]
    _same_ids([c["case_id"] for c, _ in base], seeds, "IID model outcomes", f"T_test cases of unit {uid}")

    def evidence(items, fi) -> dict:    # items: per seed (cases, i.i.d. features, hits)
        ci = score_intervals([(c["passed"].to_numpy(), c["scored"].to_numpy(), f) for c, f, _ in items], fi,
                             len(ufuncs), task_type, iid_metric, R=bootstrap, seeds=draws, level=conf)
        gap_lo, gap_hi = suite_gap_interval([(c["passed"].to_numpy(), c["scored"].to_numpy(), f, h)
                                             for c, f, h in items], fi, len(ufuncs), task_type, iid_metric,
                                            R=bootstrap, seeds=draws, level=conf)
        return {"challenge_lo": ci["challenge"][0], "challenge_hi": ci["challenge"][1],
                "original_lo": ci["original"][0], "original_hi": ci["original"][1], "gap_lo": gap_lo,
                "gap_hi": gap_hi,
                "p_gap": gap_test([(int((c["passed"] & c["scored"]).sum()), int(c["scored"].sum()), int(h.sum()),
                                    len(h)) for c, _, h in items])}

    rows, first = [], []
    for st in states:
        vals = [st.base_rates.get(f) for f in ufuncs if not pd.isna(st.base_rates.get(f, np.nan))]
        row = {**info, "seed": st.seed, "dose": "0", "n_cases": 0, "lr": np.nan, "lr_original": np.nan,
               "challenge": 100 * float(np.mean(vals)) if vals else np.nan, "challenge_val": np.nan,
               "original_dev": np.nan,
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
                   "lr_original": float(r.lr_original),
                   "challenge": np.nan if r.challenge is None else 100 * float(r.challenge),
                   "challenge_val": np.nan if r.challenge_val is None else 100 * float(r.challenge_val),
                   "original": 100 * float(r.original), "original_dev": 100 * float(r.original_dev),
                   "original_same": np.nan, "gap_closed": np.nan,
                   "epochs_trained": int(r.epochs_trained), "best_epoch": int(r.best_epoch)}
            if r.case_outcomes:
                # the challenge side from the challenge-best run, the original side from the original's run
                cases, fi, feats, hits = _dose_outcomes(r.case_outcomes, ufuncs, st.base_iid, task_type)
                if r.case_outcomes_original != r.case_outcomes:
                    _, _, feats, hits = _dose_outcomes(r.case_outcomes_original, ufuncs, st.base_iid, task_type)
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
            ev = {**evidence(items, fis[0]), **dose_tests(pairs, task_type, iid_metric, R=R, seeds=draws)}
        pooled[(uid, dose)] = ev
    return rows, pooled, skew


def _dose_outcomes(path: str, ufuncs: list, base_iid: pd.DataFrame, task_type: str):
    """A suite unit's dose from its per-case outcomes file: (the unit's T_test cases, their functionality
    indices, the i.i.d. test examples' features, their 0/1 hits), the i.i.d. examples checked against the
    IID model's (``base_iid``)."""
    from beluga.core.io import read_parquet
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
    from beluga.score.metrics import IID_METRICS

    name = split_name(spec["challenge"])
    head = get_task_type(task_type).head
    base_set = base_out[base_out["split"] == name]
    skew = set_label_skew(base_set.rename(columns={"gold_label": "label"}), head, get_task_type(task_type).iid_labels)
    names = IID_METRICS[task_type] if iid_metric == "mean" else [iid_metric]
    return name, skew, " / ".join(names) + (" (mean)" if len(names) > 1 else "")


def _set_parts(out: pd.DataFrame, name: str, task_type: str, test_ids=None):
    """A challenge set's test examples and the i.i.d. test examples of a model's outcomes, with their features
    and 0/1 hits (as :func:`_set_unit` reads them)."""
    from beluga.report.stats import iid_features

    ch = out[out["split"] == name].copy()
    ch["case_id"] = ch["case_id"].astype(str)
    if test_ids is not None:
        ch = ch[ch["case_id"].isin(test_ids)]
    ch = ch.sort_values("case_id", kind="stable").reset_index(drop=True)
    orig = original_rows(out)
    return SimpleNamespace(ch=ch, ch_f=iid_features(ch, task_type), ch_h=original_hits(ch, task_type), orig=orig,
                           orig_f=iid_features(orig, task_type), orig_h=original_hits(orig, task_type))


def _set_unit(uid: str, spec: dict, states: list, cases_all: pd.DataFrame, *, task_type: str,
              iid_metric: str, R: int, bootstrap: int, conf: float, draws: list) -> tuple[list, dict, dict]:
    """An external challenge set over the training seeds: per seed its test part scored with the task's
    i.i.d. metric, the gap against the original score in that measure, the tests on the same examples
    against the IID model (dose 0), pooled over the seeds: (per-seed rows, pooled evidence per (unit,
    dose), label skew)."""
    from beluga.core.io import read_parquet
    from beluga.score.metrics import iid_metrics, iid_score

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
        c_lo, c_hi = metric_interval([p.ch_f for p in parts], task_type, iid_metric, R=bootstrap, seeds=draws,
                                     level=conf)
        o_lo, o_hi = metric_interval([p.orig_f for p in parts], task_type, iid_metric, R=bootstrap, seeds=draws,
                                     level=conf)
        gap_lo, gap_hi = set_gap_interval([p.ch_f for p in parts], [p.orig_f for p in parts], task_type, iid_metric,
                                          R=bootstrap, seeds=draws, level=conf)
        return {"challenge_lo": c_lo, "challenge_hi": c_hi, "original_lo": o_lo, "original_hi": o_hi,
                "gap_lo": gap_lo, "gap_hi": gap_hi,
                "p_gap": set_gap_test([p.ch_f for p in parts], [p.ch_h for p in parts], [p.orig_f for p in parts],
                                      [p.orig_h for p in parts], task_type, iid_metric, R=R, seeds=draws)}

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
        row = {**info, "seed": st.seed, "dose": "0", "n_cases": 0, "lr": np.nan, "lr_original": np.nan,
               "challenge_val": np.nan, "original_dev": np.nan, "epochs_trained": 0, "best_epoch": 0, **point(b)}
        row["gap_closed"] = 0.0 if row["original_same"] - row["challenge"] > 0 else np.nan
        rows.append(row)
        first.append(row)
    pooled = {(uid, "0"): {**evidence(base), "p_gain": np.nan, "p_original": np.nan, "original_test": ""}}
    for dose in dict.fromkeys(chosen[0]["dose"]):
        now = []
        for st, b, row0 in zip(states, base, first):
            r = _chosen_row(st, uid, dose)
            parts = {}
            for path in dict.fromkeys([r.case_outcomes, r.case_outcomes_original]):
                out = firsts.pop(path) if path in firsts else read_parquet(path, "inoculation outcomes")
                parts[path] = q = _set_parts(out, name, task_type, ids)
                if list(q.ch["case_id"]) != list(b.ch["case_id"]) or list(q.orig["case_id"]) != list(b.orig["case_id"]):
                    raise DataError(f"{path}: field 'case_id': the examples differ from the IID model's")
            # the challenge side from the challenge-best run, the original side from the original score's run
            pc, po = parts[r.case_outcomes], parts[r.case_outcomes_original]
            p = SimpleNamespace(ch=pc.ch, ch_f=pc.ch_f, ch_h=pc.ch_h, orig=po.orig, orig_f=po.orig_f, orig_h=po.orig_h)
            row = {**info, "seed": st.seed, "dose": r.dose, "n_cases": int(r.n_cases), "lr": float(r.lr),
                   "lr_original": float(r.lr_original),
                   "original_dev": 100 * float(r.original_dev),
                   "challenge_val": np.nan if pd.isna(r.challenge_val) else 100 * float(r.challenge_val),
                   "epochs_trained": int(r.epochs_trained),
                   "best_epoch": int(r.best_epoch), **point(p)}
            gap0 = row0["original_same"] - row0["challenge"]
            row["gap_closed"] = (row["challenge"] - row0["challenge"]) / gap0 if gap0 > 0 else np.nan
            rows.append(row)
            now.append(p)
        ev = evidence(now)
        ev["p_gain"], _ = paired_metric_test([b.ch_f for b in base], [p.ch_f for p in now], [b.ch_h for b in base],
                                             [p.ch_h for p in now], task_type, iid_metric, R=R, seeds=draws)
        ev["p_original"], ev["original_test"] = paired_metric_test(
            [b.orig_f for b in base], [p.orig_f for p in now], [b.orig_h for b in base], [p.orig_h for p in now],
            task_type, iid_metric, R=R, seeds=draws)
        pooled[(uid, dose)] = ev
    return rows, pooled, skew
