"""Combinational OOD generalization by template recombination (Fang et al.;
seed 002; docs/ANALYSES.md).

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
run on the same pool, each under its own name (:func:`variants`), and
:func:`comparison` puts them side by side as the seed's Tables 2 and 3.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.errors import ConfigError, DataError

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
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
#: the labels of the binned Hutto & Gilbert sentences (:func:`hutto_three_way`) and their default roles
HUTTO_ROLES = {"fst": "positive", "sec": "negative", "neu": "neutral"}
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


def check_cut_points(negative_below: float, neutral_within: float, positive_above: float) -> None:
    """The three bins of :func:`hutto_three_way` do not overlap (a rating in two bins would take the
    first label) and none is empty by construction (mean ratings lie in [-4, 4])."""
    field = "config: field 'combinational.data"
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


def check_roles(roles: dict | None, source: str = "local") -> dict:
    """The roles (fst / sec / neu -> a label value of the data) of a data source: all three, three
    different labels (two roles on one label would leave one of them without examples), and for
    ``hutto`` labels of its bins (none given: :data:`HUTTO_ROLES`). Returns the roles."""
    if not roles:
        if source == "hutto":
            return dict(HUTTO_ROLES)
        raise ConfigError("config: field 'combinational.roles': a local data set needs the label values of its "
                          "first, second and third label (fst, sec, neu)")
    missing = [r for r in COMB_ROLES if r not in roles]
    if missing:
        raise ConfigError(f"config: field 'combinational.roles.{missing[0]}': required (roles need fst, sec "
                          "and neu)")
    for i, r in enumerate(COMB_ROLES):
        first = next((q for q in COMB_ROLES[:i] if str(roles[q]) == str(roles[r])), None)
        if first is not None:
            raise ConfigError(f"config: field 'combinational.roles.{r}': label {str(roles[r])!r} is also role "
                              f"{first}'s; each role needs its own label")
    if source == "hutto":
        for r in COMB_ROLES:
            if str(roles[r]) not in HUTTO_ROLES.values():
                raise ConfigError(f"config: field 'combinational.roles.{r}': {str(roles[r])!r} is not a label of "
                                  f"the Hutto & Gilbert bins ({', '.join(HUTTO_ROLES.values())})")
    return {r: roles[r] for r in COMB_ROLES}


def check_block(block: dict) -> None:
    """What the schema cannot say about the combinational block, before any job runs: the data
    (a local file named; Hutto & Gilbert bins that neither overlap nor are empty) and the roles
    (:func:`check_roles`); each variant's template and label words: :func:`variants`."""
    data = block.get("data") or {}
    source = data.get("source", "hutto")
    if source == "local" and not data.get("path"):
        raise ConfigError("config: field 'combinational.data.path': required with source: local")
    if source == "hutto":
        check_cut_points(data["negative_below"], data["neutral_within"], data["positive_above"])
    check_roles(block.get("roles"), source)


def assign_roles(df: pd.DataFrame, roles: dict) -> pd.DataFrame:
    """``roles``: fst / sec / neu -> the label value in ``df``; other labels are dropped."""
    roles = check_roles(roles)
    inv = {str(v): r for r, v in roles.items()}
    out = df.assign(role=df["label"].astype(str).map(inv)).dropna(subset=["role"])
    for r in COMB_ROLES:
        if not (out["role"] == r).any():
            raise DataError(f"combinational data: field 'label': no example with label {roles[r]!r} (role {r})")
    return out.reset_index(drop=True)


def split_pool(df: pd.DataFrame, n_test: int, seed: int) -> pd.DataFrame:
    """Per role, a seeded order of the id-sorted examples: the first ``n_test``
    are test inputs, the rest are training inputs in ``rank`` order (a K-sample
    is rank < K). Columns added: ``split`` (test / train) and ``rank``."""
    parts = []
    for r in COMB_ROLES:
        g = df[df["role"] == r].sort_values("example_id", kind="stable").reset_index(drop=True)
        order = np.random.default_rng([seed, COMB_ROLES.index(r)]).permutation(len(g))
        g = g.iloc[order].reset_index(drop=True)
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


def variants(block: dict) -> dict[str, dict]:
    """name -> the complete settings of every variant of the combinational block: each entry of
    ``variants`` with its unset keys (:data:`VARIANT_KEYS`) taken from the block (``training``: key
    by key); no entry: one variant named ``default``, the block's own keys."""
    base = {k: block.get(k) for k in VARIANT_KEYS}
    entries = block.get("variants") or [{"name": "default"}]
    out: dict[str, dict] = {}
    for i, v in enumerate(entries):
        name = str(v.get("name", ""))
        if not VARIANT_NAME.fullmatch(name):
            raise ConfigError(f"config: field 'combinational.variants[{i}].name': {name!r} is not a path-safe name "
                              "(letters, digits, _ and -, not starting with _ or -)")
        if name in out:
            raise ConfigError(f"config: field 'combinational.variants[{i}].name': {name!r} appears twice")
        unknown = sorted(set(v) - set(VARIANT_KEYS) - {"name"})
        if unknown:
            raise ConfigError(f"config: field 'combinational.variants[{i}].{unknown[0]}': not a variant key "
                              f"({', '.join(VARIANT_KEYS)})")
        merged = {**base, **{k: v[k] for k in VARIANT_KEYS if k in v and k != "training"}}
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


def _lengths(tokenizer, pairs: list[tuple[str, str | None]]) -> list[int]:
    """Token counts with the special tokens, untruncated."""
    return [len(ids) for ids in _token_ids(tokenizer, pairs)]


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


# ---------------------------------------------------------------- runs and training seeds

#: a run's counts: the same for every training seed (one pool, one tokenizer, the same K)
COUNT_COLUMNS = ("n_train", "n_test", "too_long_train", "too_long_test", "dropped_train", "dropped_test")
#: a seed folder's run file (``<variant>/seeds/<s>/runs/k<K>.json``; the base seed's: ``<variant>/runs/``)
SEED_RUN = re.compile(r"(?:^|/)seeds/([0-9]+)/runs/[^/]+$")


def run_table(recs: list[dict]) -> pd.DataFrame:
    """One training seed's table: a row per run (K ascending) with its counts and the accuracy of
    every cell and group."""
    recs = sorted(recs, key=lambda r: r["K"])
    return pd.DataFrame([{"K": r["K"], "n_train": r["n_train"], "n_test": r["n_test"], **r["accuracy"],
                          "too_long_train": r["length"]["too_long"]["train"],
                          "too_long_test": r["length"]["too_long"]["test"],
                          "dropped_train": r["length"]["dropped"]["train"],
                          "dropped_test": r["length"]["dropped"]["test"]} for r in recs])


def epochs_table(recs: list[dict]) -> pd.DataFrame:
    """One training seed's accuracy after every epoch (K ascending; no rows when not recorded)."""
    recs = sorted(recs, key=lambda r: r["K"])
    epochs = pd.DataFrame([{"K": r["K"], **e} for r in recs for e in r["per_epoch"]])
    if not len(epochs):
        epochs = pd.DataFrame(columns=["K", "epoch", *GROUPS])
    return epochs


def run_seeds(paths: list[str], ks: list[int], seeds: list[int]) -> list[int]:
    """The training seed of each run file. ``paths`` are seed-major: ``len(ks)`` files per seed, in
    ``seeds`` order (the base seed's runs record ``combinational.seed``, so a run's seed is its position's)."""
    n = len(seeds) * len(ks)
    if len(paths) != n:
        raise DataError(f"combinational runs: {len(paths)} run files for {len(seeds)} training seed(s) "
                        f"({', '.join(map(str, seeds))}) x {len(ks)} K values; expected {n}")
    return [int(seeds[i // len(ks)]) for i in range(n)]


def _flat(d, prefix: str) -> dict:
    """A nested record entry as ``prefix.key.sub`` -> value."""
    if not isinstance(d, dict):
        return {prefix: d}
    return {k: v for key, sub in d.items() for k, v in _flat(sub, f"{prefix}.{key}").items()}


def _shared(rec: dict) -> dict:
    """What every training seed's run of one K shares: its counts, training inputs and cells."""
    return {"n_train": rec.get("n_train"), "n_test": rec.get("n_test"), **_flat(rec.get("length"), "length"),
            "train_x": rec.get("train_x"), "accuracy": sorted(rec.get("accuracy") or {})}


def check_runs(paths: list[str], recs: list[dict], ks: list[int], seeds: list[int], variant: str | None = None
               ) -> list[int]:
    """The training seed of each run (:func:`run_seeds`), after checking every run: the K of its
    position, the variant, a seed folder's seed (its path and its record), and every training seed's
    run of a K with the first seed's counts, training inputs and cells. A mismatch: one line naming
    the file and the field."""
    run_seed = run_seeds(paths, ks, seeds)
    first: dict[int, tuple[str, int, dict]] = {}
    for i, (path, rec, seed) in enumerate(zip(paths, recs, run_seed)):
        k = int(ks[i % len(ks)])
        where = f"combinational run {path}"
        if int(rec.get("K", -1)) != k:
            raise DataError(f"{where}: field 'K': {rec.get('K')}, but its position is training seed {seed}'s "
                            f"K = {k}")
        if variant is not None and rec.get("variant", variant) != variant:
            raise DataError(f"{where}: field 'variant': {rec.get('variant')!r}, not {variant!r}")
        folder = SEED_RUN.search(str(path).replace("\\", "/"))
        if folder and int(folder.group(1)) != seed:
            raise DataError(f"{where}: its folder is training seed {folder.group(1)}'s, but its position is "
                            f"seed {seed}'s (runs are seed-major: {', '.join(map(str, seeds))})")
        if folder and "seed" in rec and int(rec["seed"]) != seed:
            raise DataError(f"{where}: field 'seed': {rec['seed']}, but it lies in training seed {seed}'s folder")
        shared = _shared(rec)
        if k not in first:
            first[k] = (path, seed, shared)
            continue
        path0, seed0, shared0 = first[k]
        for field, value in shared.items():
            if value != shared0.get(field):
                shown = ("other inputs" if field == "train_x" else "other cells" if field == "accuracy"
                         else f"{value}")
                was = "" if field in ("train_x", "accuracy") else f": {shared0.get(field)}"
                raise DataError(f"{where}: field '{field}': {shown} for training seed {seed}, not training seed "
                                f"{seed0}'s ({path0}{was}); every training seed runs on the same inputs")
    return run_seed


def by_seed(recs: list[dict], run_seed: list[int]) -> dict[int, list[dict]]:
    """seed -> its runs, seeds in order of first appearance."""
    out: dict[int, list[dict]] = {}
    for rec, seed in zip(recs, run_seed):
        out.setdefault(int(seed), []).append(rec)
    return out


def seeds_table(runs: dict[int, list[dict]]) -> pd.DataFrame:
    """Several training seeds' table: per K the counts (every seed's) and the accuracy of every cell
    and group as the mean over seeds, ``n_seeds``, ``<cell>_sd`` / ``_min`` / ``_max``."""
    from beluga.seeds import over_seeds, per_seed_frame

    per = per_seed_frame({s: run_table(recs) for s, recs in runs.items()})
    acc = [c for c in per.columns if c not in ("seed", "K", *COUNT_COLUMNS)]
    return over_seeds(per, ["K"], acc)


def seeds_epochs(runs: dict[int, list[dict]]) -> pd.DataFrame:
    """Several training seeds' accuracy after every epoch: each seed's rows under a leading ``seed``."""
    from beluga.seeds import per_seed_frame

    return per_seed_frame({s: epochs_table(recs) for s, recs in runs.items()})


def epochs_over_seeds(epochs: pd.DataFrame) -> pd.DataFrame:
    """Per K and epoch the mean over seeds of every cell and group, with ``_sd`` / ``_min`` / ``_max``."""
    from beluga.seeds import over_seeds

    return over_seeds(epochs, ["K", "epoch"], [c for c in epochs.columns if c not in ("seed", "K", "epoch")])


def variant_tables(recs: list[dict], run_seed: list[int] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, epochs) of a variant's runs: one training seed's (:func:`run_table`, :func:`epochs_table`)
    when ``run_seed`` (each run's seed, :func:`check_runs`) names one seed or none, else the mean over
    seeds (:func:`seeds_table`) and every seed's epochs (:func:`seeds_epochs`)."""
    if run_seed is None or len(set(run_seed)) <= 1:
        return run_table(recs), epochs_table(recs)
    runs = by_seed(recs, run_seed)
    return seeds_table(runs), seeds_epochs(runs)


def check_table_seeds(table: pd.DataFrame, path: str, seeds: list[int]) -> None:
    """A variant's table.csv was written for the run's training seeds (``n_seeds`` with several, none with one)."""
    if len(seeds) > 1:
        n = table["n_seeds"] if "n_seeds" in table.columns else pd.Series([1] * len(table), dtype=int)
        bad = n[n != len(seeds)]
        if len(bad):
            raise DataError(f"combinational table {path}: field 'n_seeds': {int(bad.iloc[0])}, not the run's "
                            f"{len(seeds)} training seeds")
    elif "n_seeds" in table.columns:
        raise DataError(f"combinational table {path}: field 'n_seeds': a table of several training seeds, the run "
                        "has one")


STYLES = {"ID": ("o-", "tab:blue"), "COOD": ("s-", "tab:orange"), "OOD": ("^-", "tab:grey")}


def _save(fig, out_png: str) -> None:
    import matplotlib.pyplot as plt

    from beluga.io import atomic_path

    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def curve_figure(table: pd.DataFrame, out_png: str, title: str = "") -> None:
    """ID / COOD / OOD accuracy against K (the seed's Figure 3); a table of several training seeds
    (:func:`seeds_table`): the mean with error bars of ± one standard deviation over the seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    n_seeds = int(table["n_seeds"].max()) if "n_seeds" in table.columns and len(table) else 1
    for g, (st, col) in STYLES.items():
        if n_seeds > 1:
            ax.errorbar(table["K"], 100 * table[g], yerr=100 * table[f"{g}_sd"].fillna(0), fmt=st, color=col,
                        capsize=3, label=g)
        else:
            ax.plot(table["K"], 100 * table[g], st, color=col, label=g)
    ax.set_xscale("log")
    ax.set_xticks(list(table["K"]))
    ax.set_xticklabels([str(int(k)) for k in table["K"]])
    ax.minorticks_off()
    ax.set_xlabel("K (training inputs per label)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(-3, 103)
    ax.axhline(50, color="black", linewidth=0.6, linestyle=":")
    ax.set_title(f"{title}: accuracy vs training size" if title else "accuracy vs training size")
    if n_seeds > 1:
        ax.set_title(f"{ax.get_title()}\n(mean ± sd over {n_seeds} training seeds)", fontsize=10)
    ax.legend(fontsize=8)
    _save(fig, out_png)


def epochs_figure(epochs: pd.DataFrame, ks: list[int], out_png: str, title: str = "") -> None:
    """ID / COOD / OOD accuracy after every epoch, one panel per K (the seed's Figure 2); a panel
    says so when the epochs were not recorded (per_epoch: false). Epochs of several training seeds
    (a ``seed`` column, :func:`seeds_epochs`): the mean over seeds in a band of ± one standard
    deviation, each seed a thin line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ks), figsize=(4.2 * len(ks), 3.6), squeeze=False, sharey=True)
    seeds = "seed" in epochs.columns
    mean = epochs_over_seeds(epochs) if seeds and len(epochs) else None
    for ax, k in zip(axes[0], ks):
        e = epochs[epochs["K"] == k] if len(epochs) else epochs
        if seeds and len(e):
            m = mean[mean["K"] == k]
            for g, (st, col) in STYLES.items():
                for _, one in e.groupby("seed", sort=False):
                    ax.plot(one["epoch"], 100 * one[g], "-", color=col, linewidth=0.6, alpha=0.45)
                sd = 100 * m[f"{g}_sd"].fillna(0)
                ax.fill_between(m["epoch"], 100 * m[g] - sd, 100 * m[g] + sd, color=col, alpha=0.2, linewidth=0)
                ax.plot(m["epoch"], 100 * m[g], st, color=col, label=g)
            ax.set_xticks(list(m["epoch"]))
            ax.legend(fontsize=8, title=f"mean ± sd, {e['seed'].nunique()} seeds", title_fontsize=7)
        elif len(e):
            for g, (st, col) in STYLES.items():
                ax.plot(e["epoch"], 100 * e[g], st, color=col, label=g)
            ax.set_xticks(list(e["epoch"]))
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "not recorded (per_epoch: false)", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("epoch")
        ax.set_ylim(-3, 103)
        ax.axhline(50, color="black", linewidth=0.6, linestyle=":")
        ax.set_title(f"{title}, K = {k}" if title else f"K = {k}")
    axes[0][0].set_ylabel("accuracy (%)")
    _save(fig, out_png)


def _pct(x) -> str:
    return "–" if pd.isna(x) else f"{100 * x:.1f}"


def _length_note(rule: str) -> str:
    return ("too long: inputs x whose templated input exceeds max_length tokens (train: among the inputs a "
            "K-sample reads; test: among the test inputs), " +
            ("dropped from every cell (the seed drops inputs over 100 tokens)" if rule == "drop" else
             "their sentence cut by whole words (template and label word intact; dropped if nothing remains)"))


def _pm(r: dict, c: str) -> str:
    """A cell of several training seeds: ``80.9 ± 0.5`` (``–`` when no seed has it)."""
    from beluga.seeds import plus_minus

    return "–" if pd.isna(r[c]) else plus_minus(r[c], r.get(f"{c}_sd"))


def _seeds_line(seeds: list[int], csv: str) -> str:
    return (f"Every accuracy: mean ± standard deviation over {len(seeds)} training seeds "
            f"({', '.join(map(str, seeds))}); `_sd`, `_min`, `_max` and `n_seeds` in {csv}. The counts are the "
            "same for every seed (one pool of inputs); each seed's runs: runs/ (the base seed) and seeds/<s>/runs/.")


def accuracy_markdown(table: pd.DataFrame, title: str = "", rule: str = "drop", seeds: list[int] | None = None
                      ) -> str:
    """The table as Markdown; with several training ``seeds`` (a :func:`seeds_table`) each accuracy
    is the mean ± sd over them."""
    if seeds is not None and len(seeds) > 1:
        return _seeds_markdown(table, title, rule, seeds)
    cells = [cell_name(x, t) for x, t, _, _ in CELLS]
    head = ["K"] + cells + list(GROUPS) + ["too long (train / test)"]
    lines = [f"# Combinational OOD{f' ({title})' if title else ''}: accuracy (%) per cell and group", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        lines.append("| " + " | ".join([str(int(r["K"]))] + [_pct(r[c]) for c in cells + list(GROUPS)]
                                       + [f"{int(r['too_long_train'])} / {int(r['too_long_test'])}"]) + " |")
    lines += ["", "x/t: an input of label x with a template naming label t (fst: first label, sec: second, neu: "
              "third). ID cells are the training combinations on held-out inputs; COOD: unseen combinations of "
              "seen parts; OOD: the third label's word, never seen in a template.", "", _length_note(rule) + "."]
    return "\n".join(lines) + "\n"


def _seeds_markdown(table: pd.DataFrame, title: str, rule: str, seeds: list[int]) -> str:
    cells = [cell_name(x, t) for x, t, _, _ in CELLS]
    head = ["K"] + cells + list(GROUPS) + ["too long (train / test)"]
    lines = [f"# Combinational OOD{f' ({title})' if title else ''}: accuracy (%) per cell and group, "
             f"mean ± sd over {len(seeds)} training seeds", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        lines.append("| " + " | ".join([str(int(r["K"]))] + [_pm(r, c) for c in cells + list(GROUPS)]
                                       + [f"{int(r['too_long_train'])} / {int(r['too_long_test'])}"]) + " |")
    lines += ["", "x/t: an input of label x with a template naming label t (fst: first label, sec: second, neu: "
              "third). ID cells are the training combinations on held-out inputs; COOD: unseen combinations of "
              "seen parts; OOD: the third label's word, never seen in a template.", "", _length_note(rule) + ".",
              "", _seeds_line(seeds, "table.csv")]
    return "\n".join(lines) + "\n"


def training_label(training: dict | None) -> str:
    """``lr 5e-05, batch 16, 3 epochs`` (the keys a variant may set; others as set); ``–`` when unknown."""
    if not training:
        return "–"
    parts = []
    if "lr" in training:
        parts.append(f"lr {training['lr']:g}")
    if "batch_size" in training:
        parts.append(f"batch {training['batch_size']}")
    if "epochs" in training:
        parts.append(f"{training['epochs']:g} epoch" + ("" if training["epochs"] == 1 else "s"))
    parts += [f"{k} {v}" for k, v in sorted(training.items()) if k not in ("lr", "batch_size", "epochs")]
    return ", ".join(parts)


def comparison(tables: dict[str, pd.DataFrame], settings: dict[str, dict]) -> pd.DataFrame:
    """One row per variant and K (variants in ``settings`` order): the variant's model, its training
    (two variants of one model differ there), template, label words, length rule and counts, and the
    accuracy of the nine cells and three groups."""
    rows = []
    for name, v in settings.items():
        w = v["label_words"]
        for r in tables[name].to_dict("records"):
            rows.append({"variant": name, "model": v["model"], "training": training_label(v.get("training")),
                         "template": v["template"],
                         "label_words": "/".join(w[x] for x in COMB_ROLES), "max_length": v["max_length"],
                         "too_long_rule": v["too_long"], **r})
    return pd.DataFrame(rows)


def comparison_markdown(comp: pd.DataFrame, seeds: list[int] | None = None) -> str:
    """The seed's Table 2 (the nine cells per variant) and Table 3 (template and label words: ID,
    COOD, OOD), one row per variant and K; from the tables of several training seeds (an ``n_seeds``
    column) each accuracy is the mean ± sd over the seeds (``seeds``), with their number."""
    if "n_seeds" in comp.columns:
        return _seeds_comparison_markdown(comp, seeds)
    cells = [cell_name(x, t) for x, t, _, _ in CELLS]
    t2 = ["variant", "model", "training", "K"] + cells
    t3 = ["variant", "template", "label words (fst/sec/neu)", "K", "ID", "COOD", "OOD", "max_length",
          "too long (train / test)", "rule"]
    lines = ["# Combinational OOD: comparison of the variants", "",
             "## Accuracy (%) per cell (as the seed's Table 2)", "",
             "| " + " | ".join(t2) + " |", "|" + "---|" * len(t2)]
    recs = comp.to_dict("records")
    for r in recs:
        lines.append("| " + " | ".join([r["variant"], f"`{r['model']}`", r["training"], str(int(r["K"]))]
                                       + [_pct(r[c]) for c in cells]) + " |")
    lines += ["", "## Accuracy (%) per group, template and label words (as the seed's Table 3)", "",
              "| " + " | ".join(t3) + " |", "|" + "---|" * len(t3)]
    for r in recs:
        lines.append("| " + " | ".join([r["variant"], f"`{r['template']}`", r["label_words"], str(int(r["K"]))]
                                       + [_pct(r[g]) for g in GROUPS]
                                       + [str(int(r["max_length"])),
                                          f"{int(r['too_long_train'])} / {int(r['too_long_test'])}",
                                          r["too_long_rule"]]) + " |")
    lines += ["", "fst / sec / neu: the first, second and third label; x/t: an input of label x with a template "
              "naming label t. " + _length_note("drop").split(", dropped")[0] + "; rule: drop (the seed's) or "
              "truncate_sentence."]
    return "\n".join(lines) + "\n"


def _seeds_comparison_markdown(comp: pd.DataFrame, seeds: list[int] | None) -> str:
    cells = [cell_name(x, t) for x, t, _, _ in CELLS]
    t2 = ["variant", "model", "training", "K", "seeds"] + cells
    t3 = ["variant", "template", "label words (fst/sec/neu)", "K", "seeds", "ID", "COOD", "OOD", "max_length",
          "too long (train / test)", "rule"]
    lines = ["# Combinational OOD: comparison of the variants", "",
             "## Accuracy (%) per cell (as the seed's Table 2), mean ± sd over training seeds", "",
             "| " + " | ".join(t2) + " |", "|" + "---|" * len(t2)]
    recs = comp.to_dict("records")
    for r in recs:
        lines.append("| " + " | ".join([r["variant"], f"`{r['model']}`", r["training"], str(int(r["K"])),
                                        str(int(r["n_seeds"]))] + [_pm(r, c) for c in cells]) + " |")
    lines += ["", "## Accuracy (%) per group, template and label words (as the seed's Table 3), mean ± sd over "
              "training seeds", "", "| " + " | ".join(t3) + " |", "|" + "---|" * len(t3)]
    for r in recs:
        lines.append("| " + " | ".join([r["variant"], f"`{r['template']}`", r["label_words"], str(int(r["K"])),
                                        str(int(r["n_seeds"]))] + [_pm(r, g) for g in GROUPS]
                                       + [str(int(r["max_length"])),
                                          f"{int(r['too_long_train'])} / {int(r['too_long_test'])}",
                                          r["too_long_rule"]]) + " |")
    lines += ["", "fst / sec / neu: the first, second and third label; x/t: an input of label x with a template "
              "naming label t. " + _length_note("drop").split(", dropped")[0] + "; rule: drop (the seed's) or "
              "truncate_sentence.", "",
              _seeds_line(seeds, "comparison.csv") if seeds else
              "Every accuracy: mean ± standard deviation over the training seeds (seeds: how many); `_sd`, `_min`, "
              "`_max` and `n_seeds` in comparison.csv. The counts are the same for every seed."]
    return "\n".join(lines) + "\n"
