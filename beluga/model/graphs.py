"""Whole-step CUDA graphs (``training.compile: graphs``, CUDA only): one
training update — forward, loss, backward, gradient clipping and the AdamW
step — recorded once per input shape as a plain CUDA graph
(``torch.cuda.CUDAGraph``, no inductor) and replayed at every later update
of that shape.

- **Buckets and static buffers.** A minibatch becomes a tuple of static facts
  (``meta``: its kind, examples, which optional terms it has) and padded host
  tensors (:meth:`beluga.train.loop.LossFn.graph_inputs`: rows to
  :func:`beluga.model.compiling.bucket_rows` of the run's batch size,
  sequences to :func:`beluga.model.compiling.bucket_length`, READ's windows
  and INV alignments likewise). :func:`step_key` names the bucket; one set
  of device buffers per key (:class:`StaticBuffers`) is allocated at its
  first batch and refilled in place (a non-blocking copy from pinned memory)
  at every later one, so a graph always reads the same addresses.
- **Capture** (:meth:`WholeStepGraphs._record`): a bucket's first batch runs
  :data:`WARMUP` eager updates on a side stream (the optimizer's state and
  autograd's buffers come to exist), then the parameters, gradients,
  optimizer state, non-finite flag and the CUDA generator are put back as
  they were before them (in place), and one update is recorded into a graph
  sharing one memory pool with the run's other graphs. The recorded update
  zeroes the gradients in place (they stay allocated, never set to None, so
  their addresses hold), runs the forward pass under autocast without its
  weight cache (autocast's cache cannot outlive a capture), the backward
  pass, ``clip_grad_norm_`` (foreach, no host sync) and
  ``AdamW(capturable=True, fused=True)`` whose learning rate is a device
  tensor the schedule fills in place at every update (the float schedule's
  rates: :meth:`beluga.methods.base.Algorithm.set_lrs`).
- **Dropout** draws from the default CUDA generator, which CUDA graphs
  handle: every replay advances its Philox offset, so a replay draws fresh
  masks (other masks than an eager run's: a graphed run with dropout equals an
  eager one in distribution, not in bytes).
- **Non-finite losses** (``training.nonfinite: stop``): the update records
  the first step whose loss is not finite in a device scalar
  (:func:`record_nonfinite`, the eager path's own function), which the
  training loop reads once every ``log_every`` updates and at each epoch's
  end; ``nonfinite: skip`` needs the loss on the host before each update, so
  such a run takes its steps eagerly (:func:`eager_reason`).
- **Which steps are not captured**, said once in the log and in the run
  record (``step_graphs``): a method whose update is not one loss of one
  minibatch followed by one optimizer step (:attr:`beluga.methods.base.Algorithm.graph_eager`:
  IRM, Group-DRO, Fish) and ``nonfinite: skip``. Their forward passes use
  the bucketed ``reduce-overhead`` forward and the compiled clipping and
  optimizer step of :mod:`beluga.model.compiling`.

What was verified where: the buckets, buffers, padding (every head's losses
and gradients equal the unpadded eager ones), the schedule's tensor rates and
the non-finite accounting run on the CPU (``capture=False``: the same update
function, not recorded); recording and replaying need CUDA and are tested
where CUDA exists (``tests/test_compile.py``: 40 replayed updates against
the eager updates' weights).

Light: torch is imported inside functions.
"""

from __future__ import annotations

import contextlib
import logging
import time

from beluga.model.compiling import clip_and_step

_log = logging.getLogger(__name__)

#: eager updates on a side stream before a bucket's graph is recorded (torch's documented pattern)
WARMUP = 3


def step_key(meta: tuple, tensors: dict) -> tuple:
    """The bucket of a minibatch: its static facts and each padded tensor's name, shape and dtype."""
    return (meta, tuple((name, tuple(t.shape), str(t.dtype)) for name, t in sorted(tensors.items())))


class StaticBuffers:
    """Device buffers per :func:`step_key`: allocated at a key's first
    :meth:`fill`, refilled in place after (the same tensors, so a recorded
    graph reads the new batch). ``allocations`` / ``fills`` count both."""

    def __init__(self):
        self._bufs: dict[tuple, dict] = {}
        self.allocations = 0
        self.fills = 0

    def __len__(self) -> int:
        return len(self._bufs)

    def fill(self, key: tuple, tensors: dict, device) -> dict:
        """The buffers of ``key`` on ``device`` holding ``tensors`` (host tensors of the key's shapes)."""
        import torch

        bufs = self._bufs.get(key)
        if bufs is None:
            bufs = {k: torch.empty(tuple(v.shape), dtype=v.dtype, device=device) for k, v in tensors.items()}
            self._bufs[key] = bufs
            self.allocations += 1
        if set(bufs) != set(tensors):
            raise ValueError(f"StaticBuffers.fill: tensors {sorted(tensors)} are not the key's {sorted(bufs)}")
        cuda = torch.device(device).type == "cuda"
        for k, v in tensors.items():
            if tuple(v.shape) != tuple(bufs[k].shape) or v.dtype != bufs[k].dtype:
                raise ValueError(f"StaticBuffers.fill: {k!r} is {tuple(v.shape)} {v.dtype}, the key's buffer "
                                 f"{tuple(bufs[k].shape)} {bufs[k].dtype}")
            src = v.pin_memory() if cuda and v.device.type == "cpu" else v
            bufs[k].copy_(src, non_blocking=cuda)
        self.fills += 1
        return bufs


def record_nonfinite(first_bad, loss, step) -> None:
    """``nonfinite: stop``'s accounting, in place and on the device (no host
    sync, so it can be recorded in a graph): ``first_bad`` (a 0-dim long
    tensor, 0 while every loss was finite) becomes ``step`` (0-dim, the
    1-based update) at the first update whose ``loss`` is not finite, and
    keeps it after."""
    import torch

    bad = ~torch.isfinite(loss.detach()).all()
    first_bad.copy_(torch.where(bad & (first_bad == 0), step, first_bad))


def eager_reason(method, nonfinite: str) -> str | None:
    """Why the updates of ``method`` (an :class:`~beluga.methods.base.Algorithm` class or instance) with
    ``training.nonfinite`` = ``nonfinite`` run outside a whole-step graph, or None (captured). The training loop
    asks it of its method; the GPU plan of each job's method (:mod:`beluga.workflow.steps`: such a job's steps are
    priced eager under ``compile: graphs``)."""
    if method.graph_eager is not None:
        return method.graph_eager
    if nonfinite == "skip":
        return "training.nonfinite: skip reads each loss on the host before its update"
    return None


def graph_autocast(precision):
    """The forward pass's autocast inside a graph: the precision's, without
    autocast's weight cache (a cached cast made during a capture would not be
    recomputed by a replay)."""
    import torch

    if precision.name == "bf16":
        return torch.autocast(precision.device_type, dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()


class WholeStepGraphs:
    """The whole-step graphs of one :class:`beluga.methods.base.Algorithm`
    (see the module docstring). :meth:`step` takes one minibatch, runs one
    update (recording its bucket's graph first if new) and returns the
    update's statistics (device scalars). ``capture=False`` (the CPU) runs
    the same update function on the same static buffers without recording
    it."""

    def __init__(self, algo, capture: bool, warmup: int = WARMUP):
        self.algo = algo
        self.capture = bool(capture)
        self.warmup = int(warmup)
        self.buffers = StaticBuffers()
        self._graphs: dict[tuple, tuple] = {}   # key -> (CUDAGraph, its static outputs)
        self._pool = None
        self._step = None                       # 0-dim long: the update being run (1-based)
        self.capture_s = 0.0
        self.replays = 0

    # ------------------------------------------------------------ state
    def _params(self) -> list:
        return list(self.algo.trainable_parameters())

    def _ready(self, device) -> None:
        """Gradients allocated (zeros) where missing, the non-finite flag and the step counter on the device."""
        import torch

        for p in self._params():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if self.algo._first_bad is None:
            self.algo._first_bad = torch.zeros((), dtype=torch.long, device=device)
        if self._step is None:
            self._step = torch.zeros((), dtype=torch.long, device=device)

    def _snapshot(self) -> dict:
        opt = self.algo.optimizer
        return {"params": [p.detach().clone() for p in self._params()],
                "grads": [p.grad.detach().clone() for p in self._params()],
                "state": {id(p): {k: v.clone() for k, v in opt.state[p].items() if hasattr(v, "clone")}
                          for g in opt.param_groups for p in g["params"] if p in opt.state},
                "first_bad": self.algo._first_bad.clone()}

    def _restore(self, snap: dict) -> None:
        """Put back (in place: the same tensors) what the warm-up updates changed;
        optimizer state the warm-up created is zeroed (AdamW's fresh state)."""
        import torch

        opt = self.algo.optimizer
        with torch.no_grad():
            for p, v in zip(self._params(), snap["params"]):
                p.copy_(v)
            for p, v in zip(self._params(), snap["grads"]):
                p.grad.copy_(v)
            for g in opt.param_groups:
                for p in g["params"]:
                    saved = snap["state"].get(id(p), {})
                    for k, v in opt.state.get(p, {}).items():
                        if k in saved:
                            v.copy_(saved[k])
                        elif hasattr(v, "zero_"):
                            v.zero_()
            self.algo._first_bad.copy_(snap["first_bad"])

    # ------------------------------------------------------------ the update
    def _update(self, meta: tuple, static: dict) -> dict:
        """One update on the static buffers: what a graph records."""
        import torch

        algo = self.algo
        params = self._params()
        torch._foreach_zero_([p.grad for p in params])
        losses = algo.loss_fn.graph_loss(algo.model, meta, static, graph_autocast(algo.loss_fn.precision))
        stats = algo.objective(losses)
        record_nonfinite(algo._first_bad, stats["loss"], self._step)
        stats["loss"].backward()
        clip_and_step(algo.optimizer, params, algo.hparams["max_grad_norm"])
        return {k: v.detach() for k, v in stats.items()}

    def warm_up(self, meta: tuple, static: dict) -> None:
        """:attr:`warmup` updates on the static buffers that leave no trace: on CUDA on a side stream (as
        torch's capture requires), the CUDA generator put back too; then the parameters, gradients, optimizer
        state (zeroed where the warm-up created it) and non-finite flag are restored in place."""
        import torch

        cuda = self.algo._first_bad.device.type == "cuda"
        snap = self._snapshot()
        rng = torch.cuda.get_rng_state() if cuda else None
        side = torch.cuda.Stream() if cuda else None
        if cuda:
            side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side) if cuda else contextlib.nullcontext():
            for _ in range(self.warmup):
                self._update(meta, static)
        if cuda:
            torch.cuda.current_stream().wait_stream(side)
        self._restore(snap)
        if cuda:
            torch.cuda.set_rng_state(rng)

    def _record(self, key: tuple, meta: tuple, static: dict) -> tuple:
        import torch

        torch.cuda.synchronize()
        t0 = time.perf_counter()
        self.warm_up(meta, static)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._pool):
            out = self._update(meta, static)
        if self._pool is None:
            self._pool = graph.pool()
        torch.cuda.synchronize()
        self.capture_s += time.perf_counter() - t0
        _log.info("recorded the whole-step graph of bucket %s in %.1fs", key, time.perf_counter() - t0)
        self._graphs[key] = (graph, out)
        return graph, out

    def step(self, batch) -> dict:
        """One update on ``batch``; returns its statistics (``loss``, and what the method's objective adds)."""
        algo = self.algo
        meta, host = algo.loss_fn.graph_inputs(batch)
        key = step_key(meta, host)
        device = next(iter(self._params())).device
        static = self.buffers.fill(key, host, device)
        self._ready(device)
        self._step.fill_(algo.steps_done + 1)
        if not self.capture:
            out = self._update(meta, static)
        else:
            graph, out = self._graphs.get(key) or self._record(key, meta, static)
            graph.replay()
            self.replays += 1
        stats = {k: v.clone() for k, v in out.items()}   # the graph's outputs are overwritten by its next replay
        algo.end_step()
        return stats

    def summary(self) -> dict:
        return {"captured": True, "graphs": len(self._graphs), "buckets": len(self.buffers),
                "capture_s": round(self.capture_s, 3), "replays": self.replays}
