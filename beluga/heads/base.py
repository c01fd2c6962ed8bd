"""The head protocol (:class:`Head`) and what the heads share: the batched forward pass of a sequence model
and the checks of a table of per-example predictions against its gold table."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from beluga.core.errors import DataError

#: a model that predicts one class (one answer) for at least this share of its inputs is degenerate: the
#: default of the pipeline's diagnostics (``diagnostics.degenerate_share``, :mod:`beluga.report.diagnostics`) and
#: the share ``test`` and ``score`` flag (:meth:`Head.constant_predictor`)
DEGENERATE_SHARE = 0.95


def share_text(share: float, n: int) -> str:
    """``all 40 inputs`` / ``97.5% of 40 inputs``: a share of a constant predictor's inputs."""
    return f"all {n} inputs" if share >= 1 else f"{100 * share:.1f}% of {n} inputs"


class Head(ABC):
    """What a model's output layer is, and everything that depends on it (:mod:`beluga.heads`)."""

    #: the name a task type and a saved model's task record give the head
    name: ClassVar[str]
    #: the transformers auto class a model with this head is loaded with
    auto_class: ClassVar[str]
    #: the transformers table of model types that have that class (module under transformers.models.auto, name)
    family_table: ClassVar[tuple[str, str]] = ("modeling_auto", "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES")
    #: the head, in words ("a sequence classification head")
    words: ClassVar[str]
    #: what a prediction is, in words
    predicts: ClassVar[str]
    #: the Hugging Face pipeline a saved model's card names (None: none fits)
    pipeline_tag: ClassVar[str | None] = None
    #: the predictions table's value column
    value_column: ClassVar[str]
    #: predictions are class probabilities over the task's classes (a model's columns can be named and ordered)
    has_classes: ClassVar[bool] = False
    #: a summary shows an input's second text before its first (a QA head's question before its context)
    second_text_first: ClassVar[bool] = False
    #: the named columns an example table of this head holds (None: a text, an optional second text and a label)
    example_columns: ClassVar[tuple[str, ...] | None] = None
    #: a case's gold labels are scores (a regression's), not classes
    gold_is_score: ClassVar[bool] = False
    #: the suite field that holds a case's gold values (``labels`` or ``answers``)
    gold_field: ClassVar[str] = "labels"
    #: an ``eq``-like expectation without ``val`` needs a ``label`` or an ``answer`` per input
    needs_gold: ClassVar[str] = "label"
    #: CheckList's formats (JSONL export, lm-eval) can carry this head's tests (they judge classes or answers)
    checklist_format: ClassVar[bool] = True
    #: the INV expectation a perturbation tool's suite gets
    inv_expectation: ClassVar[str] = "inv"

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # ------------------------------------------------------------------ suites
    @abstractmethod
    def expectations(self) -> tuple[str, ...]:
        """The suite expectations this head scores (:data:`beluga.suites.format.EXPECTATIONS`' names)."""

    def two_texts(self, ttype) -> bool:
        """Whether the task's inputs are two texts (a pair; READ's context and question)."""
        return bool(ttype.pair)

    def inputs_words(self, ttype) -> str:
        """The task's inputs, in words, for a message that refuses a suite of the other shape."""
        return "pairs of texts (inputs and inputs_b)" if self.two_texts(ttype) else "single texts (no inputs_b)"

    @abstractmethod
    def spec_label(self, ttype, value, fail) -> int | None:
        """A suite spec's label -> the label the suite stores (``fail(message)`` raises the spec's error)."""

    @abstractmethod
    def prediction_text(self, value, ttype) -> str:
        """One input's prediction as a summary shows it."""

    @abstractmethod
    def gold_text(self, gold, ttype) -> str:
        """A case's gold values (its :attr:`gold_field`, not empty) as a summary shows them."""

    # ------------------------------------------------------------------ the model
    def config_overrides(self, num_labels: int) -> dict:
        """config.json settings a model with this head is built with (a class count, a problem type)."""
        return {}

    @abstractmethod
    def check_model(self, model, ttype, name: str) -> None:
        """A loaded trained model's outputs fit the task (``ttype``: None when the task is not known)."""

    @abstractmethod
    def outputs(self, model, tokenizer, texts: list[str], texts_b: list, batch_size: int, max_length: int,
                doc_stride: int, precision) -> dict[str, list]:
        """Prediction columns for the inputs (``texts_b``: second texts, None for a single text)."""

    def example_texts(self, examples) -> tuple[list, list]:
        """(texts, second texts) of a table of examples in the i.i.d. test set's columns."""
        texts = list(examples["text"])
        return texts, list(examples["text_b"]) if "text_b" in examples.columns else [None] * len(examples)

    def example_gold(self, examples):
        """The predictions table's gold column of a table of examples (None: the head stores none)."""
        return None

    @abstractmethod
    def check_predictions(self, df, where: str) -> None:
        """Predicted values are finite before a predictions file is written (``where``: the file)."""

    @abstractmethod
    def prediction_schema(self):
        """The predictions table's Arrow schema."""

    # ------------------------------------------------------------------ training
    @abstractmethod
    def iid_items(self, ttype, iid_train) -> list:
        """Training items of the i.i.d. training examples."""

    @abstractmethod
    def case_items(self, ttype, r, options) -> tuple[str, list]:
        """(stream, training items) of one suite case (``options``: :class:`beluga.train.streams.StreamOptions`)."""

    # ------------------------------------------------------------------ scoring
    @abstractmethod
    def score_cases(self, suite, predictions, ttype, source: str, on_cases, reasons: bool):
        """DataFrame(case_id, functionality, status[, filter_reason]) of the suite's cases from predictions
        covering every input of those cases (:func:`beluga.score.outcomes.score_cases`)."""

    @abstractmethod
    def example_outcomes(self, preds, gold, ids, source: str, collapse) -> dict:
        """The per-example outcome columns of predictions aligned with their gold rows (``ids``: the example
        ids; ``collapse``: an OOD set's class of each model class, a classifier's only)."""

    @abstractmethod
    def metric(self, name: str, rows) -> float:
        """One i.i.d. metric (:data:`beluga.core.tasks.TaskType.iid_metrics`) of per-example outcome rows."""

    # ------------------------------------------------------------------ model selection
    @abstractmethod
    def objective_plan(self, ttype, cases, answer_match: str, eq_or_not_negative_target: str) -> dict:
        """What each term of the reference selection objective reads from the T_val ``cases``."""

    @abstractmethod
    def objective_parts(self, ttype, plan: dict, preds, source: str, predict_spans) -> dict:
        """The reference objective's parts (``predict_spans``: a QA head's argmax agreement, computed by the
        caller with the model)."""

    # ------------------------------------------------------------------ diagnostics
    @abstractmethod
    def diagnostics(self, ttype, iid, suite, is_dir, source: str, whole_suite: bool,
                    degenerate_share: float) -> tuple[dict, bool, bool]:
        """(diagnostic values, degenerate on the i.i.d. test set, degenerate on the suite) of one model's
        predictions joined with their gold rows (:func:`beluga.report.diagnostics.run_diagnostics`)."""

    @abstractmethod
    def constant_predictor(self, ttype, values, source: str, share: float = DEGENERATE_SHARE) -> dict | None:
        """One model's predictions of a suite's inputs (``values``: its :attr:`value_column`) described when
        they are (nearly) the same for every input -- ``text``, what it predicts for how many inputs in the
        task's words, and the numbers behind it -- else None (None for no input). ``test`` and ``score`` flag
        such a model (:func:`beluga.cli.results.write_results`): its failure rates describe that constant."""


def sequence_forward(model, tokenizer, texts: list[str], texts_b: list[str] | None, batch_size: int,
                     max_length: int, precision, width: int, finish):
    """A sequence model's outputs for the inputs, in input order: batched by length for speed, forward
    passes under ``precision``'s autocast, ``finish(logits)`` (float32 logits -> ``width`` values per input)
    on each batch. float32 array (n, width)."""
    import torch

    model.eval()
    n = len(texts)
    out = np.zeros((n, width), dtype=np.float32)
    if n == 0:
        return out
    order = sorted(range(n), key=lambda i: len(texts[i]) + (len(texts_b[i]) if texts_b else 0))
    with torch.inference_mode():
        for s in range(0, n, batch_size):
            idx = order[s:s + batch_size]
            a = [texts[i] for i in idx]
            b = [texts_b[i] for i in idx] if texts_b else None
            enc = tokenizer(a, b, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            with precision.autocast():
                logits = model(**{k: v.to(model.device) for k, v in enc.items()}).logits
            out[idx] = finish(logits.float()).cpu().numpy()
    return out


def aligned_ids(preds, gold, source: str):
    """(example ids of the predictions, the gold table indexed by id): every prediction is of a known example
    and every example has one."""
    gold = gold.set_index("example_id")
    ids = preds["case_id"].astype(str).to_numpy()
    missing = [i for i in ids if i not in gold.index]
    if missing:
        raise DataError(f"{source}: field 'case_id': i.i.d. prediction for unknown example {missing[0]!r}")
    if len(set(ids)) != len(gold):
        raise DataError(f"{source}: field 'case_id': {len(set(ids))} i.i.d. predictions for {len(gold)} test examples")
    return ids, gold


def shorten(text, n: int = 70) -> str:
    """``text`` on one line, at most ``n`` characters (an ellipsis where it was cut)."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"
