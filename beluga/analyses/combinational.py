"""Combinational OOD generalization by template recombination (Fang et al.,
AACL 2022; docs/ANALYSES.md).

An input x of label y is joined with a template that names a label word w
("<S> It is <LABEL>."); the new label is ŷ = 0 when w names y, else 1. With
fst / sec / neu the first, second and third label (sentiment: positive,
negative, neutral), the seed's Table 2:

=====  =========  =====================================================
split  cell       x label / template word → ŷ
=====  =========  =====================================================
train  (and ID)   fst/fst → 0, sec/sec → 0, neu/fst → 1, neu/sec → 1
COOD              fst/sec → 1, sec/fst → 1
OOD               fst/neu → 1, sec/neu → 1, neu/neu → 0
=====  =========  =====================================================

K inputs x per label are drawn for training (nested as K grows: the first K
of a seeded order), and test inputs are drawn from a disjoint set, so no x
seen in training is ever tested. A model that learned "the template word
agrees with the sentence" handles COOD; one that learned the shortcut
"neutral sentence ⇒ 1, template names fst/sec ⇒ 0" fails it.

The template and its label word are never truncated (:func:`fit_inputs`):
an input x whose templated input (with the longest of the three label words)
exceeds ``max_length`` tokens is dropped from every cell, as the seed drops
inputs over 100 tokens (``too_long: drop``), or its sentence is cut by whole
words until it fits (``too_long: truncate_sentence``). Right-truncating the
whole string would cut the label word, so that the fst and sec templates of
a long x become token-identical with opposite labels. Sentence pairs (a
``text_b`` column: premise, hypothesis) keep the premise as the first
segment and append the template to the hypothesis (the seed's MNLI setting).

Several variants (a model, a template, a label-word set, a length limit...)
run on the same pool, each under its own name (:func:`variants`). This module
builds the data, the cells and their accuracy; beluga/analyses/combinational_report.py
summarises the runs (tables over K and training seeds, figures, Markdown) and puts
the variants side by side as the seed's Tables 2 and 3.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.core.errors import ConfigError, DataError
from beluga.heads.classification import label_shares, majority

COMB_ROLES = ("fst", "sec", "neu")
#: (x role, template role, ŷ) of every cell, in the seed's Table 2 order
CELLS = [("fst", "fst", 0, "ID"), ("sec", "sec", 0, "ID"), ("neu", "fst", 1, "ID"), ("neu", "sec", 1, "ID"),
         ("fst", "sec", 1, "COOD"), ("sec", "fst", 1, "COOD"),
         ("fst", "neu", 1, "OOD"), ("sec", "neu", 1, "OOD"), ("neu", "neu", 0, "OOD")]
TRAIN_CELLS = [c for c in CELLS if c[3] == "ID"]
GROUPS = ("ID", "COOD", "OOD")
#: what happens to an input whose templated version exceeds max_length (the seed: dropped)
TOO_LONG_RULES = ("drop", "truncate_sentence")
#: the keys of a variant (combinational.variants[i]); unset ones come from the combinational block
VARIANT_KEYS = ("model", "model_revision", "template", "label_words", "max_length", "training", "too_long")
#: a variant's keys that choose its runs, not how one trains (unset: the block's): its training sizes K
RUN_KEYS = ("ks",)
#: a variant's own data source and roles (unset: the block's; beluga.analyses.combinational_data.pools)
DATA_KEYS = ("data", "roles")
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
#: the labels of the binned Hutto & Gilbert sentences (:func:`hutto_three_way`) and their default roles
HUTTO_ROLES = {"fst": "positive", "sec": "negative", "neu": "neutral"}
#: a built-in source's labels as its roles take them, by default (the seed's Table 2: fst positive /
#: entailment, sec negative / contradiction, neu neutral); a local file has no default
SOURCE_ROLES = {"hutto": HUTTO_ROLES, "yelp": dict(HUTTO_ROLES),
                "mnli": {"fst": "entailment", "sec": "contradiction", "neu": "neutral"}}
#: the Hutto & Gilbert mean ratings lie in [-HUTTO_SCALE, HUTTO_SCALE]
HUTTO_SCALE = 4.0


def cell_name(x_role: str, t_role: str) -> str:
    return f"{x_role}/{t_role}"


def hutto_three_way(sets, negative_below: float, neutral_within: float, positive_above: float) -> pd.DataFrame:
    """The Hutto & Gilbert sentences (any of the four files, pooled: domain does
    not matter here) binned by mean rating: negative below ``negative_below``,
    neutral within ±``neutral_within``, positive above ``positive_above``
    (ratings in the gaps are dropped). Columns: example_id, text, label."""
    from beluga.data import ood_sets as ood

    check_cut_points(negative_below, neutral_within, positive_above)
    frames = [ood.read_hutto_ratings(s, allow_movies=True).assign(set=s) for s in sets]
    df = pd.concat(frames, ignore_index=True)
    label = np.where(df["rating"] > positive_above, "positive",
                     np.where(df["rating"] < negative_below, "negative",
                              np.where(df["rating"].abs() <= neutral_within, "neutral", "")))
    out = pd.DataFrame({"example_id": [f"{s}-{i}" for s, i in zip(df["set"], df["id"])], "text": df["text"],
                        "label": label})
    return out[(out["label"] != "") & (out["text"].str.len() > 0)].reset_index(drop=True)


def load_labelled(path: str) -> pd.DataFrame:
    """A local TSV / CSV / JSONL with ``text`` and any label values (three or more), optional ``id``;
    a ``text_b`` column makes every input a sentence pair (premise ``text``, hypothesis ``text_b``)."""

    from beluga.data.ood_sets import read_table

    raw = read_table(Path(path), "combinational file")
    for col in ("text", "label"):
        if col not in raw.columns:
            raise DataError(f"combinational file {path}: field '{col}': column missing")
    ids = raw["id"].astype(str) if "id" in raw.columns else [f"x{i:06d}" for i in range(len(raw))]
    out = pd.DataFrame({"example_id": ids, "text": raw["text"].astype(str), "label": raw["label"].astype(str)})
    if "text_b" in raw.columns:
        out.insert(2, "text_b", raw["text_b"].fillna("").astype(str))
    return out


def check_cut_points(negative_below: float, neutral_within: float, positive_above: float,
                     field: str = "config: field 'combinational.data") -> None:
    """The three bins of :func:`hutto_three_way` do not overlap (a rating in two bins would take the
    first label) and none is empty by construction (mean ratings lie in [-4, 4])."""
    if neutral_within < 0:
        raise ConfigError(f"{field}.neutral_within': {neutral_within:g} is negative (|mean rating| at most this "
                          "is neutral)")
    if positive_above < neutral_within:
        raise ConfigError(f"{field}.positive_above': {positive_above:g} is below neutral_within "
                          f"({neutral_within:g}): a mean rating in ({positive_above:g}, {neutral_within:g}] would "
                          "be both positive and neutral (need neutral_within <= positive_above)")
    if negative_below > -neutral_within:
        raise ConfigError(f"{field}.negative_below': {negative_below:g} is above -neutral_within "
                          f"({-neutral_within:g}): a mean rating in [{-neutral_within:g}, {negative_below:g}) "
                          "would be both negative and neutral (need negative_below <= -neutral_within)")
    if positive_above >= HUTTO_SCALE:
        raise ConfigError(f"{field}.positive_above': {positive_above:g} leaves no sentence positive (mean ratings "
                          f"lie in [-{HUTTO_SCALE:g}, {HUTTO_SCALE:g}])")
    if negative_below <= -HUTTO_SCALE:
        raise ConfigError(f"{field}.negative_below': {negative_below:g} leaves no sentence negative (mean ratings "
                          f"lie in [-{HUTTO_SCALE:g}, {HUTTO_SCALE:g}])")


#: a built-in source's labels in words (the messages of :func:`check_roles`)
_SOURCE_LABELS = {"hutto": "the Hutto & Gilbert bins", "yelp": "the Yelp stars binned (beluga.data.yelp)",
                  "mnli": "GLUE MNLI"}


def check_roles(roles: dict | None, source: str = "local", field: str = "combinational.roles") -> dict:
    """The roles (fst / sec / neu -> a label value of the data) of a data source: all three, three
    different labels (two roles on one label would leave one of them without examples), and for a
    built-in source (``hutto``, ``yelp``, ``mnli``) labels it has (none given: its
    :data:`SOURCE_ROLES`). ``field``: the config field of the roles. Returns the roles."""
    if not roles:
        if source in SOURCE_ROLES:
            return dict(SOURCE_ROLES[source])
        raise ConfigError(f"config: field '{field}': a local data set needs the label values of its "
                          "first, second and third label (fst, sec, neu)")
    missing = [r for r in COMB_ROLES if r not in roles]
    if missing:
        raise ConfigError(f"config: field '{field}.{missing[0]}': required (roles need fst, sec and neu)")
    for i, r in enumerate(COMB_ROLES):
        first = next((q for q in COMB_ROLES[:i] if str(roles[q]) == str(roles[r])), None)
        if first is not None:
            raise ConfigError(f"config: field '{field}.{r}': label {str(roles[r])!r} is also role "
                              f"{first}'s; each role needs its own label")
    if source in SOURCE_ROLES:
        known = SOURCE_ROLES[source].values()
        for r in COMB_ROLES:
            if str(roles[r]) not in known:
                raise ConfigError(f"config: field '{field}.{r}': {str(roles[r])!r} is not a label of "
                                  f"{_SOURCE_LABELS[source]} ({', '.join(known)})")
    return {r: roles[r] for r in COMB_ROLES}


def check_data(data: dict, roles: dict | None, field: str = "combinational") -> dict:
    """One data source (the block's or a variant's ``data``, under config field ``field``) and its
    roles: a local file named; Hutto & Gilbert bins that neither overlap nor are empty; the roles
    (:func:`check_roles`). Returns the roles."""
    source = data.get("source", "hutto")
    if source == "local" and not data.get("path"):
        raise ConfigError(f"config: field '{field}.data.path': required with source: local")
    if source == "hutto":
        check_cut_points(data["negative_below"], data["neutral_within"], data["positive_above"],
                         f"config: field '{field}.data")
    return check_roles(roles, source, f"{field}.roles")


def check_block(block: dict) -> None:
    """What the schema cannot say about the combinational block, before any job runs: its data and
    roles (:func:`check_data`); each variant's template, label words, data and roles: :func:`variants`."""
    check_data(block.get("data") or {}, block.get("roles"))


def assign_roles(df: pd.DataFrame, roles: dict) -> pd.DataFrame:
    """``roles``: fst / sec / neu -> the label value in ``df``; other labels are dropped."""
    roles = check_roles(roles)
    inv = {str(v): r for r, v in roles.items()}
    out = df.assign(role=df["label"].astype(str).map(inv)).dropna(subset=["role"])
    for r in COMB_ROLES:
        if not (out["role"] == r).any():
            raise DataError(f"combinational data: field 'label': no example with label {roles[r]!r} (role {r})")
    return out.reset_index(drop=True)


def split_pool(df: pd.DataFrame, n_test: int, seed: int, per_label: int | None = None) -> pd.DataFrame:
    """Per role, a seeded order of the id-sorted examples: the first ``n_test``
    are test inputs, the rest are training inputs in ``rank`` order (a K-sample
    is rank < K). ``per_label``: only the first that many of each role's order
    are kept (a large data set's pool: Yelp's 650,000 reviews; the same test
    inputs and training ranks as without it). Columns added: ``split`` (test /
    train) and ``rank``."""
    if per_label is not None and per_label <= n_test:
        raise DataError(f"combinational data: field 'per_label': {per_label} inputs per label leave no training "
                        f"input after n_test = {n_test} test inputs")
    parts = []
    for r in COMB_ROLES:
        g = df[df["role"] == r].sort_values("example_id", kind="stable").reset_index(drop=True)
        order = np.random.default_rng([seed, COMB_ROLES.index(r)]).permutation(len(g))
        g = g.iloc[order[:per_label]].reset_index(drop=True)
        if len(g) <= n_test:
            raise DataError(f"combinational data: field 'n_test': role {r} has {len(g)} examples, not more than "
                            f"n_test = {n_test}")
        g["split"] = ["test" if i < n_test else "train" for i in range(len(g))]
        g["rank"] = [i if i < n_test else i - n_test for i in range(len(g))]
        parts.append(g)
    return pd.concat(parts, ignore_index=True)


def variant_fields(block: dict, name: str) -> dict[str, str]:
    """key -> the config field that sets a variant's value of it (``combinational.variants[i].<key>``
    when the variant's entry sets it, else ``combinational.<key>``): what its messages name."""
    entries = block.get("variants") or []
    i = next((j for j, v in enumerate(entries) if v.get("name") == name), None)
    own = entries[i] if i is not None else {}
    return {k: f"combinational.variants[{i}].{k}" if k in own else f"combinational.{k}" for k in VARIANT_KEYS}


def variant_data(block: dict, entry: dict, field: str) -> tuple[dict, dict]:
    """(data, roles) of a variant's entry (``field``): its own ``data`` or the block's, its own
    ``roles``, else with its own data its source's default (:data:`SOURCE_ROLES`), else the
    block's; checked (:func:`check_data`)."""
    data = entry.get("data") or block.get("data") or {}
    roles = entry["roles"] if "roles" in entry else None if "data" in entry else block.get("roles")
    own = any(k in entry for k in DATA_KEYS)
    return data, check_data(data, roles, field if own else "combinational")


def variants(block: dict) -> dict[str, dict]:
    """name -> the complete settings of every variant of the combinational block: each entry of
    ``variants`` with its unset keys (:data:`VARIANT_KEYS`, :data:`RUN_KEYS`) taken from the block
    (``training``: key by key); no entry: one variant named ``default``, the block's own keys. A variant's own data
    and roles (:data:`DATA_KEYS`) are checked here and read by
    :func:`beluga.analyses.combinational_data.pools`."""
    base = {k: block.get(k) for k in VARIANT_KEYS + RUN_KEYS}
    entries = block.get("variants") or [{"name": "default"}]
    out: dict[str, dict] = {}
    for i, v in enumerate(entries):
        name = str(v.get("name", ""))
        if not VARIANT_NAME.fullmatch(name):
            raise ConfigError(f"config: field 'combinational.variants[{i}].name': {name!r} is not a path-safe name "
                              "(letters, digits, _ and -, not starting with _ or -)")
        if name in out:
            raise ConfigError(f"config: field 'combinational.variants[{i}].name': {name!r} appears twice")
        unknown = sorted(set(v) - set(VARIANT_KEYS) - set(RUN_KEYS) - set(DATA_KEYS) - {"name"})
        if unknown:
            raise ConfigError(f"config: field 'combinational.variants[{i}].{unknown[0]}': not a variant key "
                              f"({', '.join(VARIANT_KEYS + RUN_KEYS + DATA_KEYS)})")
        merged = {**base, **{k: v[k] for k in VARIANT_KEYS + RUN_KEYS if k in v and k != "training"}}
        if any(k in v for k in DATA_KEYS):   # the variant's own data / roles (its pool's)
            variant_data(block, v, f"combinational.variants[{i}]")
        merged["training"] = {**(base["training"] or {}), **(v.get("training") or {})}
        merged["label_words"] = {**(base["label_words"] or {}), **(v.get("label_words") or {})}
        check_template(merged["template"], f"combinational.variants[{i}].template" if "template" in v
                       else "combinational.template")
        own = v.get("label_words") or {}   # the field each word comes from: the variant's or the block's
        check_label_words(merged["label_words"], {r: f"combinational.variants[{i}].label_words" if r in own
                                                  else "combinational.label_words" for r in COMB_ROLES})
        if merged["too_long"] not in TOO_LONG_RULES:
            raise ConfigError(f"config: field 'combinational.variants[{i}].too_long': one of {TOO_LONG_RULES}")
        out[name] = merged
    return out


#: the figures across variants (``combinational.figures``): name -> what one panel draws
FIGURES = {"epochs": "ID / COOD / OOD accuracy after every epoch at one K (the seed's Figure 2)",
           "ks": "ID / COOD / OOD accuracy against K (the seed's Figure 3)"}


def figures(block: dict, variants_: dict[str, dict]) -> dict[str, dict]:
    """name -> {``panels``: rows of variant names, one panel each; ``k`` (``epochs``): the K drawn} of
    each figure the block's ``figures`` asks for (:data:`FIGURES`; none: {}). ``variants_``: the
    block's variants (:func:`variants`). Checked before any job runs, each a one-line ConfigError
    naming its field: a panel names a variant; an ``epochs`` figure's K is one of each panel
    variant's ``ks`` and ``per_epoch`` is on (else that variant's runs record no epochs); a ``ks``
    figure's variants run at least two K values (a curve)."""
    out: dict[str, dict] = {}
    for name, spec in (block.get("figures") or {}).items():
        field = f"combinational.figures.{name}"
        if name == "epochs" and not block.get("per_epoch"):
            raise ConfigError(f"config: field 'combinational.per_epoch': false, but {field} draws the accuracy "
                              "after every epoch (set per_epoch: true)")
        rows = [[str(v) for v in row] for row in spec["panels"]]
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                where = f"config: field '{field}.panels[{i}][{j}]'"
                if v not in variants_:
                    raise ConfigError(f"{where}: {v!r} is not a variant ({', '.join(variants_)})")
                ks = [int(k) for k in variants_[v]["ks"]]
                ks_field = variant_ks_field(block, v)
                if name == "epochs" and int(spec["k"]) not in ks:
                    raise ConfigError(f"{where}: variant {v!r} runs K = {', '.join(map(str, ks))} ({ks_field}), "
                                      f"not {field}.k = {int(spec['k'])}")
                if name == "ks" and len(ks) < 2:
                    raise ConfigError(f"{where}: variant {v!r} runs one K ({ks_field}: {ks[0]}); a curve over K "
                                      "needs at least two")
        out[name] = {"panels": rows, **({"k": int(spec["k"])} if name == "epochs" else {})}
    return out


def variant_ks_field(block: dict, name: str) -> str:
    """The config field of a variant's ``ks``: its own entry's, else the block's."""
    entries = block.get("variants") or []
    i = next((j for j, v in enumerate(entries) if v.get("name") == name), None)
    return f"combinational.variants[{i}].ks" if i is not None and "ks" in entries[i] else "combinational.ks"


def check_template(template: str, field: str = "combinational.template") -> None:
    missing = [p for p in ("{S}", "{LABEL}") if p not in template]
    if missing:
        raise ConfigError(f"config: field '{field}': {template!r} has no {' and no '.join(missing)}; a template "
                          "needs {S} and {LABEL} (the input and the label word)")


def word_key(word: str) -> tuple[str, ...]:
    """What a label word is to a BERT-style uncased tokenizer: case, accents, compatibility forms
    and white space dropped, split into words and punctuation marks. Two words with the same key
    give token-identical templated inputs (:func:`check_label_words`)."""
    w = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", str(word)).casefold())
    w = "".join(c for c in w if not unicodedata.combining(c))
    return tuple(re.findall(r"\w+|[^\w\s]", w))


def check_label_words(words: dict, fields: str | dict = "combinational.label_words") -> None:
    """The three label words are not blank and differ after :func:`word_key` (two words alike would
    make two cells the same inputs with opposite labels: with fst and sec alike, fst/fst → 0 and
    fst/sec → 1). ``fields``: the field the words come from, or role -> the field of its word (a
    variant's or the block's; of two words alike, a variant's is named)."""
    field = fields if isinstance(fields, dict) else dict.fromkeys(COMB_ROLES, fields)
    for i, r in enumerate(COMB_ROLES):
        if r not in words:
            raise ConfigError(f"config: field '{field[r]}.{r}': required (label words of fst, sec and neu)")
        if not word_key(words[r]):
            raise ConfigError(f"config: field '{field[r]}.{r}': {words[r]!r} is blank")
        first = next((q for q in COMB_ROLES[:i] if word_key(words[q]) == word_key(words[r])), None)
        if first is not None:
            name = field[r] if ".variants[" in field[r] else field[first]
            raise ConfigError(f"config: field '{name}': {first} {words[first]!r} and {r} "
                              f"{words[r]!r} are the same word up to case, accents and spaces; the cells "
                              f"{first}/{first} (label 0) and {first}/{r} (label 1) would be the same inputs "
                              "with opposite labels")


def check_distinct_tokens(tokenizer, words: dict, template: str, pair: bool = False,
                          field: str = "combinational.label_words") -> None:
    """The model's tokenizer gives the three templated inputs different tokens (two label words
    that differ in writing may not to the model: both unknown tokens, or a case an uncased model
    drops); else two cells would be the same inputs with opposite labels."""
    ids = _token_ids(tokenizer, [_segments("", "" if pair else None, words[r], template) for r in COMB_ROLES])
    for i, r in enumerate(COMB_ROLES):
        first = next((q for q in COMB_ROLES[:i] if ids[COMB_ROLES.index(q)] == ids[i]), None)
        if first is not None:
            raise ConfigError(f"config: field '{field}': {first} {words[first]!r} and {r} "
                              f"{words[r]!r} give the same tokens with this model's tokenizer; the cells "
                              f"{first}/{first} (label 0) and {first}/{r} (label 1) would be the same inputs "
                              "with opposite labels")


def templated(text: str, word: str, template: str) -> str:
    check_template(template)
    return template.replace("{S}", text.strip()).replace("{LABEL}", word)


def is_pair(pool: pd.DataFrame) -> bool:
    """A sentence-pair pool (premise ``text``, hypothesis ``text_b``)."""
    return "text_b" in pool.columns


def _segments(text: str, text_b, word: str, template: str) -> tuple[str, str | None]:
    """The model's input for x with a template naming ``word``: one string, or for a pair the
    premise and the templated hypothesis."""
    if text_b is None:
        return templated(text, word, template), None
    return text.strip(), templated(text_b, word, template)


def _token_ids(tokenizer, pairs: list[tuple[str, str | None]]) -> list[list[int]]:
    """Token ids with the special tokens, untruncated."""
    if not pairs:
        return []
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs] if pairs[0][1] is not None else None
    return [list(ids) for ids in tokenizer(a, b, truncation=False, add_special_tokens=True,
                                           verbose=False)["input_ids"]]


#: inputs tokenized at once by :func:`_lengths` (a pool of Yelp reviews holds millions of templated inputs)
LENGTH_CHUNK = 20_000


def _lengths(tokenizer, pairs: list[tuple[str, str | None]]) -> list[int]:
    """Token counts with the special tokens, untruncated; in chunks, so that only a chunk's token ids
    are held at once."""
    return [len(ids) for i in range(0, len(pairs), LENGTH_CHUNK)
            for ids in _token_ids(tokenizer, pairs[i:i + LENGTH_CHUNK])]


def _capped(a: str, b: str | None, c: int) -> tuple[str, str | None]:
    """Each segment cut to at most ``c`` whole words (longest first, at word level)."""
    return " ".join(a.split()[:c]), None if b is None else " ".join(b.split()[:c])


def fit_inputs(pool: pd.DataFrame, words: dict, template: str, tokenizer, max_length: int,
               too_long: str = "drop", fields: dict | None = None) -> pd.DataFrame:
    """The pool measured against ``max_length`` with the variant's tokenizer: ``n_tokens`` (the
    longest of x's three templated inputs, special tokens included), ``too_long`` (over the
    limit) and ``kept``. The template and its label word are never cut: ``drop`` (the seed's rule)
    drops a too-long x from every cell; ``truncate_sentence`` cuts its sentence (a pair: the
    longer of premise and hypothesis first) to the most whole words with which all three
    templated inputs fit, the same cut for every template (an x whose sentence would be cut to
    nothing is dropped). Columns added: n_tokens, too_long, truncated, kept; ``text`` (and
    ``text_b``) hold the cut sentences. ``fields``: key -> the config field a message names (a
    variant's own, :func:`variant_fields`; default the block's)."""
    field = {k: f"combinational.{k}" for k in VARIANT_KEYS} | (fields or {})
    if too_long not in TOO_LONG_RULES:
        raise ConfigError(f"config: field '{field['too_long']}': one of {TOO_LONG_RULES}")
    check_label_words(words, field["label_words"])
    check_distinct_tokens(tokenizer, words, template, is_pair(pool), field["label_words"])
    ws = [words[r] for r in COMB_ROLES]
    if max(_lengths(tokenizer, [_segments("", None if not is_pair(pool) else "", w, template) for w in ws])) \
            > max_length:
        raise ConfigError(f"config: field '{field['max_length']}': {max_length} tokens do not hold the template "
                          f"{template!r} with its label words")
    out = pool.reset_index(drop=True)   # positions = labels below
    b_col = list(out["text_b"]) if is_pair(out) else [None] * len(out)
    flat = [_segments(t, b, w, template) for t, b in zip(out["text"], b_col) for w in ws]
    n_tok = np.asarray(_lengths(tokenizer, flat), dtype=int).reshape(len(out), len(ws)).max(axis=1) \
        if len(out) else np.zeros(0, dtype=int)
    out["n_tokens"] = n_tok
    out["too_long"] = n_tok > max_length
    out["truncated"] = False
    out["kept"] = ~out["too_long"]
    if too_long == "drop":
        return out

    def fits(a: str, b) -> bool:
        return max(_lengths(tokenizer, [_segments(a, b, w, template) for w in ws])) <= max_length

    for i in np.flatnonzero(out["too_long"].to_numpy()):
        a, b = str(out.at[i, "text"]), None if b_col[i] is None else str(b_col[i])
        lo, hi = 0, max(len(a.split()), 0 if b is None else len(b.split()))   # hi words: too long
        while hi - lo > 1:   # the largest cap that fits
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(*_capped(a, b, mid)) else (lo, mid)
        ca, cb = _capped(a, b, lo)
        if lo == 0 or not fits(ca, cb):
            continue   # nothing of the sentence would remain: dropped
        out.at[i, "text"] = ca
        if b is not None:
            out.at[i, "text_b"] = cb
        out.at[i, "truncated"] = True
        out.at[i, "kept"] = True
    return out


def training_inputs(pool: pd.DataFrame, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the first K kept training inputs of each role in rank order, every training input up to
    the last one taken: the inputs a K-sample reads, dropped ones included). Nested in K."""
    kept = pool["kept"] if "kept" in pool.columns else pd.Series(True, index=pool.index)
    train = pool[pool["split"] == "train"]
    taken, read = [], []
    for r in COMB_ROLES:
        g = train[train["role"] == r].sort_values("rank", kind="stable")
        ok = g[kept[g.index]]
        if len(ok) < k:
            raise DataError(f"combinational data: field 'ks': K = {k} needs {k} training inputs of role {r}, "
                            f"there are {len(ok)}" + (f" within max_length ({len(g) - len(ok)} too long)"
                                                      if len(g) > len(ok) else ""))
        first = ok.head(k)
        taken.append(first)
        read.append(g[g["rank"] <= first["rank"].max()] if k else g.head(0))
    return pd.concat(taken), pd.concat(read)


def build(pool: pd.DataFrame, k: int, words: dict, template: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training set, test set) for K = ``k``: the training set holds the ID
    cells on the first K (kept, :func:`fit_inputs`) training inputs of each role
    (2K examples with ŷ = 0, 2K with ŷ = 1); the test set holds all nine cells
    on the kept test inputs. Columns: example_id, text, label (ŷ), cell, group,
    x_id; and text_b for a sentence pair (the templated hypothesis)."""
    check_template(template)
    pair = is_pair(pool)

    def rows(sub: pd.DataFrame, cells) -> list[dict]:
        out = []
        for x_role, t_role, y, group in cells:
            for r in sub[sub["role"] == x_role].itertuples(index=False):
                a, b = _segments(r.text, r.text_b if pair else None, words[t_role], template)
                out.append({"example_id": f"{r.example_id}|{t_role}", "text": a, **({"text_b": b} if pair else {}),
                            "label": y, "cell": cell_name(x_role, t_role), "group": group, "x_id": r.example_id})
        return out

    train_x, _ = training_inputs(pool, k)
    test_x = pool[pool["split"] == "test"]
    if "kept" in pool.columns:
        test_x = test_x[test_x["kept"]]
    return pd.DataFrame(rows(train_x, TRAIN_CELLS)), pd.DataFrame(rows(test_x, CELLS))


def length_counts(pool: pd.DataFrame, k: int, rule: str, max_length: int) -> dict:
    """Inputs x over the limit, per split: among the test inputs, among the training inputs a
    K-sample reads (:func:`training_inputs`) and in the whole training part; and how many of them
    were dropped or had their sentence cut."""
    _, read = training_inputs(pool, k)
    test = pool[pool["split"] == "test"]
    train_all = pool[pool["split"] == "train"]

    def n(df, col, value=True):
        return int((df[col] == value).sum())
    return {"rule": rule, "max_length": int(max_length), "max_tokens": int(pool["n_tokens"].max()),
            "too_long": {"train": n(read, "too_long"), "test": n(test, "too_long"),
                         "train_pool": n(train_all, "too_long")},
            "dropped": {"train": n(read, "kept", False), "test": n(test, "kept", False)},
            "truncated": {"train": n(read, "truncated"), "test": n(test, "truncated")}}


def cell_accuracy(test: pd.DataFrame, pred: np.ndarray) -> dict:
    """Accuracy per cell and per group (ID / COOD / OOD: over their examples)."""
    correct = pd.Series(np.asarray(pred) == test["label"].to_numpy(), index=test.index)
    out = {c: float(correct[test["cell"] == c].mean()) for c in dict.fromkeys(test["cell"])}
    for g in GROUPS:
        out[g] = float(correct[test["group"] == g].mean())
    return out


def prediction_check(pred: np.ndarray, degenerate_share: float = 0.95) -> dict:
    """A model's predicted classes on the test cells checked for a degenerate solution as the classifier's
    diagnostics check them (:meth:`beluga.heads.classification.ClassificationHead.diagnostics`): the most
    frequent class's share (``majority_share``) and whether it is at least ``degenerate_share``
    (``degenerate``: the model answers one way for (almost) every input)."""
    _, share = majority(label_shares([int(p) for p in np.asarray(pred)], {0: "0", 1: "1"}))
    return {"majority_share": share, "degenerate": bool(share == share and share >= degenerate_share)}
