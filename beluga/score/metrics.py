"""Aggregate scores: s_iid, s_T per scenario, and G (docs/PROCEDURE.md, §5).

Choices where the paper is silent (documented in docs/PIPELINE.md):
- s_T(scenario) is the mean pass rate over functionalities; a functionality
  whose held-out cases were all filtered has no pass rate and is left out of
  the mean (the count is reported in ``n_func_scored``).
- s_iid used in G(scenario) is the i.i.d. score of the models that produced
  the scenario's pass rates (one model for seen/standard, one per fold
  otherwise), *pooled*: their i.i.d. test rows are concatenated and the metric
  is computed once. For accuracy, EM and SQuAD F1 this is the mean over the
  fold models; for PARA's F1 it is the F1 of the summed tp / fp / fn, the
  statistic the significance tests resample (beluga.report.stats; docs/STATISTICS.md).
  The i.i.d. score column of the table is the seen model's.
- The IID baseline was trained on no suite data, so its s_T is the standard
  score in every scenario.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.core.tasks import TASK_TYPES
from beluga.core.text import md_cell
from beluga.heads import get_head
from beluga.score.outcomes import FILTERED, PASS

SCENARIOS = ("standard", "seen", "func", "class", "type")
BASELINE = ("iid", "vanilla")


def g_score(s_t: float, s_iid: float) -> float:
    """Harmonic mean 2 s_T s_iid / (s_T + s_iid); 0 when either is 0, or below 0 (an MCC s_iid of a model
    worse than chance, ACCEPTABILITY: the harmonic mean of rates is defined for positive values only)."""
    if np.isnan(s_t) or np.isnan(s_iid):
        return float("nan")
    return 0.0 if s_t <= 0 or s_iid <= 0 else 2 * s_t * s_iid / (s_t + s_iid)


#: canonical i.i.d. metrics per task type (docs/PROCEDURE.md, §5; ``TaskType.iid_metrics``): SENT and NLI
#: accuracy; PARA accuracy and F1 of the duplicate class; READ exact match and token F1; ACCEPTABILITY
#: Matthews correlation (GLUE's CoLA metric) and accuracy; SIMILARITY Pearson and Spearman (a correlation
#: at or below 0 gives G = 0, :func:`g_score`).
IID_METRICS = {name: t.iid_metrics for name, t in TASK_TYPES.items()}


def iid_metrics(outcomes: pd.DataFrame, task_type: str = "sent", split: str = "iid_test") -> dict[str, float]:
    """The task's canonical i.i.d. metrics from the per-example outcome rows
    (``correct``; PARA and ACCEPTABILITY also ``pred_label`` / ``gold_label``;
    READ ``em`` / ``f1``; SIMILARITY ``pred_score`` / ``gold_score``: Pearson / Spearman, NaN when either
    side is constant) of ``split`` (the i.i.d. test set, or an OOD set's
    ``ood:<name>``)."""
    iid = outcomes[outcomes["split"] == split]
    if not len(iid):
        return {m: float("nan") for m in IID_METRICS[task_type]}
    head = get_head(TASK_TYPES[task_type].head)
    return {m: head.metric(m, iid) for m in IID_METRICS[task_type]}


def reported_metrics(outcomes: pd.DataFrame, task_type: str, split: str = "iid_test") -> dict[str, float]:
    """The metrics a task type reports beside its score (``TaskType.reported_metrics``; SIMILARITY_CLASSES: GLUE's
    STS-B Pearson / Spearman of the model's expected class against the gold score) on ``split``'s outcome rows;
    ``{}`` for a type without."""
    names = TASK_TYPES[task_type].reported_metrics
    rows = outcomes[outcomes["split"] == split]
    if not len(rows):
        return {m: float("nan") for m in names}
    head = get_head(TASK_TYPES[task_type].head)
    return {m: head.metric(m, rows) for m in names}


def iid_score(metrics: dict[str, float], choice: str = "mean") -> float:
    """s_iid entering G: one named metric, or ``mean`` of the task's canonical
    metrics (accuracy for SENT and NLI; the paper does not say how PARA's and READ's two
    metrics enter G, so the default weighs them equally; configurable). ACCEPTABILITY's
    ``mean`` is the mean of MCC and accuracy likewise; ``mcc`` is GLUE's CoLA score alone. MCC lies
    in [-1, 1]: a model worse than chance can give a negative s_iid, and its G is 0 (:func:`g_score`)."""
    if choice == "mean":
        return float(np.mean(list(metrics.values())))
    if choice not in metrics:
        raise ValueError(f"field 'iid_metric': {choice!r} is not a metric of this task ({', '.join(metrics)})")
    return float(metrics[choice])


#: a functionality's status word in the summaries of ``test`` and ``score``: a failure rate above 0, none
#: failed, or no case scored (every case filtered)
STATUS_FAIL, STATUS_PASS, STATUS_NONE = "fail", "pass", "no scored cases"
STATUS_WORDS = (STATUS_FAIL, STATUS_PASS, STATUS_NONE)


def status_word(n_scored: int, n_failed: int) -> str:
    """The status word that matches a functionality's counts (:data:`STATUS_FAIL` ...)."""
    return STATUS_NONE if n_scored == 0 else STATUS_FAIL if n_failed else STATUS_PASS


def filter_counts(reasons) -> dict[str, int]:
    """The filtered cases' reasons (``filter_reason``, nulls skipped) counted, most frequent first."""
    counts = pd.Series([r for r in reasons if isinstance(r, str)], dtype=object).value_counts(sort=True)
    return {str(k): int(v) for k, v in counts.items()}


def filtered_note(counts: dict[str, int]) -> str:
    """``"10 filtered: original predicted neutral"`` (several reasons: ``"12 filtered: 10 original predicted
    neutral, 2 no input scored"``); "" when none was filtered."""
    n = sum(counts.values())
    if not n:
        return ""
    if len(counts) == 1:
        return f"{n} filtered: {next(iter(counts))}"
    return f"{n} filtered: " + ", ".join(f"{v} {k}" for k, v in counts.items())


def pass_rates(outcomes: pd.DataFrame, functionalities: pd.DataFrame) -> pd.DataFrame:
    """Per functionality: n_cases, n_scored, n_passed, pass_rate (NaN if nothing scored); where ``outcomes``
    has ``filter_reason`` (:func:`beluga.score.outcomes.score_cases` with ``reasons``) also ``n_filtered``,
    ``filtered`` (:func:`filtered_note`) and ``status`` (:func:`status_word`)."""
    g = outcomes.groupby("functionality", sort=False)["status"]
    df = pd.DataFrame({
        "n_cases": g.size(),
        "n_scored": g.apply(lambda s: int((s != FILTERED).sum())),
        "n_passed": g.apply(lambda s: int((s == PASS).sum())),
    }).reset_index()
    df["pass_rate"] = np.where(df["n_scored"] > 0, df["n_passed"] / df["n_scored"].where(df["n_scored"] > 0), np.nan)
    if "filter_reason" in outcomes.columns:
        notes = outcomes.groupby("functionality", sort=False)["filter_reason"].apply(
            lambda s: filtered_note(filter_counts(s)))
        df["n_filtered"] = df["n_cases"] - df["n_scored"]
        df["filtered"] = df["functionality"].map(notes).fillna("")
        df["status"] = [status_word(k, k - p) for k, p in zip(df["n_scored"], df["n_passed"])]
    meta = functionalities[["functionality", "capability", "test_type"]]
    return meta.merge(df, on="functionality", how="inner")


def fold_pass_rates(outcomes: pd.DataFrame, functionalities: pd.DataFrame) -> pd.DataFrame:
    """Pass rates of the held-out functionalities of one fold."""
    suite = outcomes[(outcomes["split"] == "suite_test") & outcomes["held_out"]]
    return pass_rates(suite[["case_id", "functionality", "status"]], functionalities)


SCENARIO_IID = ("folds", "seen")


def score_runs(runs: list[dict], functionalities: pd.DataFrame, task_type: str = "sent",
              iid_metric: str = "mean", scenario_iid: str = "folds") -> tuple[pd.DataFrame, pd.DataFrame]:
    """runs: dicts with configuration, method, partition, fold, outcomes (DataFrame).
    The IID baseline is the run with configuration 'iid' (partition 'standard').
    ``scenario_iid``: the s_iid of a scenario's G comes from its own models
    (``folds``) or from the seen model (``seen``).
    Returns (long pass-rate table, scores table)."""
    if scenario_iid not in SCENARIO_IID:
        raise ValueError(f"field 'scenario_iid': {scenario_iid!r} is not one of {', '.join(SCENARIO_IID)}")
    long_rows, iid_rows, iid_detail = [], {}, {}
    for run in runs:
        pr = fold_pass_rates(run["outcomes"], functionalities)
        scenario = "standard" if run["configuration"] == "iid" else run["partition"]
        pr.insert(0, "fold", run["fold"])
        pr.insert(0, "method", run["method"])
        pr.insert(0, "configuration", run["configuration"])
        pr.insert(0, "scenario", scenario)
        long_rows.append(pr)
        key = (run["configuration"], run["method"], scenario, run["fold"])
        iid_detail[key] = iid_metrics(run["outcomes"], task_type)
        iid_rows[key] = run["outcomes"][run["outcomes"]["split"] == "iid_test"]
    long = pd.concat(long_rows, ignore_index=True)
    dup = long.duplicated(["scenario", "configuration", "method", "functionality"])
    if dup.any():
        r = long[dup].iloc[0]
        raise ValueError(f"functionality {r['functionality']!r} is held out twice in scenario {r['scenario']!r} "
                         f"for {r['configuration']}/{r['method']}")

    rows = []
    base = long[(long.configuration == BASELINE[0])]
    base_st = float(base["pass_rate"].mean())

    def pooled_iid(conf: str, meth: str, sc: str) -> float:
        """s_iid of the scenario's models: the metric of their concatenated i.i.d. rows."""
        rows_ = [v for (c, m, s, _f), v in iid_rows.items() if (c, m, s) == (conf, meth, sc)]
        if not rows_:
            return float("nan")
        return iid_score(iid_metrics(pd.concat(rows_, ignore_index=True), task_type), iid_metric)

    base_iid = pooled_iid(*BASELINE, "standard")
    pairs = [BASELINE] + [p for p in dict.fromkeys(zip(long.configuration, long.method)) if p != BASELINE]
    for conf, meth in pairs:
        row = {"configuration": conf, "method": meth}
        for sc in SCENARIOS:
            if conf == BASELINE[0]:
                s_t, s_iid, n_scored = base_st, base_iid, int(base["pass_rate"].notna().sum())
            elif sc == "standard":
                s_t, s_iid, n_scored = base_st, base_iid, int(base["pass_rate"].notna().sum())
            else:
                sel = long[(long.configuration == conf) & (long.method == meth) & (long.scenario == sc)]
                s_t = float(sel["pass_rate"].mean()) if len(sel) else float("nan")
                if scenario_iid == "seen" and len(sel) and not any(k[:3] == (conf, meth, "seen") for k in iid_rows):
                    raise ValueError(f"field 'scenario_iid': 'seen' takes s_iid from the seen model, but "
                                     f"{conf}/{meth} has no seen run")
                s_iid = pooled_iid(conf, meth, "seen" if scenario_iid == "seen" else sc)
                n_scored = int(sel["pass_rate"].notna().sum())
            row[f"s_{sc}"] = s_t
            row[f"s_iid_{sc}"] = s_iid
            row[f"G_{sc}"] = g_score(s_t, s_iid)
            row[f"n_func_scored_{sc}"] = n_scored
        row["iid_score"] = row["s_iid_seen"] if conf != BASELINE[0] else base_iid
        detail = iid_detail.get((*BASELINE, "standard", "all") if conf == BASELINE[0] else (conf, meth, "seen", "all"))
        for m in IID_METRICS[task_type]:
            row[f"iid_{m}"] = detail[m] if detail else float("nan")
        rows.append(row)
    scores = pd.DataFrame(rows)
    lead = ["configuration", "method", "iid_score"] + [f"iid_{m}" for m in IID_METRICS[task_type]]
    cols = lead + [f"s_{s}" for s in SCENARIOS] + [f"G_{s}" for s in SCENARIOS] + \
        [f"s_iid_{s}" for s in SCENARIOS] + [f"n_func_scored_{s}" for s in SCENARIOS]
    return long, scores[cols]


def score_columns(scores: pd.DataFrame) -> list[str]:
    """The score columns of a scores table (i.i.d. score and metrics, every s_T, G and s_iid), not the counts."""
    return [c for c in scores.columns if c not in ("configuration", "method") and not c.startswith("n_func_scored_")]


PASS_RATE_KEYS = ["scenario", "configuration", "method", "fold", "functionality"]


def scores_over_seeds(per_seed: pd.DataFrame) -> pd.DataFrame:
    """scores.csv of a run over N ≥ 1 training seeds from its per-seed rows (a ``seed`` column and the
    one-seed columns): per configuration-method pair the mean over seeds of every score under its own name
    (G_X is the mean of the seeds' G_X, not G of the mean s_X and s_iid), ``n_seeds`` and each score's
    ``_sd`` / ``_min`` / ``_max`` (beluga.core.seeds.over_seeds; one seed: its scores, ``_sd`` empty); the counts
    are the first seed's."""
    from beluga.core.seeds import over_seeds

    return over_seeds(per_seed, ["configuration", "method"], score_columns(per_seed.drop(columns="seed")))


def pass_rates_over_seeds(per_seed: pd.DataFrame) -> pd.DataFrame:
    """pass_rates.csv of a run over N ≥ 1 training seeds: per scenario, pair, fold and functionality the
    mean pass rate over seeds with its ``_sd`` / ``_min`` / ``_max`` and ``n_seeds``; ``n_scored`` and
    ``n_passed`` summed over the seeds (``n_cases`` is one seed's). One seed: its pass rates, ``_sd`` empty."""
    from beluga.core.seeds import over_seeds

    out = over_seeds(per_seed, PASS_RATE_KEYS, ["pass_rate"])
    totals = per_seed.groupby(PASS_RATE_KEYS, sort=False, dropna=False)[["n_scored", "n_passed"]].sum()
    idx = pd.MultiIndex.from_frame(out[PASS_RATE_KEYS])
    for c in ("n_scored", "n_passed"):
        out[c] = totals[c].reindex(idx).to_numpy().astype(int)
    return out


CONFIG_LABELS = {"iid": "IID", "iid_to_t": "IID→T", "iid_plus_t": "IID+T", "iid_to_iid_plus_t": "IID→(IID+T)"}


#: the scores.md legend's sentence on the i.i.d. score of the task types added by issue 40 (the first three
#: types' legend names them)
IID_SCORE_WORDS = {
    "nli": "NLI: accuracy over entailment / neutral / contradiction",
    "nli_binary": "NLI_BINARY: accuracy over entailment / not entailment",
    "acceptability": "ACCEPTABILITY: the configured iid_metric, by default the mean of MCC (Matthews "
                     "correlation, GLUE's CoLA metric, in [-1, 1]; an s_iid at or below 0 gives G = 0) and accuracy",
    "similarity_classes": "SIMILARITY_CLASSES: accuracy over the five classes of the similarity score (GLUE-X's "
                          "STS-B)",
}


def scores_markdown(scores: pd.DataFrame, task: str, seeds: list[int] | None = None,
                    iid_note: str | None = None, task_type: str | None = None) -> str:
    """scores.md: one row per pair (×100), every cell the mean over the training ``seeds`` ± the standard
    deviation (``scores`` from :func:`scores_over_seeds`; no spread where the sd is empty, as with one
    seed), with a line naming the seeds (:func:`beluga.core.seeds.seeds_note`; none for one seed). ``iid_note``:
    the sentence saying the task's i.i.d. data are not the paper's
    (:func:`beluga.report.iid_data.fallback_line`), shown under the title; ``task_type``: a type added by
    issue 40 has its i.i.d. score said in one more line."""
    from beluga.core.seeds import plus_minus, seeds_legend, seeds_note

    detail = [c for c in scores.columns if c.startswith("iid_") and c != "iid_score"
              and not c.endswith(("_sd", "_min", "_max"))]
    cols = ["iid_score"] + (detail if len(detail) > 1 else []) + [f"s_{s}" for s in SCENARIOS] + \
        [f"G_{s}" for s in SCENARIOS]
    head = ["configuration", "method"] + cols
    lines = [f"# {task.upper()}: scores (×100)", ""]
    if iid_note:
        lines += [f"**Not the paper's i.i.d. data**: {iid_note} (iid/source.json; docs/DEVIATIONS.md, "
                  "'i.i.d. data files')", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in scores.itertuples(index=False):
        d = r._asdict()
        cells = [md_cell(CONFIG_LABELS.get(d["configuration"], d["configuration"])), md_cell(d["method"])]
        cells += [plus_minus(d[c], d.get(f"{c}_sd")) for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "iid_score: s_iid of the seen model (the IID model for the baseline) on the i.i.d. test set "
              "(SENT accuracy; PARA / READ: the configured iid_metric, by default the mean of the two canonical "
              "metrics shown as iid_*). "
              "s_X: mean pass rate over functionalities in scenario X; G_X: harmonic mean of s_X and the "
              "i.i.d. score of the models behind s_X, pooled over fold models (their i.i.d. predictions "
              "scored together)."]
    if task_type in IID_SCORE_WORDS:
        lines += ["", f"iid_score of this task: {IID_SCORE_WORDS[task_type]}."]
    seeds = list(seeds or [])
    legend = seeds_legend(len(seeds), f"{seeds_note(seeds)} G_X is the mean of the seeds' G_X.")
    lines += ["", legend] if legend else []
    return "\n".join(lines) + "\n"
