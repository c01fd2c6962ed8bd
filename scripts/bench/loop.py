"""The training loop as the pipeline runs it, timed: ``beluga.train.loop.train`` from the benchmark's base run
for a set number of updates (:func:`timed_train`, timing the updates after a warm-up with :class:`StepTimer`),
and what the variants compare after it (the batches' token counts, the weights, the held-out loss)."""

from __future__ import annotations

import contextlib
import statistics
import time

from bench import common
from bench.common import bench_run, peak_mem_mib, sync
from bench.workloads import Workload


def compile_field() -> bool:
    """Whether this checkout's FoldRun has the ``compile`` setting (off / default / graphs)."""
    import dataclasses

    from beluga.train.settings import FoldRun

    return "compile" in {f.name for f in dataclasses.fields(FoldRun)}


_BASE_RUN = []   # the FoldRun the variants start from (workers get it from their parent: no config to read)


def base_run(given: dict | None = None):
    from beluga.train.settings import FoldRun

    if not _BASE_RUN:
        _BASE_RUN.append(FoldRun.from_dict(given) if given else bench_run("vanilla", "auto"))
    return _BASE_RUN[0]


def variant_run(wl: Workload, total: int, compile_mode: str):
    """The FoldRun of ``total`` updates of vanilla on ``wl`` (the default config's settings, precision auto as
    the pipeline's jobs: bf16 + fused AdamW + TF32 on an H100)."""
    import dataclasses

    from beluga.train.batches import n_batches

    run = base_run()
    spe = n_batches(wl.streams, wl.batch)
    run = dataclasses.replace(run, model=wl.model, start_label=wl.model, max_length=wl.max_length, seed=wl.seed,
                              precision="auto", hparams={**run.hparams, "batch_size": wl.batch, "epochs": total / spe})
    if compile_field():
        run = dataclasses.replace(run, compile=compile_mode)
    return run


class StepClock:
    """The device's time of every timed update and of the optimizer steps inside it, without a sync per step: on
    CUDA a pair of timing events on the current stream around each (read once, after the window's closing
    sync); on the CPU, where work is synchronous, the host clock. Nothing is recorded while a stream is being
    captured into a CUDA graph (a timing event cannot be captured): a step that captured has no span."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.steps: list[tuple] = []       # (start, end) per timed update
        self.optimizer: list[list] = []    # per timed update: the (start, end) of each optimizer step in it
        self._open = None

    def _mark(self):
        import torch

        if not self.cuda:
            return time.perf_counter()
        if torch.cuda.is_current_stream_capturing():
            return None
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def step_begin(self) -> None:
        self.steps.append((self._mark(), None))
        self.optimizer.append([])

    def step_end(self) -> None:
        self.steps[-1] = (self.steps[-1][0], self._mark())

    def optimizer_begin(self) -> None:
        if self.steps:
            self._open = self._mark()

    def optimizer_end(self) -> None:
        if self.steps and self._open is not None:
            self.optimizer[-1].append((self._open, self._mark()))
        self._open = None

    def _ms(self, a, b) -> float | None:
        if a is None or b is None:
            return None
        return a.elapsed_time(b) if self.cuda else 1e3 * (b - a)

    def summary(self) -> dict:
        """``device_ms_per_step``: the median span of an update on the device (CUDA: first to last of its work
        on the stream, idle gaps included; CPU: its host time); ``optimizer_ms_per_step``: the median time of
        the optimizer steps in an update (None where none ran through ``Optimizer.step``'s hooks, e.g. a
        step replayed as a CUDA graph); ``clock``: which clock."""
        spans = [m for m in (self._ms(a, b) for a, b in self.steps) if m is not None]
        opt = [sum(self._ms(a, b) for a, b in o) for o in self.optimizer
               if o and all(a is not None and b is not None for a, b in o)]
        return {"device_ms_per_step": statistics.median(spans) if spans else None,
                "optimizer_ms_per_step": statistics.median(opt) if opt else None,
                "timed_steps": len(spans), "optimizer_steps_timed": len(opt),
                "clock": "CUDA events" if self.cuda else "host clock (CPU: synchronous)"}


class StepTimer:
    """Hooks around every update ``train`` makes (its algorithm's ``update``, wrapped while
    :meth:`installed`): after ``warmup`` updates the device is synchronised, the optional barrier is
    passed, the optional profiler started and the clock started; after ``steps`` more, synchronised
    and stopped. ``host``: the host's time inside each timed update (no added sync); ``clock``: each timed
    update's and optimizer step's device time (:class:`StepClock`)."""

    def __init__(self, warmup: int, steps: int, barrier=None, profiler=None, frames=None):
        self.warmup, self.steps, self.barrier, self.profiler = warmup, steps, barrier, profiler
        self.frames = frames   # dynamo's frame counters (compile): graphs compiled inside the timed steps
        self.compiled_in_window = 0
        self.n = 0
        self.host: list[float] = []
        self.t_first = self.t_start = self.t_end = self.h0 = 0.0
        self.wall_start = self.wall_end = 0.0
        self.clock = StepClock(common.DEVICE.type == "cuda")

    def before(self) -> None:
        if self.n == 0:
            self.t_first = time.perf_counter()
        if self.n == self.warmup:
            sync()
            if self.barrier is not None:
                self.barrier()
            if self.profiler is not None:
                self.profiler.start()
            if self.frames is not None:
                self.compiled_in_window = -self.frames["total"]
            self.wall_start, self.t_start = time.time(), time.perf_counter()
        if self.n >= self.warmup:
            self.clock.step_begin()
        self.h0 = time.perf_counter()

    def after(self) -> None:
        if self.n >= self.warmup:
            self.host.append(time.perf_counter() - self.h0)
            self.clock.step_end()
        self.n += 1
        if self.n == self.warmup + self.steps:
            sync()
            self.t_end, self.wall_end = time.perf_counter(), time.time()
            if self.frames is not None:
                self.compiled_in_window += self.frames["total"]
            if self.profiler is not None:
                self.profiler.stop()

    @contextlib.contextmanager
    def installed(self):
        import beluga.train.loop as training

        real, timer = training.get_algorithm, self

        def timed_algorithm(name):
            cls = real(name)

            class Timed(cls):
                def update(self, minibatches):
                    timer.before()
                    out = super().update(minibatches)
                    timer.after()
                    return out

            Timed.__name__ = Timed.__qualname__ = cls.__name__
            return Timed

        def opt_pre(*_):
            if timer.warmup <= timer.n < timer.warmup + timer.steps:
                timer.clock.optimizer_begin()

        def opt_post(*_):
            if timer.warmup <= timer.n < timer.warmup + timer.steps:
                timer.clock.optimizer_end()

        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        hooks = [register_optimizer_step_pre_hook(opt_pre), register_optimizer_step_post_hook(opt_post)]
        training.get_algorithm = timed_algorithm
        try:
            yield self
        finally:
            training.get_algorithm = real
            for h in hooks:
                h.remove()


def timed_train(wl: Workload, model, tok, hygiene: bool, compile_mode: str, warmup: int, steps: int,
                barrier=None, profiler=None) -> dict:
    """``beluga.train.loop.train`` for ``warmup + steps`` updates of ``wl`` (the loop as the pipeline runs it),
    timing the last ``steps``."""
    import torch

    from beluga.model.modeling import set_seed
    from beluga.model.precision import resolve
    from beluga.train.loop import train

    frames = None
    if compile_mode != "off":
        from torch._dynamo.utils import counters

        frames = counters["frames"]
    timer = StepTimer(warmup, steps, barrier, profiler, frames)
    run = variant_run(wl, warmup + steps, compile_mode)
    if common.DEVICE.type == "cuda":
        torch.cuda.reset_peak_memory_stats(common.DEVICE)
    set_seed(wl.seed)   # the same dropout masks in every variant
    with timer.installed():
        summary = train(model, tok, wl.streams, run, precision=resolve(run.precision, common.DEVICE),
                        host_hygiene=hygiene)
    if summary["steps"] != warmup + steps or timer.n != warmup + steps:
        raise RuntimeError(f"benchmark: {summary['steps']} updates ran, {warmup + steps} were planned")
    return {"elapsed_s": timer.t_end - timer.t_start, "warmup_s": timer.t_start - timer.t_first,
            "wall_start": timer.wall_start, "wall_end": timer.wall_end,
            "host_s_per_step": statistics.fmean(timer.host), "peak_mem_mib": peak_mem_mib(),
            "tokenize_s": summary.get("tokenize_s"), "compile_s": summary.get("compile_s"),
            "compiles": summary.get("compiles"), "compiles_in_timed_steps": timer.compiled_in_window,
            **timer.clock.summary()}


def window_counts(wl: Workload, tok, first: int, n: int) -> tuple[int, int, int]:
    """(sequences, real tokens, padded tokens) of updates ``first`` .. ``first + n - 1``: the batches ``train``
    draws (pooled sampling), tokenized as the loop does."""
    import numpy as np

    from beluga.train.batches import epoch_batches, n_batches

    spe = n_batches(wl.streams, wl.batch)
    epochs: dict[int, list] = {}
    seqs = real = padded = 0
    for s in range(first, first + n):
        e, i = divmod(s, spe)
        if e not in epochs:
            epochs[e] = epoch_batches(wl.streams, wl.batch, np.random.default_rng([wl.seed, e]))
        b = epochs[e][i]
        if wl.task == "read":   # span batches: every window of every question, as the QA loss encodes them
            from beluga.heads.span.qa import encode_qa

            feats = encode_qa(tok, b.texts_b, b.texts, max_length=wl.max_length, stride=base_run().doc_stride)
            lens = feats.attention_mask.sum(dim=1).tolist()
        else:
            lens = [len(x) for x in tok(b.texts, b.texts_b, truncation=True, max_length=wl.max_length)["input_ids"]]
        seqs, real, padded = seqs + len(lens), real + sum(lens), padded + len(lens) * max(lens)
    return seqs, real, padded


def weights_of(model) -> dict:
    return {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items() if v.is_floating_point()}


def max_diff(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def heldout_loss(model, tok, wl: Workload) -> float:
    """The mean loss on the held-out batch (eval mode, the run's precision, tokenized as the current loop)."""
    import numpy as np
    import torch

    from beluga.model.precision import resolve
    from beluga.train.batches import epoch_batches
    from beluga.train.loop import LossFn

    batch = epoch_batches({"iid": wl.heldout}, len(wl.heldout), np.random.default_rng(0))[0]
    loss_fn = LossFn(tok, wl.max_length, precision=resolve("auto", common.DEVICE), host_hygiene=False,
                     doc_stride=base_run().doc_stride)
    model.eval()
    with torch.no_grad():
        value = float(loss_fn(model, batch).mean())
    model.train()
    return value
