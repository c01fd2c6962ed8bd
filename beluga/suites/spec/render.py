"""Suite specs rendered into the project's suite format: the functionality table a spec declares
(:func:`catalogue`, :func:`declared`), the files and packages a rendered suite depends on (:func:`spec_files`,
:func:`uses_pool`, :func:`dataset_versions`), the sources' sentences (:func:`load_sources`) and the cases
(:func:`render_spec`; how a functionality's cases are made: :mod:`beluga.suites.spec`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import ConfigError
from beluga.core.tasks import get_task_type
from beluga.heads import head_of
from beluga.suites import perturb as perturbations
from beluga.suites import templates as tpl
from beluga.suites.format import COLUMNS
from beluga.suites.spec.core import (
    PERTURBED_SEGMENT,
    SEP,
    WORD_LIST_KINDS,
    Spec,
    expectation,
    group_lexicons,
    is_pair_task,
    is_source_lexicon,
    label_of,
    slot_values,
    spec_error,
    spec_location,
    template_segments,
)

_PAIR_SEP = " \n "   # joins the two segments a perturbation with apply_to: both sees as one text


# ---------------------------------------------------------------------------------- catalogue
def agg_of(func: dict) -> str:
    return func.get("agg") or ("all" if func["type"] == "MFT" else "all_except_first")


def spec_expectation(spec: Spec, func: dict) -> tuple[str, dict]:
    """(expectation name, parameters) as the suite stores them: a label name (``val``, ``label``, ``train.label``)
    as its number (a regression's parameters are numbers already)."""
    expect, params = expectation(func)
    if head_of(get_task_type(spec.task)).has_classes:
        for key in ("val", "label"):
            if key in params:
                params = {**params, key: label_of(spec, params[key], ["expect", key])}
        if isinstance(params.get("train"), dict) and params["train"].get("label") is not None:
            params = {**params, "train": {**params["train"],
                                          "label": label_of(spec, params["train"]["label"], ["expect", "train"])}}
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
                raise spec_error(spec, loc, "a pool source needs the task's i.i.d. pool (in the pipeline) or --source "
                                            "FILE (python -m beluga suite build)")
            cols = [src["pool"]] if isinstance(src["pool"], str) else list(src["pool"])
            missing = [c for c in cols if c not in pool.columns]
            if missing:
                raise spec_error(spec, [*loc, "pool"], f"the pool has no column {missing[0]!r} (it has "
                                                       f"{', '.join(map(str, pool.columns))})")
            vals = pool[cols].astype(str).to_numpy().tolist()
            out[name] = [v[0] for v in vals] if len(cols) == 1 else [tuple(v) for v in vals]
        elif "file" in src:
            out[name] = read_text_source(str(spec.base_dir / src["file"]), src.get("column"),
                                         spec_location(spec.path, spec.data, [*loc, "file"]))
        elif src["dataset"] == "rotten_tomatoes":
            from beluga.data.tables import load_rotten_tomatoes

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
    from beluga.core.io import read_parquet

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
        self.pair = is_pair_task(self.spec.task)
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
        fn = perturbations.perturber(p["name"], params, spec_location(spec.path, spec.data, self.loc))
        self._fns[id(p)] = fn
        return fn

    def _lexicon_values(self, name: str) -> tuple:
        value = self.spec.lexicons[name]
        if is_source_lexicon(value):
            _, source, cap_n = value
            texts = tpl.prepare_pool(self.ctx.texts.get(source) or [], self.ctx.max_words)
            return tuple(texts[:cap_n] if cap_n else texts)
        return tuple(value)

    def _apply(self, fn, segs: list[str], apply_to: str | None, rng) -> list[list[str]]:
        """The perturbed versions of an input (its segments), each a list of segments."""
        if not self.pair:
            return [[p] for p in fn(segs[0], rng)]
        target = apply_to or PERTURBED_SEGMENT[self.spec.task]
        if target in ("first", "context", "premise"):
            return [[p, segs[1]] for p in fn(segs[0], rng)]
        if target in ("second", "question", "hypothesis"):
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
    def _render_segs(self, t: str, fill: dict, fixed: dict | None = None) -> list[str]:
        return [self._render(s, fill, fixed=fixed) for s in t.split(SEP)]

    def _render(self, template: str, fill: dict, capitalize: bool = True, fixed: dict | None = None) -> str:
        """tpl.render_template, a placeholder that cannot be filled stopping in one line."""
        try:
            return tpl.render_template(template, fill, capitalize=capitalize, fixed=fixed)
        except ConfigError as e:
            raise spec_error(self.spec, self.loc, str(e)) from None
        except (KeyError, IndexError, AttributeError, TypeError, ValueError) as e:
            raise spec_error(self.spec, self.loc, f"template {template!r} cannot be filled "
                                                  f"({type(e).__name__}: {e})") from None

    def _template_meta(self, t: str, **more) -> str:
        segs = t.split(SEP)
        return tpl.meta(source="template", template=segs[0] if len(segs) == 1 else segs, **more)

    def _answer(self, group: dict, fill: dict, segs: list[str], t: str, fixed: dict | None = None) -> str | None:
        if not group.get("answer"):
            return None
        ans = self._render(tpl.normalise(group["answer"]), fill, capitalize=False, fixed=fixed)
        if not _has_answer(segs[0], ans):
            raise spec_error(self.spec, [*self.loc, "answer"], f"the answer {ans!r} is not in the context "
                                                               f"{segs[0]!r} (template {t.split(SEP)[0]!r})")
        return ans

    def group(self, group: dict, gloc: list, func_perturb: dict | None) -> tuple[tpl.Templates, tpl.MakeItem]:
        spec, rng, max_p = self.spec, self.rng, self.ctx.max_p
        lex = group_lexicons(spec, group, gloc)
        fill_slot, swap_slot = group.get("fill_slot"), group.get("swap_slot")
        slot = (fill_slot or swap_slot or {}).get("slot")
        distinct = group.get("distinct", spec.data.get("distinct", True))
        joined = [SEP.join(template_segments(spec, t, [*gloc, "templates", j]))
                  for j, t in enumerate(group["templates"])]
        templates = tpl.Templates(joined, lex, fixed=[slot] if slot else [], distinct=distinct)
        label = label_of(spec, group.get("label"), [*gloc, "label"])
        perturbed_label = label_of(spec, group.get("perturbed_label"), [*gloc, "perturbed_label"])
        perturb = group.get("perturb") or func_perturb

        if fill_slot:
            values = slot_values(spec, lex, fill_slot["values"], [*gloc, "fill_slot", "values"])

            def make(t: str, fill: dict) -> dict:
                orig = self._render_segs(t, fill, {slot: ""})
                chosen = [values[i] for i in rng.choice(len(values), size=min(max_p, len(values)), replace=False)]
                perts = self._capped(orig, [self._render_segs(t, fill, {slot: m + " "}) for m in chosen])
                return self._case(orig, perts, label, self._answer(group, fill, orig, t, {slot: ""}),
                                  self._template_meta(t))
        elif swap_slot:
            values = slot_values(spec, lex, swap_slot["values"], [*gloc, "swap_slot", "values"])
            attribute = swap_slot.get("attribute", slot)

            def make(t: str, fill: dict) -> dict:
                fill = dict(fill)
                orig_val = values[int(rng.integers(len(values)))]
                others = [v for v in values if v != orig_val]
                alts = [others[i] for i in rng.choice(len(others), size=min(max_p, len(others)), replace=False)]
                orig = self._render_segs(t, fill, {slot: orig_val})
                perts = self._capped(orig, [self._render_segs(t, fill, {slot: a}) for a in alts])
                return self._case(orig, perts, label, self._answer(group, fill, orig, t, {slot: orig_val}),
                                  self._template_meta(t, attribute=attribute, values=[orig_val] + alts))
        elif group.get("variants"):
            variants = [tpl.normalise(v) for v in group["variants"]]

            def make(t: str, fill: dict) -> dict:
                orig = self._render_segs(t, fill)
                sentence = {"sentence": _lower_first(orig[0])}
                perts = [[self._render(v, fill, fixed=sentence)] + orig[1:] for v in variants]
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
        label = label_of(self.spec, func.get("label"), [*self.loc, "label"])
        items: list[dict] = []
        seen: set = set()
        if pool:
            for i in rng.permutation(len(pool)):
                if len(items) == n:
                    break
                s = pool[int(i)]
                if func.get("pairs") == "perturbed_pairs" and isinstance(s, tuple):
                    raise spec_error(self.spec, [*self.loc, "pairs"], f"perturbed_pairs pairs a sentence with "
                                                                      f"its perturbation; source {func['source']!r} "
                                                                      "has pairs")
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
        raise spec_error(spec, loc, f"no test case: {what}")
    return [items[i % len(items)] for i in range(n)]


def _why_none(func: dict) -> str:
    if "source" in func:
        return (f"perturbation {func['perturb']['name']!r} changed none of the source's sentences"
                + (" nor any fallback template" if func.get("fallback") else " (add fallback templates)"))
    return ("no template yields a case (every fill repeats a placeholder's value, or the group's perturbation "
            "changes nothing)")


#: the upper bound of max_words (docs/SUITE_FORMAT.md, Limits; max_perturbations: perturb.MAX_VARIANTS)
MAX_WORDS = 1_000


def render_spec(spec: Spec, texts: dict | None = None, *, seed: int | None = None,
                cases_per_functionality: int | None = None, max_perturbations: int | None = None,
                max_words: int | None = None, functionalities=None, fill_up: bool = True,
                on_functionality: Callable[[int], None] | None = None) -> pd.DataFrame:
    """The suite of a spec in the project's format (columns format.COLUMNS), deterministic for the seed.
    ``texts``: the sources' sentences (:func:`load_sources`); the settings default to the spec's defaults;
    ``functionalities``: only these (names), numbered as in the whole spec; ``fill_up=False``: a
    functionality that makes fewer than ``n`` cases keeps them (none at all still stops); ``on_functionality``
    (optional): called with the functionalities rendered so far (a progress bar)."""
    seed = int(spec.setting("seed", seed))
    n = int(spec.setting("cases_per_functionality", cases_per_functionality))
    max_p = int(spec.setting("max_perturbations", max_perturbations))
    max_w = int(spec.setting("max_words", max_words))
    for key, value, least in (("seed", seed, 0), ("cases_per_functionality", n, 1), ("max_perturbations", max_p, 1),
                              ("max_words", max_w, tpl.MIN_WORDS)):
        if value < least:
            raise ConfigError(f"suite spec {spec.path}: field '{key}': {value} is below its minimum {least}")
    for key, value, most in (("max_perturbations", max_p, perturbations.MAX_VARIANTS), ("max_words", max_w, MAX_WORDS)):
        if value > most:
            raise ConfigError(f"suite spec {spec.path}: field '{key}': {value} is above its maximum {most}")
    if functionalities is not None:
        unknown = [f for f in functionalities if f not in {x["name"] for x in spec.functionalities}]
        if unknown:
            raise ConfigError(f"suite spec {spec.path}: field 'functionalities': unknown functionality "
                              f"{unknown[0]!r}")
    ctx = _Ctx(spec, texts or {}, n, max_p, max_w)
    prefix = spec.data.get("id_prefix", spec.name)
    rows, done = [], 0
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
        done += 1
        if on_functionality is not None:
            on_functionality(done)
    return pd.DataFrame(rows, columns=COLUMNS)


def declared(spec: Spec, functionalities=None) -> list[dict]:
    """The functionality table a built suite declares (its file metadata)."""
    return [{k: f[k] for k in ("functionality", "capability", "test_type", "description")}
            for f in catalogue(spec) if functionalities is None or f["functionality"] in functionalities]
