"""Writing suites outside the pipeline: ``python -m beluga suite build`` (a spec rendered into a suite file, with
a summary per functionality and sample cases) and ``python -m beluga suite perturb`` (a user's own unlabeled
sentences perturbed into an INV / DIR suite). Both go through the spec engine (beluga/suites/spec/)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from beluga.core.bounds import yaml_load
from beluga.core.errors import ConfigError
from beluga.core.io import check_not_input
from beluga.core.progress import progress
from beluga.core.tasks import get_task_type
from beluga.core.text import one_line
from beluga.heads import head_of
from beluga.score.expectations import filter_condition
from beluga.suites import lexicons as lex
from beluga.suites import perturb as perturbations
from beluga.suites import spec as suite_spec
from beluga.suites.build import checked_suite
from beluga.suites.format import EXPECTATIONS, functionality_table, save_suite
from beluga.suites.templates import BUILTIN_LEXICONS


def check_suite_out(out: str, inputs: dict[str, str | None], command: str) -> None:
    """The output is a suite file (.parquet) and never one of the inputs (the spec, every file it reads, the
    source)."""
    if not str(out).endswith(".parquet"):
        raise ConfigError(f"suite {command}: field '--out': {out} must be a .parquet suite file")
    check_not_input(f"suite {command}", "--out", out, inputs)


def read_source_table(path: str, where: str) -> pd.DataFrame:
    """A source file as a table: a .txt file's lines as column ``text``; a CSV / TSV / Parquet / JSONL table."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{where}: {path} does not exist")
    if "".join(p.suffixes[-2:]).lower().endswith(".txt"):
        return pd.DataFrame({"text": suite_spec.read_text_source(path, None, where)})
    return suite_spec.read_sentence_table(path, where)


# ---------------------------------------------------------------------------------- suite build
def summary(df: pd.DataFrame, ttype, samples: int = 1) -> str:
    """One line per functionality (class, type, expectation, cases, inputs, cases from real sentences) and
    ``samples`` sample cases each, their labels by name in task ``ttype``'s words; names on one line with their
    control characters escaped (:func:`beluga.core.text.one_line`), texts as their repr."""
    lines = []
    for func, rows in df.groupby("functionality", sort=False):
        first = rows.iloc[0]
        real = sum(1 for m in rows["meta"] if isinstance(m, str) and '"source": "real"' in m)
        n_inputs = int(rows["inputs"].map(len).sum())
        distinct = len({(tuple(r["inputs"]), None if r.get("inputs_b") is None else tuple(r["inputs_b"]))
                        for _, r in rows.iterrows()})
        repeated = (f" — only {distinct} distinct: the templates or sentences make fewer, so cases repeat"
                    if distinct < len(rows) else "")
        when = filter_condition(first["expect"], json.loads(first["expect_params"] or "{}"), ttype.suite_labels)
        lines.append(f"{one_line(first['capability'])} / {one_line(func)} ({one_line(first['test_type'])}, "
                     f"{one_line(first['expect'])}): {len(rows)} cases, "
                     f"{n_inputs} inputs" + (f", {real} from real sentences" if real else "") + repeated
                     + (f"; when tested, {when}" if when else ""))
        for _, r in rows.head(samples).iterrows():
            lines.append("    " + _case_text(r, ttype))
    return "\n".join(lines)


def _case_text(r: pd.Series, ttype) -> str:
    inputs = list(r["inputs"])
    b = r.get("inputs_b")
    b = None if b is None or (isinstance(b, float) and pd.isna(b)) else list(b)
    texts = [x if b is None else f"{x} | {y}" for x, y in zip(inputs, b or [None] * len(inputs))]
    lab = r.get("labels")
    ans = r.get("answers")
    tail = ""
    if lab is not None and not (isinstance(lab, float) and pd.isna(lab)):
        tail = f"  ({head_of(ttype).gold_text(list(lab), ttype)})"   # label negative / score 3
    elif ans is not None and not (isinstance(ans, float) and pd.isna(ans)):
        tail = f"  (answer {list(ans)[0]!r})"
    shown = " -> ".join(repr(t) for t in texts[:3]) + (" ..." if len(texts) > 3 else "")
    return shown + tail


def build_command(spec: str, out: str, source: str | None = None, seed: int | None = None,
                  cases: int | None = None, max_perturbations: int | None = None, max_words: int | None = None,
                  functionalities: list[str] | None = None, samples: int = 1) -> str:
    """``python -m beluga suite build``: render ``spec`` (a packaged name or a file) into the suite file ``out``
    (written whole, or not at all), its pool sources read from ``source`` (a text file, one sentence per line,
    or a table). Deterministic for the seed. Returns the summary."""
    s = suite_spec.load_spec(spec)
    check_suite_out(out, {"source": source, **{f"file {f}": f for f in suite_spec.spec_files(s)}}, "build")
    if source and not suite_spec.uses_pool(s):
        raise ConfigError(f"suite build: field '--source': the spec {s.path} has no pool source, so --source would "
                          "not be read (its sources: " + (", ".join(s.data.get("sources") or {}) or "none") + ")")
    pool = read_source_table(source, "suite build: field '--source'") if source else None
    texts = suite_spec.load_sources(s, pool)
    wanted = [f for f in s.functionalities if functionalities is None or f["name"] in functionalities]
    with progress(len(wanted), "rendering", "functionality") as shown:   # a tqdm bar on a terminal, else nothing
        df = suite_spec.render_spec(s, texts, seed=seed, cases_per_functionality=cases,
                                    max_perturbations=max_perturbations, max_words=max_words,
                                    functionalities=functionalities, on_functionality=shown)
    ttype = get_task_type(s.task)
    table = suite_spec.declared(s, functionalities)
    df = checked_suite(df, ttype, f"suite spec {s.path}", table)
    save_suite(df, out, declared=table, task=ttype.name)
    funcs = functionality_table(df)
    used, where = s.seed_choice(seed, "--seed")
    head = (f"{s.name} ({s.task}): {len(df)} cases in {len(funcs)} functionalities, seed {used} ({where}) -> "
            f"{out}")
    return head + "\n" + summary(df, ttype, samples) + "\n"


# ---------------------------------------------------------------------------------- suite perturb
def parse_values(items: list[str] | None, where: str) -> dict:
    """``KEY=VALUE`` items (the value read as YAML: numbers, booleans, lists) -> a dict."""
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{where}: {item!r} is not KEY=VALUE")
        try:
            out[key.strip()] = yaml_load(value)
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


def perturb_command(input_path: str, perturbation: str, test_type: str, expect: str, out: str,
                    params: list[str] | None = None, expect_params: list[str] | None = None,
                    task: str = "sent", column: str | None = None, apply_to: str | None = None,
                    functionality: str | None = None, capability: str = "Custom", seed: int = 0,
                    max_perturbations: int = 3, max_words: int = 60) -> str:
    """``python -m beluga suite perturb``: every sentence of ``input_path`` (a text file, one per line, or a
    table's column(s)) with the perturbations ``perturbation`` makes of it becomes an INV / DIR case (sentences
    it does not change are left out); expectation ``expect`` with ``expect_params``. para / read: two columns
    (``column: a,b``), ``apply_to`` the segment to change. Written whole or not at all; returns the summary."""
    if test_type not in ("INV", "DIR"):
        raise ConfigError(f"suite perturb: field '--type': {test_type!r} must be INV or DIR")
    if expect not in EXPECTATIONS:
        raise ConfigError(f"suite perturb: field '--expect': unknown expectation {expect!r} "
                          f"({', '.join(EXPECTATIONS)})")
    where = "suite perturb: field '--input'"
    check_suite_out(out, {"input": input_path}, "perturb")
    perturbations.get_perturbation(perturbation)
    table = read_source_table(input_path, where)
    single = not get_task_type(task).pair   # sent, acceptability: one text per input
    cols = [c.strip() for c in column.split(",")] if column else (["text"] if single else [])
    if not single and len(cols) != 2:
        raise ConfigError(f"suite perturb: field '--column': a {task} suite needs two columns (--column a,b)")
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ConfigError(f"{where}: {input_path} has no column {missing[0]!r} (it has "
                          f"{', '.join(map(str, table.columns))})")
    pool = table[cols].rename(columns=dict(zip(cols, ["text", "text_b"][:len(cols)])))
    n = len(pool)
    if not n:
        raise ConfigError(f"{where}: {input_path} has no sentence")
    name = functionality or perturbation
    data = {"spec_version": 1, "name": "perturbed", "task": task, "id_prefix": "perturbed",
            "sources": {"input": {"pool": "text" if single else ["text", "text_b"]}},
            "functionalities": [{"name": name, "class": capability, "type": test_type,
                                 "expect": {"name": expect, **parse_values(expect_params, "suite perturb: field "
                                                                                         "'--expect-param'")},
                                 "source": "input",
                                 "perturb": {"name": perturbation, **({"apply_to": apply_to} if apply_to else {}),
                                             **parse_values(params, "suite perturb: field '--param'")}}]}
    s = suite_spec.spec_from_data(data, "(suite perturb command)")
    texts = suite_spec.load_sources(s, pool)
    try:
        df = suite_spec.render_spec(s, texts, seed=seed, cases_per_functionality=n,
                                    max_perturbations=max_perturbations, max_words=max_words, fill_up=False)
    except ConfigError as e:
        if ": no test case: " not in str(e):
            raise
        raise ConfigError(f"suite perturb: field '--perturbation': {perturbation!r} changed none of the {n} "
                          f"sentences of {input_path} (of 3 to {max_words} words)") from None
    ttype = get_task_type(task)
    table = suite_spec.declared(s)
    df = checked_suite(df, ttype, "suite perturb", table)
    save_suite(df, out, declared=table, task=ttype.name)
    used = json.dumps(data["functionalities"][0]["perturb"])
    return f"{len(df)} of {n} sentences perturbed by {perturbation} ({used}) -> {out}\n" + summary(df, ttype, 3) + "\n"


def perturbation_list() -> str:
    """Every built-in perturbation with its parameters and their defaults."""
    lines = []
    for name, p in perturbations.PERTURBATIONS.items():
        params = ", ".join(f"{k}={_short(v)}" for k, v in p.params.items())
        lines.append(f"{name}({params}): {p.description}")
    return "\n".join(lines) + "\n"


def _short(v) -> str:
    if isinstance(v, (list, tuple)) and len(v) > 4:
        return f"[{len(v)} items]"
    return repr(v)


# ---------------------------------------------------------------------------------- suite lexicons
def _entry(x) -> str:
    return " / ".join(map(str, x)) if isinstance(x, (tuple, list)) else str(x)


def _lexicon_tables() -> list[tuple[str, dict]]:
    """(heading, {name: entries}) of the built-in word lists: the templates' placeholders, then the lists a
    perturbation parameter names (beluga/suites/lexicons.py; word groups: pairs and synonym groups)."""
    return [("template placeholders ({name} in a spec's templates)", dict(BUILTIN_LEXICONS)),
            ("word lists (a perturbation's lexicon parameters, case-insensitive)", dict(lex.LEXICONS)),
            ("word groups (pairs and groups: the perturbations' pairs and synonyms)", dict(lex.WORD_GROUPS))]


def lexicon_list(name: str | None = None) -> str:
    """``python -m beluga suite lexicons [NAME]``: every built-in word list with its size and first entries;
    with ``name``, its entries one a line (a placeholder first, then a perturbation list, case-insensitive);
    an unknown name is one line listing the names."""
    tables = _lexicon_tables()
    if name is None:
        lines = []
        for heading, table in tables:
            lines += ["" if lines else None, heading]
            for k, v in table.items():
                first = ", ".join(_entry(x) for x in v[:4])
                lines.append(f"  {k} ({len(v)}): {first}" + (", ..." if len(v) > 4 else ""))
        return "\n".join(x for x in lines if x is not None) + "\n"
    for heading, table in tables:
        found = table.get(name) if name in table else (table.get(name.lower()) if "case" in heading else None)
        if found is not None:
            return "\n".join(_entry(x) for x in found) + "\n"
    names = sorted({k for _, table in tables for k in table})
    raise ConfigError(f"suite lexicons: field 'NAME': unknown word list {name!r} (known: {', '.join(names)})")
