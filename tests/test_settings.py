"""The house: a training job's settings travel as one object (FoldRun) from
the config to the training loop; defaults live in one place (the schema for
the config, each method class for its hyper-parameters)."""

import dataclasses
from pathlib import Path

import pytest
import yaml
from conftest import REPO, make_tiny_suite
from snakemake.utils import validate

from beluga.methods import ALGORITHMS, DEFAULT_HPARAMS, PUBLIC_METHODS, method_hparams
from beluga.suites.folds import CONFIGURATIONS
from beluga.suites.format import save_suite
from beluga.train.settings import FoldRun, fold_run, sourced_settings

SCHEMA = REPO / "schemas" / "config.schema.yaml"


def validated(cfg: dict) -> dict:
    validate(cfg, str(SCHEMA))   # fills the schema's defaults
    return cfg


def distinctive_config() -> dict:
    """A config whose every FoldRun-sourced key has a value no default has."""
    return validated({
        "seed": 11, "precision": "fp32", "job_threads": 1, "checkpoint_every_s": 3.5,
        "tasks": {"sent": {"type": "sent", "model": "tiny-random",
                           "suite": {"generate": "sent_default"},
                           "iid": {"source": "rotten_tomatoes", "n_train": 4, "n_val": 2, "n_test": 2}}},
        "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen"],
        "training": {"max_length": 37, "doc_stride": 19, "iid_in_mix": 7, "dir_train_slice": False,
                     "nonfinite": "skip", "qa_answer_match": "substring", "qa_inv_scope": "sequence",
                     "eq_or_not_negative_target": "label", "batching": "reference"},
    })


def test_every_sourced_field_comes_from_the_config():
    cfg = distinctive_config()
    sourced = sourced_settings(cfg, cfg["training"])
    fields = {f.name: f for f in dataclasses.fields(FoldRun)}
    assert set(sourced) == {n for n, f in fields.items() if f.metadata}
    for name, value in sourced.items():
        meta = fields[name].metadata
        block = cfg["training"] if meta["source"] == "training" else cfg
        assert value == block[meta["key"] or name], name
    # the schema declares every sourced key (with a default: nothing falls back in code)
    schema = yaml.safe_load(SCHEMA.read_text())
    for name, f in fields.items():
        if f.metadata:
            props = schema["properties"] if f.metadata["source"] == "config" else \
                schema["properties"]["training"]["properties"]
            key = f.metadata["key"] or name
            assert key in props and "default" in props[key], key


@pytest.mark.parametrize("step", ["train_iid", "finetune", "trial"])
def test_every_field_reaches_the_training_loop(step, tmp_path, monkeypatch):
    """Each training job's step hands the run it is given to training.train, every field intact."""
    import pandas as pd

    import beluga.train.loop
    from beluga.core.io import write_parquet
    from beluga.steps import train as steps
    from beluga.suites.folds import assign_splits

    cfg = distinctive_config()
    suite = make_tiny_suite(4)
    save_suite(suite, tmp_path / "suite.parquet")
    write_parquet(assign_splits(suite, (0.5, 0.25, 0.25), 1), tmp_path / "split.parquet")
    write_parquet(pd.DataFrame({"example_id": ["a"], "text": ["good"], "label": [1]}), tmp_path / "iid.parquet")
    funcs = tuple(suite.functionality.unique())
    iid = step == "train_iid"
    run = fold_run(cfg, cfg["training"], task="sent", task_type="sent", configuration="iid" if iid else "iid_to_t",
                   method="vanilla", partition="standard" if iid else "seen", fold="all", held_out=funcs,
                   functionalities=funcs, model="tiny-random", start_label="tiny-random",
                   hparams={"lr": 1e-3, "batch_size": 4, "epochs": 1, **method_hparams("vanilla")}, seed=11,
                   threads=1, checkpoint_dir=str(tmp_path / "ckpt"))
    seen = {}

    class Stop(Exception):
        pass

    def capture(model, tokenizer, streams, given, *, precision, reference_state=None, log_every=50,
                on_epoch_end=None):
        seen["run"] = given
        raise Stop

    monkeypatch.setattr(beluga.train.loop, "train", capture)
    data = dict(suite=str(tmp_path / "suite.parquet"), split=str(tmp_path / "split.parquet"), iid_train=None,
                start=None)
    with pytest.raises(Stop):
        if step == "train_iid":
            steps.train_iid(run=run.to_dict(), train=str(tmp_path / "iid.parquet"), out_model=str(tmp_path / "m"))
        elif step == "finetune":
            steps.finetune(run=run.to_dict(), **data, iid_test=str(tmp_path / "iid.parquet"), selected=None,
                           batch_size=8, scope="scored", out_predictions=str(tmp_path / "p.parquet"),
                           out_run=str(tmp_path / "p.json"), out_outcomes=str(tmp_path / "o.parquet"))
        else:
            steps.trial(run=run.to_dict(), trial_id="t0", grid_point={"lr": 1e-3}, **data, batch_size=8,
                        out_score=str(tmp_path / "t.json"))
    got = seen["run"]
    for f in dataclasses.fields(FoldRun):
        assert getattr(got, f.name) == getattr(run, f.name), f.name


def test_schema_enums_are_the_registry_and_the_configurations():
    schema = yaml.safe_load(SCHEMA.read_text())
    assert schema["properties"]["methods"]["items"]["enum"] == sorted(PUBLIC_METHODS, key=list(
        schema["properties"]["methods"]["items"]["enum"]).index)
    # every registered method a config may list (LP-FT's internal LP stage takes lp's and lp_ft's entries)
    assert set(PUBLIC_METHODS) == {n for n, c in ALGORITHMS.items() if not c.internal} == set(ALGORITHMS) - {"lp_ft_lp"}
    assert set(schema["properties"]["methods"]["items"]["enum"]) == set(PUBLIC_METHODS)
    assert set(schema["$defs"]["method_hparams"]["propertyNames"]["enum"]) == set(PUBLIC_METHODS)
    assert set(schema["$defs"]["method_grid"]["propertyNames"]["enum"]) == set(PUBLIC_METHODS)
    assert set(schema["properties"]["configurations"]["items"]["enum"]) == set(CONFIGURATIONS)


def test_method_defaults_are_owned_by_the_classes_and_merged_once():
    for name, cls in ALGORITHMS.items():
        assert DEFAULT_HPARAMS[name] == {**cls.shared_defaults, **cls.defaults} == method_hparams(name)
    # a method given incomplete hyper-parameters refuses them (no second merge hides a missing key)
    from conftest import fold_run as test_run

    from beluga.model.modeling import TINY_RANDOM, load_model
    from beluga.train.loop import LossFn

    model, tok = load_model(TINY_RANDOM, 2)
    with pytest.raises(ValueError, match="missing"):
        ALGORITHMS["irm"](model, {"lr": 1e-3, "batch_size": 2, "epochs": 1}, LossFn(tok, 16), 1)
    assert test_run("irm").hparams["irm_lambda"] == 1e4


def test_config_defaults_only_in_the_schema():
    """The rules read the config without fallbacks: every key they read has a schema default."""
    cfg = validated({"tasks": {"t": {"type": "sent", "model": "default", "suite": {"generate": "sent_default"},
                                     "iid": {"source": "rotten_tomatoes"}}},
                     "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen"]})
    for key in ("results", "seed", "precision", "job_threads", "checkpoint_every_s", "keep_models", "gpus"):
        assert key in cfg, key
    assert {"fractions", "seed"} <= set(cfg["split"]) and {"grid", "policy"} <= set(cfg["selection"])
    assert {"batch_size", "scope"} <= set(cfg["predict"]) and "alpha" in cfg["statistics"]
    assert {"iid", "suite", "max_length", "doc_stride", "iid_in_mix", "dir_train_slice", "nonfinite",
            "method_hparams"} <= set(cfg["training"])
    assert cfg["tasks"]["t"]["iid_metric"] == "mean" and "paper_fixes" in cfg["tasks"]["t"]["suite"]
    rules = "\n".join(p.read_text() for p in (REPO / "rules").glob("*.smk"))
    assert "config.get(" not in rules and '.get("doc_stride"' not in rules and '.get("max_length"' not in rules
    assert Path(REPO / "rules" / "common.smk").read_text().count("localrules:") == 1
