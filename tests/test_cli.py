"""`python -m beluga score` on a small suite and on the real sentiment export."""

import csv
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import make_tiny_suite

from beluga.suites.format import save_suite
from beluga.workflow.cli import main

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "checklist"


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "beluga", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def tiny_predictions(suite: pd.DataFrame) -> pd.DataFrame:
    """Binary SENT probabilities: P(pos) = 0.9 everywhere, except the
    'neg words' MFTs get 0.1 and one typo perturbation flips."""
    rows = []
    for r in suite.itertuples(index=False):
        for j in range(len(r.inputs)):
            p = 0.1 if r.functionality == "neg words" else 0.9
            if r.case_id == "inv-0" and j == 2:
                p = 0.1
            rows.append((r.case_id, j, [1 - p, p], "suite_test"))
    return pd.DataFrame(rows, columns=["case_id", "input_idx", "probs", "split"])


def test_score_small_suite(tmp_path):
    suite = make_tiny_suite(3)
    save_suite(suite, tmp_path / "suite.parquet")
    preds = tiny_predictions(suite)
    preds = preds[preds.case_id != "nn-2"]  # a case without predictions is simply not scored
    preds.to_parquet(tmp_path / "preds.parquet")
    out = tmp_path / "out"
    res = run_cli("score", "--suite", tmp_path / "suite.parquet", "--predictions", tmp_path / "preds.parquet",
                  "--out", out, "--task", "sent")
    assert res.returncode == 0, res.stderr
    cases = pd.read_parquet(out / "cases.parquet")
    assert list(cases.columns) == ["case_id", "functionality", "status"]
    assert len(cases) == len(suite) - 1
    st = cases.set_index("case_id").status
    assert st["mft-0"] == "pass" and st["inv-0"] == "fail" and st["inv-1"] == "pass" and st["nn-0"] == "pass"
    funcs = pd.read_csv(out / "functionalities.csv")
    assert list(funcs.columns) == ["functionality", "capability", "test_type", "n_cases", "n_scored", "n_passed",
                                   "pass_rate"]
    assert funcs.functionality.tolist() == list(dict.fromkeys(suite.functionality))
    typos = funcs.set_index("functionality").loc["typos"]
    assert (typos.n_cases, typos.n_scored, typos.n_passed) == (3, 3, 2)
    assert funcs.set_index("functionality").at["not negative", "n_cases"] == 2
    # the same suite as CSV (project format) scores the same
    csv_suite = suite.copy()
    for col in ("inputs", "labels"):
        csv_suite[col] = ["" if v is None else json.dumps(list(v)) for v in csv_suite[col]]
    csv_suite.to_csv(tmp_path / "suite.csv", index=False)
    assert main(["score", "--suite", str(tmp_path / "suite.csv"), "--predictions", str(tmp_path / "preds.parquet"),
                 "--out", str(tmp_path / "out_csv"), "--task", "sent"]) == 0
    assert pd.read_parquet(tmp_path / "out_csv" / "cases.parquet").equals(cases)


def _assert_one_line_error(res, *needles):
    assert res.returncode == 2
    err = res.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    for n in needles:
        assert n in err, err


def test_score_errors(tmp_path, capsys):
    suite = make_tiny_suite(2)
    suite.at[0, "labels"] = [2]
    save_suite(suite, tmp_path / "suite.parquet")
    preds = tiny_predictions(suite)
    preds[~((preds.case_id == "inv-1") & (preds.input_idx == 1))].to_parquet(tmp_path / "missing.parquet")
    preds.to_parquet(tmp_path / "preds.parquet")
    args = ["--suite", tmp_path / "suite.parquet", "--out", tmp_path / "out"]
    # through the real entry point: one line on stderr, exit status 2, no traceback
    _assert_one_line_error(run_cli("score", *args, "--predictions", tmp_path / "missing.parquet", "--task", "sent"),
                           "missing predictions for case 'inv-1'")

    def err(*argv):
        capsys.readouterr()
        rc = main(["score", *map(str, argv)])
        res = subprocess.CompletedProcess(argv, rc, "", capsys.readouterr().err)
        return res

    _assert_one_line_error(err(*args, "--predictions", tmp_path / "preds.parquet"), "cannot infer the task", "--task")
    _assert_one_line_error(err(*args, "--predictions", tmp_path / "nope.parquet", "--task", "sent"),
                           "nope.parquet", "does not exist")
    preds.drop(columns="probs").to_parquet(tmp_path / "noprobs.parquet")
    _assert_one_line_error(err(*args, "--predictions", tmp_path / "noprobs.parquet", "--task", "sent"),
                           "field 'probs': missing column")
    # labels outside PARA's label set
    _assert_one_line_error(err(*args, "--predictions", tmp_path / "preds.parquet", "--task", "para"),
                           "field 'labels'", "outside the task's label set")
    # diff_up needs three-class probabilities
    save_suite(suite[suite.functionality != "neg words"], tmp_path / "para.parquet")
    _assert_one_line_error(err("--suite", tmp_path / "para.parquet", "--out", tmp_path / "out",
                               "--predictions", tmp_path / "preds.parquet", "--task", "para"),
                           "'diff_up' needs three-class")
    extra = pd.concat([preds, pd.DataFrame([("mft-0", 1, [0.5, 0.5], "suite_test")], columns=preds.columns)])
    extra.to_parquet(tmp_path / "extra.parquet")
    _assert_one_line_error(err(*args, "--predictions", tmp_path / "extra.parquet", "--task", "sent"),
                           "case 'mft-0' has 1 inputs but a prediction for input_idx 1")
    _assert_one_line_error(err("--suite", tmp_path / "suite.txt", "--out", tmp_path / "out",
                               "--predictions", tmp_path / "preds.parquet"), "does not exist")
    assert not (tmp_path / "out").exists()


def test_score_checklist_export_infers_task(tmp_path):
    line = {"suite": "qqp", "case_id": "qqp-00-00000", "functionality": "f", "capability": "C", "test_type": "MFT",
            "inputs": [["a?", "b?"]], "label": 1, "labels": [1], "meta": None, "agg_fn": "all",
            "expect": {"expression": "Expect.eq(val=None)", "name": "Expect.eq", "params": {"val": None},
                       "slice": None}}
    (tmp_path / "s.jsonl").write_text(json.dumps(line) + "\n")
    pd.DataFrame({"case_id": ["qqp-00-00000"], "input_idx": [0], "probs": [[0.2, 0.8]]}).to_parquet(
        tmp_path / "p.parquet")
    assert main(["score", "--suite", str(tmp_path / "s.jsonl"), "--predictions", str(tmp_path / "p.parquet"),
                 "--out", str(tmp_path / "o")]) == 0
    assert pd.read_parquet(tmp_path / "o" / "cases.parquet").status.tolist() == ["pass"]
    res = run_cli("score", "--suite", tmp_path / "s.jsonl", "--predictions", tmp_path / "p.parquet",
                  "--out", tmp_path / "o2", "--task", "sent")
    _assert_one_line_error(res, "CheckList 'qqp' suite")


@pytest.mark.skipif(not (DATA / "sentiment.jsonl.gz").exists(),
                    reason=f"CheckList exports not found at {DATA} (../shared/data beside the checkout)")
def test_score_real_sentiment_export(tmp_path):
    cids, idx = [], []
    with gzip.open(DATA / "sentiment.jsonl.gz", "rt") as f:
        for line in f:
            d = json.loads(line)
            cids += [d["case_id"]] * len(d["inputs"])
            idx += range(len(d["inputs"]))
    rng = np.random.default_rng(0)
    p = rng.uniform(size=len(cids))
    pd.DataFrame({"case_id": cids, "input_idx": np.asarray(idx, dtype="int32"),
                  "probs": list(np.stack([1 - p, p], axis=1).astype("float32")),
                  "split": "suite_test"}).to_parquet(tmp_path / "preds.parquet")
    t = time.time()
    res = run_cli("score", "--suite", DATA / "sentiment.jsonl.gz", "--predictions", tmp_path / "preds.parquet",
                  "--out", tmp_path / "out")
    print(f"python -m beluga score on the sentiment export ({len(cids)} predictions): {time.time() - t:.1f} s; "
          f"{res.stdout.strip()}")
    assert res.returncode == 0, res.stderr
    cases = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert len(cases) == 86420 and set(cases.status) == {"pass", "fail", "filtered"}
    funcs = pd.read_csv(tmp_path / "out" / "functionalities.csv")
    summary = pd.read_csv(DATA / "summary.tsv", sep="\t", quoting=csv.QUOTE_NONE)
    ref = summary[summary.suite == "sentiment"]
    assert funcs.functionality.tolist() == ref.functionality.tolist()
    assert funcs.n_cases.tolist() == ref.n_cases.tolist()
    assert (funcs.n_scored <= funcs.n_cases).all() and (funcs.n_passed <= funcs.n_scored).all()
    # only the sliced / cannot-fail DIRs filter cases
    filtered = funcs[funcs.n_scored < funcs.n_cases].functionality.tolist()
    assert set(filtered) <= {"intensifiers", "reducers", '"used to" should reduce'}


def test_plan_finds_the_repository_files():
    """`python -m beluga plan` without --configfile reads the embedded default and the schema from the
    repository root (paths computed from the module's own location)."""
    from beluga.workflow import plan as plan_mod

    assert (plan_mod.REPO / "Snakefile").exists() and plan_mod.CONFIG_SCHEMA.exists()
    assert plan_mod.load_config(None)["results"] == "results"
