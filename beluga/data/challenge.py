"""Challenge and OOD sets of the related papers as OOD sources (``tasks.<id>.ood``, issue 40;
docs/OOD.md): read from the folder the fetch writes them to (``path``, by default the data folder's
:data:`beluga.data.remotes.OOD_DIRS`; :mod:`beluga.data.remotes` says where each file comes from),
in their official formats, into the OOD table of :mod:`beluga.data.ood_sets`.

Sources (``source``; ``split`` picks the official split, ``all`` = every split, as GLUE-X
evaluates SNLI, SICK, HANS and SciTail):

- ``snli``: SNLI 1.0 (``snli_1.0.zip``: ``snli_1.0/snli_1.0_<split>.jsonl``; ``gold_label``,
  ``sentence1``, ``sentence2``, ``pairID``); pairs without a gold label (``-``: no annotator
  majority) are dropped, as SNLI's own documentation says to. Splits test / dev / train / all.
- ``mnli_mismatched``: MultiNLI's mismatched dev set, ``dev_mismatched.tsv`` inside GLUE's
  ``MNLI.zip`` (the i.i.d. ``mnli`` source's archive; the folder defaults to ``iid/mnli``).
- ``sick``: SICK (``SICK.zip``: ``SICK.txt``, a TSV with a header; ``sentence_A``,
  ``sentence_B``, ``entailment_label`` (ENTAILMENT / NEUTRAL / CONTRADICTION),
  ``relatedness_score`` in [1, 5], ``SemEval_set`` TRAIN / TRIAL / TEST = train / dev / test).
  For an NLI task the label is the entailment label; for any other task (STS-B's similarity) the
  relatedness score itself (GLUE-X rounds it to five classes; the score is kept here).
- ``hans``: HANS (McCoy et al. 2019; ``heuristics_evaluation_set.txt`` = test,
  ``heuristics_train_set.txt`` = train; TSVs with a header: ``gold_label`` entailment /
  non-entailment, ``sentence1``, ``sentence2``, ``pairID``, ``heuristic``, ``subcase``).
- ``scitail``: SciTail 1.1 (``SciTailV1.1.zip``: ``SciTailV1.1/tsv_format/scitail_1.0_<split>.tsv``,
  no header: premise, hypothesis, label entails / neutral; "neutral" there means not entailed).
- ``naik``: the NLI stress tests (``set``: word_overlap, negation, length_mismatch, spelling,
  numerical_reasoning, antonym; MultiNLI JSON lines). ``split: test``: Naik et al.'s archive
  (``Stress_Tests.zip``, matched genres); ``train``: Liu et al. (2019)'s training split of the set;
  ``evaluation``: Liu et al.'s evaluation file alone (the inoculation paper's test part: an
  ``inoculation.challenge`` item ``{set: <evaluation entry>, train: <train entry>}``); ``all``: the
  inoculation paper's pair, Liu et al.'s training split (``part`` train) and their
  evaluation file (``part`` test).
- ``adversarial_squad`` (READ): Jia & Liang's AddSent / AddOneSent (``set``; SQuAD JSON) for
  ``split: test``; Liu et al.'s adversarial training set for ``train``, their evaluation set for
  ``evaluation``; ``all``: that training set
  (``part`` train) and Liu et al.'s evaluation set (``part`` test). The table keeps ``title``,
  ``article_id`` (the article: its index in the file), ``passage_id`` (the paragraph:
  ``<article>-<paragraph>``) and ``original_id`` (the SQuAD question an adversarial one was made from),
  so a sampler can draw one question per article, then per passage, as Liu et al.'s script (the
  inoculation paper's "sample from distinct passages").

Liu et al.'s released per-dose samples of their training splits (:func:`beluga.data.remotes.released_doses`)
are read by :func:`read_released_sample`, for the inoculation jobs that train on them.

Labels are read by name (a value that is not one of the file's documented labels stops with one
line naming the file, the row and the field) and kept in ``label_name``; ``label`` is the task's
integer, by name (:data:`GOLD_NAMES`: the file's names -> entailment / neutral / contradiction /
not entailment). A three-class set scored by a two-class NLI task (RTE) maps neutral and
contradiction to not entailment (:data:`THREE_TO_TWO`). A two-class set (HANS, SciTail) scored by a
three-class NLI task keeps its own two labels (``label`` 0 = entailment, 1 = not entailment) and
:func:`label_record` gives the collapse of the model's three classes onto them (entailment ->
entailment; neutral, contradiction -> not entailment, :data:`THREE_TO_TWO`), which the prepared
table's metadata records (``beluga.ood_collapse``) for the evaluator (beluga/data/ood_collapse.py).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import ConfigError, DataError
from beluga.core.tasks import TASK_TYPES
from beluga.data.remotes import NAIK_SETS, OOD_DIRS, OOD_SPLITS, ood_paths
from beluga.heads import get_head

_log = logging.getLogger(__name__)

CHALLENGE_SOURCES = tuple(OOD_DIRS)
NLI3 = ("entailment", "neutral", "contradiction")
NLI2 = ("entailment", "not entailment")
#: each source's gold label values -> the label names of NLI (three-way) or two-class NLI
GOLD_NAMES: dict[str, dict[str, str]] = {
    "snli": {n: n for n in NLI3}, "mnli_mismatched": {n: n for n in NLI3}, "naik": {n: n for n in NLI3},
    "sick": {n.upper(): n for n in NLI3},
    "hans": {"entailment": "entailment", "non-entailment": "not entailment"},
    "scitail": {"entails": "entailment", "neutral": "not entailment"},
}
#: a three-way label as a two-class NLI label (a three-class set scored by RTE / QNLI; the collapse of a
#: three-class model's predictions onto a two-class set's labels)
THREE_TO_TWO = {"entailment": "entailment", "neutral": "not entailment", "contradiction": "not entailment"}
#: pairs without a gold label in SNLI / MultiNLI's files (no majority among the annotators)
NO_GOLD = "-"
#: SICK's SemEval_set per split
SICK_SETS = {"train": ("TRAIN",), "dev": ("TRIAL",), "test": ("TEST",), "all": ("TRAIN", "TRIAL", "TEST")}
#: the files of the split-per-file sources, per split
SPLIT_FILES = {"snli": "snli_1.0_{split}.jsonl", "scitail": "scitail_1.0_{split}.tsv"}
SPLIT_ORDER = ("train", "dev", "test")


#: published sizes (labelled examples) per (source, set, split), for the plan's cost before anything is fetched:
#: SNLI's pairs with a gold label; MultiNLI's mismatched dev set; SICK's SemEval sets (9,840 in all, GLUE-X's
#: Table 1); HANS 30,000 + 30,000; SciTail 1.1's TSVs (26,527 in all); Naik et al.'s numerical reasoning file
#: (7,596, the inoculation paper's appendix C); AddSent / AddOneSent (Jia & Liang's bundles)
PUBLISHED_SIZES = {("snli", None, "test"): 9_824, ("snli", None, "dev"): 9_842, ("snli", None, "train"): 549_367,
                   ("mnli_mismatched", None, "test"): 9_832,
                   ("sick", None, "test"): 4_906, ("sick", None, "dev"): 495, ("sick", None, "train"): 4_439,
                   ("hans", None, "test"): 30_000, ("hans", None, "train"): 30_000,
                   ("scitail", None, "test"): 2_126, ("scitail", None, "dev"): 1_304,
                   ("scitail", None, "train"): 23_097,
                   ("naik", "numerical_reasoning", "test"): 7_596,
                   ("adversarial_squad", "AddSent", "test"): 3_560, ("adversarial_squad", "AddOneSent", "test"): 1_787}


def published_size(entry: dict) -> int | None:
    """The examples an entry reads, where published (:data:`PUBLISHED_SIZES`; ``all``: the sum of the
    splits); None where not."""
    source, split = entry.get("source"), entry.get("split") or "test"
    key_set = entry.get("set") if source in ("naik", "adversarial_squad") else None
    if split == "all":     # naik / adversarial_squad: Liu et al.'s pair; the others: every split
        splits = ["train", "evaluation"] if "evaluation" in OOD_SPLITS.get(source, ()) else \
            [s for s in OOD_SPLITS.get(source, ()) if s != "all"]
    else:
        splits = [split]
    sizes = [PUBLISHED_SIZES.get((source, key_set, s)) for s in splits]
    return None if not sizes or None in sizes else sum(sizes)


# --- entries ------------------------------------------------------------------------------------------

def check_entry(entry: dict) -> None:
    """An entry's ``set`` and ``split`` are ones its source offers (one line naming the field)."""
    source, name = entry["source"], entry.get("name")
    split = entry.get("split") or "test"
    if split not in OOD_SPLITS[source]:
        raise ConfigError(f"ood set {name!r}: field 'split': source {source!r} has the splits "
                          f"{', '.join(OOD_SPLITS[source])}, not {split!r}")
    sets = {"naik": tuple(NAIK_SETS), "adversarial_squad": ("AddSent", "AddOneSent")}.get(source)
    if sets is not None and entry.get("set") not in sets:
        raise ConfigError(f"ood set {name!r}: field 'set': source {source!r} has the sets {', '.join(sets)}, "
                          f"not {entry.get('set')!r}")
    if source == "naik" and split != "test" and NAIK_SETS[entry["set"]][1] is None:
        raise ConfigError(f"ood set {name!r}: field 'split': the {entry['set']} stress test has no training "
                          "split (evaluation only)")


def challenge_source_files(entry: dict) -> list[str]:
    """The files an entry reads (its prepare rule's inputs; MNLI-mismatched: the unpacked dev file when
    the folder has it and no ``MNLI.zip``)."""
    folder = Path(entry.get("path") or OOD_DIRS[entry["source"]]).expanduser()
    if entry["source"] == "mnli_mismatched" and not (folder / "MNLI.zip").is_file():
        found = [p for p in (folder / "MNLI" / "dev_mismatched.tsv", folder / "dev_mismatched.tsv") if p.is_file()]
        if found:
            return [str(found[0])]
    return [str(folder / name) for name in ood_paths(entry)]


def challenge_source_record(entry: dict) -> dict:
    """Which official files an entry reads (``source``, ``set``, ``split``, ``files``), for the prepared
    table's metadata (``beluga.ood_source``)."""
    return {"source": entry["source"], "set": entry.get("set"), "split": entry.get("split") or "test",
            "files": challenge_source_files(entry)}


def _file(entry: dict, name: str) -> Path:
    folder = Path(entry.get("path") or OOD_DIRS[entry["source"]]).expanduser()
    path = folder / name
    if not path.is_file():
        raise DataError(f"ood set {entry.get('name')!r}: field 'path': {path} does not exist (fetch the "
                        "configuration's inputs first: snakemake fetch --cores 4 --configfile <your config>)")
    return path


def _member(path: Path, suffix: str) -> tuple[bytes, str]:
    """The bytes of the member of a zip archive whose path ends with ``suffix`` (read in memory)."""
    where = f"ood file {path} (member */{suffix})"
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if not n.startswith("__MACOSX") and (n == suffix or
                                                                                   n.endswith("/" + suffix))]
            if not names:
                raise DataError(f"ood file {path}: field 'path': the archive has no member {suffix} (not the "
                                "official archive?)")
            return z.read(names[0]), f"ood file {path} (member {names[0]})"
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, OSError, EOFError) as e:
        raise DataError(f"{where}: field 'path': cannot be read as a zip archive ({e}); delete it and fetch "
                        "again") from None


def _text(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{where}: field 'path': not UTF-8 text ({e})") from None


def _plain(path: Path) -> tuple[str, str]:
    where = f"ood file {path}"
    try:
        raw = gzip.open(path, "rb").read() if path.name.endswith(".gz") else path.read_bytes()
    except (OSError, EOFError) as e:
        raise DataError(f"{where}: field 'path': cannot be read ({e})") from None
    return _text(raw, where), where


# --- formats ------------------------------------------------------------------------------------------

def read_jsonl(text: str, where: str, fields=("gold_label", "sentence1", "sentence2")) -> pd.DataFrame:
    """MultiNLI / SNLI JSON lines: the ``fields`` of each record, plus ``row`` (its line number, 1-based)."""
    rows = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise DataError(f"{where}: line {n}: field 'line': not a JSON object ({e})") from None
        missing = next((f for f in fields if not isinstance(rec, dict) or f not in rec), None)
        if missing is not None:
            raise DataError(f"{where}: line {n}: field '{missing}': missing")
        rows.append([str(rec[f]) for f in fields] + [str(rec.get("pairID", "")), n])
    return pd.DataFrame(rows, columns=[*fields, "pairID", "row"])


def read_tsv(text: str, where: str, columns, header: bool = True) -> pd.DataFrame:
    """A TSV read without quote processing (as the releases are written): the named ``columns`` from its
    header (``header``) or the first ``len(columns)`` fields of a headerless file, plus ``row`` (its data
    row's line number, 1-based)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    lines = [(n, r) for n, r in enumerate(reader, start=1) if r and any(f.strip() for f in r)]
    if header:
        head = lines[0][1] if lines else []
        lacking = next((c for c in columns if c not in head), None)
        if lacking is not None:
            raise DataError(f"{where}: field '{lacking}': column missing (header: {head})")
        idx, lines = [head.index(c) for c in columns], lines[1:]
    else:
        idx = list(range(len(columns)))
    rows = []
    for n, r in lines:
        if len(r) <= max(idx):
            lacking = next(c for c, i in zip(columns, idx) if i >= len(r))
            raise DataError(f"{where}: line {n}: field '{lacking}': missing ({len(r)} tab-separated field(s))")
        rows.append([r[i] for i in idx] + [n])
    return pd.DataFrame(rows, columns=[*columns, "row"])


def _gold(df: pd.DataFrame, source: str, where: str, field: str = "gold_label") -> pd.DataFrame:
    """Rows with a gold label (SNLI / MultiNLI's ``-`` dropped, counted), every other value checked."""
    names = GOLD_NAMES[source]
    keep = df[field] != NO_GOLD
    if (~keep).any():
        _log.info("%s: %d pair(s) without a gold label ('-') dropped", where, int((~keep).sum()))
    df = df[keep].reset_index(drop=True)
    bad = ~df[field].isin(list(names))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{where}: line {int(df['row'].iloc[i])}: field '{field}': value {df[field].iloc[i]!r} is "
                        f"not a label of this set ({', '.join(names)})")
    df["label_name"] = df[field].map(names)
    return df


def _pairs(df: pd.DataFrame, ids, a: str, b: str, part: str | None = None) -> pd.DataFrame:
    out = pd.DataFrame({"example_id": list(ids), "text": df[a].to_numpy(), "text_b": df[b].to_numpy(),
                        "label_name": df["label_name"].to_numpy()})
    if part is not None:
        out["part"] = part
    return out


def _splits(split: str) -> tuple[str, ...]:
    return SPLIT_ORDER if split == "all" else (split,)


def read_snli(entry: dict, split: str) -> pd.DataFrame:
    path, out = _file(entry, "snli_1.0.zip"), []
    for s in _splits(split):
        raw, where = _member(path, SPLIT_FILES["snli"].format(split=s))
        df = _gold(read_jsonl(_text(raw, where), where), "snli", where)
        out.append(_pairs(df, f"snli-{s}-" + df["pairID"].where(df["pairID"] != "", df["row"].astype(str)),
                          "sentence1", "sentence2", s if split == "all" else None))
    return pd.concat(out, ignore_index=True)


def read_mnli_mismatched(entry: dict, split: str) -> pd.DataFrame:
    """GLUE's ``MNLI.zip`` (member ``MNLI/dev_mismatched.tsv``), else the unpacked ``MNLI/dev_mismatched.tsv``
    or ``dev_mismatched.tsv`` in the folder (as the ``mnli`` i.i.d. source's forms)."""
    folder = Path(entry.get("path") or OOD_DIRS["mnli_mismatched"]).expanduser()
    unpacked = next((p for p in (folder / "MNLI" / "dev_mismatched.tsv", folder / "dev_mismatched.tsv")
                     if p.is_file()), None)
    if unpacked is not None and not (folder / "MNLI.zip").is_file():
        text, where = _plain(unpacked)
    else:
        raw, where = _member(_file(entry, "MNLI.zip"), "dev_mismatched.tsv")
        text = _text(raw, where)
    df = _gold(read_tsv(text, where, ("sentence1", "sentence2", "gold_label")), "mnli_mismatched", where)
    return _pairs(df, "mnli_mismatched-" + df["row"].astype(str), "sentence1", "sentence2")


def read_sick(entry: dict, split: str, relatedness: bool) -> pd.DataFrame:
    raw, where = _member(_file(entry, "SICK.zip"), "SICK.txt")
    cols = ("pair_ID", "sentence_A", "sentence_B", "entailment_label", "relatedness_score", "SemEval_set")
    df = read_tsv(_text(raw, where), where, cols)
    bad = ~df["SemEval_set"].isin(SICK_SETS["all"])
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"{where}: line {int(df['row'].iloc[i])}: field 'SemEval_set': value "
                        f"{df['SemEval_set'].iloc[i]!r} is not TRAIN, TRIAL or TEST")
    df = df[df["SemEval_set"].isin(SICK_SETS[split])].reset_index(drop=True)
    ids = "sick-" + df["pair_ID"]
    if relatedness:
        score = pd.to_numeric(df["relatedness_score"], errors="coerce")
        bad = score.isna() | (score < 1) | (score > 5)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"{where}: line {int(df['row'].iloc[i])}: field 'relatedness_score': value "
                            f"{df['relatedness_score'].iloc[i]!r} is not a score in [1, 5]")
        out = pd.DataFrame({"example_id": ids, "text": df["sentence_A"], "text_b": df["sentence_B"],
                            "label": score.astype(float)})
    else:
        out = _pairs(_gold(df, "sick", where, "entailment_label"), ids, "sentence_A", "sentence_B")
    if split == "all":
        out["part"] = df["SemEval_set"].map({"TRAIN": "train", "TRIAL": "dev", "TEST": "test"}).to_numpy()
    return out


def read_hans(entry: dict, split: str) -> pd.DataFrame:
    out = []
    for s, name in zip(("train", "test"), ood_paths({**entry, "split": "all"})):
        if split not in (s, "all"):
            continue
        text, where = _plain(_file(entry, name))
        df = _gold(read_tsv(text, where, ("gold_label", "sentence1", "sentence2", "pairID", "heuristic", "subcase")),
                   "hans", where)
        part = _pairs(df, f"hans-{s}-" + df["pairID"], "sentence1", "sentence2", s if split == "all" else None)
        part["heuristic"], part["subcase"] = df["heuristic"].to_numpy(), df["subcase"].to_numpy()
        out.append(part)
    return pd.concat(out, ignore_index=True)


def read_scitail(entry: dict, split: str) -> pd.DataFrame:
    path, out = _file(entry, "SciTailV1.1.zip"), []
    for s in _splits(split):
        raw, where = _member(path, "tsv_format/" + SPLIT_FILES["scitail"].format(split=s))
        df = _gold(read_tsv(_text(raw, where), where, ("premise", "hypothesis", "label"), header=False), "scitail",
                   where, "label")
        out.append(_pairs(df, f"scitail-{s}-" + df["row"].astype(str), "premise", "hypothesis",
                          s if split == "all" else None))
    return pd.concat(out, ignore_index=True)


def read_naik(entry: dict, split: str) -> pd.DataFrame:
    name = entry["set"]
    archive_member = NAIK_SETS[name][0]
    out = []
    for rel in ood_paths(entry):
        if rel == "Stress_Tests.zip":
            raw, where = _member(_file(entry, rel), archive_member)
            text, part = _text(raw, where), None
        else:
            text, where = _plain(_file(entry, rel))
            part = ("train" if rel == f"liu2019/{NAIK_SETS[name][1]}" else "test") if split == "all" else None
        df = _gold(read_jsonl(text, where), "naik", where)
        tag = part or split
        out.append(_pairs(df, f"naik-{name}-{tag}-" + df["row"].astype(str), "sentence1", "sentence2", part))
    return pd.concat(out, ignore_index=True)


def read_adversarial_squad(entry: dict, split: str) -> pd.DataFrame:
    """SQuAD-format adversarial data, one row per question, with its passage and original question."""
    from beluga.data.squad import load_squad

    out = []
    for rel in ood_paths(entry):
        path = _file(entry, rel)
        df = load_squad(path)          # checked: fields, answer offsets, unique ids
        passage = {}
        for ai, article in enumerate(json.loads(path.read_text(encoding="utf-8"))["data"]):
            for pi, paragraph in enumerate(article["paragraphs"]):
                for qa in paragraph["qas"]:
                    passage[str(qa["id"])] = (str(ai), f"{ai}-{pi}")
        where = df["example_id"].map(passage)
        table = pd.DataFrame({"example_id": df["example_id"], "context": df["context"], "question": df["question"],
                              "answers": df["answers"], "title": df["title"], "article_id": where.str[0],
                              "passage_id": where.str[1], "original_id": df["example_id"].str.split("-").str[0]})
        if split == "all":
            for col in ("article_id", "passage_id"):
                table[col] = ("train-" if "train" in rel else "test-") + table[col]
            table["part"] = "train" if "train" in rel else "test"
        out.append(table)
    return pd.concat(out, ignore_index=True)


def read_released_sample(path: str | Path) -> pd.DataFrame:
    """One of Liu et al.'s released per-dose samples (:func:`beluga.data.remotes.released_dose`) in the columns
    its training split's prepared table is matched on, by the release's formats: a stress test's ``.jsonl``
    (MultiNLI JSON lines) ``text``, ``text_b``, ``label_name`` and ``row`` (its line), pairs without a gold label
    dropped as the split's reader drops them; Adversarial SQuAD's ``.json`` (SQuAD JSON) ``example_id`` (the
    question's id) and ``row`` (its position in the file)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"released sample {path}: field 'path': does not exist (fetch the configuration's inputs "
                        "first: snakemake fetch --cores 4 --configfile <your config>)")
    if path.suffix not in (".json", ".jsonl"):
        raise DataError(f"released sample {path}: field 'path': neither SQuAD JSON (.json) nor JSON lines (.jsonl)")
    if path.suffix == ".json":
        from beluga.data.squad import load_squad

        ids = load_squad(path)["example_id"].astype(str)
        return pd.DataFrame({"example_id": ids, "row": range(1, len(ids) + 1)})
    text, where = _plain(path)
    df = _gold(read_jsonl(text, where), "naik", where)
    return pd.DataFrame({"text": df["sentence1"], "text_b": df["sentence2"], "label_name": df["label_name"],
                         "row": df["row"]})


# --- labels -------------------------------------------------------------------------------------------

def _task_names(task_labels: dict | None) -> dict[str, int]:
    return {str(v): int(k) for k, v in (task_labels or {}).items()}


def label_record(entry: dict, task_labels: dict | None) -> dict | None:
    """How a two-class set's labels meet a three-class NLI task's (None otherwise): ``labels`` (the set's
    ``label`` integers -> names) and ``collapse`` (the model's class -> the set's label it counts as,
    :data:`THREE_TO_TWO`), which the prepared table's metadata records as the evaluator's collapse
    (``beluga.ood_collapse``, beluga/steps/data.py prepare_ood; beluga/data/ood_collapse.py)."""
    names = _task_names(task_labels)
    gold = GOLD_NAMES.get(entry["source"])
    if gold is None or set(gold.values()) != set(NLI2) or not set(NLI3) <= set(names) or "not entailment" in names:
        return None
    own = {n: i for i, n in enumerate(NLI2)}
    return {"source": entry["source"], "labels": {str(i): n for n, i in own.items()},
            "collapse": {str(names[n]): own[THREE_TO_TWO[n]] for n in NLI3}}


def task_labels_of(df: pd.DataFrame, entry: dict, task_labels: dict | None) -> np.ndarray:
    """``label_name`` -> the ``label`` integers: the task's label by name; a three-way name as two-class
    NLI for a two-class task; a two-class set's own labels under a three-class task (:func:`label_record`)."""
    names = _task_names(task_labels)
    where = f"ood set {entry.get('name')!r} (source {entry['source']})"
    if label_record(entry, task_labels) is not None:
        return df["label_name"].map({n: i for i, n in enumerate(NLI2)}).to_numpy(dtype=int)
    mapped = df["label_name"] if set(df["label_name"]) <= set(names) else df["label_name"].map(THREE_TO_TWO)
    if mapped.isna().any() or not set(mapped) <= set(names):
        raise ConfigError(f"{where}: field 'source': its labels ({', '.join(sorted(set(df['label_name'])))}) are not "
                          f"the task's ({', '.join(names) or 'none'}): an NLI set needs an nli or nli_binary task")
    return mapped.map(names).to_numpy(dtype=int)


#: the task types a source's labels suit, as the one-line refusals name them
NLI_TASKS = "an nli or nli_binary task"
SCORE_TASKS = "a similarity or similarity_classes task"


def _reads_scores(head: str, task_labels: dict | None) -> bool:
    """Whether a task's gold labels are similarity scores -- a regression head's (SIMILARITY) -- or their classes:
    a task type that reads a similarity task's data (SIMILARITY_CLASSES: the prepared table turns each score into
    its class, beluga/steps/data.py score_class_labels), known by its head and labels."""
    if get_head(head).gold_is_score:
        return True
    names = {int(k): str(v) for k, v in (task_labels or {}).items()}
    return any(getattr(t, "reads_type", None) == "similarity" and t.head == head and t.iid_labels == names
               for t in TASK_TYPES.values())


def task_problem(entry: dict, head: str, pair: bool | None, task_labels: dict | None) -> str | None:
    """Why an entry's source does not suit the task (None: it does), the same at DAG time
    (beluga/workflow/dag.py) and in rule prepare_ood (:func:`load_challenge`): ``adversarial_squad`` holds
    reading-comprehension questions (a READ task, ``head``'s example columns); every other source sentence pairs
    (not a single-text task: ``pair`` False) with NLI labels, read for a task with NLI labels (``task_labels``,
    integer -> name); ``sick`` also its relatedness score, read for a task whose labels are similarity scores or
    their classes (SIMILARITY, SIMILARITY_CLASSES)."""
    source = entry["source"]
    shown = f"the task's labels are {', '.join(map(str, (task_labels or {}).values())) or 'none'}"
    if get_head(head).gold_is_score:
        shown = "the task's labels are scores (a regression)"
    if source == "adversarial_squad":
        if get_head(head).example_columns:
            return None
        return "'adversarial_squad' holds reading-comprehension questions (a read task)"
    what = (f"NLI labels and a relatedness score ({NLI_TASKS} reads the labels, {SCORE_TASKS} the score)"
            if source == "sick" else f"NLI labels ({NLI_TASKS})")
    if get_head(head).example_columns or pair is False:
        return f"{source!r} holds sentence pairs with {what}; this task does not read sentence pairs"
    if set(NLI3) & set(_task_names(task_labels)):
        return None
    if source == "sick" and _reads_scores(head, task_labels):
        return None
    if source != "sick" and get_head(head).gold_is_score:
        return f"{source!r} has {what}; {shown}, which of the NLI sets only 'sick' has (its relatedness score)"
    return f"{source!r} has {what}; {shown}"


def load_challenge(entry: dict, head: str, pair: bool | None = None, task_labels: dict | None = None
                   ) -> pd.DataFrame:
    """One challenge / OOD entry's table (uncapped): READ columns for ``adversarial_squad``; else
    ``example_id``, ``text``, ``text_b``, ``label`` and ``label_name`` (SICK for a task whose labels are similarity
    scores or their classes: ``label`` = the relatedness score in [1, 5], no ``label_name``), plus ``part`` for
    ``split: all``. ``task_labels``: the task type's i.i.d. labels (integer -> name); a source that does not suit
    the task is refused (:func:`task_problem`)."""
    check_entry(entry)
    source, split = entry["source"], entry.get("split") or "test"
    name = entry.get("name")
    problem = task_problem(entry, head, pair, task_labels)
    if problem is not None:
        raise ConfigError(f"ood set {name!r}: field 'source': {problem}")
    if source == "adversarial_squad":
        return read_adversarial_squad(entry, split)
    nli = bool(set(NLI3) & set(_task_names(task_labels)))
    if source == "sick":
        df = read_sick(entry, split, relatedness=not nli)
        if not nli:
            return df
    else:
        reader = {"snli": read_snli, "mnli_mismatched": read_mnli_mismatched, "hans": read_hans,
                  "scitail": read_scitail, "naik": read_naik}[source]
        df = reader(entry, split)
    if df.empty:
        raise DataError(f"ood set {name!r}: field 'split': no labelled pairs in split {split!r}")
    df.insert(3, "label", task_labels_of(df, entry, task_labels))
    dup = df["example_id"].duplicated()
    if dup.any():
        raise DataError(f"ood set {name!r}: field 'example_id': duplicate id {df['example_id'][dup].iloc[0]!r}")
    return df
