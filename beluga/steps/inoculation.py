"""rules/inoculation.smk: inoculation by fine-tuning (beluga/analyses/inoculation.py). Its
training jobs train and score through beluga/fold.py, as the fold jobs do (the project's one
training loop, beluga.training.train)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.io import read_parquet, write_csv, write_json, write_text
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
              out_result: str) -> dict:
    """One (unit, dose, learning rate): fine-tune the IID model on the dose's
    T_train cases of the unit until the original dev score has not improved
    for ``patience`` epochs (at most the run's epochs; the best-dev weights
    are kept), then score the challenge (the unit's T_test and T_val), every
    functionality of T_test and the original test set."""
    from beluga.analyses.inoculation import dose_sample
    from beluga.fold import evaluate_fold, suite_pass_rates, train_fold
    from beluga.metrics import iid_metrics, iid_score, pass_rates
    from beluga.suites.format import functionality_table

    run = FoldRun.from_dict(run)
    job, clock = begin(run.threads, run.precision, run.gpus)
    ttype = get_task_type(run.task_type)
    train_cases = split_cases(suite, split, run.task_type, "train", unit_funcs)
    chosen = dose_sample(train_cases["case_id"], dose, sample_seed, unit)
    dev = read_parquet(iid_val, "i.i.d. validation data")
    state = {"best": -np.inf, "best_epoch": 0, "weights": None, "curve": []}

    def on_epoch_end(epoch: int, model, tokenizer) -> bool:
        score = _dev_score(model, tokenizer, ttype, run, dev, batch_size, job.precision, iid_metric)
        state["curve"].append(score)
        if score > state["best"]:
            state.update(best=score, best_epoch=epoch,
                         weights={k: v.detach().clone() for k, v in model.state_dict().items()})
        return epoch - state["best_epoch"] >= patience

    model, tokenizer, summary = train_fold(run, job, clock, suite=suite, split=split, iid_train=None, start=start,
                                           case_ids=chosen, on_epoch_end=on_epoch_end)
    if state["weights"] is not None:
        model.load_state_dict(state["weights"])
    model.eval()
    suite_test = split_cases(suite, split, run.task_type, "test")
    test = read_parquet(iid_test, "i.i.d. test data")
    _, outcome = evaluate_fold(model, tokenizer, run, job, clock, suite_test=suite_test, iid=test,
                               held_out=unit_funcs, batch_size=batch_size, source=out_result)
    val_cases = split_cases(suite, split, run.task_type, "val", unit_funcs)
    val_rates = suite_pass_rates(model, tokenizer, val_cases, run, job, clock, batch_size=batch_size,
                                 source=f"{out_result} (T_val)")
    with clock("score"):
        suite_rows = outcome[outcome["split"] == "suite_test"]
        rates = pass_rates(suite_rows[["case_id", "functionality", "status"]], functionality_table(suite_test))
        rates = rates.set_index("functionality")["pass_rate"]
        metrics = iid_metrics(outcome, ttype.name)
    unit_rates = rates.reindex(unit_funcs)
    write_json({
        "task": run.task, "unit": unit, "functionalities": list(unit_funcs), "dose": dose, "n_cases": len(chosen),
        "lr": run.hparams["lr"], "max_epochs": run.hparams["epochs"], "patience": patience,
        "epochs_trained": len(state["curve"]), "best_epoch": state["best_epoch"], "dev_curve": state["curve"],
        "original": iid_score(metrics, iid_metric), "original_metrics": metrics,
        "challenge": float(unit_rates.mean()) if unit_rates.notna().any() else None,
        "challenge_val": float(val_rates.mean()) if val_rates.notna().any() else None,
        "pass_rates": {f: (None if pd.isna(v) else float(v)) for f, v in rates.items()},
        "steps": summary["steps"], "seed": run.seed, "timing": clock.record(), **job.record()}, out_result)
    return clock.parts


def inoculation(*, task: str, task_type: str, iid_metric: str, units: dict, results: list[str], iid_outcomes: str,
                suite: str, lrs: list[float], select_on: str, thresholds: dict, out_table: str, out_outcomes: str,
                out_markdown: str, out_curves: str, out_transfer: str) -> None:
    """The analysis' tables and figures: per unit and dose the learning rate
    with the best challenge score, its challenge and original scores (dose 0:
    the IID model), the outcome of every unit, the learning curves and the
    transfer heatmaps (one per dose)."""
    from beluga.analyses import inoculation as ino
    from beluga.metrics import fold_pass_rates, iid_metrics, iid_score
    from beluga.suites.format import functionality_table, load_suite

    recs = [json.loads(Path(p).read_text()) for p in results]
    order = {float(lr): i for i, lr in enumerate(lrs)}
    df = pd.DataFrame(recs)
    df["lr_order"] = df["lr"].map(lambda v: order.get(float(v), len(order)))
    chosen = ino.choose(df, select_on)
    base_out = read_parquet(iid_outcomes, "IID model outcomes")
    funcs = functionality_table(load_suite(suite))
    base_rates = fold_pass_rates(base_out, funcs).set_index("functionality")["pass_rate"].to_dict()
    base_original = iid_score(iid_metrics(base_out, task_type), iid_metric)
    rows = []
    for uid, spec in units.items():
        vals = [base_rates.get(f) for f in spec["functionalities"] if not pd.isna(base_rates.get(f, np.nan))]
        rows.append({"unit": uid, "level": spec["level"], "label": spec["label"], "dose": "0", "n_cases": 0,
                     "lr": np.nan, "challenge": 100 * float(np.mean(vals)) if vals else np.nan,
                     "challenge_val": np.nan, "original": 100 * base_original, "epochs_trained": 0,
                     "best_epoch": 0})
    for r in chosen.itertuples(index=False):
        spec = units[r.unit]
        rows.append({"unit": r.unit, "level": spec["level"], "label": spec["label"], "dose": r.dose,
                     "n_cases": int(r.n_cases), "lr": float(r.lr),
                     "challenge": np.nan if r.challenge is None else 100 * float(r.challenge),
                     "challenge_val": np.nan if r.challenge_val is None else 100 * float(r.challenge_val),
                     "original": 100 * float(r.original), "epochs_trained": int(r.epochs_trained),
                     "best_epoch": int(r.best_epoch)})
    table = pd.DataFrame(rows)
    table["_unit"] = table["unit"].map({u: i for i, u in enumerate(units)})
    table = table.sort_values(["_unit", "n_cases"], kind="stable").drop(columns="_unit").reset_index(drop=True)
    outcomes = []
    for uid, g in table.groupby("unit", sort=False):
        first, last = g.iloc[0], g.iloc[-1]
        label, reason = ino.classify(first.challenge, first.original, last.challenge, last.original, **thresholds)
        outcomes.append({"unit": uid, "label": first.label, "level": first.level, "outcome": label,
                         "reason": reason, "last_dose": last.dose, "challenge_0": first.challenge,
                         "challenge_last": last.challenge, "original_0": first.original,
                         "original_last": last.original})
    outcomes = pd.DataFrame(outcomes)
    write_csv(table, out_table)
    write_csv(outcomes, out_outcomes)
    md = [f"# {task.upper()}: inoculation by fine-tuning", "",
          "| unit | outcome | why |", "|---|---|---|"]
    md += [f"| {r.label} | {r.outcome} | {r.reason} |" for r in outcomes.itertuples(index=False)]
    md += ["", "| unit | dose | cases | lr | challenge | original | epochs (best) |", "|---|---|---|---|---|---|---|"]
    md += [f"| {r.label} | {r.dose} | {r.n_cases} | {'' if pd.isna(r.lr) else f'{r.lr:g}'} | {r.challenge:.1f} | "
           f"{r.original:.1f} | {r.epochs_trained} ({r.best_epoch}) |" for r in table.itertuples(index=False)]
    md += ["", "Outcome 1: the gap closes (challenge within reach of the original score, original kept); 2: "
           "nothing changes (a weakness of the model); 3: the original score drops (the challenge conflicts with "
           f"the original data); between: neither. Dose 0 is the IID model; lr picked on the challenge "
           f"{'test set (as the seed)' if select_on == 'test' else 'validation cases'}."]
    write_text("\n".join(md) + "\n", out_markdown)
    ino.curves_figure(table, outcomes, task, out_curves)
    mats = {d: ino.transfer_matrix(chosen, base_rates, units, d) for d in dict.fromkeys(chosen["dose"])}
    ino.transfer_figure(mats, units, task, out_transfer)


