"""Prediction tables: a model's outputs for every input of some suite cases
and of the i.i.d. test set, keyed by (split, case_id, input_idx) — never by
row order.

Contract (docs/PIPELINE.md): ``split`` (``suite_test`` / ``iid_test``,
``ood:<name>`` for an OOD set, or ``suite_val`` for model selection),
``case_id`` (test case id, or the i.i.d. / OOD example id), ``input_idx``
(position in the case's inputs; 0 for examples), and ``probs`` (class
probabilities, float32) with the example's ``label`` for a
classification head, ``answer`` / ``start`` / ``end`` (the answer string and
its character offsets in the context) for a QA head, or ``score`` (the
predicted score, float32) with the example's gold score ``label`` (float32)
for a regression head (:mod:`beluga.heads.score.cases`).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pyarrow as pa

from beluga.core.tasks import TaskType
from beluga.heads import head_of


def model_outputs(model, tokenizer, ttype: TaskType, texts: list[str], texts_b: list, batch_size: int,
                  max_length: int, doc_stride: int, precision) -> dict[str, list]:
    """Prediction columns for the inputs, as the task's head makes them (:meth:`beluga.heads.Head.outputs`)."""
    return head_of(ttype).outputs(model, tokenizer, texts, texts_b, batch_size, max_length, doc_stride, precision)


def suite_predictions(model, tokenizer, ttype: TaskType, cases: pd.DataFrame, split: str, batch_size: int,
                      max_length: int, doc_stride: int, precision, *, chunk_cases: int | None = None,
                      on_chunk: Callable[[int], None] | None = None) -> pd.DataFrame:
    """Predictions for every input of ``cases``, keyed by (case_id, input_idx).
    ``chunk_cases`` (optional): predicted ``chunk_cases`` cases at a time (each
    chunk batched by length on its own), ``on_chunk`` called with the number
    of cases done after each chunk (a progress bar)."""
    if chunk_cases is not None:
        parts = []
        for start in range(0, len(cases), chunk_cases):
            parts.append(suite_predictions(model, tokenizer, ttype, cases.iloc[start:start + chunk_cases], split,
                                           batch_size, max_length, doc_stride, precision))
            if on_chunk is not None:
                on_chunk(min(len(cases), start + chunk_cases))
        return pd.concat(parts, ignore_index=True)
    keys, texts, texts_b = [], [], []
    for r in cases.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            keys.append((r.case_id, j))
            texts.append(t)
            texts_b.append(r.inputs_b[j] if r.inputs_b is not None else None)
    out = pd.DataFrame({"split": split, "case_id": [k[0] for k in keys], "input_idx": [k[1] for k in keys]})
    for col, values in model_outputs(model, tokenizer, ttype, texts, texts_b, batch_size, max_length,
                                     doc_stride, precision).items():
        out[col] = values
    return out


def example_predictions(model, tokenizer, ttype: TaskType, examples: pd.DataFrame, split: str, batch_size: int,
                        max_length: int, doc_stride: int, precision) -> pd.DataFrame:
    """Predictions for a table of examples in the i.i.d. test set's columns
    (the i.i.d. test set, or an OOD set), keyed by example id under ``split``."""
    head = head_of(ttype)
    texts, texts_b = head.example_texts(examples)
    out = pd.DataFrame({"split": split, "case_id": examples["example_id"].astype(str), "input_idx": 0})
    for col, values in model_outputs(model, tokenizer, ttype, texts, texts_b, batch_size, max_length,
                                     doc_stride, precision).items():
        out[col] = values
    gold = head.example_gold(examples)
    if gold is not None:
        out["label"] = gold
    return out


def predictions(model, tokenizer, ttype: TaskType, suite_test: pd.DataFrame, iid: pd.DataFrame, batch_size: int,
                max_length: int, doc_stride: int, precision, ood: dict[str, pd.DataFrame] | None = None
                ) -> pd.DataFrame:
    """Predictions for every input of the ``suite_test`` cases, every i.i.d.
    test example and every example of the ``ood`` sets (name -> table; split
    ``ood:<name>``; see the module docstring)."""
    from beluga.data.ood_sets import split_name

    suite = suite_predictions(model, tokenizer, ttype, suite_test, "suite_test", batch_size, max_length,
                              doc_stride, precision)
    if "label" in head_of(ttype).prediction_schema().names:   # suite inputs have no gold value
        suite["label"] = None
    parts = [suite, example_predictions(model, tokenizer, ttype, iid, "iid_test", batch_size, max_length,
                                        doc_stride, precision)]
    for name, examples in (ood or {}).items():
        parts.append(example_predictions(model, tokenizer, ttype, examples, split_name(name), batch_size,
                                         max_length, doc_stride, precision))
    return pd.concat(parts, ignore_index=True)


def predictions_table(df: pd.DataFrame, ttype: TaskType, where: str) -> pa.Table:
    """The Arrow table of a predictions frame, in the contract's schema; class
    probabilities are checked first (a model whose outputs are not finite
    probabilities never writes any; ``where`` names the file in the message)."""
    head = head_of(ttype)
    head.check_predictions(df, where)
    columns = {c: [None if (c == "label" and pd.isna(v)) else v for v in df[c]] for c in df.columns}
    schema = head.prediction_schema()
    return pa.Table.from_pydict({f.name: columns[f.name] for f in schema}, schema=schema)
