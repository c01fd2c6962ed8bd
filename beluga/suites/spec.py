"""Suite specs: CheckList-style tests written as data — templates over lexicons, perturbations of real
sentences, an expectation per functionality — rendered into the project's suite format (docs/SUITE_FORMAT.md,
"Writing a suite: spec files").

A spec is a YAML file (validated by ``specs/spec.schema.yaml``; one line naming the file, the functionality and
the field for anything wrong). :func:`load_spec` reads and checks it, :func:`load_sources` reads its real
sentences, :func:`render_spec` makes the cases. The project's default suites are specs shipped with the package
(``beluga/suites/specs/<name>.yaml``: :data:`PACKAGED`), rendered by the same engine.

How a functionality's cases are made (``n`` cases, functionality ``i`` drawing everything from
``numpy.random.default_rng(seed + i)``):

- ``templates``: groups of templates, the cases spread evenly over the groups, each a fill of the group's
  template × lexicon product drawn in seeded order (:mod:`beluga.suites.templates`). A group's case is
  one input with the group's ``label`` (``answer`` for read) — an MFT —, or an original and its
  perturbations: ``fill_slot`` (the slot empty, then filled), ``swap_slot`` (the slot's value swapped),
  ``variants`` (other templates with the same fill), ``perturb`` (a built-in perturbation of the rendered
  text).
- ``source`` + ``perturb``: real sentences of a source in seeded order, each with its perturbations
  (sentences it does not change are skipped); ``fallback`` template groups, perturbed the same way, fill up
  the count when the sentences run out. para: the pair (sentence, sentence) with ``apply_to`` changing one
  or both, or with ``pairs: perturbed_pairs`` MFT cases (sentence, perturbed sentence) with ``label``.

A functionality that yields no case at all (every fill repeats a value, a perturbation changes nothing) stops
with one line; one that yields fewer than ``n`` repeats its cases (only when the whole product is smaller).
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import yaml

from beluga.errors import ConfigError
from beluga.suites import perturb as perturbations
from beluga.suites import templates as tpl
from beluga.suites.format import COLUMNS, EXPECTATIONS, SLICES
from beluga.tasks import get_task_type

SPECS_DIR = Path(__file__).resolve().parent / "specs"
SPEC_SCHEMA = SPECS_DIR / "spec.schema.yaml"
#: the specs shipped with the package (suite.generate: <name>)
PACKAGED = ("sent_default", "para_default", "read_default")
#: rendering settings when neither the spec's defaults nor the caller set them
RENDER_DEFAULTS = {"cases_per_functionality": 50, "max_perturbations": 3, "max_words": 40, "seed": 0}
SEP = "\x1f"   # joins the two segments of a pair template while its product is enumerated
_PAIR_SEP = " \n "   # joins the two segments a perturbation with apply_to: both sees as one text


@dataclass
class Spec:
    """A loaded, checked spec: its file, its data, the lexicons it resolves to (built-ins, files, its own)."""

    path: str
    data: dict
    lexicons: dict = field(default_factory=dict)

    @property
    def task(self) -> str:
        return self.data["task"]

    @property
    def name(self) -> str:
        return self.data["name"]

    @property
    def functionalities(self) -> list[dict]:
        return self.data["functionalities"]

    @property
    def base_dir(self) -> Path:
        return Path(self.path).resolve().parent

    def setting(self, key: str, given=None):
        """A rendering setting: the caller's, else the spec's default, else the project's."""
        if given is not None:
            return given
        return (self.data.get("defaults") or {}).get(key, RENDER_DEFAULTS[key])


# ---------------------------------------------------------------------------------- loading and checks
def spec_path(spec: str) -> str:
    """A spec's file: a packaged name (:data:`PACKAGED`) or a path."""
    if spec in PACKAGED:
        return str(SPECS_DIR / f"{spec}.yaml")
    return str(spec)


@lru_cache(maxsize=1)
def _schema() -> dict:
    return yaml.safe_load(SPEC_SCHEMA.read_text())


def _where(path: str, data: dict | None, loc) -> str:
    """``<file>: functionality '<name>': field '<a.b[0]>'`` for a location in the spec."""
    loc = list(loc)
    head = f"suite spec {path}"
    if len(loc) >= 2 and loc[0] == "functionalities" and isinstance(loc[1], int):
        funcs = (data or {}).get("functionalities") or []
        name = funcs[loc[1]].get("name") if loc[1] < len(funcs) and isinstance(funcs[loc[1]], dict) else None
        head += f": functionality {name!r}" if name else f": functionality #{loc[1] + 1}"
        loc = loc[2:]
    dotted = ""
    for part in loc:
        dotted += f"[{part}]" if isinstance(part, int) else (f".{part}" if dotted else str(part))
    return f"{head}: field '{dotted or '(top level)'}'"


def _fail(spec: Spec | tuple, loc, msg: str) -> ConfigError:
    path, data = (spec.path, spec.data) if isinstance(spec, Spec) else spec
    return ConfigError(f"{_where(path, data, loc)}: {msg}")


def _read_yaml(path: str, what: str):
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what} {path}: field 'path': file does not exist")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{what} {path}: field '(file)': not UTF-8 text ({e.reason})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(f"{what} {path}: {line}field '(syntax)': not valid YAML "
                          f"({getattr(e, 'problem', None) or e})") from None


def load_spec(spec: str) -> Spec:
    """Read and check a spec (a packaged name or a path): the schema, then what it cannot say — every
    placeholder names a lexicon, labels are the task's, expectations fit the test type, perturbations and
    their parameters exist, sources and files are there. A ConfigError names the file, the functionality
    and the field."""
    path = spec_path(spec)
    return spec_from_data(_read_yaml(path, "suite spec"), path)


def spec_from_data(data, path: str) -> Spec:
    """A spec from its data (``path``: its file, or what errors name, e.g. "the command line"), checked as
    :func:`load_spec` checks a file."""
    if not isinstance(data, dict):
        raise ConfigError(f"suite spec {path}: field '(top level)': a mapping is needed, not "
                          f"{type(data).__name__}")
    errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(data),
                    key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))))
    if errors:
        e = _deepest(errors[0])
        raise _fail((path, data), e.absolute_path, _schema_message(e))
    out = Spec(path, data)
    out.lexicons = _lexicons(out)
    _check(out)
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


def _entries(values) -> tuple:
    """Lexicon entries as a tuple (mappings and lists kept for {x.key} / {x[0]})."""
    out = []
    for v in values:
        if isinstance(v, list):
            out.append(tuple(str(x) for x in v))
        elif isinstance(v, dict):
            out.append({str(k): str(x) for k, x in v.items()})
        else:
            out.append(str(v))
    return tuple(out)


def _lexicons(spec: Spec) -> dict:
    """Built-ins, then each lexicon file in order, then the spec's own lexicons."""
    lex = dict(tpl.BUILTIN_LEXICONS)
    blocks = []
    for i, name in enumerate(spec.data.get("lexicon_files") or []):
        f = spec.base_dir / name
        block = _read_yaml(str(f), "lexicon file")
        if not isinstance(block, dict) or not all(isinstance(k, str) for k in block):
            raise _fail(spec, ["lexicon_files", i], f"{f} must be a mapping of lexicon names to entries")
        blocks.append((["lexicon_files", i], block))
    blocks.append((["lexicons"], spec.data.get("lexicons") or {}))
    for loc, block in blocks:
        for name, value in block.items():
            where = [*loc, name]
            if isinstance(value, list):
                lex[name] = _entries(value)
            elif isinstance(value, dict) and "extend" in value:
                if name not in lex:
                    raise _fail(spec, where, f"extends {name!r}, which is not a lexicon (built-in or defined "
                                             "before)")
                lex[name] = tuple(lex[name]) + tuple(e for e in _entries(value["extend"])
                                                     if e not in lex[name])
            elif isinstance(value, dict) and "concat" in value:
                missing = [n for n in value["concat"] if n not in lex]
                if missing:
                    raise _fail(spec, [*where, "concat"], f"{missing[0]!r} is not a lexicon")
                sourced = [n for n in value["concat"] if _is_source_lexicon(lex[n])]
                if sourced:
                    raise _fail(spec, [*where, "concat"], f"{sourced[0]!r} holds a source's sentences, which are "
                                                          "read when the suite is rendered: it cannot be joined")
                lex[name] = tuple(e for n in value["concat"] for e in lex[n])
            elif isinstance(value, dict) and "source" in value:
                lex[name] = ("source", value["source"], value.get("max"))   # resolved with the sources
            else:
                raise _fail(spec, where, "a list, {extend: [...]}, {concat: [...]} or {source: name} is needed")
            if not isinstance(lex[name], tuple) or not lex[name]:
                raise _fail(spec, where, "a lexicon needs at least one entry")
    return lex


def _label_of(spec: Spec, value, loc):
    """A label name or number of the task's label set -> its number (None stays None)."""
    if value is None:
        return None
    labels = get_task_type(spec.task).suite_labels
    if not labels:
        raise _fail(spec, loc, f"task {spec.task!r} has no class labels (give 'answer')")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _fail(spec, loc, f"{value!r} is not a label")
    if isinstance(value, int):
        if value not in labels:
            raise _fail(spec, loc, f"{value} is not a label of task {spec.task!r} ({_label_list(labels)})")
        return value
    by_name = {v.replace(" ", "_"): k for k, v in labels.items()}
    key = value.strip().replace(" ", "_")
    if key not in by_name:
        raise _fail(spec, loc, f"{value!r} is not a label of task {spec.task!r} ({_label_list(labels)})")
    return by_name[key]


def _label_list(labels: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in labels.items())


def expectation(func: dict) -> tuple[str, dict]:
    """(expectation name, its parameters) of a functionality."""
    e = func["expect"]
    if isinstance(e, str):
        return e, {}
    return e["name"], {k: v for k, v in e.items() if k != "name"}


def _segments(spec: Spec, template, loc) -> list[str]:
    """A template's segments: one for sent, two for para / read."""
    want = 1 if spec.task == "sent" else 2
    segs = [template] if isinstance(template, str) else list(template)
    if len(segs) != want:
        kind = {"sent": "a string", "para": "[question 1, question 2]", "read": "[context, question]"}[spec.task]
        raise _fail(spec, loc, f"a {spec.task} template is {kind}")
    return [tpl.normalise(s) for s in segs]


def _group_lexicons(spec: Spec, group: dict, loc) -> dict:
    lex = dict(spec.lexicons)
    for name, value in (group.get("lexicons") or {}).items():
        if isinstance(value, str):
            if value not in spec.lexicons:
                raise _fail(spec, [*loc, "lexicons", name], f"{value!r} is not a lexicon")
            lex[name] = spec.lexicons[value]
        else:
            lex[name] = _entries(value)
    return lex


def _slot_values(spec: Spec, lex: dict, values, loc) -> tuple:
    if isinstance(values, str):
        if values not in lex:
            raise _fail(spec, loc, f"{values!r} is not a lexicon")
        return tuple(lex[values])
    return _entries(values)


def _check_group(spec: Spec, func: dict, group: dict, loc, with_perturb: bool) -> None:
    lex = _group_lexicons(spec, group, loc)
    slot = (group.get("fill_slot") or group.get("swap_slot") or {}).get("slot")
    makers = [k for k in ("fill_slot", "swap_slot", "variants", "perturb", "swap_pair") if group.get(k)]
    if group.get("swap_pair") and spec.task != "para":
        raise _fail(spec, [*loc, "swap_pair"], "swap_pair swaps the two questions of a para pair")
    if len(makers) > 1:
        raise _fail(spec, loc, f"one way to perturb a group: {', '.join(makers)} given together")
    fixed = [slot] if slot else []
    for j, t in enumerate(group["templates"]):
        segs = _segments(spec, t, [*loc, "templates", j])
        for s in segs:
            try:
                names = tpl.fields(s, fixed)
            except (ValueError, ConfigError) as e:
                raise _fail(spec, [*loc, "templates", j], str(e)) from None
            for f in names:
                key = tpl.lexicon_key(f, lex)
                if key not in lex:
                    raise _fail(spec, [*loc, "templates", j], f"placeholder {{{f}}} names no lexicon ({key!r} is "
                                                               "neither built in nor defined in the spec)")
                if _is_source_lexicon(lex[key]):
                    raise _fail(spec, [*loc, "templates", j], f"placeholder {{{f}}}: lexicon {key!r} holds a "
                                                               "source's sentences (use it as a perturbation's "
                                                               "word list)")
        if slot and not any(f"{{{slot}}}" in s for s in segs):
            raise _fail(spec, [*loc, "templates", j], f"the group's slot {{{slot}}} is not in the template")
        _dry_render(spec, group, lex, segs, fixed, [*loc, "templates", j])
        try:
            tpl.Templates([SEP.join(segs)], lex, fixed=fixed)   # the product's size
        except ConfigError as e:
            raise _fail(spec, [*loc, "templates", j], str(e)) from None
    if "label" in group:
        _label_of(spec, group["label"], [*loc, "label"])
    if group.get("perturbed_label") is not None:
        if not makers and not with_perturb:
            raise _fail(spec, [*loc, "perturbed_label"], "a group without a perturbation has no perturbed inputs")
        _label_of(spec, group["perturbed_label"], [*loc, "perturbed_label"])
    if spec.task == "read":
        if not group.get("answer") and func["type"] == "MFT":
            raise _fail(spec, loc, "a read MFT group needs 'answer' (a template, e.g. '{first_name}')")
    elif group.get("answer"):
        raise _fail(spec, [*loc, "answer"], f"'answer' is for read specs; {spec.task} groups have 'label'")
    for key in ("fill_slot", "swap_slot"):
        if group.get(key):
            _slot_values(spec, lex, group[key]["values"], [*loc, key, "values"])
    if group.get("perturb"):
        _check_perturb(spec, group["perturb"], [*loc, "perturb"])
    if func["type"] != "MFT" and not makers and not with_perturb:
        raise _fail(spec, loc, f"an {func['type']} group needs a perturbation (fill_slot, swap_slot, variants, "
                               "swap_pair or perturb, or the functionality's perturb)")


def _first_fill(lex: dict, segs: list[str], fixed) -> dict:
    fill = {}
    for s in segs:
        for f in tpl.fields(s, fixed):
            fill[f] = lex[tpl.lexicon_key(f, lex)][0]
    return fill


def _dry_render(spec: Spec, group: dict, lex: dict, segs: list[str], fixed, loc) -> None:
    """Render a template (its variants and answer too) with the first entry of every lexicon: a placeholder
    that cannot be filled stops here, in one line, before any case is made. A lexicon of lists or mappings
    needs an item or a key ({pos_verb[0]}, {p.size})."""
    for s in segs + list(group.get("variants") or []) + ([group["answer"]] if group.get("answer") else []):
        try:
            parsed = list(string.Formatter().parse(tpl.normalise(s)))
        except ValueError as e:
            raise _fail(spec, loc, f"template {s!r}: {e} (a literal brace is written {{{{ or }}}})") from None
        for _, name, _, _ in parsed:
            if not name or name in ("art", "sentence", *fixed):
                continue
            key = tpl.lexicon_key(name, lex)
            if key in lex and not isinstance(lex[key][0], str) and not any(c in name for c in ".["):
                raise _fail(spec, loc, f"placeholder {{{name}}}: lexicon {key!r} holds lists or mappings; name an "
                                       f"item or a key, e.g. {{{name}[0]}}")
    fill = _first_fill(lex, segs, fixed)
    slots = {k: "x" for k in fixed}
    for s in segs:
        _try_render(spec, s, fill, slots, loc)
    for v in group.get("variants") or []:
        missing = [f for f in tpl.fields(tpl.normalise(v), ("sentence", *fixed)) if f not in fill]
        if missing:
            raise _fail(spec, [*loc[:-2], "variants"], f"variant {v!r}: placeholder {{{missing[0]}}} is not in the "
                                                       "group's template (a variant reuses the template's fill)")
        _try_render(spec, tpl.normalise(v), fill, {**slots, "sentence": "x"}, [*loc[:-2], "variants"])
    if group.get("answer"):
        missing = [f for f in tpl.fields(tpl.normalise(group["answer"]), fixed) if f not in fill]
        if missing:
            raise _fail(spec, [*loc[:-2], "answer"], f"placeholder {{{missing[0]}}} is not in the template "
                                                     f"{segs[0]!r}")
        _try_render(spec, tpl.normalise(group["answer"]), fill, slots, [*loc[:-2], "answer"])


def _try_render(spec: Spec, template: str, fill: dict, slots: dict, loc) -> None:
    try:
        tpl.render_template(template, fill, **slots)
    except ConfigError as e:
        raise _fail(spec, loc, str(e)) from None
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as e:
        raise _fail(spec, loc, f"template {template!r} cannot be filled ({type(e).__name__}: {e})") from None


def _check_perturb(spec: Spec, p: dict, loc) -> None:
    """The perturbation's name, ``apply_to`` and parameters checked (a word list may name a lexicon)."""
    name = p["name"]
    apply_to = p.get("apply_to")
    allowed = {"sent": (None,), "para": (None, "first", "second", "both"),
               "read": (None, "context", "question", "both")}
    if apply_to not in allowed[spec.task]:
        raise _fail(spec, [*loc, "apply_to"], f"{apply_to!r} does not apply to a {spec.task} input "
                                              f"({', '.join(a for a in allowed[spec.task] if a) or 'none'})")
    try:
        perturbations.get_perturbation(name)
    except ConfigError as e:
        raise _fail(spec, [*loc, "name"], str(e)) from None
    params = {k: v for k, v in p.items() if k not in ("name", "apply_to")}
    # a word list may name a lexicon of the spec (one of a source's sentences stands for them here)
    lexicons = {k: (("a sentence",) if _is_source_lexicon(v) else v) for k, v in spec.lexicons.items()}
    perturbations.check_params(name, params, _where(spec.path, spec.data, loc), lexicons=lexicons)


#: the kinds of perturbation parameters that take a word list (a lexicon's name or a list)
WORD_LIST_KINDS = ("words", "pairs", "groups")


def _is_source_lexicon(value) -> bool:
    """A lexicon defined as {source: name, max: N}, resolved with the sources when the suite is rendered."""
    return isinstance(value, tuple) and len(value) == 3 and value[0] == "source" \
        and isinstance(value[2], (int, type(None)))


#: the parameters each expectation reads (besides slice, slice_value, train and unperturbed)
EXPECT_PARAMS = {"eq": {"val"}, "not_negative": set(), "eq_or_not_negative": set(), "inv": {"tolerance"},
                 "monotonic": {"increasing", "tolerance", "label"}, "diff_up": {"tolerance"},
                 "diff_down": {"tolerance"}, "triplet": set(), "squad": set(), "same_answer": set()}
COMMON_EXPECT_PARAMS = {"slice", "slice_value", "train", "unperturbed"}


def _check_expectation(spec: Spec, func: dict, loc) -> None:
    """The expectation's parameters: known ones, of the right type (a misspelt one would be ignored)."""
    expect, params = expectation(func)
    if expect == "same_answer":
        raise _fail(spec, loc, "same_answer needs each input's [old, new] replacement in meta, which a spec does not "
                               "write; use inv (the answer string unchanged) or squad (each input's answer)")
    known = EXPECT_PARAMS.get(expect, set()) | COMMON_EXPECT_PARAMS
    unknown = sorted(set(params) - known)
    if unknown:
        raise _fail(spec, loc, f"{expect!r} has no parameter {unknown[0]!r} (it reads: {', '.join(sorted(known))})")
    tol = params.get("tolerance")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or tol < 0):
        raise _fail(spec, [*loc, "tolerance"], f"must be a number >= 0, got {tol!r}")
    if "increasing" in params and not isinstance(params["increasing"], bool):
        raise _fail(spec, [*loc, "increasing"], f"must be true or false, got {params['increasing']!r}")
    if params.get("slice") is not None and params["slice"] not in SLICES:
        raise _fail(spec, [*loc, "slice"], f"unknown slice {params['slice']!r} ({', '.join(SLICES)})")
    if params.get("slice") == "orig_pred_eq" and (not isinstance(params.get("slice_value"), int)
                                                   or isinstance(params.get("slice_value"), bool)):
        raise _fail(spec, [*loc, "slice_value"], "slice orig_pred_eq needs an integer slice_value")
    if "val" in params and spec.task != "read":
        _label_of(spec, params["val"], [*loc, "val"])


def _check(spec: Spec) -> None:
    sources = spec.data.get("sources") or {}
    for name, src in sources.items():
        kinds = [k for k in ("pool", "file", "dataset") if k in src]
        if len(kinds) != 1:
            raise _fail(spec, ["sources", name], "one of pool, file or dataset is needed")
        if "file" in src and not (spec.base_dir / src["file"]).is_file():
            raise _fail(spec, ["sources", name, "file"], f"{spec.base_dir / src['file']} does not exist")
        if src.get("dataset") == "hutto" and not src.get("set"):
            raise _fail(spec, ["sources", name, "set"], "the hutto dataset needs a set (tweets, amazon, nyt)")
    for name, value in spec.lexicons.items():
        if _is_source_lexicon(value) and value[1] not in sources:
            raise _fail(spec, ["lexicons", name, "source"], f"{value[1]!r} is not a source (sources)")
    names = [f["name"] for f in spec.functionalities]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise _fail(spec, ["functionalities"], f"two functionalities are named {dup!r}")
    for i, func in enumerate(spec.functionalities):
        loc = ["functionalities", i]
        expect, params = expectation(func)
        if expect not in EXPECTATIONS:
            raise _fail(spec, [*loc, "expect"], f"unknown expectation {expect!r} ({', '.join(EXPECTATIONS)})")
        if func["type"] not in EXPECTATIONS[expect]["types"]:
            raise _fail(spec, [*loc, "expect"], f"{expect!r} does not apply to {func['type']} tests "
                                                f"({', '.join(EXPECTATIONS[expect]['types'])})")
        needs = EXPECTATIONS[expect]["needs"]
        if "templates" not in func and "source" not in func:
            raise _fail(spec, loc, "cases come from 'templates' or from a 'source' with 'perturb'")
        if "templates" in func and "source" in func:
            raise _fail(spec, loc, "'templates' and 'source' are two ways to make cases; give one (a source's "
                                   "fill-up templates go in 'fallback')")
        if "source" in func and spec.task == "read" and not isinstance((sources.get(func["source"]) or {})
                                                                      .get("pool"), list):
            raise _fail(spec, [*loc, "source"], "read cases come from templates (context, question, answer), or "
                                                "from a pool source of two columns (context, question) for INV / "
                                                "DIR; a source's sentences can also be a lexicon, e.g. "
                                                "distractors for add_phrase")
        _check_expectation(spec, func, [*loc, "expect"])
        if "source" in func:
            if func["source"] not in sources:
                raise _fail(spec, [*loc, "source"], f"{func['source']!r} is not a source (sources: "
                                                    f"{', '.join(sources) or 'none'})")
            if "perturb" not in func:
                raise _fail(spec, loc, "a source's sentences need 'perturb'")
            if func.get("pairs") and spec.task != "para":
                raise _fail(spec, [*loc, "pairs"], "pairs are for para specs")
            if func.get("pairs") == "perturbed_pairs":
                _label_of(spec, func.get("label"), [*loc, "label"])
            elif func["type"] == "MFT":
                raise _fail(spec, loc, "an MFT from a source needs 'pairs: perturbed_pairs' and a label (para)")
            elif needs in ("label", "label_or_answer", "answer") and "val" not in params:
                raise _fail(spec, [*loc, "expect"], f"expectation {expect!r} needs a label or answer per input, "
                                                    "which a source's sentences do not have (give val, or use inv "
                                                    "/ monotonic / diff_up / diff_down)")
        if "label" in func and func.get("pairs") != "perturbed_pairs":
            raise _fail(spec, [*loc, "label"], "a functionality's label is for pairs: perturbed_pairs; give template "
                                               "groups their own label")
        if "perturb" in func:
            _check_perturb(spec, func["perturb"], [*loc, "perturb"])
        for key in ("templates", "fallback"):
            for j, group in enumerate(func.get(key) or []):
                _check_group(spec, func, group, [*loc, key, j], with_perturb="perturb" in func)
                if needs in ("label", "label_or_answer") and spec.task != "read" and "val" not in params \
                        and group.get("label") is None and key == "templates" and func.get("pairs") is None:
                    raise _fail(spec, [*loc, key, j], f"expectation {expect!r} needs a label per case: give the "
                                                      "group a 'label'")
        if func.get("fallback") and "source" not in func:
            raise _fail(spec, [*loc, "fallback"], "fallback templates fill up a source's cases; without a source "
                                                  "use 'templates'")


# ---------------------------------------------------------------------------------- catalogue
def agg_of(func: dict) -> str:
    return func.get("agg") or ("all" if func["type"] == "MFT" else "all_except_first")


def spec_expectation(spec: Spec, func: dict) -> tuple[str, dict]:
    """(expectation name, parameters) as the suite stores them: a ``val`` label name as its number."""
    expect, params = expectation(func)
    if "val" in params and spec.task != "read":
        params = {**params, "val": _label_of(spec, params["val"], ["expect", "val"])}
    return expect, params


def catalogue(spec: Spec) -> list[dict]:
    """One dict per functionality, in spec order: functionality, capability, test_type, expect, expect_params
    (dict), agg_fn, description."""
    out = []
    for func in spec.functionalities:
        expect, params = spec_expectation(spec, func)
        out.append({"functionality": func["name"], "capability": func["class"], "test_type": func["type"],
                    "expect": expect, "expect_params": dict(params), "agg_fn": agg_of(func),
                    "description": func.get("description", "")})
    return out


def spec_files(spec: Spec) -> list[str]:
    """Every file a rendered suite depends on: the spec, its lexicon files and its file sources."""
    files = [spec.path] + [str(spec.base_dir / f) for f in spec.data.get("lexicon_files") or []]
    files += [str(spec.base_dir / src["file"]) for src in (spec.data.get("sources") or {}).values() if "file" in src]
    return files


def uses_pool(spec: Spec) -> bool:
    """Whether the spec reads the task's i.i.d. pool (a pool source)."""
    return any("pool" in src for src in (spec.data.get("sources") or {}).values())


def dataset_versions(spec: Spec) -> list[str]:
    """The packages the spec's offline dataset sources ship in, with their versions (another version rebuilds)."""
    from beluga.data.iid import source_version
    from beluga.data.ood_sets import ood_source_version

    out = []
    for src in (spec.data.get("sources") or {}).values():
        if src.get("dataset") == "rotten_tomatoes":
            out.append(source_version({"source": "rotten_tomatoes"}))
        elif src.get("dataset") == "hutto":
            out.append(ood_source_version({"source": "hutto"}))
    return sorted(set(out))


# ---------------------------------------------------------------------------------- sources
def load_sources(spec: Spec, pool: pd.DataFrame | None = None) -> dict[str, list]:
    """Each source's texts (a list of strings, or of (a, b) pairs for a two-column pool source). ``pool``: the
    task's i.i.d. pool (pipeline) or the table given on the command line; a spec with a pool source and no
    pool stops with one line."""
    out = {}
    for name, src in (spec.data.get("sources") or {}).items():
        loc = ["sources", name]
        if "pool" in src:
            if pool is None:
                raise _fail(spec, loc, "a pool source needs the task's i.i.d. pool (in the pipeline) or --source "
                                       "FILE (python -m beluga suite build)")
            cols = [src["pool"]] if isinstance(src["pool"], str) else list(src["pool"])
            missing = [c for c in cols if c not in pool.columns]
            if missing:
                raise _fail(spec, [*loc, "pool"], f"the pool has no column {missing[0]!r} (it has "
                                                  f"{', '.join(map(str, pool.columns))})")
            vals = pool[cols].astype(str).to_numpy().tolist()
            out[name] = [v[0] for v in vals] if len(cols) == 1 else [tuple(v) for v in vals]
        elif "file" in src:
            out[name] = read_text_source(str(spec.base_dir / src["file"]), src.get("column"),
                                         _where(spec.path, spec.data, [*loc, "file"]))
        elif src["dataset"] == "rotten_tomatoes":
            from beluga.data.iid import load_rotten_tomatoes

            out[name] = list(load_rotten_tomatoes()["text"])
        else:
            from beluga.data.ood_sets import read_hutto_ratings

            out[name] = list(read_hutto_ratings(src["set"])["text"])
    return out


def read_text_source(path: str, column: str | None, where: str) -> list[str]:
    """Sentences of a file: a text file (one per line; blank lines skipped) or a table's ``column`` (CSV, TSV,
    Parquet, JSON lines; default column ``text``)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{where}: {path} does not exist")
    suffix = "".join(p.suffixes[-2:]).lower()
    if suffix.endswith(".txt"):
        if column:
            raise ConfigError(f"{where}: a .txt file has no columns (drop 'column')")
        try:
            return [line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        except UnicodeDecodeError as e:
            raise ConfigError(f"{where}: {path} is not UTF-8 text ({e.reason})") from None
    if not suffix.endswith((".parquet", ".jsonl", ".jsonl.gz", ".tsv", ".tsv.gz", ".csv", ".csv.gz")):
        raise ConfigError(f"{where}: {path}: a .txt, .csv, .tsv, .parquet or .jsonl file is needed")
    df = read_sentence_table(path, where)
    col = column or "text"
    if col not in df.columns:
        raise ConfigError(f"{where}: {path} has no column {col!r} (it has {', '.join(map(str, df.columns))})")
    return [str(v) for v in df[col] if isinstance(v, str) and v.strip()]


def read_sentence_table(path: str, where: str) -> pd.DataFrame:
    """A table file: Parquet, JSON lines (values as written), TSV, otherwise CSV (text cells as strings);
    unreadable or non-UTF-8 files as one line naming ``where``."""
    from beluga.io import read_parquet

    name = path.lower()
    try:
        if name.endswith(".parquet"):
            return read_parquet(path, "sentences")
        if name.endswith((".jsonl", ".jsonl.gz")):
            return pd.read_json(path, lines=True, dtype=False)
        sep = "\t" if name.endswith((".tsv", ".tsv.gz")) else ","
        return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where}: {path} is not UTF-8 text ({e.reason})") from None
    except (ValueError, pd.errors.ParserError) as e:
        raise ConfigError(f"{where}: {path} cannot be read ({' '.join(str(e).split())[:160]})") from None


# ---------------------------------------------------------------------------------- rendering
class _Ctx:
    def __init__(self, spec: Spec, texts: dict, n: int, max_p: int, max_words: int):
        self.spec, self.texts, self.n, self.max_p, self.max_words = spec, texts, n, max_p, max_words

    def pool(self, func: dict) -> list:
        """The functionality source's sentences (strings: whitespace-normalised, deduplicated, of
        3..max_words words; pairs: each side checked)."""
        texts = self.texts.get(func["source"]) or []
        max_words = int(func.get("max_words", self.max_words))
        if texts and isinstance(texts[0], tuple):
            keep = [(" ".join(a.split()), " ".join(b.split())) for a, b in texts
                    if tpl.MIN_WORDS <= len(a.split()) <= max_words and tpl.MIN_WORDS <= len(b.split()) <= max_words]
            return list(dict.fromkeys(keep))
        return tpl.prepare_pool(texts, max_words)


#: first words a variant's {sentence} keeps capitalised: "I" and its contractions, and proper nouns
_KEEP_CAPITAL = frozenset(["I", "I'm", "I'd", "I've", "I'll", "I\u2019m", "I\u2019d", "I\u2019ve", "I\u2019ll"])
_PROPER = frozenset(w for k in ("first_name", "male_name", "female_name", "last_name", "city", "country")
                    for x in tpl.BUILTIN_LEXICONS[k] for w in [str(x).split()[0]])


def _has_answer(context: str, answer: str) -> bool:
    """The answer occurs in the context as whole words ("cat" is not in "caterpillar")."""
    return bool(answer) and re.search(r"(?<!\w)" + re.escape(answer) + r"(?!\w)", context) is not None


def _lower_first(x: str) -> str:
    """A sentence inside another: its first letter lower-cased, unless it starts with "I" or a name."""
    first = x.split(" ", 1)[0].rstrip(",;:")
    return x if first in _KEEP_CAPITAL or first in _PROPER else x[:1].lower() + x[1:]


class _Renderer:
    """Makes one functionality's items."""

    def __init__(self, ctx: _Ctx, func: dict, loc: list, rng: np.random.Generator):
        self.ctx, self.func, self.loc, self.rng = ctx, func, loc, rng
        self.spec = ctx.spec
        self.pair = self.spec.task != "sent"
        self._fns: dict = {}      # id of a perturbation block -> its function (_perturb_fn)

    # -- perturbations -------------------------------------------------------------------------------
    def _perturb_fn(self, p: dict):
        """text -> perturbed texts, with the spec's parameters (``n`` defaults to max_perturbations); built
        once per perturbation of the functionality."""
        if id(p) in self._fns:
            return self._fns[id(p)]
        spec, lex = self.spec, self.ctx.spec.lexicons
        params = {k: v for k, v in p.items() if k not in ("name", "apply_to")}
        pert = perturbations.get_perturbation(p["name"])
        if "n" in pert.params and "n" not in params:
            params["n"] = self.ctx.max_p
        for k, v in list(params.items()):   # a spec's lexicon named as a word list: its entries
            if isinstance(v, str) and v in lex and pert.types.get(k) in WORD_LIST_KINDS:
                params[k] = self._lexicon_values(v)
        fn = perturbations.perturber(p["name"], params, _where(spec.path, spec.data, self.loc))
        self._fns[id(p)] = fn
        return fn

    def _lexicon_values(self, name: str) -> tuple:
        value = self.spec.lexicons[name]
        if _is_source_lexicon(value):
            _, source, cap_n = value
            texts = tpl.prepare_pool(self.ctx.texts.get(source) or [], self.ctx.max_words)
            return tuple(texts[:cap_n] if cap_n else texts)
        return tuple(value)

    def _apply(self, fn, segs: list[str], apply_to: str | None, rng) -> list[list[str]]:
        """The perturbed versions of an input (its segments), each a list of segments."""
        if not self.pair:
            return [[p] for p in fn(segs[0], rng)]
        target = apply_to or ("second" if self.spec.task == "para" else "question")
        if target in ("first", "context"):
            return [[p, segs[1]] for p in fn(segs[0], rng)]
        if target in ("second", "question"):
            return [[segs[0], p] for p in fn(segs[1], rng)]
        out = []   # both: the perturbation sees the two segments as one text
        for p in fn(_PAIR_SEP.join(segs), rng):
            parts = [s.strip() for s in p.split("\n")]
            if len(parts) == 2 and all(parts) and parts != segs:
                out.append(parts)
        return out

    def _case(self, orig: list[str], perts: list[list[str]], label=None, answer=None, meta=None,
              perturbed_label=None, mft: bool = False) -> dict | None:
        """One case: the original and its perturbations (an INV / DIR item without a perturbation is None).
        read: a perturbed input whose context lost the answer is left out (the expected answer would be wrong);
        ``perturbed_label``: the perturbed inputs' label (default: the original's)."""
        if answer is not None:
            perts = [p for p in perts if _has_answer(p[0], answer)]
        if not mft and not perts:
            return None
        inputs = [orig, *perts]
        labels = None if label is None else [int(label)] + [int(label if perturbed_label is None
                                                                else perturbed_label)] * len(perts)
        return {"inputs": [x[0] for x in inputs], "inputs_b": [x[1] for x in inputs] if self.pair else None,
                "labels": labels, "answers": None if answer is None else [answer] * len(inputs), "meta": meta}

    def _capped(self, orig: list[str], perts: list[list[str]]) -> list[list[str]]:
        """Distinct perturbed inputs that differ from the original, at most max_perturbations (seeded)."""
        if not self.pair:
            return [[p] for p in tpl.cap_perturbations(orig[0], [x[0] for x in perts], self.rng, self.ctx.max_p)]
        keys = [SEP.join(x) for x in perts]
        kept = tpl.cap_perturbations(SEP.join(orig), keys, self.rng, self.ctx.max_p)
        return [k.split(SEP) for k in kept]

    # -- template groups -----------------------------------------------------------------------------
    def _render_segs(self, t: str, fill: dict, **fixed) -> list[str]:
        return [self._render(s, fill, **fixed) for s in t.split(SEP)]

    def _render(self, template: str, fill: dict, capitalize: bool = True, **fixed) -> str:
        """tpl.render_template, a placeholder that cannot be filled stopping in one line."""
        try:
            return tpl.render_template(template, fill, capitalize=capitalize, **fixed)
        except (KeyError, IndexError, AttributeError, TypeError, ValueError) as e:
            raise _fail(self.spec, self.loc, f"template {template!r} cannot be filled "
                                             f"({type(e).__name__}: {e})") from None

    def _template_meta(self, t: str, **more) -> str:
        segs = t.split(SEP)
        return tpl.meta(source="template", template=segs[0] if len(segs) == 1 else segs, **more)

    def _answer(self, group: dict, fill: dict, segs: list[str], t: str, **fixed) -> str | None:
        if not group.get("answer"):
            return None
        ans = self._render(tpl.normalise(group["answer"]), fill, capitalize=False, **fixed)
        if not _has_answer(segs[0], ans):
            raise _fail(self.spec, [*self.loc, "answer"], f"the answer {ans!r} is not in the context "
                                                          f"{segs[0]!r} (template {t.split(SEP)[0]!r})")
        return ans

    def group(self, group: dict, gloc: list, func_perturb: dict | None) -> tuple[tpl.Templates, tpl.MakeItem]:
        spec, rng, max_p = self.spec, self.rng, self.ctx.max_p
        lex = _group_lexicons(spec, group, gloc)
        fill_slot, swap_slot = group.get("fill_slot"), group.get("swap_slot")
        slot = (fill_slot or swap_slot or {}).get("slot")
        distinct = group.get("distinct", spec.data.get("distinct", True))
        joined = [SEP.join(_segments(spec, t, [*gloc, "templates", j])) for j, t in enumerate(group["templates"])]
        templates = tpl.Templates(joined, lex, fixed=[slot] if slot else [], distinct=distinct)
        label = _label_of(spec, group.get("label"), [*gloc, "label"])
        perturbed_label = _label_of(spec, group.get("perturbed_label"), [*gloc, "perturbed_label"])
        perturb = group.get("perturb") or func_perturb

        if fill_slot:
            values = _slot_values(spec, lex, fill_slot["values"], [*gloc, "fill_slot", "values"])

            def make(t: str, fill: dict) -> dict:
                orig = self._render_segs(t, fill, **{slot: ""})
                chosen = [values[i] for i in rng.choice(len(values), size=min(max_p, len(values)), replace=False)]
                perts = self._capped(orig, [self._render_segs(t, fill, **{slot: m + " "}) for m in chosen])
                return self._case(orig, perts, label, self._answer(group, fill, orig, t, **{slot: ""}),
                                  self._template_meta(t))
        elif swap_slot:
            values = _slot_values(spec, lex, swap_slot["values"], [*gloc, "swap_slot", "values"])
            attribute = swap_slot.get("attribute", slot)

            def make(t: str, fill: dict) -> dict:
                fill = dict(fill)
                orig_val = values[int(rng.integers(len(values)))]
                others = [v for v in values if v != orig_val]
                alts = [others[i] for i in rng.choice(len(others), size=min(max_p, len(others)), replace=False)]
                orig = self._render_segs(t, fill, **{slot: orig_val})
                perts = self._capped(orig, [self._render_segs(t, fill, **{slot: a}) for a in alts])
                return self._case(orig, perts, label, self._answer(group, fill, orig, t, **{slot: orig_val}),
                                  self._template_meta(t, attribute=attribute, values=[orig_val] + alts))
        elif group.get("variants"):
            variants = [tpl.normalise(v) for v in group["variants"]]

            def make(t: str, fill: dict) -> dict:
                orig = self._render_segs(t, fill)
                perts = [[self._render(v, fill, sentence=_lower_first(orig[0]))] + orig[1:] for v in variants]
                return self._case(orig, self._capped(orig, perts), label, self._answer(group, fill, orig, t),
                                  self._template_meta(t))
        elif group.get("swap_pair"):
            def make(t: str, fill: dict) -> dict:
                orig = self._render_segs(t, fill)
                return self._case(orig, self._capped(orig, [orig[::-1]]), label, None, self._template_meta(t))
        elif perturb:
            fn = self._perturb_fn(perturb)

            def make(t: str, fill: dict) -> dict | None:
                orig = self._render_segs(t, fill)
                perts = self._capped(orig, self._apply(fn, orig, perturb.get("apply_to"), rng))
                if not perts:
                    return None
                return self._case(orig, perts, label, self._answer(group, fill, orig, t), self._template_meta(t),
                                  perturbed_label=perturbed_label)
        else:
            def make(t: str, fill: dict) -> dict:
                segs = self._render_segs(t, fill)
                return self._case(segs, [], label, self._answer(group, fill, segs, t), self._template_meta(t),
                                  mft=True)
        return templates, make

    def from_templates(self) -> list[dict]:
        groups = [self.group(g, [*self.loc, "templates", j], self.func.get("perturb"))
                  for j, g in enumerate(self.func["templates"])]
        return tpl.sample_groups(self.rng, groups, self.ctx.n)

    # -- real sentences ------------------------------------------------------------------------------
    def from_source(self) -> list[dict]:
        func, rng, n = self.func, self.rng, self.ctx.n
        fn = self._perturb_fn(func["perturb"])
        apply_to = func["perturb"].get("apply_to")
        pool = self.ctx.pool(func)
        label = _label_of(self.spec, func.get("label"), [*self.loc, "label"])
        items: list[dict] = []
        seen: set = set()
        if pool:
            for i in rng.permutation(len(pool)):
                if len(items) == n:
                    break
                s = pool[int(i)]
                if func.get("pairs") == "perturbed_pairs" and isinstance(s, tuple):
                    raise _fail(self.spec, [*self.loc, "pairs"], f"perturbed_pairs pairs a sentence with its "
                                                                 f"perturbation; source {func['source']!r} has pairs")
                if func.get("pairs") == "perturbed_pairs":   # MFT: (sentence, perturbed sentence) pairs
                    perts = tpl.cap_perturbations(s, fn(s, rng), rng, self.ctx.max_p)
                    if perts:
                        seen.add((s, s))
                        items.append({"inputs": [s] * len(perts), "inputs_b": perts,
                                      "labels": [int(label)] * len(perts), "answers": None,
                                      "meta": tpl.meta(source="real")})
                    continue
                orig = [s] if not self.pair else (list(s) if isinstance(s, tuple) else [s, s])
                perts = self._capped(orig, self._apply(fn, orig, apply_to, rng))
                if perts:
                    seen.add(orig[0] if not self.pair else tuple(orig))
                    items.append(self._case(orig, perts, None, None, tpl.meta(source="real")))
        if len(items) < n and func.get("fallback"):
            groups = [self.group(g, [*self.loc, "fallback", j], func["perturb"])
                      for j, g in enumerate(func["fallback"])]
            items += tpl.sample_groups(rng, groups, n - len(items), seen, shuffle=False)
        return items


def _fill_up(spec: Spec, loc, items: list[dict], n: int, what: str) -> list[dict]:
    """Repeat items (only when everything the functionality can make is fewer than ``n``)."""
    if not items:
        raise _fail(spec, loc, f"no test case: {what}")
    return [items[i % len(items)] for i in range(n)]


def _why_none(func: dict) -> str:
    if "source" in func:
        return (f"perturbation {func['perturb']['name']!r} changed none of the source's sentences"
                + (" nor any fallback template" if func.get("fallback") else " (add fallback templates)"))
    return ("no template yields a case (every fill repeats a placeholder's value, or the group's perturbation "
            "changes nothing)")


def render_spec(spec: Spec, texts: dict | None = None, *, seed: int | None = None,
                cases_per_functionality: int | None = None, max_perturbations: int | None = None,
                max_words: int | None = None, functionalities=None, fill_up: bool = True) -> pd.DataFrame:
    """The suite of a spec in the project's format (columns format.COLUMNS), deterministic for the seed.
    ``texts``: the sources' sentences (:func:`load_sources`); the settings default to the spec's defaults;
    ``functionalities``: only these (names), numbered as in the whole spec; ``fill_up=False``: a
    functionality that makes fewer than ``n`` cases keeps them (none at all still stops)."""
    seed = int(spec.setting("seed", seed))
    n = int(spec.setting("cases_per_functionality", cases_per_functionality))
    max_p = int(spec.setting("max_perturbations", max_perturbations))
    max_w = int(spec.setting("max_words", max_words))
    for key, value, least in (("seed", seed, 0), ("cases_per_functionality", n, 1), ("max_perturbations", max_p, 1),
                              ("max_words", max_w, tpl.MIN_WORDS)):
        if value < least:
            raise ConfigError(f"suite spec {spec.path}: field '{key}': {value} is below its minimum {least}")
    if functionalities is not None:
        unknown = [f for f in functionalities if f not in {x["name"] for x in spec.functionalities}]
        if unknown:
            raise ConfigError(f"suite spec {spec.path}: field 'functionalities': unknown functionality "
                              f"{unknown[0]!r}")
    ctx = _Ctx(spec, texts or {}, n, max_p, max_w)
    prefix = spec.data.get("id_prefix", spec.name)
    rows = []
    for fi, func in enumerate(spec.functionalities):
        if functionalities is not None and func["name"] not in functionalities:
            continue
        loc = ["functionalities", fi]
        r = _Renderer(ctx, func, loc, np.random.default_rng(seed + fi))
        items = r.from_source() if "source" in func else r.from_templates()
        if len(items) < n:
            items = _fill_up(spec, loc, items, n if fill_up else len(items), _why_none(func))
        expect, params = spec_expectation(spec, func)
        params_json = json.dumps(params, sort_keys=True)
        for ci, item in enumerate(items[:n]):
            rows.append({
                "case_id": f"{prefix}-{fi:02d}-{ci:05d}",
                "functionality": func["name"],
                "capability": func["class"],
                "test_type": func["type"],
                "inputs": list(item["inputs"]),
                "inputs_b": None if item.get("inputs_b") is None else list(item["inputs_b"]),
                "labels": None if item["labels"] is None else [int(x) for x in item["labels"]],
                "answers": None if item.get("answers") is None else list(item["answers"]),
                "expect": expect,
                "expect_params": params_json,
                "agg_fn": agg_of(func),
                "meta": item["meta"],
            })
    return pd.DataFrame(rows, columns=COLUMNS)


def declared(spec: Spec, functionalities=None) -> list[dict]:
    """The functionality table a built suite declares (its file metadata)."""
    return [{k: f[k] for k in ("functionality", "capability", "test_type", "description")}
            for f in catalogue(spec) if functionalities is None or f["functionality"] in functionalities]
