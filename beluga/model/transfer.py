"""Model inputs built on the host and moved to the model's device without
making the host wait for the device (no device -> host sync in a training
step): copies from pinned memory, and an attention mask the model takes as
it is.

A padded batch's 2D attention mask would make the model's own mask helper
(transformers' ``create_bidirectional_mask``) check ``mask.all()`` to see
whether the mask can be dropped: on CUDA a device -> host sync at every
forward pass. :func:`model_inputs` answers that question on the host, where
the mask was built, and hands the model the 4D mask its helper would build
(a 4D mask is taken as it is), or no mask for a batch without padding (the
helper would drop it): the same masks, so the same outputs, bit for bit.
"""

from __future__ import annotations

import inspect
import sys

import torch


def to_device(t: torch.Tensor, dev: torch.device) -> torch.Tensor:
    """A host tensor on ``dev``: on CUDA copied from pinned memory without
    blocking the host (the copy is ordered before the kernels that use it)."""
    if dev.type != "cuda" or t.device.type != "cpu":
        return t.to(dev)
    return t.pin_memory().to(dev, non_blocking=True)


def bidirectional_mask_builder(model):
    """transformers' ``create_bidirectional_mask`` when ``model``'s forward
    pass builds its attention mask with it from a 2D mask (BERT-family
    encoders: the base model's module imports it; not a decoder) under sdpa or
    eager attention, and it can be told not to drop the mask
    (``allow_is_bidirectional_skip``); else None (the 2D mask is passed as
    before)."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "is_decoder", False) or getattr(cfg, "_attn_implementation", None) not in (
            "sdpa", "eager"):
        return None
    try:
        from transformers import masking_utils
    except ImportError:   # pragma: no cover - transformers without masking_utils
        return None
    fn = getattr(masking_utils, "create_bidirectional_mask", None)
    if fn is None or "allow_is_bidirectional_skip" not in inspect.signature(fn).parameters:
        return None
    base = getattr(model, "base_model", model)
    if getattr(sys.modules.get(type(base).__module__), "create_bidirectional_mask", None) is not fn:
        return None
    return fn


def model_inputs(model, inputs: dict[str, torch.Tensor], dev: torch.device) -> dict[str, torch.Tensor]:
    """Keyword arguments for ``model(**...)`` on ``dev`` from host tensors
    (input ids, token types, an optional 2D attention mask of 0 / 1), copied
    with :func:`to_device`. Where :func:`bidirectional_mask_builder` finds the
    model's mask helper, the 2D mask is dropped when nothing is padded (the
    helper would drop it) and otherwise replaced by the 4D mask the helper
    builds from it, made on ``dev`` (the model takes it as it is, without
    reading the mask on the host); elsewhere the 2D mask is copied as it is."""
    out = {k: to_device(v, dev) for k, v in inputs.items() if k != "attention_mask"}
    mask = inputs.get("attention_mask")
    if mask is None:
        return out
    build = bidirectional_mask_builder(model)
    if build is None:
        out["attention_mask"] = to_device(mask, dev)
        return out
    if mask.device.type == "cpu" and bool(mask.all()):   # read on the host: no padding, no mask
        return out
    # the helper reads only the embeddings' shape (batch, length), dtype (eager's fill value) and device
    dtype = model.get_input_embeddings().weight.dtype
    embeds = torch.empty((mask.shape[0], mask.shape[1], 0), dtype=dtype, device=dev)
    out["attention_mask"] = build(config=model.config, inputs_embeds=embeds, attention_mask=to_device(mask, dev),
                                  allow_is_bidirectional_skip=False)
    return out
