"""rules/inoculation.smk: inoculation by fine-tuning (beluga/analyses/inoculation.py). Its
training jobs train and score through beluga/fold.py, as the fold jobs do (the project's one
training loop, beluga.training.train)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from beluga.errors import DataError
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


def inoculation(*, task: str, task_type: str, iid_metric: str, units: dict, results: list[str],
                iid_outcomes: str | list[str], suite: str, lrs: list[float], select_on: str, thresholds: dict,
                out_table: str, out_outcomes: str, out_markdown: str, out_curves: str, out_transfer: str,
                case_outcomes: list[str], decide_by: str = "tests", level: float = 0.05, bootstrap: int = 1000,
                randomization: int = 10_000, seeds: list[int] | None = None, base_seed: int | None = None) -> None:
    """The analysis' tables and figures: per unit and dose the learning rate
    with the best challenge score, its challenge and original scores with
    their intervals at 1 - ``level`` (dose 0: the IID model), the share of the
    dose-0 gap closed and the tests against dose 0; the outcome of every unit
    decided by those tests at ``level`` (``decide_by: thresholds``: by the fixed
    point thresholds) with its label-skew flag, the learning curves and the
    transfer heatmaps (one per dose). ``case_outcomes``: each result's per-case
    outcomes (same order as ``results``).

    ``seeds`` (the training seeds; None: one): ``results`` / ``case_outcomes`` hold every seed's runs
    seed by seed and ``iid_outcomes`` one IID model outcome file per seed, in ``seeds`` order
    (:func:`beluga.analyses.inoculation.split_by_seed`). One seed: the one-seed summary, unchanged;
    several: :func:`beluga.analyses.inoculation.seeds_summary_tables` (mean ± sd over seeds, tests
    stratified by seed; ``base_seed``'s draws are a one-seed run's)."""
    from beluga.analyses import inoculation as ino
    from beluga.suites.format import load_suite

    iid_files = [iid_outcomes] if isinstance(iid_outcomes, str) else list(iid_outcomes)
    recs = [json.loads(Path(p).read_text()) for p in results]
    if seeds is not None:
        per_seed = ino.split_by_seed(recs, list(results), list(case_outcomes), iid_files, seeds)
    if seeds is None or len(per_seed) == 1:
        if len(iid_files) != 1:
            raise DataError(f"inoculation: field 'iid_outcomes': {len(iid_files)} IID model outcome files for one "
                            "training seed")
        return _one_seed(ino, task=task, task_type=task_type, iid_metric=iid_metric, units=units, recs=recs,
                         iid_outcomes=iid_files[0], cases_all=load_suite(suite), lrs=lrs, select_on=select_on,
                         thresholds=thresholds, out_table=out_table, out_outcomes=out_outcomes,
                         out_markdown=out_markdown, out_curves=out_curves, out_transfer=out_transfer,
                         case_outcomes=case_outcomes, decide_by=decide_by, level=level, bootstrap=bootstrap,
                         randomization=randomization)
    per_seed = [(s, r, co, read_parquet(p, f"IID model outcomes (training seed {s})")) for s, r, co, p in per_seed]
    chosen, table, outcomes, base_rates = ino.seeds_summary_tables(
        per_seed, task_type=task_type, iid_metric=iid_metric, units=units, cases_all=load_suite(suite), lrs=lrs,
        select_on=select_on, thresholds=thresholds, decide_by=decide_by, level=level, bootstrap=bootstrap,
        randomization=randomization, base_seed=base_seed)
    write_csv(table, out_table)
    write_csv(outcomes, out_outcomes)
    write_text(ino.inoculation_markdown(task, table, outcomes, select_on, decide_by, level,
                                        seeds=[s for s, *_ in per_seed]), out_markdown)
    ino.curves_figure(table, outcomes, task, out_curves, level=level)
    suite_units = {u: spec for u, spec in units.items() if spec["functionalities"]}   # columns: pass rates
    ino.transfer_figure(ino.seeds_transfer_matrices(chosen, base_rates, suite_units), units, task, out_transfer,
                        n_seeds=len(per_seed))


def _one_seed(ino, *, task: str, task_type: str, iid_metric: str, units: dict, recs: list[dict], iid_outcomes: str,
              cases_all: pd.DataFrame, lrs: list[float], select_on: str, thresholds: dict, out_table: str,
              out_outcomes: str, out_markdown: str, out_curves: str, out_transfer: str, case_outcomes: list[str],
              decide_by: str, level: float, bootstrap: int, randomization: int) -> None:
    """The summary of one training seed (the outputs of a run before training seeds)."""
    chosen, table, outcomes, base_rates = ino.summary_tables(
        recs, case_outcomes, task_type=task_type, iid_metric=iid_metric, units=units,
        base_out=read_parquet(iid_outcomes, "IID model outcomes"), cases_all=cases_all, lrs=lrs,
        select_on=select_on, thresholds=thresholds, decide_by=decide_by, level=level, bootstrap=bootstrap,
        randomization=randomization)
    write_csv(table, out_table)
    write_csv(outcomes, out_outcomes)
    write_text(ino.inoculation_markdown(task, table, outcomes, select_on, decide_by, level), out_markdown)
    ino.curves_figure(table, outcomes, task, out_curves, level=level)
    suite_units = {u: spec for u, spec in units.items() if spec["functionalities"]}   # columns: pass rates
    mats = {d: ino.transfer_matrix(chosen, base_rates, suite_units, d) for d in dict.fromkeys(chosen["dose"])}
    ino.transfer_figure(mats, units, task, out_transfer)
