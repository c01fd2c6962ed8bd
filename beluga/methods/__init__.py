"""Generalization methods, DomainBed-style: each method is a class with
``update(minibatches)`` and ``predict``, found by name in a registry, with its
defaults in one place (``DEFAULT_HPARAMS``)."""

from __future__ import annotations

from beluga.errors import ConfigError
from beluga.methods.base import ALGORITHMS, Algorithm, Vanilla

# Every method's own hyper-parameters, in one place. Shared training
# hyper-parameters (lr, batch size, epochs) come from the config.
DEFAULT_HPARAMS: dict[str, dict] = {
    "vanilla": {"weight_decay": 0.0},
}


def get_algorithm(name: str) -> type[Algorithm]:
    if name not in ALGORITHMS:
        raise ConfigError(f"config: field 'methods': unknown method {name!r} "
                          f"(implemented: {', '.join(sorted(ALGORITHMS))})")
    return ALGORITHMS[name]


def method_hparams(name: str, overrides: dict | None = None) -> dict:
    get_algorithm(name)
    hp = dict(DEFAULT_HPARAMS.get(name, {}))
    for k, v in (overrides or {}).items():
        if k not in hp:
            raise ConfigError(f"config: field 'method_hparams.{name}.{k}': unknown hyper-parameter "
                              f"(known: {', '.join(sorted(hp)) or 'none'})")
        hp[k] = v
    return hp


__all__ = ["ALGORITHMS", "Algorithm", "DEFAULT_HPARAMS", "Vanilla", "get_algorithm", "method_hparams"]
