"""Every path of the results folder, spelled once.

The rules, their input functions and the target lists take their paths from a
:class:`Paths` (built once in ``rules/common.smk`` from ``config["results"]``).
Every argument defaults to its Snakemake wildcard, so one function gives a
rule's pattern and a concrete path::

    paths = Paths("results")
    paths.run("predictions")                # results/{task}/predictions/{conf}/{method}/{partition}/{fold}.parquet
    paths.run("outcomes", "sent", *IID_RUN)  # results/sent/outcomes/iid/vanilla/standard/all.parquet

A run is (configuration, method, partition, fold): :data:`IID_RUN` is the IID
model's. Light: no torch (used while the DAG is built).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class RunKey(NamedTuple):
    """A run: the IID model, or a fold of a configuration trained with a method."""

    conf: str
    method: str
    partition: str
    fold: str


#: the IID model's run (trained once per task, the baseline of every table)
IID_RUN = RunKey("iid", "vanilla", "standard", "all")

TASK, CONF, METHOD, PARTITION, FOLD = "{task}", "{conf}", "{method}", "{partition}", "{fold}"
#: a training seed's folder under the task (empty for the base seed, ``seeds/<s>/`` for another seed:
#: the base seed's paths are a one-seed run's, so adding a seed adds files and moves none)
SEEDDIR = "{seeddir}"
#: the wildcard constraint of ``seeddir``
SEEDDIR_REGEX = "(seeds/[0-9]+/)?"


def seeddir_of(seed: int, base: int) -> str:
    """The seed folder of a training seed (``""`` for the base seed ``base``)."""
    return "" if int(seed) == int(base) else f"seeds/{int(seed)}/"


def seed_of(seeddir: str, base: int) -> int:
    """The training seed of a seed folder (:func:`seeddir_of` inverted)."""
    return int(base) if not seeddir else int(seeddir.strip("/").split("/")[1])


def fold_dir(conf: str = CONF, method: str = METHOD, partition: str = PARTITION, fold: str = FOLD) -> str:
    """``{conf}/{method}/{partition}/{fold}``: where a run's files lie under a kind of output."""
    return f"{conf}/{method}/{partition}/{fold}"


def fold_log(step: str, *extra: str) -> str:
    """A per-fold job's log pattern: ``logs/{task}/{seeddir}<step>/{conf}/{method}/{partition}/{fold}[/extra].log``."""
    return "/".join(["logs", TASK, SEEDDIR + step, fold_dir(), *extra]) + ".log"


@dataclass(frozen=True)
class Paths:
    """The results folder ``results`` (``config["results"]``) and every path under it."""

    results: str

    # --- a task's folder -------------------------------------------------------------------
    def task_path(self, task: str = TASK, *parts: str) -> str:
        """``<results>/<task>/<parts...>``."""
        return "/".join([self.results, task, *parts])

    def iid(self, split: str, task: str = TASK) -> str:
        """The i.i.d. data of a split (train / val / test / pool)."""
        return self.task_path(task, "iid", f"{split}.parquet")

    def iid_source(self, task: str = TASK) -> str:
        return self.task_path(task, "iid", "source.json")

    def suite(self, name: str = "suite.parquet", task: str = TASK) -> str:
        """The suite (``suite.parquet``), its split (``split.parquet``) or summary (``summary.tsv``)."""
        return self.task_path(task, "suite", name)

    def ood_data(self, name: str = "{name}", task: str = TASK) -> str:
        """A prepared OOD test set."""
        return self.task_path(task, "ood", "data", f"{name}.parquet")

    # --- runs: predictions, outcomes, models, selection, checkpoints --------------------------
    def seeded(self, task: str, seeddir: str, kind: str, *parts: str) -> str:
        """``<results>/<task>/<seeddir><kind>/<parts...>``: a training seed's files (``seeddir`` empty
        for the base seed, ``seeds/<s>/`` for another; :func:`seeddir_of`)."""
        return "/".join([self.results, task, seeddir + kind, *parts])

    def run(self, kind: str, task: str = TASK, conf: str = CONF, method: str = METHOD, partition: str = PARTITION,
            fold: str = FOLD, ext: str = "parquet", seeddir: str = SEEDDIR) -> str:
        """A run's ``predictions`` or ``outcomes`` file (``ext="json"``: the predictions' run record)."""
        return f"{self.seeded(task, seeddir, kind, fold_dir(conf, method, partition, fold))}.{ext}"

    def iid_run(self, kind: str, task: str = TASK, ext: str = "parquet", seeddir: str = SEEDDIR) -> str:
        """The IID model's ``predictions`` or ``outcomes`` file."""
        return self.run(kind, task, *IID_RUN, ext=ext, seeddir=seeddir)

    def model(self, task: str = TASK, conf: str = CONF, method: str = METHOD, partition: str = PARTITION,
              fold: str = FOLD, seeddir: str = SEEDDIR) -> str:
        """A model folder."""
        return self.seeded(task, seeddir, "models", fold_dir(conf, method, partition, fold))

    def iid_model(self, task: str = TASK, seeddir: str = SEEDDIR) -> str:
        return self.model(task, *IID_RUN, seeddir=seeddir)

    def selection(self, task: str = TASK, conf: str = CONF, method: str = METHOD, partition: str = PARTITION,
                  fold: str = FOLD, seeddir: str = SEEDDIR) -> str:
        """The folder where a fold's hyper-parameters are selected (per training seed)."""
        return self.seeded(task, seeddir, "selection", fold_dir(conf, method, partition, fold))

    def trial(self, task: str = TASK, conf: str = CONF, method: str = METHOD, partition: str = PARTITION,
              fold: str = FOLD, trial: str = "{trial}", seeddir: str = SEEDDIR) -> str:
        """A grid trial's score."""
        return f"{self.selection(task, conf, method, partition, fold, seeddir)}/trials/{trial}.json"

    def selected(self, task: str = TASK, conf: str = CONF, method: str = METHOD, partition: str = PARTITION,
                 fold: str = FOLD, seeddir: str = SEEDDIR) -> str:
        """The selected grid point of a fold."""
        return f"{self.selection(task, conf, method, partition, fold, seeddir)}/selected.json"

    def checkpoints(self, rule: str, task: str, run: RunKey | tuple, *extra: str, seeddir: str = "") -> str:
        """A training job's epoch checkpoints (outside its outputs): rule, run, then a trial's id."""
        return self.seeded(task, seeddir, "checkpoints", rule, *run, *extra)

    # --- a task's tables, figures and reports ----------------------------------------------
    def scores(self, name: str, task: str = TASK) -> str:
        return self.task_path(task, "scores", name)

    def plots(self, name: str, task: str = TASK) -> str:
        return self.task_path(task, "plots", name)

    def figures(self, name: str, task: str = TASK) -> str:
        return self.task_path(task, "figures", name)

    def stats(self, name: str, task: str = TASK) -> str:
        return self.task_path(task, "stats", name)

    def unit_outcomes(self, task: str = TASK, seeddir: str = SEEDDIR) -> str:
        """A training seed's per-unit outcomes (the statistics' input; one file per seed)."""
        return self.seeded(task, seeddir, "stats", "unit_outcomes.parquet")

    def diagnostics(self, name: str, task: str = TASK) -> str:
        return self.task_path(task, "diagnostics", name)

    def failures(self, name: str, task: str = TASK) -> str:
        return self.task_path(task, "failures", name)

    def ood(self, name: str, task: str = TASK) -> str:
        """The OOD evaluation's outputs of a task (scores.csv, ood_table.md, ...)."""
        return self.task_path(task, "ood", name)

    # --- the related analyses ----------------------------------------------------------------
    def inoculation(self, name: str, task: str = TASK) -> str:
        """The inoculation summary of a task (table.csv, curves.png, ...)."""
        return self.task_path(task, "inoculation", name)

    def inoculation_run(self, task: str = TASK, unit: str = "{unit}", dose: str = "{dose}", lr: str = "{lr}",
                        ext: str = "json", seeddir: str = SEEDDIR) -> str:
        """One (unit, dose, learning rate id) inoculation result (``ext``: json, the record; parquet, its
        per-case challenge and per-example original outcomes)."""
        return self.seeded(task, seeddir, "inoculation", "runs", unit, dose, f"{lr}.{ext}")

    def combinational(self, name: str) -> str:
        """The combinational analysis' shared files (pool.parquet, comparison.csv, ...)."""
        return f"{self.results}/combinational/{name}"

    def combinational_variant(self, name: str, variant: str = "{variant}") -> str:
        """A combinational variant's files (table.csv, accuracy.png, ...), under its name."""
        return self.combinational(f"{variant}/{name}")

    def combinational_run(self, k: int | str = "{k}", variant: str = "{variant}", seeddir: str = SEEDDIR) -> str:
        """A variant's run with K training inputs per label, of a training seed."""
        return self.combinational_variant(f"{seeddir}runs/k{k}.json", variant)

    # --- across tasks --------------------------------------------------------------------------
    def table3(self, name: str) -> str:
        return f"{self.results}/table3/{name}"

    def ood_ranking(self, name: str) -> str:
        """The OOD ranking over tasks (ranking.csv, ranking.md)."""
        return f"{self.results}/ood/{name}"

    def run_config(self, name: str = "run_config.yaml") -> str:
        """The run's configuration (run_config.yaml) and provenance (run.json)."""
        return f"{self.results}/{name}"
