"""The settings of one training job, as one object.

A :class:`FoldRun` is built once per job while the DAG is built
(``beluga.workflow.runs.Runs.settings``, from the wildcards and the validated
config: :func:`fold_run`), travels to the job as
one parameter (a plain dict: :meth:`FoldRun.to_dict`), and is what the
training loop reads (``beluga.train.loop.train(model, tokenizer, streams, run)``).
Its hyper-parameters are complete when it is built: :func:`job_hparams` is the
one place a hyper-parameter is rewritten.

Adding a training option touches three places: the schema (a key of the
``training`` block, with its default), a field here whose metadata says where
it comes from (``source="training"``: the task's training block;
``source="config"``: a top-level key), and the code that uses it. Nothing in
the rules or the workflow scripts changes: :func:`fold_run` copies every
sourced field from the config.

Light: no torch (built while the DAG is built).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from beluga.methods import get_algorithm


def _from(source: str, key: str | None = None):
    """Field metadata: the config block (``training`` or top-level ``config``) and key it is read from."""
    return {"source": source, "key": key}


@dataclass(frozen=True)
class FoldRun:
    """One training job: the IID model, a fold of a configuration with a
    method, or a grid trial of one."""

    task: str                    # the task's id in the config (paths, messages)
    task_type: str               # sent / para / read
    configuration: str           # iid (the IID model) or a training configuration: iid_to_t, ...
    method: str
    partition: str               # standard (the IID model), seen, func, class, type
    fold: str                    # the fold's id (all for standard / seen)
    held_out: tuple[str, ...]    # functionalities the run is scored on (all of them for standard / seen)
    functionalities: tuple[str, ...]   # every functionality of the task's suite, in suite order
    model: str                   # the pre-trained model spec
    start_label: str             # what training starts from, for the run record
    hparams: dict                # lr, batch_size, epochs and the method's hyper-parameters, complete
    checkpoint_dir: str | None   # epoch checkpoints (outside the job's outputs)
    seed: int                    # the training seed: the job's seed of ``seeds`` (the base ``seed`` by default)
    # the seed of the samples drawn while training (the i.i.d. mix): the base seed for every training seed
    sample_seed: int = field(metadata=_from("config", "seed"))
    precision: str = field(metadata=_from("config"))
    threads: int                 # torch threads: job_threads (the IID model: iid_job_threads when set)
    checkpoint_every_s: float = field(metadata=_from("config"))
    max_length: int = field(metadata=_from("training"))
    doc_stride: int = field(metadata=_from("training"))
    iid_in_mix: int | None = field(metadata=_from("training"))
    dir_train_slice: bool = field(metadata=_from("training"))
    qa_answer_match: str = field(metadata=_from("training"))
    qa_inv_scope: str = field(metadata=_from("training"))
    eq_or_not_negative_target: str = field(metadata=_from("training"))   # SENT "Q & A: no" label 1
    nonfinite: str = field(metadata=_from("training"))
    compile: str = field(metadata=_from("training"))   # off / default / graphs (beluga/model/compiling.py)
    batching: str = field(metadata=_from("training"))  # project / reference (beluga/train/batches.py cases_per_batch)
    gpus: int = field(metadata=_from("config"))   # > 0: the job must find a CUDA GPU (or stop)
    # a hub model's marker (beluga/data/fetch.py: the commit its revision resolved to; a declared input)
    model_lock: str | None = None

    @property
    def job(self) -> str:
        """How the run is named in messages: ``sent iid_to_t/vanilla/func/typos``."""
        if self.configuration == "iid":
            return f"{self.task} IID model"
        return f"{self.task} {self.configuration}/{self.method}/{self.partition}/{self.fold}"

    @property
    def training_functionalities(self) -> list[str]:
        """The functionalities whose T_train the run trains on (all but the held-out ones; all for seen)."""
        if self.partition == "seen":
            return list(self.functionalities)
        held = set(self.held_out)
        return [f for f in self.functionalities if f not in held]

    def to_dict(self) -> dict:
        """JSON-able (a rule parameter)."""
        d = dataclasses.asdict(self)
        d["held_out"], d["functionalities"] = list(self.held_out), list(self.functionalities)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FoldRun:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"FoldRun: unknown setting(s) {unknown}")
        return cls(**{**d, "held_out": tuple(d["held_out"]), "functionalities": tuple(d["functionalities"])})

    def fingerprint_settings(self) -> dict:
        """What determines the trained weights (the checkpoint fingerprint): every
        setting but where the job writes and how often it saves."""
        d = self.to_dict()
        for k in ("checkpoint_dir", "checkpoint_every_s", "start_label", "threads", "model_lock"):
            d.pop(k)
        return d


def sourced_settings(config: dict, training: dict) -> dict:
    """The values of every :class:`FoldRun` field that comes from the config:
    ``training`` is the task's merged training block (the global one with the
    task's overrides); top-level keys come from ``config``. The schema has
    filled every default."""
    out = {}
    for f in dataclasses.fields(FoldRun):
        meta = f.metadata
        if not meta:
            continue
        block = training if meta["source"] == "training" else config
        out[f.name] = block[meta["key"] or f.name]
    return out


def fold_run(config: dict, training: dict, **job) -> FoldRun:
    """A FoldRun from the validated config, the task's merged training block
    and the job's own settings (task, configuration, fold, seed, threads, hparams
    from :func:`job_hparams`...)."""
    return FoldRun(**job, **sourced_settings(config, training))


def job_hparams(method: str, *layers: Mapping) -> dict:
    """A job's complete hyper-parameters: ``layers`` merged in order, a later
    layer's value replacing an earlier one's, then the epochs ``method`` fixes
    (:meth:`beluga.methods.base.Algorithm.fixed_epochs`: LP-FT's ``ft_epochs``,
    its LP stage's ``lp_epochs``).

    The one place a hyper-parameter is rewritten; everywhere else reads them.
    The layers, in order (``beluga.workflow.runs.Runs.hparams``): the stage's
    ``lr`` / ``batch_size`` / ``epochs`` (``training.iid`` for the IID model,
    ``training.suite`` otherwise, the task's overrides on top; the combinational
    analysis' ``training``), the method's complete hyper-parameters
    (:func:`beluga.methods.config_hparams`: its class's defaults under
    ``training.method_hparams``; LP's and LoRA's own ``lr`` replace the stage's),
    then the job's own: inoculation's ``lr`` / ``epochs`` / ``batch_size``, a
    grid trial's point. A fold with model selection gets the choice at its start
    (``beluga.steps.train.with_selection``: the run's hyper-parameters and the
    choice, through here again)."""
    hp: dict = {}
    for layer in layers:
        hp.update(layer)
    epochs = get_algorithm(method).fixed_epochs(hp)
    if epochs is not None:
        hp["epochs"] = epochs
    return hp
