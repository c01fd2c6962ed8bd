"""Suites that travel to lm-evaluation-harness and back (issue 41).

- :func:`export_lm_eval` (``suite export --format lm-eval --prompt T --label-words ... --out DIR``): a task folder
  lm-eval runs as it is (``lm_eval --model hf --model_args pretrained=M --include_path DIR --tasks NAME
  --log_samples --output_path OUT``): ``DIR/task.yaml`` (``output_type: multiple_choice``; ``dataset_path: json``
  with ``data_files`` the folder's own ``data.jsonl``, by absolute path: lm-eval reads it from wherever it runs,
  so export again after moving the folder; ``doc_to_text`` the prompt as a Jinja template; ``doc_to_choice:
  choices``, the document's field; ``doc_to_target: target``) and ``DIR/data.jsonl``, ONE document per case
  input: ``case_id``, ``input_idx``, ``text`` [, ``text_b``], ``classes`` (the task's class names, in its class
  order) and ``choices`` (each class's label word, in the same order: lm-eval's choices, so the samples it
  writes carry each log-likelihood's word in their ``arguments``), ``label`` (the class an MFT ``eq`` input is
  labelled with, as an index of the choices; null when the input has none: INV / DIR inputs, expectations
  without a class, SENT's neutral with two label words) and ``target`` (``label``, or the placeholder 0 where
  it is null: lm-eval needs a target for every document, so the accuracy it prints is not a BELUGA result --
  ``score`` is);
- ``score --format lm-eval-samples --predictions SAMPLES.jsonl`` reads lm-eval's ``--log_samples`` output of
  such a task back into the project's scorer (:mod:`beluga.analyses.lm_eval_samples`), each log-likelihood
  the class whose word its continuation is.
"""

from __future__ import annotations

import json
import math
import re
import string
from pathlib import Path

import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.tasks import TaskType
from beluga.model.causal_lm import TARGET_DELIMITER, LabelWords, check_prompt, parse_label_words

#: the files of an exported task folder
LM_EVAL_FILES = ("task.yaml", "data.jsonl")


def task_name(out_dir: str) -> str:
    """The lm-eval task name of a folder: its name, lower case, characters other than letters, digits and
    ``_`` as ``_`` (prefixed ``beluga_`` when it would not start with a letter)."""
    name = re.sub(r"[^a-z0-9_]", "_", Path(out_dir).resolve().name.lower()) or "suite"
    return name if name[0].isalpha() else f"beluga_{name}"


def jinja_template(template: str) -> str:
    """A ``str.format`` prompt (``{text}``, ``{text_b}``) as lm-eval's Jinja template: each field ``{{field}}``,
    the literal text kept verbatim (inside ``{% raw %}`` where it holds anything Jinja would read)."""
    out = []
    for literal, field, _, _ in string.Formatter().parse(template):
        if literal:
            out.append("{% raw %}" + literal + "{% endraw %}" if re.search(r"[{}%#]", literal) else literal)
        if field is not None:
            out.append("{{" + field + "}}")
    return "".join(out)


def _mft_class(row, j: int, ttype: TaskType) -> str | None:
    """The class (the task's name) an input is labelled with: an MFT ``eq``'s label (or ``val``), else None."""
    if row.test_type != "MFT" or row.expect != "eq":
        return None
    params = json_loads(row.expect_params) if isinstance(row.expect_params, str) and row.expect_params else {}
    labels = row.labels
    k = params.get("val") if params.get("val") is not None else (
        labels[j] if labels is not None and not isinstance(labels, float) and j < len(labels) else None)
    if k is None or (isinstance(k, float) and math.isnan(k)):
        return None
    return ttype.suite_labels.get(int(k))


def lm_eval_documents(suite: pd.DataFrame, ttype: TaskType, words: LabelWords) -> list[dict]:
    """One document per case input (see the module docstring), in export order."""
    docs = []
    for r in suite.itertuples(index=False):
        has_b = r.inputs_b is not None and not isinstance(r.inputs_b, float)
        for j, text in enumerate(r.inputs):
            cls = _mft_class(r, j, ttype)
            label = words.classes.index(cls) if cls in words.classes else None
            doc = {"case_id": str(r.case_id), "input_idx": j, "text": str(text)}
            if ttype.pair:
                doc["text_b"] = str(r.inputs_b[j]) if has_b else ""
            doc.update(classes=list(words.classes), choices=list(words.words), label=label,
                       target=0 if label is None else label)
            docs.append(doc)
    return docs


def task_yaml(name: str, data_file: Path, template: str, words: LabelWords) -> str:
    """The task's YAML (JSON-quoted strings: valid YAML whatever they hold)."""
    q = json.dumps
    return "\n".join([
        "# written by `python -m beluga suite export --format lm-eval` (beluga/suites/lm_eval.py): run it with",
        f"#   lm_eval --model hf --model_args pretrained=MODEL --include_path {q(str(data_file.parent))} "
        f"--tasks {name} --log_samples --output_path OUT",
        "# and score its samples file with",
        "#   python -m beluga score --suite SUITE --format lm-eval-samples --predictions OUT/.../samples_"
        f"{name}_*.jsonl --out DIR",
        "# `target` of a document without a class (INV / DIR inputs) is the placeholder 0: lm-eval's accuracy is",
        "# not a BELUGA result; `score` is.",
        f"task: {name}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {q(str(data_file))}",
        "test_split: test",
        "output_type: multiple_choice",
        f"doc_to_text: {q(jinja_template(template))}",
        "doc_to_choice: choices",   # each document's field: its classes' words, in the order of its `classes`
        "doc_to_target: target",
        f"target_delimiter: {q(TARGET_DELIMITER)}",
        "metric_list:",
        "  - metric: acc",
        "metadata:",
        "  version: 1.0",
        f"  beluga_classes: {q(list(words.classes))}",
        "",
    ])


def export_lm_eval(suite: pd.DataFrame, ttype: TaskType, out_dir: str, prompt: str, label_words: list[str]) -> str:
    """``suite export --format lm-eval``: the task folder of a suite read for ``ttype`` (see the module
    docstring; the caller, :func:`beluga.cli.score.export_command`, checked the ``--out`` folder first), written
    as a whole or not at all (:func:`beluga.core.io.write_out_folder`). Returns the line the command prints."""
    from beluga.core.io import write_out_folder, write_text

    where = "suite export"
    template = check_prompt(prompt, ttype, where)
    words = parse_label_words(label_words, ttype, where)
    docs = lm_eval_documents(suite, ttype, words)
    name = task_name(out_dir)
    data = Path(out_dir).resolve() / "data.jsonl"
    lines = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    write_out_folder(out_dir, {"task.yaml": lambda p: write_text(task_yaml(name, data, template, words), p),
                               "data.jsonl": lambda p: write_text(lines, p)})
    return (f"exported {len(docs)} inputs of {len(suite)} cases ({ttype.name}) as the lm-evaluation-harness task "
            f"{name!r} -> {out_dir} (lm_eval ... --include_path {out_dir} --tasks {name} --log_samples)")
