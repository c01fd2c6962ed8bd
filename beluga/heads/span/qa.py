"""READ (extractive QA): SQuAD metrics, feature building, span targets,
the per-feature MFT and per-pair INV losses, INV alignment, decoding and
batched prediction. READ's training batches (the per-fold cache of inputs and
the per-example batch losses) are in :mod:`beluga.heads.span.batches`.

Conventions
- Inputs are (question, context) pairs, tokenized question first and context
  second with ``truncation="only_second"`` (the question is never cut); long
  contexts overflow into several *features* (windows) overlapping by
  ``stride`` tokens, as in the Hugging Face question-answering examples.
- Position 0 ([CLS]) is the "answer not in this window" target (the first
  token after the padding for a tokenizer that pads on the left: XLNet's).
- Losses return one value per feature / pair (a 1-D tensor), like
  :mod:`beluga.train.losses`, so that methods can weight or group them
  (:mod:`beluga.heads.span.batches` averages the features of each example).

INV alignment (docs/PROCEDURE.md, §3.5): the original and the perturbed input have
different token sequences, so their start / end distributions live on
different positions. We pair positions with ``difflib.SequenceMatcher
(autojunk=False).get_matching_blocks()`` on the token ids: it finds the
longest matching block, then recurses left and right of it, so the pairs are
monotone (order-preserving) and one-to-one, and a token that was substituted,
inserted or deleted is simply left out. ``autojunk=False`` because the
heuristic would otherwise treat frequent tokens (``the``, ``,``) in sequences of
200+ tokens as junk and break blocks apart. By default only *context* tokens
are aligned (the answer can only lie in the context, and the question tokens,
[CLS] and [SEP] are not answer candidates);
:func:`beluga.heads.span.batches.qa_inv_batch_loss` offers ``scope="sequence"`` to
align the whole sequences minus padding instead.

The reference objective of model selection (``selection.objective:
reference``, beluga/train/selection.py) reads logits, not answers:
:func:`span_argmax_hits` (start / end token accuracy) and
:func:`aligned_argmax_agreement` (INV argmax agreement on the reference
code's alignment, :func:`reference_alignment`).
"""

from __future__ import annotations

import collections
import difflib
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from beluga.core.errors import ConfigError, DataError
from beluga.model.precision import FP32, Precision
from beluga.model.transfer import to_device

# --------------------------------------------------------------------------- metrics

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def squad_normalize(s: str) -> str:
    """Official SQuAD v1.1 normalization: lower case, drop punctuation, drop the
    articles a / an / the, collapse whitespace (same order as the official script)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _em_one(pred: str, gold: str) -> float:
    return float(squad_normalize(pred) == squad_normalize(gold))


def _f1_one(pred: str, gold: str) -> float:
    p, g = squad_normalize(pred).split(), squad_normalize(gold).split()
    common = collections.Counter(p) & collections.Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _golds(golds: str | Sequence[str]) -> list[str]:
    golds = [golds] if isinstance(golds, str) else list(golds)
    if not golds:
        raise ValueError("at least one gold answer is needed")
    return golds


def exact_match(pred: str, golds: str | Sequence[str]) -> float:
    """1.0 if the normalized prediction equals any normalized gold answer, else 0.0."""
    return max(_em_one(pred, g) for g in _golds(golds))


def f1_score(pred: str, golds: str | Sequence[str]) -> float:
    """Token-level F1 on normalized answers (bag of tokens), max over the gold answers."""
    return max(_f1_one(pred, g) for g in _golds(golds))


def squad_metrics(preds: dict[str, str], golds: dict[str, Sequence[str]]) -> dict[str, float]:
    """Mean EM and F1 in [0, 1] over every id of ``golds`` (NaN when empty); a missing
    prediction counts as "" (the official script counts it as wrong too)."""
    if not golds:
        return {"em": float("nan"), "f1": float("nan")}
    em = [exact_match(preds.get(k, ""), g) for k, g in golds.items()]
    f1 = [f1_score(preds.get(k, ""), g) for k, g in golds.items()]
    return {"em": float(np.mean(em)), "f1": float(np.mean(f1))}


# --------------------------------------------------------------------------- features


@dataclass
class QAFeatures:
    """Tokenized (question, context) windows.

    ``example_idx[f]`` is the input example of feature f; ``offsets[f][t]`` is
    the (start_char, end_char) of token t in that example's context, or None
    for question / special / padding tokens; ``context_mask`` is True on
    context tokens."""

    input_ids: torch.Tensor          # [F, L]
    attention_mask: torch.Tensor     # [F, L]
    token_type_ids: torch.Tensor | None
    example_idx: torch.Tensor        # [F] long
    offsets: list[list[tuple[int, int] | None]]
    context_mask: torch.Tensor       # [F, L] bool

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def model_inputs(self, idx: slice | Sequence[int] | None = None, device=None) -> dict[str, torch.Tensor]:
        """Keyword arguments for the model (optionally a subset of features, on ``device``)."""
        out = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.token_type_ids is not None:
            out["token_type_ids"] = self.token_type_ids
        if idx is not None:
            out = {k: v[idx] for k, v in out.items()}
        if device is not None:
            out = {k: v.to(device) for k, v in out.items()}
        return out


def check_budget(tokenizer, questions: Sequence[str], max_length: int, stride: int) -> None:
    """The tokenizers backend panics (a BaseException) when the question leaves no
    room for the context or the stride does not fit the context window; fail
    first with a clear message instead."""
    if not questions:
        return
    q_lens = [len(x) for x in tokenizer(list(questions), add_special_tokens=False)["input_ids"]]
    i = int(np.argmax(q_lens))
    budget = max_length - q_lens[i] - tokenizer.num_special_tokens_to_add(pair=True)
    if budget <= 0:
        raise ConfigError(f"QA encoding: field 'max_length': {max_length} leaves no room for the context "
                          f"after question {i} ({q_lens[i]} tokens: {questions[i][:60]!r})")
    if stride >= budget:
        raise ConfigError(f"QA encoding: field 'stride': {stride} must be smaller than the context window of "
                          f"{budget} tokens (max_length {max_length} minus question {i} of {q_lens[i]} tokens "
                          "and the special tokens)")


def encode_qa(tokenizer, questions: Sequence[str], contexts: Sequence[str], max_length: int = 384,
              stride: int = 128, padding: bool | str = True, overflow: bool = True) -> QAFeatures:
    """Tokenize (question, context) pairs into features (HF QA-example style).

    ``overflow=False`` keeps only the first window of each example (one feature
    per example, used for INV pairs). Leading whitespace of questions is
    stripped (it can make the question eat the context's budget)."""
    if len(questions) != len(contexts):
        raise ValueError(f"encode_qa: {len(questions)} questions but {len(contexts)} contexts")
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError("encode_qa needs a fast tokenizer (offset mappings)")
    questions = [q.lstrip() for q in questions]
    check_budget(tokenizer, questions, max_length, stride if overflow else 0)
    enc = tokenizer(questions, list(contexts), truncation="only_second",
                    max_length=max_length, stride=stride if overflow else 0,
                    return_overflowing_tokens=overflow, return_offsets_mapping=True,
                    padding=padding, return_tensors="pt")
    n = enc["input_ids"].shape[0]
    if overflow:
        example_idx = enc["overflow_to_sample_mapping"].long()
    else:
        example_idx = torch.arange(n, dtype=torch.long)
    offsets: list[list[tuple[int, int] | None]] = []
    ctx = torch.zeros(enc["input_ids"].shape, dtype=torch.bool)
    raw = enc["offset_mapping"].tolist()
    for f in range(n):
        seq = enc.sequence_ids(f)
        row = []
        for t, (sid, off) in enumerate(zip(seq, raw[f])):
            if sid == 1:
                row.append((int(off[0]), int(off[1])))
                ctx[f, t] = True
            else:
                row.append(None)
        offsets.append(row)
    return QAFeatures(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                      token_type_ids=enc.get("token_type_ids"), example_idx=example_idx,
                      offsets=offsets, context_mask=ctx)


# --------------------------------------------------------------------------- targets and losses


ANSWER_MATCHES = ("token", "substring")


def locate_answer(context: str, answer: str, match: str = "token") -> int:
    """Character start of ``answer`` in ``context`` (-1 when it does not occur).

    ``token`` (default): the first occurrence that is a whole-token match, i.e.
    not glued to a word character on either side ("Daniel" in "Danielle is
    wiser than Daniel." is the last word, not the start of "Danielle"); when
    the answer only occurs inside longer words, its first occurrence.
    ``substring``: the first occurrence, as the reference code's
    ``context.find(label)`` (docs/DEVIATIONS.md)."""
    if match not in ANSWER_MATCHES:
        raise ValueError(f"answer match must be one of {ANSWER_MATCHES}, got {match!r}")
    first = context.find(answer)
    if first < 0 or match == "substring":
        return first
    pattern = (r"(?<!\w)" if re.match(r"\w", answer) else "") + re.escape(answer) + \
        (r"(?!\w)" if re.search(r"\w$", answer) else "")
    whole = re.search(pattern, context)
    return whole.start() if whole else first


def answer_char_span(context: str, answer: str, answer_start: int | None = None,
                     where: str = "example", match: str = "token") -> tuple[int, int]:
    """(start_char, end_char) of ``answer`` in ``context``: at ``answer_start``
    (checked), or located by :func:`locate_answer` when no start is given."""
    if not answer:
        raise DataError(f"QA {where}: field 'answer': empty answer string")
    if answer_start is None or (isinstance(answer_start, float) and np.isnan(answer_start)):
        start = locate_answer(context, answer, match)
        if start < 0:
            raise DataError(f"QA {where}: field 'answer': {answer!r} does not occur in the context "
                            f"{context[:80]!r}...")
        return start, start + len(answer)
    start = int(answer_start)
    if context[start:start + len(answer)] != answer:
        raise DataError(f"QA {where}: field 'answer_start': {start} does not point at the answer "
                        f"{answer!r} in the context")
    return start, start + len(answer)


def span_targets(features: QAFeatures, contexts: Sequence[str], answers: Sequence[str],
                 answer_starts: Sequence[int | None] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Start / end token targets per feature (LongTensors [F]).

    The answer's character span comes from ``answer_starts`` (checked against
    the text) or, when a start is None / not given, from the answer's first
    whole-token occurrence in the context (:func:`locate_answer`; a clear
    :class:`DataError` if absent). The
    start target is the last context token starting at or before the span's
    first character, the end target the first context token ending at or
    after its last character; a feature whose window does not contain the
    whole span gets 0 ([CLS]) for both."""
    n_ex = len(contexts)
    if len(answers) != n_ex or (answer_starts is not None and len(answer_starts) != n_ex):
        raise ValueError("span_targets: contexts, answers and answer_starts must have the same length")
    spans = [answer_char_span(contexts[i], answers[i], None if answer_starts is None else answer_starts[i],
                              where=f"example {i}") for i in range(n_ex)]
    starts = torch.zeros(len(features), dtype=torch.long)
    ends = torch.zeros(len(features), dtype=torch.long)
    first = features.attention_mask.long().argmax(dim=1)   # 0 unless the window is padded on the left
    for f, offs in enumerate(features.offsets):
        starts[f], ends[f] = window_targets(offs, *spans[int(features.example_idx[f])], null=int(first[f]))
    return starts, ends


def window_targets(offs: Sequence[tuple[int, int] | None], s_char: int, e_char: int,
                   null: int = 0) -> tuple[int, int]:
    """Start / end token targets of one window (offsets as
    :attr:`QAFeatures.offsets`) for the answer span [s_char, e_char):
    (``null``, ``null``) when the window does not hold the whole span (0, [CLS]; :func:`span_targets`
    passes the first non-padding position)."""
    toks = [t for t, o in enumerate(offs) if o is not None]
    if not toks or offs[toks[0]][0] > s_char or offs[toks[-1]][1] < e_char:
        return null, null
    return max(t for t in toks if offs[t][0] <= s_char), min(t for t in toks if offs[t][1] >= e_char)


def _mask_logits(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return logits
    return logits.masked_fill(~mask.bool().to(logits.device), torch.finfo(logits.dtype).min)


def qa_mft_loss(start_logits: torch.Tensor, end_logits: torch.Tensor, start_pos: torch.Tensor,
                end_pos: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per-feature span loss (CE(start) + CE(end)) / 2, as BertForQuestionAnswering.
    ``mask`` (e.g. the attention mask) optionally excludes positions (padding)
    from the softmax; by default every position counts, as in the HF model."""
    ls = F.cross_entropy(_mask_logits(start_logits, mask), start_pos.to(start_logits.device), reduction="none")
    le = F.cross_entropy(_mask_logits(end_logits, mask), end_pos.to(end_logits.device), reduction="none")
    return (ls + le) / 2


def aligned_positions(ids_a: Sequence[int] | torch.Tensor, ids_b: Sequence[int] | torch.Tensor,
                      mask_a: Sequence[bool] | torch.Tensor | None = None,
                      mask_b: Sequence[bool] | torch.Tensor | None = None) -> list[tuple[int, int]]:
    """Pairs (i, j) of positions with ids_a[i] == ids_b[j] that
    ``difflib.SequenceMatcher(autojunk=False).get_matching_blocks()`` matches
    between the masked subsequences (positions where the mask is True; all
    positions when a mask is None). Positions index the full sequences."""
    def _keep(ids, mask):
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if mask is None:
            return list(range(len(ids))), ids
        mask = mask.tolist() if isinstance(mask, torch.Tensor) else list(mask)
        pos = [i for i, m in enumerate(mask) if m]
        return pos, [ids[i] for i in pos]

    pos_a, seq_a = _keep(ids_a, mask_a)
    pos_b, seq_b = _keep(ids_b, mask_b)
    sm = difflib.SequenceMatcher(a=seq_a, b=seq_b, autojunk=False)
    return [(pos_a[blk.a + k], pos_b[blk.b + k]) for blk in sm.get_matching_blocks() for k in range(blk.size)]


def pair_index(pairs: Sequence[Sequence[tuple[int, int]]], device, k: int | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(ia, ib, valid), [rows, k]: the aligned positions of each row, left-aligned, invalid columns 0 / False;
    ``k`` (at least the longest row's pairs, default it) the columns."""
    longest = max(max((len(p) for p in pairs), default=0), 1)
    if k is not None and k < longest:
        raise ValueError(f"pair_index: {k} columns cannot hold a row of {longest} aligned positions")
    k = longest if k is None else k
    ia = torch.zeros(len(pairs), k, dtype=torch.long)
    ib = torch.zeros(len(pairs), k, dtype=torch.long)
    valid = torch.zeros(len(pairs), k, dtype=torch.bool)
    for r, p in enumerate(pairs):
        if p:
            t = torch.as_tensor(p, dtype=torch.long)
            ia[r, :len(p)], ib[r, :len(p)] = t[:, 0], t[:, 1]
            valid[r, :len(p)] = True
    return to_device(ia, device), to_device(ib, device), to_device(valid, device)


def _restricted_ce(orig: torch.Tensor, pert: torch.Tensor, ia, ib, valid, detach_orig: bool) -> torch.Tensor:
    neg = torch.finfo(orig.dtype).min
    lo = orig.gather(1, ia).masked_fill(~valid, neg)
    lp = pert.gather(1, ib).masked_fill(~valid, neg)
    p0 = F.softmax(lo, dim=-1)
    if detach_orig:
        p0 = p0.detach()
    logq = F.log_softmax(lp, dim=-1).masked_fill(~valid, 0.0)
    return -(p0 * logq * valid).sum(-1)


def qa_inv_loss(orig_start: torch.Tensor, orig_end: torch.Tensor, pert_start: torch.Tensor,
                pert_end: torch.Tensor, pairs: Sequence[Sequence[tuple[int, int]]],
                detach_orig: bool = False) -> torch.Tensor:
    """Per-pair INV loss for READ.

    ``pairs[r]`` lists the aligned positions (i in the original, j in the
    perturbation) of row r (see :func:`aligned_positions`). For start and for
    end, both sides' logits are restricted to the aligned positions and
    renormalized with a softmax over them; the loss is the cross-entropy
    -sum_k p_orig[k] log p_pert[k], averaged over start and end. A row with no
    aligned position has loss 0. The original side is not detached by default
    (ref. code), ``detach_orig=True`` detaches it."""
    if not (orig_start.shape[0] == orig_end.shape[0] == pert_start.shape[0] == pert_end.shape[0] == len(pairs)):
        raise ValueError("qa_inv_loss: logits and pairs must have the same number of rows")
    ia, ib, valid = pair_index(pairs, orig_start.device)
    return qa_inv_loss_indexed(orig_start, orig_end, pert_start, pert_end, ia, ib, valid, detach_orig)


def qa_inv_loss_indexed(orig_start: torch.Tensor, orig_end: torch.Tensor, pert_start: torch.Tensor,
                        pert_end: torch.Tensor, ia: torch.Tensor, ib: torch.Tensor, valid: torch.Tensor,
                        detach_orig: bool = False) -> torch.Tensor:
    """:func:`qa_inv_loss` with the aligned positions as index tensors ([rows, k]: the original's and the
    perturbation's positions, ``valid`` where a pair is; :func:`pair_index`), on the logits' device. Extra
    invalid columns change nothing (their probability is 0), so ``k`` may be padded to a bucket."""
    ls = _restricted_ce(orig_start, pert_start, ia, ib, valid, detach_orig)
    le = _restricted_ce(orig_end, pert_end, ia, ib, valid, detach_orig)
    return (ls + le) / 2


def reference_alignment(orig_ids: Sequence[int], pert_ids: Sequence[int]) -> tuple[list[int], list[int]]:
    """The reference code's INV alignment (``align_inv``): the matching blocks
    of ``difflib.SequenceMatcher()`` (its default ``autojunk``) with the
    perturbation as the first sequence and the original as the second, over
    the whole padded id sequences; the matched positions (original,
    perturbation), then (0, 0) pairs up to the original's length."""
    orig_ids, pert_ids = [int(x) for x in orig_ids], [int(x) for x in pert_ids]
    sm = difflib.SequenceMatcher()
    sm.set_seq2(orig_ids)
    sm.set_seq1(pert_ids)
    blocks = sm.get_matching_blocks()
    pert_idx = [i for b in blocks for i in range(b[0], b[0] + b[2])]
    orig_idx = [i for b in blocks for i in range(b[1], b[1] + b[2])]
    pad = len(orig_ids) - len(orig_idx)
    return orig_idx + [0] * pad, pert_idx + [0] * pad


def aligned_argmax_same(orig_logits, pert_logits, alignment: tuple[list[int], list[int]]) -> bool:
    """Whether the original's and the perturbation's logits, gathered at the
    aligned positions (``alignment``: :func:`reference_alignment`), have
    their argmax (the first maximum) at the same aligned index."""
    io, ip = alignment
    return int(np.asarray(orig_logits)[io].argmax()) == int(np.asarray(pert_logits)[ip].argmax())


# --------------------------------------------------------------------------- decoding


def decode_answers(start_logits: torch.Tensor | np.ndarray, end_logits: torch.Tensor | np.ndarray,
                   features: QAFeatures, contexts: Sequence[str], max_answer_len: int = 30,
                   n_best: int = 20) -> list[tuple[str, int, int]]:
    """Best span per example across its features: the n_best start and end
    context tokens of each feature are paired (start <= end, at most
    ``max_answer_len`` tokens), score = start logit + end logit. Returns
    (answer text sliced from the context, start_char, end_char) per example,
    in example order; ("", 0, 0) when an example has no candidate span."""
    sl = start_logits.detach().float().cpu().numpy() if isinstance(start_logits, torch.Tensor) else start_logits
    el = end_logits.detach().float().cpu().numpy() if isinstance(end_logits, torch.Tensor) else end_logits
    best: list[tuple[float, int, int] | None] = [None] * len(contexts)
    for f, offs in enumerate(features.offsets):
        ex = int(features.example_idx[f])
        ctx = np.array([o is not None for o in offs] + [False] * (sl.shape[1] - len(offs)))
        if not ctx.any():
            continue
        s = np.where(ctx, sl[f], -np.inf)
        e = np.where(ctx, el[f], -np.inf)
        k = min(n_best, int(ctx.sum()))
        s_idx = np.argsort(-s, kind="stable")[:k]
        e_idx = np.argsort(-e, kind="stable")[:k]
        for i in s_idx:
            for j in e_idx:
                if j < i or j - i + 1 > max_answer_len:
                    continue
                score = float(s[i] + e[j])
                if best[ex] is None or score > best[ex][0]:
                    best[ex] = (score, offs[i][0], offs[j][1])
    out = []
    for ex, b in enumerate(best):
        if b is None:
            out.append(("", 0, 0))
        else:
            out.append((contexts[ex][b[1]:b[2]], b[1], b[2]))
    return out


def model_device(model):
    """The device of the model's (first) parameters."""
    return next(model.parameters()).device


def _forward_logits(model, feats: QAFeatures, batch_size: int, precision: Precision) -> tuple[np.ndarray, np.ndarray]:
    dev = model_device(model)
    starts, ends = [], []
    for fs in range(0, len(feats), batch_size):
        with precision.autocast():
            res = model(**feats.model_inputs(slice(fs, fs + batch_size), device=dev))
        starts.append(res.start_logits.float().cpu())
        ends.append(res.end_logits.float().cpu())
    return torch.cat(starts).numpy(), torch.cat(ends).numpy()


@torch.inference_mode()
def predict_qa(model, tokenizer, questions: Sequence[str], contexts: Sequence[str], batch_size: int = 32,
               max_length: int = 384, stride: int = 128, max_answer_len: int = 30,
               n_best: int = 20, precision: Precision = FP32) -> list[tuple[str, int, int]]:
    """Predicted (answer, start_char, end_char) per (question, context), in input order.
    Examples are processed in batches of ``batch_size`` (grouped by length);
    their features go through the model ``batch_size`` at a time (forward
    passes under ``precision``'s autocast, logits decoded in float32)."""
    model.eval()
    n = len(questions)
    if len(contexts) != n:
        raise ValueError(f"predict_qa: {n} questions but {len(contexts)} contexts")
    out: list[tuple[str, int, int] | None] = [None] * n
    order = sorted(range(n), key=lambda i: len(questions[i]) + len(contexts[i]))
    for s in range(0, n, batch_size):
        idx = order[s:s + batch_size]
        qs, cs = [questions[i] for i in idx], [contexts[i] for i in idx]
        feats = encode_qa(tokenizer, qs, cs, max_length=max_length, stride=stride)
        starts, ends = _forward_logits(model, feats, batch_size, precision)
        answers = decode_answers(starts, ends, feats, cs, max_answer_len=max_answer_len, n_best=n_best)
        for i, a in zip(idx, answers):
            out[i] = a
    return out  # type: ignore[return-value]


@torch.inference_mode()
def span_argmax_hits(model, tokenizer, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str],
                     answer_starts: Sequence[int | None], *, max_length: int = 384, stride: int = 128,
                     batch_size: int = 32, precision: Precision = FP32) -> tuple[np.ndarray, np.ndarray]:
    """Per feature (window, in example order): does the argmax of its start
    (end) logits over every position hit its start (end) target? The
    reference code's MFT start / end token accuracy: windows padded to
    ``max_length``, targets from :func:`span_targets` ([CLS] for a window
    without the whole answer), no masking, the first maximum wins."""
    model.eval()
    start_hits, end_hits = [], []
    for s in range(0, len(questions), batch_size):
        cs = list(contexts[s:s + batch_size])
        feats = encode_qa(tokenizer, questions[s:s + batch_size], cs, max_length=max_length, stride=stride,
                          padding="max_length")
        sp, ep = span_targets(feats, cs, answers[s:s + batch_size], answer_starts[s:s + batch_size])
        sl, el = _forward_logits(model, feats, batch_size, precision)
        start_hits.append(sl.argmax(-1) == sp.numpy())
        end_hits.append(el.argmax(-1) == ep.numpy())
    if not start_hits:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
    return np.concatenate(start_hits), np.concatenate(end_hits)


@torch.inference_mode()
def aligned_argmax_agreement(model, tokenizer, orig_questions: Sequence[str], orig_contexts: Sequence[str],
                             pert_questions: Sequence[str], pert_contexts: Sequence[str], *, max_length: int = 384,
                             batch_size: int = 32, precision: Precision = FP32) -> tuple[np.ndarray, np.ndarray]:
    """Per (original, perturbation) pair: do both put the argmax of their
    start (end) logits on the same aligned position? The reference code's
    READ INV metric: each input one window padded to ``max_length``, the
    logits gathered at :func:`reference_alignment`'s positions, the argmax
    (first maximum) of each side compared (its ``|Δ| <= 0.1`` on these
    integer positions is equality)."""
    model.eval()
    n = len(orig_questions)
    if not (len(orig_contexts) == len(pert_questions) == len(pert_contexts) == n):
        raise ValueError("aligned_argmax_agreement: originals and perturbations must have the same length")
    same_start, same_end = [], []
    for s in range(0, n, batch_size):
        fo = encode_qa(tokenizer, orig_questions[s:s + batch_size], orig_contexts[s:s + batch_size],
                       max_length=max_length, padding="max_length", overflow=False)
        fp = encode_qa(tokenizer, pert_questions[s:s + batch_size], pert_contexts[s:s + batch_size],
                       max_length=max_length, padding="max_length", overflow=False)
        so, eo = _forward_logits(model, fo, batch_size, precision)
        sp, ep = _forward_logits(model, fp, batch_size, precision)
        for r in range(len(fo)):
            align = reference_alignment(fo.input_ids[r].tolist(), fp.input_ids[r].tolist())
            same_start.append(aligned_argmax_same(so[r], sp[r], align))
            same_end.append(aligned_argmax_same(eo[r], ep[r], align))
    return np.asarray(same_start, dtype=bool), np.asarray(same_end, dtype=bool)
