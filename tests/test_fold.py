"""The public fold API (beluga/train/fold.py) on the tiny random model: the training
data a fold sees, the same run giving the same weights, and the scoring helpers
agreeing with scoring done by hand."""

import pandas as pd
import pytest
import torch
from conftest import fold_run, make_tiny_suite

from beluga.core.clock import Clock
from beluga.core.errors import ConfigError
from beluga.core.io import write_parquet
from beluga.core.tasks import get_task_type
from beluga.model.job import Job
from beluga.model.precision import resolve
from beluga.score.metrics import pass_rates
from beluga.score.outcomes import score_cases
from beluga.score.predict import suite_predictions
from beluga.suites.build import split_cases
from beluga.suites.format import functionality_table, save_suite
from beluga.train import fold

SENT = get_task_type("sent")
SPLITS = ("train", "train", "val", "test")   # case i of each functionality goes to SPLITS[i % 4]


@pytest.fixture
def data(tmp_path):
    """A built suite, its split and i.i.d. train / test sets on disk (paths), and the suite's functionalities."""
    suite = make_tiny_suite(8)
    save_suite(suite, tmp_path / "suite.parquet")
    index = suite.groupby("functionality", sort=False).cumcount()
    write_parquet(pd.DataFrame({"case_id": suite["case_id"], "split": [SPLITS[i % 4] for i in index]}),
                  tmp_path / "split.parquet")
    for name, n in (("iid_train", 12), ("iid_test", 6)):
        write_parquet(pd.DataFrame({"example_id": [f"{name}-{i}" for i in range(n)],
                                    "text": [f"{'a great' if i % 2 else 'an awful'} film {i}" for i in range(n)],
                                    "label": [i % 2 for i in range(n)]}), tmp_path / f"{name}.parquet")
    paths = {k: str(tmp_path / f"{k}.parquet") for k in ("suite", "split", "iid_train", "iid_test")}
    return paths, tuple(dict.fromkeys(suite["functionality"]))


def run_for(funcs, **settings):
    return fold_run(hparams={"lr": 1e-3, "batch_size": 4, "epochs": 1}, seed=5, functionalities=funcs,
                    max_length=32, **settings)


@pytest.fixture
def job():
    cpu = torch.device("cpu")
    return Job(cpu, resolve("fp32", cpu), 1)


def test_training_data_takes_the_folds_cases_a_subset_and_the_sampled_mix(data):
    paths, funcs = data
    where = dict(suite=paths["suite"], split=paths["split"])
    cases, mix = fold.training_data(run_for(funcs), iid_train=None, **where)
    assert mix is None and len(cases) == 4 * len(funcs) and set(cases["functionality"]) == set(funcs)
    held = run_for(funcs, partition="func", fold="typos", held_out=("typos",))
    cases, _ = fold.training_data(held, iid_train=None, **where)
    assert "typos" not in set(cases["functionality"]) and len(cases) == 4 * (len(funcs) - 1)
    some = list(cases["case_id"][:3])
    assert list(fold.training_data(held, iid_train=None, case_ids=some, **where)[0]["case_id"]) == some
    mixed = run_for(funcs, configuration="iid_plus_t", iid_in_mix=5)
    _, mix = fold.training_data(mixed, iid_train=paths["iid_train"], **where)
    _, again = fold.training_data(mixed, iid_train=paths["iid_train"], **where)
    assert len(mix) == 5 and mix.equals(again)   # sampled with the run's seed
    with pytest.raises(ConfigError, match="needs the i.i.d. training data"):
        fold.training_data(mixed, iid_train=None, **where)


def test_train_fold_same_run_same_weights_and_case_ids_restrict_training(data, job):
    paths, funcs = data
    run = run_for(funcs)
    where = dict(suite=paths["suite"], split=paths["split"], iid_train=None, start=None)
    clock = Clock()
    model_a, _, summary = fold.train_fold(run, job, clock, **where)
    model_b, _, _ = fold.train_fold(run, job, Clock(), **where)
    a, b = model_a.state_dict(), model_b.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert {"train", "checkpoint"} <= set(clock.parts) and "train_start" in clock.marks
    assert summary["steps"] > 0 and sum(summary["stream_sizes"].values()) > 0
    some = list(fold.training_data(run, suite=paths["suite"], split=paths["split"], iid_train=None)[0]["case_id"])
    mft = [c for c in some if c.startswith("mft-")][:2]
    _, _, small = fold.train_fold(run, job, Clock(), case_ids=mft, **where)
    assert small["stream_sizes"] == {"MFT": 2}   # one input per MFT case: only the two cases trained on


def test_suite_pass_rates_agrees_with_scoring_by_hand(data, job):
    paths, funcs = data
    run = run_for(funcs)
    model, tokenizer = fold.load_start_model(run, job, num_labels=SENT.num_model_labels, head=SENT.head)
    cases = split_cases(paths["suite"], paths["split"], "sent", "val")
    clock = Clock()
    rates = fold.suite_pass_rates(model, tokenizer, cases, run, job, clock, batch_size=8, source="test")
    preds = suite_predictions(model, tokenizer, SENT, cases, "suite_val", 8, run.max_length, run.doc_stride,
                              job.precision)
    by_hand = pass_rates(score_cases(cases, preds, SENT, source="by hand"), functionality_table(cases))
    pd.testing.assert_series_equal(rates, by_hand.set_index("functionality")["pass_rate"])
    assert list(rates.index) == list(funcs) and {"predict", "score"} <= set(clock.parts)
    done = []
    chunked, status = fold.suite_outcomes(model, tokenizer, SENT, cases, split="suite_val", batch_size=8,
                                          max_length=run.max_length, doc_stride=run.doc_stride,
                                          precision=job.precision, source="chunks", chunk_cases=3,
                                          on_chunk=done.append)
    assert done == list(range(3, len(cases), 3)) + [len(cases)]
    assert list(zip(chunked["case_id"], chunked["input_idx"])) == list(zip(preds["case_id"], preds["input_idx"]))
    assert list(status["case_id"]) == list(cases["case_id"])


def test_evaluate_fold_predicts_and_scores_test_and_iid(data, job):
    paths, funcs = data
    run = run_for(funcs)
    model, tokenizer = fold.load_start_model(run, job, num_labels=SENT.num_model_labels, head=SENT.head)
    suite_test = split_cases(paths["suite"], paths["split"], "sent", "test")
    iid = pd.read_parquet(paths["iid_test"])
    clock = Clock()
    preds, outcome = fold.evaluate_fold(model, tokenizer, run, job, clock, suite_test=suite_test, iid=iid,
                                        held_out=["typos"], batch_size=8, source="test")
    assert set(preds["split"]) == {"suite_test", "iid_test"}
    suite_rows = outcome[outcome["split"] == "suite_test"]
    assert list(suite_rows["case_id"]) == list(suite_test["case_id"])
    assert set(suite_rows.loc[suite_rows["held_out"], "functionality"]) == {"typos"}
    assert (outcome["split"] == "iid_test").sum() == len(iid) and {"predict", "score"} <= set(clock.parts)
