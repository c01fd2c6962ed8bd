"""SIMILARITY's pieces of the default pipeline (issue 40), without a run: i.i.d. / OOD tables read scores,
the reference selection objective's regression counterpart, and the constant-predictor diagnostic."""

import json

import numpy as np
import pandas as pd
import pytest

from beluga.core.errors import BelugaError, DataError
from beluga.core.tasks import SIMILARITY
from beluga.data.ood_sets import load_local
from beluga.data.tables import load_table
from beluga.heads.score.diagnostics import CONSTANT_STD, constant_predictor
from beluga.heads.score.objective import regression_parts, regression_plan
from beluga.report.diagnostics import run_diagnostics
from beluga.train.selection import reference_objective


def _case(cid, func, ttype, n, expect, params=None, labels=None):
    return {"case_id": cid, "functionality": func, "capability": "c", "test_type": ttype,
            "inputs": [f"{cid} a{j}" for j in range(n)], "inputs_b": [f"{cid} b{j}" for j in range(n)],
            "labels": labels, "expect": expect, "expect_params": json.dumps(params or {}),
            "agg_fn": "all" if ttype == "MFT" else "all_except_first", "meta": None}


def _preds(scores: dict, split: str = "suite_test") -> pd.DataFrame:
    rows = [(split, cid, j, float(s)) for cid, ss in scores.items() for j, s in enumerate(ss)]
    return pd.DataFrame(rows, columns=["split", "case_id", "input_idx", "score"])


def test_tables_read_scores_for_a_regression_head(tmp_path):
    df = pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"], "text_b": ["u", "v"], "label": [4.6, 0.25]})
    path = tmp_path / "sts.tsv"
    df.to_csv(path, sep="\t", index=False)
    assert load_table(path, set(), pair=True, head="regression")["label"].tolist() == [4.6, 0.25]
    assert load_local(str(path), "regression", set(), pair=True)["label"].tolist() == [4.6, 0.25]
    df.loc[1, "label"] = 5.5
    df.to_csv(path, sep="\t", index=False)
    with pytest.raises(DataError, match=r"sts.tsv: row 1: field 'label': value 5.5 is not a score in \[0, 5\]"):
        load_table(path, set(), pair=True, head="regression")
    with pytest.raises(DataError, match="field 'label'"):     # a classification table still wants labels
        load_table(path, {0, 1}, pair=True)


def test_reference_objective_pools_score_results_by_test_type():
    cases = pd.DataFrame([_case("m", "near", "MFT", 2, "score_near", {"val": 5.0, "tolerance": 0.5}),
                          _case("i", "inv", "INV", 3, "score_inv", {"tolerance": 0.5}),
                          _case("d", "down", "DIR", 2, "score_down"),
                          _case("top", "down", "DIR", 2, "score_up")])
    plan = regression_plan(cases)
    preds = _preds({"m": [4.6, 3.0], "i": [2.0, 2.4, 3.0], "d": [3.0, 2.0], "top": [5.0, 5.0]})
    parts = regression_parts(plan, preds, "T_val", SIMILARITY.score_range)
    # MFT 1 of 2 inputs; INV 1 of 2 perturbations; DIR 1 of 1 (the case at the top bound is filtered)
    assert parts == {"n_mft": 2, "mft_pass": 0.5, "n_inv": 2, "inv_pass": 0.5, "n_dir": 1, "dir_pass": 1.0}
    rec = reference_objective("similarity", parts)
    assert rec["score"] == pytest.approx(2.0) and rec["terms"] == {"mft": 0.5, "inv": 0.5, "dir": 1.0}
    assert rec["metric"] == "MFT score pass + INV score pass + DIR score pass on T_val (the project's counterpart)"
    no_dir = regression_parts(regression_plan(cases.iloc[:2]), preds)
    assert no_dir["dir_pass"] is None and reference_objective("similarity", no_dir)["score"] == pytest.approx(1.0)
    with pytest.raises(BelugaError, match="trial x: field 'score': no finite predicted score for case 'i', input 2"):
        regression_parts(plan, preds[~((preds["case_id"] == "i") & (preds["input_idx"] == 2))], "trial x")


def test_constant_predictor_is_flagged_degenerate():
    assert constant_predictor(np.full(30, 2.5)) and constant_predictor(2.5 + np.linspace(0, 0.1, 30))
    assert not constant_predictor(np.linspace(0, 5, 30)) and not constant_predictor(np.zeros(0))
    suite = pd.DataFrame([_case(f"c{i}", "near", "MFT", 1, "score_near", {"val": 4.0}) for i in range(4)])
    iid = pd.DataFrame({"example_id": [f"e{i}" for i in range(20)], "label": np.linspace(0, 5, 20)})
    varied = {f"e{i}": [s] for i, s in enumerate(np.linspace(0.5, 4.5, 20))}
    suite_scores = {f"c{i}": [1.0 + i] for i in range(4)}
    for iid_scores, suite_s, deg, on in ((varied, suite_scores, False, ""),
                                         ({f"e{i}": [0.0727] for i in range(20)}, suite_scores, True, "iid"),
                                         ({f"e{i}": [0.0727] for i in range(20)},
                                          {f"c{i}": [0.0727] for i in range(4)}, True, "both")):
        preds = pd.concat([_preds(iid_scores, "iid_test"), _preds(suite_s)], ignore_index=True)
        d = run_diagnostics(preds, suite, iid, "similarity", source="p.parquet")
        assert (d["degenerate"], d["degenerate_on"]) == (deg, on)
        assert d["constant_std"] == CONSTANT_STD and d["iid_score_std"] == pytest.approx(
            np.std([v[0] for v in iid_scores.values()]))
        assert d["iid_pred_share"] == {} and np.isnan(d["confidence_iid"])
    # a fold model predicting a few functionalities is not flagged on the suite
    preds = pd.concat([_preds(varied, "iid_test"), _preds({f"c{i}": [2.0] for i in range(4)})], ignore_index=True)
    d = run_diagnostics(preds, suite, iid, "similarity", source="p.parquet", whole_suite=False)
    assert not d["degenerate"]
    with pytest.raises(DataError, match="p.parquet: field 'score': missing column"):
        run_diagnostics(preds.drop(columns="score"), suite, iid, "similarity", source="p.parquet")


def test_ood_scores_are_correlations_and_a_constant_predictor_stops_with_one_line():
    from scipy.stats import pearsonr, spearmanr

    from beluga.analyses.ood_scores import long_scores

    rng = np.random.default_rng(0)
    gold = rng.uniform(0, 5, 40)
    pred = gold + rng.normal(0, 1, 40)
    out = pd.DataFrame({"split": ["iid_test"] * 20 + ["ood:sick-r"] * 20, "case_id": [f"e{i}" for i in range(40)],
                        "pred_score": pred, "gold_score": gold})
    run = {"configuration": "iid", "method": "vanilla", "path": "o.parquet", "outcomes": out}
    long = long_scores([run], ["sick-r"], "stsb", "similarity").set_index(["dataset", "metric"])["value"]
    assert long[("sick-r", "pearson")] == pytest.approx(100 * pearsonr(pred[20:], gold[20:])[0])
    assert long[("iid_test", "spearman")] == pytest.approx(100 * spearmanr(pred[:20], gold[:20])[0])
    flat = dict(run, outcomes=out.assign(pred_score=np.where(out["split"] == "ood:sick-r", 2.0, pred)))
    with pytest.raises(DataError, match="o.parquet: field 'pred_score': the model predicts one score for every "
                                        "sick-r example, so its pearson correlation is undefined"):
        long_scores([flat], ["sick-r"], "stsb", "similarity")


def _long(values: dict) -> pd.DataFrame:
    rows = [{"task": "stsb", "configuration": conf, "method": "vanilla", "column": col, "value": v,
             "ci_lo": np.nan, "ci_hi": np.nan, "p_value": np.nan if conf == "iid" else 0.5,
             "p_adjusted": np.nan if conf == "iid" else 0.5, "significant": False, "direction": 0}
            for (conf, col), v in values.items()]
    return pd.DataFrame(rows)


def test_table3_shows_negative_correlations_and_names_them():
    from beluga.report.tables import table3_markdown

    long = _long({("iid", "iid"): -0.22, ("iid", "iid_pearson"): -0.22, ("iid", "iid_spearman"): -0.08,
                  ("iid_to_t", "iid"): 0.31, ("iid_to_t", "iid_pearson"): 0.31, ("iid_to_t", "iid_spearman"): 0.2,
                  ("iid", "G_standard"): 0.0, ("iid_to_t", "G_seen"): 0.1})
    md = table3_markdown(long, 0.05, "none")
    assert "| IID (baseline) | vanilla | -22.0 | -22.0 | -8.0 |" in md
    assert "F1, Pearson / Spearman or the mean of two metrics" in md
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\] \(unscaled\); got .*-0.1\b.* for "
                                         r"stsb/iid_to_t/vanilla/G_seen"):
        table3_markdown(_long({("iid", "iid"): 0.5, ("iid_to_t", "G_seen"): -0.1}), 0.05, "none")
    with pytest.raises(ValueError, match=r"must lie in \[-1, 1\]"):
        table3_markdown(_long({("iid", "iid_pearson"): -1.5}), 0.05, "none")
