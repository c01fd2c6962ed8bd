"""The training streams of a fold: stream name -> training items (``iid``, ``MFT``, ``INV``, ``DIR``; with
``training.batching: reference`` also ``DIR_LABEL``), built once per fold for the one training loop
(:func:`beluga.train.loop.train`). The task's head makes the items (:meth:`beluga.heads.Head.iid_items`,
:meth:`beluga.heads.Head.case_items`); :mod:`beluga.train.batches` turns them into minibatches."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pandas as pd

from beluga.core.tasks import TaskType
from beluga.heads import head_of
from beluga.train.batches import BATCHINGS, EQ_OR_NOT_NEGATIVE_TARGETS
from beluga.train.items import TrainItem

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamOptions:
    """How suite cases become training items (the config's ``training`` block): ``dir_train_slice`` (train a
    sliced DIR only where its slice holds), ``qa_answer_match`` (READ: how an answer is located in its context),
    ``eq_or_not_negative_target`` (SENT's "Q & A: no" label 1), ``batching`` (``project`` / ``reference``)."""

    dir_train_slice: bool = True
    qa_answer_match: str = "token"
    eq_or_not_negative_target: str = "not_negative"
    batching: str = "project"


def build_streams(ttype: TaskType, iid_train: pd.DataFrame | None, suite_train: pd.DataFrame | None,
                  dir_train_slice: bool = True, qa_answer_match: str = "token",
                  eq_or_not_negative_target: str = "not_negative",
                  batching: str = "project") -> dict[str, list[TrainItem]]:
    """Stream name -> training items of the i.i.d. training examples and the suite's training cases, made by
    the task's head; INV / DIR cases without a perturbation are skipped (a pair loss needs the original and
    a perturbation)."""
    if eq_or_not_negative_target not in EQ_OR_NOT_NEGATIVE_TARGETS:
        raise ValueError(f"field 'training.eq_or_not_negative_target': {eq_or_not_negative_target!r} is not one of "
                         f"{', '.join(EQ_OR_NOT_NEGATIVE_TARGETS)}")
    if batching not in BATCHINGS:
        raise ValueError(f"training.batching must be one of {BATCHINGS}, got {batching!r}")
    head = head_of(ttype)
    options = StreamOptions(dir_train_slice, qa_answer_match, eq_or_not_negative_target, batching)
    streams: dict[str, list[TrainItem]] = {}
    if iid_train is not None and len(iid_train):
        streams["iid"] = head.iid_items(ttype, iid_train)
    if suite_train is not None and len(suite_train):
        unpaired = 0
        for r in suite_train.itertuples(index=False):
            stream, items, skipped = case_stream(head, ttype, r, options)
            unpaired += skipped
            if items:
                streams.setdefault(stream, []).extend(items)
        if unpaired:
            _log.info("training data: %d INV / DIR case(s) with fewer than two inputs skipped (no perturbation to "
                      "train on)", unpaired)
    return {k: streams[k] for k in sorted(streams)}


def case_stream(head, ttype: TaskType, r, options: StreamOptions) -> tuple[str, list[TrainItem], int]:
    """(stream, training items, items skipped) of one suite case (a row of the suite), made by the task's ``head``:
    an INV / DIR item without a perturbation is skipped (a pair loss needs the original and a perturbation)."""
    stream, items = head.case_items(ttype, r, options)
    if stream not in ("INV", "DIR"):
        return stream, items, 0
    kept = [it for it in items if len(it.inputs) >= 2]
    return stream, kept, len(items) - len(kept)


def item_sequences(stream: str, item: TrainItem) -> int:
    """The sequences one training item costs an epoch, as the cost plan counts them: one for an i.i.d. example
    or an MFT input; an INV / DIR item is a pair (two); a label-checked DIR case of the reference batching trains at
    most :data:`~beluga.train.batches.LABEL_DIR_DRAW` of its inputs an epoch."""
    from beluga.train.batches import LABEL_DIR, LABEL_DIR_DRAW

    return {"MFT": 1, "iid": 1, LABEL_DIR: min(LABEL_DIR_DRAW, len(item.inputs))}.get(stream, 2)
