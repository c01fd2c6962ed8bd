"""READ's training batches: the per-fold cache of QA inputs (:class:`QAEncoder`:
tokenized windows, span targets and INV alignments) and the per-example MFT /
INV batch losses the training loop calls (:func:`qa_mft_batch_loss`,
:func:`qa_inv_batch_loss`).

Inputs, windows, span targets and the INV alignment follow
:mod:`beluga.heads.span.qa`'s conventions and are built with its functions; the batch
losses return one value per example (MFT: the mean over the example's
windows, :func:`per_example_mean`) or per (original, perturbation) pair
(INV), like :mod:`beluga.train.losses`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from beluga.core.errors import DataError
from beluga.heads.span.qa import (
    aligned_positions,
    answer_char_span,
    check_budget,
    encode_qa,
    locate_answer,
    model_device,
    pair_index,
    qa_inv_loss,
    qa_inv_loss_indexed,
    qa_mft_loss,
    span_targets,
    window_targets,
)
from beluga.model.compiling import bucket_length, bucket_rows, pad_inputs
from beluga.model.precision import FP32, Precision, full
from beluga.model.transfer import model_inputs, to_device
from beluga.train.items import TrainItem
from beluga.train.losses import DummyClassifier, dummy_scaled


def per_example_mean(values: torch.Tensor, example_idx: torch.Tensor, n_examples: int) -> torch.Tensor:
    """Mean of per-feature values over each example's features -> [n_examples].
    The features per example are counted where ``example_idx`` lives (a host
    tensor: no device -> host sync) and copied to ``values``' device."""
    idx = to_device(example_idx, values.device)
    sums = torch.zeros(n_examples, dtype=values.dtype, device=values.device).index_add(0, idx, values)
    counts = torch.bincount(example_idx, minlength=n_examples).clamp(min=1).to(values.dtype)
    return sums / to_device(counts, values.device)


@dataclass
class _Window:
    """One window of a tokenized (question, context) input, unpadded."""

    input_ids: list[int]
    token_type_ids: list[int] | None
    offsets: list[tuple[int, int] | None]   # as QAFeatures.offsets
    context: list[bool]                     # context tokens


class QAEncoder:
    """A fold's (question, context) training inputs tokenized once before the
    first epoch (:meth:`add`), with their span targets and INV alignments, and
    the batches of :func:`qa_mft_batch_loss` / :func:`qa_inv_batch_loss`
    built from them: the tensors :func:`encode_qa` returns (``padding=True``),
    the targets of :func:`span_targets` and the pairs of
    :func:`aligned_positions`, bit for bit. Needs a fast tokenizer that pads
    on the right (:meth:`supports`). Inputs it has not seen are tokenized
    (targets located, pairs aligned) when first met, and kept."""

    def __init__(self, tokenizer, max_length: int, stride: int, scope: str = "context"):
        if not self.supports(tokenizer):
            raise ValueError("QAEncoder needs a fast tokenizer that pads on the right")
        if scope not in ("context", "sequence"):
            raise ValueError(f"QAEncoder: scope must be 'context' or 'sequence', got {scope!r}")
        self.tokenizer, self.max_length, self.stride, self.scope = tokenizer, max_length, stride, scope
        self.windows: dict[tuple[str, str, bool], list[_Window]] = {}   # (question, context, overflow)
        self.targets: dict[tuple, list[tuple[int, int]]] = {}           # (question, context, answer, start)
        self.pairs: dict[tuple[str, str, str, str], list[tuple[int, int]]] = {}
        self.pad = (tokenizer.pad_token_id, tokenizer.pad_token_type_id)

    @staticmethod
    def supports(tokenizer) -> bool:
        return bool(getattr(tokenizer, "is_fast", False)) and tokenizer.padding_side == "right"

    def _tokenize(self, keys: list[tuple[str, str]], overflow: bool) -> None:
        keys = [k for k in dict.fromkeys(keys) if (*k, overflow) not in self.windows]
        stride = self.stride if overflow else 0
        for s in range(0, len(keys), 1024):
            chunk = keys[s:s + 1024]
            questions = [q.lstrip() for q, _ in chunk]
            check_budget(self.tokenizer, questions, self.max_length, stride)
            enc = self.tokenizer(questions, [c for _, c in chunk], truncation="only_second",
                                 max_length=self.max_length, stride=stride, return_overflowing_tokens=overflow,
                                 return_offsets_mapping=True)
            rows: list[list[_Window]] = [[] for _ in chunk]
            sample = enc["overflow_to_sample_mapping"] if overflow else range(len(chunk))
            for f, i in enumerate(sample):
                seq = enc.sequence_ids(f)
                offs = [(int(o[0]), int(o[1])) if sid == 1 else None for sid, o in zip(seq, enc["offset_mapping"][f])]
                rows[i].append(_Window(enc["input_ids"][f], enc["token_type_ids"][f] if "token_type_ids" in enc else
                                       None, offs, [sid == 1 for sid in seq]))
            for k, r in zip(chunk, rows):
                self.windows[(*k, overflow)] = r

    def _targets(self, key: tuple, where: str) -> list[tuple[int, int]]:
        if key not in self.targets:
            q, c, answer, start = key
            span = answer_char_span(c, answer, start, where=where)
            self.targets[key] = [window_targets(w.offsets, *span) for w in self.windows[(q, c, True)]]
        return self.targets[key]

    def _pairs(self, key: tuple[str, str, str, str]) -> list[tuple[int, int]]:
        if key not in self.pairs:
            (wa,), (wb,) = self.windows[(*key[:2], False)], self.windows[(*key[2:], False)]
            ma, mb = ((wa.context, wb.context) if self.scope == "context" else
                      ([True] * len(wa.input_ids), [True] * len(wb.input_ids)))
            self.pairs[key] = aligned_positions(wa.input_ids, wb.input_ids, ma, mb)
        return self.pairs[key]

    def add(self, streams: dict) -> None:
        """Tokenize the QA items of the training streams (name -> items, as
        :func:`beluga.train.streams.build_streams` gives them) once: every window
        of the MFT / i.i.d. inputs with their span targets, the first window
        of every INV input, and the alignment of every INV original with each
        of its perturbations."""
        mft, inv = [], []
        for name, items in streams.items():
            for it in items:
                if it.qa and name in ("iid", "MFT"):
                    mft.append(it)
                elif it.qa and name == "INV":
                    inv.append(it)
        self._tokenize([(it.inputs_b[0], it.inputs[0]) for it in mft], True)
        for i, it in enumerate(mft):
            self._targets((it.inputs_b[0], it.inputs[0], it.answer, it.answer_start), f"example {i}")
        self._tokenize([(q, c) for it in inv for q, c in zip(it.inputs_b, it.inputs)], False)
        for it in inv:
            for j in range(1, len(it.inputs)):
                self._pairs((it.inputs_b[0], it.inputs[0], it.inputs_b[j], it.inputs[j]))

    def _batch(self, rows: list[_Window]) -> dict[str, torch.Tensor]:
        """Padded model inputs of ``rows``, as the tokenizer pads a batch."""
        longest = max(len(r.input_ids) for r in rows)
        pad_id, pad_type = self.pad
        out = {"input_ids": torch.tensor([r.input_ids + [pad_id] * (longest - len(r.input_ids)) for r in rows],
                                         dtype=torch.long),
               "attention_mask": torch.tensor([[1] * len(r.input_ids) + [0] * (longest - len(r.input_ids))
                                               for r in rows], dtype=torch.long)}
        if rows[0].token_type_ids is not None:
            out["token_type_ids"] = torch.tensor([r.token_type_ids + [pad_type] * (longest - len(r.input_ids))
                                                  for r in rows], dtype=torch.long)
        return out

    def mft(self, questions: Sequence[str], contexts: Sequence[str], answers: Sequence[str],
            answer_starts: Sequence[int | None] | None) -> tuple[dict[str, torch.Tensor], torch.Tensor,
                                                                 torch.Tensor, torch.Tensor]:
        """Host tensors of an MFT batch: the model inputs of every window, the
        example of each window, and the start / end targets."""
        n = len(questions)
        if len(contexts) != n or len(answers) != n or (answer_starts is not None and len(answer_starts) != n):
            raise ValueError("QAEncoder.mft: questions, contexts, answers and answer_starts must have the same "
                             "length")
        self._tokenize(list(zip(questions, contexts)), True)
        rows, idx, targets = [], [], []
        for i, (q, c) in enumerate(zip(questions, contexts)):
            start = None if answer_starts is None else answer_starts[i]
            rows += self.windows[(q, c, True)]
            targets += self._targets((q, c, answers[i], start), f"example {i}")
            idx += [i] * len(self.windows[(q, c, True)])
        return (self._batch(rows), torch.tensor(idx, dtype=torch.long),
                torch.tensor([t[0] for t in targets], dtype=torch.long),
                torch.tensor([t[1] for t in targets], dtype=torch.long))

    def inv(self, orig_questions: Sequence[str], orig_contexts: Sequence[str], pert_questions: Sequence[str],
            pert_contexts: Sequence[str]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor],
                                                   list[list[tuple[int, int]]]]:
        """Host tensors of an INV batch: the originals' and the perturbations'
        model inputs (first window) and the aligned positions of each pair."""
        orig, pert = list(zip(orig_questions, orig_contexts)), list(zip(pert_questions, pert_contexts))
        self._tokenize(orig + pert, False)
        pairs = [self._pairs((*o, *p)) for o, p in zip(orig, pert)]
        return (self._batch([self.windows[(*k, False)][0] for k in orig]),
                self._batch([self.windows[(*k, False)][0] for k in pert]), pairs)


def _scaled(logits: torch.Tensor, scale: torch.Tensor | float | DummyClassifier | None,
            target: bool = False) -> torch.Tensor:
    """float32 logits (forward passes may run under bf16 autocast), times IRM's
    dummy ``scale`` if given (:func:`beluga.train.losses.dummy_scaled`)."""
    return dummy_scaled(full(logits), scale, target=target)


def qa_mft_batch_loss(model, tokenizer, questions: Sequence[str], contexts: Sequence[str],
                      answers: Sequence[str], answer_starts: Sequence[int | None] | None = None,
                      max_length: int = 384, stride: int = 128, mask_padding: bool = False,
                      scale: torch.Tensor | float | DummyClassifier | None = None,
                      precision: Precision = FP32, encoder: QAEncoder | None = None) -> torch.Tensor:
    """Per-example MFT / i.i.d. span loss (with gradients): every window of an
    example is trained (windows without the answer target [CLS]) and its
    features' losses are averaged, so each example weighs the same.
    ``scale`` (optional, e.g. IRM's dummy classifier scale) multiplies the
    start and end logits before the softmaxes. ``encoder`` (optional): the
    windows and targets come from its cache (the same tensors) and reach the
    device without a host sync (:func:`beluga.model.transfer.model_inputs`);
    ``max_length`` and ``stride`` are then the encoder's."""
    if encoder is not None:
        inputs, example_idx, sp, ep = encoder.mft(questions, contexts, answers, answer_starts)
        dev = model_device(model)
        with precision.autocast():
            res = model(**model_inputs(model, inputs, dev))
        start, end = _scaled(res.start_logits, scale), _scaled(res.end_logits, scale)
        loss = qa_mft_loss(start, end, to_device(sp, dev), to_device(ep, dev),
                           mask=to_device(inputs["attention_mask"], dev) if mask_padding else None)
        return per_example_mean(loss, example_idx, len(questions))
    feats = encode_qa(tokenizer, questions, contexts, max_length=max_length, stride=stride)
    sp, ep = span_targets(feats, contexts, answers, answer_starts)
    with precision.autocast():
        res = model(**feats.model_inputs(device=model_device(model)))
    start, end = _scaled(res.start_logits, scale), _scaled(res.end_logits, scale)
    loss = qa_mft_loss(start, end, sp, ep,
                       mask=feats.attention_mask if mask_padding else None)
    return per_example_mean(loss, feats.example_idx, len(questions))


def qa_inv_batch_loss(model, tokenizer, orig_questions: Sequence[str], orig_contexts: Sequence[str],
                      pert_questions: Sequence[str], pert_contexts: Sequence[str], max_length: int = 384,
                      detach_orig: bool = False, scope: str = "context",
                      scale: torch.Tensor | float | DummyClassifier | None = None,
                      precision: Precision = FP32, encoder: QAEncoder | None = None) -> torch.Tensor:
    """Per-pair INV loss (with gradients) for (original, perturbation) pairs.
    Each input is one window (truncated, no overflow); positions are aligned
    over the context tokens (``scope="context"``, default) or over the whole
    sequences minus padding (``scope="sequence"``). ``scale`` (optional)
    multiplies the start and end logits of both sides before the softmaxes (a
    per-position :class:`beluga.train.losses.DummyClassifier`: the perturbation's
    only, as the reference code). ``encoder`` (optional): inputs and
    alignments come from its cache (the same tensors and pairs) and reach the
    device without a host sync; ``max_length`` and ``scope`` are then the
    encoder's."""
    if scope not in ("context", "sequence"):
        raise ValueError(f"qa_inv_batch_loss: scope must be 'context' or 'sequence', got {scope!r}")
    if encoder is not None:
        io, ip, pairs = encoder.inv(orig_questions, orig_contexts, pert_questions, pert_contexts)
        dev = model_device(model)
        with precision.autocast():
            ro = model(**model_inputs(model, io, dev))
            rp = model(**model_inputs(model, ip, dev))
        return qa_inv_loss(_scaled(ro.start_logits, scale, True), _scaled(ro.end_logits, scale, True),
                           _scaled(rp.start_logits, scale), _scaled(rp.end_logits, scale), pairs,
                           detach_orig=detach_orig)
    fo = encode_qa(tokenizer, orig_questions, orig_contexts, max_length=max_length, overflow=False)
    fp = encode_qa(tokenizer, pert_questions, pert_contexts, max_length=max_length, overflow=False)
    mo = fo.context_mask if scope == "context" else fo.attention_mask.bool()
    mp = fp.context_mask if scope == "context" else fp.attention_mask.bool()
    pairs = [aligned_positions(fo.input_ids[r], fp.input_ids[r], mo[r], mp[r]) for r in range(len(fo))]
    dev = model_device(model)
    with precision.autocast():
        ro = model(**fo.model_inputs(device=dev))
        rp = model(**fp.model_inputs(device=dev))
    return qa_inv_loss(_scaled(ro.start_logits, scale, True), _scaled(ro.end_logits, scale, True),
                       _scaled(rp.start_logits, scale), _scaled(rp.end_logits, scale), pairs,
                       detach_orig=detach_orig)


# --------------------------------------------------------------------------- whole-step graphs

#: the model inputs among a span batch's graph tensors (an INV batch's with the prefixes ``o_`` / ``p_``)
_MODEL_KEYS = ("input_ids", "token_type_ids", "attention_mask")


def _padded(encoder: QAEncoder, inputs: dict, rows: int, max_length: int) -> dict:
    pad_id, pad_type = encoder.pad
    length = bucket_length(inputs["input_ids"].shape[1], max_length)
    return pad_inputs(inputs, rows, length, {"input_ids": pad_id, "token_type_ids": pad_type, "attention_mask": 0})


def qa_graph_inputs(encoder: QAEncoder, kind: str, texts: Sequence[str], texts_b: Sequence[str], n: int,
                    answers: Sequence[str] | None, answer_starts: Sequence[int | None] | None,
                    batch_size: int | None, max_length: int) -> tuple[tuple, dict[str, torch.Tensor]]:
    """``training.compile: graphs``: (meta, host tensors padded to the batch's bucket) of a READ batch
    (``qa_mft``: ``n`` examples; ``qa_inv``: ``n`` pairs, originals first), from the fold's encoder. MFT: the
    windows' rows to :func:`bucket_rows` and their length to :func:`bucket_length`; padded rows count
    for a dummy example, the positions past the batch's own longest window are kept out of the softmax
    (``span_keep``), so the losses are the unpadded batch's. INV: both sides' rows and lengths bucketed,
    the aligned positions as index tensors with their columns padded to a length bucket."""
    if kind == "qa_mft":
        inputs, idx, sp, ep = encoder.mft(texts_b, texts, answers, answer_starts)
        w, length = inputs["input_ids"].shape
        rows = bucket_rows(w, batch_size)
        t = _padded(encoder, inputs, rows, max_length)
        extra = rows - w
        t["example_idx"] = torch.cat([idx, torch.full((extra,), n, dtype=torch.long)])
        t["start_positions"] = torch.cat([sp, torch.zeros(extra, dtype=torch.long)])
        t["end_positions"] = torch.cat([ep, torch.zeros(extra, dtype=torch.long)])
        t["counts"] = torch.bincount(idx, minlength=n).clamp(min=1).to(torch.float32)
        t["span_keep"] = (torch.arange(t["input_ids"].shape[1]) < length).expand(rows, -1).contiguous()
        return ("qa_mft", n, w), t
    if kind == "qa_inv":
        io, ip, pairs = encoder.inv(texts_b[:n], texts[:n], texts_b[n:], texts[n:])
        rows = bucket_rows(n, batch_size)
        t = {f"o_{k}": v for k, v in _padded(encoder, io, rows, max_length).items()}
        t.update({f"p_{k}": v for k, v in _padded(encoder, ip, rows, max_length).items()})
        k = bucket_length(max(max((len(p) for p in pairs), default=0), 1), max_length)
        ia, ib, valid = pair_index(list(pairs) + [[]] * (rows - n), torch.device("cpu"), k)
        t.update(pair_orig=ia, pair_pert=ib, pair_valid=valid)
        return ("qa_inv", n, n), t
    raise ValueError(f"qa_graph_inputs: {kind!r} is not a span batch kind (qa_mft, qa_inv)")


def qa_graph_loss(model, meta: tuple, t: dict[str, torch.Tensor], autocast, detach_orig: bool = False
                  ) -> torch.Tensor:
    """Per-example losses of a READ batch from its graph tensors (:func:`qa_graph_inputs`, on the model's
    device; no host sync): the losses of :func:`qa_mft_batch_loss` / :func:`qa_inv_batch_loss`."""
    kind, n, _ = meta
    dev = model_device(model)
    if kind == "qa_mft":
        with autocast:
            res = model(**model_inputs(model, {k: t[k] for k in _MODEL_KEYS if k in t}, dev))
        loss = qa_mft_loss(full(res.start_logits), full(res.end_logits), t["start_positions"], t["end_positions"],
                           mask=t["span_keep"])
        sums = torch.zeros(n + 1, dtype=loss.dtype, device=loss.device).index_add(0, t["example_idx"], loss)
        return sums[:n] / t["counts"].to(loss.dtype)
    with autocast:
        ro = model(**model_inputs(model, {k: t[f"o_{k}"] for k in _MODEL_KEYS if f"o_{k}" in t}, dev))
        rp = model(**model_inputs(model, {k: t[f"p_{k}"] for k in _MODEL_KEYS if f"p_{k}" in t}, dev))
    return qa_inv_loss_indexed(full(ro.start_logits), full(ro.end_logits), full(rp.start_logits),
                               full(rp.end_logits), t["pair_orig"], t["pair_pert"], t["pair_valid"],
                               detach_orig)[:n]


def qa_case_items(r, answer_match: str = "token") -> tuple[str, list[TrainItem]]:
    """READ: MFTs (and label-checked tests) train the span of the expected
    answer of every input (located by ``beluga.heads.span.qa.locate_answer``: its first
    whole-token occurrence by default, the first substring occurrence under
    ``training.qa_answer_match: substring``); INVs
    (``inv`` / ``same_answer``) pair the original with a perturbation and
    compare their start / end distributions on the aligned positions."""
    contexts = list(r.inputs)
    questions = list(r.inputs_b) if r.inputs_b is not None else None
    if questions is None:
        raise ValueError(f"READ case {r.case_id!r}: field 'inputs_b': questions are missing")
    if r.test_type == "INV":
        return "INV", [TrainItem(r.functionality, contexts, questions, qa=True)]
    answers = list(r.answers) if getattr(r, "answers", None) is not None else None
    if r.test_type != "MFT" or answers is None:
        raise ValueError(f"READ case {r.case_id!r}: a {r.test_type} test with expectation {r.expect!r} "
                         "has no training loss (READ trains MFTs with answers and INVs)")
    items = []
    for c, q, a in zip(contexts, questions, answers):
        start = locate_answer(c, str(a), answer_match)
        if start < 0:
            raise DataError(f"READ case {r.case_id!r}: field 'answers': {str(a)!r} does not occur in the context "
                            f"{c[:80]!r}...")
        items.append(TrainItem(r.functionality, [c], [q], answer=str(a), answer_start=start, qa=True))
    return "MFT", items
