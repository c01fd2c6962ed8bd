"""One suite-loading path: a suite read by ``test``, ``score`` or ``suite export`` passes the checks a pipeline
run makes (``beluga.suites.build.check_suite_task_type``), so a pair task's suite without second texts is
refused with the same line whichever way it is read, never tested on single texts. In-process."""

from __future__ import annotations

import pytest
from conftest import beluga_cli, case

from beluga.cli.score import load_suite_for
from beluga.errors import SuiteError
from beluga.suites.build import read_suite_file
from beluga.suites.format import save_suite

PAIR_TASKS = ("nli", "para", "similarity")


def _single_text_suite(tmp_path, task: str = "para"):
    """MFT cases of one text each (no inputs_b): class 0 (in every label set), or for a regression task a
    score near 3."""
    import pandas as pd

    expect = {"expect": "score_near", "params": {"val": 3.0}} if task == "similarity" else {}
    rows = [case(f"mft-{i}", "one text", "Vocabulary", "MFT", [f"a sentence alone {i}"],
                 None if expect else [0], **expect) for i in range(3)]
    path = tmp_path / "single.parquet"
    save_suite(pd.DataFrame(rows), path)
    return path


@pytest.mark.parametrize("task", PAIR_TASKS)
def test_pair_task_refuses_single_texts_in_the_pipeline_and_in_test(task, tmp_path):
    path = _single_text_suite(tmp_path, task)
    with pytest.raises(SuiteError) as pipeline:
        read_suite_file({"path": str(path), "paper_fixes": True}, task)
    line = str(pipeline.value)
    assert f"case_id='mft-0': field 'inputs_b': a {task} task needs pairs of texts" in line
    assert str(path) in line
    # the function test, score and suite export load through: the same line
    with pytest.raises(SuiteError) as loaded:
        load_suite_for(str(path), task)
    assert str(loaded.value) == line
    # the commands themselves: one line, the same, and nothing written
    test = beluga_cli("test", "--model", "tiny-random", "--suite", path, "--task", task, "--out", tmp_path / "t")
    assert test.returncode != 0 and line in test.stderr, test.stderr
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())
    export = beluga_cli("suite", "export", "--suite", path, "--task", task, "--format", "checklist",
                        "--out", tmp_path / "e.jsonl")
    assert export.returncode != 0 and line in export.stderr, export.stderr
    assert not (tmp_path / "e.jsonl").exists()


def test_single_text_task_still_reads_the_suite(tmp_path):
    """The check refuses only a mismatch: the same single-text suite loads for a single-text task."""
    suite, ttype = load_suite_for(str(_single_text_suite(tmp_path)), "sent")
    assert ttype.name == "sent" and len(suite) == 3
