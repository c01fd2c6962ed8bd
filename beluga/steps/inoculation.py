"""rules/inoculation.smk: inoculation by fine-tuning (beluga/analyses/inoculation.py). Its
training jobs train and score through beluga/fold.py, as the fold jobs do (the project's one
training loop, beluga.training.train)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.io import read_parquet, write_csv, write_json, write_parquet, write_text
from beluga.job import begin
from beluga.settings import FoldRun
from beluga.suites.build import split_cases
from beluga.tasks import get_task_type

# ---------------------------------------------------------------- inoculation


def _dev_score(model, tokenizer, ttype, run: FoldRun, examples: pd.DataFrame, batch_size: int, precision,
               iid_metric: str) -> float:
    from beluga.metrics import iid_metrics, iid_score
    from beluga.predict import example_predictions
    from beluga.scoring import iid_outcomes

    preds = example_predictions(model, tokenizer, ttype, examples, "iid_test", batch_size, run.max_length,
                                run.doc_stride, precision)
    out = iid_outcomes(preds, examples, ttype.head, source="original dev set")
    return iid_score(iid_metrics(out, ttype.name), iid_metric)


def inoculate(*, run: dict, unit: str, unit_funcs: list[str], dose: str, sample_seed: int, patience: int,
              suite: str, split: str, start: str, iid_val: str, iid_test: str, batch_size: int, iid_metric: str,
              out_result: str, out_outcomes: str, schedule: str = "halve_on_plateau", challenge: str | None = None,
              challenge_data: list[str] = (), challenge_test_fraction: float = 0.5) -> dict:
    """One (unit, dose, learning rate): fine-tune the IID model on the dose's
    T_train cases of the unit until the original dev score has not improved
    for ``patience`` epochs (at most the run's epochs; the best-dev weights
    are kept), the learning rate halved after every epoch without improvement
    (``schedule: halve_on_plateau``, the seed) or decaying linearly
    (``linear``), then score the challenge (the unit's T_test and T_val),
    every functionality of T_test and the original test set. An external
    challenge set (``challenge``: its name, ``challenge_data``: the prepared
    set) replaces the unit's T_train / T_test by its training and test parts,
    trained and scored as i.i.d. data (the task's i.i.d. metric). Writes the record
    (``out_result``) and the unit's per-case T_test and per-example D_test
    outcomes keyed by id (``out_outcomes``, for the tests of the summary)."""
    from beluga.analyses.inoculation import SCHEDULES, HalveOnPlateau, challenge_split, dose_sample
    from beluga.data.ood_sets import split_name
    from beluga.fold import evaluate_fold, load_start_model, suite_pass_rates, train_fold, train_model
    from beluga.metrics import iid_metrics, iid_score, pass_rates
    from beluga.suites.format import functionality_table
    from beluga.training import build_streams

    if schedule not in SCHEDULES:
        raise ValueError(f"field 'inoculation.schedule': {schedule!r} is not one of {', '.join(SCHEDULES)}")
    run = FoldRun.from_dict(run)
    job, clock = begin(run.threads, run.precision, run.gpus)
    ttype = get_task_type(run.task_type)
    ood = None
    if challenge is not None:
        data = read_parquet(challenge_data[0], f"challenge set {challenge}")
        train_ids, test_ids = challenge_split(data["example_id"], challenge_test_fraction, sample_seed, challenge)
        chosen = dose_sample(train_ids, dose, sample_seed, unit)
        ids = data["example_id"].astype(str)
        challenge_train = data[ids.isin(set(chosen))].reset_index(drop=True)
        ood = {challenge: data[ids.isin(set(test_ids))].reset_index(drop=True)}
    else:
        train_cases = split_cases(suite, split, run.task_type, "train", unit_funcs)
        chosen = dose_sample(train_cases["case_id"], dose, sample_seed, unit)
    dev = read_parquet(iid_val, "i.i.d. validation data")
    plateau = HalveOnPlateau(patience, halve=schedule == "halve_on_plateau")
    state = {"weights": None}

    def on_epoch_end(epoch: int, model, tokenizer) -> bool:
        score = _dev_score(model, tokenizer, ttype, run, dev, batch_size, job.precision, iid_metric)
        stop = plateau.epoch_end(epoch, score)
        if plateau.best_epoch == epoch:
            state["weights"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return stop

    lr_factor = plateau.lr_factor if schedule == "halve_on_plateau" else None
    if challenge is not None:   # the challenge's training part, trained as i.i.d. data through the one loop
        model, tokenizer = load_start_model(run, job, num_labels=ttype.num_model_labels, head=ttype.head,
                                            start=start)
        streams = build_streams(ttype, challenge_train, None, qa_answer_match=run.qa_answer_match)
        summary = train_model(model, tokenizer, streams, run, job, clock, on_epoch_end=on_epoch_end,
                              lr_factor=lr_factor)
    else:
        model, tokenizer, summary = train_fold(run, job, clock, suite=suite, split=split, iid_train=None,
                                               start=start, case_ids=chosen, on_epoch_end=on_epoch_end,
                                               lr_factor=lr_factor)
    if state["weights"] is not None:
        model.load_state_dict(state["weights"])
    model.eval()
    suite_test = split_cases(suite, split, run.task_type, "test")
    test = read_parquet(iid_test, "i.i.d. test data")
    _, outcome = evaluate_fold(model, tokenizer, run, job, clock, suite_test=suite_test, iid=test,
                               held_out=unit_funcs, batch_size=batch_size, source=out_result, ood=ood)
    val_rates = pd.Series(dtype=float)
    if challenge is None:
        val_cases = split_cases(suite, split, run.task_type, "val", unit_funcs)
        val_rates = suite_pass_rates(model, tokenizer, val_cases, run, job, clock, batch_size=batch_size,
                                     source=f"{out_result} (T_val)")
    with clock("score"):
        suite_rows = outcome[outcome["split"] == "suite_test"]
        rates = pass_rates(suite_rows[["case_id", "functionality", "status"]], functionality_table(suite_test))
        rates = rates.set_index("functionality")["pass_rate"]
        metrics = iid_metrics(outcome, ttype.name)
    unit_rates = rates.reindex(unit_funcs)
    challenge_score = float(unit_rates.mean()) if unit_rates.notna().any() else None
    keep = (outcome["split"] == "iid_test") | ((outcome["split"] == "suite_test")
                                               & outcome["functionality"].isin(set(unit_funcs)))
    if challenge is not None:
        keep |= outcome["split"] == split_name(challenge)
        challenge_score = iid_score(iid_metrics(outcome, ttype.name, split=split_name(challenge)), iid_metric)
    write_parquet(outcome[keep].drop(columns=["held_out"], errors="ignore").reset_index(drop=True), out_outcomes)
    write_json({
        "task": run.task, "unit": unit, "functionalities": list(unit_funcs), "dose": dose, "n_cases": len(chosen),
        "lr": run.hparams["lr"], "schedule": schedule, "max_epochs": run.hparams["epochs"], "patience": patience,
        "epochs_trained": len(plateau.curve), "best_epoch": plateau.best_epoch, "dev_curve": plateau.curve,
        "lr_factors": plateau.lrs,
        "original": iid_score(metrics, iid_metric), "original_metrics": metrics,
        "challenge": challenge_score, "challenge_set": challenge,
        "challenge_measure": "pass rate" if challenge is None else f"the task's i.i.d. metric ({iid_metric})",
        "challenge_val": float(val_rates.mean()) if val_rates.notna().any() else None,
        "pass_rates": {f: (None if pd.isna(v) else float(v)) for f, v in rates.items()},
        "steps": summary["steps"], "seed": run.seed, "timing": clock.record(), **job.record()}, out_result)
    return clock.parts


def inoculation(*, task: str, task_type: str, iid_metric: str, units: dict, results: list[str], iid_outcomes: str,
                suite: str, lrs: list[float], select_on: str, thresholds: dict, out_table: str, out_outcomes: str,
                out_markdown: str, out_curves: str, out_transfer: str, case_outcomes: list[str],
                decide_by: str = "tests", level: float = 0.05, bootstrap: int = 1000,
                randomization: int = 10_000) -> None:
    """The analysis' tables and figures: per unit and dose the learning rate
    with the best challenge score, its challenge and original scores with
    their intervals at 1 - ``level`` (dose 0: the IID model), the share of the
    dose-0 gap closed and the tests against dose 0; the outcome of every unit
    decided by those tests at ``level`` (``decide_by: thresholds``: by the fixed
    point thresholds) with its label-skew flag, the learning curves and the
    transfer heatmaps (one per dose). ``case_outcomes``: each result's per-case
    outcomes (same order as ``results``)."""
    from beluga.analyses import inoculation as ino
    from beluga.metrics import fold_pass_rates, iid_metrics, iid_score
    from beluga.report.stats import iid_features
    from beluga.suites.format import functionality_table, load_suite

    recs = [json.loads(Path(p).read_text()) for p in results]
    order = {float(lr): i for i, lr in enumerate(lrs)}
    df = pd.DataFrame(recs)
    df["lr_order"] = df["lr"].map(lambda v: order.get(float(v), len(order)))
    df["case_outcomes"] = list(case_outcomes)
    chosen = ino.choose(df, select_on)
    base_out = read_parquet(iid_outcomes, "IID model outcomes")
    cases_all = load_suite(suite)
    funcs = functionality_table(cases_all)
    base_rates = fold_pass_rates(base_out, funcs).set_index("functionality")["pass_rate"].to_dict()
    base_original = iid_score(iid_metrics(base_out, task_type), iid_metric)
    head = get_task_type(task_type).head
    base_iid = ino.original_rows(base_out)
    base_feats, base_hits = iid_features(base_iid, task_type), ino.original_hits(base_iid, task_type)
    conf = 1 - float(level)

    def evidence(cases: pd.DataFrame, fi: np.ndarray, n_func: int, feats: np.ndarray, hits: np.ndarray) -> dict:
        ci = ino.score_intervals(cases["passed"].to_numpy(), cases["scored"].to_numpy(), fi, n_func, feats,
                                 task_type, iid_metric, R=bootstrap, level=conf)
        n_c = int(cases["scored"].sum())
        return {"challenge_lo": ci["challenge"][0], "challenge_hi": ci["challenge"][1],
                "original_lo": ci["original"][0], "original_hi": ci["original"][1],
                "original_same": 100 * float(hits.mean()) if len(hits) else np.nan,
                "p_gap": ino.gap_test(int((cases["passed"] & cases["scored"]).sum()), n_c, int(hits.sum()),
                                      len(hits))}

    rows, skew = [], {}
    for uid, spec in units.items():
        if spec.get("challenge") is not None:   # an external challenge set: scored with the i.i.d. metric
            unit_rows, skew[uid] = _set_rows(uid, spec, chosen[chosen["unit"] == uid], base_out, base_iid,
                                             task_type, iid_metric, head, randomization, bootstrap, conf)
            rows += unit_rows
            continue
        ufuncs = list(spec["functionalities"])
        skew[uid] = ino.label_skew(cases_all[cases_all["functionality"].isin(set(ufuncs))], head,
                                   get_task_type(task_type).suite_labels)
        base_cases, fi0 = ino.unit_case_arrays(base_out, ufuncs)
        vals = [base_rates.get(f) for f in ufuncs if not pd.isna(base_rates.get(f, np.nan))]
        first = {"unit": uid, "level": spec["level"], "label": spec["label"], "dose": "0", "n_cases": 0,
                 "lr": np.nan, "challenge": 100 * float(np.mean(vals)) if vals else np.nan,
                 "challenge_val": np.nan, "original": 100 * base_original, "epochs_trained": 0, "best_epoch": 0,
                 **evidence(base_cases, fi0, len(ufuncs), base_feats, base_hits),
                 "gap_closed": 0.0, "p_gain": np.nan, "p_original": np.nan, "original_test": "",
                 "measure": "pass rate"}
        gap0 = first["original_same"] - first["challenge"]
        first["gap_closed"] = 0.0 if gap0 > 0 else np.nan
        rows.append(first)
        for r in chosen[chosen["unit"] == uid].itertuples(index=False):
            row = {"unit": r.unit, "level": spec["level"], "label": spec["label"], "dose": r.dose,
                   "n_cases": int(r.n_cases), "lr": float(r.lr),
                   "challenge": np.nan if r.challenge is None else 100 * float(r.challenge),
                   "challenge_val": np.nan if r.challenge_val is None else 100 * float(r.challenge_val),
                   "original": 100 * float(r.original), "epochs_trained": int(r.epochs_trained),
                   "best_epoch": int(r.best_epoch), "measure": "pass rate"}
            if r.case_outcomes:
                out = read_parquet(r.case_outcomes, "inoculation outcomes")
                cases, fi = ino.unit_case_arrays(out, ufuncs)
                iid_rows = ino.original_rows(out)
                if list(iid_rows["case_id"]) != list(base_iid["case_id"]):
                    raise ValueError(f"{r.case_outcomes}: field 'case_id': the i.i.d. test examples differ from "
                                     "the IID model's")
                feats, hits = iid_features(iid_rows, task_type), ino.original_hits(iid_rows, task_type)
                row.update(evidence(cases, fi, len(ufuncs), feats, hits))
                row.update(ino.dose_tests(base_cases, cases, base_feats, feats, base_hits, hits, task_type,
                                          iid_metric, R=randomization))
                row["gap_closed"] = (row["challenge"] - first["challenge"]) / gap0 if gap0 > 0 else np.nan
            rows.append(row)
    table = pd.DataFrame(rows)
    table["_unit"] = table["unit"].map({u: i for i, u in enumerate(units)})
    table = table.sort_values(["_unit", "n_cases"], kind="stable").drop(columns="_unit").reset_index(drop=True)
    cols = ["unit", "level", "label", "measure", "dose", "n_cases", "lr", "challenge", "challenge_lo", "challenge_hi",
            "original", "original_lo", "original_hi", "original_same", "gap_closed", "p_gain", "p_original",
            "original_test", "p_gap", "challenge_val", "epochs_trained", "best_epoch"]
    table = table[[c for c in cols if c in table.columns]]
    outcomes = []
    for uid, g in table.groupby("unit", sort=False):
        first, last = g.iloc[0], g.iloc[-1]
        if decide_by == "tests":
            label, reason = ino.decide(first, last, level, skew[uid]["informative_3"])
            how = f"tests at level {level:g}"
        else:
            label, reason = ino.classify(first.challenge, first.original, last.challenge, last.original, **thresholds)
            how = "point thresholds"
        outcomes.append({"unit": uid, "label": first.label, "level": first.level, "outcome": label,
                         "reason": reason, "decided_by": how, "last_dose": last.dose,
                         "challenge_0": first.challenge, "challenge_last": last.challenge,
                         "challenge_last_lo": last.get("challenge_lo"), "challenge_last_hi": last.get("challenge_hi"),
                         "original_0": first.original, "original_last": last.original,
                         "original_last_lo": last.get("original_lo"), "original_last_hi": last.get("original_hi"),
                         "gap_measure": first.measure, "gap_0": first.original_same - first.challenge,
                         "gap_closed": last.get("gap_closed"), "p_gain": last.get("p_gain"),
                         "p_original": last.get("p_original"), "original_test": last.get("original_test"),
                         "p_gap_0": first.p_gap, "p_gap_last": last.get("p_gap"), **skew[uid]})
    outcomes = pd.DataFrame(outcomes)
    write_csv(table, out_table)
    write_csv(outcomes, out_outcomes)
    write_text(_markdown(task, table, outcomes, select_on, decide_by, level), out_markdown)
    ino.curves_figure(table, outcomes, task, out_curves, level=level)
    suite_units = {u: spec for u, spec in units.items() if spec["functionalities"]}   # columns: pass rates
    mats = {d: ino.transfer_matrix(chosen, base_rates, suite_units, d) for d in dict.fromkeys(chosen["dose"])}
    ino.transfer_figure(mats, units, task, out_transfer)


def _set_rows(uid: str, spec: dict, chosen: pd.DataFrame, base_out: pd.DataFrame, base_iid: pd.DataFrame,
              task_type: str, iid_metric: str, head: str, R: int, bootstrap: int, conf: float) -> tuple[list, dict]:
    """The table rows (dose 0, then each chosen dose) and the label skew of an external challenge set:
    its test part scored with the task's i.i.d. metric, the gap against the original score in that
    measure, the tests on the same examples against the IID model (dose 0)."""
    from beluga.analyses import inoculation as ino
    from beluga.data.ood_sets import split_name
    from beluga.metrics import iid_metrics, iid_score
    from beluga.report.stats import iid_features

    name = split_name(spec["challenge"])
    base_set = base_out[base_out["split"] == name]
    if head == "qa":
        skew = ino.label_skew(base_set, head)
    else:
        skew = ino.set_label_skew(pd.DataFrame({"label": base_set["gold_label"].astype(int)}), head,
                                  get_task_type(task_type).iid_labels)
    if not len(chosen):
        return [], skew
    from beluga.metrics import IID_METRICS

    names = IID_METRICS[task_type] if iid_metric == "mean" else [iid_metric]
    measure = " / ".join(names) + (" (mean)" if len(names) > 1 else "")

    def score(rows: pd.DataFrame) -> float:
        return 100 * iid_score(iid_metrics(rows, task_type, split=name), iid_metric)

    def parts(out: pd.DataFrame, test_ids=None):
        ch = out[out["split"] == name].copy()
        ch["case_id"] = ch["case_id"].astype(str)
        if test_ids is not None:
            ch = ch[ch["case_id"].isin(test_ids)]
        ch = ch.sort_values("case_id", kind="stable").reset_index(drop=True)
        orig = ino.original_rows(out)
        return (ch, iid_features(ch, task_type), ino.original_hits(ch, task_type), orig,
                iid_features(orig, task_type), ino.original_hits(orig, task_type))

    def evidence(ch, ch_f, ch_h, orig, orig_f, orig_h) -> dict:
        c_lo, c_hi = ino.metric_interval(ch_f, task_type, iid_metric, R=bootstrap, level=conf)
        o_lo, o_hi = ino.metric_interval(orig_f, task_type, iid_metric, R=bootstrap, level=conf)
        original = 100 * iid_score(iid_metrics(orig, task_type), iid_metric)
        return {"challenge": score(ch), "challenge_lo": c_lo, "challenge_hi": c_hi, "original": original,
                "original_lo": o_lo, "original_hi": o_hi, "original_same": original, "measure": measure,
                "p_gap": ino.set_gap_test(ch_f, ch_h, orig_f, orig_h, task_type, iid_metric, R=R)}

    first_out = read_parquet(chosen.iloc[0].case_outcomes, "inoculation outcomes")
    test_ids = set(first_out.loc[first_out["split"] == name, "case_id"].astype(str))
    base = parts(base_out, test_ids)
    if list(base[3]["case_id"]) != list(base_iid["case_id"]):
        raise ValueError("IID model outcomes: field 'case_id': i.i.d. test examples out of order")
    head_row = {"unit": uid, "level": spec["level"], "label": spec["label"]}
    first = {**head_row, "dose": "0", "n_cases": 0, "lr": np.nan, "challenge_val": np.nan, "epochs_trained": 0,
             "best_epoch": 0, **evidence(*base), "p_gain": np.nan, "p_original": np.nan, "original_test": ""}
    gap0 = first["original_same"] - first["challenge"]
    first["gap_closed"] = 0.0 if gap0 > 0 else np.nan
    rows = [first]
    for r in chosen.itertuples(index=False):
        now = parts(read_parquet(r.case_outcomes, "inoculation outcomes"), test_ids)
        if list(now[0]["case_id"]) != list(base[0]["case_id"]) or list(now[3]["case_id"]) != list(base[3]["case_id"]):
            raise ValueError(f"{r.case_outcomes}: field 'case_id': the examples differ from the IID model's")
        row = {**head_row, "dose": r.dose, "n_cases": int(r.n_cases), "lr": float(r.lr), "challenge_val": np.nan,
               "epochs_trained": int(r.epochs_trained), "best_epoch": int(r.best_epoch), **evidence(*now)}
        row["p_gain"], _ = ino.paired_metric_test(base[1], now[1], base[2], now[2], task_type, iid_metric, R=R)
        row["p_original"], row["original_test"] = ino.paired_metric_test(base[4], now[4], base[5], now[5], task_type,
                                                                         iid_metric, R=R)
        row["gap_closed"] = (row["challenge"] - first["challenge"]) / gap0 if gap0 > 0 else np.nan
        rows.append(row)
    return rows, skew


def _markdown(task: str, table: pd.DataFrame, outcomes: pd.DataFrame, select_on: str, decide_by: str,
              level: float) -> str:
    def num(x, fmt="{:.1f}") -> str:
        return "" if x is None or pd.isna(x) else fmt.format(x)

    def ci(r, col) -> str:
        lo, hi = getattr(r, f"{col}_lo", None), getattr(r, f"{col}_hi", None)
        return f"{getattr(r, col):.1f} [{num(lo, '{:.0f}')}, {num(hi, '{:.0f}')}]" if lo is not None else \
            f"{getattr(r, col):.1f}"

    conf = f"{100 * (1 - level):g}%"
    md = [f"# {task.upper()}: inoculation by fine-tuning", "",
          "| unit | outcome | label skew | why |", "|---|---|---|---|"]
    md += [f"| {r.label} | {r.outcome} | {r.label_skew}{'' if r.informative_3 else ' (uninformative for 3)'} | "
           f"{r.reason} |" for r in outcomes.itertuples(index=False)]
    md += ["", f"| unit | measure | dose | cases | lr | challenge ({conf} CI) | original ({conf} CI) | "
           "original in the measure | gap closed | p gain | p original | p gap left | epochs (best) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    md += [f"| {r.label} | {r.measure} | {r.dose} | {r.n_cases} | {num(r.lr, '{:g}')} | {ci(r, 'challenge')} | "
           f"{ci(r, 'original')} | "
           f"{num(getattr(r, 'original_same', None))} | {num(getattr(r, 'gap_closed', None), '{:.0%}')} | "
           f"{num(getattr(r, 'p_gain', None), '{:.3g}')} | {num(getattr(r, 'p_original', None), '{:.3g}')} | "
           f"{num(getattr(r, 'p_gap', None), '{:.3g}')} | {r.epochs_trained} ({r.best_epoch}) |"
           for r in table.itertuples(index=False)]
    how = (f"decided by tests at level {level:g} (unadjusted, last dose against dose 0): the challenge gain by an "
           "exact McNemar test on the unit's T_test cases (pooled over its functionalities), the original change by "
           "an exact McNemar test on the i.i.d. test examples (a paired randomization test when the i.i.d. score is "
           "not the mean of a 0/1 outcome), the gap by a one-sided Fisher exact test of the challenge pass rate "
           "against the original pass rate (the share of D_test examples the model gets right, each read as a "
           "one-input MFT case: the gap is measured in one measure, the pass rate); for an external challenge set, "
           "scored with the task's i.i.d. metric, the same tests on its examples (exact McNemar / Fisher for a 0/1 "
           "metric, paired randomization / permutation otherwise) against the original score in that metric"
           if decide_by == "tests" else
           "decided by the fixed point thresholds of inoculation.thresholds")
    md += ["", "Outcome 1: the gap closes (a significant challenge gain, no significant gap left, no significant "
           "original drop); 2: nothing changes (no significant challenge gain); 3: the original score drops "
           "significantly (the challenge conflicts with the original data); between: a significant gain but a "
           "significant gap left; no gap: no significant gap at dose 0. Outcomes " + how + ". Gap closed: the "
           "challenge gain as a share of the dose-0 gap between the original and the challenge score in one measure. "
           f"Intervals: {conf} percentile bootstrap (cases resampled within functionality, examples resampled). "
           "A unit whose labelled cases share one label, or that has no labelled case (INV / DIR), is uninformative "
           "for outcome 3 (the seed's §3.3). Dose 0 is the IID model; lr picked on the challenge "
           f"{'test set (as the seed)' if select_on == 'test' else 'validation cases'}."]
    return "\n".join(md) + "\n"
