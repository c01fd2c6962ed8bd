"""Token lengths measured once per staged dataset (beluga/data/lengths.py) and the GPU plan's padded lengths from
them (beluga/workflow/steps.py). The real-data test needs ../shared/data (skipped without it)."""

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from beluga.core.errors import DataError
from beluga.data import lengths as L
from beluga.workflow import steps

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"

SENTENCES = {"good movie": 4, "the film is great": 6, "bad": 3}   # [CLS] + WordPiece tokens + [SEP]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from beluga.model.modeling import default_model_path

    return AutoTokenizer.from_pretrained(default_model_path())


def sst2_folder(root: Path, sentences) -> Path:
    folder = root / "iid" / "sst2"
    folder.mkdir(parents=True)
    (folder / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"{s}\t1\n" for s in sentences))
    (folder / "dev.tsv").write_text("sentence\tlabel\nfine\t1\nawful\t0\nnice\t1\nugly\t0\n")
    return folder


def sent_task(folder: Path) -> dict:
    return {"type": "sent", "model": "default", "iid": {"source": "sst2", "path": str(folder), "seed": 42}}


def write(task: dict, tokenizer, max_length: int = 4, stride: int = 128) -> Path:
    info = L.tokenizer_info(tokenizer, "default", "")
    rec = L.measure_record(task, tokenizer, info, max_length, stride)
    path = L.record_path(task["iid"], task["model"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))
    return path


def test_a_sentence_tasks_statistics_are_its_items_exact_token_counts(tmp_path, tokenizer):
    task = sent_task(sst2_folder(tmp_path, SENTENCES))
    info = L.tokenizer_info(tokenizer, "default", "")
    assert info["key"] == "bert-uncased" and info["vocab_sha256"] == L.BERT_UNCASED_VOCAB
    rec = L.measure_record(task, tokenizer, info, 4, 128)
    assert (rec["n"], rec["mean"], rec["p50"], rec["p99"], rec["max"]) == (3, 13 / 3, 4, 6, 6)
    assert rec["over_max_length"] == pytest.approx(1 / 3) and rec["histogram"] == [3]
    assert set(rec["files"]) == {str(task["iid"]["path"] + "/train.tsv"), str(task["iid"]["path"] + "/dev.tsv")}
    assert all(len(f["sha256"]) == 64 for f in rec["files"].values())


def test_pairs_carry_both_texts_and_read_its_windows(tokenizer):
    pairs = pd.DataFrame({"text": ["good movie", "what is love"], "text_b": ["bad", "why is the sky blue"]})
    assert L.token_lengths(tokenizer, pairs, "para", 128, 0) == ([6, 11], None)   # one [CLS], two [SEP]
    qa = pd.DataFrame({"question": ["  who"], "context": [" ".join(["cat"] * 21)]})
    # 1 + 21 + 3 tokens; windows of 12 context tokens stepping by 12 - 4: [0, 12), [8, 20), [16, 21)
    assert L.token_lengths(tokenizer, qa, "read", 16, 4) == ([25], [16, 16, 9])


def test_histogram_buckets_and_quantiles():
    assert L.histogram([1, 16, 17, 32, 33]) == [2, 2, 1]
    assert L.quantile([1, 2, 3, 4], 0.5) == 2 and L.quantile([1, 2, 3, 4], 0.99) == 4
    with pytest.raises(DataError, match="no items"):
        L.length_summary([], 128)


def measured(hist, task_type="para", per_item=1.0) -> L.MeasuredLengths:
    return L.MeasuredLengths(task_type, "rec.json", tuple(hist), per_item, 20.0, 30, 0.0, "default")


def test_padded_length_from_a_histogram_is_the_exact_expectation():
    half = measured([1, 1])   # half the rows 16 tokens (bucket 1), half 32
    assert steps.padded_length(half, 1, 512, "reference") == pytest.approx(24.0)
    assert steps.padded_length(half, 2, 512, "reference") == pytest.approx(16 * 0.25 + 32 * 0.75)
    # one row a batch, sorted pools: the mean of the pool's order statistics is the distribution's mean
    assert steps.padded_length(half, 1, 512, "project") == pytest.approx(24.0)
    assert steps.padded_length(half, 4, 512, "project") < steps.padded_length(half, 4, 512, "reference")
    assert steps.padded_length(half, 2, 20, "reference") == pytest.approx(16 * 0.25 + 20 * 0.75)   # capped
    assert steps.windows_per_item(measured([1], "read", 1.25), 384) == 1.25


def test_the_plan_takes_a_fresh_record_and_says_so(tmp_path, tokenizer):
    task = sent_task(sst2_folder(tmp_path, SENTENCES))
    got, words = L.plan_lengths(task, "bert-base-uncased", 4, 128)
    assert got is None and words.startswith("no record")
    path = write(task, tokenizer)
    got, words = L.plan_lengths(task, "bert-base-uncased", 4, 128)   # the same vocabulary: the same record
    assert words == f"measured: {path}" and got.histogram == (3,) and got.over == pytest.approx(1 / 3)
    text = steps.length_words([((12, 768, 3072), got, 128, "project"), ((12, 768, 3072), "para", 128, "project")])
    assert f"sent measured: {path} (mean 4.3, p99 6" in text and "para published, mean 30.5" in text
    assert steps.padded_length(got, 16, 128) == 16.0 != steps.padded_length("sent", 16, 128)
    assert L.plan_lengths(task, "default", 16, 128)[0].over == 0.0   # another max_length: from the buckets
    other, why = L.plan_lengths({**task, "model": "roberta-base"}, "roberta-base", 4, 128)
    assert other is None and "roberta-base.json" in why


def test_a_record_whose_data_changed_is_not_used(tmp_path, tokenizer):
    folder = sst2_folder(tmp_path, SENTENCES)
    task = sent_task(folder)
    path = write(task, tokenizer)
    train = folder / "train.tsv"
    train.write_text(train.read_text() + "a new sentence\t0\n")
    got, words = L.plan_lengths(task, "default", 4, 128)
    assert got is None and f"{train} changed" in words and str(path) in words
    os.utime(train, ns=(1, 1))
    assert "changed" in L.plan_lengths(task, "default", 4, 128)[1]
    got, words = L.plan_lengths({**task, "iid": {**task["iid"], "seed": 7}}, "default", 4, 128)
    assert got is None and "seed 42" in words


def test_reads_windows_at_other_settings_are_not_used_and_a_broken_record_is_one_line(tmp_path):
    folder = tmp_path / "iid" / "squad"
    (folder / "lengths").mkdir(parents=True)
    (folder / "dev-v1.1.reconstructed.json.gz").write_bytes(b"x")
    task = {"type": "read", "model": "default", "iid": {"source": "squad", "path": str(folder), "seed": 42}}
    files = L.file_stats([folder / "dev-v1.1.reconstructed.json.gz"])
    rec = {"format": 1, "source": "squad", "seed": 42, "task_type": "read", "files": files, "n": 2, "mean": 300.0,
           "max_length": 384, "doc_stride": 128, "histogram": [0] * 19 + [1] + [0] * 4 + [1],
           "windows": {"per_item": 1.5, "histogram": [0] * 10 + [1] + [0] * 12 + [2]},
           "tokenizer": {"key": "bert-uncased", "name": "default"}}
    (folder / "lengths" / "bert-uncased.json").write_text(json.dumps(rec))
    got, words = L.plan_lengths(task, "default", 384, 128)
    assert words.startswith("measured") and got.windows_per_item == 1.5 and got.over == pytest.approx(0.5)
    assert steps.padded_length(got, 3, 384, "reference") == pytest.approx(384 - (1 / 3) ** 3 * (384 - 176))
    got, words = L.plan_lengths(task, "default", 256, 128)
    assert got is None and "max_length 384 / doc_stride 128, the task's 256 / 128" in words
    (folder / "lengths" / "bert-uncased.json").write_text(json.dumps({**rec, "histogram": [0, 0]}))
    with pytest.raises(DataError, match=r"bert-uncased.json: field 'histogram'"):
        L.plan_lengths(task, "default", 384, 128)
    (folder / "lengths" / "bert-uncased.json").write_text(json.dumps({**rec, "p99": "459 tokens"}))
    with pytest.raises(DataError, match=r"bert-uncased.json: field 'p99': not a number"):
        L.plan_lengths(task, "default", 384, 128)


@pytest.mark.skipif(not (SHARED / "iid" / "sst2").is_dir(), reason=f"real data folder {SHARED} is absent")
def test_sst2_measured_with_the_uncased_wordpiece_tokenizer_agrees_with_the_published_figure(tokenizer):
    task = {"type": "sent", "model": "default", "iid": {"source": "sst2", "path": str(SHARED / "iid" / "sst2"),
                                                         "seed": 42}}
    rec = L.measure_record(task, tokenizer, L.tokenizer_info(tokenizer, "default", ""), 128, 128)
    assert rec["n"] == 67_349 and rec["over_max_length"] == 0.0
    assert rec["mean"] == pytest.approx(steps.LENGTHS["sent"][0], abs=0.5)   # published: 13 tokens
