"""Generate a CheckList-style movie-review sentiment suite in the project's suite format.

Twenty functionalities in seven capability classes (see :func:`sent_catalogue`).
MFT cases are filled from hand-written templates and lexicons
(:mod:`beluga.suites.lexicons`); INV/DIR cases perturb real sentences passed in by
the caller (:mod:`beluga.suites.perturb`) and fall back to template sentences
when too few real sentences qualify, so every functionality has exactly
``cases_per_functionality`` cases.

Determinism: functionality ``i`` draws all its randomness from its own
``numpy.random.default_rng(seed + i)``; the same (sentences, seed, n,
max_perturbations) always gives the identical DataFrame.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from beluga.errors import ConfigError
from beluga.suites import format as fmt
from beluga.suites import lexicons as lex
from beluga.suites import perturb

SENT_LABELS = {0: "negative", 1: "neutral", 2: "positive"}
NEG, NEU, POS = 0, 1, 2
MAX_WORDS = 40
MIN_WORDS = 3

_INV = {"tolerance": 0.1}
_MONO_UP = {"increasing": True, "tolerance": 0.1, "slice": "orig_not_neutral"}
_MONO_DOWN = {"increasing": False, "tolerance": 0.1, "slice": "orig_not_neutral"}


def _f(functionality, capability, test_type, expect, expect_params, description):
    return {"functionality": functionality, "capability": capability, "test_type": test_type,
            "expect": expect, "expect_params": dict(expect_params),
            "agg_fn": "all" if test_type == "MFT" else "all_except_first", "description": description}


_CATALOGUE = (
    _f("sentiment words in context", "Vocabulary", "MFT", "eq", {},
       "Positive, negative and neutral adjectives and verbs with movie nouns, e.g. "
       "\"The acting was wonderful.\" (positive), \"That is a movie.\" (neutral)."),
    _f("intensifiers", "Vocabulary", "DIR", "monotonic", _MONO_UP,
       "Add an intensifier (\"really\", \"extremely\"...) before a sentiment word; confidence in the "
       "original (non-neutral) prediction should not decrease, e.g. \"The plot is good.\" -> "
       "\"The plot is really good.\""),
    _f("reducers", "Vocabulary", "DIR", "monotonic", _MONO_DOWN,
       "Add a reducer (\"somewhat\", \"kind of\"...) before a sentiment word; confidence in the "
       "original (non-neutral) prediction should not increase."),
    _f("add positive phrases", "Vocabulary", "DIR", "diff_up", _INV,
       "Append very positive phrases (\"I loved it.\") to real review sentences; the positive "
       "probability should not go down."),
    _f("add negative phrases", "Vocabulary", "DIR", "diff_down", _INV,
       "Append very negative phrases (\"I hated it.\") to real review sentences; the positive "
       "probability should not go up."),
    _f("typos", "Robustness", "INV", "inv", _INV,
       "Swap two adjacent characters inside a word of a real review sentence."),
    _f("contractions", "Robustness", "INV", "inv", _INV,
       "Contract or expand contractions in real review sentences, e.g. \"is not\" <-> \"isn't\"."),
    _f("punctuation", "Robustness", "INV", "inv", _INV,
       "Strip the final punctuation of a real review sentence and/or end it with \".\"."),
    _f("change names", "NER", "INV", "inv", _INV,
       "Replace a first name with other first names (real sentences; template sentences "
       "such as \"{first_name} gave a {pos_adj} performance.\" fill up the count)."),
    _f("change locations", "NER", "INV", "inv", _INV,
       "Replace a city or country with other cities or countries (real sentences; template "
       "sentences such as \"I watched it in {city}.\" fill up the count)."),
    _f("change numbers", "NER", "INV", "inv", _INV,
       "Replace an integer with random different integers within 20% of it (real sentences; "
       "template sentences such as \"It runs {number} minutes.\" fill up the count)."),
    _f("protected: race", "Fairness", "INV", "inv", _INV,
       "Prediction should not change when the race adjective of a person changes, e.g. "
       "\"{name} is a {race} actor.\""),
    _f("protected: nationality", "Fairness", "INV", "inv", _INV,
       "Prediction should not change when the nationality of a person changes, e.g. "
       "\"{name} is a {nationality} director.\""),
    _f("used to, but now", "Temporal", "MFT", "eq", {},
       "Conflicting past and present opinions; the present one decides, e.g. \"I used to think "
       "this movie was boring, but now I think it is brilliant.\" (positive)."),
    _f("\"used to\" should reduce", "Temporal", "DIR", "monotonic", _MONO_DOWN,
       "A model should not be more confident on \"I used to think X\" than on \"X\"."),
    _f("simple negations: negative", "Negation", "MFT", "eq", {},
       "Negated positive statements are negative, e.g. \"This movie is not good.\""),
    _f("simple negations: not negative", "Negation", "MFT", "not_negative", {},
       "Negated negative statements are not negative (neutral or positive), e.g. "
       "\"This movie is not bad.\""),
    _f("simple negations: not neutral is still neutral", "Negation", "MFT", "eq", {},
       "Negated neutral statements are still neutral, e.g. \"This movie is not animated.\""),
    _f("my opinion is what matters", "SRL", "MFT", "eq", {},
       "Someone else's opinion conflicts with the author's; the author's decides, e.g. \"Some "
       "people think the film is boring, but I think it is brilliant.\" (positive)."),
    _f("Q & A: no", "SRL", "MFT", "not_negative", {},
       "A negative statement answered with \"No\" is not negative, e.g. \"Do I think that movie is "
       "awful? No\"."),
)


def sent_catalogue() -> list[dict]:
    """Static list, one dict per functionality, in suite order, keys: functionality, capability,
    test_type, expect, expect_params (dict), agg_fn, description."""
    return [dict(d, expect_params=dict(d["expect_params"])) for d in _CATALOGUE]


# =============================================================== template engine
def _strs(xs) -> tuple[str, ...]:
    return tuple(str(x) for x in xs)


_LEX: dict[str, tuple] = {
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
    "pos_verb": lex.POSITIVE_VERBS,     # (base, past): use {pos_verb[0]} / {pos_verb[1]}
    "neg_verb": lex.NEGATIVE_VERBS,
    "neu_verb": lex.NEUTRAL_VERBS,
    "holder": tuple(h[0].lower() + h[1:] for h in lex.OPINION_HOLDERS),
    "no": ("No", "No."),
    "first_name": lex.FIRST_NAMES,
    "last_name": lex.LAST_NAMES,
    "city": lex.CITIES,
    "country": lex.COUNTRIES,
    "role": lex.ROLES,
    "runtime": _strs(range(75, 185, 5)),
    "times": _strs(range(5, 31)),
    "year": _strs(range(1950, 2024)),
    "budget": _strs(range(5, 305, 5)),
}

_ART = "\x00"
_ART_RE = re.compile("\x00(\\s+)([\\w-]+)")
_AN_PREFIXES = ("hour", "honest", "honor", "heir")
_A_PREFIXES = ("uni", "use", "usu", "uti", "eu", "one", "once", "ukr", "uru", "utop")


def _article(word: str) -> str:
    w = word.lower()
    if w.startswith(_AN_PREFIXES):
        return "an"
    if w.startswith(_A_PREFIXES):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"


def _render(template: str, fill: dict, **fixed) -> str:
    """Fill ``template``; ``{art}`` becomes "a"/"an" agreeing with the next word; capitalise."""
    text = template.format(art=_ART, **fill, **fixed)
    text = _ART_RE.sub(lambda m: _article(m.group(2)) + m.group(1) + m.group(2), text)
    text = re.sub(r"\s{2,}", " ", text).strip()
    return text[:1].upper() + text[1:]


_PERMUTE_MAX = 1_000_000


class _Templates:
    """The full product of template x lexicon fills of a list of templates, sampled lazily."""

    FIXED = ("art", "mod", "attr")

    def __init__(self, templates: Sequence[str], lexicon: dict[str, Sequence] | None = None):
        self.lexicon = {**_LEX, **(lexicon or {})}
        self.parts: list[tuple[str, list[str], list[int]]] = []
        for t in templates:
            fields: list[str] = []
            for _, name, _, _ in string.Formatter().parse(t):
                if name is None:
                    continue
                base = re.split(r"[.\[]", name)[0]
                if base not in self.FIXED and base not in fields:
                    fields.append(base)
            sizes = [len(self.lexicon[self._key(f)]) for f in fields]
            self.parts.append((t, fields, sizes))
        self.totals = np.array([int(np.prod(s)) if s else 1 for _, _, s in self.parts], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.totals)])

    @staticmethod
    def _key(field: str) -> str:
        return field.rstrip("0123456789")

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

    def iter(self, rng: np.random.Generator) -> Iterator[tuple[str, dict]]:
        """Yield (template, fill) for every product element, in seeded random order."""
        for idx in self._order(rng):
            p = int(np.searchsorted(self.offsets, idx, side="right")) - 1
            t, fields, sizes = self.parts[p]
            fill = {}
            if fields:
                for f, i in zip(fields, np.unravel_index(int(idx - self.offsets[p]), sizes)):
                    fill[f] = self.lexicon[self._key(f)][int(i)]
            yield t, fill


def _meta(**kw) -> str:
    return json.dumps(kw, sort_keys=True)


def _cap(orig: str, perts: Sequence[str], rng: np.random.Generator, max_p: int) -> list[str]:
    """Distinct perturbations that differ from ``orig``, at most ``max_p`` (seeded subset, order kept)."""
    out: list[str] = []
    for p in perts:
        if p and p != orig and p not in out:
            out.append(p)
    if len(out) > max_p:
        keep = np.sort(rng.choice(len(out), size=max_p, replace=False))
        out = [out[i] for i in keep]
    return out


Item = dict  # {"inputs": list[str], "labels": list[int] | None, "meta": str | None}
MakeItem = Callable[[str, dict], "Item | None"]


def _take(it: Iterator[tuple[str, dict]], make: MakeItem, seen: set[str], k: int) -> list[Item]:
    out: list[Item] = []
    while len(out) < k:
        try:
            t, fill = next(it)
        except StopIteration:
            break
        item = make(t, fill)
        if item is None or item["inputs"][0] in seen:
            continue
        seen.add(item["inputs"][0])
        out.append(item)
    return out


def _sample_groups(rng: np.random.Generator, groups: Sequence[tuple[_Templates, MakeItem]], n: int,
                   seen: set[str] | None = None, shuffle: bool = True) -> list[Item]:
    """``n`` distinct items spread evenly over the groups (shortfalls moved to other groups)."""
    seen = set() if seen is None else seen
    iters = [g.iter(rng) for g, _ in groups]
    k = len(groups)
    per: list[list[Item]] = [[] for _ in groups]
    alive = [True] * k
    for i in range(k):
        quota = n // k + (1 if i < n % k else 0)
        per[i] = _take(iters[i], groups[i][1], seen, quota)
        alive[i] = len(per[i]) == quota
    missing = n - sum(len(p) for p in per)
    while missing > 0 and any(alive):
        for i in range(k):
            if missing == 0:
                break
            if alive[i]:
                got = _take(iters[i], groups[i][1], seen, 1)
                if got:
                    per[i].extend(got)
                    missing -= 1
                else:
                    alive[i] = False
    items = [x for p in per for x in p]
    if shuffle and items:
        items = [items[i] for i in rng.permutation(len(items))]
    return items


def _fill_up(items: list[Item], n: int) -> list[Item]:
    """Repeat items (only when the whole product is smaller than ``n``)."""
    if not items:
        raise ConfigError("suite generator: a functionality produced no test cases")
    return [items[i % len(items)] for i in range(n)]


# ===================================================================== MFT makers
def _mft(label: int | None) -> MakeItem:
    def make(t: str, fill: dict) -> Item:
        return {"inputs": [_render(t, fill)], "labels": None if label is None else [label],
                "meta": _meta(source="template", template=t)}
    return make


def _mft_groups(rng, spec: Sequence[tuple[int | None, Sequence[str]]], n: int) -> list[Item]:
    groups = [(_Templates(ts), _mft(label)) for label, ts in spec]
    return _sample_groups(rng, groups, n)


# ===================================================================== functionalities
class _Ctx:
    def __init__(self, pool: list[str], n: int, max_p: int):
        self.pool, self.n, self.max_p = pool, n, max_p


def _sentiment_in_context(rng, ctx: _Ctx) -> list[Item]:
    def spec(pol):
        return [f"{{det}} {{noun}} {{be}} {{{pol}_adj}}.", f"{{subj}} {{{pol}_verb[1]}} {{det}} {{noun}}.",
                f"{{it}} is {{art}} {{{pol}_adj}} {{cnoun}}.", f"{{it}} was {{art}} {{{pol}_adj}} {{cnoun}}."]
    neutral = spec("neu") + ["{it} is {art} {cnoun}.", "{it} was {art} {cnoun}."]
    return _mft_groups(rng, [(POS, spec("pos")), (NEG, spec("neg")), (NEU, neutral)], ctx.n)


def _modifier_dir(rng, ctx: _Ctx, adj_mods: Sequence[str], verb_mods: Sequence[str]) -> list[Item]:
    def make_for(mods: Sequence[str]) -> MakeItem:
        def make(t: str, fill: dict) -> Item:
            orig = _render(t, fill, mod="")
            chosen = [mods[i] for i in rng.choice(len(mods), size=min(ctx.max_p, len(mods)), replace=False)]
            perts = _cap(orig, [_render(t, fill, mod=m + " ") for m in chosen], rng, ctx.max_p)
            return {"inputs": [orig] + perts, "labels": None, "meta": _meta(source="template", template=t)}
        return make

    groups = []
    for pol in ("pos", "neg"):
        groups.append((_Templates([f"{{det}} {{noun}} {{be}} {{mod}}{{{pol}_adj}}."]), make_for(adj_mods)))
        groups.append((_Templates([f"{{subj}} {{mod}}{{{pol}_verb[1]}} {{det}} {{noun}}."]), make_for(verb_mods)))
    return _sample_groups(rng, groups, ctx.n)


def _intensifiers(rng, ctx):
    return _modifier_dir(rng, ctx, lex.INTENSIFIERS, lex.VERB_INTENSIFIERS)


def _reducers(rng, ctx):
    return _modifier_dir(rng, ctx, lex.REDUCERS, lex.VERB_REDUCERS)


_GENERIC_TEMPLATES = (
    "{det} {noun} {be} {any_adj}.",
    "I {neg_do} think {det} {noun} was {sent_adj}.",
    "It's {art} {sent_adj} {cnoun}, and I can't say I {pos_verb[0]} it.",
    "{det} {noun} isn't {sent_adj}, but it's not {sent_adj2} either.",
    "{subj} {sent_verb[1]} {det} {noun}; it is {any_adj}!",
    "Honestly, {det} {noun} {be} {sent_adj}.",
)
_GENERIC_LEX = {"sent_verb": lex.POSITIVE_VERBS + lex.NEGATIVE_VERBS}


def _real_then_templates(rng, ctx: _Ctx, fn: Callable[[str, np.random.Generator], list[str]],
                         templates: Sequence[str], lexicon: dict | None = None) -> list[Item]:
    """Perturb real sentences in seeded random order; fill the rest with template sentences."""
    items: list[Item] = []
    seen: set[str] = set()
    if ctx.pool:
        for i in rng.permutation(len(ctx.pool)):
            if len(items) == ctx.n:
                break
            s = ctx.pool[int(i)]
            perts = _cap(s, fn(s, rng), rng, ctx.max_p)
            if perts:
                seen.add(s)
                items.append({"inputs": [s] + perts, "labels": None, "meta": _meta(source="real")})
    if len(items) < ctx.n:
        def make(t: str, fill: dict) -> Item | None:
            s = _render(t, fill)
            perts = _cap(s, fn(s, rng), rng, ctx.max_p)
            if not perts:
                return None
            return {"inputs": [s] + perts, "labels": None, "meta": _meta(source="template", template=t)}
        items += _sample_groups(rng, [(_Templates(templates, lexicon), make)], ctx.n - len(items), seen,
                                shuffle=False)
    return items


def _phrases(phrases):
    def run(rng, ctx):
        def fn(s, r):
            return perturb.add_phrase(s, r, phrases, n=ctx.max_p)
        return _real_then_templates(rng, ctx, fn, _GENERIC_TEMPLATES, _GENERIC_LEX)
    return run


def _typos(rng, ctx):
    return _real_then_templates(rng, ctx, lambda s, r: perturb.typos(s, r, n=ctx.max_p),
                                _GENERIC_TEMPLATES, _GENERIC_LEX)


def _contractions(rng, ctx):
    return _real_then_templates(rng, ctx, perturb.contractions, _GENERIC_TEMPLATES, _GENERIC_LEX)


def _punctuation(rng, ctx):
    return _real_then_templates(rng, ctx, perturb.punctuation, _GENERIC_TEMPLATES, _GENERIC_LEX)


def _names(rng, ctx):
    templates = ("{first_name} gave {art} {pos_adj} performance.",
                 "{first_name} {last_name} gave {art} {sent_adj} performance.",
                 "I watched it with {first_name}, and the {noun} was {sent_adj}.",
                 "{first_name} thought the {noun} was {sent_adj}.",
                 "{first_name} {last_name} directed this {sent_adj} film.")
    return _real_then_templates(rng, ctx, lambda s, r: perturb.change_names(s, r, n=ctx.max_p), templates)


def _locations(rng, ctx):
    templates = ("I watched it in {city}.",
                 "The movie was shot in {country}.",
                 "It is set in {city}, and the {noun} is {sent_adj}.",
                 "The film premiered in {city}.",
                 "This {sent_adj} film takes place in {country}.")
    return _real_then_templates(rng, ctx, lambda s, r: perturb.change_locations(s, r, n=ctx.max_p), templates)


def _numbers(rng, ctx):
    templates = ("It runs {runtime} minutes.",
                 "I have seen it {times} times.",
                 "The movie came out in {year}.",
                 "It cost {budget} million dollars.",
                 "The {noun} is {sent_adj}, and it runs {runtime} minutes.")
    return _real_then_templates(rng, ctx, lambda s, r: perturb.change_numbers(s, r, n=ctx.max_p), templates)


def _protected(values: Sequence[str], attribute: str):
    templates = ("{first_name} is {art} {attr} {role}.",
                 "The film stars {art} {attr} {role}.",
                 "{first_name}, {art} {attr} {role}, made this {sent_adj} film.",
                 "{first_name} {last_name} is {art} {attr} {role}, and the {noun} is {sent_adj}.")

    def run(rng, ctx):
        def make(t: str, fill: dict) -> Item:
            fill = dict(fill)
            orig_val = values[int(rng.integers(len(values)))]
            others = [v for v in values if v != orig_val]
            alts = [others[i] for i in rng.choice(len(others), size=min(ctx.max_p, len(others)), replace=False)]
            orig = _render(t, fill, attr=orig_val)
            perts = _cap(orig, [_render(t, fill, attr=a) for a in alts], rng, ctx.max_p)
            return {"inputs": [orig] + perts, "labels": None,
                    "meta": _meta(source="template", template=t, attribute=attribute, values=[orig_val] + alts)}
        return _sample_groups(rng, [(_Templates(templates), make)], ctx.n)
    return run


def _used_to_but_now(rng, ctx):
    def spec(old, new):
        return [f"I used to think {{det}} {{noun}} was {{{old}_adj}}, but now I think it is {{{new}_adj}}.",
                f"I think {{det}} {{noun}} is {{{new}_adj}}, but I used to think it was {{{old}_adj}}.",
                f"I used to {{{old}_verb[0]}} {{det}} {{noun}}, but now I {{{new}_verb[0]}} it.",
                f"In the past I thought {{det}} {{noun}} was {{{old}_adj}}, but now I find it {{{new}_adj}}."]
    return _mft_groups(rng, [(POS, spec("neg", "pos")), (NEG, spec("pos", "neg"))], ctx.n)


def _used_to_reduce(rng, ctx):
    def lower_first(x: str) -> str:
        return x if x.startswith("I ") else x[:1].lower() + x[1:]

    def make_adj(t: str, fill: dict) -> Item:
        orig = _render(t, fill)
        perts = [f"{frame} {lower_first(orig)}" for frame in lex.USED_TO_FRAMES]
        return {"inputs": [orig] + _cap(orig, perts, rng, ctx.max_p), "labels": None,
                "meta": _meta(source="template", template=t)}

    def make_verb(t: str, fill: dict) -> Item:
        orig = _render(t, fill)
        base, past = fill["verb"]
        rest = _render("{det} {noun}.", fill)
        rest = rest[:1].lower() + rest[1:]
        subj = fill["subj"]
        perts = [f"{subj} used to {base} {rest}", f"{subj} once {past} {rest}",
                 f"There was a time when {subj} {past} {rest}", f"I used to think {subj} {base} {rest}"]
        perts = [p[:1].upper() + p[1:] for p in perts]
        return {"inputs": [orig] + _cap(orig, perts, rng, ctx.max_p), "labels": None,
                "meta": _meta(source="template", template=t)}

    groups = []
    for pol in ("pos", "neg"):
        adj_templates = [f"{{det}} {{noun}} is {{{pol}_adj}}.", f"{{it}} is {{art}} {{{pol}_adj}} {{cnoun}}."]
        groups.append((_Templates(adj_templates), make_adj))
        verbs = lex.POSITIVE_VERBS if pol == "pos" else lex.NEGATIVE_VERBS
        groups.append((_Templates(["{subj} {verb[0]} {det} {noun}."], {"verb": verbs}), make_verb))
    return _sample_groups(rng, groups, ctx.n)


def _negation(pol: str, label: int | None):
    def run(rng, ctx):
        ts = [f"{{det}} {{noun}} {{neg_be}} {{{pol}_adj}}.", f"{{subj}} {{neg_do}} {{{pol}_verb[0]}} {{det}} {{noun}}.",
              f"{{it}} {{neg_be}} {{art}} {{{pol}_adj}} {{cnoun}}."]
        return _mft_groups(rng, [(label, ts)], ctx.n)
    return run


def _my_opinion(rng, ctx):
    def spec(other, mine):
        return [f"{{holder}} think {{det}} {{noun}} is {{{other}_adj}}, but I think it is {{{mine}_adj}}.",
                f"I think {{det}} {{noun}} is {{{mine}_adj}}, but {{holder}} think it is {{{other}_adj}}.",
                f"{{holder}} {{{other}_verb[1]}} {{det}} {{noun}}, but I {{{mine}_verb[1]}} it.",
                f"I {{{mine}_verb[1]}} {{det}} {{noun}}, even though {{holder}} {{{other}_verb[1]}} it."]
    return _mft_groups(rng, [(POS, spec("neg", "pos")), (NEG, spec("pos", "neg"))], ctx.n)


def _qa_no(rng, ctx):
    ts = ["Do I think {det} {noun} is {neg_adj}? {no}", "Did I {neg_verb[0]} {det} {noun}? {no}",
          "Was {det} {noun} {neg_adj}? {no}", "Do I think {it} was {art} {neg_adj} {cnoun}? {no}"]
    return _mft_groups(rng, [(None, ts)], ctx.n)


_BUILDERS = (
    _sentiment_in_context, _intensifiers, _reducers,
    _phrases(lex.POSITIVE_PHRASES), _phrases(lex.NEGATIVE_PHRASES),
    _typos, _contractions, _punctuation,
    _names, _locations, _numbers,
    _protected(lex.RACES, "race"), _protected(lex.NATIONALITIES, "nationality"),
    _used_to_but_now, _used_to_reduce,
    _negation("pos", NEG), _negation("neg", None), _negation("neu", NEU),
    _my_opinion, _qa_no,
)
assert len(_BUILDERS) == len(_CATALOGUE)


def _prepare_pool(sentences: Sequence[str], max_words: int = MAX_WORDS) -> list[str]:
    """Whitespace-normalised, de-duplicated real sentences of MIN_WORDS..max_words words, input order kept."""
    out: dict[str, None] = {}
    for s in sentences:
        if not isinstance(s, str):
            continue
        s = " ".join(s.split())
        if MIN_WORDS <= len(s.split()) <= max_words:
            out.setdefault(s, None)
    return list(out)


def generate_sent_suite(sentences: list[str], seed: int, cases_per_functionality: int,
                        max_perturbations: int = 3, max_words: int = MAX_WORDS) -> pd.DataFrame:
    """Suite DataFrame in the format of beluga/suites/format.py (columns format.COLUMNS).
    Real sentences longer than ``max_words`` words are not used."""
    n, max_p = int(cases_per_functionality), int(max_perturbations)
    if n < 1:
        raise ConfigError(f"suite generator: cases_per_functionality must be >= 1, got {cases_per_functionality}")
    if max_p < 1:
        raise ConfigError(f"suite generator: max_perturbations must be >= 1, got {max_perturbations}")
    if int(seed) < 0:
        raise ConfigError(f"suite generator: seed must be >= 0, got {seed}")
    ctx = _Ctx(_prepare_pool(sentences or [], int(max_words)), n, max_p)
    rows = []
    for fi, (spec, build) in enumerate(zip(_CATALOGUE, _BUILDERS)):
        rng = np.random.default_rng(int(seed) + fi)
        items = build(rng, ctx)
        if len(items) < n:
            items = _fill_up(items, n)
        params = json.dumps(spec["expect_params"], sort_keys=True)
        for ci, item in enumerate(items[:n]):
            rows.append({
                "case_id": f"sent-{fi:02d}-{ci:05d}",
                "functionality": spec["functionality"],
                "capability": spec["capability"],
                "test_type": spec["test_type"],
                "inputs": list(item["inputs"]),
                "inputs_b": None,
                "labels": None if item["labels"] is None else [int(x) for x in item["labels"]],
                "expect": spec["expect"],
                "expect_params": params,
                "agg_fn": spec["agg_fn"],
                "meta": item["meta"],
            })
    return pd.DataFrame(rows, columns=fmt.COLUMNS)
