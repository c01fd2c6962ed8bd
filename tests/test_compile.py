"""training.compile (beluga/model/compiling.py): ``off`` is today's code path bit
for bit; ``default`` (torch.compile, dynamic shapes) changes numerics within
a stated tolerance; ``graphs`` (CUDA graphs on length buckets) stops on a
machine without CUDA.

Tolerances, set from what was measured on this project's 2-core CPU (torch
2.13, tiny random BERT unless said; dropout masks are the eager ones, so
only the order of floating-point operations differs):

- fp32, 2 epochs (~20 updates, lr 1e-3): class probabilities of the trained
  model differ from ``off`` by at most 3e-8 (max abs), weights by 8e-7
  (vanilla, l2, lp, irm, group_dro, fish, dropout alike); MiniLM, 60
  updates: 6e-8. Bound here: 1e-4 on probabilities, 1e-5 on weights and
  epoch losses (a 1000x margin; the documented user-facing bound is 1e-3).
- bf16 autocast: 3e-4 on probabilities (tiny, 20 updates), 1.2e-4 (MiniLM,
  60 updates): bf16 rounds differently inside fused kernels.
- end to end (a tiny SENT run, [seen, type], precision auto): pass rates and
  G of ``default`` were identical to ``off``'s; bound: every pass rate
  within 10 points and every G within 5 points (a pass rate moves by 1 / its
  cases when one prediction flips, and a flip needs a margin below ~1e-6).

The compile cache: the end-to-end run's first job (the IID model) compiles
with an empty cache; the fold jobs, run one at a time after it, load its
kernels (on this CPU 26 s cold vs ~7 s warm: dynamo still traces the model).
"""

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import REPO, config_with, fold_run, make_tiny_suite, output, pipeline_config

from beluga.core.errors import ConfigError
from beluga.core.tasks import SENT
from beluga.methods import get_algorithm
from beluga.model.modeling import TINY_RANDOM, load_model, set_seed
from beluga.model.precision import resolve
from beluga.train.loop import train
from beluga.train.streams import build_streams

PROB_TOL, WEIGHT_TOL = 1e-4, 1e-5


@pytest.fixture(scope="module", autouse=True)
def compile_cache(tmp_path_factory):
    """One compile cache for the module's in-process runs (they share kernels); dynamo reset afterwards."""
    path = tmp_path_factory.mktemp("compile-cache")
    saved = {k: os.environ.get(k) for k in ("BELUGA_COMPILE_CACHE", "TORCHINDUCTOR_CACHE_DIR")}
    os.environ["BELUGA_COMPILE_CACHE"] = str(path)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield path
    torch.set_num_threads(threads)
    torch._dynamo.reset()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def _streams():
    iid = pd.DataFrame({"text": [f"a good film {i}" if i % 2 else f"a bad one, really, so bad {i}" for i in range(11)],
                        "label": [i % 2 for i in range(11)]})
    return build_streams(SENT, iid, make_tiny_suite(5))   # i.i.d., MFT, INV and DIR batches; a 3-row remainder


PROBE = [f"a good film {i}" for i in range(8)] + ["this is awful 3", "not bad at all", "the plot 2. I loved it."]


def _train(method="vanilla", reference=False, **settings):
    """(trained model, summary, probabilities on PROBE) of a seeded tiny run."""
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    ref = {k: v.clone() for k, v in model.state_dict().items()} if reference else None
    hparams = {**get_algorithm(method).hparam_defaults(), "lr": 1e-3, "batch_size": 4, "epochs": 2}
    run = fold_run(method, hparams, seed=7, max_length=32, **settings)
    summary = train(model, tok, _streams(), run, precision=resolve(run.precision, model.device), reference_state=ref)
    model.eval()
    with torch.no_grad():
        probs = model(**tok(PROBE, padding=True, return_tensors="pt")).logits.softmax(-1)
    return model, summary, probs


def test_off_is_todays_code_path_bit_for_bit():
    """The schema default is off; off (and a bare YAML off, read as false) trains the same bytes and
    compiles nothing."""
    from torch._dynamo.utils import counters

    assert fold_run().compile == "off"
    frames = counters["frames"]["total"]
    base, s0, _ = _train()
    for value in ("off", False):
        model, s1, _ = _train(compile=value)
        a, b = base.state_dict(), model.state_dict()
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), value
        assert s1["epoch_losses"] == s0["epoch_losses"]
    assert s0["compile_s"] == 0.0 and s0["compiles"] == 0
    assert counters["frames"]["total"] == frames   # dynamo never ran


@pytest.mark.slow
@pytest.mark.parametrize("method", ["vanilla", "l2"])
def test_default_trains_within_tolerance_of_off(method, tmp_path):
    """torch.compile of the forward pass: the same parameters (state_dict keys, saved files), losses and
    predictions within the module's fp32 tolerance; the compile time is reported apart."""
    from safetensors import safe_open

    from beluga.model.modeling import save_model

    off, s0, p0 = _train(method, reference=True)
    comp, s1, p1 = _train(method, reference=True, compile="default")
    assert float((p0 - p1).abs().max()) <= PROB_TOL
    a, b = off.state_dict(), comp.state_dict()
    assert list(a) == list(b)
    assert max(float((a[k] - b[k]).abs().max()) for k in a) <= WEIGHT_TOL
    assert s1["steps"] == s0["steps"]
    assert s1["epoch_losses"] == pytest.approx(s0["epoch_losses"], abs=WEIGHT_TOL)
    # compiled once per process (a second run of the same model structure reuses the graph)
    assert s1["compiles"] <= 1 and s1["compile_s"] >= 0
    assert s1["compile_s"] < s1["wall_time_s"]
    save_model(comp, load_model(TINY_RANDOM, 2)[1], tmp_path / "m")
    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as f:
        assert set(f.keys()) == set(a)   # no _orig_mod. prefixes: the module was never replaced


class _Crash(Exception):
    pass


def _stopped_at_first_checkpoint(monkeypatch, train, ckpt: Path) -> None:
    """``train(str(ckpt))`` stopped right after it saved its first checkpoint (as a killed job would be)."""
    from beluga.model import checkpoint

    real = checkpoint.save

    def save_then_crash(*a, **k):
        real(*a, **k)
        raise _Crash

    monkeypatch.setattr(checkpoint, "save", save_then_crash)
    with pytest.raises(_Crash):
        train(str(ckpt))
    monkeypatch.setattr(checkpoint, "save", real)


@pytest.mark.slow
def test_default_resumes_from_a_checkpoint_bit_for_bit(tmp_path, monkeypatch):
    """Checkpoints hold the model's own parameters: a compiled run stopped after its first epoch and
    resumed (compiled again) ends with the weights of the compiled run that never stopped."""

    straight, _, _ = _train(compile="default", checkpoint_dir=None)
    ckpt = tmp_path / "ckpt"
    _stopped_at_first_checkpoint(monkeypatch, lambda d: _train(compile="default", checkpoint_dir=d), ckpt)
    resumed, summary, _ = _train(compile="default", checkpoint_dir=str(ckpt))
    assert summary["resumed_from_epoch"] == 1
    a, b = straight.state_dict(), resumed.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present")
def test_graphs_without_cuda_stops_at_job_start_with_one_line():
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ConfigError) as err:
        run = fold_run("vanilla", {"lr": 1e-3, "batch_size": 4, "epochs": 1}, compile="graphs", max_length=32)
        train(model, tok, _streams(), run, precision=resolve(run.precision, model.device))
    msg = str(err.value)
    assert "\n" not in msg and "training.compile: graphs needs a CUDA GPU" in msg and "runs on cpu" in msg
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())   # nothing trained


def test_unknown_mode_is_one_line():
    from beluga.model.compiling import check

    with pytest.raises(ConfigError, match="field 'training.compile': 'fast' is not one of off, default, graphs"):
        check("fast", "cpu")


def test_schema_takes_the_modes_and_a_bare_yaml_off():
    import yaml
    from snakemake.utils import validate

    def cfg(text):
        return {"tasks": {"t": {"type": "sent", "model": "default", "suite": {"generate": "sent_default"},
                                "iid": {"source": "rotten_tomatoes"}}},
                "configurations": ["iid_to_t"], "methods": ["vanilla"], "partitions": ["seen"],
                "training": yaml.safe_load(text)}

    schema = str(REPO / "schemas" / "config.schema.yaml")
    for text, want in (("{}", "off"), ("{compile: off}", False), ("{compile: default}", "default"),
                       ("{compile: graphs}", "graphs")):
        c = cfg(text)
        validate(c, schema)
        assert c["training"]["compile"] == want
    for text in ("{compile: on}", "{compile: fast}"):
        with pytest.raises(Exception, match="compile"):
            validate(cfg(text), schema)


def _train_hp(method, hparams=None, lr_factor=None, **settings):
    """(trained model, summary, learning rate of the first parameter group after each update) of a
    seeded tiny run with ``hparams`` on top of _train's."""
    from beluga.methods.base import Algorithm

    lrs = []
    real = Algorithm.end_step

    def end_step(self):
        real(self)
        lr = self.optimizer.param_groups[0]["lr"]
        lrs.append((torch.is_tensor(lr), float(lr)))

    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    hp = {**get_algorithm(method).hparam_defaults(), "lr": 1e-3, "batch_size": 4, "epochs": 2, **(hparams or {})}
    run = fold_run(method, hp, seed=7, max_length=32, **settings)
    Algorithm.end_step = end_step
    try:
        summary = train(model, tok, _streams(), run, precision=resolve(run.precision, model.device),
                        lr_factor=lr_factor)
    finally:
        Algorithm.end_step = real
    return model, summary, lrs


@pytest.mark.parametrize(("method", "hparams", "factor"), [
    ("vanilla", {}, None),
    ("irm", {"irm_reset_optimizer": True, "irm_penalty_anneal_iters": 3}, None),   # reset_optimizer mid-run
    ("fish", {"fish_envs": 2}, None),
    ("vanilla", {}, "halving"),   # a caller's lr_factor (training._use_lr_factor)
])
def test_tensor_lr_trains_the_float_paths_bytes(method, hparams, factor, monkeypatch):
    """graphs' learning rate, a tensor the schedule fills in place (emulated on the CPU: float64, AdamW
    neither capturable nor foreach, as capturable needs CUDA): the same rate at every update and the same
    weights, bit for bit, as the float learning rate."""
    import beluga.model.compiling as compiling

    def halving():
        halving.calls += 1
        return 0.5 ** (halving.calls // 3)

    def run():
        halving.calls = 0
        return _train_hp(method, hparams, lr_factor=halving if factor else None)

    m0, s0, lr0 = run()
    monkeypatch.setattr(compiling, "tensor_lr", lambda mode, device_type: True)
    m1, s1, lr1 = run()
    assert lr0 and all(not t for t, _ in lr0) and all(t for t, _ in lr1)
    assert [v for _, v in lr0] == [v for _, v in lr1]
    assert len({v for _, v in lr0}) > 2   # the schedule moved
    a, b = m0.state_dict(), m1.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert s1["epoch_losses"] == s0["epoch_losses"]


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_tensor_lr_survives_a_checkpoint_and_a_state_dict_round_trip(tmp_path, monkeypatch):
    """A tensor learning rate is saved as its float (checkpoint JSON) and restored into the same tensor;
    torch's own optimizer state_dict round trip keeps it a tensor of the same value; a run stopped after
    its first epoch and resumed ends with the weights of one that never stopped."""
    import beluga.model.compiling as compiling
    from beluga.model import checkpoint
    from beluga.train.loop import LossFn

    monkeypatch.setattr(compiling, "tensor_lr", lambda mode, device_type: True)
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    algo = get_algorithm("vanilla")(model, {**get_algorithm("vanilla").hparam_defaults(), "lr": 1e-3}, LossFn(tok, 32),
                                    10)
    lr = algo.optimizer.param_groups[0]["lr"]
    assert torch.is_tensor(lr) and lr.dtype == torch.float64 and float(lr) == 1e-3
    algo.steps_done = 4
    algo.scheduler.step()
    assert algo.optimizer.param_groups[0]["lr"] is lr and float(lr) == 1e-3 * (1 - 4 / 10)
    meta, tensors = checkpoint._optimizer_state(algo.optimizer)
    assert meta["param_groups"][0]["lr"] == 1e-3 * (1 - 4 / 10)
    sched = checkpoint._scheduler_state(algo.scheduler)
    assert sched["base_lrs"] == [1e-3] and sched["_last_lr"] == [1e-3 * (1 - 4 / 10)]
    lr.fill_(0.5)
    checkpoint._load_optimizer_state(algo.optimizer, meta, tensors)
    assert algo.optimizer.param_groups[0]["lr"] is lr and float(lr) == 1e-3 * (1 - 4 / 10)
    algo.optimizer.load_state_dict(algo.optimizer.state_dict())
    again = algo.optimizer.param_groups[0]["lr"]
    assert torch.is_tensor(again) and float(again) == float(lr)

    straight, _, _ = _train_hp("vanilla")
    ckpt = tmp_path / "ckpt"
    _stopped_at_first_checkpoint(monkeypatch, lambda d: _train_hp("vanilla", checkpoint_dir=d), ckpt)
    resumed, summary, lrs = _train_hp("vanilla", checkpoint_dir=str(ckpt))
    assert summary["resumed_from_epoch"] == 1 and all(t for t, _ in lrs)
    a, b = straight.state_dict(), resumed.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present")
def test_capturable_optimizer_is_refused_on_the_cpu_in_one_line():
    """An Algorithm built for graphs on the CPU (capturable AdamW needs CUDA) stops with one line."""
    from beluga.train.loop import LossFn

    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    with pytest.raises(ConfigError) as err:
        get_algorithm("vanilla")(model, {**get_algorithm("vanilla").hparam_defaults(), "lr": 1e-3}, LossFn(tok, 32), 1,
                                 compile="graphs")
    assert "\n" not in str(err.value) and "training.compile: graphs needs a CUDA GPU" in str(err.value)


def test_optimizer_options_only_under_graphs_on_cuda():
    from beluga.model.compiling import optimizer_options, tensor_lr

    assert optimizer_options("graphs", "cuda") == {"capturable": True, "fused": True} and tensor_lr("graphs", "cuda")
    for mode, dev in (("off", "cuda"), ("default", "cuda"), ("off", "cpu"), ("default", "cpu"), ("graphs", "cpu")):
        assert optimizer_options(mode, dev) == {} and not tensor_lr(mode, dev)


def test_graphs_buckets():
    from beluga.model.compiling import bucket_length, bucket_rows

    assert [bucket_length(n, 48) for n in (3, 16, 17, 33, 48)] == [16, 16, 32, 48, 48]
    assert bucket_length(40, 40) == 40 and bucket_length(33, 40) == 40   # capped at max_length
    # with the run's batch size: batch_size (single inputs, a smaller last batch) or 2 x batch_size (pairs)
    assert [bucket_rows(n, 3) for n in (1, 2, 3, 4, 5, 6, 7, 9)] == [3, 3, 3, 6, 6, 6, 8, 16]
    assert [bucket_rows(n, 16) for n in (3, 16, 17, 32, 33)] == [16, 16, 32, 32, 64]
    # without it: small batches as they are, larger ones to a power of two
    assert [bucket_rows(n) for n in (1, 3, 7, 8, 9, 16, 17, 32)] == [1, 3, 7, 8, 16, 16, 32, 32]


@pytest.mark.slow
def test_graphs_padding_changes_no_row(tmp_path):
    """graphs' bucket padding (emulated on the CPU: reduce-overhead compiles without CUDA graphs there):
    the logits of the batch's rows and the gradients equal those of the unpadded eager pass."""
    from beluga.model.compiling import CompiledForward

    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2)
    model.eval()   # no dropout: the padded rows would draw other masks
    texts = ["a good film", "this is awful, really awful and long", "not bad"]
    inputs = dict(tok(texts, padding=True, return_tensors="pt"))
    fwd = CompiledForward("graphs", 32, device_type="cuda", pad_token_id=tok.pad_token_id, cache_dir=tmp_path,
                          batch_size=4)
    padded = fwd.prepare(inputs)
    assert {tuple(v.shape) for v in padded.values()} == {(4, 16)}
    grads = []
    for compiled in (False, True):
        model.zero_grad(set_to_none=True)
        out = fwd(model, inputs) if compiled else model(**inputs).logits
        assert out.shape == (3, 2)
        (out * torch.tensor([1.0, -2.0])).sum().backward()
        grads.append((out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (eager, ge), (comp, gc) = grads
    assert float((eager - comp).abs().max()) <= 1e-5
    assert max(float((ge[n] - gc[n]).abs().max()) for n in ge) <= 1e-5
    assert fwd.compiles == 1 and fwd.compile_s > 0


# ---------------------------------------------------------------- end to end


def _pass_rates(wd: Path) -> pd.DataFrame:
    return pd.read_csv(wd / "results" / "sent" / "scores" / "pass_rates.csv")


def _records(wd: Path) -> dict[str, dict]:
    res = wd / "results" / "sent"
    files = [*res.glob("models/iid/vanilla/standard/all/beluga_run.json"), *res.glob("predictions/iid_to_t/*/*/*.json")]
    return {str(p.relative_to(res)): json.loads(p.read_text()) for p in files}


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """The tiny SENT config (10 T_test cases per functionality), iid_to_t on [seen, type], with compile
    off and default (one job at a time, the compile cache empty at the start)."""
    out = {}
    saved = os.environ.get("BELUGA_COMPILE_CACHE")
    for mode in ("off", "default"):
        wd = tmp_path_factory.mktemp(f"e2e-{mode}")
        cache = wd.parent / f"{wd.name}-cache"
        os.environ["BELUGA_COMPILE_CACHE"] = str(cache)
        try:
            cfg = config_with(partitions=["seen", "type"], training__compile=mode,
                              tasks__sent__suite__cases_per_functionality=40)   # 10 T_test cases each
            # (to the score tables: every fold's training and predictions, not the figures and statistics)
            done, _ = pipeline_config(wd, cfg, "--cores", "1", "--retries", "0", "results/sent/scores/scores.csv")
        finally:
            os.environ.pop("BELUGA_COMPILE_CACHE", None)
            if saved is not None:
                os.environ["BELUGA_COMPILE_CACHE"] = saved
        assert done.returncode == 0, output(done)[-6000:]
        out[mode] = (wd, cache)
    return out


@pytest.mark.slow
def test_pipeline_scores_within_tolerance_of_off(e2e):
    (off, _), (comp, _) = e2e["off"], e2e["default"]
    a, b = _pass_rates(off), _pass_rates(comp)
    keys = ["configuration", "method", "scenario", "functionality"]
    merged = a.merge(b, on=keys, suffixes=("_off", "_default"))
    assert len(merged) == len(a) == len(b) > 0
    assert (merged.pass_rate_off - merged.pass_rate_default).abs().fillna(0).max() <= 0.10
    sa = pd.read_csv(off / "results" / "sent" / "scores" / "scores.csv").set_index("configuration")
    sb = pd.read_csv(comp / "results" / "sent" / "scores" / "scores.csv").set_index("configuration")
    gs = [c for c in sa.columns if c.startswith("G_")]
    assert (sa[gs] - sb[gs]).abs().fillna(0).max().max() <= 0.05


@pytest.mark.slow
def test_pipeline_compile_cache_is_shared_between_jobs(e2e):
    (off, off_cache), (comp, cache) = e2e["off"], e2e["default"]
    assert not off_cache.exists()   # off never touches it
    assert any((cache / "fxgraph").rglob("*")) and any((cache / "aotautograd").rglob("*"))
    recs = _records(comp)
    iid = recs.pop("models/iid/vanilla/standard/all/beluga_run.json")
    assert len(recs) == 4 and iid["compiles"] >= 1
    # every compiled job reports its compile time apart (how much the shared cache saves is a figure
    # for the benchmark, not a timing asserted here: the IID job compiled in 36 s with an empty cache,
    # the fold jobs in about 6 s each when measured)
    assert all(r["compiles"] >= 1 and r["compile_s"] >= 0.0 for r in recs.values())
    assert all(r["compile_s"] == 0.0 for r in _records(off).values())


# ---------------------------------------------------------------- whole-step graphs (beluga/model/graphs.py)


def test_step_key_and_static_buffers_are_reused_per_bucket():
    """One set of buffers per bucket: the same tensors refilled in place at the bucket's next batch (a
    recorded graph reads the new values), new ones for another bucket; a batch of another shape under a
    key is refused."""
    from beluga.model.graphs import StaticBuffers, step_key

    a = {"input_ids": torch.arange(8).reshape(2, 4), "targets": torch.rand(2, 2)}
    b = {"input_ids": torch.arange(8, 16).reshape(2, 4), "targets": torch.rand(2, 2)}
    ka, kb = step_key(("mft", 2, 2), a), step_key(("mft", 2, 2), b)
    assert ka == kb and ka != step_key(("mft", 1, 2), a) and ka != step_key(("inv", 2, 2), a)
    assert ka != step_key(("mft", 2, 2), {**a, "input_ids": torch.arange(10).reshape(2, 5)})
    bufs = StaticBuffers()
    first = bufs.fill(ka, a, "cpu")
    ptrs = {k: v.data_ptr() for k, v in first.items()}
    assert all(torch.equal(first[k], a[k]) and first[k] is not a[k] for k in a)
    second = bufs.fill(kb, b, "cpu")
    assert {k: v.data_ptr() for k, v in second.items()} == ptrs and all(torch.equal(second[k], b[k]) for k in b)
    other = {"input_ids": torch.zeros(4, 16, dtype=torch.long)}
    bufs.fill(step_key(("mft", 4, 4), other), other, "cpu")
    assert (bufs.allocations, bufs.fills, len(bufs)) == (2, 3, 2)
    with pytest.raises(ValueError, match="'input_ids' is \\(2, 5\\)"):
        bufs.fill(ka, {**a, "input_ids": torch.zeros(2, 5, dtype=torch.long)}, "cpu")


def test_record_nonfinite_keeps_the_first_bad_step():
    from beluga.model.graphs import record_nonfinite

    first = torch.zeros((), dtype=torch.long)
    ptr = first.data_ptr()
    for step, loss in enumerate([1.0, 2.0, float("nan"), 3.0, float("inf")], start=1):
        record_nonfinite(first, torch.tensor(loss), torch.tensor(step))
        assert int(first) == (0 if step < 3 else 3)
    assert first.data_ptr() == ptr   # in place: a graph keeps reading the same scalar


def test_pad_inputs_pads_lengths_on_the_tokenizer_side_then_repeats_the_first_row():
    from beluga.model.compiling import pad_inputs

    t = {"input_ids": torch.tensor([[5, 6, 7], [8, 9, 0]]), "attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]])}
    pad = {"input_ids": 0, "attention_mask": 0}
    right = pad_inputs(t, 3, 5, pad)
    assert right["input_ids"].tolist() == [[5, 6, 7, 0, 0], [8, 9, 0, 0, 0], [5, 6, 7, 0, 0]]
    assert right["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]]
    left = pad_inputs(t, 2, 4, pad, right=False)
    assert left["input_ids"].tolist() == [[0, 5, 6, 7], [0, 8, 9, 0]]
    assert pad_inputs(t, 2, 3, pad)["input_ids"] is t["input_ids"]   # already the bucket


@pytest.mark.parametrize("started", [False, True])
def test_warm_up_updates_leave_no_trace(started, monkeypatch):
    """A bucket's warm-up updates (before its capture) put the weights, gradients, AdamW's moments and step
    (zeroed where the warm-up created them: a fresh optimizer) and the non-finite flag back in place: the
    next update's weights are, bit for bit, those of an update without the warm-up."""
    import numpy as np

    from beluga.model.graphs import WholeStepGraphs, step_key
    from beluga.train.batches import epoch_batches
    from beluga.train.loop import LossFn

    _emulate_graphs_on_the_cpu(monkeypatch)
    batch = epoch_batches(_streams(), 4, np.random.default_rng(0))[0]

    def after(warm: bool):
        set_seed(0)
        model, tok = load_model(TINY_RANDOM, 2, config_overrides=NO_DROPOUT)
        algo = get_algorithm("vanilla")(model, {**get_algorithm("vanilla").hparam_defaults(), "lr": 1e-3},
                                        LossFn(tok, 32), 10, compile="graphs")
        g = algo._graphs
        assert isinstance(g, WholeStepGraphs) and not g.capture
        if started:
            g.step(batch)   # the optimizer's state exists before the warm-up
        meta, host = algo.loss_fn.graph_inputs(batch)
        static = g.buffers.fill(step_key(meta, host), host, "cpu")
        g._ready(torch.device("cpu"))
        ptrs = [p.grad.data_ptr() for p in model.parameters()]
        if warm:
            g.warm_up(meta, static)
            assert [p.grad.data_ptr() for p in model.parameters()] == ptrs   # gradients stay allocated
        g.step(batch)
        state = [{k: v.clone() for k, v in algo.optimizer.state[p].items()} for p in model.parameters()]
        return {k: v.clone() for k, v in model.state_dict().items()}, state, int(algo._first_bad)

    (w0, s0, f0), (w1, s1, f1) = after(False), after(True)
    assert all(torch.equal(w0[k], w1[k]) for k in w0) and f0 == f1 == 0
    assert all(s0[i].keys() == s1[i].keys() and all(torch.equal(s0[i][k], s1[i][k]) for k in s0[i])
               for i in range(len(s0)))


def _graph_losses_match(task, streams, head="classification", labels=None, batch_size=3, max_length=40):
    """Every batch of the streams' first epoch: graph_loss(graph_inputs(batch)) (padded to its bucket) equals
    LossFn(batch) (eager, unpadded), losses and gradients; returns the kinds and the buckets seen."""
    import contextlib

    import numpy as np

    from beluga.train.batches import epoch_batches
    from beluga.train.loop import _pretokenized_loss

    set_seed(0)
    model, tok = load_model(TINY_RANDOM, task.num_model_labels if labels is None else labels,
                            **({"head": head} if head != "classification" else {}))
    model.eval()   # no dropout: the padded forward pass draws no other masks
    run = fold_run("vanilla", {**get_algorithm("vanilla").hparam_defaults(), "lr": 1e-3, "batch_size": batch_size,
                               "epochs": 1}, max_length=max_length, doc_stride=12)
    loss_fn, _ = _pretokenized_loss(tok, streams, run, resolve("fp32", model.device), True)
    kinds, shapes = set(), set()
    for batch in epoch_batches(streams, batch_size, np.random.default_rng(0)):
        meta, t = loss_fn.graph_inputs(batch)
        ids = t.get("input_ids", t.get("o_input_ids"))
        assert ids.shape[1] % 16 == 0 or ids.shape[1] == max_length
        shapes.add((batch.kind, tuple(ids.shape)))
        out = []
        for graphed in (False, True):
            model.zero_grad(set_to_none=True)
            losses = loss_fn.graph_loss(model, meta, t, contextlib.nullcontext()) if graphed else loss_fn(model, batch)
            losses.sum().backward()
            grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
            out.append((losses.detach(), grads))
        (le, ge), (lg, gg) = out
        assert le.shape == lg.shape == (batch.size,), batch.kind
        assert float((le - lg).abs().max()) <= 1e-5, batch.kind
        assert ge.keys() == gg.keys() and max(float((ge[n] - gg[n]).abs().max()) for n in ge) <= 1e-5, batch.kind
        kinds.add(batch.kind)
    return kinds, shapes


def test_graph_inputs_of_every_classification_kind_give_the_eager_losses():
    kinds, shapes = _graph_losses_match(SENT, _streams(), batch_size=4)
    assert kinds == {"mft", "inv", "dir"}
    assert {s[0] for k, s in shapes if k == "mft"} == {4} and {s[0] for k, s in shapes if k != "mft"} == {4, 8}


def test_graph_inputs_of_the_score_head_give_the_eager_losses():
    from test_similarity import _toy_suite

    from beluga.core.tasks import SIMILARITY

    iid = pd.DataFrame({"text": ["a", "b", "c d"], "text_b": ["a", "c", "e"], "label": [5.0, 1.2, 3.0]})
    kinds, _ = _graph_losses_match(SIMILARITY, build_streams(SIMILARITY, iid, _toy_suite()), batch_size=2)
    assert kinds == {"score_mft", "score_inv", "score_dir"}


def test_graph_inputs_of_read_span_batches_give_the_eager_losses():
    """READ: windows (rows: the windows' bucket, a dummy example for the padding rows), lengths bucketed
    (positions past the batch's own longest kept out of the softmax), INV alignments as padded index
    tensors: the per-example losses and gradients of the eager span path."""
    from test_no_sync import _read_streams

    from beluga.core.tasks import READ

    # max_length 40, batch 3: padded rows (5 windows -> 6); 64, batch 2: windows of 41-48 tokens padded to 48
    kinds, shapes = _graph_losses_match(READ, _read_streams(), head="qa", labels=0)
    assert kinds == {"qa_mft", "qa_inv"} and ("qa_mft", (6, 40)) in shapes
    kinds, shapes = _graph_losses_match(READ, _read_streams(), head="qa", labels=0, batch_size=2, max_length=64)
    assert kinds == {"qa_mft", "qa_inv"} and ("qa_mft", (2, 48)) in shapes


def _emulate_graphs_on_the_cpu(monkeypatch):
    """graphs on the CPU for the tests: the job-start refusal lifted, AdamW neither capturable nor fused
    (both need CUDA), the learning rate a float64 tensor as on the float path; WholeStepGraphs then runs
    the update it would record, on the same static buffers, without recording it."""
    import beluga.model.compiling as compiling

    real = compiling.check
    monkeypatch.setattr(compiling, "check", lambda mode, device_type, job="": real(mode, "cuda", job))
    monkeypatch.setattr(compiling, "optimizer_options", lambda mode, device_type: {})
    monkeypatch.setattr(compiling, "tensor_lr", lambda mode, device_type: True)


NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
#: whole-step graphs against eager, weights (max abs, lr 1e-3): a parameter whose gradient is zero or nearly so
#: (an attention key's bias, an embedding row) gets rounding noise that padding to the bucket changes,
#: and AdamW normalises noise to steps of up to lr: measured 2.7e-4 (l2_sp, 20 updates, CPU) on those, 6e-6
#: on the others; the model's probabilities stay within PROB_TOL
GRAPH_WEIGHT_TOL = 1e-3


def _probe(model):
    tok = load_model(TINY_RANDOM, 2)[1]
    model.eval()
    with torch.no_grad():
        return model(**tok(PROBE, padding=True, return_tensors="pt").to(model.device)).logits.softmax(-1).cpu()


def _train_nodrop(method, hparams=None, **settings):
    set_seed(0)
    model, tok = load_model(TINY_RANDOM, 2, config_overrides=NO_DROPOUT)
    hp = {**get_algorithm(method).hparam_defaults(), "lr": 1e-3, "batch_size": 4, "epochs": 2, **(hparams or {})}
    run = fold_run(method, hp, seed=7, max_length=32, **settings)
    lrs = []
    from beluga.methods.base import Algorithm

    real = Algorithm.end_step

    def end_step(self):
        real(self)
        lrs.append(float(self.optimizer.param_groups[0]["lr"]))

    Algorithm.end_step = end_step
    try:
        summary = train(model, tok, _streams(), run, precision=resolve(run.precision, model.device),
                        reference_state={k: v.clone() for k, v in model.state_dict().items()})
    finally:
        Algorithm.end_step = real
    return model, summary, lrs


@pytest.mark.parametrize(("method", "hparams"), [("vanilla", {}), ("l2", {"l2_sp": True, "l2_lambda": 0.5}),
                                                 ("lp", {}), ("lora", {})])   # frozen weights, adapters
def test_whole_step_update_trains_like_the_eager_step(method, hparams, monkeypatch):
    """The whole-step update (run unrecorded on the CPU) of a run without dropout: the same number of
    updates, the schedule's rates step for step, weights within the module's fp32 tolerance of off's (only
    the padded matrix products and foreach clipping differ), the method's objective terms reported; the run
    record says the updates were graphed and over which buckets."""
    import beluga.train.loop as loop

    m0, s0, lr0 = _train_nodrop(method, hparams)
    _emulate_graphs_on_the_cpu(monkeypatch)
    built, compiled_forward = [], loop.CompiledForward
    monkeypatch.setattr(loop, "CompiledForward", lambda *a, **k: built.append(a) or compiled_forward(*a, **k))
    m1, s1, lr1 = _train_nodrop(method, hparams, compile="graphs")
    assert built == []   # a captured run never builds the compiled forward pass (its eager updates' only)
    assert s1["steps"] == s0["steps"] and lr1 == lr0 and len(set(lr0)) > 2
    assert float((_probe(m0) - _probe(m1)).abs().max()) <= PROB_TOL
    a, b = m0.state_dict(), m1.state_dict()
    assert max(float((a[k] - b[k]).abs().max()) for k in a) <= GRAPH_WEIGHT_TOL
    assert s1["epoch_losses"] == pytest.approx(s0["epoch_losses"], abs=WEIGHT_TOL)
    assert s1["epoch_risks"] == pytest.approx(s0["epoch_risks"], abs=WEIGHT_TOL)
    if hparams.get("l2_sp"):
        assert s1["epoch_risks"] != s1["epoch_losses"]
    rec = s1["step_graphs"]
    assert rec["captured"] and rec["buckets"] >= 2 and rec["graphs"] == 0 and rec["replays"] == 0   # unrecorded
    assert "step_graphs" not in s0


def test_methods_outside_the_graph_say_why_in_the_run_record(monkeypatch):
    _emulate_graphs_on_the_cpu(monkeypatch)
    for method, hp, words in (("irm", {}, "IRM: the penalty"), ("vanilla", {}, "nonfinite: skip")):
        algo = get_algorithm(method)
        set_seed(0)
        model, tok = load_model(TINY_RANDOM, 2)
        from beluga.train.loop import LossFn

        a = algo(model, {**algo.hparam_defaults(), "lr": 1e-3, **hp}, LossFn(tok, 32), 4, envs=["iid"],
                 compile="graphs", nonfinite="skip" if words == "nonfinite: skip" else "stop")
        rec = a.graph_record()
        assert rec["captured"] is False and words in rec["eager_reason"] and a._graphs is None
    for name in ("group_dro", "fish"):
        assert get_algorithm(name).graph_eager
    for name in ("vanilla", "l2", "dropout", "lp", "lp_ft", "lora"):
        assert get_algorithm(name).graph_eager is None


def test_whole_step_nonfinite_check_names_the_first_bad_update(monkeypatch):
    """A loss that turns non-finite inside the update at step 3 (read from the graph's step scalar) stops
    training with the one-line error naming step 3, read at the next check."""
    from beluga.core.health import DivergedError
    from beluga.methods.base import Vanilla

    _emulate_graphs_on_the_cpu(monkeypatch)
    real = Vanilla.objective

    def objective(self, losses):
        stats = real(self, losses)
        bad = torch.where(self._graphs._step == 3, torch.tensor(float("nan")), torch.tensor(1.0))
        return {"loss": stats["loss"] * bad}

    monkeypatch.setattr(Vanilla, "objective", objective)
    with pytest.raises(DivergedError, match="the loss is not finite at step 3 of"):
        _train_nodrop("vanilla", compile="graphs")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="whole-step CUDA graphs are recorded only on a CUDA GPU")
def test_replayed_graphs_give_the_eager_weights_after_40_updates():
    """40 updates of tiny BERT without dropout (fp32, lr 1e-3, batch 4, buckets of several lengths and both
    row counts): the replayed whole-step graphs against eager off with its float learning rate and
    fused AdamW: the model's probabilities within PROB_TOL, weights within GRAPH_WEIGHT_TOL (not yet run on a
    GPU: the tolerances are the CPU emulation's)."""
    def run(mode):
        set_seed(0)
        model, tok = load_model(TINY_RANDOM, 2, config_overrides=NO_DROPOUT)
        model.cuda()
        hp = {**get_algorithm("vanilla").hparam_defaults(), "lr": 1e-3, "batch_size": 4, "epochs": 4}   # 40 updates
        run_ = fold_run("vanilla", hp, seed=7, max_length=32, compile=mode, precision="fp32")
        s = train(model, tok, _streams(), run_, precision=resolve(run_.precision, model.device))
        return model, s

    m0, s0 = run("off")
    m1, s1 = run("graphs")
    assert s0["steps"] == s1["steps"] == 40
    assert s1["step_graphs"]["captured"] and s1["step_graphs"]["graphs"] >= 2
    assert s1["step_graphs"]["replays"] == s1["steps"]
    assert float((_probe(m0) - _probe(m1)).abs().max()) <= PROB_TOL
    a, b = m0.state_dict(), m1.state_dict()
    assert max(float((a[k] - b[k]).abs().max()) for k in a) <= GRAPH_WEIGHT_TOL
