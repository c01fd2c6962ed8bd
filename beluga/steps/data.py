"""rules/data.smk: i.i.d. data, OOD test sets, suite build, suite split."""

from __future__ import annotations

import json
import logging

import pandas as pd

from beluga.core.io import read_parquet, write_json, write_parquet, write_text
from beluga.core.tasks import get_task_type
from beluga.data.iid import load_splits, source_record
from beluga.suites import folds
from beluga.suites.build import label_set, make_suite
from beluga.suites.format import functionality_table, load_suite, save_suite

_log = logging.getLogger(__name__)


def prepare_iid(*, iid: dict, task_type: str, outputs: dict[str, str], out_source: str | None = None,
                task: str = "") -> None:
    """train / val / test / pool of the task's i.i.d. data (``iid``: the config block), and
    ``out_source``: which source was read and how it was split (``data.iid.source_record``:
    origin, files and their SHA-256, split rule, rows per split, ``fallback``). Data that are not
    the paper's for a paper source (``fallback``) are one warning line naming ``task``."""
    ttype = get_task_type(task_type)
    parts = {k: score_class_labels(v, ttype) for k, v in
             load_splits(iid, ttype.head, set(ttype.iid_labels), pair=ttype.pair).items()}
    for name, path in outputs.items():
        write_parquet(parts[name], path)
    record = source_record(iid, parts)
    if out_source is not None:
        write_json(record, out_source)
    if record["fallback"]:
        _log.warning("%s: i.i.d. data not the paper's (iid.source %s): %s", task or "task", record["source"],
                     record["fallback"])


def prepare_ood(*, entry: dict, task_type: str, out_data: str) -> None:
    """One OOD test set of the task (``entry``: its config entry), in the i.i.d. test set's columns; a hub
    set's dataset, configuration, revision and split (a challenge set's source, set, split and files) in the
    table's metadata (``beluga.ood_source``); a collapsed set's classes and mapping too
    (``beluga.ood_collapse``: beluga/data/ood_collapse.py): an entry's ``collapse``, or the collapse a
    two-class challenge set under a three-class NLI task has by itself (HANS, SciTail:
    :func:`beluga.data.challenge.label_record`)."""
    from beluga.data.challenge import CHALLENGE_SOURCES, challenge_source_record, label_record
    from beluga.data.ood_collapse import collapse_plan
    from beluga.data.ood_collapse import metadata as collapse_metadata
    from beluga.data.ood_sets import hub_source_record, load_ood

    ttype = get_task_type(task_type)
    challenge = entry["source"] in CHALLENGE_SOURCES
    record = challenge_source_record(entry) if challenge else hub_source_record(entry)
    meta = {"beluga.ood_source": json.dumps(record, sort_keys=True)} if record else {}
    if entry.get("collapse"):
        meta.update(collapse_metadata(*collapse_plan(entry, ttype.iid_labels)))
    labels = label_record(entry, ttype.iid_labels) if challenge else None
    if labels is not None:   # a two-class set under a three-class NLI task: the collapse of its predictions
        classes = [labels["labels"][str(i)] for i in range(len(labels["labels"]))]
        meta.update(collapse_metadata(classes, [labels["collapse"][str(k)] for k in sorted(ttype.iid_labels)]))
    df = load_ood(entry, ttype.head, set(ttype.iid_labels), pair=ttype.pair, classes=ttype.iid_labels,
                  task_labels=ttype.iid_labels)
    write_parquet(score_class_labels(df, ttype), out_data, metadata=meta or None)


def score_class_labels(df: pd.DataFrame, ttype) -> pd.DataFrame:
    """A table of a five-class similarity task (``similarity_classes``, GLUE-X's STS-B) whose labels are scores
    (STS-B's GLUE files, SICK's relatedness: floats in [0, 5]) with the scores' classes as its labels
    (:meth:`beluga.core.tasks.ScoreClassesType.score_classes`) and the score kept as ``score``; any other table as it
    is (a local table of such a task holds the classes already, checked as labels when it is read)."""
    if not hasattr(ttype, "score_classes") or df.empty or df["label"].dtype.kind != "f":
        return df
    out = df.copy()
    out["score"] = out["label"].astype(float)
    out["label"] = ttype.score_classes(out["score"])
    return out


def build_suite(*, suite: dict, task_type: str, pool: str | None, out_suite: str) -> None:
    """The task's suite as configured (``suite``: the config block; ``pool``:
    the i.i.d. pool a spec's pool sources draw their sentences from)."""
    pool_df = read_parquet(pool, "i.i.d. pool") if pool else None
    df, declared = make_suite(suite, task_type, pool_df)
    save_suite(df, out_suite, declared=declared)


def split_suite(*, suite: str, task_type: str, fractions, seed: int, out_split: str, out_summary: str,
                duplicates: str = "refuse") -> None:
    """T_train / T_val / T_test by case, per functionality (identical cases: ``duplicates``, folds.DUPLICATES),
    and the suite's summary table."""
    cases = load_suite(suite, label_set(get_task_type(task_type)))
    split = folds.assign_splits(cases, tuple(fractions), seed, duplicates)
    crossing = folds.copies_across_splits(cases, split) if duplicates == "allow" else 0
    if crossing:
        _log.warning("%s: %d of %d cases have an identical case in another split (split.duplicates: allow, the "
                     "reference's split by case)", suite, crossing, len(cases))
    write_parquet(split, out_split)
    summary = functionality_table(cases)
    counts = split.groupby(["functionality", "split"]).size().unstack(fill_value=0)
    for s in ("train", "val", "test"):
        summary[f"n_{s}"] = summary["functionality"].map(counts.get(s, pd.Series(dtype=int))).fillna(0).astype(int)
    write_text(summary.to_csv(sep="\t", index=False), out_summary)
