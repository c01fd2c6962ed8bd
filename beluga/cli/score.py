"""The commands for any model's predictions: ``score`` (a predictions file scored on a suite) and
``suite export`` (a suite's inputs for a model outside Python, or any suite as CheckList's JSONL export); both
read the suite with :func:`beluga.suites.build.read_suite`, the pipeline's reader.

    python -m beluga score --suite PATH --predictions PATH --out DIR
                           [--format F] [--task TYPE] [--failures K] [--no-paper-fixes]

scores every suite case whose ``case_id`` appears in the predictions and writes what ``test`` writes but the
predictions (:mod:`beluga.cli.results`: ``cases.parquet``, ``functionalities.csv`` with the failure rate per
functionality, ``summary.md``, ``summary.html``, ``run.json``) and prints the same summary; ``DIR`` as a whole
or not at all (:func:`beluga.core.io.write_out_folder`).

    python -m beluga suite export --suite PATH --out FILE [--format inputs|checklist]

writes every input of a suite (TSV / JSONL), or with ``--format checklist`` CheckList's JSONL export of a
release tarball (``beluga/suites/release.py``) or of any other suite (``beluga/suites/checklist_export.py``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.analyses.lm_eval_samples import SAMPLES_FORMAT, check_sample_texts, read_lm_eval_samples
from beluga.analyses.predictions import ORDERED_FORMATS, export_rows, infer_format, read_predictions, write_export
from beluga.cli.results import RESULT_FILES, write_results
from beluga.core import provenance
from beluga.core.bounds import json_loads
from beluga.core.errors import BelugaError
from beluga.core.io import check_not_input, check_out_folder
from beluga.core.progress import progress
from beluga.core.text import terminal_safe
from beluga.heads import head_of
from beluga.model.labels import order_from_option
from beluga.suites.build import checklist_subset, read_suite
from beluga.suites.lm_eval import LM_EVAL_FILES, export_lm_eval
from beluga.suites.release import RELEASE_SUFFIXES, read_release_records, write_checklist_jsonl

#: the files ``score`` writes into its --out folder (nothing else is ever there)
SCORE_OUTPUTS = RESULT_FILES


def _reorder(preds: pd.DataFrame, label_order: str | None, ttype, path: str) -> tuple[pd.DataFrame, dict]:
    """The predictions with their probability columns in the task's order (``--label-order``: the columns'
    classes), and cases.parquet's metadata saying how they were read."""
    if label_order is None:
        return preds, {}
    widths = {len(p) for p in preds["probs"]} if len(preds) else {0}
    if len(widths) != 1:
        raise BelugaError(f"predictions {path}: field 'probs': rows have {sorted(widths)} probability columns; "
                          "--label-order needs one width")
    lmap = order_from_option(label_order, ttype, widths.pop(), f"predictions {path}")
    cols = lmap.columns
    preds = preds.assign(probs=[np.asarray(p, dtype=np.float64)[cols].tolist() for p in preds["probs"]])
    return preds, {"beluga_labels": json.dumps({"predictions": lmap.record()})}


def checklist_export_command(suite_path: str, out: str, task_name: str | None = None,
                              paper_fixes: bool = True) -> str:
    """``suite export --format checklist``: CheckList's JSONL export (one record per test case), written
    atomically, of a suite that passes :func:`beluga.suites.build.read_suite`'s checks. A release suite (read
    without executing it) or a CheckList JSONL export is copied record for record; any other suite (a
    spec-built, perturbed or imported one: Parquet, the project's CSV / JSONL) is written by
    :func:`beluga.suites.checklist_export.suite_records`, which the project reads back into an equal suite (a
    regression suite is refused in one line)."""

    from beluga.suites.checklist import is_checklist_export
    from beluga.suites.checklist_export import suite_records
    from beluga.suites.tabular import open_text

    suite, ttype = read_suite(suite_path, task_name, paper_fixes=paper_fixes)   # every check, whichever branch
    p = Path(suite_path)
    if p.name.lower().endswith(RELEASE_SUFFIXES):
        records = read_release_records(p)
    elif p.name.lower().endswith((".jsonl", ".jsonl.gz")) and is_checklist_export(p):
        def lines():
            with open_text(p) as f:
                for i, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            yield json_loads(line)
                        except json.JSONDecodeError as e:
                            raise BelugaError(f"CheckList suite {suite_path}: line {i}: field 'json': not valid "
                                              f"JSON ({e})") from None
        records = lines()
    else:
        records = suite_records(suite, ttype.name, suite.attrs.get("declared"))
    counts: dict[str, int] = {}

    def counted():
        for r in records:
            counts[r["suite"]] = counts.get(r["suite"], 0) + 1
            yield r
    n = write_checklist_jsonl(counted(), out)
    names = ", ".join(counts) or "no"
    return f"exported {n} CheckList test cases ({names} suite) as CheckList JSONL -> {out}"


def export_command(suite_path: str, out: str, task_name: str | None = None, paper_fixes: bool = True,
                   fmt: str = "inputs", prompt: str | None = None, label_words: list[str] | None = None) -> str:
    """``suite export``: every input (TSV / JSONL), or with ``fmt="checklist"``
    CheckList's JSONL export of any suite (:func:`checklist_export_command`), or with ``fmt="lm-eval"`` an
    lm-evaluation-harness task folder (``prompt``, ``label_words``: :func:`beluga.suites.lm_eval.export_lm_eval`)."""
    if fmt != "lm-eval" and (prompt is not None or label_words):
        raise BelugaError(f"suite export {out}: field '--prompt': --prompt / --label-words belong to --format lm-eval")
    if fmt == "lm-eval":   # an lm-evaluation-harness task folder (beluga/suites/lm_eval.py)
        for field, value in (("--prompt", prompt), ("--label-words", label_words)):
            if not value:
                raise BelugaError(f"suite export {out}: field '{field}': --format lm-eval needs --prompt and "
                                  "--label-words (the task's prompt and each class's word)")
        check_out_folder("suite export", out, LM_EVAL_FILES, [("suite", suite_path)])
        suite, ttype = read_suite(suite_path, task_name, paper_fixes=paper_fixes)
        return export_lm_eval(suite, ttype, out, prompt, label_words)
    check_not_input("suite export", "--out", out, [("input suite file", suite_path)])
    if fmt == "checklist":
        return checklist_export_command(suite_path, out, task_name, paper_fixes)
    suite, ttype = read_suite(suite_path, task_name, paper_fixes=paper_fixes)
    rows = export_rows(suite, head_of(ttype))
    fmt = write_export(rows, out)
    return f"exported {len(rows)} inputs of {len(suite)} cases ({ttype.name}) as {fmt.upper()} -> {out}"


def score_command(suite_path: str, predictions_path: str, out_dir: str, task_name: str | None = None,
                  paper_fixes: bool = True, fmt: str | None = None, label_order: str | None = None,
                  subset: bool = False, failures: int = 3) -> str:
    """``score``: every suite case whose ``case_id`` the predictions name, scored and summarised as ``test``
    does (:func:`beluga.cli.results.write_results`: ``DIR/cases.parquet``, the failure rates per functionality
    in suite order in ``DIR/functionalities.csv``, the summary pages with ``failures`` failing cases per
    functionality, ``run.json``), ``DIR`` written as a whole or not at all. Returns the summary the command
    prints.

    A regression suite (SIMILARITY) is scored from predicted scores (:mod:`beluga.analyses.predictions`).
    A classifier's predictions' probability columns (label indices) are read in the task's order (``test``
    writes them so), or in ``label_order``'s (comma-separated class names,
    :func:`beluga.model.labels.order_from_option`), permuted into the task's before anything is scored and recorded
    in cases.parquet's metadata (``beluga_labels``). lm-eval's samples (``fmt="lm-eval-samples"``) name each
    log-likelihood's class by its continuation's word (:mod:`beluga.analyses.lm_eval_samples`): ``label_order``
    is refused with them.
    ``subset`` (``--checklist-subset``): only the cases of CheckList's published runs
    (:func:`beluga.suites.build.checklist_subset`)."""
    from beluga.score.metrics import filter_counts
    from beluga.score.outcomes import score_cases

    t0 = time.time()
    if failures < 0:
        raise BelugaError(f"score: field '--failures': {failures} is below its minimum 0")
    check_out_folder("score", out_dir, SCORE_OUTPUTS, {"suite": suite_path, "predictions": predictions_path})
    suite, ttype = read_suite(suite_path, task_name, paper_fixes=paper_fixes)

    samples = fmt == SAMPLES_FORMAT   # lm-evaluation-harness's --log_samples (beluga/suites/lm_eval.py)
    fmt = fmt if samples else infer_format(predictions_path, fmt)
    order = export_rows(suite, head_of(ttype))[["case_id", "input_idx"]] if fmt in ORDERED_FORMATS else None
    if subset:   # after the line files' order (the whole export's)
        suite = checklist_subset(suite, suite_path)
    head = head_of(ttype)
    if label_order is not None and not head.has_classes:
        raise BelugaError(f"predictions {predictions_path}: field '--label-order': task {ttype.name!r} predicts "
                          f"{head.predicts}, not class columns: drop --label-order")
    if samples and not head.has_classes:
        raise BelugaError(f"predictions {predictions_path}: field '--format': {SAMPLES_FORMAT} holds label-word "
                          f"log-likelihoods of a classification task; task {ttype.name!r} is not one")
    if samples and label_order is not None:
        raise BelugaError(f"predictions {predictions_path}: field '--label-order': {SAMPLES_FORMAT} names each "
                          "log-likelihood's class by its continuation's word, so the classes are read by name; "
                          "drop --label-order")
    if samples:   # per-choice log-likelihoods -> probabilities in the task's class order, read by their words
        preds = check_sample_texts(read_lm_eval_samples(predictions_path, ttype), suite, predictions_path, suite_path)
        labels = {}
    else:   # the head's value column; a classifier's k classes (SENT: 2, mapped as CheckList)
        k = ttype.num_model_labels if head.has_classes else 0
        preds = read_predictions(predictions_path, fmt, order, k, head.value_column, ttype.name)
        preds, labels = _reorder(preds, label_order, ttype, predictions_path)
    wanted = set(preds["case_id"].tolist())
    sel = suite[suite["case_id"].isin(wanted)].reset_index(drop=True)
    if len(sel) == 0:
        raise BelugaError(f"predictions {predictions_path}: field 'case_id': no case id matches a case of "
                          f"the suite {suite_path}")
    unknown = sorted(wanted - set(sel["case_id"]))
    n_inputs = dict(zip(sel["case_id"], (len(x) for x in sel["inputs"])))
    mine = preds[preds["case_id"].isin(n_inputs.keys())]
    limit = mine["case_id"].map(n_inputs)
    bad = mine[(mine["input_idx"] < 0) | (mine["input_idx"] >= limit)]
    if len(bad):
        b = bad.iloc[0]
        raise BelugaError(f"predictions {predictions_path}: field 'input_idx': case {b['case_id']!r} has "
                          f"{n_inputs[b['case_id']]} inputs but a prediction for input_idx {b['input_idx']} "
                          f"(is this the suite the predictions were made for?)")
    with progress(len(sel), "scoring", "case") as shown:     # a tqdm bar on a terminal, else nothing
        cases = score_cases(sel, preds, ttype, source=f"predictions {predictions_path}", on_cases=shown,
                            reasons=True)
    run = {"subcommand": "score", "arguments": {"suite": str(suite_path), "predictions": str(predictions_path),
                                             "task": ttype.name, "format": fmt, "label_order": label_order,
                                             "paper_fixes": paper_fixes, "checklist_subset": subset,
                                             "failures": failures},
           "labels": json.loads(labels.get("beluga_labels", "{}")), "unknown_case_ids": len(unknown),
           "filtered": {str(predictions_path): filter_counts(cases["filter_reason"])},
           **provenance.record({"suite": suite_path, "predictions": predictions_path})}
    title = f"{predictions_path} on {Path(suite_path).name} ({ttype.name}, {len(sel)} cases)"
    text = write_results(out_dir, sel, [cases], [preds], ttype, [str(predictions_path)], title, run, failures,
                         cases_metadata=labels)
    if unknown:   # after scoring: an error stays the only line
        shown = ", ".join(repr(c) for c in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        print(terminal_safe(f"warning: predictions {predictions_path}: {len(unknown)} case id(s) are not in the "
                            f"suite {suite_path} and were not scored: {shown}"), file=sys.stderr)
    took = time.time() - t0
    return text + f"\n{len(mine)} inputs of {len(sel)} cases scored in {took:.1f} s; written to\n{out_dir}\n"
