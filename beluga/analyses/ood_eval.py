"""OOD evaluation, GLUE-X style (docs/OOD.md): scores per OOD set, the
decrease ratio, Friedman ranks and significance against the IID baseline.

GLUE-X (Yang et al., 2023) summarises a model's out-of-distribution
robustness as follows, and :func:`rank_systems` computes exactly that from a
long table ``system, task, dataset, domain (id | ood), metric, value``:

- a dataset's score is the unweighted mean of its metrics (PARA: accuracy and
  duplicate-class F1; READ: EM and F1);
- a task's ID / OOD score is the unweighted mean over its ID / OOD datasets,
  and ``id_avg`` / ``ood_avg`` the mean over tasks;
- decrease ratio = 100 × (id_avg − ood_avg) / id_avg; ``rank_decrease_ratio``
  ranks it (1 = the smallest relative drop);
- Friedman rank: each system's rank (1 = best, ties share the average rank,
  unrounded scores) within each block, averaged over the blocks — the blocks
  are the tasks when several are given (the system's per-task score), the
  datasets when there is a single task.

GLUE-X's ID–OOD correlation (its Figure 1 and Figure 6): Pearson r and
Spearman ρ between the systems' ID and OOD averages, with the least-squares
line OOD = slope × ID + intercept (:func:`id_ood_correlation`; at least
:data:`MIN_CORRELATION_SYSTEMS` systems, else reported as not computed with
the reason).

A *system* is (backbone, configuration, method). GLUE-X ranks backbones; the
pipeline's per-task tables rank the configurations of the task's one backbone,
and the ranking over tasks (:func:`benchmark_tables`) ranks
``<backbone>/<configuration>/<method>`` systems: configured tasks with the same
type, suite, i.i.d. data and OOD sets are one benchmark task whose systems are
all their backbones' systems (never averaged together), and the benchmark
tasks are combined per system, as GLUE-X averages each backbone over its
tasks, only when every one has the same systems.

``python -m beluga ood-rank`` runs it on any such table; the pipeline's ood
rule writes its own long table and runs the same code.

Several training seeds (:func:`evaluate`; docs/OOD.md, "Training seeds"): each
seed is evaluated as a one-seed run; the long table holds the mean over seeds
(with its spread), the ranking and correlation use those means, the OOD table's
cells are means ± standard deviations of the seeds' own cells, and the test
against the IID model pools the seeds' discordant examples.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.data.iid import IID_SPLITS
from beluga.data.ood_sets import ADDITION, split_name
from beluga.errors import ConfigError, DataError
from beluga.metrics import BASELINE, CONFIG_LABELS, iid_metrics
from beluga.predict import PREDICTION_SCHEMA, QA_PREDICTION_SCHEMA
from beluga.seeds import N_SEEDS_COLUMN, SEED_COLUMN

LONG_COLUMNS = ("system", "task", "dataset", "domain", "metric", "value")
RANKING_COLUMNS = ("system", "id_avg", "ood_avg", "decrease_ratio", "rank_decrease_ratio", "friedman_rank_ood",
                   "friedman_rank_id")
ID_DATASET = "iid_test"
CORRELATION_COLUMNS = ("n_systems", "pearson_r", "pearson_p", "spearman_rho", "spearman_p", "slope", "intercept",
                       "computed", "reason")
#: GLUE-X fits a line through the systems' (ID, OOD) points; fewer than 3 points fit any line exactly
MIN_CORRELATION_SYSTEMS = 3
#: scores.csv: LONG_COLUMNS and these
LONG_EXTRA_COLUMNS = ("configuration", "method", "n", "backbone", "task_type", "credit")
#: ood_table.csv: these, then each OOD set's columns (its name with each of SET_COLUMN_SUFFIXES), then TABLE_TAIL
TABLE_LEAD = ("system", "configuration", "method", "label", "id", "backbone")
SET_COLUMN_SUFFIXES = ("", "_delta", "_p", "_direction")
TABLE_TAIL = ("ood_avg", "decrease_ratio", "rank_decrease_ratio", "friedman_rank_ood")
#: models.csv: these, then ID_DATASET and each OOD set's score
MODEL_COLUMNS = ("configuration", "method", "partition", "fold")
#: the ``split`` values of predictions and outcomes other than an OOD set's (``ood:<name>``)
SPLIT_NAMES = (*IID_SPLITS, "pool", "suite_test", "suite_val", ID_DATASET)
#: several training seeds (config ``seeds``; docs/OOD.md, "Training seeds"): scores.csv adds these after
#: LONG_EXTRA_COLUMNS; ood_table.csv adds, after TABLE_TAIL, ``n_seeds``, ``id_sd``, each OOD set's name with
#: each of SEED_SET_SUFFIXES, then ``ood_avg_sd`` and ``decrease_ratio_sd``; models.csv a leading SEED_COLUMN
LONG_SEED_COLUMNS = (N_SEEDS_COLUMN, "value_sd", "value_min", "value_max")
SEED_SET_SUFFIXES = ("_sd", "_delta_sd")
TABLE_SEED_COLUMNS = (N_SEEDS_COLUMN, "id_sd", "ood_avg_sd", "decrease_ratio_sd")
#: names an OOD set cannot have (``tasks.<id>.ood[i].name``): the set's name is a column of ood_table.csv
#: and models.csv and a dataset of scores.csv, next to these columns (and key names of the rankings,
#: correlation and prediction tables) and split names; a set named ``id`` would replace the ID column
RESERVED_SET_NAMES = frozenset((*LONG_COLUMNS, *LONG_EXTRA_COLUMNS, *RANKING_COLUMNS, "benchmark",
                                *CORRELATION_COLUMNS, *TABLE_LEAD, *TABLE_TAIL, *MODEL_COLUMNS, *SPLIT_NAMES,
                                *PREDICTION_SCHEMA.names, *QA_PREDICTION_SCHEMA.names, *LONG_SEED_COLUMNS,
                                *TABLE_SEED_COLUMNS, SEED_COLUMN))


def set_name_clash(names) -> tuple[int, str] | None:
    """The first OOD set name that would collide in the OOD outputs, as
    (its position, why), or None: a name in :data:`RESERVED_SET_NAMES`, or
    the name of another set's own column in ood_table.csv (``a`` and ``a_p``:
    the p-value of ``a`` would be replaced by the score of ``a_p``)."""
    names = [str(n) for n in names]
    own = {f"{m}{suffix}": (j, m, suffix) for j, m in enumerate(names)
           for suffix in (*SET_COLUMN_SUFFIXES[1:], *SEED_SET_SUFFIXES)}
    for i, n in enumerate(names):
        if n in RESERVED_SET_NAMES or n.lower() in RESERVED_SET_NAMES:
            return i, (f"{n!r} is reserved: the OOD tables, rankings, correlation and prediction tables use it as "
                       f"a column or split name, and the set's scores would take its place (reserved: "
                       f"{', '.join(sorted(RESERVED_SET_NAMES))}); rename the set")
        if n in own and own[n][0] != i:
            j, m, suffix = own[n]
            what = {"_delta": "difference to the IID model", "_p": "p-value", "_direction": "significance mark",
                    "_sd": "standard deviation over training seeds",
                    "_delta_sd": "difference's standard deviation over training seeds"}
            return i, (f"{n!r} is also the name of the {what[suffix]} column of OOD set {m!r} (ood[{j}]) in "
                       "ood_table.csv, and one would replace the other; rename one of the sets")
    return None


def check_set_names(names, task: str) -> None:
    """:func:`set_name_clash` as one line naming the field ``tasks.<task>.ood[i].name``."""
    clash = set_name_clash(names)
    if clash is not None:
        i, why = clash
        raise ConfigError(f"config: field 'tasks.{task}.ood[{i}].name': {why}")


# ---------------------------------------------------------------- GLUE-X summary


def check_long(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The long table with the required columns and clean values (one clear line otherwise)."""
    missing = [c for c in LONG_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{source}: field '{missing[0]}': column missing (columns: {list(df.columns)})")
    df = df[list(LONG_COLUMNS)].copy()
    for c in ("system", "task", "dataset", "domain", "metric"):
        if df[c].isna().any():
            raise DataError(f"{source}: row {int(np.flatnonzero(df[c].isna().to_numpy())[0])}: field '{c}': empty")
        df[c] = df[c].astype(str)
    bad = ~df["domain"].isin(["id", "ood"])
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{source}: row {i}: field 'domain': {df['domain'].iat[i]!r} is not 'id' or 'ood'")
    values = pd.to_numeric(df["value"], errors="coerce")
    bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{source}: row {i}: field 'value': {df['value'].iat[i]!r} is not a finite number")
    df["value"] = values.astype(float)
    dup = df.duplicated(["system", "task", "dataset", "metric"])
    if dup.any():
        r = df[dup].iloc[0]
        raise DataError(f"{source}: field 'metric': {r['system']}/{r['task']}/{r['dataset']}/{r['metric']} appears "
                        "twice")
    return df


def _ranks(scores: pd.DataFrame, source: str, what: str) -> pd.Series:
    """scores: rows = systems, columns = blocks. Mean over blocks of the rank within each block (1 = best,
    average ranks for ties). Every system needs a score in every block (Friedman's complete blocks)."""
    if scores.isna().any().any():
        sys_, block = next((s, b) for b in scores.columns for s in scores.index if pd.isna(scores.at[s, b]))
        raise DataError(f"{source}: field 'value': system {sys_!r} has no {what} score for {block!r} "
                        "(every system needs every block for a Friedman rank)")
    return scores.rank(axis=0, ascending=False, method="average").mean(axis=1)


def rank_systems(long: pd.DataFrame, source: str = "scores") -> pd.DataFrame:
    """The GLUE-X summary of a long score table (module docstring), one row per system."""
    long = check_long(long, source)
    per_ds = long.groupby(["system", "task", "dataset", "domain"], sort=False)["value"].mean().reset_index()
    clash = per_ds.groupby(["task", "dataset"])["domain"].nunique()
    if (clash > 1).any():
        t, d = clash[clash > 1].index[0]
        raise DataError(f"{source}: field 'domain': dataset {d!r} of task {t!r} is both id and ood")
    per_task = per_ds.groupby(["system", "task", "domain"], sort=False)["value"].mean().unstack("domain")
    for dom in ("id", "ood"):
        if dom not in per_task.columns:
            raise DataError(f"{source}: field 'domain': no {dom!r} rows")
    systems = list(dict.fromkeys(long["system"]))
    tasks = list(dict.fromkeys(long["task"]))
    avg = per_task.groupby("system").mean().reindex(systems)
    if avg.isna().any().any():
        s = avg.index[avg.isna().any(axis=1)][0]
        raise DataError(f"{source}: field 'domain': system {s!r} lacks id or ood rows")
    out = pd.DataFrame({"system": systems, "id_avg": avg["id"].to_numpy(), "ood_avg": avg["ood"].to_numpy()})
    if (out["id_avg"] == 0).any():
        raise DataError(f"{source}: field 'value': system {out['system'][out['id_avg'] == 0].iloc[0]!r} has an ID "
                        "score of 0 (no decrease ratio)")
    out["decrease_ratio"] = 100.0 * (out["id_avg"] - out["ood_avg"]) / out["id_avg"]
    out["rank_decrease_ratio"] = out["decrease_ratio"].rank(ascending=True, method="average").to_numpy()
    for dom in ("ood", "id"):
        if len(tasks) > 1:
            blocks = per_task[dom].unstack("task").reindex(index=systems, columns=tasks)
        else:
            sub = per_ds[per_ds["domain"] == dom]
            blocks = sub.pivot(index="system", columns="dataset", values="value").reindex(systems)
        out[f"friedman_rank_{dom}"] = _ranks(blocks, source, dom).reindex(systems).to_numpy()
    return out[list(RANKING_COLUMNS)]


def id_ood_correlation(ranking: pd.DataFrame, min_systems: int = MIN_CORRELATION_SYSTEMS) -> dict:
    """GLUE-X's ID–OOD correlation over systems: Pearson r and Spearman ρ
    (``scipy.stats``, two-sided p) between ``id_avg`` and ``ood_avg``, and the
    least-squares line ``ood = slope × id + intercept``. With fewer than
    ``min_systems`` systems, or constant scores, nothing is computed and
    ``reason`` says why."""
    x = ranking["id_avg"].to_numpy(dtype=float)
    y = ranking["ood_avg"].to_numpy(dtype=float)
    out = {"n_systems": int(len(x)), "pearson_r": np.nan, "pearson_p": np.nan, "spearman_rho": np.nan,
           "spearman_p": np.nan, "slope": np.nan, "intercept": np.nan, "computed": False, "reason": ""}
    if len(x) < min_systems:
        out["reason"] = f"{len(x)} system(s); the correlation needs at least {min_systems}"
        return out
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        out["reason"] = f"the {'ID' if np.ptp(x) == 0 else 'OOD'} scores are all equal (no correlation defined)"
        return out
    from scipy import stats

    pr = stats.pearsonr(x, y)
    sr = stats.spearmanr(x, y)
    fit = stats.linregress(x, y)
    out.update(pearson_r=float(pr.statistic), pearson_p=float(pr.pvalue), spearman_rho=float(sr.statistic),
               spearman_p=float(sr.pvalue), slope=float(fit.slope), intercept=float(fit.intercept), computed=True)
    return out


def correlation_line(corr: dict) -> str:
    """One sentence for tables and the command's output."""
    if not corr["computed"]:
        return f"ID–OOD correlation (GLUE-X): not computed — {corr['reason']}."
    return (f"ID–OOD correlation over {corr['n_systems']} systems (GLUE-X): Pearson r = {corr['pearson_r']:.3f} "
            f"(p = {corr['pearson_p']:.3g}), Spearman ρ = {corr['spearman_rho']:.3f} (p = {corr['spearman_p']:.3g}); "
            f"least-squares line OOD = {corr['slope']:.3f} × ID {corr['intercept']:+.2f}.")


def correlation_frame(corrs: dict[str, dict]) -> pd.DataFrame:
    """``correlation.csv``: one row per benchmark (``benchmark``, then :data:`CORRELATION_COLUMNS`)."""
    return pd.DataFrame([{"benchmark": b, **{c: corr[c] for c in CORRELATION_COLUMNS}} for b, corr in corrs.items()],
                        columns=["benchmark", *CORRELATION_COLUMNS])


def ranking_markdown(ranking: pd.DataFrame, title: str = "OOD ranking (GLUE-X)", corr: dict | None = None) -> str:
    head = list(RANKING_COLUMNS)
    lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in ranking.itertuples(index=False):
        d = r._asdict()
        cells = [str(d["system"])] + [f"{d[c]:.2f}" for c in head[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "id_avg / ood_avg: mean over tasks of the mean over datasets of the mean over metrics; "
              "decrease_ratio = 100 × (id_avg − ood_avg) / id_avg (rank 1 = smallest drop); Friedman ranks: mean "
              "rank over tasks (over datasets for a single task), 1 = best, ties share the average rank."]
    if corr is not None:
        lines += ["", correlation_line(corr)]
    return "\n".join(lines) + "\n"


def read_long(path: str) -> pd.DataFrame:

    p = Path(path)
    if not p.exists():
        raise DataError(f"scores file {p}: field 'path': file does not exist")
    try:
        if p.suffix == ".parquet":
            return pd.read_parquet(p)
        sep = "\t" if p.suffix in (".tsv", ".tab") else ","
        return pd.read_csv(p, sep=sep, keep_default_na=False, na_values=[""])
    except Exception as e:  # noqa: BLE001 - any parse failure is reported as bad input
        raise DataError(f"scores file {p}: field 'path': cannot be read ({e})") from None


def long_seeds_note(long: pd.DataFrame) -> str:
    """A line for rankings read from scores.csv files of several training seeds (their ``n_seeds``
    column, :func:`long_over_seeds`): the ranked scores are means over seeds; ``""`` otherwise."""
    if N_SEEDS_COLUMN not in long.columns:
        return ""
    n = pd.to_numeric(long[N_SEEDS_COLUMN], errors="coerce")
    counts = sorted({int(v) for v in n.dropna()})
    if not counts or counts == [1]:
        return ""
    many = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    some = " (rows without n_seeds: one seed)" if n.isna().any() else ""
    return (f"Training seeds: every score is the mean over {many} training seeds{some}; the rankings, Friedman "
            "ranks and ID–OOD correlations are computed on these means (the spread over seeds: value_sd, "
            "value_min, value_max in the scores).")


def ood_rank_command(scores: str, out: str) -> str:
    """``python -m beluga ood-rank``: ranking.csv, correlation.csv (the ID–OOD
    correlation over the systems) and ranking.md in ``out``."""

    from beluga.io import write_csv, write_text

    long = read_long(scores)
    ranking = rank_systems(long, source=f"scores file {scores}")
    corr = id_ood_correlation(ranking)
    Path(out).mkdir(parents=True, exist_ok=True)
    write_csv(ranking, str(Path(out) / "ranking.csv"))
    write_csv(correlation_frame({"all": corr}), str(Path(out) / "correlation.csv"))
    md = ranking_markdown(ranking, corr=corr)
    note = long_seeds_note(long)
    if note:
        md += "\n" + note + "\n"
    write_text(md, str(Path(out) / "ranking.md"))
    return md


# ---------------------------------------------------------------- the pipeline's OOD evaluation


def system_name(conf: str, method: str) -> str:
    return f"{conf}/{method}"


def backbone_label(task_block: dict) -> str:
    """The task's backbone as OOD tables and rankings name it:
    ``tasks.<id>.backbone``, else the model spec (``@<revision>`` appended when
    one is pinned)."""
    if task_block.get("backbone"):
        return str(task_block["backbone"])
    rev = task_block.get("model_revision")
    return f"{task_block['model']}@{rev}" if rev else str(task_block["model"])


#: what makes two configured tasks the same benchmark task (GLUE-X's "task"): the same type, suite, i.i.d. data
#: and OOD sets; the model, its training and selection may differ (that is the backbone's part)
BENCHMARK_KEYS = ("type", "suite", "iid", "ood")


def ood_benchmarks(tasks: Mapping[str, dict]) -> dict[str, str]:
    """Task id -> its benchmark task for the ranking over tasks, for the tasks
    with OOD sets: tasks that agree on :data:`BENCHMARK_KEYS` (typically one
    task per backbone) are one benchmark task, named after the first of them
    in config order."""
    first: dict[str, str] = {}
    out = {}
    for t, block in tasks.items():
        if not block.get("ood"):
            continue
        key = json.dumps({k: block.get(k) for k in BENCHMARK_KEYS}, sort_keys=True, default=str)
        out[t] = first.setdefault(key, t)
    return out


def system_label(conf: str, method: str) -> str:
    return "IID" if conf == BASELINE[0] else f"{CONFIG_LABELS.get(conf, conf)} {method}"


def long_scores(runs: list[dict], names: list[str], task: str, task_type: str, backbone: str = "",
                credits: dict[str, str] | None = None) -> pd.DataFrame:
    """The long score table (×100) of the systems' ID (i.i.d. test) and OOD sets.
    runs: the IID baseline and each pair's seen model, with ``outcomes`` loaded;
    ``backbone`` and ``task_type`` are columns for the ranking over tasks."""
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
                rows.append({"system": sysname, "configuration": run["configuration"], "method": run["method"],
                             "task": task, "dataset": dataset, "domain": domain, "metric": metric,
                             "value": 100.0 * value, "n": int(len(part)), "backbone": backbone,
                             "task_type": task_type,
                             "credit": "" if domain == "id" else (credits or {}).get(dataset, ADDITION)})
    return pd.DataFrame(rows)


SIGNIFICANCE_COLUMNS = ["configuration", "method", "column", "p_value", "n_discordant", "baseline_only",
                        "system_only", "delta", "p_adjusted", "significant", "direction"]


def _significance_rows(runs: list[dict], names: list[str]) -> list[dict]:
    """One training seed's tests (:func:`ood_significance`), before the correction."""
    from beluga.report.stats import binomial_test

    base = next((r for r in runs if (r["configuration"], r["method"]) == BASELINE), None)
    if base is None:
        raise DataError("ood: field 'runs': the IID baseline's outcomes are missing")
    rows = []
    for name in names:
        split = split_name(name)
        b = base["outcomes"][base["outcomes"]["split"] == split].set_index("case_id")["correct"]
        for run in runs:
            if run is base:
                continue
            s = run["outcomes"][run["outcomes"]["split"] == split].set_index("case_id")["correct"]
            if set(s.index) != set(b.index):
                raise DataError(f"{run['path']}: field 'case_id': the {name} examples differ from the IID model's")
            s = s.reindex(b.index)
            t = binomial_test(b.to_numpy(dtype=bool), s.to_numpy(dtype=bool))
            rows.append({"configuration": run["configuration"], "method": run["method"], "column": name,
                         "p_value": t["p_value"], "n_discordant": t["n_discordant"],
                         "baseline_only": t["a_only"], "system_only": t["b_only"],
                         "delta": float(s.astype(float).mean() - b.astype(float).mean())})
    return rows


def _pooled_rows(per_seed: dict[int, list[dict]]) -> list[dict]:
    """The tests of several training seeds as one test per pair and set, stratified by seed: the exact
    binomial test on the discordant examples summed over seeds (``stats.binomial_counts_test``), ``delta``
    the mean over seeds of each seed's difference, with ``n_seeds``, ``seeds_better`` / ``seeds_worse``
    (seeds whose own difference is positive / negative) and ``delta_sd``."""
    from beluga.report.stats import binomial_counts_test

    by_key: dict[tuple, list[dict]] = {}
    for rows in per_seed.values():
        for r in rows:
            by_key.setdefault((r["configuration"], r["method"], r["column"]), []).append(r)
    out = []
    for (conf, method, column), rows in by_key.items():
        t = binomial_counts_test(sum(r["baseline_only"] for r in rows), sum(r["system_only"] for r in rows))
        deltas = np.array([r["delta"] for r in rows], dtype=float)
        out.append({"configuration": conf, "method": method, "column": column, "p_value": t["p_value"],
                    "n_discordant": t["n_discordant"], "baseline_only": t["a_only"], "system_only": t["b_only"],
                    "delta": float(deltas.mean()), N_SEEDS_COLUMN: len(rows),
                    "seeds_better": int(np.sum(deltas > 0)), "seeds_worse": int(np.sum(deltas < 0)),
                    "delta_sd": float(np.std(deltas, ddof=1)) if len(deltas) > 1 else np.nan})
    return out


def ood_significance(runs: list[dict], names: list[str], alpha: float, correction: str) -> pd.DataFrame:
    """Per pair and OOD set: two-sided exact binomial test on the discordant
    examples (correct: SENT / PARA the predicted class, READ exact match) against
    the IID baseline; p adjusted per OOD set across pairs (Holm) or not.

    ``runs`` of several training seeds (their ``seed``; :func:`runs_by_seed`):
    each seed's system is paired with the same seed's IID model, and the test
    pools the discordant examples of every seed (:func:`_pooled_rows`); one
    seed: the one-seed test."""
    from beluga.report.run_stats import mark

    groups = runs_by_seed(runs)
    if len(groups) == 1:
        rows = _significance_rows(runs, names)
    else:
        rows = _pooled_rows({s: _significance_rows(g, names) for s, g in groups.items()})
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
    IID model by :func:`ood_significance`): otherwise one line naming the outcomes file."""
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


def long_over_seeds(longs: Mapping[int, pd.DataFrame]) -> pd.DataFrame:
    """scores.csv of several training seeds from each seed's :func:`long_scores`: per system, dataset and
    metric the mean over seeds (``value``, what ``rank_systems`` / ``ood-rank`` read), ``n_seeds`` and
    ``value_sd`` / ``value_min`` / ``value_max`` (beluga.seeds.over_seeds); ``n`` and the labels are the
    first seed's."""
    from beluga.seeds import over_seeds, per_seed_frame

    return over_seeds(per_seed_frame(dict(longs)), LONG_KEYS, ["value"])


def ood_table_over_seeds(longs: Mapping[int, pd.DataFrame], long: pd.DataFrame, ranking: pd.DataFrame,
                         sig: pd.DataFrame, names: list[str], source: str = "OOD scores") -> pd.DataFrame:
    """ood_table.csv of several training seeds: :func:`ood_table` on the means (``long``:
    :func:`long_over_seeds`; ``ranking`` on it; ``sig``: the pooled tests), whose ID, set, difference, OOD
    average and decrease ratio cells are then the mean over seeds of each seed's own :func:`ood_table` cell
    (the OOD average and the decrease ratio of each seed, averaged), followed by :data:`TABLE_SEED_COLUMNS`
    and each set's ``_sd`` / ``_delta_sd`` (sample standard deviations over seeds)."""
    from beluga.seeds import over_seeds, per_seed_frame

    table = ood_table(long, ranking, sig, names)
    values = ["id", *names, *[f"{n}_delta" for n in names], "ood_avg", "decrease_ratio"]
    per_seed = per_seed_frame({s: ood_table(one, rank_systems(one, source=f"{source}, training seed {s}"),
                                            pd.DataFrame(), names)[["system", *values]]
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


@dataclass
class OodResult:
    """What rule ood writes: ``seeds`` (the training seeds, ``[]`` for records without one), ``long``
    (scores.csv), ``ranking``, ``corr`` (the ID–OOD correlation), ``sig`` (the tests) and ``table``
    (ood_table.csv)."""
    seeds: list
    long: pd.DataFrame
    ranking: pd.DataFrame
    corr: dict
    sig: pd.DataFrame
    table: pd.DataFrame


def evaluate(runs: list[dict], names: list[str], task: str, task_type: str, backbone: str = "",
             credits: dict[str, str] | None = None, alpha: float = 0.05, correction: str = "none") -> OodResult:
    """The OOD evaluation of the systems' runs (outcomes loaded). One training seed: the one-seed tables.
    Several (the records' ``seed``): each seed's long scores as one seed's; scores.csv the mean over seeds
    with its spread (:func:`long_over_seeds`); the ranking and the ID–OOD correlation over the systems' means;
    the tests pooled over seeds; the table's cells means over seeds with their standard deviations
    (:func:`ood_table_over_seeds`)."""
    groups = runs_by_seed(runs)
    seeds = [s for s in groups if s is not None]
    if len(groups) == 1:
        long = long_scores(runs, names, task, task_type, backbone, credits)
        ranking = rank_systems(long, source=f"{task} OOD scores")
        corr = id_ood_correlation(ranking)
        sig = ood_significance(runs, names, alpha, correction)
        return OodResult(seeds, long, ranking, corr, sig, ood_table(long, ranking, sig, names))
    check_seed_examples(groups, names)
    longs = {s: long_scores(g, names, task, task_type, backbone, credits) for s, g in groups.items()}
    long = long_over_seeds(longs)
    ranking = rank_systems(long, source=f"{task} OOD scores (means over training seeds)")
    corr = id_ood_correlation(ranking)
    sig = ood_significance(runs, names, alpha, correction)
    table = ood_table_over_seeds(longs, long, ranking, sig, names, source=f"{task} OOD scores")
    return OodResult(seeds, long, ranking, corr, sig, table)


def seeds_legend(seeds: list) -> str:
    """The OOD table's line on training seeds (several seeds)."""
    from beluga.seeds import seeds_note

    return (f"{seeds_note(seeds)} ID and each OOD set: the mean over seeds of each seed's score; OOD avg and "
            "decrease ratio: the mean over seeds of each seed's own OOD average and decrease ratio; Friedman rank, "
            "ranking.csv and the ID–OOD correlation: on the systems' mean scores. ▲ / ▼: one exact binomial test "
            f"per pair and set on the discordant examples of the {len(seeds)} seeds together (each seed's model "
            "paired with the same seed's IID model; a test stratified by seed).")


def _mark(direction: int) -> str:
    from beluga.report.tables import DOWN, UP

    return UP if direction > 0 else (DOWN if direction < 0 else "")


def _several(table: pd.DataFrame, seeds) -> bool:
    """Whether the table is one of several training seeds (its cells means with ``_sd`` columns)."""
    return seeds is not None and len(seeds) > 1 and N_SEEDS_COLUMN in table.columns


def ood_table_markdown(table: pd.DataFrame, names: list[str], task: str, alpha: float, correction: str,
                       correlation: dict | None = None, credits: dict[str, str] | None = None,
                       seeds: list | None = None) -> str:
    """ood_table.md; with several training ``seeds`` (``table`` from :func:`ood_table_over_seeds`) each
    score cell is the mean ± the standard deviation over seeds, and a line says how many seeds."""
    from beluga.seeds import plus_minus

    several = _several(table, seeds)
    head = ["", "ID"] + names + ["OOD avg", "decrease ratio", "Friedman rank"]
    lines = [f"# {task.upper()}: OOD evaluation (×100)", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        if several:   # "80.9 ± 0.5"
            cells = [r["label"], plus_minus(r["id"], r["id_sd"], scale=1.0)]
            cells += [f"{plus_minus(r[n], r[f'{n}_sd'], scale=1.0)}{_mark(r[f'{n}_direction'])}" for n in names]
            cells += [plus_minus(r["ood_avg"], r["ood_avg_sd"], scale=1.0),
                      plus_minus(r["decrease_ratio"], r["decrease_ratio_sd"], scale=1.0),
                      f"{r['friedman_rank_ood']:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
            continue
        cells = [r["label"], f"{r['id']:.1f}"]
        cells += [f"{r[n]:.1f}{_mark(r[f'{n}_direction'])}" for n in names]
        cells += [f"{r['ood_avg']:.1f}", f"{r['decrease_ratio']:.1f}", f"{r['friedman_rank_ood']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    corr = "Holm-adjusted " if correction == "holm" else ""
    lines += ["", f"ID: the i.i.d. test score; OOD sets: {', '.join(names)} (score = mean of the task's metrics). "
              f"▲ / ▼: significantly better / worse than the IID model on that set (two-sided exact binomial test "
              f"on the discordant examples, {corr}p < {alpha}). Decrease ratio = 100 × (ID − OOD avg) / ID; "
              "Friedman rank: mean rank over the OOD sets (1 = best)."]
    if several:
        lines += ["", seeds_legend(seeds)]
    if "backbone" in table.columns and len(table):
        lines += ["", f"Backbone: {table['backbone'].iloc[0]} (the systems are its configurations and methods)."]
    if correlation is not None:
        lines += ["", correlation_line(correlation)]
    if credits:
        lines += ["", "Pairings (task → OOD set): " + "; ".join(f"{n}: {credits[n]}" for n in names if n in credits)
                  + "."]
    return "\n".join(lines) + "\n"


def _tex_pm(row: Mapping, column: str) -> str:
    """A cell of several training seeds in LaTeX: the mean $\\pm$ the standard deviation (×100 already)."""
    from beluga.seeds import plus_minus

    return plus_minus(row[column], row[f"{column}_sd"], scale=1.0, sep=r"\,$\pm$\,")


def table_latex(table: pd.DataFrame, names: list[str], task: str, alpha: float, correction: str,
                seeds: list | None = None) -> str:
    """ood_table.tex; with several training ``seeds`` each score cell is the mean $\\pm$ the standard deviation
    over seeds and the caption says how many seeds."""
    from beluga.report.tables import latex_escape

    several = _several(table, seeds)
    cols = "l" + "r" * (len(names) + 4)
    head = " & ".join(["", "ID", *map(latex_escape, names), "OOD avg", r"$\Delta\downarrow$", "F-rank"])
    lines = [r"\begin{table}[t]", r"\centering", rf"\begin{{tabular}}{{{cols}}}", r"\toprule", head + r" \\",
             r"\midrule"]
    sym = {1: r"$^{\blacktriangle}$", -1: r"$^{\blacktriangledown}$", 0: ""}
    for r in table.to_dict("records"):
        if several:   # "80.9\,$\pm$\,0.5"
            cells = [latex_escape(r["label"]), _tex_pm(r, "id")]
            cells += [f"{_tex_pm(r, n)}{sym[int(r[f'{n}_direction'])]}" for n in names]
            cells += [_tex_pm(r, "ood_avg"), _tex_pm(r, "decrease_ratio"), f"{r['friedman_rank_ood']:.2f}"]
            lines.append(" & ".join(cells) + r" \\")
            continue
        cells = [latex_escape(r["label"]), f"{r['id']:.1f}"]
        cells += [f"{r[n]:.1f}{sym[int(r[f'{n}_direction'])]}" for n in names]
        cells += [f"{r['ood_avg']:.1f}", f"{r['decrease_ratio']:.1f}", f"{r['friedman_rank_ood']:.2f}"]
        lines.append(" & ".join(cells) + r" \\")
    corr = "Holm-adjusted " if correction == "holm" else ""
    note = (" " + latex_escape(seeds_legend(seeds)).replace("±", r"$\pm$").replace("▲ / ▼", "Markers")
            if several else "")
    lines += [r"\bottomrule", r"\end{tabular}",
              rf"\caption{{{latex_escape(task.upper())}: OOD evaluation (×100). Markers: significantly better / worse "
              rf"than the IID model ({latex_escape(corr)}exact binomial test, $p < {alpha}$). $\Delta\downarrow$: "
              r"decrease ratio 100 (ID $-$ OOD)/ID." + note + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def plot(table: pd.DataFrame, names: list[str], task: str, out_png: str, corr: dict | None = None) -> None:
    """GLUE-X's ID–OOD view (its Figure 1): each system's OOD average against
    its i.i.d. score (stars) with the least-squares line through them and
    Pearson r / Spearman ρ when ``corr`` was computed, each OOD set's score
    (one marker per set), the y = x reference (no drop), and the decrease
    ratios. A table of several training seeds (its ``n_seeds`` and ``_sd``
    columns): the means with error bars of one standard deviation over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.io import atomic_path

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.1, 1]})
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    colors = plt.get_cmap("tab10")
    lo = min(table["id"].min(), min(table[n].min() for n in names))
    hi = max(table["id"].max(), max(table[n].max() for n in names))
    several = N_SEEDS_COLUMN in table.columns and "id_sd" in table.columns
    if several:   # the error bars inside the axes
        sds = table[["id_sd", *[f"{n}_sd" for n in names]]].fillna(0.0)
        lo = min(lo, (table["id"] - sds["id_sd"]).min(), min((table[n] - sds[f"{n}_sd"]).min() for n in names))
        hi = max(hi, (table["id"] + sds["id_sd"]).max(), max((table[n] + sds[f"{n}_sd"]).max() for n in names))
    pad = max(2.0, 0.05 * (hi - lo))
    for k, r in enumerate(table.to_dict("records")):
        for j, n in enumerate(names):
            if several:
                ax.errorbar(r["id"], r[n], xerr=np.nan_to_num(r["id_sd"]), yerr=np.nan_to_num(r[f"{n}_sd"]),
                            fmt="none", ecolor=colors(k % 10), elinewidth=0.8, capsize=2, alpha=0.8, zorder=1)
            ax.scatter(r["id"], r[n], marker=markers[j % len(markers)], color=colors(k % 10), s=46,
                       edgecolor="black", linewidth=0.4)
        ax.annotate(r["label"], (r["id"], max(r[n] for n in names)), textcoords="offset points", xytext=(4, 4),
                    fontsize=7, color=colors(k % 10))
    for j, n in enumerate(names):   # legend: one grey marker per OOD set (colours are systems)
        ax.scatter([], [], marker=markers[j % len(markers)], color="lightgrey", edgecolor="black", linewidth=0.4,
                   s=46, label=n)
    if several:
        ax.errorbar(table["id"], table["ood_avg"], xerr=table["id_sd"].fillna(0.0),
                    yerr=table["ood_avg_sd"].fillna(0.0), fmt="none", ecolor="black", elinewidth=0.8, capsize=2,
                    zorder=2)
    ax.scatter(table["id"], table["ood_avg"], marker="*", s=110, color="white", edgecolor="black", linewidth=0.8,
               zorder=3, label="OOD avg")
    if corr is not None and corr["computed"]:
        xs = np.array([table["id"].min(), table["id"].max()])
        ax.plot(xs, corr["slope"] * xs + corr["intercept"], "-", color="black", linewidth=1.2,
                label=f"least-squares fit of OOD avg (r = {corr['pearson_r']:.2f}, ρ = {corr['spearman_rho']:.2f})")
    elif corr is not None:
        ax.text(0.02, 0.98, f"no fit: {corr['reason']}", transform=ax.transAxes, fontsize=7, va="top")
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "--", color="grey", linewidth=1,
            label="y = x (reference: no drop)")
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel("i.i.d. test score")
    ax.set_ylabel("OOD score")
    if several:
        n_seeds = int(table[N_SEEDS_COLUMN].max())
        ax.set_title(f"{task.upper()}: OOD vs i.i.d. score\n(mean ± sd over {n_seeds} training seeds)", fontsize=10)
    else:
        ax.set_title(f"{task.upper()}: OOD vs i.i.d. score")
    ax.legend(fontsize=7, loc="upper left")
    spread = {"xerr": table["decrease_ratio_sd"].fillna(0.0)[::-1].to_numpy(), "capsize": 3} if several else {}
    bx.barh(table["label"][::-1], table["decrease_ratio"][::-1], color=[colors(k % 10) for k in
                                                                         range(len(table))][::-1], **spread)
    bx.axvline(0, color="black", linewidth=0.8)
    bx.set_xlabel("decrease ratio, % (100 × (ID − OOD avg) / ID)")
    if several:
        bx.set_title("relative drop out of distribution\n(mean ± sd over seeds)", fontsize=10)
    else:
        bx.set_title("relative drop out of distribution")
    bx.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=130)
    plt.close(fig)


def model_scores(runs: list[dict], names: list[str], task_type: str) -> pd.DataFrame:
    """predict.ood_models: all — every model's score (×100) on every OOD set and the i.i.d. test set; with
    several training seeds one row per model and seed, the ``seed`` first."""
    several = len(runs_by_seed(runs, "models")) > 1
    rows = []
    for run in runs:
        row = {SEED_COLUMN: int(run[SEED_COLUMN])} if several else {}
        row.update({c: run[c] for c in MODEL_COLUMNS})
        for dataset, split in [(ID_DATASET, "iid_test")] + [(n, split_name(n)) for n in names]:
            m = iid_metrics(run["outcomes"], task_type, split=split)
            row[dataset] = 100.0 * float(np.mean(list(m.values())))
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- the ranking over tasks and backbones

ALL_TYPES = "all"   # the benchmark of every benchmark task together (GLUE-X Table 3)


def benchmark_tables(long: pd.DataFrame, benchmarks: Mapping[str, str] | None = None,
                     source: str = "OOD scores of all tasks") -> dict[str, pd.DataFrame]:
    """The tasks' long score tables (columns ``backbone`` included) as
    benchmarks, each a long table for :func:`rank_systems` whose systems are
    ``<backbone>/<configuration>/<method>``:

    - one per benchmark task (``benchmarks``: task id -> benchmark task,
      :func:`ood_benchmarks`; default: the task type): its tasks are the same
      task evaluated with different backbones, so their systems are ranked side
      by side (blocks: the OOD sets) and never averaged together;
    - ``all`` (GLUE-X Table 3) when there are several benchmark tasks and every
      one has the same systems: each system averaged over them, Friedman ranks
      over them.

    Two tasks of one benchmark with the same backbone would be one system
    twice: one line asks for distinct ``tasks.<id>.backbone`` labels."""
    need = ["backbone"] + (["task_type"] if benchmarks is None else [])
    for col in need:
        if col not in long.columns:
            raise DataError(f"{source}: field '{col}': column missing (scores.csv of an older run? rerun rule ood)")
    long = long.copy()
    long["backbone"] = long["backbone"].astype(str)
    if benchmarks is None:
        long["benchmark"] = long["task_type"].astype(str)
    else:
        unknown = sorted(set(long["task"]) - set(benchmarks))
        if unknown:
            raise DataError(f"{source}: field 'task': {unknown[0]!r} has no benchmark")
        long["benchmark"] = long["task"].map(dict(benchmarks))
    tasks = long.groupby(["benchmark", "backbone"], sort=False)["task"].unique()
    for (bench, backbone), ids in tasks.items():
        if len(ids) > 1:
            raise DataError(f"{source}: field 'backbone': tasks {ids[0]!r} and {ids[1]!r} are the same benchmark "
                            f"task ({bench}) with the same backbone {backbone!r}; give them different "
                            "tasks.<id>.backbone labels")
    long["system"] = long["backbone"] + "/" + long["configuration"] + "/" + long["method"]
    long["task"] = long["benchmark"]
    names = list(dict.fromkeys(long["benchmark"]))
    out = {b: long[long["benchmark"] == b].reset_index(drop=True) for b in names}
    if len(names) > 1:
        systems = [set(out[b]["system"]) for b in names]
        if all(x == systems[0] for x in systems):
            out[ALL_TYPES] = long
    return out


def backbone_table(long: pd.DataFrame, ranking: pd.DataFrame) -> pd.DataFrame:
    """GLUE-X Table 3 for one benchmark: per system (``backbone``,
    ``configuration``, ``method``) the OOD score of each block (each benchmark
    task when several, else each OOD set), ``ood_avg``, ``id_avg``, the decrease
    ratio and the Friedman ranks, sorted by ``ood_avg`` (descending) as Table 3."""
    per_ds = long.groupby(["system", "task", "dataset", "domain"], sort=False)["value"].mean().reset_index()
    ood = per_ds[per_ds["domain"] == "ood"]
    tasks = list(dict.fromkeys(long["task"]))
    if len(tasks) > 1:
        blocks = ood.groupby(["system", "task"], sort=False)["value"].mean().unstack("task").reindex(columns=tasks)
    else:
        blocks = ood.pivot(index="system", columns="dataset", values="value")
        blocks = blocks.reindex(columns=list(dict.fromkeys(ood["dataset"])))
    who = long.drop_duplicates("system").set_index("system")[["backbone", "configuration", "method"]]
    out = ranking.set_index("system").join(who).join(blocks.add_prefix("ood:"))
    cols = ["backbone", "configuration", "method", *[f"ood:{b}" for b in blocks.columns], *RANKING_COLUMNS[1:]]
    out = out[cols].reset_index().sort_values("ood_avg", ascending=False, kind="stable")
    return out.reset_index(drop=True)


def backbone_table_markdown(tables: dict[str, pd.DataFrame], corrs: dict[str, dict], skipped: str = "",
                            seeds_note: str = "") -> str:
    """One GLUE-X Table 3 per benchmark, with its ID–OOD correlation (and ``seeds_note``,
    :func:`long_seeds_note`, last)."""
    lines = ["# OOD comparison over backbones (GLUE-X Table 3)", ""]
    for bench, table in tables.items():
        blocks = [c for c in table.columns if c.startswith("ood:")]
        what = "tasks" if bench == ALL_TYPES else "OOD sets"
        lines += [f"## {'all tasks' if bench == ALL_TYPES else 'task ' + bench}", ""]
        head = ["backbone", "system", *[b[4:] for b in blocks], "OOD avg", "ID avg", "decrease ratio ↓",
                "F-rank OOD", "F-rank ID"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in table.to_dict("records"):
            cells = [str(r["backbone"]), f"{r['configuration']}/{r['method']}", *[f"{r[b]:.2f}" for b in blocks],
                     f"{r['ood_avg']:.2f}", f"{r['id_avg']:.2f}", f"{r['decrease_ratio']:.2f}",
                     f"{r['friedman_rank_ood']:.2f}", f"{r['friedman_rank_id']:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
        per = ("each task's OOD score (×100: mean of the metrics, mean over the task's OOD sets)"
               if bench == ALL_TYPES else "each OOD set's score (×100: mean of the task's metrics)")
        lines += ["", f"Columns: {per}; Friedman ranks over the {what} (1 = best).", "",
                  correlation_line(corrs[bench]), ""]
    if skipped:
        lines += [skipped, ""]
    if seeds_note:
        lines += [seeds_note, ""]
    return "\n".join(lines)
