"""Task types (SENT, PARA, READ; NLI, NLI_BINARY, ACCEPTABILITY, SIMILARITY, SIMILARITY_CLASSES: issue 40): label sets,
training targets, the model's head (``classification``, extractive ``qa`` or ``regression``), the mapping from model
probabilities to the classes the suite's expectations speak about, the task's canonical i.i.d. metrics and the
per-example features they are computed from (:mod:`beluga.score.metrics`, :mod:`beluga.report.stats`), and what the
task is, in words.

Names used everywhere: a *task* is an entry of the config's ``tasks`` (its id
names paths and messages); its *task type* is ``sent``, ``para``, ``read``,
``nli``, ``nli_binary``, ``acceptability``, ``similarity`` or ``similarity_classes`` (a
:class:`TaskType`, found with :func:`get_task_type`); the *head* is the
model's output layer, ``classification`` (predictions: class probabilities),
``qa`` (start / end positions; predictions: answer strings) or ``regression``
(one output; predictions: a score, :mod:`beluga.heads.score.cases`).

NLI and its two-class variants (issue 40). ``nli`` is MultiNLI's three-class
task (0 entailment, 1 neutral, 2 contradiction, GLUE's numbering) on (premise,
hypothesis) pairs, scored by accuracy. The two-class NLI sets are of two kinds:

- *evaluated* with a three-class model (HANS, SciTail, RTE as an OOD set of an
  MNLI model): an OOD entry of an ``nli`` task declares ``collapse``, the
  set's class of each of the model's classes by name (HANS's standard
  evaluation: neutral and contradiction -> non-entailment); the model's argmax
  class is mapped onto the set's classes and scored by accuracy
  (:mod:`beluga.data.ood_collapse`);
- *trained* as two-class tasks (GLUE's RTE, QNLI): the type ``nli_binary``
  (0 entailment, 1 not entailment: RTE's and QNLI's own names and numbers),
  scored by accuracy, GLUE's metric for both.

``acceptability`` is CoLA's single-sentence task (0 unacceptable, 1
acceptable) with Matthews correlation (GLUE's CoLA metric) and accuracy.
``similarity`` is STS-B's sentence-pair regression (a score in [0, 5]) with
Pearson and Spearman correlation; ``similarity_classes`` is GLUE-X's STS-B, the
same data as five classes (the score rounded to 0..4, :class:`ScoreClassesType`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from beluga.core.errors import ConfigError


@dataclass(frozen=True)
class TaskType:
    name: str
    num_model_labels: int          # classes of the trained model's head (0 for extractive QA)
    suite_labels: dict[int, str]   # labels used in the suite (empty for QA: answers are strings)
    iid_labels: dict[int, str]     # labels of the i.i.d. dataset (empty for QA)
    neutral_label: int | None = None
    head: str = "classification"   # "classification" (predictions: probs), "qa" (predictions: answer) or
                                   # "regression" (predictions: score)
    pair: bool = False             # inputs are pairs (inputs, inputs_b): PARA (q1, q2), READ (context, question)
    #: the canonical i.i.d. metrics (docs/PROCEDURE.md, §5), in the order tables show them; ``iid_metric: mean`` is
    #: their unweighted mean (beluga.score.metrics.iid_score)
    iid_metrics: tuple[str, ...] = ("accuracy",)
    #: the per-example features the metrics are computed from (beluga.report.stats.iid_features): ``correct``;
    #: ``tp`` / ``fp`` / ``fn``, the indicators of class 1 (F1, MCC); ``em`` / ``f1`` (READ)
    iid_features: tuple[str, ...] = ("correct",)
    #: metrics reported beside the OOD tables' score, never averaged into it nor ranked
    #: (SIMILARITY_CLASSES: GLUE's STS-B Pearson / Spearman of the same model, :meth:`ScoreClassesType.class_scores`)
    reported_metrics: tuple[str, ...] = ()
    words: str = ""                # what the task is, in words (the model card's Task row)
    #: a monotonic DIR with a ``label`` trains the confidence of that class (the suite's label indexes the model's
    #: classes), not of the original's top class (the reference code's, kept for SENT / PARA):
    #: beluga.train.losses.dir_error
    dir_compares_label: ClassVar[bool] = False

    def mft_target(self, expect: str, label: int | None) -> list[float]:
        """Soft training target for one MFT input (docs/PROCEDURE.md, §3.1)."""
        raise NotImplementedError

    def suite_probs(self, probs: np.ndarray) -> np.ndarray:
        """Model probabilities -> probabilities over the suite's label set."""
        return probs


class SentimentType(TaskType):
    """SENT: a binary model (0 = negative, 1 = positive) tested with a
    three-class suite (0 = negative, 1 = neutral, 2 = positive)."""

    def mft_target(self, expect: str, label: int | None) -> list[float]:
        if expect == "not_negative" or (expect == "eq_or_not_negative" and label is not None and int(label) == 1):
            return [1 / 3, 2 / 3]   # "not negative": positive or neutral
        if expect not in ("eq", "eq_or_not_negative") or label is None:
            raise ConfigError(f"SENT: expectation {expect!r} cannot be trained as an MFT")
        return {0: [1.0, 0.0], 1: [0.5, 0.5], 2: [0.0, 1.0]}[int(label)]

    def suite_probs(self, probs: np.ndarray) -> np.ndarray:
        probs = np.asarray(probs, dtype=np.float64)
        if probs.ndim == 2 and probs.shape[1] == 3:
            return probs
        if probs.ndim != 2 or probs.shape[1] != 2:
            raise ValueError(f"SENT expects two- or three-class probabilities, got shape {probs.shape}")
        return binary_to_three_class(probs[:, 1])


def binary_to_three_class(p_pos: np.ndarray) -> np.ndarray:
    """CheckList's sentiment-tutorial mapping (also BELUGA's): P(pos) = p;
    p < 1/3 negative, p > 2/3 positive, otherwise neutral with confidence
    1 - 3|p - 1/2| and the rest on the nearer side."""
    pr = np.asarray(p_pos, dtype=np.float64)
    pp = np.zeros((pr.shape[0], 3))
    margin = 1 / 3
    mn = margin / 2
    neg = pr < 0.5 - mn
    pp[neg, 0] = 1 - pr[neg]
    pp[neg, 2] = pr[neg]
    pos = pr > 0.5 + mn
    pp[pos, 0] = 1 - pr[pos]
    pp[pos, 2] = pr[pos]
    npos = (pr >= 0.5) & (pr < 0.5 + mn)
    pp[npos, 1] = 1 - (1 / margin) * np.abs(pr[npos] - 0.5)
    pp[npos, 2] = 1 - pp[npos, 1]
    nneg = (pr < 0.5) & (pr > 0.5 - mn)
    pp[nneg, 1] = 1 - (1 / margin) * np.abs(pr[nneg] - 0.5)
    pp[nneg, 0] = 1 - pp[nneg, 1]
    return pp


class ParaphraseType(TaskType):
    """PARA: duplicate-question classification (0 = not duplicate, 1 = duplicate)
    on (question1, question2) pairs; suite and model share the label set."""

    def mft_target(self, expect: str, label: int | None) -> list[float]:
        if expect != "eq" or label is None:
            raise ConfigError(f"PARA: expectation {expect!r} without a label cannot be trained as an MFT")
        return [1.0, 0.0] if int(label) == 0 else [0.0, 1.0]

    def suite_probs(self, probs: np.ndarray) -> np.ndarray:
        probs = np.asarray(probs, dtype=np.float64)
        if probs.ndim != 2 or probs.shape[1] != 2:
            raise ValueError(f"PARA expects two-class probabilities, got shape {probs.shape}")
        return probs


class LabelledType(TaskType):
    """A classification task whose suite and model share one label set (NLI:
    entailment / neutral / contradiction on (premise, hypothesis) pairs, as
    GLUE's MNLI numbers them; NLI_BINARY: entailment / not entailment, as RTE
    and QNLI; ACCEPTABILITY: CoLA's unacceptable / acceptable single
    sentences): an MFT's ``eq`` label is the one-hot target; ``not_eq`` (any
    class but ``val``: NLI's "not entailment", HANS's non-entailed heuristic
    cases) spreads the target evenly over the other classes, as SENT's "not
    negative" does ([0, 1/2, 1/2] for NLI)."""

    dir_compares_label: ClassVar[bool] = True

    def mft_target(self, expect: str, label: int | None) -> list[float]:
        if expect not in ("eq", "not_eq") or label is None:
            raise ConfigError(f"{self.name.upper()}: expectation {expect!r} without a label "
                              "cannot be trained as an MFT")
        k = int(label)
        if k not in self.suite_labels:
            raise ConfigError(f"{self.name.upper()}: label {k} is not one of {sorted(self.suite_labels)}")
        if expect == "not_eq":
            rest = self.num_model_labels - 1
            return [0.0 if i == k else 1.0 / rest for i in range(self.num_model_labels)]
        return [1.0 if i == k else 0.0 for i in range(self.num_model_labels)]

    def suite_probs(self, probs: np.ndarray) -> np.ndarray:
        probs = np.asarray(probs, dtype=np.float64)
        if probs.ndim != 2 or probs.shape[1] != self.num_model_labels:
            raise ValueError(f"{self.name.upper()} expects {self.num_model_labels}-class probabilities, "
                             f"got shape {probs.shape}")
        return probs


class ScoreClassesType(LabelledType):
    """SIMILARITY_CLASSES: GLUE-X's STS-B (and SICK relatedness as its OOD set), a five-class classification of
    sentence pairs: "We rounded floating number labels of textual similarity to integers from 0 to 4, converting it
    into a five-class dataset" (Yang et al. 2023, §3.2). It reads the data of a similarity task (a score in [0, 5])
    and trains / scores the score's class (:meth:`score_classes`)."""

    #: the task type whose data the type reads (beluga.data.iid.SOURCE_TASK_TYPES: STS-B holds similarity's)
    reads_type: ClassVar[str] = "similarity"

    def score_classes(self, scores) -> np.ndarray:
        """Scores in [0, 5] -> classes 0..4. The paper says "rounded ... to integers from 0 to 4", which leaves
        [4.5, 5] (round gives 5) open; chosen: round to the nearest integer (halves up, not Python's to-even), then
        5 -> 4: class k holds [k - 0.5, k + 0.5) and class 4 holds [3.5, 5] (docs/DEVIATIONS.md). SICK's [1, 5]
        gives classes 1..4."""
        x = np.asarray(scores, dtype=np.float64)
        return np.minimum(np.floor(x + 0.5), self.num_model_labels - 1).astype(int)

    def class_scores(self, probs) -> np.ndarray:
        """A five-class model's predicted score for GLUE's STS-B metrics (:attr:`reported_metrics`): the expected
        class under its probabilities, sum over k of k x P(class k), in the classes' units (0..4; Pearson and
        Spearman do not depend on the units). The expected class, not the argmax: it keeps the model's graded
        output, where the argmax would tie every example of a class (docs/DEVIATIONS.md)."""
        p = np.asarray(probs, dtype=np.float64)
        return p @ np.arange(p.shape[1], dtype=np.float64)


class QAType(TaskType):
    """READ: extractive question answering on (context, question) pairs; the
    model predicts start/end positions, predictions are answer strings."""

    def mft_target(self, expect: str, label) -> list[float]:
        raise ConfigError("READ: MFT targets are answer spans, not class distributions")

    def suite_probs(self, probs: np.ndarray) -> np.ndarray:
        raise ValueError("READ predictions are answer strings, not class probabilities")


@dataclass(frozen=True)
class RegressionType(TaskType):
    """A score on a pair by regression (SIMILARITY: STS-B / SICK relatedness in
    [0, 5]): a one-output head trained with squared error, predictions are
    scores, and the suite's expectations speak about scores
    (:mod:`beluga.heads.score.cases`: MFT within a tolerance of a value or inside
    bounds, INV within a tolerance, DIR in a direction). No classes."""

    score_range: tuple[float, float] = (0.0, 5.0)   # the gold scores' range (a DIR at its bound is not scored)

    def mft_target(self, expect: str, label) -> list[float]:
        raise ConfigError(f"{self.name.upper()}: MFT targets are scores (beluga.heads.score.cases), not class "
                          "distributions")

    def suite_probs(self, probs: np.ndarray) -> np.ndarray:
        raise ValueError(f"{self.name.upper()} predictions are scores, not class probabilities")


SENT = SentimentType(
    name="sent",
    num_model_labels=2,
    suite_labels={0: "negative", 1: "neutral", 2: "positive"},
    iid_labels={0: "negative", 1: "positive"},
    neutral_label=1,
    words="sentiment classification",
)

PARA = ParaphraseType(
    name="para",
    num_model_labels=2,
    suite_labels={0: "not duplicate", 1: "duplicate"},
    iid_labels={0: "not duplicate", 1: "duplicate"},
    pair=True,
    iid_metrics=("accuracy", "f1"),
    iid_features=("correct", "tp", "fp", "fn"),
    words="duplicate-question (paraphrase) classification",
)

NLI = LabelledType(
    name="nli",
    num_model_labels=3,
    suite_labels={0: "entailment", 1: "neutral", 2: "contradiction"},
    iid_labels={0: "entailment", 1: "neutral", 2: "contradiction"},
    pair=True,
    words="natural language inference (entailment / neutral / contradiction)",
)

NLI_BINARY = LabelledType(
    name="nli_binary",
    num_model_labels=2,
    suite_labels={0: "entailment", 1: "not entailment"},
    iid_labels={0: "entailment", 1: "not entailment"},
    pair=True,
    words="two-class natural language inference (entailment / not entailment: RTE, QNLI)",
)

#: ``iid_metric: mean`` of ACCEPTABILITY is the mean of MCC and accuracy (as PARA's of accuracy and F1);
#: ``iid_metric: mcc`` is GLUE's CoLA score alone
ACCEPTABILITY = LabelledType(
    name="acceptability",
    num_model_labels=2,
    suite_labels={0: "unacceptable", 1: "acceptable"},
    iid_labels={0: "unacceptable", 1: "acceptable"},
    iid_metrics=("mcc", "accuracy"),
    iid_features=("correct", "tp", "fp", "fn"),
    words="linguistic acceptability (CoLA: unacceptable / acceptable)",
)

#: SIMILARITY's per-example i.i.d. features (beluga.report.stats.iid_features): the first moments of the
#: predicted / gold scores (p, g, p^2, g^2, p g) and of their ranks within the split (Spearman's rho is
#: Pearson's r of the ranks): a correlation is a function of these means, so the paired randomization test,
#: the bootstrap intervals and the pooled statistics reuse the machinery of the mean-based metrics
SIMILARITY_FEATURES = ("pred_score", "gold_score", "pred_sq", "gold_sq", "pred_gold",
                       "pred_rank", "gold_rank", "pred_rank_sq", "gold_rank_sq", "pred_gold_rank")

SIMILARITY = RegressionType(
    name="similarity",
    num_model_labels=1,
    suite_labels={},
    iid_labels={},
    head="regression",
    pair=True,
    score_range=(0.0, 5.0),
    iid_metrics=("pearson", "spearman"),
    iid_features=SIMILARITY_FEATURES,
    words="semantic textual similarity (STS-B: a score in [0, 5] by regression)",
)

#: GLUE-X's five-class STS-B: the labels are the classes' integers, by name; scored by accuracy (docs/DEVIATIONS.md)
SIMILARITY_CLASSES = ScoreClassesType(
    name="similarity_classes",
    num_model_labels=5,
    suite_labels={k: str(k) for k in range(5)},
    iid_labels={k: str(k) for k in range(5)},
    pair=True,
    reported_metrics=("pearson", "spearman"),
    words="semantic textual similarity as five classes (GLUE-X's STS-B: the score in [0, 5] rounded to 0..4)",
)

READ = QAType(
    name="read",
    num_model_labels=0,
    suite_labels={},
    iid_labels={},
    head="qa",
    pair=True,
    iid_metrics=("em", "f1"),
    iid_features=("em", "f1"),
    words="extractive question answering",
)

#: every task type; a config's ``type`` is further limited to what schemas/config.schema.yaml lists
TASK_TYPES: dict[str, TaskType] = {"sent": SENT, "para": PARA, "read": READ, "nli": NLI,
                                   "nli_binary": NLI_BINARY, "acceptability": ACCEPTABILITY,
                                   "similarity": SIMILARITY, "similarity_classes": SIMILARITY_CLASSES}

# CheckList suite name -> task type
SUITE_TASK_TYPES = {"sentiment": "sent", "qqp": "para", "squad": "read"}


def get_task_type(name: str) -> TaskType:
    if name not in TASK_TYPES:
        raise ConfigError(f"config: field 'type': unknown task type {name!r} "
                          f"(implemented: {', '.join(TASK_TYPES)})")
    return TASK_TYPES[name]
