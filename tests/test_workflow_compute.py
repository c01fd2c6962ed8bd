"""End-to-end: precision and the fold job's model handling. The same
configuration, seed, threads and precision give the same bytes (bf16 and
fp32 alike, on the CPU: the IID model and a fold trained again in a copy of a
finished run predict what they predicted the first time); predicting all
of T_test in every fold (predict.scope: all) changes no score, statistic or
Table 3; bf16 is really applied (its predictions differ from
fp32's); keeping the fold models on disk (keep_models: true: finetune_model,
then predict and outcomes from the saved model) predicts exactly what the
fused fold job predicts with the model in memory."""

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import TINY, copy_run, pipeline, planned_jobs


def _config(tmp: Path, name: str, **extra) -> Path:
    cfg = yaml.safe_load(TINY.read_text())
    cfg.update(configurations=["iid_to_t"], partitions=["seen", "type"], **extra)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _predictions(workdir: Path) -> dict[str, bytes]:
    root = workdir / "results" / "sent" / "predictions"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


#: what the tests read (the figures, diagnostics and failure pages are not needed)
PREDICTIONS = [f"results/sent/predictions/{m}.parquet" for m in (
    "iid/vanilla/standard/all", "iid_to_t/vanilla/seen/all", "iid_to_t/vanilla/type/mft",
    "iid_to_t/vanilla/type/inv", "iid_to_t/vanilla/type/dir")]
#: the score tables, statistics and Table 3 (predict.scope: all must leave them as they are)
COMPARED = ("sent/scores/pass_rates.csv", "sent/scores/scores.csv", "sent/stats/unit_outcomes.parquet",
            "sent/stats/significance.csv", "sent/stats/intervals.csv", "table3/table3.csv", "table3/table3.md")
SCORES = [f"results/{name}" for name in COMPARED]
#: rerun on a copy of a finished run: the IID model (and its predictions) and one fold
RERUN = ["results/sent/models/iid/vanilla/standard/all", PREDICTIONS[0], PREDICTIONS[3]]


def _rerun(src: Path, dst: Path, cfg: Path) -> Path:
    """The IID model and one fold trained again in a copy of a finished run (their files removed, so
    snakemake reruns exactly those jobs): the same seed must give the same bytes."""
    copy_run(src, dst)
    shutil.rmtree(dst / RERUN[0])
    for rel in RERUN[1:]:
        (dst / rel).unlink()
    jobs = planned_jobs(dst, configfiles=(cfg,), targets=RERUN)
    assert jobs == {"train_iid": 1, "predict": 1, "finetune": 1}, jobs
    pipeline(dst, "--cores", "2", *RERUN, configfiles=(cfg,))
    return dst


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name, extra in (("bf16_a", {"precision": "bf16"}), ("fp32_a", {"precision": "fp32"}),
                        ("fp32_keep", {"precision": "fp32", "keep_models": True})):
        wd = tmp_path_factory.mktemp(name)
        cfg = _config(wd, name, **extra)
        if name == "fp32_keep":
            jobs = planned_jobs(wd, configfiles=(cfg,))
            assert jobs["finetune_model"] == 4 and jobs["predict"] == 5 and jobs["outcomes"] == 5, jobs
            assert "finetune" not in jobs, jobs
        pipeline(wd, "--cores", "2", *PREDICTIONS, *(SCORES if name.startswith("fp32") else ()), configfiles=(cfg,))
        out[name] = wd
        if name != "fp32_keep":
            b = name.replace("_a", "_b")
            out[b] = _rerun(wd, tmp_path_factory.mktemp(b) / "run", cfg)
        if name == "fp32_a":   # the same run with predict.scope: all (its fold jobs run again in a copy)
            every = copy_run(wd, tmp_path_factory.mktemp("fp32_all") / "run")
            cfg_all = _config(every.parent, "fp32_all", precision="fp32", predict={"batch_size": 32, "scope": "all"})
            pipeline(every, "--cores", "2", *PREDICTIONS, *SCORES, configfiles=(cfg_all,))
            out["fp32_all"] = every
    return out


def test_same_bytes_for_the_same_precision(runs):
    for a, b in (("bf16_a", "bf16_b"), ("fp32_a", "fp32_b")):
        pa_, pb = _predictions(runs[a]), _predictions(runs[b])
        assert len(pa_) == 5 and pa_ == pb, a
        # the rerun wrote the IID model's and one fold's predictions anew (not the copy's files)
        for rel in RERUN[1:]:
            assert (runs[b] / rel).stat().st_mtime_ns > (runs[a] / rel).stat().st_mtime_ns, rel


def test_bf16_is_applied(runs):
    bf16, fp32 = _predictions(runs["bf16_a"]), _predictions(runs["fp32_a"])
    assert bf16.keys() == fp32.keys()
    assert all(bf16[k] != fp32[k] for k in bf16)
    import json

    rec = json.loads((runs["bf16_a"] / "results/sent/predictions/iid_to_t/vanilla/seen/all.json").read_text())
    assert rec["precision"] == "bf16" and rec["fused_optimizer"] is True


def test_kept_models_predict_what_the_fold_job_predicts(runs):
    keep = runs["fp32_keep"]
    assert _predictions(keep) == _predictions(runs["fp32_a"])
    for name in ("scores/scores.csv", "stats/significance.csv"):
        assert (keep / "results/sent" / name).read_bytes() == (runs["fp32_a"] / "results/sent" / name).read_bytes()
    # the fold models stay on disk
    assert any((keep / "results/sent/models/iid_to_t/vanilla/seen/all").glob("*.safetensors"))


def test_predicting_everything_changes_no_score_or_statistic(runs):
    """predict.scope: all (every fold model predicts all of T_test) gives the same pass rates, scores,
    statistics and Table 3, byte for byte, as the default (each fold predicts what it is scored on)."""
    few_run, every_run = runs["fp32_a"], runs["fp32_all"]
    for name in COMPARED:
        assert (few_run / "results" / name).read_bytes() == (every_run / "results" / name).read_bytes(), name
    fold = "sent/predictions/iid_to_t/vanilla/type/inv.parquet"
    few, every = (pd.read_parquet(d / "results" / fold) for d in (few_run, every_run))
    assert set(few.case_id[few.split == "suite_test"]) < set(every.case_id[every.split == "suite_test"])
