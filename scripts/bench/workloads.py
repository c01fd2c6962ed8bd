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
#: SQuAD's training questions put in the bundle (READ's workload): enough for 40 warm-up + 400 timed steps of 3
QA_TRAIN = 1500


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
                         # / qa (SQuAD questions, READ's span loss)
    streams: dict
    heldout: list
    seed: int = 1
    task: str = "sent"   # the task type whose loss it trains: sent (classification) / read (spans)

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
                  iid=None, tmp: Path | None = None, squad: str | None = None) -> Workload:
    """The workload ``data`` (fold / long / qa) for ``model`` at ``length`` tokens, batch ``batch``: from the
    bundle, else built from the default fold (``ttype``, ``streams``, ``iid``) or SQuAD (``qa``, staged in
    ``tmp``)."""
    import pandas as pd

    from beluga.train.streams import build_streams

    if common.BUNDLE is not None:
        return bundle_workload(name, model, length, batch, data)
    if data == "qa":
        _, qa_streams, heldout = qa_data(tmp, squad)
        return Workload(name, model, length, batch, data, qa_streams, heldout[:batch], task="read")
    test = pd.read_parquet(iid["test"])
    if data == "long":
        streams = {"iid": long_items(ttype, pd.read_parquet(iid["train"]), length)}
        heldout = long_items(ttype, test, length)[:batch]
    else:
        heldout = build_streams(ttype, test.head(batch), None)["iid"]
    return Workload(name, model, length, batch, data, streams, heldout)


def qa_data(tmp: Path, squad: str | None) -> tuple:
    """(READ's task type, its training items, its held-out items): SQuAD questions from ``squad`` (the folder
    the ``squad`` i.i.d. source reads; default: ``../shared/data/iid/squad`` beside the repository), staged as
    the pipeline stages them."""
    import pandas as pd

    from beluga.core.tasks import get_task_type
    from beluga.steps import data
    from beluga.train.streams import build_streams

    path = Path(squad) if squad else REPO.parent / "shared" / "data" / "iid" / "squad"
    if not path.is_dir():
        raise SystemExit(f"benchmark --make-bundle: {path}: no such folder (READ's workload reads SQuAD v1.1: "
                         "fetch the paper data, or give its folder with --squad)")
    iid = {k: str(tmp / f"squad-{k}.parquet") for k in ("train", "val", "test", "pool")}
    data.prepare_iid(iid={"source": "squad", "path": str(path), "n_train": QA_TRAIN, "n_val": 8,
                          "n_test": HELDOUT, "seed": 42}, task_type="read", outputs=iid)
    ttype = get_task_type("read")
    train = build_streams(ttype, pd.read_parquet(iid["train"]), None)
    heldout = build_streams(ttype, pd.read_parquet(iid["test"]), None)["iid"][:HELDOUT]
    return ttype, train, heldout
