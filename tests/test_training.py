import logging
import unittest.mock as mock

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_tiny_suite, train_run

from beluga.core.errors import ConfigError, ModelError
from beluga.core.tasks import SENT
from beluga.heads import get_head
from beluga.methods import check_method_hparams, get_algorithm, method_hparams
from beluga.model.modeling import TINY_RANDOM, load_model, resolve_model, set_seed
from beluga.train.batches import epoch_batches
from beluga.train.loop import LossFn
from beluga.train.streams import build_streams


def tiny():
    set_seed(0)
    return load_model(TINY_RANDOM, 2)


def test_streams_and_batches():
    suite = make_tiny_suite(4)
    iid = pd.DataFrame({"text": ["good", "bad"], "label": [1, 0]})
    streams = build_streams(SENT, iid, suite)
    assert {k: len(v) for k, v in streams.items()} == {"iid": 2, "MFT": 8, "INV": 4, "DIR": 4}
    nn = [it for it in streams["MFT"] if it.env == "not negative"][0]
    assert nn.target == pytest.approx([1 / 3, 2 / 3])
    batches = epoch_batches(streams, 3, np.random.default_rng(0))
    kinds = sorted(b.kind for b in batches)
    assert kinds.count("mft") == 1 + 3 and kinds.count("inv") == 2 and kinds.count("dir") == 2
    for b in batches:
        if b.kind in ("inv", "dir"):
            assert len(b.texts) == 2 * b.size
            for o, p in zip(b.texts[:b.size], b.texts[b.size:]):
                assert o != p


def test_train_reduces_loss_and_is_deterministic():
    suite = make_tiny_suite(6)
    outs = []
    for _ in range(2):
        model, tok = tiny()
        streams = build_streams(SENT, None, suite)
        summary = train_run(model, tok, streams, "vanilla", {"lr": 1e-3, "batch_size": 4, "epochs": 3}, seed=5)
        outs.append(get_head("classification").predict(model, tok, ["this is awful 1", "a fine film"]))
    assert summary["steps"] == 3 * (3 + 2 + 2)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_unknown_method_and_bad_hparams():
    with pytest.raises(ConfigError, match="unknown method 'fishy'"):
        get_algorithm("fishy")
    with pytest.raises(ConfigError, match="unknown hyper-parameter"):
        method_hparams("vanilla", {"bogus": 1})
    model, tok = tiny()
    with pytest.raises(ValueError, match="must be (a )?positive"):
        train_run(model, tok, build_streams(SENT, None, make_tiny_suite(3)), "vanilla",
                  {"lr": 0, "batch_size": 2, "epochs": 1}, seed=1)
    complete = {"lr": 1e-3, "batch_size": 2, "epochs": 1.5, **method_hparams("vanilla")}
    check_method_hparams("vanilla", complete)
    for key, value, why in (("lr", 0, "a positive number"), ("lr", None, "a positive number"),
                            ("batch_size", 0, "a positive integer"), ("batch_size", 2.5, "a positive integer"),
                            ("epochs", 0, "a positive number")):
        with pytest.raises(ConfigError, match=f"^config: method vanilla: hyper-parameter '{key}': must be {why}, "
                                              f"got {value!r}$"):
            check_method_hparams("vanilla", {**complete, key: value})


def test_model_resolution():
    assert resolve_model("default").endswith("model")
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model("./no/such/model")
    with pytest.raises(ModelError, match="hub is offline"):
        resolve_model("bert-base-uncased")


def test_dropout_free_eval_predictions_sum_to_one():
    model, tok = tiny()
    p = get_head("classification").predict(model, tok, ["a", "bb", "ccc"], batch_size=2)
    assert p.shape == (3, 2) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(-1), 1, rtol=1e-5)
    assert torch.get_num_threads() >= 1


def _case(cid, func, ttype, inputs, inputs_b=None, labels=None, expect="eq", params=None, agg="all", answers=None):
    import json

    return {"case_id": cid, "functionality": func, "capability": "C", "test_type": ttype, "inputs": inputs,
            "inputs_b": inputs_b, "labels": labels, "expect": expect, "expect_params": json.dumps(params or {}),
            "agg_fn": agg, "meta": None, "answers": answers}


def test_para_streams_train_label_checks_as_mfts():
    from beluga.core.tasks import PARA

    suite = pd.DataFrame([
        _case("m", "mft", "MFT", ["q1"], ["q2"], labels=[0]),
        # DIR with a known label (slice on the original): perturbed pairs only, label 0
        _case("d", "dir", "DIR", ["o1", "p1", "p2"], ["o2", "p1b", "p2b"], expect="eq",
              params={"val": 0, "slice": "orig_pred_eq", "slice_value": 1}, agg="all_except_first"),
        # paraphrase DIR checked with `all`: every pair, label 1
        _case("pp", "para", "DIR", ["a", "b"], ["c", "d"], expect="eq", params={"val": 1}),
        # implication triplets: every pair with its own label
        _case("t", "impl", "DIR", ["x", "y", "z"], ["x2", "y2", "z2"], labels=[1, 1, 0], expect="triplet",
              agg="all_except_first"),
        # one-pair synonym "INV" with the paper's training hint
        _case("s", "syn", "INV", ["w"], ["w2"], expect="inv", params={"tolerance": 0.1,
                                                                     "train": {"as": "MFT", "label": 1}},
              agg="all_except_first"),
        _case("i", "inv", "INV", ["k", "k'"], ["l", "l'"], expect="inv", agg="all_except_first"),
    ])
    iid = pd.DataFrame({"text": ["a?"], "text_b": ["b?"], "label": [1]})
    streams = build_streams(PARA, iid, suite)
    assert {k: len(v) for k, v in streams.items()} == {"iid": 1, "MFT": 1 + 2 + 2 + 3 + 1, "INV": 1}
    by_env = {}
    for it in streams["MFT"]:
        by_env.setdefault(it.env, []).append((it.inputs[0], it.inputs_b[0], it.target))
    assert by_env["dir"] == [("p1", "p1b", [1.0, 0.0]), ("p2", "p2b", [1.0, 0.0])]
    assert [t for *_, t in by_env["para"]] == [[0.0, 1.0]] * 2
    assert [t for *_, t in by_env["impl"]] == [[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]
    assert by_env["syn"] == [("w", "w2", [0.0, 1.0])]
    assert streams["iid"][0].inputs_b == ["b?"]


def test_sent_q_and_a_no_label_1_target():
    """CheckList's "Q & A: no" (eq_or_not_negative): label 1 means "not negative". The project trains it
    toward [1/3, 2/3]; the reference code's labels_to_soft maps the label '1' to [0.5, 0.5] (neutral) and
    only its relabeled 'not_0' functionalities to [1/3, 2/3]. Label 0 is [1, 0] under both."""
    suite = pd.DataFrame([
        _case("no-1", "Q & A: no", "MFT", ["Do I think the flight is bad? No"], labels=[1],
              expect="eq_or_not_negative"),
        _case("no-0", "Q & A: no", "MFT", ["Do I think the flight is good? No"], labels=[0],
              expect="eq_or_not_negative"),
        _case("neu", "neutral", "MFT", ["It is a flight."], labels=[1]),
        _case("nn", "not negative", "MFT", ["It was not bad."], expect="not_negative"),
    ])

    def targets(**kw):
        return {it.inputs[0]: it.target for it in build_streams(SENT, None, suite, **kw)["MFT"]}

    default, ref = targets(), targets(eq_or_not_negative_target="label")
    assert default == targets(eq_or_not_negative_target="not_negative")
    assert default["Do I think the flight is bad? No"] == pytest.approx([1 / 3, 2 / 3])
    assert ref["Do I think the flight is bad? No"] == [0.5, 0.5]
    for t in (default, ref):   # the other cases do not move
        assert t["Do I think the flight is good? No"] == [1.0, 0.0]
        assert t["It is a flight."] == [0.5, 0.5]
        assert t["It was not bad."] == pytest.approx([1 / 3, 2 / 3])
    with pytest.raises(ValueError, match="training.eq_or_not_negative_target"):
        build_streams(SENT, None, suite, eq_or_not_negative_target="neutral")


def test_read_streams_and_training_step():
    from beluga.core.tasks import READ

    ctx = "Paul traveled from Chicago to New York last year."
    suite = pd.DataFrame([
        _case("m", "who", "MFT", [ctx, ctx], ["Who traveled?", "Where to?"], answers=["Paul", "New York"],
              expect="squad"),
        _case("i", "typo", "INV", [ctx, ctx], ["Who traveled?", "Who travelled?"], expect="inv",
              agg="all_except_first"),
    ])
    iid = pd.DataFrame({"example_id": ["e"], "context": [ctx], "question": ["From where?"],
                        "answers": [["Chicago"]], "answer_starts": [[ctx.index("Chicago")]]})
    streams = build_streams(READ, iid, suite)
    assert {k: len(v) for k, v in streams.items()} == {"iid": 1, "MFT": 2, "INV": 1}
    assert [it.answer for it in streams["MFT"]] == ["Paul", "New York"]
    kinds = {b.kind for b in epoch_batches(streams, 2, np.random.default_rng(0))}
    assert kinds == {"qa_mft", "qa_inv"}
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 0, head="qa")
    summary = train_run(model, tok, streams, "vanilla", {"lr": 1e-3, "batch_size": 2, "epochs": 2}, seed=0,
                    max_length=48, doc_stride=16)
    assert summary["steps"] == 2 * 3 and all(np.isfinite(summary["epoch_losses"]))
    bad = pd.DataFrame([_case("d", "dir", "DIR", [ctx, ctx], ["q", "q2"], expect="monotonic")])
    with pytest.raises(ValueError, match="has no training loss"):
        build_streams(READ, None, bad)


def test_diverged_training_stops_with_the_step_or_skips():
    """A non-finite loss stops training with one line naming the job and the step; nonfinite: skip goes on,
    counting the skipped steps; a model with non-finite weights is never returned."""
    from beluga.core.health import DivergedError

    suite = make_tiny_suite(6)
    model, tok = tiny()
    with pytest.raises(DivergedError) as excinfo:
        train_run(model, tok, build_streams(SENT, None, suite), "vanilla", {"lr": 1e30, "batch_size": 4, "epochs": 2},
                  seed=5, task="sent")
    msg = str(excinfo.value)
    assert "\n" not in msg and "training sent iid_to_t/vanilla/seen/all" in msg and "field 'training.nonfinite'" in msg
    assert "not finite at step" in msg
    # an injected non-finite loss on one step: skipped and counted, training goes on
    model, tok = tiny()
    calls = {"n": 0}
    real = LossFn.__call__

    def one_nan(self, m, batch, scale=None):
        out = real(self, m, batch, scale)
        calls["n"] += 1
        return out * float("nan") if calls["n"] == 3 else out

    with mock.patch.object(LossFn, "__call__", one_nan):
        s = train_run(model, tok, build_streams(SENT, None, suite), "vanilla",
                      {"lr": 1e-3, "batch_size": 4, "epochs": 1}, seed=5, nonfinite="skip")
    assert s["nonfinite_steps_skipped"] == 1 and all(np.isfinite(s["epoch_losses"]))
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_inv_and_dir_cases_without_a_perturbation_are_skipped_in_training(caplog):
    suite = make_tiny_suite(3)
    i = int(suite.index[suite.case_id == "inv-1"][0])
    suite.at[i, "inputs"] = ["a fine film 1"]   # an "unperturbed" INV case (CheckList's one-input cases)
    with caplog.at_level(logging.INFO, logger="beluga"):
        streams = build_streams(SENT, None, suite)
    assert len(streams["INV"]) == 2 and all(len(it.inputs) >= 2 for it in streams["INV"])
    assert "1 INV / DIR case(s) with fewer than two inputs skipped" in caplog.text
    model, tok = tiny()
    assert train_run(model, tok, streams, "vanilla", {"lr": 1e-3, "batch_size": 4, "epochs": 1}, seed=1)["steps"] > 0
