"""End-to-end: one snakemake run of a multi-task tiny config over the real CheckList suites and
i.i.d. data (tiny random BERT): PARA on the qqp suite (and again with ``paper_fixes: false``), READ
on the squad suite, and PARA / READ on the project's own spec-built suites, each task as its
tests/configs/tiny_<task>.yaml sets it, all in IID→(IID+T) on the seen and type partitions (one
plumbing, five tasks). Needs ../shared/data."""

import base64
import json
import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import REPO, pipeline

SHARED = REPO.parent / "shared" / "data"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not SHARED.exists(), reason=f"real data folder {SHARED} is absent")]
CONFIGS = REPO / "tests" / "configs"
#: the synonym functionality of the qqp suite (an INV with one pair as released)
SYN = "(question, f(question)) where f(question) replaces synonyms?"


def _task(name: str, task: str) -> dict:
    """A task of a tiny config, ../shared/data made absolute (snakemake runs in a temp folder), with the
    config's training block as the task's own (READ's lengths, batch sizes and learning rates)."""
    cfg = yaml.safe_load((CONFIGS / name).read_text().replace("../shared/data", str(SHARED)))
    out = cfg["tasks"][task]
    out["training"] = {**cfg["training"], **out.get("training", {})}
    return out


def tasks_config() -> dict:
    """The five tasks in one config (the PARA config's top-level settings)."""
    cfg = yaml.safe_load((CONFIGS / "tiny_para.yaml").read_text())
    released = _task("tiny_para.yaml", "para")
    released["suite"]["paper_fixes"] = False
    cfg["tasks"] = {"para": _task("tiny_para.yaml", "para"), "para_released": released,
                    "read": _task("tiny_read.yaml", "read"), "para_spec": _task("tiny_para_spec.yaml", "para"),
                    "read_spec": _task("tiny_read_spec.yaml", "read")}
    cfg.update(configurations=["iid_to_iid_plus_t"], partitions=["seen", "type"])
    cfg["predict"]["batch_size"] = 16
    return cfg


#: what the tests read (their dependencies: every task's training, predictions and outcomes)
TARGETS = ["results/para/scores/scores.csv", "results/para/plots/heatmap_seen.png",
           "results/para/plots/heatmap_type.png",
           *(f"results/para_released/outcomes/{m}.parquet" for m in ("iid/vanilla/standard/all",
                                                                   "iid_to_iid_plus_t/vanilla/seen/all")),
           "results/read/scores/scores.csv", "results/para_spec/scores/scores.csv",
           "results/read_spec/scores/scores.csv", "results/table3/table3.md"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple:
    """(working folder, config) of the five tasks' run."""
    tmp = tmp_path_factory.mktemp("tasks")
    cfg = tasks_config()
    cfg_file = tmp / "tiny_tasks.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp / "run"
    out = pipeline(wd, "--cores", "2", *TARGETS, configfiles=(cfg_file,))
    (tmp / "run.stderr").write_text(out.stderr)    # the console's last lines (test_fallback_data_is_said)
    return wd, cfg


def test_para_end_to_end(run):
    wd, cfg = run
    res = wd / "results" / "para"
    suite = pd.read_parquet(res / "suite" / "suite.parquet")
    assert list(dict.fromkeys(suite.functionality)) == cfg["tasks"]["para"]["suite"]["functionalities"]
    assert suite.inputs_b.notna().all()
    pred = pq.read_table(res / "predictions" / "iid_to_iid_plus_t" / "vanilla" / "seen" / "all.parquet")
    assert pa.types.is_list(pred.schema.field("probs").type)
    df = pred.to_pandas()
    assert (df.probs.map(len) == 2).all() and (df.split == "iid_test").sum() == 20
    scores = pd.read_csv(res / "scores" / "scores.csv")
    assert list(scores.configuration) == ["iid", "iid_to_iid_plus_t"]
    assert {"iid_accuracy", "iid_f1", "G_seen", "G_type"} <= set(scores.columns)
    row = scores.iloc[0]
    assert row.iid_score == pytest.approx((row.iid_accuracy + row.iid_f1) / 2)
    for p in ("seen", "type"):
        assert (res / "plots" / f"heatmap_{p}.png").exists()


def test_para_paper_fixes_false_trains_and_scores_the_released_synonym_test(run):
    """``paper_fixes: false`` (task para_released): the synonym functionality is the released one-pair "INV"
    (nothing to compare the pair with). Training skips those cases (no perturbation to train on) instead of
    crashing, and scoring passes every one of them, as CheckList's all_except_first does with a single
    result."""
    wd, _ = run
    res = wd / "results" / "para_released"
    suite = pd.read_parquet(res / "suite" / "suite.parquet")
    cases = suite[suite.functionality == SYN]
    assert len(cases) == 4 and (cases.test_type == "INV").all() and (cases.inputs.map(len) == 1).all()
    assert all("train" not in json.loads(p) for p in cases.expect_params)     # as released: no MFT hint
    log = (wd / "logs" / "para_released" / "finetune" / "iid_to_iid_plus_t" / "vanilla" / "seen" / "all.log"
           ).read_text()
    split = pd.read_parquet(res / "suite" / "split.parquet")
    n_train = int(split[(split.split == "train") & split.case_id.isin(set(cases.case_id))].shape[0])
    assert n_train >= 1 and f"{n_train} INV / DIR case(s) with fewer than two inputs skipped" in log
    for model in ("iid/vanilla/standard/all", "iid_to_iid_plus_t/vanilla/seen/all"):
        outcomes = pd.read_parquet(res / "outcomes" / f"{model}.parquet")
        scored = outcomes[outcomes.case_id.isin(set(cases.case_id))]
        assert len(scored) >= 1 and (scored.status == "pass").all(), model


def test_read_end_to_end(run):
    wd, _ = run
    res = wd / "results" / "read"
    split = pd.read_parquet(res / "suite" / "split.parquet")
    suite = pd.read_parquet(res / "suite" / "suite.parquet")
    test = suite[suite.case_id.isin(set(split.case_id[split.split == "test"]))]
    for f in (res / "predictions").rglob("*.parquet"):
        df = pd.read_parquet(f)
        assert {"split", "case_id", "input_idx", "answer", "start", "end"} <= set(df.columns)
        # each model predicts the T_test functionalities it is scored on (held-out ones for a type fold)
        held = json.loads(f.with_suffix(".json").read_text()).get("held_out") or list(test.functionality.unique())
        n_inputs = int(test[test.functionality.isin(set(held))].inputs.map(len).sum())
        st = df[df.split == "suite_test"]
        assert len(st) == n_inputs and not st.duplicated(["case_id", "input_idx"]).any()
        assert (df.split == "iid_test").sum() == 16
    # two test types present -> two type folds
    assert sorted(p.stem for p in (res / "predictions" / "iid_to_iid_plus_t" / "vanilla" / "type").glob(
        "*.parquet")) == ["inv", "mft"]
    scores = pd.read_csv(res / "scores" / "scores.csv")
    assert {"iid_em", "iid_f1", "G_seen", "G_type"} <= set(scores.columns)
    assert scores.iid_em.between(0, 1).all() and scores.iid_f1.between(0, 1).all()
    outcomes = pd.read_parquet(res / "outcomes" / "iid" / "vanilla" / "standard" / "all.parquet")
    assert set(outcomes.status.dropna()) <= {"pass", "fail", "filtered"}


@pytest.mark.parametrize("task", ["para", "read"])
def test_spec_built_suites_end_to_end(run, task):
    """The project's own PARA and READ specs (beluga/suites/packaged_specs/{para,read}_default.yaml), rendered by the
    pipeline (suite.generate) from templates and offline sentences, train and score end to end; the suite is
    the one `python -m beluga suite build` renders with the same settings."""
    from beluga.suites.spec import catalogue, load_sources, load_spec, render_spec

    wd, cfg = run
    res = wd / "results" / f"{task}_spec"
    suite = pd.read_parquet(res / "suite" / "suite.parquet")
    spec = load_spec(f"{task}_default")
    assert list(dict.fromkeys(suite.functionality)) == [f["functionality"] for f in catalogue(spec)]
    block = cfg["tasks"][f"{task}_spec"]["suite"]
    built = render_spec(spec, load_sources(spec), seed=block["seed"],
                        cases_per_functionality=block["cases_per_functionality"], max_perturbations=3, max_words=40)
    assert [list(x) for x in suite.inputs] == [list(x) for x in built.inputs]
    assert [list(x) for x in suite.inputs_b] == [list(x) for x in built.inputs_b]
    scores = pd.read_csv(res / "scores" / "scores.csv")
    assert list(scores.configuration)[0] == "iid" and scores.G_seen.between(0, 1).all()
    table3 = (wd / "results" / "table3" / "table3.md").read_text()
    assert f"{task.upper()}_SPEC† · G_seen" in table3   # † (a footnote): the staged i.i.d. data, not the paper's


def test_fallback_data_is_said_in_tables_report_and_console(run, tmp_path):
    """Every task reads a staged fallback (the Quora release, the SQuAD dev set alone): Table 3 marks
    each † with a footnote naming task and source, scores.md says it, the prepare_iid log has the
    warning, the report's i.i.d. data page lists them, and the run's last lines name them."""
    wd, cfg = run
    md = (wd / "results" / "table3" / "table3.md").read_text()
    lines = {}
    for task, tcfg in cfg["tasks"].items():
        src = tcfg["iid"]["source"]
        rec = json.loads((wd / "results" / task / "iid" / "source.json").read_text())
        assert rec["source"] == src and not rec["paper_split"] and rec["fallback"]
        lines[task] = f"{task.upper()} (iid.source {src}): trained and tested on {rec['fallback']}."
        assert f"| {task.upper()}† · i.i.d." in md and f"- {lines[task]}" in md
        log = (wd / "logs" / task / "prepare_iid.log").read_text()
        assert f"{task}: i.i.d. data not the paper's (iid.source {src}): {rec['fallback']}" in log
    assert "GLUE QQP (QQP-clean.zip: 363,846 train / 40,430 dev)" in lines["para"]
    assert "no train-v1.1.json" in lines["read"] and "SQuAD v1.1 (train-v1.1.json, dev-v1.1.json" in lines["read"]
    scores = (wd / "results" / "read" / "scores" / "scores.md").read_text().splitlines()
    assert scores[2].startswith(f"**Not the paper's i.i.d. data**: {lines['read']}")
    stderr = (wd.parent / "run.stderr").read_text().splitlines()
    at = next(i for i, ln in enumerate(stderr) if ln.startswith("BELUGA warning: the i.i.d. data of 5 task(s)"))
    assert stderr[at + 1:at + 6] == [f"  {lines[t]}" for t in cfg["tasks"]]
    report = tmp_path / "report.html"
    pipeline(wd, "--report", str(report), *TARGETS, configfiles=(wd.parent / "tiny_tasks.yaml",))
    found = re.search(r"filename=iid_data\.html;base64,([A-Za-z0-9+/=]+)", report.read_text(errors="replace"))
    page = base64.b64decode(found.group(1)).decode()
    assert "<strong>Not the paper's i.i.d. data</strong>" in page and page.count("no: fallback") == 5
