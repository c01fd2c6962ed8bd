"""Minibatch composition (training.batching): the project's and the reference
code's (behaviour_training.py: get_single_dataloader, the INV / DIR data
collators, MultiTestTypeDataloader), counted by hand on small T_train."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import train_run

from beluga.core.errors import ConfigError
from beluga.core.tasks import PARA, SENT
from beluga.methods import get_algorithm, method_hparams
from beluga.model.modeling import TINY_RANDOM, load_model, set_seed
from beluga.train.batches import LABEL_DIR, EnvSampler, cases_per_batch, env_groups, epoch_batches, n_batches
from beluga.train.loop import _plan
from beluga.train.streams import build_streams


def _case(cid, func, ttype, inputs, inputs_b=None, labels=None, expect="eq", params=None, agg="all"):
    return {"case_id": cid, "functionality": func, "capability": "C", "test_type": ttype, "inputs": inputs,
            "inputs_b": inputs_b, "labels": labels, "expect": expect, "expect_params": json.dumps(params or {}),
            "agg_fn": agg, "meta": None, "answers": None}


def sent_suite() -> pd.DataFrame:
    """17 MFT inputs, 20 INV cases (original + 2 typos), 10 DIR cases (original + 1); lengths vary."""
    rows = [_case(f"m{i}", "neg", "MFT", ["bad" + " x" * (i % 7)], labels=[0]) for i in range(17)]
    rows += [_case(f"i{i}", "typos", "INV", [f"a fine film {i}", f"a fnie film {i}", f"a fine flim {i}"],
                   expect="inv", params={"tolerance": 0.1}, agg="all_except_first") for i in range(20)]
    rows += [_case(f"d{i}", "add pos", "DIR", [f"the plot {i}", f"the plot {i}. I loved it."], expect="diff_up",
                   params={"tolerance": 0.1}, agg="all_except_first") for i in range(10)]
    return pd.DataFrame(rows)


def para_suite() -> pd.DataFrame:
    """Label-checked DIRs as in the released qqp suite: 12 "(q, paraphrase(q))" cases (eq 1, ``all``, 6 pairs:
    original + 5), 4 implication triplets, 7 name changes (eq 0, ``all_except_first``, original + 4) and 3 more
    name changes with original + 2; plus 2 MFT pairs."""
    rows = [_case(f"m{i}", "mft", "MFT", [f"m{i}"], [f"m{i}b"], labels=[1]) for i in range(2)]
    rows += [_case(f"p{i}", "para", "DIR", [f"p{i}-{j}" for j in range(6)], [f"p{i}-{j}b" for j in range(6)],
                   params={"val": 1}) for i in range(12)]
    rows += [_case(f"t{i}", "impl", "DIR", [f"t{i}-{j}" for j in range(3)], [f"t{i}-{j}b" for j in range(3)],
                   labels=[1, 1, 0], expect="triplet", agg="all_except_first") for i in range(4)]
    rows += [_case(f"n{i}", "names", "DIR", [f"n{i}-{j}" for j in range(5)], [f"n{i}-{j}b" for j in range(5)],
                   params={"val": 0}, agg="all_except_first") for i in range(7)]
    rows += [_case(f"s{i}", "names", "DIR", [f"s{i}-{j}" for j in range(3)], [f"s{i}-{j}b" for j in range(3)],
                   params={"val": 0}, agg="all_except_first") for i in range(3)]
    return pd.DataFrame(rows)


def test_cases_per_batch():
    # reference get_single_dataloader: inv / dir -> bs // 2 (qqp dir: bs // 3); mft / iid -> bs
    assert [cases_per_batch(s, 16, "reference") for s in ("iid", "MFT", "INV", "DIR", LABEL_DIR)] == [16, 16, 8, 8, 5]
    assert [cases_per_batch(s, 8, "reference") for s in ("iid", "MFT", "INV", "DIR", LABEL_DIR)] == [8, 8, 4, 4, 2]
    assert [cases_per_batch(s, 3, "reference") for s in ("MFT", "INV")] == [3, 1]   # READ: bs 3 -> 1 INV case
    assert {cases_per_batch(s, 16) for s in ("iid", "MFT", "INV", "DIR")} == {16}
    with pytest.raises(ValueError, match="training.batching"):
        cases_per_batch("MFT", 16, "bogus")


def test_sent_reference_batches():
    streams = build_streams(SENT, None, sent_suite(), batching="reference")
    assert {k: len(v) for k, v in streams.items()} == {"DIR": 10, "INV": 20, "MFT": 17}
    # bs 16: MFT ceil(17 / 16) = 2, INV 8 cases -> ceil(20 / 8) = 3, DIR ceil(10 / 8) = 2: 7 (project: 2 + 2 + 1 = 5)
    assert n_batches(streams, 16, "reference") == 7 and n_batches(streams, 16) == 5
    perturbations = {it.inputs[0]: set(it.inputs[1:]) for k in ("INV", "DIR") for it in streams[k]}
    for epoch in range(3):
        batches = epoch_batches(streams, 16, np.random.default_rng([1, epoch]), batching="reference")
        sizes = {}
        for b in batches:
            sizes.setdefault(b.kind, []).append(b.size)
            if b.kind in ("inv", "dir"):   # originals then one perturbation each: 2 x cases rows
                assert len(b.texts) == 2 * b.size
                assert all(p in perturbations[o] for o, p in zip(b.texts[:b.size], b.texts[b.size:]))
        assert sorted(sizes["mft"]) == [1, 16] and sorted(sizes["inv"]) == [4, 8, 8] and sorted(sizes["dir"]) == [2, 8]
    # the project's: 16 pairs per INV / DIR minibatch
    sizes = sorted((b.kind, b.size) for b in epoch_batches(streams, 16, np.random.default_rng(0)))
    assert sizes == [("dir", 10), ("inv", 4), ("inv", 16), ("mft", 1), ("mft", 16)]


def test_reference_batches_are_not_length_bucketed():
    # one MFT stream of 40 inputs of varied length; bs 4. Reference: the rng's permutation cut into fours
    # (RandomSampler); the project sorts pools of 8 batches by length first
    streams = build_streams(SENT, pd.DataFrame({"text": ["w" * (1 + (7 * i) % 23) for i in range(40)],
                                                "label": [i % 2 for i in range(40)]}), None)
    texts = [it.inputs[0] for it in streams["iid"]]
    order = np.random.default_rng(3).permutation(40)
    expected = {frozenset(texts[i] for i in order[s:s + 4]) for s in range(0, 40, 4)}
    got = {frozenset(b.texts) for b in epoch_batches(streams, 4, np.random.default_rng(3), batching="reference")}
    assert got == expected
    assert {frozenset(b.texts) for b in epoch_batches(streams, 4, np.random.default_rng(3))} != expected


def test_para_reference_label_dir_draws():
    suite = para_suite()
    project = build_streams(PARA, None, suite)
    # project: every checked input an MFT item: 2 + 12 x 6 + 4 x 3 + 7 x 4 + 3 x 2 = 120
    assert {k: len(v) for k, v in project.items()} == {"MFT": 120}
    streams = build_streams(PARA, None, suite, batching="reference")
    assert {k: len(v) for k, v in streams.items()} == {"DIR_LABEL": 26, "MFT": 2}
    by_case = {it.inputs[0].split("-")[0]: it for it in streams[LABEL_DIR]}
    assert by_case["p0"].anchor and by_case["t0"].anchor and not by_case["n0"].anchor
    assert len(by_case["p0"].inputs) == 6 and len(by_case["n0"].inputs) == 4 and len(by_case["s0"].inputs) == 2
    assert by_case["t0"].targets == [[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]
    assert by_case["n0"].targets == [[1.0, 0.0]] * 4 and by_case["p0"].targets == [[0.0, 1.0]] * 6
    # bs 16 -> 5 cases per minibatch: ceil(26 / 5) = 6 DIR_LABEL batches + ceil(2 / 16) = 1 MFT (project: 8)
    assert n_batches(streams, 16, "reference") == 7 and n_batches(project, 16) == 8
    para_draws = set()
    for epoch in range(4):
        batches = epoch_batches(streams, 16, np.random.default_rng([0, epoch]), batching="reference")
        assert all(b.kind == "mft" for b in batches)
        rows = [(t, tb, tuple(y)) for b in batches for t, tb, y in zip(b.texts, b.texts_b, b.targets.tolist())]
        # rows per epoch: 2 MFT + para 12 x (original + 2) + impl 4 x 3 + names 7 x 3 + 3 x 2 = 77 (project: 120)
        assert len(rows) == 77
        per_case = {}
        for t, tb, y in rows:
            assert tb == t + "b"
            per_case.setdefault(t.split("-")[0], []).append((int(t.split("-")[1]) if "-" in t else 0, y))
        for cid, picks in per_case.items():
            idx = [j for j, _ in picks]
            assert len(set(idx)) == len(idx)   # without replacement
            if cid.startswith("p"):      # the original and 2 of its 5 perturbations, label 1
                assert len(idx) == 3 and idx[0] == 0 and all(y == (0.0, 1.0) for _, y in picks)
                para_draws.add((cid, frozenset(idx)))
            elif cid.startswith("t"):    # all three, each with its label
                assert sorted(picks) == [(0, (0.0, 1.0)), (1, (0.0, 1.0)), (2, (1.0, 0.0))]
            elif cid.startswith("n"):    # 3 of the 4 perturbations, never the original, label 0
                assert len(idx) == 3 and 0 not in idx and all(y == (1.0, 0.0) for _, y in picks)
            elif cid.startswith("s"):    # both perturbations
                assert sorted(idx) == [1, 2]
        # each minibatch: at most 5 label-checked cases, at most 3 rows per case
        for b in batches:
            cases = {t.split("-")[0] for t in b.texts if "-" in t}
            assert len(cases) <= 5
    # drawn afresh every epoch: the 12 paraphrase cases do not keep one pair of perturbations
    assert len(para_draws) > 12


def test_reference_per_env_minibatches():
    streams = build_streams(SENT, None, sent_suite(), batching="reference")
    groups = env_groups(streams)
    sampler = EnvSampler(groups, 16, np.random.default_rng(0), "reference")
    assert sampler.sizes == {"add pos": 8, "neg": 16, "typos": 8}
    assert EnvSampler(groups, 16, np.random.default_rng(0)).sizes == {"add pos": 16, "neg": 16, "typos": 16}
    seen = []
    for _ in range(6):   # a fresh permutation every draw: 8 distinct cases each time, no passes kept
        b = sampler.minibatch("typos")
        assert b.size == 8 and len(set(b.texts[:8])) == 8 and b.envs == ["typos"] * 8
        seen.append(frozenset(b.texts[:8]))
        assert sampler.state()["queues"]["typos"] == []
    assert sampler.minibatch("add pos").size == 8 and sampler.minibatch("neg").size == 16
    # with replacement across draws: 6 x 8 = 48 draws from 20 cases overlap (a pass would use 20 then refill)
    assert len(seen) == 6 and any(a & b for a, b in zip(seen, seen[1:]))


@pytest.mark.parametrize("method,batching,steps", [
    # 47 items; env minibatch sizes 16 (MFT), 8 (INV), 8 (DIR): mean 32 / 3
    ("irm", "reference", 2),        # all 3 envs per step: ceil(47 / 32)
    ("irm", "project", 1),          # ceil(47 / 48)
    ("group_dro", "reference", 5),  # ceil(47 / (32 / 3)) = ceil(4.41), the reference's ceil(len / mean bs)
    ("group_dro", "project", 3),    # ceil(47 / 16)
    ("vanilla", "reference", 7),    # pooled: 2 + 3 + 2
    ("vanilla", "project", 5),
])
def test_steps_per_epoch(method, batching, steps):
    streams = build_streams(SENT, None, sent_suite(), batching=batching)
    hp = {**method_hparams(method), "lr": 1e-3, "batch_size": 16, "epochs": 1}
    plan = _plan(get_algorithm(method), streams, hp, 0, batching)
    assert plan.steps_per_epoch == steps
    assert sum(1 for _ in plan.batches(0)) == steps


def test_reference_training_run_and_small_batch_error():
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    streams = build_streams(PARA, None, para_suite(), batching="reference")
    s = train_run(model, tok, streams, "vanilla", {"lr": 1e-3, "batch_size": 8, "epochs": 1}, seed=0,
                  max_length=16, batching="reference")
    # bs 8: DIR_LABEL 2 cases per minibatch -> 13 batches, MFT 1
    assert s["steps"] == 14 and np.isfinite(s["epoch_losses"][0])
    with pytest.raises(ConfigError, match=r"field 'training.batching': .*DIR_LABEL.* none at batch_size 2"):
        train_run(model, tok, streams, "vanilla", {"lr": 1e-3, "batch_size": 2, "epochs": 1}, batching="reference")
    # the project's composition: 120 MFT items
    project = build_streams(PARA, None, para_suite())
    assert train_run(model, tok, project, "vanilla", {"lr": 1e-3, "batch_size": 60, "epochs": 1},
                     max_length=16)["steps"] == 2   # ceil(120 / 60)


def test_train_fold_builds_the_runs_composition(tmp_path, monkeypatch):
    """beluga.train.fold.train_fold hands build_streams the run's training.batching."""
    import torch
    from conftest import fold_run

    import beluga.train.loop
    from beluga.core.clock import Clock
    from beluga.core.io import write_parquet
    from beluga.model.job import Job
    from beluga.model.precision import resolve
    from beluga.suites.format import save_suite
    from beluga.train import fold

    suite = para_suite()
    save_suite(suite, tmp_path / "suite.parquet")
    write_parquet(pd.DataFrame({"case_id": suite["case_id"], "split": "train"}), tmp_path / "split.parquet")
    funcs = tuple(dict.fromkeys(suite["functionality"]))
    seen = {}

    def capture(model, tokenizer, streams, run, **kw):
        seen[run.batching] = {k: len(v) for k, v in streams.items()}
        return {"checkpoint_s": 0.0}

    monkeypatch.setattr(beluga.train.loop, "train", capture)
    cpu = torch.device("cpu")
    for batching in ("project", "reference"):
        run = fold_run(hparams={"lr": 1e-3, "batch_size": 8, "epochs": 1}, task_type="para", functionalities=funcs,
                       max_length=16, batching=batching)
        fold.train_fold(run, Job(cpu, resolve("fp32", cpu), 1), Clock(), suite=str(tmp_path / "suite.parquet"),
                        split=str(tmp_path / "split.parquet"), iid_train=None, start=None)
    assert seen == {"project": {"MFT": 120}, "reference": {"DIR_LABEL": 26, "MFT": 2}}
