"""No device -> host sync inside a training step (issue 35): ``update`` of
every method (``nonfinite: stop``) on SENT (MFT / INV / DIR), PARA (pairs)
and READ (QA MFT / INV) minibatches runs under a guard that fails on any
sync-like call on a tensor that would live on the device (derived from the
model's parameters, the optimizer's state, inputs copied by ``to_device`` or
tensors made with an explicit ``device``); with CUDA the step also runs
under ``torch.cuda.set_sync_debug_mode("error")``. The inputs that make it so
give the same bytes on the CPU as before: the model's logits with the ready
4D attention mask (:func:`beluga.model.transfer.model_inputs`) and READ training
from the cached QA inputs (:class:`beluga.heads.span.batches.QAEncoder`)."""

from __future__ import annotations

import contextlib
import weakref

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import fold_run, make_tiny_suite
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

import beluga.heads.span.batches
import beluga.heads.span.qa
import beluga.model.transfer
import beluga.train.loop
from beluga.core.tasks import PARA, READ, SENT
from beluga.methods import get_algorithm
from beluga.model.modeling import TINY_RANDOM, load_model, set_seed
from beluga.model.precision import resolve
from beluga.model.transfer import bidirectional_mask_builder, model_inputs
from beluga.train.loop import Encoder, LossFn, _plan, _pretokenized_loss, train
from beluga.train.streams import build_streams

# ----------------------------------------------------------------------------- the guard

T = torch.Tensor
#: calls that read a tensor's values on the host (a sync when the tensor is on the device)
SYNC_CALLS = {T.item, T.tolist, T.cpu, T.numpy, T.__bool__, T.__float__, T.__int__, T.__index__, T.__complex__,
              T.__format__, T.__repr__, T.__array__,
              torch.equal, torch.allclose, T.allclose, torch.is_nonzero, T.is_nonzero}
#: ops whose output shape depends on the values (the host waits for them)
DATA_DEPENDENT = {torch.nonzero, T.nonzero, torch.argwhere, T.argwhere, torch.masked_select, T.masked_select,
                  torch.unique, T.unique, torch.unique_consecutive, T.unique_consecutive, torch.bincount,
                  T.bincount}
FACTORIES = {torch.zeros, torch.ones, torch.full, torch.empty, torch.arange, torch.tensor, torch.as_tensor,
             torch.zeros_like, torch.ones_like, torch.full_like, torch.empty_like, torch.rand, torch.randn}


class DeviceSyncError(AssertionError):
    pass


class SyncGuard(TorchFunctionMode):
    """Fails on a host read of a tracked tensor. Tracked: what ``track`` is
    given (parameters, optimizer state), what the patched ``to_device``
    returns, what a factory makes with an explicit ``device``, and everything
    computed from a tracked tensor (gradients included)."""

    def __init__(self):
        super().__init__()
        self.ids: dict[int, weakref.ref] = {}
        self.hits: list[str] = []

    def track(self, t) -> None:
        if isinstance(t, torch.Tensor):
            self.ids[id(t)] = weakref.ref(t)

    def tracked(self, t) -> bool:
        r = self.ids.get(id(t)) if isinstance(t, torch.Tensor) else None
        return r is not None and r() is t

    def _fail(self, what: str) -> None:
        self.hits.append(what)
        raise DeviceSyncError(f"device -> host sync inside a training step: {what}")

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        hot = any(self.tracked(a) for a in flat)
        name = getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
        if hot and func in SYNC_CALLS:
            self._fail(name)
        if hot and func in DATA_DEPENDENT:
            self._fail(f"{name} (value-dependent shape)")
        if hot and func in (torch.repeat_interleave, T.repeat_interleave) and kwargs.get("output_size") is None \
                and any(isinstance(a, torch.Tensor) for a in args[1:]):
            self._fail(f"{name} without output_size")
        if func is T.__getitem__ and any(a.dtype == torch.bool and a.dim() > 0 for a in flat[1:]) and hot:
            self._fail("boolean-mask indexing")
        if hot and func is T.to and ("cpu" in args[1:] or kwargs.get("device") == "cpu"):
            self._fail("Tensor.to('cpu')")
        out = func(*args, **kwargs)
        if hot or (func in FACTORIES and kwargs.get("device") is not None):
            for o in tree_flatten(out)[0]:
                self.track(o)
        return out


@contextlib.contextmanager
def no_sync(algo, monkeypatch):
    """``algo``'s updates under :class:`SyncGuard` (and, with CUDA, the sync debug mode set to error)."""
    guard = SyncGuard()
    modules = [m for m in vars(algo).values() if isinstance(m, torch.nn.Module)]
    for m in modules:
        for t in list(m.parameters()) + list(m.buffers()):
            guard.track(t)
    for st in algo.optimizer.state.values():
        for t in st.values():
            guard.track(t)
    for v in vars(algo).values():
        guard.track(v)
    real = beluga.model.transfer.to_device

    def to_device(t, dev):
        out = real(t, dev)
        out = out.clone() if out is t else out
        guard.track(out)
        return out

    for mod in (beluga.model.transfer, beluga.train.loop, beluga.heads.span.qa, beluga.heads.span.batches):
        monkeypatch.setattr(mod, "to_device", to_device)
    debug = torch.cuda.is_available()
    with guard:
        if debug:
            torch.cuda.set_sync_debug_mode("error")
        try:
            yield guard
        finally:
            if debug:
                torch.cuda.set_sync_debug_mode(0)
    for mod in (beluga.model.transfer, beluga.train.loop, beluga.heads.span.qa, beluga.heads.span.batches):
        monkeypatch.setattr(mod, "to_device", real)


# ----------------------------------------------------------------------------- the steps

CTX = ("Paul traveled from Chicago to New York last year. He met Anna, who had lived in Boston for ten years, "
       "and together they drove to the coast in an old red car.")


def _read_streams():
    from test_training import _case

    short = "Anna lives in Rome."
    suite = pd.DataFrame([
        _case("m1", "who", "MFT", [CTX, short], ["Who traveled?", "Where does Anna live?"],
              answers=["Paul", "Rome"], expect="squad"),
        _case("m2", "where", "MFT", [CTX, CTX], ["Where to?", "How long did Anna live in Boston?"],
              answers=["New York", "ten years"], expect="squad"),
        _case("i1", "typo", "INV", [CTX, CTX.replace("traveled", "travelled"), CTX.replace("old", "odl")],
              ["Who traveled?"] * 3, expect="inv", agg="all_except_first"),
        _case("i2", "names", "INV", [short, short.replace("Anna", "Maria")], ["Where?", "Where?"], expect="inv",
              agg="all_except_first"),
    ])
    iid = pd.DataFrame({"example_id": ["e", "f"], "context": [CTX, short], "question": ["From where?", "Who?"],
                        "answers": [["Chicago"], ["Anna"]], "answer_starts": [[CTX.index("Chicago")], [0]]})
    return build_streams(READ, iid, suite)


def _para_streams():
    iid = pd.DataFrame({"text": [f"how do I cook {i} eggs?" for i in range(8)],
                        "text_b": [f"how can I {i} today, quickly and well?" if i % 3 else "what?" for i in range(8)],
                        "label": [int(i % 3 != 0) for i in range(8)]})
    return build_streams(PARA, iid, None)


def _setup(task, streams, method, **hp):
    set_seed(0)
    head = "qa" if task is READ else "classification"
    model, tok = load_model(TINY_RANDOM, task.num_model_labels, head=head) if head == "qa" else \
        load_model(TINY_RANDOM, task.num_model_labels)
    hparams = {**get_algorithm(method).hparam_defaults(), "lr": 1e-3, "batch_size": 3, "epochs": 1, **hp}
    run = fold_run(method, hparams, seed=3, max_length=40, doc_stride=12)
    precision = resolve(run.precision, torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    if torch.cuda.is_available():
        model.cuda()
    loss_fn, _ = _pretokenized_loss(tok, streams, run, precision, True)
    algo_cls = get_algorithm(method)
    plan = _plan(algo_cls, streams, dict(run.hparams), run.seed, run.batching)
    model.train()
    algo = algo_cls(model, dict(run.hparams), loss_fn, plan.total, envs=plan.envs,
                    fused=precision.fused_optimizer, nonfinite="stop")
    return algo, plan


def _steps(algo, plan, monkeypatch, n=None):
    """Runs the updates of the first epoch that bring a batch kind not seen yet (``n``: the first n updates)."""
    kinds = set()
    with no_sync(algo, monkeypatch) as guard:
        for mbs in list(plan.batches(0))[:n]:
            if n is None and {mb.kind for mb in mbs} <= kinds:
                continue
            kinds |= {mb.kind for mb in mbs}
            algo.update(mbs)
    assert not guard.hits
    return kinds


def test_sent_para_read_steps_do_not_sync(monkeypatch):
    algo, plan = _setup(SENT, build_streams(SENT, None, make_tiny_suite(3)), "vanilla")
    assert _steps(algo, plan, monkeypatch) == {"mft", "inv", "dir"}
    algo, plan = _setup(PARA, _para_streams(), "vanilla")
    assert _steps(algo, plan, monkeypatch) == {"mft"}
    algo, plan = _setup(READ, _read_streams(), "vanilla")
    assert _steps(algo, plan, monkeypatch) == {"qa_mft", "qa_inv"}


@pytest.mark.parametrize("method,hp", [("irm", {"irm_penalty_anneal_iters": 1}),
                                       ("irm", {"irm_dummy": "per_class"}), ("fish", {"fish_envs": 2}),
                                       ("l2", {"l2_sp": True}), ("l2", {}), ("dropout", {}), ("lp", {}),
                                       ("lp_ft", {})])
def test_every_method_steps_without_sync(monkeypatch, method, hp):
    algo, plan = _setup(SENT, build_streams(SENT, None, make_tiny_suite(2)), method, **hp)
    _steps(algo, plan, monkeypatch, n=3)
    if method == "irm":
        algo, plan = _setup(READ, _read_streams(), method, **hp)
        _steps(algo, plan, monkeypatch, n=3)


def test_group_dro_reads_its_losses_on_the_host(monkeypatch):
    """Group-DRO's weight update reads each environment's loss on the host (its
    documented one sync per step): the guard sees it."""
    algo, plan = _setup(SENT, build_streams(SENT, None, make_tiny_suite(2)), "group_dro")
    with pytest.raises(DeviceSyncError, match="__float__"):
        _steps(algo, plan, monkeypatch, n=1)


def test_the_guard_fires_on_an_item_inside_update(monkeypatch):
    real = LossFn.__call__

    def with_item(self, model, batch, scale=None):
        out = real(self, model, batch, scale)
        out.mean().item()
        return out

    algo, plan = _setup(SENT, build_streams(SENT, None, make_tiny_suite(2)), "vanilla")
    monkeypatch.setattr(LossFn, "__call__", with_item)
    with pytest.raises(DeviceSyncError, match="item"):
        _steps(algo, plan, monkeypatch, n=1)
    guard = SyncGuard()   # and on the other host reads of a device tensor, not on host-built tensors
    p = torch.nn.Parameter(torch.ones(3))
    guard.track(p)
    host = torch.tensor([True, False, True])
    with guard:
        assert bool(host.any()) and host.tolist() == [True, False, True]
        for read in (lambda: float((p * 2).sum()), lambda: (p + 1).tolist(), lambda: bool(p.sum() > 0),
                     lambda: p.detach().cpu(), lambda: torch.nonzero(p), lambda: p[p > 0], lambda: f"{p.sum():.3f}"):
            with pytest.raises(DeviceSyncError):
                read()


# ----------------------------------------------------------------------------- the same bytes


@pytest.mark.parametrize("source", [TINY_RANDOM, "default"])
@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_ready_mask_gives_the_same_logits(source, impl):
    """A padded batch's 4D mask built before the forward pass gives the logits of
    the 2D mask, bit for bit (fp32 and bf16 autocast); unpadded batches have no mask."""
    model, tok = load_model(source, 2)
    model.config._attn_implementation = impl
    model.eval()
    assert bidirectional_mask_builder(model) is not None
    enc = Encoder(tok, 24)
    texts = ["a good film", "a really really bad film that I did not like at all, not at all", "meh", "ok then"]
    padded = enc(texts, texts[::-1])
    ready = model_inputs(model, padded, torch.device("cpu"))
    assert ready["attention_mask"].dim() == 4
    assert "attention_mask" not in model_inputs(model, {**padded, "attention_mask": torch.ones_like(
        padded["input_ids"])}, torch.device("cpu"))
    for dtype in (None, torch.bfloat16):
        ctx = torch.autocast("cpu", dtype=dtype) if dtype else contextlib.nullcontext()
        with torch.no_grad(), ctx:
            assert torch.equal(model(**padded).logits, model(**ready).logits), dtype


def _read_weights(method, host_hygiene, epochs=2, on_epoch_end=None, **hp):
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 0, head="qa")
    hparams = {**get_algorithm(method).hparam_defaults(), "lr": 1e-3, "batch_size": 2, "epochs": epochs, **hp}
    run = fold_run(method, hparams, seed=5, max_length=40, doc_stride=12, task_type="read")
    train(model, tok, _read_streams(), run, precision=resolve(run.precision, model.device),
          host_hygiene=host_hygiene, on_epoch_end=on_epoch_end)
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("method,hp", [("vanilla", {}), ("irm", {"irm_dummy": "per_class"})])
def test_read_training_from_cached_inputs_gives_the_same_weights(method, hp):
    new, old = _read_weights(method, True, **hp), _read_weights(method, False, **hp)
    for k in old:
        assert torch.equal(new[k], old[k]), k


def test_read_second_epoch_tokenizes_and_aligns_nothing(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("tokenized or aligned after the first epoch")

    def after_first(epochs_done, model, tokenizer):
        monkeypatch.setattr(type(tokenizer), "__call__", refuse)
        monkeypatch.setattr(beluga.heads.span.qa.difflib, "SequenceMatcher", refuse)
        return False

    _read_weights("vanilla", True, epochs=3, on_epoch_end=after_first)
    with pytest.raises(AssertionError, match="after the first epoch"):
        _read_weights("vanilla", False, epochs=3, on_epoch_end=after_first)


def test_qa_encoder_batches_equal_encode_qa():
    from beluga.heads.span.batches import QAEncoder
    from beluga.heads.span.qa import aligned_positions, encode_qa, span_targets

    tok = load_model(TINY_RANDOM, 0, head="qa")[1]
    qs, cs = ["Who traveled?", " Where to?", "Who?"], [CTX, CTX, "Anna lives in Rome."]
    answers, starts = ["Paul", "New York", "Anna"], [None, CTX.index("New York"), 0]
    enc = QAEncoder(tok, 40, 12)
    inputs, idx, sp, ep = enc.mft(qs, cs, answers, starts)
    feats = encode_qa(tok, qs, cs, max_length=40, stride=12)
    want = feats.model_inputs()
    assert inputs.keys() == want.keys() and all(torch.equal(inputs[k], want[k]) for k in want)
    assert torch.equal(idx, feats.example_idx) and len(feats) > len(qs)
    wsp, wep = span_targets(feats, cs, answers, starts)
    assert torch.equal(sp, wsp) and torch.equal(ep, wep)
    pq, pc = ["Who travelled?", "Where to?", "Who?"], [CTX.replace("Paul", "Saul"), CTX[:60], "Anna lives in Paris."]
    io, ip, pairs = enc.inv(qs, cs, pq, pc)
    fo, fp = (encode_qa(tok, q, c, max_length=40, overflow=False) for q, c in ((qs, cs), (pq, pc)))
    assert all(torch.equal(io[k], fo.model_inputs()[k]) and torch.equal(ip[k], fp.model_inputs()[k]) for k in io)
    assert pairs == [aligned_positions(fo.input_ids[r], fp.input_ids[r], fo.context_mask[r], fp.context_mask[r])
                     for r in range(3)]
    assert np.all([len(p) > 0 for p in pairs])
