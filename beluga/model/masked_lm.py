"""A masked language model's suggestions for the masks of a text, as CheckList's ``Editor.suggest`` computes
them (its ``TextGenerator.unmask`` / ``unmask_multiple``; ``python -m beluga suite suggest``,
:mod:`beluga.suites.suggest`).

Several masks are filled jointly, left to right, by a beam search: the beam starts empty; for each mask in
turn the model reads the text with the masks before it filled by each beam entry's words (the later masks
still masked), every entry is extended by its ``beam_size + 10`` best tokens at that mask, and the best
``beam_size`` extensions (by their summed scores) go on to the next mask. A candidate's score is the sum over
the masks of its tokens' scores divided by the number of masks: by default each token's *logit* (CheckList's
``unmask``: the raw output, not normalised), or with ``score="log-prob"`` its log-probability given the words
before it (the log-softmax over the vocabulary; the mean is then the log of the joint probability of the
left-to-right fill, per mask). With one mask both rank the candidates alike.

Whole words only (CheckList's rule where it has one, :func:`word_tokens`): after a token that is letters and
digits, a mask takes only a token that begins a word (for RoBERTa's byte-level BPE: ``Ġgreat``, not ``ing``);
after anything else (the start, punctuation) any word token. A tokenizer that marks continuations instead
(BERT's ``##ing``) never offers one. Beyond CheckList, a candidate token must be a word by itself: not a
special token, with a letter or a digit, no space or control character and no undecodable byte (a piece of a
multi-byte character); and the same words reached by two token sequences are one candidate (the better
score). Several texts (one per template) are scored as CheckList's ``unmask_multiple`` (``metric='avg'``): a
candidate's score is the mean of its scores in the texts, among the candidates found in every text
(CheckList scores a candidate missing from a text's beam as 0 there; docs/DEVIATIONS.md).

Light to import (torch is imported by the functions that use it): the command line's parser reads its constants.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from beluga.core.errors import ModelError
from beluga.model.config import TINY_RANDOM, check_max_length

if TYPE_CHECKING:
    import torch

#: the model CheckList's Editor suggests with (English: ``roberta-base``)
SUGGEST_MODEL = "roberta-base"

#: CheckList's Editor: the beam's size (``template``'s default ``beam_size=100``)
BEAM_SIZE = 100

#: CheckList's ``unmask``: each beam entry is extended by its ``beam_size + BEAM_EXTRA`` best tokens
BEAM_EXTRA = 10

#: how a candidate is scored (``suite suggest --score``), each in words
SCORES = {
    "logit": "the model's logit of each mask's token, summed over the masks and divided by their number "
             "(CheckList's suggest)",
    "log-prob": "the log-probability of each mask's token given the words before it (log-softmax of the logits), "
                "summed over the masks and divided by their number",
}


@dataclass(frozen=True)
class WordTokens:
    """Which of a tokenizer's tokens a mask may take (:func:`word_tokens`): ``words`` (each id's text as a
    word, ``""`` where the token is no word), ``starts`` (the ids of word tokens that begin a word),
    ``anywhere`` (the ids a mask may take after a token that is not letters and digits) and ``alnum`` (the ids
    whose text is letters and digits: after them only ``starts``)."""

    words: tuple[str, ...]
    starts: torch.Tensor
    anywhere: torch.Tensor
    alnum: frozenset[int]


def is_word(text: str) -> bool:
    """Whether a token's text (stripped) can be offered as a word: non-empty, with a letter or a digit, and no
    whitespace, control character or replacement character (an undecodable piece of a character)."""
    return (bool(text) and any(c.isalnum() for c in text) and "\ufffd" not in text
            and not any(c.isspace() or unicodedata.category(c).startswith("C") for c in text))


def word_tokens(tokenizer, name: str) -> WordTokens:
    """The tokens a mask may take (the module's docstring). How the tokenizer marks a word's first token is
    read as CheckList reads it -- the text before ``a`` in the tokens of ``" a"`` (``Ġ`` for byte-level BPE, ``▁``
    for SentencePiece): tokens with that mark begin a word --, else from a WordPiece model's continuation
    mark (``##``): tokens without it begin a word. A tokenizer with neither is refused in one line."""
    import torch

    n = len(tokenizer)
    raw = tokenizer.convert_ids_to_tokens(list(range(n)))
    texts = [t.strip() for t in tokenizer.batch_decode([[i] for i in range(n)])]
    special = set(tokenizer.all_special_ids)
    pieces = tokenizer.tokenize(" a")
    mark = pieces[0][:-1] if len(pieces) == 1 and len(pieces[0]) > 1 and pieces[0].endswith("a") else ""
    model = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    continuation = getattr(model, "continuing_subword_prefix", None)
    words = tuple("" if i in special or not is_word(texts[i]) else texts[i] for i in range(n))
    if mark:
        starts = [i for i in range(n) if words[i] and isinstance(raw[i], str) and raw[i].startswith(mark)]
        anywhere = [i for i in range(n) if words[i]]
    elif continuation:
        starts = [i for i in range(n) if words[i] and isinstance(raw[i], str) and not raw[i].startswith(continuation)]
        anywhere = starts
    else:
        raise ModelError(f"model {name}: field 'tokenizer': its tokens do not say where a word begins (neither a "
                         "mark of a word's first token, as RoBERTa's 'Ġ', nor of a continuation, as BERT's '##'): "
                         "whole words cannot be told from word pieces")
    if not starts:
        raise ModelError(f"model {name}: field 'tokenizer': no token of its vocabulary begins a word")
    alnum = frozenset(i for i in range(n) if i not in special and texts[i].isalnum())
    return WordTokens(words, torch.tensor(starts), torch.tensor(anywhere), alnum)


def fill_masks(model, input_ids: list[int], mask_id: int, tokens: WordTokens, beam_size: int = BEAM_SIZE,
               score: str = "logit") -> list[tuple[tuple[int, ...], float]]:
    """Every candidate fill of the masks (``mask_id``) of one encoded text, best first: (the token ids, one per
    mask, left to right; the score), by the beam search of the module's docstring. ``model(input_ids=...)``
    returns an object with ``.logits`` (batch x positions x vocabulary)."""
    import torch

    if score not in SCORES:
        raise ValueError(f"score {score!r} is not one of {', '.join(SCORES)}")
    ids = torch.tensor(input_ids, dtype=torch.long)
    masked = (ids == mask_id).nonzero().flatten().tolist()
    if not masked:
        raise ValueError("the text has no mask token")
    device = next(model.parameters()).device
    beam: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    for k, pos in enumerate(masked):
        beam = beam[:beam_size]
        batch = ids.repeat(len(beam), 1)
        for i, (filled, _) in enumerate(beam):
            if filled:
                batch[i, masked[:k]] = torch.tensor(filled, dtype=torch.long)
        with torch.no_grad():
            logits = model(input_ids=batch.to(device)).logits[:, pos, :].float()
        if score == "log-prob":
            logits = torch.log_softmax(logits, dim=-1)
        logits = logits.cpu()
        extended = []
        for i, (filled, total) in enumerate(beam):
            after_word = pos > 0 and int(batch[i, pos - 1]) in tokens.alnum
            allowed = tokens.starts if after_word else tokens.anywhere
            values, top = torch.topk(logits[i, allowed], min(beam_size + BEAM_EXTRA, len(allowed)))
            extended += [((*filled, int(allowed[t])), total + v) for t, v in zip(top.tolist(), values.tolist())]
        beam = sorted(extended, key=lambda c: (-c[1], c[0]))
    return [(filled, total / len(masked)) for filled, total in beam]


def suggest_words(model, tokenizer, texts: list[str], name: str, beam_size: int = BEAM_SIZE,
                  score: str = "logit", positions: int | None = None) -> list[tuple[tuple[str, ...], float]]:
    """The candidates for the masks of ``texts`` (each written with the tokenizer's mask token; every text with
    the same number of masks), best first: (the words, one per mask; the score, the mean over the texts). The
    same words from two token sequences are one candidate (the better score); only candidates found in every
    text are kept. ``positions``: the model's positions, a longer encoded text refused in one line."""
    tokens = word_tokens(tokenizer, name)
    per_text = []
    for text in texts:
        ids = tokenizer(text).input_ids
        if positions is not None and len(ids) > positions:
            raise ModelError(f"model {name}: field '--template': {len(ids)} tokens is more than the model's "
                             f"{positions} positions")
        best: dict[tuple[str, ...], float] = {}
        for filled, s in fill_masks(model, ids, tokenizer.mask_token_id, tokens, beam_size, score):
            best.setdefault(tuple(tokens.words[i] for i in filled), s)
        per_text.append(best)
    common = [w for w in per_text[0] if all(w in b for b in per_text[1:])]
    return sorted(((w, sum(b[w] for b in per_text) / len(per_text)) for w in common), key=lambda c: (-c[1], c[0]))


def load_masked_lm(spec: str):
    """(model, tokenizer, its folder, its positions or None) of a masked language model: a local folder
    (safetensors only) or a hub name (:func:`beluga.model.modeling.resolve_model`: the cached snapshot, else a
    download; offline and not cached, one line naming the model), on the GPU if there is one, in float32 and
    eval mode. Refused in one line: a model without a masked-LM head
    (:func:`beluga.model.modeling.load_trained`), a tokenizer without a mask token."""
    import torch

    from beluga.model.modeling import MASKED_LM, load_trained, resolve_model

    path = resolve_model(spec)
    if path == TINY_RANDOM:
        raise ModelError(f"model {spec}: field '--model': a random model without a language-model head suggests "
                         "nothing; name a masked language model (roberta-base, bert-base-uncased, a folder)")
    model, tokenizer = load_trained(path, MASKED_LM, name=spec)
    if tokenizer.mask_token is None or tokenizer.mask_token_id is None:
        raise ModelError(f"model {spec}: field 'tokenizer': the tokenizer has no mask token: not a masked language "
                         "model's")
    positions = check_max_length(path, 1, "--template", name=spec)
    model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu")).eval()
    return model, tokenizer, path, positions
