"""``lora``: low-rank adaptation (Hu et al., ICLR 2022) through ``peft``, the
project's addition to the paper's method table (docs/TRAINING_METHODS.md,
docs/DEVIATIONS.md).

The base weights are frozen; every module named by ``lora_target_modules``
(module-name suffixes; null = peft's default for the model type) gets a
trainable update ``(lora_alpha / lora_r) · B A`` of rank ``lora_r`` (A random,
B zero: training starts from the start model's function), with dropout
``lora_dropout`` on its input; the classification / QA / regression head
(:func:`beluga.methods.head_parameter_names`) is trained in full (peft's
``modules_to_save``) and never gets an adapter. The optimizer holds the
adapters and the head's copy only. When training ends (:meth:`LoRA.finish`)
the adapters are merged into the base weights and the wrappers removed
(``merge_and_unload``): the model in memory, and the one ``save_model``
writes, is a plain model of the base architecture with its own parameter
names, so every consumer (prediction, ``test``, an IID→T start) loads it as
any other. ``peft`` is imported only when a LoRA run is built.
"""

from __future__ import annotations

import warnings

from beluga.core.errors import ConfigError
from beluga.core.lazy import peft, torch
from beluga.methods.base import Vanilla, register
from beluga.methods.regularization import HEAD_PREFIXES, head_parameter_names

#: peft's adapter name (one adapter per run)
ADAPTER = "default"


def head_modules(model: torch.nn.Module) -> list[str]:
    """The head's module names (the modules owning :func:`head_parameter_names`), in model order."""
    return list(dict.fromkeys(n.rsplit(".", 1)[0] for n in head_parameter_names(model)))


#: the project's default target modules for model types peft 0.21 maps none for (peft's own map wins where it
#: has one): the attention's query and value projections, as peft's defaults for BERT-likes; XLNet's query /
#: value are raw parameters (no Linear module to wrap), so its feed-forward layers get the adapters
#: (docs/DEVIATIONS.md, "LoRA")
PROJECT_TARGET_MODULES: dict[str, list[str]] = {
    "albert": ["query", "value"],
    "distilbert": ["q_lin", "v_lin"],
    "mpnet": ["q", "v"],
    "xlnet": ["layer_1", "layer_2"],
}


def target_modules(model: torch.nn.Module, given: list[str] | None) -> list[str]:
    """The module-name suffixes that get adapters: ``given``, or peft's
    default for the model's ``model_type``
    (``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``: BERT's
    ``query`` / ``value``, GPT-2's ``c_attn``...), else the project's
    (:data:`PROJECT_TARGET_MODULES`). A model type neither maps is refused
    in one line."""
    if given is not None:
        return list(given)
    defaults = {**PROJECT_TARGET_MODULES, **peft.utils.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING}
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in defaults:
        head = tuple(f"{m}." for m in head_modules(model)) if type(model).__name__ in HEAD_PREFIXES else ()
        linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                         if isinstance(m, torch.nn.Linear) and not f"{n}.".startswith(head)})
        raise ConfigError(f"model type {model_type!r} ({type(model).__name__}): field "
                          "'training.method_hparams.lora.lora_target_modules': neither peft nor the project has "
                          "default LoRA target modules for this model type; name them (module-name suffixes, e.g. "
                          "the attention's query and value projections; its Linear modules: "
                          f"{', '.join(linear) or 'none'})")
    return list(defaults[model_type])


@register
class LoRA(Vanilla):
    """LoRA: frozen base weights, rank-``lora_r`` adapters on
    ``lora_target_modules`` (null: peft's default for the model type) scaled
    by ``lora_alpha / lora_r``, ``lora_dropout`` on the adapters' input, the
    head trained in full; AdamW over adapters and head only, merged into the
    base weights when training ends (module docstring).

    Defaults: r = 8 and alpha = 8 with the query / value projections (BERT's
    peft default), the LoRA paper's RoBERTa-base GLUE setting; dropout 0
    (peft's default); ``lr`` 5e-4 of its own (the LoRA paper's RoBERTa-base
    GLUE rates are 4e-4 to 5e-4: adapters need more than the suite stage's
    full fine-tuning rate), which a grid with ``lr`` values replaces, as for
    ``lp``. Not composable with IRM / Group-DRO / Fish: each is a method of
    its own (a config lists method names; none is "irm with LoRA")."""

    name = "lora"
    defaults = {"weight_decay": 0.0, "lr": 5e-4, "lora_r": 8, "lora_alpha": 8, "lora_dropout": 0.0,
                "lora_target_modules": None}

    def setup(self) -> None:
        head = head_modules(self.model)
        targets = target_modules(self.model, self.hparams["lora_target_modules"])
        cfg = peft.LoraConfig(r=int(self.hparams["lora_r"]), lora_alpha=self.hparams["lora_alpha"],
                              lora_dropout=float(self.hparams["lora_dropout"]), target_modules=targets,
                              modules_to_save=head, exclude_modules=head, bias="none",
                              # GPT-2's Conv1D stores its weight transposed (peft would set this itself, warning)
                              fan_in_fan_out=any(type(m).__name__ == "Conv1D" and n.endswith(tuple(targets))
                                                 for n, m in self.model.named_modules()))
        total = sum(p.numel() for p in self.model.parameters())
        try:
            with warnings.catch_warnings():   # transformers' deprecation notice of a name peft reads
                warnings.simplefilter("ignore", FutureWarning)
                self._peft = peft.get_peft_model(self.model, cfg, adapter_name=ADAPTER)
        except ValueError as e:   # peft's NoMatchingPeftModuleError: no module ends in a target name
            raise ConfigError(f"model type {getattr(self.model.config, 'model_type', '?')!r} "
                              f"({type(self.model).__name__}): field 'training.method_hparams.lora."
                              f"lora_target_modules': no module outside the head {head} is named {targets} or "
                              f"ends in one of them (peft: {str(e).splitlines()[0][:120]})") from None
        trainable = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        saved = {n.split(f".modules_to_save.{ADAPTER}.")[0] for n, _ in trainable if ".modules_to_save." in n}
        stray = [n for n, _ in trainable if ".lora_" not in n and ".modules_to_save." not in n]
        if stray or saved != set(head):   # peft matches modules_to_save by suffix: exactly the head, or stop
            raise ValueError(f"lora: {type(self.model).__name__}: the trainable parameters are not the adapters "
                             f"and the head {head} (trained in full: {sorted(saved)}; others: {stray[:3]})")
        self.lora_info = {"trainable_parameters": sum(p.numel() for _, p in trainable),
                          "base_parameters": total, "lora_r": int(self.hparams["lora_r"]),
                          "lora_alpha": self.hparams["lora_alpha"], "lora_dropout": self.hparams["lora_dropout"],
                          "target_modules": targets, "head_modules": head,
                          "adapted_modules": sum(1 for m in self.model.modules()
                                                 if isinstance(m, peft.tuners.lora.LoraLayer))}

    def summary(self) -> dict:
        return dict(self.lora_info)

    def finish(self) -> None:
        """Merge the adapters into the base weights and put the trained head
        in the head's place (``merge_and_unload``, in place: the caller's model
        object); every parameter trainable again, as a loaded model's."""
        merged = self._peft.merge_and_unload()
        if merged is not self.model:
            raise RuntimeError("lora: peft's merge_and_unload returned another model than the one trained")
        if hasattr(self.model, "peft_config"):
            del self.model.peft_config
        for p in self.model.parameters():
            p.requires_grad_(True)
