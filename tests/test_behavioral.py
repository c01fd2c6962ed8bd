"""Behavioral testing of any model (docs/TESTING_MODELS.md): `python -m beluga test`,
`suite export`, `score --format` in every supported format, and the pages a
person reads (the test summary, the pipeline's failures and report) rendered
in headless Chromium."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import make_tiny_suite

from beluga.analyses.predictions import export_rows
from beluga.cli import main
from beluga.heads import get_head
from beluga.suites.format import save_suite


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from beluga.model.modeling import load_model, save_model, set_seed

    set_seed(0)
    model, tok = load_model("tiny-random", 2)
    out = tmp_path_factory.mktemp("model") / "tiny"
    save_model(model, tok, out, task_type="sent")
    return out


@pytest.fixture(scope="module")
def suite_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("suite") / "suite.parquet"
    save_suite(make_tiny_suite(6), path)
    return path


@pytest.fixture(scope="module")
def tested(tiny_model, suite_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("test_out")
    rc = main(["test", "--model", str(tiny_model), "--suite", str(suite_file), "--out", str(out), "--task", "sent",
               "--failures", "2"])
    assert rc == 0
    return out


def test_score_on_tests_predictions_writes_tests_files(tested, tiny_model, suite_file, tmp_path, capsys):
    """One question, one answer: `score` on the predictions `test` wrote writes the files `test` writes (but the
    predictions) with the same bytes -- cases.parquet and functionalities.csv whole, the summaries but for the
    title naming the model or the predictions -- and prints the same summary table and failing cases."""
    from beluga.analyses.behavioral import markdown_safe
    from beluga.cli.results import RESULT_FILES
    from beluga.cli.score import SCORE_OUTPUTS
    from beluga.cli.testing import TEST_OUTPUTS

    preds = tested / "predictions.parquet"
    out = tmp_path / "scored"
    capsys.readouterr()
    assert main(["score", "--suite", str(suite_file), "--predictions", str(preds), "--out", str(out),
                 "--task", "sent", "--failures", "2"]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in tested.iterdir()) == sorted(TEST_OUTPUTS)
    assert sorted(p.name for p in out.iterdir()) == sorted(SCORE_OUTPUTS) == sorted(RESULT_FILES)
    for name in ("cases.parquet", "functionalities.csv"):
        assert (out / name).read_bytes() == (tested / name).read_bytes(), name
    # the summaries: their title names what was scored (the model, the predictions), the rest is the same
    md = [(d / "summary.md").read_text().split("\n", 1) for d in (tested, out)]
    assert md[0][0] == f"# {markdown_safe(str(tiny_model))} on suite.parquet (sent, 24 cases)"
    assert md[1][0] == md[0][0].replace(markdown_safe(str(tiny_model)), markdown_safe(str(preds)))
    assert md[1][1] == md[0][1]
    html = (tested / "summary.html").read_text()
    assert html.count(str(tiny_model)) == 2   # <title> and <h1>
    assert (out / "summary.html").read_text() == html.replace(str(tiny_model), str(preds))
    funcs = pd.read_csv(out / "functionalities.csv")
    assert list(funcs.columns) == ["capability", "functionality", "test_type", "n_cases", "n_scored", "n_failed",
                                   "failure_rate", "n_filtered", "filtered", "status"]
    assert (funcs["n_failed"] > 0).any() and (funcs["n_failed"] < funcs["n_scored"]).any()   # fails and passes
    assert list(pd.read_parquet(out / "cases.parquet").columns) == ["case_id", "functionality", "capability",
                                                                    "test_type", "status", "filter_reason"]
    runs = [json.loads((d / "run.json").read_text()) for d in (tested, out)]
    assert [r["subcommand"] for r in runs] == ["test", "score"]
    assert list(runs[0]["filtered"].values()) == list(runs[1]["filtered"].values())
    # the printed summary: the header, the table and the failing cases, line for line
    capsys.readouterr()
    assert main(["test", "--model", str(tiny_model), "--suite", str(suite_file), "--out", str(tmp_path / "t"),
                 "--task", "sent", "--failures", "2"]) == 0
    tested_text = capsys.readouterr().out

    def body(text: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, x in enumerate(lines) if set(x) == {"="}) + 1
        return lines[start:next(i for i, x in enumerate(lines) if " scored in " in x)]
    assert body(printed) == body(tested_text)
    header = next(x for x in body(printed) if "class / functionality" in x)
    assert header.split() == ["class", "/", "functionality", "type", "failure", "rate", "failed", "/", "scored",
                              "status"]


def test_terminal_summary_is_readable_in_100_columns(tiny_model, suite_file, tmp_path, capsys):
    assert main(["test", "--model", str(tiny_model), "--suite", str(suite_file), "--out", str(tmp_path),
                 "--task", "sent", "--max-cases-per-functionality", "3"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()[:-1]          # the last line is the output folder
    assert max(map(len, lines)) <= 100
    assert "neg words" in text and "fail" in text and "inputs predicted and scored" in text
    funcs = pd.read_csv(tmp_path / "functionalities.csv")
    assert (funcs["n_cases"] == 3).all()                                 # the cap per functionality


def test_pickled_weights_refused_and_offline_hub_name_one_line(tiny_model, suite_file, tmp_path, capsys,
                                                               monkeypatch):
    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_model, pickled)
    for f in pickled.glob("*.safetensors"):
        f.unlink()
    import torch

    torch.save({"weight": torch.zeros(2)}, pickled / "pytorch_model.bin")
    capsys.readouterr()
    assert main(["test", "--model", str(pickled), "--suite", str(suite_file), "--out", str(tmp_path / "o"),
                 "--task", "sent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"model {pickled}: field 'model': cannot be loaded" in err[0]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["test", "--model", "bert-base-uncased", "--suite", str(suite_file), "--out", str(tmp_path / "o"),
                 "--task", "sent"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not in the Hugging Face cache" in err[0] and "the hub is offline" in err[0]


# ---------------------------------------------------------------- export -> external file -> score


def _line(fmt: str, probs) -> str:
    p = [float(x) for x in probs]
    k = int(np.argmax(p))
    return {"pred_only": f"{k}", "binary_conf": f"{p[1]!r}", "softmax": " ".join(map(repr, p)),
            "pred_and_conf": f"{k} {p[k]!r}", "pred_and_softmax": f"{k} " + " ".join(map(repr, p))}[fmt]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "pred_only", "binary_conf", "softmax", "pred_and_conf",
                                 "pred_and_softmax"])
def test_export_external_file_score_round_trip(suite_file, tmp_path, fmt):
    suite = pd.read_parquet(suite_file)
    assert main(["suite", "export", "--suite", str(suite_file), "--out", str(tmp_path / "inputs.tsv"),
                 "--task", "sent"]) == 0
    exported = pd.read_csv(tmp_path / "inputs.tsv", sep="\t")
    assert list(exported.columns) == ["case_id", "input_idx", "text"]
    pd.testing.assert_frame_equal(exported.astype({"case_id": str}),
                                  export_rows(suite, get_head("classification")).astype({"case_id": str}))
    # a model outside Python: probabilities per exported row (what the format can express)
    rng = np.random.default_rng(len(fmt))
    p1 = rng.random(len(exported))
    probs = np.column_stack([1 - p1, p1])
    if fmt == "pred_only":
        probs = np.eye(2)[probs.argmax(axis=1)]
    ref = exported[["case_id", "input_idx"]].assign(probs=[list(map(float, r)) for r in probs])
    ref.to_parquet(tmp_path / "ref.parquet")
    if fmt in ("csv", "tsv"):
        ref.assign(probs=[" ".join(repr(float(x)) for x in r) for r in ref["probs"]]).to_csv(
            tmp_path / f"preds.{fmt}", sep="\t" if fmt == "tsv" else ",", index=False)
        path, given = tmp_path / f"preds.{fmt}", []
    elif fmt == "jsonl":
        ref.to_json(tmp_path / "preds.jsonl", orient="records", lines=True)
        path, given = tmp_path / "preds.jsonl", []
    else:
        (tmp_path / "preds.txt").write_text("".join(_line(fmt, r) + "\n" for r in ref["probs"]))
        path, given = tmp_path / "preds.txt", ["--format", fmt]
    for pred, out in ((tmp_path / "ref.parquet", "a"), (path, "b")):
        assert main(["score", "--suite", str(suite_file), "--predictions", str(pred), "--out", str(tmp_path / out),
                     "--task", "sent", *(given if out == "b" else [])]) == 0
    a = pd.read_parquet(tmp_path / "a" / "cases.parquet")
    b = pd.read_parquet(tmp_path / "b" / "cases.parquet")
    pd.testing.assert_frame_equal(a, b)
    assert a["status"].nunique() >= 2        # the check has something to compare


def test_read_answers_round_trip_and_format_errors(tmp_path, capsys):
    qa = pd.DataFrame([{"case_id": "q1", "functionality": "f", "capability": "c", "test_type": "MFT",
                        "inputs": ["Anne is taller than Bob.", "Bob is taller than Anne."],
                        "inputs_b": ["Who is taller?", "Who is taller?"], "labels": None, "expect": "squad",
                        "expect_params": json.dumps({}), "agg_fn": "all", "meta": None, "answers": ["Anne", "Bob"]}])
    save_suite(qa, tmp_path / "qa.parquet")
    assert main(["suite", "export", "--suite", str(tmp_path / "qa.parquet"), "--out", str(tmp_path / "in.jsonl"),
                 "--task", "read"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "in.jsonl").read_text().splitlines()]
    assert [list(r) for r in rows] == [["case_id", "input_idx", "context", "question"]] * 2
    (tmp_path / "answers.txt").write_text("Anne\nAnne\n")
    assert main(["score", "--suite", str(tmp_path / "qa.parquet"), "--predictions", str(tmp_path / "answers.txt"),
                 "--format", "pred_only", "--out", str(tmp_path / "o"), "--task", "read"]) == 0
    assert pd.read_parquet(tmp_path / "o" / "cases.parquet")["status"].tolist() == ["fail"]
    (tmp_path / "short.txt").write_text("Anne\n")
    capsys.readouterr()
    assert main(["score", "--suite", str(tmp_path / "qa.parquet"), "--predictions", str(tmp_path / "short.txt"),
                 "--format", "pred_only", "--out", str(tmp_path / "o2"), "--task", "read"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 line(s) for the 2 inputs of the export" in err[0]
    assert main(["score", "--suite", str(tmp_path / "qa.parquet"), "--predictions", str(tmp_path / "short.txt"),
                 "--out", str(tmp_path / "o3"), "--task", "read"]) == 2
    assert "cannot tell the format from the extension" in capsys.readouterr().err


# ---------------------------------------------------------------- in a browser


def _chromium():
    """The chromium binary, installed with apt-get as root when missing (as the Slurm test installs Slurm)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe:
        return exe
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("headless Chromium is not installed, and installing Debian's chromium needs root and apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
    if subprocess.run(cmd, env=env, capture_output=True, timeout=900).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=900)
        if subprocess.run(cmd, env=env, capture_output=True, timeout=900).returncode != 0:
            pytest.skip("apt-get install chromium failed (no package mirror reachable?)")
    return shutil.which("chromium")


def render(exe: str, page: Path, shot: Path) -> tuple[str, list[str]]:
    """(the DOM after scripts ran, console lines) of a page; a screenshot next to it."""
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
            "--v=0", "--virtual-time-budget=8000", "--window-size=1280,1600"]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180)
    assert dom.returncode == 0, dom.stderr[-2000:]
    subprocess.run([*base, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=180)
    console = [ln for ln in dom.stderr.splitlines() if ":CONSOLE" in ln]
    return dom.stdout, console


def visible_pixels(png: Path) -> float:
    from PIL import Image

    img = np.asarray(Image.open(png).convert("L"), dtype=float)
    return float((img < 200).mean())


#: what docutils prints into a page when a caption's reStructuredText is wrong
DOCUTILS_WARNING = re.compile(r"System Message|Docutils System Messages|\((?:WARNING|ERROR|SEVERE)/\d")


def console_errors(lines: list[str]) -> list[str]:
    bad = ("Uncaught", "Error", "Failed to load", "ERROR:CONSOLE")
    return [ln for ln in lines if any(b in ln for b in bad)]


@pytest.mark.slow
def test_pages_in_headless_chromium(tested, tmp_path):
    """The test command's page (the pipeline's report and failures page: tests/test_workflow.py, on the
    session's tiny run)."""
    exe = _chromium()
    dom, console = render(exe, tested / "summary.html", tmp_path / "summary.png")
    assert not console_errors(console), console
    assert not DOCUTILS_WARNING.search(dom)
    assert "<table id=\"functionalities\"" in dom and "<details open=" in dom and "expected:" in dom
    assert visible_pixels(tmp_path / "summary.png") > 0.005


def _all_filtered_summary():
    """A failure summary whose one functionality had every case filtered (the original predicted neutral)."""
    from beluga.analyses.behavioral import failure_summary
    from beluga.core.tasks import get_task_type

    suite = pd.DataFrame([{"case_id": f"r{i}", "functionality": "reducers", "capability": "Intensifiers",
                           "test_type": "DIR", "inputs": [f"it was good {i}", f"it was somewhat good {i}"],
                           "inputs_b": None, "labels": None, "expect": "monotonic", "expect_params": "{}",
                           "agg_fn": "all_except_first", "meta": None} for i in range(10)])
    status = pd.DataFrame({"case_id": suite["case_id"], "status": "filtered",
                           "filter_reason": "original predicted neutral"})
    preds = pd.DataFrame({"case_id": [c for c in suite["case_id"] for _ in range(2)], "input_idx": [0, 1] * 10,
                          "probs": [[0.5, 0.5]] * 20})
    return failure_summary(suite, [status], [preds], get_task_type("sent"), ["m"])


def test_summary_counts_filtered_cases_and_never_says_fail_on_nothing_scored():
    """A functionality with nothing scored: status 'no scored cases' (not 'fail'), and the ten filtered cases
    with their reason in the terminal text, Markdown, HTML and functionalities.csv's columns."""
    from beluga.analyses.behavioral import summary_html, summary_markdown, summary_text

    funcs, examples = _all_filtered_summary()
    r = funcs.iloc[0]
    assert (r.n_scored, r.n_filtered, r.status, r.filtered) == \
        (0, 10, "no scored cases", "10 filtered: original predicted neutral")
    text = summary_text(funcs, examples, "m on s.parquet", ["m"])
    row = next(line for line in text.splitlines() if "reducers" in line)
    assert "no scored cases" in row and " fail " not in row
    assert "10 filtered: original predicted neutral" in text
    for page in (summary_markdown(funcs, examples, "t", ["m"]), summary_html(funcs, examples, "t", ["m"])):
        assert "no scored cases" in page and "10 filtered: original predicted neutral" in page


def test_summary_title_is_whole():
    """A long model path: the terminal title wraps (≤ width, nothing cut, the file name kept), Markdown and HTML
    have it whole."""
    from beluga.analyses.behavioral import summary_html, summary_markdown, summary_text

    funcs, examples = _all_filtered_summary()
    model = "/home/someone/projects/beluga/results/sent/models/iid_to_t/vanilla/func/fold-3/seed-1/model"
    title = f"{model} on my_suite.parquet (sent, 10 cases)"
    text = summary_text(funcs, examples, title, [model], width=60)
    head = text.split("\n=")[0].splitlines()
    assert len(head) > 1 and max(map(len, head)) <= 60 and "…" not in "".join(head)
    assert "".join(head).replace(" ", "") == title.replace(" ", "")
    from beluga.analyses.behavioral import markdown_safe

    assert f"# {markdown_safe(title)}\n" in summary_markdown(funcs, examples, title, [model])
    assert f"<h1>{title}</h1>" in summary_html(funcs, examples, title, [model])


def test_predictions_have_input_text_and_task_comes_from_the_model(tiny_model, suite_file, tested, tmp_path):
    """predictions.parquet carries each row's input text; a suite without a task and no --task takes the task
    the model records (tiny_model: sent)."""
    preds = pd.read_parquet(tested / "predictions.parquet")
    suite = pd.read_parquet(suite_file)
    texts = {(c, j): x for c, xs in zip(suite.case_id, suite.inputs) for j, x in enumerate(xs)}
    assert list(preds.columns[1:4]) == ["case_id", "input_idx", "input"]
    assert preds["input"].tolist() == [texts[k] for k in zip(preds.case_id, preds.input_idx)]
    cases = pd.read_parquet(tested / "cases.parquet")       # the filtered cases' reasons, also in run.json
    assert cases["filter_reason"].notna().tolist() == (cases["status"] == "filtered").tolist()
    counts = cases["filter_reason"].dropna().value_counts().to_dict()
    assert json.loads((tested / "run.json").read_text())["filtered"] == {str(tiny_model): counts}
    out = tmp_path / "o"
    assert main(["test", "--model", str(tiny_model), "--suite", str(suite_file), "--out", str(out)]) == 0
    assert json.loads((out / "run.json").read_text())["arguments"]["task"] == "sent"


def test_task_from_a_built_suite_and_a_conflicting_task(tmp_path, capsys):
    """A suite `suite perturb` / `suite build` writes records its task (metadata beluga.task): `score` and `test`
    need no --task; a --task that differs is one line naming the file and the recorded task."""
    from beluga.core.errors import BelugaError
    from beluga.suites.build import read_suite
    from beluga.suites.format import TASK_KEY

    src = tmp_path / "s.txt"
    src.write_text("The plot was extremely predictable.\nI hated the ending.\n")
    built = tmp_path / "neg.parquet"
    assert main(["suite", "perturb", "--input", str(src), "--perturbation", "add_negation", "--type", "DIR",
                 "--expect", "not_negative", "--out", str(built)]) == 0
    import pyarrow.parquet as pq

    assert pq.read_schema(built).metadata[TASK_KEY.encode()] == b"sent"
    suite, ttype = read_suite(str(built))
    assert ttype.name == "sent" and len(suite) == 2
    with pytest.raises(BelugaError, match=r"neg.parquet: field '--task': 'para', but the file is a suite built "
                                          r"for task 'sent'"):
        read_suite(str(built), "para")
    capsys.readouterr()
    assert main(["score", "--suite", str(built), "--predictions", str(built), "--out", str(tmp_path / "o"),
                 "--task", "read"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "built for task 'sent'" in err
