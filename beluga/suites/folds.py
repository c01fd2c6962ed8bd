"""Suite splitting (T_train / T_val / T_test by test case, per functionality)
and the partitions of BELUGA's cross-functional analysis."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import NamedTuple

import numpy as np
import pandas as pd

from beluga.core.errors import ConfigError, SuiteError

PARTITIONS = ("seen", "func", "class", "type")
SEEN_FOLD = "all"


def stable_int(*parts: object) -> int:
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "little")


def split_sizes(n: int, fractions) -> tuple[int, int, int]:
    """(T_train, T_val, T_test) case counts of a functionality with ``n`` >= 3 cases: each at least 1 (what
    T_train lacks is taken from T_val while it keeps one, then from T_test)."""
    n_val = max(1, int(round(fractions[1] * n)))
    n_test = max(1, int(round(fractions[2] * n)))
    n_train = n - n_val - n_test
    if n_train < 1:
        short = 1 - n_train
        from_val = min(short, n_val - 1)
        n_train, n_val, n_test = 1, n_val - from_val, n_test - (short - from_val)
    return n_train, n_val, n_test


#: what the split does with identical cases (the same inputs) of a functionality (``split.duplicates``):
#: refuse them (one line), keep each set in one split (``group``), or split case by case as the reference does
#: (``allow``: a copy can be in T_train and T_test)
DUPLICATES = ("refuse", "group", "allow")


def _case_key(inputs, inputs_b) -> tuple:
    return tuple(inputs), None if inputs_b is None else tuple(inputs_b)


def _units(func: str, group: pd.DataFrame, duplicates: str) -> list[list[str]]:
    """A functionality's split units, ordered by their first case id: each case alone, or (``refuse`` /
    ``group``) identical cases together (a functionality without repeats: one case per unit either way)."""
    ids = sorted(group["case_id"])
    if duplicates == "allow":
        return [[cid] for cid in ids]
    key = dict(zip(group["case_id"], (_case_key(a, b) for a, b in zip(group["inputs"], group["inputs_b"]))))
    by_key: dict[tuple, list[str]] = {}
    for cid in ids:
        by_key.setdefault(key[cid], []).append(cid)
    units = sorted(by_key.values(), key=lambda u: u[0])
    if duplicates == "refuse" and len(units) < len(ids):
        copies = [u for u in units if len(u) > 1]
        raise SuiteError(f"suite: functionality {func!r}: field 'inputs': {len(ids) - len(units)} of its {len(ids)} "
                         f"cases repeat another case (e.g. {copies[0][0]!r} and {copies[0][1]!r}), so a copy could "
                         "be trained on in T_train and scored in T_test; make its cases distinct (more templates or "
                         "lexicon entries, fewer cases_per_functionality), or set split.duplicates: group (copies in "
                         "one split) or allow (split case by case, as the reference does)")
    return units


def assign_splits(suite: pd.DataFrame, fractions: tuple[float, float, float], seed: int,
                  duplicates: str = "refuse") -> pd.DataFrame:
    """Assign every case to train / val / test, per functionality, so that each
    functionality appears in each split. A case (with all its perturbations)
    is one unit; identical cases are refused, one unit or split apart (``duplicates``, :data:`DUPLICATES`).
    Returns DataFrame(case_id, functionality, split)."""
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-6:
        raise ConfigError(f"config: field 'split.fractions': {list(fractions)} must be three positive "
                          "numbers summing to 1")
    if duplicates not in DUPLICATES:
        raise ConfigError(f"config: field 'split.duplicates': {duplicates!r} is not one of {', '.join(DUPLICATES)}")
    if "inputs_b" not in suite.columns:
        suite = suite.assign(inputs_b=None)
    rows = []
    for func, group in suite.groupby("functionality", sort=False):
        units = _units(func, group, duplicates)
        n = len(units)
        if n < 3:
            what = "case(s)" if n == len(group) else f"distinct case(s) (of {len(group)})"
            raise SuiteError(f"suite: functionality {func!r}: field 'case_id': {n} {what}; at least 3 are "
                             "needed to have one in each of train / val / test")
        rng = np.random.default_rng(stable_int(seed, func))
        perm = [units[i] for i in rng.permutation(n)]
        n_train, n_val, n_test = split_sizes(n, fractions)
        for i, unit in enumerate(perm):
            split = "train" if i < n_train else ("val" if i < n_train + n_val else "test")
            rows.extend((cid, func, split) for cid in unit)
    return pd.DataFrame(rows, columns=["case_id", "functionality", "split"])


def copies_across_splits(suite: pd.DataFrame, split: pd.DataFrame) -> int:
    """How many cases have an identical case (same functionality, same inputs) in another split."""
    where = dict(zip(split["case_id"], split["split"]))
    b = suite["inputs_b"] if "inputs_b" in suite.columns else [None] * len(suite)
    splits: dict[tuple, set] = {}
    keys = [(f, _case_key(a, bb)) for f, a, bb in zip(suite["functionality"], suite["inputs"], b)]
    for k, cid in zip(keys, suite["case_id"]):
        splits.setdefault(k, set()).add(where.get(cid))
    return sum(len(splits[k]) > 1 for k in keys)


def slugify(name: str, max_len: int = 60) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return (s[:max_len].rstrip("-")) or "x"


def fold_ids(names: list[str]) -> dict[str, str]:
    """Stable, filesystem-safe, unique ids for group names: the name's slug, with a hash of the name where two
    slugs agree (longer hashes where a suffixed id meets another name's slug, e.g. "a b" and "a-b-<its hash>")."""
    def suffixed(n: str, length: int) -> str:
        return f"{slugs[n]}-{hashlib.sha1(n.encode()).hexdigest()[:length]}"

    slugs = {n: slugify(n) for n in names}
    counts = Counter(slugs.values())
    ids = {n: (s if counts[s] == 1 else suffixed(n, 6)) for n, s in slugs.items()}
    for length in (12, 40):
        taken = Counter(ids.values())
        clash = [n for n in ids if taken[ids[n]] > 1]
        if not clash:
            return ids
        ids.update({n: suffixed(n, length) for n in clash})
    taken = Counter(ids.values())
    clash = [n for n in ids if taken[ids[n]] > 1]
    if clash:
        raise ConfigError(f"suite: field 'functionality': {clash[0]!r} and {clash[1]!r} get the same fold id "
                          f"{ids[clash[0]]!r}; rename one")
    return ids


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
    """A training configuration of the paper (docs/PROCEDURE.md, §2)."""

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


#: the seed of the i.i.d. sample a fold model predicts for its diagnostics (:func:`predicted_iid`)
FOLD_IID_SEED = 0


def fold_iid_examples(partition: str, scenario_iid: str, n: int | None) -> int | None:
    """How many i.i.d. test examples a run's model predicts (None: every one).
    The IID and seen models predict them all; a func / class / type fold
    model too under ``scenario_iid: folds`` (its scenario's s_iid pools
    them). Under ``scenario_iid: seen`` no fold model's i.i.d. score enters
    a G or a test (the seen model's does), so it predicts ``n``
    (``predict.fold_iid_examples``; None: all) of them, for its diagnostics
    (the degenerate-solution check)."""
    if partition in ("standard", "seen") or scenario_iid != "seen" or n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"config: field 'predict.fold_iid_examples': {n!r} is not a positive integer or null")
    return n


def predicted_iid(iid: pd.DataFrame, n: int | None) -> pd.DataFrame:
    """The i.i.d. test examples a model predicts (:func:`fold_iid_examples`):
    all of ``iid`` (None, or ``n`` at least its size), else a sample of ``n``
    drawn with :data:`FOLD_IID_SEED` (the same examples for every fold
    model and every job, whatever the file's order), in the file's order."""
    if n is None or n >= len(iid):
        return iid
    keep = np.sort(np.random.default_rng(FOLD_IID_SEED).choice(len(iid), size=n, replace=False))
    return iid.iloc[keep].reset_index(drop=True)
