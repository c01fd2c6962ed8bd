"""Compilation of the training step (``training.compile``): fewer, larger
kernels, as an opt-in option that changes numerics within bounds.

- ``off`` (default): the model runs eagerly, today's code path bit for bit.
- ``default``: ``torch.compile`` (inductor) of the classification forward
  pass of :class:`beluga.train.loop.LossFn` (its backward is compiled with it).
  Shapes are dynamic (``dynamic=True``: batch size and length are symbols)
  and batches are not padded beyond their longest sequence, so a job
  compiles its forward once: a batch of one example (dynamo specialises
  size 1) or a model of another structure (frozen parameters, other
  dropout) compiles once more; another model object of the same structure
  (Fish's inner copy, the next run in the same process) reuses the graph.
  The attention mask is always passed (one call signature).
- ``graphs`` (CUDA only): the whole training update — forward, loss,
  backward, clipping and AdamW — recorded as one plain CUDA graph per bucket
  and replayed (:mod:`beluga.model.graphs`), for the classification, score
  and span (READ) heads. Shapes are static: sequences are padded to the next
  multiple of :data:`BUCKET` tokens (at most ``max_length``) and the rows to
  the run's batch sizes (:func:`bucket_rows`: ``batch_size`` for a batch of
  single inputs, ``2 × batch_size`` for an INV / DIR batch of pairs, a power
  of two above; a smaller batch is padded to the next of these, never a
  batch of 3 to 8; extra rows repeat the first one (:func:`pad_inputs`) and
  their outputs are dropped, so they add exactly zero gradient). The
  optimizer is capturable (:func:`optimizer_options`): AdamW with
  ``capturable=True, fused=True``, its learning rate a tensor on the device
  that the schedule fills in place (:func:`tensor_lr`; the rates are the
  float path's). Methods whose update is not one minibatch's loss and one
  optimizer step (IRM, Group-DRO, Fish: :attr:`beluga.methods.base.Algorithm.graph_eager`)
  and ``training.nonfinite: skip`` run their updates eagerly, said in the
  log and the run record (``step_graphs``): their classification forward
  passes compiled with ``mode="reduce-overhead"`` (inductor with CUDA graph
  trees) on the same buckets, and gradient clipping plus the AdamW step as
  one ``torch.compile``'d function with no host sync (:func:`compiled_step`,
  compiled once per optimizer; it recompiles when a checkpoint restore
  replaces the optimizer's parameter groups). Needs a CUDA GPU: anywhere
  else the job stops at its start with one :class:`beluga.core.errors.ConfigError`
  line.

What is compiled under ``default``: the forward (and so backward) pass of
classification batches. READ's span batches run eagerly there, and
prediction and evaluation run eagerly under every mode; the loss,
``zero_grad``, the learning-rate schedule's update (one in-place fill per
step) and the methods' own arithmetic run eagerly between the compiled
pieces. The model is not replaced: the compiled function or graph calls the
same module, so the optimizer, ``state_dict`` (its keys), checkpoints and
L2-SP's reference weights see the same parameters (a tensor learning rate is
saved as its float and restored into the same tensor). Under ``default``
dropout draws its masks from torch's generator as in eager mode
(``fallback_random``: the compiled graph calls the eager dropout kernel), so
a compiled run differs from an eager one only by the order of floating-point
operations in fused kernels; a whole-step graph draws its masks from the
CUDA generator at each replay (other masks than an eager run's) and also
differs by its padded matrix products.

Numerics (measured on a 2-core CPU, ``tests/test_compile.py``): in fp32 the
class probabilities of a model trained with ``default`` differ from ``off``'s
by at most 6e-8 (max abs; tiny BERT after 20 updates, MiniLM after 60), with
bf16 autocast by 3e-4; the stated tolerance is 1e-3. A tiny end-to-end run's
pass rates and G equal ``off``'s. ``default`` and ``off`` keep today's
optimizer (fused AdamW where the device has it, a float learning rate,
outside the compiled region). ``graphs``' whole-step update, run on the
CPU without being recorded (tiny BERT without dropout, fp32, 20 updates at
lr 1e-3, vanilla and L2-SP): the learning rates equal the float schedule's
at every update, class probabilities within 6e-8 of ``off``'s (bound 1e-4),
weights within 6e-6 but for parameters whose gradient is zero or nearly so
(attention key biases, an embedding row), whose rounding noise AdamW
normalises to steps of up to lr (2.7e-4; bound 1e-3). Recording and
replaying (CUDA) have not yet run on a GPU: the 40-update test against the
eager weights runs where CUDA exists, with the same bounds.

The compile cache (``TORCHINDUCTOR_CACHE_DIR``, with inductor's FX graph
cache and AOT-autograd cache on) is a folder shared by jobs
(:func:`configure_cache`: the caller's folder, else ``BELUGA_COMPILE_CACHE``,
else a folder in the temp directory), so a job whose graphs another job
compiled (same model structure, precision, mode and torch) loads their
kernels instead of compiling them (dynamo still traces the model: on a CPU
about a quarter of a cold compile); it is set only when compile is not
``off``.

``compile_s`` (the training summary): wall time of the forward calls that
compiled (dynamo traced a new graph: counted by dynamo's frame counter) plus
the backward pass of each such call (the first backward of a graph compiles
it), and for ``graphs`` also the call that records each new CUDA graph
(the second call per bucket). It includes one step's own compute per
compiled graph, which is small next to compiling. The first calls of
``graphs``' compiled optimizer step (which compile it) are not in it, only in
the wall time.

Light: torch is imported inside functions.
"""

from __future__ import annotations

import getpass
import os
import tempfile
import time
import weakref
from pathlib import Path

from beluga.core.errors import ConfigError

MODES = ("off", "default", "graphs")
#: ``graphs``: sequence lengths are padded to a multiple of this many tokens
BUCKET = 16
#: ``graphs`` without a batch size: fewer rows than this are not padded (more: to a power of two)
MIN_ROWS = 8
#: the environment variable naming the shared compile cache folder
CACHE_ENV = "BELUGA_COMPILE_CACHE"
#: dropout in compiled graphs calls torch's eager kernel, drawing the same masks as ``off``
#: (inductor's ``fallback_random``); False: inductor's own fused random numbers (other masks)
FALLBACK_RANDOM = True


def check(mode: str, device_type: str, job: str = "") -> None:
    """Stop at job start for an unknown mode or ``graphs`` without a CUDA device."""
    where = f"training {job}: " if job else ""
    if mode not in MODES:
        raise ConfigError(f"{where}field 'training.compile': {mode!r} is not one of {', '.join(MODES)}")
    if mode == "graphs" and device_type != "cuda":
        raise ConfigError(f"{where}training.compile: graphs needs a CUDA GPU (CUDA graphs) but the job runs on "
                          f"{device_type}; set training.compile: default (or off) to train there")


def default_cache_dir() -> Path:
    """``BELUGA_COMPILE_CACHE``, else ``<temp>/beluga-compile-cache-<user>``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"beluga-compile-cache-{user}"


def configure_cache(cache_dir: str | os.PathLike | None = None) -> Path:
    """Point inductor's on-disk caches at ``cache_dir`` (default:
    :func:`default_cache_dir`) and switch its FX graph and AOT-autograd caches
    on (process-wide)."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    path = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(path.resolve())
    inductor_config.fx_graph_cache = True
    if hasattr(functorch_config, "enable_autograd_cache"):
        functorch_config.enable_autograd_cache = True
    return path


def optimizer_options(mode: str, device_type: str) -> dict:
    """Extra AdamW options for ``mode``: under ``graphs`` on CUDA
    ``capturable=True, fused=True`` (step counters and every update on the
    device in one fused kernel, no host sync: safe inside a CUDA graph); none
    otherwise (today's optimizer, fused where the device has it). The
    learning rate is then a device tensor (:func:`tensor_lr`), which needs
    ``capturable`` or ``fused`` with ``foreach``."""
    return {"capturable": True, "fused": True} if mode == "graphs" and device_type == "cuda" else {}


def tensor_lr(mode: str, device_type: str) -> bool:
    """Whether AdamW's learning rate is a 0-dim tensor on the parameters'
    device, updated in place by the schedule (``graphs`` on CUDA): the compiled
    optimizer step reads it at every call, where a Python float would be baked
    into the compiled code at its first value."""
    return mode == "graphs" and device_type == "cuda"


def lr_dtype(device_type: str):
    """dtype of a tensor learning rate: float32 on CUDA (what the fused and
    capturable AdamW kernels compute with), float64 elsewhere (the float path's
    double arithmetic, so that a tensor lr gives the float path's bytes)."""
    import torch

    return torch.float32 if device_type == "cuda" else torch.float64


def clip_and_step(optimizer, params, max_norm: float) -> None:
    """The update after the backward pass: clip the gradients of ``params`` to a
    total norm of ``max_norm`` (foreach kernels, the norm stays on the device:
    no host sync) and take one ``optimizer`` step."""
    import torch

    torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
    optimizer.step()


def compiled_step(optimizer, max_norm: float):
    """``graphs``: :func:`clip_and_step` of ``optimizer`` compiled with
    ``torch.compile`` (inductor fuses the clipping and the capturable (fused
    or foreach) AdamW update, its learning rate a device tensor, into a few
    kernels with no host sync), called as ``fn(params)``. Compiled at its first call (one graph per
    optimizer and parameter list); a new optimizer (``reset_optimizer``) gets a
    new function."""
    import torch

    def step(params):
        clip_and_step(optimizer, params, max_norm)

    return torch.compile(step, fullgraph=False)


def _next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def bucket_length(n: int, max_length: int) -> int:
    """``graphs``: the padded sequence length of a batch whose longest has ``n`` tokens."""
    return max(n, min(max_length, -(-n // BUCKET) * BUCKET))


def bucket_rows(n: int, batch_size: int | None = None) -> int:
    """``graphs``: the padded number of rows of a batch of ``n`` sequences:
    with the run's ``batch_size``, the smallest of ``batch_size`` (a batch of
    single inputs, a last smaller one padded to it) and ``2 × batch_size`` (an
    INV / DIR batch of pairs) that holds ``n``; without it, ``n`` itself below
    :data:`MIN_ROWS`. Larger batches: the next power of two."""
    if batch_size:
        for cap in (int(batch_size), 2 * int(batch_size)):
            if n <= cap:
                return cap
    elif n < MIN_ROWS:
        return n
    return _next_pow2(n)


def pad_inputs(inputs: dict, rows: int, length: int, pad: dict, right: bool = True) -> dict:
    """``graphs``: 2D model inputs (name -> [n, L] tensor) padded to ``rows`` x
    ``length``: each sequence with ``pad[name]`` on the tokenizer's side
    (``right``), then extra rows repeating the first one (a caller drops their
    outputs, so they add exactly zero gradient). ``length`` below ``L`` leaves
    the sequences as they are."""
    import torch

    out = {}
    for name, t in inputs.items():
        n, cur = t.shape
        if cur < length:
            fill = torch.full((n, length - cur), pad[name], dtype=t.dtype, device=t.device)
            t = torch.cat([t, fill] if right else [fill, t], dim=1)
        if n < rows:
            t = torch.cat([t, t[:1].expand(rows - n, -1)], dim=0)
        out[name] = t
    return out


class CompiledForward:
    """The compiled forward pass of a :class:`beluga.train.loop.LossFn`:
    ``self(model, inputs)`` returns ``model(**inputs).logits`` (for the
    batch's rows), compiled as ``mode`` says (see the module docstring).
    One compiled function per model object (weakly referenced)."""

    def __init__(self, mode: str, max_length: int, device_type: str = "cpu", pad_token_id: int = 0,
                 pad_token_type_id: int = 0, padding_side: str = "right", cache_dir=None, job: str = "",
                 batch_size: int | None = None):
        check(mode, device_type, job)
        if mode == "off":
            raise ValueError("CompiledForward: mode 'off' runs the model eagerly (no CompiledForward)")
        import torch._dynamo.config as dynamo_config
        import torch._inductor.config as inductor_config

        self.mode = mode
        self.max_length = int(max_length)
        self.pad = {"input_ids": int(pad_token_id or 0), "token_type_ids": int(pad_token_type_id or 0),
                    "attention_mask": 0}
        self.right = padding_side == "right"
        self.batch_size = batch_size   # graphs: the run's batch size sets the row buckets (bucket_rows)
        self.cache_dir = configure_cache(cache_dir)
        # dropout masks from torch's generator, as in eager mode (see the module docstring)
        inductor_config.fallback_random = FALLBACK_RANDOM
        # graphs: a graph per bucket and model; default: a few specialisations
        limit = 256 if mode == "graphs" else 32
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(dynamo_config, name):
                setattr(dynamo_config, name, max(int(getattr(dynamo_config, name)), limit))
        self.compile_s = 0.0
        self.compiles = 0          # forward calls that compiled a graph
        self._fns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._calls: dict[tuple, int] = {}   # graphs: calls per (model, bucket)

    # ------------------------------------------------------------ inputs
    def prepare(self, inputs: dict, mask: bool = True) -> dict:
        """The model inputs the compiled function gets: an all-ones attention
        mask where the encoder left it out (``mask``: the model takes one);
        ``graphs``: padded to the batch's bucket."""
        import torch

        inputs = dict(inputs)
        ids = inputs["input_ids"]
        if mask and "attention_mask" not in inputs:
            inputs["attention_mask"] = torch.ones_like(ids)
        if self.mode != "graphs":
            return inputs
        rows, length = bucket_rows(ids.shape[0], self.batch_size), ids.shape[1]
        if "attention_mask" in inputs:   # a model without a mask would attend to padding: rows only
            length = bucket_length(length, self.max_length)
        return pad_inputs(inputs, rows, length, self.pad, self.right)

    # ------------------------------------------------------------ the call
    def _compiled(self, model):
        fn = self._fns.get(model)
        if fn is None:
            import torch

            def forward(**inputs):
                return model(**inputs).logits

            if self.mode == "graphs":
                fn = torch.compile(forward, mode="reduce-overhead", dynamic=False)
            else:
                fn = torch.compile(forward, dynamic=True)
            self._fns[model] = fn
        return fn

    def __call__(self, model, inputs: dict, mask: bool = True):
        """float logits of the batch's rows (under the caller's autocast)."""
        import torch
        from torch._dynamo.utils import counters

        n = inputs["input_ids"].shape[0]
        inputs = self.prepare(inputs, mask)
        fn = self._compiled(model)
        key = (id(model), model.training, torch.is_autocast_enabled(inputs["input_ids"].device.type),
               *(tuple(v.shape) for v in inputs.values()))
        calls = self._calls.get(key, 0)
        self._calls[key] = calls + 1
        before = counters["frames"]["total"]
        cuda = inputs["input_ids"].device.type == "cuda"
        timed = calls == 0 or (self.mode == "graphs" and calls == 1)   # graphs: the 2nd call records the graph
        if cuda and timed:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn(**inputs)
        if cuda and timed:
            torch.cuda.synchronize()
        compiled = counters["frames"]["total"] != before
        if compiled:
            self.compiles += 1
        if compiled or (timed and self.mode == "graphs"):
            self.compile_s += time.perf_counter() - t0
            self._time_backward(out, cuda)
        return out[:n] if out.shape[0] != n else out

    def _time_backward(self, out, cuda: bool) -> None:
        """Add the wall time of the compiled backward node of ``out`` (its first
        run compiles it) to ``compile_s``, when it runs."""
        import torch

        node, seen = out.grad_fn, 0
        while node is not None and "Compiled" not in type(node).__name__ and seen < 4:
            nxt = [f for f, _ in node.next_functions if f is not None]
            node, seen = (nxt[0] if nxt else None), seen + 1
        if node is None or "Compiled" not in type(node).__name__:
            return
        start: list[float] = []

        def pre(_grad_outputs):
            if cuda:
                torch.cuda.synchronize()
            start.append(time.perf_counter())

        def post(_grad_inputs, _grad_outputs):
            if start:
                if cuda:
                    torch.cuda.synchronize()
                self.compile_s += time.perf_counter() - start.pop()
            pre_handle.remove()
            post_handle.remove()

        pre_handle = node.register_prehook(pre)
        post_handle = node.register_hook(post)

    def summary(self) -> dict:
        return {"compile_s": round(self.compile_s, 3), "compiles": self.compiles}
