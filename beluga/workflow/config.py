"""The configuration as the workflow reads it, in one place: :func:`load_workflow` is what
``rules/common.smk`` does with the config before any rule is defined (and what
the tests call in-process to check a config without starting snakemake);
:func:`validate_config` its first half, which ``python -m beluga plan`` shares.
Every failure is a :class:`~beluga.core.errors.BelugaError` whose message is the one
line the dry run prints (naming the config file(s) and the field). Light: no
torch, no transformers."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from beluga.core.bounds import MAX_CONFIG_VALUES, tree_problem, yaml_load
from beluga.core.errors import BelugaError, ConfigError, config_error_line
from beluga.data.fetch import config_files, resolve_data_paths
from beluga.suites.build import seeds_given, settle_spec_seeds
from beluga.workflow import dag
from beluga.workflow.paths import Paths
from beluga.workflow.runs import Runs

#: the config schema (defaults and types; rules/common.smk validates against it)
CONFIG_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"
#: the top-level field of a config file that turns on Snakemake's YTE templating
YTE_FIELD = "__use_yte__"
#: set to 1, the environment lets a config file turn on YTE templating (docs/RUNNING.md)
ALLOW_YTE = "BELUGA_ALLOW_YTE"


@dataclass(frozen=True)
class Loaded:
    """A validated config and what the DAG is built from."""

    config: dict
    #: the data folder (relative data paths of the config are under it)
    data_dir: str
    #: inputs the fetch target provides that are not in the data folder yet
    not_fetched: list[str]
    paths: Paths
    runs: Runs


def validate_config(config: dict, configfiles=()) -> dict:
    """In place: a config file that turns on YTE templating refused (:func:`refuse_yte`), list items given on
    the command line as integers, the schema (its defaults filled),
    what the schema cannot say (:func:`beluga.workflow.dag.check_config`), relative data paths
    resolved under ``data_dir``, and a spec-rendered suite's seed the spec's ``defaults.seed`` when the config
    sets none (:func:`beluga.suites.build.settle_spec_seeds`). Returns ``config``."""
    from snakemake.utils import validate  # (snakemake: heavy; rules/common.smk has it loaded already)

    refuse_yte(configfiles)
    problem = tree_problem(config, MAX_CONFIG_VALUES)
    if problem:
        files = [str(f) for f in configfiles]
        where = f"config file{'s' if len(files) > 1 else ''} {', '.join(files)}" if files else "config"
        raise ConfigError(f"{where}: field '(top level)': {problem} (the limit of a BELUGA config, "
                          "docs/SUITE_FORMAT.md#limits)")
    dag.command_line_integers(config)
    given = seeds_given(config)
    try:
        validate(config, schema=str(CONFIG_SCHEMA))
    except Exception as e:   # a WorkflowError wrapping the jsonschema error
        raise ConfigError(config_error_line(e, configfiles)) from None
    resolve_data_paths(config)
    _checked(configfiles, dag.check_config, config, dag.load_schema(CONFIG_SCHEMA), configfiles)
    _checked(configfiles, settle_spec_seeds, config["tasks"], given)
    return config


def refuse_yte(configfiles=()) -> None:
    """A config file whose top-level ``__use_yte__`` is true turns on Snakemake's YTE templating: its ``?``
    expressions are Python, which snakemake runs when it loads the file. Refused (a ConfigError of one line
    naming the file and the field) unless the environment sets ``BELUGA_ALLOW_YTE=1``. Snakemake removes the
    field from the config it hands on, so each file's own text is read (a field whose value cannot be read
    counts as true). ``--config __use_yte__=...`` turns nothing on (the schema refuses the key)."""
    if os.environ.get(ALLOW_YTE) == "1":
        return
    for f in map(str, configfiles):
        if _turns_on_yte(f):
            raise ConfigError(f"config file {f}: field '{YTE_FIELD}': turns on Snakemake's YTE templating, whose "
                              "'?' expressions are Python code that snakemake runs when it loads the file; a "
                              f"BELUGA config is data (set {ALLOW_YTE}=1 to allow a templated config, "
                              "docs/RUNNING.md)")


def _turns_on_yte(path: str) -> bool:
    """Whether the file at ``path`` sets a true top-level ``__use_yte__`` (as YTE decides: its truth value)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:   # not there (snakemake read it from elsewhere, or a test's name): its config dict is checked
        return False
    if YTE_FIELD not in text:
        return False
    try:
        doc = yaml_load(text)
    except yaml.YAMLError:   # YTE reads more than safe YAML (python tags): the field is there, its value unknown
        return True
    return isinstance(doc, dict) and bool(doc.get(YTE_FIELD))


def load_workflow(config: dict, configfiles=()) -> Loaded:
    """Validate ``config`` (in place, as :func:`validate_config`), check its sources and models, and
    enumerate its runs (:class:`~beluga.workflow.runs.Runs`: folds, grids, seeds, analyses), with
    relative paths read from the working directory, as snakemake's. Raises a BelugaError of one line
    naming the config file(s) and the field."""
    validate_config(config, configfiles)
    data_dir = str(config["data_dir"])
    not_fetched = sorted(os.path.join(data_dir, r.path) for r in config_files(config)
                         if not os.path.lexists(os.path.join(data_dir, r.path)))
    _checked(configfiles, dag.check_sources, config["tasks"], configfiles, not_fetched=not_fetched, data_dir=data_dir)
    runs = checked_runs(config, configfiles, not_fetched)
    return Loaded(config, data_dir, not_fetched, runs.paths, runs)


def checked_runs(config: dict, configfiles=(), not_fetched=(), published: bool = False) -> Runs:
    """The runs of a validated config (:class:`~beluga.workflow.runs.Runs`), its models checked
    (:func:`beluga.workflow.dag.check_models`); what the dry run and ``plan`` count (``published``: ``plan``'s
    ``--assume-paper-data``). Raises a BelugaError of the dry run's one line."""
    runs = _checked(configfiles, Runs, config, Paths(config["results"]), str(config["data_dir"]),
                    not_fetched=not_fetched, configfiles=configfiles, published=published)
    _checked(configfiles, dag.check_models, config, runs.comb_variants, configfiles)
    return runs


def _checked(files, build, /, *args, **kwargs):
    """build(*args, **kwargs); a BelugaError becomes one of the same type with the dry run's line (naming
    the config ``files``)."""
    try:
        return build(*args, **kwargs)
    except BelugaError as e:
        raise type(e)(dag.dag_error_line(e, files)) from None
