"""The items and minibatches of training streams (:mod:`beluga.train.batches` builds
them; :mod:`beluga.heads.score.batches` the regression head's kinds), in a module
of their own so that both build on them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import torch


@dataclass
class TrainItem:
    """One training item of a stream (:func:`beluga.train.streams.build_streams`):
    an i.i.d. example or (part of) a suite case."""

    env: str
    inputs: list[str]
    inputs_b: list[str] | None = None
    target: list[float] | None = None   # MFT / i.i.d.
    dir_fn: int | None = None           # DIR
    dir_slice: bool = False             # DIR: drop pairs whose original is predicted neutral
    answer: str | None = None           # QA MFT / i.i.d.: the answer string (inputs: context, inputs_b: question)
    answer_start: int | None = None     # QA: character start of the answer (None: first occurrence)
    qa: bool = False                    # QA item (span targets / aligned INV) rather than a class distribution
    targets: list[list[float]] | None = None   # DIR_LABEL (reference batching): one target per input
    anchor: bool = False                # DIR_LABEL: inputs[0] is the original, in every draw
    #: DIR: the class a confidence function compares (the expectation's label), None: the original's top class;
    #: left out of checkpoint fingerprints when None (beluga.model.checkpoint.item_record)
    dir_class: int | None = None
    #: a regression item (beluga.heads.score.batches.ScoreItem); a class attribute, not a field
    regression: ClassVar[bool] = False


@dataclass
class Batch:
    kind: str                      # "mft" | "inv" | "dir" | "qa_mft" | "qa_inv" (regression: heads.score.batches)
    envs: list[str]
    texts: list[str]               # mft: inputs; inv/dir: originals then perturbations (QA: contexts)
    texts_b: list[str] | None = None  # second inputs (PARA: question2; QA: questions)
    targets: torch.Tensor | None = None
    dir_fn: torch.Tensor | None = None
    dir_slice: torch.Tensor | None = None
    dir_class: torch.Tensor | None = None   # DIR: per pair, the class compared (-1: the original's top class)
    answers: list[str] | None = None
    answer_starts: list[int | None] | None = None
    size: int = field(init=False)

    def __post_init__(self):
        self.size = len(self.envs)
