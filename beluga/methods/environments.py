"""Environment-aware methods: IRM (IRMv1), Group-DRO and Fish.

Environments are the functionalities of the training fold, plus ``iid`` for
the i.i.d. data in IID+T and IID→(IID+T). These methods use the training
loop's ``per_env`` sampling: every ``update`` receives a list of minibatches,
one per (sampled) environment, each homogeneous in environment and batch kind
(see ``beluga.train.loop.train``). The loss code path is the shared
``loss_fn(model, batch, scale=None)`` (MFT / INV / DIR / QA).

Their sampling hyper-parameters: ``envs_per_step`` (environments per update;
None = all; fish: ``fish_envs``) and ``per_env_epoch``: ``examples`` (default:
an epoch of ceil(items / (envs per step × batch size)) updates sees as many
examples, and so costs about as much, as a pooled epoch: the paper's "same
compute budget across all methods", the reference code's epoch length) or
``steps`` (the pooled number of updates, each with one minibatch per sampled
environment: k times the examples). Reference code (peluz/beluga
behaviour_training.py): IRM takes every environment at each step, an epoch of
ceil(n / sum of the batch sizes) steps; Group-DRO one sampled environment per
step, ceil(n / batch) steps; Fish 5 environments per meta step,
ceil(n / (batch × 5)) meta steps. This project's earlier default (every
environment at every step, ``steps`` epochs) is ``per_env_epoch: steps`` with
``envs_per_step: null``.
"""

from __future__ import annotations

import copy
import math

from beluga.core.errors import ConfigError
from beluga.core.lazy import torch
from beluga.methods.base import Algorithm, register


def _batch_env(mb) -> str:
    envs = set(mb.envs)
    if len(envs) != 1:
        raise ValueError(f"an environment-aware method needs minibatches from one environment, got {sorted(envs)}")
    return envs.pop()


# --------------------------------------------------------------------------- IRM


def _grad_wrt(value: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    if not value.requires_grad:
        return torch.zeros((), dtype=scale.dtype, device=scale.device)
    (g,) = torch.autograd.grad(value, [scale], create_graph=True, allow_unused=True)
    return torch.zeros((), dtype=scale.dtype, device=scale.device) if g is None else g


def irm_penalty(losses: torch.Tensor, scale: torch.Tensor, estimate: str = "full") -> torch.Tensor:
    """IRMv1 penalty of one environment from its per-example losses computed
    on ``scale``-multiplied logits (``scale`` a scalar leaf = 1.0 with
    ``requires_grad``), keeping the graph (the penalty is differentiated).

    ``estimate="full"`` (default, the IRM paper's code): (∂R_e/∂w)², with R_e
    the mean loss of the minibatch: >= 0, 0 exactly when the risk is
    stationary in the scale. ``"split"`` (DomainBed): ∂R_e^(even)/∂w ·
    ∂R_e^(odd)/∂w over the even / odd examples, an unbiased estimate of the
    squared gradient of the expected risk (it can be negative); a minibatch of
    one example falls back to "full".

    ``scale`` may also be a vector of dummy weights (one per class:
    :class:`beluga.train.losses.DummyClassifier`, the reference code's): the penalty
    is then the sum over the weights, Σ_c (∂R_e/∂w_c)² (the reference code's;
    "split": Σ_c of the halves' products). It is not the scalar one, (Σ_c
    ∂R_e/∂w_c)², the derivative along w = (s, ..., s)."""
    if estimate not in ("full", "split"):
        raise ValueError(f"irm_penalty: estimate must be 'full' or 'split', got {estimate!r}")
    if estimate == "split" and losses.numel() >= 2:
        return (_grad_wrt(losses[0::2].mean(), scale) * _grad_wrt(losses[1::2].mean(), scale)).sum()
    return (_grad_wrt(losses.mean(), scale) ** 2).sum()


@register
class IRM(Algorithm):
    """Invariant Risk Minimization, IRMv1 (Arjovsky et al. 2019).

    Per environment e, R_e(w) is the mean per-example loss computed with the
    model's logits multiplied by a dummy scale w = 1.0 (classification: the
    logits before every softmax of the MFT / INV / DIR losses; QA: the start
    and end logits); penalty_e = (∂R_e/∂w)² (:func:`irm_penalty`,
    ``irm_penalty_estimate``). Objective: mean_e R_e + λ·mean_e penalty_e with
    λ = 1 for the first ``anneal`` updates and ``irm_lambda`` afterwards;
    ``anneal`` = ``irm_penalty_anneal_iters`` when set, else
    round(``irm_penalty_anneal_frac`` × total updates) (ref. code: λ = 1e4
    after 1/5 of training; DomainBed: λ = 100 after 500 steps).
    ``irm_rescale`` (default on, as the reference code) divides the objective
    by λ after the switch; ``irm_reset_optimizer`` (default off, as the
    reference code; DomainBed's choice when on) gives AdamW fresh moments at
    the switch, the learning-rate schedule continuing (docs/DEVIATIONS.md).

    ``irm_dummy``: ``scalar`` (default, IRMv1's paper and DomainBed: one w on
    every logit, an INV loss's soft target included) or ``per_class`` (the
    reference code: one weight per class, READ: per sequence position of the
    minibatch, the penalty Σ_c (∂R_e/∂w_c)², an INV loss's soft target left
    unmultiplied: :class:`beluga.train.losses.DummyClassifier`)."""

    name = "irm"
    sampling = "per_env"
    graph_eager = ("IRM: the penalty differentiates each environment's risk by the dummy scale (a second "
                   "backward graph per environment), λ switches at a step decided on the host and "
                   "irm_reset_optimizer replaces the optimizer's state there")
    defaults = {"weight_decay": 0.0, "irm_lambda": 1e4, "irm_penalty_anneal_frac": 0.2,
                "irm_penalty_anneal_iters": None, "irm_penalty_estimate": "full", "irm_rescale": True,
                "irm_reset_optimizer": False, "irm_dummy": "scalar", "envs_per_step": None,
                "per_env_epoch": "examples"}

    def setup(self) -> None:
        it = self.hparams["irm_penalty_anneal_iters"]
        if it is None:
            it = round(float(self.hparams["irm_penalty_anneal_frac"]) * self.total_steps)
        self.anneal_iters = max(0, int(it))
        self.switch_step: int | None = 0 if self.anneal_iters == 0 else None
        self._penalty: torch.Tensor | None = None   # last step's penalty (transient: read by summary)

    def penalty_weight(self) -> float:
        return float(self.hparams["irm_lambda"]) if self.steps_done >= self.anneal_iters else 1.0

    def update(self, minibatches: list) -> dict:
        from beluga.train.losses import DummyClassifier  # imports torch: not at DAG time

        if self.steps_done == self.anneal_iters and self.anneal_iters > 0:
            if self.hparams["irm_reset_optimizer"]:
                # Adam's moments were built with λ = 1: reset at the jump in gradient magnitudes (DomainBed)
                self.reset_optimizer()
            self.switch_step = self.steps_done
        p0 = next(self.model.parameters())
        scale = torch.ones((), dtype=p0.dtype, device=p0.device, requires_grad=True)
        risks, penalties = [], []
        per_class = self.hparams["irm_dummy"] == "per_class"
        for mb in minibatches:
            dummy = DummyClassifier() if per_class else scale   # a fresh one per minibatch: its width
            losses = self.loss_fn(self.model, mb, scale=dummy)
            risks.append(losses.mean())
            w = dummy.weight if per_class else scale
            penalties.append(torch.zeros((), dtype=losses.dtype, device=losses.device) if w is None
                             else irm_penalty(losses, w, self.hparams["irm_penalty_estimate"]))
        risk, penalty = torch.stack(risks).mean(), torch.stack(penalties).mean()
        weight = self.penalty_weight()
        loss = risk + weight * penalty
        if self.hparams["irm_rescale"] and weight > 1.0:
            loss = loss / weight
        self.step(loss)
        self._penalty = penalty.detach()
        return {"loss": loss.detach(), "risk": risk.detach(), "irm_penalty": self._penalty, "irm_weight": weight}

    def summary(self) -> dict:
        final = float("nan") if self._penalty is None else float(self._penalty)
        return {"irm_anneal_iters": self.anneal_iters, "irm_switch_step": self.switch_step,
                "irm_lambda": float(self.hparams["irm_lambda"]), "irm_final_penalty": final}


# --------------------------------------------------------------------------- Group-DRO


@register
class GroupDRO(Algorithm):
    """Group-DRO (Sagawa et al. 2020), online version as in DomainBed.

    One weight q_e per environment, uniform at the start over every training
    environment (``envs``; an environment first seen in an update joins with
    the current mean weight). At each update, for each minibatch's environment
    q_e ← q_e·exp(η·loss_e) (η = ``groupdro_eta``, loss_e its mean loss),
    then q is renormalised to sum to 1 and the objective is Σ_e q_e·loss_e
    over the step's environments. By default a step holds one sampled
    environment (``envs_per_step = 1``), as in the reference code (loss =
    q_e·loss_e, one environment per step, the compute of a vanilla step);
    ``envs_per_step: null`` gives every environment at every step (DomainBed,
    this project's earlier default). Weights are kept as logs (the q update
    reads each loss on the host: one device sync per step)."""

    name = "group_dro"
    sampling = "per_env"
    graph_eager = ("Group-DRO: the weights q are updated on the host from each environment's loss before the "
                   "update's objective (one device sync per update)")
    defaults = {"weight_decay": 0.0, "groupdro_eta": 0.01, "envs_per_step": 1, "per_env_epoch": "examples"}

    def setup(self) -> None:
        self.log_q: dict[str, float] = {e: -math.log(len(self.envs)) for e in self.envs}

    def _add_env(self, env: str) -> None:
        if self.log_q:
            mean_q = sum(math.exp(v) for v in self.log_q.values()) / len(self.log_q)
            self.log_q[env] = math.log(mean_q)
        else:
            self.log_q[env] = 0.0
        self._normalise()

    def _normalise(self) -> None:
        lse = torch.logsumexp(torch.tensor(list(self.log_q.values()), dtype=torch.float64), 0).item()
        self.log_q = {e: v - lse for e, v in self.log_q.items()}

    @property
    def weights(self) -> dict[str, float]:
        return {e: math.exp(v) for e, v in self.log_q.items()}

    def update(self, minibatches: list) -> dict:
        envs = [_batch_env(mb) for mb in minibatches]
        losses = [self.loss_fn(self.model, mb).mean() for mb in minibatches]
        if not self.finite(torch.stack(losses)):   # a non-finite loss must not reach the weights q
            self.skip_step()
            return {"loss": torch.stack(losses).mean().detach()}
        eta = float(self.hparams["groupdro_eta"])
        for env, loss_e in zip(envs, losses):
            if env not in self.log_q:
                self._add_env(env)
            self.log_q[env] += eta * float(loss_e.detach())
        self._normalise()
        q = torch.tensor([math.exp(self.log_q[e]) for e in envs], dtype=losses[0].dtype, device=losses[0].device)
        loss = (q * torch.stack(losses)).sum()
        self.step(loss)
        return {"loss": loss.detach(), "risk": torch.stack(losses).mean().detach()}

    def summary(self) -> dict:
        return {"group_dro_weights": {e: round(w, 6) for e, w in sorted(self.weights.items())}}


# --------------------------------------------------------------------------- Fish


#: the reference code's Fish outer step: ε = REFERENCE_META_LR_NUMERATOR / lr / meta steps
REFERENCE_META_LR_NUMERATOR = 5e-7


def fish_meta_lr(hparams: dict, n_envs: int = 0) -> float:
    """Fish's outer step ε: ``meta_lr`` when a number; ``"reference"``: the
    reference code's 5e-7 / lr / meta_steps, its meta_steps (inner steps per
    outer step, 5) being ``fish_envs`` (``null``: ``n_envs``, every training
    environment). A reference ε outside (0, 1] (an lr below 5e-7 / meta
    steps) is an error."""
    v = hparams["meta_lr"]
    if v != "reference":
        return float(v)
    m = hparams["fish_envs"] if hparams["fish_envs"] is not None else n_envs
    if not m:
        raise ConfigError("config: field 'method_hparams.fish.meta_lr': reference needs fish_envs or the "
                          "training environments (meta steps per outer step), got none")
    eps = REFERENCE_META_LR_NUMERATOR / float(hparams["lr"]) / int(m)
    if not 0 < eps <= 1:
        raise ConfigError(f"config: field 'method_hparams.fish.meta_lr': reference gives 5e-7 / lr / {m} = "
                          f"{eps:g} at lr {hparams['lr']!r}, outside (0, 1]")
    return eps


@register
class Fish(Algorithm):
    """Fish (Shi et al. 2022), as in DomainBed.

    Each update (meta step): copy θ into an inner clone of the model; take
    one inner AdamW step on the clone per sampled environment minibatch, in
    the sampled order (``fish_envs`` environments per meta step, ref. code 5;
    inner lr = ``lr`` with the shared linear decay and gradient clipping; the
    inner optimizer's moments persist across meta steps, as in DomainBed);
    then θ ← θ + ε(θ_inner − θ), ε = ``meta_lr`` (DomainBed: 0.5;
    ``reference``: the reference code's ε = 5e-7 / lr / ``fish_envs``, e.g.
    0.005 at lr 2e-5 and 5 environments; with ``fish_envs: null``, divided by
    the number of training environments). The model's own parameters are only
    changed by the meta update."""

    name = "fish"
    sampling = "per_env"
    graph_eager = ("Fish: an update is an inner optimizer step per sampled environment on a copy of the model, "
                   "then the meta step: several minibatches of varying buckets per update")
    defaults = {"weight_decay": 0.0, "meta_lr": 0.5, "fish_envs": 5, "per_env_epoch": "examples"}

    @classmethod
    def envs_per_step(cls, hparams: dict) -> int | None:
        return hparams["fish_envs"]

    def setup(self) -> None:
        self.meta_lr = fish_meta_lr(self.hparams, len(self.envs))
        self.inner = copy.deepcopy(self.model)
        self.inner.train()
        self.pairs = [(p, q) for p, q in zip(self.model.parameters(), self.inner.parameters()) if p.requires_grad]

    def make_optimizer(self) -> torch.optim.Optimizer:
        return self.adamw([q for _, q in self.pairs], owner=self.inner)

    def update(self, minibatches: list) -> dict:
        with torch.no_grad():
            for p, q in self.pairs:
                q.copy_(p)
        inner_params = [q for _, q in self.pairs]
        losses = []
        for mb in minibatches:
            loss = self.loss_fn(self.inner, mb).mean()
            losses.append(loss.detach())
            if not self.finite(loss):   # skip this inner step (nonfinite: skip)
                continue
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.clip_and_step(inner_params)
        eps = self.meta_lr
        with torch.no_grad():
            for p, q in self.pairs:
                p.lerp_(q, eps)  # θ + ε(θ_inner − θ); exact θ_inner at ε = 1
        self.end_step()
        return {"loss": torch.stack(losses).mean()}

    def summary(self) -> dict:
        return {"fish_meta_steps": self.steps_done, "fish_meta_lr": self.meta_lr}
