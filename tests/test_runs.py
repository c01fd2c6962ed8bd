"""The runs of a configuration (beluga/workflow/runs.py): what rules/common.smk
asks while the DAG is built - run keys and records, a training job's settings
(one FoldRun, built in one place), its hyper-parameters in words, cluster
resources, selection and start models, inoculation results."""

import copy
import dataclasses

import pytest
import yaml
from conftest import CONFIGS, REPO
from snakemake.utils import validate

from beluga.core.errors import ConfigError
from beluga.data.fetch import model_marker, resolve_data_paths
from beluga.methods import method_hparams
from beluga.train.settings import FoldRun, fold_run
from beluga.workflow.paths import IID_RUN, Paths, RunKey
from beluga.workflow.resources import BASE_MEM_MB
from beluga.workflow.runs import Runs, check_local_gpu_slots, gpu_resources, model_scale

SCHEMA = REPO / "schemas" / "config.schema.yaml"
FUNCS = ["add positive phrases", "typos", "simple negations: negative"]   # tiny.yaml's, in suite order
INOCULATION = {"units": ["class", "suite"], "doses": [1, "all"], "lrs": [1.0e-3, 1.0e-4], "max_epochs": 3,
               "patience": 1}
COMBINATIONAL = {"model": "tiny-random", "ks": [4, 8], "n_test": 6, "max_length": 32, "seed": 13,
                 "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": 2}}


def config(name: str = "tiny.yaml", **changes) -> dict:
    """A config of tests/configs, changed, validated (the schema fills the defaults) and resolved as the
    workflow does."""
    cfg = yaml.safe_load((CONFIGS / name).read_text())
    cfg.update(copy.deepcopy(changes))
    validate(cfg, str(SCHEMA))
    resolve_data_paths(cfg)
    return cfg


def runs(cfg: dict, configfiles=()) -> Runs:
    return Runs(cfg, Paths(cfg["results"]), str(cfg["data_dir"]), configfiles=configfiles)


def fold(task="sent", conf="iid_to_t", method="vanilla", partition="func", fold="typos", **more) -> dict:
    """Wildcards as a rule's job has them."""
    return dict(task=task, conf=conf, method=method, partition=partition, fold=fold, **more)


def test_run_keys_and_records():
    r = runs(config())
    keys = r.run_keys("sent")
    assert keys[0] == IID_RUN and len(keys) == 1 + 3 * 10   # 3 configurations x (seen + 3 x 3 folds)
    assert keys[1:4] == [RunKey("iid_to_t", "vanilla", "seen", "all"), RunKey("iid_to_t", "vanilla", "func",
                                                                              "add-positive-phrases"),
                         RunKey("iid_to_t", "vanilla", "func", "typos")]
    records = r.records("sent", "outcomes")
    assert [tuple(rec.values())[:4] for rec in records] == keys
    assert records[0] == {"configuration": "iid", "method": "vanilla", "partition": "standard", "fold": "all",
                          "path": "results/sent/outcomes/iid/vanilla/standard/all.parquet", "seed": 3,
                          "functionalities": FUNCS, "iid_examples": None}
    assert records[3] == {"configuration": "iid_to_t", "method": "vanilla", "partition": "func", "fold": "typos",
                          "path": "results/sent/outcomes/iid_to_t/vanilla/func/typos.parquet", "seed": 3,
                          "functionalities": ["typos"], "iid_examples": None}
    assert r.records("sent", "predictions")[3]["path"] == "results/sent/predictions/iid_to_t/vanilla/func/typos.parquet"
    # the failures report: every run's outcomes and predictions
    failures = r.records("sent", "outcomes", predictions=True)
    assert list(failures[3]) == ["configuration", "method", "partition", "fold", "path", "seed", "functionalities",
                                 "iid_examples", "predictions"]
    assert failures[3]["predictions"] == "results/sent/predictions/iid_to_t/vanilla/func/typos.parquet"
    # the OOD evaluation: the IID model and each pair's seen model (every model with ood_models: all)
    systems = r.records("sent", "outcomes", r.ood_keys("sent", "systems"), functionalities=False)
    assert [(s["configuration"], s["partition"]) for s in systems] == [
        ("iid", "standard"), ("iid_to_t", "seen"), ("iid_plus_t", "seen"), ("iid_to_iid_plus_t", "seen")]
    assert list(systems[0]) == ["configuration", "method", "partition", "fold", "path", "seed"]
    assert r.ood_keys("sent", "models") == r.ood_keys("sent", "systems")
    every = runs(config(predict={"batch_size": 32, "ood_models": "all", "scope": "all"}))
    assert every.ood_keys("sent", "models") == keys
    assert {rec["functionalities"] for rec in every.records("sent", "outcomes")} == {None}


def test_fold_models_predict_an_iid_sample_only_where_no_score_reads_them():
    """predict.fold_iid_examples: under scenario_iid seen a func / class / type fold model predicts a sample of
    the i.i.d. test set (its G and tests take the seen model's); the IID and seen models, and every model
    under scenario_iid folds, predict every example."""
    cfg = config(predict={"fold_iid_examples": 50})
    assert {rec["iid_examples"] for rec in runs(cfg).records("sent", "outcomes")} == {None}   # scenario_iid: folds
    cfg["tasks"]["sent"]["scenario_iid"] = "seen"
    r = runs(cfg)
    got = {(rec["partition"], rec["iid_examples"]) for rec in r.records("sent", "outcomes")}
    assert got == {("standard", None), ("seen", None), ("func", 50), ("class", 50), ("type", 50)}
    assert r.iid_examples("sent", "func") == 50 and r.iid_examples("sent", "seen") is None
    cfg["predict"]["fold_iid_examples"] = None
    assert {rec["iid_examples"] for rec in runs(cfg).records("sent", "outcomes")} == {None}


def test_fold_spec_and_ood_sets():
    r = runs(config(tasks={"sent": {**config()["tasks"]["sent"], "ood": [
        {"name": "tweets", "source": "hutto", "set": "tweets"}, {"name": "nyt", "source": "hutto", "set": "nyt"}]}}))
    assert r.fold_spec("sent", "standard", "all") == {"partition": "standard", "fold": "all", "group": "all",
                                                      "held_out": FUNCS}
    assert r.fold_spec("sent", "seen", "all")["held_out"] == FUNCS
    assert r.fold_spec("sent", "class", "negation")["held_out"] == ["simple negations: negative"]
    assert r.scored_functionalities("sent", "type", "inv") == ["typos"]
    assert r.ood_data("sent") == ["results/sent/ood/data/tweets.parquet", "results/sent/ood/data/nyt.parquet"]
    assert r.predicts_ood("iid", "standard") and r.predicts_ood("iid_plus_t", "seen")
    assert not r.predicts_ood("iid_plus_t", "func")


def test_settings_of_every_training_rule():
    """One builder for train_iid, finetune (finetune_keep, finetune_model), trial, inoculate and
    combinational_train: the FoldRun each rule had when it was built in rules/common.smk."""
    cfg = config(iid_job_threads=2, inoculation=INOCULATION, combinational=COMBINATIONAL,
                 selection={"grid": {"lr": [1e-3, 1e-5]}})
    r = runs(cfg)
    tr = r.training("sent")
    suite_hp = {**tr["suite"], **method_hparams("vanilla")}

    def expected(**job):
        return fold_run(cfg, tr, task="sent", task_type="sent", model="tiny-random", seed=3,
                        **{"threads": cfg["job_threads"], **job})

    iid = r.settings("train_iid", {"task": "sent"})
    assert iid == expected(configuration="iid", method="vanilla", partition="standard", fold="all", held_out=(),
                           functionalities=(), start_label="tiny-random",
                           hparams={**tr["iid"], **method_hparams("vanilla")},
                           checkpoint_dir="results/sent/checkpoints/train_iid/iid/vanilla/standard/all",
                           threads=2).to_dict()
    assert list(iid) == [f.name for f in dataclasses.fields(FoldRun)] and FoldRun.from_dict(iid).threads == 2

    ft = r.settings("finetune", fold())
    assert ft == expected(configuration="iid_to_t", method="vanilla", partition="func", fold="typos",
                          held_out=("typos",), functionalities=tuple(FUNCS), start_label="iid", hparams=suite_hp,
                          checkpoint_dir="results/sent/checkpoints/finetune/iid_to_t/vanilla/func/typos").to_dict()
    assert ft["threads"] == cfg["job_threads"] == 1
    plus = r.settings("finetune", fold(conf="iid_plus_t", partition="seen", fold="all"))
    assert plus["start_label"] == "tiny-random" and plus["held_out"] == FUNCS

    trial = r.settings("trial", fold(trial="lr1e-05"))   # the grid point on the suite stage's
    assert trial == dict(ft, checkpoint_dir="results/sent/checkpoints/trial/iid_to_t/vanilla/func/typos/lr1e-05",
                         hparams={**suite_hp, "lr": 1e-5})
    assert list(trial["hparams"]) == list(suite_hp)
    assert r.settings("finetune", fold(seeddir="seeds/8/"))["seed"] == 8   # another training seed's job

    inoc = r.settings("inoculate", {"task": "sent", "unit": "class-negation", "dose": "1", "lr": "lr0.0001"})
    assert inoc == expected(configuration="iid_to_t", method="vanilla", partition="inoculation",
                            fold="class-negation-1-lr0.0001", held_out=("add positive phrases", "typos"),
                            functionalities=tuple(FUNCS), start_label="iid",
                            hparams={**suite_hp, "lr": 1e-4, "epochs": 3}, checkpoint_dir=None).to_dict()
    assert list(inoc["hparams"]) == list(suite_hp)   # the dose's values replace the suite stage's in place

    comb = r.settings("combinational_train", {"variant": "default", "k": "8"})
    assert comb == fold_run(cfg, {**cfg["training"], "max_length": 32}, task="combinational", task_type="sent",
                            model="tiny-random", configuration="iid", method="vanilla", partition="standard",
                            fold="default-k8", held_out=(), functionalities=(), start_label="tiny-random",
                            hparams={**COMBINATIONAL["training"], **method_hparams("vanilla")}, seed=13,
                            threads=cfg["job_threads"], checkpoint_dir=None).to_dict()
    assert comb["seed"] == 13 != cfg["seed"]
    with pytest.raises(ValueError, match="not a training rule"):
        r.settings("predict", fold())


def test_settings_carry_a_hub_models_marker_except_inoculation():
    cfg = config(inoculation=INOCULATION, combinational={**COMBINATIONAL, "model": "org/some-model"},
                 selection={"grid": {"lr": [1e-3]}})
    cfg["tasks"]["sent"]["model"] = "org/task-model"
    cfg["tasks"]["sent"]["model_revision"] = "v1"
    r = runs(cfg)
    marker = model_marker(".", "org/task-model", "v1")
    assert r.model_marker("sent") == marker == "models/org--task-model@v1.json"
    assert r.settings("train_iid", {"task": "sent"})["model_lock"] == marker
    assert r.settings("finetune", fold())["model_lock"] == marker
    assert r.settings("trial", fold(trial="lr0.001"))["model_lock"] == marker
    assert r.settings("inoculate", {"task": "sent", "unit": "suite", "dose": "all", "lr": "lr0.001"})["model_lock"] \
        is None
    assert r.settings("combinational_train", {"variant": "default", "k": "4"})["model_lock"] == \
        model_marker(".", "org/some-model", None)
    assert runs(config()).model_marker("sent") is None


def test_start_model_selection_and_hparams_summary():
    r = runs(config("tiny_methods.yaml"))
    assert r.start_model(fold(method="lp_ft", partition="seen", fold="all")) == (
        "results/sent/models/iid_to_t/lp/seen/all", "lp model of this fold")
    assert r.start_model(fold(partition="seen", fold="all")) == ("results/sent/models/iid/vanilla/standard/all", "iid")
    assert r.start_model(fold(conf="iid_plus_t", partition="seen", fold="all")) == (None, "tiny-random")
    assert r.hparams_summary("finetune", fold(method="lp_ft", partition="seen", fold="all")) == \
        "lr 0.001, batch_size 4, epochs 1; starts from lp model of this fold"
    assert r.hparams_summary("finetune", fold(conf="iid_plus_t", partition="seen", fold="all")) == \
        "lr 0.001, batch_size 4, epochs 1; starts from tiny-random"
    assert not r.has_grid("sent", "vanilla") and r.grid_points[("sent", "vanilla")] == {}

    per_fold = runs(config("tiny_selection.yaml"))   # lr grid, policy per_fold
    w = fold(partition="type", fold="inv")
    assert per_fold.has_grid("sent", "vanilla")
    assert per_fold.selected(w) == "results/sent/selection/iid_to_t/vanilla/type/inv/selected.json"
    assert per_fold.hparams_summary("finetune", w) == \
        "batch_size 4, epochs 1; lr: vanilla's selection on this fold; starts from iid"
    assert per_fold.hparams_summary("trial", dict(w, trial="lr1e-05")) == \
        "lr 1e-05, batch_size 4, epochs 1; starts from iid"
    seen = runs(config("tiny_selection.yaml", selection={"grid": {"lr": [1e-3, 1e-5]}, "policy": "seen"}))
    assert seen.selected(w) == "results/sent/selection/iid_to_t/vanilla/seen/all/selected.json"
    assert seen.hparams_summary("finetune", w) == \
        "batch_size 4, epochs 1; lr: vanilla's selection on seen/all; starts from iid"
    assert list(seen.grid_points[("sent", "vanilla")]) == ["lr0.001", "lr1e-05"]


def test_lp_ft_own_lp_stage_with_lp_epochs():
    """lp_ft's lp_epochs (the reference code: 1.5): LP-FT starts from its own LP stage (lp_ft_lp:
    LP's hyper-parameters and selection, lp_epochs epochs), not from the lp method's model; by
    default (null) from the lp model, one LP job for both methods."""
    assert runs(config("tiny_methods.yaml")).start_methods() == ["lp"]
    tr = yaml.safe_load((CONFIGS / "tiny_methods.yaml").read_text())["training"]
    tr["method_hparams"].update(lp={"lr": 5e-4}, lp_ft={"lp_epochs": 1.5})
    r = runs(config("tiny_methods.yaml", training=tr))
    assert r.start_methods() == ["lp_ft_lp"]
    assert r.start_model(fold(method="lp_ft", partition="seen", fold="all")) == (
        "results/sent/models/iid_to_t/lp_ft_lp/seen/all", "lp_ft_lp model of this fold")
    stage = fold(method="lp_ft_lp", partition="seen", fold="all")
    assert r.start_model(stage) == ("results/sent/models/iid/vanilla/standard/all", "iid")
    hp = r.settings("finetune", stage)["hparams"]
    assert (hp["lr"], hp["batch_size"], hp["epochs"], hp["lp_epochs"]) == (5e-4, 4, 1.5, 1.5)   # lp_epochs fixes
    assert r.hparams_summary("finetune", stage) == "lr 0.0005, batch_size 4, epochs 1.5; starts from iid"
    assert r.selection_method("sent", "lp_ft_lp") == "lp"
    sel = runs(config("tiny_methods.yaml", training=tr, selection={"method_grid": {"lp": {"lr": [1e-3, 1e-4]}}}))
    assert sel.has_grid("sent", "lp_ft_lp") and sel.selected(stage) == \
        "results/sent/selection/iid_to_t/lp/seen/all/selected.json"
    assert sel.hparams_summary("finetune", stage) == \
        "batch_size 4, epochs 1.5; lr: lp's selection on seen/all; starts from iid"


def test_job_resources():
    r = runs(config())   # tiny-random (scale 0.5), max_length 32, no GPU

    def at(kind, attempts=(1, 2, 3), **wildcards):
        res = r.job_resources(kind)
        return [(res["mem_mb"](wildcards, a), res["runtime"](wildcards, a)) for a in attempts]

    # memory: the measured base (beluga/workflow/resources.py) x model scale x max(1, max_length / 128),
    # half of it more on every retry
    train, predict = BASE_MEM_MB["train"], BASE_MEM_MB["predict"]
    assert at("train", task="sent") == [(int(train * 0.5), 30), (int(train * 0.75), 60), (int(train), 120)]
    assert at("predict", task="sent") == [(int(predict * 0.5), 10), (int(predict * 0.75), 20), (int(predict), 40)]
    # the combinational model: default
    assert at("train", k="4") == [(train, 60), (int(train * 1.5), 120), (train * 2, 240)]
    assert set(r.job_resources("train")) == {"mem_mb", "runtime"}
    long = runs(config(training={**config()["training"], "max_length": 384}))
    assert long.job_resources("train")["mem_mb"]({"task": "sent"}, 1) == int(train * 0.5 * 3)   # 384/128
    assert [model_scale(m) for m in ("tiny-random", "default", "bert-base-uncased", "bert-large-cased")] == \
        [0.5, 1.0, 2.5, 6.0]
    base = {"gpus": 0, "gpu_jobs": 1, "gpu_partition": None}
    assert gpu_resources(base) == {}
    assert gpu_resources({**base, "gpus": 2}) == {"gpu": 2}
    assert gpu_resources({**base, "gpus": 1, "gpu_jobs": 3}) == {"gpu_slot": 1, "gres": "shard:1"}
    # K jobs per GPU on a site of S shards per GPU: S/K shards a job, so that K (not S) share a GPU
    assert gpu_resources({**base, "gpus": 1, "gpu_jobs": 2, "gpu_shards": 8})["gres"] == "shard:4"
    assert gpu_resources({**base, "gpus": 1, "gpu_jobs": 4, "gpu_shards": 4})["gres"] == "shard:1"
    with pytest.raises(ConfigError, match=r"field 'gpu_shards': 6 shards per GPU .* gpu_jobs: 4"):
        gpu_resources({**base, "gpus": 1, "gpu_jobs": 4, "gpu_shards": 6})
    with pytest.raises(ConfigError, match=r"field 'gpu_jobs': 2 jobs per GPU need gpus: 1"):
        gpu_resources({**base, "gpus": 2, "gpu_jobs": 2})
    assert gpu_resources({**base, "gpus": 1, "gpu_partition": "gpu-a100"}) == {"gpu": 1, "slurm_partition": "gpu-a100"}
    assert runs(config(gpus=1, gpu_partition="gpu-a100")).job_resources("predict")["gpu"] == 1


def test_local_gpu_slots_are_k_per_gpu():
    """A local run of K jobs per GPU must be told the machine's slots (--resources gpu_slot=K x GPUs): Snakemake
    would otherwise leave gpu_slot unlimited and start as many GPU jobs as the machine has cores."""
    base = {"gpus": 1, "gpu_jobs": 4, "gpu_partition": None}
    for slots in (4, 8, 12):                       # one, two, three GPUs of 4 jobs each
        check_local_gpu_slots(base, slots)
    for slots, given in ((None, "no --resources gpu_slot"), (2, "gpu_slot=2"), (6, "gpu_slot=6")):
        with pytest.raises(ConfigError, match=rf"field 'gpu_jobs': 4 jobs per GPU .*gpu_slot=4 per GPU.*{given}"):
            check_local_gpu_slots(base, slots)
    # one job per GPU, or CPU jobs: nothing to say (the slots resource is not requested)
    check_local_gpu_slots({**base, "gpu_jobs": 1}, None)
    check_local_gpu_slots({**base, "gpus": 0}, None)


def test_inoculation_results():
    r = runs(config(inoculation=INOCULATION))
    assert list(r.inoc_units["sent"]) == ["class-vocabulary", "class-robustness", "class-negation", "suite"]
    assert r.inoc_doses("sent", "suite") == ["1", "all"]
    results = r.inoc_results("sent")
    assert len(results) == 4 * 2 * 2
    assert results[:2] == ["results/sent/inoculation/runs/class-vocabulary/1/lr0.001.json",
                           "results/sent/inoculation/runs/class-vocabulary/1/lr0.0001.json"]
    # a task the config does not have is an error, not an analysis silently left out
    with pytest.raises(ConfigError, match=r"field 'inoculation\.tasks': 'para' is not a task of this config"):
        runs(config(inoculation={**INOCULATION, "tasks": ["para"]}))


def test_bad_folds_and_grids_name_the_config_file():
    one = config(configurations=["iid_to_t"], partitions=["func"])
    one["tasks"]["sent"]["suite"]["functionalities"] = ["typos"]
    with pytest.raises(ConfigError, match=r"^config file c\.yaml: field 'partitions': fold func/typos"):
        runs(one, configfiles=["c.yaml"])
    with pytest.raises(ConfigError, match=r"field 'selection\.grid\.lr': values .* have the same trial id"):
        runs(config(selection={"grid": {"lr": [1e-3, 1.0000001e-3]}}))


def test_wildcard_constraints_of_names():
    from beluga.workflow.dag import NEVER, method_regex, paths_regex

    assert method_regex(["lp", "lp_ft", "vanilla"]) == "vanilla|lp_ft|lp"   # the longest first
    assert method_regex([]) == paths_regex([]) == NEVER == "(?!)"
    assert paths_regex(["checklist/sst.json", "a+b"]) == r"checklist/sst\.json|a\+b"
