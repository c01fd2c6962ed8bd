"""The combinational analysis' data sources (beluga/analyses/combinational_data.py; seed 002: Yelp and
MNLI): Yelp's stars binned into three labels, MNLI's pairs by label name, each read from tiny files in
the official shapes built here (GLUE's MNLI.zip, the Yelp Review Full archive; the builders are
tests/test_glue_data.py's and tests/test_challenge_data.py's), per-variant data (one pool per data
source, the block's keeping pool.parquet), what the fetch provides, the comparison grouped by data,
configs/combinational_paper.yaml (schema, plan, staged dry run) and a tiny end-to-end run of an MNLI
variant beside a Yelp one."""

import copy
import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, pipeline
from snakemake.utils import validate
from test_challenge_data import yelp_archive
from test_glue_data import glue_zip, one_line

from beluga.analyses import combinational as comb
from beluga.analyses import combinational_data as cdata
from beluga.analyses import combinational_report as report
from beluga.core.errors import ConfigError, DataError
from beluga.data import fetch, remotes

SCHEMA = REPO / "schemas" / "config.schema.yaml"
PAPER = REPO / "configs" / "combinational_paper.yaml"
MNLI = {"source": "mnli", "name": "mnli"}
TINY = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())


def yelp_rows(n: int) -> str:
    """``n`` reviews, the stars cycling 1..5 (the archive's quoting)."""
    return "".join(f'"{1 + i % 5}","review {i} was fine"\n' for i in range(n))


def staged(root: Path, n_mnli: int = 60, n_yelp: int = 60) -> Path:
    """A data folder as the fetch leaves it for the paper configuration: MNLI.zip and Yelp's archive."""
    glue_zip(root / "iid" / "mnli", "mnli", n_train=n_mnli, n_dev=12)
    path = root / remotes.YELP_ARCHIVE
    path.parent.mkdir(parents=True, exist_ok=True)
    yelp_archive(path, yelp_rows(n_yelp))
    return root


def block(**kw) -> dict:
    """A validated combinational block (the schema's defaults filled)."""
    cfg = {**copy.deepcopy(TINY), "combinational": kw}
    validate(cfg, schema=str(SCHEMA))
    return cfg["combinational"]


# ---------------------------------------------------------------- the sources
def test_yelp_stars_binned_into_three_labels(tmp_path):
    path = staged(tmp_path, n_yelp=10) / remotes.YELP_ARCHIVE
    df = cdata.load_data({"source": "yelp", "path": str(path)})
    stars = [1 + i % 5 for i in range(10)]
    assert list(df["label"]) == [cdata.YELP_THREE_WAY[str(s)] for s in stars]
    assert list(df["label"][:5]) == ["negative", "negative", "neutral", "positive", "positive"]
    assert list(df["example_id"][:2]) == ["yelp-train-0", "yelp-train-1"]   # train.csv only
    assert comb.check_roles(None, "yelp") == {"fst": "positive", "sec": "negative", "neu": "neutral"}
    with pytest.raises(ConfigError) as e:
        comb.check_roles({"fst": "5", "sec": "1", "neu": "3"}, "yelp", "combinational.variants[2].roles")
    assert "field 'combinational.variants[2].roles.fst': '5' is not a label of the Yelp stars" in one_line(e)


def test_mnli_pairs_labels_by_name(tmp_path):
    staged(tmp_path, n_mnli=6)
    df = cdata.load_data({"source": "mnli", "path": str(tmp_path / "iid" / "mnli")})
    assert list(df["label"]) == ["entailment", "neutral", "contradiction"] * 2
    assert df["text"][0] == 'premise 0 with a "quote' and df["text_b"][0] == "hypothesis 0"
    assert list(df["example_id"][:2]) == ["mnli-train-0", "mnli-train-1"]
    pool = comb.split_pool(comb.assign_roles(df, comb.check_roles(None, "mnli")), 1, 3)
    assert comb.is_pair(pool) and set(pool[pool["role"] == "fst"]["label"]) == {"entailment"}
    assert cdata.data_files({"source": "mnli", "path": str(tmp_path / "iid" / "mnli")}) == [
        str(tmp_path / "iid" / "mnli" / "MNLI.zip")]
    assert cdata.data_files({"source": "mnli", "path": str(tmp_path / "absent")}) == [
        str(tmp_path / "absent" / "MNLI.zip")]
    with pytest.raises(DataError) as e:
        cdata.load_data({"source": "mnli", "path": str(tmp_path / "absent")})
    assert f"combinational data {tmp_path / 'absent'}: field 'path': no GLUE MNLI files" in one_line(e)


# ---------------------------------------------------------------- per-variant data
def test_one_source_keeps_the_one_pool_and_its_tables():
    b = block(variants=[{"name": "a"}, {"name": "b", "template": "{S} The sentence is {LABEL}."}])
    specs, of = cdata.pools(b)
    assert list(specs) == ["pool"] and of == {"a": "pool", "b": "pool"}
    assert specs["pool"]["given_roles"] is None and specs["pool"]["roles"] == comb.HUTTO_ROLES
    assert cdata.data_labels(b) is None
    # the comparison's params as before: the variants' settings without the K values they run (RUN_KEYS)
    assert cdata.comparison_settings(b, comb.variants(b)) == {
        n: {k: x for k, x in v.items() if k != "ks"} for n, v in comb.variants(b).items()}
    assert all("ks" in v for v in comb.variants(b).values())
    assert "data" not in comb.variants(b)["a"]   # a variant's settings (its jobs' params) are unchanged


def test_variants_on_their_own_data_get_their_own_pool():
    b = block(data={"source": "yelp", "path": "y.tgz"}, variants=[
        {"name": "yelp_a"}, {"name": "mnli_a", "data": {**MNLI, "path": "m"}},
        {"name": "mnli_b", "data": {**MNLI, "path": "m"}, "roles": dict(comb.SOURCE_ROLES["mnli"])},
        {"name": "yelp_b", "data": {"source": "yelp", "path": "y.tgz"}}])
    specs, of = cdata.pools(b)
    assert of == {"yelp_a": "pool", "mnli_a": "pool-mnli", "mnli_b": "pool-mnli", "yelp_b": "pool"}
    assert specs["pool-mnli"]["roles"] == {"fst": "entailment", "sec": "contradiction", "neu": "neutral"}
    assert specs["pool-mnli"]["given_roles"] is None and specs["pool"]["name"] == "yelp"
    assert cdata.data_labels(b) == {"yelp_a": "yelp", "mnli_a": "mnli", "mnli_b": "mnli", "yelp_b": "yelp"}
    settings = cdata.comparison_settings(b, comb.variants(b))
    assert settings["mnli_a"]["data"] == "mnli" and settings["mnli_a"]["template"] == b["template"]


@pytest.mark.parametrize("variants, field", [
    ([{"name": "a", "data": {"source": "local", "path": "x.tsv"}}], "combinational.variants[0].roles"),
    ([{"name": "a", "data": {"source": "local"}, "roles": {"fst": "p", "sec": "n", "neu": "o"}}],
     "combinational.variants[0].data.path"),
    ([{"name": "a", "data": MNLI, "roles": {"fst": "positive", "sec": "negative", "neu": "neutral"}}],
     "combinational.variants[0].roles.fst"),
    ([{"name": "a", "data": {**MNLI, "path": "one"}}, {"name": "b", "data": {**MNLI, "path": "two"}}],
     "combinational.variants[1].data.name"),
    ([{"name": "a", "data": {"source": "hutto", "negative_below": 0.5}}],
     "combinational.variants[0].data.negative_below"),
])
def test_a_variants_bad_data_names_its_field(variants, field):
    b = block(variants=variants)
    with pytest.raises(ConfigError) as e:
        comb.variants(b)
        cdata.pools(b)
    assert f"field '{field}'" in one_line(e)


def test_comparison_grouped_by_data():
    t = pd.DataFrame([{"K": 4, "n_train": 16, "n_test": 27, "too_long_train": 0, "too_long_test": 0,
                       "dropped_train": 0, "dropped_test": 0,
                       **{c: 0.5 for c in [comb.cell_name(x, y) for x, y, _, _ in comb.CELLS] + list(comb.GROUPS)}}])
    words = {"fst": "great", "sec": "terrible", "neu": "okay"}
    settings = {n: {"model": "m", "training": {"lr": 1e-5, "batch_size": 32, "epochs": 3}, "template": "{S} It is",
                    "label_words": words, "max_length": 100, "too_long": "drop"} for n in ("y1", "m1", "y2")}
    plain = report.comparison({n: t for n in settings}, settings)
    assert "data" not in plain.columns and list(plain["variant"]) == ["y1", "m1", "y2"]
    comp = report.comparison({n: t for n in settings}, settings, {"y1": "yelp", "m1": "mnli", "y2": "yelp"})
    assert list(comp.columns[:2]) == ["data", "variant"]
    assert list(zip(comp["data"], comp["variant"])) == [("yelp", "y1"), ("yelp", "y2"), ("mnli", "m1")]
    md = report.comparison_markdown(comp)
    assert "| data | variant | model |" in md and "| data | variant | template |" in md
    assert "| mnli | m1 | `m` |" in md
    assert report.comparison_markdown(plain).count("| data |") == 0


# ---------------------------------------------------------------- fetch and the paper configuration
def test_panel_titles_name_model_and_data():
    b = block(variants=[{"name": "yb", "model": "roberta-base", "data": {"source": "yelp"}},
                        {"name": "mb", "model": "roberta-base", "data": MNLI},
                        {"name": "mb_cat", "model": "roberta-base", "data": MNLI,
                         "label_words": {"fst": "cat", "sec": "dog", "neu": "bird"}}])
    vs = comb.variants(b)
    assert cdata.panel_titles(b, vs, ["mb", "yb"]) == {"mb": "roberta-base on mnli", "yb": "roberta-base on yelp"}
    # two panels alike: each named
    assert cdata.panel_titles(b, vs, ["mb", "mb_cat", "yb"]) == {
        "mb": "roberta-base on mnli (mb)", "mb_cat": "roberta-base on mnli (mb_cat)", "yb": "roberta-base on yelp"}


def test_fetch_provides_each_variants_data(tmp_path):
    config = {**copy.deepcopy(TINY), "data_dir": str(tmp_path),
              "combinational": yaml.safe_load(PAPER.read_text())["combinational"]}
    validate(config, schema=str(SCHEMA))
    fetch.resolve_data_paths(config)
    comb_block = config["combinational"]
    assert comb_block["data"]["path"] == os.path.relpath(tmp_path / remotes.YELP_ARCHIVE) or \
        comb_block["data"]["path"] == str(tmp_path / remotes.YELP_ARCHIVE)
    mnli = [v["data"] for v in comb_block["variants"] if v.get("data")]
    assert len({id(d) for d in mnli}) == 1   # one YAML anchor, resolved once (not data_dir twice)
    assert Path(mnli[0]["path"]).resolve() == (tmp_path / "iid" / "mnli").resolve()
    assert [r.path for r in fetch.config_files({**config, "tasks": {}})] == [remotes.YELP_ARCHIVE,
                                                                             remotes.IID_FILES["mnli"]]


def test_paper_config_follows_the_seed():
    cfg = yaml.safe_load(PAPER.read_text())
    validate(cfg, schema=str(SCHEMA))
    b = cfg["combinational"]
    variants = comb.variants(b)
    specs, of = cdata.pools(b)
    assert {s["name"] for s in specs.values()} == {"yelp", "mnli"}
    assert b["ks"] == [2000] and b["max_length"] == 100 and b["too_long"] == "drop"   # Tables 2 and 3
    table2 = [f"{d}_{m}" for d in ("yelp", "mnli") for m in ("bert_base", "bert_large", "roberta_base",
                                                               "roberta_large")]
    assert list(variants)[:8] == table2
    for name, v in variants.items():
        assert v["training"]["lr"] == 1e-5
        assert v["training"]["batch_size"] == (8 if "large" in v["model"] else 32), name
        if of[name] == "pool-mnli":
            assert v["label_words"] == {"fst": "entailment", "sec": "contradiction", "neu": "neutral"}
            assert v["template"] == "{S} It is {LABEL}"
    assert variants["yelp_roberta_base"]["label_words"] == {"fst": "great", "sec": "terrible", "neu": "okay"}
    table3 = {n: v for n, v in variants.items() if n.startswith("yelp_roberta_base") and not n.endswith("_epochs")}
    assert {v["template"] for v in table3.values()} == {"{S} It is {LABEL}", "{S} The sentence is {LABEL}",
                                                        "{S} This sound like {LABEL}"}
    assert len(table3) == 6 and {v["model"] for v in table3.values()} == {"roberta-base"}
    # Figure 3: RoBERTa base and large swept over K on both data sets (K = 2,000 their Table 2 row), MNLI on top
    sweep = [f"{d}_roberta_{s}" for d in ("mnli", "yelp") for s in ("base", "large")]
    assert all(variants[n]["ks"] == [500, 1000, 2000, 3000, 4000] for n in sweep)
    assert all(v["ks"] == [2000] for n, v in variants.items() if n not in sweep and not n.endswith("_epochs"))
    # Figure 2: BERT-base (left) and RoBERTa-base (right) on Yelp at K = 3,000, every epoch of 10
    fig2 = ["yelp_bert_base_epochs", "yelp_roberta_base_epochs"]
    for n, base in zip(fig2, ("yelp_bert_base", "yelp_roberta_base")):
        assert variants[n]["ks"] == [3000] and variants[n]["training"]["epochs"] == 10 and of[n] == "pool"
        assert {k: variants[n][k] for k in ("model", "model_revision", "template", "label_words")} == \
            {k: variants[base][k] for k in ("model", "model_revision", "template", "label_words")}
    assert comb.figures(b, variants) == {"epochs": {"k": 3000, "panels": [fig2]},
                                         "ks": {"panels": [sweep[:2], sweep[2:]]}}
    assert b["per_epoch"] is True


# ---------------------------------------------------------------- end to end
def test_mnli_and_yelp_variants_end_to_end(tmp_path):
    """A tiny run of the seed's two data sets: an MNLI-shaped archive (pairs, the template on the
    hypothesis) as the block's data, a Yelp-shaped archive as a variant's own; tiny-random, small K."""
    data = staged(tmp_path / "data", n_mnli=45, n_yelp=75)
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["data_dir"] = str(data)
    cfg["combinational"] = {
        "model": "tiny-random", "ks": [4, 6], "n_test": 3, "max_length": 48, "template": "{S} It is {LABEL}",
        "data": {"source": "mnli"}, "label_words": {"fst": "entailment", "sec": "contradiction", "neu": "neutral"},
        "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": 1},
        "variants": [{"name": "mnli_tiny"},
                     {"name": "yelp_tiny", "data": {"source": "yelp", "per_label": 12},
                      "label_words": {"fst": "great", "sec": "terrible", "neu": "okay"}}]}
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp_path / "run"
    pipeline(wd, "--cores", "2", "combinational_all", configfiles=(cfg_file,))
    res = wd / "results" / "combinational"
    mnli_pool, yelp_pool = pd.read_parquet(res / "pool.parquet"), pd.read_parquet(res / "pool-yelp.parquet")
    assert comb.is_pair(mnli_pool) and not comb.is_pair(yelp_pool)
    assert len(yelp_pool) == 3 * 12 and len(mnli_pool) == 45   # per_label: the first 12 of each label's order
    assert set(zip(mnli_pool["role"], mnli_pool["label"])) == {("fst", "entailment"), ("sec", "contradiction"),
                                                              ("neu", "neutral")}
    assert set(zip(yelp_pool["role"], yelp_pool["label"])) == {("fst", "positive"), ("sec", "negative"),
                                                              ("neu", "neutral")}
    k6 = json.loads((res / "mnli_tiny" / "runs" / "k6.json").read_text())
    assert k6["pair"] and k6["n_train"] == 4 * 6 and k6["n_test"] == 9 * 3
    assert set(k6["train_x"]) <= set(mnli_pool["example_id"]) and not set(k6["train_x"]) & set(
        mnli_pool.query("split == 'test'")["example_id"])
    y6 = json.loads((res / "yelp_tiny" / "runs" / "k6.json").read_text())
    assert not y6["pair"] and set(y6["train_x"]) <= set(yelp_pool["example_id"])
    comp = pd.read_csv(res / "comparison.csv")
    assert list(zip(comp["data"], comp["variant"], comp["K"])) == [
        ("mnli", "mnli_tiny", 4), ("mnli", "mnli_tiny", 6), ("yelp", "yelp_tiny", 4), ("yelp", "yelp_tiny", 6)]
    for cell in [comb.cell_name(x, t) for x, t, _, _ in comb.CELLS] + list(comb.GROUPS):
        assert comp[cell].between(0, 1).all(), cell
    assert "| data | variant |" in (res / "comparison.md").read_text()
    out = pipeline(wd, "-n", "combinational_all", configfiles=(cfg_file,))
    assert "Nothing to be done" in out.stdout + out.stderr


def test_per_label_keeps_a_prefix_of_the_seeded_order():
    rows = [{"example_id": f"{r}{i:03d}", "text": f"s {r} {i}", "label": r, "role": r}
            for r in comb.COMB_ROLES for i in range(40)]
    whole = comb.split_pool(pd.DataFrame(rows), n_test=5, seed=3)
    part = comb.split_pool(pd.DataFrame(rows), n_test=5, seed=3, per_label=12)
    assert len(part) == 3 * 12 and (part.groupby("role").size() == 12).all()
    key = ["example_id", "split", "rank"]
    merged = part[key].merge(whole[key], on="example_id", suffixes=("", "_whole"))
    assert (merged["split"] == merged["split_whole"]).all() and (merged["rank"] == merged["rank_whole"]).all()
    assert set(part.query("split == 'test'")["example_id"]) == set(whole.query("split == 'test'")["example_id"])
    with pytest.raises(DataError) as e:
        comb.split_pool(pd.DataFrame(rows), n_test=5, seed=3, per_label=5)
    assert "field 'per_label': 5 inputs per label leave no training input" in one_line(e)
