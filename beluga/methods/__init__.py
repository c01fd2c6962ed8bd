"""Generalization methods, DomainBed-style: each method is a class with
``update(minibatches)`` and ``predict``, found by name in a registry, with its
defaults in one place (``DEFAULT_HPARAMS``).

Methods (METHOD.md, "Generalization methods"): ``vanilla``, ``l2``,
``dropout``, ``lp``, ``lp_ft`` (pooled minibatches, like vanilla) and
``irm``, ``group_dro``, ``fish`` (one minibatch per environment per step).
"""

from __future__ import annotations

from beluga.errors import ConfigError
from beluga.methods.base import ALGORITHMS, Algorithm, Vanilla

# Every method's own hyper-parameters, in one place. Shared training
# hyper-parameters (lr, batch_size, epochs; optional max_grad_norm = 1.0,
# detach_inv_orig = false) come from the config.
#
# Per-environment methods (irm, group_dro, fish) also take
#   per_env_epoch: "examples" (default: an epoch = ceil(items / (envs per step ×
#                  batch_size)) updates, as many examples, and so about the
#                  compute, of a pooled epoch: the paper's "same compute budget
#                  across all methods", the reference code's epoch length) or
#                  "steps" (an epoch = ceil(items / batch_size) updates, the
#                  number of updates of pooled sampling, each update taking one
#                  minibatch per sampled environment: k times the examples);
#   envs_per_step: environments per update, None = all (fish: fish_envs).
# Reference code (peluz/beluga behaviour_training.py): IRM takes every
# environment at each step and an epoch of ceil(n / sum of the batch sizes)
# steps; Group-DRO one sampled environment per step, ceil(n / batch) steps;
# Fish 5 environments per meta step, ceil(n / (batch × 5)) meta steps. The
# earlier default of this project (every environment at every step, "steps"
# epochs) is per_env_epoch: steps with envs_per_step: null.
DEFAULT_HPARAMS: dict[str, dict] = {
    "vanilla": {"weight_decay": 0.0},
    # AdamW decoupled weight decay l2_lambda toward 0; l2_sp: penalty
    # l2_lambda * ||θ - θ0||² toward the start weights (weight decay 0)
    "l2": {"l2_lambda": 0.1, "l2_sp": False},
    "dropout": {"weight_decay": 0.0, "hidden_dropout": 0.3, "attention_dropout": 0.3},
    "lp": {"weight_decay": 0.0},
    "lp_ft": {"weight_decay": 0.0},
    "irm": {"weight_decay": 0.0, "irm_lambda": 1e4, "irm_penalty_anneal_frac": 0.2,
            "irm_penalty_anneal_iters": None, "irm_penalty_estimate": "full", "irm_rescale": False,
            "envs_per_step": None, "per_env_epoch": "examples"},
    "group_dro": {"weight_decay": 0.0, "groupdro_eta": 0.01, "envs_per_step": 1, "per_env_epoch": "examples"},
    "fish": {"weight_decay": 0.0, "meta_lr": 0.5, "fish_envs": 5, "per_env_epoch": "examples"},
}

# the method modules register their classes on import
from beluga.methods.environments import IRM, Fish, GroupDRO, irm_penalty  # noqa: E402
from beluga.methods.regularization import L2, LP, LPFT, Dropout, head_parameter_names, set_dropout  # noqa: E402


def get_algorithm(name: str) -> type[Algorithm]:
    if name not in ALGORITHMS:
        raise ConfigError(f"config: field 'methods': unknown method {name!r} "
                          f"(implemented: {', '.join(sorted(ALGORITHMS))})")
    return ALGORITHMS[name]


def method_hparams(name: str, overrides: dict | None = None) -> dict:
    """The method's defaults with ``overrides`` on top (unknown keys and bad values are errors)."""
    get_algorithm(name)
    hp = dict(DEFAULT_HPARAMS.get(name, {}))
    for k, v in (overrides or {}).items():
        if k not in hp:
            raise ConfigError(f"config: field 'method_hparams.{name}.{k}': unknown hyper-parameter "
                              f"(known: {', '.join(sorted(hp)) or 'none'})")
        hp[k] = v
    check_method_hparams(name, hp)
    return hp


_CHOICES = {"per_env_epoch": ("steps", "examples"), "irm_penalty_estimate": ("full", "split")}
_INT_OR_NONE_MIN = {"envs_per_step": 1, "fish_envs": 1, "irm_penalty_anneal_iters": 0}
_NON_NEGATIVE = ("weight_decay", "l2_lambda", "irm_lambda", "groupdro_eta")
_UNIT = ("hidden_dropout", "attention_dropout", "irm_penalty_anneal_frac")


def check_method_hparams(name: str, hp: dict) -> None:
    """Value checks of the method hyper-parameters present in ``hp``."""
    def bad(k, why):
        raise ConfigError(f"config: field 'method_hparams.{name}.{k}': {why}, got {hp[k]!r}")

    for k, v in hp.items():
        if k in _CHOICES and v not in _CHOICES[k]:
            bad(k, f"must be one of {', '.join(_CHOICES[k])}")
        if k in _INT_OR_NONE_MIN and v is not None and (isinstance(v, bool) or not isinstance(v, int)
                                                         or v < _INT_OR_NONE_MIN[k]):
            bad(k, f"must be null or a {'positive' if _INT_OR_NONE_MIN[k] else 'non-negative'} integer")
        if k in _NON_NEGATIVE and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            bad(k, "must be a non-negative number")
        if k in _UNIT and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
            bad(k, "must be a number in [0, 1]")
        if k == "meta_lr" and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1):
            bad(k, "must be a number in (0, 1]")
        if k in ("l2_sp", "irm_rescale") and not isinstance(v, bool):
            bad(k, "must be true or false")


__all__ = ["ALGORITHMS", "Algorithm", "DEFAULT_HPARAMS", "Dropout", "Fish", "GroupDRO", "IRM", "L2", "LP", "LPFT",
           "Vanilla", "check_method_hparams", "get_algorithm", "head_parameter_names", "irm_penalty",
           "method_hparams", "set_dropout"]
