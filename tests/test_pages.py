"""The project's HTML pages (beluga/core/pages.py: one jinja2 template folder, autoescaped, one stylesheet) and the
progress bars of ``test``, ``score`` and ``suite build`` (beluga/core/progress.py: tqdm on a terminal, nothing
otherwise)."""

import fnmatch
import io
import re
import sys
import tomllib
from html.parser import HTMLParser

import pandas as pd
import pytest
import yaml
from conftest import REPO, case, make_tiny_suite, score_argv

from beluga.analyses.behavioral import failure_summary, failures_html, summary_html
from beluga.cli import main
from beluga.core.pages import STYLESHEET, TEMPLATES, render_page
from beluga.core.progress import progress
from beluga.core.tasks import get_task_type
from beluga.report.iid_data import iid_data_html
from beluga.suites.format import save_suite

SCRIPT = "<script>alert(1)</script>"
SCRIPT_SHOWN = "&lt;script&gt;alert(1)&lt;/script&gt;"
MODEL = 'model &<>" x'
MODEL_SHOWN = "model &amp;&lt;&gt;&#34; x"


class Elements(HTMLParser):
    """A page's start tags (name, attributes) and text, entities decoded."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.styles = [], [], []
        self._in = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        (self.styles if self._in == "style" else self.text).append(data)


def page_content(page: str) -> tuple[list, list]:
    """What a page shows, for comparing two renderings of it: its start tags with their attributes and its
    text, entities decoded, without the stylesheet and the whitespace between elements."""
    dom = Elements(page)
    return dom.tags, [t for t in dom.text if t.strip()]


def evil_summary(models):
    suite = pd.DataFrame([case("c1", SCRIPT, "Cap", "MFT", ["fine", "ok"], [0, 0]),
                          case("c2", "plain", "Vocabulary", "MFT", ["fine"], [2])])
    preds = pd.DataFrame({"case_id": ["c1", "c1", "c2"], "input_idx": [0, 1, 0], "probs": [[0.1, 0.9]] * 3})
    statuses = [pd.DataFrame({"case_id": ["c1", "c2"], "status": ["fail", "pass"]})] * len(models)
    funcs, examples = failure_summary(suite, statuses, [preds] * len(models), get_task_type("sent"), models)
    return funcs, examples


def assert_escaped(page: str, *shown: str):
    assert "<script" not in page.lower() and MODEL not in page, page
    for s in shown:
        assert s in page, (s, page)
    dom = Elements(page)
    assert [t for t, _ in dom.tags].count("style") == 1 and "script" not in [t for t, _ in dom.tags]
    return dom


@pytest.mark.parametrize("models", [[MODEL], [MODEL, "other"]])
def test_summary_page_escapes_functionality_and_model_names(models):
    funcs, examples = evil_summary(models)
    page = summary_html(funcs, examples, f"{MODEL} on suite.parquet", models)
    dom = assert_escaped(page, SCRIPT_SHOWN, MODEL_SHOWN)
    text = "".join(dom.text)
    assert SCRIPT in text and f"{MODEL} on suite.parquet" in text        # shown as text, read back exactly
    assert page.count(f"<details open><summary>{SCRIPT_SHOWN} — 1 failing case(s) shown") == 1
    if len(models) > 1:     # the model's name in the intro and as the column headers' title
        assert f"m1 <code>{MODEL_SHOWN}</code>" in page and ("th", {"title": MODEL}) in dom.tags


def test_failures_page_escapes_functionality_and_model_names():
    df = pd.DataFrame([{"scenario": "func", "configuration": MODEL, "method": "vanilla", "fold": "f0",
                        "functionality": SCRIPT, "case_id": "c1", "expectation": "eq", "input_idx": 0,
                        "input": "<img src=x onerror=alert(1)>", "prediction": "negative"}])
    funcs = pd.DataFrame({"functionality": [SCRIPT, "plain"], "test_type": ["MFT", "INV"]})
    page = failures_html(df, funcs, "sent", {})
    assert_escaped(page, SCRIPT_SHOWN, f"<h4>{MODEL_SHOWN} vanilla, func (f0)</h4>",
                   "<td>&lt;img src=x onerror=alert(1)&gt;</td>")
    assert "<img" not in page
    assert page.count("<details") == 2 and page.count("<details open>") == 1
    assert "<details><summary>plain (INV) — no failing case</summary></details>" in page


def test_iid_data_page_escapes_file_paths():
    record = {"source": "file", "origin": f"/data/{SCRIPT}/{MODEL}.csv", "split": "80/10/10",
              "rows": {"train": 8, "val": 1, "test": 1}}
    page = iid_data_html({"sent": record})
    assert_escaped(page, f"<td>/data/{SCRIPT_SHOWN}/{MODEL_SHOWN}.csv</td>", "<td>8 / 1 / 1</td>")


def test_one_stylesheet_inlined_in_every_page():
    """Each page is one self-contained file: the stylesheet inlined once, verbatim, no external resource."""
    css = (TEMPLATES / STYLESHEET).read_text()
    funcs, examples = evil_summary(["m"])
    df = pd.DataFrame(columns=["scenario", "configuration", "method", "fold", "functionality", "case_id",
                               "expectation", "input_idx", "input", "prediction"])
    pages = [summary_html(funcs, examples, "t", ["m"]),
             failures_html(df, pd.DataFrame({"functionality": ["f"], "test_type": ["MFT"]}), "sent", {}),
             iid_data_html({"sent": {"source": "sst2", "rows": {}}})]
    for page in pages:
        dom = Elements(page)
        assert dom.styles == ["\n" + css] and page.startswith("<!DOCTYPE html>\n<html lang='en'>"), page[:300]
        assert not re.search(r"<link|<script|\bsrc=|https?://|@import", page), page
    assert len({re.search(r"<style>(.*?)</style>", p, re.S).group(1) for p in pages}) == 1


def test_templates_escape_what_they_are_given():
    """autoescape is on for every template (not only *.html): a value given as data is never markup."""
    page = render_page("iid_data.html.j2", title=SCRIPT, fallbacks=[SCRIPT], see=MODEL, dagger="†",
                       rows=[{"task": SCRIPT, "source": SCRIPT, "origin": None, "split": 1, "rows": "?",
                              "paper": "yes", "fallback": True}])
    assert_escaped(page, f"<title>{SCRIPT_SHOWN}</title>", f"<h1>{SCRIPT_SHOWN}</h1>", f"<li>{SCRIPT_SHOWN}</li>",
                   f"({MODEL_SHOWN})", "<td>None</td>")


def test_templates_are_package_data():
    """Every file of beluga/templates is matched by pyproject's [tool.setuptools.package-data] (a wheel holds it)."""
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = [f"{pkg.replace('.', '/')}/{g}" if pkg != "*" else g for pkg, gs in data.items() for g in gs]
    files = [p.relative_to(REPO).as_posix() for p in TEMPLATES.rglob("*") if p.is_file()]
    assert {"beluga/templates/beluga.css", "beluga/templates/page.html.j2"} <= set(files)
    for f in files:
        assert any(fnmatch.fnmatch(f, g) for g in globs), (f, globs)


# ---------------------------------------------------------------------------------- progress bars
class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_on_a_terminal_only(monkeypatch, capsys):
    with progress(3, "scoring", "case") as shown:
        for i in range(1, 4):
            shown(i)
    assert capsys.readouterr() == ("", "")                 # captured output is no terminal: nothing at all
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with progress(3, "scoring", "case") as shown:
        for i in range(1, 4):
            shown(i)
    assert "scoring" in term.getvalue() and "3/3" in term.getvalue()
    assert capsys.readouterr().out == ""


def run_on(terminal: bool, argv, monkeypatch, capsys) -> tuple[int, str]:
    """``main(argv)`` with stderr a terminal or not; (exit status, what it wrote on stderr)."""
    term = Terminal()
    if terminal:
        monkeypatch.setattr(sys, "stderr", term)
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    if terminal:
        monkeypatch.undo()
    return rc, term.getvalue() if terminal else err


def test_score_and_suite_build_show_progress_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    save_suite(make_tiny_suite(2), tmp_path / "suite.parquet")
    for terminal in (False, True):
        rc, err = run_on(terminal, score_argv(tmp_path / "suite.parquet", tmp_path, tmp_path / f"out{terminal}"),
                         monkeypatch, capsys)
        assert rc == 0
        assert ("scoring" in err and "8/8" in err) if terminal else err == "", err
    spec = {"name": "tiny", "task": "sent", "functionalities": [
        {"name": f"f{i}", "class": "c", "type": "MFT", "expect": "eq",
         "templates": [{"label": "positive", "templates": ["The {noun} is {pos_adj}."]}]} for i in range(3)]}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    for terminal in (False, True):
        rc, err = run_on(terminal, ["suite", "build", "--spec", tmp_path / "tiny.yaml", "--out",
                                    tmp_path / f"tiny{terminal}.parquet", "--cases", "2"], monkeypatch, capsys)
        assert rc == 0
        assert ("rendering" in err and "3/3" in err) if terminal else err == "", err


def test_test_command_shows_progress_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    from beluga.model.modeling import load_model, save_model, set_seed

    set_seed(0)
    model, tok = load_model("tiny-random", 2)
    save_model(model, tok, tmp_path / "tiny", task_type="sent")   # its classes named (beluga/model/labels.py)
    save_suite(make_tiny_suite(2), tmp_path / "suite.parquet")
    capsys.readouterr()                                    # (what saving the model printed)
    for terminal in (False, True):
        rc, err = run_on(terminal, ["test", "--model", tmp_path / "tiny", "--suite", tmp_path / "suite.parquet",
                                    "--out", tmp_path / f"out{terminal}", "--task", "sent"], monkeypatch, capsys)
        assert rc == 0
        assert ("predicting" in err and "8/8" in err) if terminal else err == "", err
