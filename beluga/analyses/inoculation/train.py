"""Inoculation's training jobs (docs/ANALYSES.md): one (unit, dose, learning rate) fine-tunes the IID
model on the dose's challenge data through the project's one training loop (beluga/train/fold.py), with the
seed's schedule and early stopping on the original dev score (:class:`HalveOnPlateau`), then scores
the challenge, every functionality of T_test and the original test set (:func:`inoculate_dose`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.analyses.inoculation.plan import SCHEDULES, challenge_dev_split, challenge_split, dose_sample
from beluga.core.clock import Clock
from beluga.core.errors import DataError
from beluga.core.tasks import get_task_type
from beluga.data.ood_sets import split_name
from beluga.model.job import Job
from beluga.report.diagnostics import run_diagnostics
from beluga.score.metrics import iid_metrics, iid_score, pass_rates
from beluga.score.outcomes import iid_outcomes
from beluga.score.predict import example_predictions
from beluga.suites.build import split_cases
from beluga.suites.format import functionality_table
from beluga.train.fold import evaluate_fold, load_start_model, suite_pass_rates, train_fold, train_model
from beluga.train.settings import FoldRun
from beluga.train.streams import build_streams


class HalveOnPlateau:
    """The seed's schedule and early stopping (appendix A: "the learning rate
    is halved whenever validation performance does not improve, and we employ
    early stopping with a patience of 5"): after each epoch, :meth:`epoch_end`
    takes the original dev score; a score above the best so far becomes the
    best (its epoch is kept), otherwise the learning-rate factor is halved
    (``halve``: False keeps it, the ``linear`` schedule's early stopping).
    Returns True when ``patience`` epochs have passed without improvement."""

    def __init__(self, patience: int, halve: bool = True):
        self.patience, self.halve = int(patience), bool(halve)
        self.best, self.best_epoch, self.factor = -np.inf, 0, 1.0
        self.curve: list[float] = []
        self.lrs: list[float] = []       # the factor each epoch trained with

    def lr_factor(self) -> float:
        return self.factor

    def epoch_end(self, epoch: int, score: float) -> bool:
        self.lrs.append(self.factor)
        self.curve.append(float(score))
        if score > self.best:
            self.best, self.best_epoch = float(score), int(epoch)
        elif self.halve:
            self.factor *= 0.5
        return epoch - self.best_epoch >= self.patience


def dev_score(model, tokenizer, ttype, run: FoldRun, examples: pd.DataFrame, batch_size: int, precision,
              iid_metric: str, source: str = "original dev set") -> float:
    """The model's score on ``examples`` in the task's i.i.d. metric: the original dev score (the i.i.d.
    validation set), or an external challenge set's dev score (its dev part)."""
    preds = example_predictions(model, tokenizer, ttype, examples, "iid_test", batch_size, run.max_length,
                                run.doc_stride, precision)
    out = iid_outcomes(preds, examples, ttype.head, source=source)
    return iid_score(iid_metrics(out, ttype.name), iid_metric)


def challenge_groups(data: pd.DataFrame, column, name: str) -> list[dict[str, str]] | None:
    """Per column of ``column`` (``inoculation.challenge[].distinct``: one, e.g. ``passage_id``, or a list from the
    coarsest grouping to the finest, e.g. ``[article_id, passage_id]``) example id -> its value, or None without a
    column. DataError naming the set and field when a column is absent."""
    if column is None:
        return None
    out = []
    for col in [column] if isinstance(column, str) else list(column):
        if col not in data.columns:
            raise DataError(f"challenge set {name}: field 'inoculation.challenge[].distinct': no column {col!r} "
                            f"(its columns: {', '.join(map(str, data.columns))})")
        out.append(dict(zip(data["example_id"].astype(str), data[col].astype(str))))
    return out


def released_ids(pool: pd.DataFrame, released: pd.DataFrame, where: str) -> list[str]:
    """The ids of the training split's examples (``pool``: its prepared table) that a released sample
    (``released``: :func:`beluga.data.challenge.read_released_sample`, read from ``where``) holds: READ by the
    question's id, NLI by the pair and its label (two equal rows of the sample take two equal rows of the split).
    DataError naming the file and line when the split lacks one, or the sample repeats a question."""
    if "example_id" in released.columns:
        have = set(pool["example_id"].astype(str))
        ids = released["example_id"].astype(str)
        for i, row in zip(ids, released["row"]):
            if i not in have:
                raise DataError(f"{where}: question {row}: field 'id': {i!r} is not in the training split")
        if ids.duplicated().any():
            raise DataError(f"{where}: field 'id': question {ids[ids.duplicated()].iloc[0]!r} appears twice")
        return sorted(ids)
    cols = ["text", "text_b", "label_name"]
    lacking = next((c for c in cols if c not in pool.columns), None)
    if lacking is not None:
        raise DataError(f"{where}: field '{lacking}': the training split's table has no such column to match the "
                        "released sample on")
    free: dict[tuple, list[str]] = {}
    for key, i in zip(zip(*(pool[c].astype(str) for c in cols)), pool["example_id"].astype(str)):
        free.setdefault(key, []).append(i)
    for ids in free.values():
        ids.sort(reverse=True)      # taken from the smallest id
    out = []
    for key, row in zip(zip(*(released[c].astype(str) for c in cols)), released["row"]):
        if not free.get(key):
            raise DataError(f"{where}: line {row}: field 'sentence1': this pair (label {key[2]}) is not in the "
                            "training split" + (" (or the sample repeats it more often)" if key in free else ""))
        out.append(free[key].pop())
    return sorted(out)


def challenge_parts(data: pd.DataFrame, name: str, dose: str, seed: int, unit: str, *, test_fraction: float = 0.5,
                    dev_fraction: float = 0.0, train_data: pd.DataFrame | None = None, train_size: int | None = None,
                    distinct=None, released: pd.DataFrame | None = None, released_from: str = ""
                    ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """(the dose's training examples, the test part, the dev part or None) of an external challenge set
    (``data``, named ``name``): split by id (``test_fraction``, or ``train_size`` examples to training),
    or, with ``train_data`` (another set, its own training split), trained from that (``train_size``: a
    seeded sample of that many of it) and tested whole; the
    dev part held out of the training part (``dev_fraction``) and the dose drawn from the rest, nested
    across doses; ``distinct``: the grouping column(s) (:func:`challenge_groups`; beluga/analyses/inoculation/
    plan.py). ``released``: the dose is Liu et al.'s released sample of ``train_data`` (read from
    ``released_from``), its examples found in it (:func:`released_ids`), not drawn."""
    if train_data is None:          # the set split into a training and a test part
        pool = data
        groups = challenge_groups(pool, distinct, name)
        train_ids, test_ids = challenge_split(pool["example_id"], test_fraction, seed, name, train_size=train_size,
                                              groups=groups)
        test_part = data[data["example_id"].astype(str).isin(set(test_ids))]
    else:                           # another set is the training part; the set is tested whole
        pool, test_part = train_data, data
        groups = challenge_groups(pool, distinct, f"{name} (its training set)")
        train_ids = list(pool["example_id"].astype(str))
        if train_size is not None:  # that many drawn from it (one a group), a seeded sample the doses nest in
            train_ids = dose_sample(train_ids, str(int(train_size)), seed, f"challenge-pool:{name}", groups)
    train_ids, dev_ids = challenge_dev_split(train_ids, dev_fraction, seed, name, groups)
    if released is not None:
        if train_data is None or dev_ids or train_size is not None:
            raise ValueError("a released sample is one of a whole training split (train_data), without a dev part "
                             "or train_size")
        chosen = set(released_ids(train_data, released, released_from))
    else:
        chosen = set(dose_sample(train_ids, dose, seed, unit, groups))
    ids = pool["example_id"].astype(str)
    dev = pool[ids.isin(set(dev_ids))].reset_index(drop=True) if dev_ids else None
    return pool[ids.isin(chosen)].reset_index(drop=True), test_part.reset_index(drop=True), dev


def inoculate_dose(run: FoldRun, job: Job, clock: Clock, *, unit: str, unit_funcs: list[str], dose: str,
                   sample_seed: int, patience: int, schedule: str, suite: str, split: str, start: str,
                   dev: pd.DataFrame, test: pd.DataFrame, batch_size: int, iid_metric: str, source: str,
                   challenge: str | None = None, challenge_data: pd.DataFrame | None = None,
                   challenge_test_fraction: float = 0.5, challenge_dev_fraction: float = 0.0,
                   challenge_train_data: pd.DataFrame | None = None, challenge_train_size: int | None = None,
                   challenge_distinct=None, challenge_released: pd.DataFrame | None = None,
                   challenge_released_from: str = "", degenerate_share: float = 0.95) -> tuple[pd.DataFrame, dict]:
    """One (unit, dose, learning rate): fine-tune the IID model (``start``) on the dose's T_train cases of
    the unit (:func:`~beluga.analyses.inoculation.plan.dose_sample`) until the original dev score (on
    ``dev``) has not improved for ``patience`` epochs (at most the run's epochs; the best-dev weights are
    kept), the learning rate halved after every epoch without improvement (``schedule:
    halve_on_plateau``, the seed) or decaying linearly (``linear``), then score the challenge (the unit's
    T_test and T_val), every functionality of T_test and the original test set (``test``). An external
    challenge set (``challenge``: its name, ``challenge_data``: the prepared set) replaces the unit's
    T_train / T_test by its training and test parts (:func:`~beluga.analyses.inoculation.plan.challenge_split`),
    trained and scored as i.i.d. data (the task's i.i.d. metric); ``challenge_dev_fraction`` > 0 holds a share
    of its training part out as its dev part (:func:`~beluga.analyses.inoculation.plan.challenge_dev_split`),
    scored as its ``challenge_val`` (the held-out score ``select_on: dev`` chooses on).
    ``challenge_train_data`` (another prepared set, the set's own training split) is the training part and
    the set is tested whole; ``challenge_train_size``: that many examples of the set are the training part;
    ``challenge_distinct``: the column(s) grouping the examples (the article, the passage), each group whole in
    one part and one example of a distinct group in a dose while it fits
    (:func:`~beluga.analyses.inoculation.plan.dose_sample`); ``challenge_released``: Liu et al.'s released sample
    of the dose (read from ``challenge_released_from``), trained on instead of a draw. The record says where the
    dose's examples come from (``sample``: ``released``, with its ``sample_file``; ``drawn``, the seeded draw;
    ``all``, the whole training part). ``source`` names the job's record in messages. The record says whether
    the model is degenerate
    (``degenerate``, ``degenerate_on``: :func:`beluga.report.diagnostics.run_diagnostics` on its predictions of
    T_test and the original test set, at ``degenerate_share``). Returns (the unit's per-case T_test and
    per-example D_test outcomes keyed by id, for the tests of the summary; the job's record without its timing
    and job fields)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"field 'inoculation.schedule': {schedule!r} is not one of {', '.join(SCHEDULES)}")
    ttype = get_task_type(run.task_type)
    ood, challenge_dev = None, None
    if challenge is not None:
        challenge_train, test_part, challenge_dev = challenge_parts(
            challenge_data, challenge, dose, sample_seed, unit, test_fraction=challenge_test_fraction,
            dev_fraction=challenge_dev_fraction, train_data=challenge_train_data, train_size=challenge_train_size,
            distinct=challenge_distinct, released=challenge_released, released_from=challenge_released_from)
        ood = {challenge: test_part}
        chosen = list(challenge_train["example_id"])
    else:
        train_cases = split_cases(suite, split, run.task_type, "train", unit_funcs)
        chosen = dose_sample(train_cases["case_id"], dose, sample_seed, unit)
    plateau = HalveOnPlateau(patience, halve=schedule == "halve_on_plateau")
    state = {"weights": None}

    def on_epoch_end(epoch: int, model, tokenizer) -> bool:
        score = dev_score(model, tokenizer, ttype, run, dev, batch_size, job.precision, iid_metric)
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
    preds, outcome = evaluate_fold(model, tokenizer, run, job, clock, suite_test=suite_test, iid=test,
                                   held_out=unit_funcs, batch_size=batch_size, source=source, ood=ood)
    with clock("score"):
        diagnosed = run_diagnostics(preds, suite_test, test, ttype.name, degenerate_share=degenerate_share,
                                    source=source)
    challenge_val = None      # the held-out challenge score: T_val's mean pass rate, or the set's dev part
    if challenge_dev is not None:     # in the task's i.i.d. metric
        with clock("predict"):
            challenge_val = dev_score(model, tokenizer, ttype, run, challenge_dev, batch_size, job.precision,
                                      iid_metric, source=f"{source} (dev part of {challenge})")
    if challenge is None:
        val_cases = split_cases(suite, split, run.task_type, "val", unit_funcs)
        val_rates = suite_pass_rates(model, tokenizer, val_cases, run, job, clock, batch_size=batch_size,
                                     source=f"{source} (T_val)")
        challenge_val = float(val_rates.mean()) if val_rates.notna().any() else None
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
    outcomes = outcome[keep].drop(columns=["held_out"], errors="ignore").reset_index(drop=True)
    record = {
        "task": run.task, "unit": unit, "functionalities": list(unit_funcs), "dose": dose, "n_cases": len(chosen),
        "sample": "released" if challenge_released is not None else "all" if dose == "all" else "drawn",
        **({"sample_file": challenge_released_from} if challenge_released is not None else {}),
        "lr": run.hparams["lr"], "schedule": schedule, "max_epochs": run.hparams["epochs"], "patience": patience,
        "epochs_trained": len(plateau.curve), "best_epoch": plateau.best_epoch, "dev_curve": plateau.curve,
        "lr_factors": plateau.lrs,
        "original": iid_score(metrics, iid_metric), "original_metrics": metrics,
        "challenge": challenge_score, "challenge_set": challenge,
        **({"challenge_dev_examples": len(challenge_dev)} if challenge_dev is not None else {}),
        "challenge_measure": "pass rate" if challenge is None else f"the task's i.i.d. metric ({iid_metric})",
        "challenge_val": challenge_val,
        "pass_rates": {f: (None if pd.isna(v) else float(v)) for f, v in rates.items()},
        "steps": summary["steps"], "seed": run.seed,
        "degenerate": diagnosed["degenerate"], "degenerate_on": diagnosed["degenerate_on"]}
    return outcomes, record
