"""Command line: ``python -m beluga score`` and ``python -m beluga plan``
(also the ``beluga`` script).

    python -m beluga plan [--configfile F] [--throughput JSON] [--train-rate R] [--predict-rate R]
                          [--concurrent-jobs N]

prints the cost plan of a configuration (beluga/workflow/plan.py): jobs, GPU- or
core-hours and the peak scratch disk.

    python -m beluga data stage --from DIR [--data-dir data] [--copy]

lays out a local copy of the reference data as the fetched data folder
(beluga/data/fetch.py :func:`stage`).

    python -m beluga score --suite PATH --predictions PATH --out DIR
                           [--task sent|para|read] [--no-paper-fixes]

Scores every suite case whose ``case_id`` appears in the predictions and
writes ``DIR/cases.parquet`` (case_id, functionality, status) and
``DIR/functionalities.csv`` (functionality, capability, test_type, n_cases,
n_scored, n_passed, pass_rate; suite order). Errors: one line ``error: ...``
on stderr and exit status 2.

    python -m beluga test --model M [M2 ...] --suite PATH --out DIR [--task ...] [--max-length N] ...

predicts a suite with a trained model, scores it and writes the failure
summary (docs/TESTING.md); with several models (e.g. the training seeds of one
system) the summary gives per functionality the mean ± sd of the failure rate
over them. ``score`` and ``test`` write ``DIR`` as a whole or
not at all (:func:`write_out_folder`): a folder of its own, never one holding
other files or their inputs (:func:`check_out_folder`).

    python -m beluga suite export --suite PATH --out FILE [--format inputs|checklist]

writes every input of a suite (TSV / JSONL), or with ``--format checklist``
CheckList's JSONL export of a release tarball (``beluga/suites/release.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from beluga.data.fetch import stage
from beluga.errors import BelugaError, OutputError
from beluga.suites.release import RELEASE_SUFFIXES, read_release_records, write_checklist_jsonl
from beluga.tasks import SUITE_TASK_TYPES, TASK_TYPES, get_task_type
from beluga.workflow.plan import plan_command

EXIT_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="beluga", description="BELUGA command line tools", allow_abbrev=False)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score predictions on a behavioral suite (CheckList semantics)",
                       description="Score model predictions on a suite: pass / fail / filtered per case and "
                                   "pass rates per functionality.")
    s.add_argument("--suite", required=True,
                   help="suite file: project Parquet, CSV or JSONL, a CheckList JSONL export (.jsonl[.gz]), or a "
                        "CheckList release suite (.tar.gz / .tgz / .pkl, read without executing it)")
    s.add_argument("--predictions", required=True,
                   help="predictions: Parquet / CSV / TSV / JSONL keyed by case_id, input_idx with probs (or pred) "
                        "or answer (QA), or a CheckList line file in the export's order (see --format)")
    s.add_argument("--format", default=None,
                   help="parquet, csv, tsv, jsonl, or CheckList's pred_only, binary_conf, softmax, pred_and_conf, "
                        "pred_and_softmax (default: from the extension)")
    s.add_argument("--out", required=True,
                   help="output directory, written as a whole (new, or holding only an earlier score's files)")
    s.add_argument("--task", choices=sorted(TASK_TYPES), default=None,
                   help="task type; default: inferred from the suite (CheckList `suite` field)")
    s.add_argument("--no-paper-fixes", action="store_true",
                   help="CheckList exports: keep the labels exactly as released")
    p_plan = sub.add_parser("plan", help="cost plan of a configuration before running it",
                            description="Jobs, sequences trained on and predicted per job, and estimated core- or "
                                        "GPU-hours per rule and configuration-method pair (beluga/workflow/plan.py).")
    p_plan.add_argument("--configfile", default=None, help="configuration (default: config.yaml of the repository)")
    p_plan.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE",
                        help="override top-level keys of the configuration as snakemake --config does "
                             "(values in YAML), e.g. --config data_dir=/scratch/beluga-data gpus=1")
    p_plan.add_argument("--throughput", default=None,
                        help="throughput table: a benchmark JSON (default: benchmarks/benchmark-<device>.json "
                             "if present, else the built-in reference figures)")
    p_plan.add_argument("--train-rate", type=float, default=None,
                        help="training sequences/s of all-MiniLM-L6-v2 at 48 tokens on the target device")
    p_plan.add_argument("--predict-rate", type=float, default=None,
                        help="prediction sequences/s of all-MiniLM-L6-v2 at 48 tokens on the target device")
    p_plan.add_argument("--fixed-s", type=float, default=None, help="fixed seconds per job (start-up, model load)")
    p_plan.add_argument("--json", default=None, help="also write the plan as JSON to this file")
    p_plan.add_argument("--concurrent-jobs", type=int, default=None,
                        help="training jobs running at once, for the peak scratch disk (default: 100 on GPUs, "
                             "as the Slurm profile's jobs; on CPUs the cores / job_threads)")
    p_data = sub.add_parser("data", help="the data folder: stage a local copy of the reference data (no network)")
    data_sub = p_data.add_subparsers(dest="data_command", required=True)
    p_stage = data_sub.add_parser(
        "stage", help="lay out a local copy of the reference data as the fetched data folder (no network)",
        description="Link (or copy) the files of a local copy of the project's reference data (laid out as "
                    "../shared/data on the development machines: CheckList's release tarballs, SST-2 TSVs, the "
                    "Quora release, the reconstructed SQuAD dev set) into a data folder under the layout the "
                    "fetch target writes, each checked against the copy's SHA256SUMS and CheckList's published "
                    "checksums and recorded in the folder's fetch.lock.json. Configurations that read the data "
                    "folder (configs/paper.yaml) then run without a network; the i.i.d. loaders fall back to "
                    "the Quora release and the SQuAD dev set (docs/DEVIATIONS.md). With a network, fetch "
                    "instead: snakemake fetch --cores 4 --configfile configs/paper.yaml.")
    p_stage.add_argument("--from", dest="source", required=True, help="the local copy (a folder with SHA256SUMS)")
    p_stage.add_argument("--data-dir", default="data", help="the data folder (default: data, as configs/paper.yaml)")
    p_stage.add_argument("--copy", action="store_true", help="copy the files instead of linking them")
    p_test = sub.add_parser("test", help="behavioral test of a trained model on a suite (no training)",
                            description="Predict every input of a suite with a trained model, score it with "
                                        "CheckList's semantics and print the failure summary: per class and "
                                        "functionality the failure rate, and failing cases with their inputs, "
                                        "expectation and predictions. Writes predictions.parquet, cases.parquet, "
                                        "functionalities.csv, summary.md and summary.html to --out, as a whole "
                                        "(a folder of its own). The model must be trained for the suite's task: "
                                        "its tokenizer, head weights and recorded task are checked first. With "
                                        "several models (e.g. the training seeds of one system; every one checked "
                                        "before anything is predicted) the summary gives the failure rate's mean "
                                        "± sd over the models and the cases failing for the most of them.")
    p_test.add_argument("--model", required=True, nargs="+", action="extend", metavar="MODEL",
                        help="a local model folder (safetensors weights) or a Hugging Face hub name (from the "
                             "local cache; downloaded unless HF_HUB_OFFLINE is set); several (--model A B, or "
                             "--model A --model B): each tested on the same cases, summarised over them")
    p_test.add_argument("--suite", required=True, help="suite file (as for score)")
    p_test.add_argument("--out", required=True,
                        help="output directory, written as a whole (new, or holding only an earlier test's files)")
    p_test.add_argument("--task", choices=sorted(TASK_TYPES), default=None, help="task type (default: inferred)")
    p_test.add_argument("--batch-size", type=int, default=64)
    p_test.add_argument("--max-length", type=int, default=128,
                        help="tokens per input (READ: per window); at most the model's positions")
    p_test.add_argument("--doc-stride", type=int, default=None,
                        help="READ: tokens two windows of a long context overlap by (default: max-length / 3, at "
                             "most 128)")
    p_test.add_argument("--max-cases-per-functionality", type=int, default=None,
                        help="a seeded sample of at most this many cases per functionality")
    p_test.add_argument("--failures", type=int, default=3, help="failing cases shown per functionality")
    p_test.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto")
    p_test.add_argument("--no-paper-fixes", action="store_true", help="CheckList exports: labels as released")
    p_suite = sub.add_parser("suite", help="suite tools: build a suite from a spec, perturb your own sentences into "
                                           "a suite, export the inputs for models outside Python, or a CheckList "
                                           "release tarball as its JSONL export")
    suite_sub = p_suite.add_subparsers(dest="suite_command", required=True)
    p_exp = suite_sub.add_parser(
        "export", help="every input, one row per (case_id, input_idx), in a stable order; or (--format checklist) "
                       "a CheckList release suite as CheckList's JSONL export",
        description="Write every input of a suite with columns case_id, input_idx and the text(s) (text [, text_b]; "
                    "READ: context, question): TSV by default, JSONL for a .jsonl name. A CheckList-format "
                    "prediction file for `score --format` has one line per row, in this order. "
                    "With --format checklist, write CheckList's JSONL export instead -- one JSON object per test "
                    "case with suite, case_id, functionality, capability, test_type, inputs, labels, label, "
                    "label_scope, meta, agg_fn, expect, in_run_subset, ... (../shared/data/README.md) -- from a "
                    "CheckList release suite (release_suites/*_suite.tar.gz, .tgz or its .pkl), read without "
                    "executing it (or from such a JSONL export); gzip-compressed when --out ends in .gz, e.g. "
                    "`python -m beluga suite export --suite sentiment_suite.tar.gz --out sentiment.jsonl.gz "
                    "--format checklist`. Labels are written as released (--task / --no-paper-fixes do not apply). "
                    "The output may not be the input file itself.")
    p_exp.add_argument("--suite", required=True, help="suite file (as for score)")
    p_exp.add_argument("--out", required=True,
                       help="output file (.tsv or .jsonl; --format checklist: .jsonl or .jsonl.gz)")
    p_exp.add_argument("--format", choices=["inputs", "checklist"], default="inputs",
                       help="inputs (default): every input, TSV or JSONL by the --out extension; checklist: "
                            "CheckList's JSONL export of a CheckList release suite")
    p_exp.add_argument("--task", choices=sorted(TASK_TYPES), default=None, help="task type (default: inferred)")
    p_exp.add_argument("--no-paper-fixes", action="store_true", help="CheckList exports: labels as released")
    p_build = suite_sub.add_parser(
        "build", help="render a suite spec (templates, lexicons, perturbations of real sentences) into a suite file",
        description="Render a suite spec (YAML; docs/SUITE_FORMAT.md, 'Writing a suite: spec files') into a suite "
                    "file in the project's format, deterministic for the seed, and print a summary per "
                    "functionality with sample cases. --spec is a file or a spec shipped with the project "
                    "(sent_default, para_default, read_default); the spec's pool sources read --source (a text "
                    "file, one sentence per line, or a CSV / TSV / Parquet / JSONL table). Settings not given here "
                    "come from the spec's defaults. The output is written whole or not at all, never over an "
                    "input.")
    p_build.add_argument("--spec", required=True, help="a spec file, or sent_default / para_default / read_default")
    p_build.add_argument("--out", required=True, help="the suite file (.parquet)")
    p_build.add_argument("--source", default=None, help="the sentences the spec's pool sources read")
    p_build.add_argument("--seed", type=int, default=None)
    p_build.add_argument("--cases", type=int, default=None, help="cases per functionality")
    p_build.add_argument("--max-perturbations", type=int, default=None, help="perturbations per case at most")
    p_build.add_argument("--max-words", type=int, default=None, help="real sentences of at most this many words")
    p_build.add_argument("--functionality", action="append", default=None, dest="functionalities",
                         help="only this functionality (repeat for several)")
    p_build.add_argument("--samples", type=int, default=1, help="sample cases shown per functionality")
    p_pert = suite_sub.add_parser(
        "perturb", help="turn your own unlabeled sentences into an INV / DIR suite with a built-in perturbation",
        description="Perturb every sentence of --input (a text file, one sentence per line, or a table's column) "
                    "with a built-in perturbation; each sentence it changes becomes an INV or DIR case with the "
                    "given expectation (sentences it does not change are left out). --list shows the "
                    "perturbations and their parameters. para / read: two columns (--column q1,q2 or "
                    "context,question) and --apply-to. Written whole or not at all, never over the input.")
    p_pert.add_argument("--list", action="store_true", help="list the perturbations and their parameters")
    p_pert.add_argument("--input", help="the sentences (.txt, .csv, .tsv, .parquet, .jsonl)")
    p_pert.add_argument("--perturbation", help="a built-in perturbation (--list)")
    p_pert.add_argument("--param", action="append", default=None, metavar="KEY=VALUE",
                        help="a parameter of the perturbation (repeat for several; values read as YAML)")
    p_pert.add_argument("--type", choices=["INV", "DIR"], dest="test_type", help="the test type")
    p_pert.add_argument("--expect", help="the expectation (inv, monotonic, diff_up, diff_down, eq, ...)")
    p_pert.add_argument("--expect-param", action="append", default=None, metavar="KEY=VALUE",
                        help="a parameter of the expectation, e.g. tolerance=0.1 (repeat for several)")
    p_pert.add_argument("--out", help="the suite file (.parquet)")
    p_pert.add_argument("--task", choices=sorted(TASK_TYPES), default="sent")
    p_pert.add_argument("--column", default=None, help="the table's column (para / read: two, comma-separated)")
    p_pert.add_argument("--apply-to", default=None,
                        help="para: first, second or both; read: context, question or both")
    p_pert.add_argument("--functionality", default=None, help="the functionality's name")
    p_pert.add_argument("--class", dest="capability", default="Custom", help="the functionality's class")
    p_pert.add_argument("--seed", type=int, default=0)
    p_pert.add_argument("--max-perturbations", type=int, default=3)
    p_pert.add_argument("--max-words", type=int, default=60, help="sentences of at most this many words")
    p_rank = sub.add_parser("ood-rank", help="GLUE-X ranking of systems from a long score table",
                            description="Read a long table (CSV, TSV or Parquet) with columns system, task, dataset, "
                                        "domain (id or ood), metric, value and write ranking.csv (system, id_avg, "
                                        "ood_avg, decrease_ratio, rank_decrease_ratio, friedman_rank_ood, "
                                        "friedman_rank_id), correlation.csv (GLUE-X's ID-OOD correlation over "
                                        "the systems: Pearson r, Spearman rho, least-squares line; at least 3 "
                                        "systems) and ranking.md, as GLUE-X computes them "
                                        "(beluga/analyses/ood_eval.py); name one system per backbone to rank "
                                        "backbones as GLUE-X does.")
    p_rank.add_argument("--scores", required=True, help="the long score table")
    p_rank.add_argument("--out", required=True, help="output directory")
    return p


def _infer_task(suite: pd.DataFrame, given: str | None, suite_path: str) -> str:
    known = suite.attrs.get("task_type")
    if given is not None:
        if known is not None and known != given:
            name = suite.attrs.get("checklist_suite", known)
            raise BelugaError(f"--task {given}: the suite {suite_path} is the CheckList {name!r} suite "
                              f"(task {known!r})")
        return given
    if known is not None:
        return known
    has_answers = suite["answers"].notna().any()
    has_labels = suite["labels"].notna().any()
    if has_answers and not has_labels:
        return "read"
    raise BelugaError(f"suite {suite_path}: field 'task': cannot infer the task from a project-format suite; "
                      f"pass --task ({', '.join(sorted(TASK_TYPES))}; CheckList suites: "
                      f"{', '.join(f'{k}={v}' for k, v in SUITE_TASK_TYPES.items())})")


def _read_predictions(path: str, column: str) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise BelugaError(f"predictions {path}: field 'path': file does not exist")
    try:
        import pyarrow.parquet as pq

        schema = pq.read_schema(p)
        names = set(schema.names)
        missing = [c for c in ("case_id", "input_idx", column) if c not in names]
        if missing:
            raise BelugaError(f"predictions {path}: field '{missing[0]}': missing column "
                              f"(need case_id, input_idx and {column}; found {', '.join(schema.names)})")
        return pq.read_table(p, columns=["case_id", "input_idx", column]).to_pandas()
    except (pa.ArrowInvalid, OSError) as e:
        raise BelugaError(f"predictions {path}: field 'path': not a readable Parquet file ({e})") from None


def _typed_keys(preds: pd.DataFrame, path: str) -> pd.DataFrame:
    """case_id as strings, input_idx as integers (one line naming the row otherwise)."""
    preds = preds.copy()
    if preds["case_id"].isna().any():
        i = int(preds.index[preds["case_id"].isna()][0])
        raise BelugaError(f"predictions {path}: row {i}: field 'case_id': missing")
    preds["case_id"] = preds["case_id"].astype(str)
    idx = pd.to_numeric(preds["input_idx"], errors="coerce")
    bad = idx.isna() | (idx != idx.round())
    if bad.any():
        i = int(preds.index[bad][0])
        raise BelugaError(f"predictions {path}: row {i}: field 'input_idx': {preds['input_idx'].iloc[i]!r} is not "
                          f"an integer ({int(bad.sum())} such row(s))")
    preds["input_idx"] = idx.astype("int64")
    return preds


def load_suite_for(suite_path: str, task_name: str | None, paper_fixes: bool = True):
    """(suite, task type) of any suite the project reads, the task inferred when not given."""
    from beluga.suites.checklist import read_any_suite
    from beluga.suites.format import validate_suite

    given = get_task_type(task_name) if task_name is not None else None
    suite = read_any_suite(suite_path, paper_fixes=paper_fixes,
                           label_set=(tuple(given.suite_labels) or None) if given else None,
                           head=given.head if given else None)
    ttype = get_task_type(_infer_task(suite, task_name, suite_path))
    if given is None and suite.attrs.get("task_type") is None:
        # inferred task type (QA): re-check what it needs
        suite = validate_suite(suite, suite_path, tuple(ttype.suite_labels) or None, head=ttype.head)
    return suite, ttype


def _same_file(a: str, b: str) -> bool:
    x, y = Path(a), Path(b)
    try:
        if x.exists() and y.exists():
            return x.samefile(y)
    except OSError:
        pass
    return x.resolve() == y.resolve()


#: the files each command writes into its --out folder (nothing else is ever there)
SCORE_OUTPUTS = ("cases.parquet", "functionalities.csv")
TEST_OUTPUTS = ("predictions.parquet", "cases.parquet", "functionalities.csv", "summary.md", "summary.html")


def _is_leftover(name: str) -> bool:
    """A temporary file of an interrupted atomic write (``.<name>.*.tmp``)."""
    return name.startswith(".") and name.endswith(".tmp")


def check_out_folder(command: str, out_dir: str, own: tuple[str, ...], inputs: dict[str, str | None]) -> None:
    """Before any work: ``--out`` can be replaced as a whole by what
    ``command`` writes (``own``), or one line says why not -- it is a file,
    the working directory (or holds it), it holds one of the command's
    ``inputs`` (label -> path: the suite, the predictions, the model folder),
    or it holds files the command does not write (never deleted: choose a new
    or empty folder, or one an earlier run of the command wrote)."""
    out = Path(out_dir)
    where = f"output folder {out_dir}: field '--out'"
    if out.exists() and not out.is_dir():
        raise BelugaError(f"{where}: is a file, not a folder")
    real = Path(out_dir).expanduser().resolve()
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise BelugaError(f"{where}: is the working directory or holds it; {command} replaces its --out folder "
                          "as a whole: name a folder of its own, e.g. --out results")
    for label, path in inputs.items():
        if not path:
            continue
        p = Path(path).expanduser()
        if not p.exists():
            continue
        rp = p.resolve()
        inside = rp == real or real in rp.parents
        same = any((out / name).exists() and _same_file(str(out / name), str(p)) for name in own)
        if inside or same:
            raise BelugaError(f"{where}: holds the {label} {path} that {command} reads, and {command} replaces the "
                              "folder as a whole; choose another --out")
    if out.is_dir():
        foreign = sorted(e.name for e in out.iterdir() if e.name not in own and not _is_leftover(e.name))
        if foreign:
            shown = ", ".join(foreign[:3]) + (f", ... ({len(foreign)} in all)" if len(foreign) > 3 else "")
            raise BelugaError(f"{where}: holds {len(foreign)} file(s) {command} does not write ({shown}); "
                              f"{command} replaces its --out folder as a whole (its files: {', '.join(own)}): "
                              "choose a new or empty folder, or one an earlier run wrote")


def write_out_folder(out_dir: str, writers: dict) -> None:
    """Write ``--out`` as a whole or not at all: every file (name ->
    ``writer(path)``) into a temporary sibling folder, then that folder
    swapped in for ``out_dir`` (the earlier run's folder, if any, removed
    after). A failure leaves the earlier folder as it was (or none) and no
    file of this run; an error names the final file. Call
    :func:`check_out_folder` first."""
    from beluga.io import WRITE_ERRNOS, output_error

    out = Path(out_dir).expanduser()
    target = Path(os.path.realpath(out)) if out.is_symlink() else out.absolute()
    first = Path(out_dir) / next(iter(writers))

    def reason(e: OSError) -> str:
        return " ".join(str(e.strerror or e).split())
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    except OSError as e:
        if target.is_dir() and e.errno in WRITE_ERRNOS and not os.access(target, os.W_OK):
            raise output_error(first, e) from None   # the folder itself cannot be written either
        if target.is_dir():
            raise BelugaError(f"output folder {out_dir}: field '--out': cannot be replaced as a whole: "
                              f"{target.parent} is not writable ({reason(e)}); choose an --out in a writable "
                              "folder") from None
        raise BelugaError(f"output folder {out_dir}: field '--out': cannot be created: {reason(e)}") from None
    old = None
    try:
        for name, write in writers.items():
            try:
                write(tmp / name)
            except OutputError as e:   # named after the staging folder: name the file the user asked for
                code = getattr(e, "errno", None) or errno.EIO
                raise output_error(Path(out_dir) / name, OSError(code, os.strerror(code))) from None
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        os.chmod(tmp, 0o755)
        if target.exists():
            old = target.parent / f"{tmp.name[:-len('.tmp')]}.old"
            os.rename(target, old)
        try:
            os.rename(tmp, target)
        except OSError:
            if old is not None:
                os.rename(old, target)
                old = None
            raise
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OutputError):
            raise
        raise output_error(out_dir, e, what="output folder", field="--out") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        with contextlib.suppress(OSError):
            shutil.rmtree(old)


def checklist_export_command(suite_path: str, out: str) -> str:
    """``suite export --format checklist``: CheckList's JSONL export (one record
    per test case) of a release suite (read without executing it) or of a
    CheckList JSONL export, written atomically."""

    from beluga.suites.checklist import is_checklist_export
    from beluga.suites.tabular import open_text

    p = Path(suite_path)
    if not p.exists():
        raise BelugaError(f"suite file {suite_path}: field 'path': file does not exist")
    if p.name.lower().endswith(RELEASE_SUFFIXES):
        records = read_release_records(p)
    elif p.name.lower().endswith((".jsonl", ".jsonl.gz")) and is_checklist_export(p):
        def lines():
            with open_text(p) as f:
                for i, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            yield json.loads(line)
                        except json.JSONDecodeError as e:
                            raise BelugaError(f"CheckList suite {suite_path}: line {i}: field 'json': not valid "
                                              f"JSON ({e})") from None
        records = lines()
    else:
        raise BelugaError(f"suite file {suite_path}: field '--format': checklist export needs a CheckList release "
                          "suite (.tar.gz, .tgz or .pkl) or a CheckList JSONL export")
    counts: dict[str, int] = {}

    def counted():
        for r in records:
            counts[r["suite"]] = counts.get(r["suite"], 0) + 1
            yield r
    n = write_checklist_jsonl(counted(), out)
    names = ", ".join(counts) or "no"
    return f"exported {n} CheckList test cases ({names} suite) as CheckList JSONL -> {out}"


def export_command(suite_path: str, out: str, task_name: str | None = None, paper_fixes: bool = True,
                   fmt: str = "inputs") -> str:
    """``suite export``: every input (TSV / JSONL), or with ``fmt="checklist"``
    CheckList's JSONL export of a CheckList suite."""
    from beluga.analyses.behavioral import export_rows, write_export

    if _same_file(suite_path, out):
        raise BelugaError(f"suite export {out}: field '--out': is the input suite file itself; choose another name")
    if fmt == "checklist":
        return checklist_export_command(suite_path, out)
    suite, ttype = load_suite_for(suite_path, task_name, paper_fixes)
    rows = export_rows(suite, ttype.head)
    fmt = write_export(rows, out)
    return f"exported {len(rows)} inputs of {len(suite)} cases ({ttype.name}) as {fmt.upper()} -> {out}"


def score_command(suite_path: str, predictions_path: str, out_dir: str, task_name: str | None = None,
                  paper_fixes: bool = True, fmt: str | None = None) -> dict:
    from beluga.analyses.behavioral import export_rows, infer_format, read_predictions
    from beluga.io import write_csv, write_parquet
    from beluga.metrics import pass_rates
    from beluga.scoring import score_cases
    from beluga.suites.format import functionality_table

    t0 = time.time()
    check_out_folder("score", out_dir, SCORE_OUTPUTS, {"suite": suite_path, "predictions": predictions_path})
    suite, ttype = load_suite_for(suite_path, task_name, paper_fixes)
    t_suite = time.time() - t0

    fmt = infer_format(predictions_path, fmt)
    if fmt == "parquet":
        preds = _read_predictions(predictions_path, "answer" if ttype.head == "qa" else "probs")
    else:
        order = export_rows(suite, ttype.head)[["case_id", "input_idx"]]
        k = ttype.num_model_labels if ttype.head != "qa" else 0   # the model's classes (SENT: 2, mapped as CheckList)
        preds = read_predictions(predictions_path, fmt, order, k, ttype.head == "qa")
    preds = _typed_keys(preds, predictions_path)
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
    cases = score_cases(sel, preds, ttype, source=f"predictions {predictions_path}")
    funcs = pass_rates(cases, functionality_table(sel))   # suite order

    scored = cases[["case_id", "functionality", "status"]]
    write_out_folder(out_dir, {"cases.parquet": lambda p: write_parquet(scored, p),
                               "functionalities.csv": lambda p: write_csv(funcs, p)})
    if unknown:   # after scoring: an error stays the only line
        shown = ", ".join(repr(c) for c in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        print(f"warning: predictions {predictions_path}: {len(unknown)} case id(s) are not in the suite "
              f"{suite_path} and were not scored: {shown}", file=sys.stderr)
    return {"task": ttype.name, "n_cases": len(cases), "n_functionalities": len(funcs),
            "suite_s": round(t_suite, 2), "total_s": round(time.time() - t0, 2)}


def test_command(model: str | list[str], suite_path: str, out_dir: str, task_name: str | None = None,
                 batch_size: int = 64, max_length: int = 128, max_cases: int | None = None, failures: int = 3,
                 precision: str = "auto", paper_fixes: bool = True, doc_stride: int | None = None) -> str:
    """``python -m beluga test``: predict, score and summarise (returns the
    terminal summary). Checked before anything is predicted, each in one
    line: the arguments, the model's positions for ``--max-length``, the
    ``--out`` folder (:func:`check_out_folder`: never an input's folder, never
    files of others), the task the model records, its tokenizer and head
    (:func:`beluga.modeling.load_trained`). ``--out`` is written as a whole or
    not at all (:func:`write_out_folder`).

    ``model``: one model, or a list of them; two or more (e.g. the training
    seeds of one system) are tested by :func:`_test_models`."""
    from beluga.analyses.behavioral import failure_summary, summary_html, summary_markdown, summary_text
    from beluga.fold import suite_outcomes
    from beluga.io import write_csv, write_parquet, write_text
    from beluga.modeling import check_max_length, resolve_model
    from beluga.predict import predictions_table
    from beluga.suites.build import subsample_cases

    t0 = time.time()
    for field, value, least in (("--batch-size", batch_size, 1), ("--max-length", max_length, 8),
                                ("--max-cases-per-functionality", max_cases, 1), ("--failures", failures, 0)):
        if value is not None and value < least:
            raise BelugaError(f"test: field '{field}': {value} is below its minimum {least}")
    if doc_stride is None:
        doc_stride = min(128, max_length // 3)
    elif not 1 <= doc_stride < max_length:
        raise BelugaError(f"test: field '--doc-stride': {doc_stride} must be at least 1 and less than --max-length "
                          f"{max_length}")
    models = [model] if isinstance(model, (str, os.PathLike)) else list(model)
    if not models:
        raise BelugaError("test: field '--model': no model given")
    if len(models) > 1:
        return _test_models([str(m) for m in models], suite_path, out_dir, task_name, batch_size, max_length,
                            max_cases, failures, precision, paper_fixes, doc_stride, t0)
    model = models[0]
    path = resolve_model(model)
    check_max_length(path, max_length, "--max-length", name=model)
    check_out_folder("test", out_dir, TEST_OUTPUTS, {"suite": suite_path, "model folder": path})
    suite, ttype = load_suite_for(suite_path, task_name, paper_fixes)
    if max_cases is not None:
        suite = subsample_cases(suite, max_cases, 0).reset_index(drop=True)
    net, tokenizer = _load_test_model(model, path, ttype, max_length)
    prec = _to_device(net, precision)
    chunk = max(1, 2000 // max(1, int(suite["inputs"].map(len).mean())))   # cases predicted at a time
    progress = _progress_bar(len(suite)) if sys.stderr.isatty() and len(suite) > chunk else None
    preds, status = suite_outcomes(net, tokenizer, ttype, suite, split="suite_test", batch_size=batch_size,
                                   max_length=max_length, doc_stride=doc_stride, precision=prec,
                                   source=f"model {model}", chunk_cases=chunk, on_chunk=progress)
    funcs, examples = failure_summary(suite, status, preds, ttype, k=failures)
    shown = str(model) if len(str(model)) <= 48 else "…" + str(model)[-47:]
    title = f"{shown} on {Path(suite_path).name} ({ttype.name}, {len(suite)} cases)"
    table = predictions_table(preds.assign(split="suite_test", label=None), ttype,
                              str(Path(out_dir) / "predictions.parquet"))
    cases = suite[["case_id", "functionality", "capability", "test_type"]].merge(status[["case_id", "status"]],
                                                                                on="case_id")
    markdown, html = summary_markdown(funcs, examples, title), summary_html(funcs, examples, title)
    write_out_folder(out_dir, {"predictions.parquet": lambda p: write_parquet(table, p),
                               "cases.parquet": lambda p: write_parquet(cases, p),
                               "functionalities.csv": lambda p: write_csv(funcs, p),
                               "summary.md": lambda p: write_text(markdown, p),
                               "summary.html": lambda p: write_text(html, p)})
    text = summary_text(funcs, examples, title)
    return text + f"\n{len(preds)} inputs predicted and scored in {time.time() - t0:.1f} s; written to\n{out_dir}\n"


def _distinct_models(models: list[str], paths: list[str]) -> None:
    """Each model once: the same string twice, or two that are the same folder (a path and a hub name, two
    spellings of one path), is refused in one line."""
    seen: dict[str, str] = {}
    for spec, path in zip(models, paths):
        key = os.path.realpath(os.path.expanduser(path))
        if key in seen:
            first = seen[key]
            same = f"{spec} is given twice" if first == spec else f"{first} and {spec} are the same model ({key})"
            raise BelugaError(f"test: field '--model': {same}; give each model once")
        seen[key] = spec


def _test_models(models: list[str], suite_path: str, out_dir: str, task_name: str | None, batch_size: int,
                 max_length: int, max_cases: int | None, failures: int, precision: str, paper_fixes: bool,
                 doc_stride: int, t0: float) -> str:
    """``test`` with several models (e.g. the training seeds of one system), each predicted on the same cases
    and scored as one model is. Every model is checked (its folder, positions, recorded task, tokenizer and
    head) and loaded before any is predicted; each refusal one line naming the model. ``--out`` gets the
    single-model files with a ``model`` column (the model as given) in predictions.parquet and cases.parquet,
    and the failure rates over the models (:func:`beluga.analyses.behavioral.failure_summary_models`) in
    functionalities.csv and the summaries."""
    from beluga.analyses.behavioral import failure_summary_models, summary_html, summary_markdown, summary_text
    from beluga.fold import suite_outcomes
    from beluga.io import write_csv, write_parquet, write_text
    from beluga.modeling import check_max_length, resolve_model
    from beluga.predict import predictions_table
    from beluga.suites.build import subsample_cases

    paths = [resolve_model(m) for m in models]
    _distinct_models(models, paths)
    for m, path in zip(models, paths):
        check_max_length(path, max_length, "--max-length", name=m)
    check_out_folder("test", out_dir, TEST_OUTPUTS, {"suite": suite_path})
    for path in paths:
        check_out_folder("test", out_dir, TEST_OUTPUTS, {"model folder": path})
    suite, ttype = load_suite_for(suite_path, task_name, paper_fixes)
    if max_cases is not None:
        suite = subsample_cases(suite, max_cases, 0).reset_index(drop=True)
    nets = [_load_test_model(m, path, ttype, max_length) for m, path in zip(models, paths)]   # all checked first
    chunk = max(1, 2000 // max(1, int(suite["inputs"].map(len).mean())))   # cases predicted at a time
    tty = sys.stderr.isatty()
    where = str(Path(out_dir) / "predictions.parquet")
    all_preds, statuses, tables, cases = [], [], [], []
    for i, m in enumerate(models):
        net, tokenizer = nets[i]
        nets[i] = None                                   # each model freed once predicted
        prec = _to_device(net, precision)
        if tty:
            print(f"model {i + 1}/{len(models)}: {m}", file=sys.stderr)
        progress = _progress_bar(len(suite)) if tty and len(suite) > chunk else None
        preds, status = suite_outcomes(net, tokenizer, ttype, suite, split="suite_test", batch_size=batch_size,
                                       max_length=max_length, doc_stride=doc_stride, precision=prec,
                                       source=f"model {m}", chunk_cases=chunk, on_chunk=progress)
        del net, tokenizer
        table = predictions_table(preds.assign(split="suite_test", label=None), ttype, where)
        tables.append(table.add_column(0, pa.field("model", pa.string(), nullable=False),
                                       pa.array([m] * table.num_rows, pa.string())))
        scored = suite[["case_id", "functionality", "capability", "test_type"]].merge(status[["case_id", "status"]],
                                                                                      on="case_id")
        cases.append(scored.assign(model=m)[["model", *scored.columns]])
        all_preds.append(preds)
        statuses.append(status)
    funcs, examples = failure_summary_models(suite, statuses, all_preds, ttype, models, k=failures)
    title = f"{len(models)} models on {Path(suite_path).name} ({ttype.name}, {len(suite)} cases)"
    table = pa.concat_tables(tables)
    cases_all = pd.concat(cases, ignore_index=True)
    markdown = summary_markdown(funcs, examples, title, models=models)
    html = summary_html(funcs, examples, title, models=models)
    write_out_folder(out_dir, {"predictions.parquet": lambda p: write_parquet(table, p),
                               "cases.parquet": lambda p: write_parquet(cases_all, p),
                               "functionalities.csv": lambda p: write_csv(funcs, p),
                               "summary.md": lambda p: write_text(markdown, p),
                               "summary.html": lambda p: write_text(html, p)})
    text = summary_text(funcs, examples, title, models=models)
    n_inputs = len(all_preds[0])
    return text + (f"\n{n_inputs} inputs x {len(models)} models predicted and scored in {time.time() - t0:.1f} s; "
                   f"written to\n{out_dir}\n")


def _load_test_model(spec: str, path: str, ttype, max_length: int):
    """A trained model for ``ttype``'s suite: a local folder (safetensors
    only) or a hub name (``path``: the cached main snapshot, else a download),
    refused in one line when it records another task, lacks its head's
    weights or its tokenizer (:func:`beluga.modeling.load_trained`)."""
    from beluga.modeling import load_trained

    return load_trained(path, ttype.head, task_type=ttype.name, max_length=max_length,
                        max_length_field="--max-length", name=spec)


def _to_device(model, precision: str):
    """The test command's job: the model on the GPU if there is one, else the
    CPU, in eval mode; ``precision`` resolved there, once (it runs no
    :func:`beluga.job.start_job`: torch keeps its own threads)."""
    import torch

    from beluga.precision import resolve

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(dev).eval()
    return resolve(precision, dev)


def _progress_bar(total: int):
    """A progress bar on stderr, called with the cases done (a newline when all are)."""
    def show(done: int) -> None:
        bar = "#" * int(30 * done / total)
        print(f"\rpredicting [{bar:<30}] {done}/{total} cases", end="", file=sys.stderr, flush=True)
        if done == total:
            print(file=sys.stderr)
    return show


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "score":
            info = score_command(args.suite, args.predictions, args.out, args.task,
                                 paper_fixes=not args.no_paper_fixes, fmt=args.format)
            print(f"scored {info['n_cases']} cases in {info['n_functionalities']} functionalities "
                  f"(task {info['task']}) in {info['total_s']} s -> {args.out}")
        elif args.command == "plan":

            print(plan_command(args.configfile, args.throughput, args.train_rate, args.predict_rate, args.fixed_s,
                               args.json, args.concurrent_jobs, overrides=args.config), end="")
        elif args.command == "data" and args.data_command == "stage":

            done = stage(args.source, args.data_dir, copy=args.copy)
            print(f"staged {len(done)} files from {args.source} into {args.data_dir} "
                  f"({'copied' if args.copy else 'linked'}; checksums recorded in "
                  f"{Path(args.data_dir) / 'fetch.lock.json'})")
        elif args.command == "test":
            print(test_command(args.model, args.suite, args.out, args.task, args.batch_size, args.max_length,
                               args.max_cases_per_functionality, args.failures, args.precision,
                               paper_fixes=not args.no_paper_fixes, doc_stride=args.doc_stride), end="")
        elif args.command == "suite" and args.suite_command == "export":
            print(export_command(args.suite, args.out, args.task, paper_fixes=not args.no_paper_fixes,
                                 fmt=args.format))
        elif args.command == "suite" and args.suite_command == "build":
            from beluga.suites.authoring import build_command

            print(build_command(args.spec, args.out, args.source, args.seed, args.cases, args.max_perturbations,
                                args.max_words, args.functionalities, args.samples), end="")
        elif args.command == "suite" and args.suite_command == "perturb":
            from beluga.suites.authoring import perturb_command, perturbation_list

            if args.list:
                print(perturbation_list(), end="")
            else:
                missing = [f"--{k.replace('_', '-')}" for k, v in (("input", args.input), ("perturbation",
                           args.perturbation), ("type", args.test_type), ("expect", args.expect), ("out", args.out))
                           if not v]
                if missing:
                    raise BelugaError(f"suite perturb: field '{missing[0]}': required (or --list)")
                print(perturb_command(args.input, args.perturbation, args.test_type, args.expect, args.out,
                                      args.param, args.expect_param, args.task, args.column, args.apply_to,
                                      args.functionality, args.capability, args.seed, args.max_perturbations,
                                      args.max_words), end="")
        elif args.command == "ood-rank":
            from beluga.analyses.ood_eval import ood_rank_command

            print(ood_rank_command(args.scores, args.out), end="")
    except BelugaError as e:
        print("error: " + " ".join(str(e).splitlines()), file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:  # e.g. an input that cannot be read
        print(f"error: {e.filename or ''}: field 'path': {' '.join(str(e.strerror or e).split())}", file=sys.stderr)
        return EXIT_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
