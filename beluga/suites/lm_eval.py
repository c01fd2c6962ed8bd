"""Suites that travel to lm-evaluation-harness and back (issue 41).

- :func:`export_lm_eval` (``suite export --format lm-eval --prompt T --label-words ... --out DIR``): a task folder
  lm-eval runs as it is (``lm_eval --model hf --model_args pretrained=M --include_path DIR --tasks NAME
  --log_samples --output_path OUT``): ``DIR/task.yaml`` (``output_type: multiple_choice``; ``dataset_path: json``
  with ``data_files`` the folder's own ``data.jsonl``, by absolute path: lm-eval reads it from wherever it runs,
  so export again after moving the folder; ``doc_to_text`` the prompt as a Jinja template; ``doc_to_choice`` the
  label words in the task's class order; ``doc_to_target: target``) and ``DIR/data.jsonl``, ONE document per
  case input: ``case_id``, ``input_idx``, ``text`` [, ``text_b``], ``label`` (the class an MFT ``eq`` input is
  labelled with, as an index of the choices; null when the input has none: INV / DIR inputs, expectations
  without a class, SENT's neutral with two label words) and ``target`` (``label``, or the placeholder 0 where
  it is null: lm-eval needs a target for every document, so the accuracy it prints is not a BELUGA result --
  ``score`` is);
- :func:`read_lm_eval_samples` (``score --format lm-eval-samples --predictions SAMPLES.jsonl``): lm-eval's
  ``--log_samples`` JSONL (one record per document: ``doc``, and per choice ``[log-likelihood, is-greedy]`` in
  ``filtered_resps``, else ``resps``) -> class probabilities (the softmax over the choices' log-likelihoods,
  in the choices' order: the task's classes, as exported), keyed by the document's ``case_id`` / ``input_idx``,
  for the project's scorer (INV / DIR tolerances unchanged). A record without them, or with another number of
  choices than the task's classes, is one line naming the file, the line and the field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.bounds import json_loads
from beluga.causal_lm import TARGET_DELIMITER, LabelWords, check_prompt, class_sets, parse_label_words, softmax_rows
from beluga.errors import DataError
from beluga.tasks import TaskType

#: the files of an exported task folder
LM_EVAL_FILES = ("task.yaml", "data.jsonl")
#: lm-eval's per-sample output names (its --log_samples files: samples_<task>_<date>.jsonl)
SAMPLES_FORMAT = "lm-eval-samples"


def task_name(out_dir: str) -> str:
    """The lm-eval task name of a folder: its name, lower case, characters other than letters, digits and
    ``_`` as ``_`` (prefixed ``beluga_`` when it would not start with a letter)."""
    name = re.sub(r"[^a-z0-9_]", "_", Path(out_dir).resolve().name.lower()) or "suite"
    return name if name[0].isalpha() else f"beluga_{name}"


def jinja_template(template: str) -> str:
    """A ``str.format`` prompt (``{text}``, ``{text_b}``) as lm-eval's Jinja template: each field ``{{field}}``,
    the literal text kept verbatim (inside ``{% raw %}`` where it holds anything Jinja would read)."""
    import string

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
            doc.update(label=label, target=0 if label is None else label)
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
        f"doc_to_choice: {q(list(words.words))}",
        "doc_to_target: target",
        f"target_delimiter: {q(TARGET_DELIMITER)}",
        "metric_list:",
        "  - metric: acc",
        "metadata:",
        "  version: 1.0",
        f"  beluga_classes: {q(list(words.classes))}",
        "",
    ])


def export_lm_eval(suite_path: str, out_dir: str, prompt: str | None, label_words: list[str] | None,
                   task_name_given: str | None = None, paper_fixes: bool = True) -> str:
    """``suite export --format lm-eval``: the task folder (see the module docstring), written as a whole or not
    at all (:func:`beluga.io.write_out_folder`). Returns the line the command prints."""
    from beluga.cli.score import load_suite_for
    from beluga.io import check_out_folder, write_out_folder, write_text

    for field, value in (("--prompt", prompt), ("--label-words", label_words)):
        if not value:
            raise DataError(f"suite export {out_dir}: field '{field}': --format lm-eval needs --prompt and "
                            "--label-words (the task's prompt and each class's word)")
    check_out_folder("suite export", out_dir, LM_EVAL_FILES, [("suite", suite_path)])
    suite, ttype = load_suite_for(suite_path, task_name_given, paper_fixes)
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


def _loglik(value, path: str, line: int, field: str, i: int) -> float:
    """A choice's log-likelihood from lm-eval's ``[loglik, is_greedy]`` (``filtered_resps``) or
    ``[[loglik, is_greedy]]`` (``resps``); its samples files write them as strings (``"-7.21"``, ``"False"``:
    its ``sanitize_list``), read back exactly (Python writes a float's shortest round-tripping digits)."""
    x = value
    while isinstance(x, (list, tuple)) and x:
        x = x[0]
    try:
        ll = float(x) if isinstance(x, (int, float, str)) and not isinstance(x, bool) else math.nan
    except ValueError:
        ll = math.nan
    if not math.isfinite(ll) or ll > 1e-6:
        raise DataError(f"predictions {path}: line {line}: field '{field}[{i}]': {str(value)[:60]!r} is not a "
                        "log-likelihood (a number <= 0)")
    return ll


def read_lm_eval_samples(path: str, ttype: TaskType) -> pd.DataFrame:
    """lm-eval's ``--log_samples`` JSONL -> DataFrame(case_id, input_idx, probs) (see the module docstring), the
    number of choices that of the task's classes (:func:`beluga.causal_lm.class_sets`: SENT two or three)."""
    from beluga.analyses.predictions import predictions_text, text_lines, unique_case_records

    sets = {len(s): s for s in class_sets(ttype)}
    text = predictions_text(path, SAMPLES_FORMAT)
    records = []
    for line_no, line in enumerate(text_lines(text), 1):
        if not line.strip():
            continue
        try:
            rec = json_loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"predictions {path}: line {line_no}: field 'json': not valid JSON ({e})") from None
        if not isinstance(rec, dict):
            raise DataError(f"predictions {path}: line {line_no}: field 'json': not an lm-eval sample record")
        doc = rec.get("doc")
        if not isinstance(doc, dict) or "case_id" not in doc or "input_idx" not in doc:
            raise DataError(f"predictions {path}: line {line_no}: field 'doc': no document with case_id and "
                            "input_idx (the samples of a task `suite export --format lm-eval` wrote?)")
        field = "filtered_resps" if "filtered_resps" in rec else "resps"
        resps = rec.get(field)
        if not isinstance(resps, list) or not resps:
            raise DataError(f"predictions {path}: line {line_no}: field '{field}': no per-choice log-likelihoods")
        if len(resps) not in sets:
            shown = " or ".join(f"{n} ({', '.join(c)})" for n, c in sets.items())
            raise DataError(f"predictions {path}: line {line_no}: field '{field}': {len(resps)} choices, task "
                            f"{ttype.name!r} has {shown} classes; export the task with a word for each class")
        lls = [_loglik(v, path, line_no, field, i) for i, v in enumerate(resps)]
        records.append((line_no, {"case_id": doc["case_id"], "input_idx": doc["input_idx"], "ll": lls}))
    if not records:
        raise DataError(f"predictions {path}: field 'doc': no sample records")
    widths = {len(d["ll"]) for _, d in records}
    if len(widths) > 1:
        raise DataError(f"predictions {path}: field '{field}': records have {sorted(widths)} choices; one task's "
                        "samples have one number")
    rows = list(unique_case_records(records, path))
    probs = softmax_rows(np.array([d["ll"] for _, _, d in rows], dtype=np.float64))
    return pd.DataFrame({"case_id": [key[0] for key, _, _ in rows], "input_idx": [key[1] for key, _, _ in rows],
                         "probs": [p.tolist() for p in probs]})
