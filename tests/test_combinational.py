"""Combinational OOD (beluga/analyses/combinational.py; Fang et al., AACL 2022): the nine
combinations of the seed's Table 2, inputs longer than max_length (never the
template cut: dropped, as the seed, or the sentence cut), sentence pairs,
variants (several models / templates / label words in one run) and their
comparison table, with a tiny end-to-end run of two variants."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, pipeline
from snakemake.utils import validate

from beluga.analyses import combinational as comb
from beluga.analyses import combinational_report as report
from beluga.core.errors import ConfigError, DataError
from beluga.data.fetch import resolve_data_paths
from beluga.methods import method_hparams
from beluga.workflow.paths import Paths
from beluga.workflow.resources import BASE_MEM_MB
from beluga.workflow.runs import Runs

WORDS = {"fst": "great", "sec": "terrible", "neu": "okay"}
TEMPLATE = "{S} It is {LABEL}."
SCHEMA = REPO / "schemas" / "config.schema.yaml"


def pool(n=30, long_every=0, long_words=80, pair=False):
    """n inputs per role; every ``long_every``-th input a sentence of ``long_words`` words."""
    rows = []
    for r, lab in (("fst", "positive"), ("sec", "negative"), ("neu", "neutral")):
        for i in range(n):
            text = f"sentence {r} {i}"
            if long_every and i % long_every == 0:
                text = f"{text} " + " ".join(f"filler{j % 7}" for j in range(long_words))
            row = {"example_id": f"{r}{i:02d}", "text": text, "label": lab, "role": r}
            if pair:
                row["text"], row["text_b"] = f"premise {r} {i}", text
            rows.append(row)
    return comb.split_pool(pd.DataFrame(rows), n_test=5, seed=3)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from beluga.model.modeling import default_model_path

    return AutoTokenizer.from_pretrained(default_model_path())


def encoded(tokenizer, df: pd.DataFrame, max_length: int) -> list[tuple]:
    """Token ids as the training loop and predict_probs feed them to the model (truncated at max_length)."""
    b = list(df["text_b"]) if "text_b" in df.columns else None
    return [tuple(ids) for ids in tokenizer(list(df["text"]), b, truncation=True, max_length=max_length)["input_ids"]]


# ---------------------------------------------------------------- the nine combinations


def test_nine_combinations_labels_and_disjoint_inputs():
    train, test = comb.build(pool(), 8, WORDS, TEMPLATE)
    role_word = {w: r for r, w in WORDS.items()}

    def pairs(df):
        return {(x.rsplit("|", 1)[0][:3], role_word[t.split("It is ")[1].rstrip(".")], y)
                for x, t, y in zip(df["example_id"], df["text"], df["label"])}
    assert pairs(train) == {("fst", "fst", 0), ("sec", "sec", 0), ("neu", "fst", 1), ("neu", "sec", 1)}
    assert pairs(test) == {("fst", "fst", 0), ("sec", "sec", 0), ("neu", "fst", 1), ("neu", "sec", 1),
                           ("fst", "sec", 1), ("sec", "fst", 1), ("fst", "neu", 1), ("sec", "neu", 1),
                           ("neu", "neu", 0)}
    assert set(test["cell"]) == {comb.cell_name(x, t) for x, t, _, _ in comb.CELLS}
    assert dict(test.groupby("group")["cell"].nunique()) == {"ID": 4, "COOD": 2, "OOD": 3}
    # 2K examples with ŷ = 0 and 2K with ŷ = 1; K inputs per label
    assert (train["label"] == 0).sum() == 16 and (train["label"] == 1).sum() == 16
    assert train.groupby(train["x_id"].str[:3])["x_id"].nunique().to_dict() == {"fst": 8, "neu": 8, "sec": 8}
    assert not set(train["x_id"]) & set(test["x_id"])                  # no test input is ever trained on
    assert test.groupby("cell").size().eq(5).all()
    assert all(t.endswith((" It is great.", " It is terrible.", " It is okay.")) for t in test["text"])


def test_training_sets_are_nested_in_k_and_the_pool_is_seeded():
    p = pool()
    small, _ = comb.build(p, 4, WORDS, TEMPLATE)
    large, _ = comb.build(p, 12, WORDS, TEMPLATE)
    assert set(small["x_id"]) < set(large["x_id"])
    again = pool()
    pd.testing.assert_frame_equal(p, again)
    with pytest.raises(DataError, match="K = 40 needs 40 training inputs"):
        comb.build(p, 40, WORDS, TEMPLATE)
    with pytest.raises(ConfigError, match="needs {S} and {LABEL}"):
        comb.build(p, 4, WORDS, "It is {LABEL}.")


def test_cell_accuracy():
    _, test = comb.build(pool(), 4, WORDS, TEMPLATE)
    pred = test["label"].to_numpy().copy()
    cood = (test["group"] == "COOD").to_numpy()
    pred[cood] = 1 - pred[cood]                        # the shortcut: every COOD example wrong
    acc = comb.cell_accuracy(test, pred)
    assert acc["ID"] == 1.0 and acc["COOD"] == 0.0 and acc["OOD"] == 1.0 and acc["fst/sec"] == 0.0


# ---------------------------------------------------------------- inputs longer than max_length


def test_long_inputs_never_lose_the_template_nor_become_identical_with_opposite_labels(tokenizer):
    """Right-truncating "<S> It is <LABEL>." at max_length cut the label word off long inputs, so
    that the fst and sec templates of the same x were the same tokens with opposite labels. The
    seed's rule (the default): such an x is dropped from every cell, counted per split."""
    max_length = 32
    naive, _ = comb.build(pool(long_every=4), 8, WORDS, TEMPLATE)   # the whole string right-truncated
    ids = encoded(tokenizer, naive, max_length)
    assert len(set(ids)) < len(ids)                                  # the label word cut off: collisions
    p = comb.fit_inputs(pool(long_every=4), WORDS, TEMPLATE, tokenizer, max_length)   # too_long: drop
    train, test = comb.build(p, 8, WORDS, TEMPLATE)
    for df in (train, test):
        ids = encoded(tokenizer, df, max_length)
        assert max(len(i) for i in ids) <= max_length
        labels = {}
        for i, y in zip(ids, df["label"]):
            labels.setdefault(i, set()).add(y)
        assert all(len(ys) == 1 for ys in labels.values()), "token-identical inputs with opposite labels"
        assert len(labels) == len(df)
        for i, w, in zip(ids, df["example_id"].str.split("|").str[1]):   # every input ends with its template
            tail = tokenizer(f"It is {WORDS[w]}.", add_special_tokens=False)["input_ids"]
            assert list(i[-len(tail) - 1:-1]) == tail
    assert not train["text"].str.contains("filler").any() and not test["text"].str.contains("filler").any()
    # K = 8 kept inputs per role still; nested in K; the dropped counted per split
    assert train.groupby(train["x_id"].str[:3])["x_id"].nunique().to_dict() == {"fst": 8, "neu": 8, "sec": 8}
    small, _ = comb.build(p, 4, WORDS, TEMPLATE)
    assert set(small["x_id"]) < set(train["x_id"])
    counts = comb.length_counts(p, 8, "drop", max_length)
    long_x = p[p["text"].str.contains("filler")]
    assert counts["too_long"]["test"] == counts["dropped"]["test"] == (long_x["split"] == "test").sum() > 0
    assert counts["too_long"]["train_pool"] == (long_x["split"] == "train").sum() > counts["too_long"]["train"] > 0
    assert counts["truncated"] == {"train": 0, "test": 0} and counts["max_tokens"] > max_length
    assert len(test) == 9 * 5 - 3 * counts["dropped"]["test"]   # a dropped x leaves its three cells


def test_truncate_sentence_cuts_whole_words_of_the_sentence_only(tokenizer):
    max_length = 32
    raw = pool(long_every=4)
    p = comb.fit_inputs(raw, WORDS, TEMPLATE, tokenizer, max_length, "truncate_sentence")
    assert p["kept"].all() and (p["truncated"] == p["too_long"]).all() and p["truncated"].any()
    for before, after in zip(raw["text"][p["truncated"]], p["text"][p["truncated"]]):
        assert before.startswith(after) and before.split()[:len(after.split())] == after.split()
    train, test = comb.build(p, 8, WORDS, TEMPLATE)
    for df in (train, test):
        ids = encoded(tokenizer, df, max_length)
        full = [tuple(i) for i in tokenizer(list(df["text"]))["input_ids"]]
        assert ids == full   # nothing left for the model's truncation to cut
        assert df["text"].str.endswith((" It is great.", " It is terrible.", " It is okay.")).all()
    counts = comb.length_counts(p, 8, "truncate_sentence", max_length)
    assert counts["dropped"] == {"train": 0, "test": 0}
    assert counts["truncated"]["test"] == counts["too_long"]["test"] > 0
    with pytest.raises(ConfigError, match="max_length"):
        comb.fit_inputs(raw, WORDS, "{S} " + "and so on " * 10 + "it is {LABEL}.", tokenizer, 16)


def test_sentence_pairs_template_on_the_hypothesis(tokenizer):
    p = pool(pair=True)
    train, test = comb.build(p, 4, WORDS, TEMPLATE)
    assert train["text"].str.startswith("premise ").all()
    assert test["text_b"].str.endswith((" It is great.", " It is terrible.", " It is okay.")).all()
    long_pairs = comb.fit_inputs(pool(long_every=4, pair=True), WORDS, TEMPLATE, tokenizer, 32,
                                 "truncate_sentence")
    train, test = comb.build(long_pairs, 8, WORDS, TEMPLATE)
    assert max(len(i) for i in tokenizer(list(test["text"]), list(test["text_b"]))["input_ids"]) <= 32
    assert (test["text"].str.startswith("premise")).all()
    dropped = comb.fit_inputs(pool(long_every=4, pair=True), WORDS, TEMPLATE, tokenizer, 32)
    assert dropped["too_long"].sum() == long_pairs["truncated"].sum() > 0 and not dropped["truncated"].any()


def test_local_pair_file(tmp_path):
    f = tmp_path / "nli.tsv"
    f.write_text("id\ttext\ttext_b\tlabel\n1\tA man sleeps.\tA person rests.\tentailment\n"
                 "2\tA man sleeps.\tA man runs.\tcontradiction\n")
    df = comb.load_labelled(str(f))
    assert list(df.columns) == ["example_id", "text", "text_b", "label"] and df["text_b"][1] == "A man runs."


# ---------------------------------------------------------------- variants and the comparison


def test_variants_default_and_merged():
    block = {"model": "default", "model_revision": None, "template": TEMPLATE, "label_words": WORDS,
             "max_length": 64, "training": {"lr": 5e-5, "batch_size": 16, "epochs": 3}, "too_long": "drop",
             "ks": [4, 8]}
    assert comb.variants(block) == {"default": {k: block[k] for k in comb.VARIANT_KEYS + comb.RUN_KEYS}}
    vs = comb.variants({**block, "variants": [
        {"name": "minilm"},
        {"name": "minilm_sentence", "template": "{S} The sentence is {LABEL}.", "label_words": {"fst": "cat"},
         "training": {"epochs": 1}, "too_long": "truncate_sentence", "ks": [2, 4, 16]}]})
    assert list(vs) == ["minilm", "minilm_sentence"] and vs["minilm"]["template"] == TEMPLATE
    assert vs["minilm"]["ks"] == [4, 8] and vs["minilm_sentence"]["ks"] == [2, 4, 16]   # its own K values
    assert vs["minilm_sentence"]["label_words"] == {**WORDS, "fst": "cat"}
    assert vs["minilm_sentence"]["training"] == {"lr": 5e-5, "batch_size": 16, "epochs": 1}
    for bad, match in (([{"name": "a"}, {"name": "a"}], "appears twice"), ([{"name": "a/b"}], "path-safe"),
                       ([{"name": "a", "template": "{S}"}], r"variants\[0\].template")):
        with pytest.raises(ConfigError, match=match):
            comb.variants({**block, "variants": bad})


def test_runs_settings_per_variant():
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["combinational"] = {"model": "tiny-random", "ks": [4], "n_test": 6, "max_length": 32, "seed": 13,
                            "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": 2},
                            "variants": [{"name": "a"}, {"name": "b", "max_length": 48, "model": "org/other",
                                                         "training": {"epochs": 1}}]}
    validate(cfg, str(SCHEMA))
    resolve_data_paths(cfg)
    r = Runs(cfg, Paths(cfg["results"]), str(cfg["data_dir"]))
    a = r.settings("combinational_train", {"variant": "a", "k": "4"})
    b = r.settings("combinational_train", {"variant": "b", "k": "4"})
    assert (a["model"], a["max_length"], a["fold"], a["seed"]) == ("tiny-random", 32, "a-k4", 13)
    assert a["hparams"] == {"lr": 1e-3, "batch_size": 8, "epochs": 2, **method_hparams("vanilla")}
    assert (b["model"], b["max_length"], b["hparams"]["epochs"], b["hparams"]["lr"]) == ("org/other", 48, 1, 1e-3)
    assert b["model_lock"] == r.model_marker(None, "b") and a["model_lock"] is None
    res = r.job_resources("train")
    train = BASE_MEM_MB["train"]   # tiny-random: scale 0.5; org/other: 1
    assert res["mem_mb"]({"variant": "a", "k": "4"}, 1) == int(train * 0.5)
    assert res["mem_mb"]({"variant": "b", "k": "4"}, 1) == train
    bad = {**cfg, "combinational": {**cfg["combinational"], "variants": [{"name": "x y"}]}}
    with pytest.raises(Exception, match="does not match"):
        validate(bad, str(SCHEMA))


def test_comparison_table():
    t = pd.DataFrame([{"K": k, "n_train": 4 * k, "n_test": 45,
                       **{comb.cell_name(x, y): 0.5 for x, y, _, _ in comb.CELLS},
                       "ID": 0.9, "COOD": 0.6, "OOD": 0.2, "too_long_train": 1, "too_long_test": 2,
                       "dropped_train": 1, "dropped_test": 2} for k in (4, 8)])
    settings = {"a": {"model": "tiny-random", "template": TEMPLATE, "label_words": WORDS, "max_length": 32,
                      "too_long": "drop", "training": {"lr": 5e-5, "batch_size": 16, "epochs": 3}},
                "b": {"model": "tiny-random", "template": "{S} The sentence is {LABEL}.",
                      "label_words": {"fst": "cat", "sec": "dog", "neu": "bird"}, "max_length": 32,
                      "too_long": "truncate_sentence"}}
    comp = report.comparison({"a": t, "b": t}, settings)
    assert list(zip(comp["variant"], comp["K"])) == [("a", 4), ("a", 8), ("b", 4), ("b", 8)]
    assert list(comp["label_words"]) == ["great/terrible/okay"] * 2 + ["cat/dog/bird"] * 2
    assert list(comp["training"]) == ["lr 5e-05, batch 16, 3 epochs"] * 2 + ["–"] * 2
    md = report.comparison_markdown(comp)
    assert "| a | `tiny-random` | lr 5e-05, batch 16, 3 epochs | 4 |" in md
    assert "Table 2" in md and "Table 3" in md and "| b | `{S} The sentence is {LABEL}.` | cat/dog/bird | 8 |" in md


# ---------------------------------------------------------------- accuracy per epoch (Figure 2) and over K (Figure 3)


def tiny_cell(tmp_path, epochs: int, per_epoch: bool, name: str) -> dict:
    """One variant and K (K = 4 of the tiny pool, tiny-random, ``epochs`` epochs) trained in-process through
    combinational_train; its run record."""
    from beluga.core.io import write_parquet
    from beluga.steps.combinational import combinational_train

    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["combinational"] = {"model": "tiny-random", "ks": [4], "n_test": 5, "max_length": 32, "seed": 13,
                            "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": epochs}}
    validate(cfg, str(SCHEMA))
    resolve_data_paths(cfg)
    run = Runs(cfg, Paths(str(tmp_path / "results")), str(cfg["data_dir"])).settings(
        "combinational_train", {"variant": "default", "k": "4"})
    pool_file = tmp_path / "pool.parquet"
    write_parquet(pool(n=12), str(pool_file))
    out = tmp_path / f"{name}.json"
    combinational_train(run=run, pool=str(pool_file), k=4, variant="default", words=WORDS, template=TEMPLATE,
                        too_long="drop", batch_size=16, per_epoch=per_epoch, out_result=str(out))
    return json.loads(out.read_text())


def test_every_cell_is_recorded_after_every_epoch(tmp_path, monkeypatch):
    """A tiny cell trained 3 epochs: one entry per epoch (1, 2, 3) with the accuracy of the nine cells and
    three groups, each a share of its 5 or 10 / 15 / 20 test examples; the last epoch's is the record's own
    accuracy (the last-epoch model), predicted once: 3 predictions in all, not 4. Evaluating after each epoch
    leaves training as it was: without per_epoch, the same steps and the same final accuracy, and no epochs."""
    import beluga.heads.classification as classification

    calls = []
    forward = classification.sequence_forward
    monkeypatch.setattr(classification, "sequence_forward", lambda *a, **k: calls.append(1) or forward(*a, **k))
    rec = tiny_cell(tmp_path, 3, True, "per_epoch")
    assert len(calls) == 3
    assert [e["epoch"] for e in rec["per_epoch"]] == [1, 2, 3]
    sizes = {**dict.fromkeys(CELL_NAMES, 5), "ID": 20, "COOD": 10, "OOD": 15}
    for e in rec["per_epoch"]:
        assert set(e) == {"epoch", *sizes}
        for c, n in sizes.items():   # a share of n examples
            assert 0 <= e[c] <= 1 and e[c] * n == pytest.approx(round(e[c] * n)), (e["epoch"], c)
        # a group is the mean over its cells' examples (equal-sized cells: the mean of the cells)
        assert e["COOD"] == pytest.approx((e["fst/sec"] + e["sec/fst"]) / 2)
    assert rec["per_epoch"][-1] == {"epoch": 3, **rec["accuracy"]}
    plain = tiny_cell(tmp_path, 3, False, "plain")
    assert plain["per_epoch"] == [] and plain["steps"] == rec["steps"] == 3 * 2   # 16 examples, batch 8
    assert plain["accuracy"] == rec["accuracy"]


def test_figures_across_variants_are_checked():
    block = {"per_epoch": True, "ks": [4], "variants": [{"name": "a", "ks": [4, 8]}, {"name": "b"}],
             "figures": {"epochs": {"k": 4, "panels": [["a", "b"]]}, "ks": {"panels": [["a"]]}}}
    vs = {"a": {"ks": [4, 8]}, "b": {"ks": [4]}}
    assert comb.figures(block, vs) == {"epochs": {"k": 4, "panels": [["a", "b"]]}, "ks": {"panels": [["a"]]}}
    assert comb.figures({**block, "figures": {}}, vs) == {} and comb.figures({"ks": [4]}, vs) == {}
    for figs, per_epoch, match in (
            ({"epochs": {"k": 8, "panels": [["a", "b"]]}}, True,
             r"field 'combinational.figures.epochs.panels\[0\]\[1\]': variant 'b' runs K = 4 \(combinational.ks\), "
             r"not combinational.figures.epochs.k = 8"),
            ({"epochs": {"k": 4, "panels": [["a"], ["c"]]}}, True,
             r"field 'combinational.figures.epochs.panels\[1\]\[0\]': 'c' is not a variant \(a, b\)"),
            ({"epochs": {"k": 4, "panels": [["a"]]}}, False, r"field 'combinational.per_epoch': false"),
            ({"ks": {"panels": [["a", "b"]]}}, True,
             r"field 'combinational.figures.ks.panels\[0\]\[1\]': variant 'b' runs one K \(combinational.ks: 4\)")):
        with pytest.raises(ConfigError, match=match):
            comb.figures({**block, "per_epoch": per_epoch, "figures": figs}, vs)
    with pytest.raises(ConfigError, match=r"variants\[0\].ks\), not combinational.figures.epochs.k = 2"):
        comb.figures({**block, "figures": {"epochs": {"k": 2, "panels": [["a"]]}}}, vs)


@pytest.fixture
def drawn(monkeypatch):
    """The figures the report draws, kept open instead of saved: a list of (figure, path)."""
    import matplotlib.pyplot as plt

    figs = []
    monkeypatch.setattr(report, "_save", lambda fig, out: figs.append((fig, out)))
    yield figs
    for fig, _ in figs:
        plt.close(fig)


def _lines(ax) -> dict[str, tuple[list, list]]:
    """label -> (x, y) of an axes' labelled lines (the means)."""
    return {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.get_lines()
            if not ln.get_label().startswith("_")}


def test_epochs_figure_in_the_seeds_layout(drawn):
    """Figure 2: one row of panels, one per variant, each ID / COOD / OOD (%) after every epoch at K; two
    training seeds: their mean; the variant's other K values left out."""
    ep = {"bert": pd.DataFrame([{"K": k, "epoch": e, "ID": 0.5 + e / 10, "COOD": 0.4, "OOD": 0.2 + k / 100}
                                for k in (2, 3) for e in (1, 2, 3)]),
          "roberta": pd.DataFrame([{"seed": s, "K": 3, "epoch": e, "ID": 0.9, "COOD": 0.5 + s / 10, "OOD": 0.1}
                                   for s in (1, 3) for e in (1, 2)])}
    report.epochs_panels_figure(ep, [["bert", "roberta"]], 3, {"bert": "bert-base on yelp"}, "f.png")
    (fig, out), = drawn
    left, right = fig.axes
    assert out == "f.png" and [left.get_title(), right.get_title()] == ["bert-base on yelp", "roberta"]
    assert _lines(left)["ID"] == ([1, 2, 3], pytest.approx([60, 70, 80]))
    assert _lines(left)["OOD"] == ([1, 2, 3], pytest.approx([23, 23, 23]))   # K = 3's, not K = 2's
    assert _lines(right)["COOD"] == ([1, 2], pytest.approx([70, 70]))      # the mean of seeds 1 and 3
    assert left.get_xlabel() == "epoch" and left.get_ylabel() == "accuracy (%)"
    assert fig._suptitle.get_text() == "Accuracy per epoch, K = 3"
    with pytest.raises(DataError, match="variant bert: field 'epoch': no epoch recorded at K = 4"):
        report.epochs_panels_figure(ep, [["bert"]], 4, {}, "g.png")


def test_ks_figure_in_the_seeds_layout(drawn):
    """Figure 3: a 2 x 2 grid (MNLI on top, Yelp below), each variant's ID / COOD / OOD (%) against K; a
    shorter row leaves its spare panel hidden."""
    def table(shift):
        return pd.DataFrame([{"K": k, "ID": 0.8 + shift, "COOD": k / 1000, "OOD": 0.1, "n_seeds": 1}
                             for k in (500, 250, 1000)])
    tables = {n: table(i / 100) for i, n in enumerate(("mb", "ml", "yb", "yl"))}
    report.ks_panels_figure(tables, [["mb", "ml"], ["yb", "yl"]], {"ml": "roberta-large on mnli"}, "k.png")
    (fig, _), = drawn
    axes = fig.axes
    assert [a.get_title() for a in axes] == ["mb", "roberta-large on mnli", "yb", "yl"]
    assert _lines(axes[1])["ID"] == ([250, 500, 1000], pytest.approx([81] * 3))
    assert _lines(axes[3])["COOD"] == ([250, 500, 1000], pytest.approx([25, 50, 100]))
    assert axes[2].get_xlabel() == "K (training inputs per label)" and axes[2].get_ylabel() == "accuracy (%)"
    report.ks_panels_figure(tables, [["mb", "ml"], ["yb"]], {}, "k3.png")
    assert [a.get_visible() for a in drawn[1][0].axes] == [True, True, True, False]


def test_figure_step_reads_the_variants_files(tmp_path):
    from beluga.steps import combinational as step

    paths = []
    for v in ("a", "b"):
        paths.append(tmp_path / f"{v}.csv")
        pd.DataFrame([{"K": 4, "epoch": e, "ID": 0.9, "COOD": 0.5, "OOD": 0.1} for e in (1, 2)]).to_csv(
            paths[-1], index=False)
    out = tmp_path / "figure_epochs.png"
    step.combinational_figure(figure="epochs", panels=[["a", "b"]], inputs=[str(p) for p in paths], titles={},
                              out_png=str(out), k=4)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(DataError, match="figure ks: 1 input files for 2 panels"):
        step.combinational_figure(figure="ks", panels=[["a", "b"]], inputs=[str(paths[0])], titles={},
                                  out_png=str(out))


# ---------------------------------------------------------------- training seeds

CELL_NAMES = [comb.cell_name(x, t) for x, t, _, _ in comb.CELLS]
SETTINGS = {"v": {"model": "tiny-random", "template": TEMPLATE, "label_words": WORDS, "max_length": 32,
                  "too_long": "drop", "training": {"lr": 5e-5, "batch_size": 16, "epochs": 2}}}


def run_record(k: int, seed: int, draw: int) -> dict:
    """A combinational run record (as combinational_train writes it) with accuracies drawn from ``draw``."""
    rng = np.random.default_rng([k, draw])
    acc = {c: float(v) for c, v in zip([*CELL_NAMES, *comb.GROUPS], rng.integers(0, 46, 12) / 45)}
    return {"variant": "v", "K": k, "n_train": 4 * k, "n_test": 42, "accuracy": acc,
            "per_epoch": [{"epoch": e, **{g: float(v) for g, v in zip(comb.GROUPS, rng.integers(0, 46, 3) / 45)}}
                          for e in (1, 2)],
            "length": {"rule": "drop", "max_length": 32, "max_tokens": 40,
                       "too_long": {"train": 1, "test": 1, "train_pool": 3}, "dropped": {"train": 1, "test": 1},
                       "truncated": {"train": 0, "test": 0}},
            "seed": seed, "train_x": [f"x{i}" for i in range(k)], "majority_share": 0.5, "degenerate": False}


def write_runs(root, ks=(8, 4), seeds=(42,), base=42, comb_seed=13, edit=None) -> list[str]:
    """Every seed's run files, seed-major as rule combinational lists them (the base seed's under
    runs/, recording combinational.seed; another's under seeds/<s>/runs/). ``edit(seed, k, rec)``."""
    paths = []
    for i, seed in enumerate(seeds):
        for k in ks:
            rec = run_record(k, comb_seed if seed == base else seed, i)
            if edit:
                edit(seed, k, rec)
            p = root / "v" / ("" if seed == base else f"seeds/{seed}/") / "runs" / f"k{k}.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(rec))
            paths.append(str(p))
    return paths


def summarise(root, paths, **kw) -> dict:
    from beluga.steps import combinational as step

    out = {n: str(root / n) for n in ("table.csv", "table.md", "accuracy.png", "epochs.csv", "epochs.png")}
    step.combinational(results=paths, variant="v", too_long="drop", out_table=out["table.csv"],
                       out_markdown=out["table.md"], out_figure=out["accuracy.png"], out_epochs=out["epochs.csv"],
                       out_epochs_figure=out["epochs.png"], **kw)
    step.combinational_comparison(tables=[out["table.csv"]], variants=SETTINGS, out_table=str(root / "comparison.csv"),
                                  out_markdown=str(root / "comparison.md"), seeds=kw.get("seeds"))
    return out | {n: str(root / n) for n in ("comparison.csv", "comparison.md")}


def old_combinational(*, results, variant, too_long, out_table, out_markdown, out_figure, out_epochs,
                      out_epochs_figure):
    """beluga.steps.combinational.combinational before training seeds (commit a54fbd4), verbatim."""
    from pathlib import Path

    from beluga.core.io import write_csv, write_text

    recs = sorted((json.loads(Path(p).read_text()) for p in results), key=lambda r: r["K"])
    table = pd.DataFrame([{"K": r["K"], "n_train": r["n_train"], "n_test": r["n_test"], **r["accuracy"],
                           "too_long_train": r["length"]["too_long"]["train"],
                           "too_long_test": r["length"]["too_long"]["test"],
                           "dropped_train": r["length"]["dropped"]["train"],
                           "dropped_test": r["length"]["dropped"]["test"]} for r in recs])
    epochs = pd.DataFrame([{"K": r["K"], **e} for r in recs for e in r["per_epoch"]])
    if not len(epochs):
        epochs = pd.DataFrame(columns=["K", "epoch", *comb.GROUPS])
    write_csv(table, out_table)
    write_csv(epochs, out_epochs)
    write_text(report.accuracy_markdown(table, variant, too_long), out_markdown)
    report.curve_figure(table, out_figure, variant)
    report.epochs_figure(epochs, [int(r["K"]) for r in recs], out_epochs_figure, variant)


def test_two_seeds_table_is_the_mean_and_sd_over_seeds(tmp_path):
    paths = write_runs(tmp_path, seeds=(42, 7))
    assert report.run_seeds(paths, [8, 4], [42, 7]) == [42, 42, 7, 7]
    out = summarise(tmp_path, paths, ks=[8, 4], seeds=[42, 7])
    table = pd.read_csv(out["table.csv"])
    assert list(table["K"]) == [4, 8] and list(table["n_seeds"]) == [2, 2] and list(table["n_train"]) == [16, 32]
    md = open(out["table.md"]).read()
    for k in (4, 8):
        row = table[table["K"] == k].iloc[0]
        shown = []
        for c in [*CELL_NAMES, *comb.GROUPS]:
            a, b = run_record(k, 13, 0)["accuracy"][c], run_record(k, 7, 1)["accuracy"][c]
            mean, sd = (a + b) / 2, abs(a - b) / np.sqrt(2)   # the sample sd of two values
            assert row[c] == pytest.approx(mean) and row[f"{c}_sd"] == pytest.approx(sd), (k, c)
            assert (row[f"{c}_min"], row[f"{c}_max"]) == pytest.approx((min(a, b), max(a, b)))
            shown.append(f"{100 * mean:.1f} ± {100 * sd:.1f}")
        assert f"| {k} | {' | '.join(shown)} | 1 / 1 |" in md
    assert "mean ± standard deviation over 2 training seeds (42, 7)" in md
    epochs = pd.read_csv(out["epochs.csv"])
    assert list(epochs.columns[:3]) == ["seed", "K", "epoch"] and list(epochs["seed"]) == [42] * 4 + [7] * 4
    e7 = epochs[(epochs["seed"] == 7) & (epochs["K"] == 8) & (epochs["epoch"] == 2)].iloc[0]
    assert e7["COOD"] == pytest.approx(run_record(8, 7, 1)["per_epoch"][1]["COOD"])
    comp = pd.read_csv(out["comparison.csv"])
    assert list(comp["n_seeds"]) == [2, 2] and comp["COOD_sd"].tolist() == pytest.approx(table["COOD_sd"].tolist())
    cmd = open(out["comparison.md"]).read()
    assert "| v | `tiny-random` | lr 5e-05, batch 16, 2 epochs | 4 | " in cmd and " ± " in cmd
    assert "mean ± standard deviation over 2 training seeds (42, 7)" in cmd
    for png in ("accuracy.png", "epochs.png"):
        assert open(out[png], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    # without per-epoch records: an empty epochs.csv with its seed column
    none = write_runs(tmp_path / "none", seeds=(42, 7), edit=lambda s, k, r: r.update(per_epoch=[]))
    out = summarise(tmp_path / "none", none, ks=[8, 4], seeds=[42, 7])
    assert open(out["epochs.csv"]).read().strip() == "seed,K,epoch,ID,COOD,OOD"


def test_one_seed_gives_the_old_outputs_with_the_same_columns(tmp_path):
    """One seed: table.csv is the seed's own table plus n_seeds 1 and the spread columns (every _sd empty);
    the Markdown, figures and epochs are the one-seed run's, byte for byte."""
    paths = write_runs(tmp_path / "runs")
    old = {n: str(tmp_path / f"old_{n}") for n in ("table.csv", "table.md", "accuracy.png", "epochs.csv",
                                                   "epochs.png")}
    old_combinational(results=paths, variant="v", too_long="drop", out_table=old["table.csv"],
                      out_markdown=old["table.md"], out_figure=old["accuracy.png"], out_epochs=old["epochs.csv"],
                      out_epochs_figure=old["epochs.png"])
    new = summarise(tmp_path, paths, ks=[8, 4], seeds=[42])
    table, old_table = pd.read_csv(new["table.csv"]), pd.read_csv(old["table.csv"])
    assert table[list(old_table.columns)].to_csv(index=False) == open(old["table.csv"]).read()
    assert set(table["n_seeds"]) == {1} and table[[f"{c}_sd" for c in comb.GROUPS]].isna().all().all()
    assert list(table.columns) == list(pd.read_csv(summarise(tmp_path / "two", write_runs(
        tmp_path / "two", seeds=(42, 7)), ks=[8, 4], seeds=[42, 7])["table.csv"]).columns)
    for name, path in old.items():
        if name != "table.csv":
            assert open(path, "rb").read() == open(new[name], "rb").read(), name
    comp = report.comparison({"v": old_table}, SETTINGS)
    assert open(new["comparison.md"]).read() == report.comparison_markdown(comp)
    assert "±" not in open(new["table.md"]).read() and "training seed" not in open(new["comparison.md"]).read()


def test_mismatched_seeds_raise_one_line(tmp_path):
    def one_line(match, paths, ks=(8, 4), seeds=(42, 7)):
        with pytest.raises(DataError, match=match) as e:
            summarise(tmp_path, paths, ks=list(ks), seeds=list(seeds))
        assert "\n" not in str(e.value)
        return str(e.value)

    def n_train(seed, k, rec):
        if seed == 7 and k == 4:
            rec["n_train"] = 15
    bad = write_runs(tmp_path / "n", seeds=(42, 7), edit=n_train)
    msg = one_line("field 'n_train': 15 for training seed 7", bad)
    assert bad[3] in msg and bad[1] in msg   # the file, and the first seed's it differs from

    def too_long(seed, k, rec):
        if seed == 7 and k == 8:
            rec["length"]["too_long"]["test"] = 2
    bad = write_runs(tmp_path / "t", seeds=(42, 7), edit=too_long)
    assert bad[2] in one_line(r"field 'length.too_long.test': 2 for training seed 7", bad)

    def inputs(seed, k, rec):
        if seed == 7:
            rec["train_x"] = rec["train_x"][::-1]
    one_line("field 'train_x': other inputs", write_runs(tmp_path / "x", seeds=(42, 7), edit=inputs))
    paths = write_runs(tmp_path / "c", seeds=(42, 7))
    assert "3 run files for 2 training seed(s) (42, 7) x 2 K values; expected 4" in one_line("expected 4", paths[:3])
    one_line("field 'K': 4, but its position is training seed 42's K = 8", paths[1::-1] + paths[2:])
    one_line("its folder is training seed 7's, but its position is seed 42's", paths[2:] + paths[:2], seeds=(42, 7))
    # a table written for other seeds never reaches the comparison
    from beluga.steps import combinational as step

    one_seed = summarise(tmp_path / "c", paths[:2], ks=[8, 4], seeds=[42])
    with pytest.raises(DataError, match="field 'n_seeds': 1, not the run's 2 training seeds"):
        step.combinational_comparison(tables=[one_seed["table.csv"]], variants=SETTINGS,
                                      out_table=str(tmp_path / "x.csv"), out_markdown=str(tmp_path / "x.md"),
                                      seeds=[42, 7])


# ---------------------------------------------------------------- end to end


@pytest.mark.slow
def test_two_variants_end_to_end(tmp_path):
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["combinational"] = {
        "model": "tiny-random", "ks": [4, 8], "n_test": 6, "max_length": 24,
        "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": 2},
        "variants": [{"name": "tiny_it_is"},
                     {"name": "tiny_sentence_is", "template": "{S} The sentence is {LABEL}.",
                      "label_words": {"fst": "cat", "sec": "dog", "neu": "bird"}, "too_long": "truncate_sentence",
                      "training": {"epochs": 1}}],
        "figures": {"epochs": {"k": 8, "panels": [["tiny_it_is", "tiny_sentence_is"]]},
                    "ks": {"panels": [["tiny_it_is"], ["tiny_sentence_is"]]}}}
    cfg_file = tmp_path / "cfg.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    wd = tmp_path / "run"
    pipeline(wd, "--cores", "2", "combinational_all", configfiles=(cfg_file,))
    res = wd / "results" / "combinational"
    comp = pd.read_csv(res / "comparison.csv")
    assert list(zip(comp["variant"], comp["K"])) == [("tiny_it_is", 4), ("tiny_it_is", 8), ("tiny_sentence_is", 4),
                                                     ("tiny_sentence_is", 8)]
    assert list(comp["template"]) == ["{S} It is {LABEL}."] * 2 + ["{S} The sentence is {LABEL}."] * 2
    assert list(comp["training"]) == ["lr 0.001, batch 8, 2 epochs"] * 2 + ["lr 0.001, batch 8, 1 epoch"] * 2
    for cell in [comb.cell_name(x, t) for x, t, _, _ in comb.CELLS] + ["ID", "COOD", "OOD"]:
        assert comp[cell].between(0, 1).all(), cell
    assert "Table 3" in (res / "comparison.md").read_text()
    for v, rule in (("tiny_it_is", "drop"), ("tiny_sentence_is", "truncate_sentence")):
        table = pd.read_csv(res / v / "table.csv")
        assert list(table["K"]) == [4, 8] and list(table["n_train"]) == [16, 32]
        k8 = json.loads((res / v / "runs" / "k8.json").read_text())
        k4 = json.loads((res / v / "runs" / "k4.json").read_text())
        assert set(k4["train_x"]) < set(k8["train_x"]) and k8["variant"] == v and k8["length"]["rule"] == rule
        assert k8["length"]["too_long"]["train_pool"] > 0   # Hutto sentences over 24 tokens
        if rule == "drop":
            assert k8["n_test"] == 9 * 6 - 3 * k8["length"]["dropped"]["test"]
        else:
            assert k8["n_test"] == 9 * 6 and k8["length"]["dropped"] == {"train": 0, "test": 0}
        epochs = pd.read_csv(res / v / "epochs.csv")
        n_ep = 2 if v == "tiny_it_is" else 1
        assert sorted(zip(epochs["K"], epochs["epoch"])) == sorted((k, e) for k in (4, 8) for e in range(1, n_ep + 1))
        test_x = pd.read_parquet(res / "pool.parquet").query("split == 'test'")["example_id"]
        assert not set(test_x) & set(k8["train_x"])
        for name in ("accuracy.png", "epochs.png", "table.md"):
            assert (res / v / name).stat().st_size > 0
        assert np.isfinite(table["COOD"]).all()
    for name in ("figure_epochs.png", "figure_ks.png"):   # the figures across variants (combinational.figures)
        assert (res / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = pipeline(wd, "-n", "combinational_all", configfiles=(cfg_file,))
    assert "Nothing to be done" in out.stdout + out.stderr


def test_prediction_check_flags_one_class_for_almost_every_input():
    assert comb.prediction_check(np.array([1] * 19 + [0])) == {"majority_share": 0.95, "degenerate": True}
    assert comb.prediction_check(np.array([1] * 18 + [0] * 2)) == {"majority_share": 0.9, "degenerate": False}
    assert comb.prediction_check(np.array([1] * 18 + [0] * 2), degenerate_share=0.9)["degenerate"] is True


def test_a_k_computed_from_a_degenerate_model_is_marked(tmp_path):
    """Seed 7's K = 8 model degenerate (of two seeds): that row's accuracies marked ⚠ in table.md and in the
    comparison, table.csv counts its models, a legend says where to read why; a record without the flag is
    refused in one line naming it."""
    def flag(seed, k, rec):
        rec["degenerate"] = (seed, k) == (7, 8)

    paths = write_runs(tmp_path / "runs", seeds=(42, 7), edit=flag)
    out = summarise(tmp_path, paths, seeds=[42, 7], ks=[8, 4])
    table = pd.read_csv(out["table.csv"]).set_index("K")
    assert table.loc[8, ["n_models", "n_degenerate"]].tolist() == [2, 1] and table.loc[4, "n_degenerate"] == 0
    md = Path(out["table.md"]).read_text().splitlines()
    row8, row4 = (next(ln for ln in md if ln.startswith(f"| {k} |")) for k in (8, 4))
    assert row8.count("⚠") == 12 and "⚠" not in row4
    assert any(ln.startswith("⚠: computed from a degenerate model (any training seed's; 1 of 4)") for ln in md)
    comp = Path(out["comparison.md"]).read_text()
    assert comp.count("⚠") == 9 + 3 + 1, comp

    def old(seed, k, rec):
        rec.pop("degenerate")

    paths = write_runs(tmp_path / "old", edit=old)
    with pytest.raises(DataError, match=r"k8\.json: field 'degenerate': missing \(a record of an older run"):
        summarise(tmp_path / "old", paths)
