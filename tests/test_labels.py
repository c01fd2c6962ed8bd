"""A model's classes read by name (beluga/model/labels.py, issue 37 item 2): saved
models name their classes (config.json id2label / label2id) and carry a model
card (README.md); `test` maps a model's classes to the task's by name, by
position only for the project's own models with transformers' default names,
else by --label-order; `score --label-order`. Tiny models built in-process."""

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import fold_run, make_tiny_suite

from beluga.cli import main
from beluga.core.errors import BelugaError, ModelError
from beluga.core.tasks import PARA, READ, SENT
from beluga.model.labels import VARIANTS, label_map, named_config, norm_label, order_from_option, task_classes
from beluga.suites.format import save_suite


# ---------------------------------------------------------------- reading names (no model)
def test_task_classes_follow_tasks_py():
    assert task_classes(SENT, 2) == ("negative", "positive")
    assert task_classes(SENT, 3) == ("negative", "neutral", "positive")
    assert task_classes(PARA, 2) == ("not duplicate", "duplicate")
    assert task_classes(PARA, 3) is None and task_classes(READ, 0) is None
    # every task class has its variants, the class itself first
    for ttype in (SENT, PARA):
        for c in set(ttype.iid_labels.values()) | set(ttype.suite_labels.values()):
            assert VARIANTS[norm_label(c)][0] == norm_label(c)


@pytest.mark.parametrize("names, task, want", [
    (["POSITIVE", "NEGATIVE"], SENT, ("positive", "negative")),
    (["neg", "pos"], SENT, ("negative", "positive")),
    (["Negative", "Neutral", "Positive"], SENT, ("negative", "neutral", "positive")),
    (["POS", "NEU", "NEG"], SENT, ("positive", "neutral", "negative")),
    (["not_duplicate", "duplicate"], PARA, ("not duplicate", "duplicate")),
    (["paraphrase", "not-paraphrase"], PARA, ("duplicate", "not duplicate")),
    (["equivalent", "not_equivalent"], PARA, ("duplicate", "not duplicate")),
    (["different", "Duplicate"], PARA, ("not duplicate", "duplicate")),
])
def test_names_and_variants_are_read_case_insensitively(names, task, want):
    cfg = {"id2label": {str(i): n for i, n in enumerate(names)}}
    lmap = label_map(cfg, task, len(names), "m")
    assert lmap.classes == want and lmap.by == "id2label"
    assert [lmap.classes[c] for c in lmap.columns] == list(task_classes(task, len(names)))


@pytest.mark.parametrize("names", [["LABEL_0", "LABEL_1"], ["0", "1"], ["label 0", "label 1"], None])
def test_default_names_are_positional_only_for_the_projects_models(names):
    cfg = {} if names is None else {"id2label": dict(enumerate(names))}
    with pytest.raises(ModelError) as e:
        label_map(cfg, SENT, 2, "org/model")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("model org/model: field 'id2label'")
    assert "say nothing about which class is which" in msg and "--label-order negative,positive" in msg
    lmap = label_map({**cfg, "beluga_task": {"task_type": "sent", "head": "classification", "num_labels": 2}},
                     SENT, 2, "m")
    assert lmap.identity and lmap.by.startswith("position")
    assert label_map(cfg, SENT, 2, "m", "pos,neg").columns == [1, 0]


def test_unreadable_and_contradicted_names_are_refused_in_one_line():
    for names in (["toxic", "clean"], ["negative", "negative"], ["negative", "LABEL_1"], ["1 star", "5 stars"]):
        with pytest.raises(ModelError) as e:
            label_map({"id2label": dict(enumerate(names))}, SENT, 2, "hub/x")
        assert str(e.value).startswith("model hub/x: field 'id2label'") and "\n" not in str(e.value)
    # a named model is never read by position: a --label-order that its names contradict is refused
    named = {"id2label": {"0": "positive", "1": "negative"}}
    with pytest.raises(ModelError, match=r"model m: field '--label-order': says class 0 is 'negative'"):
        label_map(named, SENT, 2, "m", "negative,positive")
    assert label_map(named, SENT, 2, "m", "positive,negative").by == "id2label"   # agrees: the names are read
    # partly readable names: --label-order fills the rest, and must agree with what is read
    part = {"id2label": {"0": "positive", "1": "LABEL_1"}}
    assert label_map(part, SENT, 2, "m", "pos,neg").classes == ("positive", "negative")
    with pytest.raises(ModelError, match="field '--label-order'"):
        label_map(part, SENT, 2, "m", "neg,pos")
    # names of another task: refused, unless --label-order says which class is which
    with pytest.raises(ModelError, match="not read as the classes not duplicate, duplicate"):
        label_map({"id2label": {"0": "negative", "1": "positive"}}, PARA, 2, "m")
    for bad, why in (("negative", "names 1 classes"), ("neg,bad", "'bad' is not a class"), ("neg,neg", "twice")):
        with pytest.raises(BelugaError, match=why):
            label_map({}, SENT, 2, "m", bad)
    assert label_map({}, READ, 0, "m") is None


def test_score_label_order_option():
    assert order_from_option(None, SENT, 2, "p") is None
    assert order_from_option("positive,negative", SENT, 2, "p").columns == [1, 0]
    assert order_from_option("pos,neu,neg", SENT, 3, "p").columns == [2, 1, 0]
    with pytest.raises(BelugaError, match="predictions p: field '--label-order'"):
        order_from_option("a,b", READ, 0, "predictions p")


# ---------------------------------------------------------------- saved models: names and card
def test_saved_model_names_its_classes_and_has_a_card(tmp_path):
    from transformers import AutoConfig

    from beluga.model.modeling import load_model, load_trained, save_model, set_seed
    from beluga.steps.train import model_card_facts

    set_seed(0)
    model, tok = load_model("tiny-random", 2)
    run = fold_run(task="sst", configuration="iid_to_t", method="vanilla", partition="func", fold="typos",
                   held_out=("typos",), model="bert-base-uncased", seed=3)
    record = {"pretrained": {"model": "bert-base-uncased", "model_revision": "main", "model_commit": "abc123"}}
    facts = model_card_facts(run, record, data="results/sst/iid/train.parquet", suite="results/sst/suite.parquet")
    save_model(model, tok, tmp_path / "sent", task_type="sent", card=facts)
    cfg = json.loads((tmp_path / "sent" / "config.json").read_text())
    assert cfg["id2label"] == {"0": "negative", "1": "positive"}
    assert cfg["label2id"] == {"negative": 0, "positive": 1}
    assert AutoConfig.from_pretrained(tmp_path / "sent").id2label == {0: "negative", 1: "positive"}
    assert model.config.id2label == {0: "LABEL_0", 1: "LABEL_1"}        # only the saved config changes
    card = (tmp_path / "sent" / "README.md").read_text()
    for needle in ("pipeline_tag: text-classification", 'base_model: "bert-base-uncased"', "| Task | sst (task type "
                   "`sent`", "0: negative, 1: positive", "bert-base-uncased (revision main, commit abc123)",
                   "results/sst/iid/train.parquet", "results/sst/suite.parquet", "| Configuration | iid_to_t |",
                   "| Method | vanilla |", "func / typos", "| Seed | 3 |", "LICENSE", "CITATION.cff"):
        assert needle in card, needle
    # the folder loads as before (the card is not a weight file), names and all, for testing and for training on
    loaded, _ = load_trained(str(tmp_path / "sent"), task_type="sent")
    assert loaded.config.id2label == {0: "negative", 1: "positive"}
    again, _ = load_model(str(tmp_path / "sent"), 2, task_type="sent", trained=True)
    assert again.config.id2label == {0: "negative", 1: "positive"} and again.config.num_labels == 2

    para, tok = load_model("tiny-random", 2)
    save_model(para, tok, tmp_path / "para", task_type="para")
    assert json.loads((tmp_path / "para" / "config.json").read_text())["id2label"] == named_config(PARA, 2)["id2label"]
    qa, tok = load_model("tiny-random", 0, head="qa")
    save_model(qa, tok, tmp_path / "qa", task_type="read")
    assert "pipeline_tag: question-answering" in (tmp_path / "qa" / "README.md").read_text()


def test_train_iid_saves_names_and_card(tmp_path):
    """The pipeline's own step (beluga/steps/train.py train_iid) writes both."""
    from beluga.steps.train import train_iid

    rows = [{"text": f"good film {i}" if i % 2 else f"bad film {i}", "text_b": None, "label": i % 2,
             "example_id": f"e{i}"} for i in range(8)]
    train = tmp_path / "train.parquet"
    pd.DataFrame(rows).to_parquet(train)
    (tmp_path / "source.json").write_text(json.dumps({"source": "sst2", "origin": "GLUE SST-2"}))
    run = fold_run(configuration="iid", method="vanilla", partition="standard", fold="all",
                   hparams={"epochs": 1, "batch_size": 4, "lr": 1e-4})
    out = tmp_path / "iid_model"
    train_iid(run=run.to_dict(), train=str(train), out_model=str(out))
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["id2label"] == {"0": "negative", "1": "positive"} and cfg["beluga_task"]["task_type"] == "sent"
    card = (out / "README.md").read_text()
    assert f"| Training data (i.i.d.) | sst2 (GLUE SST-2): {train} |" in card
    assert "| Configuration | iid |" in card and "| Base model | tiny-random |" in card


# ---------------------------------------------------------------- `test` on a model with the reversed order
@pytest.fixture(scope="module")
def two_orders(tmp_path_factory):
    """The same classifier saved twice: in the task's order (negative, positive; the project's save) and with its
    head's rows swapped and its classes named the other way round ({0: positive, 1: negative}, no task record: a
    hub model's layout). Its head's bias makes it a confident negative on every input (the random encoder moves
    the logits by about 1e-4, far below the bias gap): the cases that expect a negative pass and the others fail,
    whatever the CPU computes in (bf16 or fp32), and read by position the other way round they would not."""
    import torch

    from beluga.model.modeling import load_model, save_model, set_seed

    root = tmp_path_factory.mktemp("orders")
    suite = root / "suite.parquet"
    save_suite(make_tiny_suite(3), suite)
    texts = [t for inputs in make_tiny_suite(3)["inputs"] for t in inputs]
    set_seed(5)
    model, tok = load_model("tiny-random", 2)
    model.eval()
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([3.0, -3.0]))
        logits = model(**tok(texts, padding=True, return_tensors="pt")).logits
    assert bool((logits[:, 0] - logits[:, 1] > 5.0).all()), logits
    save_model(model, tok, root / "normal", task_type="sent")
    with torch.no_grad():
        model.classifier.weight.copy_(model.classifier.weight.flip(0))
        model.classifier.bias.copy_(model.classifier.bias.flip(0))
    save_model(model, tok, root / "reversed")
    cfg = json.loads((root / "reversed" / "config.json").read_text())
    cfg.update(id2label={"0": "positive", "1": "negative"}, label2id={"positive": 0, "negative": 1})
    (root / "reversed" / "config.json").write_text(json.dumps(cfg))
    shutil.copytree(root / "reversed", root / "unnamed")      # the same weights, transformers' default names
    cfg.update(id2label={"0": "LABEL_0", "1": "LABEL_1"}, label2id={"LABEL_0": 0, "LABEL_1": 1})
    (root / "unnamed" / "config.json").write_text(json.dumps(cfg))
    return root


def _test(capsys, root: Path, model: str, out: Path, *extra) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["test", "--model", str(root / model), "--suite", str(root / "suite.parquet"), "--out", str(out),
               "--task", "sent", "--failures", "2", *map(str, extra)])
    res = capsys.readouterr()
    return rc, res.out, res.err


def _probs(out: Path) -> list:
    return np.array(pd.read_parquet(out / "predictions.parquet")["probs"].map(list).tolist())


def test_reversed_order_scores_as_the_normal_model(two_orders, tmp_path, capsys):
    root = two_orders
    rc, _, err = _test(capsys, root, "normal", tmp_path / "normal")
    assert rc == 0, err
    rc, text, err = _test(capsys, root, "reversed", tmp_path / "reversed")
    assert rc == 0, err
    assert "classes read as positive, negative (by id2label)" in text
    normal, rev = (pd.read_csv(tmp_path / n / "functionalities.csv") for n in ("normal", "reversed"))
    pd.testing.assert_frame_equal(normal, rev)
    cases = [pd.read_parquet(tmp_path / n / "cases.parquet") for n in ("normal", "reversed")]
    pd.testing.assert_frame_equal(*cases)
    assert set(cases[0]["status"]) >= {"pass", "fail"}          # the scores depend on the order read
    np.testing.assert_allclose(_probs(tmp_path / "reversed"), _probs(tmp_path / "normal"), atol=1e-5)
    meta = pq.read_schema(tmp_path / "reversed" / "predictions.parquet").metadata
    rec = json.loads(meta[b"beluga_labels"])[str(root / "reversed")]
    assert rec == {"by": "id2label", "model_classes": ["positive", "negative"],
                   "task_classes": ["negative", "positive"]}
    rec = json.loads(pq.read_schema(tmp_path / "normal" / "predictions.parquet").metadata[b"beluga_labels"])
    assert rec[str(root / "normal")]["model_classes"] == ["negative", "positive"]

    # the same weights read by position (what `test` did before names were read) score differently
    rc, _, err = _test(capsys, root, "unnamed", tmp_path / "wrong", "--label-order", "negative,positive")
    assert rc == 0, err
    assert not pd.read_parquet(tmp_path / "wrong" / "cases.parquet").equals(cases[0])


def test_unnamed_model_refused_unless_label_order(two_orders, tmp_path, capsys):
    root = two_orders
    rc, out, err = _test(capsys, root, "unnamed", tmp_path / "o")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and not out, err
    assert lines[0] == (f"error: model {root / 'unnamed'}: field 'id2label': LABEL_0, LABEL_1 say nothing about "
                        "which class is which; give --label-order negative,positive (the model's classes in order) "
                        "if that is the order")
    assert not (tmp_path / "o").exists()
    rc, text, err = _test(capsys, root, "unnamed", tmp_path / "o", "--label-order", "POS,neg")
    assert rc == 0, err
    assert "classes read as positive, negative (by --label-order)" in text
    assert (pd.read_csv(tmp_path / "o" / "functionalities.csv")
            .equals(pd.read_csv(_ok(capsys, root, tmp_path) / "functionalities.csv")))
    # a named model read against its names: refused, nothing written
    rc, _, err = _test(capsys, root, "reversed", tmp_path / "x", "--label-order", "negative,positive")
    assert rc == 2 and "field '--label-order': says class 0 is 'negative'" in err and not (tmp_path / "x").exists()
    # several models: every one checked before any is predicted
    capsys.readouterr()
    rc = main(["test", "--model", str(root / "normal"), str(root / "unnamed"), "--suite", str(root / "suite.parquet"),
               "--out", str(tmp_path / "y"), "--task", "sent"])
    assert rc == 2 and "field 'id2label'" in capsys.readouterr().err and not (tmp_path / "y").exists()


def _ok(capsys, root: Path, tmp_path: Path) -> Path:
    out = tmp_path / "normal_again"
    if not out.exists():
        assert _test(capsys, root, "normal", out)[0] == 0
    return out


def test_score_label_order_reads_reversed_columns(two_orders, tmp_path, capsys):
    root = two_orders
    assert _test(capsys, root, "normal", tmp_path / "t")[0] == 0
    preds = pd.read_parquet(tmp_path / "t" / "predictions.parquet")
    flipped = preds.assign(probs=[list(p)[::-1] for p in preds["probs"]])
    flipped.to_parquet(tmp_path / "flipped.parquet")

    def score(pred, out, *extra):
        capsys.readouterr()
        rc = main(["score", "--suite", str(root / "suite.parquet"), "--predictions", str(pred), "--out", str(out),
                   "--task", "sent", *extra])
        return rc, capsys.readouterr().err

    assert score(tmp_path / "t" / "predictions.parquet", tmp_path / "s0")[0] == 0
    assert score(tmp_path / "flipped.parquet", tmp_path / "s1", "--label-order", "positive,negative")[0] == 0
    assert score(tmp_path / "flipped.parquet", tmp_path / "s2")[0] == 0          # read in the task's order: wrong
    s0, s1, s2 = (pd.read_parquet(tmp_path / s / "cases.parquet") for s in ("s0", "s1", "s2"))
    pd.testing.assert_frame_equal(s0, s1)
    assert not s0.equals(s2)
    meta = pq.read_schema(tmp_path / "s1" / "cases.parquet").metadata
    assert json.loads(meta[b"beluga_labels"])["predictions"]["model_classes"] == ["positive", "negative"]
    rc, err = score(tmp_path / "flipped.parquet", tmp_path / "s3", "--label-order", "positive")
    assert rc == 2 and f"predictions {tmp_path / 'flipped.parquet'}: field '--label-order'" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "s3").exists()
