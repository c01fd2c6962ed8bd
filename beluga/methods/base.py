"""The method interface and the plain (vanilla) method."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import ClassVar

from beluga.core.lazy import torch
from beluga.model import compiling, graphs

_log = logging.getLogger(__name__)

ALGORITHMS: dict[str, type[Algorithm]] = {}


def register(cls):
    ALGORITHMS[cls.name] = cls
    return cls


def is_normalization(module) -> bool:
    """A normalization layer, by type: torch's LayerNorm, GroupNorm, RMSNorm,
    batch / instance norms, and model-specific classes named ``*Norm``
    (T5LayerNorm, LlamaRMSNorm...)."""
    types = (torch.nn.LayerNorm, torch.nn.GroupNorm, torch.nn.modules.batchnorm._NormBase,
             torch.nn.LocalResponseNorm) + ((torch.nn.RMSNorm,) if hasattr(torch.nn, "RMSNorm") else ())
    return isinstance(module, types) or type(module).__name__.endswith("Norm")


def no_decay_parameters(model) -> set[int]:
    """ids of the parameters weight decay leaves alone (the Hugging Face
    Trainer's convention): every parameter of a normalization module
    (:func:`is_normalization`) and every module's own ``bias``."""
    out: set[int] = set()
    for module in model.modules():
        norm = is_normalization(module)
        for name, p in module.named_parameters(recurse=False):
            if norm or name == "bias":
                out.add(id(p))
    return out


class Algorithm:
    """A method owns the model, its optimizer and scheduler.

    ``loss_fn(model, batch, scale=None) -> per-example losses`` is the one
    loss code path (MFT / INV / DIR / QA); ``update`` receives a list of
    minibatches (one per environment for environment-aware methods, a single
    one otherwise) and returns a dict with at least ``loss``.

    Shared by every method: AdamW (``lr``, ``weight_decay``), a linear decay
    of the learning rate to 0 over ``total_steps`` updates, and gradient
    clipping at ``max_grad_norm`` (default 1.0).

    ``hparams`` must be complete: every key of :meth:`hparam_defaults` (the
    shared and the method's own), as :func:`beluga.methods.method_hparams`
    builds them; a missing key is refused, nothing is filled in here.
    ``envs`` (optional) lists every training environment (functionalities, and
    ``iid``), known before training starts; ``reference_state`` (optional) is a
    name -> tensor dict of reference weights (L2-SP; other methods ignore it);
    ``fused``: AdamW's fused implementation (``beluga.model.precision``).
    ``compile``: ``training.compile`` (:mod:`beluga.model.compiling`); under
    ``graphs`` (CUDA only) AdamW is capturable and fused, its learning rate a
    device tensor the schedule updates in place (:meth:`set_lrs`), and each
    update of a method without :attr:`graph_eager` (:meth:`objective` of one
    minibatch, one optimizer step) is a replay of its bucket's whole-step CUDA
    graph (:mod:`beluga.model.graphs`); a method with it runs its updates
    eagerly with the clipping and optimizer step as one compiled function
    (:meth:`clip_and_step`), which :meth:`graph_record` reports; otherwise the
    optimizer runs eagerly with a float learning rate.

    ``update`` returns its losses as detached 0-dim tensors (or floats): the
    training loop moves them to the host only when it logs, so an update never
    waits for the device. Attributes whose name starts with ``_`` are
    transient (not saved in checkpoints).
    """

    name = "base"
    #: hyper-parameters every method has (settable per method in training.method_hparams)
    shared_defaults: ClassVar[dict] = {"max_grad_norm": 1.0, "detach_inv_orig": False}
    #: the method's own hyper-parameters and their defaults (the one place they are set)
    defaults: ClassVar[dict] = {}
    #: how the training loop draws minibatches: "pooled" = one batch per step
    #: drawn from the streams in proportion to their sizes; "per_env" = one
    #: minibatch per environment per step (see ``training.train``).
    sampling = "pooled"
    #: a method whose training starts from another method's trained model of
    #: the same configuration and fold (lp_ft: "lp"); None = the configuration's
    #: start model (the IID model or the pre-trained one).
    start_method: str | None = None
    #: a stage trained only for another method (LP-FT's LP stage): not a method a config lists
    internal = False
    #: where a config sets the hyper-parameters (``training.method_hparams.<method>``): None = the
    #: method's own entry; else {method: keys taken from its complete hyper-parameters (None: all)}
    hparams_from: ClassVar[dict[str, tuple[str, ...] | None] | None] = None
    #: ``training.compile: graphs``: why the method's updates run outside a whole-step CUDA graph
    #: (:mod:`beluga.model.graphs`); None: an update is :meth:`objective` of one minibatch's losses and one
    #: optimizer step, recorded once per bucket and replayed
    graph_eager: ClassVar[str | None] = None

    def __init__(self, model: torch.nn.Module, hparams: dict, loss_fn: Callable, total_steps: int,
                 envs: Sequence[str] | None = None, reference_state: dict | None = None, fused: bool = False,
                 nonfinite: str = "stop", compile: str = "off"):
        missing = sorted(set(self.hparam_defaults()) - set(hparams))
        if missing:
            raise ValueError(f"method {self.name}: hyper-parameters {missing} are missing (build them with "
                             "beluga.methods.method_hparams)")
        self.model = model
        self.hparams = hparams   # read only (beluga.train.settings.job_hparams is where they are written)
        self.loss_fn = loss_fn
        self.total_steps = max(1, int(total_steps))
        self.envs = list(envs) if envs is not None else []
        self.reference_state = reference_state
        self.fused = bool(fused)
        if nonfinite not in ("stop", "skip"):
            raise ValueError(f"field 'training.nonfinite': {nonfinite!r} is not one of stop, skip")
        self.nonfinite = nonfinite
        compile = "off" if compile is False else compile   # False: a bare YAML off
        first = next(iter(model.parameters()), None)
        device_type = first.device.type if first is not None else "cpu"
        compiling.check(compile, device_type)
        self._adamw_options = compiling.optimizer_options(compile, device_type)
        self._tensor_lr = compiling.tensor_lr(compile, device_type)
        self._compile_step = compile == "graphs"
        self._step_fn = None            # graphs: the compiled clip_and_step of the current optimizer
        self._graphs: graphs.WholeStepGraphs | None = None   # graphs: the whole-step CUDA graphs
        self._graph_eager = graphs.eager_reason(self, self.nonfinite) if compile == "graphs" else None
        self.steps_done = 0
        self.nonfinite_skipped = 0      # steps skipped for a non-finite loss (nonfinite: skip)
        self._first_bad: torch.Tensor | None = None   # device scalar: first step with a non-finite loss
        self.setup()
        self.optimizer = self.make_optimizer()
        self.scheduler = self.make_scheduler(self.optimizer)
        if compile == "graphs":
            if self._graph_eager is None:
                self._graphs = graphs.WholeStepGraphs(self, capture=device_type == "cuda")
                _log.info("training.compile: graphs: %s updates run as whole-step CUDA graphs", self.name)
            else:
                _log.info("training.compile: graphs: %s updates run eagerly (%s), with the compiled forward pass "
                         "and optimizer step", self.name, self._graph_eager)

    # ------------------------------------------------------------ hooks
    @classmethod
    def hparam_defaults(cls) -> dict:
        """The shared and the method's own hyper-parameter defaults."""
        return {**Algorithm.shared_defaults, **cls.defaults}

    @classmethod
    def config_overrides(cls, hparams: dict | None = None) -> dict:
        """Model config fields the model must be built with (``load_model(...,
        config_overrides=...)``); none by default."""
        return {}

    @classmethod
    def envs_per_step(cls, hparams: dict) -> int | None:
        """Per-env sampling: environments per step (None = all)."""
        return hparams["envs_per_step"]

    @classmethod
    def selection_method(cls, hparams: dict) -> str:
        """The method whose model selection (grid trials on T_val) gives this
        one its hyper-parameters: its own by default."""
        return cls.name

    @classmethod
    def start_from(cls, hparams: dict) -> str | None:
        """The method whose trained model (same configuration and fold) this one
        starts from, given its hyper-parameters: ``start_method`` by default."""
        return cls.start_method

    @classmethod
    def fixed_epochs(cls, hparams: dict) -> float | None:
        """Epochs the method fixes whatever model selection chose (None: the selected ones); applied
        last, by :func:`beluga.train.settings.job_hparams`."""
        return None

    def setup(self) -> None:
        """Runs before the optimizer is built (freeze parameters, set dropout...)."""

    def summary(self) -> dict:
        """Method-specific information for the run record."""
        return {}

    def graph_record(self) -> dict:
        """``training.compile: graphs``: whether the updates ran as whole-step graphs (their count, buckets,
        capture seconds, replays) or eagerly and why (``eager_reason``); {} under another mode."""
        if self._graphs is not None:
            return self._graphs.summary()
        if self._graph_eager is not None:
            return {"captured": False, "eager_reason": self._graph_eager}
        return {}

    def objective(self, losses: torch.Tensor) -> dict:
        """The update's objective from one minibatch's per-example ``losses``:
        ``{"loss": the mean}`` (``loss`` is what the optimizer minimises; a
        method may add terms and report them). Eager and whole-step graphs
        alike."""
        return {"loss": losses.mean()}

    def finish(self) -> None:
        """Runs once training ends (``beluga.train.loop.train``), before the
        weights are checked and the model is used or saved: a method that
        changed the model's structure puts a plain model back (LoRA merges its
        adapters). Nothing by default."""

    # ------------------------------------------------------------ optimisation
    def trainable_parameters(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def adamw(self, params, weight_decay: float | None = None, decay_all: bool = False,
              owner=None) -> torch.optim.Optimizer:
        """AdamW over ``params`` (tensors of ``owner``, default the model) with the run's lr and
        the given (default: the method's) weight decay, fused when the device
        supports it. As in the Hugging Face Trainer (the reference code), a
        positive decay is not applied to biases and normalization weights
        (:func:`no_decay_parameters`, found by module type); ``decay_all``
        decays every parameter."""
        wd = float(self.hparams["weight_decay"] if weight_decay is None else weight_decay)
        params = list(params)
        groups: list = params
        if wd > 0 and not decay_all:
            exempt = no_decay_parameters(self.model if owner is None else owner)
            groups = [{"params": [p for p in params if id(p) not in exempt], "weight_decay": wd},
                      {"params": [p for p in params if id(p) in exempt], "weight_decay": 0.0}]
            groups = [g for g in groups if g["params"]]
        lr = float(self.hparams["lr"])
        if self._tensor_lr:   # a device tensor the schedule fills in place (compiled step: see set_lrs)
            dev = params[0].device
            lr = torch.tensor(lr, dtype=compiling.lr_dtype(dev.type), device=dev)
        options = {"fused": self.fused or None, **self._adamw_options}   # graphs: capturable and fused
        return torch.optim.AdamW(groups, lr=lr, weight_decay=wd, **options)

    def make_optimizer(self) -> torch.optim.Optimizer:
        return self.adamw(self.trainable_parameters())

    def lr_factor(self) -> float:
        """Linear decay to 0 over ``total_steps`` updates (a function of the
        number of updates done, so that a new optimizer continues the schedule)."""
        return max(0.0, 1.0 - self.steps_done / self.total_steps)

    def make_scheduler(self, optimizer):
        """``LambdaLR`` of :meth:`lr_factor`. Its base rates stay Python floats
        with a tensor learning rate too, so the rates it computes are the float
        path's (it writes them into the tensor in place)."""
        sched = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: self.lr_factor())
        if self._tensor_lr:
            base = [float(self.hparams["lr"])] * len(optimizer.param_groups)
            for group, b in zip(optimizer.param_groups, base):
                group["initial_lr"] = b
                group["lr"].fill_(b * self.lr_factor())   # the float path's first rate (LambdaLR's is the tensor's)
            sched.base_lrs = base
        return sched

    def set_lrs(self, lrs) -> None:
        """Set the learning rate of each of the optimizer's parameter groups:
        in place into a tensor learning rate (the compiled step keeps reading
        the same tensor), else as the float it is."""
        for group, lr in zip(self.optimizer.param_groups, lrs):
            if torch.is_tensor(group["lr"]):
                group["lr"].fill_(float(lr))
            else:
                group["lr"] = lr

    def reset_optimizer(self) -> None:
        """A fresh optimizer (no moments), the learning-rate schedule continuing where it was."""
        self.optimizer = self.make_optimizer()
        self.scheduler = self.make_scheduler(self.optimizer)
        self._step_fn = None

    def clip(self, params) -> None:
        torch.nn.utils.clip_grad_norm_(params, self.hparams["max_grad_norm"])

    def clip_and_step(self, params) -> None:
        """After the backward pass: clip the gradients of ``params`` and take one
        optimizer step: eagerly (:meth:`clip`, then ``optimizer.step()``), or
        under ``graphs`` as one compiled function with no host sync
        (:func:`beluga.model.compiling.compiled_step`)."""
        if not self._compile_step:
            self.clip(params)
            self.optimizer.step()
            return
        if self._step_fn is None or self._step_fn[0] is not self.optimizer:
            self._step_fn = (self.optimizer, compiling.compiled_step(self.optimizer, self.hparams["max_grad_norm"]))
        self._step_fn[1](list(params))

    def end_step(self) -> None:
        """Count one update and advance the learning-rate schedule."""
        self.steps_done += 1
        self.scheduler.step()

    def finite(self, loss: torch.Tensor) -> bool:
        """Whether to go on with an update on ``loss``. ``nonfinite: stop``
        (default): always (a non-finite loss is recorded on the device, without
        waiting for it, and the training loop stops at its next check:
        :meth:`first_nonfinite_step`); ``skip``: False for a non-finite loss (the
        update is skipped and counted; one host sync per check)."""
        if self.nonfinite == "skip":
            if bool(torch.isfinite(loss.detach()).all()):
                return True
            self.nonfinite_skipped += 1
            return False
        step = torch.full((), self.steps_done + 1, dtype=torch.long, device=loss.device)
        if self._first_bad is None:
            self._first_bad = torch.zeros((), dtype=torch.long, device=loss.device)
        graphs.record_nonfinite(self._first_bad, loss, step)
        return True

    def first_nonfinite_step(self) -> int | None:
        """The first update (1-based) whose loss was not finite, or None (one host sync)."""
        if self._first_bad is None:
            return None
        v = int(self._first_bad)
        return v or None

    def skip_step(self) -> None:
        """A skipped update: no gradient is applied, the schedule goes on."""
        self.optimizer.zero_grad(set_to_none=True)
        self.end_step()

    def step(self, loss: torch.Tensor) -> None:
        if not self.finite(loss):
            self.skip_step()
            return
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.clip_and_step(self.trainable_parameters())
        self.end_step()

    def update(self, minibatches: list) -> dict:
        raise NotImplementedError

    def predict(self, enc) -> torch.Tensor:
        """Model outputs for a tokenized batch (eval mode): logits for a
        sequence classifier, (start, end) logits stacked on dim 0 for QA."""
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model(**enc)
        if was_training:
            self.model.train()
        if hasattr(out, "logits"):
            return out.logits
        return torch.stack([out.start_logits, out.end_logits])


@register
class Vanilla(Algorithm):
    """Empirical risk minimisation with AdamW: the mean per-example loss of
    the minibatches."""

    name = "vanilla"
    defaults = {"weight_decay": 0.0}

    def update(self, minibatches: list) -> dict:
        if self._graphs is not None:
            if len(minibatches) != 1:
                raise ValueError(f"method {self.name}: a whole-step graph takes one minibatch per update, got "
                                 f"{len(minibatches)}")
            return self._graphs.step(minibatches[0])
        stats = self.objective(torch.cat([self.loss_fn(self.model, mb) for mb in minibatches]))
        self.step(stats["loss"])
        return {k: v.detach() for k, v in stats.items()}
