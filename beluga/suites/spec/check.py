"""Suite specs, loaded and checked: a spec file read and validated against ``specs/spec.schema.yaml``, then
checked for what the schema cannot say (every placeholder names a lexicon, labels are the task's, expectations
fit the test type, perturbations and their parameters exist, sources and files are there), each error one line
naming the file, the functionality and the field (:func:`spec_error`). :class:`Spec` holds a checked spec and the
lexicons it resolves to; :func:`load_spec` / :func:`spec_from_data` make one. The rendering
(:mod:`beluga.suites.spec.render`) uses the helpers that read a spec the way the checks do (:func:`label_of`,
:func:`template_segments`, :func:`group_lexicons`, :func:`slot_values`, :func:`expectation`)."""

from __future__ import annotations

import math
import string
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

from beluga.bounds import yaml_load, yaml_load_text
from beluga.errors import ConfigError
from beluga.suites import perturb as perturbations
from beluga.suites import templates as tpl
from beluga.suites.format import EXPECTATIONS, SLICES, TEST_TYPES
from beluga.tasks import get_task_type

SPECS_DIR = Path(__file__).resolve().parents[1] / "specs"
SPEC_SCHEMA = SPECS_DIR / "spec.schema.yaml"
#: the specs shipped with the package (suite.generate: <name>)
PACKAGED = ("sent_default", "para_default", "read_default", "nli_default")
#: rendering settings when neither the spec's defaults nor the caller set them
RENDER_DEFAULTS = {"cases_per_functionality": 50, "max_perturbations": 3, "max_words": 40, "seed": 0}
SEP = "\x1f"   # joins the two segments of a pair template while its product is enumerated


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


def spec_location(path: str, data: dict | None, loc) -> str:
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


def spec_error(spec: Spec | tuple, loc, msg: str) -> ConfigError:
    """The one-line error ``msg`` at ``loc`` of a spec (a :class:`Spec` or its (path, data))."""
    path, data = (spec.path, spec.data) if isinstance(spec, Spec) else spec
    return ConfigError(f"{spec_location(path, data, loc)}: {msg}")


def _read_yaml(path: str, what: str, words=None):
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


def _refuse_controls(spec, paths: list[list], data: dict) -> None:
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


def load_spec(spec: str) -> Spec:
    """Read and check a spec (a packaged name or a path): the schema, then what it cannot say — every
    placeholder names a lexicon, labels are the task's, expectations fit the test type, perturbations and
    their parameters exist, sources and files are there. A ConfigError names the file, the functionality
    and the field."""
    path = spec_path(spec)
    return spec_from_data(_read_yaml(path, "suite spec", spec_words), path)


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
        raise spec_error((path, data), e.absolute_path, _schema_message(e))
    _refuse_controls((path, data), spec_words(data), data)
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
        block = _read_yaml(str(f), "lexicon file", lambda d: _lexicon_words(d, []))
        if not isinstance(block, dict) or not all(isinstance(k, str) for k in block):
            raise spec_error(spec, ["lexicon_files", i], f"{f} must be a mapping of lexicon names to entries")
        _refuse_controls(spec, [["lexicon_files", i]], {"lexicon_files": {i: block}})
        blocks.append((["lexicon_files", i], block))
    blocks.append((["lexicons"], spec.data.get("lexicons") or {}))
    for loc, block in blocks:
        for name, value in block.items():
            where = [*loc, name]
            _not_reserved(spec, where, name)
            if isinstance(value, list):
                lex[name] = _entries(value)
            elif isinstance(value, dict) and "extend" in value:
                if name not in lex:
                    raise spec_error(spec, where, f"extends {name!r}, which is not a lexicon (built-in or defined "
                                                  "before)")
                lex[name] = tuple(lex[name]) + tuple(e for e in _entries(value["extend"])
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


def _not_reserved(spec, loc, name) -> None:
    if name in tpl.RESERVED:
        raise spec_error(spec, loc, f"{name!r} is a reserved placeholder name ({{art}} is the article of {{a:x}}, "
                                    "{sentence} a variant's original): name the lexicon or slot otherwise")


def label_of(spec: Spec, value, loc, required: bool = False):
    """A label name or number of the task's label set -> its number (None stays None, unless ``required``)."""
    if value is None and not required:
        return None
    labels = get_task_type(spec.task).suite_labels
    if not labels:
        raise spec_error(spec, loc, f"task {spec.task!r} has no class labels (give 'answer')")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise spec_error(spec, loc, f"{value!r} is not a label")
    if isinstance(value, int):
        if value not in labels:
            raise spec_error(spec, loc, f"{value} is not a label of task {spec.task!r} ({_label_list(labels)})")
        return value
    by_name = {v.replace(" ", "_"): k for k, v in labels.items()}
    key = value.strip().replace(" ", "_")
    if key not in by_name:
        raise spec_error(spec, loc, f"{value!r} is not a label of task {spec.task!r} ({_label_list(labels)})")
    return by_name[key]


def _label_list(labels: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in labels.items())


def expectation(func: dict) -> tuple[str, dict]:
    """(expectation name, its parameters) of a functionality."""
    e = func["expect"]
    if isinstance(e, str):
        return e, {}
    return e["name"], {k: v for k, v in e.items() if k != "name"}


def template_segments(spec: Spec, template, loc) -> list[str]:
    """A template's segments: one for sent, two for para / read / nli."""
    want = 1 if spec.task == "sent" else 2
    segs = [template] if isinstance(template, str) else list(template)
    if len(segs) != want:
        kind = {"sent": "a string", "para": "[question 1, question 2]", "read": "[context, question]",
                "nli": "[premise, hypothesis]"}[spec.task]
        raise spec_error(spec, loc, f"a {spec.task} template is {kind}")
    return [tpl.normalise(s) for s in segs]


def group_lexicons(spec: Spec, group: dict, loc) -> dict:
    """The lexicons a template group sees: the spec's, and the group's own (a list, or a spec lexicon's name)."""
    lex = dict(spec.lexicons)
    for name, value in (group.get("lexicons") or {}).items():
        _not_reserved(spec, [*loc, "lexicons", name], name)
        if isinstance(value, str):
            if value not in spec.lexicons:
                raise spec_error(spec, [*loc, "lexicons", name], f"{value!r} is not a lexicon")
            lex[name] = spec.lexicons[value]
        else:
            lex[name] = _entries(value)
    return lex


def slot_values(spec: Spec, lex: dict, values, loc) -> tuple:
    """The values of a fill_slot / swap_slot: a list, or a lexicon's name."""
    if isinstance(values, str):
        if values not in lex:
            raise spec_error(spec, loc, f"{values!r} is not a lexicon")
        return tuple(lex[values])
    return _entries(values)


def _check_group(spec: Spec, func: dict, group: dict, loc, with_perturb: bool) -> None:
    lex = group_lexicons(spec, group, loc)
    slot = (group.get("fill_slot") or group.get("swap_slot") or {}).get("slot")
    makers = [k for k in ("fill_slot", "swap_slot", "variants", "perturb", "swap_pair") if group.get(k)]
    if group.get("swap_pair") and spec.task != "para":
        raise spec_error(spec, [*loc, "swap_pair"], "swap_pair swaps the two questions of a para pair")
    if len(makers) > 1:
        raise spec_error(spec, loc, f"one way to perturb a group: {', '.join(makers)} given together")
    fixed = [slot] if slot else []
    if slot:
        _not_reserved(spec, [*loc, "fill_slot" if group.get("fill_slot") else "swap_slot", "slot"], slot)
    for j, t in enumerate(group["templates"]):
        segs = template_segments(spec, t, [*loc, "templates", j])
        for s in segs:
            try:
                names = tpl.fields(s, fixed)
            except (ValueError, ConfigError) as e:
                raise spec_error(spec, [*loc, "templates", j], str(e)) from None
            for f in names:
                key = tpl.lexicon_key(f, lex)
                if key not in lex:
                    raise spec_error(spec, [*loc, "templates", j], f"placeholder {{{f}}} names no lexicon ({key!r} is "
                                                                    "neither built in nor defined in the spec)")
                if is_source_lexicon(lex[key]):
                    raise spec_error(spec, [*loc, "templates", j], f"placeholder {{{f}}}: lexicon {key!r} holds a "
                                                                    "source's sentences (use it as a perturbation's "
                                                                    "word list)")
        if slot and not any(f"{{{slot}}}" in s for s in segs):
            raise spec_error(spec, [*loc, "templates", j], f"the group's slot {{{slot}}} is not in the template")
        _dry_render(spec, group, lex, segs, fixed, [*loc, "templates", j])
        try:
            tpl.Templates([SEP.join(segs)], lex, fixed=fixed)   # the product's size
        except ConfigError as e:
            raise spec_error(spec, [*loc, "templates", j], str(e)) from None
    if "label" in group:
        label_of(spec, group["label"], [*loc, "label"])
    if group.get("perturbed_label") is not None:
        if not makers and not with_perturb:
            raise spec_error(spec, [*loc, "perturbed_label"], "a group without a perturbation has no perturbed inputs")
        label_of(spec, group["perturbed_label"], [*loc, "perturbed_label"])
    if spec.task == "read":
        if not group.get("answer") and func["type"] == "MFT":
            raise spec_error(spec, loc, "a read MFT group needs 'answer' (a template, e.g. '{first_name}')")
    elif group.get("answer"):
        raise spec_error(spec, [*loc, "answer"], f"'answer' is for read specs; {spec.task} groups have 'label'")
    for key in ("fill_slot", "swap_slot"):
        if group.get(key):
            slot_values(spec, lex, group[key]["values"], [*loc, key, "values"])
    if group.get("perturb"):
        _check_perturb(spec, group["perturb"], [*loc, "perturb"])
    if func["type"] != "MFT" and not makers and not with_perturb:
        raise spec_error(spec, loc, f"an {func['type']} group needs a perturbation (fill_slot, swap_slot, variants, "
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
            raise spec_error(spec, loc, f"template {s!r}: {e} (a literal brace is written {{{{ or }}}})") from None
        for _, name, _, _ in parsed:
            if not name or name in ("art", "sentence", *fixed):
                continue
            key = tpl.lexicon_key(name, lex)
            if key in lex and not isinstance(lex[key][0], str) and not any(c in name for c in ".["):
                raise spec_error(spec, loc, f"placeholder {{{name}}}: lexicon {key!r} holds lists or mappings; name an "
                                            f"item or a key, e.g. {{{name}[0]}}")
    fill = _first_fill(lex, segs, fixed)
    slots = {k: "x" for k in fixed}
    for s in segs:
        _try_render(spec, s, fill, slots, loc)
    for v in group.get("variants") or []:
        missing = [f for f in tpl.fields(tpl.normalise(v), ("sentence", *fixed)) if f not in fill]
        if missing:
            raise spec_error(spec, [*loc[:-2], "variants"], f"variant {v!r}: placeholder {{{missing[0]}}} is not in "
                                                            "the group's template (a variant reuses the template's "
                                                            "fill)")
        _try_render(spec, tpl.normalise(v), fill, {**slots, "sentence": "x"}, [*loc[:-2], "variants"])
    if group.get("answer"):
        missing = [f for f in tpl.fields(tpl.normalise(group["answer"]), fixed) if f not in fill]
        if missing:
            raise spec_error(spec, [*loc[:-2], "answer"], f"placeholder {{{missing[0]}}} is not in the template "
                                                          f"{segs[0]!r}")
        _try_render(spec, tpl.normalise(group["answer"]), fill, slots, [*loc[:-2], "answer"])


def _try_render(spec: Spec, template: str, fill: dict, slots: dict, loc) -> None:
    try:
        tpl.render_template(template, fill, fixed=slots)
    except ConfigError as e:
        raise spec_error(spec, loc, str(e)) from None
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as e:
        raise spec_error(spec, loc, f"template {template!r} cannot be filled ({type(e).__name__}: {e})") from None


def _check_perturb(spec: Spec, p: dict, loc) -> None:
    """The perturbation's name, ``apply_to`` and parameters checked (a word list may name a lexicon)."""
    name = p["name"]
    apply_to = p.get("apply_to")
    allowed = {"sent": (None,), "para": (None, "first", "second", "both"),
               "read": (None, "context", "question", "both"), "nli": (None, "premise", "hypothesis", "both")}
    if apply_to not in allowed[spec.task]:
        raise spec_error(spec, [*loc, "apply_to"], f"{apply_to!r} does not apply to a {spec.task} input "
                                                   f"({', '.join(a for a in allowed[spec.task] if a) or 'none'})")
    try:
        perturbations.get_perturbation(name)
    except ConfigError as e:
        raise spec_error(spec, [*loc, "name"], str(e)) from None
    params = {k: v for k, v in p.items() if k not in ("name", "apply_to")}
    # a word list may name a lexicon of the spec (one of a source's sentences stands for them here)
    lexicons = {k: (("a sentence",) if is_source_lexicon(v) else v) for k, v in spec.lexicons.items()}
    perturbations.check_params(name, params, spec_location(spec.path, spec.data, loc), lexicons=lexicons)


#: the kinds of perturbation parameters that take a word list (a lexicon's name or a list)
WORD_LIST_KINDS = ("words", "pairs", "groups")


def is_source_lexicon(value) -> bool:
    """A lexicon defined as {source: name, max: N}, resolved with the sources when the suite is rendered."""
    return isinstance(value, tuple) and len(value) == 3 and value[0] == "source" \
        and isinstance(value[2], (int, type(None)))


#: the parameters each expectation reads (besides slice, slice_value, train and unperturbed)
EXPECT_PARAMS = {"eq": {"val"}, "not_eq": {"val"}, "not_negative": set(), "eq_or_not_negative": set(),
                 "inv": {"tolerance"}, "monotonic": {"increasing", "tolerance", "label"}, "diff_up": {"tolerance"},
                 "diff_down": {"tolerance"}, "triplet": set(), "squad": set(), "same_answer": set()}
COMMON_EXPECT_PARAMS = {"slice", "slice_value", "train", "unperturbed"}


def _check_expectation(spec: Spec, func: dict, loc) -> None:
    """The expectation's parameters: known ones, of the right type (a misspelt one would be ignored)."""
    expect, params = expectation(func)
    if expect == "same_answer":
        raise spec_error(spec, loc, "same_answer needs each input's [old, new] replacement in meta, which a spec does "
                                    "not write; use inv (the answer string unchanged) or squad (each input's answer)")
    known = EXPECT_PARAMS.get(expect, set()) | COMMON_EXPECT_PARAMS
    unknown = sorted(set(params) - known)
    if unknown:
        raise spec_error(spec, loc, f"{expect!r} has no parameter {unknown[0]!r} "
                                    f"(it reads: {', '.join(sorted(known))})")
    tol = params.get("tolerance")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf):
        raise spec_error(spec, [*loc, "tolerance"], f"must be a finite number >= 0, got {tol!r}")
    for key in ("increasing", "unperturbed"):
        if key in params and not isinstance(params[key], bool):
            raise spec_error(spec, [*loc, key], f"must be true or false, got {params[key]!r}")
    if params.get("slice") is not None and params["slice"] not in SLICES:
        raise spec_error(spec, [*loc, "slice"], f"unknown slice {params['slice']!r} ({', '.join(SLICES)})")
    if params.get("slice") == "orig_pred_eq":
        if isinstance(params.get("slice_value"), str):
            raise spec_error(spec, [*loc, "slice_value"], "slice orig_pred_eq needs the class as a number")
        label_of(spec, params.get("slice_value"), [*loc, "slice_value"], required=True)
    if expect == "not_eq" and ("val" not in params or spec.task == "read"):
        raise spec_error(spec, [*loc, "val"], "not_eq needs val, the class it rules out (e.g. val: entailment); "
                                              "it is for class labels, not read answers")
    if "val" in params and spec.task != "read":
        label_of(spec, params["val"], [*loc, "val"], required=True)
    if "label" in params:
        label_of(spec, params["label"], [*loc, "label"], required=True)
    train = params.get("train")
    if train is not None:
        if not isinstance(train, dict) or train.get("as") not in TEST_TYPES or set(train) - {"as", "label"}:
            raise spec_error(spec, [*loc, "train"], f"must be {{as: MFT / INV / DIR}} with an optional label, got "
                                                    f"{train!r}")
        label_of(spec, train.get("label"), [*loc, "train", "label"])


def _check(spec: Spec) -> None:
    sources = spec.data.get("sources") or {}
    for name, src in sources.items():
        kinds = [k for k in ("pool", "file", "dataset") if k in src]
        if len(kinds) != 1:
            raise spec_error(spec, ["sources", name], "one of pool, file or dataset is needed")
        if "file" in src and not (spec.base_dir / src["file"]).is_file():
            raise spec_error(spec, ["sources", name, "file"], f"{spec.base_dir / src['file']} does not exist")
        if src.get("dataset") == "hutto" and not src.get("set"):
            raise spec_error(spec, ["sources", name, "set"], "the hutto dataset needs a set (tweets, amazon, nyt)")
    for name, value in spec.lexicons.items():
        if is_source_lexicon(value) and value[1] not in sources:
            raise spec_error(spec, ["lexicons", name, "source"], f"{value[1]!r} is not a source (sources)")
    names = [f["name"] for f in spec.functionalities]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise spec_error(spec, ["functionalities"], f"two functionalities are named {dup!r}")
    for i, func in enumerate(spec.functionalities):
        loc = ["functionalities", i]
        expect, params = expectation(func)
        if expect not in EXPECTATIONS:
            raise spec_error(spec, [*loc, "expect"], f"unknown expectation {expect!r} ({', '.join(EXPECTATIONS)})")
        if func["type"] not in EXPECTATIONS[expect]["types"]:
            raise spec_error(spec, [*loc, "expect"], f"{expect!r} does not apply to {func['type']} tests "
                                                     f"({', '.join(EXPECTATIONS[expect]['types'])})")
        needs = EXPECTATIONS[expect]["needs"]
        if "templates" not in func and "source" not in func:
            raise spec_error(spec, loc, "cases come from 'templates' or from a 'source' with 'perturb'")
        if "templates" in func and "source" in func:
            raise spec_error(spec, loc, "'templates' and 'source' are two ways to make cases; give one (a source's "
                                        "fill-up templates go in 'fallback')")
        if "source" in func and spec.task == "read" and not isinstance((sources.get(func["source"]) or {})
                                                                      .get("pool"), list):
            raise spec_error(spec, [*loc, "source"], "read cases come from templates (context, question, answer), or "
                                                     "from a pool source of two columns (context, question) for INV / "
                                                     "DIR; a source's sentences can also be a lexicon, e.g. "
                                                     "distractors for add_phrase")
        _check_expectation(spec, func, [*loc, "expect"])
        if "source" in func:
            if func["source"] not in sources:
                raise spec_error(spec, [*loc, "source"], f"{func['source']!r} is not a source (sources: "
                                                         f"{', '.join(sources) or 'none'})")
            if "perturb" not in func:
                raise spec_error(spec, loc, "a source's sentences need 'perturb'")
            if func.get("pairs") and spec.task != "para":
                raise spec_error(spec, [*loc, "pairs"], "pairs are for para specs")
            if func.get("pairs") == "perturbed_pairs":
                label_of(spec, func.get("label"), [*loc, "label"])
            elif func["type"] == "MFT":
                raise spec_error(spec, loc, "an MFT from a source needs 'pairs: perturbed_pairs' and a label (para)")
            elif needs in ("label", "label_or_answer", "answer") and "val" not in params:
                raise spec_error(spec, [*loc, "expect"], f"expectation {expect!r} needs a label or answer per input, "
                                                         "which a source's sentences do not have (give val, or use inv "
                                                         "/ monotonic / diff_up / diff_down)")
        if "label" in func and func.get("pairs") != "perturbed_pairs":
            raise spec_error(spec, [*loc, "label"], "a functionality's label is for pairs: perturbed_pairs; give "
                                                    "template groups their own label")
        if "perturb" in func:
            _check_perturb(spec, func["perturb"], [*loc, "perturb"])
        for key in ("templates", "fallback"):
            for j, group in enumerate(func.get(key) or []):
                _check_group(spec, func, group, [*loc, key, j], with_perturb="perturb" in func)
                if expect == "not_eq" and group.get("label") is not None:
                    raise spec_error(spec, [*loc, key, j, "label"], "not_eq rules out the class val; its groups have "
                                                                     "no label")
                if needs in ("label", "label_or_answer") and spec.task != "read" and "val" not in params \
                        and group.get("label") is None and key == "templates" and func.get("pairs") is None:
                    raise spec_error(spec, [*loc, key, j], f"expectation {expect!r} needs a label per case: give the "
                                                           "group a 'label'")
        if func.get("fallback") and "source" not in func:
            raise spec_error(spec, [*loc, "fallback"], "fallback templates fill up a source's cases; without a source "
                                                       "use 'templates'")
