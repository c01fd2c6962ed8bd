"""The head protocol (beluga.heads): one object per head kind, chosen once from the task type; call sites ask
it instead of branching on its name, and the checks every head needs are made once for all of them."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from beluga.core.errors import DataError
from beluga.core.tasks import TASK_TYPES
from beluga.heads import HEADS, Head, get_head, head_of
from beluga.score.outcomes import iid_outcomes

REPO = Path(__file__).resolve().parents[1]
#: a branch on a head's name (the issue's count): ``head == "qa"``, ``ttype.head != "regression"``, ``head in (...)``
BRANCH = re.compile(r"""(head|\.head)\s*(==|!=)\s*["']|head in \(|head in \[|head not in""")


def test_every_task_type_has_a_head_that_implements_the_protocol():
    assert set(HEADS) == {"classification", "qa", "regression"}
    for name, ttype in TASK_TYPES.items():
        head = head_of(ttype)
        assert isinstance(head, Head) and head.name == ttype.head, name
        assert head.value_column in head.prediction_schema().names
        assert head.expectations() and set(head.expectations()) <= set(get_head("classification").expectations()) \
            | set(get_head("regression").expectations())
    with pytest.raises(ValueError, match="model head 'span' is not one of classification, qa, regression"):
        get_head("span")


def test_the_package_does_not_branch_on_a_head_name():
    """The head kind is picked in the registry only: no module compares a head's name (at most 8 places may,
    the issue's bound; today none does)."""
    hits = [f"{p.relative_to(REPO)}:{i}: {line.strip()}" for p in sorted((REPO / "beluga").rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if BRANCH.search(line)]
    assert len(hits) <= 8, "\n".join(hits)
    assert not hits, "a head-name branch is back (ask the head instead):\n" + "\n".join(hits)
    assert BRANCH.search('if ttype.head == "qa":') and BRANCH.search("head not in X")   # the pattern sees them


@pytest.mark.parametrize("task", ["sent", "read", "similarity"])
def test_every_head_gets_the_same_example_id_checks(task):
    """One check of the prediction ids against the gold table, for every head (it was copied per head)."""
    ttype = TASK_TYPES[task]
    value = {"probs": [0.5, 0.5], "answer": "a", "score": 1.0}[head_of(ttype).value_column]
    gold = pd.DataFrame({"example_id": ["e1", "e2"], "label": [0, 1], "answers": [["a"], ["b"]]})
    preds = pd.DataFrame({"case_id": ["e1", "e9"], head_of(ttype).value_column: [value, value]})
    with pytest.raises(DataError, match="p.parquet: field 'case_id': i.i.d. prediction for unknown example 'e9'"):
        iid_outcomes(preds, gold, ttype.head, source="p.parquet")
    with pytest.raises(DataError, match="field 'case_id': 1 i.i.d. predictions for 2 test examples"):
        iid_outcomes(preds.iloc[:1], gold, ttype.head, source="p.parquet")
    out = iid_outcomes(pd.DataFrame({"case_id": ["e1", "e2"], head_of(ttype).value_column: [value, value]}), gold,
                       ttype.head)
    assert list(out.columns[:5]) == ["case_id", "functionality", "status", "split", "held_out"]
    assert "correct" in out.columns and str(out["correct"].dtype) == "boolean"


def test_heads_answer_what_the_call_sites_ask():
    cls, span, score = get_head("classification"), get_head("qa"), get_head("regression")
    assert (cls.has_classes, span.has_classes, score.has_classes) == (True, False, False)
    assert (cls.gold_field, span.gold_field, score.gold_field) == ("labels", "answers", "labels")
    assert span.two_texts(TASK_TYPES["read"]) and not cls.two_texts(TASK_TYPES["sent"])
    assert cls.two_texts(TASK_TYPES["nli"]) and score.two_texts(TASK_TYPES["similarity"])
    assert score.config_overrides(5) == {"num_labels": 1, "problem_type": "regression"}
    assert cls.config_overrides(3) == {"num_labels": 3} and span.config_overrides(0) == {}
    assert (cls.inv_expectation, score.inv_expectation) == ("inv", "score_inv")
    assert not score.checklist_format and cls.checklist_format and span.checklist_format
    messages = []

    def fail(message):
        messages.append(message)
        raise ValueError(message)
    assert cls.spec_label(TASK_TYPES["sent"], "positive", fail) == 2
    assert score.spec_label(TASK_TYPES["similarity"], 4, fail) == 4
    for head, task, value in ((score, "similarity", 7), (span, "read", 1), (cls, "nli", "maybe")):
        with pytest.raises(ValueError):
            head.spec_label(TASK_TYPES[task], value, fail)
    assert "not a score label of task 'similarity'" in messages[0] and "give 'answer'" in messages[1]
    assert "'maybe' is not a label of task 'nli'" in messages[2]
