"""Methods that change what is trained or how it is regularised, with pooled
minibatches like vanilla: ``l2`` (weight decay / L2-SP), ``dropout``, ``lp``
(linear probing: only the head trains) and ``lp_ft`` (full fine-tuning that
starts from an LP model: the ``lp`` method's, or its own LP stage
``lp_ft_lp``)."""

from __future__ import annotations

from beluga.core.lazy import torch
from beluga.methods.base import Vanilla, register

# --------------------------------------------------------------------------- heads

#: the classification / QA head of each supported architecture, as parameter
#: name prefixes (everything else is the encoder).
HEAD_PREFIXES: dict[str, tuple[str, ...]] = {
    "BertForSequenceClassification": ("classifier.",),
    "BertForQuestionAnswering": ("qa_outputs.",),
    "RobertaForSequenceClassification": ("classifier.dense.", "classifier.out_proj."),
    "RobertaForQuestionAnswering": ("qa_outputs.",),
    "XLMRobertaForSequenceClassification": ("classifier.dense.", "classifier.out_proj."),
    "XLMRobertaForQuestionAnswering": ("qa_outputs.",),
    "DistilBertForSequenceClassification": ("pre_classifier.", "classifier."),
    "DistilBertForQuestionAnswering": ("qa_outputs.",),
    "ElectraForSequenceClassification": ("classifier.dense.", "classifier.out_proj."),
    "ElectraForQuestionAnswering": ("qa_outputs.",),
    "MPNetForSequenceClassification": ("classifier.dense.", "classifier.out_proj."),
    "MPNetForQuestionAnswering": ("qa_outputs.",),
    "AlbertForSequenceClassification": ("classifier.",),
    "AlbertForQuestionAnswering": ("qa_outputs.",),
    # DeBERTa-v2 pools the first token through a dense layer of the head's (ContextPooler, not pre-trained)
    "DebertaV2ForSequenceClassification": ("pooler.", "classifier."),
    "DebertaV2ForQuestionAnswering": ("qa_outputs.",),
    # XLNet summarises the last token (left padding) through a dense layer, then projects
    "XLNetForSequenceClassification": ("sequence_summary.", "logits_proj."),
    "XLNetForQuestionAnsweringSimple": ("qa_outputs.",),
    # decoders: a bias-free projection of the last non-padding token
    "GPT2ForSequenceClassification": ("score.",),
    "GPT2ForQuestionAnswering": ("qa_outputs.",),
    "LlamaForSequenceClassification": ("score.",),
    "LlamaForQuestionAnswering": ("qa_outputs.",),
    # encoder-decoders: a two-layer head on the decoder's state at the last end-of-sequence token
    "BartForSequenceClassification": ("classification_head.",),
    "BartForQuestionAnswering": ("qa_outputs.",),
    "T5ForSequenceClassification": ("classification_head.",),
    "T5ForQuestionAnswering": ("qa_outputs.",),
}


def head_parameter_names(model: torch.nn.Module) -> list[str]:
    """Names of the head's parameters (``model.named_parameters()`` order).

    The head is named explicitly per architecture (:data:`HEAD_PREFIXES`):
    BERT's ``classifier.*`` / ``qa_outputs.*``, RoBERTa's two-layer
    ``classifier.dense`` + ``classifier.out_proj``, DistilBERT's
    ``pre_classifier`` + ``classifier``... An unknown architecture, or a
    prefix matching no parameter, is an error (never a silent guess)."""
    arch = type(model).__name__
    if arch not in HEAD_PREFIXES:
        raise ValueError(f"linear probing: architecture {arch!r} has no known head "
                         f"(known: {', '.join(sorted(HEAD_PREFIXES))}); add it to HEAD_PREFIXES")
    prefixes = HEAD_PREFIXES[arch]
    names = [n for n, _ in model.named_parameters()]
    for pre in prefixes:
        if not any(n.startswith(pre) for n in names):
            raise ValueError(f"linear probing: {arch} has no parameter under {pre!r}")
    return [n for n in names if n.startswith(prefixes)]


# --------------------------------------------------------------------------- dropout

#: config fields of hidden-state dropout (every family's name for it; classifier dropout included)
_HIDDEN_FIELDS = ("hidden_dropout_prob", "dropout", "seq_classif_dropout", "qa_dropout", "pooler_dropout",
                  "resid_pdrop", "embd_pdrop", "summary_first_dropout", "summary_last_dropout", "dropout_rate",
                  "activation_dropout", "classifier_dropout_prob")
#: config fields of attention-probability dropout
_ATTENTION_FIELDS = ("attention_probs_dropout_prob", "attention_dropout", "attn_pdrop")
#: attention modules whose one ``dropout`` serves the attention probabilities and the hidden states alike
#: (XLNet's config has one ``dropout``): set to the hidden rate
_SHARED_DROPOUT = frozenset({"XLNetRelativeAttention"})
#: dropout rates some families keep as float attributes used by ``torch.nn.functional.dropout`` (BART's,
#: T5's and Llama's attention, BART's layers), not as ``torch.nn.Dropout`` modules; ``layerdrop`` is not one
_FLOAT_DROPOUTS = ("dropout", "attention_dropout", "activation_dropout")


def _is_attention_module(parent: torch.nn.Module) -> bool:
    """The module that computes attention probabilities (``BertSelfAttention``, ``DistilBertSelfAttention``,
    DeBERTa's ``DisentangledSelfAttention``, ``T5Attention``, ``BartAttention``, ``LlamaAttention``), not a
    layer around it (T5's ``T5LayerSelfAttention``: its dropout is on the residual branch)."""
    name = type(parent).__name__
    return name.endswith("Attention") and "Layer" not in name and name not in _SHARED_DROPOUT


def _is_attention_dropout(parent: torch.nn.Module, attr: str) -> bool:
    """Dropout on attention probabilities: GPT-2's ``attn_dropout``, ALBERT's ``attention_dropout``, the
    ``dropout`` of an attention module (:func:`_is_attention_module`); not DeBERTa's ``pos_dropout`` (its
    config's hidden rate) nor an attention block's ``output_dropout`` / ``resid_dropout``."""
    a = attr.lower()
    return "attn" in a or "attention" in a or (a == "dropout" and _is_attention_module(parent))


def set_dropout(model: torch.nn.Module, hidden: float, attention: float) -> dict[str, float]:
    """Set every dropout of an already built model (attention-probability dropouts to ``attention``, all
    others, classifier included, to ``hidden``) and the matching config fields of every family
    (:data:`_HIDDEN_FIELDS`, :data:`_ATTENTION_FIELDS`). Dropouts are ``torch.nn.Dropout`` modules and the
    float rates some families keep on their modules (:data:`_FLOAT_DROPOUTS`). Returns {name: p}."""
    out = {}
    for pname, parent in model.named_modules():
        for attr, child in parent.named_children():
            if isinstance(child, torch.nn.Dropout):
                child.p = float(attention if _is_attention_dropout(parent, attr) else hidden)
                out[f"{pname}.{attr}" if pname else attr] = child.p
        for attr in _FLOAT_DROPOUTS:
            v = vars(parent).get(attr)
            if isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool)):
                p = float(attention if attr == "attention_dropout" or _is_attention_module(parent) else hidden)
                setattr(parent, attr, p)
                out[f"{pname}.{attr}" if pname else attr] = p
    cfg = getattr(model, "config", None)
    if cfg is not None:
        for f in _HIDDEN_FIELDS:
            if hasattr(cfg, f):
                setattr(cfg, f, float(hidden))
        if getattr(cfg, "classifier_dropout", None) is not None:
            cfg.classifier_dropout = float(hidden)
        for f in _ATTENTION_FIELDS:
            if hasattr(cfg, f):
                setattr(cfg, f, float(attention))
    return out


# --------------------------------------------------------------------------- methods


@register
class L2(Vanilla):
    """A stronger L2 penalty, λ = ``l2_lambda`` (0.1).

    Default (ref. code: the Trainer's ``weight_decay = 0.1``): AdamW's
    decoupled weight decay λ toward zero, θ ← θ − lr·λ·θ at every step, on
    every parameter but biases and normalization weights (the Trainer's
    parameter groups, found by module type: :func:`no_decay_parameters`);
    ``l2_decay_all=True`` decays every parameter. ``l2_sp=True``: L2-SP, the penalty
    λ·||θ − θ0||² added to the loss (weight decay 0), toward θ0 = the weights
    the trainable parameters had when the method was built (the start model:
    the pre-trained encoder, or the IID model in IID→T), or ``reference_state``
    when given (name -> tensor; parameters absent from it use their start
    value)."""

    name = "l2"
    # AdamW decoupled weight decay l2_lambda toward 0; l2_sp: penalty
    # l2_lambda * ||θ - θ0||² toward the start weights (weight decay 0)
    defaults = {"l2_lambda": 0.1, "l2_sp": False, "l2_decay_all": False}

    def setup(self) -> None:
        self.anchor: dict[str, torch.Tensor] = {}
        if not self.hparams["l2_sp"]:
            return
        ref = self.reference_state or {}
        for n, p in self.model.named_parameters():
            if p.requires_grad:
                src = ref.get(n, p)
                if tuple(src.shape) != tuple(p.shape):
                    raise ValueError(f"l2_sp: reference weight {n!r} has shape {tuple(src.shape)}, "
                                     f"the model's {tuple(p.shape)}")
                self.anchor[n] = src.detach().clone().to(p.device, p.dtype)

    def make_optimizer(self) -> torch.optim.Optimizer:
        wd = 0.0 if self.hparams["l2_sp"] else float(self.hparams["l2_lambda"])
        return self.adamw(self.trainable_parameters(), weight_decay=wd, decay_all=self.hparams["l2_decay_all"])

    def sp_penalty(self) -> torch.Tensor:
        terms = [((p - self.anchor[n]) ** 2).sum() for n, p in self.model.named_parameters() if n in self.anchor]
        return torch.stack(terms).sum() if terms else torch.zeros(())

    def objective(self, losses: torch.Tensor) -> dict:
        """The mean loss; with ``l2_sp`` plus λ·||θ − θ0||² (``risk``: the mean loss, ``l2_sp_penalty``)."""
        risk = losses.mean()
        if not self.hparams["l2_sp"]:
            return {"loss": risk}
        penalty = self.sp_penalty()
        return {"loss": risk + float(self.hparams["l2_lambda"]) * penalty, "risk": risk, "l2_sp_penalty": penalty}


@register
class Dropout(Vanilla):
    """Hidden and attention dropout raised to ``hidden_dropout`` /
    ``attention_dropout`` (0.3; BERT's default is 0.1).

    Build the model with :meth:`config_overrides` (``load_model(...,
    config_overrides=Dropout.config_overrides(hparams))``); on construction the
    method also sets the p of every ``torch.nn.Dropout`` of the model and the
    config fields (:func:`set_dropout`), so a model loaded from a folder
    without the overrides (e.g. the IID model) gets the rates on every layer
    too."""

    name = "dropout"
    defaults = {"weight_decay": 0.0, "hidden_dropout": 0.3, "attention_dropout": 0.3}

    @classmethod
    def config_overrides(cls, hparams: dict | None = None, model_type: str = "bert") -> dict:
        hp = hparams if hparams is not None else cls.hparam_defaults()
        h, a = float(hp["hidden_dropout"]), float(hp["attention_dropout"])
        if model_type == "distilbert":
            return {"dropout": h, "attention_dropout": a, "seq_classif_dropout": h, "qa_dropout": h}
        return {"hidden_dropout_prob": h, "attention_probs_dropout_prob": a}

    def setup(self) -> None:
        self.dropout_rates = set_dropout(self.model, self.hparams["hidden_dropout"], self.hparams["attention_dropout"])

    def summary(self) -> dict:
        return {"dropout_modules": len(self.dropout_rates),
                "dropout_p": sorted(set(self.dropout_rates.values()))}


@register
class LP(Vanilla):
    """Linear probing: the encoder is frozen (``requires_grad=False``), only
    the head (:func:`head_parameter_names`) trains; the optimizer holds the
    head's parameters only.

    Its own learning rate ``lr`` (1e-3) replaces the suite stage's: a head
    alone needs a larger one (the reference code tunes LP over lr {1e-4, 5e-4,
    1e-3}, not the fine-tuning grid; ``selection.method_grid.lp``). A grid
    with ``lr`` values replaces it in turn."""

    name = "lp"
    defaults = {"weight_decay": 0.0, "lr": 1e-3}

    def setup(self) -> None:
        head = set(head_parameter_names(self.model))
        for n, p in self.model.named_parameters():
            p.requires_grad_(n in head)
        self.head_names = sorted(head)

    def summary(self) -> dict:
        return {"trainable_parameters": self.head_names}


@register
class LPFT(Vanilla):
    """LP-FT, second stage: plain full fine-tuning (vanilla AdamW, every
    parameter trainable, a fresh optimizer) of a model whose head was first
    trained by ``lp``.

    The two stages are two jobs: the ``lp`` method's trained model (with LP's
    own hyper-parameters) is this method's START model (``start_method``);
    this class itself is vanilla (it only makes sure no parameter is left
    frozen).

    The second stage's hyper-parameters: ``ft_hparams_from: own`` (default)
    selects them like any method (its own grid trials, or the suite stage's
    values); ``vanilla`` takes the vanilla method's selection of the same
    configuration and fold (the reference code). ``ft_epochs`` (null = as
    selected) then fixes the number of epochs (the reference code: 1.5).

    The first stage: ``lp_epochs: null`` (default) starts from the ``lp``
    method's own model of the fold (LP's selected hyper-parameters, epochs
    included: one LP job serves both methods); a number (the reference code:
    1.5) starts from the model of :class:`LPStage` (``lp_ft_lp``): LP with
    LP's selected lr and batch size, trained ``lp_epochs`` epochs, its own job."""

    name = "lp_ft"
    defaults = {"weight_decay": 0.0, "ft_hparams_from": "own", "ft_epochs": None, "lp_epochs": None}
    #: the method whose trained model is this method's start model (``lp_epochs: null``)
    start_method = "lp"

    @classmethod
    def start_from(cls, hparams: dict) -> str:
        return cls.start_method if hparams["lp_epochs"] is None else LPStage.name

    @classmethod
    def selection_method(cls, hparams: dict) -> str:
        return cls.name if hparams["ft_hparams_from"] == "own" else hparams["ft_hparams_from"]

    @classmethod
    def fixed_epochs(cls, hparams: dict) -> float | None:
        return hparams["ft_epochs"]

    def setup(self) -> None:
        for p in self.model.parameters():
            p.requires_grad_(True)


@register
class LPStage(LP):
    """LP-FT's first stage when ``lp_ft``'s ``lp_epochs`` is set (the reference
    code: 1.5): linear probing (:class:`LP`) with LP's hyper-parameters
    (``training.method_hparams.lp``) and LP's selection (lr, batch size),
    trained ``lp_epochs`` epochs (fractional: ceil(lp_epochs × updates per
    epoch) updates). A job of its own, trained only as ``lp_ft``'s start model
    (``internal``: not a method a config lists)."""

    name = "lp_ft_lp"
    internal = True
    defaults = {**LP.defaults, "lp_epochs": None}

    #: its hyper-parameters come from lp's block (all) and lp_ft's (lp_epochs)
    hparams_from = {"lp": None, "lp_ft": ("lp_epochs",)}

    @classmethod
    def selection_method(cls, hparams: dict) -> str:
        return LP.name

    @classmethod
    def fixed_epochs(cls, hparams: dict) -> float | None:
        return hparams["lp_epochs"]
