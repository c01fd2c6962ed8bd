"""The combinational analysis' data sources and pools (Fang et al., AACL 2022; docs/ANALYSES.md).

The seed runs on Yelp reviews and MNLI, three labels each (its Table 1); one run of this project may
compare variants on several data sources (the seed's Table 2: Yelp rows 1-4, MNLI rows 5-8). A
source (``combinational.data``, or a variant's own ``data``) is read into labelled inputs
(:func:`load_data`: ``example_id``, ``text`` [, ``text_b``], ``label`` as names):

- ``hutto``: the Hutto & Gilbert sentences binned into three labels
  (:func:`beluga.analyses.combinational.hutto_three_way`);
- ``local``: a labelled file (:func:`beluga.analyses.combinational.load_labelled`);
- ``yelp``: Yelp Review Full's ``train.csv`` (:func:`beluga.data.yelp.load_yelp`), its stars binned
  by :data:`YELP_THREE_WAY` (1-2 negative, 3 neutral, 4-5 positive: the seed does not say how its
  five-star reviews became three labels; a project choice, docs/DEVIATIONS.md);
- ``mnli``: GLUE MNLI's ``train.tsv`` (:func:`beluga.data.glue.read_glue_part`), premise and
  hypothesis a sentence pair, labels entailment / neutral / contradiction by name.

Variants on the same data and roles share one pool (:func:`pools`): the block's own data keeps
``results/combinational/pool.parquet`` (a one-source run's paths are unchanged), another data source
is ``pool-<name>.parquet`` (``data.name``, default its source).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from beluga.analyses.combinational import RUN_KEYS, hutto_three_way, load_labelled, variant_data
from beluga.core.errors import ConfigError, DataError

#: Yelp Review Full's stars -> the three labels (a project choice: the seed does not say)
YELP_THREE_WAY = {"1": "negative", "2": "negative", "3": "neutral", "4": "positive", "5": "positive"}
#: the file stem of the block's own pool; another data source's is ``pool-<name>``
BLOCK_POOL = "pool"


def yelp_three_way(path: str) -> pd.DataFrame:
    """Yelp Review Full's training reviews with their stars binned into three labels (:data:`YELP_THREE_WAY`)."""
    from beluga.data.yelp import load_yelp

    df = load_yelp(path, "train")
    return df.assign(label=df["label"].map(YELP_THREE_WAY))


def mnli_pairs(folder: str) -> pd.DataFrame:
    """GLUE MNLI's training pairs (any form :func:`beluga.data.glue.locate_glue` finds in ``folder``):
    premise ``text``, hypothesis ``text_b``, ``label`` by name (entailment, neutral, contradiction)."""
    from beluga.data.glue import TASK_LABELS, expected_files, locate_glue, read_glue_part

    loc = locate_glue(Path(folder), "mnli")
    if loc is None or loc.missing:
        missing = f" ({', '.join(loc.missing)} missing)" if loc is not None else ""
        raise DataError(f"combinational data {folder}: field 'path': no GLUE MNLI files{missing}; expected "
                        f"{expected_files('mnli')} (python -m beluga data fetch)")
    df = read_glue_part("mnli", loc.parts["train"], "train")
    names = {i: n for n, i in TASK_LABELS["nli"].items()}
    return df.assign(label=df["label"].map(names))


def load_data(data: dict) -> pd.DataFrame:
    """The labelled inputs of a data source (the module docstring): ``example_id``, ``text``
    [, ``text_b``], ``label`` (the label values the roles name)."""
    source = data.get("source", "hutto")
    if source == "hutto":
        return hutto_three_way(data["sets"], data["negative_below"], data["neutral_within"], data["positive_above"])
    if source == "yelp":
        return yelp_three_way(data["path"])
    if source == "mnli":
        return mnli_pairs(data["path"])
    return load_labelled(data["path"])


def data_files(data: dict) -> list[str]:
    """The files a data source's pool reads (a job's declared inputs): a local file, Yelp's archive,
    the MNLI files found in its folder (none found: the archive the fetch writes there)."""
    source = data.get("source", "hutto")
    if source in ("local", "yelp"):
        return [data["path"]]
    if source == "mnli":
        from beluga.data.glue import GLUE_SPECS, locate_glue

        loc = locate_glue(Path(data["path"]), "mnli")
        return [str(f) for f in loc.files] if loc is not None else \
            [str(Path(data["path"]) / GLUE_SPECS["mnli"].archives[0])]
    return []


def data_name(data: dict) -> str:
    """A data source's name: ``data.name``, else its source."""
    return str(data.get("name") or data.get("source", "hutto"))


def pools(block: dict) -> tuple[dict[str, dict], dict[str, str]]:
    """(pool stem -> {``name``, ``data``, ``roles``, ``given_roles``: as the config gives them, None
    for a source's default}, variant -> its pool stem) for the variants of
    the combinational block (:func:`beluga.analyses.combinational.variants`; their data and roles:
    :func:`beluga.analyses.combinational.variant_data`). A variant on the block's data and roles
    reads :data:`BLOCK_POOL`; one with its own reads ``pool-<name>``; two different data sources
    (or roles) of one name stop with one line naming the variant's field."""
    base = variant_data(block, {}, "combinational")
    out: dict[str, dict] = {}
    of_variant: dict[str, str] = {}
    for i, entry in enumerate(block.get("variants") or [{"name": "default"}]):
        data, roles = variant_data(block, entry, f"combinational.variants[{i}]")
        name = data_name(data)
        stem = BLOCK_POOL if (data, roles) == base else f"{BLOCK_POOL}-{name}"
        other = next((s for s, p in out.items() if p["name"] == name and s != stem), None)
        if (stem in out and (out[stem]["data"], out[stem]["roles"]) != (data, roles)) or other is not None:
            raise ConfigError(f"config: field 'combinational.variants[{i}].data.name': variant "
                              f"{entry.get('name')!r} reads other data (or roles) than another variant's data "
                              f"named {name!r}; give each data source its own name")
        given = block.get("roles") if stem == BLOCK_POOL else \
            entry["roles"] if "roles" in entry else None if "data" in entry else block.get("roles")
        out.setdefault(stem, {"name": name, "data": data, "roles": roles, "given_roles": given})
        of_variant[str(entry.get("name"))] = stem
    return out, of_variant


def data_labels(block: dict) -> dict[str, str] | None:
    """variant -> the name of its data when the variants read more than one data source (the
    comparison groups its rows by data, as the seed's Table 2); None for one source (its tables
    are those of a one-source run)."""
    specs, of_variant = pools(block)
    if len({p["name"] for p in specs.values()}) < 2:
        return None
    return {v: specs[s]["name"] for v, s in of_variant.items()}


def comparison_settings(block: dict, variants: dict[str, dict]) -> dict[str, dict]:
    """The variants' settings as the comparison reads them (without the keys that choose their runs,
    :data:`~beluga.analyses.combinational.RUN_KEYS`: the tables hold the runs): with the name of each
    one's data (``data``) when they read several data sources (:func:`data_labels`)."""
    labels = data_labels(block)
    settings = {n: {k: x for k, x in v.items() if k not in RUN_KEYS} for n, v in variants.items()}
    return {n: {**v, "data": labels[n]} for n, v in settings.items()} if labels else settings


def panel_titles(block: dict, variants: dict[str, dict], names: list[str]) -> dict[str, str]:
    """variant -> the title of its panel in a figure across variants (``names``: the figure's panel
    variants): its model and its data's name (``roberta-base on yelp``, as the seed's panels are
    told apart), with the variant's name added where two of the figure's panels would read alike."""
    specs, of_variant = pools(block)
    plain = {v: f"{variants[v]['model']} on {specs[of_variant[v]]['name']}" for v in dict.fromkeys(names)}
    seen = list(plain.values())
    return {v: t if seen.count(t) == 1 else f"{t} ({v})" for v, t in plain.items()}
