"""The bad-input catalogue: a suite read for a task of the other shape (a pair task's suite without second texts,
a single-text task's suite with them) through the commands a user meets first -- ``test``, ``score`` and each
``suite export`` format, lm-eval's included -- and what a LoRA model's record names. Each refusal is one line
naming the file and field, with nothing written. In-process (the suite is refused before a model is loaded)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import beluga_cli, case, make_tiny_suite
from test_behavioral import tiny_model  # noqa: F401  (a trained tiny SENT classifier)

from beluga.suites.format import save_suite


def _refused(res, out, *words) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert not out.exists(), out
    return lines[0]


def _single_texts(tmp_path, task: str):
    """MFT cases of one text each: class 0, or for a regression task score_near 3."""
    score = task == "similarity"
    rows = [case(f"mft-{i}", "one text", "Vocabulary", "MFT", [f"a sentence alone {i}"], None if score else [0],
                 **({"expect": "score_near", "params": {"val": 3.0}} if score else {})) for i in range(3)]
    path = tmp_path / f"{task}-single.parquet"
    save_suite(pd.DataFrame(rows), path)
    return path


@pytest.mark.parametrize("task", ["nli", "similarity"])
def test_test_refuses_a_pair_tasks_suite_without_second_texts(task, tmp_path):
    """``test`` of an NLI (or similarity) model on a suite of single texts: the model would be asked about one
    sentence where it was trained on pairs -- refused, naming the file and inputs_b."""
    path = _single_texts(tmp_path, task)
    out = tmp_path / "t"
    _refused(beluga_cli("test", "--model", "tiny-random", "--suite", path, "--task", task, "--out", out),
             out, str(path), "'inputs_b'", f"a {task} task needs pairs of texts")


def test_test_refuses_second_texts_for_a_single_text_task(tiny_model, tmp_path):  # noqa: F811
    """A sentiment suite whose cases carry second texts is not fed to a (real, loadable) single-text model as
    pairs."""
    suite = make_tiny_suite(1)
    suite["inputs_b"] = [[f"second {i}"] * len(x) for i, x in enumerate(suite["inputs"])]
    path = tmp_path / "pairs.parquet"
    save_suite(suite, path)
    out = tmp_path / "t"
    _refused(beluga_cli("test", "--model", tiny_model, "--suite", path, "--task", "sent", "--out", out),
             out, str(path), "'inputs_b'", "a sent task needs single texts")


def test_lm_eval_export_of_a_pair_task_without_second_texts_is_refused(tmp_path):
    """``suite export --format lm-eval`` of an NLI suite without second texts: no task folder whose every
    document has an empty text_b."""
    path = _single_texts(tmp_path, "nli")
    out = tmp_path / "lm"
    _refused(beluga_cli("suite", "export", "--suite", path, "--task", "nli", "--format", "lm-eval",
                        "--prompt", "{text} ? {text_b}", "--label-words", "entailment=yes", "neutral=maybe",
                        "contradiction=no", "--out", out),
             out, str(path), "'inputs_b'", "a nli task needs pairs of texts")


def test_a_lora_models_record_names_the_peft_that_made_its_adapters():
    """A run record's versions name peft and accelerate (a LoRA model's adapters come from peft)."""
    from beluga.core.provenance import versions

    got = versions()
    for name in ("peft", "accelerate", "torch", "transformers"):
        assert name in got and got[name], (name, json.dumps(got))


@pytest.mark.parametrize(("expect", "params", "labels", "words"), [
    ("score_near", {"val": 42}, None, "field 'expect_params': 'val' 42 is outside the task's score range 0..5"),
    ("score_near", {}, [9], "field 'labels': label 9 is outside the task's score range 0..5"),
    ("score_near", {}, [-3], "field 'labels': label -3 is outside the task's score range 0..5"),
    ("score_between", {"min": 6, "max": 7}, None, "'min' 6 is outside the task's score range 0..5"),
    ("score_between", {"min": -100, "max": 100}, None, "[-100, 100] covers the whole score range 0..5"),
], ids=["val 42", "gold 9", "gold -3", "between 6 and 7", "between -100 and 100"])
def test_a_similarity_suites_values_outside_or_covering_the_score_range(tmp_path, expect, params, labels, words):
    """A similarity suite (scores 0..5) whose expected value, gold scores or interval lie outside the range
    (always failed) or cover all of it (always passed): refused by the command that reads it, naming the file,
    the case and the field, nothing exported."""
    row = {**case("c1", "f", "c", "MFT", ["A man plays."], labels, expect=expect, params=params),
           "inputs_b": ["A man sings."]}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(row) + "\n")
    out = tmp_path / "e.tsv"
    _refused(beluga_cli("suite", "export", "--suite", path, "--task", "similarity", "--out", out), out,
             f"suite file {path}: row 0 (case_id='c1'): ", words)
