"""CheckList import (real release exports in ../shared/data), project-format
CSV / JSONL suites, and scoring of every real suite with oracle predictions."""

import csv
import functools
import gzip
import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import make_tiny_suite

from beluga.core.errors import SuiteError
from beluga.core.tasks import SUITE_TASK_TYPES, get_task_type
from beluga.score.outcomes import FAIL, FILTERED, PASS, score_cases
from beluga.suites.checklist import import_checklist, is_checklist_export, read_any_suite
from beluga.suites.format import COLUMNS, functionality_table, save_suite
from beluga.suites.tabular import read_suite_table

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "checklist"
SUITES = ("sentiment", "qqp", "squad")
needs_data = pytest.mark.skipif(not (DATA / "summary.tsv").exists(),
                                reason=f"CheckList exports not found at {DATA} (../shared/data beside the checkout)")

ASYM = "Order does matter for asymmetric relations"
SYN = "(question, f(question)) where f(question) replaces synonyms?"


@functools.cache
def imported(suite: str, paper_fixes: bool = True) -> pd.DataFrame:
    t = time.time()
    df = import_checklist(DATA / f"{suite}.jsonl.gz", paper_fixes=paper_fixes)
    print(f"import {suite} (paper_fixes={paper_fixes}): {len(df)} cases in {time.time() - t:.2f} s")
    return df


# ---------------------------------------------------------------- real exports
@needs_data
@pytest.mark.parametrize("suite", SUITES)
def test_import_matches_summary(suite):
    df = imported(suite)
    assert list(df.columns) == COLUMNS
    summary = pd.read_csv(DATA / "summary.tsv", sep="\t", quoting=csv.QUOTE_NONE)
    ref = summary[summary["suite"] == suite].reset_index(drop=True)
    ft = functionality_table(df)
    for col in ("functionality", "capability", "test_type", "n_cases", "n_inputs"):
        assert ft[col].tolist() == ref[col].tolist(), col
    assert df.attrs["checklist_suite"] == suite and df.attrs["task_type"] == SUITE_TASK_TYPES[suite]
    assert [d["functionality"] for d in df.attrs["declared"]] == ref["functionality"].tolist()
    assert df["case_id"].is_unique and df["case_id"].str.startswith(f"{suite}-").all()


@needs_data
def test_input_and_label_columns_per_suite():
    sent, qqp, squad = (imported(s) for s in SUITES)
    assert sent["inputs_b"].isna().all() and sent["answers"].isna().all()
    assert qqp["inputs_b"].notna().all() and qqp["answers"].isna().all()
    assert squad["inputs_b"].notna().all() and squad["labels"].isna().all()
    # qqp [q1, q2] -> inputs / inputs_b; squad [context, question]
    raw = json.loads(gzip.open(DATA / "squad.jsonl.gz", "rt").readline())
    row = squad.iloc[0]
    assert list(row.inputs) == [x[0] for x in raw["inputs"]] and list(row.inputs_b) == [x[1] for x in raw["inputs"]]
    assert list(row.answers) == raw["labels"]
    qa_no = sent[sent.functionality == "Q & A: no"]
    assert sorted({int(x[0]) for x in qa_no.labels}) == [0, 1]


EXPECTED_MAPPING = {
    "sentiment": {
        "single positive words": ("eq", {}),
        "intensifiers": ("monotonic", {"label": None, "increasing": True, "tolerance": 0.1,
                                       "slice": "orig_not_neutral"}),
        "reducers": ("monotonic", {"label": None, "increasing": False, "tolerance": 0.1,
                                   "slice": "orig_not_neutral"}),
        "add positive phrases": ("diff_up", {"tolerance": 0.1}),
        "add negative phrases": ("diff_down", {"tolerance": 0.1}),
        "typos": ("inv", {"tolerance": 0.1}),
        "simple negations: not negative": ("not_negative", {}),
        "Q & A: no": ("eq_or_not_negative", {}),
    },
    "qqp": {
        "Modifier: adj": ("eq", {}),
        SYN: ("inv", {"tolerance": 0.1, "unperturbed": True, "train": {"as": "MFT", "label": 1}}),
        "(q, paraphrase(q))": ("eq", {"val": 1}),
        "Change first name in one of the questions": ("eq", {"val": 0, "slice": "orig_pred_eq", "slice_value": 1}),
        "Keep entitites, fill in with gibberish": ("eq", {"val": 0}),
        "Testing implications": ("triplet", {}),
    },
    "squad": {
        "A is COMP than B. Who is more / less COMP?": ("eq", {}),
        "Synonyms": ("squad", {}),
        "Question typo": ("inv", {"tolerance": 0.1}),
        "Change name everywhere": ("same_answer", {}),
    },
}


@needs_data
@pytest.mark.parametrize("suite", SUITES)
def test_expectation_mapping(suite):
    df = imported(suite)
    first = df.drop_duplicates("functionality").set_index("functionality")
    for func, (expect, params) in EXPECTED_MAPPING[suite].items():
        assert first.at[func, "expect"] == expect, func
        assert json.loads(first.at[func, "expect_params"]) == params, func
    # one expectation per functionality
    assert (df.groupby("functionality")[["expect", "expect_params"]].nunique() == 1).all().all()


@needs_data
@pytest.mark.slow  # both real suites read twice, with and without the fixes (~9 s)
def test_paper_fixes_only_when_on():
    on, off = imported("qqp", True), imported("qqp", False)
    asym_on, asym_off = on[on.functionality == ASYM], off[off.functionality == ASYM]
    assert {int(x) for lb in asym_on.labels for x in lb} == {0}
    assert {int(x) for lb in asym_off.labels for x in lb} == {1}  # as released
    syn_on = json.loads(on.loc[on.functionality == SYN, "expect_params"].iloc[0])
    syn_off = json.loads(off.loc[off.functionality == SYN, "expect_params"].iloc[0])
    assert syn_on["train"] == {"as": "MFT", "label": 1} and "train" not in syn_off
    other = ~on.functionality.isin([ASYM, SYN])
    a, b = on[other].reset_index(drop=True), off[other].reset_index(drop=True)
    assert a["expect_params"].equals(b["expect_params"])
    assert [None if x is None else list(x) for x in a.labels] == [None if x is None else list(x) for x in b.labels]
    # sentiment needs no fix in the suite itself
    s_on = imported("sentiment", True)
    s_off = import_checklist(DATA / "sentiment.jsonl.gz", paper_fixes=False)
    assert s_on["expect_params"].equals(s_off["expect_params"])


def oracle_predictions(df: pd.DataFrame, task) -> pd.DataFrame:
    """Predictions that satisfy every expectation (or leave it unscored)."""
    cid, idx, vals = [], [], []
    for r in df.itertuples(index=False):
        n = len(r.inputs)
        params = json.loads(r.expect_params)
        if task.head == "qa":
            if r.expect in ("eq", "squad"):
                v = list(r.answers)
            elif r.expect == "same_answer":
                meta = json.loads(r.meta)
                orig = next(m[0] for m in meta if m)  # the first renamed entity is the answer
                v = [orig] + [re.sub(r"\b" + re.escape(m[0]) + r"\b", m[1], orig) if m else orig
                              for m in meta[1:]]
            else:
                v = ["same"] * n
        else:
            k = len(task.suite_labels)
            one = np.eye(k).tolist()
            if r.expect in ("eq", "eq_or_not_negative") and params.get("slice") is None and r.labels is not None:
                v = [one[int(lb)] for lb in r.labels]
            elif r.expect == "eq" and params.get("slice") == "orig_pred_eq":
                v = [one[params["slice_value"]]] + [one[params["val"]]] * (n - 1)
            elif r.expect == "eq":
                v = [one[params["val"]]] * n
            elif r.expect in ("not_negative", "triplet"):
                v = [one[-1]] * n
            else:  # inv / monotonic / diff_*: nothing changes
                v = [one[-1]] * n
        cid += [r.case_id] * n
        idx += list(range(n))
        vals += v
    col = "answer" if task.head == "qa" else "probs"
    return pd.DataFrame({"case_id": cid, "input_idx": idx, col: vals})


@needs_data
@pytest.mark.parametrize("suite", SUITES)
def test_oracle_predictions_never_fail(suite):
    df = imported(suite)
    task = get_task_type(SUITE_TASK_TYPES[suite])
    preds = oracle_predictions(df, task)
    t = time.time()
    out = score_cases(df, preds, task, source="oracle")
    print(f"score {suite}: {len(out)} cases, {len(preds)} predictions in {time.time() - t:.2f} s")
    assert len(out) == len(df)
    assert set(out.status) <= {PASS, FILTERED}
    assert (out.status == PASS).mean() > 0.9


@needs_data
def test_sentiment_qa_no_scored_with_released_semantics():
    df = imported("sentiment")
    qa = df[df.functionality == "Q & A: no"].reset_index(drop=True)
    task = get_task_type("sent")
    neutral = pd.DataFrame({"case_id": qa.case_id, "input_idx": 0, "probs": [[0.0, 1.0, 0.0]] * len(qa)})
    st = score_cases(qa, neutral, task).status
    # neutral passes exactly the "not negative" (label 1) cases
    assert (st == PASS).tolist() == [int(lb[0]) == 1 for lb in qa.labels]
    assert set(st) == {PASS, FAIL}


# ---------------------------------------------------------------- synthetic exports: clear errors
def _export_line(**over):
    d = {"suite": "qqp", "case_id": "qqp-00-00000", "test_index": 0, "case_index": 0, "functionality": "f",
         "capability": "C", "test_type": "MFT", "description": "", "inputs": [["a?", "b?"]], "n_inputs": 1,
         "label": 1, "labels": [1], "label_scope": "test", "meta": None, "agg_fn": "all",
         "expect": {"expression": "Expect.eq(val=None)", "name": "Expect.eq", "params": {"val": None},
                    "slice": None}, "in_run_subset": False, "run_position": None}
    d.update(over)
    return json.dumps(d)


def _write(tmp_path, lines, name="x.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_synthetic_export_roundtrip(tmp_path):
    p = _write(tmp_path, [_export_line(), _export_line(case_id="qqp-00-00001", labels=None, label=0)])
    assert is_checklist_export(p)
    df = import_checklist(p)
    assert [list(x) for x in df.labels] == [[1], [0]]  # scalar label repeated
    assert list(df.inputs_b.iloc[0]) == ["b?"]
    assert read_any_suite(p).equals(df)


@pytest.mark.parametrize("over, field, msg", [
    ({"expect": {"expression": "Expect.foo()", "name": "Expect.foo", "params": {}, "slice": None}}, "expect",
     "no mapping for CheckList expectation 'Expect.foo()'"),
    ({"expect": {"expression": "Expect.eq(val=0)", "name": "Expect.eq", "params": {"val": 0},
                 "slice": {"kind": "Expect.slice_single"}}}, "expect", "no mapping for the slice"),
    ({"expect": {"expression": "Expect.single(<lambda>)", "name": "Expect.single", "params": {"fn": "<lambda>"},
                 "slice": None}}, "expect", "no mapping"),
    ({"inputs": ["just one string"]}, "inputs", "pairs of strings"),
    ({"labels": [1, 0]}, "labels", "aligned"),
    ({"labels": ["dup"]}, "labels", "integer classes"),
    ({"suite": "nli"}, "suite", "unknown CheckList suite"),
    ({"agg_fn": "any"}, "agg_fn", "unknown aggregation"),
])
def test_unknown_mapping_names_file_line_field(tmp_path, over, field, msg):
    p = _write(tmp_path, [_export_line(), _export_line(case_id="qqp-00-00001", **over)])
    with pytest.raises(SuiteError) as e:
        import_checklist(p)
    text = str(e.value)
    assert str(p) in text and "line 2 (case_id='qqp-00-00001')" in text and f"field '{field}'" in text
    assert msg in text


def test_export_bad_json_and_mixed_suites(tmp_path):
    p = _write(tmp_path, [_export_line(), "{not json"])
    with pytest.raises(SuiteError, match=r"line 2: field 'json'"):
        import_checklist(p)
    p = _write(tmp_path, [_export_line(), _export_line(case_id="s-1", suite="sentiment", inputs=["x"])])
    with pytest.raises(SuiteError, match=r"line 2 .*field 'suite': 'sentiment' differs from 'qqp'"):
        import_checklist(p)
    with pytest.raises(SuiteError, match="does not exist"):
        import_checklist(tmp_path / "nope.jsonl.gz")


# ---------------------------------------------------------------- project-format CSV / JSONL
def _to_csv(df: pd.DataFrame, path: Path) -> None:
    out = df.copy()
    for col in ("inputs", "inputs_b", "labels", "answers"):
        if col in out.columns:
            out[col] = ["" if v is None else json.dumps(list(v)) for v in out[col]]
    out["meta"] = ["" if v is None else v for v in out["meta"]]
    out.to_csv(path, index=False)


def test_csv_and_jsonl_roundtrip(tmp_path):
    df = make_tiny_suite(2)
    _to_csv(df, tmp_path / "s.csv")
    back = read_suite_table(tmp_path / "s.csv", (0, 1, 2))
    assert back.case_id.tolist() == df.case_id.tolist()
    assert [list(x) for x in back.inputs] == [list(x) for x in df.inputs]
    assert [None if x is None else list(x) for x in back.labels] == list(df.labels)
    with open(tmp_path / "s.jsonl", "w") as f:
        for r in df.to_dict("records"):
            r["expect_params"] = json.loads(r["expect_params"])  # objects are accepted too
            f.write(json.dumps(r) + "\n")
    assert not is_checklist_export(tmp_path / "s.jsonl")
    back2 = read_any_suite(tmp_path / "s.jsonl", label_set=(0, 1, 2))
    assert back2.expect_params.tolist() == back.expect_params.tolist()
    assert read_any_suite(tmp_path / "s.csv").case_id.tolist() == df.case_id.tolist()
    save_suite(df, tmp_path / "s.parquet")
    assert read_any_suite(tmp_path / "s.parquet").case_id.tolist() == df.case_id.tolist()


def test_csv_errors_name_file_row_field(tmp_path):
    df = make_tiny_suite(1)
    _to_csv(df, tmp_path / "s.csv")
    text = (tmp_path / "s.csv").read_text().splitlines()
    # break the inputs cell of data row 1 (second case)
    text[2] = text[2].replace('"[""a fine film 0""', '"[""a fine film 0"" oops', 1)
    (tmp_path / "bad.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(SuiteError) as e:
        read_suite_table(tmp_path / "bad.csv")
    assert "bad.csv" in str(e.value) and "row 1 (case_id='inv-0')" in str(e.value)
    assert "field 'inputs'" in str(e.value)
    # validation errors name the row and field too
    df2 = df.copy()
    df2.at[0, "labels"] = [9]
    _to_csv(df2, tmp_path / "lab.csv")
    with pytest.raises(SuiteError, match=r"lab.csv: row 0 \(case_id='mft-0'\): field 'labels': label 9"):
        read_suite_table(tmp_path / "lab.csv", (0, 1, 2))
    (tmp_path / "s.json").write_text("{}")
    with pytest.raises(SuiteError, match="unknown suite file type"):
        read_any_suite(tmp_path / "s.json")


def test_jsonl_errors(tmp_path):
    p = _write(tmp_path, ['{"case_id": "a", "inputs": "not a list"}'])
    with pytest.raises(SuiteError, match=r"row 0 \(case_id='a'\): field 'inputs': must be a JSON array"):
        read_suite_table(p)
    p = _write(tmp_path, ["[1, 2]"])
    with pytest.raises(SuiteError, match="line 1: must be a JSON object"):
        read_suite_table(p)


def test_checklist_subset_keeps_the_published_runs_cases(tmp_path):
    """``--checklist-subset``: the cases whose export record says ``in_run_subset`` (a test's sampled
    ``run_idxs``), in suite order; a suite that records none is refused in one line naming the option."""
    from beluga.core.errors import BelugaError
    from beluga.suites.build import checklist_subset, read_suite

    lines = [_export_line(case_id=f"qqp-00-0000{i}", in_run_subset=i in (1, 3), run_position=None)
             for i in range(5)]
    p = _write(tmp_path, lines)
    suite, ttype = read_suite(str(p))
    assert ttype.name == "para" and len(suite) == 5
    assert checklist_subset(suite, str(p))["case_id"].tolist() == ["qqp-00-00001", "qqp-00-00003"]
    sub, _ = read_suite(str(p), subset=True)
    assert sub["case_id"].tolist() == ["qqp-00-00001", "qqp-00-00003"]
    # a record without in_run_subset: the suite records no subset
    bare = json.loads(lines[0])
    del bare["in_run_subset"]
    q = _write(tmp_path, [json.dumps(bare), lines[1]], name="bare.jsonl")
    with pytest.raises(BelugaError, match=r"field '--checklist-subset': the suite records no CheckList run subset"):
        read_suite(str(q), subset=True)
    project = tmp_path / "project.parquet"
    save_suite(make_tiny_suite(1), project)
    with pytest.raises(BelugaError, match=r"project.parquet: field '--checklist-subset'"):
        read_suite(str(project), "sent", subset=True)


def test_run_subset_is_shared_by_copies_and_saved_as_a_list(tmp_path):
    """The run subset in ``attrs`` is one object shared by every copy pandas makes (not copied per operation),
    and a suite saved to Parquet keeps its ``attrs`` (pyarrow writes them as JSON: the subset as a list)."""
    import copy
    import warnings

    import pyarrow.parquet as pq

    lines = [_export_line(case_id=f"qqp-00-0000{i}", in_run_subset=i in (1, 3), run_position=None)
             for i in range(5)]
    suite = import_checklist(_write(tmp_path, lines))
    keep = suite.attrs["checklist_run_subset"]
    assert list(keep) == ["qqp-00-00001", "qqp-00-00003"]
    assert suite.head(3).attrs["checklist_run_subset"] is keep and copy.deepcopy(keep) is keep
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        save_suite(suite, tmp_path / "s.parquet")
    meta = json.loads(pq.read_schema(tmp_path / "s.parquet").metadata[b"pandas"])
    assert meta["attributes"]["checklist_run_subset"] == ["qqp-00-00001", "qqp-00-00003"]


@pytest.mark.skipif(not (DATA / "sentiment.jsonl.gz").exists(), reason="the shared CheckList exports are absent")
def test_checklist_subset_of_the_sentiment_export_is_the_published_sample():
    """The sentiment export's subset: every test sampled with run_idxs keeps at most its sample (CheckList's
    published runs used n=500), the others whole."""
    from beluga.suites.build import checklist_subset

    df = imported("sentiment")
    sub = checklist_subset(df, "sentiment")
    assert 0 < len(sub) < len(df)
    per = sub.groupby("functionality").size()
    assert per.max() <= 500
    whole = df.groupby("functionality").size()
    assert ((per == whole.reindex(per.index)) | (per == 500)).all()


def test_score_checklist_subset_command(tmp_path, capsys):
    """`score --checklist-subset` scores only the published runs' cases; on a project suite: one line, status 2."""
    from beluga.cli import main

    p = _write(tmp_path, [_export_line(case_id=f"qqp-00-0000{i}", in_run_subset=i in (1, 3)) for i in range(5)])
    preds = pd.DataFrame({"case_id": [f"qqp-00-0000{i}" for i in range(5)], "input_idx": 0,
                          "probs": [[0.2, 0.8]] * 5})
    preds.to_parquet(tmp_path / "preds.parquet")
    assert main(["score", "--suite", str(p), "--predictions", str(tmp_path / "preds.parquet"),
                 "--out", str(tmp_path / "o"), "--checklist-subset"]) == 0
    assert pd.read_parquet(tmp_path / "o" / "cases.parquet")["case_id"].tolist() == ["qqp-00-00001", "qqp-00-00003"]
    assert json.loads((tmp_path / "o" / "run.json").read_text())["arguments"]["checklist_subset"] is True
    project = tmp_path / "project.parquet"
    save_suite(make_tiny_suite(1), project)
    capsys.readouterr()
    assert main(["score", "--suite", str(project), "--predictions", str(tmp_path / "preds.parquet"), "--task",
                 "sent", "--out", str(tmp_path / "o2"), "--checklist-subset"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "field '--checklist-subset': the suite records no CheckList run subset" in err
