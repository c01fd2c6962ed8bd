"""OOD sets with fewer classes than the task's model, scored through a *collapse* of the model's classes
(``tasks.<id>.ood[].collapse``; beluga/core/tasks.py, "NLI and its two-class variants"; docs/OOD.md).

The standard evaluation of a three-class MNLI model on a two-class NLI set (HANS, McCoy et al. 2019:
"neutral" and "contradiction" both count as "non-entailment"; likewise SciTail and RTE): the entry names,
for every class of the model, the set's class it counts as::

    collapse: {entailment: entailment, neutral: non-entailment, contradiction: non-entailment}

- the set's classes are the collapse's values in the order of the model's classes (here 0 entailment,
  1 non-entailment: HANS's, RTE's and QNLI's own order);
- the set's gold labels are read by name (case-insensitive, ``_`` / ``-`` as spaces:
  :func:`beluga.model.labels.norm_label`), each one of the set's classes, or first mapped by ``label_map``
  (the label as the file writes it -> the set's class, e.g. ``{"0": entailment, "1": non-entailment}``);
- the model predicts its own classes; its argmax class is mapped onto the set's (the prediction, not the
  probabilities, is collapsed, as HANS's evaluation script does) and the outcome row's ``pred_label`` /
  ``gold_label`` / ``correct`` are the set's. The set is then scored with the task's metrics (NLI:
  accuracy), and its tests and tables treat it as any OOD set.

The prepared table keeps the set's class names and the mapping in its Parquet metadata
(:data:`METADATA_KEY`), which :func:`read_collapse` reads back for the outcomes step.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from beluga.core.errors import ConfigError, DataError
from beluga.model.labels import norm_label

#: the prepared OOD table's metadata key holding {"classes": the set's class names, "model_to_set": indices}
METADATA_KEY = "beluga.ood_collapse"


def collapse_plan(entry: dict, model_classes: dict[int, str], where: str | None = None) -> tuple[list[str], list[int]]:
    """(the set's class names, the set's class index of each model class, in the model's order) of an OOD
    entry with ``collapse``; one line naming the entry's field (``where``: the config file and field) when a
    model class is missing or unknown or the set would have fewer than two classes."""
    where = where or f"ood set {entry.get('name')!r}: field 'collapse'"
    raw = entry.get("collapse")
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{where}: expected a mapping of the model's classes to the set's classes")
    if not model_classes:
        raise ConfigError(f"{where}: the task's model has no classes to collapse (extractive QA)")
    names = {norm_label(v): v for v in model_classes.values()}
    given = {}
    for k, v in raw.items():
        if norm_label(k) not in names:
            raise ConfigError(f"{where}: {k!r} is not a class of the task's model "
                              f"({', '.join(model_classes[i] for i in sorted(model_classes))})")
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"{where}: the set's class of {k!r} must be a name, got {v!r}")
        given[norm_label(k)] = norm_label(v)
    missing = [model_classes[i] for i in sorted(model_classes) if norm_label(model_classes[i]) not in given]
    if missing:
        raise ConfigError(f"{where}: the model's class {missing[0]!r} has no class of the set (every class of "
                          "the model counts as one of the set's)")
    classes: list[str] = []
    for i in sorted(model_classes):
        c = given[norm_label(model_classes[i])]
        if c not in classes:
            classes.append(c)
    if len(classes) < 2:
        raise ConfigError(f"{where}: every class of the model maps to {classes[0]!r}; a set needs two classes")
    return classes, [classes.index(given[norm_label(model_classes[i])]) for i in sorted(model_classes)]


def set_labels(values: pd.Series, classes: list[str], label_map: dict | None, where: str) -> np.ndarray:
    """The gold labels of a collapsed set as indices of ``classes``: each value read by name, after
    ``label_map`` (the file's label -> the set's class); one line naming the first row that is neither."""
    mapping = {str(k): norm_label(v) for k, v in (label_map or {}).items()}
    index = {c: i for i, c in enumerate(classes)}
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values.tolist()):
        key = str(v.item() if hasattr(v, "item") else v).strip()
        name = mapping.get(key, norm_label(key))
        if name not in index:
            raise DataError(f"{where}: row {i}: field 'label': {key!r} is not one of the set's classes "
                            f"({', '.join(classes)}){' after label_map' if mapping else ''}")
        out[i] = index[name]
    return out


def metadata(classes: list[str], model_to_set: list[int]) -> dict[str, str]:
    """The prepared table's Parquet metadata entry of a collapsed set."""
    return {METADATA_KEY: json.dumps({"classes": list(classes), "model_to_set": [int(i) for i in model_to_set]})}


def read_collapse(path) -> list[int] | None:
    """The model-to-set mapping recorded in a prepared OOD table (None: the set has the model's classes)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(METADATA_KEY.encode())
    if raw is None:
        return None
    try:
        return [int(i) for i in json.loads(raw.decode())["model_to_set"]]
    except (ValueError, KeyError, TypeError):
        raise DataError(f"OOD test data {path}: field '{METADATA_KEY}': not a collapse record; delete the file "
                        "and run snakemake again, which re-creates it") from None


def collapse_predictions(pred_label: np.ndarray, model_to_set: list[int], source: str) -> np.ndarray:
    """The model's argmax classes mapped onto the set's classes."""
    table = np.asarray(model_to_set, dtype=np.int64)
    pred = np.asarray(pred_label, dtype=np.int64)
    if len(pred) and pred.max() >= len(table):
        raise DataError(f"{source}: field 'probs': {pred.max() + 1} classes predicted, the collapse maps "
                        f"{len(table)}")
    return table[pred]
