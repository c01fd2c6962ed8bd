"""What a model folder's ``config.json`` says, read as JSON (no torch, no
transformers: the DAG may call it): how many token positions the model has
(:func:`check_max_length`) and the task a BELUGA-trained model was trained for
(:func:`check_task_record`).

The task record: :func:`beluga.model.modeling.save_model` writes, into the
``config.json`` of every model the pipeline saves (the IID model, kept fold
models, LP models), the key ``beluga_task``::

    "beluga_task": {"task_type": "sent", "head": "classification", "num_labels": 2}

(``head``: ``classification``, ``qa`` or ``regression``; ``num_labels``: the classifier's
classes, 0 for a QA head, 1 for a regression head). transformers keeps unknown config keys, so the
record survives a ``save_pretrained`` of the loaded model. A folder without
the key (a pre-trained backbone, a hub model, a model saved before the record
existed) is not refused for that; its head is checked when it is loaded
(:func:`beluga.model.modeling.load_trained`).
"""

from __future__ import annotations

from pathlib import Path

from beluga.core.bounds import json_loads
from beluga.core.errors import ModelError

#: the tiny randomly initialised plumbing model (beluga/model/modeling.py builds it)
TINY_RANDOM = "tiny-random"
TINY_RANDOM_POSITIONS = 512

#: config.json key of the task record
TASK_RECORD_KEY = "beluga_task"

#: model types whose position ids start after the padding index (RoBERTa's
#: ``create_position_ids_from_input_ids``): ``pad_token_id + 1`` of the
#: ``max_position_embeddings`` are never used for tokens (2 for RoBERTa's 514)
PADDING_OFFSET_TYPES = frozenset({
    "roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer", "data2vec-text", "xmod",
    "roberta-prelayernorm", "mpnet", "ibert", "luke", "mluke", "markuplm",
})


def read_model_config(model_path: str | Path) -> dict:
    """The parsed ``config.json`` of a model folder, or one line naming it."""
    path = Path(model_path) / "config.json"
    try:
        config = json_loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelError(f"model {model_path}: field 'model': folder has no config.json") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ModelError(f"model {model_path}: field 'config.json': not readable JSON "
                         f"({' '.join(str(e).split())[:200]})") from None
    if not isinstance(config, dict):
        raise ModelError(f"model {model_path}: field 'config.json': not a JSON object")
    return config


def model_positions(config: dict) -> tuple[int, str] | None:
    """(token positions an input may use, how config.json says so) of a model
    config, or None when it has no absolute limit (no
    ``max_position_embeddings``; DeBERTa's relative positions,
    ``position_biased_input: false``)."""
    if config.get("position_biased_input") is False:
        return None
    for key in ("max_position_embeddings", "n_positions"):
        n = config.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            break
    else:
        return None
    model_type = str(config.get("model_type", ""))
    if model_type in PADDING_OFFSET_TYPES:
        pad = config.get("pad_token_id")
        offset = (pad if isinstance(pad, int) and not isinstance(pad, bool) and pad >= 0 else 1) + 1
        return n - offset, f"config.json {key} {n}, of which {model_type} reserves {offset}"
    return n, f"config.json {key} {n}"


def check_max_length(model_path: str | Path, max_length: int, where: str = "max_length",
                     name: str | None = None) -> int | None:
    """Stop with one line naming the model and the field ``where`` (e.g.
    ``--max-length``, ``max_length``, ``tasks.sent.training.max_length``) when
    ``max_length`` tokens are more than the model has positions; returns the
    positions (None: no limit, or not a local folder). ``model_path`` is a
    local model folder (what :func:`beluga.model.modeling.resolve_model` returns) or
    ``tiny-random``; anything else (a hub name not fetched yet) is not
    checked. Reads config.json only."""
    shown = name or str(model_path)
    if str(model_path) == TINY_RANDOM:
        limit = (TINY_RANDOM_POSITIONS, f"the tiny model's max_position_embeddings {TINY_RANDOM_POSITIONS}")
    else:
        p = Path(model_path).expanduser()
        if not (p / "config.json").is_file():
            return None
        limit = model_positions(read_model_config(p))
    if limit is None:
        return None
    n, how = limit
    if int(max_length) > n:
        raise ModelError(f"model {shown}: field '{where}': {max_length} tokens is more than the model's {n} "
                         f"positions ({how}); use at most {n}")
    return n


def task_record(task_type: str, head: str, num_labels: int) -> dict:
    """The ``beluga_task`` record of a model trained for ``task_type``."""
    return {"task_type": task_type, "head": head, "num_labels": int(num_labels)}


def recorded_task(config: dict, where: str = "config.json") -> dict | None:
    """The task record of a parsed config.json (None: none recorded; a malformed one is refused,
    ``where`` naming the file)."""
    if TASK_RECORD_KEY not in config:
        return None
    rec = config[TASK_RECORD_KEY]
    if not (isinstance(rec, dict) and all(isinstance(rec.get(k), str) for k in ("task_type", "head"))
            and isinstance(rec.get("num_labels"), int)):
        raise ModelError(f"{where}: field '{TASK_RECORD_KEY}': {rec!r} is not a task record "
                         '({"task_type": ..., "head": ..., "num_labels": ...}); repair or remove it')
    return rec


def check_task_record(model_path: str | Path, config: dict, task_type: str, head: str,
                      name: str | None = None, field: str = "task") -> None:
    """Stop with one line when the model records (``beluga_task``) a task
    type or head other than ``task_type`` / ``head``: a SENT model on a PARA
    suite, a classifier on a READ suite. A model without a record passes."""
    shown = name or str(model_path)
    rec = recorded_task(config, f"model {shown}: config.json")
    if rec is None:
        return
    got_type, got_head = rec.get("task_type"), rec.get("head")
    if got_type is not None and got_type != task_type:
        raise ModelError(f"model {shown}: field '{field}': the model was trained for task type {got_type!r} "
                         f"(config.json {TASK_RECORD_KEY}.task_type), not {task_type!r}; use a model trained for "
                         f"{task_type!r}")
    if got_head is not None and got_head != head:
        raise ModelError(f"model {shown}: field '{field}': the model has a {got_head} head (config.json "
                         f"{TASK_RECORD_KEY}.head), task type {task_type!r} needs a {head} head")
