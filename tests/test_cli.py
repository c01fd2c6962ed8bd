"""`python -m beluga score` on a small suite and on the real sentiment export; `python -m beluga test` with
several models (one model: today's bytes; two: the failure rates' mean and sd over them)."""

import csv
import gzip
import json
import math
import re
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import beluga_cli, case, make_tiny_suite
from test_behavioral import suite_file, tiny_model  # noqa: F401  (the `test` tests' fixtures)

from beluga.cli import main
from beluga.cli.testing import TEST_OUTPUTS
from beluga.suites.format import save_suite

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "checklist"


def run_cli(*args) -> subprocess.CompletedProcess:
    """``python -m beluga ARGS``, in-process (tests/conftest.py)."""
    return beluga_cli(*args)


def run_process(*args) -> subprocess.CompletedProcess:
    """``python -m beluga ARGS`` as a process (the entry point's wiring)."""
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
    assert list(cases.columns) == ["case_id", "functionality", "capability", "test_type", "status", "filter_reason"]
    assert len(cases) == len(suite) - 1
    st = cases.set_index("case_id").status
    assert st["mft-0"] == "pass" and st["inv-0"] == "fail" and st["inv-1"] == "pass" and st["nn-0"] == "pass"
    funcs = pd.read_csv(out / "functionalities.csv")
    assert list(funcs.columns) == ["capability", "functionality", "test_type", "n_cases", "n_scored", "n_failed",
                                   "failure_rate", "n_filtered", "filtered", "status"]
    assert funcs.functionality.tolist() == list(dict.fromkeys(suite.functionality))
    typos = funcs.set_index("functionality").loc["typos"]
    assert (typos.n_cases, typos.n_scored, typos.n_failed, typos.failure_rate) == (3, 3, 1, 1 / 3)
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


@pytest.mark.slow
def test_score_errors(tmp_path, capsys):
    suite = make_tiny_suite(2)
    suite.at[0, "labels"] = [2]
    save_suite(suite, tmp_path / "suite.parquet")
    preds = tiny_predictions(suite)
    preds[~((preds.case_id == "inv-1") & (preds.input_idx == 1))].to_parquet(tmp_path / "missing.parquet")
    preds.to_parquet(tmp_path / "preds.parquet")
    args = ["--suite", tmp_path / "suite.parquet", "--out", tmp_path / "out"]
    # through the real entry point: one line on stderr, exit status 2, no traceback
    _assert_one_line_error(run_process("score", *args, "--predictions", tmp_path / "missing.parquet", "--task", "sent"),
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
    # diff_up needs three-class probabilities (a suite of pairs, as a para task reads)
    para = suite[suite.functionality != "neg words"].copy()
    para["inputs_b"] = [[f"{t}, said the second text" for t in inputs] for inputs in para["inputs"]]
    save_suite(para, tmp_path / "para.parquet")
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
    _assert_one_line_error(res, f"suite file {tmp_path / 's.jsonl'}: field '--task': 'sent', but the file is "
                                "CheckList's 'qqp' suite, a para suite; drop --task")


@pytest.mark.skipif(not (DATA / "sentiment.jsonl.gz").exists(),
                    reason=f"CheckList exports not found at {DATA} (../shared/data beside the checkout)")
@pytest.mark.slow  # the whole real sentiment suite scored (~6 s)
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
    assert (funcs.n_scored <= funcs.n_cases).all() and (funcs.n_failed <= funcs.n_scored).all()
    # only the sliced / cannot-fail DIRs filter cases
    filtered = funcs[funcs.n_scored < funcs.n_cases].functionality.tolist()
    assert set(filtered) <= {"intensifiers", "reducers", '"used to" should reduce'}


def test_plan_finds_the_repository_files():
    """`python -m beluga plan` without --configfile reads the embedded default and the schema from the
    repository root (paths computed from the module's own location)."""
    from beluga.workflow import plan as plan_mod

    assert (plan_mod.REPO / "Snakefile").exists() and plan_mod.CONFIG_SCHEMA.exists()
    assert plan_mod.load_config(None)["results"] == "results"


# ---------------------------------------------------------------- `test` with several models

#: the last commit whose `test` command took one model: its outputs are "today's bytes"
BEFORE = "a54fbd4"
#: where the modules :data:`BEFORE` imports live now (flat modules moved into packages by concern)
MOVED = {"errors": "core.errors", "bounds": "core.bounds", "io": "core.io", "seeds": "core.seeds",
         "provenance": "core.provenance", "clock": "core.clock", "lazy": "core.lazy", "progress": "core.progress",
         "pages": "core.pages", "tasks": "core.tasks", "health": "core.health", "job": "model.job",
         "modeling": "model.modeling", "families": "model.families", "labels": "model.labels",
         "model_card": "model.card", "model_config": "model.config", "checkpoint": "model.checkpoint",
         "precision": "model.precision", "compiling": "model.compiling", "transfer": "model.transfer",
         "causal_lm": "model.causal_lm", "settings": "train.settings", "batches": "train.batches",
         "losses": "train.losses", "training": "train.loop", "selection": "train.selection", "fold": "train.fold",
         "predict": "score.predict", "scoring": "score.outcomes", "case_rows": "score.case_rows",
         "metrics": "score.metrics", "folds": "suites.folds", "qa": "heads.span.qa",
         "regression": "heads.score.cases"}


def _moved(source: str) -> str:
    """Old source with its imports of moved modules pointed at their packages."""
    names = "|".join(sorted(MOVED, key=len, reverse=True))
    source = re.sub(rf"\bbeluga\.({names})\b", lambda m: "beluga." + MOVED[m.group(1)], source)
    return re.sub(rf"^(\s*)from beluga import ({names})$",
                  lambda m: f"{m.group(1)}from beluga.{MOVED[m.group(2)].rsplit('.', 1)[0]} import "
                            f"{MOVED[m.group(2)].rsplit('.', 1)[1]} as {m.group(2)}", source, flags=re.M)


def _before_test_command(monkeypatch):
    """`test_command` as of :data:`BEFORE` (cli.py and the summary functions of behavioral.py from git, loaded
    under other names; everything else the current code)."""
    def show(path: str) -> str:
        res = subprocess.run(["git", "show", f"{BEFORE}:{path}"], cwd=REPO, capture_output=True, text=True)
        if res.returncode:
            pytest.skip(f"git show {BEFORE}:{path} failed (not a git checkout with that commit)")
        return _moved(res.stdout)
    behavioral = types.ModuleType("beluga_before_behavioral")
    exec(compile(show("beluga/analyses/behavioral.py"), "before/behavioral.py", "exec"), behavioral.__dict__)
    monkeypatch.setitem(sys.modules, behavioral.__name__, behavioral)
    source = show("beluga/workflow/cli.py")
    assert "from beluga.analyses.behavioral import failure_summary, summary_html" in source
    cli = types.ModuleType("beluga_before_cli")
    exec(compile(source.replace("from beluga.analyses.behavioral import", f"from {behavioral.__name__} import"),
                 "before/cli.py", "exec"), cli.__dict__)
    return cli.test_command


@pytest.fixture(scope="module")
def seed_models(suite_file, tmp_path_factory):  # noqa: F811
    """Two tiny classifiers (as test_behavioral's tiny_model, seeds 1 and 2) whose predictions depend on the
    input: the head's weights scaled up, its bias centring the suite's logits, so the two fail on different
    cases (a spread over the models)."""
    import torch

    from beluga.model.modeling import load_model, save_model, set_seed
    from beluga.suites.format import load_suite

    texts = [t for inputs in load_suite(suite_file)["inputs"] for t in inputs]
    folder = tmp_path_factory.mktemp("seed_models")
    out = []
    for seed in (1, 2):
        set_seed(seed)
        model, tok = load_model("tiny-random", 2)
        model.eval()
        with torch.no_grad():
            model.classifier.weight.mul_(30000.0)
            logits = model(**tok(texts, padding=True, return_tensors="pt")).logits
            model.classifier.bias[1] -= (logits[:, 1] - logits[:, 0]).median()
        save_model(model, tok, folder / f"seed{seed}", task_type="sent")
        out.append(folder / f"seed{seed}")
    return out


def _without_labels(path: Path):
    """A predictions.parquet's table with its metadata but the record of how the classes were read
    (``beluga_labels``, beluga/model/labels.py)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != b"beluga_labels"}
    return table.replace_schema_metadata(meta)


def _run_test(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["test", *map(str, argv)])
    res = capsys.readouterr()
    return rc, res.out, res.err


def _p_named(text: str) -> str:
    """A failing case as :data:`BEFORE` printed it with its probabilities named as now: ``neutral (0.56); model:
    negative 0.65`` -> ``neutral (p = 0.56); model: negative (p = 0.65)``."""
    text = re.sub(r" \((\d\.\d\d)\)", r" (p = \1)", text)
    return re.sub(r"(; model: [a-z ]+) (\d\.\d\d)", r"\1 (p = \2)", text)


@pytest.mark.slow
def test_test_one_model_is_todays_bytes(tiny_model, seed_models, suite_file, tmp_path, capsys,  # noqa: F811
                                        monkeypatch):
    """`--model A` writes what the one-model command did, less what it adds since: predictions.parquet the same
    but for its `input` column, cases.parquet but for `filter_reason`, functionalities.csv but for
    `n_filtered` / `filtered` / `status`; summary.md's failing cases and the printed failing cases byte for byte
    but for the probabilities now named `p = ` (the table rows now carry the status word and the filtered
    cases: tests/test_behavioral.py)."""
    before = _before_test_command(monkeypatch)
    for i, model in enumerate([tiny_model, seed_models[0]]):
        old_out, new_out = tmp_path / f"before{i}", tmp_path / f"now{i}"
        old_text = before(str(model), str(suite_file), str(old_out), "sent", failures=2)
        rc, new_text, err = _run_test(capsys, "--model", model, "--suite", suite_file, "--out", new_out,
                                      "--task", "sent", "--failures", "2")
        assert rc == 0, err
        now = _without_labels(new_out / "predictions.parquet")
        assert now.drop_columns(["input"]).equals(_without_labels(old_out / "predictions.parquet"),
                                                  check_metadata=True)
        cases = pd.read_parquet(new_out / "cases.parquet")
        assert cases.drop(columns="filter_reason").equals(pd.read_parquet(old_out / "cases.parquet"))
        funcs = pd.read_csv(new_out / "functionalities.csv")
        pd.testing.assert_frame_equal(funcs.drop(columns=["n_filtered", "filtered", "status"]),
                                      pd.read_csv(old_out / "functionalities.csv"))
        md_now, md_then = ((out / "summary.md").read_text() for out in (new_out, old_out))
        assert md_now[md_now.find("\n## "):] == _p_named(md_then[md_then.find("\n## "):])
        def failing(text):
            return [line for line in text.splitlines() if line.startswith("      ")]
        assert failing(new_text) == [_p_named(x) for x in failing(old_text)] and failing(new_text)
        assert "inputs predicted and scored" in new_text.splitlines()[-2]


def test_test_two_models_mean_sd_equal_hand_computation(seed_models, suite_file, tmp_path, capsys):  # noqa: F811
    a, b = map(str, seed_models)
    single = {}
    for m in (a, b):
        rc, _, err = _run_test(capsys, "--model", m, "--suite", suite_file, "--out", tmp_path / Path(m).name,
                               "--task", "sent", "--failures", "2")
        assert rc == 0, err
        single[m] = tmp_path / Path(m).name
    both = tmp_path / "both"
    rc, text, err = _run_test(capsys, "--model", a, "--model", b, "--suite", suite_file, "--out", both,
                              "--task", "sent", "--failures", "2")
    assert rc == 0, err
    assert sorted(p.name for p in both.iterdir()) == sorted(TEST_OUTPUTS)

    funcs = pd.read_csv(both / "functionalities.csv")
    assert list(funcs.columns) == ["capability", "functionality", "test_type", "n_cases", "n_scored", "n_failed",
                                   "failure_rate", "n_models", "failure_rate_sd", "failure_rate_min",
                                   "failure_rate_max", f"failure_rate[{a}]", f"failure_rate[{b}]", "n_filtered",
                                   "filtered", "status"]
    one = {m: pd.read_csv(single[m] / "functionalities.csv") for m in (a, b)}
    for m in (a, b):
        assert one[m].functionality.tolist() == funcs.functionality.tolist()
    for i, r in funcs.iterrows():
        x, y = one[a].failure_rate[i], one[b].failure_rate[i]
        mean = (x + y) / 2
        sd = math.sqrt(((x - mean) ** 2 + (y - mean) ** 2) / (2 - 1))
        assert r.failure_rate == pytest.approx(mean, abs=1e-12), r.functionality
        assert r.failure_rate_sd == pytest.approx(sd, abs=1e-12), r.functionality
        assert (r.failure_rate_min, r.failure_rate_max, r.n_models) == (min(x, y), max(x, y), 2)
        assert (r[f"failure_rate[{a}]"], r[f"failure_rate[{b}]"]) == (x, y)
        assert r.n_scored == one[a].n_scored[i] + one[b].n_scored[i]
        assert r.n_failed == one[a].n_failed[i] + one[b].n_failed[i]
        assert r.n_cases == one[a].n_cases[i]
    assert (funcs.failure_rate_sd > 0).any(), funcs          # the two models differ: a real spread

    # predictions and cases: each model's rows are its own run's, under a `model` column
    for name in ("predictions.parquet", "cases.parquet"):
        df = pd.read_parquet(both / name)
        assert df.columns[0] == "model" and df["model"].drop_duplicates().tolist() == [a, b]
        for m in (a, b):
            mine = df[df["model"] == m].drop(columns="model").reset_index(drop=True)
            pd.testing.assert_frame_equal(mine, pd.read_parquet(single[m] / name), obj=f"{name} of {m}")

    # the summaries: mean ± sd per functionality, the models named, the cases failing for the most models first
    md, page = (both / "summary.md").read_text(), (both / "summary.html").read_text()
    for doc in (md, page, text):
        assert "mean ± sd over 2 models" in doc and "seed1" in doc and "seed2" in doc
    for r in funcs.itertuples(index=False):
        cell = f"{100 * r.failure_rate:.1f} ± {100 * r.failure_rate_sd:.1f}%"
        assert f"| {cell} |" in md and cell in page, cell
        assert f"{100 * r.failure_rate:5.1f} ± {100 * r.failure_rate_sd:4.1f}%" in text
    cases = pd.read_parquet(both / "cases.parquet")
    n_fail = cases[cases.status == "fail"].groupby(["functionality", "case_id"]).size()
    for func, counts in n_fail.groupby(level=0):
        section = md.split(f"\n## {func}\n", 1)[1]
        first = re.search(r"- `([^`]+)` — .* — fails for (\d) of 2 models", section)
        assert int(first.group(2)) == counts.max(), (func, first.group(0))
        assert n_fail[(func, first.group(1))] == counts.max()
    assert max(map(len, text.splitlines()[:-1])) <= 100
    assert "inputs x 2 models predicted and scored" in text


def test_test_several_models_checked_before_predicting(seed_models, suite_file, tmp_path, capsys,  # noqa: F811
                                                       monkeypatch):
    """Every model is checked before any is predicted (each refusal one line naming the model); the same model
    twice is refused."""
    import beluga.train.fold

    predicted = []
    monkeypatch.setattr(beluga.train.fold, "suite_outcomes", lambda *a, **k: predicted.append(a) or 1 / 0)
    a, b = map(str, seed_models)
    no_tokenizer = tmp_path / "no_tokenizer"
    no_tokenizer.mkdir()
    for f in Path(b).iterdir():
        if not f.name.startswith(("tokenizer", "vocab", "special_tokens")):
            (no_tokenizer / f.name).write_bytes(f.read_bytes())
    out = tmp_path / "out"
    common = ["--suite", suite_file, "--out", out, "--task", "sent"]
    for models, needles in [
        ([a, a], [f"field '--model': {a} is given twice"]),
        ([a, b, a + "/"], [f"{a} and {a}/ are the same model"]),
        ([a, no_tokenizer], [f"model {no_tokenizer}: field 'tokenizer'"]),
        ([a, tmp_path / "missing"], [f"model {tmp_path / 'missing'}: field 'model': path does not exist"]),
    ]:
        rc, _, err = _run_test(capsys, "--model", *models, *common)
        assert rc == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        for n in needles:
            assert n in lines[0], lines[0]
    rc, _, err = _run_test(capsys, "--model", a, b, *common, "--max-length", "100000")
    assert rc == 2 and f"model {a}: field '--max-length'" in err
    assert predicted == [] and not out.exists()


def test_summary_over_models_keeps_suite_text_and_model_names_literal():
    from beluga.analyses.behavioral import failure_summary, summary_html, summary_markdown, summary_text
    from beluga.core.tasks import get_task_type

    evil = ["\x1b]0;pwned\x07 hi", "<img src=x onerror=alert(1)> \u202egnp", "**bold** | pipe"]
    suite = pd.DataFrame([case("c<b>", "red \x1b[31mALERT <script>x()</script>", "Cap <i>x</i>", "MFT", evil,
                               [2] * len(evil)),
                          case("c2", "plain", "Vocabulary", "MFT", ["fine"], [2])])
    keys = [("c<b>", j) for j in range(len(evil))] + [("c2", 0)]
    preds = pd.DataFrame({"case_id": [c for c, _ in keys], "input_idx": [j for _, j in keys],
                          "probs": [[0.9, 0.1]] * len(keys)})
    statuses = [pd.DataFrame({"case_id": ["c<b>", "c2"], "status": s}) for s in (["fail", "pass"],
                                                                              ["fail", "fail"])]
    models = ["m\x1b[5m<b>one</b>", "two`|"]
    funcs, examples = failure_summary(suite, statuses, [preds, preds], get_task_type("sent"), models)
    assert funcs.failure_rate.tolist() == [1.0, 0.5] and funcs.n_models.tolist() == [2, 2]
    assert examples["plain"][0]["n_failing"] == 1 and examples["plain"][0]["failing"] == [1]
    text = summary_text(funcs, examples, "2 models on s", models=models)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text) and "\\x1b[5m" in text
    assert "fails for 2 of 2 models (m1, m2)" in text and max(map(len, text.splitlines())) <= 100
    md = summary_markdown(funcs, examples, "2 models on s", models=models)
    for raw in ("<img", "<script", "<i>", "\x1b", "**bold**"):
        assert raw not in md, raw       # (the model names are code spans: "<b>" is literal there)
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert "<b>" not in rendered and "<code>m\\x1b[5m&lt;b&gt;one&lt;/b&gt;</code>" in rendered
    table = [ln for ln in md.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert all(len(re.findall(r"(?<!\\)\|", ln)) == 11 for ln in table), table
    assert rendered.count("<tr>") == 3                                  # a "|" in the text splits no cell
    page = summary_html(funcs, examples, "2 models on s", models=models)
    for raw in ("<img", "<script", "<i>", "<b>one", "c<b>"):
        assert raw not in page, raw
