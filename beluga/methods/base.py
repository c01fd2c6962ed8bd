"""The method interface and the plain (vanilla) method."""

from __future__ import annotations

from collections.abc import Callable

import torch

ALGORITHMS: dict[str, type[Algorithm]] = {}


def register(cls):
    ALGORITHMS[cls.name] = cls
    return cls


class Algorithm:
    """A method owns the model, its optimizer and scheduler.

    ``loss_fn(model, batch) -> per-example losses`` is the one loss code path
    (MFT / INV / DIR); ``update`` receives a list of minibatches (one per
    environment for environment-aware methods, a single one otherwise).
    """

    name = "base"
    #: how the training loop draws minibatches: "pooled" = one batch per step
    #: drawn from the streams in proportion to their sizes.
    sampling = "pooled"

    def __init__(self, model: torch.nn.Module, hparams: dict, loss_fn: Callable, total_steps: int):
        self.model = model
        self.hparams = hparams
        self.loss_fn = loss_fn
        self.total_steps = max(1, int(total_steps))
        self.optimizer = self.make_optimizer()
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: max(0.0, 1.0 - step / self.total_steps))

    def trainable_parameters(self):
        return [p for p in self.model.parameters() if p.requires_grad]

    def make_optimizer(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.trainable_parameters(), lr=self.hparams["lr"],
                                 weight_decay=self.hparams.get("weight_decay", 0.0))

    def step(self, loss: torch.Tensor) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.trainable_parameters(), self.hparams.get("max_grad_norm", 1.0))
        self.optimizer.step()
        self.scheduler.step()

    def update(self, minibatches: list) -> dict:
        raise NotImplementedError

    @torch.no_grad()
    def predict(self, enc) -> torch.Tensor:
        self.model.eval()
        logits = self.model(**enc).logits
        self.model.train()
        return logits


@register
class Vanilla(Algorithm):
    """Empirical risk minimisation with AdamW."""

    name = "vanilla"

    def update(self, minibatches: list) -> dict:
        losses = torch.cat([self.loss_fn(self.model, mb) for mb in minibatches])
        loss = losses.mean()
        self.step(loss)
        return {"loss": float(loss.detach())}
