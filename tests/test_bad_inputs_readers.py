"""The bad-input catalogue, part B of issue 25: the readers of a user's
prediction files (``python -m beluga score``) and the summaries a person reads
(``python -m beluga test``).

Every malformed predictions file ends as tests/test_bad_inputs.py requires:
one line ``error: ...`` on stderr naming the file, the line and the field,
exit status 2, no traceback and no output folder left looking complete. A
CheckList line whose stated label contradicts its probabilities is refused
(the scorer takes the class from the probabilities, CheckList from the label).
READ answers are split into lines on ``\\n`` / ``\\r\\n`` only. A string that is not Unicode text (a lone
surrogate: JSON's ``\\ud800``, Parquet's bytes ED A0 80) is refused where the file is read. Suite text
reaches the terminal with its control characters escaped and summary.md as
literal text (no raw HTML, no Markdown syntax).
"""

import json
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import beluga_cli, case, make_tiny_suite

from beluga.analyses.behavioral import failure_summary, summary_html, summary_markdown, summary_text
from beluga.analyses.predictions import export_rows
from beluga.core.tasks import get_task_type
from beluga.heads import get_head
from beluga.suites.format import save_suite

# ---------------------------------------------------------------- helpers (as in tests/test_bad_inputs.py)


def run_cli(*args) -> subprocess.CompletedProcess:
    """``python -m beluga ARGS``, in-process (tests/conftest.py; tests/test_cli.py runs the process)."""
    return beluga_cli(*args)


def score(suite: Path, preds: Path, out: Path, *extra, task: str = "sent") -> subprocess.CompletedProcess:
    return run_cli("score", "--suite", suite, "--predictions", preds, "--out", out, "--task", task, *extra)


def check_one_line_error(res: subprocess.CompletedProcess, out: Path, *needles: str) -> str:
    """Exit status 2, one ``error:`` line holding every needle, no traceback, no output in ``out``."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    print(lines[0])  # the catalogue's messages: pytest -rP shows them
    assert all(n in lines[0] for n in needles), (needles, lines[0])
    if out.exists():
        stray = [p for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")]
        assert not stray, stray
    return lines[0]


@pytest.fixture(scope="module")
def sent(tmp_path_factory):
    """(suite file, export order) of a tiny SENT suite: 8 cases, 14 inputs."""
    folder = tmp_path_factory.mktemp("suite")
    suite = make_tiny_suite(2)
    save_suite(suite, folder / "suite.parquet")
    return folder / "suite.parquet", export_rows(suite, get_head("classification"))[["case_id", "input_idx"]]


def line_file(path: Path, n: int, good: str, bad: str | None = None, at: int = 2) -> Path:
    """``n`` lines of ``good``, line ``at + 1`` replaced by ``bad``."""
    lines = [good] * n
    if bad is not None:
        lines[at] = bad
    path.write_text("".join(t + "\n" for t in lines), encoding="utf-8")
    return path


# ---------------------------------------------------------------- CheckList line formats

LINE_CASES = {
    # name: (format, a good line, the bad line 3, needles)
    "softmax_label_contradicts": ("pred_and_softmax", "1 0.2 0.8", "0 0.2 0.8",
                                  ("line 3", "field 'pred'", "label 0 contradicts the probabilities")),
    "softmax_label_second_of_a_tie": ("pred_and_softmax", "1 0.2 0.8", "1 0.5 0.5",
                                      ("line 3", "field 'pred'", "ties with class 0")),
    "softmax_label_out_of_range": ("pred_and_softmax", "1 0.2 0.8", "5 0.2 0.8",
                                   ("line 3", "field 'pred'", "label 5 is outside 0..1")),
    "conf_label_contradicts": ("pred_and_conf", "1 0.8", "1 0.3",
                               ("line 3", "field 'pred'", "label 1 contradicts the probabilities")),
    "conf_label_second_of_a_tie": ("pred_and_conf", "1 0.8", "1 0.5", ("line 3", "field 'pred'", "ties with")),
    "conf_above_one": ("pred_and_conf", "1 0.8", "1 1.5", ("line 3", "field 'conf'", "not a probability")),
    "conf_infinite": ("pred_and_conf", "1 0.8", "1 inf", ("line 3", "field 'conf'", "not a probability")),
    "pred_only_nan": ("pred_only", "1", "nan", ("line 3", "field 'pred'", "not a label index")),
    "pred_only_infinite": ("pred_only", "1", "inf", ("line 3", "field 'pred'", "not a label index")),
    "binary_conf_nan": ("binary_conf", "0.8", "nan", ("line 3", "field 'conf'", "not a probability")),
    "softmax_ragged": ("softmax", "0.2 0.8", "0.1 0.1 0.8", ("line 3", "field 'softmax'", "3 probabilities")),
    "softmax_nan": ("softmax", "0.2 0.8", "0.2 NaN", ("line 3", "field 'softmax'", "not a probability distribution")),
}


@pytest.mark.parametrize("name", sorted(LINE_CASES))
def test_bad_line_format_value_names_file_line_and_field(sent, tmp_path, name):
    suite, order = sent
    fmt, good, bad, needles = LINE_CASES[name]
    preds = line_file(tmp_path / "preds.txt", len(order), good, bad)
    line = check_one_line_error(score(suite, preds, tmp_path / "out", "--format", fmt), tmp_path / "out", *needles)
    assert str(preds) in line


def test_label_agreeing_with_probabilities_is_scored_as_the_probabilities(sent, tmp_path):
    """Consistent pred_and_softmax / pred_and_conf lines (a label first of a tie included) score as softmax."""
    suite, order = sent
    probs = ["0.3 0.7", "0.5 0.5", "0.9 0.1"]
    softmax = [probs[i % 3] for i in range(len(order))]
    first = [str(max(range(2), key=lambda j, p=p: (float(p.split()[j]), -j))) for p in softmax]
    cases = {}
    for fmt, lines in (("softmax", softmax), ("pred_and_softmax", [f"{k} {p}" for k, p in zip(first, softmax)]),
                       ("pred_and_conf", [f"{k} {p.split()[int(k)]}" for k, p in zip(first, softmax)])):
        path = tmp_path / f"{fmt}.txt"
        path.write_text("\r\n".join(lines) + "\r\n")
        res = score(suite, path, tmp_path / fmt, "--format", fmt)
        assert res.returncode == 0, res.stderr
        cases[fmt] = pd.read_parquet(tmp_path / fmt / "cases.parquet")
    pd.testing.assert_frame_equal(cases["softmax"], cases["pred_and_softmax"])
    pd.testing.assert_frame_equal(cases["softmax"], cases["pred_and_conf"])
    # the contradicting line of the old silent scoring: refused, not scored from the probabilities
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(f"{1 - int(k)} {p}\n" if i == 0 else f"{k} {p}\n"
                           for i, (k, p) in enumerate(zip(first, softmax))))
    check_one_line_error(score(suite, bad, tmp_path / "bad", "--format", "pred_and_softmax"), tmp_path / "bad",
                         "line 1", "field 'pred'", "contradicts")


def test_non_utf8_line_file_names_the_line(sent, tmp_path):
    suite, order = sent
    preds = tmp_path / "preds.txt"
    preds.write_bytes(b"1\n1\n\xe9\n" + b"1\n" * (len(order) - 3))
    check_one_line_error(score(suite, preds, tmp_path / "out", "--format", "pred_only"), tmp_path / "out",
                         "line 3", "field 'pred'", "not UTF-8")


# ---------------------------------------------------------------- keyed tables (CSV / TSV / JSONL)


def keyed_rows(order: pd.DataFrame) -> list[tuple[str, int]]:
    return list(zip(order["case_id"], order["input_idx"]))


def csv_text(order, column: str, good: str, bad: str | None = None, extra: str = "") -> str:
    """A CSV with a header line and one row per input; data row 1 (line 3) holds ``bad``."""
    rows = [f"{c},{j},{bad if (bad is not None and i == 1) else good}"
            for i, (c, j) in enumerate(keyed_rows(order))]
    return f"case_id,input_idx,{column}\n" + "".join(r + "\n" for r in rows) + extra


def jsonl_text(order, bad: dict | str | None = None, key: str = "probs", good=(0.2, 0.8)) -> str:
    """JSONL, one object per input (``key``: ``good``); line 2 replaced by ``bad`` (an object, or raw text)."""
    good = list(good) if isinstance(good, tuple) else good
    lines = [json.dumps({"case_id": c, "input_idx": int(j), key: good}) for c, j in keyed_rows(order)]
    if bad is not None:
        lines[1] = bad if isinstance(bad, str) else json.dumps(bad)
    return "".join(t + "\n" for t in lines)


def with_line(text: str, line: int, new: str) -> str:
    lines = text.split("\n")
    lines[line - 1] = new
    return "\n".join(lines)


def first_key(order):
    c, j = keyed_rows(order)[1]
    return {"case_id": c, "input_idx": int(j)}


KEYED_CASES = {
    # name: (file name, content from the export order, needles)
    "csv_pred_not_a_number": ("p.csv", lambda o: csv_text(o, "pred", "1", "x"), ("line 3", "field 'pred'", "'x'")),
    "csv_pred_not_an_integer": ("p.csv", lambda o: csv_text(o, "pred", "1", "1.5"), ("line 3", "field 'pred'")),
    "csv_pred_empty": ("p.csv", lambda o: csv_text(o, "pred", "1", ""), ("line 3", "field 'pred'")),
    "csv_probs_bad_json": ("p.csv", lambda o: csv_text(o, "probs", "0.2 0.8", '"[0.2, 0.8"'),
                           ("line 3", "field 'probs'", "not a JSON list")),
    "csv_probs_nan": ("p.csv", lambda o: csv_text(o, "probs", "0.2 0.8", '"[NaN, 0.8]"'),
                      ("line 3", "field 'probs'", "not a probability distribution")),
    "csv_row_short": ("p.csv", lambda o: with_line(csv_text(o, "probs", "0.2 0.8"), 3,
                                                   "{},{}".format(*keyed_rows(o)[1])),
                      ("line 3", "field 'probs'", "2 field(s) where the header has 3")),
    "csv_pred_contradicts_probs": ("p.csv", lambda o: "case_id,input_idx,pred,probs\n" + "".join(
        f"{c},{j},{0 if i == 1 else 1},0.2 0.8\n" for i, (c, j) in enumerate(keyed_rows(o))),
                                   ("line 3", "field 'pred'", "contradicts")),
    "csv_duplicate_row": ("p.csv", lambda o: csv_text(o, "probs", "0.2 0.8", extra=(
        f"{keyed_rows(o)[0][0]},{keyed_rows(o)[0][1]},0.2 0.8\n")), ("field 'case_id'/'input_idx'", "first on line 2")),
    "csv_empty": ("p.csv", lambda o: "", ("field 'path'", "the file is empty")),
    "csv_header_only": ("p.csv", lambda o: "case_id,input_idx,probs\n", ("field 'case_id'", "no prediction rows")),
    "jsonl_probs_nan": ("p.jsonl", lambda o: jsonl_text(o, {**first_key(o), "probs": [float("nan"), 1.0]}),
                        ("line 2", "field 'probs'", "not a probability distribution")),
    "jsonl_probs_string": ("p.jsonl", lambda o: jsonl_text(o, {**first_key(o), "probs": "[0.2, oops]"}),
                           ("line 2", "field 'probs'", "not a JSON list")),
    "jsonl_garbage": ("p.jsonl", lambda o: jsonl_text(o, "{not json"), ("line 2", "field 'json'", "not valid JSON")),
    "jsonl_not_an_object": ("p.jsonl", lambda o: jsonl_text(o, "[1, 2]"),
                            ("line 2", "field 'json'", "not a JSON object")),
    "jsonl_pred_a_list": ("p.jsonl", lambda o: jsonl_text(o, {**first_key(o), "pred": [1]}, key="pred", good=1),
                          ("line 2", "field 'pred'", "not a label index")),
    "jsonl_input_idx_fraction": ("p.jsonl", lambda o: jsonl_text(o, {**first_key(o), "input_idx": 0.5,
                                                                     "probs": [0.2, 0.8]}),
                                 ("line 2", "field 'input_idx'", "not an integer")),
    "jsonl_case_id_missing": ("p.jsonl", lambda o: jsonl_text(o, {"input_idx": 0, "probs": [0.2, 0.8]}),
                              ("line 2", "field 'case_id'", "missing")),
}


@pytest.mark.parametrize("name", sorted(KEYED_CASES))
def test_bad_keyed_table_value_names_file_line_and_field(sent, tmp_path, name):
    suite, order = sent
    fname, content, needles = KEYED_CASES[name]
    preds = tmp_path / fname
    preds.write_text(content(order), encoding="utf-8")
    line = check_one_line_error(score(suite, preds, tmp_path / "out"), tmp_path / "out", *needles)
    assert str(preds) in line


def test_non_utf8_csv_names_the_line_and_column(sent, tmp_path):
    suite, order = sent
    preds = tmp_path / "p.csv"
    text = csv_text(order, "probs", "0.2 0.8").encode()
    c = keyed_rows(order)[1][0].encode()
    preds.write_bytes(text.replace(b"\n" + c + b",", b"\n" + c + b"\xff,", 1))
    check_one_line_error(score(suite, preds, tmp_path / "out"), tmp_path / "out",
                         "line 3", "field 'case_id'", "not UTF-8")


FORMAT_MISMATCH = {
    # name: (file name, what the file holds, --format given, needles)
    "jsonl_read_as_csv": ("p.jsonl", "jsonl", "csv", ("field 'case_id'", "give --format jsonl")),
    "csv_read_as_jsonl": ("p.csv", "csv", "jsonl", ("line 1", "field 'json'", "give --format csv")),
    "tsv_read_as_csv": ("p.txt", "tsv", "csv", ("field 'case_id'", "give --format tsv")),
    "csv_read_as_pred_only": ("p.txt", "csv", "pred_only", ("field '--format'", "give --format csv")),
    "parquet_read_as_softmax": ("p.txt", "parquet", "softmax", ("field '--format'", "Parquet")),
}


@pytest.mark.parametrize("name", sorted(FORMAT_MISMATCH))
def test_format_that_does_not_match_the_file(sent, tmp_path, name):
    suite, order = sent
    fname, holds, given, needles = FORMAT_MISMATCH[name]
    preds = tmp_path / fname
    ref = order.assign(probs=[[0.2, 0.8]] * len(order))
    if holds == "jsonl":
        ref.to_json(preds, orient="records", lines=True)
    elif holds == "parquet":
        ref.to_parquet(preds)
    else:
        ref.assign(probs=["0.2 0.8"] * len(order)).to_csv(preds, sep="\t" if holds == "tsv" else ",", index=False)
    check_one_line_error(score(suite, preds, tmp_path / "out", "--format", given), tmp_path / "out", *needles)


# ---------------------------------------------------------------- READ answers (pred_only)

SEPARATORS = ["\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


def qa_suite(answers: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{"case_id": f"q{i}", "functionality": "names", "capability": "Vocabulary",
                          "test_type": "MFT", "inputs": [f"The winner is {a}."], "inputs_b": ["Who won?"],
                          "labels": None, "expect": "squad", "expect_params": "{}", "agg_fn": "all", "meta": None,
                          "answers": [a]} for i, a in enumerate(answers)])


def test_read_answers_split_on_newlines_only(tmp_path):
    """An answer holding U+0085, U+2028, \\x0b, \\x0c or \\x1c-\\x1e stays one answer on one line (CRLF lines)."""
    answers = [f"Anne{s}Smith" for s in SEPARATORS] + ["Bob"]
    save_suite(qa_suite(answers), tmp_path / "qa.parquet")
    preds = tmp_path / "answers.txt"
    preds.write_bytes("".join(a + "\r\n" for a in answers).encode("utf-8"))
    res = score(tmp_path / "qa.parquet", preds, tmp_path / "out", "--format", "pred_only", task="read")
    assert res.returncode == 0, res.stderr
    cases = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert cases["status"].tolist() == ["pass"] * len(answers)
    # one answer too few: still an error (lines are not silently re-split)
    preds.write_bytes("".join(a + "\n" for a in answers[1:]).encode("utf-8"))
    check_one_line_error(score(tmp_path / "qa.parquet", preds, tmp_path / "out2", "--format", "pred_only",
                               task="read"), tmp_path / "out2", "field 'path'", f"{len(answers) - 1} line(s)")


def test_read_answer_files_bad_values(tmp_path):
    save_suite(qa_suite(["Anne", "Bob"]), tmp_path / "qa.parquet")
    bad = tmp_path / "answers.txt"
    bad.write_bytes(b"Anne\nB\xf6b\n")
    check_one_line_error(score(tmp_path / "qa.parquet", bad, tmp_path / "o1", "--format", "pred_only", task="read"),
                         tmp_path / "o1", "line 2", "field 'answer'", "not UTF-8")
    rows = tmp_path / "answers.jsonl"
    rows.write_text(json.dumps({"case_id": "q0", "input_idx": 0, "answer": "Anne"}) + "\n"
                    + json.dumps({"case_id": "q1", "input_idx": 0, "answer": 1990}) + "\n")
    check_one_line_error(score(tmp_path / "qa.parquet", rows, tmp_path / "o2", task="read"), tmp_path / "o2",
                         "line 2", "field 'answer'", "not a string")


@pytest.mark.parametrize("fmt,field", [("answer", "answer"), ("case_id", "case_id"), ("low", "answer"),
                                       ("parquet", "answer"), ("parquet_case_id", "case_id")])
def test_prediction_string_not_unicode_text_is_one_line(tmp_path, fmt, field):
    """A lone surrogate in a predictions file -- JSON's "\\ud800" escape in a JSONL record, the bytes ED A0 80 in
    a Parquet string -- stops where the file is read, in one line naming the file, the line (row) and the field
    (before: a JSONL answer was scored and the summary's write ended in 'unexpected UnicodeEncodeError', an escaped
    low surrogate "\\udc80" was called a byte that is not UTF-8, a Parquet file stopped in Arrow's 'unexpected
    ArrowException')."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    save_suite(qa_suite(["Anne", "Bob"]), tmp_path / "qa.parquet")
    rows = [{"case_id": "q0", "input_idx": 0, "answer": "Anne"}, {"case_id": "q1", "input_idx": 0, "answer": "Bob"}]
    if fmt.startswith("parquet"):
        preds = tmp_path / "p.parquet"
        col = "case_id" if fmt == "parquet_case_id" else "answer"
        values = [r[col].encode() for r in rows]
        values[1] = values[1][:1] + b"\xed\xa0\x80" + values[1][1:]
        raw = pa.array(values, type=pa.binary())
        table = {k: [r[k] for r in rows] for k in rows[0]}
        table[col] = pa.Array.from_buffers(pa.string(), 2, raw.buffers())
        pq.write_table(pa.table(table), preds)
        where = "row 1"
    else:
        rows[1][field] = rows[1][field][:1] + ("\udc80" if fmt == "low" else "\ud800") + rows[1][field][1:]
        preds = tmp_path / "p.jsonl"
        preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert "\\ud" in preds.read_text()
        where = "line 2"
    line = check_one_line_error(score(tmp_path / "qa.parquet", preds, tmp_path / "o", task="read"), tmp_path / "o",
                                f"predictions {preds}: {where}: field '{field}'", "lone surrogate")
    assert "not UTF-8 text (byte" not in line and "unexpected" not in line, line


# ---------------------------------------------------------------- what a person reads

#: characters a terminal acts on (besides the summary's own line breaks)
TERMINAL_ACTIVE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
EVIL_INPUTS = ["\x1b]0;pwned\x07 hi \x1b[2J", "<img src=x onerror=alert(1)> \u202egnp.exe",
               "**bold** [link](http://x) `code` | pipe", "- # heading\u2028> quote"]


@pytest.fixture
def evil_summary():
    """failure_summary of a suite whose text carries terminal escapes, raw HTML and Markdown syntax."""
    suite = pd.DataFrame([
        case("c`1<b>", "red \x1b[31mALERT\x1b[0m | <script>x()</script>", "Cap\x9b2J <i>it</i>", "MFT",
             EVIL_INPUTS, [2] * len(EVIL_INPUTS)),
        case("c2", "# plain & simple", "Vocabulary", "MFT", ["1. fine"], [2]),
    ])
    keys = [("c`1<b>", j) for j in range(len(EVIL_INPUTS))] + [("c2", 0)]
    preds = pd.DataFrame({"case_id": [c for c, _ in keys], "input_idx": [j for _, j in keys],
                          "probs": [[0.9, 0.1]] * len(keys)})
    status = pd.DataFrame({"case_id": ["c`1<b>", "c2"], "status": ["fail", "fail"]})
    funcs, examples = failure_summary(suite, [status], [preds], get_task_type("sent"), ["model"], k=3)
    return funcs, examples


def test_terminal_summary_escapes_control_characters(evil_summary):
    text = summary_text(*evil_summary, title="model \x1b[5m on suite.parquet", models=["model"])
    assert not TERMINAL_ACTIVE.search(text), [m.group() for m in TERMINAL_ACTIVE.finditer(text)]
    for shown in ("\\x1b[31mALERT", "\\x1b]0;pwned\\x07", "\\x9b2J", "\\u202e", "\\x1b[5m"):
        assert shown in text, (shown, text)
    assert max(map(len, text.splitlines())) <= 100


def test_summary_markdown_keeps_suite_text_literal(evil_summary):
    md = summary_markdown(*evil_summary, title="model <b>x</b> on suite", models=["model"])
    for raw in ("<img", "<script", "<i>", "<b>x", "\x1b", "\x9b", "\u2028", "\u202e", "**bold**", "[link]("):
        assert raw not in md, (raw, md)     # (the case id's "<b>" is inside a code span: literal there)
    assert "&lt;img src=x onerror=alert(1)&gt;" in md
    table = [ln for ln in md.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert all(len(re.findall(r"(?<!\\)\|", ln)) == 8 for ln in table), table
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    for tag in ("<img", "<script", "<a ", "<b>", "<i>", "<h1>heading", "<blockquote", "<ol", "<em>", "<strong>bold"):
        assert tag not in html, (tag, html)
    assert html.count("<tr>") == 3                                      # a "|" in the text splits no cell
    for text in ("&lt;img src=x onerror=alert(1)&gt;", "\\x1b[31mALERT", "**bold** [link](http://x) `code` | pipe",
                 "- # heading &gt; quote", "1. fine", "<code>c`1&lt;b&gt;</code>"):
        assert text in html, (text, html)                              # the suite's text, as text
    page = summary_html(*evil_summary, title="model <b>x</b> on suite", models=["model"])
    for raw in ("<img", "<script", "<b>x", "<i>", "c`1<b>"):
        assert raw not in page, raw


def test_pipeline_failures_markdown_keeps_suite_text_literal():
    """The pipeline's failures.md (rule failures) as beluga.analyses.behavioral.failures_markdown writes it."""
    from beluga.analyses.behavioral import failures_markdown

    df = pd.DataFrame([{"scenario": "func", "configuration": "iid_to_t", "method": "vanilla", "fold": "f0",
                        "functionality": "neg <script>x()</script>", "case_id": "c|1", "expectation": "eq",
                        "input_idx": j, "input": text, "prediction": "negative (0.90)"}
                       for j, text in enumerate(EVIL_INPUTS)])
    md = failures_markdown(df, "sent")
    for raw in ("<img", "<script", "\x1b", "\u202e", "**bold**"):
        assert raw not in md, (raw, md)
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert html.count("<tr>") == 1 + len(EVIL_INPUTS) and html.count("<td>") == 7 * len(EVIL_INPUTS)
    for tag in ("<img", "<script", "<a ", "<em>", "<strong>"):
        assert tag not in html, (tag, html)
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "c|1" in html
