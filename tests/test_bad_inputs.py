"""The bad-input catalogue (this file, and by area tests/test_bad_inputs_models.py: model folders, the
test / score output folders; tests/test_bad_inputs_readers.py: prediction files and summaries;
tests/test_bad_inputs_ood.py: OOD sets and offline sources; tests/test_bad_inputs_config.py: the
analyses' settings, the plan, job ids; tests/test_bad_inputs_interchange.py: names and values between tools,
into the program and out to Markdown and the terminal; tests/test_bad_inputs_lm_eval.py: suites to
lm-evaluation-harness and its samples back; tests/test_bad_inputs_surfaces.py: a suite of the other shape
through the commands): every malformed input ends with

1. one user-facing line naming the file and the field (the WorkflowError line
   snakemake prints, the ``error: ...`` line of a workflow script or of
   ``python -m beluga score``, or the BelugaError of the package function the
   rule calls),
2. a non-zero exit status (or an exception), and
3. no complete-looking output: the target does not exist and no file without
   the temporary prefix (``.<name>.*.tmp``) is left behind.

Config errors are caught while the DAG is built, before any job: by the schema
and the checks of ``beluga.workflow.config.load_workflow`` (which
``rules/common.smk`` calls; the tests call it in-process, and three of them run
``snakemake -n`` to show the line it prints); suite files named in the config
are read then too. Errors that arise inside a job are exercised through the package
function the rule calls or the ``score`` command; only the cases that need the
whole machinery (a failing job, a read-only or full results folder) run
snakemake for real, and stop at the first, cheap job.
"""

import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, RUN, beluga_cli, config_with, fold_run, load_error, make_tiny_suite, output, smk_config

from beluga.core.errors import BelugaError, DataError, ModelError, OutputError, SuiteError
from beluga.core.io import write_parquet
from beluga.steps import data as data_steps
from beluga.steps import evaluate as evaluate_steps
from beluga.steps import train as train_steps
from beluga.suites.format import save_suite

SHARED = REPO.parent / "shared" / "data"


def smk(workdir: Path, cfg: dict, *args):
    return smk_config(workdir, cfg, *args)


def run_cli(*args) -> subprocess.CompletedProcess:
    """``python -m beluga ARGS``, in-process (tests/conftest.py)."""
    return beluga_cli(*args)


def score(suite: Path, preds: Path, out: Path) -> subprocess.CompletedProcess:
    """``python -m beluga score`` of a SENT suite."""
    return run_cli("score", "--suite", suite, "--predictions", preds, "--out", out, "--task", "sent")


def score_suite(tmp_path: Path, path: Path, suite: pd.DataFrame) -> tuple[subprocess.CompletedProcess, Path]:
    """The score command on the suite file ``path`` (holding ``suite``) with a prediction for every input."""
    preds = tmp_path / "in" / "preds.parquet"
    tiny_predictions(suite).to_parquet(preds)
    out = tmp_path / "scored"
    return score(path, preds, out), out


@contextlib.contextmanager
def hang_guard(seconds: int, what: str):
    """Fail instead of hanging when the body is still running after ``seconds`` (a guard, not a timing)."""
    def stop(*_):
        pytest.fail(f"{what}: still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def one_line(text: str, *needles: str) -> str:
    """The single line of ``text`` holding every needle (the message never spans lines)."""
    lines = [ln for ln in text.splitlines() if all(n in ln for n in needles)]
    assert len(lines) == 1, f"expected one line with {needles}, got {lines}:\n{text[-3000:]}"
    print(lines[0])  # the catalogue's messages: pytest -rP shows them
    return lines[0]


def check_workflow_error(out: subprocess.CompletedProcess, *needles: str) -> str:
    """A snakemake run that stops with a WorkflowError: non-zero exit, the
    message on the line after the WorkflowError header, no dump."""
    text = output(out)
    assert out.returncode != 0, text[-2000:]
    line = one_line(text, *needles)
    lines = text.splitlines()
    i = lines.index(line)
    assert i > 0 and lines[i - 1].startswith("WorkflowError"), text[-2000:]
    for noise in ("Failed validating", "On instance", "Traceback"):
        assert noise not in text, text[-3000:]
    return line


def check_cli_error(res: subprocess.CompletedProcess, *needles: str) -> str:
    assert res.returncode != 0, (res.stdout, res.stderr)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1, res.stderr
    print(errors[0])
    assert all(n in errors[0] for n in needles), (needles, errors[0])
    assert "Traceback" not in res.stderr, res.stderr
    return errors[0]


def check_exc(excinfo, *needles: str) -> str:
    msg = str(excinfo.value)
    print(msg)
    assert "\n" not in msg, msg
    assert all(n in msg for n in needles), (needles, msg)
    return msg


def assert_no_output(folder: Path, *targets: Path) -> None:
    """No target exists; under ``folder`` only temporary files (``.name.*.tmp``), if anything."""
    for t in targets:
        assert not Path(t).exists(), t
    if folder.exists():
        stray = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]
        assert not stray, stray


def tiny_predictions(suite: pd.DataFrame) -> pd.DataFrame:
    rows = [(r.case_id, j, [0.2, 0.8]) for r in suite.itertuples(index=False) for j in range(len(r.inputs))]
    return pd.DataFrame(rows, columns=["case_id", "input_idx", "probs"])


def _mount(args: list[str]) -> str | None:
    if shutil.which("mount") is None:
        return "the mount command is missing"
    try:
        res = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    except OSError as e:
        return str(e)
    return None if res.returncode == 0 else (res.stderr.strip() or f"exit status {res.returncode}")


@pytest.fixture
def tiny_fs(tmp_path):
    """A 64 KiB tmpfs (a disk that fills up at once); skipped where mounting is not permitted."""
    mnt = tmp_path / "tiny_fs"
    mnt.mkdir()
    why = _mount(["-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)])
    if why is not None:
        pytest.skip(f"cannot mount a tmpfs to simulate a full disk (needs root / CAP_SYS_ADMIN): {why}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.fixture
def read_only_fs(tmp_path):
    """A read-only tmpfs holding an empty folder ``out`` (root ignores permission
    bits, so a read-only mount is the portable read-only folder)."""
    mnt = tmp_path / "ro_fs"
    mnt.mkdir()
    why = _mount(["-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)])
    if why is not None:
        pytest.skip(f"cannot mount a tmpfs to simulate a read-only folder (needs root / CAP_SYS_ADMIN): {why}")
    (mnt / "out").mkdir()
    why = _mount(["-o", "remount,ro", str(mnt)])
    if why is not None:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        pytest.skip(f"cannot remount the tmpfs read-only: {why}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(folder: Path) -> None:
    """Write a filler file until the file system is full."""
    try:
        with open(folder / ".filler", "wb", buffering=0) as f:
            while True:
                f.write(b"\0" * 4096)
    except OSError:
        pass


# ---------------------------------------------------------------- config (schema, dry run)
CONFIG_CASES = {
    # name: (changes to BASE, field named in the message, words of the message)
    "unknown_key": ({"bogus": 1}, "bogus", "unknown key"),
    "unknown_nested_key": ({"tasks__sent__iid__n_tset": 5}, "tasks.sent.iid.n_tset", "unknown key"),
    "wrong_type": ({"seed": "three"}, "seed", "is not of type 'integer'"),
    "wrong_type_nested": ({"tasks__sent__iid__n_val": "ten"}, "tasks.sent.iid.n_val", "is not of type"),
    "unknown_method": ({"methods": ["vanila"]}, "methods[0]", "unknown value 'vanila'"),
    "unknown_configuration": ({"configurations": ["iid_to_t", "iid_then_t"]}, "configurations[1]",
                              "unknown value 'iid_then_t'"),
    "unknown_partition": ({"partitions": ["seen", "fold"]}, "partitions[1]", "unknown value 'fold'"),
    "empty_method_list": ({"methods": []}, "methods", "should be non-empty"),
    "zero_batch_size": ({"training__iid__batch_size": 0}, "training.iid.batch_size", "minimum of 1"),
    "negative_batch_size": ({"predict__batch_size": -8}, "predict.batch_size", "minimum of 1"),
    "zero_learning_rate": ({"training__suite__lr": 0}, "training.suite.lr", "less than or equal to the minimum of 0"),
    "negative_learning_rate": ({"training__iid__lr": -1.0e-5}, "training.iid.lr", "minimum of 0"),
    "unknown_task_type": ({"tasks__sent__type": "nlii"}, "tasks.sent.type", "unknown value 'nlii'"),
    "suite_without_source": ({"tasks__sent__suite__generate": ...}, "tasks.sent.suite",
                             "needs exactly one of the keys generate, path"),
    "missing_required_key": ({"partitions": ...}, "partitions", "required key is missing"),
    # what the schema cannot say (beluga/workflow/dag.py), still before any job
    "float_seed": ({"seed": 3.0}, "seed", "3.0 is not an integer"),
    "float_size": ({"tasks__sent__iid__n_train": 40.0}, "tasks.sent.iid.n_train", "is not an integer"),
    "fractions_not_summing_to_one": ({"split": {"fractions": [0.5, 0.25, 0.2]}}, "split.fractions", "must sum to 1"),
    "fraction_zero": ({"split": {"fractions": [0.75, 0.0, 0.25]}}, "split.fractions[1]", "less than or equal to"),
    "grid_ids_collide": ({"selection": {"grid": {"lr": [1.0e-3, 1.0000001e-3]}}}, "selection.grid.lr",
                         "have the same trial id"),
    "scenario_iid_seen_without_seen": ({"tasks__sent__scenario_iid": "seen", "partitions": ["func"]},
                                       "tasks.sent.scenario_iid", "'seen' is not in partitions"),
    "unknown_answer_match": ({"training__qa_answer_match": "fuzzy"}, "training.qa_answer_match",
                             "unknown value 'fuzzy'"),
    "ood_hub_offline": ({"tasks__sent__ood": [{"name": "imdb", "source": "hub", "dataset": "imdb"}]},
                        "tasks.sent.ood[0].dataset", "hub is not reachable"),
    "ood_duplicate_names": ({"tasks__sent__ood": [{"name": "t", "source": "hutto", "set": "tweets"},
                                                  {"name": "t", "source": "hutto", "set": "nyt"}]},
                            "tasks.sent.ood", "two OOD sets are named 't'"),
    "ood_movie_snippets": ({"tasks__sent__ood": [{"name": "m", "source": "hutto", "set": "movies"}]},
                           "tasks.sent.ood[0].set", "unknown value 'movies'"),
    "ood_local_without_path": ({"tasks__sent__ood": [{"name": "m", "source": "local"}]}, "tasks.sent.ood[0].path",
                               "required key is missing"),
    "empty_training_fold": ({"tasks__sent__suite__functionalities": ["typos"], "partitions": ["func"]}, "partitions",
                            "has nothing to train on"),
}


@pytest.mark.parametrize("name", list(CONFIG_CASES))
def test_config_error(tmp_path, name):
    """In-process: beluga.workflow.config.load_workflow, which rules/common.smk calls before any rule."""
    changes, field, words = CONFIG_CASES[name]
    line, cfg_file = load_error(tmp_path / "wd", config_with(**changes), f"field '{field}'")
    assert line.startswith(f"config file {cfg_file}: ") and words in line, line


@pytest.mark.slow
@pytest.mark.parametrize("name", ["unknown_key", "float_seed", "empty_training_fold"])
def test_config_error_stops_the_dry_run_in_one_line(tmp_path, name):
    """The wiring: snakemake -n prints the in-process line after its WorkflowError header and nothing
    else (a schema error, a check the schema cannot make, a check of the runs)."""
    changes, field, _ = CONFIG_CASES[name]
    expected, _ = load_error(tmp_path / "in_process", config_with(**changes))
    wd = tmp_path / "wd"
    out, cfg_file = smk(wd, config_with(**changes), "-n")
    line = check_workflow_error(out, f"config file {cfg_file}", f"field '{field}'")
    assert line == expected.replace(str(tmp_path / "in_process.yaml"), str(cfg_file)), (line, expected)
    assert not (wd / "results").exists()


# ---------------------------------------------------------------- suite files named in the config (dry run)
def suite_config(path: Path) -> dict:
    return config_with(tasks__sent__suite={"path": str(path)})


def test_suite_file_missing(tmp_path):
    path = tmp_path / "suites" / "sentiment.jsonl.gz"
    line, _ = load_error(tmp_path / "wd", suite_config(path), f"suite file {path}", "field 'path'")
    assert "file does not exist" in line


@pytest.mark.slow
def test_suite_file_missing_stops_the_dry_run_in_one_line(tmp_path):
    """The wiring for a suite file read while the DAG is built."""
    path = tmp_path / "suites" / "sentiment.jsonl.gz"
    out, _ = smk(tmp_path / "wd", suite_config(path), "-n")
    line = check_workflow_error(out, f"suite file {path}", "field 'path'")
    assert "file does not exist" in line
    assert_no_output(tmp_path / "wd" / "results")


def test_suite_file_truncated_jsonl_gz(tmp_path):
    rows = make_tiny_suite(8).to_dict("records")
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in rows * 4).encode())
    path = tmp_path / "suite.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    line, _ = load_error(tmp_path / "wd", suite_config(path), f"suite file {path}", "field 'path'")
    assert "not a readable JSONL file" in line


def test_suite_file_not_parquet(tmp_path):
    path = tmp_path / "suite.parquet"
    path.write_text("case_id,functionality,test_type\nc1,negation,MFT\n")
    line, _ = load_error(tmp_path / "wd", suite_config(path), f"suite file {path}", "field 'path'")
    assert "not a readable Parquet file" in line


@pytest.mark.parametrize("where,field", [("inputs", "inputs[1][1]"), ("meta", "meta.name")])
def test_checklist_string_not_unicode_text_is_one_line(tmp_path, where, field):
    """A lone surrogate (JSON's "\\ud800") in a CheckList JSONL record cannot be written as UTF-8: both exports
    (`suite export --format checklist` / `--format lm-eval`) and score stop where the file is read, in one line
    naming the file, the line and the field, and write nothing (before, the exports ended in the last resort's
    'unexpected UnicodeEncodeError' line)."""
    record = {"suite": "qqp", "case_id": "qqp-00-00000", "functionality": "f", "capability": "C",
              "test_type": "MFT", "inputs": [["a?", "b?"], ["c?", "d?"]], "labels": [1, 1], "meta": None,
              "agg_fn": "all", "expect": {"expression": "Expect.eq(val=None)", "name": "Expect.eq",
                                          "params": {"val": None}, "slice": None}}
    bad = dict(record, case_id="qqp-00-00001", **({"inputs": [["a?", "b?"], ["c?", "d\ud800?"]]} if where == "inputs"
                                                  else {"meta": {"name": "x\udfff"}}))
    (tmp_path / "in").mkdir()
    suite, o = tmp_path / "in" / "suite.jsonl", tmp_path / "o"
    suite.write_text(json.dumps(record) + "\n" + json.dumps(bad) + "\n")
    assert "\\ud" in suite.read_text()   # the escape, as json.dumps writes it
    words = ["--label-words", "not_duplicate=no", "duplicate=yes"]
    for args, target in ((["suite", "export", "--format", "checklist", "--out", o / "x.jsonl"], "x.jsonl"),
                         (["suite", "export", "--format", "lm-eval", "--out", o / "lm", "--prompt",
                           "{text} {text_b}", *words], "lm"),
                         (["score", "--predictions", tmp_path / "in" / "p.parquet", "--out", o / "out"], "out")):
        res = run_cli(*args, "--suite", suite)
        line = check_cli_error(res, f"CheckList suite {suite}: line 2", f"field '{field}'", "lone surrogate")
        assert res.returncode == 2 and "unexpected" not in line
        assert_no_output(o, o / target)


SUITE_ROW = {"case_id": "c1", "functionality": "f", "capability": "C", "test_type": "MFT", "inputs": ["a fine film"],
             "labels": [2], "expect": "eq", "expect_params": "{}", "agg_fn": "all", "meta": None}


def invalid_utf8_parquet(path: Path) -> Path:
    """A project-format suite whose second case's input holds a lone surrogate as Parquet can: its UTF-8-style
    bytes (ED A0 80, not UTF-8), written without Arrow's check."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from beluga.suites.format import SCHEMA
    raw = pa.array([b"a fine film", b"a \xed\xa0\x80 film"], type=pa.binary())
    inputs = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.Array.from_buffers(pa.string(), 2,
                                                                                              raw.buffers()))
    cols = {f.name: pa.array([SUITE_ROW.get(f.name)] * 2, f.type) for f in SCHEMA}
    cols.update(case_id=pa.array(["c1", "c2"]), inputs=inputs)
    pq.write_table(pa.table(cols, schema=SCHEMA), path)
    return path


@pytest.mark.parametrize("fmt,field", [("jsonl", "inputs[0]"), ("csv", "inputs[0]"), ("jsonl_meta", "meta.name"),
                                       ("csv_params", "expect_params.val"), ("parquet", "inputs[0]")])
def test_suite_file_string_not_unicode_text_is_one_line(tmp_path, fmt, field):
    """A lone surrogate in a project-format suite (JSON's "\\ud800" in a JSONL record or a CSV cell's JSON;
    the bytes ED A0 80 in a Parquet string) stops where the file is read, in one line naming the file, the row
    and the field, and the export writes nothing (before: the CheckList export ended in the last resort's
    'unexpected UnicodeEncodeError' line, a Parquet suite in Arrow's 'unexpected ArrowException')."""
    bad = dict(SUITE_ROW, case_id="c2", inputs=["a \ud800 film"])
    (tmp_path / "in").mkdir()
    if fmt == "parquet":
        suite = invalid_utf8_parquet(tmp_path / "in" / "suite.parquet")
    elif fmt.startswith("jsonl"):
        if fmt == "jsonl_meta":
            bad = dict(SUITE_ROW, case_id="c2", meta={"name": "x\udfff"})
        suite = tmp_path / "in" / "suite.jsonl"
        suite.write_text(json.dumps(SUITE_ROW) + "\n" + json.dumps(bad) + "\n")
    else:
        header = "case_id,functionality,capability,test_type,inputs,labels,expect,expect_params,agg_fn\n"
        cell = '"[""a \\ud800 film""]",[2],eq,{}' if fmt == "csv" else '"[""a film""]",[2],eq,"{""val"": ""\\udc00""}"'
        suite = tmp_path / "in" / "suite.csv"
        suite.write_text(header + 'c1,f,C,MFT,"[""a fine film""]",[2],eq,{},all\n' + f"c2,f,C,MFT,{cell},all\n")
    assert "\\ud" in suite.read_text(errors="replace") or fmt == "parquet"
    o = tmp_path / "o"
    res = run_cli("suite", "export", "--format", "checklist", "--out", o / "x.jsonl", "--suite", suite,
                  "--task", "sent")
    where = "row 1: " if fmt == "parquet" else "row 1 (case_id='c2'): "
    line = check_cli_error(res, f"suite file {suite}: {where}", f"field '{field}'", "lone surrogate")
    assert "unexpected" not in line
    assert_no_output(o, o / "x.jsonl")


# ---------------------------------------------------------------- suite contents (build_suite / score)
def build(tmp_path, suite_file: Path):
    """The build_suite rule's call on a suite file; returns (excinfo, target)."""
    target = tmp_path / "results" / "sent" / "suite" / "suite.parquet"
    with pytest.raises(SuiteError) as excinfo:
        data_steps.build_suite(suite={"path": str(suite_file), "paper_fixes": True, "seed": 7,
                                      "max_cases_per_functionality": None, "max_inputs_per_case": None},
                               task_type="sent", pool=None, out_suite=str(target))
    return excinfo, target


def test_suite_file_truncated_parquet(tmp_path):
    suite = make_tiny_suite(3)
    path = tmp_path / "in" / "suite.parquet"
    path.parent.mkdir()
    save_suite(suite, path)
    path.write_bytes(path.read_bytes()[:-200])
    res, out = score_suite(tmp_path, path, suite)
    line = check_cli_error(res, f"suite file {path}", "field 'path'")
    assert "not a readable Parquet file" in line
    assert_no_output(out, out / "cases.parquet", out / "functionalities.csv")


def test_unknown_test_type(tmp_path):
    suite = make_tiny_suite(2)
    suite.loc[3, "test_type"] = "DIRR"
    path = tmp_path / "suite.jsonl"
    suite.to_json(path, orient="records", lines=True)
    excinfo, target = build(tmp_path, path)
    check_exc(excinfo, f"suite file {path}", f"case_id={suite.loc[3, 'case_id']!r}", "field 'test_type'",
              "unknown test type 'DIRR'")
    assert_no_output(tmp_path / "results", target)


def test_functionality_without_cases(tmp_path):
    suite = make_tiny_suite(2)
    declared = [{"functionality": f, "capability": c, "test_type": t, "description": ""}
                for f, c, t in suite[["functionality", "capability", "test_type"]].drop_duplicates().itertuples(
                    index=False)]
    declared.append({"functionality": "negated neutral", "capability": "Negation", "test_type": "MFT",
                     "description": "declared, but every case was lost"})
    path = tmp_path / "in" / "suite.parquet"
    path.parent.mkdir()
    save_suite(suite, path, declared=declared)
    res, out = score_suite(tmp_path, path, suite)
    line = check_cli_error(res, f"suite file {path}", "field 'functionality'")
    assert "'negated neutral' has no test cases" in line
    assert_no_output(out, out / "cases.parquet", out / "functionalities.csv")


def test_empty_suite(tmp_path):
    path = tmp_path / "suite.csv"
    path.write_text(",".join(make_tiny_suite(1).columns) + "\n")
    excinfo, target = build(tmp_path, path)
    check_exc(excinfo, f"suite file {path}", "field 'case_id'", "no test cases")
    assert_no_output(tmp_path / "results", target)


def test_labels_outside_label_set(tmp_path):
    suite = make_tiny_suite(2)
    suite.at[0, "labels"] = [3]  # SENT suites are three-class: 0, 1, 2
    path = tmp_path / "in" / "suite.parquet"
    path.parent.mkdir()
    save_suite(suite, path)
    excinfo, target = build(tmp_path, path)
    check_exc(excinfo, f"suite file {path}", "case_id='mft-0'", "field 'labels'",
              "label 3 is outside the task's label set [0, 1, 2]")
    assert_no_output(tmp_path / "results", target)
    # the score command says the same
    res, out = score_suite(tmp_path, path, suite)
    check_cli_error(res, f"suite file {path}", "field 'labels'", "outside the task's label set")
    assert_no_output(out, out / "cases.parquet")


def test_inv_case_without_perturbation(tmp_path):
    suite = make_tiny_suite(2)
    i = int(suite.index[suite.case_id == "inv-1"][0])
    suite.at[i, "inputs"] = ["a fine film 1"]
    path = tmp_path / "suite.parquet"
    save_suite(suite, path)
    excinfo, target = build(tmp_path, path)
    check_exc(excinfo, f"suite file {path}", "case_id='inv-1'", "field 'inputs'",
              "INV case needs the original and at least one perturbation")
    assert_no_output(tmp_path / "results", target)


def test_duplicate_case_ids(tmp_path):
    suite = make_tiny_suite(2)
    suite.loc[5, "case_id"] = suite.loc[1, "case_id"]
    path = tmp_path / "suite.parquet"
    save_suite(suite, path)
    excinfo, target = build(tmp_path, path)
    check_exc(excinfo, f"suite file {path}", "row 5", f"case_id={suite.loc[1, 'case_id']!r}", "field 'case_id'",
              "duplicate of row 1")
    assert_no_output(tmp_path / "results", target)


# ---------------------------------------------------------------- CheckList release suites (issue 36)
@pytest.mark.parametrize("run_idxs,words", [
    (["0", 1], "run_idxs[0]: '0' is not a case index"),
    ([0, 5], "run_idxs[1]: 5 is outside the test's 2 cases"),
    ([1, 1], "run_idxs[1]: case 1 is listed twice"),
    (3, "run_idxs (int) is not a list of case indices"),
])
def release_tarball(tmp_path: Path, monkeypatch, **state) -> Path:
    """A CheckList release tarball (``sentiment_suite.tar.gz``) of one MFT ``a test`` with the attributes
    ``state``, pickled from stand-in classes named as CheckList's."""
    import io
    import pickle
    import sys
    import tarfile
    import types

    modules = {name: types.ModuleType(name) for name in ("checklist", "checklist.test_suite", "checklist.test_types")}
    TestSuite, MFT = type("TestSuite", (), {}), type("MFT", (), {})
    TestSuite.__module__ = "checklist.test_suite"
    MFT.__module__ = "checklist.test_types"
    modules["checklist.test_suite"].TestSuite, modules["checklist.test_types"].MFT = TestSuite, MFT
    for name, mod in modules.items():
        monkeypatch.setitem(sys.modules, name, mod)
    test = MFT()
    test.__dict__.update(state)
    suite = TestSuite()
    suite.tests = {"a test": test}
    data = pickle.dumps(suite, protocol=3)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "sentiment_suite.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo("sentiment_suite.pkl")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("run_idxs,words", [
    (["0", 1], "run_idxs[0]: '0' is not a case index"),
    ([0, 5], "run_idxs[1]: 5 is outside the test's 2 cases"),
    ([1, 1], "run_idxs[1]: case 1 is listed twice"),
    (3, "run_idxs (int) is not a list of case indices"),
])
def test_release_suite_with_malformed_run_idxs_is_one_line(tmp_path, monkeypatch, run_idxs, words):
    """A release pickle whose ``run_idxs`` are not distinct case indices of the test (before: a ValueError /
    TypeError, or indices past the cases silently ignored): one line naming the file, the test and the item."""
    path = release_tarball(tmp_path, monkeypatch, data=["good", "fine"], labels=1, agg_fn="all", expect=None,
                           run_idxs=run_idxs)
    from beluga.suites.release import load_release_suite

    with pytest.raises(SuiteError) as excinfo:
        load_release_suite(path)
    check_exc(excinfo, str(path), "a test", words)


@pytest.mark.parametrize("where,field", [("data", "inputs[1]"), ("meta", "meta.who")])
def test_release_suite_string_not_unicode_text_is_one_line(tmp_path, monkeypatch, where, field):
    """A lone surrogate in a release pickle (pickle keeps one; its restricted reader built it into a record):
    the CheckList export of the tarball and score stop where the records are read, in one line naming the file,
    the test, the case and the field, and write nothing (before: the export ended in the last resort's
    'unexpected UnicodeEncodeError' line)."""
    import beluga.suites.release as release

    data = [["good", "fine"], ["nice", "bad \ud800 film"] if where == "data" else ["nice", "bad"]]
    meta = [None, {"who": "x\udfff"}] if where == "meta" else None
    path = release_tarball(tmp_path, monkeypatch, data=data, labels=2, meta=meta, agg_fn="all", expect=None,
                           capability="Vocabulary")
    eq = {"expression": "Expect.eq(val=None)", "name": "Expect.eq", "params": {"val": None}, "slice": None}
    monkeypatch.setattr(release, "describe_expectation", lambda expect: dict(eq))   # (its closures: not pickled here)
    good = release_tarball(tmp_path / "good", monkeypatch, data=[["good", "fine"]], labels=2, agg_fn="all",
                           expect=None, capability="Vocabulary")
    ok = run_cli("suite", "export", "--format", "checklist", "--suite", good, "--out", tmp_path / "g.jsonl")
    assert ok.returncode == 0, ok.stderr
    o = tmp_path / "o"
    for args, target in ((["suite", "export", "--format", "checklist", "--out", o / "x.jsonl"], "x.jsonl"),
                         (["score", "--predictions", tmp_path / "p.parquet", "--out", o / "out"], "out")):
        res = run_cli(*args, "--suite", path)
        line = check_cli_error(res, f"CheckList release suite {path} (test 'a test'): case_id='sentiment-00-00001'",
                               f"field '{field}'", "lone surrogate")
        assert "unexpected" not in line
        assert_no_output(o, o / target)


# ---------------------------------------------------------------- i.i.d. data
def test_missing_iid_file(tmp_path):
    """A local i.i.d. file that does not exist: the dry run stops, naming the file and the field (it is a
    declared input of prepare_iid, checked before any job runs)."""
    missing = tmp_path / "data" / "reviews.tsv"
    cfg = config_with(tasks__sent__iid={"source": str(missing), "n_val": 10, "n_test": 20})
    line, _ = load_error(tmp_path / "wd", cfg, f"iid file {missing}", "field 'tasks.sent.iid.source'")
    assert "file does not exist" in line, line


def test_missing_local_model_folder(tmp_path):
    model = tmp_path / "models" / "my-bert"
    line, _ = load_error(tmp_path / "wd", config_with(tasks__sent__model=str(model)), f"model {model}",
                         "field 'tasks.sent.model'")
    assert "path does not exist" in line, line


def test_iid_label_outside_label_set(tmp_path):
    path = tmp_path / "reviews.tsv"
    path.write_text("sentence\tlabel\n" + "".join(f"review {i}\t{i % 2}\n" for i in range(30)) + "so-so\t2\n")
    outputs = {s: str(tmp_path / "results" / "sent" / "iid" / f"{s}.parquet") for s in ("train", "val", "test", "pool")}
    with pytest.raises(DataError) as excinfo:
        data_steps.prepare_iid(iid={"source": str(path), "n_val": 5, "n_test": 5, "seed": 42}, task_type="sent",
                               outputs=outputs)
    check_exc(excinfo, f"iid file {path}", "row 30", "field 'label'", "value 2 is outside the label set [0, 1]")
    assert_no_output(tmp_path / "results", *map(Path, outputs.values()))


# ---------------------------------------------------------------- data staging and the fetch lock (issue 36)
@pytest.fixture
def staging(tmp_path, monkeypatch):
    """A staging source of two small files (the staged list cut to them; no published checksums) with
    its SHA256SUMS, and an empty data folder: (source, data folder)."""
    from beluga.data import fetch

    monkeypatch.setattr(fetch, "STAGED", ("iid/a.tsv", "iid/b.tsv"))
    source = tmp_path / "copy"
    for rel in fetch.STAGED:
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(f"{rel}\n")
    (source / "SHA256SUMS").write_text("".join(f"{fetch.sha256_of(source / r)}  {r}\n" for r in fetch.STAGED))
    return source, tmp_path / "data"


def test_staging_bad_sums_lock_and_user_files_are_one_line(staging):
    """A one-field SHA256SUMS line; a file without a checksum line (refused: it cannot be verified, so it
    is not recorded as verified); a string entry in the fetch lock; a regular file of the user's where a
    staged file goes (refused, kept): one line each, nothing staged, the user's file unchanged."""
    from beluga.data import fetch

    source, data = staging
    sums = source / "SHA256SUMS"
    good = sums.read_text()
    sums.write_text(good + "deadbeef\n")
    line = check_cli_error(run_cli("data", "stage", "--from", source, "--data-dir", data),
                           f"staging source {sums}", "field 'line 3'", "sha256sum's format")
    sums.write_text(good.splitlines()[0] + "\n")
    line = check_cli_error(run_cli("data", "stage", "--from", source, "--data-dir", data),
                           f"staging source {sums}", "field 'iid/b.tsv'", "no checksum line")
    assert not data.exists(), line
    sums.write_text(good)
    data.mkdir()
    lock = data / fetch.FETCH_LOCK_NAME
    lock.write_text(json.dumps({"files": {"iid/a.tsv": "0" * 64}}))
    check_cli_error(run_cli("data", "stage", "--from", source, "--data-dir", data),
                    f"lock file {lock}", "field 'files.iid/a.tsv'", "is not an object")
    with pytest.raises(fetch.FetchError) as excinfo:   # as rules/fetch.smk reads it
        fetch.read_lock(str(data))
    check_exc(excinfo, f"lock file {lock}", "field 'files.iid/a.tsv'")
    lock.unlink()
    mine = data / "iid" / "b.tsv"
    mine.parent.mkdir()
    mine.write_text("my own reviews\n")
    check_cli_error(run_cli("data", "stage", "--from", source, "--data-dir", data),
                    f"data folder file {mine}", "does not replace a file it did not create")
    assert mine.read_text() == "my own reviews\n" and not mine.is_symlink()
    assert not (data / "iid" / "a.tsv").exists() and not lock.exists()
    mine.unlink()   # moved away: staging goes through, and again over its own links and copies
    for copy in ((), ("--copy",), ("--copy",), ()):
        res = run_cli("data", "stage", "--from", source, "--data-dir", data, *copy)
        assert res.returncode == 0, res.stderr
    assert sorted(fetch.read_lock(str(data))["files"]) == ["iid/a.tsv", "iid/b.tsv"]


@pytest.mark.parametrize("how", ["same folder", "symbolic link", "inside the source", "folder linking into it"])
def test_staging_never_writes_over_its_source(staging, how):
    """``data stage --from X --data-dir X`` (or a link to X, a folder inside X, a data folder whose iid/ is a link
    into X) would unlink the reference files and leave links to themselves: refused before anything is
    written, naming --data-dir and the source, every source file unchanged and no lock written into it."""
    from beluga.data import fetch

    source, data = staging
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    if how == "same folder":
        data, needle = source, f"is the source itself ({source}"
    elif how == "symbolic link":
        data.symlink_to(source, target_is_directory=True)
        needle = f"is the source itself ({source}"
    elif how == "inside the source":
        data, needle = source / "data", f"lies inside the source {source}"
    else:
        (data / "iid").parent.mkdir()
        (data / "iid").symlink_to(source / "iid", target_is_directory=True)
        needle = f"is the source file itself ({source / fetch.STAGED[0]}"
    check_cli_error(run_cli("data", "stage", "--from", source, "--data-dir", data), "field '--data-dir'", needle)
    after = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    assert after == before
    assert not any(p.is_symlink() for p in source.rglob("*"))


# ---------------------------------------------------------------- models
@pytest.fixture
def iid_train(tmp_path):
    path = tmp_path / "train.parquet"
    write_parquet(pd.DataFrame({"example_id": ["a", "b"], "text": ["good", "bad"], "label": [1, 0]}), path)
    return path


def _train_iid(model: str, iid_train: Path, out_dir: Path):
    run = fold_run(hparams={"lr": 1e-3, "batch_size": 2, "epochs": 1}, seed=1, task="sent", configuration="iid",
                   partition="standard", model=model, max_length=16)
    train_steps.train_iid(run=run.to_dict(), train=str(iid_train), out_model=str(out_dir))


def test_model_path_does_not_exist(tmp_path, iid_train):
    model = tmp_path / "models" / "my-bert"
    out_dir = tmp_path / "results" / "sent" / "models" / "iid" / "vanilla" / "standard" / "all"
    with pytest.raises(ModelError) as excinfo:
        _train_iid(str(model), iid_train, out_dir)
    check_exc(excinfo, f"model {model}", "field 'model'", "path does not exist")
    assert_no_output(tmp_path / "results", out_dir)


def test_hub_model_name_offline(tmp_path, iid_train, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out_dir = tmp_path / "results" / "model"
    # an offline hub name fails at once, without waiting for the network
    with hang_guard(30, "an offline hub name"), pytest.raises(ModelError) as excinfo:
        _train_iid("bert-base-uncased", iid_train, out_dir)
    check_exc(excinfo, "model 'bert-base-uncased'", "field 'model'", "offline")
    assert_no_output(tmp_path / "results", out_dir)


# ---------------------------------------------------------------- score command
def test_predictions_with_missing_inputs(tmp_path):
    suite = make_tiny_suite(2)
    save_suite(suite, tmp_path / "suite.parquet")
    preds = tiny_predictions(suite)
    preds = preds[~((preds.case_id == "inv-1") & (preds.input_idx == 2))]
    path = tmp_path / "preds.parquet"
    preds.to_parquet(path)
    out = tmp_path / "scored"
    res = score(tmp_path / "suite.parquet", path, out)
    line = check_cli_error(res, f"predictions {path}", "field 'input_idx'")
    assert "missing predictions for case 'inv-1'" in line and "input 2 has none" in line, line
    assert_no_output(out, out / "cases.parquet", out / "functionalities.csv")


# ---------------------------------------------------------------- the last resort (issue 36)
def test_unexpected_error_is_one_line_with_the_traceback_in_a_log(tmp_path, monkeypatch):
    """An exception the project does not anticipate (here a ValueError forced into the score command and
    into a job's step) is one line naming the command (the rule and its wildcards) and its input, and the
    log holding the traceback; exit status non-zero. A BelugaError keeps its own line."""
    import io
    import logging
    import tempfile
    import types

    import beluga.cli
    from beluga.workflow import smk as smk_glue

    def boom(*_, **__):
        raise ValueError("forced\nfailure")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(beluga.cli, "score_command", boom)
    res = score(tmp_path / "suite.parquet", tmp_path / "preds.parquet", tmp_path / "out")
    line = check_cli_error(res, "beluga score on input", f"{tmp_path / 'suite.parquet'}", "ValueError: forced failure")
    log = Path(line.rsplit("traceback in ", 1)[1].rstrip(")"))
    assert log.parent == tmp_path and "Traceback" in log.read_text() and "forced" in log.read_text()

    job_log = tmp_path / "logs" / "job.log"
    job = types.SimpleNamespace(rule="train_iid", log=[str(job_log)], input=["results/sent/iid/train.parquet"],
                                wildcards={"task": "sent", "seeddir": ""})
    for fn, needles in ((boom, ("rule train_iid (task=sent, seeddir=)", "on input results/sent/iid/train.parquet",
                                 "ValueError: forced failure", f"traceback in {job_log}")),
                        (lambda: (_ for _ in ()).throw(DataError("iid file x: field 'label': bad")),
                         ("iid file x: field 'label': bad",))):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as excinfo:
            smk_glue.run(job, fn)
        logging.basicConfig(force=True)   # (the wrapper sent logging to the job's log)
        assert excinfo.value.code == 1
        res = subprocess.CompletedProcess([], 1, "", err.getvalue())
        check_cli_error(res, *needles)
        assert "Traceback" in job_log.read_text()


def test_ctrl_c_is_one_line_exit_130_and_nothing_written(tmp_path, monkeypatch):
    """Ctrl-C (a KeyboardInterrupt) during a command: one line on stderr, no traceback, exit status 130; the
    --out folder is written whole or not at all, so an interrupt while its files are being written leaves none
    of them (and an earlier run's folder as it was). Before, the interrupt ended in Python's traceback."""
    import beluga.cli
    import beluga.core.io

    def interrupt(*_, **__):
        raise KeyboardInterrupt

    def cli(*args):   # an interrupt escaping main fails this test (it would stop pytest)
        try:
            return run_cli(*args)
        except KeyboardInterrupt:
            pytest.fail("the KeyboardInterrupt escaped beluga.cli.main")

    def score(suite, preds, out):
        return cli("score", "--suite", suite, "--predictions", preds, "--out", out, "--task", "sent")

    (tmp_path / "in").mkdir()
    suite, preds = scoring_inputs(tmp_path / "in")
    out = tmp_path / "o" / "out"
    monkeypatch.setattr(beluga.core.io, "write_text", interrupt)   # summary.md: after cases.parquet, functionalities
    res = score(suite, preds, out)
    assert (res.returncode, res.stderr) == (130, f"interrupted; nothing written to {out}\n"), res
    assert_no_output(tmp_path / "o", out)
    monkeypatch.undo()
    assert score(suite, preds, out).returncode == 0
    written = {f.name: f.read_bytes() for f in out.iterdir()}
    monkeypatch.setattr(beluga.core.io, "write_text", interrupt)
    res = score(suite, preds, out)
    assert (res.returncode, res.stderr) == (130, f"interrupted; nothing written to {out}\n"), res
    assert {f.name: f.read_bytes() for f in out.iterdir()} == written   # the earlier run's folder, as it was
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]        # and no staging folder left

    monkeypatch.setattr(beluga.cli, "plan_command", interrupt)           # a command that writes nothing
    res = cli("plan")
    assert (res.returncode, res.stdout, res.stderr) == (130, "", "interrupted\n"), res
    res = cli("plan", "--json", tmp_path / "o" / "plan.json")
    assert res.stderr == f"interrupted; nothing written to {tmp_path / 'o' / 'plan.json'}\n", res


# ---------------------------------------------------------------- where outputs go
def scoring_inputs(tmp_path) -> tuple[Path, Path]:
    suite = make_tiny_suite(3)
    save_suite(suite, tmp_path / "suite.parquet")
    tiny_predictions(suite).to_parquet(tmp_path / "preds.parquet")
    return tmp_path / "suite.parquet", tmp_path / "preds.parquet"


@pytest.mark.slow
def test_read_only_results_folder_score(tmp_path, read_only_fs):
    suite, preds = scoring_inputs(tmp_path)
    out = read_only_fs / "out"
    res = score(suite, preds, out)
    line = check_cli_error(res, f"output file {out / 'cases.parquet'}", "field 'path'", "Read-only file system")
    assert "EROFS" in line
    assert_no_output(out, out / "cases.parquet", out / "functionalities.csv")
    # an --out folder that cannot be created
    new = out / "scored"
    res = score(suite, preds, new)
    check_cli_error(res, f"output folder {new}", "field '--out'", "cannot be created: Read-only file system")
    assert not new.exists()


@pytest.mark.slow
def test_read_only_results_folder_workflow(tmp_path, read_only_fs):
    """A real run into a read-only results folder stops before any job, naming the folder and 'results'."""
    results = read_only_fs / "out" / "results"
    wd = tmp_path / "wd"
    out, _ = smk(wd, config_with(results=str(results)), *RUN)
    line = check_workflow_error(out, f"output folder {results}", "field 'results'")
    assert "Read-only file system" in line
    assert "Error in rule" not in output(out)
    assert_no_output(read_only_fs, results)


@pytest.mark.slow
def test_disk_full_score(tmp_path, tiny_fs):
    suite, preds = scoring_inputs(tmp_path)
    fill(tiny_fs)
    out = tiny_fs / "scored"
    res = score(suite, preds, out)
    line = check_cli_error(res, f"output file {out / 'cases.parquet'}", "field 'path'", "No space left on device")
    assert "ENOSPC" in line
    assert_no_output(out, out / "cases.parquet", out / "functionalities.csv")


@pytest.mark.slow
def test_disk_full_workflow(tmp_path, tiny_fs):
    """A real run whose first job fills the disk: the job's one-line error, and
    snakemake removes the outputs it had already written."""
    results = tiny_fs / "results"
    wd = tmp_path / "wd"
    out, _ = smk(wd, config_with(results=str(results)), *RUN)
    assert out.returncode != 0
    line = one_line(output(out), "error: output file ", str(results / "sent" / "iid"))
    assert "field 'path'" in line and "No space left on device" in line, line
    iid = results / "sent" / "iid"
    assert_no_output(results / "sent", *(iid / f"{s}.parquet" for s in ("train", "val", "test", "pool")))


@pytest.mark.slow
def test_output_error_is_one_line_and_an_oserror(tmp_path, tiny_fs):
    """write_parquet on a full disk: an OutputError (a BelugaError and still an
    OSError for callers that catch those), no file, no temporary file left."""
    fill(tiny_fs)
    target = tiny_fs / "big.parquet"
    with pytest.raises(OutputError) as excinfo:
        write_parquet(pd.DataFrame({"x": range(100_000)}), target)
    check_exc(excinfo, f"output file {target}", "field 'path'", "ENOSPC")
    assert isinstance(excinfo.value, BelugaError) and isinstance(excinfo.value, OSError)
    assert [p.name for p in tiny_fs.iterdir()] == [".filler"]


# ---------------------------------------------------------------- suites that do not fit the task (dry run)
def test_checklist_qqp_suite_under_a_sent_task(tmp_path):
    qqp = SHARED / "checklist" / "qqp.jsonl.gz"
    if not qqp.exists():
        pytest.skip(f"needs the real CheckList suites: {qqp} is absent")
    line, _ = load_error(tmp_path / "wd", suite_config(qqp), f"suite file {qqp}", "field 'type'")
    assert "CheckList's 'qqp' suite, a para suite" in line and "has type 'sent'" in line, line


def test_pair_suite_under_a_sent_task(tmp_path):
    suite = make_tiny_suite(3)
    suite["inputs_b"] = [[f"second {i}"] * len(x) for i, x in enumerate(suite.inputs)]
    path = tmp_path / "pairs.parquet"
    save_suite(suite, path)
    line, _ = load_error(tmp_path / "wd", suite_config(path), f"suite file {path}", "field 'inputs_b'")
    assert "a sent task needs single texts" in line, line


def test_suite_metadata_not_json(tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "suite.parquet"
    save_suite(make_tiny_suite(3), path)
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({b"beluga.functionalities": b"[{not json"}), path)
    line, _ = load_error(tmp_path / "wd", suite_config(path), f"suite file {path}",
                         "field 'metadata.beluga.functionalities'")
    assert "not valid JSON" in line, line


def test_functionality_with_too_few_cases(tmp_path):
    suite = make_tiny_suite(4)
    suite = suite[~suite.case_id.isin(["mft-2", "mft-3"])]   # "neg words" keeps 2 cases
    path = tmp_path / "suite.parquet"
    save_suite(suite, path)
    line, cfg = load_error(tmp_path / "wd", suite_config(path), "field 'tasks.sent.suite'")
    assert line.startswith(f"config file {cfg}: ") and "'neg words' has 2 case(s); at least 3 are needed" in line


# ---------------------------------------------------------------- numerical health
@pytest.mark.slow
def test_diverged_training_fails_and_no_table_ranks_it(tmp_path):
    """A real run whose suite stage diverges (lr 1e30): every fold job stops with one line naming it and the
    step, snakemake fails, and no score table or Table 3 is written."""
    cfg = config_with(training__suite__lr=1.0e30, partitions=["seen", "type"])
    wd = tmp_path / "wd"
    out, _ = smk(wd, cfg, "--cores", "2", "--retries", "0", "--keep-going")
    assert out.returncode != 0
    text = output(out)
    line = one_line(text, "error: training sent iid_to_t/vanilla/seen/all", "field 'training.nonfinite'")
    assert "the loss is not finite at step" in line, line
    res = wd / "results"
    assert not (res / "table3" / "table3.csv").exists() and not (res / "sent" / "scores" / "scores.csv").exists()
    assert not list((res / "sent" / "predictions" / "iid_to_t").rglob("*.parquet"))
    assert_no_output(res / "sent" / "predictions" / "iid_to_t")


def nan_predictions(suite: pd.DataFrame, bad) -> pd.DataFrame:
    preds = tiny_predictions(suite)
    preds.at[3, "probs"] = bad
    return preds


@pytest.mark.parametrize("bad", [[float("nan"), float("nan")], [-0.2, 1.2], [2.5, -1.0], [0.9, 0.3]],
                         ids=["nan", "negative", "logits", "not_normalised"])
def test_score_rejects_what_is_not_a_probability(tmp_path, bad):
    suite = make_tiny_suite(2)
    save_suite(suite, tmp_path / "suite.parquet")
    path = tmp_path / "preds.parquet"
    preds = nan_predictions(suite, bad)
    preds.to_parquet(path)
    out = tmp_path / "scored"
    res = score(tmp_path / "suite.parquet", path, out)
    line = check_cli_error(res, f"predictions {path}", "row 3", "field 'probs'", "is not a probability distribution")
    assert f"case {preds.case_id[3]!r}, input {preds.input_idx[3]}" in line, line
    assert_no_output(out, out / "cases.parquet", out / "functionalities.csv")


def test_outcomes_reject_nan_predictions(tmp_path):
    """The outcomes rule's call on a predictions file with a NaN row: one line naming the file, row and field."""
    suite = make_tiny_suite(2)
    save_suite(suite, tmp_path / "suite.parquet")
    write_parquet(pd.DataFrame({"case_id": suite.case_id, "functionality": suite.functionality,
                                "split": "test"}), tmp_path / "split.parquet")
    iid = pd.DataFrame({"example_id": ["a", "b"], "text": ["good", "bad"], "label": [1, 0]})
    write_parquet(iid, tmp_path / "iid.parquet")
    preds = nan_predictions(suite, [float("nan"), float("nan")]).assign(split="suite_test", label=None)
    preds = pd.concat([preds, pd.DataFrame({"split": "iid_test", "case_id": ["a", "b"], "input_idx": 0,
                                            "probs": [[0.1, 0.9], [0.8, 0.2]], "label": [1, 0]})],
                      ignore_index=True)
    path = tmp_path / "preds.parquet"
    preds.to_parquet(path)
    target = tmp_path / "results" / "outcomes.parquet"
    with pytest.raises(DataError) as excinfo:
        evaluate_steps.outcomes(task_type="sent", suite=str(tmp_path / "suite.parquet"),
                                split=str(tmp_path / "split.parquet"), predictions=str(path),
                                iid_test=str(tmp_path / "iid.parquet"), held_out=list(suite.functionality.unique()),
                                functionalities=None, out_outcomes=str(target))
    check_exc(excinfo, str(path), "row 3", "field 'probs'")
    assert_no_output(tmp_path / "results", target)


def test_truncated_predictions_parquet(tmp_path):
    suite = make_tiny_suite(2)
    save_suite(suite, tmp_path / "suite.parquet")
    write_parquet(pd.DataFrame({"case_id": suite.case_id, "functionality": suite.functionality,
                                "split": "test"}), tmp_path / "split.parquet")
    write_parquet(pd.DataFrame({"example_id": ["a"], "text": ["good"], "label": [1]}), tmp_path / "iid.parquet")
    path = tmp_path / "preds.parquet"
    tiny_predictions(suite).assign(split="suite_test").to_parquet(path)
    path.write_bytes(path.read_bytes()[:-100])
    target = tmp_path / "results" / "outcomes.parquet"
    with pytest.raises(DataError) as excinfo:
        evaluate_steps.outcomes(task_type="sent", suite=str(tmp_path / "suite.parquet"),
                                split=str(tmp_path / "split.parquet"), predictions=str(path),
                                iid_test=str(tmp_path / "iid.parquet"), held_out=[], functionalities=None,
                                out_outcomes=str(target))
    check_exc(excinfo, f"predictions {path}", "field 'path'", "not a readable Parquet file", "delete it")
    assert_no_output(tmp_path / "results", target)


def test_score_input_idx_not_integer_and_unknown_case_ids(tmp_path):
    suite = make_tiny_suite(2)
    save_suite(suite, tmp_path / "suite.parquet")
    preds = tiny_predictions(suite)
    preds["input_idx"] = preds["input_idx"].astype(str)
    preds.at[2, "input_idx"] = "first"
    path = tmp_path / "preds.parquet"
    preds.to_parquet(path)
    out = tmp_path / "scored"
    res = score(tmp_path / "suite.parquet", path, out)
    check_cli_error(res, f"predictions {path}", "row 2", "field 'input_idx'", "'first' is not an integer")
    assert_no_output(out, out / "cases.parquet")
    # case ids that are not in the suite: a warning naming them, the others are scored
    preds = pd.concat([tiny_predictions(suite), pd.DataFrame({"case_id": ["ghost-1", "ghost-2"], "input_idx": 0,
                                                              "probs": [[0.5, 0.5]] * 2})], ignore_index=True)
    preds.to_parquet(path)
    res = score(tmp_path / "suite.parquet", path, out)
    assert res.returncode == 0, res.stderr
    warn = [ln for ln in res.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warn) == 1 and "2 case id(s) are not in the suite" in warn[0] and "'ghost-1'" in warn[0], res.stderr


# ---------------------------------------------------------------- models and weights
def test_pickle_named_safetensors_is_refused(tmp_path, iid_train):
    import pickle  # noqa: S403 - writes the hostile file this test feeds the loader

    from beluga.model.modeling import TINY_RANDOM, load_model, save_model

    model, tok = load_model(TINY_RANDOM, 2)
    folder = tmp_path / "my-model"
    save_model(model, tok, folder)
    (folder / "model.safetensors").write_bytes(pickle.dumps({"weights": [1, 2, 3]}))
    out_dir = tmp_path / "results" / "model"
    with pytest.raises(ModelError) as excinfo:
        _train_iid(str(folder), iid_train, out_dir)
    check_exc(excinfo, f"model {folder}", "field 'model'", "cannot be loaded")
    assert_no_output(tmp_path / "results", out_dir)


@pytest.mark.slow
def test_disk_full_while_saving_weights(tmp_path, tiny_fs, iid_train):
    out_dir = tiny_fs / "results" / "model"
    (tiny_fs / "results").mkdir()
    fill(tiny_fs)
    with pytest.raises(OutputError) as excinfo:
        _train_iid("tiny-random", iid_train, out_dir)
    check_exc(excinfo, "field 'path'", "cannot be written", "ENOSPC")
    assert_no_output(tiny_fs / "results", out_dir)


# ---------------------------------------------------------------- one run per results folder
@pytest.mark.slow
def test_results_folder_shared_by_two_working_directories(tmp_path):
    """A real run whose results folder another working directory's live run holds is refused before any job."""
    import socket

    results = tmp_path / "shared_results"
    results.mkdir()
    other = tmp_path / "other_wd"
    (results / ".beluga-run.lock").write_text(json.dumps({"workdir": str(other), "pid": os.getpid(),
                                                          "host": socket.gethostname(), "started": "earlier"}))
    wd = tmp_path / "wd"
    out, _ = smk(wd, config_with(results=str(results)), *RUN)
    line = check_workflow_error(out, f"output folder {results}", "field 'results'")
    assert f"in use by the run in the working directory {other}" in line, line
    assert "Error in rule" not in output(out) and not (results / "sent").exists()
    # a lock left by a run that no longer exists is taken over (and released at the end)
    (results / ".beluga-run.lock").write_text(json.dumps({"workdir": str(other), "pid": 2**22 + 12345,
                                                          "host": socket.gethostname(), "started": "earlier"}))
    out, _ = smk(wd, config_with(results=str(results)), *RUN, str(results / "sent" / "suite" / "summary.tsv"))
    assert out.returncode == 0, output(out)[-3000:]
    assert not (results / ".beluga-run.lock").exists()
