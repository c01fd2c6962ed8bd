"""One fold: the one public way to train a model on a fold and to score what
it is scored on. Every step that trains (beluga/steps/train.py,
beluga/steps/inoculation.py, beluga/steps/combinational.py) goes through here, after
:func:`beluga.model.job.begin` started its job and clock:

- :func:`train_fold`: a fold's behavioral fine-tuning, end to end:
  :func:`training_data` (its T_train cases, optionally a subset of them, and
  the i.i.d. mix of its configuration), :func:`load_start_model` (seed →
  model → device), the training streams, :func:`train_model` (the project's
  one training loop, :func:`beluga.train.loop.train`, timed);
- :func:`load_start_model` and :func:`train_model` also train what is not a
  fold (the IID model, the combinational analysis' classifiers) with the same
  seed → load → device → streams → train order;
- :func:`evaluate_fold`: predictions of T_test, the i.i.d. test set and the
  OOD sets, and their outcomes;
- :func:`suite_pass_rates`: predictions, per-case status and per-functionality
  pass rates of a set of suite cases (a trial's or an inoculation's T_val);
  :func:`suite_outcomes` is its predict → score part (also the ``test``
  command's);
- :func:`suite_objective`: a selection trial's score on T_val under
  ``selection.objective`` (:mod:`beluga.train.selection`), with its pass rates.

The random number generators are seeded once per model, in
:func:`load_start_model`, right before the model is built: the training data
are read (and the i.i.d. mix sampled, with its own seeded sampler) before,
the streams are built after it. Selection (``with_selection``) is the
caller's: the run given here has its final hyper-parameters.

Imported by the training steps only (it imports torch); the cheap steps never
import it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import pandas as pd

from beluga.core.clock import Clock
from beluga.core.errors import ConfigError
from beluga.core.io import read_parquet
from beluga.core.tasks import TaskType, get_task_type
from beluga.heads import head_of
from beluga.methods import get_algorithm
from beluga.model.job import Job
from beluga.model.modeling import load_model, set_seed
from beluga.model.precision import Precision
from beluga.score.metrics import pass_rates
from beluga.score.outcomes import run_outcomes, score_cases
from beluga.score.predict import predictions, suite_predictions
from beluga.suites.build import split_cases
from beluga.suites.folds import configuration
from beluga.suites.format import functionality_table
from beluga.train import loop as training
from beluga.train import selection
from beluga.train.settings import FoldRun
from beluga.train.streams import build_streams


def training_data(run: FoldRun, *, suite: str, split: str, iid_train: str | None,
                  case_ids=None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(T_train cases, i.i.d. mix) a fold trains on: the T_train cases of its
    training functionalities (``case_ids``, optional: only those, e.g. an
    inoculation dose) and, for a configuration that mixes i.i.d. data, the
    i.i.d. training data (``iid_train``), at most ``run.iid_in_mix`` of them
    sampled with the run's sample seed, the same for every training seed (None otherwise)."""
    suite_train = split_cases(suite, split, run.task_type, "train", run.training_functionalities)
    if case_ids is not None:
        suite_train = suite_train[suite_train["case_id"].isin(set(case_ids))].reset_index(drop=True)
    iid_df = None
    if configuration(run.configuration).mixes_iid:
        if iid_train is None:
            raise ConfigError(f"configuration {run.configuration}: needs the i.i.d. training data")
        iid_df = read_parquet(iid_train, "i.i.d. training data")
        if run.iid_in_mix is not None and len(iid_df) > run.iid_in_mix:
            iid_df = iid_df.sample(n=int(run.iid_in_mix), random_state=run.sample_seed).reset_index(drop=True)
    return suite_train, iid_df


def load_start_model(run: FoldRun, job: Job, *, num_labels: int, head: str = "classification",
                     start: str | None = None, config_overrides: dict | None = None):
    """(model, tokenizer) training starts from, on the job's device: the
    random number generators seeded with ``run.seed``, then the model built
    from ``start`` (a model on disk: the IID model, an LP model; its head must
    be in its weights) or else the pre-trained ``run.model`` (its hub marker
    ``run.model_lock``; a backbone without the head is fine). Either is
    refused in one line when it records another task type than
    ``run.task_type``, when ``run.max_length`` is beyond its positions or
    when its tokenizer does not match it (:func:`beluga.model.modeling.load_model`)."""
    set_seed(run.seed)
    model, tokenizer = load_model(start or run.model, num_labels, config_overrides=config_overrides, head=head,
                                  model_lock=None if start else run.model_lock, task_type=run.task_type,
                                  max_length=run.max_length, trained=start is not None)
    model.to(job.device)
    return model, tokenizer


def train_model(model, tokenizer, streams, run: FoldRun, job: Job, clock: Clock, on_epoch_end=None,
                lr_factor=None) -> dict:
    """The training loop (:func:`beluga.train.loop.train`) under the job's
    precision, timed: ``train_start`` marked, the ``train`` part with the
    checkpoint writes split off into ``checkpoint``. Returns its summary."""
    clock.mark("train_start")
    with clock("train"):   # looked up when called (a test may replace the loop)
        summary = training.train(model, tokenizer, streams, run, precision=job.precision, on_epoch_end=on_epoch_end,
                                 **({} if lr_factor is None else {"lr_factor": lr_factor}))
    clock.split("train", "checkpoint", summary["checkpoint_s"])
    return summary


def train_fold(run: FoldRun, job: Job, clock: Clock, *, suite: str, split: str, iid_train: str | None,
               start: str | None, case_ids=None, on_epoch_end=None, lr_factor=None):
    """Behavioral fine-tuning of one fold: (model, tokenizer, training
    summary). The model starts from ``start`` (None: the pre-trained model),
    built with the config fields its method needs; ``case_ids`` (optional)
    keeps only those T_train cases; ``on_epoch_end`` is passed to the training
    loop (early stopping), ``lr_factor`` too (a schedule of the caller's
    replacing the method's linear decay; None: the method's). The checkpoint folder is the caller's to delete
    once its outputs are written."""
    ttype = get_task_type(run.task_type)
    suite_train, iid_mix = training_data(run, suite=suite, split=split, iid_train=iid_train, case_ids=case_ids)
    model, tokenizer = load_start_model(run, job, num_labels=ttype.num_model_labels, head=ttype.head, start=start,
                                        config_overrides=get_algorithm(run.method).config_overrides(run.hparams))
    streams = build_streams(ttype, iid_mix, suite_train, dir_train_slice=run.dir_train_slice,
                                    qa_answer_match=run.qa_answer_match,
                                    eq_or_not_negative_target=run.eq_or_not_negative_target, batching=run.batching)
    return model, tokenizer, train_model(model, tokenizer, streams, run, job, clock, on_epoch_end=on_epoch_end,
                                         lr_factor=lr_factor)


def _part(clock: Clock | None, name: str):
    return clock(name) if clock is not None else contextlib.nullcontext()


def suite_outcomes(model, tokenizer, ttype: TaskType, cases: pd.DataFrame, *, split: str, batch_size: int,
                   max_length: int, doc_stride: int, precision: Precision, source: str, clock: Clock | None = None,
                   chunk_cases: int | None = None, on_chunk: Callable[[int], None] | None = None,
                   reasons: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predictions, per-case status) of every input of ``cases``
    (:func:`beluga.score.predict.suite_predictions` under ``split``, in chunks of
    ``chunk_cases`` cases if given; :func:`beluga.score.outcomes.score_cases`,
    ``source`` naming the predictions in messages; ``reasons``: with each
    filtered case's ``filter_reason``), timed as the ``predict``
    and ``score`` parts of ``clock`` if given."""
    with _part(clock, "predict"):
        preds = suite_predictions(model, tokenizer, ttype, cases, split, batch_size, max_length, doc_stride,
                                  precision, chunk_cases=chunk_cases, on_chunk=on_chunk)
    with _part(clock, "score"):
        status = score_cases(cases, preds, ttype, source=source, reasons=reasons)
    return preds, status


def suite_pass_rates(model, tokenizer, cases: pd.DataFrame, run: FoldRun, job: Job, clock: Clock, *,
                     batch_size: int, source: str, split: str = "suite_val") -> pd.Series:
    """Pass rate per functionality (in ``cases``' order; NaN where nothing was
    scored) of the model on ``cases`` (:func:`suite_outcomes`, then
    :func:`beluga.score.metrics.pass_rates`), timed as ``predict`` and ``score``."""
    ttype = get_task_type(run.task_type)
    _, status = suite_outcomes(model, tokenizer, ttype, cases, split=split, batch_size=batch_size,
                               max_length=run.max_length, doc_stride=run.doc_stride, precision=job.precision,
                               source=source, clock=clock)
    with clock("score"):
        return pass_rates(status, functionality_table(cases)).set_index("functionality")["pass_rate"]


def suite_objective(model, tokenizer, cases: pd.DataFrame, run: FoldRun, job: Job, clock: Clock, *,
                    batch_size: int, source: str, objective: str = "pass_rate",
                    plan: dict | None = None) -> dict:
    """A trial's score on ``cases`` (T_val) under ``objective``
    (:mod:`beluga.train.selection`): its record with ``score``, ``metric``, the
    per-functionality ``pass_rates`` (always), and for ``reference`` its
    ``terms`` and ``parts`` (``plan``: :meth:`beluga.heads.Head.objective_plan`
    of the cases, built here if not given; READ predicts its windows and
    pairs once more, as logits). Timed as ``predict`` and ``score``."""
    ttype = get_task_type(run.task_type)
    preds, status = suite_outcomes(model, tokenizer, ttype, cases, split="suite_val", batch_size=batch_size,
                                   max_length=run.max_length, doc_stride=run.doc_stride, precision=job.precision,
                                   source=source, clock=clock)
    with clock("score"):
        rates = pass_rates(status, functionality_table(cases)).set_index("functionality")["pass_rate"]
    record = {"pass_rates": {k: (None if v != v else float(v)) for k, v in rates.items()}}
    if selection.check_objective(objective) == "pass_rate":
        return {**selection.pass_rate_objective(rates), **record}
    if plan is None:
        plan = head_of(ttype).objective_plan(ttype, cases, run.qa_answer_match, run.eq_or_not_negative_target)

    def predict_spans(plan):   # a QA head's terms are read from the model's start / end logits
        from beluga.heads.span.qa import aligned_argmax_agreement, span_argmax_hits

        mft, inv = plan["mft"], plan["inv"]
        t = time.perf_counter()
        hits = span_argmax_hits(model, tokenizer, [m[3] for m in mft], [m[2] for m in mft], [m[4] for m in mft],
                                [m[5] for m in mft], max_length=run.max_length, stride=run.doc_stride,
                                batch_size=batch_size, precision=job.precision)
        same = aligned_argmax_agreement(model, tokenizer, [p[3] for p in inv], [p[2] for p in inv],
                                        [p[5] for p in inv], [p[4] for p in inv], max_length=run.max_length,
                                        batch_size=batch_size, precision=job.precision)
        clock.split("score", "predict", time.perf_counter() - t)   # timed as prediction, inside "score"
        return hits, same

    with clock("score"):
        parts = head_of(ttype).objective_parts(ttype, plan, preds, source, predict_spans)
    return {**selection.reference_objective(ttype.name, parts), **record}


def evaluate_fold(model, tokenizer, run: FoldRun, job: Job, clock: Clock, *, suite_test: pd.DataFrame,
                  iid: pd.DataFrame, held_out, batch_size: int, source: str,
                  ood: dict[str, pd.DataFrame] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predictions, outcomes) of a trained fold: every input of the
    ``suite_test`` cases, every i.i.d. test example and every example of the
    ``ood`` sets (:func:`beluga.score.predict.predictions`), and their outcomes
    (:func:`beluga.score.outcomes.run_outcomes`; ``held_out`` flags the
    functionalities the fold is scored on), timed as ``predict`` and ``score``."""
    ttype = get_task_type(run.task_type)
    with clock("predict"):
        preds = predictions(model, tokenizer, ttype, suite_test, iid, batch_size, run.max_length, run.doc_stride,
                            job.precision, ood=ood)
    with clock("score"):
        outcome = run_outcomes(ttype, suite_test, preds, iid, list(held_out), source=source, ood=ood)
    return preds, outcome
