"""Every backbone family of issue 41 (tests/tiny_families.py: BERT, RoBERTa, DeBERTa-v2, ELECTRA, ALBERT,
DistilBERT, XLNet, GPT-2, a Llama-style decoder, BART, T5) through the project's one code path: loading
(a decoder's pad token), the LP / LP-FT head table, dropout, the per-environment methods, the QA head,
save / load and checkpoint / resume."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import case, config_with, dry_load, make_tiny_suite, one_torch_thread, train_run
from tiny_families import DECODERS, FAMILIES

from beluga.core.tasks import READ, SENT
from beluga.heads import get_head
from beluga.heads.span.qa import encode_qa, predict_qa, span_targets
from beluga.methods import get_algorithm, head_parameter_names, method_hparams, set_dropout
from beluga.model import checkpoint
from beluga.model.modeling import load_model, load_trained, save_model, set_seed
from beluga.steps import data as data_steps
from beluga.steps import evaluate as eval_steps
from beluga.steps import train as train_steps
from beluga.suites import spec as beluga_spec
from beluga.train.streams import build_streams

HP = {"lr": 1e-3, "batch_size": 4, "epochs": 1}
CTX = "Paul traveled from Chicago to New York last year."


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """As in the pipeline's jobs (configure_torch): one intra-op thread, deterministic algorithms."""
    yield from one_torch_thread()


def load(folder, head="classification", method="vanilla"):
    set_seed(0)
    overrides = get_algorithm(method).config_overrides(method_hparams(method))
    return load_model(str(folder), 0 if head == "qa" else 2, head=head, config_overrides=overrides or None)


def two_env_streams(n=2):
    rows = []
    for i in range(n):
        rows.append(case(f"a-{i}", "neg words", "Vocabulary", "MFT", [f"this is awful {i}"], [0]))
        rows.append(case(f"b-{i}", "pos words", "Vocabulary", "MFT", [f"the movie was great {i}"], [1]))
    return build_streams(SENT, None, pd.DataFrame(rows))


def qa_frames():
    def qa_case(cid, ttype, questions, answers=None):
        return {"case_id": cid, "functionality": cid[0], "capability": "C", "test_type": ttype,
                "inputs": [CTX, CTX], "inputs_b": questions, "labels": None,
                "expect": "squad" if ttype == "MFT" else "inv", "expect_params": json.dumps({}),
                "agg_fn": "all" if ttype == "MFT" else "all_except_first", "meta": None, "answers": answers}
    suite = pd.DataFrame([qa_case("m1", "MFT", ["Who traveled?", "Who went?"], ["Paul", "Paul"]),
                          qa_case("i1", "INV", ["Where to?", "Wehre to?"])])
    iid = pd.DataFrame({"example_id": ["e"], "context": [CTX], "question": ["From where?"],
                        "answers": [["Chicago"]], "answer_starts": [[CTX.index("Chicago")]]})
    return iid, suite


def sent_streams():
    iid = pd.DataFrame({"text": ["good", "awful film"], "label": [1, 0]})
    return build_streams(SENT, iid, make_tiny_suite(1))   # i.i.d., MFT, INV and DIR items


@pytest.mark.parametrize("family", FAMILIES)
def test_tokenizer_and_pad_conventions(family, family_model, tmp_path):
    """The built tokenizer is the family's (special tokens, padding side); a decoder gets pad := eos at load,
    in the tokenizer and config.json, and keeps it through save_model / load_trained."""
    from transformers import AutoTokenizer

    raw = AutoTokenizer.from_pretrained(family_model(family))
    assert (raw.pad_token is None) == (family in DECODERS)
    assert raw.padding_side == ("left" if family in ("xlnet", "llama") else "right")
    model, tok = load(family_model(family))
    assert tok.pad_token is not None and model.config.pad_token_id == tok.pad_token_id
    if family in DECODERS:
        assert tok.pad_token == tok.eos_token
    # the two texts in a pair are both in the encoding, with the family's special tokens around them
    ids = tok("a fine film", "the plot")["input_ids"]
    specials = set(tok.all_special_ids)
    if family not in DECODERS:
        assert any(i in specials for i in ids), (family, tok.convert_ids_to_tokens(ids))
    probs = get_head("classification").predict(model, tok, ["a fine film", "this is awful and the plot was dull"],
                                               max_length=32)
    assert probs.shape == (2, 2) and np.allclose(probs.sum(1), 1, atol=1e-5)
    save_model(model, tok, tmp_path / "saved", task_type="sent")
    m2, t2 = load_trained(str(tmp_path / "saved"), task_type="sent")
    assert t2.pad_token == tok.pad_token and m2.config.pad_token_id == tok.pad_token_id
    assert json.loads((tmp_path / "saved" / "config.json").read_text())["pad_token_id"] == tok.pad_token_id
    np.testing.assert_allclose(get_head("classification").predict(m2, t2, ["a fine film",
                                                                   "this is awful and the plot was dull"],
                                                               max_length=32), probs, atol=1e-6)


@pytest.mark.parametrize("family", [f for f in FAMILIES if f in DECODERS or f == "xlnet"])
def test_last_token_pooling_ignores_padding(family, family_model):
    """Decoders (last non-padding token) and XLNet (last token, left padding): a text's probabilities
    do not depend on the padding a longer text in its batch adds."""
    model, tok = load(family_model(family))
    alone = get_head("classification").predict(model, tok, ["a fine film"], max_length=32)
    padded = get_head("classification").predict(
        model, tok, ["a fine film", "this is awful and the plot was very dull indeed"], max_length=32, batch_size=2)
    np.testing.assert_allclose(padded[0], alone[0], atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("head", ["classification", "qa"])
def test_head_prefixes_are_the_weights_a_backbone_lacks(family, head, family_model):
    """HEAD_PREFIXES (LP / LP-FT) name exactly the parameters the task class adds to the pre-trained
    backbone: the weights transformers reports missing when it loads the family's base model."""
    from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification

    auto = AutoModelForQuestionAnswering if head == "qa" else AutoModelForSequenceClassification
    _, info = auto.from_pretrained(family_model(family), output_loading_info=True, num_labels=2)
    model, _ = load(family_model(family), head=head)
    assert sorted(head_parameter_names(model)) == sorted(info["missing_keys"])


@pytest.mark.parametrize("family", FAMILIES)
def test_set_dropout_reaches_every_dropout(family, family_model):
    """set_dropout(0, 0): a training-mode forward pass is the evaluation one (no dropout left anywhere,
    modules and float rates alike); an attention rate alone changes it (the attention dropouts are found);
    the config fields follow."""
    model, tok = load(family_model(family))
    enc = tok(["a fine film", "this is awful and the plot was dull"], padding=True, return_tensors="pt")
    model.eval()
    with torch.no_grad():
        ref = model(**enc).logits
    set_dropout(model, 0.0, 0.0)
    model.train()
    with torch.no_grad():
        torch.testing.assert_close(model(**enc).logits, ref)
    # XLNet has one dropout for attention probabilities and hidden states (the hidden rate); Llama none
    # but its attention's
    if family != "xlnet":
        set_dropout(model, 0.0, 0.9)
        with torch.no_grad():
            assert not torch.allclose(model(**enc).logits, ref)
    if family != "llama":
        set_dropout(model, 0.9, 0.0)
        with torch.no_grad():
            assert not torch.allclose(model(**enc).logits, ref)
    set_dropout(model, 0.0, 0.9)
    cfg = model.config
    fields = {"gpt2": ("attn_pdrop",), "t5": (), "llama": ("attention_dropout",), "xlnet": ()}.get(
        family, ("attention_probs_dropout_prob",) if family not in ("distilbert", "bart") else ("attention_dropout",))
    assert all(getattr(cfg, f) == 0.9 for f in fields), {f: getattr(cfg, f) for f in fields}
    hidden = {"gpt2": "resid_pdrop", "t5": "dropout_rate", "xlnet": "dropout", "bart": "dropout",
              "distilbert": "dropout"}.get(family, None if family == "llama" else "hidden_dropout_prob")
    if hidden:
        assert getattr(cfg, hidden) == 0.0


@pytest.mark.parametrize("family", FAMILIES)
def test_every_method_updates(family, family_model):
    """IRM, Group-DRO, Fish (per environment), LP, dropout and L2: an update each, finite losses; LP
    changes only the head."""
    for method in ("irm", "group_dro", "fish", "lp", "dropout", "l2"):
        model, tok = load(family_model(family), method=method)
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        hp = {**HP, **method_hparams(method, {"fish": {"fish_envs": 2}, "irm": {"irm_penalty_anneal_iters": 1}}
                                      .get(method))}
        s = train_run(model, tok, two_env_streams(), method, hp, seed=3, max_length=32)
        assert s["steps"] > 0 and all(np.isfinite(s["epoch_losses"])), (family, method)
        changed = {n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])}
        if method == "lp":
            assert changed and changed <= set(head_parameter_names(model)), (family, changed)
        else:
            assert changed - set(head_parameter_names(model)), (family, method)   # the encoder trains too


@pytest.mark.parametrize("family", FAMILIES)
def test_qa_head_trains_and_predicts(family, family_model):
    """The extractive QA class of the family: a few updates through the one loop, then answers that are
    spans of their contexts (offset mappings of the fast tokenizer, either padding side)."""
    model, tok = load(family_model(family), head="qa")
    iid, suite = qa_frames()
    s = train_run(model, tok, build_streams(READ, iid, suite), "vanilla", {**HP, "batch_size": 2}, seed=3,
                  max_length=48, doc_stride=16)
    assert s["steps"] > 0 and all(np.isfinite(s["epoch_losses"]))
    answers = predict_qa(model, tok, ["Who traveled?", "Where to?"], [CTX, CTX], max_length=48, stride=16)
    assert len(answers) == 2 and all(text == CTX[s:e] for text, s, e in answers), answers
    # a window without the answer targets a real token, never padding (XLNet and Llama pad on the left)
    long = CTX + " The plot was dull and the music was too loud." * 3
    feats = encode_qa(tok, ["Who traveled?", "Where to?"], [long, CTX], max_length=32, stride=8)
    starts, ends = span_targets(feats, [long, CTX], ["Paul", "New York"])
    rows = torch.arange(len(feats))
    assert len(feats) > 2 and bool(feats.attention_mask[rows, starts].all() and feats.attention_mask[rows, ends].all())


@pytest.mark.parametrize("family", FAMILIES)
def test_checkpoint_resume_is_bit_identical(family, family_model, tmp_path, monkeypatch):
    """A run killed after its first epoch's checkpoint resumes to the weights of the run that never stopped
    (tied embeddings of T5 / BART / GPT-2 / ALBERT's shared layers included)."""
    class Crash(Exception):
        pass

    def fit(ckpt=None, crash=False):
        real = checkpoint.save

        def save_then_crash(*a, **k):
            real(*a, **k)
            raise Crash
        if crash:
            monkeypatch.setattr(checkpoint, "save", save_then_crash)
        model, tok = load(family_model(family))
        set_seed(123)
        try:
            train_run(model, tok, sent_streams(), "vanilla", {**HP, "epochs": 2}, seed=5, max_length=32,
                      checkpoint_dir=ckpt)
        finally:
            monkeypatch.setattr(checkpoint, "save", real)
        return model

    straight = fit()
    ckpt = tmp_path / "ckpt"
    with pytest.raises(Crash):
        fit(ckpt, crash=True)
    assert [p.name for p in checkpoint.epoch_dirs(ckpt)] == ["epoch-0001"]
    resumed = fit(ckpt)
    sa, sb = straight.state_dict(), resumed.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa), family


# ---------------------------------------------------------------- the tiny pipeline, in-process, per family
#: the methods the per-family pipeline runs (the LoRA method joins this list when it is merged)
FAMILY_METHODS = ("vanilla", "lp_ft", "lora")
TASK = "sent"


def family_config(model: str) -> dict:
    """One tiny SENT config (the tests' BASE, conftest.config_with): IID→T, a seen and a type fold."""
    cfg = config_with(tasks__sent__model=model, methods=list(FAMILY_METHODS), partitions=["seen", "type"],
                      training__iid__epochs=1, training__suite__epochs=1, training__iid_in_mix=8)
    cfg["tasks"][TASK]["iid"].update(n_train=16, n_val=4, n_test=8)
    return cfg


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, family_model):
    """The config's data and suite, prepared once (they do not depend on the model) by the steps the
    rules prepare_iid, build_suite and split_suite run, with the paths and parameters the workflow gives."""
    wd = tmp_path_factory.mktemp("family_data") / "run"
    loaded = workflow(wd, family_config(str(family_model("bert"))))
    cfg, paths = loaded.config, loaded.paths
    t = cfg["tasks"][TASK]
    with chdir(wd):
        data_steps.prepare_iid(iid=t["iid"], task_type=t["type"], out_source=paths.iid_source(TASK), task=TASK,
                               outputs={k: paths.iid(k, TASK) for k in ("train", "val", "test", "pool")})
        spec = loaded.runs.suite_specs.get(TASK)   # rules/common.smk suite_build_inputs: a spec's pool
        pool = paths.iid("pool", TASK) if spec is not None and beluga_spec.uses_pool(spec) else None
        data_steps.build_suite(suite=t["suite"], task_type=t["type"], pool=pool, out_suite=paths.suite(task=TASK))
        data_steps.split_suite(suite=paths.suite(task=TASK), task_type=t["type"], fractions=cfg["split"]["fractions"],
                               seed=cfg["split"]["seed"], duplicates=cfg["split"]["duplicates"],
                               out_split=paths.suite("split.parquet", TASK),
                               out_summary=paths.suite("summary.tsv", TASK))
    return wd


def workflow(wd, cfg):
    loaded, _ = dry_load(wd, cfg)
    assert not isinstance(loaded, Exception), loaded
    return loaded


class chdir:
    def __init__(self, path):
        self.path, self.old = path, None

    def __enter__(self):
        self.old = os.getcwd()
        os.chdir(self.path)

    def __exit__(self, *exc):
        os.chdir(self.old)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_pipeline(family, family_model, prepared, tmp_path):
    """The tiny pipeline for one family, in-process: the IID model (train_iid), its predictions and
    outcomes (predict, outcomes), then every method of FAMILY_METHODS (and the methods they start from:
    LP for LP-FT) on the seen fold and one type fold (finetune: train, predict, score), each job with the
    settings and paths Runs / Paths give the workflow's rules."""
    wd = tmp_path / "run"
    shutil.copytree(prepared, wd)
    loaded = workflow(wd, family_config(str(family_model(family))))
    runs, paths, cfg = loaded.runs, loaded.paths, loaded.config
    predict_cfg = cfg["predict"]
    with chdir(wd):
        iid_w = {"task": TASK, "seeddir": ""}
        iid_run = runs.settings("train_iid", iid_w)
        train_steps.train_iid(run=iid_run, train=paths.iid("train", TASK), out_model=paths.iid_model(TASK, seeddir=""))
        key = ("iid", "vanilla", "standard", "all")
        eval_steps.predict(task_type="sent", model=paths.iid_model(TASK, seeddir=""), suite=paths.suite(task=TASK),
                           split=paths.suite("split.parquet", TASK), iid_test=paths.iid("test", TASK),
                           functionalities=None, batch_size=predict_cfg["batch_size"],
                           max_length=iid_run["max_length"], doc_stride=iid_run["doc_stride"], threads=1,
                           precision=iid_run["precision"],
                           out_predictions=paths.run("predictions", TASK, *key, seeddir=""),
                           out_run=paths.run("predictions", TASK, *key, ext="json", seeddir=""))
        eval_steps.outcomes(task_type="sent", suite=paths.suite(task=TASK), split=paths.suite("split.parquet", TASK),
                            predictions=paths.run("predictions", TASK, *key, seeddir=""),
                            iid_test=paths.iid("test", TASK), held_out=[], functionalities=None,
                            out_outcomes=paths.run("outcomes", TASK, *key, seeddir=""))
        folds = [f for f in runs.folds[TASK] if f["partition"] == "seen"][:1] + \
            [f for f in runs.folds[TASK] if f["partition"] == "type"][:1]
        starts = sorted(runs.starts[TASK])
        done = []
        for method in [*starts, *FAMILY_METHODS]:   # a start method's model first (LP for LP-FT)
            for f in folds:
                w = {"task": TASK, "conf": "iid_to_t", "method": method, "partition": f["partition"],
                     "fold": f["fold"], "seeddir": ""}
                k = ("iid_to_t", method, f["partition"], f["fold"])
                start, _ = runs.start_model(w)
                train_steps.finetune(
                    run=runs.settings("finetune", w), suite=paths.suite(task=TASK),
                    split=paths.suite("split.parquet", TASK), iid_train=None, iid_test=paths.iid("test", TASK),
                    start=start, selected=None, batch_size=predict_cfg["batch_size"], scope=predict_cfg["scope"],
                    iid_examples=runs.iid_examples(TASK, f["partition"]),
                    out_predictions=paths.run("predictions", TASK, *k, seeddir=""),
                    out_run=paths.run("predictions", TASK, *k, ext="json", seeddir=""),
                    out_outcomes=paths.run("outcomes", TASK, *k, seeddir=""),
                    out_model=paths.model(TASK, *k, seeddir="") if method in starts else None)
                done.append(k)
        for k in [key, *done]:
            preds = pd.read_parquet(paths.run("predictions", TASK, *k, seeddir=""))
            probs = np.stack(preds["probs"].to_numpy())
            assert len(preds) and np.isfinite(probs).all() and np.allclose(probs.sum(1), 1, atol=1e-4), (family, k)
            out = pd.read_parquet(paths.run("outcomes", TASK, *k, seeddir=""))
            assert len(out), (family, k)
        rec = json.loads(Path(paths.run("predictions", TASK, *done[-1], ext="json", seeddir="")).read_text())
        assert rec["method"] == FAMILY_METHODS[-1] and rec["steps"] > 0, rec
        if rec["method"] == "lora":   # adapters on the family's default target modules, the head in full
            info = rec["method_info"]
            assert info["adapted_modules"] > 0 and 0 < info["trainable_parameters"] < info["base_parameters"], info


# ---------------------------------------------------------------- DAG time: families the project cannot train
def edited_family(src, dst, **changes):
    """A copy of a family folder with config.json fields changed (another model_type...)."""
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg.update(changes)
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def test_every_family_loads_at_dag_time(family_model, tmp_path):
    """A config naming family folders (a task each, LP-FT configured) loads; the DAG's model check
    (the function load_workflow calls) passes every family's folder with a classification and a QA head."""
    from beluga.workflow.dag import check_models

    cfg = family_config(str(family_model("bert")))
    base = cfg["tasks"].pop(TASK)
    some = ("gpt2", "t5", "xlnet")   # a dry load reads each task's suite spec: a second each
    cfg["tasks"] = {f: {**base, "model": str(family_model(f))} for f in some}
    loaded, _ = dry_load(tmp_path / "some", cfg)
    assert not isinstance(loaded, Exception), loaded
    assert sorted(loaded.runs.tasks) == sorted(some)
    for family in FAMILIES:
        for ttype in ("sent", "read"):
            one = {"tasks": {ttype: {"type": ttype, "model": str(family_model(family))}},
                   "training": {"max_length": 64}, "methods": list(FAMILY_METHODS)}
            check_models(one, {}, ["c.yaml"])


def test_unhandled_family_is_refused_at_dag_time_in_one_line(family_model, tmp_path, monkeypatch):
    """A model_type transformers has no classifier for, an unknown one, a config.json without one, and a
    family LP / LP-FT / LoRA know no head of: one line naming the config file, the field and the model; that
    refusal only when one of them is configured. A hub model whose config.json is cached is checked too."""
    from conftest import hf_flags, load_error

    clip = edited_family(family_model("bert"), tmp_path / "clip", model_type="clip")
    line, _ = load_error(tmp_path / "a", family_config(str(clip)), f"model {clip}", "field 'tasks.sent.model'",
                         "AutoModelForSequenceClassification", "'clip'")
    unknown = edited_family(family_model("bert"), tmp_path / "unknown", model_type="not-a-model")
    load_error(tmp_path / "b", family_config(str(unknown)), f"model {unknown}", "'not-a-model'", "does not know")
    none = edited_family(family_model("bert"), tmp_path / "none", model_type=None)
    load_error(tmp_path / "c", family_config(str(none)), f"model {none}", "no model_type")
    # Mistral: transformers has its classifier, the LP head table does not know it
    mistral = edited_family(family_model("llama"), tmp_path / "mistral", model_type="mistral")
    load_error(tmp_path / "d", family_config(str(mistral)), f"model {mistral}", "methods lp_ft / lora do not know",
               "MistralForSequenceClassification", "HEAD_PREFIXES")
    cfg = family_config(str(mistral))
    cfg["methods"] = ["vanilla", "lora"]   # LoRA trains the head in full: it must find it too
    load_error(tmp_path / "d2", cfg, f"model {mistral}", "methods lora do not know", "HEAD_PREFIXES")
    cfg["methods"] = ["vanilla"]
    loaded, _ = dry_load(tmp_path / "e", cfg)
    assert not isinstance(loaded, Exception), loaded
    # a hub model whose config.json is in the local cache
    commit = "a" * 40
    repo = tmp_path / "hub" / "models--org--clip"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text(json.dumps({"model_type": "clip"}))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    hf_flags(monkeypatch, offline=True, hub_cache=tmp_path / "hub")
    load_error(tmp_path / "f", family_config("org/clip"), "model org/clip", "field 'tasks.sent.model'", "'clip'")
    # READ: a family without an extractive QA class (CLIP has no classifier either)
    from beluga.core.errors import ConfigError
    from beluga.workflow.dag import check_models

    read = {"tasks": {"read": {"type": "read", "model": str(clip)}}, "training": {"max_length": 64},
            "methods": ["vanilla"]}
    with pytest.raises(ConfigError, match="AutoModelForQuestionAnswering class for model_type 'clip'"):
        check_models(read, {}, ["read.yaml"])


def test_family_tables_are_read_from_transformers_source():
    """The DAG reads transformers' task tables from its source, without importing torch; they are the
    imported tables."""
    from transformers.models.auto import modeling_auto

    from beluga.model.families import auto_table

    sequence, qa = get_head("classification").family_table, get_head("qa").family_table
    assert auto_table(*sequence) == dict(modeling_auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES)
    assert auto_table(*qa) == dict(modeling_auto.MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES)


@pytest.mark.slow
def test_snakemake_dry_run_accepts_family_folders_and_refuses_one(family_model, tmp_path):
    """snakemake -n plans a config with several family folders (one task each); a folder of a family it
    cannot train stops the dry run with one line."""
    from conftest import job_counts, smk_config

    cfg = family_config(str(family_model("gpt2")))
    base = cfg["tasks"].pop(TASK)
    for family in ("gpt2", "t5", "xlnet", "deberta-v2", "bart"):
        cfg["tasks"][family.replace("-", "_")] = {**base, "model": str(family_model(family))}
    out, _ = smk_config(tmp_path / "ok", cfg, "-n", "--quiet", "rules")
    assert out.returncode == 0, out.stderr[-3000:]
    assert job_counts(out.stdout + out.stderr)["train_iid"] == 5, out.stdout[-3000:]
    clip = edited_family(family_model("bert"), tmp_path / "clip", model_type="clip")
    cfg["tasks"]["t5"]["model"] = str(clip)
    out, cfg_file = smk_config(tmp_path / "bad", cfg, "-n")
    assert out.returncode != 0
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if f"model {clip}" in ln]
    assert len(lines) == 1 and "field 'tasks.t5.model'" in lines[0] and "'clip'" in lines[0], out.stderr[-3000:]


@pytest.mark.parametrize("family", FAMILIES)
def test_longest_input_fits_the_positions(family, family_model):
    """At the max_length the position check allows (RoBERTa: max_position_embeddings - 2, the positions its
    padding offset reserves; none for relative positions), a text that long is predicted; one token more
    is refused before loading."""
    from beluga.core.errors import ModelError
    from beluga.model.config import check_max_length

    folder = family_model(family)
    limit = check_max_length(folder, 64)
    model, tok = load(folder)
    n = limit or 160
    text = " ".join(["the movie was great"] * n)
    assert len(tok(text)["input_ids"]) > n   # truncated to max_length
    probs = get_head("classification").predict(model, tok, [text, "a fine film"], max_length=n)
    assert np.isfinite(probs).all()
    if limit is not None:
        with pytest.raises(ModelError, match=f"{limit} positions"):
            check_max_length(folder, limit + 1)


def test_a_tokenizer_with_neither_pad_nor_eos_is_refused(family_model):
    """ensure_pad_token: nothing to pad with is one line naming the model and the field."""
    from transformers import AutoTokenizer

    from beluga.core.errors import ModelError
    from beluga.model.modeling import ensure_pad_token

    tok = AutoTokenizer.from_pretrained(family_model("gpt2"))
    tok.eos_token = None
    with pytest.raises(ModelError, match="model m: field 'tokenizer': the tokenizer has neither a pad token"):
        ensure_pad_token(tok, None, "m")
