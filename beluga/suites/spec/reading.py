"""Suite specs, read: a spec file's YAML (its text read as written, :func:`read_yaml`), validated against
``packaged_specs/spec.schema.yaml`` with control characters refused (:func:`parse_spec`), and the lexicons it resolves
to (built-ins, lexicon files, its own: :func:`resolve_lexicons`). What the schema cannot say is checked by
:mod:`beluga.suites.spec.check`."""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

from beluga.core.bounds import yaml_load, yaml_load_text
from beluga.core.errors import ConfigError
from beluga.suites import templates as tpl
from beluga.suites.spec.core import (
    SPEC_SCHEMA,
    Spec,
    is_source_lexicon,
    lexicon_entries,
    not_reserved,
    spec_error,
)


@lru_cache(maxsize=1)
def _schema() -> dict:
    return yaml.safe_load(SPEC_SCHEMA.read_text())


def read_yaml(path: str, what: str, words=None):
    """A YAML file's data; ``words(data)`` lists the paths whose values are text (word lists, templates): those
    are read as written (``007`` stays "007", ``1:30`` "1:30", ``yes`` "yes"), not as YAML 1.1 numbers,
    booleans or dates."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what} {path}: field 'path': file does not exist")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{what} {path}: field '(file)': not UTF-8 text ({e.reason})") from None
    try:
        data = yaml_load(text)
        if words is not None and isinstance(data, dict):
            _as_written(data, yaml_load_text(text), words(data))
        return data
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(f"{what} {path}: {line}field '(syntax)': not valid YAML "
                          f"({getattr(e, 'problem', None) or e})") from None


def _as_written(data: dict, text: dict, paths) -> None:
    """Put the text-read value (``text``, the same document with every plain scalar a string) at each path of
    ``paths`` into ``data``."""
    for path in paths:
        parent, written = data, text
        for key in path[:-1]:
            parent, written = parent[key], _child(written, key)
        written = _child(written, path[-1])
        if written is not _MISSING:
            parent[path[-1]] = written


_MISSING = object()


def _child(node, key):
    if isinstance(node, dict):
        return node.get(key, _MISSING) if isinstance(key, str) else _MISSING
    if isinstance(node, list) and isinstance(key, int) and key < len(node):
        return node[key]
    return _MISSING


def _lexicon_words(block: dict, where: list) -> list[list]:
    """The word-list paths of a mapping of lexicons (a spec's ``lexicons``, a lexicon file, a group's)."""
    out = []
    for name, value in block.items():
        if isinstance(value, list):
            out.append([*where, name])
        elif isinstance(value, dict):
            out.extend([*where, name, k] for k in ("extend", "concat") if isinstance(value.get(k), list))
    return out


def _perturb_words(p, where: list) -> list[list]:
    return [[*where, k] for k, v in p.items() if isinstance(v, list)] if isinstance(p, dict) else []


def spec_words(data: dict) -> list[list]:
    """The paths of a spec's text: lexicons, source pools, templates, variants, answers, slot values and
    perturbations' word lists."""
    out = _lexicon_words(data.get("lexicons") or {}, ["lexicons"]) if isinstance(data.get("lexicons"), dict) else []
    for name, src in (data.get("sources") or {}).items() if isinstance(data.get("sources"), dict) else ():
        if isinstance(src, dict) and isinstance(src.get("pool"), list):
            out.append(["sources", name, "pool"])
    funcs = data.get("functionalities")
    for i, func in enumerate(funcs if isinstance(funcs, list) else []):
        if not isinstance(func, dict):
            continue
        out += _perturb_words(func.get("perturb"), ["functionalities", i, "perturb"])
        for key in ("templates", "fallback"):
            groups = func.get(key)
            for j, g in enumerate(groups if isinstance(groups, list) else []):
                if not isinstance(g, dict):
                    continue
                loc = ["functionalities", i, key, j]
                out += [[*loc, k] for k in ("templates", "variants", "answer") if k in g]
                if isinstance(g.get("lexicons"), dict):
                    out += [[*loc, "lexicons", n] for n, v in g["lexicons"].items() if isinstance(v, list)]
                out += [[*loc, k, "values"] for k in ("fill_slot", "swap_slot")
                        if isinstance(g.get(k), dict) and isinstance(g[k].get("values"), list)]
                out += _perturb_words(g.get("perturb"), [*loc, "perturb"])
    return out


def _control(value) -> tuple[list, str] | None:
    """The first control character in a string or a nested list / mapping of strings: (its path, the
    character)."""
    stack = [([], value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, str):
            bad = next((c for c in v if unicodedata.category(c) == "Cc"), None)
            if bad is not None:
                return path, bad
        elif isinstance(v, dict):
            stack.extend(([*path, k], x) for k, x in reversed(list(v.items())))
        elif isinstance(v, (list, tuple)):
            stack.extend(([*path, k], x) for k, x in reversed(list(enumerate(v))))
    return None


def refuse_controls(spec, paths: list[list], data: dict) -> None:
    """A control character (a tab, a newline, ``\x1f``...) in a template, a word or a sentence is refused: the
    engine joins and splits a case's segments on such characters, so one inside would cut a case silently."""
    for path in paths:
        node = data
        for key in path:
            node = node[key]
        found = _control(node)
        if found is not None:
            sub, c = found
            raise spec_error(spec, [*path, *sub], f"control character U+{ord(c):04X} ({c!r}) in the text; write it "
                                                  "without (YAML's | and > keep a final newline: use |- or >-)")


def parse_spec(data, path: str) -> Spec:
    """A spec from its data, validated against the schema (the first error one line at its deepest place),
    control characters refused, and its lexicons resolved; checked next by
    :func:`beluga.suites.spec.check.spec_from_data`."""
    if not isinstance(data, dict):
        raise ConfigError(f"suite spec {path}: field '(top level)': a mapping is needed, not "
                          f"{type(data).__name__}")
    errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(data),
                    key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))))
    if errors:
        e = _deepest(errors[0])
        raise spec_error((path, data), e.absolute_path, _schema_message(e))
    refuse_controls((path, data), spec_words(data), data)
    out = Spec(path, data)
    out.lexicons = resolve_lexicons(out)
    return out


def _deepest(error):
    """The most specific error of a oneOf / anyOf (its best context)."""
    if error.context:
        best = max(error.context, key=lambda c: len(list(c.absolute_path)))
        return _deepest(best)
    return error


def _schema_message(e) -> str:
    if e.validator in ("type", "oneOf") and isinstance(e.instance, bool):
        return f"{e.message} (YAML reads yes / no / on / off / true / false unquoted as booleans: quote the word)"
    if e.validator == "additionalProperties":
        return e.message.replace("Additional properties are not allowed", "unknown key(s)")
    if e.validator == "required":
        return e.message.replace("is a required property", "is required")
    return e.message


def resolve_lexicons(spec: Spec) -> dict:
    """Built-ins, then each lexicon file in order, then the spec's own lexicons."""
    lex = dict(tpl.BUILTIN_LEXICONS)
    blocks = []
    for i, name in enumerate(spec.data.get("lexicon_files") or []):
        f = spec.base_dir / name
        block = read_yaml(str(f), "lexicon file", lambda d: _lexicon_words(d, []))
        if not isinstance(block, dict) or not all(isinstance(k, str) for k in block):
            raise spec_error(spec, ["lexicon_files", i], f"{f} must be a mapping of lexicon names to entries")
        refuse_controls(spec, [["lexicon_files", i]], {"lexicon_files": {i: block}})
        blocks.append((["lexicon_files", i], block))
    blocks.append((["lexicons"], spec.data.get("lexicons") or {}))
    for loc, block in blocks:
        for name, value in block.items():
            where = [*loc, name]
            not_reserved(spec, where, name)
            if isinstance(value, list):
                lex[name] = lexicon_entries(value)
            elif isinstance(value, dict) and "extend" in value:
                if name not in lex:
                    raise spec_error(spec, where, f"extends {name!r}, which is not a lexicon (built-in or defined "
                                                  "before)")
                lex[name] = tuple(lex[name]) + tuple(e for e in lexicon_entries(value["extend"])
                                                     if e not in lex[name])
            elif isinstance(value, dict) and "concat" in value:
                missing = [n for n in value["concat"] if n not in lex]
                if missing:
                    raise spec_error(spec, [*where, "concat"], f"{missing[0]!r} is not a lexicon")
                sourced = [n for n in value["concat"] if is_source_lexicon(lex[n])]
                if sourced:
                    raise spec_error(spec, [*where, "concat"], f"{sourced[0]!r} holds a source's sentences, which are "
                                                               "read when the suite is rendered: it cannot be joined")
                lex[name] = tuple(e for n in value["concat"] for e in lex[n])
            elif isinstance(value, dict) and "source" in value:
                lex[name] = ("source", value["source"], value.get("max"))   # resolved with the sources
            else:
                raise spec_error(spec, where, "a list, {extend: [...]}, {concat: [...]} or {source: name} is needed")
            if not isinstance(lex[name], tuple) or not lex[name]:
                raise spec_error(spec, where, "a lexicon needs at least one entry")
    return lex


