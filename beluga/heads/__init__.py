"""The head a task type trains and tests: one object that the rest of the package asks.

A task type (:mod:`beluga.core.tasks`) names its head (``TaskType.head``: ``classification``, ``qa`` or
``regression``, the name config.json's task record keeps); :func:`head_of` gives the object, chosen once
here. A head owns everything that depends on what the model's output layer is:

- the model: the transformers auto class and family table, the config overrides it loads with, the checks of
  a loaded model (:meth:`Head.config_overrides`, :meth:`Head.check_model`);
- its prediction: what a forward pass returns and how it is stored (:meth:`Head.outputs`, the predictions
  schema, :meth:`Head.check_predictions`, the gold column of an example table);
- its training: the items of an i.i.d. example and of a suite case (:meth:`Head.iid_items`,
  :meth:`Head.case_items`; the one stream builder :func:`beluga.train.streams.build_streams` asks for them);
- its case scoring: pass / fail per expectation (:meth:`Head.score_cases`), its per-example outcomes
  (:meth:`Head.example_outcomes`) and metrics (:meth:`Head.metric`);
- its terms of the reference selection objective (:meth:`Head.objective_plan`, :meth:`Head.objective_parts`);
- its degenerate-model diagnostics (:meth:`Head.diagnostics`) and the constant predictor ``test`` and ``score``
  flag (:meth:`Head.constant_predictor`);
- its suite checks: the expectations it can score, the gold field its cases carry, a label's meaning
  (:meth:`Head.spec_label`), one or two texts (:meth:`Head.two_texts`).

Call sites ask the head instead of branching on its name; the implementations live in the head modules
(:mod:`beluga.heads.classification`, :mod:`beluga.heads.span`, :mod:`beluga.heads.score`) and in the
modules they call, which never import this package (they are handed a head where they need one).
"""

from __future__ import annotations

from beluga.heads.base import Head
from beluga.heads.classification import Classification
from beluga.heads.score import Score
from beluga.heads.span import Span

#: every head by the name a task type and a model's task record give it
HEADS: dict[str, Head] = {h.name: h for h in (Classification(), Span(), Score())}


def get_head(name: str) -> Head:
    """The head of that name (``classification``, ``qa``, ``regression``)."""
    if name not in HEADS:
        raise ValueError(f"model head {name!r} is not one of {', '.join(HEADS)}")
    return HEADS[name]


def head_of(ttype) -> Head:
    """The head a task type (a :class:`beluga.core.tasks.TaskType`) trains and tests."""
    return get_head(ttype.head)


__all__ = ["HEADS", "Head", "get_head", "head_of"]
