"""The paper's i.i.d. datasets in a task's data folder (``iid.path``): GLUE
SST-2, GLUE QQP (else the Quora Question Pairs release) and SQuAD v1.1 --
where their files are, how they are read and how each is split into train /
val / test. :mod:`beluga.data.iid` calls these for the sources ``sst2``,
``qqp`` and ``squad``; GLUE's MNLI, QNLI, RTE, CoLA and STS-B (``mnli``, ``qnli``, ``rte``,
``cola``, ``stsb``) are dataset folders too, located, read and split by :mod:`beluga.data.glue`.

Which files a dataset folder's source reads, when several are present:
:func:`locate` (the precedence); :func:`beluga.data.iid.source_files` (the
rule's declared inputs) and :func:`beluga.data.iid.describe_source` (origin
and split rule in words, :func:`split_rule`, for ``source.json`` and run
records) follow it. Zip archives are read in memory, never extracted. GLUE's
TSVs are read without quote processing, as GLUE's own loaders read them
(:func:`read_glue_tsv`); the Quora release with standard CSV quoting
(:func:`read_quora_release`). An official validation set is halved into val
and test (:func:`halve`), as the paper does; the Quora release is split by a
hash of the pair id (:func:`qqp_bucket`); SQuAD by article (see
:mod:`beluga.data.squad`).
"""

from __future__ import annotations

import csv
import hashlib
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import DataError
from beluga.data.glue import GLUE_SOURCES, GLUE_SPECS, expected_files, glue_split_rule, locate_glue
from beluga.data.located import FETCH_HINT, Located, first_file, halve, read_glue_tsv, tsv_names
from beluga.data.tables import checked_labels

_log = logging.getLogger(__name__)

#: what a missing dataset folder or file tells the user to do
#: the dataset-folder sources; GLUE's MNLI / QNLI / RTE / CoLA / STS-B are located and read by beluga.data.glue
DATASET_SOURCES = ("sst2", "qqp", "squad", *GLUE_SOURCES)
SST2_FILES = ("train.tsv", "dev.tsv")                 # the staged offline layout (today's names)
QQP_FILE = "quora_duplicate_questions.tsv.gz"         # the Quora release, as staged in ../shared/data
QQP_RELEASE_FILES = ("quora_duplicate_questions.tsv", QQP_FILE)
SQUAD_FILE = "dev-v1.1.reconstructed.json.gz"         # the staged reconstruction of the official dev set
#: the official downloads the fetch target writes into each source's folder (the first form of :func:`locate`)
FETCHED_FILES = {"sst2": ("SST-2.zip",), "qqp": ("QQP-clean.zip",), "squad": ("train-v1.1.json", "dev-v1.1.json"),
                 **{s: spec.archives[:1] for s, spec in GLUE_SPECS.items()}}
#: GLUE's archives and the folder each unpacks to, per source, in order of precedence
GLUE_ARCHIVES = {"sst2": (("SST-2.zip",), "SST-2"), "qqp": (("QQP-clean.zip", "QQP.zip"), "QQP")}
#: the GLUE columns each source reads (GLUE's train / dev TSVs have a header row)
GLUE_COLUMNS = {"sst2": ("sentence", "label"), "qqp": ("id", "question1", "question2", "is_duplicate")}
#: the paper's official files per source: (dataset, files, rows of the train file, rows of the dev file); the
#: paper trains on the train file and halves the dev file into val / test. Row counts as GLUE's loaders read
#: the files (SST-2 sentences, QQP pairs of QQP-clean.zip; Hugging Face's glue / squad datasets have the same)
#: and SQuAD v1.1's questions; SST-2's and SQuAD dev's match ../shared/data (tests/test_fallback.py).
PAPER_FILES = {"sst2": ("GLUE SST-2", "SST-2.zip", 67_349, 872),
               "qqp": ("GLUE QQP", "QQP-clean.zip", 363_846, 40_430),
               "squad": ("SQuAD v1.1", "train-v1.1.json, dev-v1.1.json", 87_599, 10_570),
               **{s: (spec.name, spec.archives[0], spec.train_rows, spec.dev_rows) for s, spec in GLUE_SPECS.items()}}


def paper_sizes(source: str) -> dict[str, int]:
    """train / val / test rows of ``source``'s official files split as the paper does: the train
    file; the dev file halved (:func:`halve`: val gets the smaller half; SQuAD's halves are by article,
    so there they differ from these by a few questions)."""
    _name, _files, train, dev = PAPER_FILES[source]
    return {"train": train, "val": dev // 2, "test": dev - dev // 2}


def paper_data_name(source: str) -> str:
    """The paper's data of ``source`` in words, e.g. ``GLUE QQP (QQP-clean.zip: 363,846 train / 40,430 dev)``."""
    name, files, train, dev = PAPER_FILES[source]
    return f"{name} ({files}: {train:,} train / {dev:,} dev)"


#: QQP split rule for the Quora release (no GLUE files): bucket = first 8 bytes of
#: sha256("qqp:" + id) / 2**64; [0, 0.9) train, [0.9, 0.95) val, [0.95, 1) test.
#: GLUE's QQP has about 90% of the pairs in train and 10% in its validation set,
#: which the paper halves into val and test; this reproduces those proportions
#: on the public release, whose GLUE split membership is not published.
QQP_BOUNDS = (0.9, 0.95)


def _glue_pair(source: str, base: Path, shown: str, form: str) -> Located:
    """train.tsv / dev.tsv (or .gz) in ``base``; ``shown`` prefixes the names of missing files."""
    found = {r: first_file(base, tsv_names(f"{r}.tsv")) for r in ("train", "dev")}
    missing = tuple(f"{shown}{r}.tsv" for r, p in found.items() if p is None)
    files = tuple(p if p is not None else base / f"{r}.tsv" for r, p in found.items())
    return Located(source, form, files, {r: str(p) for r, p in zip(found, files)}, missing)


def locate(folder: Path, source: str) -> Located | None:
    """The files of ``source`` in ``folder`` (None when none of its forms is present).

    Precedence (the first form present is used, even if incomplete: it is
    then reported, never silently replaced by a lower one):
    - sst2: ``SST-2.zip`` (GLUE's archive, members ``SST-2/train.tsv`` and
      ``SST-2/dev.tsv``) > the unpacked folder ``SST-2/`` > ``train.tsv`` and
      ``dev.tsv`` directly in the folder;
    - qqp: GLUE's ``QQP-clean.zip`` > ``QQP.zip`` (members ``QQP/train.tsv``,
      ``QQP/dev.tsv``) > ``QQP/`` > ``train.tsv`` and ``dev.tsv`` > the Quora
      release ``quora_duplicate_questions.tsv`` > ``quora_duplicate_questions.tsv.gz``;
    - squad: ``train-v1.1.json`` with a dev file > a dev file alone; the dev
      file is ``dev-v1.1.json`` > ``dev-v1.1.json.gz`` >
      ``dev-v1.1.reconstructed.json.gz`` (``train-v1.1.json`` > ``.gz``).
    Every unpacked TSV / JSON may be gzipped (``name.gz``; the plain file wins).
    """
    if source == "squad":
        from beluga.data.squad import DEV_FILES, TRAIN_FILES

        train, dev = first_file(folder, TRAIN_FILES), first_file(folder, DEV_FILES)
        if train is not None:
            files = (train, dev if dev is not None else folder / DEV_FILES[0])
            return Located(source, "squad-paper", files, {"train": str(files[0]), "dev": str(files[1])},
                           () if dev is not None else (DEV_FILES[0],))
        return None if dev is None else Located(source, "squad-dev", (dev,), {"dev": str(dev)})
    if source in GLUE_SPECS:
        return locate_glue(folder, source)
    if source in GLUE_ARCHIVES:
        archives, sub = GLUE_ARCHIVES[source]
        zipped = first_file(folder, archives)
        if zipped is not None:
            return Located(source, "glue-zip", (zipped,), {r: f"{zipped}:{sub}/{r}.tsv" for r in ("train", "dev")})
        if (folder / sub).is_dir():
            return _glue_pair(source, folder / sub, f"{sub}/", "glue-dir")
        if any(first_file(folder, tsv_names(f"{r}.tsv")) for r in ("train", "dev")):
            return _glue_pair(source, folder, "", "glue-tsv")
    if source == "qqp":
        release = first_file(folder, QQP_RELEASE_FILES)
        if release is not None:
            return Located(source, "quora", (release,), {"table": str(release)})
    return None


#: what each source's folder may hold, for the error naming what is missing
EXPECTED = {"sst2": "SST-2.zip, SST-2/{train,dev}.tsv, or train.tsv and dev.tsv",
            "qqp": "QQP-clean.zip, QQP.zip, QQP/{train,dev}.tsv, train.tsv and dev.tsv, or " + QQP_FILE,
            "squad": "train-v1.1.json and dev-v1.1.json, or a dev file alone (dev-v1.1.json, " + SQUAD_FILE + ")",
            **{s: expected_files(s) for s in GLUE_SOURCES}}


def dataset_dir(cfg: dict, source: str) -> Path:
    """The folder of a dataset source (``iid.path``), or one DataError line naming the field."""
    if not cfg.get("path"):
        raise DataError(f"iid source {source!r}: field 'path': the folder holding the {source} files is required")
    path = Path(cfg["path"]).expanduser()
    if not path.is_dir():
        raise DataError(f"iid source {source!r}: field 'path': {path} is not a folder: {FETCH_HINT}")
    return path


def located(cfg: dict) -> Located:
    """:func:`locate` for a config's ``iid`` block, or one DataError line naming
    the field and the folder (missing folder, no files, an incomplete form)."""
    source = cfg["source"]
    folder = dataset_dir(cfg, source)
    loc = locate(folder, source)
    if loc is None:
        raise DataError(f"iid source {source!r}: field 'path': {folder} holds none of the {source} files "
                        f"({EXPECTED[source]}): {FETCH_HINT}")
    if loc.missing:
        sub = GLUE_SPECS[source].folder if source in GLUE_SPECS else GLUE_ARCHIVES.get(source, ("", ""))[1]
        dev = GLUE_SPECS[source].dev if source in GLUE_SPECS else "dev.tsv"
        first = {"glue-dir": f"{sub}/", "glue-tsv": f"train.tsv or {dev}",
                 "squad-paper": Path(loc.files[0]).name}[loc.form]
        raise DataError(f"iid source {source!r}: field 'path': {folder} lacks {', '.join(loc.missing)} "
                        f"({first} is there and comes first of {EXPECTED[source]}): {FETCH_HINT}")
    return loc


def _glue_split(loc: Located, seed: int) -> dict[str, pd.DataFrame]:
    """GLUE's train -> train; GLUE's dev halved (:func:`halve`) -> val / test."""
    out = {}
    for role in ("train", "dev"):
        df, where = read_glue_tsv(loc.parts[role], GLUE_COLUMNS[loc.source])
        if df.empty:
            raise DataError(f"{where}: field 'path': no rows")
        if loc.source == "sst2":
            width = 3 if role == "dev" else 0     # the ids of the staged TSVs: sst2-train-{i}, sst2-dev-{i:03d}
            out[role] = pd.DataFrame({"example_id": [f"sst2-{role}-{i:0{width}d}" for i in df["row"]],
                                      "text": df["sentence"], "label": checked_labels(df["label"], {0, 1}, where)})
        else:
            dup = df["id"].duplicated()
            if dup.any():
                raise DataError(f"{where}: row {int(df['row'][dup].iloc[0])}: field 'id': duplicate pair id "
                                f"{df['id'][dup].iloc[0]!r}")
            # the file's name in the id: GLUE's train and dev ids are Quora pair ids, prefixed so they cannot collide
            out[role] = pd.DataFrame({"example_id": f"qqp-{role}-" + df["id"], "text": df["question1"],
                                      "text_b": df["question2"],
                                      "label": checked_labels(df["is_duplicate"], {0, 1}, where)})
    val, test = halve(out["dev"], seed)
    return {"train": out["train"].reset_index(drop=True), "val": val, "test": test}


def load_sst2(folder: Path, seed: int) -> dict[str, pd.DataFrame]:
    """GLUE SST-2 in ``folder`` (see :func:`locate`): train; dev halved into val / test."""
    return _glue_split(located({"source": "sst2", "path": str(folder)}), seed)


def qqp_bucket(pair_id: str) -> float:
    h = hashlib.sha256(f"qqp:{pair_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def read_quora_release(path: Path) -> pd.DataFrame:
    """The Quora Question Pairs release (``quora_duplicate_questions.tsv[.gz]``)
    with its CSV quoting undone: the file quotes a field that holds a ``"``, a
    tab or a newline, doubling the quotes inside (``"When do you use ""&""
    instead of ""and""?"``), so it is read with standard CSV quoting
    (``csv.QUOTE_MINIMAL``), never with ``QUOTE_NONE`` (which keeps the quotes)."""
    try:
        df = pd.read_csv(path, sep="\t", quoting=csv.QUOTE_MINIMAL, doublequote=True, keep_default_na=False,
                         dtype=str)
    except Exception as e:  # noqa: BLE001 - any parse failure is reported as bad input
        raise DataError(f"iid file {path}: field 'path': cannot be parsed ({e})") from None
    need = ["id", "question1", "question2", "is_duplicate"]
    lacking = [c for c in need if c not in df.columns]
    if lacking:
        raise DataError(f"iid file {path}: field '{lacking[0]}': column missing (columns: {list(df.columns)})")
    labels = pd.to_numeric(df["is_duplicate"], errors="coerce")
    bad = ~labels.isin([0, 1])
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"iid file {path}: row {i}: field 'is_duplicate': value {df['is_duplicate'].iloc[i]!r} "
                        "is not 0 or 1")
    dup = df["id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(f"iid file {path}: row {i}: field 'id': duplicate pair id {df['id'].iloc[i]!r}")
    return pd.DataFrame({"example_id": "qqp-" + df["id"], "text": df["question1"], "text_b": df["question2"],
                         "label": labels.astype(int)})


def _quora_split(path: Path) -> dict[str, pd.DataFrame]:
    out = read_quora_release(path)
    b = np.array([qqp_bucket(i.removeprefix("qqp-")) for i in out["example_id"]])
    lo, hi = QQP_BOUNDS
    return {"train": out[b < lo].reset_index(drop=True), "val": out[(b >= lo) & (b < hi)].reset_index(drop=True),
            "test": out[b >= hi].reset_index(drop=True)}


def load_qqp(folder: Path, seed: int = 42) -> dict[str, pd.DataFrame]:
    """QQP in ``folder`` (see :func:`locate`): GLUE's files (train; dev halved
    into val / test, ``seed``) or else the Quora release split by :func:`qqp_bucket`."""
    loc = located({"source": "qqp", "path": str(folder)})
    return _quora_split(loc.files[0]) if loc.form == "quora" else _glue_split(loc, seed)


def load_squad_source(folder: Path, seed: int) -> dict[str, pd.DataFrame]:
    """SQuAD v1.1 in ``folder`` (see :func:`locate`): with ``train-v1.1.json``,
    train = that file and the dev file halved by article into val / test (the
    paper's split); a dev file alone is split 80 / 10 / 10 of its questions by
    article (the offline fallback: no SQuAD train file)."""
    from beluga.data.squad import halve_squad_by_article, load_squad, split_squad_by_article

    loc = located({"source": "squad", "path": str(folder)})
    dev = load_squad(loc.parts["dev"])
    if loc.form == "squad-dev":
        return split_squad_by_article(dev, seed=seed)
    train = load_squad(loc.parts["train"])
    shared = set(train["example_id"]) & set(dev["example_id"])
    if shared:
        raise DataError(f"squad file {loc.parts['dev']}: field 'id': {len(shared)} question id(s) also in "
                        f"{loc.parts['train']} (e.g. {sorted(shared)[0]!r})")
    val, test = halve_squad_by_article(dev, seed)
    return {"train": train, "val": val, "test": test}


def split_rule(loc: Located, seed: int) -> tuple[str, str, bool]:
    """(origin, split rule, whether this is the paper's split) of located files."""
    name = {r: Path(p.rpartition(".zip:")[2] or p).name for r, p in loc.parts.items()}
    if loc.form == "quora":
        lo, hi = QQP_BOUNDS
        return (f"Quora Question Pairs release ({name['table']}; GLUE's QQP files absent)",
                f"by a hash of the pair id (sha256('qqp:' + id) bucket): < {lo} train, < {hi} val, else test", False)
    if loc.form == "squad-dev":
        what = "reconstructed SQuAD v1.1 dev" if name["dev"].startswith(SQUAD_FILE[:-3]) else "SQuAD v1.1 dev"
        return (f"{what} alone ({name['dev']}; no train-v1.1.json)",
                f"{name['dev']} split by article, 80 / 10 / 10 of the questions (seed {seed}) -> train / val / test",
                False)
    if loc.form == "squad-paper":
        rebuilt = name["dev"].startswith(SQUAD_FILE[:-3])     # the paper's split, of a reconstructed dev set
        return (f"SQuAD v1.1 ({name['train']}, {'reconstructed dev ' if rebuilt else ''}{name['dev']})",
                f"{name['train']} -> train; {name['dev']} halved by article (seed {seed}) -> val / test", not rebuilt)
    if loc.source in GLUE_SPECS:
        return glue_split_rule(loc, seed)
    glue = {"sst2": "GLUE SST-2", "qqp": "GLUE QQP"}[loc.source]
    where = {"glue-zip": Path(loc.files[0]).name, "glue-dir": GLUE_ARCHIVES[loc.source][1] + "/",
             "glue-tsv": "train.tsv, dev.tsv"}[loc.form]
    return (f"{glue} ({where})", f"{name['train']} -> train; {name['dev']} halved (seed {seed}) -> val / test", True)

