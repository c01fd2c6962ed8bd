"""Suites that travel (issue 41, scope 4): ``suite export --format checklist`` for any suite, read back equal;
``suite perturb --from-textattack`` / ``--from-langtest`` INV suites from other tools' files (fixtures written
here in the tools' documented layouts: TextAttack's CSVLogger, LangTest's testcases() table). In-process."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from beluga.cli import main
from beluga.core.errors import BelugaError
from beluga.suites.build import read_suite
from beluga.suites.format import COLUMNS
from beluga.suites.tool_import import import_command, strip_textattack_markup

SENTENCES = [f"The movie number {i} was great and fun to watch with Mary in Paris." for i in range(8)]


def _plain(v):
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if v is None or (isinstance(v, float) and v != v):
        return None
    return v


def _rows(df: pd.DataFrame) -> list[list]:
    """Every field of every case, as plain Python values (Parquet's arrays and JSON's lists compare equal)."""
    return list(zip(*([_plain(v) for v in df[c].tolist()] for c in COLUMNS)))


def _run(argv, capsys) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _source(tmp_path):
    src = tmp_path / "sentences.txt"
    src.write_text("\n".join(SENTENCES) + "\n")
    return src


def _textattack_csv(path, rows):
    """A CSV as TextAttack's CSVLogger.flush writes it (pandas, QUOTE_NONNUMERIC, no index)."""
    cols = ["original_text", "perturbed_text", "original_score", "perturbed_score", "original_output",
            "perturbed_output", "ground_truth_output", "num_queries", "result_type"]
    full = [{"original_score": 0.1, "perturbed_score": 0.6, "original_output": 1, "perturbed_output": 0,
             "ground_truth_output": 1, "num_queries": 12, **r} for r in rows]
    pd.DataFrame.from_records(full)[cols].to_csv(path, quoting=csv.QUOTE_NONNUMERIC, index=False)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Spec-built sent / para / nli / read suites and a perturbed one (2 cases per functionality)."""
    d = tmp_path_factory.mktemp("built")
    src = _source(d)
    out = {}
    for spec in ("sent_default", "para_default", "nli_default", "read_default", "similarity_default"):
        extra = ["--source", str(src)] if spec == "sent_default" else []
        assert main(["suite", "build", "--spec", spec, "--out", str(d / f"{spec}.parquet"), "--cases", "2",
                     *extra]) == 0
        out[spec] = d / f"{spec}.parquet"
    assert main(["suite", "perturb", "--input", str(src), "--perturbation", "typos", "--type", "INV",
                 "--expect", "inv", "--expect-param", "tolerance=0.1", "--out", str(d / "perturbed.parquet")]) == 0
    out["perturbed"] = d / "perturbed.parquet"
    return out


@pytest.mark.parametrize("name", ["sent_default", "para_default", "nli_default", "read_default", "perturbed"])
def test_checklist_export_round_trip(built, name, tmp_path, capsys):
    """spec / perturbed suite -> CheckList JSONL -> the project's reader: every field equal, task and
    functionality descriptions kept; the records are CheckList's layout."""
    capsys.readouterr()
    out = tmp_path / "suite.jsonl"
    rc, msg, err = _run(["suite", "export", "--suite", str(built[name]), "--out", str(out), "--format",
                         "checklist"], capsys)
    assert rc == 0, err
    a, ta = read_suite(str(built[name]))
    b, tb = read_suite(str(out))
    assert _rows(a) == _rows(b)
    assert ta.name == tb.name == a.attrs["task_type"] == b.attrs["task_type"]
    assert a.attrs["declared"] == b.attrs["declared"]
    first = json.loads(out.read_text().splitlines()[0])
    assert {"suite", "case_id", "functionality", "capability", "test_type", "inputs", "labels", "label",
            "label_scope", "meta", "agg_fn", "expect", "in_run_subset"} <= set(first)
    assert set(first["expect"]) == {"expression", "name", "params", "slice"}
    want = {"sent_default": "sentiment", "para_default": "qqp", "read_default": "squad", "nli_default": "nli",
            "perturbed": "sentiment"}[name]
    assert first["suite"] == want and f"({want} suite)" in msg
    if name in ("para_default", "nli_default", "read_default"):
        assert all(isinstance(x, list) and len(x) == 2 for x in first["inputs"])


def test_checklist_export_keeps_texts_as_they_are(tmp_path):
    """A suite without expect_params (null), with meta JSON written compactly, labels with a gap (an unlabelled
    original) and answers on a classifier: read back identical (the side field), with --task for a file that
    records none."""
    from beluga.suites.format import save_suite

    df = pd.DataFrame({
        "case_id": ["c0", "c1"], "functionality": ["f", "g"], "capability": ["Vocabulary", "Negation"],
        "test_type": ["MFT", "INV"], "inputs": [["good"], ["fine", "fine !"]], "inputs_b": [None, None],
        "labels": [[2], [None, 2]], "answers": [None, ["x", "y"]], "expect": ["eq", "inv"],
        "expect_params": [None, '{"tolerance":0.2}'], "agg_fn": ["all", "all_except_first"],
        "meta": ['{"a":1}', None]})
    src = tmp_path / "mine.parquet"
    save_suite(df, src)
    out = tmp_path / "mine.jsonl"
    assert main(["suite", "export", "--suite", str(src), "--out", str(out), "--format", "checklist"]) == 2
    assert main(["suite", "export", "--suite", str(src), "--out", str(out), "--format", "checklist",
                 "--task", "sent"]) == 0
    a, _ = read_suite(str(src), "sent")
    b, _ = read_suite(str(out))
    assert _rows(a) == _rows(b)
    assert b["expect_params"].tolist() == [None, '{"tolerance":0.2}'] and b["meta"].tolist() == ['{"a":1}', None]
    # a record's meta (its exact text in the side field) or case-wide label edited alone: one line, never dropped
    records = [json.loads(ln) for ln in out.read_text().splitlines()]
    for i, (field, value) in enumerate((("meta", {"a": 3}), ("label", 0))):
        edited = [dict(r) for r in records]
        edited[0][field] = value
        bad = tmp_path / f"edited{i}.jsonl"
        bad.write_text("".join(json.dumps(r) + "\n" for r in edited))
        with pytest.raises(Exception, match=f"line 1.*field '{field}'.*edit both or neither"):
            read_suite(str(bad))
    # a meta of JSON null text travels as its text
    df.loc[1, "meta"] = "null"
    save_suite(df, src)
    assert main(["suite", "export", "--suite", str(src), "--out", str(tmp_path / "n.jsonl"), "--format",
                 "checklist", "--task", "sent"]) == 0
    assert read_suite(str(tmp_path / "n.jsonl"))[0]["meta"].tolist() == ['{"a":1}', "null"]


def test_checklist_export_expectations_as_checklist_writes_them(built, tmp_path):
    """The CheckList ``expect`` objects of a sent suite read as the released suites' (and the slice on the
    monotonic DIRs as CheckList's slice_pairwise)."""
    out = tmp_path / "sent.jsonl"
    assert main(["suite", "export", "--suite", str(built["sent_default"]), "--out", str(out), "--format",
                 "checklist"]) == 0
    by = {}
    for line in out.read_text().splitlines():
        d = json.loads(line)
        by.setdefault(d["beluga"]["expect"], d["expect"])
    assert by["eq"]["expression"] == "Expect.eq(val=None)"
    assert by["diff_up"] == {"expression": "Expect.pairwise(diff_up)", "name": "Expect.pairwise",
                             "params": {"fn": "diff_up"}, "slice": None}
    assert by["not_negative"]["expression"] == "Expect.single(<lambda>)"
    assert by["monotonic"]["name"] == "Expect.monotonic"
    if by["monotonic"]["slice"] is not None:
        assert by["monotonic"]["expression"].startswith("Expect.slice_pairwise(Expect.monotonic(")


def test_scores_equal_on_the_export(built, tmp_path, capsys):
    """``score`` on the exported JSONL gives the same cases and pass rates as on the original suite."""
    src = built["sent_default"]
    inputs = tmp_path / "inputs.jsonl"
    assert main(["suite", "export", "--suite", str(src), "--out", str(inputs)]) == 0
    rows = pd.read_json(inputs, lines=True)
    rng = np.random.default_rng(0)
    p = rng.uniform(size=len(rows))
    preds = tmp_path / "preds.jsonl"
    pd.DataFrame({"case_id": rows["case_id"], "input_idx": rows["input_idx"],
                  "probs": [[1 - x, x] for x in p]}).to_json(preds, orient="records", lines=True)
    exported = tmp_path / "sent.jsonl.gz"
    assert main(["suite", "export", "--suite", str(src), "--out", str(exported), "--format", "checklist"]) == 0
    assert main(["score", "--suite", str(src), "--predictions", str(preds), "--out", str(tmp_path / "a")]) == 0
    assert main(["score", "--suite", str(exported), "--predictions", str(preds), "--out", str(tmp_path / "b")]) == 0
    a = pd.read_parquet(tmp_path / "a" / "cases.parquet")
    b = pd.read_parquet(tmp_path / "b" / "cases.parquet")
    assert _rows_of(a) == _rows_of(b) and len(a) > 0
    assert (pd.read_csv(tmp_path / "a" / "functionalities.csv")
            .equals(pd.read_csv(tmp_path / "b" / "functionalities.csv")))


def _rows_of(df):
    return [[_plain(v) for v in r] for r in df.itertuples(index=False)]


CHECKLIST_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "checklist"


@pytest.mark.skipif(not (CHECKLIST_DATA / "squad.jsonl.gz").exists(), reason="the shared CheckList exports are absent")
@pytest.mark.parametrize("name", ["sentiment", "qqp", "squad"])
def test_release_suite_round_trip(name):
    """CheckList's released suites (every 50th case: every expectation, slice, training hint, unperturbed INV and
    squad's answers and meta), imported with the paper's fixes, exported by the project's writer and read back:
    equal (the whole suites were checked so, outside the test suite)."""
    from beluga.suites.checklist import import_checklist_records
    from beluga.suites.checklist_export import suite_records
    from beluga.suites.tabular import open_text

    with open_text(CHECKLIST_DATA / f"{name}.jsonl.gz") as f:
        records = [(None, json.loads(line)) for i, line in enumerate(f) if i % 50 == 0]
    a = import_checklist_records(records, name)
    b = import_checklist_records(((None, r) for r in suite_records(a, a.attrs["task_type"], a.attrs["declared"])),
                                 "export")
    assert _rows(a) == _rows(b)
    assert a.attrs["declared"] == b.attrs["declared"] and a.attrs["task_type"] == b.attrs["task_type"]


def test_similarity_suite_refused(built, tmp_path, capsys):
    out = tmp_path / "sim.jsonl"
    rc, _, err = _run(["suite", "export", "--suite", str(built["similarity_default"]), "--out", str(out),
                       "--format", "checklist"], capsys)
    assert rc == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1
    assert "task 'similarity' is a regression" in err and "--format inputs" in err


def test_export_edited_expectation_is_refused(built, tmp_path, capsys):
    """A record whose CheckList expect no longer matches its side field stops with one line (never a silently
    different expectation); an nli record without the side field is not a CheckList suite."""
    out = tmp_path / "nli.jsonl"
    assert main(["suite", "export", "--suite", str(built["nli_default"]), "--out", str(out), "--format",
                 "checklist"]) == 0
    lines = out.read_text().splitlines()
    d = json.loads(lines[0])
    d["expect"]["params"]["val"] = 2
    bad = tmp_path / "edited.jsonl"
    bad.write_text("\n".join([json.dumps(d), *lines[1:]]) + "\n")
    capsys.readouterr()
    rc, _, err = _run(["suite", "export", "--suite", str(bad), "--out", str(tmp_path / "x.tsv")], capsys)
    assert rc == 2 and "line 1" in err and "field 'expect'" in err and len(err.strip().splitlines()) == 1
    d = json.loads(lines[0])
    del d["beluga"]
    bad.write_text(json.dumps(d) + "\n")
    rc, _, err = _run(["suite", "export", "--suite", str(bad), "--out", str(tmp_path / "x.tsv")], capsys)
    assert rc == 2 and "field 'suite'" in err and "'nli'" in err


# ------------------------------------------------------------------------------------------------ TextAttack
def test_strip_textattack_markup():
    assert strip_textattack_markup("The [[film]] was [[great]].") == "The film was great."
    assert strip_textattack_markup("[[[[Premise]]]]: a [[cat]]") == "Premise: a cat"
    assert strip_textattack_markup("no markup") == "no markup"


def test_from_textattack(tmp_path, capsys):
    """Successful / Failed / Maximized results become INV pairs (one case per original, markup stripped);
    Skipped rows and a Failed row with no perturbation are left out and counted; the suite is testable
    (``score``), exportable to CheckList and back, and readable by the pipeline's suite reader."""
    log = _textattack_csv(tmp_path / "attack.csv", [
        {"original_text": "The [[movie]] was great .", "perturbed_text": "The [[film]] was great .",
         "result_type": "Successful"},
        {"original_text": "I [[hated]] the food .", "perturbed_text": "I [[loathed]] the food .",
         "result_type": "Failed"},
        {"original_text": "A plain day .", "perturbed_text": "A plain day .", "result_type": "Failed"},
        {"original_text": "Nothing happened .", "perturbed_text": "Nothing happened .", "result_type": "Skipped"},
        {"original_text": "The [[movie]] was [[great]] .", "perturbed_text": "The [[picture]] was [[fine]] .",
         "result_type": "Maximized"},
    ])
    out = tmp_path / "ta.parquet"
    rc, msg, err = _run(["suite", "perturb", "--from-textattack", str(log), "--out", str(out),
                         "--expect-param", "tolerance=0.1"], capsys)
    assert rc == 0, err
    assert "2 INV cases (5 inputs)" in msg and "Skipped rows (no perturbation): 1" in msg
    assert "originals without a changed text: 1" in msg
    suite, ttype = read_suite(str(out))
    assert ttype.name == "sent"
    assert [list(x) for x in suite["inputs"]] == [
        ["The movie was great .", "The film was great .", "The picture was fine ."],
        ["I hated the food .", "I loathed the food ."]]
    assert set(suite["functionality"]) == {"TextAttack attack"} and set(suite["test_type"]) == {"INV"}
    assert set(suite["expect"]) == {"inv"} and json.loads(suite["expect_params"][0]) == {"tolerance": 0.1}
    meta = json.loads(suite["meta"][0])
    assert [m.get("result_type") for m in meta] == [None, "Successful", "Maximized"]
    assert meta[1]["ground_truth_output"] == "1"
    _trainable(out, "sent", n_inv=2)
    exported = tmp_path / "ta.jsonl"
    assert main(["suite", "export", "--suite", str(out), "--out", str(exported), "--format", "checklist"]) == 0
    assert _rows(read_suite(str(exported))[0]) == _rows(suite)
    preds = tmp_path / "p.jsonl"
    pd.DataFrame({"case_id": ["textattack-00-00000"] * 3 + ["textattack-00-00001"] * 2,
                  "input_idx": [0, 1, 2, 0, 1],
                  "probs": [[0.1, 0.9], [0.2, 0.8], [0.7, 0.3], [0.9, 0.1], [0.8, 0.2]]}).to_json(
        preds, orient="records", lines=True)
    assert main(["score", "--suite", str(out), "--predictions", str(preds), "--out", str(tmp_path / "s")]) == 0
    cases = pd.read_parquet(tmp_path / "s" / "cases.parquet")
    assert cases.set_index("case_id")["status"].to_dict() == {"textattack-00-00000": "fail",
                                                              "textattack-00-00001": "pass"}


def _trainable(path, task, n_inv):
    """The pipeline's suite reader takes the suite and its training streams hold one INV item per case (the
    meta per input stays aligned when the inputs are capped)."""
    from beluga.core.tasks import get_task_type
    from beluga.suites.build import cap_inputs
    from beluga.train.streams import build_streams

    df, _ = read_suite(str(path), task, task_field="type")
    streams = build_streams(get_task_type(task), None, df)
    assert list(streams) == ["INV"] and len(streams["INV"]) == n_inv
    capped = cap_inputs(df, 2, 0)
    assert all(len(json.loads(m)) == len(x) == 2 for m, x in zip(capped["meta"], capped["inputs"]))


def test_from_textattack_pairs(tmp_path, capsys):
    """A two-text input (``Key: text`` parts joined by <SPLIT>, keys marked up) reads as (premise, hypothesis)
    for an nli suite; a functionality named on the command line."""
    o = "[[[[Premise]]]]: A man [[sleeps]] .<SPLIT>[[[[Hypothesis]]]]: A person rests ."
    p = "[[[[Premise]]]]: A man [[naps]] .<SPLIT>[[[[Hypothesis]]]]: A person rests ."
    log = _textattack_csv(tmp_path / "nli.csv", [{"original_text": o, "perturbed_text": p,
                                                  "result_type": "Successful"}])
    out = tmp_path / "nli.parquet"
    rc, _, err = _run(["suite", "perturb", "--from-textattack", str(log), "--task", "nli", "--functionality",
                       "textfooler", "--class", "Robustness", "--out", str(out)], capsys)
    assert rc == 0, err
    suite, ttype = read_suite(str(out))
    assert ttype.name == "nli"
    r = suite.iloc[0]
    assert list(r["inputs"]) == ["A man sleeps .", "A man naps ."]
    assert list(r["inputs_b"]) == ["A person rests .", "A person rests ."]
    assert (r["functionality"], r["capability"]) == ("textfooler", "Robustness")
    rc, _, err = _run(["suite", "perturb", "--from-textattack", str(log), "--out", str(tmp_path / "x.parquet")],
                      capsys)
    assert rc == 2 and "row 0" in err and "field 'original_text'" in err and "holds 2 texts" in err
    one = "[[[[Premise]]]]: A man sleeps ."
    log = _textattack_csv(tmp_path / "one.csv", [{"original_text": one, "perturbed_text": one.replace("sleeps", "naps"),
                                                  "result_type": "Successful"}])
    rc, _, err = _run(["suite", "perturb", "--from-textattack", str(log), "--task", "nli", "--out",
                       str(tmp_path / "y.parquet")], capsys)
    assert rc == 2 and "holds 1 text(s) per input, the task takes 2" in err


def test_from_textattack_line_breaks(tmp_path, capsys):
    """The logger writes a text's line break as <SPLIT>: one text, its lines joined again."""
    log = _textattack_csv(tmp_path / "lines.csv", [{"original_text": "Good [[film]] .<SPLIT>Really .",
                                                    "perturbed_text": "Good [[movie]] .<SPLIT>Really .",
                                                    "result_type": "Successful"}])
    out = tmp_path / "l.parquet"
    assert main(["suite", "perturb", "--from-textattack", str(log), "--out", str(out)]) == 0
    assert list(read_suite(str(out))[0]["inputs"][0]) == ["Good film .\nReally .", "Good movie .\nReally ."]


@pytest.mark.parametrize("case", ["missing_column", "empty", "no_text", "ansi", "unknown_result", "dir"])
def test_from_textattack_bad_input(tmp_path, capsys, case):
    path = tmp_path / "attack.csv"
    extra = []
    if case == "missing_column":
        pd.DataFrame({"original_text": ["a b"], "result_type": ["Successful"]}).to_csv(path, index=False)
        want = "field 'perturbed_text': missing column"
    elif case == "empty":
        path.write_text("")
        want = "field 'rows': the file is empty"
    elif case == "no_text":
        _textattack_csv(path, [{"original_text": "A b c .", "perturbed_text": "A d c .", "result_type": "Failed"},
                               {"original_text": "", "perturbed_text": "x", "result_type": "Successful"}])
        want = "row 1: field 'original_text': no text"
    elif case == "ansi":
        _textattack_csv(path, [{"original_text": "A \x1b[1mb\x1b[0m c", "perturbed_text": "A d c",
                                "result_type": "Successful"}])
        want = "colored with ANSI / HTML"
    elif case == "unknown_result":
        _textattack_csv(path, [{"original_text": "A b c", "perturbed_text": "A d c", "result_type": "Great"}])
        want = "row 0: field 'result_type': unknown result 'Great'"
    else:
        _textattack_csv(path, [{"original_text": "A b c", "perturbed_text": "A d c", "result_type": "Failed"}])
        extra, want = ["--type", "DIR"], "field '--type'"
    out = tmp_path / "s.parquet"
    rc, _, err = _run(["suite", "perturb", "--from-textattack", str(path), "--out", str(out), *extra], capsys)
    assert rc == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and want in err, err
    if case != "dir":
        assert str(path) in err


# ------------------------------------------------------------------------------------------------ LangTest
LANGTEST_ROWS = [
    {"category": "robustness", "test_type": "uppercase", "original": "I love this phone .",
     "test_case": "I LOVE THIS PHONE ."},
    {"category": "robustness", "test_type": "uppercase", "original": "BAD .", "test_case": "BAD ."},
    {"category": "robustness", "test_type": "add_typo", "original": "I love this phone .",
     "test_case": "I lvoe this phone ."},
    {"category": "robustness", "test_type": "add_typo", "original": "I love this phone .",
     "test_case": "I love this phnoe ."},
    {"category": "bias", "test_type": "replace_to_female_pronouns", "original": "He liked the food .",
     "test_case": "She liked the food ."},
    # LangTest's own layout: testcases() / generated_results() end with fillna("-")
    {"category": "accuracy", "test_type": "min_micro_f1_score", "original": "-", "test_case": "-"},
    {"category": "performance", "test_type": "speed", "original": "-", "test_case": "-"},
    {"category": "robustness", "test_type": "add_context", "original": "Bad phone .", "test_case": "-"},
]


@pytest.mark.parametrize("fmt", ["csv", "json", "jsonl"])
def test_from_langtest(tmp_path, capsys, fmt):
    """One functionality per (category, test_type), its class the category; one case per original with its
    distinct test cases; an unchanged test case and the aggregate (accuracy) rows left out and counted."""
    filler = [{"category": "robustness", "test_type": "lowercase", "original": f"Row {i} .", "test_case": f"row {i} ."}
              for i in range(6)]   # twelve rows: pandas' to_json keys "10", "11" must not sort before "2"
    df = pd.DataFrame(LANGTEST_ROWS + filler).assign(dataset_name="imdb", expected_result="POSITIVE")
    path = tmp_path / f"testcases.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "json":
        df.to_json(path)   # pandas' default: an object of columns
    else:
        df.to_json(path, orient="records", lines=True)
    out = tmp_path / "lt.parquet"
    rc, msg, err = _run(["suite", "perturb", "--from-langtest", str(path), "--out", str(out)], capsys)
    assert rc == 0, err
    assert "accuracy / fairness / representation / performance rows (no text pair): 2" in msg
    assert "rows whose original or test case is LangTest's empty fill '-': 1" in msg
    assert "originals without a changed text: 1" in msg
    suite, ttype = read_suite(str(out))
    assert ttype.name == "sent"
    assert [list(x) for x in suite["inputs"][3:]] == [[f"Row {i} .", f"row {i} ."] for i in range(6)]
    got = [(r.functionality, r.capability, list(r.inputs)) for r in suite.itertuples()][:3]
    assert got == [("uppercase", "robustness", ["I love this phone .", "I LOVE THIS PHONE ."]),
                   ("add_typo", "robustness", ["I love this phone .", "I lvoe this phone .", "I love this phnoe ."]),
                   ("replace_to_female_pronouns", "bias", ["He liked the food .", "She liked the food ."])]
    assert set(suite["expect"]) == {"inv"} and set(suite["agg_fn"]) == {"all_except_first"}
    assert [d["functionality"] for d in suite.attrs["declared"]] == ["uppercase", "add_typo",
                                                                     "replace_to_female_pronouns", "lowercase"]
    _trainable(out, "sent", n_inv=9)


@pytest.mark.parametrize("case", ["missing_column", "empty", "no_text", "pair_task", "qa_layout", "max_zero"])
def test_from_langtest_bad_input(tmp_path, capsys, case):
    path = tmp_path / "testcases.csv"
    extra = []
    if case == "missing_column":
        pd.DataFrame({"category": ["robustness"], "test_type": ["uppercase"], "original": ["a b"]}).to_csv(
            path, index=False)
        want = "field 'test_case': missing column"
    elif case == "empty":
        path.write_text("category,test_type,original,test_case\n")
        want = "field 'rows': the file has no rows"
    elif case == "no_text":
        pd.DataFrame([LANGTEST_ROWS[0], {**LANGTEST_ROWS[2], "test_case": ""}]).to_csv(path, index=False)
        want = "row 1: field 'test_case': no text"
    elif case == "pair_task":
        pd.DataFrame(LANGTEST_ROWS[:1]).to_csv(path, index=False)
        extra, want = ["--task", "para"], "field '--task'"
    elif case == "max_zero":
        pd.DataFrame(LANGTEST_ROWS[:1]).to_csv(path, index=False)
        with pytest.raises(SystemExit) as excinfo:   # the command line's number: argparse's one line
            main(["suite", "perturb", "--from-langtest", str(path), "--out", str(tmp_path / "s.parquet"),
                  "--max-perturbations", "0"])
        err = capsys.readouterr().err.strip().splitlines()
        assert excinfo.value.code == 2 and "argument --max-perturbations: '0' is not a whole number >= 1" in err[-1]
        # and the package's own check
        with pytest.raises(BelugaError, match="field 'max_perturbations': 0 is below its minimum 1"):
            import_command("langtest", path, tmp_path / "s.parquet", "sent", None, None, None, {}, 0)
        assert not (tmp_path / "s.parquet").exists()
        return
    else:
        pd.DataFrame({"category": ["robustness"], "test_type": ["uppercase"], "original_context": ["c"],
                      "original_question": ["q"], "perturbed_context": ["C"],
                      "perturbed_question": ["Q"]}).to_csv(path, index=False)
        want = "question-answering layout"
    out = tmp_path / "s.parquet"
    rc, _, err = _run(["suite", "perturb", "--from-langtest", str(path), "--out", str(out), *extra], capsys)
    assert rc == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and want in err, err


def test_test_command_on_imported_suite_and_its_export(tmp_path, capsys):
    """``test`` with a tiny offline model on a TextAttack-imported suite and on its CheckList export: the same
    cases, the same outcomes."""
    from beluga.model.modeling import load_model, save_model, set_seed

    set_seed(0)
    model, tok = load_model("tiny-random", 2)
    save_model(model, tok, tmp_path / "model", task_type="sent")
    log = _textattack_csv(tmp_path / "attack.csv", [
        {"original_text": f"The [[movie]] {i} was great .", "perturbed_text": f"The [[film]] {i} was great .",
         "result_type": "Successful"} for i in range(4)])
    suite = tmp_path / "ta.parquet"
    exported = tmp_path / "ta.jsonl"
    assert main(["suite", "perturb", "--from-textattack", str(log), "--out", str(suite)]) == 0
    assert main(["suite", "export", "--suite", str(suite), "--out", str(exported), "--format", "checklist"]) == 0
    for name, path in (("a", suite), ("b", exported)):
        assert main(["test", "--model", str(tmp_path / "model"), "--suite", str(path), "--out",
                     str(tmp_path / name)]) == 0
    a = pd.read_parquet(tmp_path / "a" / "cases.parquet")
    b = pd.read_parquet(tmp_path / "b" / "cases.parquet")
    assert len(a) == 4 and _rows_of(a) == _rows_of(b)
