"""End to end (issue 40): one snakemake run of an ``nli``, an ``nli_binary`` and an ``acceptability`` task
(tiny random BERT, local i.i.d. TSVs, tiny project-format suites built here) through the whole default target:
BELUGA folds IID→T on the seen and func partitions (NLI: the learning rate selected on T_val by the reference
objective), scores, significance and intervals, diagnostics, Table 3, and the OOD evaluation on local sets,
among them a two-class HANS-shaped set scored through the collapse of the model's three classes (neutral +
contradiction -> non-entailment). One run, read by every test here."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import pipeline
from staging import build

from beluga.heads.classification import mcc
from beluga.suites.format import save_suite

N = 8   # cases per functionality
HANS_COLLAPSE = {"entailment": "entailment", "neutral": "non-entailment", "contradiction": "non-entailment"}
NAMES = ["Ann", "Bob", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hal", "Ivy", "Jon", "Kim", "Lou"]
THINGS = ["apples", "books", "cars", "dogs", "eggs", "films", "games", "hats", "inks", "jams", "keys", "lamps"]


def _row(cid, func, cap, ttype, inputs, labels=None, expect="eq", params=None, inputs_b=None, agg=None):
    return {"case_id": cid, "functionality": func, "capability": cap, "test_type": ttype, "inputs": list(inputs),
            "inputs_b": list(inputs_b) if inputs_b is not None else None, "labels": labels, "expect": expect,
            "expect_params": json.dumps(params or {}),
            "agg_fn": agg or ("all" if ttype == "MFT" else "all_except_first"), "meta": None}


def nli_suite() -> pd.DataFrame:
    """Negation (MFT: contradiction), subsequence (MFT: entailment), a typo in the premise (INV) and a
    negated hypothesis (a labelled DIR: entailment -> contradiction), premise / hypothesis pairs."""
    rows = []
    for i in range(N):
        a, t = NAMES[i], THINGS[i]
        rows.append(_row(f"neg-{i}", "negation", "Negation", "MFT", [f"{a} likes {t}."], [2],
                         inputs_b=[f"{a} does not like {t}."]))
        rows.append(_row(f"sub-{i}", "subsequence", "Taxonomy", "MFT", [f"{a} and {NAMES[i + 1]} bought {t}."], [0],
                         inputs_b=[f"{a} bought {t}."]))
        rows.append(_row(f"typo-{i}", "typos", "Robustness", "INV", [f"{a} sells {t}.", f"{a} slels {t}."],
                         expect="inv", params={"tolerance": 0.1},
                         inputs_b=[f"{a} sells things.", f"{a} sells things."]))
        rows.append(_row(f"dir-{i}", "negated hypothesis", "Negation", "DIR", [f"{a} owns {t}.", f"{a} owns {t}."],
                         [0, 2], inputs_b=[f"{a} owns {t}.", f"{a} does not own {t}."]))
    return pd.DataFrame(rows)


def rte_suite() -> pd.DataFrame:
    """The NLI suite for a two-class (RTE / QNLI) model: contradiction is ``not entailment`` (1)."""
    df = nli_suite()
    df["labels"] = [None if v is None else [0 if y == 0 else 1 for y in v] for v in df["labels"]]
    return df


def cola_suite() -> pd.DataFrame:
    """Agreement (MFT: unacceptable), word order (MFT: unacceptable), canonical sentences (MFT: acceptable)
    and a change of name (INV), single sentences."""
    rows = []
    for i in range(N):
        a, t = NAMES[i], THINGS[i]
        rows.append(_row(f"agr-{i}", "agreement", "Syntax", "MFT", [f"{a} like {t}."], [0]))
        rows.append(_row(f"ord-{i}", "word order", "Syntax", "MFT", [f"{t} likes {a} the."], [0]))
        rows.append(_row(f"ok-{i}", "canonical", "Vocabulary", "MFT", [f"{a} likes {t}."], [1]))
        rows.append(_row(f"name-{i}", "names", "Robustness", "INV", [f"{a} reads {t}.", f"{NAMES[i + 2]} reads {t}."],
                         expect="inv", params={"tolerance": 0.1}))
    return pd.DataFrame(rows)


def nli_table(n: int, prefix: str, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    hyp = {0: "{a} has {t}.", 1: "{a} wants more {t}.", 2: "{a} has no {t}."}
    rows = [(f"{prefix}{i:03d}", f"{NAMES[i % 12]} has {THINGS[(i * 5) % 12]} and a bag.",
             hyp[int(y)].format(a=NAMES[i % 12], t=THINGS[(i * 5) % 12]), int(y)) for i, y in enumerate(labels)]
    return pd.DataFrame(rows, columns=["id", "text", "text_b", "label"])


def cola_table(n: int, prefix: str, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    rows = [(f"{prefix}{i:03d}", (f"{NAMES[i % 12]} reads {THINGS[(i * 7) % 12]}." if y else
                                  f"{THINGS[(i * 7) % 12]} {NAMES[i % 12]} reads the."), int(y))
            for i, y in enumerate(labels)]
    return pd.DataFrame(rows, columns=["id", "text", "label"])


def hans_table(n: int) -> pd.DataFrame:
    """HANS's shape: premise / hypothesis and the set's own two labels by name."""
    rows = [(f"hans{i:03d}", f"The {THINGS[i % 12]} near {NAMES[i % 12]} fell.",
             f"{NAMES[i % 12]} fell." if i % 2 else f"The {THINGS[i % 12]} fell.",
             "non-entailment" if i % 2 else "entailment") for i in range(n)]
    return pd.DataFrame(rows, columns=["id", "text", "text_b", "label"])


def config(tmp) -> dict:
    files = {}
    for name, df in (("mnli", nli_table(80, "m", 1)), ("mnli_mm", nli_table(12, "mm", 2)), ("hans", hans_table(12)),
                     ("cola", cola_table(80, "c", 3)), ("cola_ood", cola_table(12, "co", 4))):
        files[name] = tmp / f"{name}.tsv"
        df.to_csv(files[name], sep="\t", index=False)
    save_suite(nli_suite(), tmp / "nli_suite.parquet", task="nli")
    save_suite(cola_suite(), tmp / "cola_suite.parquet", task="acceptability")
    save_suite(rte_suite(), tmp / "rte_suite.parquet", task="nli_binary")
    rte = nli_table(80, "r", 5)
    rte["label"] = (rte["label"] > 0).astype(int)          # RTE's numbers: 0 entailment, 1 not entailment
    files["rte"] = tmp / "rte.tsv"
    rte.to_csv(files["rte"], sep="\t", index=False)
    iid = {"n_train": 40, "n_val": 10, "n_test": 30, "seed": 42}
    # the negation stress test in Liu et al.'s released shape (JSON lines): 16 to train, 12 to evaluate, and
    # their released sample of dose 5 (lines 2-6 of the training split)
    liu = tmp / "data" / "ood" / "naik" / "liu2019" / "negation_adversary"
    for split, n in (("train", 16), ("dev_matched", 12)):
        build(tmp / "data", f"ood/naik/liu2019/negation_adversary/multinli_0.9_{split}_negation_adversary.jsonl", n)
    lines = (liu / "multinli_0.9_train_negation_adversary.jsonl").read_text().splitlines()
    (liu / "multinli_0.9_train_negation_adversary.5.jsonl").write_text("\n".join(lines[1:6]) + "\n")
    naik = {"source": "naik", "set": "negation", "path": str(tmp / "data" / "ood" / "naik")}
    return {
        "results": "results", "seed": 3,
        "tasks": {
            "nli": {"type": "nli", "model": "tiny-random", "suite": {"path": str(tmp / "nli_suite.parquet")},
                    "selection": {"grid": {"lr": [1.0e-3, 1.0e-5]}, "objective": "reference"},
                    "iid": {"source": str(files["mnli"]), **iid},
                    "ood": [{"name": "mnli-mm", "source": "local", "path": str(files["mnli_mm"])},
                            {"name": "hans", "source": "local", "path": str(files["hans"]),
                             "collapse": HANS_COLLAPSE},
                            {"name": "negation", "split": "evaluation", **naik},
                            {"name": "negation_train", "split": "train", **naik}]},
            "cola": {"type": "acceptability", "model": "tiny-random",
                     "suite": {"path": str(tmp / "cola_suite.parquet")}, "iid": {"source": str(files["cola"]), **iid},
                     "ood": [{"name": "cola-ood", "source": "local", "path": str(files["cola_ood"])}]},
            "rte": {"type": "nli_binary", "model": "tiny-random", "suite": {"path": str(tmp / "rte_suite.parquet")},
                    "iid": {"source": str(files["rte"]), **iid}},
        },
        "split": {"fractions": [0.5, 0.25, 0.25], "seed": 123},
        "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen", "func"],
        "training": {"max_length": 32, "iid": {"lr": 1.0e-3, "batch_size": 8, "epochs": 1},
                     "suite": {"lr": 1.0e-3, "batch_size": 4, "epochs": 1}, "iid_in_mix": 16},
        "predict": {"batch_size": 32},
        "statistics": {"randomization_R": 200, "bootstrap_R": 100},
        # inoculation by fine-tuning on the stress test (seed 001's own experiment, in miniature): Liu et al.'s
        # released sample of dose 5 and all (the whole training split), each scored on the evaluation split
        "inoculation": {"enabled": True, "tasks": ["nli"], "units": [], "doses": [5, "all"], "lrs": [1.0e-3],
                        "max_epochs": 2, "patience": 1, "select_on": "test", "samples": "released",
                        "challenge": [{"set": "negation", "train": "negation_train"}]},
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nli")
    cfg = config(tmp)
    cfg_file = tmp / "nli.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp / "run"
    pipeline(wd, "--cores", "2", configfiles=(cfg_file,))
    return wd, cfg


def test_folds_scores_and_table3(run):
    wd, _ = run
    for task, metrics in (("nli", ["iid_accuracy"]), ("cola", ["iid_mcc", "iid_accuracy"])):
        res = wd / "results" / task
        scores = pd.read_csv(res / "scores" / "scores.csv")
        assert list(scores["configuration"]) == ["iid", "iid_to_t"]
        assert [c for c in scores.columns if c.startswith("iid_") and c != "iid_score"
                and not c.endswith(("_sd", "_min", "_max"))] == metrics
        row = scores.set_index("configuration").loc["iid_to_t"]
        assert 0 <= row["s_seen"] <= 1 and 0 <= row["s_func"] <= 1 and not np.isnan(row["G_func"])
        # func: one model per held-out functionality, each scored on its own
        rates = pd.read_csv(res / "scores" / "pass_rates.csv")
        func = rates[rates["scenario"] == "func"]
        assert len(func) == 4 and func["fold"].is_unique and set(func["functionality"]) == \
            set(rates.loc[rates["scenario"] == "seen", "functionality"])
        assert (res / "stats" / "significance.csv").stat().st_size > 0
        assert (res / "diagnostics" / "diagnostics.md").stat().st_size > 0
        md = (res / "scores" / "scores.md").read_text()
        assert "iid_score of this task:" in md
    table3 = (wd / "results" / "table3" / "table3.md").read_text()
    assert "| NLI · i.i.d. | NLI · G_seen | NLI · G_func |" in table3
    assert "| COLA · i.i.d. | COLA · iid_mcc | COLA · iid_accuracy |" in table3
    assert "F1, MCC or the mean of two metrics, paired approximate randomization" in table3


def test_selection_with_the_reference_objective(run):
    """NLI's counterpart of the reference code's objective (MFT accuracy + INV pass + DIR pass) on T_val."""
    wd, _ = run
    trials = sorted((wd / "results" / "nli" / "selection").rglob("trials/*.json"))
    assert len(trials) >= 2
    for path in trials:
        rec = json.loads(path.read_text())
        assert rec["objective"] == "reference"
        assert rec["metric"] == "MFT accuracy + INV pass + DIR pass on T_val (the project's counterpart)"
        assert set(rec["terms"]) == {"mft", "inv", "dir"}
        present = [v for v in rec["terms"].values() if v is not None]
        assert rec["score"] == pytest.approx(sum(present)) and len(present) == 3
    selected = list((wd / "results" / "nli" / "selection").rglob("selected.json"))
    assert selected


def test_nli_binary_trains_a_two_class_model(run):
    wd, _ = run
    res = wd / "results" / "rte"
    model = res / "models" / "iid" / "vanilla" / "standard" / "all"
    assert json.loads((model / "config.json").read_text())["id2label"] == {"0": "entailment", "1": "not entailment"}
    preds = pd.read_parquet(res / "predictions" / "iid_to_t" / "vanilla" / "seen" / "all.parquet")
    assert {len(p) for p in preds["probs"]} == {2}
    scores = pd.read_csv(res / "scores" / "scores.csv").set_index("configuration")
    out = pd.read_parquet(res / "outcomes" / "iid_to_t" / "vanilla" / "seen" / "all.parquet")
    iid = out[out["split"] == "iid_test"]
    assert scores.at["iid_to_t", "iid_score"] == pytest.approx(iid["correct"].astype(float).mean())
    assert "iid_score of this task: NLI_BINARY: accuracy" in (res / "scores" / "scores.md").read_text()


def test_inoculation_on_a_stress_test(run):
    """The NLI model fine-tuned on the negation stress test's training split -- dose 5 on Liu et al.'s released
    sample of it, all on the whole split (16 examples here) -- scored on the evaluation split by accuracy and on
    the original test set."""
    wd, _ = run
    res = wd / "results" / "nli" / "inoculation"
    runs = sorted(p.relative_to(res / "runs").as_posix() for p in (res / "runs").rglob("*.json"))
    assert runs == ["set-negation/5/lr0.001.json", "set-negation/all/lr0.001.json"]
    rec = json.loads((res / "runs" / "set-negation" / "all" / "lr0.001.json").read_text())
    assert rec["n_cases"] == 16 and rec["challenge_set"] == "negation" and rec["sample"] == "all"
    rec5 = json.loads((res / "runs" / "set-negation" / "5" / "lr0.001.json").read_text())
    assert rec5["n_cases"] == 5 and rec5["sample"] == "released"
    assert rec5["sample_file"].endswith("liu2019/negation_adversary/multinli_0.9_train_negation_adversary.5.jsonl")
    cases = pd.read_parquet(res / "runs" / "set-negation" / "all" / "lr0.001.parquet")
    assert (cases["split"] == "ood:negation").sum() == 12 and (cases["split"] == "iid_test").sum() == 30
    table = pd.read_csv(res / "table.csv", keep_default_na=False)
    assert list(table["dose"]) == ["0", "5", "all"] and set(table["measure"]) == {"accuracy"}
    assert list(table["sample"]) == ["", "released", "all"] and list(table["n_cases"]) == [0, 5, 16]
    outcomes = pd.read_csv(res / "outcomes.csv")
    assert list(outcomes["unit"]) == ["set-negation"] and outcomes["reason"].str.len().min() > 10
    md = (res / "inoculation.md").read_text()
    assert "optimistic" in md                                        # select_on: test, as the seed, said so
    assert "Dose samples: negation trained on Liu et al.'s released samples" in md
    assert not (wd / "results" / "cola" / "inoculation").exists()    # inoculation.tasks: nli only


def test_the_iid_scores_are_the_metrics_of_the_outcomes(run):
    wd, _ = run
    out = pd.read_parquet(wd / "results" / "cola" / "outcomes" / "iid_to_t" / "vanilla" / "seen" / "all.parquet")
    iid = out[out["split"] == "iid_test"]
    assert len(iid) == 30
    scores = pd.read_csv(wd / "results" / "cola" / "scores" / "scores.csv").set_index("configuration")
    want = mcc(iid["pred_label"].astype(int), iid["gold_label"].astype(int))
    assert scores.at["iid_to_t", "iid_mcc"] == pytest.approx(want)
    acc = float(iid["correct"].astype(float).mean())
    assert scores.at["iid_to_t", "iid_score"] == pytest.approx((want + acc) / 2)     # mean: MCC and accuracy
    nli = pd.read_parquet(wd / "results" / "nli" / "predictions" / "iid" / "vanilla" / "standard" / "all.parquet")
    assert {len(p) for p in nli["probs"]} == {3}                                      # a three-class head
    model = wd / "results" / "nli" / "models" / "iid" / "vanilla" / "standard" / "all"
    assert json.loads((model / "config.json").read_text())["id2label"] == \
        {"0": "entailment", "1": "neutral", "2": "contradiction"}
    assert "task type `nli`: natural language inference" in (model / "README.md").read_text()


def test_significance_uses_the_test_that_suits_the_metric(run):
    wd, _ = run
    # NLI: accuracy, the exact test on the discordant examples; ACCEPTABILITY: the mean of MCC and
    # accuracy, paired randomization
    for task, test in (("nli", "binomial"), ("cola", "randomization")):
        sig = pd.read_csv(wd / "results" / task / "stats" / "significance.csv").set_index("column")
        assert sig.at["iid", "test"] == test, task


def test_ood_sets_with_and_without_collapse(run):
    wd, _ = run
    res = wd / "results" / "nli"
    hans = pd.read_parquet(res / "ood" / "data" / "hans.parquet")
    assert sorted(set(hans["label"])) == [0, 1] and len(hans) == 12
    mm = pd.read_parquet(res / "ood" / "data" / "mnli-mm.parquet")
    assert set(mm["label"]) <= {0, 1, 2}
    for model in ("iid/vanilla/standard/all", "iid_to_t/vanilla/seen/all"):
        preds = pd.read_parquet(res / "predictions" / f"{model}.parquet")
        out = pd.read_parquet(res / "outcomes" / f"{model}.parquet")
        p = preds[preds["split"] == "ood:hans"].set_index("case_id")
        o = out[out["split"] == "ood:hans"].set_index("case_id").loc[p.index]
        argmax = np.array([int(np.argmax(x)) for x in p["probs"]])
        assert list(o["pred_label"]) == list(np.array([0, 1, 1])[argmax])        # the collapsed prediction
        gold = hans.set_index("example_id").loc[p.index, "label"]
        assert list(o["gold_label"]) == list(gold)
    scores = pd.read_csv(res / "ood" / "scores.csv")
    assert set(scores.loc[scores["dataset"] == "hans", "metric"]) == {"accuracy"}
    table = pd.read_csv(res / "ood" / "ood_table.csv")
    assert {"hans", "mnli-mm"} <= set(table.columns)
    cola = pd.read_csv(wd / "results" / "cola" / "ood" / "scores.csv")
    assert set(cola.loc[cola["dataset"] == "cola-ood", "metric"]) == {"mcc", "accuracy"}
