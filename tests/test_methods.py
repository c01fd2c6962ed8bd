"""Generalization methods: every method on tiny problems (MFT / INV / DIR /
QA), and the defining property of each one."""

import copy
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import case, make_tiny_suite, train_run

from beluga.core.errors import ConfigError
from beluga.core.tasks import READ, SENT
from beluga.heads import get_head
from beluga.heads.span.qa import predict_qa
from beluga.methods import (
    ALGORITHMS,
    DEFAULT_HPARAMS,
    PUBLIC_METHODS,
    Dropout,
    config_hparams,
    fish_meta_lr,
    get_algorithm,
    head_parameter_names,
    irm_penalty,
    method_hparams,
)
from beluga.model.modeling import TINY_RANDOM, load_model, set_seed
from beluga.train.batches import Batch, EnvSampler, env_groups
from beluga.train.loop import LossFn
from beluga.train.losses import DummyClassifier, mft_loss
from beluga.train.settings import job_hparams
from beluga.train.streams import build_streams

METHODS = sorted(ALGORITHMS)
CTX = "Paul traveled from Chicago to New York last year."


def tiny(num_labels=2, **overrides):
    set_seed(0)
    return load_model(TINY_RANDOM, num_labels, config_overrides=overrides or None)


def tiny_qa():
    set_seed(0)
    return load_model(TINY_RANDOM, 0, head="qa")


def two_env_suite(n=4):
    rows = []
    for i in range(n):
        rows.append(case(f"a-{i}", "neg words", "Vocabulary", "MFT", [f"this is awful {i}"], [0]))
        rows.append(case(f"b-{i}", "pos words", "Vocabulary", "MFT", [f"this is great {i}"], [1]))
    return pd.DataFrame(rows)


def qa_case(cid, func, ttype, contexts, questions, answers=None, expect="squad"):
    return {"case_id": cid, "functionality": func, "capability": "C", "test_type": ttype, "inputs": contexts,
            "inputs_b": questions, "labels": None, "expect": expect, "expect_params": json.dumps({}),
            "agg_fn": "all" if ttype == "MFT" else "all_except_first", "meta": None, "answers": answers}


def qa_streams():
    suite = pd.DataFrame([
        qa_case("m1", "who", "MFT", [CTX, CTX], ["Who traveled?", "Who went?"], answers=["Paul", "Paul"]),
        qa_case("m2", "where", "MFT", [CTX, CTX], ["Where to?", "To where?"], answers=["New York", "New York"]),
        qa_case("i1", "typo", "INV", [CTX, CTX], ["Who traveled?", "Who travelled?"], expect="inv"),
        qa_case("i2", "typo", "INV", [CTX, CTX], ["Where to?", "Wehre to?"], expect="inv"),
    ])
    iid = pd.DataFrame({"example_id": ["e"], "context": [CTX], "question": ["From where?"],
                        "answers": [["Chicago"]], "answer_starts": [[CTX.index("Chicago")]]})
    return build_streams(READ, iid, suite)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models: one intra-op thread is faster (and steady on a busy machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


HP = {"lr": 1e-3, "batch_size": 3, "epochs": 2}
# small per-step environment counts so that the tiny runs stay fast
FAST = {"fish": {"fish_envs": 2}, "irm": {"irm_penalty_anneal_iters": 2}}


def run(method, model, tok, streams, **kw):
    hp = {**HP, **method_hparams(method, FAST.get(method)), **kw}
    return train_run(model, tok, streams, method, hp, seed=3, max_length=48, doc_stride=16)


def finite_predict(method, model, tok, texts, texts_b=None):
    algo = get_algorithm(method)(model, {**HP, **method_hparams(method)}, LossFn(tok, 48), 1)
    enc = tok(texts, texts_b, padding=True, truncation=True, max_length=48, return_tensors="pt")
    out = algo.predict(enc)
    assert torch.isfinite(out).all()
    return out


# --------------------------------------------------------------------------- every method, every loss


def test_registry_and_defaults():
    assert set(METHODS) == {"vanilla", "l2", "dropout", "lp", "lp_ft", "irm", "group_dro", "fish", "lp_ft_lp",
                           "lora"}
    assert set(PUBLIC_METHODS) == set(METHODS) - {"lp_ft_lp"}   # LP-FT's own LP stage: internal
    assert set(DEFAULT_HPARAMS) == set(METHODS)
    assert {m for m in METHODS if ALGORITHMS[m].sampling == "per_env"} == {"irm", "group_dro", "fish"}
    assert ALGORITHMS["lp_ft"].start_method == "lp"
    assert ALGORITHMS["lp_ft"].start_from(method_hparams("lp_ft")) == "lp"
    assert ALGORITHMS["lp_ft"].start_from(method_hparams("lp_ft", {"lp_epochs": 1.5})) == "lp_ft_lp"
    assert Dropout.config_overrides() == {"hidden_dropout_prob": 0.3, "attention_probs_dropout_prob": 0.3}
    with pytest.raises(ConfigError, match="per_env_epoch"):
        method_hparams("irm", {"per_env_epoch": "bogus"})
    with pytest.raises(ConfigError, match="meta_lr"):
        method_hparams("fish", {"meta_lr": 0})
    with pytest.raises(ConfigError, match="meta_lr"):
        method_hparams("fish", {"meta_lr": "references"})
    with pytest.raises(ConfigError, match="irm_dummy"):
        method_hparams("irm", {"irm_dummy": "vector"})
    with pytest.raises(ConfigError, match="lp_ft.lp_epochs"):
        method_hparams("lp_ft", {"lp_epochs": 0})
    with pytest.raises(ConfigError, match="fish_envs"):
        method_hparams("fish", {"fish_envs": 0})
    with pytest.raises(ConfigError, match="irm_lambda"):  # YAML 1.1 reads a bare 1e4 as a string
        method_hparams("irm", {"irm_lambda": "1e4"})
    model, tok = tiny()
    with pytest.raises(ConfigError, match="meta_lr"):  # train() checks the merged hyper-parameters too
        train_run(model, tok, build_streams(SENT, None, two_env_suite(1)), "fish", {**HP, "meta_lr": 2.0}, seed=0)


@pytest.mark.parametrize("method", METHODS)
def test_method_two_envs_and_all_test_types(method):
    # two MFT environments
    model, tok = tiny(**get_algorithm(method).config_overrides(method_hparams(method)))
    streams = build_streams(SENT, None, two_env_suite())
    s = run(method, model, tok, streams)
    assert s["steps"] > 0 and all(np.isfinite(s["epoch_losses"]))
    assert np.isfinite(get_head("classification").predict(model, tok, ["this is awful 9", "great"])).all()
    finite_predict(method, model, tok, ["this is awful 9", "great"])
    # MFT + INV + DIR functionalities and the i.i.d. environment
    model, tok = tiny()
    iid = pd.DataFrame({"text": ["good", "bad", "fine"], "label": [1, 0, 1]})
    streams = build_streams(SENT, iid, make_tiny_suite(3))
    s = run(method, model, tok, streams)
    assert all(np.isfinite(s["epoch_losses"])) and all(np.isfinite(s["epoch_risks"]))
    if ALGORITHMS[method].sampling == "per_env":
        assert set(s["env_sizes"]) == {"iid", "neg words", "typos", "add positive", "not negative"}
        # an epoch sees as many examples as a pooled one: ceil(items / (k envs per step × batch size))
        hp = {**method_hparams(method), **FAST.get(method, {})}
        k = {"irm": 5, "group_dro": 1, "fish": hp.get("fish_envs")}[method]
        assert s["envs_per_step"] == k
        assert s["steps"] == 2 * math.ceil(sum(s["env_sizes"].values()) / (k * HP["batch_size"]))
    else:
        assert s["steps"] == 2 * (1 + 2 + 1 + 1)
    finite_predict(method, model, tok, ["a fine film", "the plot"])


@pytest.mark.parametrize("method", METHODS)
def test_method_qa(method):
    model, tok = tiny_qa()
    s = run(method, model, tok, qa_streams())
    assert s["steps"] > 0 and all(np.isfinite(s["epoch_losses"]))
    out = finite_predict(method, model, tok, [CTX], ["Who traveled?"])
    assert out.shape[0] == 2  # start and end logits
    assert predict_qa(model, tok, ["Who traveled?"], [CTX], max_length=48, stride=16)[0][0] in CTX


# --------------------------------------------------------------------------- per-environment sampling


def test_env_sampler_homogeneous_minibatches_and_passes():
    iid = pd.DataFrame({"text": ["good", "bad"], "label": [1, 0]})
    streams = build_streams(SENT, iid, make_tiny_suite(5))
    groups = env_groups(streams)
    assert {e: (st, len(items)) for e, (st, items) in groups.items()} == {
        "add positive": ("DIR", 5), "iid": ("iid", 2), "neg words": ("MFT", 5), "not negative": ("MFT", 5),
        "typos": ("INV", 5)}
    sampler = EnvSampler(groups, 2, np.random.default_rng(0))
    seen, sizes = [], []
    for _ in range(6):  # two passes over 5 items: minibatches of 2, 2, 1
        b = sampler.minibatch("typos")
        assert b.kind == "inv" and b.envs == ["typos"] * b.size and len(b.texts) == 2 * b.size
        seen += b.texts[:b.size]
        sizes.append(b.size)
    assert sizes == [2, 2, 1] * 2
    assert sorted(seen[:5]) == sorted(seen[5:]) == sorted(it.inputs[0] for it in groups["typos"][1])
    assert sampler.minibatch("iid").size == 2
    picks = sampler.step_envs(3)
    assert len(picks) == len(set(picks)) == 3


def test_per_env_epoch_definition():
    streams = build_streams(SENT, None, make_tiny_suite(4))  # 16 items in 4 environments
    model, tok = tiny()
    # default (reference code): one environment per step, an epoch of ceil(16 / 4) steps
    s = run("group_dro", model, tok, streams, batch_size=4, epochs=1)
    assert s["steps_per_epoch"] == 4 and s["envs_per_step"] == 1
    # every environment at every step: "steps" keeps the pooled number of updates (4x the examples)
    s = run("group_dro", model, tok, streams, batch_size=4, epochs=1, envs_per_step=None, per_env_epoch="steps")
    assert s["steps_per_epoch"] == 4 and s["envs_per_step"] == 4
    s = run("group_dro", model, tok, streams, batch_size=4, epochs=1, envs_per_step=None, per_env_epoch="examples")
    assert s["steps_per_epoch"] == 1
    s = run("group_dro", model, tok, streams, batch_size=4, epochs=1, envs_per_step=2, per_env_epoch="examples")
    assert s["steps_per_epoch"] == 2 and s["envs_per_step"] == 2


# --------------------------------------------------------------------------- IRM


def test_irm_penalty_zero_at_stationary_scale_and_finite_differences():
    z = torch.tensor([[0.3, -1.2], [2.0, 0.5], [-0.7, 0.1]], dtype=torch.float64)

    def risk(w, t):
        return mft_loss(z * w, t)

    # calibrated soft targets: the risk is minimal at w = 1, its gradient is 0
    t_opt = torch.softmax(z, -1)
    scale = torch.ones((), dtype=torch.float64, requires_grad=True)
    assert irm_penalty(risk(scale, t_opt), scale).item() == pytest.approx(0.0, abs=1e-24)
    # hard labels: positive, = (dR/dw)² by central finite differences
    t = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
    h = 1e-6
    fd = (risk(1 + h, t).mean() - risk(1 - h, t).mean()).item() / (2 * h)
    pen = irm_penalty(risk(scale, t), scale)
    assert pen.item() > 0 and pen.item() == pytest.approx(fd ** 2, rel=1e-6)
    assert pen.requires_grad  # differentiable: it is part of the objective
    # the split (DomainBed) estimate: product of the halves' gradients
    fd_even = (risk(1 + h, t)[0::2].mean() - risk(1 - h, t)[0::2].mean()).item() / (2 * h)
    fd_odd = (risk(1 + h, t)[1::2].mean() - risk(1 - h, t)[1::2].mean()).item() / (2 * h)
    split = irm_penalty(risk(scale, t), scale, estimate="split").item()
    assert split == pytest.approx(fd_even * fd_odd, rel=1e-6)


def _kind_batches():
    iid = pd.DataFrame({"text": ["good movie", "bad"], "label": [1, 0]})
    streams = build_streams(SENT, iid, make_tiny_suite(3))
    sampler = EnvSampler(env_groups(streams), 3, np.random.default_rng(0))
    cls = {b.kind: b for b in (sampler.minibatch(e) for e in ("neg words", "typos", "add positive"))}
    qa = EnvSampler(env_groups(qa_streams()), 2, np.random.default_rng(0))
    return cls, {b.kind: b for b in (qa.minibatch(e) for e in ("who", "typo"))}


def test_irm_scale_reaches_every_batch_kind_and_matches_finite_differences():
    cls_batches, qa_batches = _kind_batches()
    assert set(cls_batches) == {"mft", "inv", "dir"} and set(qa_batches) == {"qa_mft", "qa_inv"}
    for (model, tok), batches in ((tiny(), cls_batches), (tiny_qa(), qa_batches)):
        model = model.double().eval()
        loss_fn = LossFn(tok, 48, doc_stride=16)
        for kind, b in batches.items():
            scale = torch.ones((), dtype=torch.float64, requires_grad=True)
            losses = loss_fn(model, b, scale=scale)
            assert torch.allclose(losses, loss_fn(model, b)), kind  # scale 1 changes nothing
            pen = irm_penalty(losses, scale).item()
            h = 1e-6
            with torch.no_grad():
                fd = (loss_fn(model, b, scale=1 + h).mean() - loss_fn(model, b, scale=1 - h).mean()).item() / (2 * h)
            assert pen == pytest.approx(fd ** 2, rel=1e-4, abs=1e-14), kind
            if kind != "dir":  # a random model may sit in the DIR loss's flat region
                assert pen > 0, kind


def test_irm_switch_rescales_optionally_resets_optimizer_and_continues_schedule():
    model, tok = tiny()
    streams = build_streams(SENT, None, two_env_suite(3))
    groups = env_groups(streams)
    sampler = EnvSampler(groups, 2, np.random.default_rng(0))
    for reset in (True, False):     # DomainBed's reset / the reference code's (and the default) none
        hp = {**HP, **method_hparams("irm", {"irm_penalty_anneal_iters": 2, "irm_lambda": 100.0,
                                             **({"irm_reset_optimizer": True} if reset else {})})}
        algo = get_algorithm("irm")(model, hp, LossFn(tok, 48), 10, envs=list(groups))
        weights, optimizers, steps = [], [], []
        for _ in range(4):
            stats = algo.update([sampler.minibatch(e) for e in groups])
            weights.append(stats["irm_weight"])
            optimizers.append(algo.optimizer)
            steps.append({k: float(stats[k]) for k in ("loss", "risk", "irm_penalty")})
        assert weights == [1.0, 1.0, 100.0, 100.0]
        # a fresh optimizer for the first update with λ = 100, kept afterwards (reset); one optimizer (no reset)
        assert optimizers[0] is optimizers[1] and optimizers[3] is optimizers[2]
        assert (optimizers[2] is not optimizers[1]) == reset
        assert algo.optimizer.param_groups[0]["lr"] == pytest.approx(HP["lr"] * (1 - 4 / 10))
        assert algo.summary()["irm_switch_step"] == 2
        # the default rescales the objective by 1/λ after the switch (reference code): risk/λ + penalty
        for st, w in zip(steps, weights):
            assert st["loss"] == pytest.approx((st["risk"] + w * st["irm_penalty"]) / w, rel=1e-5)
    # default: the switch after 1/5 of training
    s = run("irm", *tiny(), streams, irm_penalty_anneal_iters=None, epochs=5)
    assert s["method_info"]["irm_anneal_iters"] == round(0.2 * s["steps"])
    assert s["method_info"]["irm_switch_step"] == round(0.2 * s["steps"])


def test_irm_per_class_dummy_is_the_reference_penalty_not_the_scalar_one():
    """irm_dummy: per_class (the reference code): w = ones(num_labels) on the logits, penalty
    Σ_k (∂R/∂w_k)². By hand, at w = 1, for the soft-target cross-entropy R = mean_i -Σ_k t_ik log
    softmax(z_i ⊙ w)_k: ∂R/∂w_k = mean_i z_ik (p_ik - t_ik), p = softmax(z); the scalar w's
    penalty is (Σ_k ∂R/∂w_k)². INV (the reference's): only the perturbation's logits zp carry w,
    the target q = softmax(zo) does not: ∂R/∂w_k = mean_i zp_ik (pp_ik - q_ik)."""
    model, tok = tiny()
    model = model.double().eval()
    loss_fn = LossFn(tok, 48)
    cls_batches, _ = _kind_batches()
    mft, inv = cls_batches["mft"], cls_batches["inv"]
    with torch.no_grad():
        z = loss_fn.logits(model, mft.texts, mft.texts_b)
        t = mft.targets.to(z.dtype)
        g_mft = (z * (torch.softmax(z, -1) - t)).mean(0)          # one per class
        zi = loss_fn.logits(model, inv.texts, inv.texts_b)
        zo, zp = zi[:inv.size], zi[inv.size:]
        g_inv = (zp * (torch.softmax(zp, -1) - torch.softmax(zo, -1))).mean(0)
    assert g_mft.shape == (2,) and g_inv.shape == (2,)
    hand = {"mft": float((g_mft ** 2).sum()), "inv": float((g_inv ** 2).sum())}
    for kind, b in (("mft", mft), ("inv", inv)):
        dummy = DummyClassifier()
        losses = loss_fn(model, b, scale=dummy)
        assert dummy.weight.shape == (2,) and torch.allclose(losses, loss_fn(model, b))   # w = 1 changes nothing
        assert irm_penalty(losses, dummy.weight).item() == pytest.approx(hand[kind], rel=1e-9), kind
    # the scalar penalty is (Σ_k g_k)² (MFT), not Σ_k g_k²
    scale = torch.ones((), dtype=torch.float64, requires_grad=True)
    scalar = irm_penalty(loss_fn(model, mft, scale=scale), scale).item()
    assert scalar == pytest.approx(float(g_mft.sum()) ** 2, rel=1e-9)
    assert abs(scalar - hand["mft"]) > 1e-3 * hand["mft"]
    # through the method: the step's penalty is the mean of the environments' (before its update)
    hp = {**HP, **method_hparams("irm", {"irm_dummy": "per_class", "irm_penalty_anneal_iters": 5})}
    algo = get_algorithm("irm")(model, hp, loss_fn, 10, envs=["neg words", "typos"])
    stats = algo.update([mft, inv])
    assert float(stats["irm_penalty"]) == pytest.approx((hand["mft"] + hand["inv"]) / 2, rel=1e-9)
    default = get_algorithm("irm")(tiny()[0].double().eval(), {**HP, **method_hparams("irm")}, loss_fn, 10)
    assert default.hparams["irm_dummy"] == "scalar"


def test_irm_per_class_dummy_reaches_every_batch_kind_read_per_position():
    """Where the scalar and the per-class dummies multiply the same logits (MFT, DIR, READ MFT),
    the scalar derivative is the sum of the per-class ones (chain rule along w = (s, ..., s)):
    scalar penalty = (Σ_k g_k)², per-class = Σ_k g_k²; READ has one weight per position."""
    cls_batches, qa_batches = _kind_batches()
    for (model, tok), batches in ((tiny(), cls_batches), (tiny_qa(), qa_batches)):
        model = model.double().eval()
        loss_fn = LossFn(tok, 48, doc_stride=16)
        for kind, b in batches.items():
            dummy = DummyClassifier()
            losses = loss_fn(model, b, scale=dummy)
            assert torch.allclose(losses, loss_fn(model, b)), kind
            (g,) = torch.autograd.grad(losses.mean(), [dummy.weight], retain_graph=True)
            if kind.startswith("qa"):   # per position: the width of the minibatch's windows
                assert g.shape[0] > 2 and g.shape[0] <= 48, kind
            else:
                assert g.shape == (2,), kind
            assert irm_penalty(losses, dummy.weight).item() == pytest.approx(float((g ** 2).sum()), rel=1e-9)
            if kind in ("inv", "qa_inv"):   # the per-class dummy leaves the target alone: not comparable
                continue
            scale = torch.ones((), dtype=torch.float64, requires_grad=True)
            (gs,) = torch.autograd.grad(loss_fn(model, b, scale=scale).mean(), [scale])
            assert gs.item() == pytest.approx(float(g.sum()), rel=1e-7, abs=1e-12), kind


# --------------------------------------------------------------------------- Group-DRO


def _stub_loss(values):
    """Per-example losses values[env], connected to the model's parameters."""
    def loss_fn(model, batch, scale=None):
        zero = 0.0 * sum(p.sum() for p in model.parameters() if p.requires_grad)
        return torch.tensor([values[e] for e in batch.envs]) + zero
    return loss_fn


def _mb(env, n=2):
    return Batch("mft", [env] * n, ["x"] * n, targets=torch.tensor([[1.0, 0.0]] * n))


def test_group_dro_weights_move_toward_the_worst_environment():
    model, _ = tiny()
    losses = {"hard": 5.0, "easy": 0.1, "other": 1.0}
    hp = {**HP, **method_hparams("group_dro")}
    algo = get_algorithm("group_dro")(model, hp, _stub_loss(losses), 10, envs=["easy", "hard", "other"])
    assert algo.weights == pytest.approx({"easy": 1 / 3, "hard": 1 / 3, "other": 1 / 3})
    stats = algo.update([_mb("hard"), _mb("easy")])
    q = algo.weights
    assert sum(q.values()) == pytest.approx(1.0)
    assert q["hard"] > 1 / 3 > q["easy"] and q["other"] < 1 / 3
    assert q["hard"] / q["easy"] == pytest.approx(math.exp(0.01 * (5.0 - 0.1)))
    # the step's environments weighted by q (not renormalised: with one environment per step, the
    # reference code's q_e * loss_e)
    assert float(stats["loss"]) == pytest.approx(q["hard"] * 5.0 + q["easy"] * 0.1)
    stats = algo.update([_mb("other")])
    assert float(stats["loss"]) == pytest.approx(algo.weights["other"] * 1.0)
    for _ in range(30):
        algo.update([_mb(e) for e in losses])
    q2 = algo.weights
    assert sum(q2.values()) == pytest.approx(1.0) and q2["hard"] > q["hard"] and max(q2, key=q2.get) == "hard"
    # trained through train(): weights over every environment, summing to 1
    s = run("group_dro", *tiny(), build_streams(SENT, None, make_tiny_suite(3)))
    w = s["method_info"]["group_dro_weights"]
    assert set(w) == {"neg words", "typos", "add positive", "not negative"}
    assert sum(w.values()) == pytest.approx(1.0, abs=1e-5)


# --------------------------------------------------------------------------- Fish


def test_fish_meta_lr_one_single_environment_equals_inner_steps():
    model, tok = tiny()
    streams = build_streams(SENT, None, two_env_suite(4))
    groups = env_groups(streams)
    sampler = EnvSampler(groups, 3, np.random.default_rng(0))
    batches = [sampler.minibatch("neg words") for _ in range(3)]
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    vanilla = get_algorithm("vanilla")(a, {**HP, **method_hparams("vanilla")}, LossFn(tok, 48), 10)
    fish = get_algorithm("fish")(b, {**HP, **method_hparams("fish", {"meta_lr": 1.0, "fish_envs": 1})},
                                 LossFn(tok, 48), 10)
    for i, mb in enumerate(batches):
        torch.manual_seed(100 + i)
        vanilla.update([mb])
        torch.manual_seed(100 + i)
        fish.update([mb])
    for (n, pa), pb in zip(a.named_parameters(), b.parameters()):
        assert torch.equal(pa, pb), n
    assert any(not torch.equal(pa, p0) for pa, p0 in zip(a.parameters(), model.parameters()))
    # meta_lr 0.5: halfway between the start and the inner step
    c, d = copy.deepcopy(model), copy.deepcopy(model)
    vanilla = get_algorithm("vanilla")(c, {**HP, **method_hparams("vanilla")}, LossFn(tok, 48), 10)
    fish = get_algorithm("fish")(d, {**HP, **method_hparams("fish", {"fish_envs": 1})}, LossFn(tok, 48), 10)
    torch.manual_seed(7)
    vanilla.update([batches[0]])
    torch.manual_seed(7)
    fish.update([batches[0]])
    for p0, pc, pd_ in zip(model.parameters(), c.parameters(), d.parameters()):
        torch.testing.assert_close(pd_, p0 + 0.5 * (pc - p0))


class _Toy(torch.nn.Module):
    """One float64 parameter vector θ; the loss a·θ has the constant gradient a."""

    def __init__(self):
        super().__init__()
        self.theta = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))


def test_fish_reference_meta_lr():
    """meta_lr: reference = the reference code's 5e-7 / lr / meta_steps, meta_steps = fish_envs:
    0.005 at lr 2e-5 and 5 environments. On a loss with the constant gradient a, AdamW's bias-
    corrected step is lr·a/(|a| + 1e-8) per inner step (m̂ = a, v̂ = a²), so the 5 inner steps of a
    meta step move θ_inner by 5·lr·a/(|a| + 1e-8) and θ ← θ + ε(θ_inner − θ) moves θ by ε times that:
    5e-7·a/(|a| + 1e-8) (lr factor 1 at the first meta step, 1 − 1/10 at the second of 10)."""
    assert fish_meta_lr({"meta_lr": "reference", "lr": 2e-5, "fish_envs": 5}) == pytest.approx(0.005)
    assert fish_meta_lr({"meta_lr": "reference", "lr": 2e-5, "fish_envs": None}, 4) == pytest.approx(0.00625)
    assert fish_meta_lr({"meta_lr": 0.5, "lr": 2e-5, "fish_envs": 5}) == 0.5
    too_small = {**method_hparams("fish", {"meta_lr": "reference"}), "lr": 1e-8, "batch_size": 1, "epochs": 1}
    with pytest.raises(ConfigError, match="meta_lr.*outside"):   # 5e-7 / 1e-8 / 5 = 10
        get_algorithm("fish")(_Toy(), too_small, None, 10)
    a = torch.tensor([0.5, -0.25], dtype=torch.float64)   # |a| < max_grad_norm: no clipping

    def loss_fn(model, batch, scale=None):
        return (model.theta * a).sum().expand(batch.size)

    for meta_lr, eps in (("reference", 0.005), (0.5, 0.5)):
        model = _Toy()
        hp = {**method_hparams("fish", {"meta_lr": meta_lr}), "lr": 2e-5, "batch_size": 2, "epochs": 1}
        fish = get_algorithm("fish")(model, hp, loss_fn, 10, envs=[f"e{i}" for i in range(5)])
        assert fish.meta_lr == pytest.approx(eps) and fish.summary()["fish_meta_lr"] == pytest.approx(eps)
        theta0 = model.theta.detach().clone()
        adam_step = a / (a.abs() + 1e-8)
        fish.update([_mb(f"e{i}") for i in range(5)])
        theta1 = theta0 - eps * 5 * 2e-5 * adam_step
        torch.testing.assert_close(model.theta.detach(), theta1, rtol=0, atol=1e-14)
        if meta_lr == "reference":
            torch.testing.assert_close(model.theta.detach(), theta0 - 5e-7 * adam_step, rtol=0, atol=1e-14)
        fish.update([_mb(f"e{i}") for i in range(5)])   # the inner optimizer's moments persist: m̂ = a, v̂ = a²
        torch.testing.assert_close(model.theta.detach(), theta1 - eps * 5 * 2e-5 * 0.9 * adam_step,
                                   rtol=0, atol=1e-14)


# --------------------------------------------------------------------------- LP, dropout, L2


@pytest.mark.parametrize("head", ["sequence", "qa"])
def test_lp_changes_only_head_parameters(head):
    model, tok = tiny_qa() if head == "qa" else tiny()
    streams = qa_streams() if head == "qa" else build_streams(SENT, None, make_tiny_suite(3))
    names = head_parameter_names(model)
    assert names == (["qa_outputs.weight", "qa_outputs.bias"] if head == "qa"
                     else ["classifier.weight", "classifier.bias"])
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    run("lp", model, tok, streams)
    for n, p in model.named_parameters():
        if n in names:
            assert not torch.equal(p, before[n]), n
        else:
            assert torch.equal(p, before[n]), n


def test_lp_ft_lp_stage_trains_lp_epochs_with_lps_hparams():
    """lp_ft's lp_epochs (the reference code: 1.5): LP-FT's LP stage (lp_ft_lp) is LP with LP's
    hyper-parameters and selection, its epochs fixed to lp_epochs after selection. make_tiny_suite(3)
    and 3 i.i.d. examples with batch size 3 are 5 pooled batches per epoch: 1.5 epochs = ceil(1.5 × 5) = 8
    updates, where LP's selected 3 epochs would be 15."""
    block = {"lp": {"lr": 5e-4}, "lp_ft": {"lp_epochs": 1.5}}
    hp = config_hparams("lp_ft_lp", block)
    assert hp["lr"] == 5e-4 and hp["lp_epochs"] == 1.5   # lp's entry, lp_ft's lp_epochs
    assert get_algorithm("lp_ft_lp").selection_method(hp) == "lp"
    selected = {"lr": 1e-3, "batch_size": 3, "epochs": 3}   # LP's selection
    final = job_hparams("lp_ft_lp", hp, selected)
    assert {k: final[k] for k in selected} == {"lr": 1e-3, "batch_size": 3, "epochs": 1.5}
    model, tok = tiny()
    names = head_parameter_names(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    iid = pd.DataFrame({"text": ["good", "bad", "fine"], "label": [1, 0, 1]})
    s = train_run(model, tok, build_streams(SENT, iid, make_tiny_suite(3)), "lp_ft_lp", final, seed=3,
                  max_length=48)
    assert s["steps"] == math.ceil(1.5 * 5) == 8
    assert all(torch.equal(p, before[n]) != (n in names) for n, p in model.named_parameters())
    # lp_epochs: null (default) keeps the selected epochs; lp_ft's own epochs are ft_epochs', not lp_epochs'
    assert job_hparams("lp_ft_lp", config_hparams("lp_ft_lp", {}), selected)["epochs"] == 3
    assert job_hparams("lp_ft", method_hparams("lp_ft", {"lp_epochs": 1.5}), selected) == \
        {**method_hparams("lp_ft", {"lp_epochs": 1.5}), **selected}
    with pytest.raises(ConfigError, match="method_hparams.lp.bogus"):   # a bad key named where it is
        config_hparams("lp_ft_lp", {"lp": {"bogus": 1}})


def test_head_parameter_names_per_architecture():
    from transformers import (
        DistilBertConfig,
        DistilBertForSequenceClassification,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    rob = RobertaForSequenceClassification(RobertaConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1,
                                                         num_attention_heads=2, intermediate_size=16))
    assert head_parameter_names(rob) == ["classifier.dense.weight", "classifier.dense.bias",
                                         "classifier.out_proj.weight", "classifier.out_proj.bias"]
    dis = DistilBertForSequenceClassification(DistilBertConfig(vocab_size=50, dim=8, hidden_dim=16, n_layers=1,
                                                               n_heads=2))
    assert head_parameter_names(dis) == ["pre_classifier.weight", "pre_classifier.bias", "classifier.weight",
                                         "classifier.bias"]
    with pytest.raises(ValueError, match="no known head"):
        head_parameter_names(torch.nn.Linear(2, 2))


def _dropouts(model):
    return {n: m.p for n, m in model.named_modules() if isinstance(m, torch.nn.Dropout)}


def test_dropout_reaches_every_layer():
    hp = {**HP, **method_hparams("dropout")}
    # built with the config overrides
    model, tok = tiny(**Dropout.config_overrides(hp))
    assert model.config.hidden_dropout_prob == model.config.attention_probs_dropout_prob == 0.3
    assert set(_dropouts(model).values()) == {0.3}
    # a model loaded without them (e.g. the IID model): set on construction
    model, tok = tiny()
    assert set(_dropouts(model).values()) == {0.1}
    get_algorithm("dropout")(model, hp, LossFn(tok, 48), 1)
    drops = _dropouts(model)
    assert len(drops) == 1 + 2 * 3 + 1 and set(drops.values()) == {0.3}  # embeddings, 2 layers x 3, classifier
    assert model.config.hidden_dropout_prob == model.config.attention_probs_dropout_prob == 0.3
    # separate rates: attention-probability dropouts vs the others
    model, tok = tiny()
    get_algorithm("dropout")(model, {**hp, "hidden_dropout": 0.2, "attention_dropout": 0.4}, LossFn(tok, 48), 1)
    drops = _dropouts(model)
    assert {n for n, p in drops.items() if p == 0.4} == {f"bert.encoder.layer.{i}.attention.self.dropout"
                                                          for i in range(2)}
    assert {p for n, p in drops.items() if "attention.self" not in n} == {0.2}
    assert model.config.attention_probs_dropout_prob == 0.4 and model.config.hidden_dropout_prob == 0.2
    # another architecture (DistilBERT field names)
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    dis = DistilBertForSequenceClassification(DistilBertConfig(vocab_size=50, dim=8, hidden_dim=16, n_layers=1,
                                                               n_heads=2))
    get_algorithm("dropout")(dis, hp, LossFn(tok, 48), 1)
    assert set(_dropouts(dis).values()) == {0.3}
    assert dis.config.dropout == dis.config.attention_dropout == dis.config.seq_classif_dropout == 0.3


def _tiny_architectures():
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        DistilBertConfig,
        DistilBertForSequenceClassification,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    small = dict(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16)
    return {
        "bert": BertForSequenceClassification(BertConfig(**small)),
        "roberta": RobertaForSequenceClassification(RobertaConfig(**small)),
        "distilbert": DistilBertForSequenceClassification(DistilBertConfig(vocab_size=50, dim=8, hidden_dim=16,
                                                                           n_layers=2, n_heads=2)),
    }


#: every bias and every LayerNorm weight of the three architectures, by their names (the test's own list;
#: the method finds them by module type)
NORM_NAMES = {"bert": ("LayerNorm.weight",), "roberta": ("LayerNorm.weight",),
              "distilbert": ("LayerNorm.weight", "sa_layer_norm.weight", "output_layer_norm.weight")}


@pytest.mark.parametrize("arch", ["bert", "roberta", "distilbert"])
def test_l2_decays_all_but_biases_and_norm_weights(arch):
    torch.manual_seed(0)
    model = _tiny_architectures()[arch]
    hp = {**HP, "lr": 1e-2, **method_hparams("l2")}
    algo = get_algorithm("l2")(model, hp, _stub_loss({"e": 0.0}), 10)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    algo.update([_mb("e")])  # zero data gradients: only the decay moves θ
    exempt = {n for n in before if n.endswith(".bias") or n.endswith(NORM_NAMES[arch])}
    assert any("norm" in n.lower() for n in exempt) and any(n.endswith(".bias") for n in exempt)
    for n, p in model.named_parameters():
        if n in exempt:
            assert torch.equal(p, before[n]), n
        else:
            torch.testing.assert_close(p, before[n] * (1 - 1e-2 * 0.1), msg=n)
    # the option: decay every parameter
    model = _tiny_architectures()[arch]
    algo = get_algorithm("l2")(model, {**hp, "l2_decay_all": True}, _stub_loss({"e": 0.0}), 10)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    algo.update([_mb("e")])
    for n, p in model.named_parameters():
        torch.testing.assert_close(p, before[n] * (1 - 1e-2 * 0.1), msg=n)


def test_no_decay_parameters_by_module_type():
    from beluga.methods.base import is_normalization, no_decay_parameters

    class T5LayerNorm(torch.nn.Module):   # a model-specific norm class (no bias, not a torch LayerNorm)
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(4))

    net = torch.nn.Sequential(torch.nn.Linear(4, 4), T5LayerNorm(), torch.nn.Linear(4, 2, bias=False),
                              torch.nn.LayerNorm(2))
    assert is_normalization(net[1]) and is_normalization(net[3]) and not is_normalization(net[0])
    assert no_decay_parameters(net) == {id(net[0].bias), id(net[1].weight), id(net[3].weight), id(net[3].bias)}


def test_l2_sp_pulls_toward_start_weights():
    model, tok = tiny()
    hp = {**HP, "lr": 1e-3, **method_hparams("l2", {"l2_sp": True})}
    algo = get_algorithm("l2")(model, hp, _stub_loss({"e": 0.0}), 10)
    assert all(g["weight_decay"] == 0.0 for g in algo.optimizer.param_groups)
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    moved = {n: p.detach().clone() for n, p in model.named_parameters()}
    stats = algo.update([_mb("e")])
    assert stats["l2_sp_penalty"] > 0
    for n, p in model.named_parameters():
        assert (p - start[n]).norm() < (moved[n] - start[n]).norm(), n
        # toward θ0, not toward zero: each coordinate moves in the direction of θ0 - θ
        assert ((p - moved[n]) * (start[n] - moved[n]) >= 0).all(), n
    # explicit reference weights (e.g. the pre-trained encoder)
    zeros = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    algo = get_algorithm("l2")(model, hp, _stub_loss({"e": 0.0}), 10, reference_state=zeros)
    expected = sum(float((p.detach().double() ** 2).sum()) for p in model.parameters())
    assert float(algo.sp_penalty().detach()) == pytest.approx(expected, rel=1e-5)
