"""End-to-end: precision and the fold job's model handling. The same
configuration, seed, threads and precision give the same bytes (bf16 and
fp32 alike, on the CPU); bf16 is really applied (its predictions differ from
fp32's); keeping the fold models on disk (keep_models: true: finetune_model,
then predict and outcomes from the saved model) predicts exactly what the
fused fold job predicts with the model in memory."""

from pathlib import Path

import pytest
import yaml
from conftest import TINY, planned_jobs, smk

pytestmark = pytest.mark.slow


def _config(tmp: Path, name: str, **extra) -> Path:
    cfg = yaml.safe_load(TINY.read_text())
    cfg.update(configurations=["iid_to_t"], partitions=["seen", "type"], **extra)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _predictions(workdir: Path) -> dict[str, bytes]:
    root = workdir / "results" / "sent" / "predictions"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name, extra in (("bf16_a", {"precision": "bf16"}), ("bf16_b", {"precision": "bf16"}),
                        ("fp32_a", {"precision": "fp32"}), ("fp32_b", {"precision": "fp32"}),
                        ("fp32_keep", {"precision": "fp32", "keep_models": True})):
        wd = tmp_path_factory.mktemp(name)
        cfg = _config(wd, name, **extra)
        if name == "fp32_keep":
            jobs = planned_jobs(wd, configfiles=(cfg,))
            assert jobs["finetune_model"] == 4 and jobs["predict"] == 5 and jobs["outcomes"] == 5, jobs
            assert "finetune" not in jobs, jobs
        smk(wd, "--cores", "2", configfiles=(cfg,))
        out[name] = wd
    return out


def test_same_bytes_for_the_same_precision(runs):
    for a, b in (("bf16_a", "bf16_b"), ("fp32_a", "fp32_b")):
        pa_, pb = _predictions(runs[a]), _predictions(runs[b])
        assert len(pa_) == 5 and pa_ == pb, a


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
