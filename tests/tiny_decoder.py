"""A tiny random decoder language model built offline (no hub): a byte-level BPE tokenizer trained with the
``tokenizers`` library on the words it will see (so label words split into several tokens), wrapped in
PreTrainedTokenizerFast, and a 2-layer x 32 GPT-2 or Llama causal LM, saved as safetensors. Used by the tests of
``test --prompt --label-words`` (tests/test_causal_lm.py) and the lm-evaluation-harness round trip
(tests/test_lm_eval.py)."""

from __future__ import annotations

from pathlib import Path


def build_tokenizer(texts: list[str], vocab_size: int = 320, padding_side: str = "right", pad: bool = False,
                    lowercase: bool = False):
    """A byte-level BPE tokenizer (GPT-2 style: no BOS added, ``<|endoftext|>`` as EOS) trained on ``texts``;
    ``pad``: with a pad token of its own (default: none, as GPT-2's); ``lowercase``: a normaliser that
    lower-cases every text first (as an uncased model's tokenizer: ``Good`` and ``good`` are one)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>"] + (["<pad>"] if pad else [])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>", pad_token="<pad>" if pad else None,
                                   padding_side=padding_side)


def build_decoder(out: Path, texts: list[str], family: str = "gpt2", seed: int = 0, padding_side: str = "right",
                  pad: bool = False, id2label: dict[int, str] | None = None, lowercase: bool = False) -> Path:
    """A random ``family`` (``gpt2`` or ``llama``) causal LM, 2 layers x 32, with the tokenizer of
    :func:`build_tokenizer` (``lowercase``: one that lower-cases), saved to ``out`` (safetensors); ``id2label``:
    names written into its config (a causal LM's classes come from the label words, never from these)."""
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

    tok = build_tokenizer(texts, padding_side=padding_side, pad=pad, lowercase=lowercase)
    common = {"vocab_size": len(tok), "eos_token_id": tok.eos_token_id, "bos_token_id": tok.bos_token_id,
              "pad_token_id": tok.pad_token_id}
    if id2label:
        common.update(id2label={int(k): v for k, v in id2label.items()},
                      label2id={v: int(k) for k, v in id2label.items()})
    if family == "gpt2":
        config = GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=256, **common)
    elif family == "llama":
        config = LlamaConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                             num_key_value_heads=2, max_position_embeddings=256, **common)
    else:
        raise ValueError(f"family {family!r}: gpt2 or llama")
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():   # larger weights than the init's: class probabilities far from uniform
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.5)
    model.eval()
    out = Path(out)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out
