"""End-to-end: snakemake on the tiny config (tiny random BERT, three functionalities)."""

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import TINY, copy_run, pipeline, planned_jobs, smk

from beluga.workflow.smk import TIMING_TAG

pytestmark = pytest.mark.slow


@pytest.fixture
def run(tiny_run):
    """The session's finished tiny run (tests/conftest.py), read only."""
    return tiny_run


def test_dry_run_lists_every_step(tmp_path):
    jobs = planned_jobs(tmp_path)
    for rule in ("split_suite", "train_iid", "finetune", "predict", "outcomes", "aggregate", "heatmap",
                 "unit_outcomes", "significance", "intervals", "diagnostics", "figure1", "table3", "run_config"):
        assert jobs.get(rule, 0) > 0, (rule, jobs)
    # 3 configurations x (1 seen + 3 func + 3 class + 3 type) folds, each one job that trains, predicts and
    # scores; only the IID model (on disk) has predict and outcomes jobs of its own
    assert jobs["finetune"] == 30 and jobs["predict"] == 1 and jobs["outcomes"] == 1
    assert "finetune_model" not in jobs and "finetune_keep" not in jobs


def test_predictions_follow_contract(run):
    res = run / "results" / "sent"
    suite = pd.read_parquet(res / "suite" / "suite.parquet")
    split = pd.read_parquet(res / "suite" / "split.parquet")
    test = suite[suite.case_id.isin(set(split.case_id[split.split == "test"]))]
    n_iid = len(pd.read_parquet(res / "iid" / "test.parquet"))
    files = sorted((res / "predictions").rglob("*.parquet"))
    assert len(files) == 31
    for f in files:
        table = pq.read_table(f)
        assert {"split", "case_id", "input_idx", "probs", "label"} <= set(table.column_names)
        probs_type = table.schema.field("probs").type
        assert pa.types.is_list(probs_type) and probs_type.value_type == pa.float32(), probs_type
        df = table.to_pandas()
        record = json.loads(f.with_suffix(".json").read_text())
        # a model predicts T_test of the functionalities it is scored on: all for the IID and seen models,
        # the held-out ones for a func / class / type fold
        partition = f.parent.name if f.parent.parent.name != "iid" else "standard"
        scored = set(test.functionality) if partition in ("seen", "standard") else set(record["held_out"])
        assert scored and (partition in ("seen", "standard") or scored < set(test.functionality))
        cases = test[test.functionality.isin(scored)]
        st = df[df.split == "suite_test"]
        assert len(st) == int(cases.inputs.map(len).sum()) and not st.duplicated(["case_id", "input_idx"]).any()
        assert set(st.case_id) == set(cases.case_id)
        assert (df.split == "iid_test").sum() == n_iid
        assert df[df.split == "iid_test"].label.notna().all()
        outcomes = pd.read_parquet(str(f).replace("/predictions/", "/outcomes/"))
        assert set(outcomes.case_id[outcomes.split == "suite_test"]) == set(cases.case_id)
        assert outcomes.held_out[outcomes.split == "suite_test"].all()
        if partition != "standard":   # fold jobs: precision and where the job's time went
            assert record["precision"] in ("fp32", "bf16") and record["predict_scope"] == "scored"
            assert {"train_s", "predict_s", "score_s", "train_start_at_s"} <= set(record["timing"])
    # fold models are never written (one process per fold); the IID model stays
    assert not (res / "models" / "iid_to_t").exists()
    assert any((res / "models" / "iid" / "vanilla" / "standard" / "all").glob("*.safetensors"))
    # every job ends its log with its timing line (scripts/benchmark.py reads them)
    logs = list((run / "logs").rglob("*.log"))
    assert logs and all(TIMING_TAG in p.read_text() for p in logs), [p for p in logs if TIMING_TAG not in p.read_text()]


def test_scores_and_plots(run):
    res = run / "results" / "sent"
    scores = pd.read_csv(res / "scores" / "scores.csv")
    for g in ("G_standard", "G_seen", "G_func", "G_class", "G_type"):
        assert g in scores.columns and scores[g].between(0, 1).all()
    assert list(scores.configuration) == ["iid", "iid_to_t", "iid_plus_t", "iid_to_iid_plus_t"]
    long = pd.read_csv(res / "scores" / "pass_rates.csv")
    func = long[(long.scenario == "func") & (long.configuration == "iid_to_t")]
    assert sorted(func.functionality) == sorted(pd.read_parquet(res / "suite" / "suite.parquet").functionality.unique())
    assert (res / "scores" / "scores.md").read_text().startswith("# SENT")
    for p in ("seen", "func", "class", "type"):
        assert (res / "plots" / f"heatmap_{p}.png").stat().st_size > 10_000
    assert len((res / "suite" / "summary.tsv").read_text().strip().splitlines()) == 1 + 3


def test_statistics_table3_figure1_report(run, tmp_path):
    res = run / "results"
    sig = pd.read_csv(res / "sent" / "stats" / "significance.csv")
    assert set(sig.column) == {"iid", "G_seen", "G_func", "G_class", "G_type", "G_avg"}
    assert len(sig) == 3 * 6 and sig.p_value.between(0, 1).all() and (sig.p_value > 0).all()
    assert (sig.loc[sig.test == "randomization", "R"] == 10_000).all()
    ci = pd.read_csv(res / "sent" / "stats" / "intervals.csv")
    assert ((ci.lo <= ci.estimate + 1e-9) & (ci.estimate <= ci.hi + 1e-9)).all()
    table = pd.read_csv(res / "table3" / "table3.csv")
    scores = pd.read_csv(res / "sent" / "scores" / "scores.csv")
    g = table[(table.column == "G_func") & (table.configuration == "iid_to_t")]["value"].iloc[0]
    assert g == pytest.approx(scores.loc[scores.configuration == "iid_to_t", "G_func"].iloc[0])
    md = (res / "table3" / "table3.md").read_text()
    assert "IID→T" in md and "binomial" in md
    assert "sent/stats/intervals.csv" in md and "one training seed" in md  # the legend: intervals, seeds
    tex = (res / "table3" / "table3.tex").read_text()
    assert "\\begin{table" in tex and tex.count("{") == tex.count("}")
    # its summaries (the paper's §5.2 and footnote 10) agree with table3.csv: means over methods per
    # configuration, means of G over the pairs but the baseline per scenario
    summary = pd.read_csv(res / "table3" / "summary.csv")
    conf = summary[summary.summary == "configuration"].set_index(["configuration", "column"])
    means = table.groupby(["configuration", "column"])["value"].agg(["mean", "count", "size"])
    assert set(conf.index) == set(means.index) and set(summary.task) == {"sent"}
    for key, r in means.iterrows():     # NaN: left out of the mean (pandas skips it too) and counted
        assert conf.loc[key, "value"] == pytest.approx(r["mean"], nan_ok=True), key
        assert (conf.loc[key, "n"], conf.loc[key, "n_missing"]) == (r["count"], r["size"] - r["count"]), key
    pairs = table[(table.configuration != "iid") & table.column.str.startswith("G_")]
    scen = summary[summary.summary == "scenario"].set_index("column")
    for col, g in pairs.groupby("column"):
        assert scen.loc[col, "value"] == pytest.approx(g["value"].mean(), nan_ok=True), col
        assert scen.loc[col, "n"] + scen.loc[col, "n_missing"] == len(g), col
    assert "§5.2" in (res / "table3" / "summary.md").read_text() and "footnote 10" in (
        res / "table3" / "summary.md").read_text()
    for ext in ("png", "pdf"):
        assert (res / "sent" / "figures" / f"figure1.{ext}").stat().st_size > 10_000
    diag = pd.read_csv(res / "sent" / "diagnostics" / "summary.csv")
    assert len(diag) == 4 and "degenerate" in (res / "sent" / "diagnostics" / "diagnostics.md").read_text().lower()
    report = tmp_path / "report.html"
    smk(run, "--report", str(report))
    html = report.read_text(errors="replace")
    assert report.stat().st_size > 100_000 and "figure1.png" in html and "table3.csv" in html


def test_nothing_to_do_then_only_one_fold_reruns(run, tmp_path):
    assert planned_jobs(run) == {}
    run = copy_run(run, tmp_path / "run")
    assert planned_jobs(run) == {}
    res = run / "results" / "sent"
    victim = res / "predictions" / "iid_to_t" / "vanilla" / "func" / "typos.parquet"
    others = {p: p.stat().st_mtime_ns for p in (res / "predictions").rglob("*.parquet") if p != victim}
    victim.unlink()
    jobs = planned_jobs(run)
    assert jobs == {"finetune": 1, "aggregate": 1, "heatmap": 4, "unit_outcomes": 1, "significance": 1,
                    "intervals": 1, "diagnostics": 1, "failures": 1, "figure1": 1, "table3": 1, "all": 1}, jobs
    smk(run, "--cores", "2")
    assert victim.exists()
    assert all(p.stat().st_mtime_ns == t for p, t in others.items())
    assert planned_jobs(run) == {}


def test_seeds_change_split_and_scores(run, tmp_path):
    """No hard-coded results: other seeds give another T_test and other predictions."""
    target = "results/sent/outcomes/iid/vanilla/standard/all.parquet"
    other = tmp_path / "other_seeds.yaml"
    other.write_text("seed: 4\nsplit: {fractions: [0.5, 0.25, 0.25], seed: 999}\n")
    pipeline(tmp_path, "--cores", "2", target, configfiles=(TINY, other))
    a = pd.read_parquet(run / target)
    b = pd.read_parquet(tmp_path / target)
    assert set(a.case_id[a.split == "suite_test"]) != set(b.case_id[b.split == "suite_test"])
    pa_ = pd.read_parquet(run / target.replace("outcomes", "predictions"))
    pb = pd.read_parquet(tmp_path / target.replace("outcomes", "predictions"))
    ia, ib = (p[p.split == "iid_test"].set_index("case_id").probs for p in (pa_, pb))
    assert any(list(x) != list(ib[k]) for k, x in ia.items())


def test_cost_plan_counts_what_the_run_did(run):
    """python -m beluga plan: the jobs of the dry run, the sequences each fold job trained on and predicted
    (its run record: stream sizes, an INV / DIR item being a pair), with hours from a throughput table."""
    from beluga.workflow.cost import relative_cost
    from beluga.workflow.plan import load_config, plan

    rates = {"train_seq_per_s": 100.0, "predict_seq_per_s": 200.0, "fixed_s_per_job": 4.0}
    lines = {(ln.rule, ln.configuration, ln.method): ln for ln in plan(load_config(str(TINY)), rates)}
    assert {k[0] for k in lines} == {"train_iid", "predict", "finetune"}
    assert sum(ln.jobs for k, ln in lines.items() if k[0] == "finetune") == 30
    res = run / "results" / "sent"
    for conf in ("iid_to_t", "iid_plus_t", "iid_to_iid_plus_t"):
        records = [json.loads(p.read_text()) for p in (res / "predictions" / conf).rglob("*.json")]
        trained = sum(r["hparams"]["epochs"] * sum(n * (2 if stream in ("INV", "DIR") else 1)
                                                   for stream, n in r["stream_sizes"].items()) for r in records)
        predicted = sum(r["n_predictions"] for r in records)
        line = lines[("finetune", conf, "vanilla")]
        assert line.jobs == len(records) == 10
        assert line.train_seqs == trained and line.predict_seqs == predicted, conf
        cost = relative_cost("tiny-random", 32)
        assert line.hours * 3600 == pytest.approx(10 * 4.0 + trained / 100.0 * cost + predicted / 200.0 * cost)


def test_report_and_failures_pages_in_headless_chromium(run, tmp_path):
    """The pipeline's report and failures page of the tiny run, as a person sees them (the test command's
    page: tests/test_behavioral.py, whose browser helpers these are)."""
    from test_behavioral import DOCUTILS_WARNING, _chromium, console_errors, render, visible_pixels

    exe = _chromium()
    wd = run
    smk(wd, "--report", str(tmp_path / "report.html"))
    report = (tmp_path / "report.html").read_text()
    assert not DOCUTILS_WARNING.search(report) and "Duplicate explicit target" not in report
    for item in ("failures.html", "figure1.png", "table3.csv"):
        assert item in report, item
    dom, console = render(exe, tmp_path / "report.html", tmp_path / "report.png")
    assert not console_errors(console), console
    assert not DOCUTILS_WARNING.search(dom)
    assert visible_pixels(tmp_path / "report.png") > 0.005
    failures = wd / "results" / "sent" / "failures" / "failures.html"
    dom, console = render(exe, failures, tmp_path / "failures.png")
    assert not console_errors(console), console
    assert dom.count("<details") == 3 and "<details open=" in dom and "expected:" in dom   # one per functionality
    assert visible_pixels(tmp_path / "failures.png") > 0.002
    print(f"screenshots: {tmp_path}")
