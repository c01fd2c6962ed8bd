"""``lora`` (issue 41, scope 2): low-rank adapters through peft as a method of its own — hyper-parameters and
their checks, only the adapters and the head train, the model merged at the end of training reloads from its
safetensors to the adapted model's probabilities, a resumed run ends with the uninterrupted run's weights,
compositions with IRM / Group-DRO / Fish refused, and the plan counts lora's fold jobs."""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import (
    TINY,
    Crash,
    config_with,
    crash_after_checkpoint,
    dry_load,
    load_error,
    make_tiny_suite,
    one_torch_thread,
    train_run,
)
from safetensors import safe_open

from beluga.core.errors import ConfigError, ModelError
from beluga.core.tasks import SENT
from beluga.heads import get_head
from beluga.methods import DEFAULT_HPARAMS, PUBLIC_METHODS, LoRA, get_algorithm, method_hparams
from beluga.methods.lora import head_modules, target_modules
from beluga.model.modeling import TINY_RANDOM, load_model, save_model, set_seed
from beluga.train.batches import epoch_batches
from beluga.train.loop import LossFn
from beluga.train.streams import build_streams
from beluga.workflow.cost import ESTIMATED_METHOD_COST
from beluga.workflow.plan import load_config, plan, plan_command

HP = {"lr": 5e-3, "batch_size": 4, "epochs": 3}
TEXTS = ["this is awful", "a great film", "not bad at all", "the plot"]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread and deterministic algorithms, as the pipeline's jobs (resume is bit for bit)."""
    yield from one_torch_thread()


def tiny(num_labels=2, head="classification"):
    set_seed(0)
    return load_model(TINY_RANDOM, num_labels, head=head)


def streams():
    iid = pd.DataFrame({"text": ["good", "awful film"], "label": [1, 0]})
    return build_streams(SENT, iid, make_tiny_suite(2))


def hparams(**kw):
    return {**HP, **method_hparams("lora", {"lora_r": 4, "lora_alpha": 8})} | kw


# ---------------------------------------------------------------- hyper-parameters
def test_defaults_live_in_the_class_and_bad_values_are_one_line_each():
    assert "lora" in PUBLIC_METHODS and get_algorithm("lora") is LoRA
    assert DEFAULT_HPARAMS["lora"] == {"max_grad_norm": 1.0, "detach_inv_orig": False, "weight_decay": 0.0,
                                       "lr": 5e-4, "lora_r": 8, "lora_alpha": 8, "lora_dropout": 0.0,
                                       "lora_target_modules": None}
    assert method_hparams("lora", {"lora_target_modules": ["query", "key"]})["lora_target_modules"] == ["query", "key"]
    bad = {"lora_r": [0, 2.0, True, None], "lora_alpha": [0, -1, "8", None], "lora_dropout": [-0.1, 1.0, 1.5, "0"],
           "lora_target_modules": ["query", [], [""], ["query", "query"], [1]]}
    for key, values in bad.items():
        for v in values:
            with pytest.raises(ConfigError, match=rf"^config: field 'method_hparams\.lora\.{key}': .*got") as e:
                method_hparams("lora", {key: v})
            assert "\n" not in str(e.value)


def test_a_shared_lr_grid_needs_loras_own(tmp_path):
    """selection.grid.lr (full fine-tuning's rates) with lora configured and no method_grid.lora.lr: refused at
    load in one line (it would tune lora's adapters at 2e-5...); with lora's own grid it loads."""
    cfg = config_with(methods=["vanilla", "lora"], selection__grid={"lr": [2.0e-5, 3.0e-5]})
    load_error(tmp_path / "a", cfg, "field 'selection.method_grid.lora.lr'", "full fine-tuning's learning rates")
    cfg["selection"]["method_grid"] = {"lora": {"lr": [1.0e-4, 5.0e-4]}}
    loaded, _ = dry_load(tmp_path / "b", cfg)
    assert not isinstance(loaded, Exception), loaded


def test_compositions_with_irm_group_dro_fish_are_refused():
    for method in ("irm", "group_dro", "fish", "vanilla"):
        with pytest.raises(ConfigError, match=rf"method_hparams\.{method}\.lora_r': LoRA is the method 'lora' "
                                              rf"of its own; it does not compose with {method}"):
            method_hparams(method, {"lora_r": 4})
    with pytest.raises(ConfigError, match="unknown hyper-parameter"):   # and lora takes no IRM penalty
        method_hparams("lora", {"irm_lambda": 1.0})
    assert LoRA.sampling == "pooled" and LoRA.start_method is None


# ---------------------------------------------------------------- what trains
def test_only_the_adapters_and_the_head_train_and_the_record_says_so():
    model, tok = tiny()
    base = {n: p.detach().clone() for n, p in model.named_parameters()}
    algo = LoRA(model, hparams(), LossFn(tok, 48), total_steps=4)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n or n.startswith("classifier.modules_to_save.")
                             for n in trainable)
    assert {n for n in trainable if "modules_to_save" in n} == {"classifier.modules_to_save.default.weight",
                                                               "classifier.modules_to_save.default.bias"}
    in_optimizer = {id(p) for g in algo.optimizer.param_groups for p in g["params"]}
    assert in_optimizer == {id(p) for p in model.parameters() if p.requires_grad}
    info = algo.summary()
    assert info["trainable_parameters"] == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert info["trainable_parameters"] < info["base_parameters"] / 10
    assert (info["lora_r"], info["lora_alpha"], info["target_modules"], info["head_modules"]) == (
        4, 8, ["query", "value"], ["classifier"])
    assert info["adapted_modules"] == 4   # 2 layers x (query, value): peft's default for BERT
    json.dumps(info)
    for b in list(epoch_batches(streams(), 4, np.random.default_rng(0)))[:3]:
        algo.update([b])
    after = dict(model.named_parameters())
    for n, t in base.items():
        if n.startswith("classifier."):
            assert not torch.equal(after[f"classifier.modules_to_save.default.{n.split('.')[-1]}"], t)
            continue
        key = n.replace(".weight", ".base_layer.weight").replace(".bias", ".base_layer.bias") \
            if any(f".{m}." in n for m in ("query", "value")) else n
        assert torch.equal(after[key], t), n   # the base weights did not move


def test_target_modules_given_default_or_refused():
    model, _ = tiny()
    assert target_modules(model, None) == ["query", "value"] and target_modules(model, ["dense"]) == ["dense"]
    assert head_modules(model) == ["classifier"]
    model.config.model_type = "no-such-type"
    with pytest.raises(ConfigError, match="model type 'no-such-type' .*lora_target_modules': neither peft nor the "
                                          "project.*its Linear modules: dense, key, query, value\\)$"):
        target_modules(model, None)
    model, tok = tiny()
    with pytest.raises(ConfigError, match=r"lora_target_modules': no module outside the head \['classifier'\] "
                                          r"is named \['nothing'\]"):
        LoRA(model, hparams(lora_target_modules=["nothing"]), LossFn(tok, 48), 1)
    # every Linear called "dense" (attention output, intermediate, output, pooler) but never the head
    model, tok = tiny()
    algo = LoRA(model, hparams(lora_target_modules=["dense"]), LossFn(tok, 48), 1)
    assert algo.summary()["adapted_modules"] == 2 * 3 + 1
    qa, qtok = tiny(0, head="qa")
    assert LoRA(qa, hparams(), LossFn(qtok, 48), 1).summary()["head_modules"] == ["qa_outputs"]


# ---------------------------------------------------------------- the merged model
def test_the_merged_save_is_plain_and_reloads_to_the_adapted_predictions(tmp_path):
    model, tok = tiny()
    algo = LoRA(model, hparams(), LossFn(tok, 48), total_steps=8)
    for b in list(epoch_batches(streams(), 4, np.random.default_rng(0)))[:6]:
        algo.update([b])
    adapted = get_head("classification").predict(model, tok, TEXTS, max_length=48)   # adapters not merged yet
    with pytest.raises(ModelError, match="LoRA adapters not merged"):
        save_model(model, tok, tmp_path / "unmerged", task_type="sent")
    algo.finish()
    merged = get_head("classification").predict(model, tok, TEXTS, max_length=48)
    save_model(model, tok, tmp_path / "m", task_type="sent")
    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as f:
        names = set(f.keys())
    fresh, _ = tiny()
    assert names <= set(fresh.state_dict()) and not any("lora" in n or "modules_to_save" in n for n in names)
    reloaded, rtok = load_model(str(tmp_path / "m"), 2, task_type="sent", trained=True)
    again = get_head("classification").predict(reloaded, rtok, TEXTS, max_length=48)
    assert np.abs(adapted - fresh_probs(fresh, tok)).max() > 1e-4   # training moved the predictions
    np.testing.assert_allclose(merged, adapted, atol=1e-5)
    np.testing.assert_allclose(again, adapted, atol=1e-5)
    assert all(p.requires_grad for p in model.parameters())   # a plain model again


def fresh_probs(model, tok):
    return get_head("classification").predict(model, tok, TEXTS, max_length=48)


def test_lora_from_a_trained_start_model_iid_to_t_style(tmp_path):
    """IID→T: adapters on top of a trained (saved) model; train() merges at its end."""
    model, tok = tiny()
    train_run(model, tok, streams(), "vanilla", {"lr": 1e-3, "batch_size": 4, "epochs": 1}, seed=1)
    save_model(model, tok, tmp_path / "iid", task_type="sent")
    start, stok = load_model(str(tmp_path / "iid"), 2, task_type="sent", trained=True)
    before = get_head("classification").predict(start, stok, TEXTS, max_length=48)
    s = train_run(start, stok, streams(), "lora", hparams(epochs=1), seed=1)
    assert s["method_info"]["lora_r"] == 4 and s["steps"] > 0
    assert set(start.state_dict()) == set(model.state_dict())   # merged: the base architecture's names
    assert get_head("classification").predict(start, stok, TEXTS, max_length=48).shape == before.shape


# ---------------------------------------------------------------- checkpoints
def test_resume_restores_the_peft_wrapped_state_exactly(tmp_path, monkeypatch, caplog):
    def fit(ckpt=None, crash_after=None):
        model, tok = tiny()
        set_seed(123)
        if crash_after is not None:
            crash_after_checkpoint(monkeypatch, crash_after)
        try:
            return model, train_run(model, tok, streams(), "lora", hparams(lora_dropout=0.1), seed=5,
                                    checkpoint_dir=ckpt)
        finally:
            monkeypatch.undo()

    straight, s0 = fit()
    ckpt = tmp_path / "ckpt"
    with pytest.raises(Crash):
        fit(ckpt, crash_after=1)
    with safe_open(str(ckpt / "epoch-0001" / "model.safetensors"), "pt") as f:
        saved = set(f.keys())
    assert any(".lora_A." in n for n in saved) and any(".modules_to_save." in n for n in saved)
    with caplog.at_level(logging.INFO, logger="beluga"):
        resumed, s1 = fit(ckpt)
    assert "resumed from epoch 1 of 3" in caplog.text and s1["resumed_from_epoch"] == 1
    sa, sb = straight.state_dict(), resumed.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    assert s1["epoch_losses"] == s0["epoch_losses"] and s1["method_info"] == s0["method_info"]


# ---------------------------------------------------------------- the plan
def test_the_plan_counts_lora_fold_jobs_at_its_estimated_cost():
    cfg = load_config(str(TINY), ["methods=[vanilla,lora]"])
    rates = {"train_seq_per_s": 100.0, "predict_seq_per_s": 300.0, "fixed_s_per_job": 0.0,
             "ref_size": [6, 384, 1536], "ref_length": 48, "batch_size": 16, "method_cost": {"vanilla": 1.0}}
    lines = {(ln.rule, ln.configuration, ln.method): ln for ln in plan(cfg, rates)}
    for conf in cfg["configurations"]:
        van, lora = lines[("finetune", conf, "vanilla")], lines[("finetune", conf, "lora")]
        assert lora.jobs == van.jobs > 0 and lora.train_seqs == van.train_seqs
        # the same sequences, the training part at the estimate (CPU: 0.67 of vanilla's), prediction as vanilla's
        assert van.hours > lora.hours > ESTIMATED_METHOD_COST["cpu"]["lora"] * van.hours
    text = plan_command(str(TINY), overrides=["methods=[vanilla,lora]"])
    assert "; lora 0.67 -- an ESTIMATE (cost.py ESTIMATED_METHOD_COST), not measured" in text
    assert "ESTIMATED_METHOD_COST" not in plan_command(str(TINY))   # a run without lora: no estimate to name
    measured = {**rates, "method_cost": {"vanilla": 1.0, "lora": 0.5}}
    lines = {(ln.rule, ln.configuration, ln.method): ln for ln in plan(cfg, measured)}
    assert lines[("finetune", "iid_to_t", "lora")].hours < lines[("finetune", "iid_to_t", "vanilla")].hours
