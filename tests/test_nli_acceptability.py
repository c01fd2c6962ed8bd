"""The NLI, NLI_BINARY and ACCEPTABILITY task types (issue 40) below the pipeline: Matthews correlation
against hand computations, the i.i.d. metrics and their per-example features, the paired test of an MCC
change against its exact permutation distribution, G with an s_iid below chance, the selection objective,
label names and variants, the model card's words, the two-class collapse of an OOD set (HANS-shaped) and
the config checks. The end-to-end runs are tests/test_workflow_nli.py."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from beluga.core.errors import BelugaError, ConfigError, DataError
from beluga.core.tasks import ACCEPTABILITY, NLI, NLI_BINARY, PARA, READ, SENT, TASK_TYPES, get_task_type
from beluga.heads.classification import mcc, mcc_from_counts
from beluga.report import paired, stats
from beluga.score import metrics


def outcome_rows(pred, gold, split="iid_test") -> pd.DataFrame:
    pred, gold = np.asarray(pred), np.asarray(gold)
    return pd.DataFrame({"case_id": [f"e{i}" for i in range(len(pred))], "split": split, "pred_label": pred,
                         "gold_label": gold, "correct": pred == gold})


# ---------------------------------------------------------------- task types


def test_types_labels_and_attributes():
    assert NLI.iid_labels == {0: "entailment", 1: "neutral", 2: "contradiction"} and NLI.pair
    assert NLI_BINARY.iid_labels == {0: "entailment", 1: "not entailment"} and NLI_BINARY.pair
    assert ACCEPTABILITY.iid_labels == {0: "unacceptable", 1: "acceptable"} and not ACCEPTABILITY.pair
    assert get_task_type("nli_binary") is NLI_BINARY
    # the first three types' metrics and features are what they were
    assert (SENT.iid_metrics, PARA.iid_metrics, READ.iid_metrics) == (("accuracy",), ("accuracy", "f1"), ("em", "f1"))
    assert (SENT.iid_features, PARA.iid_features, READ.iid_features) == \
        (("correct",), ("correct", "tp", "fp", "fn"), ("em", "f1"))
    assert metrics.IID_METRICS["acceptability"] == ("mcc", "accuracy")
    assert metrics.IID_METRICS["nli"] == metrics.IID_METRICS["nli_binary"] == ("accuracy",)
    assert NLI_BINARY.mft_target("eq", 1) == [0.0, 1.0] and NLI.mft_target("eq", 2) == [0.0, 0.0, 1.0]
    with pytest.raises(ConfigError, match="NLI: label 3 is not one of"):
        NLI.mft_target("eq", 3)


def test_schema_admits_the_new_types_and_mcc():
    import yaml
    from jsonschema import Draft7Validator

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    task = schema["properties"]["tasks"]["additionalProperties"]["properties"]
    assert set(task["type"]["enum"]) == set(TASK_TYPES)     # similarity too: tests/test_similarity_wiring.py
    assert "mcc" in task["iid_metric"]["enum"]
    ood = schema["$defs"]["ood_set"]
    Draft7Validator(ood).validate({"name": "hans", "source": "local", "path": "h.tsv",
                                   "collapse": {"entailment": "entailment", "neutral": "non-entailment",
                                                "contradiction": "non-entailment"},
                                   "label_map": {"0": "entailment", "1": "non-entailment"}})


# ---------------------------------------------------------------- Matthews correlation


def test_mcc_by_hand_and_conventions():
    # tp 3, fp 1, fn 2, tn 4: (12 - 2) / sqrt(4 * 5 * 5 * 6) = 10 / sqrt(600)
    pred = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    gold = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]
    assert mcc(pred, gold) == pytest.approx(10 / np.sqrt(600))
    assert mcc(1 - np.asarray(pred), 1 - np.asarray(gold)) == pytest.approx(10 / np.sqrt(600))  # symmetric
    assert mcc(gold, gold) == pytest.approx(1.0) and mcc(1 - np.asarray(gold), gold) == \
        pytest.approx(-1.0)
    assert mcc([1] * 10, gold) == 0.0                    # a constant prediction: GLUE's / sklearn's 0
    # the ratio does not depend on the scale: counts or shares
    assert mcc_from_counts(3, 1, 2, 4) == pytest.approx(mcc_from_counts(0.3, 0.1, 0.2, 0.4))


def test_iid_metrics_of_the_new_types():
    pred, gold = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0], [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]
    m = metrics.iid_metrics(outcome_rows(pred, gold), "acceptability")
    assert list(m) == ["mcc", "accuracy"]
    assert m["mcc"] == pytest.approx(10 / np.sqrt(600)) and m["accuracy"] == pytest.approx(0.7)
    assert metrics.iid_score(m) == pytest.approx((10 / np.sqrt(600) + 0.7) / 2)
    assert metrics.iid_score(m, "mcc") == pytest.approx(10 / np.sqrt(600))
    nli = metrics.iid_metrics(outcome_rows([0, 1, 2, 2], [0, 1, 1, 2]), "nli")
    assert nli == {"accuracy": 0.75} and metrics.iid_score(nli) == 0.75


def test_g_is_zero_when_s_iid_is_at_or_below_chance():
    assert metrics.g_score(0.6, -0.2) == 0.0 and metrics.g_score(0.0, 0.5) == 0.0
    assert metrics.g_score(0.6, 0.3) == pytest.approx(0.4)
    g = stats.harmonic_mean(np.array([0.6, 0.6, 0.0, 0.5]), np.array([-0.2, 0.3, 0.0, np.nan]))
    assert g[0] == 0.0 and g[1] == pytest.approx(0.4) and g[2] == 0.0 and np.isnan(g[3])


def test_features_give_the_metrics_of_the_rows():
    rng = np.random.default_rng(0)
    pred, gold = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    rows = outcome_rows(pred, gold)
    f = stats.iid_features(rows, "acceptability")
    assert f.shape == (50, 4)
    m = metrics.iid_metrics(rows, "acceptability")
    assert stats.iid_statistic(f.mean(axis=0), "acceptability", "mcc") == pytest.approx(m["mcc"])
    assert stats.iid_statistic(f.mean(axis=0), "acceptability", "accuracy") == pytest.approx(m["accuracy"])
    assert stats.iid_statistic(f.mean(axis=0), "acceptability") == pytest.approx(metrics.iid_score(m))
    three = outcome_rows(rng.integers(0, 3, 30), rng.integers(0, 3, 30))
    fn = stats.iid_features(three, "nli")
    assert fn.shape == (30, 1)
    assert stats.iid_statistic(fn.mean(axis=0), "nli") == pytest.approx(three["correct"].mean())
    with pytest.raises(ValueError, match="'f1' is not a metric of task type acceptability"):
        stats.iid_statistic(f.mean(axis=0), "acceptability", "f1")
    # the first types' features as before: para correct, tp, fp, fn; read em, f1
    para = stats.iid_features(outcome_rows([1, 0, 1], [1, 1, 0]), "para")
    np.testing.assert_array_equal(para, [[1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])


# ---------------------------------------------------------------- the paired test of s_iid


def test_paired_test_suits_the_metric():
    assert paired.binary_iid_metric("nli", "mean") and paired.binary_iid_metric("nli_binary", "mean")
    assert paired.binary_iid_metric("acceptability", "accuracy")
    assert not paired.binary_iid_metric("acceptability", "mcc") and not paired.binary_iid_metric("acceptability",
                                                                                                  "mean")
    # the first types as before
    assert paired.binary_iid_metric("sent", "mean") and not paired.binary_iid_metric("para", "mean")
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 2, 40)
    a, b = rng.integers(0, 2, 40), gold.copy()
    fa, fb = (stats.iid_features(outcome_rows(x, gold), "acceptability") for x in (a, b))
    _, name = paired.paired_metric_test([fa], [fb], [fa[:, 0]], [fb[:, 0]], "acceptability", "mcc", R=200)
    assert name == "paired randomization (R = 200)"
    _, name = paired.paired_metric_test([fa], [fb], [fa[:, 0]], [fb[:, 0]], "acceptability", "accuracy")
    assert name == "exact McNemar"


def exact_paired_p(base: np.ndarray, system: np.ndarray, task_type: str, metric: str) -> float:
    """The exact two-sided p of the paired permutation test: every pattern of swaps of the examples where the
    two systems differ (2^k patterns), p = #{|Δ'| >= |Δ|} / 2^k."""
    diff = np.flatnonzero(np.any(base != system, axis=1))
    delta = stats.iid_statistic(system.mean(0), task_type, metric) - stats.iid_statistic(base.mean(0), task_type,
                                                                                          metric)
    hits = 0
    for pattern in itertools.product((0, 1), repeat=len(diff)):
        b, s = base.copy(), system.copy()
        swap = diff[np.asarray(pattern, dtype=bool)]
        b[swap], s[swap] = system[swap], base[swap]
        d = stats.iid_statistic(s.mean(0), task_type, metric) - stats.iid_statistic(b.mean(0), task_type, metric)
        hits += abs(d) >= abs(delta) - 1e-12
    return hits / 2 ** len(diff)


def test_mcc_paired_randomization_matches_the_exact_permutation_p():
    """A known answer: with 10 discordant examples the permutation distribution is enumerated exactly
    (1,024 patterns); the seeded randomization estimates it within its Monte-Carlo error, and repeats."""
    gold = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0])
    base = gold.copy()
    base[[0, 1, 2, 6, 7]] = 1 - base[[0, 1, 2, 6, 7]]        # base wrong on 5 examples
    system = gold.copy()
    system[[3, 8, 12, 13, 14]] = 1 - system[[3, 8, 12, 13, 14]]   # system wrong on 5 others: 10 differ
    fb, fs = (stats.iid_features(outcome_rows(x, gold), "acceptability") for x in (base, system))
    exact = exact_paired_p(fb, fs, "acceptability", "mcc")
    r = paired.paired_randomization([(fb, fs)], "acceptability", "mcc", R=20_000, seeds=[3])
    assert r["n_discordant"] == 10
    assert r["delta"] == pytest.approx(mcc(system, gold) - mcc(base, gold))
    assert abs(r["p_value"] - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4
    again = paired.paired_randomization([(fb, fs)], "acceptability", "mcc", R=20_000, seeds=[3])
    assert again["p_value"] == r["p_value"]
    # a system much better on many examples: the exact p is small and the test finds it
    better = gold.copy()
    fg = stats.iid_features(outcome_rows(better, gold), "acceptability")
    worse = 1 - gold
    fw = stats.iid_features(outcome_rows(worse, gold), "acceptability")
    assert paired.paired_randomization([(fw, fg)], "acceptability", "mcc", R=5000, seeds=[0])["p_value"] < 0.01
    # identical systems: p = 1
    assert paired.paired_randomization([(fb, fb)], "acceptability", "mcc", R=100)["p_value"] == 1.0


# ---------------------------------------------------------------- selection objective


def _case(cid, ttype, inputs, expect, labels=None, params=None, inputs_b=None):
    return {"case_id": cid, "functionality": f"f-{cid}", "capability": "c", "test_type": ttype,
            "inputs": list(inputs), "inputs_b": inputs_b, "labels": labels, "expect": expect,
            "expect_params": json.dumps(params or {}), "agg_fn": "all" if ttype == "MFT" else "all_except_first",
            "answers": None, "meta": None}


def test_nli_reference_objective_by_hand():
    from beluga.heads.classification import classification_parts, classification_plan
    from beluga.train.selection import REFERENCE_TERMS, reference_objective

    cases = pd.DataFrame([
        _case("m1", "MFT", ["p1"], "eq", [0], inputs_b=["h1"]), _case("m2", "MFT", ["p2"], "eq", [2], inputs_b=["h2"]),
        _case("i1", "INV", ["p3", "p3'"], "inv", inputs_b=["h3", "h3"]),
        _case("i2", "INV", ["p4", "p4'"], "inv", inputs_b=["h4", "h4"]),
        _case("d1", "DIR", ["p5", "p5 not"], "eq", [0, 2], inputs_b=["h5", "h5"]),
    ])
    plan = classification_plan(NLI, cases)
    assert plan["mft"] == [("m1", 0, 0), ("m2", 0, 2)] and plan["inv"] == [("i1", 1), ("i2", 1)]
    assert plan["dir"] == [("d1", 1, 2)]
    p = {("m1", 0): [0.7, 0.2, 0.1], ("m2", 0): [0.5, 0.1, 0.4],            # hit, miss
         ("i1", 0): [0.5, 0.3, 0.2], ("i1", 1): [0.45, 0.3, 0.25],          # max |dP| 0.05: pass
         ("i2", 0): [0.5, 0.3, 0.2], ("i2", 1): [0.3, 0.5, 0.2],            # 0.2: fail
         ("d1", 0): [0.8, 0.1, 0.1], ("d1", 1): [0.1, 0.2, 0.7]}            # label 2: hit
    preds = pd.DataFrame({"case_id": [k[0] for k in p], "input_idx": [k[1] for k in p],
                          "probs": [list(v) for v in p.values()]})
    parts = classification_parts(NLI, plan, preds)
    assert parts["mft_accuracy"] == 0.5 and parts["inv_pass"] == 0.5 and parts["dir_accuracy"] == 1.0
    rec = reference_objective("nli", parts)
    assert rec["score"] == pytest.approx(2.0) and rec["metric"].endswith("(the project's counterpart)")
    assert REFERENCE_TERMS["acceptability"] == REFERENCE_TERMS["nli"] == "MFT accuracy + INV pass + DIR pass"
    two = pd.DataFrame({"case_id": ["m1"], "input_idx": [0], "probs": [[0.5, 0.5]]})
    with pytest.raises(BelugaError, match="needs the model's three-class probabilities"):
        classification_parts(NLI, {"mft": [("m1", 0, 0)], "inv": [], "dir": []}, two)
    assert reference_objective("sent", {"mft_accuracy": 1.0, "inv_pass": 1.0, "dir_pass": None})["metric"] \
        .endswith("(reference code)")


def test_sentiment_directions_are_refused_for_nli():
    from beluga.score.outcomes import score_cases

    suite = pd.DataFrame([_case("d", "DIR", ["p", "p2"], "diff_up", params={"tolerance": 0.1},
                                inputs_b=["h", "h"])])
    preds = pd.DataFrame({"case_id": ["d", "d"], "input_idx": [0, 1], "probs": [[0.3, 0.3, 0.4]] * 2})
    with pytest.raises(BelugaError, match="compares sentiment's negative and positive probabilities; task type 'nli'"):
        score_cases(suite, preds, NLI)


# ---------------------------------------------------------------- names


def test_label_names_and_variants():
    from beluga.model.labels import label_map, read_name

    assert read_name("not_entailment", ("entailment", "not entailment")) == "not entailment"
    assert read_name("Non-Entailment", ("entailment", "not entailment")) == "not entailment"
    assert read_name("entails", ("entailment", "neutral", "contradiction")) == "entailment"
    assert read_name("CONTRADICTION", ("entailment", "neutral", "contradiction")) == "contradiction"
    assert read_name("ungrammatical", ("unacceptable", "acceptable")) == "unacceptable"
    assert read_name("grammatical", ("unacceptable", "acceptable")) == "acceptable"
    # roberta-large-mnli's order (contradiction, neutral, entailment) is read by name and permuted
    cfg = {"id2label": {"0": "CONTRADICTION", "1": "NEUTRAL", "2": "ENTAILMENT"}}
    lm = label_map(cfg, NLI, 3, "roberta-large-mnli")
    assert lm.by == "id2label" and lm.columns == [2, 1, 0]


def test_model_card_words():
    from beluga.model.card import TASK_WORDS, model_card

    assert TASK_WORDS["sent"] == "sentiment classification"      # as before
    text = model_card(NLI, {0: "entailment", 1: "neutral", 2: "contradiction"}, {"task": "mnli"})
    assert "task type `nli`: natural language inference" in text and "0: entailment, 1: neutral" in text
    assert "CoLA" in model_card(ACCEPTABILITY, None, {})


# ---------------------------------------------------------------- two-class OOD sets (collapse)

HANS_COLLAPSE = {"entailment": "entailment", "neutral": "non-entailment", "contradiction": "non-entailment"}


def test_collapse_plan_and_errors():
    from beluga.data.ood_collapse import collapse_plan, set_labels

    assert collapse_plan({"name": "hans", "collapse": HANS_COLLAPSE}, NLI.iid_labels) == \
        (["entailment", "non entailment"], [0, 1, 1])
    # RTE as an OOD set of an MNLI model: its own names (not_entailment), read whatever the spelling
    rte = {"name": "rte", "collapse": {"Entailment": "entailment", "neutral": "not_entailment",
                                       "contradiction": "not entailment"}}
    classes, to_set = collapse_plan(rte, NLI.iid_labels)
    assert classes == ["entailment", "not entailment"] and to_set == [0, 1, 1]
    assert list(set_labels(pd.Series(["not_entailment", "entailment", "Not-Entailment"]), classes, None, "w")) == \
        [1, 0, 1]
    with pytest.raises(ConfigError, match="field 'collapse': the model's class 'contradiction' has no class"):
        collapse_plan({"name": "h", "collapse": {"entailment": "e", "neutral": "n"}}, NLI.iid_labels)
    with pytest.raises(ConfigError, match="field 'collapse': 'maybe' is not a class of the task's model"):
        collapse_plan({"name": "h", "collapse": {**HANS_COLLAPSE, "maybe": "x"}}, NLI.iid_labels)
    with pytest.raises(ConfigError, match="every class of the model maps to 'x'"):
        collapse_plan({"name": "h", "collapse": dict.fromkeys(HANS_COLLAPSE, "x")}, NLI.iid_labels)


def hans_tsv(path, labels=None):
    n = 6
    pd.DataFrame({"id": [f"h{i}" for i in range(n)], "text": [f"The doctor saw the lawyer {i}." for i in range(n)],
                  "text_b": [f"The lawyer saw the doctor {i}." for i in range(n)],
                  "label": labels or ["entailment", "non-entailment"] * 3}).to_csv(path, sep="\t", index=False)
    return path


def test_collapsed_set_loads_by_name_and_scores_the_collapsed_prediction(tmp_path):
    from beluga.core.io import write_parquet
    from beluga.data.ood_collapse import metadata
    from beluga.data.ood_sets import load_ood, read_prepared
    from beluga.score.outcomes import run_outcomes

    entry = {"name": "hans", "source": "local", "path": str(hans_tsv(tmp_path / "hans.tsv")),
             "collapse": HANS_COLLAPSE}
    df = load_ood(entry, "classification", {0, 1, 2}, pair=True, classes=NLI.iid_labels)
    assert list(df["label"]) == [0, 1, 0, 1, 0, 1]
    # numbers in the file, named through label_map
    num = dict(entry, path=str(hans_tsv(tmp_path / "num.tsv", [0, 1, 0, 1, 0, 1])),
               label_map={"0": "entailment", "1": "non-entailment"})
    assert list(load_ood(num, "classification", {0, 1, 2}, pair=True, classes=NLI.iid_labels)["label"]) == \
        [0, 1, 0, 1, 0, 1]
    with pytest.raises(DataError, match=r"num.tsv: row 0: field 'label': '0' is not one of the set's classes"):
        load_ood(dict(entry, path=num["path"]), "classification", {0, 1, 2}, pair=True, classes=NLI.iid_labels)
    write_parquet(df, tmp_path / "hans.parquet", metadata=metadata(["entailment", "non entailment"], [0, 1, 1]))
    gold = read_prepared([tmp_path / "hans.parquet"])
    assert gold["hans"].attrs["collapse"] == [0, 1, 1]
    # the model's argmax: entailment, neutral, contradiction, entailment, neutral, neutral
    # -> collapsed 0, 1, 1, 0, 1, 1 against gold 0, 1, 0, 1, 0, 1: 3 of 6 right
    probs = [[.8, .1, .1], [.1, .8, .1], [.1, .1, .8], [.6, .3, .1], [.2, .5, .3], [.3, .4, .3]]
    ids = list(df["example_id"])
    preds = pd.DataFrame({"split": "ood:hans", "case_id": ids, "input_idx": 0, "probs": probs})
    iid = pd.DataFrame({"example_id": ["x"], "text": ["a"], "text_b": ["b"], "label": [1]})
    preds = pd.concat([preds, pd.DataFrame({"split": ["iid_test"], "case_id": ["x"], "input_idx": [0],
                                            "probs": [[.1, .8, .1]]})], ignore_index=True)
    suite = pd.DataFrame(columns=["case_id", "functionality", "expect", "expect_params", "agg_fn", "inputs",
                                  "labels"])
    out = run_outcomes(NLI, suite, preds, iid, [], "preds", ood=gold)
    hans = out[out["split"] == "ood:hans"].set_index("case_id").loc[ids]
    assert list(hans["pred_label"]) == [0, 1, 1, 0, 1, 1] and list(hans["gold_label"]) == [0, 1, 0, 1, 0, 1]
    assert metrics.iid_metrics(out, "nli", split="ood:hans") == {"accuracy": 0.5}
    assert bool(out.loc[out["split"] == "iid_test", "correct"].iloc[0])   # the i.i.d. set is not collapsed


def test_config_checks_of_collapse_and_iid_metric(tmp_path):
    from beluga.workflow.dag import check_sources

    iid = tmp_path / "nli.tsv"
    pd.DataFrame({"text": ["a"], "text_b": ["b"], "label": [0]}).to_csv(iid, sep="\t", index=False)
    task = {"type": "nli", "iid": {"source": str(iid)}, "model": "tiny-random",
            "ood": [{"name": "hans", "source": "local", "path": str(hans_tsv(tmp_path / "h.tsv")),
                     "collapse": {"entailment": "entailment", "neutral": "non-entailment"}}]}
    with pytest.raises(ConfigError, match=r"field 'tasks\.t\.ood\[0\]\.collapse': the model's class 'contradiction'"):
        check_sources({"t": task})
    task["ood"][0]["collapse"] = HANS_COLLAPSE
    check_sources({"t": task})
    plain = dict(task["ood"][0], collapse=None, label_map={"entailment": "entailment"})
    with pytest.raises(ConfigError, match=r"'tasks\.t\.ood\[0\]\.label_map': 'entailment' is not a label of the task"):
        check_sources({"t": dict(task, ood=[plain])})
    with pytest.raises(ConfigError, match="field 'tasks.t.iid_metric': 'mcc' is not a metric of task type 'nli'"):
        check_sources({"t": dict(task, iid_metric="mcc")})
    cola = tmp_path / "cola.tsv"
    pd.DataFrame({"text": ["The cat sat."], "label": [1]}).to_csv(cola, sep="\t", index=False)
    check_sources({"t": {"type": "acceptability", "iid": {"source": str(cola)}, "model": "tiny-random",
                         "iid_metric": "mcc"}})
    with pytest.raises(ConfigError, match="'tasks.t.iid_metric': 'f1' is not a metric of task type 'acceptability'"):
        check_sources({"t": {"type": "acceptability", "iid": {"source": str(cola)}, "model": "tiny-random",
                             "iid_metric": "f1"}})
    with pytest.raises(ConfigError, match="'tasks.t.ood_metric': 'f1' is not a metric of task type 'acceptability'"):
        check_sources({"t": {"type": "acceptability", "iid": {"source": str(cola)}, "model": "tiny-random",
                             "ood_metric": "f1"}})
    with pytest.raises(DataError, match="unexpected column: an acceptability task's inputs are single texts"):
        check_sources({"t": {"type": "acceptability", "iid": {"source": str(iid)}, "model": "tiny-random"}})


def test_ood_metric_keeps_the_one_metric_glue_x_reports_and_tests_it():
    """``tasks.<id>.ood_metric: mcc`` (GLUE-X's CoLA score alone): the OOD cells are the MCC, not the mean of
    MCC and accuracy, and the test against the IID model is the paired randomization of the MCC."""
    from beluga.analyses import ood_report
    from beluga.analyses.ood_scores import evaluate, long_scores

    rng = np.random.default_rng(3)
    gold = rng.integers(0, 2, 60)

    def outcomes(flip: float) -> pd.DataFrame:
        pred = np.where(rng.random(60) < flip, 1 - gold, gold)
        return pd.DataFrame({"split": ["iid_test"] * 30 + ["ood:gt"] * 30, "case_id": [f"e{i}" for i in range(60)],
                             "pred_label": pred, "gold_label": gold, "correct": pred == gold})

    runs = [{"configuration": c, "method": "vanilla", "path": f"{c}.parquet", "outcomes": outcomes(f)}
            for c, f in (("iid", 0.2), ("iid_to_t", 0.4))]
    mean = long_scores(runs, ["gt"], "cola", "acceptability")
    only = long_scores(runs, ["gt"], "cola", "acceptability", ood_metric="mcc")
    assert set(mean["metric"]) == {"mcc", "accuracy"} and set(only["metric"]) == {"mcc"}
    assert only.reset_index(drop=True).equals(mean[mean["metric"] == "mcc"].reset_index(drop=True))
    res = evaluate(runs, ["gt"], "cola", "acceptability", R=200, metric="mcc")
    b, s = runs[0]["outcomes"], runs[1]["outcomes"]
    ood = s["split"] == "ood:gt"
    assert res.table.set_index("configuration").at["iid_to_t", "gt"] == pytest.approx(
        100 * mcc(s.loc[ood, "pred_label"], s.loc[ood, "gold_label"]))
    sig = res.sig.set_index("configuration")
    assert sig.at["iid_to_t", "test"] == "randomization"
    assert sig.at["iid_to_t", "delta"] == pytest.approx(
        mcc(s.loc[ood, "pred_label"], gold[30:]) - mcc(b.loc[ood, "pred_label"], gold[30:]))
    md = ood_report.ood_table_markdown(res.table, ["gt"], "cola", 0.05, "none", task_type="acceptability",
                                       metric="mcc")
    assert "score = the task's mcc" in md and "randomization test of the cell's mcc" in md
