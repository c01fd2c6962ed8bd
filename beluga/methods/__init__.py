"""Generalization methods, DomainBed-style: each method is a class with
``update(minibatches)`` and ``predict``, found by name in a registry; each
class owns its hyper-parameters' defaults (``defaults``, with the shared ones
of :class:`Algorithm`), merged once, by :func:`method_hparams`, when the
job's settings are built (``DEFAULT_HPARAMS`` is the registry's view of them).

Methods (docs/PROCEDURE.md, §4): ``vanilla``, ``l2``,
``dropout``, ``lp``, ``lp_ft`` (pooled minibatches, like vanilla) and
``irm``, ``group_dro``, ``fish`` (one minibatch per environment per step),
``lora`` (low-rank adapters through peft, merged when training ends: the
project's addition to the paper's methods);
``lp_ft_lp`` (LP-FT's own LP stage, with ``lp_ft``'s ``lp_epochs``) is
registered too but ``internal``: no config lists it (:data:`PUBLIC_METHODS`).
"""

from __future__ import annotations

from beluga.core.errors import ConfigError
from beluga.methods.base import ALGORITHMS, Algorithm, Vanilla

# the method modules register their classes on import
from beluga.methods.environments import IRM, Fish, GroupDRO, fish_meta_lr, irm_penalty  # noqa: E402
from beluga.methods.lora import LoRA  # noqa: E402
from beluga.methods.regularization import (  # noqa: E402
    L2,
    LP,
    LPFT,
    Dropout,
    LPStage,
    head_parameter_names,
    set_dropout,
)

#: every method's complete defaults (shared + own), by name: a view of the classes' ``defaults``
DEFAULT_HPARAMS: dict[str, dict] = {name: cls.hparam_defaults() for name, cls in sorted(ALGORITHMS.items())}


#: the methods a config may list (every registered one but the internal stages)
PUBLIC_METHODS: tuple[str, ...] = tuple(sorted(n for n, c in ALGORITHMS.items() if not c.internal))


def get_algorithm(name: str) -> type[Algorithm]:
    if name not in ALGORITHMS:
        raise ConfigError(f"config: field 'methods': unknown method {name!r} "
                          f"(implemented: {', '.join(sorted(ALGORITHMS))})")
    return ALGORITHMS[name]


def method_hparams(name: str, overrides: dict | None = None) -> dict:
    """The method's defaults with ``overrides`` on top (unknown keys and bad values are errors)."""
    hp = get_algorithm(name).hparam_defaults()
    for k, v in (overrides or {}).items():
        if k not in hp and k.startswith("lora_"):
            raise ConfigError(f"config: field 'method_hparams.{name}.{k}': LoRA is the method 'lora' of its own; "
                              f"it does not compose with {name} (list lora in methods and set its "
                              "hyper-parameters under method_hparams.lora)")
        if k not in hp:
            raise ConfigError(f"config: field 'method_hparams.{name}.{k}': unknown hyper-parameter "
                              f"(known: {', '.join(sorted(hp)) or 'none'})")
        hp[k] = v
    check_method_hparams(name, hp)
    return hp


def config_hparams(name: str, block: dict | None) -> dict:
    """A method's complete hyper-parameters from a config's
    ``training.method_hparams`` block: :func:`method_hparams` of its own entry,
    or, for a method whose class names other methods' entries
    (``hparams_from``: LP-FT's LP stage), the keys taken from theirs (each
    checked under its own name)."""
    block = block or {}
    cls = get_algorithm(name)
    if cls.hparams_from is None:
        return method_hparams(name, block.get(name))
    hp = cls.hparam_defaults()
    for source, keys in cls.hparams_from.items():
        full = method_hparams(source, block.get(source))
        hp.update({k: full[k] for k in (full if keys is None else keys)})
    check_method_hparams(name, hp)
    return hp


_CHOICES = {"per_env_epoch": ("steps", "examples"), "irm_penalty_estimate": ("full", "split"),
            "ft_hparams_from": ("own", "vanilla"), "irm_dummy": ("scalar", "per_class")}
_INT_OR_NONE_MIN = {"envs_per_step": 1, "fish_envs": 1, "irm_penalty_anneal_iters": 0}
_NON_NEGATIVE = ("weight_decay", "l2_lambda", "irm_lambda", "groupdro_eta")
_UNIT = ("hidden_dropout", "attention_dropout", "irm_penalty_anneal_frac", "lora_dropout")
_POSITIVE = ("lr", "epochs", "ft_epochs", "lp_epochs")   # epochs may be fractional (LP-FT's 1.5); ft_ / lp_ may be null


def _number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float))


def check_method_hparams(name: str, hp: dict) -> None:
    """Value checks of the hyper-parameters present in ``hp``: the method's
    own and the shared ``lr`` (> 0), ``batch_size`` (a positive integer) and
    ``epochs`` (> 0). Called on the method's keys when the job's settings are
    built (:func:`method_hparams`) and once more, on the run's complete dict,
    when training starts (``beluga.train.loop.train``): the one run-time check
    of the hyper-parameters. Keys the method does not own (lr, batch_size and
    epochs of the training stage, or a grid point) are named as hyper-parameters."""
    own = get_algorithm(name).hparam_defaults()

    def bad(k, why):
        where = f"field 'method_hparams.{name}.{k}'" if k in own else f"method {name}: hyper-parameter '{k}'"
        raise ConfigError(f"config: {where}: {why}, got {hp[k]!r}")

    for k, v in hp.items():
        if k in _CHOICES and v not in _CHOICES[k]:
            bad(k, f"must be one of {', '.join(_CHOICES[k])}")
        if k in _INT_OR_NONE_MIN and v is not None and (isinstance(v, bool) or not isinstance(v, int)
                                                         or v < _INT_OR_NONE_MIN[k]):
            bad(k, f"must be null or a {'positive' if _INT_OR_NONE_MIN[k] else 'non-negative'} integer")
        if k in _NON_NEGATIVE and (not _number(v) or v < 0):
            bad(k, "must be a non-negative number")
        if k in _UNIT and (not _number(v) or not 0 <= v <= 1):
            bad(k, "must be a number in [0, 1]")
        nullable = k in ("ft_epochs", "lp_epochs")
        if k in _POSITIVE and not (nullable and v is None) and (not _number(v) or not v > 0):
            bad(k, "must be a positive number" + (" or null" if nullable else ""))
        if k == "batch_size" and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            bad(k, "must be a positive integer")
        if k == "meta_lr" and v != "reference" and (not _number(v) or not 0 < v <= 1):
            bad(k, "must be a number in (0, 1] or reference")
        if k in ("l2_sp", "l2_decay_all", "irm_rescale", "irm_reset_optimizer") and not isinstance(v, bool):
            bad(k, "must be true or false")
        if k == "lora_r" and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            bad(k, "must be a positive integer (the adapters' rank)")
        if k == "lora_dropout" and _number(v) and v >= 1:   # all adapter inputs dropped: no gradient, LP in effect
            bad(k, "must be a number in [0, 1) (at 1 the adapters never see an input and never train)")
        if k == "lora_alpha" and (not _number(v) or not v > 0):
            bad(k, "must be a positive number (the update is scaled by lora_alpha / lora_r)")
        if k == "lora_target_modules" and v is not None and (
                not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v)
                or len(set(v)) != len(v)):
            bad(k, "must be null (peft's default for the model type) or a non-empty list of distinct module-name "
                   "suffixes")
    if hp.get("meta_lr") == "reference" and "lr" in hp and hp.get("fish_envs") is not None:
        fish_meta_lr(hp)   # the reference's ε = 5e-7 / lr / fish_envs must lie in (0, 1]


__all__ = ["ALGORITHMS", "Algorithm", "DEFAULT_HPARAMS", "Dropout", "Fish", "GroupDRO", "IRM", "L2", "LP", "LPFT",
           "LPStage", "LoRA", "PUBLIC_METHODS", "Vanilla", "check_method_hparams", "config_hparams", "fish_meta_lr",
           "get_algorithm", "head_parameter_names", "irm_penalty", "method_hparams", "set_dropout"]
