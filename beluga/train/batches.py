"""Training streams and their minibatches, for the one training loop
(:func:`beluga.train.loop.train`).

Streams (ref. code): ``iid`` (D_train), ``MFT``, ``INV`` and ``DIR`` (T_train
cases by test type), built once per fold (:func:`build_streams`). Each
minibatch comes from one stream; per epoch the batches of all streams are
shuffled together, so streams are drawn in proportion to their number of
batches (:func:`epoch_batches`). INV/DIR minibatches hold (original, one
randomly drawn perturbation) pairs, redrawn every epoch.

``training.batching`` chooses the composition (:func:`cases_per_batch`):
``project`` (default) puts ``batch_size`` items in every minibatch (INV / DIR:
``batch_size`` pairs) and trains every input of a label-checked DIR (PARA) as
an MFT item every epoch; ``reference`` follows the reference code
(``get_single_dataloader`` and the data collators of behaviour_training.py):
``batch_size // 2`` INV / DIR cases (one pair each: ``batch_size`` rows),
label-checked DIR cases in a stream of their own (``DIR_LABEL``),
``batch_size // 3`` cases per minibatch, each giving at most three inputs
drawn afresh every epoch (:func:`_label_picks`), ``batch_size`` MFT inputs or
i.i.d. examples; no length bucketing; per-environment minibatches drawn from a
fresh permutation at every step.

Methods that sample per environment (``per_env``) group the items by
environment (:func:`env_groups`) and draw minibatches of one environment at
a time (:class:`EnvSampler`). :mod:`beluga.train.loop` describes both sampling
modes and how many updates an epoch has.
"""

from __future__ import annotations

import logging

import numpy as np
import torch

from beluga.core.bounds import json_loads
from beluga.core.tasks import TaskType
from beluga.heads.score.batches import make_score_batch
from beluga.train.items import Batch, TrainItem
from beluga.train.losses import DIR_FN_INDEX, dir_function_for

_log = logging.getLogger(__name__)

#: training.batching values (schemas/config.schema.yaml)
BATCHINGS = ("project", "reference")
#: reference batching: the stream of label-checked DIR cases (PARA), one item per case
LABEL_DIR = "DIR_LABEL"
#: reference batching: inputs one label-checked DIR case gives a minibatch (the reference's qqp DIR collator)
LABEL_DIR_DRAW = 3


#: ``training.eq_or_not_negative_target``: how SENT trains an ``eq_or_not_negative`` case's label 1 ("not
#: negative"): [1/3, 2/3] as every not-negative case, or its literal label (neutral [1/2, 1/2], the reference code's)
EQ_OR_NOT_NEGATIVE_TARGETS = ("not_negative", "label")


def class_case_items(ttype: TaskType, r, dir_train_slice: bool, eq_or_not_negative_target: str = "not_negative",
                     batching: str = "project") -> tuple[str, list[TrainItem]]:
    """Training items of one suite case of a classification task and the stream they go to.

    MFTs: one item per input with its (soft) target. A DIR whose expectation
    is a label check (PARA: perturbed pairs with a known label, ``eq`` with
    ``val`` or the implication triplets) is trained as MFTs on the inputs the
    expectation checks (all, or all but the original under
    ``all_except_first``). A training hint ``"train": {"as": "MFT", "label": y}``
    in the expectation parameters (PARA's one-pair synonym "INV", a paper fix)
    trains every input as an MFT with label y. SENT's ``eq_or_not_negative``
    (CheckList's "Q & A: no") trains label 1 as "not negative" [1/3, 2/3], or
    as its literal label, neutral [1/2, 1/2], under
    ``eq_or_not_negative_target="label"`` (the reference code's). Other INVs /
    DIRs: one item per case (original + perturbations).

    ``batching="reference"``: a label-checked DIR (not MFT, no hint) is one
    ``DIR_LABEL`` item of the inputs its expectation checks, with one target
    each; ``anchor`` when the original is among them (the reference code's
    "(q, paraphrase(q))" and "Testing implications": ``all`` / triplet)."""
    params = json_loads(r.expect_params) if r.expect_params else {}
    inputs = list(r.inputs)
    inputs_b = list(r.inputs_b) if r.inputs_b is not None else None
    if trained_as_mft(r, params):
        expect, labelled = mft_inputs(r, params, eq_or_not_negative_target)
        items = [TrainItem(r.functionality, [inputs[j]], [inputs_b[j]] if inputs_b else None,
                           ttype.mft_target(expect, label)) for j, label in labelled]
        if batching == "reference" and r.test_type != "MFT" and (params.get("train") or {}).get("as") != "MFT":
            if not items:
                return LABEL_DIR, []
            return LABEL_DIR, [TrainItem(r.functionality, [it.inputs[0] for it in items],
                                         [it.inputs_b[0] for it in items] if inputs_b else None,
                                         targets=[it.target for it in items], anchor=labelled[0][0] == 0)]
        return "MFT", items
    if r.test_type == "INV":
        return "INV", [TrainItem(r.functionality, inputs, inputs_b)]
    fn = dir_function_for(r.expect, params)
    sliced = dir_train_slice and params.get("slice") == "orig_not_neutral"
    cls = params.get("label") if ttype.dir_compares_label and r.expect == "monotonic" else None
    return "DIR", [TrainItem(r.functionality, inputs, inputs_b, dir_fn=DIR_FN_INDEX[fn], dir_slice=sliced,
                             dir_class=None if cls is None else int(cls))]


def trained_as_mft(r, params: dict) -> bool:
    """A classification case trained as MFTs: an MFT, a case with the training
    hint ``"train": {"as": "MFT"}``, or a label-checked INV / DIR (``eq``,
    ``triplet``, ``not_negative``)."""
    return ((params.get("train") or {}).get("as") == "MFT" or r.test_type == "MFT"
            or r.expect in ("eq", "triplet", "not_negative"))


def mft_inputs(r, params: dict,
               eq_or_not_negative_target: str = "not_negative") -> tuple[str, list[tuple[int, object]]]:
    """(expectation, [(input index, label)]) of a case :func:`trained_as_mft`:
    every input with the hint's label; an MFT's inputs with their labels; a
    label-checked DIR's inputs the expectation checks (all but the original
    under ``all_except_first``, every input of a triplet). A missing label
    is the expectation's ``val``. ``eq_or_not_negative_target="label"``:
    SENT's ``eq_or_not_negative`` is trained (and scored) as ``eq``."""
    n = len(r.inputs)
    hint = params.get("train") or {}
    if hint.get("as") == "MFT":
        expect, labels, first = "eq", [hint.get("label")] * n, 0
    else:
        expect = "eq" if r.expect == "triplet" else r.expect
        labels = list(r.labels) if r.labels is not None else [params.get("val")] * n
        first = 1 if r.test_type != "MFT" and r.agg_fn == "all_except_first" and r.expect != "triplet" else 0
    if expect == "eq_or_not_negative" and eq_or_not_negative_target == "label":
        expect = "eq"
    return expect, [(j, labels[j] if labels[j] is not None else params.get("val")) for j in range(first, n)]


def _label_picks(item: TrainItem, rng: np.random.Generator) -> list[int]:
    """The inputs of a ``DIR_LABEL`` case in one minibatch, drawn without
    replacement (the reference code's qqp DIR collator): the original and
    min(2, n - 1) of its n - 1 perturbations when the original is checked
    (``anchor``), else min(3, n) of the n checked perturbations."""
    n = len(item.inputs)
    if item.anchor:
        return [0] + [1 + int(k) for k in rng.choice(n - 1, size=min(LABEL_DIR_DRAW - 1, n - 1), replace=False)]
    return [int(k) for k in rng.choice(n, size=min(LABEL_DIR_DRAW, n), replace=False)]


def _make_batch(stream: str, items: list[TrainItem], rng: np.random.Generator) -> Batch:
    if items[0].regression:
        return make_score_batch(stream, items, rng)
    if stream == LABEL_DIR:   # rows: each case's drawn inputs, as MFT examples with their targets
        rows = [(it, j) for it in items for j in _label_picks(it, rng)]
        return Batch("mft", [it.env for it, _ in rows], [it.inputs[j] for it, j in rows],
                     [it.inputs_b[j] for it, j in rows] if items[0].inputs_b is not None else None,
                     targets=torch.tensor([it.targets[j] for it, j in rows], dtype=torch.float32))
    envs = [it.env for it in items]
    has_b = items[0].inputs_b is not None
    if items[0].qa and stream in ("iid", "MFT"):
        return Batch("qa_mft", envs, [it.inputs[0] for it in items], [it.inputs_b[0] for it in items],
                     answers=[it.answer for it in items], answer_starts=[it.answer_start for it in items])
    if stream in ("iid", "MFT"):
        return Batch("mft", envs, [it.inputs[0] for it in items],
                     [it.inputs_b[0] for it in items] if has_b else None,
                     targets=torch.tensor([it.target for it in items], dtype=torch.float32))
    # one randomly drawn perturbation per case
    picks = [int(rng.integers(1, len(it.inputs))) for it in items]
    texts = [it.inputs[0] for it in items] + [it.inputs[k] for it, k in zip(items, picks)]
    texts_b = None
    if has_b:
        texts_b = [it.inputs_b[0] for it in items] + [it.inputs_b[k] for it, k in zip(items, picks)]
    if stream == "INV":
        return Batch("qa_inv" if items[0].qa else "inv", envs, texts, texts_b)
    classes = [-1 if it.dir_class is None else int(it.dir_class) for it in items]
    return Batch("dir", envs, texts, texts_b,
                 dir_fn=torch.tensor([it.dir_fn for it in items], dtype=torch.long),
                 dir_slice=torch.tensor([it.dir_slice for it in items], dtype=torch.bool),
                 dir_class=torch.tensor(classes, dtype=torch.long) if any(c >= 0 for c in classes) else None)


def _length(item: TrainItem) -> int:
    return sum(len(t) for t in item.inputs) + (sum(len(t) for t in item.inputs_b) if item.inputs_b else 0)


def cases_per_batch(stream: str, batch_size: int, batching: str = "project") -> int:
    """Items of ``stream`` in one minibatch: ``batch_size`` (``project``, and
    i.i.d. / MFT under ``reference``); under ``reference`` (the reference
    code's ``get_single_dataloader``) ``batch_size // 2`` INV / DIR cases and
    ``batch_size // 3`` ``DIR_LABEL`` cases (0 when ``batch_size`` is too
    small: :func:`beluga.train.loop.train` stops on it)."""
    if batching not in BATCHINGS:
        raise ValueError(f"training.batching must be one of {BATCHINGS}, got {batching!r}")
    if batching == "project" or stream in ("iid", "MFT"):
        return batch_size
    return batch_size // (3 if stream == LABEL_DIR else 2)


def _sizes(streams, batch_size: int, batching: str) -> dict[str, int]:
    sizes = {name: cases_per_batch(name, batch_size, batching) for name in streams}
    small = sorted(k for k, v in sizes.items() if v < 1)
    if small:
        raise ValueError(f"training.batching {batching}: batch_size {batch_size} gives the {', '.join(small)} "
                         "stream(s) empty minibatches")
    return sizes


def epoch_batches(streams: dict[str, list[TrainItem]], batch_size: int, rng: np.random.Generator,
                  bucket: int = 8, batching: str = "project") -> list[Batch]:
    """All minibatches of one epoch, shuffled across streams. Within a stream,
    items are shuffled, cut into pools of ``bucket`` batches, and each pool is
    sorted by length before being cut into batches (less padding; ``bucket=1``
    turns this off, as ``batching="reference"`` does: the reference code's
    random sampler). A minibatch of a stream holds :func:`cases_per_batch`
    items."""
    sizes = _sizes(streams, batch_size, batching)
    if batching == "reference":
        bucket = 1
    planned = []
    for name in sorted(streams):
        items, size = streams[name], sizes[name]
        order = list(rng.permutation(len(items)))
        pool = size * max(1, bucket)
        for p in range(0, len(order), pool):
            chunk = sorted(order[p:p + pool], key=lambda i: _length(items[i]))
            for s in range(0, len(chunk), size):
                planned.append((name, [items[i] for i in chunk[s:s + size]]))
    sequence = rng.permutation(len(planned))
    return [_make_batch(planned[i][0], planned[i][1], rng) for i in sequence]


def n_batches(streams: dict[str, list[TrainItem]], batch_size: int, batching: str = "project") -> int:
    sizes = _sizes(streams, batch_size, batching)
    return sum(-(-len(v) // sizes[k]) for k, v in streams.items())


# --------------------------------------------------------------------------- per-environment sampling


def env_groups(streams: dict[str, list[TrainItem]]) -> dict[str, tuple[str, list[TrainItem]]]:
    """Environment -> (stream, items), environments sorted by name.

    An environment is a functionality (or ``iid``); a functionality has one
    test type, and label-checked DIRs (e.g. PARA) are trained as MFT items, so
    all its items are in one stream and its minibatches are homogeneous in
    kind. Should a functionality still have items in several streams, each
    (functionality, stream) part becomes its own environment
    ``"<functionality> [<stream>]"`` (with a warning)."""
    by_env: dict[str, dict[str, list[TrainItem]]] = {}
    for stream in sorted(streams):
        for it in streams[stream]:
            by_env.setdefault(it.env, {}).setdefault(stream, []).append(it)
    out: dict[str, tuple[str, list[TrainItem]]] = {}
    for env in sorted(by_env):
        parts = by_env[env]
        if len(parts) == 1:
            (stream, items), = parts.items()
            out[env] = (stream, items)
            continue
        _log.warning("environment %r has items in several streams (%s): each part is its own environment",
                    env, ", ".join(sorted(parts)))
        for stream, items in sorted(parts.items()):
            out[f"{env} [{stream}]"] = (stream, items)
    return dict(sorted(out.items()))


class EnvSampler:
    """Minibatches of one environment at a time (``per_env`` sampling: see
    :mod:`beluga.train.loop`).

    Every environment goes through its items in passes: a pass is a fresh
    permutation of the environment's items cut into minibatches of
    ``batch_size`` (the last one of a pass may be smaller, as in pooled
    sampling), so each item is used once per pass and a minibatch never
    repeats an item. The batch's ``envs`` are the environment name.

    ``batching="reference"``: an environment's minibatch holds
    :func:`cases_per_batch` items of its stream, the first ones of a fresh
    permutation at every draw (the reference code makes new iterators at
    every step): no passes, items drawn with replacement across steps."""

    def __init__(self, groups: dict[str, tuple[str, list[TrainItem]]], batch_size: int, rng: np.random.Generator,
                 batching: str = "project"):
        self.groups = groups
        per_stream = _sizes({stream for stream, _ in groups.values()}, batch_size, batching)
        self.sizes = {env: per_stream[stream] for env, (stream, _) in groups.items()}   # items per minibatch
        self.fresh = batching == "reference"
        self.rng = rng
        self.queues: dict[str, list[int]] = {k: [] for k in groups}

    def minibatch(self, env: str) -> Batch:
        stream, items = self.groups[env]
        if self.fresh or not self.queues[env]:
            self.queues[env] = [int(i) for i in self.rng.permutation(len(items))]
        queue, size = self.queues[env], self.sizes[env]
        pick, self.queues[env] = queue[:size], ([] if self.fresh else queue[size:])
        batch = _make_batch(stream, [items[i] for i in pick], self.rng)
        batch.envs = [env] * batch.size
        return batch

    def step_envs(self, k: int) -> list[str]:
        """A uniform sample of ``k`` environments, in random order."""
        names = list(self.groups)
        return [names[i] for i in self.rng.permutation(len(names))[:k]]

    def state(self) -> dict:
        """JSON state (generator and queues), for checkpoints."""
        return {"rng": self.rng.bit_generator.state, "queues": {k: list(v) for k, v in self.queues.items()}}

    def set_state(self, state: dict) -> None:
        if set(state["queues"]) != set(self.groups):
            raise ValueError("sampler state: the environments differ")
        self.rng.bit_generator.state = state["rng"]
        self.queues = {k: [int(i) for i in state["queues"][k]] for k in self.groups}
