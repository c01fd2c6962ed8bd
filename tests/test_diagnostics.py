"""Prediction diagnostics (beluga/report/diagnostics.py) on synthetic prediction frames."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from beluga.core.errors import DataError
from beluga.report.diagnostics import (
    diagnostics_markdown,
    diagnostics_summary,
    diagnostics_table,
    run_diagnostics,
)

NEG, POS, MID = [0.9, 0.1], [0.05, 0.95], [0.5, 0.5]   # SENT binary head: P(neg), P(pos)


def _case(cid, ttype, inputs, labels=None, expect="eq", params=None, agg=None):
    return {"case_id": cid, "functionality": f"f-{ttype}", "capability": "Cap", "test_type": ttype,
            "inputs": list(inputs), "inputs_b": None, "labels": labels, "answers": None, "expect": expect,
            "expect_params": json.dumps(params or {}),
            "agg_fn": agg or ("all" if ttype == "MFT" else "all_except_first"), "meta": None}


def sent_suite(n=10):
    """n negative MFTs, n positive MFTs, n INVs (3 inputs), n DIRs (2 inputs):
    2 n labelled inputs, 7 n inputs in all."""
    rows = []
    for i in range(n):
        rows.append(_case(f"neg-{i}", "MFT", [f"awful {i}"], [0]))
        rows.append(_case(f"pos-{i}", "MFT", [f"great {i}"], [2]))
        rows.append(_case(f"inv-{i}", "INV", [f"a film {i}", f"a flim {i}", f"a fiml {i}"], expect="inv"))
        rows.append(_case(f"dir-{i}", "DIR", [f"the plot {i}", f"the plot {i}. Loved it."], expect="diff_up"))
    return pd.DataFrame(rows)


def iid_frame(n=100):
    return pd.DataFrame({"example_id": [f"ex{i}" for i in range(n)], "text": [f"t{i}" for i in range(n)],
                         "label": [i % 2 for i in range(n)]})


def predictions(suite, iid, suite_probs, iid_probs):
    """suite_probs(case_row, input_idx) / iid_probs(i) -> probability list."""
    rows = []
    for r in suite.itertuples(index=False):
        for j in range(len(r.inputs)):
            rows.append({"split": "suite_test", "case_id": r.case_id, "input_idx": j,
                         "probs": list(suite_probs(r, j)), "label": None})
    for i, ex in enumerate(iid["example_id"]):
        rows.append({"split": "iid_test", "case_id": ex, "input_idx": 0, "probs": list(iid_probs(i)),
                     "label": int(iid["label"].iloc[i])})
    return pd.DataFrame(rows)


def balanced_suite_probs(r, j):
    if r.test_type == "MFT":
        return NEG if r.case_id.startswith("neg") else POS
    return NEG if j % 2 == 0 else POS


def test_degenerate_on_iid_is_flagged_and_says_where():
    suite, iid = sent_suite(), iid_frame(100)
    preds = predictions(suite, iid, balanced_suite_probs, lambda i: NEG if i < 98 else POS)
    d = run_diagnostics(preds, suite, iid, "sent")
    assert d["degenerate"] is True
    assert d["degenerate_on"] == "iid"
    assert d["iid_majority_label"] == "negative"
    assert d["iid_majority_share"] == pytest.approx(0.98)
    assert d["iid_pred_share"] == pytest.approx({"negative": 0.98, "positive": 0.02})
    assert d["iid_gold_share"] == pytest.approx({"negative": 0.5, "positive": 0.5})
    assert d["suite_majority_share"] < 0.95


def test_degenerate_on_suite_and_both():
    suite, iid = sent_suite(), iid_frame(100)
    preds = predictions(suite, iid, lambda r, j: POS, lambda i: NEG if i % 2 == 0 else POS)
    d = run_diagnostics(preds, suite, iid, "sent")
    assert (d["degenerate"], d["degenerate_on"]) == (True, "suite")
    assert d["suite_pred_share"] == pytest.approx({"negative": 0.0, "neutral": 0.0, "positive": 1.0})
    both = predictions(suite, iid, lambda r, j: POS, lambda i: NEG)
    assert run_diagnostics(both, suite, iid, "sent")["degenerate_on"] == "both"


def test_balanced_model_is_not_degenerate_and_threshold_is_a_parameter():
    suite, iid = sent_suite(), iid_frame(100)
    preds = predictions(suite, iid, balanced_suite_probs, lambda i: NEG if i % 2 == 0 else POS)
    d = run_diagnostics(preds, suite, iid, "sent")
    assert d["degenerate"] is False and d["degenerate_on"] == ""
    assert d["iid_majority_share"] == pytest.approx(0.5)
    # 98% of i.i.d. inputs negative: degenerate at 0.95, not at 0.99
    skewed = predictions(suite, iid, balanced_suite_probs, lambda i: NEG if i < 98 else POS)
    assert run_diagnostics(skewed, suite, iid, "sent", degenerate_share=0.99)["degenerate"] is False


def test_distributions_sum_to_one_and_gold_counts_only_labelled_inputs():
    suite, iid = sent_suite(n=10), iid_frame(60)
    p_pos = iter(np.random.default_rng(0).uniform(size=1_000))

    def draw(*_):
        p = next(p_pos)
        return [1 - p, p]

    preds = predictions(suite, iid, draw, draw)
    d = run_diagnostics(preds, suite, iid, "sent")
    for key in ("iid_pred_share", "iid_gold_share", "suite_pred_share", "suite_gold_share"):
        assert sum(d[key].values()) == pytest.approx(1.0)
    assert list(d["suite_pred_share"]) == ["negative", "neutral", "positive"]
    assert list(d["iid_pred_share"]) == ["negative", "positive"]
    # 10 negative + 10 positive MFTs are labelled; INV / DIR inputs are not
    assert d["n_suite"] == 10 * (1 + 1 + 3 + 2)
    assert d["n_suite_gold"] == 20
    assert d["suite_gold_share"] == pytest.approx({"negative": 0.5, "neutral": 0.0, "positive": 0.5})
    assert d["n_iid"] == 60 and d["n_dir_inputs"] == 20


def test_suite_gold_labels_per_case_val_and_not_negative():
    suite = pd.DataFrame([
        _case("mft-n", "MFT", ["x"], [1]),                                          # neutral, counted
        _case("qa-no", "MFT", ["y"], [1], expect="eq_or_not_negative"),             # "not negative": not a class
        _case("qa-neg", "MFT", ["z"], [0], expect="eq_or_not_negative"),            # negative, counted
        _case("dir-val", "DIR", ["o", "p1", "p2"], expect="eq", params={"val": 2}),  # original not checked
        _case("nn", "MFT", ["w"], expect="not_negative"),                           # no label
    ])
    iid = iid_frame(4)
    preds = predictions(suite, iid, lambda r, j: POS, lambda i: POS)
    d = run_diagnostics(preds, suite, iid, "sent")
    assert d["n_suite_gold"] == 1 + 1 + 2
    assert d["suite_gold_share"] == pytest.approx({"negative": 0.25, "neutral": 0.25, "positive": 0.5})


def test_join_by_ids_not_row_order():
    suite, iid = sent_suite(), iid_frame(50)
    # DIR inputs and odd i.i.d. examples are recognisable by their probabilities
    preds = predictions(suite, iid, lambda r, j: [0.3, 0.7] if r.test_type == "DIR" else balanced_suite_probs(r, j),
                        lambda i: [0.2, 0.8] if i % 5 == 0 else NEG)
    ref = run_diagnostics(preds, suite, iid, "sent")
    shuffled = preds.sample(frac=1.0, random_state=1).reset_index(drop=True)
    assert not shuffled["case_id"].equals(preds["case_id"])
    got = run_diagnostics(shuffled, suite, iid.sample(frac=1.0, random_state=2), "sent")
    assert _same(got, ref)
    assert got["confidence_dir"] == pytest.approx(0.7)
    assert got["iid_pred_share"] == pytest.approx({"negative": 0.8, "positive": 0.2})


def _same(a: dict, b: dict) -> bool:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], float) and math.isnan(a[k]):
            assert math.isnan(b[k]), k
        elif isinstance(a[k], dict):
            assert a[k] == pytest.approx(b[k]), k
        else:
            assert a[k] == pytest.approx(b[k]) if isinstance(a[k], float) else a[k] == b[k], k
    return True


def test_dir_confidence_only_on_dir_cases():
    suite, iid = sent_suite(n=4), iid_frame(10)
    preds = predictions(suite, iid, lambda r, j: [0.4, 0.6] if r.test_type == "DIR" else [0.01, 0.99],
                        lambda i: [0.2, 0.8])
    d = run_diagnostics(preds, suite, iid, "sent")
    assert d["confidence_dir"] == pytest.approx(0.6)
    n_dir, n_all = 4 * 2, 4 * 7
    assert d["confidence_suite"] == pytest.approx((0.6 * n_dir + 0.99 * (n_all - n_dir)) / n_all)
    assert d["confidence_iid"] == pytest.approx(0.8)
    no_dir = suite[suite["test_type"] != "DIR"].reset_index(drop=True)
    preds2 = preds[~preds["case_id"].str.startswith("dir")]
    d2 = run_diagnostics(preds2, no_dir, iid, "sent")
    assert math.isnan(d2["confidence_dir"]) and d2["n_dir_inputs"] == 0
    assert d2["confidence_suite"] == pytest.approx(0.99)


def test_unknown_ids_raise_data_error_naming_case_id():
    suite, iid = sent_suite(n=3), iid_frame(10)
    preds = predictions(suite, iid, balanced_suite_probs, lambda i: NEG)
    bad_suite = preds.copy()
    bad_suite.loc[0, "case_id"] = "no-such-case"
    with pytest.raises(DataError, match="field 'case_id'.*no-such-case"):
        run_diagnostics(bad_suite, suite, iid, "sent")
    bad_iid = preds.copy()
    bad_iid.loc[bad_iid.index[-1], "case_id"] = "ex-unknown"
    with pytest.raises(DataError, match="field 'case_id'.*ex-unknown"):
        run_diagnostics(bad_iid, suite, iid, "sent")


def test_missing_or_extra_suite_inputs_raise():
    suite, iid = sent_suite(n=3), iid_frame(10)
    preds = predictions(suite, iid, balanced_suite_probs, lambda i: NEG)
    with pytest.raises(DataError, match="field 'input_idx'"):
        run_diagnostics(preds.drop(index=0), suite, iid, "sent")
    extra = preds.copy()
    extra.loc[0, "input_idx"] = 7
    with pytest.raises(DataError, match="field 'input_idx'"):
        run_diagnostics(extra, suite, iid, "sent")
    dup = pd.concat([preds, preds.iloc[[0]]], ignore_index=True)
    with pytest.raises(DataError, match="duplicate"):
        run_diagnostics(dup, suite, iid, "sent")


def test_para_label_names_and_columns():
    suite = pd.DataFrame([_case(f"m{i}", "MFT", [f"q{i}"], [i % 2]) for i in range(8)])
    iid = iid_frame(20)
    preds = predictions(suite, iid, lambda r, j: [0.8, 0.2], lambda i: [0.8, 0.2] if i < 15 else [0.1, 0.9])
    d = run_diagnostics(preds, suite, iid, "para")
    assert d["iid_pred_share"] == pytest.approx({"not duplicate": 0.75, "duplicate": 0.25})
    assert (d["degenerate"], d["degenerate_on"]) == (True, "suite")
    table = diagnostics_table([{"configuration": "iid_to_t", "method": "vanilla", "partition": "seen",
                                "fold": "all", **d}])
    assert {"iid_pred_share_not_duplicate", "iid_gold_share_duplicate", "suite_pred_share_not_duplicate",
            "suite_gold_share_duplicate"} <= set(table.columns)
    assert table.loc[0, "suite_pred_share_not_duplicate"] == pytest.approx(1.0)


def qa_case(cid, ttype, n):
    return {**_case(cid, ttype, [f"ctx {cid} {j}" for j in range(n)], expect="squad"),
            "answers": [f"ans {j}" for j in range(n)], "inputs_b": [f"q {j}" for j in range(n)]}


def test_qa_path_empty_and_top_answers():
    suite = pd.DataFrame([qa_case(f"c{i}", "MFT" if i < 6 else "INV", 1 if i < 6 else 2) for i in range(10)])
    iid = pd.DataFrame({"example_id": [f"q{i}" for i in range(100)], "context": "c", "question": "q",
                        "answers": [["a"]] * 100})
    rows = [{"split": "suite_test", "case_id": r.case_id, "input_idx": j, "answer": f"{r.case_id}-{j}",
             "start": 0, "end": 1} for r in suite.itertuples(index=False) for j in range(len(r.inputs))]
    rows += [{"split": "iid_test", "case_id": f"q{i}", "input_idx": 0,
              "answer": None if i < 90 else (" " if i < 97 else "Paris"), "start": 0, "end": 0} for i in range(100)]
    preds = pd.DataFrame(rows).sample(frac=1.0, random_state=0)
    d = run_diagnostics(preds, suite, iid, "read")
    assert d["iid_empty_share"] == pytest.approx(0.97)
    assert d["iid_majority_label"] == "" and d["iid_majority_share"] == pytest.approx(0.97)
    assert d["suite_empty_share"] == 0.0 and d["suite_majority_share"] == pytest.approx(1 / 14)
    assert (d["degenerate"], d["degenerate_on"]) == (True, "iid")
    assert all(math.isnan(d[k]) for k in ("confidence_iid", "confidence_suite", "confidence_dir"))
    assert d["iid_pred_share"] == {} and d["suite_gold_share"] == {}
    ok = preds.assign(answer=[f"a{i}" for i in range(len(preds))])
    assert run_diagnostics(ok, suite, iid, "read")["degenerate"] is False
    bad = preds.copy()
    bad.iloc[0, bad.columns.get_loc("case_id")] = "nope"
    with pytest.raises(DataError, match="field 'case_id'"):
        run_diagnostics(bad, suite, iid, "read")
    table = diagnostics_table([{"configuration": "iid", "method": "vanilla", "partition": "standard",
                                "fold": "all", **d}])
    md = diagnostics_markdown(diagnostics_summary(table), "read", 0.95)
    assert "i.i.d. empty (%)" in md and "97.0" in md and "⚠ 1/1" in md


def _rows():
    """Two pairs over SENT: IID->T vanilla with 3 fold models (2 degenerate),
    IID->(IID+T) vanilla with 2 balanced fold models; the IID baseline last."""
    suite, iid = sent_suite(n=5), iid_frame(40)
    bal = predictions(suite, iid, balanced_suite_probs, lambda i: NEG if i % 2 == 0 else POS)
    deg_iid = predictions(suite, iid, balanced_suite_probs, lambda i: NEG)
    deg_suite = predictions(suite, iid, lambda r, j: POS, lambda i: NEG if i % 2 == 0 else POS)
    d_bal, d_iid, d_suite = (run_diagnostics(p, suite, iid, "sent") for p in (bal, deg_iid, deg_suite))
    rows = [
        {"configuration": "iid_to_t", "method": "vanilla", "partition": "func", "fold": "0", **d_iid},
        {"configuration": "iid_to_iid_plus_t", "method": "vanilla", "partition": "func", "fold": "0", **d_bal},
        {"configuration": "iid_to_t", "method": "vanilla", "partition": "func", "fold": "1", **d_suite},
        {"configuration": "iid_to_t", "method": "vanilla", "partition": "seen", "fold": "all", **d_bal},
        {"configuration": "iid_to_iid_plus_t", "method": "vanilla", "partition": "seen", "fold": "all", **d_bal},
        {"configuration": "iid", "method": "vanilla", "partition": "standard", "fold": "all", **d_bal},
    ]
    return rows, d_bal, d_iid, d_suite


def test_table_order_and_columns():
    rows, *_ = _rows()
    table = diagnostics_table(rows)
    assert table["configuration"].tolist()[0] == "iid"
    assert table["configuration"].tolist() == ["iid"] + ["iid_to_t"] * 3 + ["iid_to_iid_plus_t"] * 2
    # partitions by first appearance within a pair, folds in the given order
    assert table.loc[table["configuration"] == "iid_to_t", "fold"].tolist() == ["0", "1", "all"]
    cols = list(table.columns)
    assert cols[:4] == ["configuration", "method", "partition", "fold"]
    shares = [c for c in cols if "_share_" in c]
    assert shares == ["iid_pred_share_negative", "iid_pred_share_positive",
                      "iid_gold_share_negative", "iid_gold_share_positive",
                      "suite_pred_share_negative", "suite_pred_share_neutral", "suite_pred_share_positive",
                      "suite_gold_share_negative", "suite_gold_share_neutral", "suite_gold_share_positive"]
    assert list(diagnostics_table(list(reversed(rows))).columns) == cols
    for prefix in ("iid_pred_share_", "suite_pred_share_", "iid_gold_share_", "suite_gold_share_"):
        sums = table[[c for c in cols if c.startswith(prefix)]].sum(axis=1)
        assert np.allclose(sums, 1.0)


def test_summary_counts_degenerate_models():
    rows, d_bal, d_iid, d_suite = _rows()
    summary = diagnostics_summary(diagnostics_table(rows))
    assert summary[["configuration", "method"]].values.tolist() == [
        ["iid", "vanilla"], ["iid_to_t", "vanilla"], ["iid_to_iid_plus_t", "vanilla"]]
    s = summary.set_index("configuration")
    assert s.loc["iid_to_t", "n_models"] == 3 and s.loc["iid_to_t", "n_degenerate"] == 2
    assert s.loc["iid_to_t", "n_degenerate_iid"] == 1 and s.loc["iid_to_t", "n_degenerate_suite"] == 1
    assert s.loc["iid_to_iid_plus_t", "n_models"] == 2 and s.loc["iid_to_iid_plus_t", "n_degenerate"] == 0
    assert s.loc["iid", "n_models"] == 1
    expected = np.mean([d_iid["iid_pred_share"]["negative"], d_suite["iid_pred_share"]["negative"],
                        d_bal["iid_pred_share"]["negative"]])
    assert s.loc["iid_to_t", "iid_pred_share_negative"] == pytest.approx(expected)
    assert s.loc["iid_to_t", "confidence_suite"] == pytest.approx(
        np.mean([d_iid["confidence_suite"], d_suite["confidence_suite"], d_bal["confidence_suite"]]))
    assert "degenerate_on" not in summary.columns and "fold" not in summary.columns


def test_summary_reads_flags_back_from_csv(tmp_path):
    rows, *_ = _rows()
    path = tmp_path / "diag.csv"
    diagnostics_table(rows).to_csv(path, index=False)
    summary = diagnostics_summary(pd.read_csv(path, keep_default_na=False, na_values=[""]))
    assert summary.set_index("configuration").loc["iid_to_iid_plus_t", "n_degenerate"] == 0
    assert summary.set_index("configuration").loc["iid_to_t", "n_degenerate"] == 2


def test_markdown_flags_the_degenerate_pair():
    rows, *_ = _rows()
    md = diagnostics_markdown(diagnostics_summary(diagnostics_table(rows)), "sent", 0.95)
    lines = md.splitlines()
    deg_row = next(ln for ln in lines if ln.startswith("| IID→T | vanilla"))
    ok_row = next(ln for ln in lines if ln.startswith("| IID→(IID+T) | vanilla"))
    base_row = next(ln for ln in lines if ln.startswith("| IID | vanilla"))
    assert "⚠ 2/3" in deg_row and "⚠" not in ok_row and "⚠" not in base_row
    assert "### IID→T — vanilla ⚠" in lines and "### IID→(IID+T) — vanilla" in lines
    assert "95%" in md and "Legend" in md
    # per-pair label table: neutral has no i.i.d. share, suite gold shares shown
    neutral = [ln for ln in lines if ln.startswith("| neutral |")]
    assert neutral and neutral[0].split("|")[2].strip() == "—"
    assert lines.index(base_row) < lines.index(deg_row) < lines.index(ok_row)


def test_a_fold_model_is_described_on_the_iid_sample_it_predicted():
    """predict.fold_iid_examples: a fold model predicted a sample of the i.i.d. test set
    (beluga.suites.folds.predicted_iid); the diagnostics step describes it on that sample (and flags it degenerate
    there), and a model that predicted only a sample is refused against the whole set."""
    from beluga.suites.folds import predicted_iid

    suite, iid = sent_suite(), iid_frame(100)
    sample = predicted_iid(iid, 30)
    preds = predictions(suite, sample, balanced_suite_probs, lambda i: NEG)
    d = run_diagnostics(preds, suite, sample, "sent", whole_suite=False)
    assert d["n_iid"] == 30 and d["degenerate"] is True and d["degenerate_on"] == "iid"
    with pytest.raises(DataError, match="30 i.i.d. predictions for 100 test examples"):
        run_diagnostics(preds, suite, iid, "sent", whole_suite=False)
