"""Per-example losses for MFT / i.i.d., INV and DIR batches (docs/PROCEDURE.md, §3);
a regression head's (scores, :mod:`beluga.heads.score.cases`) at the end.

All functions return a 1-D tensor with one loss per example so that
methods (ERM, Group-DRO, IRM, ...) can weight or group them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


class DummyClassifier:
    """IRM's dummy classifier in the reference code's form: one weight per class
    (the logits' last dimension; READ: per sequence position), all 1, with
    gradients, multiplied onto the logits before every softmax; created at its
    first use, with the width of the logits it meets (``weight``, None before).
    As in the reference code, the soft target of an INV loss (the original's
    logits, ``target=True``) is left unmultiplied."""

    def __init__(self):
        self.weight: torch.Tensor | None = None

    def __call__(self, logits: torch.Tensor, target: bool = False) -> torch.Tensor:
        if target:
            return logits
        if self.weight is None:
            self.weight = torch.ones(logits.shape[-1], dtype=logits.dtype, device=logits.device, requires_grad=True)
        elif self.weight.shape[0] != logits.shape[-1]:
            raise ValueError(f"IRM dummy classifier: {self.weight.shape[0]} weights, logits of width "
                             f"{logits.shape[-1]} (one dummy per minibatch)")
        return logits * self.weight


def dummy_scaled(logits: torch.Tensor, scale=None, target: bool = False) -> torch.Tensor:
    """``logits`` times IRM's dummy ``scale``: None (unchanged), a number or a
    tensor (multiplied, ``target`` or not: this project's scalar w), or a
    :class:`DummyClassifier` (per class; a ``target`` left alone)."""
    if scale is None:
        return logits
    if isinstance(scale, DummyClassifier):
        return scale(logits, target=target)
    return logits * scale


# DIR comparison functions (SENT, two-class model: y[0] = P(neg), y[1] = P(pos))
DIR_FUNCTIONS = ("not_more_negative", "not_more_positive", "not_more_confident", "not_less_confident")
DIR_FN_INDEX = {name: i for i, name in enumerate(DIR_FUNCTIONS)}

# suite expectation (+ params) -> DIR comparison function used for training
def dir_function_for(expect: str, params: dict) -> str:
    if expect == "diff_up":
        return "not_more_negative"
    if expect == "diff_down":
        return "not_more_positive"
    if expect == "monotonic":
        return "not_less_confident" if params.get("increasing", True) else "not_more_confident"
    raise ValueError(f"expectation {expect!r} has no DIR training loss")


def mft_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with (possibly soft) targets: -sum_k t[k] log p[k]."""
    return -(targets * F.log_softmax(logits, dim=-1)).sum(-1)


def inv_loss(logits_orig: torch.Tensor, logits_pert: torch.Tensor, detach_orig: bool = False) -> torch.Tensor:
    """-sum_k y0[k] log yi[k] (Eq. 5); the original side is not detached by default (ref. code)."""
    p0 = F.softmax(logits_orig, dim=-1)
    if detach_orig:
        p0 = p0.detach()
    return -(p0 * F.log_softmax(logits_pert, dim=-1)).sum(-1)


def dir_error(p0: torch.Tensor, pi: torch.Tensor, fn_idx: torch.Tensor, cls: torch.Tensor | None = None
              ) -> torch.Tensor:
    """epsilon_delta in [0, 1] for each pair, by comparison function index. The confidence functions compare
    the original's top class (the reference code's), or, where ``cls`` (per pair) is >= 0, that class: the
    expectation's label (a monotonic DIR of a task whose suite and model share one label set, as its
    scoring reads it: NLI's "P(entailment) does not rise when the hypothesis is negated")."""
    c_star = p0.argmax(-1, keepdim=True)
    if cls is not None:
        cls = cls.view(-1, 1).to(c_star.device)
        c_star = torch.where(cls >= 0, cls, c_star)
    p0c = p0.gather(-1, c_star).squeeze(-1)
    pic = pi.gather(-1, c_star).squeeze(-1)
    errs = torch.stack([
        (pi[:, 0] - p0[:, 0]).clamp(min=0),  # not more negative
        (pi[:, 1] - p0[:, 1]).clamp(min=0),  # not more positive
        (pic - p0c).clamp(min=0),            # not more confident
        (p0c - pic).clamp(min=0),            # not less confident
    ], dim=-1)
    return errs.gather(-1, fn_idx.view(-1, 1)).squeeze(-1)


def dir_loss(logits_orig: torch.Tensor, logits_pert: torch.Tensor, fn_idx: torch.Tensor,
             keep: torch.Tensor | None = None, eps: float = 1e-6, cls: torch.Tensor | None = None) -> torch.Tensor:
    """-log(1 - epsilon_delta) (Eq. 6). ``keep`` (bool per pair) zeroes pairs
    outside the expectation's slice (e.g. originals predicted neutral); ``cls``:
    :func:`dir_error`'s class per pair (-1: the original's top class)."""
    p0 = F.softmax(logits_orig, dim=-1)
    pi = F.softmax(logits_pert, dim=-1)
    err = dir_error(p0, pi, fn_idx, cls)
    loss = -torch.log((1 - err).clamp(min=eps))
    if keep is not None:
        loss = loss * keep.to(loss.dtype)
    return loss


def neutral_mask(logits: torch.Tensor) -> torch.Tensor:
    """SENT: True where a two-class prediction falls in the neutral band [1/3, 2/3]."""
    p = F.softmax(logits, dim=-1)[:, 1]
    return (p >= 1 / 3) & (p <= 2 / 3)


# --------------------------------------------------------------------------- regression head (scores)


def interval_loss(scores: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """Squared distance of each score to its target interval [low, high]
    (0 inside it; ``low == high``: the squared error, GLUE's STS-B loss; an
    infinite bound: one-sided)."""
    below = torch.where(scores < low, low - scores, torch.zeros_like(scores))
    above = torch.where(scores > high, scores - high, torch.zeros_like(scores))
    return below ** 2 + above ** 2


def mse_loss(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-example squared error (i.i.d. examples: the gold score)."""
    return (scores - targets) ** 2


def score_inv_loss(scores_orig: torch.Tensor, scores_pert: torch.Tensor, detach_orig: bool = False) -> torch.Tensor:
    """INV: (s_0 - s_i)^2; the original side is not detached by default, as
    the classifiers' INV loss (both scores move towards each other)."""
    s0 = scores_orig.detach() if detach_orig else scores_orig
    return (scores_pert - s0) ** 2


def score_dir_loss(scores_orig: torch.Tensor, scores_pert: torch.Tensor, directions: torch.Tensor,
                   margins: torch.Tensor | None = None) -> torch.Tensor:
    """DIR: max(0, margin - d (s_i - s_0)) with d = +1 (up) or -1 (down): zero
    once the score moved the stated way by ``margin`` (default 0), else
    linear in the shortfall, pushing the two scores apart the right way."""
    move = directions.to(scores_pert.dtype) * (scores_pert - scores_orig)
    m = torch.zeros_like(move) if margins is None else margins.to(move.dtype)
    return (m - move).clamp(min=0)
