"""Inoculation's plan (docs/ANALYSES.md): what the DAG needs before any job runs — the units, the
learning-rate grid, the doses and their samples, the split of an external challenge set — and the
checks of the config's ``inoculation`` block. Light: the DAG (beluga/workflow/runs.py, plan.py)
imports it while it is built, so it imports no heavy library (pandas, scipy, torch...) itself;
``funcs`` arguments are the suite's functionality table (a pandas DataFrame built by the caller).

- A *unit* is the whole suite, a functionality class or a functionality (:func:`units`), or an
  external challenge set (:func:`challenge_units`; ``set-<name>``). A challenge set is one of the task's
  OOD sets (``inoculation.challenge``: its name, or ``{set, train, train_size, distinct}``,
  :func:`challenge_spec`): split by example id into a training and a test part
  (``challenge_test_fraction``), or ``train_size`` examples to training and the rest tested (Liu et al.'s
  numerical-reasoning set: 1,000 sampled, the rest evaluated), or tested whole with its training part taken
  from another OOD set (``train``: the stress tests' and Adversarial SQuAD's own training splits; with
  ``train_size``, that many of it: the seed's "1000 random examples from each of the challenge dataset train
  splits").
  ``distinct`` names a column, or columns from the coarsest grouping to the finest, whose values group the
  examples (READ: ``[article_id, passage_id]``, the article and the paragraph): a group of the first goes
  whole to one part, and a dose holds one example per distinct group of the first column while it fits
  their number, then one per distinct group of the next (Liu et al.'s sampling script: one question per
  article, then per paragraph; :func:`distinct_order`).
- Doses are numbers of T_train cases (``all``: every one; :func:`doses_for`); the samples are nested
  (:func:`dose_sample`: a smaller dose is a prefix of a seeded permutation of the unit's case ids)
  and dose 0 is the IID model itself. ``inoculation.samples: released``: a unit whose training set is one
  of Liu et al.'s released training splits trains each dose on their released sample of it
  (:func:`released_samples`; ``all``: the whole split); every other unit on the seeded draw.
- Learning rates: a list, or the seed's grids by name (:data:`LR_GRIDS`); each is one job
  (:func:`lr_id`). Per dose one is reported, chosen on held-out challenge data (``select_on: dev``:
  a suite unit's T_val, an external set's dev part, :func:`challenge_dev_split`) or, as the seed, on the
  challenge test data the outcome tests then use (``test``) (:func:`selection`).
"""

from __future__ import annotations

import re

import numpy as np

from beluga.core.errors import ConfigError, DataError
from beluga.data.remotes import LIU_DOSES, released_doses
from beluga.suites.folds import fold_ids, split_sizes, stable_int

LEVELS = ("suite", "class", "functionality")
LEVEL_PREFIX = {"suite": "suite", "class": "class", "functionality": "func"}

#: the seed's learning-rate grids (appendix A): NLI stress tests and Adversarial SQuAD
LR_GRIDS = {"paper_nli": [1.0e-6, 1.0e-5, 1.0e-4, 4.0e-4, 1.0e-3, 1.0e-2],
            "paper_squad": [1.0e-5, 1.0e-4, 1.0e-3, 1.0e-2]}
SCHEDULES = ("halve_on_plateau", "linear")
#: ``inoculation.select_on`` -> the challenge data a dose's learning rate is chosen on: ``dev`` (held out:
#: a suite unit's T_val, an external set's dev part) or ``test`` (the seed's: the cases the tests use);
#: ``val`` is ``dev``'s name before issue 34
SELECT_ON = {"dev": "dev", "val": "dev", "test": "test"}
#: ``inoculation.samples``: where a dose's examples come from -- the project's seeded draw, or Liu et al.'s
#: released per-dose samples for a unit whose training set is one of their released training splits
SAMPLES = ("drawn", "released")


def check_tasks(tasks, config_tasks) -> None:
    """``inoculation.tasks``: null (every task) or a non-empty list of the config's tasks."""
    if tasks is None:
        return
    if not tasks:
        raise ConfigError("config: field 'inoculation.tasks': [] analyses no task; list the tasks to analyse, or "
                          "leave it null (every task)")
    unknown = [t for t in tasks if t not in config_tasks]
    if unknown:
        raise ConfigError(f"config: field 'inoculation.tasks': {unknown[0]!r} is not a task of this config "
                          f"(tasks: {', '.join(config_tasks)})")


def check_units(levels, challenge) -> None:
    """``inoculation.units`` may be empty only when challenge sets are the units (the seed's own experiment)."""
    if not levels and not challenge:
        raise ConfigError("config: field 'inoculation.units': [] with no challenge set analyses nothing; list unit "
                          "levels (suite, class, functionality) or challenge sets (inoculation.challenge)")


def task_lr_grids(lrs, tasks) -> dict[str, list[float]]:
    """task -> its learning rates (:func:`lr_grid`): ``inoculation.lrs`` as one list or grid name for every
    analysed task, or a mapping task -> list or grid name (the seed tried other grids for its NLI and its SQuAD
    models: ``{mnli: paper_nli, squad: paper_squad}``), which must name every analysed task and no other."""
    tasks = list(tasks)
    if not isinstance(lrs, dict):
        grid = lr_grid(lrs)
        return {t: grid for t in tasks}   # one list, read by every task's jobs
    unknown = [t for t in lrs if t not in tasks]
    if unknown:
        raise ConfigError(f"config: field 'inoculation.lrs.{unknown[0]}': not an analysed task "
                          f"({', '.join(tasks)})")
    missing = [t for t in tasks if t not in lrs]
    if missing:
        raise ConfigError(f"config: field 'inoculation.lrs': no learning rates for task {missing[0]!r} (a mapping "
                          "names every analysed task)")
    return {t: lr_grid(lrs[t], f"inoculation.lrs.{t}") for t in tasks}


def lr_grid(lrs, field: str = "inoculation.lrs") -> list[float]:
    """The learning rates of ``inoculation.lrs``: a list, or a grid of the seed by name (:data:`LR_GRIDS`).
    Each is one job (its :func:`lr_id` names its files): two rates with the same id are refused,
    as the selection grid's trial ids (beluga/workflow/dag.py grid_points)."""
    if isinstance(lrs, str):
        if lrs not in LR_GRIDS:
            raise ConfigError(f"config: field '{field}': {lrs!r} is not a named grid ({', '.join(LR_GRIDS)})")
        return list(LR_GRIDS[lrs])
    out = [float(x) for x in lrs]
    ids = [lr_id(x) for x in out]
    for i, x in enumerate(out):
        j = ids.index(ids[i])
        if j < i:
            same = "is listed twice" if out[j] == x else f"and {lrs[i]!r} have the same job id"
            raise ConfigError(f"config: field '{field}': {lrs[j]!r} {same} ({ids[i]}: the second would "
                              "be dropped); list each learning rate once, with values that differ in 6 "
                              "significant digits")
    return out


def selection(select_on: str) -> str:
    """``inoculation.select_on`` by its canonical name (:data:`SELECT_ON`: ``val`` is ``dev``)."""
    if select_on not in SELECT_ON:
        raise ConfigError(f"config: field 'inoculation.select_on': {select_on!r} is not one of "
                          f"{', '.join(SELECT_ON)}")
    return SELECT_ON[select_on]


def check_samples(samples: str, select_on: str) -> None:
    """``inoculation.samples`` is one of :data:`SAMPLES`; ``released`` with ``select_on: dev`` is refused (Liu et
    al.'s samples are drawn from the whole training split, which leaves no held-out dev part to choose the
    learning rate on)."""
    if samples not in SAMPLES:
        raise ConfigError(f"config: field 'inoculation.samples': {samples!r} is not one of {', '.join(SAMPLES)}")
    if samples == "released" and selection(select_on) == "dev":
        raise ConfigError("config: field 'inoculation.samples': released samples are drawn from the whole training "
                          "split, which leaves no held-out dev part for select_on: dev; use select_on: test (the "
                          "seed's) or samples: drawn")


def released_samples(spec: dict, train_entry: dict | None, samples: str) -> dict[str, str]:
    """dose -> the released sample's path relative to the training set's folder
    (:func:`beluga.data.remotes.released_doses`) for a challenge unit (``spec``: :func:`challenge_units`) that
    trains on Liu et al.'s released samples: ``samples: released`` and its training set (``train_entry``, its
    ``train`` OOD entry) one of their released training splits; {} for every other unit (the seeded draw).
    ``train_size`` is refused with them (their samples are of the whole split)."""
    files = released_doses(train_entry) if samples == "released" and train_entry is not None else {}
    if files and spec.get("train_size") is not None:
        raise ConfigError(f"config: field 'inoculation.challenge[].train_size': challenge set {spec['label']!r} trains "
                          "on Liu et al.'s released samples (samples: released), drawn from the whole training "
                          "split; leave train_size out (or use samples: drawn)")
    return files


def check_released_doses(doses: list[str], files: dict[str, str], label: str) -> None:
    """Every number of a unit's doses (:func:`doses_for`) has a released sample (``files``:
    :func:`released_samples`; none: the unit draws its own)."""
    missing = [d for d in doses if files and d != "all" and d not in files]
    if missing:
        raise ConfigError(f"config: field 'inoculation.doses': dose {missing[0]} has no released sample of "
                          f"{label!r}'s training split (Liu et al. released "
                          f"{', '.join(map(str, LIU_DOSES))} and all); use those doses or inoculation.samples: drawn")


def dev_fraction(inoculation: dict) -> float:
    """Share of an external challenge set's training part held out as its dev part: the config's
    ``challenge_dev_fraction`` when the learning rate is chosen on held-out data (``select_on: dev``);
    0 with ``test`` (the seed: the whole training part is there to draw doses from)."""
    return float(inoculation["challenge_dev_fraction"]) if selection(inoculation["select_on"]) == "dev" else 0.0


def lr_id(lr: float) -> str:
    """A learning rate's job id (its files' name): ``lr`` and the rate in 6 significant digits."""
    return f"lr{float(lr):g}"


def units(funcs, levels) -> dict[str, dict]:
    """unit id -> {level, label, functionalities} for the configured levels
    (funcs: the functionality table with ``functionality`` and ``capability``)."""
    out: dict[str, dict] = {}
    for level in levels:
        if level not in LEVELS:
            raise ConfigError(f"config: field 'inoculation.units': unknown unit level {level!r} ({', '.join(LEVELS)})")
        if level == "suite":
            out["suite"] = {"level": level, "label": "whole suite", "functionalities": list(funcs["functionality"])}
            continue
        col = "capability" if level == "class" else "functionality"
        groups = list(dict.fromkeys(funcs[col]))
        for name, gid in fold_ids(groups).items():
            members = list(funcs.loc[funcs[col] == name, "functionality"])
            out[f"{LEVEL_PREFIX[level]}-{gid}"] = {"level": level, "label": str(name), "functionalities": members}
    return out


#: the keys of an ``inoculation.challenge`` item given as an object (:func:`challenge_spec`)
CHALLENGE_KEYS = ("set", "train", "train_size", "distinct")


def challenge_spec(item, i: int = 0) -> dict:
    """An ``inoculation.challenge`` item -> {set, train, train_size, distinct}: a name is ``{set: name}``
    with the rest None. ``train``: another OOD set is the training part, the set tested whole;
    ``train_size``: that many examples of the set are the training part and the rest is tested, or, with
    ``train``, that many of the training set are drawn to train on (Liu et al.: "we subsample 1000 random
    examples from each of the challenge dataset train splits")."""
    where = f"config: field 'inoculation.challenge[{i}]'"
    if isinstance(item, str):
        return {"set": item, "train": None, "train_size": None, "distinct": None}
    if not isinstance(item, dict) or not isinstance(item.get("set"), str):
        raise ConfigError(f"{where}: an OOD set's name, or an object with 'set' (a name) and optional "
                          f"{', '.join(CHALLENGE_KEYS[1:])}")
    unknown = sorted(set(item) - set(CHALLENGE_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(CHALLENGE_KEYS)})")
    spec = {k: item.get(k) for k in CHALLENGE_KEYS}
    distinct = spec["distinct"]
    if distinct is not None and not (isinstance(distinct, str) and distinct) and not (
            isinstance(distinct, list) and distinct and all(isinstance(c, str) and c for c in distinct)
            and len(set(distinct)) == len(distinct)):
        raise ConfigError(f"{where}: field 'distinct': a column, or a list of distinct columns from the coarsest "
                          f"grouping to the finest, got {distinct!r}")
    if isinstance(distinct, list):
        spec["distinct"] = list(distinct)
    if spec["train"] == spec["set"]:
        raise ConfigError(f"{where}: field 'train': {spec['train']!r} is the challenge set itself; leave 'train' "
                          "out to split the set")
    if spec["train_size"] is not None and (isinstance(spec["train_size"], bool)
                                           or not isinstance(spec["train_size"], int) or spec["train_size"] < 1):
        raise ConfigError(f"{where}: field 'train_size': a positive integer, got {spec['train_size']!r}")
    return spec


def challenge_specs(items) -> list[dict]:
    """Every ``inoculation.challenge`` item as :func:`challenge_spec`; a set listed twice is refused."""
    specs = [challenge_spec(item, i) for i, item in enumerate(items)]
    seen = set()
    for i, spec in enumerate(specs):
        if spec["set"] in seen:
            raise ConfigError(f"config: field 'inoculation.challenge[{i}]': {spec['set']!r} is listed twice")
        seen.add(spec["set"])
    return specs


def challenge_units(items, ood_sets: dict) -> dict[str, dict]:
    """unit id (``set-<name>``) -> {level ``challenge set``, label, functionalities [], challenge: name,
    challenge_train, train_size, distinct} for each configured challenge set (a name or an object,
    :func:`challenge_spec`) that is one of the task's OOD sets (``ood_sets``: name -> entry); its ``train``
    set must be one too."""
    out = {}
    for i, spec in enumerate(challenge_specs(items)):
        name = spec["set"]
        if name in ood_sets:
            if spec["train"] is not None and spec["train"] not in ood_sets:
                raise ConfigError(f"config: field 'inoculation.challenge[{i}].train': {spec['train']!r} is not an "
                                  f"OOD set (tasks.<id>.ood) of the task that has {name!r}")
            uid = "set-" + re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")
            if uid in out:
                raise ConfigError(f"config: field 'inoculation.challenge[{i}]': {name!r} and "
                                  f"{out[uid]['label']!r} have the same unit id ({uid}); name one OOD set "
                                  "otherwise (or list it once)")
            out[uid] = {"level": "challenge set", "label": str(name), "functionalities": [], "challenge": name,
                        "challenge_train": spec["train"], "train_size": spec["train_size"],
                        "distinct": spec["distinct"]}
    return out


def challenge_train_size(entry: dict, test_fraction: float, dev_fraction: float = 0.0, *,
                         train_entry: dict | None = None, train_size: int | None = None,
                         distinct: str | None = None) -> int | None:
    """Training part of a challenge set (less its dev part, :func:`dev_size`), known before it is prepared
    when ``train_size`` is set (that many examples of the set, or of ``train_entry``, the OOD set that is its
    training part, at most its cap; with ``distinct`` groups it may hold fewer: the doses above it then train
    on all of it) or when it is capped (``max_examples``) and not grouped (``distinct``: the number of groups
    is known only from the data); None otherwise (every configured dose runs, ``all`` added)."""
    if distinct is not None and train_size is None:
        return None
    n = (train_entry if train_entry is not None else entry).get("max_examples")
    if train_size is not None:
        rest = int(train_size) if n is None else min(int(train_size), int(n))
    elif train_entry is not None:
        rest = None if n is None else int(n)
    else:
        rest = None if n is None else int(n) - int(round(int(n) * float(test_fraction)))
    return None if rest is None else rest - dev_size(rest, dev_fraction)


def challenge_test_size(n_set: int, test_fraction: float, *, has_train_set: bool = False,
                        train_size: int | None = None) -> int:
    """Examples of a challenge set's test part, from the set's size: all of it (its training part is another
    set), what ``train_size`` leaves, or round(n × ``test_fraction``) (the split of :func:`challenge_split`;
    with ``distinct`` groups the real part differs by at most a group)."""
    if has_train_set:
        return int(n_set)
    if train_size is not None:
        return max(0, int(n_set) - int(train_size))
    return int(round(int(n_set) * float(test_fraction)))


def group_levels(groups) -> list[dict]:
    """``groups`` as its levels, the coarsest first: None -> [], one mapping id -> key -> [it], a list -> itself."""
    if groups is None:
        return []
    return list(groups) if isinstance(groups, (list, tuple)) else [groups]


def _groups(ids: list[str], groups) -> tuple[list[str], dict[str, list[str]]]:
    """The sorted distinct group keys and key -> its sorted ids (``groups``: id -> key, or levels of them, the
    first of which is used: :func:`group_levels`; None: each id alone)."""
    groups = (group_levels(groups) or [None])[0]
    if groups is None:
        return ids, {i: [i] for i in ids}
    members: dict[str, list[str]] = {}
    for i in ids:
        members.setdefault(str(groups[i]), []).append(i)
    return sorted(members), members


def challenge_split(example_ids, test_fraction: float, seed: int, name: str, *, train_size: int | None = None,
                    groups=None) -> tuple[list[str], list[str]]:
    """(training ids, test ids) of a challenge set: a permutation of the sorted ids seeded by (seed, name),
    the first round(n × test_fraction) to the test part, or (``train_size``) the first ``train_size`` to the
    training part and the rest to the test part. ``groups`` (id -> group key, e.g. the passage): the
    permutation is of the sorted group keys, a group goes whole to one part, and the counts are of groups
    (``test_fraction``) or of examples, the last group taken whole (``train_size``). DataError when the
    test part would be empty."""
    ids = sorted(map(str, example_ids))
    keys, members = _groups(ids, groups)
    order = [keys[i] for i in np.random.default_rng(stable_int(seed, f"challenge:{name}")).permutation(len(keys))]
    if train_size is None:
        n_test = int(round(len(keys) * float(test_fraction)))
        train_keys, test_keys = order[n_test:], order[:n_test]
    else:
        train_keys, n = [], 0
        for k in order:
            if n >= int(train_size):
                break
            train_keys.append(k)
            n += len(members[k])
        test_keys = order[len(train_keys):]
    if not test_keys:
        raise DataError(f"challenge set {name}: field 'inoculation.challenge': its {len(ids)} example(s) leave no "
                        "test part (train_size / challenge_test_fraction)")
    return (sorted(i for k in train_keys for i in members[k]), sorted(i for k in test_keys for i in members[k]))


def dev_size(n_train: int, dev_fraction: float) -> int:
    """Examples of a challenge set's dev part: round(n_train × dev_fraction) of its training part, at least
    one when ``dev_fraction`` > 0 (a dev score needs an example), none when it is 0."""
    return 0 if float(dev_fraction) <= 0 else max(1, int(round(int(n_train) * float(dev_fraction))))


def challenge_dev_split(train_ids, dev_fraction: float, seed: int, name: str, groups=None
                        ) -> tuple[list[str], list[str]]:
    """(training ids, dev ids) of a challenge set's training part (:func:`challenge_split`): a permutation of the
    sorted ids seeded by (seed, name), the first :func:`dev_size` to the dev part, where the learning rate is
    chosen (``select_on: dev``); the doses are drawn from the rest. ``dev_fraction`` 0: no dev part. ``groups``
    (id -> group key): whole groups, counted as groups, as :func:`challenge_split`. DataError when no training
    example would be left."""
    ids = sorted(map(str, train_ids))
    keys, members = _groups(ids, groups)
    n_dev = dev_size(len(keys), dev_fraction)
    if n_dev and n_dev >= len(keys):
        what = "group(s)" if groups is not None else "example(s)"
        raise DataError(f"challenge set {name}: field 'inoculation.challenge_dev_fraction': its training part has "
                        f"{len(keys)} {what}, too few to hold out a dev part and train on the rest; use "
                        "select_on: test or a larger set")
    order = [keys[i] for i in np.random.default_rng(stable_int(seed, f"challenge-dev:{name}")).permutation(len(keys))]
    return (sorted(i for k in order[n_dev:] for i in members[k]), sorted(i for k in order[:n_dev] for i in members[k]))


def train_cases_per_unit(funcs, unit_funcs: list[str], fractions) -> int:
    """T_train cases of a unit, known before the suite is split (``n_cases`` per functionality)."""
    n = funcs.set_index("functionality")["n_cases"]
    return int(sum(split_sizes(int(n[f]), fractions)[0] for f in unit_funcs))


def doses_for(n_train: int | None, doses) -> list[str]:
    """The dose ids a unit runs: every configured number below its T_train size,
    plus ``all`` when it is listed or a number reaches the size (no two doses
    train on the same cases)."""
    ids, use_all = [], n_train is None
    for d in doses:
        if d == "all" or (n_train is not None and int(d) >= n_train):
            use_all = True
        elif int(d) > 0:
            ids.append(int(d))
    out = [str(d) for d in sorted(set(ids))]
    return out + (["all"] if use_all else [])


def dose_size(dose: str, n_train: int) -> int:
    return n_train if dose == "all" else min(int(dose), n_train)


def _pick(members: list[str], finer: list[dict], rng) -> str:
    """One of a group's (sorted) ids, drawn level by level: a random group of each finer level among the
    members', then a random id of the last (Liu et al.: a random paragraph of the article, then a random
    question of it)."""
    for level in finer:
        keys = sorted({str(level[i]) for i in members})
        key = keys[int(rng.integers(len(keys)))]
        members = [i for i in members if str(level[i]) == key]
    return members[int(rng.integers(len(members)))]


def distinct_order(ids: list[str], rng, levels: list[dict]) -> list[str]:
    """One id per group, level by level (``levels``: id -> group key mappings, the coarsest first, e.g. the
    article then the paragraph): a permutation (``rng``) of the first level's sorted groups, one id of each
    (:func:`_pick`); then the next level's groups that hold none of the ids drawn so far, permuted, one id of
    each; and so on. A prefix of ``n`` ids holds one id of ``n`` distinct first-level groups while ``n`` fits
    their number, then also distinct groups of the next level: Liu et al.'s rule for Adversarial SQuAD
    (sample_adversarial_training_examples.py: one question per article while the dose fits the number of
    articles, else one per paragraph), nested across doses."""
    order: list[str] = []
    taken: list[set[str]] = [set() for _ in levels]
    for j, level in enumerate(levels):
        members: dict[str, list[str]] = {}
        for i in ids:
            members.setdefault(str(level[i]), []).append(i)
        keys = sorted(k for k in members if k not in taken[j])
        for p in rng.permutation(len(keys)):
            pick = _pick(members[keys[p]], levels[j + 1:], rng)
            order.append(pick)
            for seen, lv in zip(taken, levels):
                seen.add(str(lv[pick]))
    return order


def dose_sample(case_ids, dose: str, seed: int, unit: str, groups=None) -> list[str]:
    """The cases of a dose: the first ``dose`` ids of a permutation of the
    sorted ids seeded by (seed, unit) — nested across doses. ``groups`` (id ->
    group key, e.g. the passage, or a list of such mappings from the coarsest
    grouping to the finest, e.g. the article then the paragraph): the first
    ``dose`` of :func:`distinct_order` (seeded by (seed, unit)), one case per
    distinct group of the coarsest level while the dose fits their number,
    then of the next; a number above the finest level's groups gets one case
    of each. ``all`` is every case (Liu et al.'s ``all``: the whole training
    split)."""
    ids = sorted(map(str, case_ids))
    rng = np.random.default_rng(stable_int(seed, unit))
    levels = group_levels(groups)
    if not levels:
        order = [ids[i] for i in rng.permutation(len(ids))]
        return order[:dose_size(dose, len(order))]
    order = distinct_order(ids, rng, levels)
    if dose == "all":
        chosen = set(order)
        return order + [i for i in ids if i not in chosen]
    return order[:dose_size(dose, len(order))]
