"""``python -m beluga suite suggest``: a masked language model's words for the ``{mask}``s of a template, as
CheckList's ``editor.suggest`` (the scoring: :mod:`beluga.model.masked_lm`), printed as a ranked table or, with
``--lexicon NAME``, as a spec lexicon (``NAME: [word, ...]``) to paste into a spec's ``lexicons`` or a lexicon
file: a spec holds the words themselves, and building a suite never calls a model."""

from __future__ import annotations

import re
import string

import yaml

from beluga.core.errors import BelugaError
from beluga.core.text import one_line
from beluga.data.fetch import is_hub_name, snapshot_commit
from beluga.model.masked_lm import BEAM_SIZE, SCORES, SUGGEST_MODEL, load_masked_lm, suggest_words
from beluga.suites.templates import RESERVED

#: the one placeholder of a suggestion template
MASK = "mask"

#: a lexicon name a template placeholder can name (``{name}``, ``{name[0]}``)
LEXICON_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def template_pieces(template: str, field: str = "suite suggest: field '--template'") -> list[str]:
    """A template's literal text around its ``{mask}``s (``{{`` and ``}}`` are literal braces): one piece more
    than there are masks. Refused in one line: not a template, another placeholder, no ``{mask}``, a control
    character."""
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in template):
        raise BelugaError(f"{field}: {one_line(repr(template))} holds a control character")
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as e:
        raise BelugaError(f"{field}: {template!r} is not a template ({e}); write literal braces as {{{{ }}}}") from None
    pieces, text = [], ""
    for literal, name, spec, conv in parsed:
        text += literal
        if name is None:
            continue
        if name != MASK or spec or conv:
            shown = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
            raise BelugaError(f"{field}: {shown} is not {{{MASK}}}: a suggestion template's only placeholder is "
                              f"{{{MASK}}} (write the other words out; give several --template to average over "
                              "them)")
        pieces.append(text)
        text = ""
    pieces.append(text)
    if len(pieces) < 2:
        raise BelugaError(f"{field}: {template!r} has no {{{MASK}}}")
    return pieces


def model_text(pieces: list[str], mask_token: str) -> str:
    """The template as the model reads it: each ``{mask}`` its mask token."""
    return mask_token.join(pieces)


def filled_text(pieces: list[str], words: tuple[str, ...]) -> str:
    """The template with its masks filled by ``words`` (one per mask)."""
    return "".join(p + w for p, w in zip(pieces, (*words, "")))


def lexicon_line(name: str, candidates: list[tuple[str, ...]]) -> str:
    """The candidates as a spec lexicon, one YAML line ``name: [great, good, ...]`` (several masks: a list per
    candidate, ``[[very, good], ...]``, which ``{name[0]}`` / ``{name[1]}`` name), quoted where YAML needs it;
    read back by the spec reader as these words (tests/test_suggest.py)."""
    entries = [w[0] if len(w) == 1 else list(w) for w in candidates]
    flow = yaml.safe_dump(entries, default_flow_style=True, allow_unicode=True, width=float("inf")).strip()
    return f"{name}: {flow}"


def check_lexicon_name(name: str) -> str:
    """``--lexicon``: a name a template placeholder can name, not a reserved one."""
    if not LEXICON_NAME.fullmatch(name):
        raise BelugaError(f"suite suggest: field '--lexicon': {name!r} is not a lexicon name (letters, digits and _, "
                          "not starting with a digit)")
    if name in RESERVED:
        raise BelugaError(f"suite suggest: field '--lexicon': {name!r} is a reserved placeholder name; name the "
                          "lexicon otherwise")
    return name


def suggest_command(templates: list[str], model: str | None = None, top: int = 50, beam_size: int | None = None,
                    score: str = "logit", lexicon: str | None = None) -> str:
    """``suite suggest``: the ``top`` candidates of ``model`` (default CheckList's roberta-base) for the masks
    of ``templates`` (every template with the same number of masks; several are scored as CheckList's
    ``unmask_multiple``), best first, as a table (rank, score, words, the first template filled) under a line
    saying the model (a hub model's commit), the templates and the score; with ``lexicon``, a YAML comment
    saying the same and the spec lexicon line (:func:`lexicon_line`). Everything is checked before the model
    is loaded."""
    model = model or SUGGEST_MODEL
    beam_size = BEAM_SIZE if beam_size is None else beam_size
    if score not in SCORES:
        raise BelugaError(f"suite suggest: field '--score': {score!r} is not one of {', '.join(SCORES)}")
    if lexicon is not None:
        check_lexicon_name(lexicon)
    if not templates:
        raise BelugaError("suite suggest: field '--template': no template given")
    split = [template_pieces(t) for t in templates]
    counts = {len(p) - 1 for p in split}
    if len(counts) > 1:
        raise BelugaError(f"suite suggest: field '--template': the templates have {', '.join(map(str, sorted(counts)))}"
                          " masks; every template needs the same number (one word per mask)")
    net, tokenizer, path, positions = load_masked_lm(model)
    texts = [model_text(p, tokenizer.mask_token) for p in split]
    for t, text in zip(templates, texts):
        found = tokenizer(text).input_ids.count(tokenizer.mask_token_id)
        if found != len(split[0]) - 1:
            raise BelugaError(f"suite suggest: field '--template': {t!r} reads as {found} mask tokens, not "
                              f"{len(split[0]) - 1}: the text holds the model's mask token {tokenizer.mask_token!r}")
    found = suggest_words(net, tokenizer, texts, model, beam_size, score, positions)
    if not found:
        raise BelugaError(f"suite suggest: field '--template': no candidate is among every template's (beam "
                          f"{beam_size}); give fewer templates or a larger --beam-size")
    shown = found[:top]
    commit = snapshot_commit(model, path) if is_hub_name(model) else None
    what = (f"model {model}" + (f" (commit {commit[:12]})" if commit else "") + f", {len(templates)} template"
            + ("s" if len(templates) > 1 else "") + f" with {len(split[0]) - 1} mask"
            + ("s" if len(split[0]) > 2 else "") + f": the best {len(shown)} of {len(found)} candidates "
            f"(beam {beam_size}); score: {SCORES[score]}" + ("; the mean over the templates" if len(templates) > 1
                                                              else ""))
    if lexicon is not None:
        return "".join(f"# {one_line(t)}\n" for t in templates) + f"# {one_line(what)}\n" + lexicon_line(
            lexicon, [w for w, _ in shown]) + "\n"
    rows = [(str(r), f"{s:.3f}", " ".join(w), filled_text(split[0], w)) for r, (w, s) in enumerate(shown, 1)]
    head = ("rank", "score", "words", "filled")
    widths = [max(len(x[c]) for x in [head, *rows]) for c in range(3)]
    lines = [f"{r:>{widths[0]}}  {s:>{widths[1]}}  {w:<{widths[2]}}  {t}" for r, s, w, t in [head, *rows]]
    return "\n".join([what, *lines]) + "\n"
