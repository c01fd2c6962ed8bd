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
  datasets when there is a single task -- per domain: the tasks with ID
  (OOD) rows for the ID (OOD) rank, so GLUE-X's published shape, one overall
  ID score per backbone beside per-task OOD scores, ranks OOD over the OOD
  tasks only (:func:`blocks_line` names them);
- every system has the same metrics on a dataset (else one line, unless
  ``mixed_metrics``).

GLUE-X's ID–OOD correlation (its Figure 1 and Figure 6): Pearson r and
Spearman ρ between the systems' ID and OOD averages, with the least-squares
line OOD = slope × ID + intercept (:func:`id_ood_correlation`; at least
:data:`MIN_CORRELATION_SYSTEMS` systems, else reported as not computed with
the reason). The p-values need at least :data:`MIN_P_VALUE_SYSTEMS` systems;
with fewer they are NaN and ``p_note`` says why.

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

This module also holds the columns of the OOD outputs and the names an OOD set
cannot take (:func:`set_name_clash`), and how systems, backbones and benchmark
tasks are named. The evaluation of a task's runs (scores, tests against the IID
model, the OOD table, training seeds) is beluga/analyses/ood_scores.py; the
Markdown, LaTeX, figure and the ``ood-rank`` command are beluga/analyses/ood_report.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import ConfigError, DataError
from beluga.core.seeds import N_SEEDS_COLUMN, SEED_COLUMN
from beluga.core.text import md_cell
from beluga.data.iid import IID_SPLITS
from beluga.heads import HEADS
from beluga.score.metrics import BASELINE, CONFIG_LABELS

LONG_COLUMNS = ("system", "task", "dataset", "domain", "metric", "value")
RANKING_COLUMNS = ("system", "id_avg", "ood_avg", "decrease_ratio", "rank_decrease_ratio", "friedman_rank_ood",
                   "friedman_rank_id")
ID_DATASET = "iid_test"
CORRELATION_COLUMNS = ("n_systems", "pearson_r", "pearson_p", "spearman_rho", "spearman_p", "slope", "intercept",
                       "computed", "reason", "p_note")
#: GLUE-X fits a line through the systems' (ID, OOD) points; fewer than 3 points fit any line exactly
MIN_CORRELATION_SYSTEMS = 3
#: the p-values of r and ρ are reported from this many systems on: below it a two-sided test can hardly reject
#: (Spearman's exact p of a perfect ρ over 4 systems is 2/24 = 0.083) and the t-approximation prints p = 0 for a
#: perfect ρ
MIN_P_VALUE_SYSTEMS = 5
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
#: the training seeds (config ``seeds``; docs/OOD.md, "Training seeds"; one seed: ``n_seeds`` 1, every ``_sd``
#: empty): scores.csv has these after LONG_EXTRA_COLUMNS; ood_table.csv, after TABLE_TAIL, ``n_seeds``, ``id_sd``,
#: each OOD set's name with each of SEED_SET_SUFFIXES, then ``ood_avg_sd`` and ``decrease_ratio_sd``; models.csv
#: with several seeds a leading SEED_COLUMN
LONG_SEED_COLUMNS = (N_SEEDS_COLUMN, "value_sd", "value_min", "value_max")
SEED_SET_SUFFIXES = ("_sd", "_delta_sd")
TABLE_SEED_COLUMNS = (N_SEEDS_COLUMN, "id_sd", "ood_avg_sd", "decrease_ratio_sd")
#: names an OOD set cannot have (``tasks.<id>.ood[i].name``): the set's name is a column of ood_table.csv
#: and models.csv and a dataset of scores.csv, next to these columns (and key names of the rankings,
#: correlation and prediction tables) and split names; a set named ``id`` would replace the ID column
RESERVED_SET_NAMES = frozenset((*LONG_COLUMNS, *LONG_EXTRA_COLUMNS, *RANKING_COLUMNS, "benchmark",
                                *CORRELATION_COLUMNS, *TABLE_LEAD, *TABLE_TAIL, *MODEL_COLUMNS, *SPLIT_NAMES,
                                *(n for h in HEADS.values() for n in h.prediction_schema().names), *LONG_SEED_COLUMNS,
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


def check_one_scale(long: pd.DataFrame, source: str) -> None:
    """Stops with one line when the systems of a long table (:func:`check_long`'s) give their scores on
    different scales: some every score within [-1, 1] (fractions: 0.875), others beyond 1 (percent: 87.5).
    Ranked together, a fraction system would sit at the bottom of every block and its decrease ratio would be
    compared with percent ones, without a word. A system whose scores are all 0 fits either scale."""
    peak = long["value"].abs().groupby(long["system"], sort=False).max()
    fractions = [s for s, m in peak.items() if 0 < m <= 1]
    percent = [s for s, m in peak.items() if m > 1]
    if fractions and percent:
        def shown(systems: list[str]) -> str:
            more = f" and {len(systems) - 3} more" if len(systems) > 3 else ""
            return ", ".join(f"{s!r} (largest |value| {peak[s]:g})" for s in systems[:3]) + more
        raise DataError(f"{source}: field 'value': the systems' scores are on different scales: {shown(fractions)} "
                        f"within [-1, 1] (fractions, as 0.875), {shown(percent)} beyond 1 (percent, as 87.5); give "
                        "every system's scores on one scale (fractions or percent)")


def _ranks(scores: pd.DataFrame, source: str, what: str) -> pd.Series:
    """scores: rows = systems, columns = blocks. Mean over blocks of the rank within each block (1 = best,
    average ranks for ties). Every system needs a score in every block (Friedman's complete blocks)."""
    if scores.isna().any().any():
        sys_, block = next((s, b) for b in scores.columns for s in scores.index if pd.isna(scores.at[s, b]))
        raise DataError(f"{source}: field 'value': system {sys_!r} has no {what} score for {block!r} "
                        "(every system needs every block for a Friedman rank)")
    return scores.rank(axis=0, ascending=False, method="average").mean(axis=1)


def mixed_metric_blocks(long: pd.DataFrame) -> list[tuple[str, str, dict[tuple[str, ...], list[str]]]]:
    """The datasets whose systems do not all have the same metrics, as
    (task, dataset, {metric set: its systems}): a dataset's score is the mean
    of a system's metrics on it, so there each system would be scored on
    other metrics (an extra low F1 ranks a system last)."""
    sets = long.groupby(["task", "dataset", "system"], sort=False)["metric"].agg(lambda m: tuple(sorted(m)))
    out = []
    for (task, dataset), per in sets.groupby(level=[0, 1], sort=False):
        if per.nunique() > 1:
            by_set: dict[tuple[str, ...], list[str]] = {}
            for (_, _, system), metrics in per.items():
                by_set.setdefault(metrics, []).append(system)
            out.append((task, dataset, by_set))
    return out


def _mixed_metrics_error(source: str, task: str, dataset: str, by_set: dict) -> DataError:
    def one(metrics, systems):
        shown = ", ".join(repr(s) for s in systems[:3]) + (f" and {len(systems) - 3} more" if len(systems) > 3 else "")
        return f"{shown} ({', '.join(metrics)})"
    groups = "; ".join(one(m, s) for m, s in by_set.items())
    return DataError(f"{source}: field 'metric': block {task}/{dataset}: the systems have different metric sets "
                     f"({groups}); a dataset's score is the mean of a system's metrics, so they would be scored on "
                     "different metrics: give every system the same metrics, or allow it explicitly "
                     "(ood-rank --mixed-metrics)")


def _blocks(per_ds: pd.DataFrame, per_task: pd.DataFrame, dom: str, systems: list[str]) -> tuple[pd.DataFrame, dict]:
    """The Friedman blocks of one domain: the tasks that have ``dom`` rows when
    there are several, else that one task's ``dom`` datasets -- so ID scores
    given at a coarser level than the OOD blocks (GLUE-X's published shape:
    per-task OOD scores, one overall ID average per backbone under a task of
    its own) rank ID over the ID blocks and OOD over the OOD blocks only."""
    present = list(dict.fromkeys(per_ds.loc[per_ds["domain"] == dom, "task"]))
    if len(present) > 1:
        blocks = per_task[dom].unstack("task").reindex(index=systems, columns=present)
        return blocks, {"level": "task", "task": None, "names": present}
    sub = per_ds[(per_ds["domain"] == dom) & (per_ds["task"] == present[0])]
    blocks = sub.pivot(index="system", columns="dataset", values="value").reindex(systems)
    names = list(dict.fromkeys(sub["dataset"]))
    return blocks[names], {"level": "dataset", "task": present[0], "names": names}


def rank_systems(long: pd.DataFrame, source: str = "scores", mixed_metrics: bool = False) -> pd.DataFrame:
    """The GLUE-X summary of a long score table (module docstring), one row per system.

    A task may hold only ID or only OOD rows (GLUE-X's published shape: OOD
    scores per task, one overall ID score per backbone): each domain is ranked
    over its own blocks (:func:`_blocks`), which the result's
    ``attrs["blocks"]`` names (``{"ood" | "id": {"level", "task", "names"}}``;
    :func:`blocks_line`). Systems with different metric sets on one dataset
    stop with one line unless ``mixed_metrics`` (then ``attrs["mixed_metrics"]``
    names those datasets)."""
    long = check_long(long, source)
    mixed = mixed_metric_blocks(long)
    if mixed and not mixed_metrics:
        raise _mixed_metrics_error(source, *mixed[0])
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
    avg = per_task.groupby("system").mean().reindex(systems)
    if avg.isna().any().any():
        s = avg.index[avg.isna().any(axis=1)][0]
        raise DataError(f"{source}: field 'domain': system {s!r} lacks id or ood rows")
    out = pd.DataFrame({"system": systems, "id_avg": avg["id"].to_numpy(), "ood_avg": avg["ood"].to_numpy()})
    # 100 x (ID - OOD) / ID needs a positive ID score: at or below 0 (a correlation -- MCC, Pearson, Spearman --
    # of a model no better than chance) its sign would flip; the ratio and its rank are then not defined (NaN)
    positive = out["id_avg"] > 0
    out["decrease_ratio"] = (100.0 * (out["id_avg"] - out["ood_avg"]) / out["id_avg"].where(positive)).where(positive)
    out["rank_decrease_ratio"] = out["decrease_ratio"].rank(ascending=True, method="average").to_numpy()
    used = {}
    for dom in ("ood", "id"):
        blocks, used[dom] = _blocks(per_ds, per_task, dom, systems)
        out[f"friedman_rank_{dom}"] = _ranks(blocks, source, dom).reindex(systems).to_numpy()
    out = out[list(RANKING_COLUMNS)]
    out.attrs["blocks"] = used
    out.attrs["mixed_metrics"] = [f"{t}/{d}" for t, d, _ in mixed]
    return out


def blocks_line(ranking: pd.DataFrame) -> str:
    """One sentence of ranking.md naming the blocks each Friedman rank (and average) was taken over (the names
    as Markdown text: :func:`beluga.core.text.md_cell`); ``""`` without them."""
    used = ranking.attrs.get("blocks")
    if not used:
        return ""

    def what(b: dict) -> str:
        n = len(b["names"])
        names = ", ".join(map(md_cell, b["names"][:12])) + (f", ... ({n} in all)" if n > 12 else "")
        if b["level"] == "task":
            return f"{n} task{'s' if n > 1 else ''} ({names})"
        return f"{n} dataset{'s' if n > 1 else ''} of task {md_cell(b['task'])} ({names})"
    line = f"Blocks (the Friedman ranks and the averages): OOD over {what(used['ood'])}; ID over {what(used['id'])}."
    mixed = ranking.attrs.get("mixed_metrics")
    if mixed:
        line += (f" Mixed metric sets allowed (--mixed-metrics) on {', '.join(map(md_cell, mixed))}: there a system's "
                 "score is the mean of its own metrics.")
    return line


def id_ood_correlation(ranking: pd.DataFrame, min_systems: int = MIN_CORRELATION_SYSTEMS,
                       min_p_systems: int = MIN_P_VALUE_SYSTEMS) -> dict:
    """GLUE-X's ID–OOD correlation over systems: Pearson r and Spearman ρ
    (``scipy.stats``, two-sided p) between ``id_avg`` and ``ood_avg``, and the
    least-squares line ``ood = slope × id + intercept``. With fewer than
    ``min_systems`` systems, or constant scores, nothing is computed and
    ``reason`` says why; with fewer than ``min_p_systems`` the p-values are NaN
    and ``p_note`` says why (empty when they are reported)."""
    x = ranking["id_avg"].to_numpy(dtype=float)
    y = ranking["ood_avg"].to_numpy(dtype=float)
    out = {"n_systems": int(len(x)), "pearson_r": np.nan, "pearson_p": np.nan, "spearman_rho": np.nan,
           "spearman_p": np.nan, "slope": np.nan, "intercept": np.nan, "computed": False, "reason": "",
           "p_note": ""}
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
    if len(x) < min_p_systems:
        out.update(pearson_p=np.nan, spearman_p=np.nan,
                   p_note=f"n too small: {len(x)} systems, p-values need at least {min_p_systems}")
    return out


def correlation_frame(corrs: dict[str, dict]) -> pd.DataFrame:
    """``correlation.csv``: one row per benchmark (``benchmark``, then :data:`CORRELATION_COLUMNS`)."""
    return pd.DataFrame([{"benchmark": b, **{c: corr[c] for c in CORRELATION_COLUMNS}} for b, corr in corrs.items()],
                        columns=["benchmark", *CORRELATION_COLUMNS])


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


# ---------------------------------------------------------------- systems, backbones and benchmark tasks


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
