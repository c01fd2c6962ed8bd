"""The template engine of suite specs (beluga/suites/spec/): placeholders filled from lexicons, article
agreement, seeded sampling of the template × lexicon product, spread over groups of templates.

A template is a Python format string whose fields name lexicons: ``{noun}``, ``{pos_verb[1]}`` (an item of a
tuple-valued entry), ``{p.v1}`` (a key of a mapping-valued entry), ``{first_name2}`` (a second placeholder of
the ``first_name`` lexicon: trailing digits are dropped to find the lexicon). ``{art}`` becomes "a" / "an",
agreeing with the next word; CheckList's ``{a:pos_adj}`` is written ``{art} {pos_adj}`` before anything else.
A group's *slots* (``fill_slot`` / ``swap_slot`` of a spec) are filled by its maker, not from the product.

Determinism: the product of a group's templates and lexicons is enumerated in the order of
``rng.permutation`` (lazily for very large products), so the same (templates, lexicons, rng state) always gives
the same fills in the same order.
"""

from __future__ import annotations

import _string
import json
import math
import re
import string
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from beluga.core.errors import ConfigError
from beluga.suites import lexicons as lex


def _strs(xs) -> tuple[str, ...]:
    return tuple(str(x) for x in xs)


#: the built-in lexicons a template's placeholders name (a spec adds, extends or replaces them by name)
BUILTIN_LEXICONS: dict[str, tuple] = {
    "det": ("the", "this", "that"),
    "it": ("it", "this", "that"),
    "noun": lex.MOVIE_NOUNS,
    "cnoun": lex.MOVIE_COUNT_NOUNS,
    "be": ("is", "was"),
    "neg_be": ("is not", "isn't", "was not", "wasn't"),
    "neg_do": ("did not", "didn't", "do not", "don't"),
    "subj": ("I", "we"),
    "pos_adj": lex.POSITIVE_ADJS,
    "neg_adj": lex.NEGATIVE_ADJS,
    "neu_adj": lex.NEUTRAL_ADJS,
    "sent_adj": lex.POSITIVE_ADJS + lex.NEGATIVE_ADJS,
    "any_adj": lex.POSITIVE_ADJS + lex.NEGATIVE_ADJS + lex.NEUTRAL_ADJS,
    "pos_verb": lex.POSITIVE_VERBS,     # (base, past): {pos_verb[0]} / {pos_verb[1]}
    "neg_verb": lex.NEGATIVE_VERBS,
    "neu_verb": lex.NEUTRAL_VERBS,
    "sent_verb": lex.POSITIVE_VERBS + lex.NEGATIVE_VERBS,
    "holder": tuple(h[0].lower() + h[1:] for h in lex.OPINION_HOLDERS),
    "no": ("No", "No."),
    "first_name": lex.FIRST_NAMES,
    "male_name": lex.MALE_FIRST_NAMES,
    "female_name": lex.FEMALE_FIRST_NAMES,
    "last_name": lex.LAST_NAMES,
    "city": lex.CITIES,
    "country": lex.COUNTRIES,
    "role": lex.ROLES,
    "runtime": _strs(range(75, 185, 5)),
    "times": _strs(range(5, 31)),
    "year": _strs(range(1950, 2024)),
    "budget": _strs(range(5, 305, 5)),
    # word lists the makers and perturbations use by name
    "intensifiers": lex.INTENSIFIERS,
    "verb_intensifiers": lex.VERB_INTENSIFIERS,
    "reducers": lex.REDUCERS,
    "verb_reducers": lex.VERB_REDUCERS,
    "positive_phrases": lex.POSITIVE_PHRASES,
    "negative_phrases": lex.NEGATIVE_PHRASES,
    "races": lex.RACES,
    "nationalities": lex.NATIONALITIES,
    "religions": lex.RELIGIONS,
    "used_to_frames": lex.USED_TO_FRAMES,
}

ART = "art"
_ART = "\x00"
_ART_RE = re.compile("\x00(\\s+)([\"'\u201c\u2018(]*)([\\w-]+)")
_AN_PREFIXES = ("hour", "honest", "honor", "heir")
_A_PREFIXES = ("uni", "use", "usu", "uti", "eu", "one", "once", "ukr", "uru", "utop")
#: CheckList's article placeholder ``{a:name}`` / ``{an:name}``
_CHECKLIST_ART = re.compile(r"\{an?:([A-Za-z_][\w.\[\]]*)\}")


#: numbers read with a vowel sound first: 8, 11, 18, 80-89, 800-899, 8,000..., 11,000 / 18,000...
_AN_NUMBER = re.compile(r"^(8|11|18)(\d{3})*$|^8\d*$")


def article(word: str) -> str:
    """"a" or "an" before ``word`` (a number by how it is read: "an 8-minute", "a 7-minute")."""
    w = word.lower()
    if "0" <= w[:1] <= "9":
        digits = re.match(r"[0-9]+", w).group()
        return "an" if _AN_NUMBER.match(digits) else "a"
    if w.startswith(_AN_PREFIXES):
        return "an"
    if w.startswith(_A_PREFIXES):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"


def normalise(template: str) -> str:
    """CheckList's ``{a:pos_adj}`` as ``{art} {pos_adj}``."""
    return _CHECKLIST_ART.sub(lambda m: "{art} {" + m.group(1) + "}", template)


class _TemplateFormatter(string.Formatter):
    """``str.format`` for templates, limited to what a template means: a placeholder names a lexicon entry (a
    string), an item of a tuple-valued entry (``{pos_verb[1]}``) or a key of a mapping-valued entry
    (``{p.v1}``). Attributes of strings (``{noun.title}``, a bound method's repr in the text), indexing a
    string (``{noun[0]}``, its first letter), conversions (``!r``) and format specs (``:>9``) are refused, each
    in one line, instead of rendering something nobody wrote."""

    def get_field(self, field_name, args, kwargs):
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            if is_attr:
                if not isinstance(obj, Mapping):
                    raise ConfigError(f"placeholder {{{field_name}}}: .{key} reads a key of a lexicon whose entries "
                                      f"are mappings; this entry is {_kind(obj)}")
                if key not in obj:
                    raise ConfigError(f"placeholder {{{field_name}}}: the entry has no key {key!r} "
                                      f"(it has {', '.join(map(repr, obj)) or 'none'})")
            else:
                if not isinstance(obj, (tuple, list)):
                    raise ConfigError(f"placeholder {{{field_name}}}: [{key}] reads an item of a lexicon whose "
                                      f"entries are lists; this entry is {_kind(obj)}")
                if not isinstance(key, int) or not 0 <= key < len(obj):
                    raise ConfigError(f"placeholder {{{field_name}}}: the entry has {len(obj)} items, no [{key}]")
            obj = obj[key]
        return obj, first

    def convert_field(self, value, conversion):
        if conversion is not None:
            raise ConfigError(f"a placeholder takes no conversion (!{conversion}): write the placeholder alone")
        return value

    def format_field(self, value, format_spec):
        if format_spec:
            raise ConfigError(f"a placeholder takes no format spec (:{format_spec}); CheckList's article is "
                              "{a:name}")
        if not isinstance(value, str):
            raise ConfigError(f"a placeholder stands for {_kind(value)}; name an item or a key, e.g. {{x[0]}} or "
                              "{x.key}")
        return value


def _kind(value) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    return "a list" if isinstance(value, (tuple, list)) else type(value).__name__


_FORMATTER = _TemplateFormatter()
#: placeholder names the engine fills itself: a lexicon or slot of that name would be shadowed
RESERVED = (ART, "sentence")


def render_template(template: str, fill: Mapping, capitalize: bool = True, fixed: Mapping | None = None) -> str:
    """Fill ``template`` from ``fill`` (placeholder -> lexicon entry) and ``fixed`` (slot -> text); ``{art}``
    becomes "a"/"an" agreeing with the next word; whitespace collapsed; the first letter capitalised
    (``capitalize``)."""
    try:
        text = _FORMATTER.vformat(template, (), {**fill, **(fixed or {}), ART: _ART})
    except ConfigError as e:
        raise ConfigError(f"template {template!r}: {e}") from None
    text = _ART_RE.sub(lambda m: article(m.group(3)) + m.group(1) + m.group(2) + m.group(3), text)
    if _ART in text:   # nothing a word could follow: the article's placeholder stood before no word
        raise ConfigError(f"template {template!r}: {{a:...}} / {{art}} must stand before a word")
    text = re.sub(r"\s{2,}", " ", text).strip()
    return text[:1].upper() + text[1:] if capitalize else text


def fields(template: str, fixed: Sequence[str] = ()) -> list[str]:
    """The placeholders of a template that are filled from lexicons (``art`` and ``fixed`` slots excluded), in
    order of first appearance."""
    out: list[str] = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is None:
            continue
        if not name or name.isdigit():
            raise ConfigError(f"template {template!r}: a placeholder needs a lexicon name ({{noun}}, not {{}})")
        base = re.split(r"[.\[]", name)[0]
        if base != ART and base not in fixed and base not in out:
            out.append(base)
    return out


def lexicon_key(field: str, lexicons: Mapping | None = None) -> str:
    """The lexicon of a placeholder: its own name when a lexicon has it (``top10``), else its name without
    trailing digits (``first_name2`` -> ``first_name``)."""
    if lexicons is not None and field in lexicons:
        return field
    return field.rstrip("0123456789")


_PERMUTE_MAX = 1_000_000
#: the most fills a template may make (its lexicons' sizes multiplied)
MAX_PRODUCT = 10 ** 12
#: fills in a row that make nothing new before a group counts as exhausted
MAX_MISSES = 50_000


class Templates:
    """The full product of template x lexicon fills of a list of templates, sampled lazily.

    ``distinct``: placeholders of one lexicon in a template (``{first_name}``, ``{first_name2}``) never take the
    same value (product elements where they would are skipped; the order of the others is unchanged)."""

    def __init__(self, templates: Sequence[str], lexicons: Mapping[str, Sequence], fixed: Sequence[str] = (),
                 distinct: bool = True):
        self.lexicon = lexicons
        self.distinct = distinct
        self.parts: list[tuple[str, list[str], list[int]]] = []
        for t in templates:
            names = fields(t, fixed)
            for f in names:
                if lexicon_key(f, lexicons) not in lexicons:
                    raise ConfigError(f"template {t!r}: placeholder {{{f}}} names no lexicon")
            sizes = [len(lexicons[lexicon_key(f, lexicons)]) for f in names]
            if math.prod(sizes) > MAX_PRODUCT:
                raise ConfigError(f"template {t!r}: its lexicons make {math.prod(sizes):.3g} fills, more than "
                                  f"{MAX_PRODUCT:.0e}: split it or use smaller lexicons")
            self.parts.append((t, names, sizes))
        self.totals = np.array([int(np.prod(s)) if s else 1 for _, _, s in self.parts], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.totals)])

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def _order(self, rng: np.random.Generator) -> Iterator[int]:
        """Product indices without replacement, in seeded random order (lazy for huge products)."""
        total = len(self)
        if total <= _PERMUTE_MAX:
            yield from (int(i) for i in rng.permutation(total))
            return
        drawn: set[int] = set()
        while len(drawn) < total:
            idx = int(rng.integers(total))
            if idx not in drawn:
                drawn.add(idx)
                yield idx

    def _repeats(self, fill: dict) -> bool:
        seen: dict[str, list] = {}
        for f, v in fill.items():
            same = seen.setdefault(lexicon_key(f, self.lexicon), [])
            if any(v == w for w in same):
                return True
            same.append(v)
        return False

    def iter(self, rng: np.random.Generator) -> Iterator[tuple[str, dict]]:
        """Yield (template, fill) for every product element, in seeded random order (it stops after
        :data:`MAX_MISSES` elements in a row that repeat a placeholder's value: the rest cannot be faster)."""
        misses = 0
        for idx in self._order(rng):
            p = int(np.searchsorted(self.offsets, idx, side="right")) - 1
            t, names, sizes = self.parts[p]
            fill = {}
            if names:
                for f, i in zip(names, np.unravel_index(int(idx - self.offsets[p]), sizes)):
                    fill[f] = self.lexicon[lexicon_key(f, self.lexicon)][int(i)]
            if self.distinct and len(fill) > 1 and self._repeats(fill):
                misses += 1
                if misses > MAX_MISSES:
                    return
                continue
            misses = 0
            yield t, fill


def meta(**kw) -> str:
    return json.dumps(kw, sort_keys=True)


def cap_perturbations(orig: str, perts: Sequence[str], rng: np.random.Generator, max_p: int) -> list[str]:
    """Distinct perturbations that differ from ``orig``, at most ``max_p`` (seeded subset, order kept)."""
    out: list[str] = []
    for p in perts:
        if p and p != orig and p not in out:
            out.append(p)
    if len(out) > max_p:
        keep = np.sort(rng.choice(len(out), size=max_p, replace=False))
        out = [out[i] for i in keep]
    return out


Item = dict  # {"inputs": list[str], "inputs_b": list[str] | None, "labels": ..., "answers": ..., "meta": str | None}
MakeItem = Callable[[str, dict], "Item | None"]


def take(it: Iterator[tuple[str, dict]], make: MakeItem, seen: set, k: int) -> list[Item]:
    """Up to ``k`` items whose first input is new (``seen`` is updated). After :data:`MAX_MISSES` fills in a
    row that make no new item (a perturbation that does not apply, a repeated case) the group counts as
    exhausted."""
    out: list[Item] = []
    misses = 0
    while len(out) < k and misses <= MAX_MISSES:
        try:
            t, fill = next(it)
        except StopIteration:
            break
        item = make(t, fill)
        if item is None or item_key(item) in seen:
            misses += 1
            continue
        misses = 0
        seen.add(item_key(item))
        out.append(item)
    return out


def item_key(item: Item):
    """What makes two items the same case: the first input (with its second segment, for pairs)."""
    b = item.get("inputs_b")
    return item["inputs"][0] if not b else (item["inputs"][0], b[0])


def sample_groups(rng: np.random.Generator, groups: Sequence[tuple[Templates, MakeItem]], n: int,
                  seen: set | None = None, shuffle: bool = True) -> list[Item]:
    """``n`` distinct items spread evenly over the groups (shortfalls moved to other groups)."""
    seen = set() if seen is None else seen
    iters = [g.iter(rng) for g, _ in groups]
    k = len(groups)
    per: list[list[Item]] = [[] for _ in groups]
    alive = [True] * k
    for i in range(k):
        quota = n // k + (1 if i < n % k else 0)
        per[i] = take(iters[i], groups[i][1], seen, quota)
        alive[i] = len(per[i]) == quota
    missing = n - sum(len(p) for p in per)
    while missing > 0 and any(alive):
        for i in range(k):
            if missing == 0:
                break
            if alive[i]:
                got = take(iters[i], groups[i][1], seen, 1)
                if got:
                    per[i].extend(got)
                    missing -= 1
                else:
                    alive[i] = False
    items = [x for p in per for x in p]
    if shuffle and items:
        items = [items[i] for i in rng.permutation(len(items))]
    return items


MIN_WORDS = 3


def prepare_pool(sentences: Sequence[str], max_words: int, min_words: int = MIN_WORDS) -> list[str]:
    """Whitespace-normalised, de-duplicated real sentences of ``min_words``..``max_words`` words, input order
    kept."""
    out: dict[str, None] = {}
    for s in sentences:
        if not isinstance(s, str):
            continue
        s = " ".join(s.split())
        if min_words <= len(s.split()) <= max_words:
            out.setdefault(s, None)
    return list(out)
