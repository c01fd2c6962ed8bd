"""Training streams, minibatches and losses of a regression head (SIMILARITY;
:mod:`beluga.heads.score.cases` describes the expectations and the losses), for the
one training loop (:func:`beluga.train.loop.train`).

The streams have the classification streams' names and roles (``iid``,
``MFT``, ``INV``, ``DIR``; :mod:`beluga.train.batches`), so the sampling modes,
batch compositions and epochs are the same; their items are
:class:`ScoreItem` s and their minibatches :class:`ScoreBatch` es of kind
``score_mft`` (i.i.d. examples and MFT inputs with a target interval),
``score_inv`` or ``score_dir`` (originals then one randomly drawn
perturbation each, redrawn every epoch, as for classification).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import torch

from beluga.core.bounds import json_loads
from beluga.core.errors import DataError
from beluga.heads.score.cases import DEFAULT_MARGIN, DIRECTIONS, SCORE_EXPECTATIONS, expected_value
from beluga.train.items import Batch, TrainItem
from beluga.train.losses import dummy_scaled, interval_loss, score_dir_loss, score_inv_loss

#: minibatch kinds of a regression head (:meth:`beluga.train.loop.LossFn.__call__` dispatches on them)
SCORE_KINDS = ("score_mft", "score_inv", "score_dir")


@dataclass
class ScoreItem(TrainItem):
    """A training item of a regression head: ``target`` is the interval
    [low, high] an i.i.d. example's or MFT input's score is trained into
    (low == high: a value; an infinite bound: one side of a threshold); a
    DIR item has the ``direction`` (+1 up, -1 down) and ``margin`` of its
    expected move."""

    regression: ClassVar[bool] = True
    direction: int = 0
    margin: float = 0.0


@dataclass
class ScoreBatch(Batch):
    """A minibatch of :class:`ScoreItem` s: ``targets`` (score_mft, [n, 2]:
    low, high), ``directions`` / ``margins`` (score_dir, one per pair)."""

    directions: torch.Tensor | None = None
    margins: torch.Tensor | None = None


def score_iid_items(iid_train: pd.DataFrame) -> list[ScoreItem]:
    """Training items of a regression task's i.i.d. examples (``text``, ``text_b``, ``label``: the gold score,
    trained as the value itself)."""
    texts_b = iid_train["text_b"] if "text_b" in iid_train.columns else [None] * len(iid_train)
    items = []
    for t, b, y in zip(iid_train["text"], texts_b, iid_train["label"]):
        y = float(y)
        if not math.isfinite(y):
            raise DataError(f"training data: field 'label': gold score {y} of {t[:60]!r} is not a finite number")
        items.append(ScoreItem("iid", [t], None if b is None else [b], target=[y, y]))
    return items


def case_items(r) -> tuple[str, list[ScoreItem]]:
    """Training items of one regression suite case and their stream: a case
    checked against a value or bounds gives an MFT item per input it checks
    (``score_near``: its value; ``score_between``: its bounds; every input,
    or all but the original of an INV / DIR case under
    ``all_except_first``), a ``score_inv`` / ``score_up`` / ``score_down``
    case one item of the original and its perturbations."""
    if r.expect not in SCORE_EXPECTATIONS:
        raise DataError(f"suite case {r.case_id!r}: field 'expect': expectation {r.expect!r} has no regression "
                        f"training loss (known: {', '.join(SCORE_EXPECTATIONS)})")
    params = json_loads(r.expect_params) if r.expect_params else {}
    inputs = list(r.inputs)
    inputs_b = list(r.inputs_b) if r.inputs_b is not None else None
    labels = list(r.labels) if getattr(r, "labels", None) is not None else None

    def b(j):
        return [inputs_b[j]] if inputs_b is not None else None
    first = 1 if r.test_type != "MFT" and r.agg_fn == "all_except_first" else 0
    if r.expect == "score_near":
        items = []
        for j in range(first, len(inputs)):
            v = expected_value(j, labels, params)
            if v is None:
                raise DataError(f"suite case {r.case_id!r}: field 'labels': input {j} of a 'score_near' case has no "
                                "value to train on (no 'val', no label)")
            items.append(ScoreItem(r.functionality, [inputs[j]], b(j), target=[v, v]))
        return "MFT", items
    if r.expect == "score_between":
        lo = -math.inf if params.get("min") is None else float(params["min"])
        hi = math.inf if params.get("max") is None else float(params["max"])
        return "MFT", [ScoreItem(r.functionality, [inputs[j]], b(j), target=[lo, hi])
                       for j in range(first, len(inputs))]
    if r.expect == "score_inv":
        return "INV", [ScoreItem(r.functionality, inputs, inputs_b)]
    return "DIR", [ScoreItem(r.functionality, inputs, inputs_b, direction=DIRECTIONS[r.expect],
                             margin=float(params.get("margin", DEFAULT_MARGIN)))]


def make_score_batch(stream: str, items: list[ScoreItem], rng: np.random.Generator) -> ScoreBatch:
    """The minibatch of ``items`` of ``stream`` (as :func:`beluga.train.batches._make_batch`
    draws a classification one: the same draws of perturbations)."""
    envs = [it.env for it in items]
    has_b = items[0].inputs_b is not None
    if stream in ("iid", "MFT"):
        return ScoreBatch("score_mft", envs, [it.inputs[0] for it in items],
                          [it.inputs_b[0] for it in items] if has_b else None,
                          targets=torch.tensor([it.target for it in items], dtype=torch.float32))
    if stream not in ("INV", "DIR"):
        raise ValueError(f"regression items in stream {stream!r}: only iid, MFT, INV and DIR streams are trained")
    picks = [int(rng.integers(1, len(it.inputs))) for it in items]
    texts = [it.inputs[0] for it in items] + [it.inputs[k] for it, k in zip(items, picks)]
    texts_b = None
    if has_b:
        texts_b = [it.inputs_b[0] for it in items] + [it.inputs_b[k] for it, k in zip(items, picks)]
    if stream == "INV":
        return ScoreBatch("score_inv", envs, texts, texts_b)
    return ScoreBatch("score_dir", envs, texts, texts_b,
                      directions=torch.tensor([it.direction for it in items], dtype=torch.float32),
                      margins=torch.tensor([it.margin for it in items], dtype=torch.float32))


def score_batch_loss(logits: torch.Tensor, batch: ScoreBatch, scale=None, detach_orig: bool = False) -> torch.Tensor:
    """Per-example losses of a regression minibatch from the model's outputs
    (``logits``: [rows, 1], float32): :func:`beluga.train.losses.interval_loss`
    (score_mft), :func:`~beluga.train.losses.score_inv_loss` (score_inv; IRM's
    dummy ``scale`` leaves the original's score, the target, alone as for
    classification), :func:`~beluga.train.losses.score_dir_loss` (score_dir)."""
    if logits.ndim != 2 or logits.shape[-1] != 1:
        raise ValueError(f"a regression head has one output per input, got outputs of shape {tuple(logits.shape)}")
    n = batch.size
    if batch.kind == "score_inv":
        s0 = dummy_scaled(logits[:n], scale, target=True)[:, 0]
        return score_inv_loss(s0, dummy_scaled(logits[n:], scale)[:, 0], detach_orig=detach_orig)
    scores = dummy_scaled(logits, scale)[:, 0]
    if batch.kind == "score_mft":
        t = batch.targets.to(scores.device, scores.dtype)
        return interval_loss(scores, t[:, 0], t[:, 1])
    if batch.kind == "score_dir":
        return score_dir_loss(scores[:n], scores[n:], batch.directions.to(scores.device),
                              batch.margins.to(scores.device))
    raise ValueError(f"minibatch kind {batch.kind!r} is not a regression kind ({', '.join(SCORE_KINDS)})")
