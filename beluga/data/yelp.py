"""Yelp reviews (Zhang, Zhao & LeCun 2015, "Yelp Review Full"), the combinational analysis' Yelp data
(seed 002: Yelp and MNLI, three labels each): the official archive ``yelp_review_full_csv.tar.gz``
(fetched to the data folder's ``combinational/yelp/``, :mod:`beluga.data.remotes`) read in memory,
never extracted.

The archive holds ``yelp_review_full_csv/train.csv`` (650,000 reviews) and ``test.csv`` (50,000):
headerless CSV, two columns, the class index (the review's stars, 1 to 5) and the review text, each
field in double quotes with an inner quote doubled and a newline written as a backslash and ``n``
(the archive's readme). :func:`load_yelp` returns the table the combinational analysis reads
(:func:`beluga.analyses.combinational.load_labelled`'s columns): ``example_id``
(``yelp-<split>-<row>``), ``text`` (newlines restored) and ``label`` (the stars, a string), so a
configuration's ``roles`` name the star values that play its three labels.
"""

from __future__ import annotations

import csv
import io
import tarfile
from pathlib import Path

import pandas as pd

from beluga.core.errors import DataError

YELP_FILE = "yelp_review_full_csv.tar.gz"
YELP_SPLITS = ("train", "test")
STARS = ("1", "2", "3", "4", "5")


def load_yelp(path: str | Path, split: str = "train") -> pd.DataFrame:
    """One split of the archive (``split``: train / test, or all: both) as ``example_id``, ``text``,
    ``label``; a row without its two fields or with stars outside 1..5 stops with one line naming the
    file, the member, the row and the field."""
    path = Path(path)
    if split not in (*YELP_SPLITS, "all"):
        raise DataError(f"yelp file {path}: field 'split': {split!r} is not train, test or all")
    out = []
    try:
        with tarfile.open(path, "r:*") as tar:
            members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
            for s in YELP_SPLITS if split == "all" else (split,):
                member = members.get(f"{s}.csv")
                if member is None:
                    raise DataError(f"yelp file {path}: field 'path': the archive has no {s}.csv (not the official "
                                    "archive?)")
                text = tar.extractfile(member).read().decode("utf-8")
                out.append(_read_csv(text, f"yelp file {path} (member {member.name})", s))
    except (tarfile.TarError, OSError, EOFError, UnicodeDecodeError) as e:
        raise DataError(f"yelp file {path}: field 'path': cannot be read as the gzipped tar archive ({e})") from None
    return pd.concat(out, ignore_index=True)


def _read_csv(text: str, where: str, split: str) -> pd.DataFrame:
    rows = []
    for n, row in enumerate(csv.reader(io.StringIO(text, newline=""))):
        if not row:
            continue
        if len(row) != 2:
            raise DataError(f"{where}: row {n}: field 'text': {len(row)} field(s), the archive's rows have 2 "
                            "(stars, text)")
        if row[0] not in STARS:
            raise DataError(f"{where}: row {n}: field 'label': value {row[0]!r} is not a star rating 1 to 5")
        rows.append((f"yelp-{split}-{n}", row[1].replace("\\n", "\n"), row[0]))
    return pd.DataFrame(rows, columns=["example_id", "text", "label"])
