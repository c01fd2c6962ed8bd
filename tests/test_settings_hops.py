"""How far a setting travels: ``lr`` and the training seed reach their use in at most five hops from the
config (scripts/setting_hops.py traces them in a tiny run of the pipeline's code), and one function,
beluga.train.settings.job_hparams, rewrites a job's hyper-parameters (every other place reads them)."""

import sys

import pytest
from conftest import REPO

from beluga.train.settings import job_hparams

sys.path.insert(0, str(REPO / "scripts"))
import setting_hops  # noqa: E402

#: scenario -> (where the used value comes from, the value)
SOURCES = {
    "train_iid": ("config.training.iid", setting_hops.LR["training.iid.lr"]),
    "finetune l2": ("config.training.suite", setting_hops.LR["training.suite.lr"]),
    "finetune lp": ("config.training.method_hparams.lp", setting_hops.LR["training.method_hparams.lp.lr"]),
    "finetune vanilla (selected)": ("beluga.steps.train.with_selection", setting_hops.LR["selected.json"]),
    "trial": ("config.selection.method_grid.vanilla.lr", setting_hops.LR["selection.grid.lr"]),
    "inoculate": ("config.inoculation.lrs", setting_hops.LR["inoculation.lrs"]),
    "combinational_train": ("config.combinational.training", setting_hops.LR["combinational.training.lr"]),
    "finetune, second seed": ("config.seeds", setting_hops.SEED),
    "inoculate, second seed": ("config.seeds", setting_hops.SEED),
}


@pytest.mark.slow
def test_lr_and_the_seed_reach_their_use_in_at_most_five_hops():
    traces = setting_hops.trace_all()
    assert set(traces) == set(SOURCES)
    for name, t in traces.items():
        assert not t.errors, (name, t.errors)
        source, value = SOURCES[name]
        if name == "combinational_train":   # traced to its settings: the job's hyper-parameters
            paths = [setting_hops.chain(setting_hops.settings_carrier(t))]
        else:
            paths = t.paths()
            assert paths, f"{name}: the value never reached its use"
            # every use (the optimizer built, the generators seeded) took the value of its source
            assert {p[-1].value for p in paths} == {value}, name
        for path in paths:
            report = setting_hops.report({name: t})
            assert setting_hops.hops(path) <= setting_hops.MAX_HOPS, report
            assert path[0].builder == source and path[0].parent is None, report
            if t.setting == "lr":   # the job's hyper-parameters: built in the one place
                where = path[-1 if name == "combinational_train" else -2].builder
                assert where == "beluga.train.settings.job_hparams", report
            else:   # the seed: into the job's settings, built once
                assert [c.builder for c in path[1:-1]] == ["beluga.train.settings.fold_run"], report


def test_one_place_rewrites_a_jobs_hyper_parameters():
    assert setting_hops.rewrite_sites() == []


@pytest.mark.parametrize("code, why", [
    ("def f(run):\n    hparams = dict(run.hparams)\n    hparams.update(lr=1e-3)\n", "changed in place"),
    ("def f(hparams):\n    hparams['lr'] = 1e-3\n", "an item written"),
    ("def f(tr, m):\n    return {**tr['suite'], **config_hparams(m, {})}\n", "merged"),
    ("def f(run, gp):\n    return run.with_hparams(**gp)\n", "rewritten"),
    ("def f(run):\n    return dataclasses.replace(run, seed=3)\n", "settings rebuilt with another seed"),
    ("def f(run, changes):\n    return run.replace(**changes)\n", "settings rebuilt with another setting"),
    ("def f(run):\n    return run.hparams | {'lr': 1}\n", "merged"),
])
def test_the_rewrite_scan_finds_each_kind_of_write(code, why):
    found = setting_hops.rewrite_sites(sources={"beluga/x.py": code})
    assert len(found) == 1 and f": {why}: " in found[0] and found[0].startswith("beluga/x.py:")


def test_the_rewrite_scan_leaves_reads_and_the_one_place_alone():
    reads = ("def record(run):\n    return {'hparams': run.hparams, **run.extra}\n"
             "def g(run, choice):\n    return dataclasses.replace(run, hparams=job_hparams(run.method, run.hparams,"
             " choice))\n")
    one_place = ("def job_hparams(method, *layers):\n    hparams = {}\n    for layer in layers:\n"
                 "        hparams.update(layer)\n")
    assert setting_hops.rewrite_sites(sources={"beluga/x.py": reads, "beluga/train/settings.py": one_place}) == []
    assert len(setting_hops.rewrite_sites(sources={"beluga/y.py": one_place})) == 1   # elsewhere: a write


def test_job_hparams_merges_the_layers_in_order_then_the_fixed_epochs():
    stage, method = {"lr": 1e-3, "batch_size": 4, "epochs": 2}, {"weight_decay": 0.0, "lr": 5e-4}
    hp = job_hparams("lp", stage, method, {"epochs": 3})
    assert hp == {"lr": 5e-4, "batch_size": 4, "epochs": 3, "weight_decay": 0.0}
    assert list(hp) == ["lr", "batch_size", "epochs", "weight_decay"]   # the first layer's order
    assert stage == {"lr": 1e-3, "batch_size": 4, "epochs": 2}   # the layers are read, never written
    # LP-FT's ft_epochs is the epochs whatever a later layer (a selection's choice) says
    assert job_hparams("lp_ft", stage, {"ft_epochs": 1.5}, {"epochs": 4})["epochs"] == 1.5
    assert job_hparams("lp_ft", stage, {"ft_epochs": None}, {"epochs": 4})["epochs"] == 4


def test_a_trial_refuses_a_run_without_its_grid_point(tmp_path):
    from conftest import fold_run

    from beluga.steps.train import trial

    run = fold_run(hparams={"lr": 1e-3, "batch_size": 4, "epochs": 1})
    with pytest.raises(ValueError, match="do not hold its grid point"):
        trial(run=run.to_dict(), trial_id="lr1e-05", grid_point={"lr": 1e-5}, suite="s", split="p", iid_train=None,
              start=None, batch_size=8, out_score=str(tmp_path / "t.json"))
