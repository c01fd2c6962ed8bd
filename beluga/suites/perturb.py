"""Pure perturbation functions for INV/DIR tests.

Every function takes ``(text, rng)`` (plus lexicon arguments with sensible
defaults) and returns a list of perturbed strings, each different from ``text``
and from each other; the list is empty when the perturbation does not apply.
All randomness comes from the ``numpy.random.Generator`` passed in, so the
result is deterministic given the generator state.  The rule-based English negation
(``add_negation``, ``remove_negation``) lives in :mod:`beluga.suites.negation`; it is registered here
like the others.

Every perturbation is also callable by name with parameters: :data:`PERTURBATIONS`
(name -> :class:`Perturbation`), :func:`get_perturbation`, :func:`check_params`
(parameters checked, defaults filled, lexicon names resolved) and :func:`perturb`.
A word-list parameter takes a list of strings or the name of a lexicon in
:mod:`beluga.suites.lexicons` (``"positive_phrases"`` or ``"POSITIVE_PHRASES"``).
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beluga.core.errors import ConfigError
from beluga.suites import lexicons as lex
from beluga.suites.negation import add_negation, case_like, remove_negation

_SENT_END = ".!?"
_TRAILING_PUNCT = ".!?,;:…-–— \t\n"
_WORD_RE = re.compile(r"[A-Za-z]{2,}")
_INT_RE = re.compile(r"(?<![\w.,:/$-])(\d+)(?![\w]|[.,:/]\d)")


def _unique(text: str, candidates: Sequence[str]) -> list[str]:
    out: list[str] = []
    for c in candidates:
        if c and c != text and c not in out:
            out.append(c)
    return out


def _choose(rng: np.random.Generator, pool: Sequence, k: int) -> list:
    """k distinct elements of pool in random order (all of them if fewer)."""
    k = min(k, len(pool))
    if k <= 0:
        return []
    return [pool[i] for i in rng.choice(len(pool), size=k, replace=False)]


# ------------------------------------------------------------------------ typos
def typos(text: str, rng: np.random.Generator, n: int = 3) -> list[str]:
    """Up to ``n`` variants, each with one swap of two adjacent letters inside a word."""
    positions = []
    for m in _WORD_RE.finditer(text):
        for i in range(m.start(), m.end() - 1):
            if text[i].lower() != text[i + 1].lower():
                positions.append(i)
    out = []
    for i in _choose(rng, positions, n):
        out.append(text[:i] + text[i + 1] + text[i] + text[i + 2:])
    return _unique(text, out)


# ------------------------------------------------------------------ contractions
_APOS = "['\u2019]"
_NO_EXPAND_AFTER_S = re.compile(r"\s+(?:been|got|gotten)\b", re.IGNORECASE)
_PARTICIPLE_NEXT = re.compile(r"\s+(?:(?:never|always|just|already|ever|not|all|also)\s+)?"
                              r"(?:been|had|got|seen|done|made|become|come|gone|known|found|heard|\w+ed|\w+en)\b",
                              re.IGNORECASE)


@functools.lru_cache(maxsize=8)
def _contraction_tables(pairs: tuple[tuple[str, str], ...]):
    expand = {c.lower(): e for e, c in pairs}
    contract = {e.lower(): c for e, c in pairs}
    c_alts = sorted((re.escape(c).replace("'", _APOS) for _, c in pairs), key=len, reverse=True)
    is_neg = [e.endswith(" not") or e == "cannot" for e, _ in pairs]
    neg = sorted((re.escape(e) for (e, _), k in zip(pairs, is_neg) if k), key=len, reverse=True)
    other = sorted((re.escape(e) for (e, _), k in zip(pairs, is_neg) if not k), key=len, reverse=True)
    c_re = re.compile(r"\b(" + "|".join(c_alts) + r")(?![\w'\u2019])", re.IGNORECASE)
    neg_re = re.compile(r"\b(" + "|".join(neg) + r")\b(?!['\u2019])", re.IGNORECASE) if neg else None
    other_re = re.compile(r"\b(" + "|".join(other) + r")\b(?!['\u2019])", re.IGNORECASE) if other else None
    return expand, contract, c_re, neg_re, other_re


def _match_case(src: str, repl: str) -> str:
    if src[:1].isupper() and repl[:1].islower():
        return repl[:1].upper() + repl[1:]
    if src[:1].islower() and repl[:1].isupper() and not repl.startswith("I"):
        return repl[:1].lower() + repl[1:]
    return repl


def contractions(text: str, rng: np.random.Generator,
                 pairs: Sequence[tuple[str, str]] = lex.CONTRACTIONS) -> list[str]:
    """Expand every contraction ("isn't" -> "is not") and/or contract every expansion.

    Returns at most two strings: the fully expanded and the fully contracted text
    (only those that differ from ``text``).  ``rng`` is unused; the signature is
    uniform with the other perturbations.
    """
    expand, contract, c_re, neg_re, other_re = _contraction_tables(tuple(map(tuple, pairs)))

    def _exp(m):
        key = m.group(1).lower().replace("\u2019", "'")
        if key.endswith("'s") and _NO_EXPAND_AFTER_S.match(m.string, m.end()):
            return m.group(1)  # "it's been" is "it has been", not "it is been"
        return _match_case(m.group(1), expand[key])

    def _con(m):
        key = m.group(1).lower()
        if key.endswith(" have") and not _PARTICIPLE_NEXT.match(m.string, m.end()):
            return m.group(1)  # "they have a tendency" must not become "they've a tendency"
        return _match_case(m.group(1), contract[key])

    expanded = c_re.sub(_exp, text)
    contracted = text
    for r in (neg_re, other_re):  # negations first: "it is not" -> "it isn't", not "it's not"
        if r is not None:
            contracted = r.sub(_con, contracted)
    return _unique(text, [expanded, contracted])


# ------------------------------------------------------------------- punctuation
def punctuation(text: str, rng: np.random.Generator) -> list[str]:
    """Strip trailing punctuation, and/or end the (stripped) sentence with '.'.

    ``rng`` is unused; the signature is uniform with the other perturbations.
    """
    stripped = text.rstrip(_TRAILING_PUNCT)
    if not stripped:
        return []
    return _unique(text, [stripped, stripped + "."])


# ------------------------------------------------------------------- names
@functools.lru_cache(maxsize=16)
def _word_regex(words: tuple[str, ...], ignore_case: bool = False) -> re.Pattern:
    alts = sorted((re.escape(w) for w in set(words)), key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(alts) + r")(?![\w-])", re.IGNORECASE if ignore_case else 0)


def _replace_one(text: str, rng: np.random.Generator, groups: Sequence[Sequence[str]], n: int) -> list[str]:
    """Pick one lexicon word found in text; return variants replacing all its occurrences."""
    found: list[tuple[str, int]] = []
    for gi, words in enumerate(groups):
        if not words:
            continue
        for m in _word_regex(tuple(words)).finditer(text):
            if (m.group(1), gi) not in found:
                found.append((m.group(1), gi))
    if not found:
        return []
    word, gi = found[int(rng.integers(len(found)))]
    alternatives = [w for w in groups[gi] if w != word]
    pat = re.compile(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])")
    return _unique(text, [pat.sub(lambda _m, a=a: a, text) for a in _choose(rng, alternatives, n)])


def change_names(text: str, rng: np.random.Generator, names: Sequence[str] = lex.FIRST_NAMES,
                 n: int = 3) -> list[str]:
    """Replace a first name found in ``text`` (case-sensitive, whole word) by ``n`` other names."""
    return _replace_one(text, rng, [tuple(names)], n)


def change_locations(text: str, rng: np.random.Generator, cities: Sequence[str] = lex.CITIES,
                     countries: Sequence[str] = lex.COUNTRIES, n: int = 3) -> list[str]:
    """Replace a city (by other cities) or a country (by other countries) found in ``text``."""
    return _replace_one(text, rng, [tuple(cities), tuple(countries)], n)


# ------------------------------------------------------------------- numbers
def _number_alternatives(value: int) -> list[int]:
    lo, hi = math.ceil(value * 0.8), math.floor(value * 1.2)
    return [v for v in range(max(lo, 0), hi + 1) if v != value]


def change_numbers(text: str, rng: np.random.Generator, n: int = 3) -> list[str]:
    """Replace an integer by ``n`` random different integers within +-20% of it.

    Decimals, times ("10:30"), fractions/dates ("9/11") and tokens such as "3D" or
    "1970s" are left alone; so are integers with no other integer in their 20%
    radius (0-4) and integers written with a leading zero.
    """
    values: list[str] = []
    for m in _INT_RE.finditer(text):
        tok = m.group(1)
        if tok not in values and not (len(tok) > 1 and tok.startswith("0")) and _number_alternatives(int(tok)):
            values.append(tok)
    if not values:
        return []
    tok = values[int(rng.integers(len(values)))]
    alts = _number_alternatives(int(tok))
    pat = re.compile(r"(?<![\w.,:/$-])" + tok + r"(?![\w]|[.,:/]\d)")
    return _unique(text, [pat.sub(str(v), text) for v in _choose(rng, alts, n)])


# ------------------------------------------------------------------- phrases
def add_phrase(text: str, rng: np.random.Generator, phrases: Sequence[str], n: int = 3) -> list[str]:
    """Append ``n`` different phrases to the end of ``text`` (closing it with '.' if needed)."""
    base = text.rstrip()
    if not base:
        return []
    if base[-1] not in _SENT_END + "\"')\u201d\u2019":
        base = base.rstrip(_TRAILING_PUNCT) + "."
    return _unique(text, [f"{base} {p}" for p in _choose(rng, list(phrases), n)])


def add_positive_phrase(text: str, rng: np.random.Generator, phrases: Sequence[str] = lex.POSITIVE_PHRASES,
                        n: int = 3) -> list[str]:
    """Append very positive phrases ("I loved it.") to the end of ``text``."""
    return add_phrase(text, rng, phrases, n)


def add_negative_phrase(text: str, rng: np.random.Generator, phrases: Sequence[str] = lex.NEGATIVE_PHRASES,
                        n: int = 3) -> list[str]:
    """Append very negative phrases ("I hated it.") to the end of ``text``."""
    return add_phrase(text, rng, phrases, n)


# ============================================================= URLs and handles
_ID_CHARS = string.ascii_letters + string.digits


def _insert(text: str, piece: str, position: str, rng: np.random.Generator) -> str:
    """``piece`` added at the start, the end or a random word boundary of the (stripped) text."""
    core = text.strip()
    lead, trail = text[:len(text) - len(text.lstrip())], text[len(text.rstrip()):]
    if position == "random":
        bounds = [0] + [m.start() for m in re.finditer(r"\s+", core)] + [len(core)]
        at = bounds[int(rng.integers(len(bounds)))]
    else:
        at = 0 if position == "start" else len(core)
    if at == 0:
        new = f"{piece} {core}"
    elif at == len(core):
        new = f"{core} {piece}"
    else:
        new = f"{core[:at]} {piece}{core[at:]}"
    return lead + new + trail


def _check_position(position: str) -> None:
    if position not in ("start", "end", "random"):
        raise ValueError(f"position must be 'start', 'end' or 'random', got {position!r}")


def add_url(text: str, rng: np.random.Generator, n: int = 3, position: str = "end", length: int = 10) -> list[str]:
    """Add ``n`` random short URLs ("https://t.co/" + ``length`` random letters and digits),
    one per variant, at the end, the start or a random word boundary (``position``:
    "end", "start", "random") -- CheckList's "add random URLs and handles".

    With ``rng = np.random.default_rng(0)`` (fresh for each example):

    >>> add_url("Great movie!", rng, n=1)
    ['Great movie! https://t.co/0NFqtcebkY']
    >>> add_url("Great movie!", rng, n=1, position="start", length=6)
    ['https://t.co/0NFqtc Great movie!']
    """
    _check_position(position)
    if not text.strip():
        return []
    out = []
    for _ in range(n):
        url = "https://t.co/" + "".join(_ID_CHARS[k] for k in rng.integers(0, len(_ID_CHARS), size=length))
        out.append(_insert(text, url, position, rng))
    return _unique(text, out)


def add_handle(text: str, rng: np.random.Generator, n: int = 3, position: str = "start",
               names: Sequence[str] = lex.FIRST_NAMES, digits: int = 2) -> list[str]:
    """Add a Twitter-style handle: "@" + a name from ``names`` (``n`` different ones, one per
    variant; spaces and punctuation dropped) + ``digits`` random digits, at the start
    (a reply), the end or a random word boundary.

    With ``rng = np.random.default_rng(0)`` (fresh for each example):

    >>> add_handle("Loved it.", rng, n=1)
    ['@Lucia65 Loved it.']
    >>> add_handle("Loved it.", rng, n=1, position="end", digits=0)
    ['Loved it. @Lucia']
    """
    _check_position(position)
    if not text.strip():
        return []
    out = []
    for name in _choose(rng, list(names), n):
        handle = "@" + re.sub(r"\W", "", name)
        if handle == "@":
            continue
        if digits > 0:
            handle += "".join(str(int(d)) for d in rng.integers(0, 10, size=digits))
        out.append(_insert(text, handle, position, rng))
    return _unique(text, out)


# ========================================================= synonyms and antonyms
_AN_EXCEPTIONS = ("hour", "honest", "honor", "honour", "heir")
_A_EXCEPTIONS = ("unique", "unit", "univers", "uniform", "unicorn", "union", "unison", "use", "usu", "uti", "eu",
                 "one", "once", "ubiq")


def _article_for(word: str) -> str:
    """ "a" or "an" before ``word`` (by its spelling, with the common exceptions)."""
    w = word.lower()
    if w.startswith(_AN_EXCEPTIONS) or (w[:1] in "aeiou" and not w.startswith(_A_EXCEPTIONS)):
        return "an"
    return "a"


@functools.lru_cache(maxsize=8)
def _alternatives_table(groups: tuple[tuple[str, ...], ...]) -> tuple[dict[str, tuple[str, ...]], re.Pattern | None]:
    """word (lower case) -> its alternatives: the other words of its groups (synonyms) or
    the other word of each pair it is in (antonyms, both directions); and a pattern matching
    those words (whole words, any case; group 1-2: a preceding "a"/"an" and the space after it)."""
    table: dict[str, list[str]] = {}
    for g in groups:
        for w in g:
            alts = table.setdefault(w.lower(), [])
            for a in g:
                if a.lower() != w.lower() and a not in alts:
                    alts.append(a)
    table = {k: tuple(v) for k, v in table.items() if v}
    if not table:
        return table, None
    alts_re = "|".join(sorted((re.escape(k) for k in table), key=len, reverse=True))
    pat = re.compile(r"(?<![\w'\u2019-])(?:(a|an|A|An|AN)(\s+))?((?i:" + alts_re + r"))(?![\w-]|['\u2019]\w)")
    return table, pat


def _case_matches(src: str, key: str, before: str) -> bool:
    """``src`` is ``key`` in lower case, in upper case, or capitalised at the start of a sentence
    (``before``: the text before it) -- not a capitalised name or title ("Doctor Who")."""
    if src == key or (len(src) > 1 and src == key.upper()):
        return True
    return src == key[:1].upper() + key[1:] and re.search(r"(?:^|[.!?:])[\s\"'\u201c\u2018(\[-]*$", before) is not None


def _swap_word(text: str, rng: np.random.Generator, groups: Sequence[Sequence[str]], n: int) -> list[str]:
    """Pick one word of ``groups`` found in text (whole word; lower case, upper case, or
    capitalised at the start of a sentence); return up to ``n`` variants replacing all its
    occurrences by an alternative, keeping the case of the first letter and fixing a
    preceding "a"/"an"."""
    table, pat = _alternatives_table(tuple(map(tuple, groups)))
    if pat is None:
        return []
    found: list[str] = []
    for m in pat.finditer(text):
        key = m.group(3).lower()
        if _case_matches(m.group(3), key, text[:m.start(1) if m.group(1) else m.start(3)]) and key not in found:
            found.append(key)
    if not found:
        return []
    key = found[int(rng.integers(len(found)))]
    out = []
    for alt in _choose(rng, list(table[key]), n):
        def sub(m, alt=alt):
            src = m.group(3)
            if src.lower() != key or not _case_matches(src, key, m.string[:m.start(1) if m.group(1) else m.start(3)]):
                return m.group(0)
            repl = case_like(src, alt) if src[:1].isupper() else alt
            if m.group(1) is None:
                return repl
            return case_like(m.group(1), _article_for(alt)) + m.group(2) + repl
        out.append(pat.sub(sub, text))
    return _unique(text, out)


def synonyms(text: str, rng: np.random.Generator, groups: Sequence[Sequence[str]] = lex.SYNONYMS,
             n: int = 3) -> list[str]:
    """Replace one word that has synonyms in ``groups`` (default ``lexicons.SYNONYMS``) by up to
    ``n`` of them, one per variant (every occurrence of that word; whole words; the case of
    the first letter kept; "a"/"an" before it fixed).  The word is drawn from those found.

    With ``rng = np.random.default_rng(0)`` (fresh for each example):

    >>> synonyms("The movie was great.", rng, n=2)   # "great" drawn of "movie" and "great"
    ['The movie was fantastic.', 'The movie was terrific.']
    >>> synonyms("It was so boring.", rng, n=2)
    ['It was so dull.', 'It was so tedious.']
    """
    return _swap_word(text, rng, groups, n)


def antonyms(text: str, rng: np.random.Generator, pairs: Sequence[Sequence[str]] = lex.ANTONYMS,
             n: int = 3) -> list[str]:
    """Replace one word that has an antonym in ``pairs`` (default ``lexicons.ANTONYMS``, used
    in both directions) by its antonym(s), up to ``n`` variants (every occurrence of that
    word; whole words; the case of the first letter kept; "a"/"an" before it fixed).

    >>> antonyms("I loved the movie.", rng)
    ['I hated the movie.']
    >>> antonyms("It is an awful film.", rng)
    ['It is an excellent film.']
    """
    return _swap_word(text, rng, pairs, n)


# ===================================================================== registry
@dataclass(frozen=True)
class Perturbation:
    """A perturbation callable by name: ``fn(text, rng, **params)``.

    ``params`` maps each parameter to its default (a word-list parameter's default is
    the name of a lexicon in :mod:`beluga.suites.lexicons`; None: required).
    ``kind`` is "any" (one text) or "pair" (only meaningful on sentence pairs).
    ``types`` says what each parameter accepts (see :func:`check_params`).
    """

    name: str
    fn: Callable[..., list[str]]
    params: dict[str, Any]
    description: str
    kind: str = "any"
    types: dict[str, str] = field(default_factory=dict, repr=False, compare=False)


#: the ranges of the integer parameters (docs/SUITE_FORMAT.md, Limits): variants per case (``n``, and a spec's
#: ``max_perturbations``), a URL's length, a handle's digits -- a value outside is one line naming the field
MAX_VARIANTS = 100
MAX_URL_LENGTH = 200
MAX_DIGITS = 18

# parameter types: "int>=K" / "int:K..M", "bool", "choice:a|b", "words" (a list of strings or a lexicon
# name), "pairs" (a list of two-word lists or a lexicon name), "groups" (lists of 2+ words)
_N = ("n", 3, f"int:1..{MAX_VARIANTS}")
_POSITION = "choice:start|end|random"


def _entry(fn, description: str, *params: tuple[str, Any, str], kind: str = "any") -> Perturbation:
    return Perturbation(name=fn.__name__, fn=fn, params={p: d for p, d, _ in params}, description=description,
                        kind=kind, types={p: t for p, _, t in params})


PERTURBATIONS: dict[str, Perturbation] = {p.name: p for p in (
    _entry(typos, "Swap two adjacent letters inside a word (one swap per variant).", _N),
    _entry(contractions, "Expand every contraction (\"isn't\" -> \"is not\") and/or contract every expansion.",
           ("pairs", "contractions", "pairs")),
    _entry(punctuation, "Strip the trailing punctuation and/or end the sentence with a period."),
    _entry(change_names, "Replace a first name by other first names.", ("names", "first_names", "words"), _N),
    _entry(change_locations, "Replace a city by other cities, or a country by other countries.",
           ("cities", "cities", "words"), ("countries", "countries", "words"), _N),
    _entry(change_numbers, "Replace an integer by other integers within +-20% of it.", _N),
    _entry(add_phrase, "Append a phrase from a word list to the end of the text.", ("phrases", None, "words"), _N),
    _entry(add_positive_phrase, "Append a very positive phrase (\"I loved it.\") to the end of the text.",
           ("phrases", "positive_phrases", "words"), _N),
    _entry(add_negative_phrase, "Append a very negative phrase (\"I hated it.\") to the end of the text.",
           ("phrases", "negative_phrases", "words"), _N),
    _entry(add_negation, "Negate the main clause (\"is\" -> \"is not\", \"loved\" -> \"did not love\").",
           ("contracted", False, "bool")),
    _entry(remove_negation, "Remove a negation (\"isn't\" -> \"is\", \"doesn't like\" -> \"likes\", drop \"never\")."),
    _entry(add_url, "Add a random URL (https://t.co/...) at the end, the start or a random word boundary.",
           _N, ("position", "end", _POSITION), ("length", 10, f"int:1..{MAX_URL_LENGTH}")),
    _entry(add_handle, "Add a Twitter-style handle (@name42) at the start, the end or a random word boundary.",
           _N, ("position", "start", _POSITION), ("names", "first_names", "words"),
           ("digits", 2, f"int:0..{MAX_DIGITS}")),
    _entry(synonyms, "Replace a word by its synonyms from a list of groups (first-letter case kept).",
           ("groups", "synonyms", "groups"), _N),
    _entry(antonyms, "Replace a word by its antonym(s) from a list of pairs (first-letter case kept).",
           ("pairs", "antonyms", "pairs"), _N),
)}


def _known() -> str:
    return ", ".join(PERTURBATIONS)


def _lookup(name, where: str | None) -> Perturbation:
    if isinstance(name, str) and name in PERTURBATIONS:
        return PERTURBATIONS[name]
    prefix = f"{where}: " if where else ""
    raise ConfigError(f"{prefix}unknown perturbation {_short(name)} (known: {_known()})")


def get_perturbation(name: str) -> Perturbation:
    """The registered perturbation ``name``; ConfigError (one line listing the known ones) otherwise."""
    return _lookup(name, None)


def _short(value, limit: int = 60) -> str:
    r = " ".join(repr(value).split())
    return r if len(r) <= limit else r[:limit - 3] + "..."


def _resolve_lexicon(value: str, grouped: bool, lexicons: Mapping[str, Sequence] | None):
    """The list a lexicon name stands for: a user lexicon (exact name) first, then a built-in one
    (case-insensitive: "POSITIVE_PHRASES" or "positive_phrases")."""
    if lexicons and value in lexicons:
        return lexicons[value]
    table = lex.WORD_GROUPS if grouped else lex.LEXICONS
    if value.lower() in table:
        return table[value.lower()]
    other = lex.LEXICONS if grouped else lex.WORD_GROUPS
    if value.lower() in other:
        raise ValueError(f"lexicon '{value}' is a list of {'words' if grouped else 'word groups'}, not of "
                         f"{'word groups' if grouped else 'words'}")
    known = [*(lexicons or {}), *table]
    raise ValueError(f"unknown lexicon '{value}' (known: {', '.join(known)})")


def _check_value(value, typ: str, lexicons):
    """The checked (and, for word lists, resolved) value; ValueError with the reason otherwise."""
    if typ.startswith("int>="):
        low = int(typ[5:])
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"must be an integer >= {low}, got {_short(value)}")
        return value
    if typ.startswith("int:"):
        low, high = (int(x) for x in typ[4:].split(".."))
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"must be an integer from {low} to {high}, got {_short(value)}")
        return value
    if typ == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, got {_short(value)}")
        return value
    if typ.startswith("choice:"):
        choices = typ[7:].split("|")
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {_short(value)}")
        return value
    grouped = typ in ("pairs", "groups")
    source = value
    if isinstance(value, str):
        value = _resolve_lexicon(value, grouped, lexicons)
    what = {"words": "a non-empty list of strings", "pairs": "a non-empty list of [word, word] pairs",
            "groups": "a non-empty list of word groups (lists of 2 or more strings)"}[typ]
    how = f"{what} or a lexicon name, got {_short(source)}" if source is value else \
        f"{what}: lexicon {source!r} is not"
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise ValueError(f"must be {how}")
    if not grouped:
        if not all(isinstance(w, str) and w for w in value):
            raise ValueError(f"must be {how}")
        return tuple(value)
    out = []
    for g in value:
        ok = (isinstance(g, Sequence) and not isinstance(g, str) and all(isinstance(w, str) and w for w in g)
              and (len(g) == 2 if typ == "pairs" else len(g) >= 2))
        if not ok:
            raise ValueError(f"must be {how}")
        out.append(tuple(g))
    out = tuple(out)
    return value if out == value else out  # a built-in lexicon stays the very same object


def check_params(name: str, params: Mapping[str, Any] | None, where: str,
                 lexicons: Mapping[str, Sequence] | None = None) -> dict[str, Any]:
    """The complete parameters of perturbation ``name``: ``params`` checked, defaults filled,
    and word lists given by lexicon name resolved to tuples (``lexicons``, e.g. a spec's own,
    are looked up before the built-in ones).  ConfigError, one line naming ``where``, the
    perturbation and the parameter, for an unknown perturbation or parameter, a missing
    required one or a value of the wrong type."""
    p = _lookup(name, where)
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise ConfigError(f"{where}: perturbation '{name}': parameters must be a mapping, got {_short(params)}")
    for k in params:
        if k not in p.params:
            raise ConfigError(f"{where}: perturbation '{name}' has no parameter {_short(k)} "
                              f"(known: {', '.join(p.params) or 'none'})")
    out = {}
    for k, default in p.params.items():
        value = params.get(k)
        if value is None:
            if default is None:
                raise ConfigError(f"{where}: perturbation '{name}': parameter '{k}' is required "
                                  f"({p.types[k]}: a list or a lexicon name)")
            value = default
        try:
            out[k] = _check_value(value, p.types[k], lexicons)
        except ValueError as e:
            raise ConfigError(f"{where}: perturbation '{name}': parameter '{k}': {e}") from None
    return out


def perturber(name: str, params: Mapping[str, Any], where: str) -> Callable[[str, np.random.Generator], list[str]]:
    """Perturbation ``name`` with ``params`` checked and completed once (:func:`check_params`; errors
    name ``where``): a function text, rng -> distinct strings different from ``text``, [] when it
    does not apply; deterministic given the state of ``rng``."""
    p = _lookup(name, "perturb")
    checked = check_params(name, params, where)
    return lambda text, rng: _unique(text, p.fn(text, rng, **checked))


def perturb(name: str, text: str, rng: np.random.Generator, **params) -> list[str]:
    """Apply perturbation ``name`` to ``text`` with ``params`` (checked and completed by
    :func:`check_params`): distinct strings different from ``text``, [] when it does not
    apply; deterministic given the state of ``rng``."""
    return perturber(name, params, f"perturb({name!r})")(text, rng)
