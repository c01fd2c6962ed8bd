"""SQuAD v1.1 (READ i.i.d. data): loader, the paper's split and the offline fallback split.

With the official files (``train-v1.1.json`` and ``dev-v1.1.json``, plain or
``.gz``, in ``iid.path``) the split is the paper's: train = the train file, the
official dev set halved *by article* into val / test
(:func:`halve_squad_by_article`). Without a train file a dev file alone is
split 80 / 10 / 10 by article (:func:`split_squad_by_article`): the offline
fallback for the staged ``../shared/data/iid/squad/dev-v1.1.reconstructed.json.gz``,
the dev set rebuilt from the official explorer pages. Its texts, ids and
answers are exact, but ``answer_start`` was re-derived: for questions whose
answer occurs more than once in the context it may point at another occurrence
(the string at that offset is still the answer). Which files are read:
:func:`beluga.data.paper_data.locate`.

:func:`load_squad` returns one row per question with columns ``example_id``
(the SQuAD id), ``title`` (the article), ``context``, ``question``, ``answers``
(list of gold answer strings, duplicates kept as in the file) and
``answer_starts`` (list of character offsets aligned with ``answers``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import DataError

SQUAD_SPLITS = ("train", "val", "test")
SQUAD_COLUMNS = ("example_id", "title", "context", "question", "answers", "answer_starts")
#: the official file names, in order of precedence (the plain file before its .gz)
TRAIN_FILES = ("train-v1.1.json", "train-v1.1.json.gz")
#: a dev file: the official one, else the staged reconstruction
DEV_FILES = ("dev-v1.1.json", "dev-v1.1.json.gz", "dev-v1.1.reconstructed.json.gz")


def _read_json(path: Path):
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"squad file {path}: field 'path': cannot be parsed as "
                        f"{'gzip ' if opener is gzip.open else ''}JSON ({e})") from None


def _field(obj, key: str, typ, path: Path, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise DataError(f"squad file {path}: {where}: field '{key}' is missing")
    val = obj[key]
    if not isinstance(val, typ) or isinstance(val, bool):
        names = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise DataError(f"squad file {path}: {where}: field '{key}' must be a {names}, "
                        f"got {type(val).__name__}")
    return val


def load_squad(path: str | os.PathLike) -> pd.DataFrame:
    """Read a SQuAD v1.1 JSON file (plain or ``.gz``) into one row per question.

    Every answer is checked: ``context[answer_start:answer_start + len(text)]``
    must equal ``text`` (a wrong occurrence, see the module docstring, is not
    detectable and is accepted). Ids must be unique. Any violation raises a
    :class:`DataError` naming the file, the location and the field.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"squad file {path}: field 'path': file does not exist")
    doc = _read_json(path)
    data = _field(doc, "data", list, path, "top level")
    rows: list[tuple] = []
    seen: set[str] = set()
    for ai, article in enumerate(data):
        where_a = f"data[{ai}]"
        title = _field(article, "title", str, path, where_a)
        paragraphs = _field(article, "paragraphs", list, path, where_a)
        for pi, para in enumerate(paragraphs):
            where_p = f"{where_a}.paragraphs[{pi}]"
            context = _field(para, "context", str, path, where_p)
            qas = _field(para, "qas", list, path, where_p)
            for qi, qa in enumerate(qas):
                where_q = f"{where_p}.qas[{qi}]"
                qid = _field(qa, "id", str, path, where_q)
                question = _field(qa, "question", str, path, where_q)
                answers = _field(qa, "answers", list, path, where_q)
                if not answers:
                    raise DataError(f"squad file {path}: {where_q} (id {qid}): field 'answers' is empty")
                if qid in seen:
                    raise DataError(f"squad file {path}: {where_q}: field 'id': duplicate id {qid!r}")
                seen.add(qid)
                texts, starts = [], []
                for k, ans in enumerate(answers):
                    where_k = f"{where_q}.answers[{k}] (id {qid})"
                    text = _field(ans, "text", str, path, where_k)
                    start = _field(ans, "answer_start", int, path, where_k)
                    if not text or start < 0 or context[start:start + len(text)] != text:
                        raise DataError(f"squad file {path}: {where_k}: field 'answer_start': {start} does "
                                        f"not point at the answer text {text!r} in the context")
                    texts.append(text)
                    starts.append(start)
                rows.append((qid, title, context, question, texts, starts))
    if not rows:
        raise DataError(f"squad file {path}: field 'data': no questions")
    return pd.DataFrame(rows, columns=list(SQUAD_COLUMNS))


def _article_key(seed: int, title: str) -> str:
    return hashlib.sha256(f"{seed}\x00{title}".encode()).hexdigest()


def _subsample(df: pd.DataFrame, n: int | None, seed: int, split: str) -> pd.DataFrame:
    if n is None or n >= len(df):
        return df
    if n <= 0:
        raise DataError(f"squad split: field 'max_examples' ({split}): must be positive, got {n}")
    ids = sorted(df["example_id"])
    # a per-split stream so that capping one split does not change another's sample
    rng = np.random.default_rng([seed, SQUAD_SPLITS.index(split)])
    keep = {ids[i] for i in rng.choice(len(ids), size=n, replace=False)}
    return df[df["example_id"].isin(keep)]


def split_squad_by_article(df: pd.DataFrame, fractions: Sequence[float] | None = (0.8, 0.1, 0.1),
                           sizes: Sequence[int | None] | Mapping[str, int | None] | None = None,
                           seed: int = 42,
                           max_examples: int | Sequence[int | None] | Mapping[str, int | None] | None = None,
                           ) -> dict[str, pd.DataFrame]:
    """Deterministic train / val / test split that keeps every article whole.

    Rule:
    1. Articles (distinct ``title``) are ordered by the SHA-256 hex digest of
       ``f"{seed}\\0{title}"`` (a stable hash: independent of row order, of
       Python's hash randomisation and of the other articles).
    2. They are assigned whole, in that order, to train, then val, then test:
       - with ``sizes`` (numbers of *articles*, train / val / test; a train size
         of None means "all articles left after val and test"), the first
         n_train articles go to train, the next n_val to val, the next n_test to
         test (articles beyond them are unused);
       - otherwise with ``fractions`` (of *questions*), an article goes to the
         split in whose share of the question count its first question falls:
         with c = number of questions in the articles before it and N the total,
         train if c < f_train * N, else val if c < (f_train + f_val) * N, else
         test. Split sizes are therefore approximately the fractions, to
         within one article.
    3. Optional ``max_examples`` (an int for every split, or per split, None =
       no cap) keeps a seeded random subset of each split's questions, drawn
       from the split's sorted ids with ``numpy.random.default_rng([seed,
       split_index])``.
    Rows keep their original order within each split; the index is reset.
    Every split must end up non-empty, else a :class:`DataError` is raised.
    """
    for col in ("example_id", "title"):
        if col not in df.columns:
            raise DataError(f"squad split: field '{col}': column missing (columns: {list(df.columns)})")
    titles = sorted(df["title"].unique(), key=lambda t: _article_key(seed, t))
    n_articles = len(titles)
    assign: dict[str, str] = {}
    if sizes is not None:
        sz = dict(sizes) if isinstance(sizes, Mapping) else dict(zip(SQUAD_SPLITS, sizes))
        n_val, n_test = int(sz["val"]), int(sz["test"])
        n_train = sz.get("train")
        n_train = n_articles - n_val - n_test if n_train is None else int(n_train)
        if min(n_train, n_val, n_test) <= 0 or n_train + n_val + n_test > n_articles:
            raise DataError(f"squad split: field 'sizes': {n_train}/{n_val}/{n_test} articles do not fit "
                            f"the {n_articles} available articles (each split needs at least one)")
        bounds = np.cumsum([n_train, n_val, n_test])
        for i, t in enumerate(titles[:bounds[-1]]):
            assign[t] = SQUAD_SPLITS[int(np.searchsorted(bounds, i, side="right"))]
    else:
        if fractions is None or len(fractions) != 3 or min(fractions) <= 0:
            raise DataError(f"squad split: field 'fractions': need three positive fractions, got {fractions}")
        f = np.asarray(fractions, dtype=float)
        f = f / f.sum()
        counts = df["title"].value_counts()
        total = int(counts.sum())
        cut_train, cut_val = f[0] * total, (f[0] + f[1]) * total
        c = 0
        for t in titles:
            assign[t] = "train" if c < cut_train else ("val" if c < cut_val else "test")
            c += int(counts[t])
    split_of = df["title"].map(assign)
    if isinstance(max_examples, Mapping):
        caps = {s: max_examples.get(s) for s in SQUAD_SPLITS}
    elif max_examples is None or isinstance(max_examples, int):
        caps = dict.fromkeys(SQUAD_SPLITS, max_examples)
    else:
        caps = dict(zip(SQUAD_SPLITS, max_examples))
    out = {}
    for s in SQUAD_SPLITS:
        part = df[split_of == s]
        if part.empty:
            raise DataError(f"squad split: field 'fractions'/'sizes': split {s!r} received no article "
                            f"({n_articles} articles available)")
        out[s] = _subsample(part, caps[s], seed, s).reset_index(drop=True)
    return out


def halve_squad_by_article(df: pd.DataFrame, seed: int = 42) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An official dev set halved into val / test by article (the paper halves
    SQuAD's dev set; whole articles here, so that val and test share none).

    Rule: articles (distinct ``title``) are ordered by the SHA-256 hex digest of
    ``f"{seed}\\0{title}"`` (the ordering of :func:`split_squad_by_article`);
    with c = the number of questions in the articles before an article and N
    the total, the article goes to val if 2c < N, else to test: val gets the
    first articles up to half the questions (within one article), test the
    rest. Rows keep their order within each half; the index is reset. A dev
    set with fewer than two articles cannot be halved (DataError).
    """
    for col in ("example_id", "title"):
        if col not in df.columns:
            raise DataError(f"squad split: field '{col}': column missing (columns: {list(df.columns)})")
    titles = sorted(df["title"].unique(), key=lambda t: _article_key(seed, t))
    counts = df["title"].value_counts()
    total = int(counts.sum())
    val_titles, c = set(), 0
    for t in titles:
        if 2 * c < total:
            val_titles.add(t)
        c += int(counts[t])
    in_val = df["title"].isin(val_titles)
    if in_val.all() or not in_val.any():
        raise DataError(f"squad split: field 'title': the dev set has {len(titles)} article(s); halving it by "
                        "article into val / test needs at least two")
    return df[in_val].reset_index(drop=True), df[~in_val].reset_index(drop=True)
