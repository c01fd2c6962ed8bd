"""What the dataset readers share: where a source's files are (:class:`Located`, :func:`first_file`,
:func:`tsv_names`), how a file or a zip member is read (:func:`read_bytes`, :func:`read_glue_tsv`) and
the official dev set halved into val / test (:func:`halve`). :mod:`beluga.data.paper_data` (SST-2, QQP,
SQuAD) and :mod:`beluga.data.glue` (MNLI, QNLI, RTE, CoLA, STS-B) both build on it."""

from __future__ import annotations

import csv
import gzip
import io
import logging
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import DataError

_log = logging.getLogger(__name__)

FETCH_HINT = ("fetch the configuration's inputs first (snakemake fetch --cores 4 --configfile <your config>; "
              "docs/PAPER_RUN.md 'The paper's run on a cluster')")



def tsv_names(name: str) -> tuple[str, str]:
    """A TSV's name and its gzipped name, in the order they are looked for."""
    return (name, name + ".gz")


@dataclass(frozen=True)
class Located:
    """Where a dataset source's files are, by the precedence of its locator
    (:func:`beluga.data.paper_data.locate`, :func:`beluga.data.glue.locate_glue`).

    ``form``: ``glue-zip`` / ``glue-dir`` / ``glue-tsv`` (sst2, qqp and the GLUE sources), ``quora``
    (qqp), ``squad-paper`` (train + dev) / ``squad-dev`` (a dev file alone).
    ``files``: the files read (the rule's declared inputs). ``parts``: role
    (``train`` / ``dev`` / ``table``) -> the file, or ``archive:member`` for
    a zip. ``missing``: what the chosen form lacks (empty when complete)."""
    source: str
    form: str
    files: tuple[Path, ...]
    parts: dict
    missing: tuple[str, ...] = ()


def first_file(folder: Path, names) -> Path | None:
    """The first of ``names`` that is a file in ``folder``, or None."""
    return next((folder / n for n in names if (folder / n).is_file()), None)


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
