"""The OOD evaluation of a task's runs (docs/OOD.md): the long scores of the IID model and
every pair's seen model on the i.i.d. test set and each OOD set, the test of each pair against the
IID model on the score a cell shows (exact binomial; a two-metric mean: paired randomization), the
OOD table, and the scores of every model. The GLUE-X summary
(ranking, decrease ratio, Friedman ranks, ID–OOD correlation) and the output columns are
beluga/analyses/ood_eval.py; the Markdown, LaTeX and figure, beluga/analyses/ood_report.py.

Training seeds (:func:`evaluate`; docs/OOD.md, "Training seeds"): one path for any number of
seeds. Each seed is evaluated as a one-seed run; the long table holds the mean over seeds (with
its spread), the ranking and correlation use those means, the OOD table's cells are the means
of the seeds' own cells (with their standard deviations), and the test against the IID model
is stratified by seed (the discordant examples pooled, or each seed's randomization draws combined).
One seed is N = 1: the means are its own scores, the test is its own, ``n_seeds`` is 1 and every
``_sd`` is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from beluga.analyses.ood_eval import (
    ID_DATASET,
    MODEL_COLUMNS,
    TABLE_TAIL,
    id_ood_correlation,
    rank_systems,
    system_label,
    system_name,
)
from beluga.core.errors import DataError
from beluga.core.seeds import N_SEEDS_COLUMN, SEED_COLUMN, over_seeds, per_seed_frame, seeds_legend, seeds_sd
from beluga.core.tasks import get_task_type
from beluga.data.ood_sets import ADDITION, split_name
from beluga.score.metrics import BASELINE, iid_metrics, reported_metrics


def long_scores(runs: list[dict], names: list[str], task: str, task_type: str, backbone: str = "",
                credits: dict[str, str] | None = None, ood_metric: str = "mean") -> pd.DataFrame:
    """The long score table (×100) of the systems' ID (i.i.d. test) and OOD sets.
    runs: the IID baseline and each pair's seen model, with ``outcomes`` loaded;
    ``backbone`` and ``task_type`` are columns for the ranking over tasks. ``ood_metric``
    (``tasks.<id>.ood_metric``): ``mean``, every metric of the task (a dataset's score is their mean, as
    GLUE-X averages MRPC's accuracy and F1), or the one metric kept (CoLA: GLUE-X's MCC alone)."""
    rows = []
    for run in runs:
        sysname = system_name(run["configuration"], run["method"])
        out = run["outcomes"]
        for dataset, split, domain in [(ID_DATASET, "iid_test", "id")] + [(n, split_name(n), "ood") for n in names]:
            part = out[out["split"] == split]
            if not len(part):
                raise DataError(f"{run['path']}: field 'split': no {split!r} outcomes (the model did not predict "
                                f"{dataset})")
            for metric, value in iid_metrics(out, task_type, split=split).items():
                if ood_metric != "mean" and metric != ood_metric:
                    continue
                if value != value and "pred_score" in part.columns:
                    raise DataError(f"{run['path']}: field 'pred_score': the model predicts one score for every "
                                    f"{dataset} example, so its {metric} correlation is undefined (a constant "
                                    f"predictor: its diagnostics flag it degenerate)")
                rows.append({"system": sysname, "configuration": run["configuration"], "method": run["method"],
                             "task": task, "dataset": dataset, "domain": domain, "metric": metric,
                             "value": 100.0 * value, "n": int(len(part)), "backbone": backbone,
                             "task_type": task_type,
                             "credit": "" if domain == "id" else (credits or {}).get(dataset, ADDITION)})
    return pd.DataFrame(rows)


SIGNIFICANCE_COLUMNS = ["configuration", "method", "column", "test", "p_value", "n_discordant", "baseline_only",
                        "system_only", "delta", "p_adjusted", "significant", "direction"]

#: the score an OOD cell shows: the mean of the task's metrics (beluga.score.metrics.IID_METRICS)
OOD_METRIC = "mean"


def _significance_rows(runs: list[dict], names: list[str], task_type: str = "sent",
                       metric: str = OOD_METRIC) -> list[dict]:
    """One training seed's comparisons (:func:`ood_significance`), before the test: per pair and set, the
    discordant counts of ``correct`` (a 0/1 score: SENT) or the per-example features of both models
    (``_pair``: a two-metric mean, PARA / READ), and ``delta``, the difference of the score the cell shows."""
    from beluga.report.paired import binary_iid_metric
    from beluga.report.stats import iid_features, iid_statistic

    base = next((r for r in runs if (r["configuration"], r["method"]) == BASELINE), None)
    if base is None:
        raise DataError("ood: field 'runs': the IID baseline's outcomes are missing")
    binary = binary_iid_metric(task_type, metric)
    rows = []
    for name in names:
        split = split_name(name)
        b = base["outcomes"][base["outcomes"]["split"] == split].set_index("case_id")
        for run in runs:
            if run is base:
                continue
            s = run["outcomes"][run["outcomes"]["split"] == split].set_index("case_id")
            if set(s.index) != set(b.index):
                raise DataError(f"{run['path']}: field 'case_id': the {name} examples differ from the IID model's")
            s = s.reindex(b.index)
            row = {"configuration": run["configuration"], "method": run["method"], "column": name}
            if binary:
                bc, sc = b["correct"].to_numpy(dtype=bool), s["correct"].to_numpy(dtype=bool)
                row.update(baseline_only=int((bc & ~sc).sum()), system_only=int((sc & ~bc).sum()),
                           delta=float(sc.mean() - bc.mean()))
            else:
                bf, sf = iid_features(b, task_type), iid_features(s, task_type)
                row.update(_pair=(bf, sf), delta=float(iid_statistic(sf.mean(axis=0), task_type, metric)
                                                       - iid_statistic(bf.mean(axis=0), task_type, metric)))
            rows.append(row)
    return rows


#: the columns of a test over the training seeds (:func:`_pooled_rows`)
POOLED_COLUMNS = (N_SEEDS_COLUMN, "seeds_better", "seeds_worse", "delta_sd")


def _pooled_rows(per_seed: Mapping, task_type: str = "sent", R: int = 10_000, draw_seeds=None,
                 metric: str = OOD_METRIC) -> list[dict]:
    """The tests of the training seeds as one test per pair and set, stratified by seed: the exact
    binomial test on the discordant examples summed over seeds (``stats.binomial_counts_test``; a 0/1
    score), or the paired randomization of the two-metric mean, each seed's examples swapped by its own
    draws (``paired.paired_randomization``, R draws, ``draw_seeds``: training seed -> (set -> draw
    seed)); ``delta`` the mean over seeds of each seed's difference, with :data:`POOLED_COLUMNS`:
    ``n_seeds``, ``seeds_better`` / ``seeds_worse`` (seeds whose own difference is positive / negative)
    and ``delta_sd``. One seed: its own test (the same counts, p-value and difference; ``delta_sd``
    empty)."""
    from beluga.report.paired import paired_randomization
    from beluga.report.stats import binomial_counts_test

    by_key: dict[tuple, list[tuple]] = {}
    for seed, rows in per_seed.items():
        for r in rows:
            by_key.setdefault((r["configuration"], r["method"], r["column"]), []).append((seed, r))
    out = []
    for (conf, method, column), seeded in by_key.items():
        rows = [r for _, r in seeded]
        deltas = np.array([r["delta"] for r in rows], dtype=float)
        row = {"configuration": conf, "method": method, "column": column}
        if "_pair" in rows[0]:
            seeds = None if draw_seeds is None else [draw_seeds(sd, column) for sd, _ in seeded]
            t = paired_randomization([r["_pair"] for r in rows], task_type, metric, R=R, seeds=seeds)
            row.update(test="randomization", p_value=t["p_value"], n_discordant=t["n_discordant"],
                       baseline_only=np.nan, system_only=np.nan)
        else:
            t = binomial_counts_test(sum(r["baseline_only"] for r in rows), sum(r["system_only"] for r in rows))
            row.update(test="binomial", p_value=t["p_value"], n_discordant=t["n_discordant"],
                       baseline_only=t["a_only"], system_only=t["b_only"])
        out.append({**row, "delta": float(deltas.mean()), N_SEEDS_COLUMN: len(rows),
                    "seeds_better": int(np.sum(deltas > 0)), "seeds_worse": int(np.sum(deltas < 0)),
                    "delta_sd": seeds_sd(deltas)})
    return out


def ood_significance(runs: list[dict], names: list[str], alpha: float, correction: str, task_type: str = "sent",
                     R: int = 10_000, seed: int = 0, task: str = "", base_seed: int | None = None,
                     metric: str = OOD_METRIC) -> pd.DataFrame:
    """Per pair and OOD set, a two-sided test against the IID baseline of the score the cell shows (the mean
    of the task's metrics): SENT, accuracy: exact binomial test on the discordant examples; PARA (accuracy,
    duplicate-class F1) and READ (EM, F1): paired approximate randomization of the mean of the two, both
    recomputed in each of R draws (beluga.report.paired.paired_randomization; draws seeded by
    ``run_stats.draw_seed(seed, "<task>/ood/<set>", training seed, base_seed)``). p adjusted per OOD set
    across pairs (Holm) or not.

    Each training seed's system is paired with the same seed's IID model (the
    records' ``seed``; :func:`runs_by_seed`), and the test is stratified by seed
    (:func:`_pooled_rows`, with :data:`POOLED_COLUMNS`); with one seed, that is
    the seed's own test."""
    from beluga.report.run_stats import draw_seed, mark

    groups = runs_by_seed(runs)
    base = next(iter(groups)) if base_seed is None else base_seed   # None: records without a seed (one seed)

    def draws(training_seed, name: str):
        return draw_seed(seed, f"{task}/ood/{name}", 0 if training_seed is None else training_seed,
                         0 if base is None else base)

    rows = _pooled_rows({s: _significance_rows(g, names, task_type, metric) for s, g in groups.items()}, task_type,
                        R, draws, metric)
    if not rows:
        return pd.DataFrame(columns=SIGNIFICANCE_COLUMNS)
    return mark(pd.DataFrame(rows), alpha, correction)


def ood_table(long: pd.DataFrame, ranking: pd.DataFrame, sig: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """One row per system: ID score, each OOD set's score, its difference to
    the IID baseline and test, OOD average, decrease ratio and ranks."""
    per_ds = long.groupby(["system", "configuration", "method", "dataset"], sort=False)["value"].mean()
    systems = list(dict.fromkeys(zip(long["system"], long["configuration"], long["method"])))
    base_sys = system_name(*BASELINE)
    rank = ranking.set_index("system")
    sig_idx = sig.set_index(["configuration", "method", "column"]) if len(sig) else None
    rows = []
    for sysname, conf, method in systems:
        # TABLE_LEAD, the sets' columns (SET_COLUMN_SUFFIXES), TABLE_TAIL
        row = {"system": sysname, "configuration": conf, "method": method, "label": system_label(conf, method),
               "id": per_ds[(sysname, conf, method, ID_DATASET)]}
        if "backbone" in long.columns:
            row["backbone"] = str(long.loc[long["system"] == sysname, "backbone"].iloc[0])
        for n in names:
            v = per_ds[(sysname, conf, method, n)]
            row[n] = v
            row[f"{n}_delta"] = v - per_ds[(base_sys, *BASELINE, n)] if (base_sys, *BASELINE, n) in per_ds else np.nan
            key = (conf, method, n)
            if sig_idx is not None and key in sig_idx.index:
                row[f"{n}_p"] = float(sig_idx.at[key, "p_adjusted"])
                row[f"{n}_direction"] = int(sig_idx.at[key, "direction"])
            else:
                row[f"{n}_p"], row[f"{n}_direction"] = np.nan, 0
        for c in TABLE_TAIL:
            row[c] = float(rank.at[sysname, c])
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- training seeds

#: the keys of a scores.csv row (one score per system, dataset and metric)
LONG_KEYS = ["system", "configuration", "method", "task", "dataset", "domain", "metric"]


def _run_key(run: Mapping) -> str:
    return "/".join(str(run.get(k)) for k in ("configuration", "method", "partition", "fold") if k in run)


def runs_by_seed(runs: list[dict], field: str = "runs") -> dict:
    """The records of ``runs`` per training seed (their ``seed``, seeds in order of first appearance);
    records without ``seed`` are one seed (key None). With several seeds every seed must have the same runs
    (configuration, method, partition, fold), each once: otherwise one line naming ``field``."""
    has = [SEED_COLUMN in r for r in runs]
    if not any(has):
        return {None: list(runs)}
    if not all(has):
        i = has.index(False)
        raise DataError(f"ood: field '{field}': record {i} ({_run_key(runs[i])}) has no {SEED_COLUMN!r} "
                        "(the others have one)")
    groups: dict[int, list[dict]] = {}
    for r in runs:
        groups.setdefault(int(r[SEED_COLUMN]), []).append(r)
    if len(groups) == 1:
        return groups
    first, *others = groups
    want = [_run_key(r) for r in groups[first]]
    for seed in groups:
        have = [_run_key(r) for r in groups[seed]]
        dup = next((k for i, k in enumerate(have) if k in have[:i]), None)
        if dup is not None:
            raise DataError(f"ood: field '{field}': training seed {seed} has the run {dup} twice")
        missing = next((k for k in want if k not in have), None)
        if missing is not None:
            raise DataError(f"ood: field '{field}': training seed {seed} has no {missing} run (training seed "
                            f"{first} has one; every seed needs the same runs)")
        extra = next((k for k in have if k not in want), None)
        if extra is not None:
            raise DataError(f"ood: field '{field}': training seed {seed} has a {extra} run that training seed "
                            f"{first} lacks (every seed needs the same runs)")
    return groups


def check_seed_examples(groups: Mapping[int, list[dict]], names: list[str]) -> None:
    """Every training seed's IID model scored the same examples of the i.i.d. test set and of each OOD set
    (the data samples do not depend on the training seed; each seed's systems are checked against its own
    IID model by :func:`ood_significance`): otherwise one line naming the outcomes file. One seed: nothing
    to compare (its IID model is checked by :func:`ood_significance`)."""
    if len(groups) < 2:
        return
    bases = {s: next((r for r in g if (r["configuration"], r["method"]) == BASELINE), None)
             for s, g in groups.items()}
    for s, base in bases.items():
        if base is None:
            raise DataError(f"ood: field 'runs': the IID baseline's outcomes of training seed {s} are missing")
    first = next(iter(bases))
    for split in ["iid_test", *[split_name(n) for n in names]]:
        want = None
        for s, base in bases.items():
            out = base["outcomes"]
            ids = set(out.loc[out["split"] == split, "case_id"])
            if want is None:
                want = ids
            elif ids != want:
                raise DataError(f"{base['path']}: field 'case_id': the {split!r} examples of training seed {s} "
                                f"differ from training seed {first}'s (every seed must score the same examples)")


def _stacked(frames: Mapping) -> pd.DataFrame:
    """Each training seed's frame under a leading ``seed`` (records without a seed: one seed, 0)."""
    return per_seed_frame({0 if s is None else s: f for s, f in frames.items()})


def long_over_seeds(longs: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """scores.csv from each training seed's :func:`long_scores`: per system, dataset and metric the
    mean over seeds (``value``, what ``rank_systems`` / ``ood-rank`` read), then
    ``ood_eval.LONG_SEED_COLUMNS``: ``n_seeds`` and ``value_sd`` / ``value_min`` / ``value_max``
    (beluga.core.seeds.over_seeds); ``n`` and the labels are the first seed's. One seed: its own scores,
    ``n_seeds`` 1 and ``value_sd`` empty."""
    return over_seeds(_stacked(longs), LONG_KEYS, ["value"])


def ood_table_over_seeds(longs: Mapping[int, pd.DataFrame], rankings: Mapping[int, pd.DataFrame],
                         long: pd.DataFrame, ranking: pd.DataFrame, sig: pd.DataFrame, names: list[str]
                         ) -> pd.DataFrame:
    """ood_table.csv over the training seeds: :func:`ood_table` on the means (``long``:
    :func:`long_over_seeds`; ``ranking`` on it; ``sig``: the pooled tests), whose ID, set, difference, OOD
    average and decrease ratio cells are then the mean over seeds of each seed's own :func:`ood_table` cell
    (``longs`` and ``rankings``: each seed's scores and ranking; the OOD average and the decrease ratio of
    each seed, averaged), followed by ``ood_eval.TABLE_SEED_COLUMNS`` and each set's ``_sd`` / ``_delta_sd``
    (sample standard deviations over seeds). One seed: its own table, ``n_seeds`` 1 and every ``_sd``
    empty."""
    table = ood_table(long, ranking, sig, names)
    values = ["id", *names, *[f"{n}_delta" for n in names], "ood_avg", "decrease_ratio"]
    per_seed = _stacked({s: ood_table(one, rankings[s], pd.DataFrame(), names)[["system", *values]]
                         for s, one in longs.items()})
    over = over_seeds(per_seed, ["system"], values).set_index("system").reindex(table["system"])
    for v in values:
        table[v] = over[v].to_numpy(dtype=float)
    table[N_SEEDS_COLUMN] = over[N_SEEDS_COLUMN].to_numpy(dtype=int)
    table["id_sd"] = over["id_sd"].to_numpy(dtype=float)
    for n in names:
        table[f"{n}_sd"] = over[f"{n}_sd"].to_numpy(dtype=float)
        table[f"{n}_delta_sd"] = over[f"{n}_delta_sd"].to_numpy(dtype=float)
    table["ood_avg_sd"] = over["ood_avg_sd"].to_numpy(dtype=float)
    table["decrease_ratio_sd"] = over["decrease_ratio_sd"].to_numpy(dtype=float)
    return table


# ---------------------------------------------------------------- metrics reported beside the score

#: the reported metrics' rows (:func:`reported_scores`)
REPORTED_KEYS = ["system", "configuration", "method", "dataset", "metric"]
#: the dataset name of the i.i.d. test set in the reported metrics' columns of ood_table.csv
REPORTED_ID = "id"


def reported_column(metric: str, dataset: str, sd: bool = False) -> str:
    """ood_table.csv's column of a reported metric on a dataset (``pearson:id``, ``spearman:sick``; with ``sd``
    its standard deviation over training seeds, ``pearson_sd:sick``): a ``:`` no OOD set name holds, so never a
    set's own column."""
    return f"{metric}{'_sd' if sd else ''}:{dataset}"


def reported_scores(runs: list[dict], names: list[str], task_type: str) -> pd.DataFrame:
    """One training seed's metrics reported beside the score (``TaskType.reported_metrics``; SIMILARITY_CLASSES:
    GLUE's STS-B Pearson r and Spearman ρ of each model's expected class against the gold score,
    :func:`beluga.score.metrics.reported_metrics`), ×100, per system on the i.i.d. test set (``id``) and each OOD
    set: :data:`REPORTED_KEYS` and ``value``; no rows for a type without. Outcomes without the scores they need
    (written before the type reported them) stop with one line naming the file."""
    metrics = get_task_type(task_type).reported_metrics
    rows = []
    for run in runs if metrics else []:
        out = run["outcomes"]
        missing = next((c for c in ("pred_score", "gold_score") if c not in out.columns), None)
        if missing is not None:
            raise DataError(f"{run['path']}: field '{missing}': column missing (outcomes written before task type "
                            f"{task_type!r} reported {' / '.join(metrics)}: rerun the model's evaluation)")
        for dataset, split in [(REPORTED_ID, "iid_test")] + [(n, split_name(n)) for n in names]:
            for metric, value in reported_metrics(out, task_type, split).items():
                rows.append({"system": system_name(run["configuration"], run["method"]),
                             "configuration": run["configuration"], "method": run["method"], "dataset": dataset,
                             "metric": metric, "value": 100.0 * value})
    return pd.DataFrame(rows, columns=[*REPORTED_KEYS, "value"])


def with_reported(table: pd.DataFrame, per_seed: Mapping[int, pd.DataFrame], names: list[str],
                  metrics: tuple[str, ...]) -> pd.DataFrame:
    """ood_table.csv with the reported ``metrics`` (``per_seed``: each training seed's :func:`reported_scores`)
    appended: per metric its column on the i.i.d. test set and each OOD set (:func:`reported_column`), the mean
    over seeds, then their standard deviations over seeds (empty with one seed); ``table`` unchanged without
    ``metrics``. A score no seed defines (a table of classes, a constant prediction) is empty."""
    if not metrics:
        return table
    over = over_seeds(_stacked(per_seed), REPORTED_KEYS, ["value"]).set_index(["system", "dataset", "metric"])
    out = table.copy()
    datasets = [REPORTED_ID, *names]
    for sd in (False, True):
        for metric in metrics:
            for d in datasets:
                col = "value_sd" if sd else "value"
                out[reported_column(metric, d, sd)] = [float(over[col].get((s, d, metric), np.nan))
                                                       for s in out["system"]]
    return out


@dataclass
class OodResult:
    """What rule ood writes: ``seeds`` (the training seeds, ``[]`` for records without one), ``long``
    (scores.csv), ``ranking``, ``corr`` (the ID–OOD correlation), ``sig`` (the tests) and ``table``
    (ood_table.csv; the reported metrics' columns appended, :func:`with_reported`)."""
    seeds: list
    long: pd.DataFrame
    ranking: pd.DataFrame
    corr: dict
    sig: pd.DataFrame
    table: pd.DataFrame


def evaluate(runs: list[dict], names: list[str], task: str, task_type: str, backbone: str = "",
             credits: dict[str, str] | None = None, alpha: float = 0.05, correction: str = "none",
             R: int = 10_000, seed: int = 0, base_seed: int | None = None, metric: str = OOD_METRIC) -> OodResult:
    """The OOD evaluation of the systems' runs (outcomes loaded), over their training seeds (the
    records' ``seed``; none: one seed): each seed's long scores and ranking as one seed's; scores.csv
    the mean over seeds with its spread (:func:`long_over_seeds`); the ranking and the ID–OOD
    correlation over the systems' means; the tests pooled over seeds (:func:`ood_significance`; ``R``,
    ``seed``, ``base_seed``: its randomization draws); the
    table's cells means over seeds with their standard deviations (:func:`ood_table_over_seeds`).
    One seed: the one-seed tables (its own scores, ``n_seeds`` 1, every ``_sd`` empty). ``metric``: the
    cells' score (:func:`long_scores`), tested as such."""
    groups = runs_by_seed(runs)
    seeds = [s for s in groups if s is not None]
    check_seed_examples(groups, names)
    longs = {s: long_scores(g, names, task, task_type, backbone, credits, metric) for s, g in groups.items()}
    rankings = {s: rank_systems(one, source=f"{task} OOD scores" + seeds_legend(len(groups), f", training seed {s}"))
                for s, one in longs.items()}
    long = long_over_seeds(longs)
    ranking = rank_systems(long, source=f"{task} OOD scores" + seeds_legend(len(groups),
                                                                            " (means over training seeds)"))
    corr = id_ood_correlation(ranking)
    sig = ood_significance(runs, names, alpha, correction, task_type, R, seed, task, base_seed, metric)
    table = ood_table_over_seeds(longs, rankings, long, ranking, sig, names)
    table = with_reported(table, {s: reported_scores(g, names, task_type) for s, g in groups.items()}, names,
                          get_task_type(task_type).reported_metrics)
    return OodResult(seeds, long, ranking, corr, sig, table)


def model_scores(runs: list[dict], names: list[str], task_type: str, metric: str = OOD_METRIC) -> pd.DataFrame:
    """predict.ood_models: all — every model's score (×100) on every OOD set and the i.i.d. test set; with
    several training seeds one row per model and seed, the ``seed`` first."""
    several = len(runs_by_seed(runs, "models")) > 1
    rows = []
    for run in runs:
        row = {SEED_COLUMN: int(run[SEED_COLUMN])} if several else {}
        row.update({c: run[c] for c in MODEL_COLUMNS})
        for dataset, split in [(ID_DATASET, "iid_test")] + [(n, split_name(n)) for n in names]:
            m = iid_metrics(run["outcomes"], task_type, split=split)
            row[dataset] = 100.0 * float(np.mean(list(m.values())) if metric == OOD_METRIC else m[metric])
        rows.append(row)
    return pd.DataFrame(rows)
