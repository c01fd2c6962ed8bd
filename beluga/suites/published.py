"""The published shape of CheckList's three release suites (sentiment, qqp, squad; Ribeiro et al., 2020): per
functionality its capability, test type, cases, inputs per case and training sequences, as the project reads the
release (``published_suites.json``, package data, counted once from the release tarballs by
``count_shape`` of ``scripts/published_suites.py``; tests/test_published_sizes.py recounts it where the
tarballs are at hand).

``python -m beluga plan`` counts these for a task whose suite file is one of the releases (by its file name and the
task's type: :func:`published_suite`) and is not staged yet (``--assume-paper-data``, the default): the
functionality table the folds are enumerated from (:func:`published_functionalities`) and the cases, inputs and
training sequences per split (:func:`published_counts`). The split of a functionality's cases is the pipeline's
(:func:`beluga.suites.folds.split_sizes` over its cases, or its distinct cases with ``split.duplicates: group``);
which cases fall in each split is not known without the file, so the inputs and training sequences of a split are
its cases times the functionality's mean per case (after ``max_inputs_per_case``, from the inputs' histogram): an
estimate, said so in the plan's ``sizes:`` line. The DAG and the run never use it: they read the file.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path

import pandas as pd

from beluga.core.errors import SuiteError
from beluga.suites.folds import split_sizes

#: the release suites: name -> (the task type that reads it, the file names it is staged under: the release
#: tarball the fetch target writes, the JSONL export of ../shared/data)
RELEASE_SHAPES = {"sentiment": ("sent", ("sentiment_suite.tar.gz", "sentiment.jsonl.gz", "sentiment.jsonl")),
          "qqp": ("para", ("qqp_suite.tar.gz", "qqp.jsonl.gz", "qqp.jsonl")),
          "squad": ("read", ("squad_suite.tar.gz", "squad.jsonl.gz", "squad.jsonl"))}
#: the counted shape (scripts/published_suites.py writes it)
OUT = Path(__file__).with_name("published_suites.json")
#: the batchings whose training sequences are counted (``training.batching``), in the rows' order
COUNTED_BATCHINGS = ("project", "reference")


@cache
def _table() -> dict:
    return json.loads(OUT.read_text())


def published_suite(suite_cfg: dict, task_type: str) -> str | None:
    """The release suite (``sentiment`` / ``qqp`` / ``squad``) a task's suite file is, by its file name and the
    task's type, when the file is not there; None for a spec, a file that is there, or any other file."""
    path = suite_cfg.get("path")
    if not path or os.path.lexists(str(path)):
        return None
    name = Path(str(path)).name
    return next((s for s, (task, names) in RELEASE_SHAPES.items() if task == task_type and name in names), None)


def shape(name: str, paper_fixes: bool) -> list[dict]:
    """The counted functionalities of the release suite ``name`` (scripts/published_suites.py ``count_shape``)."""
    return _table()["suites"][name][f"paper_fixes_{str(bool(paper_fixes)).lower()}"]


def published_functionalities(suite_cfg: dict, name: str) -> pd.DataFrame:
    """The functionality table of the release suite ``name`` as :func:`beluga.suites.build.suite_functionalities`
    reads it from the file: functionality, capability, test_type, n_cases (after ``max_cases_per_functionality``)
    and fold_type (``suite.type_folds``), before ``suite.functionalities`` selects."""
    cap = suite_cfg.get("max_cases_per_functionality")
    rows = shape(name, suite_cfg["paper_fixes"])
    table = pd.DataFrame({"functionality": [r["functionality"] for r in rows],
                          "capability": [r["capability"] for r in rows],
                          "test_type": [r["test_type"] for r in rows],
                          "n_cases": [r["cases"] if cap is None else min(r["cases"], int(cap)) for r in rows]})
    trained = suite_cfg.get("type_folds", "declared") == "trained"
    return table.assign(fold_type=[r["fold_type"] if trained else r["test_type"] for r in rows])


def published_counts(suite_cfg: dict, name: str, fractions, duplicates: str, batching: str,
                     wanted) -> dict[str, dict]:
    """functionality -> cases, inputs and training sequences per split (``cases`` / ``inputs``: train, val,
    test; ``seqs``: of its training cases an epoch) of the release suite ``name`` under the task's suite block
    (``max_cases_per_functionality``, ``max_inputs_per_case``, ``paper_fixes``) and the split (``fractions``,
    ``duplicates``), for the functionalities ``wanted``. The cases per split are the pipeline's
    (:func:`~beluga.suites.folds.split_sizes`); their inputs and sequences, the functionality's means per case."""
    cap, per_case = suite_cfg.get("max_cases_per_functionality"), suite_cfg.get("max_inputs_per_case")
    col = 2 + COUNTED_BATCHINGS.index(batching)
    out = {}
    for r in shape(name, suite_cfg["paper_fixes"]):
        f = r["functionality"]
        if f not in wanted:
            continue
        if duplicates == "refuse" and r["distinct"] < r["cases"]:
            raise SuiteError(f"suite {suite_cfg['path']} (not staged: CheckList's published {name} suite): "
                             f"functionality {f!r}: field 'inputs': {r['cases'] - r['distinct']} of its {r['cases']} "
                             "cases repeat another case; set split.duplicates: group or allow")
        n = r["cases"] if cap is None else min(r["cases"], int(cap))
        units = n if duplicates == "allow" else max(3, round(n * r["distinct"] / r["cases"]))
        n_inputs = sum(min(k, per_case or k) * c for k, c, *_ in r["inputs"]) / r["cases"]
        n_seqs = sum(capped_sequences(row[col] / row[1], row[0], per_case) * row[1] for row in r["inputs"]) / r["cases"]
        cases = dict(zip(("train", "val", "test"), (u * n / units for u in split_sizes(units, fractions))))
        out[f] = {"cases": {s: round(c) for s, c in cases.items()},
                  "inputs": {s: round(c * n_inputs) for s, c in cases.items()},
                  "seqs": round(cases["train"] * n_seqs)}
    return out


def capped_sequences(seqs: float, inputs: int, cap: int | None) -> float:
    """The training sequences of a case of ``inputs`` inputs (``seqs`` of them uncapped) that keeps ``cap`` of them
    (``max_inputs_per_case``; None: all), by the items the pipeline makes of it
    (:func:`beluga.train.batches.class_case_items`): a case trained input by input (an MFT, a label-checked INV /
    DIR: a sequence per labelled input, ``seqs`` >= ``inputs`` - 1) loses the dropped inputs' sequences; a pair item
    (an INV / DIR, 2) or a reference ``DIR_LABEL`` item (at most 3) keeps its sequences, at most ``cap``."""
    if cap is None or inputs <= cap:
        return seqs
    if seqs >= inputs - 1:
        return max(0.0, seqs - (inputs - cap))
    return min(seqs, float(cap))


def published_line(name: str, paper_fixes: bool) -> str:
    """The release suite ``name`` in words: its functionalities and cases, where they were counted."""
    rows = shape(name, paper_fixes)
    entry = _table()["suites"][name]
    return (f"CheckList's {name} release suite ({entry['file']}: {len(rows)} functionalities, "
            f"{sum(r['cases'] for r in rows):,} cases, {sum(k * c for r in rows for k, c, *_ in r['inputs']):,} "
            "inputs)")
