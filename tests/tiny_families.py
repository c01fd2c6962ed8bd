"""Tiny random models of the backbone families the project supports (issue 41), built offline.

One folder per family (:data:`FAMILIES`): a transformers config of 2 layers, hidden 32, a vocabulary of a
few hundred tokens, random weights saved as safetensors, and a tokenizer trained here with the ``tokenizers``
library on the tests' own text (:func:`corpus`) and wrapped in the family's tokenizer class, which sets the
family's real special tokens, post-processor (CLS / SEP, ``</s>``, pairs) and padding side: WordPiece for
BERT / ELECTRA / DistilBERT, byte-level BPE for GPT-2 / RoBERTa / BART, a Metaspace BPE for the Llama-style
decoder, Unigram for T5 / XLNet / ALBERT / DeBERTa-v2 (no SentencePiece model files). GPT-2 and Llama have
no pad token, as the real ones; XLNet pads on the left.

:func:`build_family` writes one folder (well under a second); tests share the folders through the
session-scoped ``family_models`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

#: the families of issue 41's scope 1, in the order tests run them
FAMILIES = ("bert", "roberta", "deberta-v2", "electra", "albert", "distilbert", "xlnet", "gpt2", "llama", "bart",
            "t5")
#: families with no AutoModelForQuestionAnswering class in transformers (no READ head)
NO_QA: frozenset[str] = frozenset()   # every family in scope has one (T5ForQuestionAnswering included)
#: decoders: no pad token in the tokenizer as released (the project sets pad := eos at load)
DECODERS = frozenset({"gpt2", "llama"})

HIDDEN, LAYERS, HEADS, FFN, POSITIONS = 32, 2, 2, 64, 128
VOCAB = 400

_WORDS = ("the a an this that movie film plot story actor actors acting scene scenes music score ending "
          "was is were are be been it its I we you they he she loved liked hated enjoyed watched found "
          "good great fine bad awful terrible boring brilliant funny sad dull fun wonderful excellent poor "
          "not never no very really quite too so but and or because although while yet at all in on of to "
          "for with about from by as than then when where who what which why how one two three four five "
          "six seven eight nine ten airline flight seat crew service food time day night people thing "
          "question answer context paris london john mary city river king queen").split()


def corpus() -> list[str]:
    """A few hundred sentences of the tests' own text: the tiny suite's inputs (``conftest.make_tiny_suite``,
    rebuilt here so this module imports nothing from the tests) and sentences over the words the tiny
    configs' generated suites and data use."""
    out = []
    for i in range(8):
        out += [f"this is awful {i}", f"a fine film {i}", f"a fnie film {i}", f"a fine flim {i}",
                f"the plot {i}", f"the plot {i}. I loved it.", f"not bad at all {i}"]
    n = len(_WORDS)
    for i in range(300):
        out.append(" ".join(_WORDS[(i * k + 3 * k) % n] for k in range(1, 9)).capitalize() + ".")
    out.append("Who was it? What is the question? Where: here, there; 'quoted' \"double\" (paren) - dash!")
    return out


_ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"()-")


def _json_model(tok) -> dict:
    return json.loads(tok.to_str())["model"]


def _wordpiece(specials: list[str]) -> dict[str, int]:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(corpus(), trainers.WordPieceTrainer(vocab_size=VOCAB, special_tokens=specials,
                                                                initial_alphabet=_ALPHABET, show_progress=False))
    return tok.get_vocab()


def _byte_bpe(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    m = _json_model(tok)
    return m["vocab"], [tuple(p) if isinstance(p, list) else tuple(p.split(" ")) for p in m["merges"]]


def _metaspace_bpe(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials,
                                                          initial_alphabet=_ALPHABET + ["▁"], show_progress=False))
    m = _json_model(tok)
    return m["vocab"], [tuple(p) if isinstance(p, list) else tuple(p.split(" ")) for p in m["merges"]]


def _unigram(specials: list[str], unk: str, lowercase: bool = False) -> list[tuple[str, float]]:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    if lowercase:
        tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.train_from_iterator(corpus(), trainers.UnigramTrainer(
        vocab_size=VOCAB, special_tokens=specials, unk_token=unk, initial_alphabet=_ALPHABET + ["▁"],
        show_progress=False))
    return [(p, float(s)) for p, s in _json_model(tok)["vocab"]]


def _tokenizer(family: str):
    import transformers as tf

    if family in ("bert", "electra", "distilbert"):
        vocab = _wordpiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        cls = {"bert": tf.BertTokenizer, "electra": tf.ElectraTokenizer, "distilbert": tf.DistilBertTokenizer}
        return cls[family](vocab=vocab)
    if family in ("roberta", "bart"):
        vocab, merges = _byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        cls = tf.RobertaTokenizer if family == "roberta" else tf.BartTokenizer
        return cls(vocab=vocab, merges=merges)
    if family == "gpt2":
        vocab, merges = _byte_bpe(["<|endoftext|>"])
        return tf.GPT2Tokenizer(vocab=vocab, merges=merges)   # no pad token, as GPT-2's
    if family == "llama":
        vocab, merges = _metaspace_bpe(["<unk>", "<s>", "</s>"])
        return tf.LlamaTokenizer(vocab=vocab, merges=merges)   # no pad token, as Llama's
    if family == "t5":
        return tf.T5Tokenizer(vocab=_unigram(["<pad>", "</s>", "<unk>"], "<unk>"), extra_ids=0)
    if family == "xlnet":
        specials = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>"]
        return tf.XLNetTokenizer(vocab=_unigram(specials, "<unk>"), unk_id=0)   # pads on the left
    if family == "albert":
        specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
        return tf.AlbertTokenizer(vocab=_unigram(specials, "<unk>", lowercase=True))
    if family == "deberta-v2":
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        return tf.DebertaV2Tokenizer(vocab=_unigram(specials, "[UNK]"), unk_id=1)
    raise ValueError(f"unknown family {family!r} (known: {', '.join(FAMILIES)})")


def _config(family: str, tok):
    import transformers as tf

    n = len(tok)
    ids = {k: getattr(tok, f"{k}_token_id") for k in ("pad", "bos", "eos")}
    ids = {f"{k}_token_id": v for k, v in ids.items() if v is not None}
    enc = dict(vocab_size=n, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
               intermediate_size=FFN, max_position_embeddings=POSITIONS, **ids)
    if family == "bert":
        return tf.BertConfig(**enc)
    if family == "roberta":   # positions start after the pad id: 2 of them are reserved
        return tf.RobertaConfig(**{**enc, "max_position_embeddings": POSITIONS + 2})
    if family == "electra":
        return tf.ElectraConfig(embedding_size=16, **enc)
    if family == "albert":   # one layer's weights shared by both layers
        return tf.AlbertConfig(embedding_size=16, **enc)
    if family == "deberta-v2":
        return tf.DebertaV2Config(relative_attention=True, position_biased_input=False, pos_att_type=["p2c", "c2p"],
                                  max_relative_positions=-1, position_buckets=16, **enc)
    if family == "distilbert":
        return tf.DistilBertConfig(vocab_size=n, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=FFN,
                                   max_position_embeddings=POSITIONS, pad_token_id=tok.pad_token_id)
    if family == "xlnet":
        return tf.XLNetConfig(vocab_size=n, d_model=HIDDEN, n_layer=LAYERS, n_head=HEADS, d_inner=FFN, **ids)
    if family == "gpt2":
        return tf.GPT2Config(vocab_size=n, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_inner=FFN,
                             n_positions=POSITIONS, **ids)
    if family == "llama":
        return tf.LlamaConfig(vocab_size=n, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                              num_key_value_heads=1, intermediate_size=FFN, max_position_embeddings=POSITIONS, **ids)
    if family == "bart":
        return tf.BartConfig(vocab_size=n, d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=LAYERS,
                             encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=FFN,
                             decoder_ffn_dim=FFN, max_position_embeddings=POSITIONS,
                             decoder_start_token_id=tok.eos_token_id, forced_eos_token_id=tok.eos_token_id, **ids)
    if family == "t5":
        return tf.T5Config(vocab_size=n, d_model=HIDDEN, d_kv=HIDDEN // HEADS, d_ff=FFN, num_layers=LAYERS,
                           num_decoder_layers=LAYERS, num_heads=HEADS, decoder_start_token_id=tok.pad_token_id,
                           **ids)
    raise ValueError(f"unknown family {family!r}")


def build_family(family: str, out_dir: str | Path, seed: int = 0) -> Path:
    """A tiny random model folder of ``family``: its base model (no task head: training adds it, as from a
    pre-trained backbone) and its tokenizer, saved with save_pretrained (safetensors)."""
    import torch
    from transformers import AutoModel

    out = Path(out_dir)
    tok = _tokenizer(family)
    config = _config(family, tok)
    torch.manual_seed(seed)
    model = AutoModel.from_config(config)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out
