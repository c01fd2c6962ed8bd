"""rules/train.smk: the IID model, behavioral fine-tuning per fold (by default
one job trains the fold, predicts what it is scored on and scores it, with the
model in memory), grid trials and their selection.

Every training job gets its settings as one :class:`beluga.train.settings.FoldRun`
(``run``, a dict), trains and scores through :mod:`beluga.train.fold` and returns its
timing parts (training / prediction / scoring seconds) for the job's timing
line (:mod:`beluga.workflow.smk`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from beluga.core.io import read_parquet, write_json, write_parquet
from beluga.core.tasks import get_task_type
from beluga.data.ood_sets import read_prepared
from beluga.heads import head_of
from beluga.model.job import RUN_FILE, Job, begin
from beluga.suites.build import split_cases
from beluga.suites.folds import predicted_iid, scored_functionalities
from beluga.train.selection import best_trial, check_objective
from beluga.train.settings import FoldRun, job_hparams


def train_iid(*, run: dict, train: str, out_model: str) -> dict:
    """The IID model: the pre-trained model trained on D_train."""
    from beluga.model import checkpoint
    from beluga.model.modeling import model_provenance, save_model
    from beluga.train.fold import load_start_model, train_model
    from beluga.train.streams import build_streams

    run = FoldRun.from_dict(run)
    job, clock = begin(run.threads, run.precision, run.gpus)
    ttype = get_task_type(run.task_type)
    model, tokenizer = load_start_model(run, job, num_labels=ttype.num_model_labels, head=ttype.head)
    streams = build_streams(ttype, read_parquet(train, "i.i.d. training data"), None)
    summary = train_model(model, tokenizer, streams, run, job, clock)
    record = {"configuration": "iid", "method": run.method, "partition": "standard", "fold": "all",
              **model_provenance(run.model, run.model_lock), "hparams": run.hparams, "seed": run.seed, **summary,
              **job.record(), "timing": clock.record()}
    save_model(model, tokenizer, out_model, {RUN_FILE: json.dumps(record, indent=2)}, task_type=run.task_type,
               card=model_card_facts(run, record, data=train))
    checkpoint.clear(run.checkpoint_dir)
    return clock.parts


def model_card_facts(run: FoldRun, record: dict, data: str | None, suite: str | None = None) -> dict:
    """What a saved model's card (README.md, :mod:`beluga.model.card`) says: the base model (and the commit a hub
    model resolved to), the task, the i.i.d. training data and suite files, configuration, method, fold, seed and
    hyper-parameters."""
    pre = record.get("pretrained") or {k: record[k] for k in ("model", "model_revision", "model_commit") if k in record}
    card = {"model": run.model, **pre, "task": run.task, "data": _iid_source(data), "suite": suite,
            "configuration": run.configuration, "method": run.method, "seed": run.seed, "hparams": run.hparams}
    if run.configuration != "iid":
        card.update(fold=f"{run.partition} / {run.fold}", start_model=run.start_label,
                    held_out=list(run.held_out) if run.partition != "seen" else [])
    return card


def _iid_source(data: str | None) -> str | None:
    """The i.i.d. training file, with the source its prepare_iid rule read (``source.json`` beside it, written
    by the same rule: source id and origin) when it is there."""
    if data is None:
        return None
    try:
        src = json.loads((Path(data).parent / "source.json").read_text(encoding="utf-8"))
        what = " ".join(str(x) for x in (src.get("source"), f"({src['origin']})" if src.get("origin") else None) if x)
    except (OSError, ValueError, AttributeError, TypeError):
        return data
    return f"{what}: {data}" if what else data


def with_selection(run: FoldRun, selected: str | None) -> tuple[FoldRun, dict | None]:
    """The run with the hyper-parameters model selection chose (``selected``:
    the select_hparams rule's JSON; another method's for LP-FT with
    ``ft_hparams_from: vanilla``) on top of its own, then those its method fixes
    (:func:`beluga.train.settings.job_hparams`), and the choice; without a selection,
    the run as it is (its hyper-parameters complete) and None."""
    if selected is None:
        return run, None
    choice = json.loads(Path(selected).read_text())
    return dataclasses.replace(run, hparams=job_hparams(run.method, run.hparams, choice["hparams"])), choice


def _pretrained(run: FoldRun, start: str | None) -> dict:
    """A hub model's provenance for a fold's record: from the model the fold
    starts from (the IID model, an LP model), which recorded the commit it was
    trained from; from the marker when the fold starts from the pre-trained
    model; nothing for a local or packaged model."""
    if run.model_lock is None:
        return {}
    if start is not None and (Path(start) / RUN_FILE).exists():
        rec = json.loads((Path(start) / RUN_FILE).read_text())
        pre = rec.get("pretrained") or {k: rec[k] for k in ("model", "model_revision", "model_commit") if k in rec}
        if pre.get("model_commit"):
            return {"pretrained": pre}
    from beluga.model.modeling import model_provenance

    return {"pretrained": model_provenance(run.model, run.model_lock)}


def _fold_record(run: FoldRun, choice: dict | None, summary: dict, job: Job, start: str | None = None) -> dict:
    base = _pretrained(run, start)
    return {**base, "task": run.task, "task_type": run.task_type, "configuration": run.configuration,
            "method": run.method, "partition": run.partition, "fold": run.fold,
            "held_out": list(run.held_out) if run.partition != "seen" else [],
            "start_model": run.start_label, "hparams": run.hparams, "seed": run.seed,
            "selection": None if choice is None else {**{k: choice[k] for k in ("policy", "fold", "trial", "score")},
                                                      "objective": choice.get("objective", "pass_rate")},
            "iid_in_mix": run.iid_in_mix, **summary, **job.record()}


def finetune(*, run: dict, suite: str, split: str, iid_train: str | None, iid_test: str, start: str | None,
             selected: str | None, batch_size: int, scope: str, out_predictions: str, out_run: str,
             out_outcomes: str, out_model: str | None = None, ood: list[str] = (),
             iid_examples: int | None = None) -> dict:
    """One fold in one process with the model in memory: behavioral
    fine-tuning, predictions for the T_test cases the fold is scored on
    (``scope``), the i.i.d. test set (a sample of ``iid_examples``:
    :func:`beluga.suites.folds.predicted_iid`) and the OOD sets (``ood``: prepared
    files, empty for most folds), and their outcomes. The model is
    written only to ``out_model`` (finetune_keep: an LP model that LP-FT
    starts from). Rule ``finetune_keep`` (``use rule finetune``) runs this step too."""
    from beluga.model import checkpoint
    from beluga.model.modeling import save_model
    from beluga.score.predict import predictions_table
    from beluga.train.fold import evaluate_fold, train_fold

    run, choice = with_selection(FoldRun.from_dict(run), selected)
    job, clock = begin(run.threads, run.precision, run.gpus)
    ttype = get_task_type(run.task_type)
    model, tokenizer, summary = train_fold(run, job, clock, suite=suite, split=split, iid_train=iid_train,
                                           start=start)
    record = _fold_record(run, choice, summary, job, start)
    if out_model is not None:
        with clock("save_model"):
            save_model(model, tokenizer, out_model, {RUN_FILE: json.dumps(record, indent=2)}, task_type=run.task_type,
                       card=model_card_facts(run, record, data=iid_train, suite=suite))
    functionalities = scored_functionalities({"held_out": list(run.held_out)}, scope)
    suite_test = split_cases(suite, split, run.task_type, "test", functionalities)
    iid = predicted_iid(read_parquet(iid_test, "i.i.d. test data"), iid_examples)
    preds, outcome = evaluate_fold(model, tokenizer, run, job, clock, suite_test=suite_test, iid=iid,
                                   held_out=run.held_out, batch_size=batch_size, source=out_predictions,
                                   ood=read_prepared(ood))
    record.update(n_predictions=len(preds), predict_scope=scope, predicted_functionalities=functionalities,
                  iid_examples=len(iid), timing=clock.record())
    write_parquet(predictions_table(preds, ttype, out_predictions), out_predictions)
    write_json(record, out_run)
    write_parquet(outcome, out_outcomes)
    checkpoint.clear(run.checkpoint_dir)
    return clock.parts


def finetune_model(*, run: dict, suite: str, split: str, iid_train: str | None, start: str | None,
                   selected: str | None, out_model: str) -> dict:
    """Behavioral fine-tuning of one fold whose model is kept on disk
    (``keep_models: true``); the predict and outcomes rules take it from there."""
    from beluga.model import checkpoint
    from beluga.model.modeling import save_model
    from beluga.train.fold import train_fold

    run, choice = with_selection(FoldRun.from_dict(run), selected)
    job, clock = begin(run.threads, run.precision, run.gpus)
    model, tokenizer, summary = train_fold(run, job, clock, suite=suite, split=split, iid_train=iid_train,
                                           start=start)
    record = {**_fold_record(run, choice, summary, job, start), "timing": clock.record()}
    save_model(model, tokenizer, out_model, {RUN_FILE: json.dumps(record, indent=2)}, task_type=run.task_type,
               card=model_card_facts(run, record, data=iid_train, suite=suite))
    checkpoint.clear(run.checkpoint_dir)
    return clock.parts


def trial(*, run: dict, trial_id: str, grid_point: dict, suite: str, split: str, iid_train: str | None,
          start: str | None, batch_size: int, out_score: str, objective: str = "pass_rate") -> dict:
    """One grid point of model selection: train the fold (``run``: its
    hyper-parameters have ``grid_point`` on top, ``beluga.workflow.runs.Runs.hparams``),
    score T_val of its training
    functionalities (the held-out ones are never looked at) under
    ``objective`` (``selection.objective``: :mod:`beluga.train.selection`), write
    the score, its parts and the pass rates. The reference objective's plan
    of T_val is checked before training."""
    from beluga.model import checkpoint
    from beluga.train.fold import suite_objective, train_fold

    run = FoldRun.from_dict(run)
    if job_hparams(run.method, run.hparams, grid_point) != run.hparams:
        raise ValueError(f"trial {trial_id}: the run's hyper-parameters {run.hparams} do not hold its grid point "
                         f"{grid_point}")
    val = split_cases(suite, split, run.task_type, "val", run.training_functionalities)
    plan = None
    if check_objective(objective) == "reference":
        ttype = get_task_type(run.task_type)
        plan = head_of(ttype).objective_plan(ttype, val, run.qa_answer_match, run.eq_or_not_negative_target)
    job, clock = begin(run.threads, run.precision, run.gpus)
    model, tokenizer, summary = train_fold(run, job, clock, suite=suite, split=split, iid_train=iid_train,
                                           start=start)
    result = suite_objective(model, tokenizer, val, run, job, clock, batch_size=batch_size,
                             source=f"trial {trial_id}", objective=objective, plan=plan)
    write_json({"trial": trial_id, "grid_point": grid_point, "hparams": run.hparams, "fold": run.fold,
                "partition": run.partition, **result, "steps": summary["steps"],
                "wall_time_s": summary["wall_time_s"], **job.record(), "timing": clock.record()}, out_score)
    checkpoint.clear(run.checkpoint_dir)
    return clock.parts


def select_hparams(*, trials: list[str], policy: str, out_selected: str) -> None:
    """The grid point with the best T_val score (:func:`beluga.train.selection.best_trial`:
    ties go to the first in grid order, NaN scores never win)."""
    results = [json.loads(Path(t).read_text()) for t in trials]
    best = best_trial(results)
    write_json({"policy": policy, "fold": f"{best['partition']}/{best['fold']}", "trial": best["trial"],
                "objective": best.get("objective", "pass_rate"), "score": best["score"],
                "hparams": best["grid_point"], "trials": {r["trial"]: r["score"] for r in results}}, out_selected)
