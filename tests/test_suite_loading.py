"""One suite-loading path: the pipeline (``suite.path``), ``test``, ``score`` and ``suite export`` read a suite
file through ``beluga.suites.build.read_suite``, so a suite is refused with the same line whichever way it is
read -- a pair task's suite without second texts is never tested on single texts -- and a suite ``suite perturb``
writes passes the same checks (``checked_suite``). In-process."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import beluga_cli, case, make_tiny_suite
from test_behavioral import tiny_model  # noqa: F401  (a trained tiny SENT classifier)

from beluga.core.errors import SuiteError
from beluga.suites import build
from beluga.suites.build import make_suite, read_suite, suite_functionalities
from beluga.suites.format import save_suite

PAIR_TASKS = ("nli", "para", "similarity")
REPO = Path(__file__).resolve().parents[1]


def _suite_cfg(path) -> dict:
    """A task's ``suite`` section naming a suite file (the pipeline's defaults)."""
    return {"path": str(path), "paper_fixes": True, "max_cases_per_functionality": None,
            "max_inputs_per_case": None, "seed": 0, "type_folds": "declared"}


def _single_text_suite(tmp_path, task: str = "para"):
    """MFT cases of one text each (no inputs_b): class 0 (in every label set), or for a regression task a
    score near 3."""
    expect = {"expect": "score_near", "params": {"val": 3.0}} if task == "similarity" else {}
    rows = [case(f"mft-{i}", "one text", "Vocabulary", "MFT", [f"a sentence alone {i}"],
                 None if expect else [0], **expect) for i in range(3)]
    path = tmp_path / "single.parquet"
    save_suite(pd.DataFrame(rows), path)
    return path


def _refusal(res) -> str:
    """The one error line of a command that refused (nothing else on stderr)."""
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0][len("error: "):]


def _bad_labels(tmp_path, task: str):
    """A classifier's suite with a label outside the task's label set (SENT: 0..2)."""
    suite = make_tiny_suite(1)
    suite.at[0, "labels"] = [3]
    path = tmp_path / "labels.parquet"
    save_suite(suite, path)
    return path


def _similarity_rows(tmp_path, name: str, labels, params: dict, expect: str = "score_near"):
    rows = [{**case("near-0", "near", "Semantics", "MFT", ["a b"], labels, expect=expect, params=params),
             "inputs_b": ["a c"]}]
    path = tmp_path / f"{name}.parquet"
    save_suite(pd.DataFrame(rows), path)
    return path


#: (task, the suite's file, the refusal): every check of the one reader, each met by every path below
CHECKS = {
    **{f"single texts for {t}": (t, lambda p, t=t: _single_text_suite(p, t),
                                 lambda path, t=t: f"suite file {path}: case_id='mft-0': field 'inputs_b': a {t} "
                                                   "task needs pairs of texts (inputs and inputs_b); 3 case(s) of "
                                                   "this suite do not match") for t in PAIR_TASKS},
    "a label outside the label set": ("sent", lambda p: _bad_labels(p, "sent"),
                                      lambda path: f"suite file {path}: row 0 (case_id='mft-0'): field 'labels': "
                                                   "label 3 is outside the task's label set [0, 1, 2]"),
    "a gold score outside the range": ("similarity", lambda p: _similarity_rows(p, "gold", [7], {}),
                                       lambda path: f"suite file {path}: row 0 (case_id='near-0'): field 'labels': "
                                                    "label 7 is outside the task's score range 0..5"),
    "an expectation outside the range": ("similarity",
                                         lambda p: _similarity_rows(p, "between", None, {"min": 6, "max": 7},
                                                                    "score_between"),
                                         lambda path: f"suite file {path}: row 0 (case_id='near-0'): field "
                                                      "'expect_params': 'min' 6 is outside the task's score range "
                                                      "0..5"),
}


@pytest.mark.parametrize("check", list(CHECKS))
def test_every_check_refuses_alike_in_the_pipeline_and_in_every_command(check, tmp_path):
    """Each check of the one reader -- one text or a pair for the task, the label set, the score range of a
    gold score and of an expectation's parameters -- gives the same one line in the pipeline (the suite job and
    the DAG's functionality table), ``test``, ``score`` and each ``suite export`` format, with nothing
    written."""
    task, make, want = CHECKS[check]
    path = make(tmp_path)
    line = want(path)
    with pytest.raises(SuiteError) as pipeline:
        make_suite(_suite_cfg(path), task, None)
    assert str(pipeline.value) == line
    with pytest.raises(SuiteError) as dag:   # the DAG's functionality table (before anything runs)
        suite_functionalities(_suite_cfg(path), task)
    assert str(dag.value) == line
    # the commands: one line, the same, and nothing written
    test = beluga_cli("test", "--model", "tiny-random", "--suite", path, "--task", task, "--out", tmp_path / "t")
    assert _refusal(test) == line
    assert not (tmp_path / "t").exists()
    pd.DataFrame({"case_id": ["mft-0"], "input_idx": [0], "score": [3.0]}).to_parquet(tmp_path / "p.parquet")
    score = beluga_cli("score", "--suite", path, "--task", task, "--predictions", tmp_path / "p.parquet",
                       "--out", tmp_path / "s")
    assert _refusal(score) == line
    assert not (tmp_path / "s").exists()
    words = (["--prompt", "{text} {text_b}" if task != "sent" else "{text}"]
             + (["--label-words", "negative=bad", "neutral=okay", "positive=good"] if task == "sent" else
                ["--label-words", "entailment=yes", "neutral=maybe", "contradiction=no"] if task == "nli" else
                ["--label-words", "not_paraphrase=no", "paraphrase=yes"] if task == "para" else []))
    formats = [("checklist", "e.jsonl", []), ("inputs", "e.tsv", [])]
    formats += [("lm-eval", "lm", words)] if task != "similarity" else []   # lm-eval's choices: a classifier's
    for fmt, out, extra in formats:
        export = beluga_cli("suite", "export", "--suite", path, "--task", task, "--format", fmt,
                            "--out", tmp_path / out, *extra)
        assert _refusal(export) == line, (fmt, export.stderr)
        assert not (tmp_path / out).exists()


def test_single_text_task_still_reads_the_suite(tmp_path):
    """The check refuses only a mismatch: the same single-text suite loads for a single-text task, and a suite
    of pairs is refused for it."""
    suite, ttype = read_suite(str(_single_text_suite(tmp_path)), "sent")
    assert ttype.name == "sent" and len(suite) == 3
    pairs = make_tiny_suite(1)
    pairs["inputs_b"] = [[f"second {i}"] * len(x) for i, x in enumerate(pairs["inputs"])]
    save_suite(pairs, tmp_path / "pairs.parquet")
    with pytest.raises(SuiteError, match=r"case_id='mft-0': field 'inputs_b': a sent task needs single texts"):
        read_suite(str(tmp_path / "pairs.parquet"), "sent")


def test_a_recorded_task_other_than_the_given_one_names_what_the_user_gave(tmp_path):
    """A suite built for one task, read for another: refused before its labels are checked against the other
    task's, naming the file and where the task was given -- the configuration's field in the pipeline, the
    option on the command line."""
    path = tmp_path / "sent.parquet"
    save_suite(make_tiny_suite(1).assign(labels=lambda d: [[2] if v is not None else None for v in d["labels"]]),
               path, task="sent")   # label 2 (positive): outside PARA's label set
    with pytest.raises(SuiteError) as pipeline:
        make_suite(_suite_cfg(path), "para", None)
    assert str(pipeline.value) == (f"suite file {path}: field 'type': the file is a suite built for task 'sent' "
                                   "(its metadata beluga.task), but the task it is configured for has type 'para'")
    want = (f"suite file {path}: field '--task': 'para', but the file is a suite built for task 'sent' (its "
            "metadata beluga.task); drop --task")
    assert _refusal(beluga_cli("test", "--model", "tiny-random", "--suite", path, "--task", "para",
                               "--out", tmp_path / "t")) == want
    assert _refusal(beluga_cli("suite", "export", "--suite", path, "--task", "para", "--out",
                               tmp_path / "e.tsv")) == want
    assert read_suite(str(path))[1].name == "sent"   # without --task: the recorded task


def test_labels_outside_the_task_and_scores_outside_its_range(tmp_path):
    """The label set of a classifier's task and the score range of a regression task (a gold score, and
    score_near's expected value) are checked whichever way the suite is read."""
    sent = make_tiny_suite(1)
    sent.at[0, "labels"] = [3]
    save_suite(sent, tmp_path / "sent.parquet")
    for load in (lambda: read_suite(str(tmp_path / "sent.parquet"), "sent"),
                 lambda: make_suite(_suite_cfg(tmp_path / "sent.parquet"), "sent", None)):
        with pytest.raises(SuiteError, match=r"case_id='mft-0'\): field 'labels': label 3 is outside the task's "
                                             r"label set \[0, 1, 2\]"):
            load()
    rows = [{**case("near-0", "near", "Semantics", "MFT", ["a b"], [4], expect="score_near"), "inputs_b": ["a c"]}]
    save_suite(pd.DataFrame(rows), tmp_path / "ok.parquet")
    assert len(read_suite(str(tmp_path / "ok.parquet"), "similarity")[0]) == 1
    for i, (labels, params, field, value) in enumerate((([7], {}, "labels", "label 7"),
                                                        (None, {"val": 6.5}, "expect_params", "'val' 6.5"))):
        bad = [{**rows[0], "labels": labels, "expect_params": json.dumps(params)}]
        save_suite(pd.DataFrame(bad), tmp_path / f"bad{i}.parquet")
        with pytest.raises(SuiteError, match=rf"field '{field}': {re.escape(value)} is outside the task's score "
                                             r"range 0\.\.5"):
            read_suite(str(tmp_path / f"bad{i}.parquet"), "similarity")


def test_every_command_and_the_pipeline_read_through_the_one_reader(tiny_model, tmp_path, monkeypatch):  # noqa: F811
    """The pipeline's suite, the DAG's functionality table, ``test``, ``score`` and each ``suite export``
    format read the file through ``read_suite`` (its read, recorded here); no other module reads a suite
    file (``read_any_suite``) or defines a reader of its own."""
    calls = []
    real = build._read_suite

    def recording(path, *args):
        calls.append(path)
        return real.__wrapped__(path, *args)

    monkeypatch.setattr(build, "_read_suite", recording)
    path = tmp_path / "suite.parquet"
    save_suite(make_tiny_suite(2), path, task="sent")
    preds = tmp_path / "p.parquet"
    suite = pd.read_parquet(path)
    pd.DataFrame([(c, j, [0.5, 0.5]) for c, xs in zip(suite["case_id"], suite["inputs"]) for j in range(len(xs))],
                 columns=["case_id", "input_idx", "probs"]).to_parquet(preds)
    runs = {
        "pipeline": lambda: make_suite(_suite_cfg(path), "sent", None),
        "dag": lambda: suite_functionalities(_suite_cfg(path), "sent"),
        "test": lambda: beluga_cli("test", "--model", tiny_model, "--suite", path, "--out", tmp_path / "t"),
        "score": lambda: beluga_cli("score", "--suite", path, "--predictions", preds, "--out", tmp_path / "s"),
        "export": lambda: beluga_cli("suite", "export", "--suite", path, "--out", tmp_path / "e.tsv"),
        "export checklist": lambda: beluga_cli("suite", "export", "--suite", path, "--format", "checklist",
                                               "--out", tmp_path / "e.jsonl"),
        "export lm-eval": lambda: beluga_cli("suite", "export", "--suite", path, "--format", "lm-eval",
                                             "--prompt", "{text}", "--label-words", "negative=bad",
                                             "positive=good", "--out", tmp_path / "lm"),
    }
    for name, run in runs.items():
        calls.clear()
        res = run()
        assert getattr(res, "returncode", 0) == 0, (name, res.stderr)
        assert calls == [str(path)], name
    readers = []
    for py in sorted((REPO / "beluga").rglob("*.py")):
        text = py.read_text()
        readers += [f"{py.relative_to(REPO)}: {m}" for m in re.findall(r"read_any_suite\(", text)
                    if py.name not in ("build.py", "checklist.py")]
        readers += [f"{py.relative_to(REPO)}: def {m}" for m in re.findall(r"def (load_suite_for|read_suite_file)\b",
                                                                           text)]
    assert readers == []
