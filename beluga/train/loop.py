"""The one training loop: streams of i.i.d. examples and suite cases
(:mod:`beluga.train.batches`) -> minibatches -> ``method.update``. Every
configuration and method goes through ``train``.

Streams (ref. code, :func:`beluga.train.streams.build_streams`): ``iid``
(D_train), ``MFT``, ``INV`` and ``DIR`` (T_train cases by test type). Each
minibatch comes from one stream; per epoch the batches of all streams are
shuffled together (:func:`beluga.train.batches.epoch_batches`), so streams are
drawn in proportion to their number of batches. INV/DIR minibatches hold
(original, one randomly drawn perturbation) pairs, redrawn every epoch.
How many items a minibatch of each stream holds: ``training.batching``
(:func:`beluga.train.batches.cases_per_batch`; ``reference``: the reference code's
composition, also of the per-environment minibatches below).

Two sampling modes, chosen by the method (``Algorithm.sampling``):

- ``pooled`` (vanilla, l2, dropout, lp, lp_ft, lora): the above; an epoch is one
  pass over every stream, ``n_batches`` updates, each given one minibatch.
- ``per_env`` (irm, group_dro, fish): items are grouped by environment
  (``TrainItem.env``: the functionality, ``iid`` for i.i.d. items; see
  :func:`beluga.train.batches.env_groups`), and every update is given a list of
  minibatches, one per environment of the step: all environments, or a fresh
  uniform sample of ``envs_per_step`` of them (fish: ``fish_envs``) in random
  order. Each environment's items are consumed in a shuffled order,
  reshuffled after every pass (small environments cycle more often: sampling
  is balanced over environments, not over items); a minibatch holds up to
  ``batch_size`` distinct items of one environment and one batch kind (see
  :class:`beluga.train.batches.EnvSampler`). An *epoch* is ``ceil(total items / (k ×
  batch_size))`` updates by default (``per_env_epoch="examples"``, k
  environments per step): as many examples, and so about the compute, of a
  pooled epoch, as in the reference code (the paper's equal compute budget
  across methods). ``per_env_epoch="steps"`` makes an epoch ``ceil(total
  items / batch_size)`` updates instead: the number of updates of pooled
  sampling, each seeing up to k minibatches, i.e. k times the examples (and
  compute) of a pooled epoch. ``training.batching: reference``: every
  minibatch is drawn from a fresh permutation of its environment (the
  reference code's new iterators at every step) and holds the stream's
  :func:`beluga.train.batches.cases_per_batch` items; ``batch_size`` in the epoch's
  length is then the environments' mean minibatch size.

The linear learning-rate decay and the gradient clipping are shared by
every method (:class:`beluga.methods.Algorithm`).
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import torch

from beluga.core.errors import ConfigError
from beluga.core.health import DivergedError, check_finite_weights
from beluga.heads.score.batches import SCORE_KINDS, score_batch_loss
from beluga.methods import Algorithm, check_method_hparams, get_algorithm
from beluga.model import checkpoint
from beluga.model.compiling import CompiledForward, bucket_length, bucket_rows, pad_inputs
from beluga.model.precision import FP32, Precision, full
from beluga.model.transfer import model_inputs, to_device
from beluga.train.batches import Batch, EnvSampler, TrainItem, cases_per_batch, env_groups, epoch_batches, n_batches
from beluga.train.losses import DummyClassifier, dir_loss, dummy_scaled, inv_loss, mft_loss, neutral_mask
from beluga.train.settings import FoldRun

log = logging.getLogger(__name__)


class Encoder:
    """Token ids of a fold's classification inputs, tokenized once before the
    first epoch (:meth:`add`), and padded batches built from them: the same
    tensors the tokenizer returns for ``tokenizer(texts, texts_b,
    padding=True, truncation=True, max_length=...)``, bit for bit (truncation
    is per sequence, padding to the batch's longest on the tokenizer's side
    with its pad id and pad token type). Inputs it has not seen are tokenized
    on the fly, as before."""

    def __init__(self, tokenizer, max_length: int):
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.cache: dict[tuple[str, str | None], dict[str, list[int]]] = {}
        self.keys = [k for k in ("input_ids", "token_type_ids") if k in tokenizer.model_input_names]
        self.mask = "attention_mask" in tokenizer.model_input_names
        self.pad = {"input_ids": tokenizer.pad_token_id, "token_type_ids": tokenizer.pad_token_type_id}

    def _tokenize(self, texts: list[str], texts_b: list[str] | None) -> None:
        for s in range(0, len(texts), 2048):
            tb = None if texts_b is None else texts_b[s:s + 2048]
            enc = self.tokenizer(texts[s:s + 2048], tb, truncation=True, max_length=self.max_length,
                                 return_attention_mask=False, return_token_type_ids="token_type_ids" in self.keys)
            for i, t in enumerate(texts[s:s + 2048]):
                self.cache[(t, None if tb is None else tb[i])] = {k: enc[k][i] for k in self.keys}

    def add(self, streams: dict[str, list[TrainItem]]) -> None:
        """Tokenize every (non-QA) input of the streams once: singles and pairs apart."""
        singles, pairs = {}, {}
        for items in streams.values():
            for it in items:
                if it.qa:
                    continue
                for j, t in enumerate(it.inputs):
                    if it.inputs_b is None:
                        singles[t] = None
                    else:
                        pairs[(t, it.inputs_b[j])] = None
        new_singles = [t for t in singles if (t, None) not in self.cache]
        if new_singles:
            self._tokenize(new_singles, None)
        new_pairs = [p for p in pairs if p not in self.cache]
        if new_pairs:
            self._tokenize([a for a, _ in new_pairs], [b for _, b in new_pairs])

    def __call__(self, texts: list[str], texts_b: list[str] | None) -> dict[str, torch.Tensor]:
        keys = [(t, None if texts_b is None else texts_b[i]) for i, t in enumerate(texts)]
        missing = [k for k in dict.fromkeys(keys) if k not in self.cache]
        if missing:
            self._tokenize([a for a, _ in missing], None if texts_b is None else [b for _, b in missing])
        rows = [self.cache[k] for k in keys]
        longest = max(len(r["input_ids"]) for r in rows)
        right = self.tokenizer.padding_side == "right"
        out = {}
        for name in self.keys:
            pad = self.pad[name]
            out[name] = torch.tensor([r[name] + [pad] * (longest - len(r[name])) if right else
                                      [pad] * (longest - len(r[name])) + r[name] for r in rows], dtype=torch.long)
        if self.mask and any(len(r["input_ids"]) < longest for r in rows):
            # no mask when no sequence is padded: the model's own mask helper would find it all ones and drop
            # it; the outputs are the same either way
            out["attention_mask"] = torch.tensor(
                [[1] * len(r["input_ids"]) + [0] * (longest - len(r["input_ids"])) if right else
                 [0] * (longest - len(r["input_ids"])) + [1] * len(r["input_ids"]) for r in rows], dtype=torch.long)
        return out


#: graphs on READ without the fold's QA encoder (:class:`beluga.heads.span.batches.QAEncoder`)
_GRAPHS_NEED_QA_ENCODER = ("training.compile: graphs needs READ's span inputs cached by the fold's QA encoder (a "
                           "fast tokenizer padding on the right); set training.compile: default or off for this "
                           "model")


class LossFn:
    """Maps (model, batch) to per-example losses. With ``host_hygiene``
    (default), classification inputs come from an :class:`Encoder` and QA
    inputs (windows, span targets, INV alignments) from a
    :class:`beluga.heads.span.batches.QAEncoder`, both filled once per fold
    (:meth:`pretokenize`), and reach the device without a device -> host sync
    (:func:`beluga.model.transfer.model_inputs`: pinned copies, the attention mask
    the model takes as it is; the compiled forward pass gets the 2D mask).
    ``host_hygiene=False``: tokenized (and aligned) per batch and copied as
    before; the same bytes."""

    def __init__(self, tokenizer, max_length: int, detach_inv_orig: bool = False, doc_stride: int = 128,
                 precision: Precision = FP32, qa_inv_scope: str = "context", host_hygiene: bool = True,
                 compile: str = "off", compile_cache: str | None = None, job: str = ""):
        self.tokenizer = tokenizer
        self.qa_inv_scope = qa_inv_scope
        self.max_length = max_length
        self.detach_inv_orig = detach_inv_orig
        self.doc_stride = doc_stride
        self.precision = precision
        self.host_hygiene = host_hygiene
        self.encoder = Encoder(tokenizer, max_length) if host_hygiene else None
        self.qa_encoder = None   # made by pretokenize for streams with QA items (READ: beluga.heads.span.batches)
        self.batch_size: int | None = None   # graphs: the run's batch size sets the row buckets (bucket_rows)
        # training.compile (beluga/model/compiling.py): the classification forward pass compiled, built at its first
        # use (:meth:`compiled_forward`: a run captured as whole-step graphs never builds it); off: eager
        self.compile_mode, self.compiled = ("off" if compile in ("off", False) else compile), None   # False: YAML off
        self._compiled = functools.partial(CompiledForward, self.compile_mode, max_length, precision.device_type,
                                           tokenizer.pad_token_id, tokenizer.pad_token_type_id,
                                           tokenizer.padding_side, compile_cache, job)

    def compiled_forward(self) -> CompiledForward | None:
        """The compiled forward pass (built once, at its first use), or None: the model runs eagerly."""
        if self.compiled is None and self.compile_mode != "off":
            self.compiled = self._compiled(batch_size=self.batch_size)
        return self.compiled

    def pretokenize(self, streams: dict[str, list[TrainItem]]) -> None:
        if self.encoder is not None:
            self.encoder.add(streams)
        if self.host_hygiene and any(it.qa for items in streams.values() for it in items):
            from beluga.heads.span.batches import QAEncoder

            if self.qa_encoder is None and QAEncoder.supports(self.tokenizer):
                self.qa_encoder = QAEncoder(self.tokenizer, self.max_length, self.doc_stride, self.qa_inv_scope)
            if self.qa_encoder is not None:
                self.qa_encoder.add(streams)
        if self.compile_mode == "graphs" and self.qa_encoder is None and any(
                it.qa for items in streams.values() for it in items):
            raise ConfigError(_GRAPHS_NEED_QA_ENCODER)

    def logits(self, model, texts, texts_b=None):
        """float32 logits; the forward pass runs under the precision's autocast."""
        dev, compiled = next(model.parameters()).device, self.compiled_forward()
        if self.encoder is None:
            enc = self.tokenizer(texts, texts_b, padding=True, truncation=True, max_length=self.max_length,
                                 return_tensors="pt")
            inputs = {k: v.to(dev) for k, v in enc.items()}
        elif compiled is None:   # the mask ready for the model (beluga.model.transfer): no host sync
            inputs = model_inputs(model, self.encoder(texts, texts_b), dev)
        else:
            inputs = {k: to_device(v, dev) for k, v in self.encoder(texts, texts_b).items()}
        with self.precision.autocast():
            mask = "attention_mask" in self.tokenizer.model_input_names
            logits = model(**inputs).logits if compiled is None else compiled(model, inputs, mask)
        return full(logits)

    def __call__(self, model, batch: Batch, scale: torch.Tensor | float | DummyClassifier | None = None
                 ) -> torch.Tensor:
        """Per-example losses. ``scale`` (optional; IRM's dummy classifier w)
        multiplies the logits before every softmax: the class logits of MFT /
        INV / DIR batches, the start and end logits of QA batches (a per-class
        :class:`beluga.train.losses.DummyClassifier` leaves an INV loss's soft
        target alone), a regression head's scores."""
        if batch.kind == "qa_mft":
            from beluga.heads.span.batches import qa_mft_batch_loss

            return qa_mft_batch_loss(model, self.tokenizer, questions=batch.texts_b, contexts=batch.texts,
                                     answers=batch.answers, answer_starts=batch.answer_starts,
                                     max_length=self.max_length, stride=self.doc_stride, scale=scale,
                                     precision=self.precision, encoder=self.qa_encoder)
        if batch.kind == "qa_inv":
            from beluga.heads.span.batches import qa_inv_batch_loss

            n = batch.size
            return qa_inv_batch_loss(model, self.tokenizer, orig_questions=batch.texts_b[:n],
                                     orig_contexts=batch.texts[:n], pert_questions=batch.texts_b[n:],
                                     pert_contexts=batch.texts[n:], max_length=self.max_length,
                                     detach_orig=self.detach_inv_orig, scope=self.qa_inv_scope, scale=scale,
                                     precision=self.precision, encoder=self.qa_encoder)
        logits = self.logits(model, batch.texts, batch.texts_b)
        if batch.kind in SCORE_KINDS:   # a regression head (beluga.heads.score.batches)
            return score_batch_loss(logits, batch, scale, detach_orig=self.detach_inv_orig)
        n = batch.size
        if batch.kind == "inv":   # the original's logits give the soft target (a per-class dummy leaves them)
            lo, lp = dummy_scaled(logits[:n], scale, target=True), dummy_scaled(logits[n:], scale)
            return inv_loss(lo, lp, detach_orig=self.detach_inv_orig)
        logits = dummy_scaled(logits, scale)
        if batch.kind == "mft":
            return mft_loss(logits, to_device(batch.targets, logits.device).to(logits.dtype))
        lo, lp = logits[:n], logits[n:]
        keep = None
        if batch.dir_slice is not None and bool(batch.dir_slice.any()):
            keep = ~(to_device(batch.dir_slice, lo.device) & neutral_mask(lo.detach()))
        cls = None if batch.dir_class is None else to_device(batch.dir_class, lo.device)
        return dir_loss(lo, lp, to_device(batch.dir_fn, lo.device), keep=keep, cls=cls)


    # ------------------------------------------------------------ whole-step graphs (beluga.model.graphs)
    def graph_inputs(self, batch: Batch) -> tuple[tuple, dict[str, torch.Tensor]]:
        """``training.compile: graphs``: (meta, host tensors) of ``batch`` padded to its bucket: the model
        inputs (rows to :func:`bucket_rows` of the run's batch size, extra rows repeating the first;
        sequences to :func:`bucket_length`, always with an attention mask where the model takes one) and
        the kind's own tensors (targets, DIR functions, slice and classes, score directions and margins;
        READ's windows and alignments: :func:`beluga.heads.span.batches.qa_graph_inputs`). ``meta``: (kind,
        examples or pairs, the model rows that are not padding)."""
        if batch.kind in ("qa_mft", "qa_inv"):
            from beluga.heads.span.batches import qa_graph_inputs

            if self.qa_encoder is None:
                raise ConfigError(_GRAPHS_NEED_QA_ENCODER)
            return qa_graph_inputs(self.qa_encoder, batch.kind, batch.texts, batch.texts_b, batch.size,
                                   batch.answers, batch.answer_starts, self.batch_size, self.max_length)
        if self.encoder is not None:
            enc = dict(self.encoder(batch.texts, batch.texts_b))
        else:
            enc = {k: v for k, v in self.tokenizer(batch.texts, batch.texts_b, padding=True, truncation=True,
                                                     max_length=self.max_length, return_tensors="pt").items()}
        ids = enc["input_ids"]
        masked = "attention_mask" in self.tokenizer.model_input_names
        if masked and "attention_mask" not in enc:
            enc["attention_mask"] = torch.ones_like(ids)
        rows = bucket_rows(ids.shape[0], self.batch_size)
        length = bucket_length(ids.shape[1], self.max_length) if masked else ids.shape[1]   # no mask: rows only
        pad = {"input_ids": int(self.tokenizer.pad_token_id or 0),
               "token_type_ids": int(self.tokenizer.pad_token_type_id or 0), "attention_mask": 0}
        t = pad_inputs(enc, rows, length, pad, self.tokenizer.padding_side == "right")
        for name in ("targets", "directions", "margins", "dir_fn", "dir_class"):
            v = getattr(batch, name, None)
            if v is not None:
                t[name] = v
        if batch.kind == "dir" and batch.dir_slice is not None and bool(batch.dir_slice.any()):
            t["dir_slice"] = batch.dir_slice
        return (batch.kind, batch.size, int(ids.shape[0])), t

    def graph_loss(self, model, meta: tuple, t: dict[str, torch.Tensor], autocast) -> torch.Tensor:
        """Per-example losses of a batch from its :meth:`graph_inputs` on the model's device, under
        ``autocast``, without a host sync: the losses :meth:`__call__` gives the unpadded batch (IRM's
        ``scale`` is not taken: IRM runs eagerly)."""
        kind, n, rows = meta
        if kind in ("qa_mft", "qa_inv"):
            from beluga.heads.span.batches import qa_graph_loss

            return qa_graph_loss(model, meta, t, autocast, detach_orig=self.detach_inv_orig)
        dev = next(model.parameters()).device
        inputs = model_inputs(model, {k: t[k] for k in ("input_ids", "token_type_ids", "attention_mask") if k in t},
                              dev)
        with autocast:
            logits = full(model(**inputs).logits)[:rows]
        if kind in SCORE_KINDS:
            view = SimpleNamespace(kind=kind, size=n, targets=t.get("targets"), directions=t.get("directions"),
                                   margins=t.get("margins"))
            return score_batch_loss(logits, view, detach_orig=self.detach_inv_orig)
        if kind == "inv":
            return inv_loss(logits[:n], logits[n:], detach_orig=self.detach_inv_orig)
        if kind == "mft":
            return mft_loss(logits, t["targets"].to(logits.dtype))
        lo, lp = logits[:n], logits[n:]
        keep = ~(t["dir_slice"] & neutral_mask(lo.detach())) if "dir_slice" in t else None
        return dir_loss(lo, lp, t["dir_fn"], keep=keep, cls=t.get("dir_class"))


def _as_tensor(v) -> torch.Tensor:
    return v.detach().float().reshape(()) if torch.is_tensor(v) else torch.tensor(float(v))


def _mean(values: list[torch.Tensor]) -> float:
    """Mean of the finite ones of 0-dim loss tensors (on any device) as a float
    (skipped non-finite steps do not count): one host sync."""
    if not values:
        return float("nan")
    v = torch.stack([x.to(values[0].device) for x in values])
    return float(v[torch.isfinite(v)].mean()) if bool(torch.isfinite(v).any()) else float("nan")


# --------------------------------------------------------------------------- the training loop


def epoch_steps_total(steps_per_epoch: int, epochs: float) -> int:
    """Updates of a run of ``epochs`` (possibly fractional) epochs:
    ceil(epochs × updates per epoch), as the Hugging Face Trainer counts them
    (the last, partial epoch runs the first updates of its shuffled order)."""
    return max(1, math.ceil(round(float(epochs) * steps_per_epoch, 9)))


@dataclass
class _Plan:
    """How a run draws its updates (the sampling modes of the module docstring)."""

    epochs: int                  # epochs the loop runs (fractional epochs: the last one stops early)
    steps_per_epoch: int
    total: int                   # updates in all: the Hugging Face Trainer's ceil(epochs x updates per epoch)
    envs: list[str]              # every training environment, for the method
    batches: Callable[[int], Iterator[list[Batch]]]   # epoch -> the minibatch lists of its updates
    sampler: EnvSampler | None   # per_env only (its state is checkpointed)
    extra: dict                  # summary fields: sampling, total_steps, per_env's env_sizes / envs_per_step /
                                 # steps_per_epoch

    def steps_in(self, epoch: int) -> int:
        """Updates of ``epoch`` (0-based): all of them but in a fractional last epoch."""
        return min(self.steps_per_epoch, self.total - epoch * self.steps_per_epoch)


def _checked_method(run: FoldRun, streams: dict[str, list[TrainItem]]) -> type[Algorithm]:
    """The run's method class, once the streams hold something to train on and
    its complete hyper-parameters pass :func:`beluga.methods.check_method_hparams`
    (the one run-time check of lr, batch_size, epochs and the method's own)."""
    if not streams or not any(streams.values()):
        raise ConfigError(f"training {run.job}: field 'partitions': nothing to train on (the fold's training "
                          "functionalities have no trainable case and no i.i.d. data is mixed in)")
    algo_cls = get_algorithm(run.method)
    check_method_hparams(run.method, run.hparams)
    bs = int(run.hparams["batch_size"])
    empty = sorted(s for s in streams if cases_per_batch(s, bs, run.batching) < 1)
    if empty:
        raise ConfigError(f"training {run.job}: field 'training.batching': reference minibatches of the "
                          f"{', '.join(empty)} stream(s) hold batch_size // 2 (INV, DIR) or // 3 (DIR_LABEL) cases, "
                          f"none at batch_size {bs} (use a larger batch_size or training.batching: project)")
    return algo_cls


def _pretokenized_loss(tokenizer, streams: dict[str, list[TrainItem]], run: FoldRun, precision: Precision,
                       host_hygiene: bool) -> tuple[LossFn, float]:
    """The run's :class:`LossFn` with the streams tokenized once, before the
    first epoch, and the seconds that took."""
    loss_fn = LossFn(tokenizer, run.max_length, detach_inv_orig=bool(run.hparams["detach_inv_orig"]),
                     doc_stride=run.doc_stride, precision=precision, qa_inv_scope=run.qa_inv_scope,
                     host_hygiene=host_hygiene, compile=run.compile, job=run.job)
    loss_fn.batch_size = int(run.hparams["batch_size"])   # graphs: row buckets of the run's batch sizes
    t_tok = time.time()
    loss_fn.pretokenize(streams)
    return loss_fn, time.time() - t_tok


def _plan(algo_cls: type[Algorithm], streams: dict[str, list[TrainItem]], hparams: dict, seed: int,
          batching: str = "project") -> _Plan:
    """The sampling plan of ``algo_cls.sampling``. ``pooled``: an epoch is one
    pass over every stream, its batches drawn from a generator seeded with
    (seed, epoch). ``per_env``: ``steps_per_epoch`` updates, each given one
    minibatch of each of k environments (all, or ``envs_per_step``), from an
    :class:`EnvSampler` seeded once per run (its state goes into checkpoints).
    Neither depends on how many epochs ran in this process. ``batching``:
    items per minibatch of each stream (:func:`beluga.train.batches.cases_per_batch`);
    per_env's k × batch_size becomes k × the environments' mean minibatch
    size."""
    batch_size, epochs_f = int(hparams["batch_size"]), float(hparams["epochs"])
    extra: dict = {"sampling": algo_cls.sampling}
    sampler = None
    if algo_cls.sampling == "pooled":
        steps_per_epoch = n_batches(streams, batch_size, batching)
        envs = sorted({it.env for items in streams.values() for it in items})

        def batches(epoch: int):
            rng = np.random.default_rng([seed, epoch])
            return ([b] for b in epoch_batches(streams, batch_size, rng, batching=batching))
    elif algo_cls.sampling == "per_env":
        groups = env_groups(streams)
        envs = list(groups)
        k = algo_cls.envs_per_step(hparams)
        k = len(envs) if k is None else min(int(k), len(envs))
        n_items = sum(len(items) for _, items in groups.values())
        sampler = EnvSampler(groups, batch_size, np.random.default_rng([seed, 1_000_003]), batching)
        mean_size = sum(sampler.sizes.values()) / len(sampler.sizes)   # batch_size unless reference batching
        per = mean_size * (k if hparams["per_env_epoch"] == "examples" else 1)
        steps_per_epoch = math.ceil(n_items / per)
        extra.update(env_sizes={e: len(items) for e, (_, items) in groups.items()}, envs_per_step=k,
                     steps_per_epoch=steps_per_epoch)

        def batches(epoch: int):
            return ([sampler.minibatch(e) for e in sampler.step_envs(k)] for _ in range(steps_per_epoch))
    else:
        raise NotImplementedError(f"sampling mode {algo_cls.sampling!r} of method {algo_cls.name!r} is not "
                                  "implemented")
    total = epoch_steps_total(steps_per_epoch, epochs_f)
    extra["total_steps"] = total
    return _Plan(math.ceil(epochs_f), steps_per_epoch, total, envs, batches, sampler, extra)


@dataclass
class _Progress:
    """Where training stands: fresh, or as a checkpoint left it."""

    start_epoch: int = 0          # epochs a checkpoint provided
    step: int = 0                 # updates done
    history: list[float] = field(default_factory=list)   # mean objective per epoch
    risks: list[float] = field(default_factory=list)     # mean loss per epoch, without penalties / weights
    wall_before: float = 0.0      # training seconds of the processes before a resume
    stopped: int | None = None    # epochs done when ``on_epoch_end`` stopped training


class _Checkpoints:
    """Epoch checkpoints of one run (:mod:`beluga.model.checkpoint`) in
    ``run.checkpoint_dir``; none for one epoch (no boundary) or with
    ``on_epoch_end`` (the callback's own state would not be saved).

    :meth:`open` fingerprints the run (settings, data, start model, precision)
    and finds its checkpoint; :meth:`resume` restores it (weights, method and
    optimizer state, RNGs, the per-env sampler) once the method is built: the
    run ends with the weights, bit for bit, of one that never stopped (same
    device kind and torch threads). :meth:`save_if_due` saves after an epoch
    but the last once ``run.checkpoint_every_s`` seconds have passed since
    training started or the last save (0: every epoch; a shorter job would
    redo less than it spends saving). ``t0``: training's start; ``seconds``:
    fingerprint, restore and saves."""

    def __init__(self, run: FoldRun, plan: _Plan, on_epoch_end):
        self.dir = run.checkpoint_dir if on_epoch_end is None and plan.epochs > 1 else None
        self.every_s = run.checkpoint_every_s
        self.fp = self.found = None
        self.t0 = time.time()
        self.seconds = 0.0
        self.last_save = self.t0

    def open(self, model, run: FoldRun, streams: dict[str, list[TrainItem]], reference_state: dict | None,
             precision: Precision) -> None:
        if self.dir is None:
            return
        self.fp = checkpoint.fingerprint(model=model, method=run.method, hparams=dict(run.hparams), seed=run.seed,
                                         streams=streams, reference_state=reference_state,
                                         extra={**run.fingerprint_settings(), **precision.record()})
        self.found = checkpoint.load(self.dir, self.fp)
        checkpoint.write_owner(self.dir, self.fp)

    def resume(self, model, algo: Algorithm, plan: _Plan) -> _Progress:
        progress = _Progress()
        if self.found is not None:
            loop = checkpoint.restore(self.found, model, algo)
            progress = _Progress(start_epoch=int(loop["epochs_done"]), step=int(loop["steps"]),
                                 history=list(loop["epoch_losses"]), risks=list(loop["epoch_risks"]),
                                 wall_before=float(loop["wall_time_s"]))
            if plan.sampler is not None:
                plan.sampler.set_state(loop["sampler"])
            if loop.get("torch_threads") != torch.get_num_threads():
                log.warning("resuming with %d torch threads, the checkpoint was written with %s: the result may "
                            "differ in the last bits from an uninterrupted run", torch.get_num_threads(),
                            loop.get("torch_threads"))
            log.info("resumed from epoch %d of %d (checkpoint %s, step %d)", progress.start_epoch, plan.epochs,
                     self.found.path, progress.step)
            self.found = None
        self.seconds = time.time() - self.t0   # fingerprint and restore
        self.last_save = time.time()
        return progress

    def save_if_due(self, epochs_done: int, plan: _Plan, progress: _Progress, model, algo: Algorithm) -> None:
        if self.dir is None or epochs_done >= plan.epochs or time.time() - self.last_save < self.every_s:
            return
        t_save = time.time()
        loop = {"epochs_done": epochs_done, "steps": progress.step, "epoch_losses": progress.history,
                "epoch_risks": progress.risks, "wall_time_s": progress.wall_before + time.time() - self.t0,
                "torch_threads": torch.get_num_threads(),
                "sampler": plan.sampler.state() if plan.sampler is not None else None}
        checkpoint.save(self.dir, epoch=epochs_done, fp=self.fp, model=model, algo=algo, state=loop)
        self.last_save = time.time()
        self.seconds += self.last_save - t_save


def _check_finite(algo: Algorithm, job: str, total: int) -> None:
    """``nonfinite: stop``: a :class:`beluga.core.health.DivergedError` naming the
    job and the first update whose loss was not finite (one host sync)."""
    bad = algo.first_nonfinite_step()
    if bad is not None:
        raise DivergedError(f"training {job}: field 'training.nonfinite': the loss is not finite at step {bad} "
                            f"of {total} (the run diverged: lower the learning rate, or set training.nonfinite: "
                            "skip to skip such steps)")


def _run_epoch(algo: Algorithm, plan: _Plan, epoch: int, progress: _Progress, job: str, log_every: int,
               t0: float) -> None:
    """The updates of ``epoch``, its mean objective and risk appended to
    ``progress``. Losses stay on the device (0-dim tensors) and reach the host
    only when logged; non-finite losses are checked every ``log_every``
    updates and at the epoch's end (:func:`_check_finite`)."""
    running, running_risk = [], []
    for minibatches in itertools.islice(plan.batches(epoch), plan.steps_in(epoch)):
        stats = algo.update(minibatches)
        running.append(_as_tensor(stats["loss"]))
        running_risk.append(_as_tensor(stats.get("risk", stats["loss"])))
        progress.step += 1
        if progress.step % log_every == 0:
            _check_finite(algo, job, plan.total)
            log.info("step %d/%d loss %.4f", progress.step, plan.total, _mean(running[-log_every:]))
    _check_finite(algo, job, plan.total)
    progress.history.append(_mean(running))
    progress.risks.append(_mean(running_risk))
    log.info("epoch %d done: mean loss %.4f (%.1fs)", epoch + 1, progress.history[-1], time.time() - t0)


def _stop_requested(on_epoch_end, epochs_done: int, epochs: int, model, tokenizer) -> bool:
    """Calls ``on_epoch_end`` (if any) after an epoch, restores training
    mode (it may evaluate the model), and whether it ended training before
    the last epoch."""
    if on_epoch_end is None:
        return False
    stop = on_epoch_end(epochs_done, model, tokenizer)
    model.train()
    if stop and epochs_done < epochs:
        log.info("stopped after epoch %d of %d (on_epoch_end)", epochs_done, epochs)
        return True
    return False


def _summary(progress: _Progress, algo: Algorithm, loss_fn: LossFn, plan: _Plan,
             streams: dict[str, list[TrainItem]], ckpts: _Checkpoints, tokenize_s: float) -> dict:
    """The run's summary (see :func:`train`): steps, skipped non-finite
    updates, epoch_losses / epoch_risks, wall_time_s (of it: checkpoint_s,
    tokenize_s), resumed_from_epoch, stopped_after_epoch, stream_sizes, the
    plan's fields (sampling, total_steps; per_env: env_sizes, envs_per_step,
    steps_per_epoch), method_info, the compiled forward pass's
    compile_s / compiles and, under ``training.compile: graphs``, ``step_graphs``
    (:meth:`beluga.methods.base.Algorithm.graph_record`)."""
    return {"steps": progress.step, "nonfinite_steps_skipped": algo.nonfinite_skipped,
            "epoch_losses": progress.history, "epoch_risks": progress.risks,
            "wall_time_s": round(progress.wall_before + time.time() - ckpts.t0, 2),
            "checkpoint_s": round(ckpts.seconds, 3), "resumed_from_epoch": progress.start_epoch,
            "stopped_after_epoch": progress.stopped, "tokenize_s": round(tokenize_s, 3),
            "stream_sizes": {k: len(v) for k, v in streams.items()}, **plan.extra, "method_info": algo.summary(),
            **({"step_graphs": algo.graph_record()} if algo.graph_record() else {}),
            **(loss_fn.compiled.summary() if loss_fn.compiled is not None else {"compile_s": 0.0, "compiles": 0})}


def _use_lr_factor(algo: Algorithm, lr_factor: Callable[[], float]) -> None:
    """The learning rate of ``algo``'s optimizer becomes its base rate times
    ``lr_factor()`` now and at every update after (the factor replaces the
    method's schedule, :meth:`beluga.methods.base.Algorithm.lr_factor`)."""
    algo.lr_factor = lr_factor
    algo.set_lrs([base * float(lr_factor()) for base in algo.scheduler.base_lrs])


def train(model, tokenizer, streams: dict[str, list[TrainItem]], run: FoldRun, *, precision: Precision,
          reference_state: dict | None = None, log_every: int = 50, on_epoch_end=None,
          host_hygiene: bool = True, lr_factor: Callable[[], float] | None = None) -> dict:
    """Train ``model`` in place as ``run`` says (:class:`beluga.train.settings.FoldRun`:
    the method, its complete hyper-parameters (lr, batch_size, epochs and the
    method's own), seed, sequence length, checkpointing...), drawing
    minibatches as the method's sampling mode says (:func:`_plan`).
    ``reference_state`` (optional, name -> tensor): reference weights for
    L2-SP (default: the model's weights at the start).

    ``precision``: the job's :class:`beluga.model.precision.Precision`, resolved
    once per job on the model's device (``beluga.model.job.start_job``): autocast of
    the forward passes and fused AdamW.
    ``run.nonfinite``: a non-finite loss stops training with a
    :class:`beluga.core.health.DivergedError` naming the job and the step
    (``stop``, checked every ``log_every`` updates and at every epoch end, so
    the loss stays on the device), or the update is skipped and counted
    (``skip``); the trained weights are checked finite at the end either way.

    ``run.checkpoint_dir`` (optional; unused for one epoch): the whole
    training state is saved at epoch boundaries and a later call with the same
    run resumes after the last saved epoch, ending with the same weights, bit
    for bit, as a run that never stopped (:class:`_Checkpoints`).

    Returns a summary dict (:func:`_summary`): steps, epoch_losses (mean
    objective per epoch), epoch_risks (mean loss per epoch, without penalties
    / weights), wall_time_s (checkpoint_s of it: fingerprint, checkpoint
    writes and restore), stream_sizes, sampling, and for ``per_env`` sampling
    env_sizes / envs_per_step / steps_per_epoch; ``method_info`` holds the
    method's own (e.g. final Group-DRO weights, IRM switch step);
    ``resumed_from_epoch`` the epochs a checkpoint provided (0: none).

    ``on_epoch_end`` (optional; analyses with early stopping): called with
    the number of epochs done, the model and the tokenizer after each epoch;
    returning True ends training there (``stopped_after_epoch`` in the
    summary). It may evaluate the model (training mode is restored
    afterwards); such a run keeps no checkpoints.

    ``lr_factor`` (optional; analyses with their own schedule, e.g. the
    inoculation's halving on a dev plateau, which ``on_epoch_end`` decides):
    a callable giving the factor of the base learning rate, read at the start
    and after every update and every ``on_epoch_end``; it replaces the
    method's linear decay. None (default): the method's schedule."""
    algo_cls = _checked_method(run, streams)
    loss_fn, tokenize_s = _pretokenized_loss(tokenizer, streams, run, precision, host_hygiene)
    plan = _plan(algo_cls, streams, run.hparams, run.seed, run.batching)
    ckpts = _Checkpoints(run, plan, on_epoch_end)
    ckpts.open(model, run, streams, reference_state, precision)
    model.train()
    algo = algo_cls(model, run.hparams, loss_fn, plan.total, envs=plan.envs, reference_state=reference_state,
                    fused=precision.fused_optimizer, nonfinite=run.nonfinite, compile=run.compile)
    progress = ckpts.resume(model, algo, plan)
    if lr_factor is not None:
        _use_lr_factor(algo, lr_factor)
    for epoch in range(progress.start_epoch, plan.epochs):
        _run_epoch(algo, plan, epoch, progress, run.job, log_every, ckpts.t0)
        ckpts.save_if_due(epoch + 1, plan, progress, model, algo)
        if _stop_requested(on_epoch_end, epoch + 1, plan.epochs, model, tokenizer):
            progress.stopped = epoch + 1
            break
        if lr_factor is not None:
            _use_lr_factor(algo, lr_factor)
    algo.finish()   # e.g. LoRA's adapters merged into the base weights
    check_finite_weights(model, run.job)
    if algo.nonfinite_skipped:
        log.warning("training %s: %d update(s) with a non-finite loss were skipped", run.job, algo.nonfinite_skipped)
    return _summary(progress, algo, loss_fn, plan, streams, ckpts, tokenize_s)
