"""Pure perturbation functions for INV/DIR tests.

Every function takes ``(text, rng)`` (plus lexicon arguments with sensible
defaults) and returns a list of perturbed strings, each different from ``text``
and from each other; the list is empty when the perturbation does not apply.
All randomness comes from the ``numpy.random.Generator`` passed in, so the
result is deterministic given the generator state.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

import numpy as np

from beluga.suites import lexicons as lex

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
