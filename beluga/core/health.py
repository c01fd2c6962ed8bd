"""Numerical health: nothing non-finite or out of range reaches a table.

- Training (:func:`beluga.train.loop.train`): a non-finite loss stops the job
  with one line naming the job and the step (``training.nonfinite: stop``,
  the default), or the step is skipped and counted in the run record
  (``skip``); every trained model's weights are checked finite before any
  prediction is made from it.
- Probabilities (predictions before they are written, and every predictions
  file that ``outcomes`` or ``python -m beluga score`` reads): each row must be
  finite, every value in [0, 1] (:data:`PROB_SLACK` of slack for rounding)
  and the row must sum to 1 within :data:`SUM_TOLERANCE` (float32 softmaxes
  sum to 1 within about 1e-7; the tolerance admits probabilities written with
  three decimals).
"""

from __future__ import annotations

import numpy as np

from beluga.core.errors import BelugaError, DataError

#: |sum of a probability row - 1| allowed
SUM_TOLERANCE = 1e-3
#: how far outside [0, 1] a single probability may be (rounding)
PROB_SLACK = 1e-6
NONFINITE_CHOICES = ("stop", "skip")


class DivergedError(BelugaError):
    """Training produced a non-finite loss or non-finite weights."""


def bad_probability_rows(probs: np.ndarray) -> np.ndarray:
    """Indices of the rows of a (n, k) array that are not probability distributions."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2:
        raise ValueError(f"probabilities must be a 2-d array, got shape {probs.shape}")
    finite = np.isfinite(probs).all(axis=1)
    with np.errstate(invalid="ignore"):
        in_range = ((probs >= -PROB_SLACK) & (probs <= 1 + PROB_SLACK)).all(axis=1)
        sums = np.abs(probs.sum(axis=1) - 1) <= SUM_TOLERANCE
    return np.flatnonzero(~(finite & in_range & sums))


def check_probabilities(probs: np.ndarray, source: str, rows=None, keys=None) -> None:
    """Raise a DataError naming ``source``, the row and the field 'probs' for
    the first row that is not a probability distribution. ``rows``: the row
    numbers in the file (default 0..n-1); ``keys``: (case_id, input_idx) of
    row i, a sequence or a function of i (for the message)."""
    bad = bad_probability_rows(probs)
    if not len(bad):
        return
    i = int(bad[0])
    row = int(rows[i]) if rows is not None else i
    key = None if keys is None else (keys(i) if callable(keys) else keys[i])
    where = f" (case {key[0]!r}, input {key[1]})" if key is not None else ""
    values = np.asarray(probs, dtype=np.float64)[i].tolist()
    raise DataError(f"{source}: row {row}{where}: field 'probs': {values} is not a probability distribution "
                    f"(values must be finite, in [0, 1] and sum to 1 within {SUM_TOLERANCE}); {len(bad)} such row(s)")


def check_finite_weights(model, job: str) -> None:
    """A trained model's parameters must all be finite."""
    import torch

    for name, p in model.named_parameters():
        if not bool(torch.isfinite(p.detach()).all()):
            raise DivergedError(f"training {job}: field 'weights': parameter {name!r} is not finite after training "
                                "(the run diverged: lower the learning rate)")
