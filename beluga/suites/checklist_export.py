"""Any suite the project reads -> CheckList's JSONL export (``python -m beluga suite export --format checklist``):
one JSON object per test case with the fields of ``../shared/data/checklist/*.jsonl.gz`` (../shared/data/README.md,
"Fields of a test case"), so a suite built from a spec, perturbed from a user's sentences or imported from
TextAttack / LangTest reaches a CheckList user in the layout the released suites have, and the project reads
it back (``beluga.suites.checklist.import_checklist``) into a suite equal to the original, field for field.

CheckList's fields carry the case id, functionality, capability, description, test type, inputs (strings, or
``[a, b]`` pairs: qqp's questions, squad's ``[context, question]``, NLI's ``[premise, hypothesis]``), labels
(classes, or squad's answer strings), ``meta`` (a JSON value), ``agg_fn`` and the expectation as CheckList writes
it (``{expression, name, params, slice}``: :func:`checklist_expect`). What they cannot carry exactly rides in
the side field ``beluga`` (:data:`SIDE_FIELD`), which CheckList's readers ignore:

- ``task``: the project's task type (``sent``, ``para``, ``read``, ``nli``, ...): CheckList's ``suite`` names
  only three (sentiment, qqp, squad); the other task types write their task name there;
- ``expect`` / ``expect_params``: the project's expectation and its parameters, as the JSON text the suite
  holds (training hints, ``unperturbed``, a ``slice_value``, tolerances CheckList's functions hard-code);
- ``meta``: the suite's JSON text, when re-encoding ``meta`` would not give it back byte for byte;
- ``labels`` / ``answers``: the one of the two CheckList's single ``labels`` field does not hold (a QA case's
  class labels, a classifier case's answers), when present.

Refused in one line (nothing is dropped silently): a regression suite (``similarity``: CheckList's tests judge
predicted classes and confidences, or answers; its format has no expectation for a predicted score -- export
``--format inputs`` and score with ``score --format score``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import SuiteError
from beluga.core.tasks import SUITE_TASK_TYPES, get_task_type
from beluga.heads import head_of
from beluga.suites.format import EXPECTATIONS

#: the record field holding what CheckList's fields cannot carry (see the module's docs)
SIDE_FIELD = "beluga"
#: the project's task type -> CheckList's ``suite`` name (the task's own name for the others)
CHECKLIST_SUITE_NAMES = {task: name for name, task in SUITE_TASK_TYPES.items()}
#: expect_params keys that are the project's, not a CheckList expectation's parameters
PROJECT_PARAMS = ("slice", "slice_value", "train", "unperturbed")
_SLICE_NOTE = "cases whose slice result (aggregated with agg_fn) is not True are excluded (expect result None)"
#: expectations CheckList writes as a function wrapped in Expect.single / pairwise / testcase: (wrapper, fn name)
_WRAPPED = {"diff_up": ("Expect.pairwise", "diff_up"), "diff_down": ("Expect.pairwise", "diff_down"),
            "triplet": ("Expect.testcase", "expect_triplet"), "squad": ("Expect.single", "expect_squad"),
            "same_answer": ("Expect.pairwise", "expect_same"), "not_negative": ("Expect.single", "<lambda>"),
            "eq_or_not_negative": ("Expect.single", "<lambda>"), "not_eq": ("Expect.single", "not_eq")}


def checklist_suite_name(task: str) -> str:
    """CheckList's ``suite`` field for a task type: sentiment / qqp / squad, else the task type's name."""
    return CHECKLIST_SUITE_NAMES.get(task, task)


def _call(name: str, params: dict) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def checklist_expect(expect: str, params: dict) -> dict:
    """The project's expectation and parameters as CheckList's ``expect`` object ``{expression, name, params,
    slice}``, as the released suites' export writes it (``Expect.eq(val=None)``, ``Expect.inv(tolerance=0.1)``,
    ``Expect.slice_pairwise(Expect.monotonic(...), <lambda>, agg_fn='all_except_first')``,
    ``Expect.pairwise(diff_up)``, ...). The tolerances are the ones the project's scorer applies
    (:mod:`beluga.score.outcomes`: 0 when absent for inv / monotonic)."""
    if expect not in EXPECTATIONS or expect not in ("eq", "inv", "monotonic", *_WRAPPED):
        raise SuiteError(f"field 'expect': the expectation {expect!r} has no CheckList counterpart")
    if expect == "eq":
        name, cl = "Expect.eq", {"val": params.get("val")}
        expression = _call(name, cl)
    elif expect == "inv":
        name, cl = "Expect.inv", {"tolerance": params.get("tolerance", 0.0)}
        expression = _call(name, cl)
    elif expect == "monotonic":
        name = "Expect.monotonic"
        cl = {"label": params.get("label"), "increasing": bool(params.get("increasing", True)),
              "tolerance": params.get("tolerance", 0.0)}
        expression = _call(name, cl)
    else:
        name, fn = _WRAPPED[expect]
        cl = {"fn": fn, **{k: v for k, v in params.items() if k not in PROJECT_PARAMS}}
        if expect in ("diff_up", "diff_down") and cl.get("tolerance") == 0.1:
            del cl["tolerance"]   # CheckList's diff_up / diff_down hard-code it
        expression = f"{name}({fn})"
    sl = params.get("slice")
    sliced = None
    if sl == "orig_not_neutral":   # CheckList's slice_pairwise on `pred != 1`
        sliced = {"agg_fn": "all_except_first", "kind": "Expect.slice_pairwise", "note": _SLICE_NOTE,
                  "slice_fn": "<lambda>"}
        expression = f"Expect.slice_pairwise({expression}, <lambda>, agg_fn='all_except_first')"
    elif sl == "orig_pred_eq":     # CheckList's slice_orig on `orig == slice_value`
        sliced = {"agg_fn": "all", "kind": "Expect.slice_orig", "note": _SLICE_NOTE, "slice_fn": "<lambda>",
                  "value": params.get("slice_value")}
        expression = f"Expect.slice_orig({expression}, <lambda>, agg_fn='all')"
    elif sl is not None:
        raise SuiteError(f"field 'expect_params': slice {sl!r} has no CheckList counterpart")
    return {"expression": expression, "name": name, "params": cl, "slice": sliced}


def _plain(values) -> list | None:
    """A list column's entries as JSON values (numpy scalars -> int / str; a float NaN -> None)."""
    if values is None or (isinstance(values, float) and values != values):
        return None
    out = []
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            out.append(None)
        elif isinstance(v, str):
            out.append(v)
        else:
            out.append(int(v))
    return out


def suite_records(df: pd.DataFrame, task: str, declared: list[dict] | None = None) -> Iterator[dict]:
    """Every case of a validated suite as a CheckList export record (the module's docs): ``suite``,
    ``case_id``, ``test_index`` / ``case_index`` (the functionality's position in the suite, the case's in its
    functionality), ``functionality``, ``capability``, ``test_type``, ``description`` (``declared``'s),
    ``inputs``, ``n_inputs``, ``label`` / ``labels`` / ``label_scope``, ``meta``, ``agg_fn``, ``expect``,
    ``in_run_subset`` / ``run_position`` (null: a project suite has no CheckList run), and :data:`SIDE_FIELD`.
    A regression suite is refused in one line."""
    ttype = get_task_type(task)
    if not head_of(ttype).checklist_format:
        raise SuiteError(f"suite export: field '--format': task {task!r} is a regression (predicted scores); "
                         "CheckList's tests judge predicted classes or answers, so its format has no expectation "
                         "for a score -- export --format inputs and score with `score --format score`")
    suite_name = checklist_suite_name(ttype.name)
    descriptions = {d.get("functionality"): d.get("description") or "" for d in declared or []}
    func_index: dict[str, int] = {}
    case_index: dict[str, int] = {}
    for r in df.itertuples(index=False):
        ti = func_index.setdefault(r.functionality, len(func_index))
        ci = case_index.get(r.functionality, 0)
        case_index[r.functionality] = ci + 1
        a = [str(x) for x in r.inputs]
        b = None if r.inputs_b is None else [str(x) for x in r.inputs_b]
        inputs = a if b is None else [[x, y] for x, y in zip(a, b)]
        labels, answers = _plain(r.labels), _plain(r.answers)
        shown, other = (answers, "labels") if head_of(ttype).gold_field == "answers" else (labels, "answers")
        params_text = r.expect_params   # the suite's text, or None (no parameters), kept as it is
        params = json_loads(params_text) if params_text else {}
        try:
            expect = checklist_expect(r.expect, params)
        except SuiteError as e:
            raise SuiteError(f"suite export: case_id={r.case_id!r}: {e}") from None
        side = {"task": ttype.name, "expect": r.expect, "expect_params": params_text}
        extra = labels if other == "labels" else answers
        if extra is not None:
            side[other] = extra
        meta = None if r.meta is None else json_loads(r.meta)
        if r.meta is not None and (meta is None or json.dumps(meta) != r.meta):   # ("null" would read back None)
            side["meta"] = r.meta
        same = shown is not None and len(set(map(json.dumps, shown))) == 1 and shown[0] is not None
        yield {"suite": suite_name, "case_id": r.case_id, "test_index": ti, "case_index": ci,
               "functionality": r.functionality, "capability": r.capability, "test_type": r.test_type,
               "description": descriptions.get(r.functionality, ""), "inputs": inputs, "n_inputs": len(a),
               "label": shown[0] if same else None, "labels": shown,
               "label_scope": None if shown is None else ("case" if same else "case_per_input"),
               "meta": meta, "agg_fn": r.agg_fn, "expect": expect, "in_run_subset": None, "run_position": None,
               SIDE_FIELD: side}
