"""Suite specs, loaded and checked: a spec file read and validated (:mod:`beluga.suites.spec.reading`), then
checked for what the schema cannot say (every placeholder names a lexicon, labels are the task's, expectations
fit the test type, perturbations and their parameters exist, sources and files are there), each error one line
naming the file, the functionality and the field (:func:`beluga.suites.spec.core.spec_error`). The template
groups' and perturbations' checks are in :mod:`beluga.suites.spec.groups`."""

from __future__ import annotations

import math

from beluga.core.tasks import get_task_type
from beluga.heads.score.cases import SCORE_EXPECTATIONS, score_params_error
from beluga.suites.format import EXPECTATIONS, SLICES, TEST_TYPES
from beluga.suites.spec.core import (
    Spec,
    expectation,
    is_score_task,
    is_source_lexicon,
    label_of,
    spec_error,
    spec_path,
)
from beluga.suites.spec.groups import check_group, check_perturb
from beluga.suites.spec.reading import parse_spec, read_yaml, spec_words


def load_spec(spec: str) -> Spec:
    """Read and check a spec (a packaged name or a path): the schema, then what it cannot say — every
    placeholder names a lexicon, labels are the task's, expectations fit the test type, perturbations and
    their parameters exist, sources and files are there. A ConfigError names the file, the functionality
    and the field."""
    path = spec_path(spec)
    return spec_from_data(read_yaml(path, "suite spec", spec_words), path)


def spec_from_data(data, path: str) -> Spec:
    """A spec from its data (``path``: its file, or what errors name, e.g. "the command line"), checked as
    :func:`load_spec` checks a file."""
    out = parse_spec(data, path)
    _check(out)
    return out


#: the parameters each expectation reads (besides slice, slice_value, train and unperturbed)
EXPECT_PARAMS = {"eq": {"val"}, "not_eq": {"val"}, "not_negative": set(), "eq_or_not_negative": set(),
                 "inv": {"tolerance"}, "monotonic": {"increasing", "tolerance", "label"}, "diff_up": {"tolerance"},
                 "diff_down": {"tolerance"}, "triplet": set(), "squad": set(), "same_answer": set()}
COMMON_EXPECT_PARAMS = {"slice", "slice_value", "train", "unperturbed"}
#: the parameters each score expectation of a regression spec (similarity) reads (beluga.heads.score.cases)
SCORE_EXPECT_PARAMS = {"score_near": {"val", "tolerance"}, "score_between": {"min", "max"},
                       "score_inv": {"tolerance"}, "score_up": {"margin"}, "score_down": {"margin"}}


def _check_score_expectation(spec: Spec, expect: str, params: dict, loc) -> None:
    """A regression spec's expectation: a score expectation, its parameters known ones, numbers, and within the
    task's score range, none that every score passes or none can
    (:func:`beluga.heads.score.cases.score_params_error`)."""
    if expect not in SCORE_EXPECTATIONS:
        raise spec_error(spec, loc, f"{expect!r} does not apply to a {spec.task} spec, a regression scored on "
                                    f"scores ({', '.join(SCORE_EXPECTATIONS)})")
    known = SCORE_EXPECT_PARAMS[expect]
    unknown = sorted(set(params) - known)
    if unknown:
        raise spec_error(spec, loc, f"{expect!r} has no parameter {unknown[0]!r} "
                                    f"(it reads: {', '.join(sorted(known))})")
    err = score_params_error(expect, params, getattr(get_task_type(spec.task), "score_range", None))
    if err is not None:
        raise spec_error(spec, loc, err)


def _check_expectation(spec: Spec, func: dict, loc) -> None:
    """The expectation's parameters: known ones, of the right type (a misspelt one would be ignored)."""
    expect, params = expectation(func)
    if is_score_task(spec.task):
        _check_score_expectation(spec, expect, params, loc)
        return
    if expect in SCORE_EXPECTATIONS:
        raise spec_error(spec, loc, f"{expect!r} is a regression's score expectation; a {spec.task} spec is scored "
                                    "on classes or answers")
    if expect == "same_answer":
        raise spec_error(spec, loc, "same_answer needs each input's [old, new] replacement in meta, which a spec does "
                                    "not write; use inv (the answer string unchanged) or squad (each input's answer)")
    known = EXPECT_PARAMS.get(expect, set()) | COMMON_EXPECT_PARAMS
    unknown = sorted(set(params) - known)
    if unknown:
        raise spec_error(spec, loc, f"{expect!r} has no parameter {unknown[0]!r} "
                                    f"(it reads: {', '.join(sorted(known))})")
    tol = params.get("tolerance")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf):
        raise spec_error(spec, [*loc, "tolerance"], f"must be a finite number >= 0, got {tol!r}")
    for key in ("increasing", "unperturbed"):
        if key in params and not isinstance(params[key], bool):
            raise spec_error(spec, [*loc, key], f"must be true or false, got {params[key]!r}")
    if params.get("slice") is not None and params["slice"] not in SLICES:
        raise spec_error(spec, [*loc, "slice"], f"unknown slice {params['slice']!r} ({', '.join(SLICES)})")
    if params.get("slice") == "orig_pred_eq":
        if isinstance(params.get("slice_value"), str):
            raise spec_error(spec, [*loc, "slice_value"], "slice orig_pred_eq needs the class as a number")
        label_of(spec, params.get("slice_value"), [*loc, "slice_value"], required=True)
    if expect == "not_eq" and ("val" not in params or spec.task == "read"):
        raise spec_error(spec, [*loc, "val"], "not_eq needs val, the class it rules out (e.g. val: entailment); "
                                              "it is for class labels, not read answers")
    if "val" in params and spec.task != "read":
        label_of(spec, params["val"], [*loc, "val"], required=True)
    if "label" in params:
        label_of(spec, params["label"], [*loc, "label"], required=True)
    train = params.get("train")
    if train is not None:
        if not isinstance(train, dict) or train.get("as") not in TEST_TYPES or set(train) - {"as", "label"}:
            raise spec_error(spec, [*loc, "train"], f"must be {{as: MFT / INV / DIR}} with an optional label, got "
                                                    f"{train!r}")
        label_of(spec, train.get("label"), [*loc, "train", "label"])


def _check(spec: Spec) -> None:
    sources = spec.data.get("sources") or {}
    for name, src in sources.items():
        kinds = [k for k in ("pool", "file", "dataset") if k in src]
        if len(kinds) != 1:
            raise spec_error(spec, ["sources", name], "one of pool, file or dataset is needed")
        if "file" in src and not (spec.base_dir / src["file"]).is_file():
            raise spec_error(spec, ["sources", name, "file"], f"{spec.base_dir / src['file']} does not exist")
        if src.get("dataset") == "hutto" and not src.get("set"):
            raise spec_error(spec, ["sources", name, "set"], "the hutto dataset needs a set (tweets, amazon, nyt)")
    for name, value in spec.lexicons.items():
        if is_source_lexicon(value) and value[1] not in sources:
            raise spec_error(spec, ["lexicons", name, "source"], f"{value[1]!r} is not a source (sources)")
    names = [f["name"] for f in spec.functionalities]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise spec_error(spec, ["functionalities"], f"two functionalities are named {dup!r}")
    for i, func in enumerate(spec.functionalities):
        loc = ["functionalities", i]
        expect, params = expectation(func)
        if expect not in EXPECTATIONS:
            raise spec_error(spec, [*loc, "expect"], f"unknown expectation {expect!r} ({', '.join(EXPECTATIONS)})")
        if func["type"] not in EXPECTATIONS[expect]["types"]:
            raise spec_error(spec, [*loc, "expect"], f"{expect!r} does not apply to {func['type']} tests "
                                                     f"({', '.join(EXPECTATIONS[expect]['types'])})")
        needs = EXPECTATIONS[expect]["needs"]
        if "templates" not in func and "source" not in func:
            raise spec_error(spec, loc, "cases come from 'templates' or from a 'source' with 'perturb'")
        if "templates" in func and "source" in func:
            raise spec_error(spec, loc, "'templates' and 'source' are two ways to make cases; give one (a source's "
                                        "fill-up templates go in 'fallback')")
        if "source" in func and spec.task == "read" and not isinstance((sources.get(func["source"]) or {})
                                                                      .get("pool"), list):
            raise spec_error(spec, [*loc, "source"], "read cases come from templates (context, question, answer), or "
                                                     "from a pool source of two columns (context, question) for INV / "
                                                     "DIR; a source's sentences can also be a lexicon, e.g. "
                                                     "distractors for add_phrase")
        _check_expectation(spec, func, [*loc, "expect"])
        if "source" in func:
            if func["source"] not in sources:
                raise spec_error(spec, [*loc, "source"], f"{func['source']!r} is not a source (sources: "
                                                         f"{', '.join(sources) or 'none'})")
            if "perturb" not in func:
                raise spec_error(spec, loc, "a source's sentences need 'perturb'")
            if func.get("pairs") and spec.task != "para":
                raise spec_error(spec, [*loc, "pairs"], "pairs are for para specs")
            if func.get("pairs") == "perturbed_pairs":
                label_of(spec, func.get("label"), [*loc, "label"])
            elif func["type"] == "MFT":
                raise spec_error(spec, loc, "an MFT from a source needs 'pairs: perturbed_pairs' and a label (para)")
            elif needs in ("label", "label_or_answer", "answer") and "val" not in params:
                others = ("score_between / score_inv / score_up / score_down" if is_score_task(spec.task)
                          else "inv / monotonic / diff_up / diff_down")
                raise spec_error(spec, [*loc, "expect"], f"expectation {expect!r} needs a label or answer per input, "
                                                         f"which a source's sentences do not have (give val, or use "
                                                         f"{others})")
        if "label" in func and func.get("pairs") != "perturbed_pairs":
            raise spec_error(spec, [*loc, "label"], "a functionality's label is for pairs: perturbed_pairs; give "
                                                    "template groups their own label")
        if "perturb" in func:
            check_perturb(spec, func["perturb"], [*loc, "perturb"])
        for key in ("templates", "fallback"):
            for j, group in enumerate(func.get(key) or []):
                check_group(spec, func, group, [*loc, key, j], with_perturb="perturb" in func)
                if expect == "not_eq" and group.get("label") is not None:
                    raise spec_error(spec, [*loc, key, j, "label"], "not_eq rules out the class val; its groups have "
                                                                     "no label")
                if needs in ("label", "label_or_answer") and spec.task != "read" and "val" not in params \
                        and group.get("label") is None and key == "templates" and func.get("pairs") is None:
                    raise spec_error(spec, [*loc, key, j], f"expectation {expect!r} needs a label per case: give the "
                                                           "group a 'label'")
        if func.get("fallback") and "source" not in func:
            raise spec_error(spec, [*loc, "fallback"], "fallback templates fill up a source's cases; without a source "
                                                       "use 'templates'")

