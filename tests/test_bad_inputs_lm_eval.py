"""The bad-input catalogue: suites that travel to lm-evaluation-harness and back (beluga/suites/lm_eval.py,
beluga/analyses/lm_eval_samples.py).

``suite export --format lm-eval`` records in every document the task's classes and each one's label word
(``classes``, ``choices``; the task's ``doc_to_choice`` reads ``choices``), and ``score --format
lm-eval-samples`` gives each log-likelihood the class whose word its request's continuation is, never the
class at its position: samples of a task whose choices come in another order are read right, and a
continuation that is no class's word (or a class twice, or none) stops with one line naming the file, the line
and the field ``arguments``. The samples files here are written as lm-eval's EvaluationTracker writes them
(tests/test_lm_eval.py runs lm-eval itself).
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import beluga_cli, make_tiny_suite

from beluga.suites.format import save_suite

PROMPT = "Review: {text} Sentiment:"
CLEAR, UNLIKELY = -0.05, -4.0     # a clear-cut model: its class's word far likelier than the other
#: the class of a continuation's word: the exported words, and the class names themselves
WORD_CLASS = {"bad": "negative", "good": "positive", "negative": "negative", "positive": "positive"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(suite file, the exported task folder) of a tiny SENT suite, its words negative=bad positive=good."""
    folder = tmp_path_factory.mktemp("interchange")
    save_suite(make_tiny_suite(2), folder / "suite.parquet")
    res = beluga_cli("suite", "export", "--suite", folder / "suite.parquet", "--task", "sent", "--format", "lm-eval",
                     "--prompt", PROMPT, "--label-words", "positive=good", "negative=bad", "--out", folder / "task")
    assert res.returncode == 0, res.stderr
    return folder / "suite.parquet", folder / "task"


def clear_cut(text: str) -> str:
    """The class a clear-cut model prefers: negative for the suite's negative inputs, positive for the others."""
    return "negative" if "awful" in text else "positive"


def samples_file(path: Path, task: Path, continuations=(" good", " bad"), shape: str = "dict",
                 doc_words: bool = True) -> Path:
    """lm-eval's samples of the exported task, as its EvaluationTracker writes them (every value a string), had
    its choices come in the continuations' order; ``doc_words=False``: documents without ``classes`` /
    ``choices``; ``shape="list"``: older lm-eval's ``arguments`` (``[[context, continuation], ...]``)."""
    lines = []
    for i, line in enumerate((task / "data.jsonl").read_text().splitlines()):
        doc = json.loads(line)
        if not doc_words:
            doc.pop("classes", None), doc.pop("choices", None)
        ctx = PROMPT.format(text=doc["text"])
        lls = [str(CLEAR if WORD_CLASS.get(c.strip()) == clear_cut(doc["text"]) else UNLIKELY)
               for c in continuations]
        args = ({f"gen_args_{k}": {"arg_0": ctx, "arg_1": c} for k, c in enumerate(continuations)}
                if shape == "dict" else [[ctx, c] for c in continuations])
        lines.append(json.dumps({"doc_id": i, "doc": doc, "target": str(doc["target"]), "arguments": args,
                                 "resps": [[[x, "False"]] for x in lls], "filtered_resps": [[x, "False"] for x in lls],
                                 "filter": "none", "metrics": ["acc"], "acc": "1.0"}))
    path.write_text("".join(x + "\n" for x in lines))
    return path


def score(suite: Path, samples: Path, out: Path, *extra):
    return beluga_cli("score", "--suite", suite, "--predictions", samples, "--format", "lm-eval-samples",
                      "--out", out, "--task", "sent", *extra)


def one_line_error(res, *needles: str) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in res.stderr, res.stderr
    print(lines[0])  # the catalogue's messages: pytest -rP shows them
    assert all(n in lines[0] for n in needles), (needles, lines[0])
    return lines[0]


def test_export_documents_record_classes_and_words(exported):
    """Each document names the task's classes in its class order and each one's word; lm-eval's choices are
    that field (as lm-eval reads a ``doc_to_choice`` naming a document field: ``doc[field]``)."""
    _, task = exported
    cfg = yaml.safe_load((task / "task.yaml").read_text())
    assert cfg["doc_to_choice"] == "choices"
    docs = [json.loads(x) for x in (task / "data.jsonl").read_text().splitlines()]
    assert len(docs) == 14
    for d in docs:
        assert d["classes"] == ["negative", "positive"] and d[cfg["doc_to_choice"]] == ["bad", "good"], d
    mft = next(d for d in docs if d["case_id"] == "mft-0")
    assert mft["choices"][mft["label"]] == "bad"          # the label indexes the recorded choices


@pytest.mark.parametrize("shape", ["dict", "list"])
@pytest.mark.parametrize("doc_words,continuations", [
    (True, (" good", " bad")),              # a task listing its choices positive first
    (False, (" positive", " negative")),    # documents without the words: each class's name is its word
])
def test_reordered_choices_read_by_their_words(exported, tmp_path, shape, doc_words, continuations):
    """The probe: samples whose requests are ``" good"``, ``" bad"`` (``" positive"``, ``" negative"``) in
    that order give each document its class by the word, so the clear-cut cases pass."""
    from beluga.analyses.lm_eval_samples import read_lm_eval_samples
    from beluga.core.tasks import SENT

    suite, task = exported
    path = samples_file(tmp_path / "samples.jsonl", task, continuations, shape, doc_words)
    read = read_lm_eval_samples(str(path), SENT)
    docs = {(d["case_id"], d["input_idx"]): d["text"]
            for d in map(json.loads, (task / "data.jsonl").read_text().splitlines())}
    for r in read.itertuples(index=False):
        neg = clear_cut(docs[(r.case_id, r.input_idx)]) == "negative"
        want = np.exp([CLEAR, UNLIKELY] if neg else [UNLIKELY, CLEAR])
        np.testing.assert_allclose(r.probs, want / want.sum(), rtol=1e-12)     # [negative, positive]
    res = score(suite, path, tmp_path / "scored")
    assert res.returncode == 0, res.stderr
    rates = pd.read_csv(tmp_path / "scored" / "functionalities.csv").set_index("functionality")["failure_rate"]
    assert rates.to_dict() == {"neg words": 0.0, "typos": 0.0, "add positive": 0.0, "not negative": 0.0}


@pytest.mark.parametrize("name,continuations,doc_words,needles", [
    ("unknown_word", (" good", " awful"), True, ("continuation 1 ' awful' is not ' ' + one of the document's words",
                                                 "negative='bad', positive='good'")),
    ("class_twice", (" good", " good"), True, ("continuation 1 ' good' is again the word of class 'positive'",)),
    ("not_class_names", (" good", " bad"), False, ("continuation 0 ' good' is not ' ' + one of the class names",
                                                   "export the task again")),
])
def test_continuation_not_a_class_word_refused(exported, tmp_path, name, continuations, doc_words, needles):
    suite, task = exported
    path = samples_file(tmp_path / "samples.jsonl", task, continuations, doc_words=doc_words)
    one_line_error(score(suite, path, tmp_path / "o"), str(path), "line 1: field 'arguments'", *needles)
    assert not (tmp_path / "o").exists()


def test_class_without_continuation_refused(exported, tmp_path):
    """A document recording three classes whose samples hold two requests: neutral's word has none."""
    suite, task = exported
    path = samples_file(tmp_path / "samples.jsonl", task)
    path.write_text(path.read_text().replace('"classes": ["negative", "positive"], "choices": ["bad", "good"]',
                                             '"classes": ["negative", "neutral", "positive"], '
                                             '"choices": ["bad", "okay", "good"]'))
    one_line_error(score(suite, path, tmp_path / "o"), str(path), "line 1: field 'arguments'",
                   "no continuation for class(es) 'neutral' (word(s) 'okay')")


@pytest.mark.parametrize("recorded,needle", [
    ('"classes": ["neg", "pos"], "choices": ["bad", "good"]',
     "field 'doc.classes': ['neg', 'pos'] are not the task's classes (negative, positive) or"),
    ('"classes": ["negative", "positive"], "choices": ["good", "good"]',
     "field 'doc.choices': ['good', 'good'] is not one distinct word for each of the 2 classes"),
    ('"classes": ["negative", "positive"]',
     "field 'doc.choices': missing (the export writes the classes and their words together)"),
])
def test_document_words_that_name_no_classes_refused(exported, tmp_path, recorded, needle):
    suite, task = exported
    path = samples_file(tmp_path / "samples.jsonl", task)
    path.write_text(path.read_text().replace('"classes": ["negative", "positive"], "choices": ["bad", "good"]',
                                             recorded))
    one_line_error(score(suite, path, tmp_path / "o"), str(path), "line 1:", needle)


def test_samples_refuse_label_order(exported, tmp_path):
    """The samples name their classes by word: a --label-order would permute classes already read by name."""
    suite, task = exported
    path = samples_file(tmp_path / "samples.jsonl", task)
    one_line_error(score(suite, path, tmp_path / "o", "--label-order", "positive,negative"), str(path),
                   "field '--label-order'", "drop --label-order")


def test_samples_holding_a_lone_surrogate_refused(exported, tmp_path):
    """A sample whose document text holds a JSON-escaped lone surrogate (not Unicode text): refused where the
    samples file is read, naming the line and the field, not carried on to a write or an error line."""
    suite, task = exported
    path = samples_file(tmp_path / "samples.jsonl", task)
    lines = path.read_text().splitlines()
    doc = json.loads(lines[2])["doc"]
    lines[2] = lines[2].replace(json.dumps(doc["text"])[1:-1], json.dumps(doc["text"])[1:-1] + "\\ud800", 1)
    path.write_text("\n".join(lines) + "\n")
    one_line_error(score(suite, path, tmp_path / "o"), str(path), "line 3: field 'doc.text'",
                   "not Unicode text (a lone surrogate")
    assert not (tmp_path / "o").exists()
