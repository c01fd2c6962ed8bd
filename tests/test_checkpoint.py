"""Checkpoints at epoch boundaries: a run interrupted after an epoch and
resumed ends with exactly the weights of the run that never stopped."""

import json
import logging
import os
import stat
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import Crash, crash_after_checkpoint, make_tiny_suite, one_torch_thread, train_run

from beluga.core.errors import ModelError
from beluga.core.tasks import SENT
from beluga.methods import ALGORITHMS, get_algorithm, method_hparams
from beluga.model import checkpoint
from beluga.model.modeling import TINY_RANDOM, load_model, load_trained, save_model, set_seed
from beluga.train.streams import build_streams

METHODS = sorted(ALGORITHMS)
HP = {"lr": 1e-3, "batch_size": 4, "epochs": 3}
# per-method settings that put the interesting events after the first checkpoint
METHOD_HP = {"irm": {"irm_penalty_anneal_frac": 0.5,    # the λ switch (optimizer reset) in epoch 2
                     "irm_reset_optimizer": True},
             "l2": {"l2_sp": True},                      # the anchor is the start weights, not the checkpoint's
             "fish": {"fish_envs": 3}}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """As in the pipeline's jobs (configure_torch): one intra-op thread (bit
    for bit results depend on the number), deterministic algorithms."""
    yield from one_torch_thread()


def streams():
    iid = pd.DataFrame({"text": ["good", "awful film"], "label": [1, 0]})
    return build_streams(SENT, iid, make_tiny_suite(2))   # i.i.d., MFT, INV and DIR items, five environments


def hparams(method, **kw):
    return {**HP, **method_hparams(method, METHOD_HP.get(method)), **kw}


def tiny(method="vanilla"):
    set_seed(0)
    return load_model(TINY_RANDOM, 2, config_overrides=get_algorithm(method).config_overrides(hparams(method)))


def fit(method, ckpt=None, crash_after=None, monkeypatch=None, **kw):
    """Train from the seeded start model; ``crash_after``: raise right after
    the checkpoint of that epoch is written (a killed job)."""
    if crash_after is not None:
        real = crash_after_checkpoint(monkeypatch, crash_after)
    model, tok = tiny(method)
    set_seed(123)   # the global generators at the start of train() need not match between runs
    try:
        summary = train_run(model, tok, streams(), method, hparams(method, **kw), seed=5, checkpoint_dir=ckpt)
    finally:
        if crash_after is not None:
            monkeypatch.setattr(checkpoint, "save", real)
    return model, summary


def same_weights(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.mark.parametrize("method", METHODS)
def test_resume_after_a_crash_is_bit_identical(method, tmp_path, monkeypatch, caplog):
    straight, s0 = fit(method)
    ckpt = tmp_path / "ckpt"
    with pytest.raises(Crash):
        fit(method, ckpt, crash_after=1, monkeypatch=monkeypatch)
    assert [p.name for p in checkpoint.epoch_dirs(ckpt)] == ["epoch-0001"]
    assert json.loads((ckpt / "owner.json").read_text())["pid"] == os.getpid()
    with caplog.at_level(logging.INFO, logger="beluga"):
        resumed, s1 = fit(method, ckpt)
    assert "resumed from epoch 1 of 3" in caplog.text
    assert s1["resumed_from_epoch"] == 1 and s0["resumed_from_epoch"] == 0
    assert same_weights(straight, resumed), method
    assert s1["steps"] == s0["steps"] and s1["epoch_losses"] == s0["epoch_losses"]
    assert s1["method_info"] == s0["method_info"]
    if method == "irm":
        assert s0["method_info"]["irm_switch_step"] > s0["steps"] // 3   # the switch came after the checkpoint


@pytest.mark.parametrize("method", ["vanilla", "group_dro"])
def test_fractional_epochs_stop_after_the_right_updates_and_resume_bit_for_bit(method, tmp_path, monkeypatch):
    """1.5 and 2.5 epochs (LP-FT's second stage in the reference code): ceil(epochs x updates per epoch)
    updates (the linear schedule spans them); a run killed after the first epoch resumes to the same weights."""
    from beluga.train.loop import epoch_steps_total

    _, one = fit(method, epochs=1)
    per_epoch = one["steps"]
    assert per_epoch >= 3
    for epochs in (1.5, 2.5):
        straight, s0 = fit(method, epochs=epochs)
        assert s0["steps"] == s0["total_steps"] == epoch_steps_total(per_epoch, epochs) == -(-int(epochs * 2) *
                                                                                              per_epoch // 2)
        assert len(s0["epoch_losses"]) == int(epochs) + 1
        ckpt = tmp_path / f"ckpt{epochs}"
        with pytest.raises(Crash):
            fit(method, ckpt, crash_after=1, monkeypatch=monkeypatch, epochs=epochs)
        resumed, s1 = fit(method, ckpt, epochs=epochs)
        assert s1["resumed_from_epoch"] == 1 and s1["steps"] == s0["steps"]
        assert same_weights(straight, resumed)
    assert epoch_steps_total(10, 1.5) == 15 and epoch_steps_total(3, 1.5) == 5 and epoch_steps_total(7, 1.0) == 7
    assert epoch_steps_total(1, 0.01) == 1


def test_resume_after_the_second_epoch_and_without_a_checkpoint_dir(tmp_path, monkeypatch):
    straight, _ = fit("group_dro")
    with pytest.raises(Crash):
        fit("group_dro", tmp_path, crash_after=2, monkeypatch=monkeypatch)
    assert [p.name for p in checkpoint.epoch_dirs(tmp_path)] == ["epoch-0002"]   # older epochs removed
    resumed, s = fit("group_dro", tmp_path)
    assert s["resumed_from_epoch"] == 2 and same_weights(straight, resumed)
    # checkpointing itself changes nothing: a run with a checkpoint dir, never interrupted
    fresh, s = fit("group_dro", tmp_path / "other")
    assert s["resumed_from_epoch"] == 0 and same_weights(straight, fresh)


def test_checkpoint_of_another_run_is_discarded(tmp_path, monkeypatch, caplog):
    with pytest.raises(Crash):
        fit("vanilla", tmp_path, crash_after=1, monkeypatch=monkeypatch)
    straight, _ = fit("vanilla", lr=2e-3)
    with caplog.at_level(logging.INFO, logger="beluga"):
        other, s = fit("vanilla", tmp_path, lr=2e-3)   # other hyper-parameters: other fingerprint
    assert "from a different run" in caplog.text and "resumed" not in caplog.text
    assert s["resumed_from_epoch"] == 0 and same_weights(straight, other)


def test_fingerprint_covers_settings_data_and_start_model():
    model, _ = tiny()
    base = dict(model=model, method="vanilla", hparams=HP, seed=5, streams=streams())
    fp = checkpoint.fingerprint(**base)
    assert fp == checkpoint.fingerprint(**base)
    assert fp != checkpoint.fingerprint(**{**base, "seed": 6})
    assert fp != checkpoint.fingerprint(**{**base, "method": "l2"})
    assert fp != checkpoint.fingerprint(**{**base, "hparams": {**HP, "epochs": 4}})
    fewer = {k: v[:-1] if k == "INV" else v for k, v in streams().items()}
    assert fp != checkpoint.fingerprint(**{**base, "streams": fewer})
    assert fp != checkpoint.fingerprint(**{**base, "extra": {"max_length": 16}})
    with torch.no_grad():
        next(model.parameters())[0, 0] += 1e-3
    assert fp != checkpoint.fingerprint(**base)


def test_unreadable_checkpoint_is_discarded(tmp_path, monkeypatch, caplog):
    with pytest.raises(Crash):
        fit("vanilla", tmp_path, crash_after=1, monkeypatch=monkeypatch)
    (tmp_path / "epoch-0001" / "model.safetensors").write_bytes(b"\x00" * 16)   # truncated by a crash
    (tmp_path / ".epoch-0002.abc.tmp").mkdir()                                  # an interrupted write
    straight, _ = fit("vanilla")
    with caplog.at_level(logging.INFO, logger="beluga"):
        fresh, s = fit("vanilla", tmp_path)
    assert "cannot be read" in caplog.text and s["resumed_from_epoch"] == 0 and same_weights(straight, fresh)
    assert not (tmp_path / ".epoch-0002.abc.tmp").exists()


def _is_safetensors(path: Path) -> bool:
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    return 8 + n <= len(raw) and raw[8:9] == b"{" and json.loads(raw[8:8 + n]) is not None


def test_checkpoint_files_are_safetensors_and_json_world_readable(tmp_path, monkeypatch):
    with pytest.raises(Crash):
        fit("irm", tmp_path, crash_after=1, monkeypatch=monkeypatch)
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    names = {p.relative_to(tmp_path).as_posix() for p in files}
    assert names == {"owner.json", "epoch-0001/model.safetensors", "epoch-0001/optimizer.safetensors",
                     "epoch-0001/rng.safetensors", "epoch-0001/state.json", "epoch-0001/checksums.json"}
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
        raw = p.read_bytes()
        assert not raw.startswith(b"\x80") and b"PK\x03\x04" not in raw[:4]   # no pickle, no torch zip
        if p.suffix == ".safetensors":
            assert _is_safetensors(p)
        else:
            json.loads(raw)
    for d in [tmp_path, *(p for p in tmp_path.rglob("*") if p.is_dir())]:
        assert stat.S_IMODE(d.stat().st_mode) == 0o755, d
    state = json.loads((tmp_path / "epoch-0001" / "state.json").read_text())
    assert state["epoch"] == 1 and state["loop"]["sampler"]["queues"] and "steps_done" in state["method"]
    checkpoint.clear(tmp_path)
    assert not tmp_path.exists()


def test_saved_models_are_world_readable_safetensors(tmp_path):
    old = os.umask(0o077)   # even under a strict umask (save_pretrained writes 0600 itself)
    try:
        model, tok = tiny()
        save_model(model, tok, tmp_path / "model", {"beluga_run.json": "{}"})
    finally:
        os.umask(old)
    out = tmp_path / "model"
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in files), \
        {p.name: oct(p.stat().st_mode) for p in files}
    weights = [p for p in files if p.suffix in (".safetensors", ".bin", ".pt", ".pth", ".pkl", ".ckpt")]
    assert weights and all(p.suffix == ".safetensors" and _is_safetensors(p) for p in weights)
    again, _ = load_trained(str(out))
    assert same_weights(model, again)


def test_one_epoch_writes_no_checkpoint(tmp_path):
    model, tok = tiny()
    s = train_run(model, tok, streams(), "vanilla", {**HP, "epochs": 1}, seed=5, checkpoint_dir=tmp_path / "ckpt")
    assert s["resumed_from_epoch"] == 0 and not (tmp_path / "ckpt").exists()


def test_local_model_without_safetensors_is_refused(tmp_path):
    model, tok = tiny()
    model.config.save_pretrained(tmp_path)
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04not loaded")   # a pickle is never opened
    with pytest.raises(ModelError, match="no \\*.safetensors weights"):
        load_model(str(tmp_path), 2)


def test_checkpoint_corrupted_in_place_fails_its_checksum(tmp_path, monkeypatch, caplog):
    """A checkpoint file changed in place at the same size is caught by its checksum: discarded, retrained."""
    with pytest.raises(Crash):
        fit("vanilla", tmp_path, crash_after=1, monkeypatch=monkeypatch)
    weights = tmp_path / "epoch-0001" / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-8:] = bytes(8)   # the last values of the last tensor, zeroed: still a valid safetensors file
    weights.write_bytes(bytes(raw))
    straight, _ = fit("vanilla")
    with caplog.at_level(logging.INFO, logger="beluga"):
        fresh, s = fit("vanilla", tmp_path)
    assert "fails its checksum" in caplog.text and "model.safetensors does not match its checksum" in caplog.text
    assert s["resumed_from_epoch"] == 0 and same_weights(straight, fresh)
