"""Behavioral tests of causal language models by label-word likelihood (``test --prompt --label-words``).

A decoder LM has no classification head: each input is written into a prompt (``--prompt``, a template with
``{text}`` and, for pair tasks, ``{text_b}``), and each class of the task is a label word (``--label-words
negative=bad positive=good``: per class BY NAME, every class once; a word may be several tokens). The class
probabilities of an input are the softmax over the classes of each label word's summed token log-likelihood as
the continuation of the filled prompt -- lm-evaluation-harness's ``multiple_choice`` (context: the filled prompt,
continuation: ``" " + word``, its ``target_delimiter``), tokenised as its HFLM does (:func:`encode_pair`: the
context and context + continuation encoded, the continuation's tokens the tail; trailing spaces of the context
moved to the continuation), so that the project's numbers and lm-eval's agree (tests/test_lm_eval.py). From the
probabilities on, ``test`` is what it is for any classifier: one code path (:mod:`beluga.cli.testing`).
Two classes' words must differ as the model reads them: words that are the same continuation tokens (``Good``
and ``good`` to a tokenizer that lower-cases) are refused (:func:`label_word_pairs`), before any model is
predicted and again for every prompt scored.

Only classification task types are tested so (READ answers and SIMILARITY scores are refused in one line).
SENT's label words name its model's two classes (negative, positive: read as CheckList's three-class mapping)
or the suite's three (with neutral).
"""

from __future__ import annotations

import inspect
import os
import string
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from beluga.core.errors import BelugaError, ConfigError
from beluga.core.tasks import TaskType
from beluga.heads import head_of
from beluga.model.labels import LabelMap, read_name, task_classes

#: lm-evaluation-harness's ``target_delimiter`` (the default of its task configs): what joins prompt and word
TARGET_DELIMITER = " "
#: the fields a prompt template may name
PROMPT_FIELDS = ("text", "text_b")


@dataclass(frozen=True)
class LabelWords:
    """The classes (the task's names, in the task's order) and each one's label word."""

    classes: tuple[str, ...]
    words: tuple[str, ...]

    def label_map(self) -> LabelMap:
        """The classes as ``test`` records them: the columns are in the task's order, read by the words."""
        return LabelMap(self.classes, self.classes, "--label-words")

    def record(self) -> dict[str, str]:
        return dict(zip(self.classes, self.words))


def check_task(ttype: TaskType, where: str = "test") -> None:
    """Only classification task types are tested by label words; READ / SIMILARITY refused in one line."""
    if not head_of(ttype).has_classes:
        raise BelugaError(f"{where}: field '--prompt': task {ttype.name!r} predicts {head_of(ttype).predicts}, not "
                          "classes; a causal LM is tested by label words only on classification tasks (sent, para, "
                          "nli, nli_binary, acceptability, similarity_classes)")


def class_sets(ttype: TaskType) -> list[tuple[str, ...]]:
    """The class sets label words may name: the model's classes (and SENT's three suite classes)."""
    out = []
    for k in (ttype.num_model_labels, len(ttype.suite_labels)):
        classes = task_classes(ttype, k)
        if classes and classes not in out:
            out.append(classes)
    return out


def parse_label_words(items: list[str], ttype: TaskType, where: str = "test") -> LabelWords:
    """``--label-words CLASS=WORD ...`` -> :class:`LabelWords` in the task's class order. Classes are read by
    name (:func:`beluga.model.labels.read_name`: ``not_duplicate`` is ``not duplicate``), each exactly once, never by
    position; the words non-empty and distinct. Anything else: one line naming ``where`` and the field."""
    check_task(ttype, where)
    sets = class_sets(ttype)
    every = tuple(dict.fromkeys(c for s in sets for c in s))
    shown = " or ".join(" ".join(f"{c.replace(' ', '_')}=WORD" for c in s) for s in sets)
    field = f"{where}: field '--label-words'"
    given: dict[str, str] = {}
    for item in items:
        name, eq, word = str(item).partition("=")
        if not eq:
            raise BelugaError(f"{field}: {item!r} is not CLASS=WORD; give {shown}")
        cls = read_name(name, every)
        if cls is None:
            raise BelugaError(f"{field}: {name!r} is not a class of task {ttype.name!r}; give {shown}")
        if cls in given:
            raise BelugaError(f"{field}: class {cls!r} is given twice; give each class once: {shown}")
        if not word.strip():
            raise BelugaError(f"{field}: class {cls!r} has an empty word")
        given[cls] = word
    match = next((s for s in sets if set(s) == set(given)), None)
    if match is None:
        missing = [c for c in min(sets, key=len) if c not in given] or [c for c in every if c not in given]
        raise BelugaError(f"{field}: no word for {', '.join(repr(c) for c in missing)}; give {shown}")
    words = tuple(given[c] for c in match)
    twice = next((w for w in words if words.count(w) > 1), None)
    if twice is not None:
        raise BelugaError(f"{field}: {twice!r} is the word of two classes; the classes could not be told apart")
    return LabelWords(match, words)


def check_prompt(template: str, ttype: TaskType, where: str = "test") -> str:
    """A prompt template (``str.format`` fields; literal braces doubled): ``{text}``, and ``{text_b}`` exactly
    when the task's inputs are pairs; no other field. Returns it, or stops with one line."""
    field = f"{where}: field '--prompt'"
    try:
        specs = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(template) if f is not None]
    except ValueError as e:
        raise BelugaError(f"{field}: {template!r} is not a template ({e}); write literal braces as {{{{ }}}}") from None
    for f, spec, conv in specs:
        if f not in PROMPT_FIELDS or spec or conv:
            raise BelugaError(f"{field}: {{{f}{'!' + conv if conv else ''}{':' + spec if spec else ''}}} is not a "
                              f"field; a template names {{text}} (and {{text_b}} for pair tasks) only")
    names = [f for f, _, _ in specs]
    needs = ["text", "text_b"] if ttype.pair else ["text"]
    missing = [n for n in needs if n not in names]
    if missing:
        raise BelugaError(f"{field}: the template has no {{{missing[0]}}}; task {ttype.name!r} needs "
                          f"{' and '.join('{' + n + '}' for n in needs)}")
    if not ttype.pair and "text_b" in names:
        raise BelugaError(f"{field}: {{text_b}} names a second text, but task {ttype.name!r} has one text per "
                          "input; drop it")
    return template


def fill_prompt(template: str, text: str, text_b: str | None = None) -> str:
    return template.format(text=text, text_b="" if text_b is None else text_b)


def _encode(tokenizer, text: str) -> list[int]:
    """lm-eval HFLM's ``tok_encode``: the tokenizer's own special tokens, none when the text already starts
    with the prefix token's text (BOS, else EOS)."""
    tid = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    prefix = tokenizer.decode([tid]) if tid is not None else ""
    if prefix and text.startswith(prefix):
        return list(tokenizer.encode(text, add_special_tokens=False))
    return list(tokenizer.encode(text))


def encode_pair(tokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """(context tokens, continuation tokens) as lm-evaluation-harness encodes a causal LM's request: trailing
    spaces of the context moved to the front of the continuation, context + continuation encoded whole and the
    continuation's tokens the part after the context's; an empty or blank context is refused."""
    if not context.strip():
        # lm-eval conditions an empty context on its prefix token and chokes on a blank one: refused instead
        raise BelugaError("field '--prompt': a filled prompt is empty or blank (an empty input in a prompt of "
                          "only its fields?); the label words need a context to follow")
    n = len(context) - len(context.rstrip())
    if n:
        context, continuation = context[:-n], context[-n:] + continuation
    whole = _encode(tokenizer, context + continuation)
    ctx = _encode(tokenizer, context)
    return ctx, whole[len(ctx):]


def label_word_pairs(tokenizer, prompts: list[str], words: LabelWords,
                     source: str = "test") -> list[tuple[list[int], list[int]]]:
    """(context tokens, continuation tokens) of each prompt with each label word (:func:`encode_pair`, the
    continuation ``TARGET_DELIMITER + word``; prompt-major: the words of a prompt in the classes' order).
    Two classes whose words are the same continuation tokens after a prompt (the tokenizer's normalisation
    makes ``Good`` and ``good`` one for an uncased model) would get the same log-likelihood for every input:
    refused in one line naming ``source``, ``--label-words`` and both words. Words that share their first
    tokens only differ in the rest and are kept; a word of no tokens is left to :func:`continuation_logliks`."""
    k = len(words.words)
    pairs = [encode_pair(tokenizer, p, TARGET_DELIMITER + w) for p in prompts for w in words.words]
    for s in range(0, len(pairs), k):
        conts = [pairs[s + j][1] for j in range(k)]
        for j in range(1, k):
            i = next((i for i in range(j) if conts[j] and conts[i] == conts[j]), None)
            if i is not None:
                raise ConfigError(
                    f"{source}: field '--label-words': {words.classes[i]}={words.words[i]!r} and "
                    f"{words.classes[j]}={words.words[j]!r} are the same tokens {conts[j]} after the prompt with "
                    "this model's tokenizer; the classes could not be told apart (every input would get equal "
                    "probabilities): give words the tokenizer tells apart")
    return pairs


def check_distinct_continuations(tokenizer, words: LabelWords, template: str, cases: pd.DataFrame,
                                 source: str = "test") -> None:
    """Before anything is predicted: the label words are distinct continuations (:func:`label_word_pairs`)
    after the prompt of the first input of ``cases`` (``template`` filled); :func:`label_word_probs` checks
    every prompt again as it scores it (a continuation's tokens may depend on the context before it)."""
    prompts = case_prompts(cases.iloc[:1], template)[1][:1]
    label_word_pairs(tokenizer, prompts, words, source)


def case_prompts(cases: pd.DataFrame, template: str) -> tuple[list[tuple], list[str]]:
    """((case_id, input_idx) of every input of ``cases``, its filled prompt), in order."""
    keys, prompts = [], []
    for r in cases.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            keys.append((r.case_id, j))
            b = r.inputs_b[j] if r.inputs_b is not None and not isinstance(r.inputs_b, float) else None
            prompts.append(fill_prompt(template, t, b))
    return keys, prompts


def pad_id(tokenizer) -> int:
    """The id padded positions hold (masked out, never read): the pad token, else EOS (as transformers users
    set pad := eos for GPT-2-style tokenizers), else 0."""
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


def continuation_logliks(model, tokenizer, pairs: list[tuple[list[int], list[int]]], batch_size: int,
                         max_length: int, precision, on_batch: Callable[[int], None] | None = None,
                         truncated: list | None = None, source: str = "test") -> np.ndarray:
    """The summed log-likelihood of each pair's continuation tokens given its context tokens (float64, in
    order). The model reads ``(context + continuation)[:-1]`` left-truncated to ``max_length`` tokens (as
    lm-eval does with its maximum length); batched by length, padded on the right whatever the tokenizer's
    padding side (as lm-eval pads causal LMs: a model without ``position_ids`` would otherwise see its
    positions shifted by the batch's padding), with an attention mask and position ids; forward passes under
    ``precision``'s autocast, log-softmax in float32, the continuation's log-probabilities picked on the
    device. ``on_batch``: called with the pairs done. ``truncated`` (a list, if
    given): gets the indices of the pairs whose tokens were left-truncated."""
    import torch

    out = np.zeros(len(pairs), dtype=np.float64)
    seqs = []
    for i, (ctx, cont) in enumerate(pairs):
        if not cont:
            raise BelugaError(f"{source}: field '--label-words': a label word encodes to no token after the prompt")
        if len(cont) > max_length:
            raise BelugaError(f"{source}: field '--max-length': a label word is {len(cont)} tokens after the prompt, "
                              f"more than --max-length {max_length}")
        seqs.append((ctx + cont)[-(max_length + 1):][:-1])
        if truncated is not None and len(ctx) + len(cont) > max_length + 1:
            truncated.append(i)
    takes_positions = "position_ids" in inspect.signature(model.forward).parameters
    filler = pad_id(tokenizer)
    device = next(model.parameters()).device
    order = sorted(range(len(pairs)), key=lambda i: len(seqs[i]))
    model.eval()
    with torch.inference_mode():
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            width = max(len(seqs[i]) for i in idx)
            ids = torch.full((len(idx), width), filler, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for r, i in enumerate(idx):
                n = len(seqs[i])
                ids[r, :n] = torch.tensor(seqs[i], dtype=torch.long)
                mask[r, :n] = 1
            kwargs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
            if takes_positions:
                kwargs["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0).to(device)
            with precision.autocast():
                logits = model(**kwargs).logits
            logp = torch.log_softmax(logits.float(), dim=-1)
            for r, i in enumerate(idx):
                cont = pairs[i][1]
                n, k = len(seqs[i]), len(cont)
                rows = logp[r, n - k:n]                         # position j predicts token j + 1
                out[i] = float(rows.gather(-1, torch.tensor(cont, device=rows.device).unsqueeze(-1)).sum())
            if on_batch is not None:
                on_batch(min(len(order), s + batch_size))
    return out


def softmax_rows(logliks: np.ndarray) -> np.ndarray:
    """The softmax of each row of summed log-likelihoods (float64)."""
    x = np.asarray(logliks, dtype=np.float64)
    x = x - x.max(axis=1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=1, keepdims=True)


def label_word_probs(model, tokenizer, prompts: list[str], words: LabelWords, batch_size: int = 16,
                     max_length: int = 256, precision=None, truncated: list | None = None,
                     source: str = "test") -> np.ndarray:
    """(n, classes) probabilities of the filled ``prompts``: the softmax over the classes of each label word's
    summed log-likelihood as the continuation ``TARGET_DELIMITER + word`` (``truncated``: gets the pairs
    left-truncated to ``max_length``, :func:`continuation_logliks`). Two words that are the same tokens after a
    prompt are refused before any forward pass (:func:`label_word_pairs`)."""
    from beluga.model.precision import FP32

    pairs = label_word_pairs(tokenizer, prompts, words, source)
    ll = continuation_logliks(model, tokenizer, pairs, batch_size, max_length, precision or FP32,
                              truncated=truncated, source=source)
    return softmax_rows(ll.reshape(len(prompts), len(words.words)))


def suite_label_word_predictions(model, tokenizer, cases: pd.DataFrame, template: str, words: LabelWords, split: str,
                                 batch_size: int, max_length: int, precision, *, chunk_cases: int | None = None,
                                 on_chunk: Callable[[int], None] | None = None, source: str = "test") -> pd.DataFrame:
    """Predictions for every input of ``cases`` (as :func:`beluga.score.predict.suite_predictions` writes them:
    split, case_id, input_idx, probs in the task's class order; ``source`` names the model in messages),
    ``chunk_cases`` cases at a time with
    ``on_chunk`` called with the cases done (a progress bar). ``attrs["truncated_inputs"]``: the inputs whose
    prompt and a label word were more than ``max_length`` tokens (their first tokens dropped, as lm-eval does).
    """
    step = chunk_cases or max(1, len(cases))
    parts, cut = [], 0
    for start in range(0, len(cases), step):
        part = cases.iloc[start:start + step]
        keys, prompts = case_prompts(part, template)
        truncated: list[int] = []
        probs = label_word_probs(model, tokenizer, prompts, words, batch_size, max_length, precision, truncated,
                                 source)
        cut += len({i // len(words.words) for i in truncated})
        parts.append(pd.DataFrame({"split": split, "case_id": [k[0] for k in keys],
                                   "input_idx": [k[1] for k in keys], "probs": [row.tolist() for row in probs]}))
        if on_chunk is not None:
            on_chunk(min(len(cases), start + step))
    out = (pd.concat(parts, ignore_index=True) if parts
           else pd.DataFrame({"split": [], "case_id": [], "input_idx": [], "probs": []}))
    out.attrs["truncated_inputs"] = cut
    return out


def load_causal_lm(path: str, name: str, max_length: int | None = None):
    """(model, tokenizer) of a causal LM folder (safetensors only), refused in one line as
    :func:`beluga.model.modeling.load_trained` refuses any model (no weights, no tokenizer, a missing LM head)."""
    from beluga.model.modeling import load_trained

    return load_trained(path, "causal_lm", max_length=max_length, max_length_field="--max-length", name=name)


# ---------------------------------------------------------------- the default --max-length of a causal LM

#: lm-evaluation-harness's length (its HFLM ``_DEFAULT_MAX_LENGTH``) when neither the model's config nor its
#: tokenizer gives one
FALLBACK_CONTEXT = 2048
#: the config.json keys of a decoder's context length, in lm-evaluation-harness's order (HFLM ``max_length``)
CONTEXT_KEYS = ("n_positions", "max_position_embeddings", "n_ctx")
#: a tokenizer's ``model_max_length`` at or above this is transformers' "no limit" placeholder (int(1e30)), not a
#: length
SANE_MODEL_MAX_LENGTH = 1_000_000
#: the share of the device's free memory one batch's log-probabilities and attention scores may take
MEMORY_SHARE = 0.5
#: the least --max-length (the parser's minimum): a cap never goes below it
MIN_MAX_LENGTH = 8


@dataclass(frozen=True)
class DefaultLength:
    """A causal LM's default ``--max-length``: ``tokens`` (what is used), the model's ``context`` and where it
    comes from (``how``), and ``capped``: why memory lowered it (empty when it did not)."""

    tokens: int
    context: int
    how: str
    capped: str = ""

    def line(self, model: str) -> str:
        """What the terminal says about it."""
        head = f"model {model}: --max-length {self.tokens}"
        if self.capped:
            return f"{head}, capped by memory: {self.capped}"
        return f"{head}, the model's context ({self.how})"

    def record(self) -> dict:
        return {"tokens": self.tokens, "context": self.context, "context_from": self.how,
                "capped": self.capped or None}


def context_length(config: dict, tokenizer) -> tuple[int, str]:
    """(a causal LM's context length, where it comes from), as lm-evaluation-harness reads it: config.json's
    ``n_positions`` / ``max_position_embeddings`` / ``n_ctx`` (the first set), else the tokenizer's
    ``model_max_length`` when it is a length (below :data:`SANE_MODEL_MAX_LENGTH`; transformers writes int(1e30)
    for "none"), else :data:`FALLBACK_CONTEXT`."""
    for key in CONTEXT_KEYS:
        n = config.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n, f"config.json {key} {n}"
    m = getattr(tokenizer, "model_max_length", None)
    if isinstance(m, int) and not isinstance(m, bool) and 0 < m < SANE_MODEL_MAX_LENGTH:
        return m, f"the tokenizer's model_max_length {m}"
    return FALLBACK_CONTEXT, (f"neither config.json ({', '.join(CONTEXT_KEYS)}) nor the tokenizer's "
                              f"model_max_length gives one: lm-evaluation-harness's default {FALLBACK_CONTEXT}")


def batch_bytes(batch: int, length: int, vocab: int, heads: int) -> int:
    """Bytes one forward batch of :func:`continuation_logliks` holds at ``length`` tokens, as estimated: the
    float32 logits and their log-softmax (2 x batch x length x vocabulary x 4 bytes) and one layer's float32
    attention scores (batch x heads x length² x 4 bytes). The weights and the other activations are not counted."""
    return 4 * batch * length * (2 * vocab + heads * length)


def free_memory(device) -> int | None:
    """Free bytes on ``device`` (a torch device): CUDA's ``mem_get_info``, else the host's free physical memory
    (``SC_AVPHYS_PAGES`` pages); None when it cannot be read."""
    import torch

    try:
        if getattr(device, "type", str(device)) == "cuda":
            return int(torch.cuda.mem_get_info(device)[0])
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError, RuntimeError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def default_max_length(config: dict, tokenizer, batch_size: int, free: int | None, device_name: str = "the device",
                       share: float = MEMORY_SHARE) -> DefaultLength:
    """A causal LM's default ``--max-length``: its context length (:func:`context_length`), lowered to the
    longest length whose batch (:func:`batch_bytes`, ``batch_size`` inputs, the config's vocabulary and attention
    heads) fits in ``share`` of the ``free`` bytes, never below :data:`MIN_MAX_LENGTH`; ``free`` None: not
    capped (the free memory could not be read)."""
    context, how = context_length(config, tokenizer)
    if free is None:
        return DefaultLength(context, context, how)
    vocab = next((int(config[k]) for k in ("vocab_size", "padded_vocab_size") if isinstance(config.get(k), int)),
                 None) or len(tokenizer)
    heads = next((int(config[k]) for k in ("num_attention_heads", "n_head") if isinstance(config.get(k), int)), 0)
    budget = share * free
    if batch_bytes(batch_size, context, vocab, heads) <= budget:
        return DefaultLength(context, context, how)
    lo, hi = MIN_MAX_LENGTH, context            # the longest length that fits: bytes grow with the length
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if batch_bytes(batch_size, mid, vocab, heads) <= budget else (lo, mid - 1)
    need = batch_bytes(batch_size, context, vocab, heads)
    why = (f"the model's context is {context} tokens ({how}), but a batch of {batch_size} inputs that long holds "
           f"about {_gib(need)} of float32 log-probabilities and attention scores, more than {share:.0%} of the "
           f"{_gib(free)} free on {device_name}; an input longer than {lo} tokens loses its first tokens (give "
           "--max-length, or a smaller --batch-size for a longer default)")
    return DefaultLength(lo, context, how, why)
