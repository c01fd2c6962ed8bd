"""rules/evaluate.smk: predictions and outcomes of the models on disk (the
IID model; every fold model with ``keep_models: true``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from beluga.core.io import read_parquet, write_json, write_parquet
from beluga.core.tasks import get_task_type
from beluga.data.ood_sets import read_prepared
from beluga.model.job import RUN_FILE, begin
from beluga.suites.build import split_cases
from beluga.suites.folds import predicted_iid
from beluga.suites.format import COLUMNS


def test_cases(suite: str | None, split: str | None, task_type: str, functionalities) -> pd.DataFrame:
    """The T_test cases of ``functionalities`` (:func:`beluga.suites.build.split_cases`); none for a task without
    a suite (``suite`` None: its IID model predicts the i.i.d. and OOD sets only)."""
    if not suite:
        return pd.DataFrame(columns=COLUMNS)
    return split_cases(suite, split, task_type, "test", functionalities)


def predict(*, task_type: str, model: str, suite: str | None, split: str | None, iid_test: str,
            functionalities: list[str] | None, batch_size: int, max_length: int, doc_stride: int, threads: int,
            precision: str, out_predictions: str, out_run: str, ood: list[str] = (), gpus: int = 0,
            iid_examples: int | None = None) -> dict:
    """Predictions of a model on disk for every input of the T_test cases of
    ``functionalities`` (None: all) and the i.i.d. test examples it predicts
    (``iid_examples``: :func:`beluga.suites.folds.predicted_iid`; None: all)
    (:func:`beluga.score.predict.predictions`); the run record is the model's,
    with the prediction's settings and timing added."""
    from beluga.model.modeling import load_trained
    from beluga.score.predict import predictions, predictions_table

    job, clock = begin(threads, precision, gpus)
    ttype = get_task_type(task_type)
    net, tokenizer = load_trained(model, ttype.head, task_type=task_type, max_length=max_length)
    net.to(job.device)
    suite_test = test_cases(suite, split, task_type, functionalities)
    iid = predicted_iid(read_parquet(iid_test, "i.i.d. test data"), iid_examples)
    clock.mark("predict_start")
    with clock("predict"):
        df = predictions(net, tokenizer, ttype, suite_test, iid, batch_size, max_length, doc_stride, job.precision,
                         ood=read_prepared(ood))
    write_parquet(predictions_table(df, ttype, out_predictions), out_predictions)
    record = json.loads((Path(model) / RUN_FILE).read_text())
    record["prediction_wall_time_s"] = round(clock.parts["predict"], 2)
    record["n_predictions"] = len(df)
    record["predicted_functionalities"] = functionalities
    record["iid_examples"] = len(iid)
    record["prediction"] = {**job.record(), "timing": clock.record()}
    write_json(record, out_run)
    return clock.parts


def outcomes(*, task_type: str, suite: str | None, split: str | None, predictions: str, iid_test: str,
             held_out: list[str], functionalities: list[str] | None, out_outcomes: str, ood: list[str] = (),
             iid_examples: int | None = None) -> None:
    """Outcomes of a predictions file (:func:`beluga.score.outcomes.run_outcomes`):
    the T_test cases of ``functionalities`` (None: all; what was predicted), the i.i.d. test examples of
    ``iid_examples`` (:func:`beluga.suites.folds.predicted_iid`)."""
    from beluga.score.outcomes import run_outcomes

    ttype = get_task_type(task_type)
    suite_test = test_cases(suite, split, task_type, functionalities)
    preds = read_parquet(predictions, "predictions")
    iid = predicted_iid(read_parquet(iid_test, "i.i.d. test data"), iid_examples)
    write_parquet(run_outcomes(ttype, suite_test, preds, iid, held_out, source=predictions, ood=read_prepared(ood)),
                  out_outcomes)
