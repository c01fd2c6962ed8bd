"""Suite specs: the checks of a functionality's template groups (placeholders name lexicons, every template
renders with the first entry of each, one way to perturb, labels and answers where the task has them) and of
perturbations (name, ``apply_to``, parameters), each error one line naming the file, the functionality and the
field."""

from __future__ import annotations

import string

from beluga.core.errors import ConfigError
from beluga.suites import perturb as perturbations
from beluga.suites import templates as tpl
from beluga.suites.spec.core import (
    APPLY_TO,
    SEP,
    Spec,
    group_lexicons,
    is_source_lexicon,
    label_of,
    not_reserved,
    slot_values,
    spec_error,
    spec_location,
    template_segments,
)


def check_group(spec: Spec, func: dict, group: dict, loc, with_perturb: bool) -> None:
    lex = group_lexicons(spec, group, loc)
    slot = (group.get("fill_slot") or group.get("swap_slot") or {}).get("slot")
    makers = [k for k in ("fill_slot", "swap_slot", "variants", "perturb", "swap_pair") if group.get(k)]
    if group.get("swap_pair") and spec.task not in ("para", "similarity"):
        raise spec_error(spec, [*loc, "swap_pair"], "swap_pair swaps the two segments of a symmetric pair (para, "
                                                    "similarity)")
    if len(makers) > 1:
        raise spec_error(spec, loc, f"one way to perturb a group: {', '.join(makers)} given together")
    fixed = [slot] if slot else []
    if slot:
        not_reserved(spec, [*loc, "fill_slot" if group.get("fill_slot") else "swap_slot", "slot"], slot)
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
        check_perturb(spec, group["perturb"], [*loc, "perturb"])
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


def check_perturb(spec: Spec, p: dict, loc) -> None:
    """The perturbation's name, ``apply_to`` and parameters checked (a word list may name a lexicon)."""
    name = p["name"]
    apply_to = p.get("apply_to")
    allowed = APPLY_TO[spec.task]
    if apply_to is not None and apply_to not in allowed:
        raise spec_error(spec, [*loc, "apply_to"], f"{apply_to!r} does not apply to a {spec.task} input "
                                                   f"({', '.join(allowed) or 'none'})")
    try:
        perturbations.get_perturbation(name)
    except ConfigError as e:
        raise spec_error(spec, [*loc, "name"], str(e)) from None
    params = {k: v for k, v in p.items() if k not in ("name", "apply_to")}
    # a word list may name a lexicon of the spec (one of a source's sentences stands for them here)
    lexicons = {k: (("a sentence",) if is_source_lexicon(v) else v) for k, v in spec.lexicons.items()}
    perturbations.check_params(name, params, spec_location(spec.path, spec.data, loc), lexicons=lexicons)


