import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_tiny_suite

from beluga.errors import ConfigError, ModelError
from beluga.methods import get_algorithm, method_hparams
from beluga.modeling import TINY_RANDOM, load_model, predict_probs, resolve_model, set_seed
from beluga.tasks import SENT
from beluga.training import build_streams, epoch_batches, train


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
        summary = train(model, tok, streams, "vanilla", {"lr": 1e-3, "batch_size": 4, "epochs": 3}, seed=5)
        outs.append(predict_probs(model, tok, ["this is awful 1", "a fine film"]))
    assert summary["steps"] == 3 * (3 + 2 + 2)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_unknown_method_and_bad_hparams():
    with pytest.raises(ConfigError, match="unknown method 'fishy'"):
        get_algorithm("fishy")
    with pytest.raises(ConfigError, match="unknown hyper-parameter"):
        method_hparams("vanilla", {"bogus": 1})
    model, tok = tiny()
    with pytest.raises(ValueError, match="must be positive"):
        train(model, tok, build_streams(SENT, None, make_tiny_suite(3)), "vanilla",
              {"lr": 0, "batch_size": 2, "epochs": 1}, seed=1)


def test_model_resolution():
    assert resolve_model("default").endswith("model")
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model("./no/such/model")
    with pytest.raises(ModelError, match="hub is offline"):
        resolve_model("bert-base-uncased")


def test_dropout_free_eval_predictions_sum_to_one():
    model, tok = tiny()
    p = predict_probs(model, tok, ["a", "bb", "ccc"], batch_size=2)
    assert p.shape == (3, 2) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(-1), 1, rtol=1e-5)
    assert torch.get_num_threads() >= 1
