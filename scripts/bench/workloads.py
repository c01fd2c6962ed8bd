"""The data the benchmarks train on: the default suite's seen fold (:func:`default_fold`) and the training
variants' workloads (:class:`Workload`: a model, its length and batch, the streams and a held-out batch)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bench import common
from bench.common import REPO

#: held-out items kept per workload (a variant's held-out batch is the first ``batch`` of them)
HELDOUT = 32
#: training examples of each paper source put in the bundle (SST-2, QQP, SQuAD: a seeded sample): enough for
#: 40 warm-up + 400 timed steps of 3, or 90 steps of 16
PAPER_TRAIN = 1500


def default_fold(tmp: Path):
    """The embedded default's suite and i.i.d. data (built in ``tmp``), and the
    training streams of the seen fold of IID→(IID+T) with the default's mix."""
    import pandas as pd

    from beluga.core.tasks import get_task_type
    from beluga.steps import data
    from beluga.suites.build import split_cases
    from beluga.train.streams import build_streams
    from beluga.workflow.plan import load_config

    cfg = load_config(str(REPO / "config.yaml"))   # validated, the schema's defaults filled
    task_cfg = cfg["tasks"]["sent"]
    iid = {k: str(tmp / f"{k}.parquet") for k in ("train", "val", "test", "pool")}
    data.prepare_iid(iid=task_cfg["iid"], task_type="sent", outputs=iid)
    data.build_suite(suite=task_cfg["suite"], task_type="sent", pool=iid["pool"], out_suite=str(tmp / "suite.parquet"))
    data.split_suite(suite=str(tmp / "suite.parquet"), task_type="sent", fractions=cfg["split"]["fractions"],
                     seed=cfg["split"]["seed"], out_split=str(tmp / "split.parquet"),
                     out_summary=str(tmp / "summary.tsv"))
    ttype = get_task_type("sent")
    suite_train = split_cases(str(tmp / "suite.parquet"), str(tmp / "split.parquet"), "sent", "train")
    mix = pd.read_parquet(iid["train"])
    n_mix = cfg["training"]["iid_in_mix"]
    if n_mix is not None and len(mix) > n_mix:
        mix = mix.sample(n=int(n_mix), random_state=1).reset_index(drop=True)
    return ttype, build_streams(ttype, mix, suite_train), cfg, iid


@dataclass
class Workload:
    """What a block of variants trains: the model, its length and batch size, the streams (all variants draw
    the same seeded batches from them: ``beluga.train.batches.epoch_batches`` with the generator (seed, epoch)) and
    the held-out i.i.d. batch the drift's loss is measured on."""

    name: str            # base / large
    model: str
    max_length: int
    batch: int
    data: str            # fold (the default suite's seen fold) / long (i.i.d. sentences joined into full windows)
                         # / sst2, qqp (the paper's SST-2 / QQP data) / qa (SQuAD questions, READ's span loss)
    streams: dict
    heldout: list
    seed: int = 1
    task: str = "sent"   # the task type whose loss it trains: sent, para (classification) / read (spans)

    @property
    def head(self) -> str:
        return "qa" if self.task == "read" else "classification"

    def save(self, path: Path) -> Path:
        """As JSON (the worker processes read it; no pickle: tests/test_safety.py)."""
        import dataclasses

        d = dict(self.__dict__)
        d["streams"] = {k: [dataclasses.asdict(it) for it in v] for k, v in self.streams.items()}
        d["heldout"] = [dataclasses.asdict(it) for it in self.heldout]
        path.write_text(json.dumps(d))
        return path

    @classmethod
    def load(cls, path: str) -> Workload:
        from beluga.train.batches import TrainItem

        d = json.loads(Path(path).read_text())
        d["streams"] = {k: [TrainItem(**it) for it in v] for k, v in d["streams"].items()}
        d["heldout"] = [TrainItem(**it) for it in d["heldout"]]
        return cls(**d)


def long_items(ttype, df, length: int) -> list:
    """i.i.d. sentences joined in order until a text has 8 characters per token of ``length`` (so it fills a
    window of ``length`` tokens and is truncated there), with the first sentence's label: full windows."""
    import numpy as np

    from beluga.train.batches import TrainItem

    items, parts, size, label = [], [], 0, 0
    eye = np.eye(ttype.num_model_labels)
    for text, y in zip(df["text"], df["label"]):
        if not parts:
            label = int(y)
        parts.append(str(text))
        size += len(text) + 1
        if size >= 8 * length:
            items.append(TrainItem("iid", [" ".join(parts)], None, list(eye[label])))
            parts, size = [], 0
    return items


def bundle_workload(name: str, model: str, length: int, batch: int, data: str) -> Workload:
    """A workload from the bundle's data (:mod:`bench.bundle`)."""
    from beluga.train.batches import TrainItem

    d = common.BUNDLE["workloads"][data]
    if data == "long" and length > d["length"]:
        raise SystemExit(f"benchmark --bundle: its long windows are {d['length']} tokens, {length} asked for "
                         f"(make the bundle with --max-length {length})")
    streams = {k: [TrainItem(**it) for it in v] for k, v in d["streams"].items()}
    heldout = [TrainItem(**it) for it in d["heldout"]][:batch]
    return Workload(name, model, length, batch, data, streams, heldout, task=d["task"])


def make_workload(name: str, model: str, length: int, batch: int, data: str, ttype=None, streams=None,
                  iid=None, tmp: Path | None = None, paper: str | None = None) -> Workload:
    """The workload ``data`` (fold / long / sst2 / qqp / qa) for ``model`` at ``length`` tokens, batch ``batch``:
    from the bundle, else built from the default fold (``ttype``, ``streams``, ``iid``) or the paper's data
    (:func:`paper_data`, staged in ``tmp``)."""
    import pandas as pd

    from beluga.train.streams import build_streams

    if common.BUNDLE is not None:
        return bundle_workload(name, model, length, batch, data)
    if data in PAPER_SOURCES:
        ttype, paper_streams, heldout = paper_data(tmp, data, paper)
        return Workload(name, model, length, batch, data, paper_streams, heldout[:batch], task=ttype.name)
    test = pd.read_parquet(iid["test"])
    if data == "long":
        streams = {"iid": long_items(ttype, pd.read_parquet(iid["train"]), length)}
        heldout = long_items(ttype, test, length)[:batch]
    else:
        heldout = build_streams(ttype, test.head(batch), None)["iid"]
    return Workload(name, model, length, batch, data, streams, heldout)


#: the paper's i.i.d. sources the bundle carries as workloads: source -> (task type, the data's name)
PAPER_SOURCES = {"sst2": ("sent", "SST-2 sentences"), "qqp": ("para", "QQP question pairs"),
                 "qa": ("read", "SQuAD questions")}


def paper_data(tmp: Path, data: str, folder: str | None) -> tuple:
    """(the task type, its training items, its held-out items) of the paper source ``data`` (sst2 / qqp / qa:
    SQuAD), from its folder under ``folder`` (the paper data's i.i.d. folder, ``sst2/``, ``qqp/``, ``squad/``;
    default: ``../shared/data/iid`` beside the repository): a seeded sample of :data:`PAPER_TRAIN` training
    examples staged as the pipeline stages them, so their lengths are the data's."""
    import pandas as pd

    from beluga.core.tasks import get_task_type
    from beluga.steps import data as steps_data
    from beluga.train.streams import build_streams

    task_type, what = PAPER_SOURCES[data]
    source = "squad" if data == "qa" else data
    path = (Path(folder) if folder else REPO.parent / "shared" / "data" / "iid") / source
    if not path.is_dir():
        raise SystemExit(f"benchmark --make-bundle: {path}: no such folder (the {what} workload reads it: fetch the "
                         "paper data, or give the folder holding sst2/, qqp/ and squad/ with --paper-data)")
    iid = {k: str(tmp / f"{data}-{k}.parquet") for k in ("train", "val", "test", "pool")}
    steps_data.prepare_iid(iid={"source": source, "path": str(path), "n_train": PAPER_TRAIN, "n_val": 8,
                                "n_test": HELDOUT, "seed": 42}, task_type=task_type, outputs=iid)
    ttype = get_task_type(task_type)
    train = build_streams(ttype, pd.read_parquet(iid["train"]), None)
    heldout = build_streams(ttype, pd.read_parquet(iid["test"]), None)["iid"][:HELDOUT]
    return ttype, train, heldout
