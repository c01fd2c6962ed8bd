"""GLUE's MNLI, QNLI, RTE, CoLA and STS-B as i.i.d. sources (issue 40): where their files are in a
task's data folder (``iid.path``), how each official TSV is read and how it is split. The
sources ``mnli``, ``qnli``, ``rte``, ``cola`` and ``stsb`` are dataset folders like ``sst2``:
:mod:`beluga.data.paper_data` dispatches to :func:`locate_glue`, :func:`glue_split_rule` and
:func:`load_glue` for them.

Forms of a folder, in order of precedence (as for SST-2; the first present is used, even if
incomplete): GLUE's archive as ``dl.fbaipublicfiles.com/glue/data`` ships it (``MNLI.zip``,
``QNLIv2.zip`` -- or ``QNLI.zip`` --, ``RTE.zip``, ``CoLA.zip``, ``STS-B.zip``; read in memory,
never extracted) > the unpacked folder (``MNLI/``, ``QNLI/``, ``RTE/``, ``CoLA/``, ``STS-B/``) >
the two TSVs directly in the folder. Each form holds ``train.tsv`` and the dev file: ``dev.tsv``,
MNLI's ``dev_matched.tsv`` (the papers' MNLI dev set: GLUE-X's in-domain MNLI is "MNLI (matched)";
the mismatched dev set is an OOD set, :mod:`beluga.data.challenge`). Every TSV may be gzipped.

Columns are read by NAME from GLUE's header (as GLUE's own loaders do, tab-split without quote
processing: :func:`beluga.data.located.read_glue_tsv`): MNLI ``sentence1``, ``sentence2``,
``gold_label``; QNLI ``question``, ``sentence``, ``label``; RTE ``sentence1``, ``sentence2``,
``label``; STS-B ``sentence1``, ``sentence2``, ``score``. CoLA's train / dev TSVs have no header:
its four documented columns (CoLA's README) are the sentence's source code, the acceptability
judgement (0 = unacceptable, 1 = acceptable), the author's original mark and the sentence
(:func:`read_cola_tsv`).

Labels are read as names and mapped to the task type's integers at the end, by one small table
(:data:`TASK_LABELS`): NLI entailment 0 / neutral 1 / contradiction 2 (:data:`beluga.core.tasks.NLI`),
the two-class NLI of RTE / QNLI (``nli_binary``) entailment 0 / not entailment 1 (the files'
not_entailment), ACCEPTABILITY unacceptable 0 / acceptable 1; STS-B's score stays a number in [0, 5]. A label
that is not one of the file's documented names stops with one line naming the file, the row and the field.

Split (the paper's protocol for SST-2, which none of the related papers changes for these tasks):
GLUE's train file -> train; the dev file halved by a seeded permutation -> val / test
(:func:`beluga.data.located.halve`). Example ids: ``<source>-<train|dev>-<row>`` (the data
row's number in its file).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import DataError
from beluga.data.located import Located, first_file, halve, read_bytes, read_glue_tsv, tsv_names


@dataclass(frozen=True)
class GlueSpec:
    """One GLUE task's official files and how they are read."""

    name: str                    # in words, e.g. "GLUE MNLI"
    archives: tuple[str, ...]    # the zip archives, in order of precedence (the first is what the fetch writes)
    folder: str                  # the folder each archive unpacks to (its members are <folder>/<file>)
    dev: str                     # the dev file (MNLI: the matched dev set)
    columns: tuple[str, str | None, str] | None   # text, second text, label column by name (None: CoLA, no header)
    task_type: str               # the task type whose inputs the source holds (beluga.data.iid.SOURCE_TASK_TYPES)
    labels: dict[str, str] | None   # label value in the file -> label name (None: a score, STS-B)
    train_rows: int              # rows of the train file as GLUE's loaders read it (Hugging Face's glue has the same)
    dev_rows: int                # rows of the dev file


#: the GLUE tasks read as i.i.d. sources; archive names as dl.fbaipublicfiles.com/glue/data serves them
#: (GLUE's download_glue_data.py; QNLIv2.zip unpacks to QNLI/)
GLUE_SPECS: dict[str, GlueSpec] = {
    "mnli": GlueSpec("GLUE MNLI", ("MNLI.zip",), "MNLI", "dev_matched.tsv", ("sentence1", "sentence2", "gold_label"),
                     "nli", {"entailment": "entailment", "neutral": "neutral", "contradiction": "contradiction"},
                     392_702, 9_815),
    "qnli": GlueSpec("GLUE QNLI", ("QNLIv2.zip", "QNLI.zip"), "QNLI", "dev.tsv", ("question", "sentence", "label"),
                     "nli_binary", {"entailment": "entailment", "not_entailment": "not entailment"},
                     104_743, 5_463),
    "rte": GlueSpec("GLUE RTE", ("RTE.zip",), "RTE", "dev.tsv", ("sentence1", "sentence2", "label"),
                    "nli_binary", {"entailment": "entailment", "not_entailment": "not entailment"}, 2_490, 277),
    "cola": GlueSpec("GLUE CoLA", ("CoLA.zip",), "CoLA", "dev.tsv", None,
                     "acceptability", {"0": "unacceptable", "1": "acceptable"}, 8_551, 1_043),
    "stsb": GlueSpec("GLUE STS-B", ("STS-B.zip",), "STS-B", "dev.tsv", ("sentence1", "sentence2", "score"),
                     "similarity", None, 5_749, 1_500),
}
GLUE_SOURCES = tuple(GLUE_SPECS)

#: label name -> the task type's integer label (beluga.core.tasks: NLI and ACCEPTABILITY's iid_labels, by name;
#: nli_binary: the two-class NLI type of RTE / QNLI / SciTail / HANS). The one place names become numbers.
TASK_LABELS: dict[str, dict[str, int]] = {
    "nli": {"entailment": 0, "neutral": 1, "contradiction": 2},
    "nli_binary": {"entailment": 0, "not entailment": 1},
    "acceptability": {"unacceptable": 0, "acceptable": 1},
}
#: STS-B's scores (and the similarity task type's): a real number in this closed range
SCORE_RANGE = (0.0, 5.0)
#: CoLA's four documented columns (its TSVs have no header row)
COLA_COLUMNS = ("source", "label", "original_mark", "sentence")


def dev_name(source: str) -> str:
    return GLUE_SPECS[source].dev


def expected_files(source: str) -> str:
    """What a GLUE source's folder may hold, in words (the error naming what is missing)."""
    s = GLUE_SPECS[source]
    return f"{', '.join(s.archives)}, {s.folder}/{{train.tsv,{s.dev}}}, or train.tsv and {s.dev}"


def locate_glue(folder: Path, source: str):
    """The files of a GLUE source in ``folder`` (a :class:`beluga.data.paper_data.Located`; None when
    none of its forms is present), by the precedence of the module docstring."""
    spec = GLUE_SPECS[source]
    names = {"train": "train.tsv", "dev": spec.dev}
    zipped = first_file(folder, spec.archives)
    if zipped is not None:
        return Located(source, "glue-zip", (zipped,), {r: f"{zipped}:{spec.folder}/{n}" for r, n in names.items()})

    def pair(base: Path, shown: str, form: str):
        found = {r: first_file(base, tsv_names(n)) for r, n in names.items()}
        missing = tuple(f"{shown}{names[r]}" for r, p in found.items() if p is None)
        files = tuple(p if p is not None else base / names[r] for r, p in found.items())
        return Located(source, form, files, {r: str(p) for r, p in zip(found, files)}, missing)

    if (folder / spec.folder).is_dir():
        return pair(folder / spec.folder, f"{spec.folder}/", "glue-dir")
    if any(first_file(folder, tsv_names(n)) for n in names.values()):
        return pair(folder, "", "glue-tsv")
    return None


def read_cola_tsv(ref: str) -> tuple[pd.DataFrame, str]:
    """A CoLA train / dev TSV (no header; :data:`COLA_COLUMNS`), tab-split without quote
    processing, and the ``where`` of error lines naming it. A row without its four fields stops
    with one line naming the file and the row (CoLA's files have no corrupted rows to drop)."""
    raw, where = read_bytes(ref)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{where}: field 'path': not UTF-8 text ({e})") from None
    rows, numbers = [], []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    for n, row in enumerate(r for r in reader if r):
        if len(row) != len(COLA_COLUMNS):
            raise DataError(f"{where}: row {n}: field 'sentence': {len(row)} tab-separated field(s), CoLA's rows "
                            f"have {len(COLA_COLUMNS)} ({', '.join(COLA_COLUMNS)}; no header)")
        rows.append(row)
        numbers.append(n)
    df = pd.DataFrame(rows, columns=list(COLA_COLUMNS))
    df["row"] = numbers
    return df, where


def label_names(values: pd.Series, names: dict[str, str], where: str, field: str, rows=None) -> list[str]:
    """Each file value's label name (``names``: value -> name); one line naming the first value that
    is not a documented one."""
    out = []
    for i, v in enumerate(values):
        if v not in names:
            row = int(rows.iloc[i]) if rows is not None else i
            raise DataError(f"{where}: row {row}: field '{field}': value {v!r} is not a label of this file "
                            f"({', '.join(sorted(names))})")
        out.append(names[v])
    return out


def to_task_labels(names, task_type: str, where: str) -> np.ndarray:
    """Label names -> the task type's integers (:data:`TASK_LABELS`)."""
    table = TASK_LABELS.get(task_type)
    if table is None:
        raise DataError(f"{where}: field 'label': no label table for task type {task_type!r}")
    bad = next((n for n in names if n not in table), None)
    if bad is not None:
        raise DataError(f"{where}: field 'label': label {bad!r} is not one of the {task_type} labels "
                        f"({', '.join(table)})")
    return np.array([table[n] for n in names], dtype=int)


def score_values(values: pd.Series, where: str, field: str, rows=None) -> np.ndarray:
    """STS-B scores as floats, each in :data:`SCORE_RANGE` (one line naming the first that is not)."""
    lo, hi = SCORE_RANGE
    num = pd.to_numeric(values, errors="coerce")
    bad = num.isna() | (num < lo) | (num > hi)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        row = int(rows.iloc[i]) if rows is not None else i
        v = values.iloc[i]
        v = v.item() if hasattr(v, "item") else v      # a number read by pandas shown as itself
        raise DataError(f"{where}: row {row}: field '{field}': value {v!r} is not a score in "
                        f"[{lo:g}, {hi:g}]")
    return num.astype(float).to_numpy()


def read_glue_part(source: str, ref: str, role: str) -> pd.DataFrame:
    """One GLUE file of ``source`` (``ref``: a file or ``archive.zip:member``) as the i.i.d. table:
    ``example_id``, ``text`` [, ``text_b``], ``label`` (the task type's integer; STS-B a float)."""
    spec = GLUE_SPECS[source]
    if spec.columns is None:
        df, where = read_cola_tsv(ref)
        text_col, b_col, label_col = "sentence", None, "label"
    else:
        text_col, b_col, label_col = spec.columns
        df, where = read_glue_tsv(ref, [c for c in spec.columns if c is not None])
    if df.empty:
        raise DataError(f"{where}: field 'path': no rows")
    out = pd.DataFrame({"example_id": [f"{source}-{role}-{i}" for i in df["row"]], "text": df[text_col]})
    if b_col is not None:
        out["text_b"] = df[b_col].to_numpy()
    if spec.labels is None:
        out["label"] = score_values(df[label_col], where, label_col, df["row"])
    else:
        names = label_names(df[label_col], spec.labels, where, label_col, df["row"])
        out["label"] = to_task_labels(names, spec.task_type, where)
    return out.reset_index(drop=True)


def load_glue(loc: Located, seed: int) -> dict[str, pd.DataFrame]:
    """A GLUE source's located files (:func:`beluga.data.paper_data.located`): its train file -> train; its
    dev file halved (``seed``) -> val / test."""
    source = loc.source
    train = read_glue_part(source, loc.parts["train"], "train")
    dev = read_glue_part(source, loc.parts["dev"], "dev")
    val, test = halve(dev, seed)
    return {"train": train, "val": val, "test": test}


def glue_split_rule(loc, seed: int) -> tuple[str, str, bool]:
    """(origin, split rule, whether this is the paper's split) of a GLUE source's located files."""
    spec = GLUE_SPECS[loc.source]
    name = {r: Path(p.rpartition(".zip:")[2] or p).name for r, p in loc.parts.items()}
    where = {"glue-zip": Path(loc.files[0]).name, "glue-dir": f"{spec.folder}/",
             "glue-tsv": f"train.tsv, {spec.dev}"}[loc.form]
    return (f"{spec.name} ({where})", f"{name['train']} -> train; {name['dev']} halved (seed {seed}) -> val / test",
            True)
