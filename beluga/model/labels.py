"""A classifier's classes by name: which of a model's output columns is which
class of the task (SENT: negative / positive, or negative / neutral / positive
for a three-class model; PARA: not duplicate / duplicate; NLI: entailment /
neutral / contradiction; NLI_BINARY: entailment / not entailment;
ACCEPTABILITY: unacceptable / acceptable), read from the
model's ``config.json`` ``id2label``, never guessed from the position.

- The project's models are saved with ``id2label`` / ``label2id`` naming the
  task's classes (:func:`named_config`, called by
  :func:`beluga.model.modeling.save_model`).
- ``test`` maps a model's classes to the task's (:func:`label_map`): by name
  when every name is one of the task's classes or a common variant of it
  (case-insensitive, ``_`` / ``-`` read as spaces: :data:`VARIANTS`); by
  position only for a model the pipeline saved (config.json's
  ``beluga_task`` record) whose names are transformers' defaults
  (``LABEL_0``, ``LABEL_1``: saved before the names were written); otherwise
  by ``--label-order`` (the model's classes in order), which a named model
  must agree with. Anything else is refused in one line naming the model and
  the field. The probability columns are then permuted into the task's order
  (:func:`permute_outputs`) before anything is scored.
- ``score`` reads a predictions file's probability columns in the task's
  order, or in the order ``--label-order`` gives (:func:`order_from_option`).

No torch here: :func:`permute_outputs` indexes the logits the model returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from beluga.core.errors import BelugaError, ModelError
from beluga.core.tasks import TaskType
from beluga.model.config import TASK_RECORD_KEY

#: the task's class names (as beluga/core/tasks.py spells them, normalised) -> the names read as that class.
#: Principled and short: the name itself and its usual abbreviation; for PARA the words the GLUE pair tasks use
#: (QQP: duplicate, MRPC: equivalent, PAWS: paraphrase) and their negations; for NLI and ACCEPTABILITY the
#: datasets' own names and their verb / adjective forms. Numbers and LABEL_i are not names.
VARIANTS: dict[str, tuple[str, ...]] = {
    "negative": ("negative", "neg"),
    "neutral": ("neutral", "neu"),
    "positive": ("positive", "pos"),
    "not duplicate": ("not duplicate", "non duplicate", "nonduplicate", "not paraphrase", "not equivalent",
                      "different"),
    "duplicate": ("duplicate", "paraphrase", "equivalent"),
    # NLI (MNLI, SNLI: entailment / neutral / contradiction; RTE, QNLI: not_entailment; HANS, SciTail:
    # non-entailment, neutral) and acceptability (CoLA: acceptable / unacceptable, grammaticality judgements)
    "entailment": ("entailment", "entails", "entailed"),
    "contradiction": ("contradiction", "contradicts", "contradictory"),
    "not entailment": ("not entailment", "non entailment", "nonentailment", "not entailed", "not entails"),
    "acceptable": ("acceptable", "grammatical"),
    "unacceptable": ("unacceptable", "not acceptable", "ungrammatical", "not grammatical"),
}

#: transformers' default names (LABEL_0, ...) and bare numbers: they say nothing about which class is which
_PLACEHOLDER = re.compile(r"(label)?\s*\d+", re.IGNORECASE)


def norm_label(name: str) -> str:
    """Lower case, ``_`` and ``-`` as spaces, one space between words."""
    return " ".join(str(name).lower().replace("_", " ").replace("-", " ").split())


def task_classes(ttype: TaskType, k: int) -> tuple[str, ...] | None:
    """The task's class names, in the order its scoring reads a ``k``-class model's columns (SENT: 2 classes as
    the i.i.d. data's, 3 as the suite's; PARA: 2), or None when the task reads no ``k``-class model."""
    for labels in (ttype.iid_labels, ttype.suite_labels):
        if labels and len(labels) == k:
            return tuple(labels[i] for i in range(k))
    return None


def read_name(name: str, classes: tuple[str, ...]) -> str | None:
    """The class of ``classes`` a model's label name means, or None."""
    n = norm_label(name)
    for c in classes:
        if n in VARIANTS.get(norm_label(c), (norm_label(c),)):
            return c
    return None


def is_placeholder(name: str) -> bool:
    return bool(_PLACEHOLDER.fullmatch(str(name).strip().replace("_", "")))


def named_config(ttype: TaskType, k: int) -> dict:
    """``id2label`` / ``label2id`` naming a ``k``-class model's classes for the task (empty when it has no names
    for ``k``: a QA head)."""
    classes = task_classes(ttype, k)
    if not classes:
        return {}
    return {"id2label": {str(i): c for i, c in enumerate(classes)}, "label2id": {c: i for i, c in enumerate(classes)}}


@dataclass(frozen=True)
class LabelMap:
    """How a model's columns are read: ``classes[i]`` is the task class of the model's column ``i``; ``by``: how
    that was known (``id2label``, ``--label-order``, ``position (BELUGA-trained model)``)."""

    classes: tuple[str, ...]
    task_order: tuple[str, ...]
    by: str

    @property
    def columns(self) -> list[int]:
        """The model's columns in the task's order (``probs[:, columns]`` is in the task's order)."""
        return [self.classes.index(c) for c in self.task_order]

    @property
    def identity(self) -> bool:
        return self.classes == self.task_order

    def record(self) -> dict:
        return {"by": self.by, "model_classes": list(self.classes), "task_classes": list(self.task_order)}


def _shown(names) -> str:
    return ", ".join(str(n) for n in names)


def _hint(classes: tuple[str, ...]) -> str:
    return ",".join(c.replace(" ", "_") for c in classes)


def _model_names(config: dict, k: int) -> list[str] | None:
    """config.json's ``id2label`` as k names by class index, None when it has none (transformers then names the
    classes LABEL_0, ...) or not k of them."""
    id2label = config.get("id2label")
    if not isinstance(id2label, dict):
        return None
    try:
        by_index = {int(i): str(n) for i, n in id2label.items()}
    except (TypeError, ValueError):
        return None
    if sorted(by_index) != list(range(k)):
        return None
    return [by_index[i] for i in range(k)]


def parse_order(text: str, classes: tuple[str, ...], where: str) -> tuple[str, ...]:
    """``--label-order`` (comma-separated, the columns' classes in order; variants read as in :data:`VARIANTS`)
    as the task's class names, or one line naming ``where`` and the field."""
    names = [n for n in (p.strip() for p in str(text).split(","))]
    hint = f"give the {len(classes)} classes {_shown(classes)} in the model's order, e.g. {_hint(classes)}"
    if len(names) != len(classes):
        raise BelugaError(f"{where}: field '--label-order': {text!r} names {len(names)} classes, the model has "
                          f"{len(classes)}; {hint}")
    read = [read_name(n, classes) for n in names]
    if None in read:
        bad = names[read.index(None)]
        raise BelugaError(f"{where}: field '--label-order': {bad!r} is not a class of this task; {hint}")
    if len(set(read)) != len(read):
        raise BelugaError(f"{where}: field '--label-order': {text!r} names a class twice; {hint}")
    return tuple(read)


def label_map(config: dict, ttype: TaskType, k: int, name: str, label_order: str | None = None) -> LabelMap | None:
    """How a ``k``-class model (``config``: its config.json) is read for ``ttype`` (None: not a classifier the
    task reads by classes). Refused in one line naming the model and the field: default names (LABEL_i) on a
    model the pipeline did not save, names that are not the task's classes, and a ``--label-order`` that the
    names contradict, each unless resolved as the message says."""
    classes = task_classes(ttype, k)
    if not classes:
        return None
    where = f"model {name}"
    given = parse_order(label_order, classes, where) if label_order is not None else None
    names = _model_names(config, k)
    shown = _shown(names) if names else _shown(f"LABEL_{i}" for i in range(k))
    read = [read_name(n, classes) for n in names] if names else [None] * k
    complete = None not in read and len(set(read)) == k
    for i, (r, g) in enumerate(zip(read, given or ())):
        if r is not None and r != g:
            raise ModelError(f"{where}: field '--label-order': says class {i} is {g!r}, but config.json id2label "
                             f"names it {names[i]!r} ({_shown(names)}); the names are read, drop --label-order")
    if complete:
        return LabelMap(tuple(read), classes, "id2label")
    if given is not None:
        return LabelMap(given, classes, "--label-order")
    placeholders = names is None or all(is_placeholder(n) for n in names)
    if placeholders and TASK_RECORD_KEY in config:
        return LabelMap(classes, classes, "position (BELUGA-trained model)")
    if placeholders:
        raise ModelError(f"{where}: field 'id2label': {shown} say nothing about which class is which; give "
                         f"--label-order {_hint(classes)} (the model's classes in order) if that is the order")
    variants = ", ".join("/".join(VARIANTS[norm_label(c)]) for c in classes)
    raise ModelError(f"{where}: field 'id2label': {shown} are not read as the classes {_shown(classes)} of task "
                     f"type {ttype.name!r} (each once; names read: {variants}); give --label-order with the model's "
                     f"classes in order, e.g. --label-order {_hint(classes)}")


def order_from_option(label_order: str | None, ttype: TaskType, k: int, where: str) -> LabelMap | None:
    """``score --label-order``: how a predictions file's ``k`` probability columns are read (None: the task's
    order, as ``test`` writes them)."""
    if label_order is None:
        return None
    classes = task_classes(ttype, k)
    if not classes:
        what = f"{k} probability columns" if k else "answers"
        raise BelugaError(f"{where}: field '--label-order': task type {ttype.name!r} has no classes to order for "
                          f"predictions with {what}")
    return LabelMap(parse_order(label_order, classes, where), classes, "--label-order")


def permute_outputs(model, lmap: LabelMap | None):
    """Make ``model``'s logits come out in the task's order (a forward hook; the weights are not touched).
    Returns the hook's handle (None when nothing is permuted)."""
    if lmap is None or lmap.identity:
        return None
    cols = lmap.columns

    def hook(_module, _inputs, out):
        if isinstance(out, tuple):
            return (out[0][..., cols], *out[1:])
        out.logits = out.logits[..., cols]
        return out

    return model.register_forward_hook(hook)
