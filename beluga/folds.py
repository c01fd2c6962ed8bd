"""Suite splitting (T_train / T_val / T_test by test case, per functionality)
and the partitions of BELUGA's cross-functional analysis."""

from __future__ import annotations

import hashlib
import re
from typing import NamedTuple

import numpy as np
import pandas as pd

from beluga.errors import ConfigError, SuiteError

PARTITIONS = ("seen", "func", "class", "type")
SEEN_FOLD = "all"


def stable_int(*parts: object) -> int:
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "little")


def split_sizes(n: int, fractions) -> tuple[int, int, int]:
    """(T_train, T_val, T_test) case counts of a functionality with ``n`` >= 3 cases."""
    n_val = max(1, int(round(fractions[1] * n)))
    n_test = max(1, int(round(fractions[2] * n)))
    n_train = n - n_val - n_test
    if n_train < 1:
        n_train, n_val = 1, n - 1 - n_test
    return n_train, n_val, n_test


def assign_splits(suite: pd.DataFrame, fractions: tuple[float, float, float], seed: int) -> pd.DataFrame:
    """Assign every case to train / val / test, per functionality, so that each
    functionality appears in each split. A case (with all its perturbations)
    is one unit. Returns DataFrame(case_id, functionality, split)."""
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
        raise ConfigError(f"config: field 'split.fractions': {list(fractions)} must be three positive "
                          "numbers summing to 1")
    rows = []
    for func, group in suite.groupby("functionality", sort=False):
        ids = sorted(group["case_id"])
        n = len(ids)
        if n < 3:
            raise SuiteError(f"suite: functionality {func!r}: field 'case_id': {n} case(s); at least 3 are "
                             "needed to have one in each of train / val / test")
        rng = np.random.default_rng(stable_int(seed, func))
        perm = [ids[i] for i in rng.permutation(n)]
        n_train, n_val, n_test = split_sizes(n, fractions)
        for i, cid in enumerate(perm):
            split = "train" if i < n_train else ("val" if i < n_train + n_val else "test")
            rows.append((cid, func, split))
    return pd.DataFrame(rows, columns=["case_id", "functionality", "split"])


def slugify(name: str, max_len: int = 60) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return (s[:max_len].rstrip("-")) or "x"


def fold_ids(names: list[str]) -> dict[str, str]:
    """Stable, filesystem-safe, unique ids for group names."""
    slugs = {n: slugify(n) for n in names}
    counts = pd.Series(list(slugs.values())).value_counts()
    return {n: (s if counts[s] == 1 else f"{s}-{hashlib.sha1(n.encode()).hexdigest()[:6]}")
            for n, s in slugs.items()}


def enumerate_folds(functionalities: pd.DataFrame, partitions: list[str]) -> list[dict]:
    """functionalities: DataFrame(functionality, capability, test_type), and
    optionally ``fold_type``, the test type the ``type`` partition groups a
    functionality under (:func:`beluga.suites.build.with_fold_types`; without
    it, ``test_type``).
    Returns one dict per fold: partition, fold (id), group (the held-out
    functionality / class / type name), held_out (list of functionalities).
    For ``seen`` the single fold holds out nothing from training and is
    evaluated on every functionality."""
    unknown = [p for p in partitions if p not in PARTITIONS]
    if unknown:
        raise ConfigError(f"config: field 'partitions': unknown partition(s) {unknown} "
                          f"(known: {', '.join(PARTITIONS)})")
    funcs = list(functionalities["functionality"])
    folds = []
    for part in partitions:
        if part == "seen":
            folds.append({"partition": "seen", "fold": SEEN_FOLD, "group": "all", "held_out": funcs})
            continue
        type_col = "fold_type" if "fold_type" in functionalities.columns else "test_type"
        col = {"func": "functionality", "class": "capability", "type": type_col}[part]
        groups = list(dict.fromkeys(functionalities[col]))
        ids = fold_ids(groups)
        for g in groups:
            held = list(functionalities.loc[functionalities[col] == g, "functionality"])
            folds.append({"partition": part, "fold": ids[g], "group": g, "held_out": held})
    return folds


def training_functionalities(fold: dict, all_funcs: list[str]) -> list[str]:
    if fold["partition"] == "seen":
        return list(all_funcs)
    held = set(fold["held_out"])
    return [f for f in all_funcs if f not in held]


def find_fold(folds: list[dict], partition: str, fold_id: str) -> dict:
    for f in folds:
        if f["partition"] == partition and f["fold"] == fold_id:
            return f
    raise ConfigError(f"unknown fold {partition}/{fold_id}")


# ---------------------------------------------------------------- training configurations


class Configuration(NamedTuple):
    """A training configuration of the paper (docs/METHOD.md, §2)."""

    from_iid: bool     # the suite stage starts from the IID model (else from the pre-trained model)
    mixes_iid: bool    # D_train is mixed into the suite stage


CONFIGURATIONS: dict[str, Configuration] = {
    "iid_to_t": Configuration(from_iid=True, mixes_iid=False),
    "iid_plus_t": Configuration(from_iid=False, mixes_iid=True),
    "iid_to_iid_plus_t": Configuration(from_iid=True, mixes_iid=True),
}


def configuration(name: str) -> Configuration:
    if name not in CONFIGURATIONS:
        raise ConfigError(f"config: field 'configurations': unknown configuration {name!r} "
                          f"(known: {', '.join(CONFIGURATIONS)})")
    return CONFIGURATIONS[name]


#: what a fold's model predicts of T_test: the functionalities it is scored on, or all
PREDICT_SCOPES = ("scored", "all")


def scored_functionalities(fold: dict, scope: str = "scored") -> list[str] | None:
    """The functionalities whose T_test a fold's model must predict: the ones
    it is scored on (its held-out functionalities; all of them for ``seen``
    and the IID baseline), or None (every functionality) with ``scope="all"``."""
    if scope not in PREDICT_SCOPES:
        raise ConfigError(f"config: field 'predict.scope': {scope!r} is not one of {', '.join(PREDICT_SCOPES)}")
    return None if scope == "all" else list(fold["held_out"])
