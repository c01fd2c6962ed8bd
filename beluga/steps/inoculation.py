"""rules/inoculation.smk: inoculation by fine-tuning (beluga/analyses/inoculation/). Its training
jobs train and score through beluga/train/fold.py, as the fold jobs do (the project's one training loop,
beluga.train.loop.train)."""

from __future__ import annotations

import json
from pathlib import Path

from beluga.core.io import read_parquet, write_csv, write_json, write_parquet, write_text
from beluga.model.job import begin
from beluga.train.settings import FoldRun

# ---------------------------------------------------------------- inoculation


def inoculate(*, run: dict, unit: str, unit_funcs: list[str], dose: str, sample_seed: int, patience: int,
              suite: str, split: str, start: str, iid_val: str, iid_test: str, batch_size: int, iid_metric: str,
              out_result: str, out_outcomes: str, schedule: str = "halve_on_plateau", challenge: str | None = None,
              challenge_data: list[str] = (), challenge_test_fraction: float = 0.5,
              challenge_dev_fraction: float = 0.0, challenge_train: list[str] = (),
              challenge_train_size: int | None = None, challenge_distinct=None, challenge_released: list[str] = (),
              degenerate_share: float = 0.95) -> dict:
    """One (unit, dose, learning rate): the IID model fine-tuned on the dose's challenge data and scored
    (:func:`beluga.analyses.inoculation.train.inoculate_dose`; ``challenge``: an external challenge set,
    ``challenge_data``: the prepared set, ``challenge_dev_fraction``: its training part's share held out to
    choose the learning rate on; ``challenge_train``: the prepared OOD set that is its training part, the set
    then tested whole; ``challenge_train_size`` / ``challenge_distinct``: see
    :func:`beluga.analyses.inoculation.plan.challenge_spec`; ``challenge_released``: Liu et al.'s released
    sample of the dose, [] for a drawn one: :func:`beluga.analyses.inoculation.plan.released_samples`). Writes
    the record (``out_result``) and the unit's per-case T_test and per-example D_test outcomes keyed by id
    (``out_outcomes``, for the tests of the summary); the record says whether the model is degenerate (at
    ``degenerate_share``)."""
    from beluga.analyses.inoculation.train import inoculate_dose

    run = FoldRun.from_dict(run)
    job, clock = begin(run.threads, run.precision, run.gpus)
    data = read_parquet(challenge_data[0], f"challenge set {challenge}") if challenge is not None else None
    train_data = read_parquet(challenge_train[0], f"training part of challenge set {challenge}") \
        if challenge is not None and challenge_train else None
    released = None
    if challenge_released:
        from beluga.data.challenge import read_released_sample

        released = read_released_sample(challenge_released[0])
    outcomes, record = inoculate_dose(
        run, job, clock, unit=unit, unit_funcs=unit_funcs, dose=dose, sample_seed=sample_seed, patience=patience,
        schedule=schedule, suite=suite, split=split, start=start, dev=read_parquet(iid_val, "i.i.d. validation data"),
        test=read_parquet(iid_test, "i.i.d. test data"), batch_size=batch_size, iid_metric=iid_metric,
        source=out_result, challenge=challenge, challenge_data=data, challenge_test_fraction=challenge_test_fraction,
        challenge_dev_fraction=challenge_dev_fraction, challenge_train_data=train_data,
        challenge_train_size=challenge_train_size, challenge_distinct=challenge_distinct, challenge_released=released,
        challenge_released_from=challenge_released[0] if challenge_released else "", degenerate_share=degenerate_share)
    write_parquet(outcomes, out_outcomes)
    write_json({**record, "timing": clock.record(), **job.record()}, out_result)
    return clock.parts


def inoculation(*, task: str, task_type: str, iid_metric: str, units: dict, results: list[str],
                iid_outcomes: str | list[str], suite: str, lrs: list[float], select_on: str, thresholds: dict,
                out_table: str, out_outcomes: str, out_markdown: str, out_curves: str, out_transfer: str,
                case_outcomes: list[str], decide_by: str = "tests", level: float = 0.05, bootstrap: int = 1000,
                randomization: int = 10_000, seeds: list[int] | None = None, base_seed: int | None = None,
                iid_predictions: list[str] = (), split: str | None = None, iid_test: str | None = None,
                degenerate_share: float = 0.95, diagnostics: str = "the task's diagnostics/diagnostics.md",
                original_from: str = "original_dev", gap_margin: float = 2.0, drop_margin: float = 2.0) -> None:
    """The analysis' tables and figures (:func:`beluga.analyses.inoculation.summary.summary_tables`): per
    unit and dose the challenge score of the learning rate with the best challenge score and the original
    score of the one with the best original dev score (``original_from: original_dev``, the seed;
    ``challenge_best``: of the same run), both rates recorded, with their intervals at 1 - ``level`` (dose
    0: the IID model), the gap left with its interval, the share of the dose-0 gap closed and the tests
    against dose 0; the outcome of every unit decided by the gap's interval against ``gap_margin``, the
    original drop against ``drop_margin`` and the tests at ``level`` (``decide_by: thresholds``: by the
    fixed point thresholds) with its label-skew flag, the learning curves and the transfer heatmaps (one per
    dose). ``case_outcomes``: each result's per-case outcomes (same order as ``results``).

    ``seeds`` (the training seeds; None: one, not named): ``results`` / ``case_outcomes`` hold every seed's
    runs seed by seed and ``iid_outcomes`` one IID model outcome file per seed, in ``seeds`` order
    (:func:`beluga.analyses.inoculation.summary.split_by_seed`). Several seeds: the mean ± sd over seeds,
    tests stratified by seed (``base_seed``'s draws are a one-seed run's); one seed: the one-seed outputs.

    Degenerate models (beluga/report/degenerate.py): each dose's record says whether its model is; dose 0's,
    the IID model's, is checked here on its predictions (``iid_predictions``, one per seed, of the suite's
    ``split`` and of ``iid_test``, at ``degenerate_share``). A row computed from a degenerate model has its
    cells marked and ``n_models`` / ``n_degenerate`` columns (only when one is); ``diagnostics``: the task's
    diagnostics.md, named in the legend."""
    from beluga.analyses.inoculation import report, summary
    from beluga.report.degenerate import drop_clean_flags
    from beluga.report.diagnostics import run_diagnostics
    from beluga.suites.build import split_cases
    from beluga.suites.format import load_suite

    iid_files = [iid_outcomes] if isinstance(iid_outcomes, str) else list(iid_outcomes)
    recs = [json.loads(Path(p).read_text()) for p in results]
    per_seed = summary.split_by_seed(recs, list(results), list(case_outcomes), iid_files, seeds)
    several = len(per_seed) > 1
    per_seed = [(s, r, co, read_parquet(p, f"IID model outcomes (training seed {s})" if several else
                                        "IID model outcomes")) for s, r, co, p in per_seed]
    chosen, table, outcomes, base_rates = summary.summary_tables(
        per_seed, task_type=task_type, iid_metric=iid_metric, units=units, cases_all=load_suite(suite), lrs=lrs,
        select_on=select_on, thresholds=thresholds, decide_by=decide_by, level=level, bootstrap=bootstrap,
        randomization=randomization, base_seed=base_seed, original_from=original_from, gap_margin=gap_margin,
        drop_margin=drop_margin)
    base_flags = {}
    if iid_predictions:
        suite_test = split_cases(suite, split, task_type, "test")
        test = read_parquet(iid_test, "i.i.d. test data")
        base_flags = {s: run_diagnostics(read_parquet(p, "IID model predictions"), suite_test, test, task_type,
                                         degenerate_share=degenerate_share, source=p)["degenerate"]
                      for (s, *_), p in zip(per_seed, iid_predictions, strict=True)}
    table, outcomes = summary.dose_flags(table, outcomes, chosen, base_flags)
    table, outcomes = drop_clean_flags(table), drop_clean_flags(outcomes)
    write_csv(table, out_table)
    write_csv(outcomes, out_outcomes)
    write_text(report.inoculation_markdown(task, table, outcomes, select_on, decide_by, level,
                                           seeds=[s for s, *_ in per_seed], threshold=f"{100 * degenerate_share:.0f}%",
                                           why=diagnostics, original_from=original_from, gap_margin=gap_margin,
                                           drop_margin=drop_margin, thresholds=thresholds), out_markdown)
    report.curves_figure(table, outcomes, task, out_curves, level=level,
                         rule=report.decision_rule(decide_by, level, gap_margin, drop_margin, thresholds, short=True))
    suite_units = {u: spec for u, spec in units.items() if spec["functionalities"]}   # columns: pass rates
    report.transfer_figure(report.transfer_matrices(chosen, base_rates, suite_units), units, task, out_transfer,
                           n_seeds=len(per_seed))
