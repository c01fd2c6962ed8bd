"""Suites that travel to lm-evaluation-harness and back (issue 41, scope 4; beluga/suites/lm_eval.py):
``suite export --format lm-eval`` writes a task folder, lm-eval 0.4.13 runs it in-process on a tiny decoder
(tests/tiny_decoder.py) and writes its ``--log_samples`` file with its own tracker, and ``score --format
lm-eval-samples`` on that file equals ``test --prompt --label-words`` on the same model. The fast tests use a
samples file in the format lm-eval writes (its EvaluationTracker: ``doc``, per-choice ``[loglik, is_greedy]`` in
``resps`` / ``filtered_resps``, every value a string), built from ``test``'s own log-likelihoods."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import case, hf_flags, make_tiny_suite
from tiny_decoder import build_decoder

from beluga.cli import main
from beluga.suites.format import save_suite

PROMPT = "Review: {text} Sentiment:"
WORDS = ["positive=terrific", "negative=dreadful"]     # given out of order: read by name


@pytest.fixture(scope="module")
def suite_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("suite") / "suite.parquet"
    save_suite(make_tiny_suite(2), path)
    return path


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    texts = [x for xs in make_tiny_suite(2)["inputs"] for x in xs] + ["Review: Sentiment:"]
    return build_decoder(tmp_path_factory.mktemp("dec") / "m", texts)


@pytest.fixture(scope="module")
def task_dir(suite_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("tasks") / "beluga_sent"
    assert main(["suite", "export", "--suite", str(suite_file), "--task", "sent", "--format", "lm-eval", "--out",
                 str(out), "--prompt", PROMPT, "--label-words", *WORDS]) == 0
    return out


@pytest.fixture(scope="module")
def tested(decoder, suite_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("test_out")
    assert main(["test", "--model", str(decoder), "--suite", str(suite_file), "--out", str(out), "--task", "sent",
                 "--prompt", PROMPT, "--label-words", *WORDS, "--precision", "fp32"]) == 0
    return out


def test_export_task_folder(task_dir):
    cfg = yaml.safe_load((task_dir / "task.yaml").read_text())
    assert cfg["task"] == "beluga_sent" and cfg["output_type"] == "multiple_choice"
    assert cfg["dataset_path"] == "json" and cfg["dataset_kwargs"]["data_files"]["test"] == str(task_dir /
                                                                                                 "data.jsonl")
    assert cfg["doc_to_text"] == "Review: {{text}} Sentiment:"
    assert cfg["doc_to_choice"] == "choices"                          # each document's words
    assert cfg["doc_to_target"] == "target" and cfg["target_delimiter"] == " "
    docs = [json.loads(x) for x in (task_dir / "data.jsonl").read_text().splitlines()]
    suite = make_tiny_suite(2)
    assert [(d["case_id"], d["input_idx"], d["text"]) for d in docs] == [
        (r.case_id, j, t) for r in suite.itertuples(index=False) for j, t in enumerate(r.inputs)]
    assert all(d["classes"] == ["negative", "positive"] and d["choices"] == ["dreadful", "terrific"]
               for d in docs)                                        # the task's class order, each class's word
    by_case = {d["case_id"]: d for d in docs if d["input_idx"] == 0}
    assert by_case["mft-0"]["label"] == 0 and by_case["mft-0"]["target"] == 0       # eq, negative
    assert by_case["inv-0"]["label"] is None and by_case["inv-0"]["target"] == 0    # the documented placeholder
    assert by_case["nn-0"]["label"] is None                                          # not_negative: no class


def test_jinja_literals_kept():
    from beluga.suites.lm_eval import jinja_template

    t = jinja_template("{{literal}} {{% x %}} {{# y #}} {text}!")
    from jinja2 import Environment

    assert Environment().from_string(t).render(text="hi") == "{literal} {% x %} {# y #} hi!"


def _samples_like_lm_eval(path, tested, classes=2, drop=None):
    """A samples file as lm-eval's EvaluationTracker writes it (every value a string; per choice the request
    ``(prompt, " " + word)``), from ``test``'s probabilities as log-likelihoods (log p: their softmax is p)."""
    preds = pd.read_parquet(tested / "predictions.parquet")
    words = ["dreadful", "terrific"]
    with open(path, "w") as f:
        for i, r in enumerate(preds.itertuples(index=False)):
            lls = [str(float(np.log(p))) for p in r.probs][:classes]
            doc = {"case_id": r.case_id, "input_idx": int(r.input_idx), "text": r.input,
                   "classes": ["negative", "positive"], "choices": words}
            args = {f"gen_args_{k}": {"arg_0": PROMPT.format(text=r.input), "arg_1": " " + w}
                    for k, w in enumerate(words[:classes])}
            rec = {"doc_id": i, "doc": doc, "target": "0", "arguments": args,
                   "resps": [[[x, "False"]] for x in lls], "filtered_resps": [[x, "False"] for x in lls],
                   "filter": "none", "metrics": ["acc"], "acc": 1.0}
            if drop:
                rec.pop(drop)
            f.write(json.dumps(rec) + "\n")
    return path


def _same_scores(a, b):
    fa = pd.read_csv(a / "functionalities.csv").set_index("functionality")
    fb = pd.read_csv(b / "functionalities.csv").set_index("functionality")
    for r in fa.itertuples():
        s = fb.loc[r.Index]
        assert r.n_scored == s.n_scored and r.failure_rate == pytest.approx(s.failure_rate)
    ca = pd.read_parquet(a / "cases.parquet").set_index("case_id")["status"].sort_index()
    cb = pd.read_parquet(b / "cases.parquet").set_index("case_id")["status"].sort_index()
    assert ca.tolist() == cb.tolist()


def test_samples_file_scored_as_test(tested, suite_file, tmp_path):
    samples = _samples_like_lm_eval(tmp_path / "samples_beluga_sent.jsonl", tested)
    assert main(["score", "--suite", str(suite_file), "--predictions", str(samples), "--format", "lm-eval-samples",
                 "--out", str(tmp_path / "scored"), "--task", "sent"]) == 0
    _same_scores(tested, tmp_path / "scored")


@pytest.mark.parametrize("change,needle", [
    ("drop_doc", "field 'doc'"),
    ("one_choice", "field 'filtered_resps': 1 choices, task 'sent' has 2 (negative, positive) or 3"),
    ("not_number", "field 'filtered_resps[0]'"),
    ("twice", "again (first on line 1)"),
    ("empty", "no sample records"),
    ("other_suite", "field 'doc.text': 'this is awful 0 (edited)' is not input 0 of case 'mft-0'"),
])
def test_bad_samples_one_line(change, needle, tested, suite_file, tmp_path, capsys):
    path = _samples_like_lm_eval(tmp_path / "s.jsonl", tested, classes=1 if change == "one_choice" else 2,
                                 drop="doc" if change == "drop_doc" else None)
    lines = path.read_text().splitlines(keepends=True)
    if change == "not_number":
        lines[0] = lines[0].replace('"filtered_resps": [["', '"filtered_resps": [["x')
    elif change == "twice":
        lines = lines[:1] + lines[:1]
    elif change == "empty":
        lines = []
    elif change == "other_suite":   # a suite rebuilt since the export: the same (positional) case ids, other texts
        lines = [ln.replace('"text": "this is awful 0"', '"text": "this is awful 0 (edited)"') for ln in lines]
    path.write_text("".join(lines))
    assert main(["score", "--suite", str(suite_file), "--predictions", str(path), "--format", "lm-eval-samples",
                 "--out", str(tmp_path / "o"), "--task", "sent"]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and str(path) in err and err.count("\n") == 0, err


def test_samples_without_format_hinted(tested, suite_file, tmp_path, capsys):
    path = _samples_like_lm_eval(tmp_path / "samples.jsonl", tested)
    assert main(["score", "--suite", str(suite_file), "--predictions", str(path), "--out", str(tmp_path / "o"),
                 "--task", "sent"]) == 2
    assert "give --format lm-eval-samples" in capsys.readouterr().err


def test_export_needs_prompt_and_words(suite_file, tmp_path, capsys):
    assert main(["suite", "export", "--suite", str(suite_file), "--task", "sent", "--format", "lm-eval", "--out",
                 str(tmp_path / "t"), "--prompt", PROMPT]) == 2
    assert "field '--label-words'" in capsys.readouterr().err
    assert main(["suite", "export", "--suite", str(suite_file), "--task", "sent", "--out", str(tmp_path / "x.tsv"),
                 "--prompt", PROMPT]) == 2
    assert "--format lm-eval" in capsys.readouterr().err


@pytest.mark.slow
def test_lm_eval_round_trip(decoder, task_dir, tested, suite_file, tmp_path, monkeypatch):
    """suite -> lm-eval task -> lm-eval 0.4.13 run in-process on the tiny decoder (its samples file written by
    its own EvaluationTracker, as `lm_eval --log_samples --output_path` does) -> `score` == `test`."""
    lm_eval = pytest.importorskip("lm_eval")
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    hf_flags(monkeypatch, offline=True, datasets_cache=tmp_path / "datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    tracker = EvaluationTracker(output_path=str(tmp_path / "lm_out"))
    res = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={decoder},dtype=float32", tasks=["beluga_sent"],
                                  device="cpu", batch_size=4, log_samples=True, evaluation_tracker=tracker,
                                  task_manager=TaskManager(include_path=str(task_dir)), random_seed=None,
                                  numpy_random_seed=None, torch_random_seed=None, fewshot_random_seed=None)
    samples = res.pop("samples")   # saved as `lm_eval --log_samples --output_path` saves them (lm_eval/_cli/run.py)
    tracker.save_results_aggregated(results=res, samples=samples)
    tracker.save_results_samples(task_name="beluga_sent", samples=samples["beluga_sent"])
    (samples,) = (tmp_path / "lm_out").glob("*/samples_beluga_sent_*.jsonl")
    first = json.loads(samples.read_text().splitlines()[0])
    assert first["arguments"]["gen_args_0"] == {"arg_0": "Review: this is awful 0 Sentiment:", "arg_1": " dreadful"}
    assert main(["score", "--suite", str(suite_file), "--predictions", str(samples), "--format", "lm-eval-samples",
                 "--out", str(tmp_path / "scored"), "--task", "sent"]) == 0
    _same_scores(tested, tmp_path / "scored")
    from beluga.analyses.lm_eval_samples import read_lm_eval_samples
    from beluga.core.tasks import SENT

    theirs = read_lm_eval_samples(str(samples), SENT).set_index(["case_id", "input_idx"]).sort_index()
    ours = pd.read_parquet(tested / "predictions.parquet").set_index(["case_id", "input_idx"]).sort_index()
    np.testing.assert_allclose(np.stack(theirs["probs"]), np.stack(ours["probs"]), atol=1e-5)


def test_pair_task_documents_and_prompt(tmp_path):
    """PARA: each document has text_b, the template both fields, the choices in PARA's class order; an MFT's
    label is its class's choice index."""
    from jinja2 import Environment

    from beluga.core.tasks import PARA
    from beluga.model.causal_lm import fill_prompt
    from beluga.suites.lm_eval import export_lm_eval

    rows = [case("p-0", "pairs", "Vocabulary", "MFT", ["how old are you", "what is it"], [1, 0]),
            case("p-1", "order", "Robustness", "INV", ["is a b", "is b a"], expect="inv")]
    suite = pd.DataFrame(rows)
    suite["inputs_b"] = [["what is your age", "where is it"], ["is b a", "is a b"]]
    out = tmp_path / "para_task"
    tmpl = "Q1: {text}\nQ2: {text_b}\n{{same}}?"
    export_lm_eval(suite, PARA, str(out), tmpl, ["duplicate=yes", "not_duplicate=no"])
    cfg = yaml.safe_load((out / "task.yaml").read_text())
    assert cfg["task"] == "para_task" and cfg["doc_to_choice"] == "choices"
    docs = [json.loads(x) for x in (out / "data.jsonl").read_text().splitlines()]
    assert all(d["classes"] == ["not duplicate", "duplicate"] and d["choices"] == ["no", "yes"] for d in docs)
    assert [(d["text_b"], d["label"]) for d in docs] == [("what is your age", 1), ("where is it", 0),
                                                        ("is b a", None), ("is a b", None)]
    render = Environment(keep_trailing_newline=True).from_string(cfg["doc_to_text"]).render
    for d in docs:
        assert render(**d) == fill_prompt(tmpl, d["text"], d["text_b"])
