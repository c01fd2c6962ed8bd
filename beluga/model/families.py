"""Which backbone families the project can train, read from a model's config.json before any job runs
(the DAG's check, :func:`beluga.workflow.dag.check_models`).

A family is handled when transformers has, for its ``model_type``, the task class the task's head
needs (``AutoModelForSequenceClassification`` for a classification or regression head,
``AutoModelForQuestionAnswering`` for READ's extractive QA head), and, when linear probing is configured
(``lp`` / ``lp_ft``), when the project knows that class's head parameters
(:data:`beluga.methods.regularization.HEAD_PREFIXES`). Tested on tiny random models of BERT, RoBERTa,
DeBERTa-v2, ELECTRA, ALBERT, DistilBERT, XLNet, GPT-2, a Llama-style decoder, BART and T5
(tests/tiny_families.py). transformers' tables (model_type -> task class) are read from
the source of its auto modules (:func:`auto_tables`): importing them imports torch, 2-4 s a dry run would
spend; when their layout is not the expected one they are imported after all.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
from importlib.metadata import version
from pathlib import Path

from beluga.heads import get_head
from beluga.methods.regularization import HEAD_PREFIXES


def _literal_table(source: str, name: str) -> dict[str, str] | None:
    """The ``NAME = OrderedDict([(model_type, class name), ...])`` table of a module's source, or None."""
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name and isinstance(node.value, ast.Call) and len(node.value.args) == 1):
            try:
                table = dict(ast.literal_eval(node.value.args[0]))
            except (ValueError, TypeError, SyntaxError):
                return None
            return table if all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()) else None
    return None


@functools.cache
def auto_table(module: str, name: str) -> dict[str, str]:
    """A table of ``transformers.models.auto.<module>`` (e.g. ``modeling_auto``,
    ``MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES``: model_type -> class name), read from the module's
    source without importing it; imported when the source does not hold it as a literal."""
    spec = importlib.util.find_spec("transformers")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        try:
            table = _literal_table((Path(root) / "models" / "auto" / f"{module}.py").read_text(encoding="utf-8"), name)
        except (OSError, SyntaxError, UnicodeDecodeError):
            table = None
        if table:
            return table
    return dict(getattr(importlib.import_module(f"transformers.models.auto.{module}"), name))


def head_class_name(model_type: str, head: str) -> str | None:
    """The transformers class a ``model_type`` trains a ``head`` with (e.g. ``xlnet`` + ``qa``:
    ``XLNetForQuestionAnsweringSimple``), None when transformers has none."""
    return auto_table(*get_head(head).family_table).get(model_type)


def family_problem(config: dict, head: str, linear_probe: bool | tuple[str, ...] = False) -> str | None:
    """Why the project cannot train the model of a parsed config.json with ``head`` (a clause naming the
    model_type and what is missing), or None when it can. ``linear_probe``: methods that train the head on
    its own are configured (LP / LP-FT; LoRA trains it in full beside its adapters: the names of those
    configured, or True for lp / lp_ft), so the head's parameters must be known."""
    tf = f"transformers {version('transformers')}"
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        return "config.json has no model_type, so transformers cannot tell which architecture it is"
    cls = head_class_name(model_type, head)
    if cls is None:
        what = get_head(head).words
        return (f"{tf} has no {get_head(head).auto_class} class for model_type {model_type!r} (an architecture "
                "without that head, or one it does not know: a newer transformers', or a model that needs "
                f"trust_remote_code, which the project does not run): the task needs {what}")
    if linear_probe and cls not in HEAD_PREFIXES:
        names = " / ".join(linear_probe) if isinstance(linear_probe, tuple) else "lp / lp_ft"
        return (f"methods {names} do not know the head of {cls} (model_type {model_type!r}); add its parameter "
                f"prefixes to beluga.methods.regularization.HEAD_PREFIXES or drop {names}")
    return None
