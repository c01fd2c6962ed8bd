"""GLUE-X's STS-B in both metrics: the five-class accuracy (GLUE-X's) and, from the same model's predictions, GLUE's
Pearson r / Spearman ρ of its expected class against the gold similarity score (beluga.core.tasks.ScoreClassesType,
beluga.score.outcomes, beluga.analyses.ood_scores.with_reported, ood_report's second table, gluex_tables'
Table 4 columns), checked against values computed by hand on a constructed prediction table."""

import math

import numpy as np
import pandas as pd
import pytest

from beluga.analyses import gluex_tables as gluex
from beluga.analyses import ood_report, ood_scores
from beluga.core.errors import DataError
from beluga.core.tasks import SENT, SIMILARITY_CLASSES
from beluga.score.metrics import iid_metrics, reported_metrics
from beluga.score.outcomes import iid_outcomes

#: four examples: probabilities over the five classes, their expected class and argmax, the gold score and class
PROBS = [[0.5, 0.5, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 0.5, 0.5, 0], [0, 0, 0, 0.5, 0.5]]
EXPECTED = [0.5, 1.0, 2.5, 3.5]            # sum of k x P(k)
GOLD_SCORE = [0.5, 1.0, 1.5, 5.0]          # classes (half up, 5 -> 4): 1, 1, 2, 4
# argmax 0, 1, 2, 3 (the first of a tie): right on the 2nd and 3rd -> accuracy 0.5
ACCURACY = 0.5
# Pearson by hand: deviations of the expected class from its mean 1.875: -1.375, -0.875, 0.625, 1.625; of the gold
# from its mean 2: -1.5, -1, -0.5, 3; sum of products 7.5, sums of squares 5.6875 and 12.5
PEARSON = 7.5 / math.sqrt(5.6875 * 12.5)   # 0.8895
SPEARMAN = 1.0                              # both orders are 1 < 2 < 3 < 4


def _preds(ids, probs=PROBS, split="iid_test"):
    return pd.DataFrame({"split": split, "case_id": ids, "input_idx": 0, "probs": [list(map(float, p)) for p in probs]})


def _gold(ids, scores=GOLD_SCORE):
    return pd.DataFrame({"example_id": ids, "text": "a", "text_b": "b",
                         "label": SIMILARITY_CLASSES.score_classes(scores), "score": scores})


def test_expected_class_by_hand():
    assert SIMILARITY_CLASSES.class_scores(np.array(PROBS)).tolist() == EXPECTED
    assert SIMILARITY_CLASSES.reported_metrics == ("pearson", "spearman")
    assert SIMILARITY_CLASSES.iid_metrics == ("accuracy",)   # the score GLUE-X ranks stays the accuracy


def test_outcomes_and_metrics_by_hand():
    ids = ["a", "b", "c", "d"]
    out = iid_outcomes(_preds(ids), _gold(ids), "classification", ttype=SIMILARITY_CLASSES)
    assert out["pred_score"].tolist() == EXPECTED and out["gold_score"].tolist() == GOLD_SCORE
    assert out["pred_label"].tolist() == [0, 1, 2, 3] and out["gold_label"].tolist() == [1, 1, 2, 4]
    assert iid_metrics(out, "similarity_classes") == {"accuracy": ACCURACY}
    got = reported_metrics(out, "similarity_classes")
    assert got["pearson"] == pytest.approx(PEARSON, abs=1e-12) and got["spearman"] == pytest.approx(SPEARMAN)
    assert abs(PEARSON - SPEARMAN) > 0.1          # the two metrics are told apart
    # another type: no score columns, nothing reported
    plain = iid_outcomes(_preds(ids, [[0.3, 0.7]] * 4), _gold(ids).assign(label=[0, 1, 1, 0]), "classification",
                         ttype=SENT)
    assert "pred_score" not in plain.columns and reported_metrics(plain, "sent") == {}
    # a table of classes (no score): the correlations are not computed, never taken against the classes
    classes = iid_outcomes(_preds(ids), _gold(ids).drop(columns="score"), "classification", ttype=SIMILARITY_CLASSES)
    assert all(math.isnan(v) for v in reported_metrics(classes, "similarity_classes").values())


def _run(conf, method, probs, seed=None, path="o.parquet"):
    ids = ["a", "b", "c", "d"]
    parts = [iid_outcomes(_preds(ids, probs), _gold(ids), "classification", ttype=SIMILARITY_CLASSES),
             iid_outcomes(_preds(ids, probs, "ood:sick"), _gold(ids), "classification", split="ood:sick",
                          ttype=SIMILARITY_CLASSES)]
    rec = {"configuration": conf, "method": method, "path": f"{conf}/{path}",
           "outcomes": pd.concat(parts, ignore_index=True)}
    return rec if seed is None else {**rec, "seed": seed}


#: a second system: the argmax of every example on its gold class, its expected class 1, 1, 2, 4 (Pearson of
#: 1, 1, 2, 4 with the gold 0.5, 1, 1.5, 5: deviations -1, -1, 0, 2 and -1.5, -1, -0.5, 3: 1.5 + 1 + 0 + 6 = 8.5 over
#: sqrt(6 x 12.5)); Spearman: ranks 1.5, 1.5, 3, 4 against 1, 2, 3, 4
ONE_HOT = [[0, 1, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 0, 1]]
PEARSON_2 = 8.5 / math.sqrt(6 * 12.5)
SPEARMAN_2 = 4.5 / math.sqrt(4.5 * 5)   # rank deviations -1, -1, 0.5, 1.5 and -1.5, -0.5, 0.5, 1.5


def _evaluate(runs):
    return ood_scores.evaluate(runs, ["sick"], "stsb", "similarity_classes", "bert", {"sick": "GLUE-X"}, R=50)


def test_ood_table_both_metrics_by_hand():
    res = _evaluate([_run("iid", "vanilla", PROBS), _run("iid_to_t", "vanilla", ONE_HOT)])
    t = res.table.set_index("system")
    assert t.loc["iid/vanilla", "id"] == pytest.approx(100 * ACCURACY)          # GLUE-X's five-class accuracy
    assert t.loc["iid_to_t/vanilla", "sick"] == pytest.approx(100.0)
    for col, want in [("pearson:id", PEARSON), ("pearson:sick", PEARSON), ("spearman:id", SPEARMAN)]:
        assert t.loc["iid/vanilla", col] == pytest.approx(100 * want)
    assert t.loc["iid_to_t/vanilla", "pearson:sick"] == pytest.approx(100 * PEARSON_2)
    assert t.loc["iid_to_t/vanilla", "spearman:sick"] == pytest.approx(100 * SPEARMAN_2)
    assert t[["pearson_sd:id", "spearman_sd:sick"]].isna().all().all()         # one seed: no spread
    # the ranking and the long scores are the accuracy's alone
    assert set(res.long["metric"]) == {"accuracy"}
    assert t.loc["iid/vanilla", "ood_avg"] == pytest.approx(100 * ACCURACY)
    md = ood_report.ood_table_markdown(res.table, ["sick"], "stsb", 0.05, "none", task_type="similarity_classes")
    tail = md[md.index("## The same models in GLUE's STS-B metrics"):]
    assert "|  | ID Pearson r | ID Spearman ρ | sick Pearson r | sick Spearman ρ |" in tail
    assert f"| IID | {100 * PEARSON:.1f} | {100 * SPEARMAN:.1f} | {100 * PEARSON:.1f} | {100 * SPEARMAN:.1f} |" in tail
    assert "accuracy over five classes" in tail and "expected class" in tail
    tex = ood_report.table_latex(res.table, ["sick"], "stsb", 0.05, "none", task_type="similarity_classes")
    assert tex.count(r"\begin{table}") == 2 and f"{100 * PEARSON_2:.1f}" in tex


def test_seeds_mean_and_sd_of_the_reported_metrics():
    res = _evaluate([_run("iid", "vanilla", PROBS, seed=1), _run("iid", "vanilla", ONE_HOT, seed=2, path="p")])
    r = res.table.iloc[0]
    assert r["pearson:sick"] == pytest.approx(50 * (PEARSON + PEARSON_2))
    assert r["pearson_sd:sick"] == pytest.approx(100 * abs(PEARSON - PEARSON_2) / math.sqrt(2))


def test_other_types_keep_their_table_and_older_outcomes_refused():
    ids = ["a", "b", "c", "d"]
    gold = _gold(ids).assign(label=[0, 1, 1, 0])
    sent = [{"configuration": "iid", "method": "vanilla", "path": "s.parquet",
             "outcomes": pd.concat([iid_outcomes(_preds(ids, [[0.3, 0.7]] * 4, s), gold, "classification", split=s,
                                                 ttype=SENT) for s in ("iid_test", "ood:sick")], ignore_index=True)}]
    table = ood_scores.evaluate(sent, ["sick"], "sst2", "sent", "bert", R=50).table
    assert not [c for c in table.columns if ":" in c]
    old = _run("iid", "vanilla", PROBS)
    old["outcomes"] = old["outcomes"].drop(columns="gold_score")
    with pytest.raises(DataError, match=r"iid/o.parquet: field 'gold_score': column missing"):
        _evaluate([old])


def test_gluex_table4_gets_stsb_in_glue_metrics():
    """Two backbones' STS-B tables (one system each) beside a Table 4 with an STS-B column (accuracy)."""
    def task_table(backbone, p_id, p_sick, s_sick):
        return pd.DataFrame([{"system": "iid/vanilla", "configuration": "iid", "method": "vanilla",
                              "backbone": backbone, "pearson:id": p_id, "pearson:sick": p_sick,
                              "spearman:id": 80.0, "spearman:sick": s_sick, "pearson_sd:id": np.nan}])
    table4 = pd.DataFrame({"model": ["roberta", "bert"], "sst2": [90.0, 85.0], "stsb": [60.0, 55.0],
                           "ood_avg": [75.0, 70.0], "decrease_ratio": [10.0, 12.0]})
    benchmarks = {"sst2_bert": "sst2_bert", "sst2_roberta": "sst2_bert", "stsb_bert": "stsb_bert",
                  "stsb_roberta": "stsb_bert"}
    tables = {"stsb_bert": task_table("bert", 85.0, 70.0, 65.0), "stsb_roberta": task_table("roberta", 88.0, 75.0,
                                                                                            np.nan)}
    types = {t: "similarity_classes" for t in tables}
    out = gluex.reported_columns(table4, tables, benchmarks, types)
    assert out["stsb:pearson:id"].tolist() == [88.0, 85.0] and out["stsb:pearson:ood"].tolist() == [75.0, 70.0]
    assert out["stsb:spearman:ood"].isna().tolist() == [True, False]
    assert out["stsb"].tolist() == [60.0, 55.0]                                # GLUE-X's column as it was
    t3 = pd.DataFrame({c: [0.0, 0.0] for c in gluex.TABLE3_COLUMNS}).assign(model=["roberta", "bert"])
    md = gluex.tables_markdown(t3, out)
    assert "| Model | sst2 | stsb (five-class accuracy) | Avg | Avg ↓ |" in md
    assert "# GLUE-X Table 4, stsb: the same models in GLUE's STS-B metrics" in md
    assert "| roberta | 60.00 | 88.00 | 80.00 | 75.00 | — |" in md
    assert gluex.reported_tasks({"a": {"type": "similarity_classes", "ood": [{}]}, "b": {"type": "sent", "ood": [{}]},
                                 "c": {"type": "similarity_classes"}}) == ["a"]
