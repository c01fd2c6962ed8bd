"""Host hygiene of the training loop (issue 22): a fold's inputs are
tokenized once before the first epoch and batches are built from the cached
ids -- the same tensors, and so the same trained weights, bit for bit, as
tokenizing every batch (the loop before), on the CPU."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import fold_run, make_tiny_suite

from beluga.core.tasks import PARA, SENT
from beluga.methods import get_algorithm
from beluga.model.modeling import TINY_RANDOM, load_model, set_seed
from beluga.model.precision import resolve
from beluga.train.loop import Encoder, train
from beluga.train.streams import build_streams


def _tok():
    return load_model(TINY_RANDOM, 2)[1]


@pytest.mark.parametrize("pairs", [False, True])
def test_encoder_batches_equal_the_tokenizers(pairs):
    tok = _tok()
    rng = np.random.default_rng(0)
    words = ["good", "bad", "the", "film", "a", "really", "not", "plot", "#", "überlong", "😀", "isn't"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 40)))) for _ in range(60)]
    texts_b = [" ".join(rng.choice(words, size=int(rng.integers(1, 30)))) for _ in range(60)] if pairs else None
    enc = Encoder(tok, 24)
    for s in range(0, 60, 7):
        tb = None if texts_b is None else texts_b[s:s + 7]
        got = enc(texts[s:s + 7], tb)
        want = tok(texts[s:s + 7], tb, padding=True, truncation=True, max_length=24, return_tensors="pt")
        for k in ("input_ids", "token_type_ids"):
            assert torch.equal(got[k], want[k]), k
        if "attention_mask" in got:
            assert torch.equal(got["attention_mask"], want["attention_mask"])
        else:   # no padding in this batch: the mask would be all ones
            assert bool(want["attention_mask"].all())


def _weights(task, streams, method, host_hygiene, **hp):
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, task.num_model_labels)
    hparams = {**get_algorithm(method).hparam_defaults(), "lr": 1e-3, "batch_size": 4, "epochs": 2, **hp}
    run = fold_run(method, hparams, seed=7, max_length=32)
    summary = train(model, tok, streams, run, precision=resolve(run.precision, model.device), host_hygiene=host_hygiene)
    return {k: v.clone() for k, v in model.state_dict().items()}, summary


@pytest.mark.parametrize("method", ["vanilla", "irm"])
def test_same_weights_as_tokenizing_every_batch(method):
    suite = make_tiny_suite(6)
    iid = pd.DataFrame({"text": [f"a good film {i}" if i % 2 else f"a bad one, really {i}" for i in range(12)],
                        "label": [i % 2 for i in range(12)]})
    streams = build_streams(SENT, iid, suite)
    new, summary = _weights(SENT, streams, method, True)
    old, _ = _weights(SENT, streams, method, False)
    assert summary["steps"] > 0 and summary["tokenize_s"] >= 0
    for k in old:
        assert torch.equal(new[k], old[k]), k


def test_same_weights_for_pairs():
    iid = pd.DataFrame({"text": [f"how do I {i}?" for i in range(10)],
                        "text_b": [f"how can I {i} today?" if i % 3 else f"what is {i}?" for i in range(10)],
                        "label": [int(i % 3 != 0) for i in range(10)]})
    streams = build_streams(PARA, iid, None)
    new, _ = _weights(PARA, streams, "vanilla", True)
    old, _ = _weights(PARA, streams, "vanilla", False)
    for k in old:
        assert torch.equal(new[k], old[k]), k
