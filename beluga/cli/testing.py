"""``python -m beluga test``: a suite predicted by one trained model or several (e.g. the training seeds of one
system), scored with CheckList's semantics and summarised (docs/TESTING_MODELS.md).

    python -m beluga test --model M [M2 ...] --suite PATH --out DIR [--task ...] [--max-length N] ...

One model is the case N = 1 of several: every model checked before any is predicted, each predicted on the
same cases and scored alike; ``DIR`` gets predictions.parquet and cases.parquet (over several models with a
``model`` column), functionalities.csv and the summaries (:func:`beluga.analyses.behavioral.failure_summary`:
over several models the failure rate's mean ± sd and the cases failing for the most of them), as a whole or not
at all (:func:`beluga.core.io.write_out_folder`): a folder of its own, never one holding other files or the
command's inputs (:func:`beluga.core.io.check_out_folder`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from beluga.cli.results import RESULT_FILES, write_results
from beluga.core import provenance
from beluga.core.errors import BelugaError
from beluga.core.io import check_out_folder
from beluga.core.progress import progress
from beluga.core.text import terminal_safe
from beluga.data.fetch import DEFAULT_REVISION, is_hub_name, snapshot_commit
from beluga.heads import head_of
from beluga.model.causal_lm import (
    check_distinct_continuations,
    check_prompt,
    check_task,
    context_length,
    default_max_length,
    free_memory,
    load_causal_lm,
    parse_label_words,
    suite_label_word_predictions,
)
from beluga.model.config import read_model_config, recorded_task
from beluga.model.labels import label_map, permute_outputs
from beluga.score.metrics import filter_counts
from beluga.suites.build import read_suite

#: the files ``test`` writes into its --out folder (nothing else is ever there): the predictions and what
#: ``score`` writes (:mod:`beluga.cli.results`)
TEST_OUTPUTS = ("predictions.parquet", *RESULT_FILES)
#: ``--max-length`` of a model with a head (classification, QA, regression) when not given: the length the
#: project's models are fine-tuned at (``training.max_length`` of the paper configurations); a causal LM's default
#: is its context length (:func:`beluga.model.causal_lm.default_max_length`)
HEAD_MAX_LENGTH = 128


def test_command(models: str | list[str], suite_path: str, out_dir: str, task_name: str | None = None,
                 batch_size: int = 64, max_length: int | None = None, max_cases: int | None = None, failures: int = 3,
                 precision: str = "auto", paper_fixes: bool = True, doc_stride: int | None = None,
                 label_order: str | None = None, revision: str | None = None, subset: bool = False,
                 prompt: str | None = None, label_words: list[str] | None = None) -> str:
    """``python -m beluga test``: predict, score and summarise (returns the terminal summary). Checked
    before anything is predicted, each refusal one line (naming the model where it is about one): the
    arguments, each model given once, each model's positions for ``--max-length``, the ``--out`` folder
    (:func:`beluga.core.io.check_out_folder`: never an input's folder, never files of others), the task each model
    records, its tokenizer and head (:func:`beluga.model.modeling.load_trained`), which of its classes is which
    (:func:`beluga.model.labels.label_map`: by config.json's ``id2label`` names, else ``label_order``, the model's
    classes in order); every model is loaded before any is predicted, its probability columns permuted into the
    task's order (recorded in predictions.parquet's metadata, ``beluga_labels``). ``--out`` is written as a
    whole or not at all (:func:`beluga.core.io.write_out_folder`). ``revision`` (``--revision``): the hub models'
    branch, tag or commit (default ``main``), refused with a local model; each hub model's revision and commit
    are recorded (:func:`_hub_models`, ``beluga.hub_models``). The task: ``task_name`` (``--task``), else the
    suite's own (a CheckList suite's, a built suite's metadata), else the one the models record
    (:func:`beluga.suites.build.read_suite`). A regression task (SIMILARITY) is predicted by its regression
    head (one score per input, predictions.parquet's ``score``) and scored by :mod:`beluga.heads.score.cases`.
    ``subset`` (``--checklist-subset``): only the cases of CheckList's published runs, before ``max_cases``.
    ``prompt`` / ``label_words`` (``--prompt`` / ``--label-words``): the models are causal LMs, tested by
    label-word likelihood (:mod:`beluga.model.causal_lm`: the class probabilities it computes are then scored and
    summarised as any classifier's). ``max_length`` None: :data:`HEAD_MAX_LENGTH` for a model with a head; a
    causal LM's context length, capped by memory (:func:`beluga.model.causal_lm.default_max_length`; the
    terminal says which and why), per model. A causal LM's prompt cut at its head (left truncation) is a warning
    of the summary (terminal, summary.md, summary.html, run.json ``truncated_inputs``)."""
    from beluga.core.io import write_parquet  # looked up per call (tests replace it)
    from beluga.model.modeling import check_max_length, resolve_model
    from beluga.score.outcomes import score_cases
    from beluga.score.predict import predictions_table
    from beluga.suites.build import subsample_cases
    from beluga.train.fold import suite_outcomes

    t0 = time.time()
    for field, value, least in (("--batch-size", batch_size, 1), ("--max-length", max_length, 8),
                                ("--max-cases-per-functionality", max_cases, 1), ("--failures", failures, 0)):
        if value is not None and value < least:
            raise BelugaError(f"test: field '{field}': {value} is below its minimum {least}")
    is_causal = prompt is not None or bool(label_words)
    length = HEAD_MAX_LENGTH if max_length is None else max_length   # a causal LM's default: per model, below
    if doc_stride is None:
        doc_stride = min(128, length // 3)
    elif not 1 <= doc_stride < length:
        raise BelugaError(f"test: field '--doc-stride': {doc_stride} must be at least 1 and less than --max-length "
                          f"{length}")
    models = [str(m) for m in ([models] if isinstance(models, (str, os.PathLike)) else models)]
    if not models:
        raise BelugaError("test: field '--model': no model given")
    _check_revision(models, revision)
    paths = [resolve_model(m, revision=revision) for m in models]
    _distinct_models(models, paths)
    hub = _hub_models(models, paths, revision)
    if max_length is not None or not is_causal:
        for m, path in zip(models, paths):
            check_max_length(path, length, "--max-length", name=m)
    check_out_folder("test", out_dir, TEST_OUTPUTS,
                     [("suite", suite_path)] + [("model folder", path) for path in paths])
    recorded = _recorded_tasks(models, paths) if task_name is None else None
    suite, ttype = read_suite(suite_path, task_name, paper_fixes=paper_fixes, recorded=recorded, subset=subset)
    if label_order is not None and not head_of(ttype).has_classes:
        raise BelugaError(f"test: field '--label-order': task {ttype.name!r} predicts {head_of(ttype).predicts}, "
                          "not classes: drop --label-order")
    causal = _causal_setup(prompt, label_words, ttype, label_order)
    if max_cases is not None:
        suite = subsample_cases(suite, max_cases, 0).reset_index(drop=True)
    nets = [_load_test_model(m, path, ttype, suite, length if max_length is not None or causal is None else None,
                             label_order, causal)
            for m, path in zip(models, paths)]   # all checked first
    lmaps = [lmap for _, _, lmap in nets]
    chunk = max(1, 2000 // max(1, int(suite["inputs"].map(len).mean())))   # cases predicted at a time
    tty = sys.stderr.isatty()
    where = str(Path(out_dir) / "predictions.parquet")
    all_preds, statuses, tables, notes, warnings, used = [], [], [], [], [], {}
    for i, m in enumerate(models):
        net, tokenizer, lmap = nets[i]
        nets[i] = None                                   # each model freed once predicted
        prec = _to_device(net, precision)
        n_tokens = length
        if causal is not None and max_length is None:   # the model's context, capped by memory
            dev = next(net.parameters()).device
            chosen = default_max_length(net.config.to_dict(), tokenizer, batch_size, free_memory(dev), str(dev))
            n_tokens, used[m] = chosen.tokens, chosen.record()
            notes.append(chosen.line(m))
        permute_outputs(net, lmap)                       # columns in the task's order before anything is scored
        if tty and len(models) > 1:
            print(f"model {i + 1}/{len(models)}: {terminal_safe(m)}", file=sys.stderr)
        with progress(len(suite), "predicting", "case") as shown:    # a tqdm bar on a terminal, else nothing
            if causal is None:
                preds, status = suite_outcomes(net, tokenizer, ttype, suite, split="suite_test",
                                               batch_size=batch_size, max_length=n_tokens, doc_stride=doc_stride,
                                               precision=prec, source=f"model {m}", chunk_cases=chunk,
                                               on_chunk=shown, reasons=True)
            else:   # label-word probabilities, then scored as any classifier's
                preds = suite_label_word_predictions(net, tokenizer, suite, causal[0], causal[1], "suite_test",
                                                     batch_size, n_tokens, prec, chunk_cases=chunk,
                                                     on_chunk=shown, source=f"model {m}")
                status = score_cases(suite, preds, ttype, source=f"model {m}", reasons=True)
                if preds.attrs.get("truncated_inputs"):
                    warnings.append(head_cut_warning(m, preds.attrs["truncated_inputs"], len(preds), n_tokens,
                                                     context_length(net.config.to_dict(), tokenizer)))
        del net, tokenizer
        tables.append(_with_inputs(predictions_table(preds.assign(split="suite_test", label=None), ttype, where),
                                   suite, preds))
        all_preds.append(preds)
        statuses.append(status)
    about = f"{Path(suite_path).name} ({ttype.name}, {len(suite)} cases)"
    several = len(models) > 1
    title = (f"{len(models)} models" if several else models[0] + (f" @ {revision}" if revision else "")) \
        + f" on {about}"   # the model whole (the terminal wraps it)
    if several:   # each model's rows under a `model` column (the model as given)
        tables = [t.add_column(0, pa.field("model", pa.string(), nullable=False),
                               pa.array([m] * t.num_rows, pa.string())) for t, m in zip(tables, models)]
    table = pa.concat_tables(tables)
    labels = _labels_metadata(models, lmaps)
    if hub:   # which revision and commit of each hub model was tested
        labels["beluga.hub_models"] = json.dumps(hub, sort_keys=True)
    run = {"subcommand": "test", "arguments": {"models": models, "suite": str(suite_path), "task": ttype.name,
                                            "revision": revision, "label_order": label_order,
                                            "batch_size": batch_size,
                                            "max_length": None if causal is not None and max_length is None else length,
                                            **({"max_length_default": used} if used else {}),
                                            "doc_stride": doc_stride, "max_cases_per_functionality": max_cases,
                                            "precision": precision, "paper_fixes": paper_fixes,
                                            "checklist_subset": subset, "prompt": prompt,
                                            "label_words": causal[1].record() if causal else None},
           "labels": json.loads(labels.get("beluga_labels", "{}")), "hub_models": hub,
           **({"truncated_inputs": list(warnings)} if warnings else {}),
           "filtered": {m: filter_counts(st["filter_reason"]) for m, st in zip(models, statuses)},
           **provenance.record({"suite": suite_path, **{f"model {m}": p for m, p in zip(models, paths)}})}
    text = write_results(out_dir, suite, statuses, all_preds, ttype, models, title, run, failures, warnings=warnings,
                         files={"predictions.parquet": lambda p: write_parquet(table, p, metadata=labels)})
    if causal:
        notes.insert(0, f"label words: {', '.join(f'{c}={w!r}' for c, w in causal[1].record().items())}; "
                        f"prompt {causal[0]!r}")
    text += _labels_note(models, lmaps) + "".join(f"\n{n}" for n in notes)
    inputs = f"{len(all_preds[0])} inputs" + (f" x {len(models)} models" if several else "")
    return text + f"\n{inputs} predicted and scored in {time.time() - t0:.1f} s; written to\n{out_dir}\n"


def head_cut_warning(model: str, n_cut: int, n_inputs: int, max_length: int, context: tuple[int, str]) -> str:
    """The summary's warning on a causal LM's prompts cut at their head: ``n_cut`` of the ``n_inputs`` inputs
    were, with a label word, longer than ``max_length`` tokens, and their first tokens (the prompt's beginning: its
    instruction) were dropped (left truncation, lm-evaluation-harness's); ``context``: the model's context length
    and where it comes from (:func:`beluga.model.causal_lm.context_length`)."""
    n, how = context
    fix = (f"raise --max-length (the model's context: {n} tokens, {how}) or shorten the prompt" if max_length < n
           else "the prompt and the input do not fit the model's context: shorten the prompt")
    return (f"model {model}: {n_cut} of {n_inputs} inputs were longer than --max-length {max_length} tokens with a "
            "label word: the head of their prompt (its first tokens, the instruction) was cut (left truncation, as "
            f"lm-evaluation-harness does), so the model read them without it; {fix}")


def _with_inputs(table: pa.Table, suite: pd.DataFrame, preds: pd.DataFrame) -> pa.Table:
    """predictions.parquet with each row's input text (``input``; pair and QA tasks also ``input_b``, the
    second text or the question) after ``input_idx``."""
    texts = {(c, j): x for c, xs in zip(suite["case_id"], suite["inputs"]) for j, x in enumerate(xs)}
    keys = list(zip(preds["case_id"], preds["input_idx"]))
    at = table.schema.get_field_index("input_idx") + 1
    table = table.add_column(at, pa.field("input", pa.string()), pa.array([texts.get(k) for k in keys], pa.string()))
    if suite["inputs_b"].map(lambda v: v is not None and not (isinstance(v, float) and v != v)).any():
        b = {(c, j): x for c, xs in zip(suite["case_id"], suite["inputs_b"])
             if xs is not None and not (isinstance(xs, float) and xs != xs) for j, x in enumerate(xs)}
        table = table.add_column(at + 1, pa.field("input_b", pa.string()), pa.array([b.get(k) for k in keys],
                                                                                     pa.string()))
    return table


def _recorded_tasks(models: list[str], paths: list[str]) -> dict[str, str]:
    """{model: the task type it records (config.json ``beluga_task``)} for the models that record one."""
    out = {}
    for m, path in zip(models, paths):
        if Path(path, "config.json").is_file():
            rec = recorded_task(read_model_config(path), f"model {m}: config.json") or {}
            if rec.get("task_type"):
                out[m] = rec["task_type"]
    return out


def _check_revision(models: list[str], revision: str | None) -> None:
    """``--revision`` names a hub model's branch, tag or commit: refused in one line with a model that is not
    a hub name (a local folder, ``default``, ``tiny-random``) or when empty."""
    if revision is None:
        return
    if not revision.strip():
        raise BelugaError("test: field '--revision': empty; give a branch, tag or commit of the hub model")
    local = next((m for m in models if not is_hub_name(m)), None)
    if local is not None:
        raise BelugaError(f"test: field '--revision': {local} is not a Hugging Face hub model (a local folder or a "
                          "built-in model has no revision); drop --revision or give a hub name")


def _hub_models(models: list[str], paths: list[str], revision: str | None) -> list[dict]:
    """Each hub model tested: its name, the revision asked for (``main`` by default) and the commit its
    snapshot holds (:func:`beluga.data.fetch.snapshot_commit`); predictions.parquet's ``beluga.hub_models``."""
    return [{"model": m, "revision": revision or DEFAULT_REVISION, "commit": snapshot_commit(m, path)}
            for m, path in zip(models, paths) if is_hub_name(m)]


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


def _causal_setup(prompt: str | None, label_words: list[str] | None, ttype, label_order: str | None):
    """(template, label words) of ``--prompt`` / ``--label-words`` (both or neither; no ``--label-order``: the
    words name the classes), checked against the task (:mod:`beluga.model.causal_lm`); None without them."""
    if prompt is None and not label_words:
        return None
    if prompt is None or not label_words:
        given, missing = ("--prompt", "--label-words") if prompt is not None else ("--label-words", "--prompt")
        raise BelugaError(f"test: field '{missing}': {given} tests a causal LM by label-word likelihood and needs "
                          f"{missing} too")
    if label_order is not None:
        raise BelugaError("test: field '--label-order': --label-words names each class's word, so the classes are "
                          "read by name; drop --label-order")
    check_task(ttype)   # READ / SIMILARITY: refused before anything about the prompt
    return check_prompt(prompt, ttype), parse_label_words(label_words, ttype)


def _load_test_model(spec: str, path: str, ttype, suite: pd.DataFrame, max_length: int | None,
                     label_order: str | None = None, causal=None):
    """(model, tokenizer, label map) of a trained model for ``ttype``'s suite: a local folder (safetensors
    only) or a hub name (``path``: the cached main snapshot, else a download),
    refused in one line when it records another task, lacks its head's
    weights or its tokenizer (:func:`beluga.model.modeling.load_trained`), or its
    classes cannot be told apart (:func:`beluga.model.labels.label_map`). With ``causal`` (template, label words):
    a causal LM (:func:`beluga.model.causal_lm.load_causal_lm`), its classes the label words', which its tokenizer
    must tell apart after the prompt of the ``suite``'s first input
    (:func:`beluga.model.causal_lm.check_distinct_continuations`)."""
    from beluga.model.modeling import load_trained

    if causal is not None:
        model, tokenizer = load_causal_lm(path, spec, max_length)
        check_distinct_continuations(tokenizer, causal[1], causal[0], suite, source=f"model {spec}")
        return model, tokenizer, causal[1].label_map()

    model, tokenizer = load_trained(path, ttype.head, task_type=ttype.name, max_length=max_length,
                                    max_length_field="--max-length", name=spec)
    config = read_model_config(path) if Path(path, "config.json").is_file() else {}
    k = int(getattr(model.config, "num_labels", 0) or 0)
    return model, tokenizer, label_map(config, ttype, k, spec, label_order)


def _labels_metadata(models: list[str], lmaps: list) -> dict[str, str]:
    """predictions.parquet's ``beluga_labels``: per model, how its classes were read (none for QA)."""
    if all(lm is None for lm in lmaps):
        return {}
    return {"beluga_labels": json.dumps({m: lm.record() for m, lm in zip(models, lmaps) if lm is not None})}


def _labels_note(models: list[str], lmaps: list) -> str:
    """A line per model whose classes were not read as named in the task's order."""
    notes = [f"model {m}: classes read {'as ' + ', '.join(lm.classes) if not lm.identity else 'in order'} "
             f"(by {lm.by})" for m, lm in zip(models, lmaps)
             if lm is not None and (not lm.identity or lm.by not in ("id2label", "--label-words"))]
    return "".join(f"\n{n}" for n in notes)


def _to_device(model, precision: str):
    """The test command's job: the model on the GPU if there is one, else the
    CPU, in eval mode; ``precision`` resolved there, once (it runs no
    :func:`beluga.model.job.start_job`: torch keeps its own threads)."""
    import torch

    from beluga.model.precision import resolve

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(dev).eval()
    return resolve(precision, dev)
