"""The standalone tools (``python -m beluga score`` and ``python -m beluga test``) for the task types of
issue 40: a SIMILARITY suite scored from predicted scores in every layout the tools read probabilities in
(Parquet, CSV, TSV, JSONL and one score per line), the one-line refusals of probabilities for a regression
suite and of scores for a classifier's; ``test`` predicting with a regression model (tiny-random) and its
predictions scoring the same through ``score``; NLI, two-class NLI and acceptability through both tools, their
classes read by name."""

import json

import numpy as np
import pandas as pd
import pytest

from beluga.cli import main
from beluga.core.tasks import get_task_type
from beluga.model.modeling import TINY_RANDOM, load_model, save_model, set_seed
from beluga.suites.format import save_suite


def _case(cid, func, test_type, inputs, expect, params=None, labels=None, pair=True):
    return {"case_id": cid, "functionality": func, "capability": "C", "test_type": test_type, "inputs": inputs,
            "inputs_b": [f"{t} again" for t in inputs] if pair else None, "labels": labels, "answers": None,
            "expect": expect, "expect_params": json.dumps(params or {}),
            "agg_fn": "all" if test_type == "MFT" else "all_except_first", "meta": None}


def similarity_suite() -> pd.DataFrame:
    return pd.DataFrame([
        _case("near-0", "paraphrase high", "MFT", ["a cat sat"], "score_near", {"val": 4.5}),
        _case("near-1", "paraphrase high", "MFT", ["a dog ran"], "score_near", {"val": 4.5}),
        _case("low-0", "unrelated low", "MFT", ["x y"], "score_between", {"max": 1.0}),
        _case("inv-0", "typos", "INV", ["a cat", "a cta", "a act"], "score_inv", {"tolerance": 0.5}),
        _case("dir-0", "negation lowers", "DIR", ["it is", "it is not"], "score_down", {"margin": 1.0}),
        _case("dir-1", "negation lowers", "DIR", ["he is", "he is not"], "score_down", {"margin": 1.0}),
    ])


#: a score per (case, input) and the status each case gets from it, by the table of beluga.heads.score.cases
SCORES = {("near-0", 0): 4.2, ("near-1", 0): 3.9, ("low-0", 0): 0.5, ("inv-0", 0): 3.0, ("inv-0", 1): 3.5,
          ("inv-0", 2): 3.6, ("dir-0", 0): 4.0, ("dir-0", 1): 2.5, ("dir-1", 0): 0.0, ("dir-1", 1): 0.0}
STATUS = {"near-0": "pass", "near-1": "fail", "low-0": "pass", "inv-0": "fail", "dir-0": "pass",
          "dir-1": "filtered"}


def score_rows() -> pd.DataFrame:
    return pd.DataFrame([(c, j, s) for (c, j), s in SCORES.items()], columns=["case_id", "input_idx", "score"])


def _score(tmp_path, suite: str, preds, *extra, out="out") -> tuple[int, str]:
    rc = main(["score", "--suite", str(suite), "--predictions", str(preds), "--out", str(tmp_path / out), *extra])
    return rc


def _err(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.fixture
def sim_suite(tmp_path):
    path = tmp_path / "sim.parquet"
    save_suite(similarity_suite(), path)
    return path


# --------------------------------------------------------------------------- score: similarity from scores


def test_score_scores_a_similarity_suite_by_hand(tmp_path, sim_suite):
    score_rows().to_parquet(tmp_path / "p.parquet")
    assert _score(tmp_path, sim_suite, tmp_path / "p.parquet", "--task", "similarity") == 0
    cases = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert dict(zip(cases["case_id"], cases["status"])) == STATUS
    why = dict(zip(cases["case_id"], cases["filter_reason"]))
    assert why["dir-1"] == "original's score <= 0, the range's bound (score_down)" and pd.isna(why["dir-0"])
    funcs = pd.read_csv(tmp_path / "out" / "functionalities.csv").set_index("functionality")
    assert funcs.index.tolist() == ["paraphrase high", "unrelated low", "typos", "negation lowers"]
    assert (funcs.at["paraphrase high", "n_scored"], funcs.at["paraphrase high", "n_failed"]) == (2, 1)
    assert (funcs.at["negation lowers", "n_scored"], funcs.at["negation lowers", "n_filtered"]) == (1, 1)
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["arguments"]["task"] == "similarity" and run["labels"] == {}


def _layouts(tmp_path, suite: pd.DataFrame) -> dict[str, list[str]]:
    """The same scores in every layout: {file: extra arguments}."""
    rows = score_rows()
    rows.to_csv(tmp_path / "p.csv", index=False)
    rows.to_csv(tmp_path / "p.tsv", sep="\t", index=False)
    rows.to_json(tmp_path / "p.jsonl", orient="records", lines=True)
    # one score per line in the export's order (what `suite export` writes), as text
    order = [(str(r.case_id), j) for r in suite.itertuples() for j in range(len(r.inputs))]
    (tmp_path / "p.txt").write_text("".join(f"{SCORES[k]}\n" for k in order) + "\n")
    return {"p.csv": [], "p.tsv": [], "p.jsonl": [], "p.txt": ["--format", "score"]}


def test_every_layout_scores_the_same(tmp_path, sim_suite):
    score_rows().to_parquet(tmp_path / "p.parquet")
    assert _score(tmp_path, sim_suite, tmp_path / "p.parquet", "--task", "similarity", out="ref") == 0
    ref = pd.read_parquet(tmp_path / "ref" / "cases.parquet")
    for name, extra in _layouts(tmp_path, similarity_suite()).items():
        rc = _score(tmp_path, sim_suite, tmp_path / name, "--task", "similarity", *extra, out=f"out-{name}")
        assert rc == 0, name
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / f"out-{name}" / "cases.parquet"), ref)


def test_suite_export_then_score_lines(tmp_path, sim_suite):
    """``suite export`` writes the order the score lines follow."""
    assert main(["suite", "export", "--suite", str(sim_suite), "--out", str(tmp_path / "x.tsv"),
                 "--task", "similarity"]) == 0
    rows = pd.read_csv(tmp_path / "x.tsv", sep="\t")
    assert list(rows.columns) == ["case_id", "input_idx", "text", "text_b"]
    keys = list(zip(rows["case_id"], rows["input_idx"]))
    (tmp_path / "s.txt").write_text("".join(f"{SCORES[k]}\n" for k in keys))
    assert _score(tmp_path, sim_suite, tmp_path / "s.txt", "--task", "similarity", "--format", "score") == 0
    cases = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert dict(zip(cases["case_id"], cases["status"])) == STATUS


def _probs_file(tmp_path, suite: pd.DataFrame, name: str, k: int = 2) -> pd.DataFrame:
    rows = pd.DataFrame([(str(r.case_id), j, [1.0 / k] * k) for r in suite.itertuples() for j in range(len(r.inputs))],
                        columns=["case_id", "input_idx", "probs"])
    if name.endswith(".parquet"):
        rows.to_parquet(tmp_path / name)
    else:
        rows.assign(probs=[" ".join(map(str, p)) for p in rows["probs"]]).to_csv(tmp_path / name, index=False)
    return rows


@pytest.mark.parametrize("name", ["probs.parquet", "probs.csv"])
def test_probabilities_for_a_similarity_suite_are_refused_in_one_line(tmp_path, sim_suite, capsys, name):
    _probs_file(tmp_path, similarity_suite(), name)
    assert _score(tmp_path, sim_suite, tmp_path / name, "--task", "similarity") == 2
    err = _err(capsys)
    assert name in err and "field 'score'" in err and "class predictions" in err and "'similarity'" in err
    assert not (tmp_path / "out").exists()


def test_checklist_line_formats_are_refused_for_a_similarity_suite(tmp_path, sim_suite, capsys):
    (tmp_path / "p.txt").write_text("0.5 0.5\n" * len(SCORES))
    assert _score(tmp_path, sim_suite, tmp_path / "p.txt", "--task", "similarity", "--format", "softmax") == 2
    err = _err(capsys)
    assert "field '--format'" in err and "softmax is one of CheckList's class-prediction" in err \
        and "--format score" in err
    # two numbers on a score line are refused, naming the line
    (tmp_path / "p.txt").write_text("1.0\n0.5 0.5\n" + "1.0\n" * (len(SCORES) - 2))
    assert _score(tmp_path, sim_suite, tmp_path / "p.txt", "--task", "similarity", "--format", "score") == 2
    err = _err(capsys)
    assert "line 2: field 'score'" in err and "not one number" in err and "class probabilities" in err


def _at(d: pd.DataFrame, i: int, value) -> pd.DataFrame:
    return d.assign(score=d["score"].astype(object).where(d.index != i, value))


@pytest.mark.parametrize("mutate, words", [
    (lambda d: _at(d, 3, "high"), "line 5: field 'score': 'high' is not a number"),
    (lambda d: _at(d, 0, "inf"), "line 2: field 'score': 'inf' is not finite"),
    (lambda d: _at(d, 1, ""), "line 3: field 'score': '' is not a number"),
    (lambda d: pd.concat([d, d.iloc[[1]]]), "field 'case_id'/'input_idx': case 'near-1', input 0 again"),
    (lambda d: d.drop(columns="score"), "field 'score': column missing"),
])
def test_bad_score_tables_are_refused_in_one_line(tmp_path, sim_suite, capsys, mutate, words):
    mutate(score_rows()).to_csv(tmp_path / "p.csv", index=False)
    assert _score(tmp_path, sim_suite, tmp_path / "p.csv", "--task", "similarity") == 2
    err = _err(capsys)
    assert "p.csv" in err and words in err, err


def test_bad_score_files_are_refused_in_one_line(tmp_path, sim_suite, capsys):
    rows = score_rows()
    rows.assign(score=rows["score"].where(rows.index != 2, np.inf)).to_parquet(tmp_path / "inf.parquet")
    assert _score(tmp_path, sim_suite, tmp_path / "inf.parquet", "--task", "similarity") == 2
    assert "row 2: field 'score': inf is not finite" in _err(capsys)
    (tmp_path / "short.txt").write_text("1.0\n2.0\n")
    assert _score(tmp_path, sim_suite, tmp_path / "short.txt", "--task", "similarity", "--format", "score") == 2
    assert f"2 line(s) for the {len(SCORES)} inputs of the export" in _err(capsys)
    rows.to_csv(tmp_path / "keyed.txt", index=False)
    assert _score(tmp_path, sim_suite, tmp_path / "keyed.txt", "--task", "similarity", "--format", "score") == 2
    assert "looks like a keyed CSV table" in _err(capsys)
    rows.to_parquet(tmp_path / "p.parquet")
    assert _score(tmp_path, sim_suite, tmp_path / "p.parquet", "--task", "similarity",
                  "--label-order", "a,b") == 2
    assert "field '--label-order'" in _err(capsys)
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- score: a classifier's suite


def nli_suite() -> pd.DataFrame:
    ent, con = 0, 2     # MNLI's numbering (beluga.core.tasks.NLI)
    return pd.DataFrame([
        _case("e-0", "entailed", "MFT", ["a man sleeps"], "eq", labels=[ent]),
        _case("c-0", "contradicted", "MFT", ["a man is awake"], "eq", labels=[con]),
        _case("n-0", "not entailed", "MFT", ["a tall man"], "not_eq", {"val": ent}),
        _case("i-0", "typos", "INV", ["a man", "a mna"], "inv"),
    ])


NLI_PROBS = {("e-0", 0): [0.8, 0.1, 0.1], ("c-0", 0): [0.6, 0.1, 0.3], ("n-0", 0): [0.2, 0.5, 0.3],
             ("i-0", 0): [0.1, 0.7, 0.2], ("i-0", 1): [0.1, 0.2, 0.7]}
NLI_STATUS = {"e-0": "pass", "c-0": "fail", "n-0": "pass", "i-0": "fail"}


def test_scores_for_a_classifier_suite_are_refused_in_one_line(tmp_path, capsys):
    save_suite(nli_suite(), tmp_path / "nli.parquet")
    rows = pd.DataFrame([(c, j, 1.0) for (c, j), p in NLI_PROBS.items() if p is not None],
                        columns=["case_id", "input_idx", "score"])
    for name in ("s.parquet", "s.csv"):
        (rows.to_parquet if name.endswith("parquet") else lambda p: rows.to_csv(p, index=False))(tmp_path / name)
        assert _score(tmp_path, tmp_path / "nli.parquet", tmp_path / name, "--task", "nli") == 2
        err = _err(capsys)
        assert name in err and "field 'probs'" in err and "holds scores" in err and "classifier" in err, err
    (tmp_path / "s.txt").write_text("1.0\n" * len(rows))
    assert _score(tmp_path, tmp_path / "nli.parquet", tmp_path / "s.txt", "--task", "nli", "--format", "score") == 2
    assert "field '--format': score lines are a regression model's predicted scores" in _err(capsys)


@pytest.mark.parametrize("order", [None, "contradiction,entailment,neutral"])
def test_nli_probabilities_are_read_by_class_name(tmp_path, capsys, order):
    save_suite(nli_suite(), tmp_path / "nli.parquet")
    names = ["entailment", "neutral", "contradiction"]
    perm = [names.index(n) for n in (order or ",".join(names)).split(",")]   # column i holds class perm[i]
    rows = pd.DataFrame([(c, j, [p[k] for k in perm]) for (c, j), p in NLI_PROBS.items() if p is not None],
                        columns=["case_id", "input_idx", "probs"])
    rows.to_parquet(tmp_path / "p.parquet")
    extra = ["--label-order", order] if order else []
    assert _score(tmp_path, tmp_path / "nli.parquet", tmp_path / "p.parquet", "--task", "nli", *extra) == 0
    cases = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert dict(zip(cases["case_id"], cases["status"])) == NLI_STATUS


@pytest.mark.parametrize("task, names", [("nli_binary", ["entailment", "not entailment"]),
                                         ("acceptability", ["unacceptable", "acceptable"])])
def test_two_class_types_score_by_class_name(tmp_path, task, names):
    pair = task == "nli_binary"
    suite = pd.DataFrame([_case("a-0", "first class", "MFT", ["x y"], "eq", labels=[0], pair=pair),
                          _case("b-0", "second class", "MFT", ["y x"], "eq", labels=[1], pair=pair)])
    save_suite(suite, tmp_path / "s.parquet")
    p = {"a-0": [0.7, 0.3], "b-0": [0.6, 0.4]}   # in the task's order: a-0 right, b-0 wrong
    for order, cols in ((None, [0, 1]), (",".join(n.replace(" ", "_") for n in names[::-1]), [1, 0])):
        rows = pd.DataFrame([(c, 0, [v[k] for k in cols]) for c, v in p.items()],
                            columns=["case_id", "input_idx", "probs"])
        rows.to_parquet(tmp_path / "p.parquet")
        out = f"out-{order is None}"
        extra = ["--label-order", order] if order else []
        assert _score(tmp_path, tmp_path / "s.parquet", tmp_path / "p.parquet", "--task", task, *extra, out=out) == 0
        cases = pd.read_parquet(tmp_path / out / "cases.parquet")
        assert dict(zip(cases["case_id"], cases["status"])) == {"a-0": "pass", "b-0": "fail"}, order


# --------------------------------------------------------------------------- test: tiny-random models


def _saved(tmp_path, task: str):
    ttype = get_task_type(task)
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, ttype.num_model_labels, head=ttype.head, task_type=task)
    out = tmp_path / f"model-{task}"
    save_model(model, tok, out, task_type=task)
    return out


def test_test_predicts_scores_with_a_regression_model_and_score_agrees(tmp_path, sim_suite, capsys):
    model = _saved(tmp_path, "similarity")
    capsys.readouterr()
    # the task comes from the model (config.json records it)
    assert main(["test", "--model", str(model), "--suite", str(sim_suite), "--out", str(tmp_path / "t"),
                 "--max-length", "32"]) == 0
    text = capsys.readouterr().out
    assert "similarity" in text and "negation lowers" in text
    preds = pd.read_parquet(tmp_path / "t" / "predictions.parquet")
    assert "score" in preds.columns and "probs" not in preds.columns
    assert len(preds) == len(SCORES) and np.isfinite(preds["score"]).all()
    assert preds["input_b"].tolist()[0] == "a cat sat again"
    tested = pd.read_parquet(tmp_path / "t" / "cases.parquet")
    # the same predictions through `score` give the same statuses
    assert _score(tmp_path, sim_suite, tmp_path / "t" / "predictions.parquet") == 2   # a bare suite: no task
    assert "cannot infer the task" in _err(capsys)
    assert _score(tmp_path, sim_suite, tmp_path / "t" / "predictions.parquet", "--task", "similarity") == 0
    scored = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert dict(zip(tested["case_id"], tested["status"])) == dict(zip(scored["case_id"], scored["status"]))
    summary = (tmp_path / "t" / "summary.md").read_text()
    assert "expected: score\\_down margin=1.0" in summary and "→ **score " in summary
    # --label-order means nothing for a regression
    assert main(["test", "--model", str(model), "--suite", str(sim_suite), "--out", str(tmp_path / "t2"),
                 "--max-length", "32", "--label-order", "a,b"]) == 2
    assert "field '--label-order'" in _err(capsys) and not (tmp_path / "t2").exists()


def test_a_classifier_is_refused_for_a_similarity_suite(tmp_path, sim_suite, capsys):
    model = _saved(tmp_path, "nli")
    capsys.readouterr()
    assert main(["test", "--model", str(model), "--suite", str(sim_suite), "--out", str(tmp_path / "t"),
                 "--task", "similarity", "--max-length", "32"]) == 2
    err = _err(capsys)
    assert "model-nli" in err and "trained for task type 'nli'" in err and "not 'similarity'" in err, err


@pytest.mark.parametrize("task", ["nli", "nli_binary", "acceptability"])
def test_test_runs_the_classifier_types_and_score_agrees(tmp_path, capsys, task):
    pair = task != "acceptability"
    suite = nli_suite() if task == "nli" else pd.DataFrame([
        _case("a-0", "first class", "MFT", ["x y"], "eq", labels=[0], pair=pair),
        _case("b-0", "second class", "MFT", ["y x"], "eq", labels=[1], pair=pair),
        _case("i-0", "typos", "INV", ["x y", "x z"], "inv", pair=pair)])
    save_suite(suite, tmp_path / "s.parquet")
    model = _saved(tmp_path, task)
    assert main(["test", "--model", str(model), "--suite", str(tmp_path / "s.parquet"), "--out",
                 str(tmp_path / "t"), "--max-length", "32"]) == 0
    run = json.loads((tmp_path / "t" / "run.json").read_text())
    classes = list(get_task_type(task).suite_labels.values())
    assert run["arguments"]["task"] == task and run["labels"][str(model)]["model_classes"] == classes
    assert run["labels"][str(model)]["by"] == "id2label"
    preds = pd.read_parquet(tmp_path / "t" / "predictions.parquet")
    assert {len(p) for p in preds["probs"]} == {len(classes)}
    tested = pd.read_parquet(tmp_path / "t" / "cases.parquet")
    assert _score(tmp_path, tmp_path / "s.parquet", tmp_path / "t" / "predictions.parquet", "--task", task) == 0
    scored = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert dict(zip(tested["case_id"], tested["status"])) == dict(zip(scored["case_id"], scored["status"]))


def test_an_nli_model_with_its_classes_in_another_order_is_read_by_name(tmp_path, capsys):
    """The same weights with config.json naming its classes in MNLI-hub order (contradiction, neutral,
    entailment): ``test`` permutes its columns into the task's order by the names."""
    save_suite(nli_suite(), tmp_path / "nli.parquet")
    model = _saved(tmp_path, "nli")
    other = tmp_path / "reordered"
    other.mkdir()
    for f in model.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    cfg = json.loads((model / "config.json").read_text())
    cfg["id2label"] = {"0": "CONTRADICTION", "1": "NEUTRAL", "2": "ENTAILMENT"}
    cfg["label2id"] = {v: int(k) for k, v in cfg["id2label"].items()}
    (other / "config.json").write_text(json.dumps(cfg))
    for m, out in ((model, "a"), (other, "b")):
        assert main(["test", "--model", str(m), "--suite", str(tmp_path / "nli.parquet"), "--out",
                     str(tmp_path / out), "--max-length", "32"]) == 0
    a = pd.read_parquet(tmp_path / "a" / "predictions.parquet")
    b = pd.read_parquet(tmp_path / "b" / "predictions.parquet")
    pa, pb = np.stack(a["probs"]), np.stack(b["probs"])
    assert not np.allclose(pa, pa[:, ::-1], atol=1e-4)   # the order shows
    np.testing.assert_allclose(pb, pa[:, ::-1], rtol=1e-5, atol=1e-6)
    run = json.loads((tmp_path / "b" / "run.json").read_text())
    assert run["labels"][str(other)]["model_classes"] == ["contradiction", "neutral", "entailment"]
    assert "classes read as contradiction, neutral, entailment (by id2label)" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_case_input_given_twice_names_both_lines(tmp_path, fmt):
    """Scores and probabilities share one reader of a case input's key: a repeat stops naming both lines."""
    from beluga.analyses.score_predictions import read_score_predictions
    from beluga.core.errors import DataError

    path = tmp_path / f"p.{fmt}"
    rows = [{"case_id": "c1", "input_idx": 0, "score": 1.0}, {"case_id": "c2", "input_idx": 0, "score": 2.0},
            {"case_id": "c1", "input_idx": 0, "score": 3.0}]
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.raises(DataError, match=r"field 'case_id'/'input_idx': case 'c1', input 0 again \(first on line"):
        read_score_predictions(str(path), fmt, None, "similarity")
