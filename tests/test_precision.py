"""Precision settings (beluga/model/precision.py): resolution, bf16 autocast of the
forward passes with float32 losses, fused AdamW, determinism."""

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_tiny_suite, train_run

from beluga.core.tasks import SENT
from beluga.heads import get_head
from beluga.heads.span.qa import predict_qa
from beluga.methods import get_algorithm, method_hparams
from beluga.model.modeling import TINY_RANDOM, load_model, set_seed
from beluga.model.precision import FP32, Precision, full, native_bf16, resolve, start_line
from beluga.train.batches import epoch_batches
from beluga.train.loop import LossFn
from beluga.train.streams import build_streams

BF16 = Precision("bf16", "cpu", True, False)
CTX = "Paul traveled from Chicago to New York last year."


def tiny(head="classification"):
    set_seed(0)
    return load_model(TINY_RANDOM, 2 if head == "classification" else 0, head=head)


def test_resolve():
    cpu = torch.device("cpu")
    auto = resolve("auto", cpu)
    assert auto.name == ("bf16" if native_bf16(cpu) else "fp32")
    assert resolve("fp32", cpu) == Precision("fp32", "cpu", True, False)
    assert resolve("bf16", cpu).name == "bf16" and resolve("bf16", cpu).tf32 is False
    assert resolve("fp32", cpu).record() == {"precision": "fp32", "fused_optimizer": True, "tf32": False}
    with pytest.raises(ValueError, match="precision"):
        resolve("fp16", cpu)


@pytest.mark.parametrize("capability, bf16, amx, native", [
    ("AVX512", True, False, True), ("AVX512", False, True, True), ("AVX512", False, False, False),
    ("AVX2", True, True, False), ("DEFAULT", True, False, False)])
def test_native_bf16_follows_the_kernels_torch_runs(monkeypatch, capability, bf16, amx, native):
    """bf16 is native on a CPU with AVX512-BF16 or AMX whose kernels torch runs at AVX-512; the same CPU under
    ATEN_CPU_CAPABILITY=avx2 (an AVX2-only machine emulated) is not, and ``auto`` resolves to fp32 there."""
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert native_bf16(torch.device("cpu")) is native
    assert resolve("auto", torch.device("cpu")).name == ("bf16" if native else "fp32")


def test_full_precision_outputs():
    assert full(torch.ones(2, dtype=torch.bfloat16)).dtype == torch.float32
    assert full(torch.ones(2, dtype=torch.float64)).dtype == torch.float64
    x = torch.ones(2)
    assert full(x) is x


def test_bf16_forward_float32_losses_close_to_fp32():
    model, tok = tiny()
    streams = build_streams(SENT, None, make_tiny_suite(3))
    batches = epoch_batches(streams, 4, np.random.default_rng(0))
    kinds = set()
    for b in batches:
        lo32 = LossFn(tok, 32)(model, b)
        lo16 = LossFn(tok, 32, precision=BF16)(model, b)
        assert lo16.dtype == torch.float32 and lo16.shape == lo32.shape
        assert torch.allclose(lo16, lo32, atol=0.05, rtol=0.05), b.kind
        kinds.add(b.kind)
    assert kinds == {"mft", "inv", "dir"}


def test_bf16_predictions_close_and_qa_decodes():
    model, tok = tiny()
    texts = ["this is awful", "a fine film", "the plot", "great acting"]
    p32 = get_head("classification").predict(model, tok, texts, precision=FP32)
    p16 = get_head("classification").predict(model, tok, texts, precision=BF16)
    assert p16.dtype == p32.dtype and abs(p16 - p32).max() < 0.05
    qa, qtok = tiny("qa")
    assert predict_qa(qa, qtok, ["Who traveled?"], [CTX], max_length=48, stride=16, precision=BF16)[0][0] in CTX


def test_fused_adamw_and_deterministic_bf16_training():
    model, tok = tiny()
    algo = get_algorithm("vanilla")(model, {"lr": 1e-3, "batch_size": 4, "epochs": 1,
                                            **method_hparams("vanilla")}, LossFn(tok, 32), 1, fused=True)
    assert algo.optimizer.defaults["fused"] is True

    def run():
        m, t = tiny()
        streams = build_streams(SENT, pd.DataFrame({"text": ["good", "bad"], "label": [1, 0]}), make_tiny_suite(3))
        s = train_run(m, t, streams, "vanilla", {"lr": 1e-3, "batch_size": 4, "epochs": 2}, 3, max_length=32,
                  precision="bf16")
        return s, {k: v.clone() for k, v in m.state_dict().items()}

    torch.set_num_threads(1)
    (s1, w1), (s2, w2) = run(), run()
    assert s1["epoch_losses"] == s2["epoch_losses"]
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    m, _ = tiny()
    assert any(not torch.equal(w1[k], v) for k, v in m.state_dict().items())   # it trained


def test_start_line_names_the_resolved_precision(monkeypatch):
    """The line a run prints at its start: auto resolved on this CPU, and why."""
    import beluga.model.precision as p

    monkeypatch.setattr(p, "native_bf16", lambda device: False)
    line = start_line("auto")
    assert line.startswith("precision: auto -> fp32 on this CPU") and "no native bf16" in line
    monkeypatch.setattr(p, "native_bf16", lambda device: True)
    assert start_line("auto").startswith("precision: auto -> bf16 on this CPU")
    assert start_line("fp32").startswith("precision: fp32 -> fp32")
    assert start_line("auto", gpus=1).startswith("precision: auto (GPU jobs")
