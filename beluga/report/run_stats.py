"""The statistics of a task's runs: per-unit outcomes of every system,
significance against the IID baseline, bootstrap intervals, the long Table 3
frame (the steps that read and write them: beluga.steps.statistics; the
tests themselves: beluga.report.stats; rendering: beluga.report.tables).

Units and systems (docs/STATISTICS.md):
- a *system* is the IID baseline ("iid", "vanilla"; scenario "standard") or a
  configuration–method pair with one outcome set per scenario (seen, func,
  class, type); in the scenarios with several fold models each T_test case is
  scored by the model that held its functionality out, and the i.i.d.
  features of an example are averaged over those models;
- the *units* are the T_test cases (pass / scored per case) and the i.i.d.
  test examples (per-example features, ``TaskType.iid_features``: SENT, NLI,
  NLI_BINARY correct; PARA and ACCEPTABILITY correct and the class-1 tp / fp /
  fn indicators; READ EM and F1).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from beluga.core.errors import DataError
from beluga.core.io import read_parquet
from beluga.core.seeds import sample_sd, seeds_sd
from beluga.report import bootstrap, stats
from beluga.report.paired import binary_iid_metric, mcnemar, paired_randomization
from beluga.score.metrics import BASELINE, SCENARIO_IID
from beluga.score.outcomes import FILTERED, PASS

BASE_SCENARIO = "standard"


# ---------------------------------------------------------------- unit outcomes
def outcomes_per_unit(runs: list[dict], task_type: str, scenario_iid: str = "folds") -> pd.DataFrame:
    """Long table of per-unit outcomes of every system and scenario.

    runs: dicts with configuration, method, partition, fold and path (an
    outcomes Parquet file). Suite rows (unit "case"): passed / scored of the
    held-out T_test cases; i.i.d. rows (unit "iid"): the task's per-example
    features (stats.IID_FEATURES), averaged over the scenario's fold models
    (``scenario_iid: folds``), or the seen model's in every scenario of a
    pair (``scenario_iid: seen``; metrics.score_runs does the same)."""
    if scenario_iid not in SCENARIO_IID:
        raise ValueError(f"field 'scenario_iid': {scenario_iid!r} is not one of {', '.join(SCENARIO_IID)}")
    feats = stats.IID_FEATURES[task_type]
    groups: dict[tuple, list] = {}
    for run in runs:
        scenario = BASE_SCENARIO if run["configuration"] == BASELINE[0] else run["partition"]
        groups.setdefault((run["configuration"], run["method"], scenario), []).append(run)
    frames = []
    for (conf, method, scenario), members in groups.items():
        cases, iid_sum, iid_ids, n_models = [], None, None, 0
        for run in members:
            out = read_parquet(run["path"], "outcomes")
            suite = out[(out["split"] == "suite_test") & out["held_out"].astype(bool)]
            cases.append(suite[["case_id", "functionality", "status"]])
            iid = out[out["split"] == "iid_test"].sort_values("case_id", kind="stable")
            f = stats.iid_features(iid, task_type)
            ids = iid["case_id"].astype(str).to_numpy()
            if iid_ids is None:
                iid_ids, iid_sum = ids, f.copy()
            elif not np.array_equal(ids, iid_ids):
                raise DataError(f"{run['path']}: field 'case_id': i.i.d. test examples differ between the fold "
                                f"models of {conf}/{method}/{scenario}")
            else:
                iid_sum += f
            n_models += 1
        case_df = pd.concat(cases, ignore_index=True)
        dup = case_df["case_id"].duplicated()
        if dup.any():
            raise DataError(f"{members[0]['path']}: field 'case_id': case {case_df['case_id'][dup].iloc[0]!r} is "
                            f"held out by two folds of {conf}/{method}/{scenario}")
        frames.append(pd.DataFrame({
            "configuration": conf, "method": method, "scenario": scenario, "unit": "case",
            "id": case_df["case_id"].astype(str).to_numpy(), "functionality": case_df["functionality"].to_numpy(),
            "passed": (case_df["status"] == PASS).astype(float).to_numpy(),
            "scored": (case_df["status"] != FILTERED).astype(float).to_numpy(),
            "n_models": n_models}))
        iid_df = pd.DataFrame({"configuration": conf, "method": method, "scenario": scenario, "unit": "iid",
                               "id": iid_ids, "functionality": None, "n_models": n_models})
        for j, name in enumerate(feats):
            iid_df[name] = iid_sum[:, j] / n_models
        frames.append(iid_df)
    if scenario_iid == "seen":
        frames = _seen_iid(frames)
    long = pd.concat(frames, ignore_index=True)
    for col in ("passed", "scored", *feats):
        long[col] = long[col].astype(float)
    return long


def _seen_iid(frames: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """Every scenario's i.i.d. rows replaced by the pair's seen-model rows."""
    seen = {(f["configuration"].iat[0], f["method"].iat[0]): f for f in frames
            if len(f) and f["unit"].iat[0] == "iid" and f["scenario"].iat[0] == "seen"}
    out = []
    for f in frames:
        if len(f) and f["unit"].iat[0] == "iid" and f["configuration"].iat[0] != BASELINE[0]:
            key = (f["configuration"].iat[0], f["method"].iat[0])
            if key not in seen:
                raise DataError(f"field 'scenario_iid': 'seen' takes s_iid from the seen model, but "
                                f"{key[0]}/{key[1]} has no seen run")
            f = seen[key].assign(scenario=f["scenario"].iat[0])
        out.append(f)
    return out


@dataclass
class TaskData:
    task_type: str
    case_ids: np.ndarray
    func_index: np.ndarray
    functionalities: list[str]
    iid_ids: np.ndarray
    scenarios: list[str]
    base: stats.Outcomes
    systems: dict[tuple[str, str], stats.Outcomes]


def task_data(long: pd.DataFrame, functionalities: pd.DataFrame, task_type: str, source: str = "unit outcomes"
              ) -> TaskData:
    """Aligned arrays (units in a fixed order: cases by functionality then id,
    i.i.d. examples by id) of the baseline and every pair, from outcomes_per_unit()."""
    feats = list(stats.IID_FEATURES[task_type])
    funcs = list(functionalities["functionality"])
    base_rows = long[(long.configuration == BASELINE[0]) & (long.method == BASELINE[1])]
    if not len(base_rows):
        raise DataError(f"{source}: field 'configuration': no rows of the IID baseline")
    cases = base_rows[base_rows.unit == "case"].copy()
    cases["_f"] = cases["functionality"].map({f: i for i, f in enumerate(funcs)})
    if cases["_f"].isna().any():
        bad = cases.loc[cases["_f"].isna(), "functionality"].iloc[0]
        raise DataError(f"{source}: field 'functionality': {bad!r} is not in the suite")
    cases = cases.sort_values(["_f", "id"], kind="stable")
    case_ids = cases["id"].to_numpy()
    iid_ids = np.sort(base_rows.loc[base_rows.unit == "iid", "id"].to_numpy())
    scenarios = [s for s in stats.SUITE_SCENARIOS if s in set(long["scenario"])]

    def block(rows: pd.DataFrame, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        c = rows[rows.unit == "case"].set_index("id").reindex(case_ids)
        i = rows[rows.unit == "iid"].set_index("id").reindex(iid_ids)
        if c["passed"].isna().any() or i[feats].isna().any().any():
            raise DataError(f"{source}: field 'id': {what} lacks outcomes for some units of the baseline")
        return c["passed"].to_numpy(float), c["scored"].to_numpy(float), i[feats].to_numpy(float)

    p, s, f = block(base_rows, "the IID baseline")
    base = stats.Outcomes(passed=p[None], scored=s[None], iid=f[None])
    systems = {}
    rest = long[long.configuration != BASELINE[0]]
    for (conf, method), rows in rest.groupby(["configuration", "method"], sort=False):
        blocks = [block(rows[rows.scenario == sc], f"{conf}/{method}/{sc}") for sc in scenarios]
        systems[(conf, method)] = stats.Outcomes(passed=np.stack([b[0] for b in blocks]),
                                                 scored=np.stack([b[1] for b in blocks]),
                                                 iid=np.stack([b[2] for b in blocks]))
    return TaskData(task_type, case_ids, cases["_f"].to_numpy(int), funcs, iid_ids, scenarios, base, systems)


def check_seeds_aligned(datas: list[TaskData], training_seeds=None) -> TaskData:
    """The first seed's TaskData, after checking that every training seed has the same units (T_test cases,
    i.i.d. examples), pairs and scenarios (DataError naming the seed otherwise)."""
    first = datas[0]
    names = list(training_seeds) if training_seeds is not None else list(range(len(datas)))
    for d, ts in zip(datas[1:], names[1:]):
        if list(d.systems) != list(first.systems) or d.scenarios != first.scenarios:
            raise DataError(f"unit outcomes: field 'seed': training seed {ts} has other configuration-method "
                            f"pairs or scenarios than training seed {names[0]}")
        if not (np.array_equal(d.case_ids, first.case_ids) and np.array_equal(d.iid_ids, first.iid_ids)):
            raise DataError(f"unit outcomes: field 'id': training seed {ts} was scored on other T_test cases or "
                            f"i.i.d. examples than training seed {names[0]}")
    return first


def _per_seed(datas: list[TaskData], seeds, what: str) -> tuple[list[TaskData], list]:
    """(the training seeds' TaskData, their draw seeds: 0 each by default), checked to match."""
    datas = list(datas)
    if not datas:
        raise ValueError(f"{what}: no training seed")
    draw_seeds = [0] * len(datas) if seeds is None else list(seeds)
    if len(draw_seeds) != len(datas):
        raise ValueError(f"{what}: {len(draw_seeds)} draw seeds for {len(datas)} training seeds")
    return datas, draw_seeds


# ---------------------------------------------------------------- significance
def significance_table(datas: list[TaskData], *, iid_metric: str = "mean", R: int = 10_000, seeds=None,
                       alpha: float = 0.05, correction: str = "none", training_seeds=None, swaps: str = "shared"
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tests of every pair against the IID baseline: the i.i.d. score of the seen model vs the IID model,
    tested on the score shown (an accuracy or exact match: exact binomial test on the discordant examples;
    F1, MCC or the mean of two metrics: paired approximate randomization of that score, R draws,
    beluga.report.paired.paired_randomization) and each G and the average G (approximate randomization, R
    draws; ``swaps``: stats.randomization_test). Returns (table, null distribution of the average-G
    difference per pair, for the cross-task Avg).

    ``datas``: one TaskData per training seed, N ≥ 1 (``seeds``: as many draw seeds, :func:`draw_seed`;
    default 0 each; ``training_seeds`` names the seeds in errors). The tests are stratified by seed
    (docs/STATISTICS.md): the statistic is the mean over seeds of the per-seed difference, each seed's
    units swapped by its own draws (the null is the mean of the seeds' nulls, draw by draw; the i.i.d.
    randomization alike); the binomial test pools the discordant examples of every seed. The table also
    has n_seeds, seeds_better / seeds_worse (seeds whose own difference is positive / negative) and
    delta_sd (over seeds; empty with one seed). One seed: the one-seed test, the same p-values."""
    datas, draw_seeds = _per_seed(datas, seeds, "significance")
    first = check_seeds_aligned(datas, training_seeds)
    n_func = len(first.functionalities)

    def scores_of(o, d):
        return stats.scores(o, d.func_index, n_func, d.task_type, iid_metric)

    base_scores = [scores_of(d.base, d) for d in datas]
    rows, nulls = [], []
    for (conf, method) in first.systems:
        sys_scores = [scores_of(d.systems[(conf, method)], d) for d in datas]

        def spread(deltas) -> dict:
            deltas = np.asarray(deltas, dtype=float)
            return {"n_seeds": len(deltas), "seeds_better": int(np.sum(deltas > 0)),
                    "seeds_worse": int(np.sum(deltas < 0)), "delta_sd": seeds_sd(deltas)}

        if "seen" in first.scenarios:
            k = first.scenarios.index("seen")
            base_v = float(np.mean([float(bs["s_iid"][0]) for bs in base_scores]))
            sys_v = float(np.mean([float(ss["s_iid"][k]) for ss in sys_scores]))
            row = {"configuration": conf, "method": method, "column": "iid", "test": "", "baseline_value": base_v,
                   "value": sys_v, "delta": sys_v - base_v}
            if binary_iid_metric(first.task_type, iid_metric):   # the discordant examples summed over seeds
                b = mcnemar([(d.base.iid[0, :, 0] > 0.5, d.systems[(conf, method)].iid[k, :, 0] > 0.5)
                             for d in datas])
                row.update(test="binomial", p_value=b["p_value"], n_discordant=b["n_discordant"],
                           baseline_only=b["lost"], system_only=b["gained"], R=np.nan)
            else:   # F1 or a mean of two metrics: the shown score itself, paired randomization
                r = paired_randomization([(d.base.iid[0], d.systems[(conf, method)].iid[k]) for d in datas],
                                         first.task_type, iid_metric, R=R, seeds=draw_seeds)
                row.update(test="randomization", p_value=r["p_value"], n_discordant=r["n_discordant"],
                           baseline_only=np.nan, system_only=np.nan, R=R)
            rows.append({**row, **spread([float(ss["s_iid"][k]) - float(bs["s_iid"][0])
                                          for ss, bs in zip(sys_scores, base_scores)])})
        rts = [stats.randomization_test(d.base, d.systems[(conf, method)], d.func_index, n_func, d.task_type,
                                        iid_metric, R=R, seed=ds, return_null=True, swaps=swaps)
               for d, ds in zip(datas, draw_seeds)]
        rt = stats.combine_randomization(rts)
        base_g = float(np.mean([float(bs["G"][0]) for bs in base_scores]))
        for k, sc in enumerate(first.scenarios):
            rows.append({"configuration": conf, "method": method, "column": f"G_{sc}", "test": "randomization",
                         "baseline_value": base_g, "value": float(np.mean([float(ss["G"][k]) for ss in sys_scores])),
                         "delta": float(rt["delta"][k]), "p_value": float(rt["p"][k]), "R": R,
                         **spread([float(r["delta"][k]) for r in rts])})
        rows.append({"configuration": conf, "method": method, "column": "G_avg", "test": "randomization",
                     "baseline_value": base_g, "value": float(np.mean([float(ss["G_avg"]) for ss in sys_scores])),
                     "delta": float(rt["delta_avg"]), "p_value": float(rt["p_avg"]), "R": R,
                     **spread([float(r["delta_avg"]) for r in rts])})
        nulls.append(pd.DataFrame({"configuration": conf, "method": method, "draw": np.arange(R),
                                   "null_avg": rt["null_avg"].astype(float)}))
    table = pd.DataFrame(rows)
    if not len(table):
        raise DataError("significance: field 'configurations': no configuration-method pair to compare")
    table = mark(table, alpha, correction)
    null = pd.concat(nulls, ignore_index=True)
    return table, null


def mark(table: pd.DataFrame, alpha: float, correction: str) -> pd.DataFrame:
    """p_adjusted (Holm across the pairs of each column, or unadjusted),
    significant and direction (+1 better, -1 worse, 0)."""
    table = table.copy()
    if correction == "holm":
        table["p_adjusted"] = table.groupby("column", sort=False)["p_value"].transform(
            lambda p: pd.Series(stats.holm(p.to_numpy(float)), index=p.index))
    elif correction == "none":
        table["p_adjusted"] = table["p_value"]
    else:
        raise ValueError(f"field 'statistics.correction': unknown correction {correction!r} (none, holm)")
    table["significant"] = table["p_adjusted"] < alpha
    delta = table["delta"].astype(float)   # NaN: a metric undefined on one side (a constant regression predictor)
    table["direction"] = np.where(table["significant"] & delta.notna(), np.sign(delta.fillna(0.0)).astype(int), 0)
    return table


def task_seed(seed: int, task: str) -> int:
    """Independent draws per task (the cross-task Avg pairs the draws by index)."""
    return int(seed) * 1_000_003 + zlib.crc32(task.encode())


def draw_seed(seed: int, task: str, training_seed: int, base_seed: int):
    """The seed of the randomization / bootstrap draws of one training seed's units: the task's
    (:func:`task_seed`) for the base seed — a one-seed run's draws —, [task seed, training seed] for
    another (independent draws, unchanged when seeds are added)."""
    t = task_seed(seed, task)
    return t if int(training_seed) == int(base_seed) else [t, int(training_seed)]


def seed_resampling_seed(seed: int, task: str) -> list[int]:
    """The seed of the hierarchical bootstrap's draws of training seeds (a three-word key, which no
    :func:`draw_seed` uses)."""
    return [task_seed(seed, task), 0, 0]


# ---------------------------------------------------------------- intervals
def interval_table(datas: list[TaskData], *, iid_metric: str = "mean", R: int = 1000, seeds=None,
                   level: float = 0.95, outer_seed=0, training_seeds=None) -> pd.DataFrame:
    """Percentile bootstrap intervals of s_iid, s_T and G per scenario and of
    the average G, for the baseline (scenario standard) and every pair.

    ``datas``: one TaskData per training seed, N ≥ 1 (``seeds``: as many draw seeds, default 0 each;
    ``outer_seed``: the seed of the draws of seeds): the estimate is the mean over seeds and the interval
    a hierarchical bootstrap, seeds then units (bootstrap.bootstrap_ci), with an ``n_seeds`` column. One
    seed: the one-seed intervals."""
    datas, draw_seeds = _per_seed(datas, seeds, "intervals")
    first = check_seeds_aligned(datas, training_seeds)
    n_func = len(first.functionalities)
    rows = []
    plan = [(BASELINE, [d.base for d in datas], [BASE_SCENARIO])] + \
        [(k, [d.systems[k] for d in datas], first.scenarios) for k in first.systems]
    for (conf, method), os_, scen in plan:
        ests = [stats.scores(o, first.func_index, n_func, first.task_type, iid_metric) for o in os_]
        est = {q: np.mean([e[q] for e in ests], axis=0) for q in ("s_T", "s_iid", "G", "G_avg")}
        ci = bootstrap.bootstrap_ci(os_, first.func_index, n_func, first.task_type, iid_metric, R=R,
                                    seeds=draw_seeds, outer_seed=outer_seed, level=level)
        for k, sc in enumerate(scen):
            for q, name in (("s_iid", f"s_iid_{sc}"), ("s_T", f"s_{sc}"), ("G", f"G_{sc}")):
                rows.append({"configuration": conf, "method": method, "quantity": name,
                             "estimate": float(est[q][k]), "lo": float(ci[q][k][0]), "hi": float(ci[q][k][1])})
        if conf != BASELINE[0]:
            rows.append({"configuration": conf, "method": method, "quantity": "G_avg",
                         "estimate": float(est["G_avg"]), "lo": float(ci["G_avg"][0]), "hi": float(ci["G_avg"][1])})
    out = pd.DataFrame(rows)
    out["level"] = level
    out["R"] = R
    out["n_seeds"] = len(datas)
    return out


# ---------------------------------------------------------------- Table 3
TABLE_COLUMNS = ("iid", "G_seen", "G_func", "G_class", "G_type", "G_avg")


def _table_values(r: dict, scen: list[str], is_base: bool) -> dict[str, float]:
    """A scores row's Table 3 values: the i.i.d. score, G per scenario (the baseline's G_standard), G_avg."""
    values = {"iid": float(r["iid_score"])}
    for sc in scen:
        values[f"G_{sc}"] = float(r["G_standard"] if is_base else r[f"G_{sc}"])
    values["G_avg"] = float(np.mean([values[f"G_{sc}"] for sc in scen])) if scen else np.nan
    return values


def _seed_values(seed_scores: pd.DataFrame, scen: list[str]) -> dict[tuple[str, str], dict[int, dict]]:
    """(configuration, method) -> training seed -> its Table 3 values."""
    out: dict[tuple[str, str], dict[int, dict]] = {}
    for r in seed_scores.to_dict("records"):
        key = (r["configuration"], r["method"])
        out.setdefault(key, {})[int(r["seed"])] = _table_values(r, scen, r["configuration"] == BASELINE[0])
    return out


def table3_long(per_task: dict[str, dict], alpha: float, correction: str) -> pd.DataFrame:
    """The long Table 3 frame (beluga.report.tables) from each task's scores.csv,
    significance.csv, intervals.csv and null_avg.parquet (DataFrames in
    per_task[task] under those keys), plus the cross-task Avg (task "all")
    when several tasks ran: mean G over tasks and scenarios, tested by pairing
    the tasks' randomization draws by index. Every value is the mean over
    the training seeds (``seed_scores``: per_seed_scores.csv; ``paths``: the
    files' names for errors), with ``sd`` (over seeds; empty with one seed)
    and ``n_seeds``, which must be the ``n_seeds`` of scores.csv,
    significance.csv and intervals.csv (DataError otherwise)."""
    rows = []
    for task, d in per_task.items():
        scores, sig, ci = d["scores"], d["significance"], d["intervals"]
        scen = [c[2:] for c in TABLE_COLUMNS[1:-1] if c in set(sig["column"])]
        ci_idx = ci.set_index(["configuration", "method", "quantity"])
        sig_idx = sig.set_index(["configuration", "method", "column"])
        metric_cols = [c for c in scores.columns if c.startswith("iid_") and c != "iid_score"
                       and not c.endswith(("_sd", "_min", "_max"))]
        by_seed = _seed_values(d["seed_scores"], scen)
        for r in scores.to_dict("records"):
            conf, method = r["configuration"], r["method"]
            is_base = conf == BASELINE[0]
            n_seeds = _checked_seeds(d, conf, method, by_seed, task)
            if len(metric_cols) > 1:  # PARA / READ: each canonical metric too (unmarked), before "iid"
                rows += [{"task": task, "configuration": conf, "method": method, "column": m,
                          "value": float(r[m]), "ci_lo": np.nan, "ci_hi": np.nan, "p_value": np.nan,
                          "p_adjusted": np.nan, "significant": False, "direction": 0,
                          "sd": float(r[f"{m}_sd"]), "n_seeds": n_seeds} for m in metric_cols]
            values = _table_values(r, scen, is_base)
            for col, v in values.items():
                q = {"iid": "s_iid_seen", "G_avg": "G_avg"}.get(col, col)
                if is_base:
                    q = {"iid": "s_iid_standard"}.get(col, "G_standard")
                lo, hi = (ci_idx.loc[(conf, method, q), ["lo", "hi"]].to_numpy(float)
                          if (conf, method, q) in ci_idx.index else (np.nan, np.nan))
                row = {"task": task, "configuration": conf, "method": method, "column": col, "value": float(v),
                       "ci_lo": lo, "ci_hi": hi, "p_value": np.nan, "p_adjusted": np.nan, "significant": False,
                       "direction": 0, "sd": sample_sd(sv[col] for sv in by_seed[(conf, method)].values()),
                       "n_seeds": n_seeds}
                if not is_base and (conf, method, col) in sig_idx.index:
                    s = sig_idx.loc[(conf, method, col)]
                    row.update(p_value=float(s["p_value"]), p_adjusted=float(s["p_adjusted"]),
                               significant=bool(s["significant"]), direction=int(s["direction"]))
                rows.append(row)
    long = pd.DataFrame(rows)
    if len(per_task) > 1:
        long = pd.concat([long, _cross_task_avg(long, per_task, alpha, correction)], ignore_index=True)
    return long


#: the files a task's Table 3 rows are read from, each with an ``n_seeds`` column (per_task keys)
SEEDED_FILES = {"scores": "scores.csv", "significance": "significance.csv", "intervals": "intervals.csv"}


def _checked_seeds(d: dict, conf: str, method: str, by_seed: dict, task: str) -> int:
    """The training seeds behind a pair's Table 3 rows: its seeds in per_seed_scores.csv, checked against the
    ``n_seeds`` of its rows in scores.csv, significance.csv and intervals.csv (one line naming the file and
    field otherwise: a file written for other seeds)."""
    paths = d.get("paths", {})
    have = len(by_seed.get((conf, method), {}))
    for key, name in SEEDED_FILES.items():
        frame = d[key]
        where = paths.get(key, f"{task} {name}")
        if "n_seeds" not in frame.columns:
            raise DataError(f"{where}: field 'n_seeds': missing (a file of an older run? rerun its rule)")
        rows = frame[(frame["configuration"] == conf) & (frame["method"] == method)]
        n = pd.to_numeric(rows["n_seeds"], errors="coerce")
        bad = n[n != have]
        if len(bad):
            shown = "empty" if pd.isna(bad.iloc[0]) else int(bad.iloc[0])
            raise DataError(f"{where}: field 'n_seeds': {shown} for {conf}/{method}, but "
                            f"{paths.get('seed_scores', 'per_seed_scores.csv')} has {have} training seed(s) of it")
    return have


def _cross_task_sd(per_task: dict[str, dict], conf: str, method: str) -> float:
    """The standard deviation over training seeds of a pair's cross-task Avg (each seed's mean over tasks of
    its G_avg; the seeds every task has)."""
    per_seed: dict[int, list[float]] = {}
    for d in per_task.values():
        scen = [c[2:] for c in TABLE_COLUMNS[1:-1] if c in set(d["significance"]["column"])]
        for s, v in _seed_values(d["seed_scores"], scen).get((conf, method), {}).items():
            per_seed.setdefault(s, []).append(v["G_avg"])
    return sample_sd(np.mean(v) for v in per_seed.values() if len(v) == len(per_task))


def _cross_task_avg(long: pd.DataFrame, per_task: dict[str, dict], alpha: float, correction: str) -> pd.DataFrame:
    g = long[long.column == "G_avg"]
    pairs = list(dict.fromkeys(zip(g.configuration, g.method)))
    tasks = list(per_task)
    rows = []
    for conf, method in pairs:
        sel = g[(g.configuration == conf) & (g.method == method)]
        value = float(sel["value"].mean()) if len(sel) == len(tasks) else np.nan
        row = {"task": "all", "configuration": conf, "method": method, "column": "Avg", "value": value,
               "ci_lo": np.nan, "ci_hi": np.nan, "p_value": np.nan, "delta": np.nan}
        if len(sel) == len(tasks):
            row.update(sd=_cross_task_sd(per_task, conf, method), n_seeds=int(sel["n_seeds"].min()))
        if conf != BASELINE[0] and len(sel) == len(tasks):
            deltas, nulls = [], []
            for t in tasks:
                s = per_task[t]["significance"]
                s = s[(s.configuration == conf) & (s.method == method) & (s.column == "G_avg")]
                n = per_task[t]["null"]
                n = n[(n.configuration == conf) & (n.method == method)].sort_values("draw")
                deltas.append(float(s["delta"].iloc[0]))
                nulls.append(n["null_avg"].to_numpy(float))
            if len({len(n) for n in nulls}) != 1:
                raise DataError("table3: field 'statistics.randomization_R': tasks were tested with different R")
            delta, null = float(np.mean(deltas)), np.mean(nulls, axis=0)
            row["delta"] = delta
            row["p_value"] = (np.sum(np.abs(null) >= abs(delta) - stats.TIE_TOL) + 1) / (len(null) + 1)
        rows.append(row)
    out = pd.DataFrame(rows)
    tested = out[out.configuration != BASELINE[0]]
    marked = mark(tested, alpha, correction)
    out["p_adjusted"] = marked["p_adjusted"].reindex(out.index)
    out["significant"] = marked["significant"].reindex(out.index).fillna(False).astype(bool)
    out["direction"] = marked["direction"].reindex(out.index).fillna(0).astype(int)
    return out.drop(columns=["delta"])
