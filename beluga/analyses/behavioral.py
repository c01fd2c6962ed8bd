"""Behavioral testing of any model without training (docs/TESTING.md):
exporting a suite's inputs for models outside Python, reading their
predictions in CheckList's formats, and the failure summary a person reads.

Export order (``suite export``): the suite's cases in file order, each case's
inputs in order — one row per (case_id, input_idx). A predictions file in one
of CheckList's line formats has one line per exported row, in that order.

Prediction formats (``score --format``; default from the file's extension):

- ``parquet`` (``.parquet``), or a keyed table ``csv`` / ``tsv`` / ``jsonl``
  with ``case_id``, ``input_idx`` and ``probs`` (a list, or space-separated
  numbers), ``pred`` (a label index) or, for READ, ``answer``;
- CheckList's line formats (``.txt`` and others: give ``--format``):
  ``pred_only`` (a label index, or for READ the answer string),
  ``binary_conf`` (P(class 1)), ``softmax`` (the probabilities,
  space-separated), ``pred_and_conf`` (label and its probability),
  ``pred_and_softmax`` (label, then the probabilities).

A label index alone becomes a one-hot distribution and ``pred_and_conf`` puts
the rest of the probability mass evenly on the other classes: CheckList's own
expectations compare predicted classes (and, for INV, the predicted class's
confidence), which these reproduce.
"""

from __future__ import annotations

import json
from html import escape as e
from pathlib import Path

import numpy as np
import pandas as pd

from beluga.errors import DataError

KEYED_FORMATS = ("parquet", "csv", "tsv", "jsonl")
LINE_FORMATS = ("pred_only", "binary_conf", "softmax", "pred_and_conf", "pred_and_softmax")
FORMATS = KEYED_FORMATS + LINE_FORMATS


def export_rows(suite: pd.DataFrame, head: str) -> pd.DataFrame:
    """Every input of the suite, one row per (case_id, input_idx), in export order:
    ``text`` (and ``text_b`` for pairs), or ``context`` and ``question`` for QA."""
    cid, idx, a, b = [], [], [], []
    has_b = suite["inputs_b"].notna().any() if "inputs_b" in suite.columns else False
    for r in suite.itertuples(index=False):
        for j, t in enumerate(r.inputs):
            cid.append(str(r.case_id))
            idx.append(j)
            a.append(str(t))
            b.append(str(r.inputs_b[j]) if has_b and r.inputs_b is not None else None)
    out = pd.DataFrame({"case_id": cid, "input_idx": idx})
    if head == "qa":
        out["context"], out["question"] = a, b
    else:
        out["text"] = a
        if has_b:
            out["text_b"] = b
    return out


def write_export(rows: pd.DataFrame, path: str) -> str:
    """TSV by default, JSONL for ``.jsonl``; written atomically. Returns the format."""
    from beluga.io import atomic_path

    p = Path(path)
    fmt = "jsonl" if p.name.endswith(".jsonl") else "tsv"
    if fmt == "tsv":
        bad = rows.drop(columns=["case_id", "input_idx"]).apply(
            lambda c: c.astype(str).str.contains("[\t\n\r]", regex=True)).to_numpy().any()
        if bad:
            raise DataError(f"export {path}: field 'text': an input contains a tab or a line break; write JSONL "
                            "(.jsonl) instead")
    with atomic_path(p) as tmp:
        if fmt == "jsonl":
            rows.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            rows.to_csv(tmp, sep="\t", index=False)
    return fmt


def infer_format(path: str, given: str | None) -> str:
    if given is not None:
        if given not in FORMATS:
            raise DataError(f"predictions {path}: field '--format': {given!r} is not one of {', '.join(FORMATS)}")
        return given
    name = Path(path).name.lower()
    for ext, fmt in ((".parquet", "parquet"), (".csv", "csv"), (".tsv", "tsv"), (".jsonl", "jsonl")):
        if name.endswith(ext):
            return fmt
    raise DataError(f"predictions {path}: field '--format': cannot tell the format from the extension; give "
                    f"--format ({', '.join(FORMATS)})")


def _one_hot(label: int, k: int, path: str, line: int) -> list[float]:
    if not 0 <= label < k:
        raise DataError(f"predictions {path}: line {line}: field 'pred': label {label} is outside 0..{k - 1}")
    v = [0.0] * k
    v[label] = 1.0
    return v


def _numbers(text: str, path: str, line: int, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split()]
    except ValueError:
        raise DataError(f"predictions {path}: line {line}: field '{what}': {text[:60]!r} is not a list of numbers") \
            from None


def parse_line(text: str, fmt: str, k: int, path: str, line: int, qa: bool):
    """One line of a CheckList prediction file -> probabilities (or an answer for QA)."""
    if qa:
        if fmt != "pred_only":
            raise DataError(f"predictions {path}: field '--format': READ predictions are answers (pred_only)")
        return text
    if fmt == "pred_only":
        vals = _numbers(text, path, line, "pred")
        if len(vals) != 1 or vals[0] != int(vals[0]):
            raise DataError(f"predictions {path}: line {line}: field 'pred': {text!r} is not one label index")
        return _one_hot(int(vals[0]), k, path, line)
    if fmt == "binary_conf":
        vals = _numbers(text, path, line, "conf")
        if len(vals) != 1 or k != 2:
            raise DataError(f"predictions {path}: line {line}: field 'conf': binary_conf is one probability of "
                            "class 1 for a two-class model")
        return [1.0 - vals[0], vals[0]]
    if fmt == "softmax":
        return _numbers(text, path, line, "softmax")
    vals = _numbers(text, path, line, "pred")
    if not vals or vals[0] != int(vals[0]):
        raise DataError(f"predictions {path}: line {line}: field 'pred': {text[:60]!r} does not start with a label")
    label = int(vals[0])
    if fmt == "pred_and_softmax":
        return vals[1:]
    if len(vals) != 2:
        raise DataError(f"predictions {path}: line {line}: field 'conf': pred_and_conf is a label and its "
                        "probability")
    conf = vals[1]
    probs = _one_hot(label, k, path, line)
    rest = (1.0 - conf) / (k - 1) if k > 1 else 0.0
    return [conf if i == label else rest for i in range(len(probs))]


def read_predictions(path: str, fmt: str, order: pd.DataFrame | None, k: int, qa: bool) -> pd.DataFrame:
    """A predictions file -> DataFrame(case_id, input_idx, probs | answer).
    ``order``: the export rows (case_id, input_idx) that line formats follow."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"predictions {path}: field 'path': file does not exist")
    col = "answer" if qa else "probs"
    if fmt in LINE_FORMATS:
        lines = p.read_text(encoding="utf-8").splitlines()
        if lines and lines[-1] == "":
            lines = lines[:-1]
        if order is None or len(lines) != len(order):
            raise DataError(f"predictions {path}: field 'path': {len(lines)} line(s) for the "
                            f"{0 if order is None else len(order)} inputs of the export (one line per input, "
                            "in the export's order)")
        values = [parse_line(t.strip() if not qa else t, fmt, k, path, i + 1, qa) for i, t in enumerate(lines)]
        return pd.DataFrame({"case_id": order["case_id"].to_numpy(), "input_idx": order["input_idx"].to_numpy(),
                             col: values})
    if fmt == "parquet":
        df = pd.read_parquet(p)
    elif fmt == "jsonl":
        df = pd.read_json(p, lines=True, dtype=False)
    else:
        df = pd.read_csv(p, sep="\t" if fmt == "tsv" else ",", keep_default_na=False, dtype=str)
    for c in ("case_id", "input_idx"):
        if c not in df.columns:
            raise DataError(f"predictions {path}: field '{c}': column missing (columns: {list(df.columns)})")
    if qa:
        if "answer" not in df.columns:
            raise DataError(f"predictions {path}: field 'answer': column missing")
        return df[["case_id", "input_idx", "answer"]].assign(answer=lambda d: d["answer"].astype(str))
    if "probs" in df.columns:
        probs = [v if isinstance(v, (list, np.ndarray)) else
                 (json.loads(v) if str(v).strip().startswith("[") else _numbers(str(v), path, i + 2, "probs"))
                 for i, v in enumerate(df["probs"])]
    elif "pred" in df.columns:
        probs = [_one_hot(int(v), k, path, i + 2) for i, v in enumerate(df["pred"])]
    else:
        raise DataError(f"predictions {path}: field 'probs': need a probs or pred column (columns: "
                        f"{list(df.columns)})")
    return pd.DataFrame({"case_id": df["case_id"].astype(str), "input_idx": df["input_idx"],
                         "probs": [list(map(float, v)) for v in probs]})


# ---------------------------------------------------------------- the failure summary


def _short(text, n: int = 70) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _first_diff(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _around(text: str, at: int, n: int) -> str:
    """``text`` shortened to ``n`` characters around position ``at`` (where a perturbation changed it)."""
    text = str(text)
    if len(text) <= n or at < n - 25:
        return _short(text, n)
    start = max(0, min(at - 25, len(text) - (n - 2)))
    return "…" + _short(text[start:], n - 1)


def expectation_text(expect: str, params: str | None) -> str:
    p = json.loads(params) if params else {}
    p = {k: v for k, v in p.items() if k != "train"}
    return expect + (" " + ", ".join(f"{k}={v}" for k, v in p.items()) if p else "")


def prediction_text(value, ttype) -> str:
    if ttype.head == "qa":
        return repr(_short(value, 40))
    probs = np.asarray(value, dtype=float)
    suite = ttype.suite_probs(probs[None, :])[0]      # what the expectation sees (SENT: three classes)
    k = int(suite.argmax())
    shown = f"{ttype.suite_labels.get(k, str(k))} ({suite[k]:.2f})"
    if len(probs) != len(suite):   # the model's own classes too
        j = int(probs.argmax())
        shown += f"; model: {ttype.iid_labels.get(j, str(j))} {probs[j]:.2f}"
    return shown


def failure_summary(suite: pd.DataFrame, status: pd.DataFrame, preds: pd.DataFrame, ttype,
                    k: int = 3) -> tuple[pd.DataFrame, dict]:
    """Per functionality (class, type, n cases, n scored, n failed, failure
    rate) and up to ``k`` failing cases each (inputs, expectation, predictions)."""
    from beluga.scoring import FAIL, FILTERED

    st = status.set_index("case_id")["status"]
    col = "answer" if ttype.head == "qa" else "probs"
    pv = preds.set_index(["case_id", "input_idx"])[col]
    rows, examples = [], {}
    for func, g in suite.groupby("functionality", sort=False):
        s = g["case_id"].map(st)
        n_scored, n_failed = int((s != FILTERED).sum()), int((s == FAIL).sum())
        rows.append({"capability": g["capability"].iat[0], "functionality": func, "test_type": g["test_type"].iat[0],
                     "n_cases": len(g), "n_scored": n_scored, "n_failed": n_failed,
                     "failure_rate": n_failed / n_scored if n_scored else float("nan")})
        ex = []
        for r in g[s.to_numpy() == FAIL].head(k).itertuples(index=False):
            inputs = []
            texts = [str(x) for x in r.inputs]
            for j, t in enumerate(texts[:4]):
                b = r.inputs_b[j] if getattr(r, "inputs_b", None) is not None else None
                # where this input differs from the original (the original: from the first perturbation)
                other = texts[1] if j == 0 and len(texts) > 1 else texts[0]
                at = _first_diff(t, other)
                shown = _around(t, at, 70) if b is None else (
                    f"{_short(b, 40)} | {_around(t, at, 50)}" if ttype.head == "qa"
                    else f"{_around(t, at, 45)} | {_short(b, 45)}")
                inputs.append({"input": shown, "prediction": prediction_text(pv.get((str(r.case_id), j)), ttype)})
            expected = expectation_text(r.expect, r.expect_params)
            labels = getattr(r, "labels", None)
            if labels is not None and len(labels) and ttype.head != "qa":
                names = sorted({ttype.suite_labels.get(int(x), str(x)) for x in labels if x is not None})
                expected += f" (label {' / '.join(names)})"
            answers = getattr(r, "answers", None)
            if answers is not None and len(answers) and ttype.head == "qa":
                expected += f" (answer {_short(answers[0], 30)!r})"
            ex.append({"case_id": str(r.case_id), "expectation": expected,
                       "n_inputs": len(r.inputs), "inputs": inputs})
        examples[func] = ex
    return pd.DataFrame(rows), examples


def summary_text(funcs: pd.DataFrame, examples: dict, title: str, width: int = 100) -> str:
    """The terminal summary: per class and functionality the failure rate, then failing cases (≤ width columns)."""
    lines = [title, "=" * min(width, len(title))]
    for cap, g in funcs.groupby("capability", sort=False):
        lines += ["", cap]
        for r in g.itertuples(index=False):
            rate = "   –  " if pd.isna(r.failure_rate) else f"{100 * r.failure_rate:5.1f}%"
            name = _short(r.functionality, width - 36)
            lines.append(f"  {name:<{width - 36}} {r.test_type:<4} fail {rate}  ({r.n_failed}/{r.n_scored})")
            for ex in examples.get(r.functionality, []):
                lines.append(f"      ✗ {_short(ex['expectation'], width - 8)}")
                for inp in ex["inputs"]:
                    pred = inp["prediction"]
                    lines.append(f"        {_short(inp['input'], width - 12 - len(pred))}  → {pred}")
    return "\n".join(line[:width] for line in lines) + "\n"


def summary_markdown(funcs: pd.DataFrame, examples: dict, title: str) -> str:
    def esc(t):
        return str(t).replace("|", "\\|")
    lines = [f"# {title}", "", "| class | functionality | type | failure rate | failed / scored |",
             "|---|---|---|---:|---:|"]
    for r in funcs.itertuples(index=False):
        rate = "–" if pd.isna(r.failure_rate) else f"{100 * r.failure_rate:.1f}%"
        lines.append(f"| {esc(r.capability)} | {esc(r.functionality)} | {r.test_type} | {rate} | "
                     f"{r.n_failed} / {r.n_scored} |")
    for func, exs in examples.items():
        if not exs:
            continue
        lines += ["", f"## {esc(func)}"]
        for ex in exs:
            lines += ["", f"- `{ex['case_id']}` — expected: {esc(ex['expectation'])}"]
            lines += [f"  - {esc(i['input'])} → **{esc(i['prediction'])}**" for i in ex["inputs"]]
    return "\n".join(lines) + "\n"


def summary_html(funcs: pd.DataFrame, examples: dict, title: str) -> str:
    """A standalone page: the failure-rate table and, per functionality, a
    collapsible list of failing cases (no scripts, no external resources)."""

    rows = []
    for r in funcs.itertuples(index=False):
        rate = "–" if pd.isna(r.failure_rate) else f"{100 * r.failure_rate:.1f}%"
        width = 0 if pd.isna(r.failure_rate) else round(100 * r.failure_rate)
        rows.append(f"<tr><td>{e(str(r.capability))}</td><td>{e(str(r.functionality))}</td><td>{r.test_type}</td>"
                    f"<td class='num'><span class='bar' style='width:{width}px'></span> {rate}</td>"
                    f"<td class='num'>{r.n_failed} / {r.n_scored}</td></tr>")
    details = []
    for func, exs in examples.items():
        if not exs:
            continue
        items = []
        for ex in exs:
            inputs = "".join(f"<tr><td>{e(i['input'])}</td><td class='pred'>{e(i['prediction'])}</td></tr>"
                             for i in ex["inputs"])
            items.append(f"<div class='case'><div><code>{e(ex['case_id'])}</code> expected: "
                         f"<b>{e(ex['expectation'])}</b> ({ex['n_inputs']} inputs)</div>"
                         f"<table class='inputs'>{inputs}</table></div>")
        opened = " open" if not details else ""    # the first one open: failures are visible on arrival
        details.append(f"<details{opened}><summary>{e(func)} — {len(exs)} failing case(s) shown</summary>"
                       f"{''.join(items)}</details>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse}"
             "td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left}.num{text-align:right}"
             ".bar{display:inline-block;height:8px;background:#c0392b}.case{margin:.6em 0 .6em 1em}"
             ".pred{color:#c0392b;white-space:nowrap}summary{cursor:pointer;margin:.3em 0}")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{style}</style></head><body><h1>{e(title)}</h1>"
            "<table id='functionalities'><thead><tr><th>class</th><th>functionality</th><th>type</th>"
            f"<th>failure rate</th><th>failed / scored</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<h2>Failing cases</h2><div id='failures'>{''.join(details)}</div></body></html>\n")


# ---------------------------------------------------------------- failures in the pipeline's report


SCENARIO_ORDER = ("standard", "seen", "func", "class", "type")


def pipeline_failures(suite_test: pd.DataFrame, runs: list[dict], ttype, k: int = 3) -> pd.DataFrame:
    """Failing T_test cases of every model, per functionality: the IID model
    (scenario standard), each pair's seen model, and for func / class / type
    the fold model that held the functionality out. ``runs``: dicts with
    configuration, method, partition, fold, ``outcomes`` and ``predictions``
    (DataFrames). One row per shown input."""
    rows = []
    for run in runs:
        out = run["outcomes"]
        held = out[(out["split"] == "suite_test") & out["held_out"].astype(bool)]
        if not len(held):
            continue
        cases = suite_test[suite_test["case_id"].isin(set(held["case_id"]))]
        preds = run["predictions"]
        preds = preds[preds["split"] == "suite_test"]
        _, examples = failure_summary(cases, held[["case_id", "status"]], preds, ttype, k=k)
        scenario = "standard" if run["configuration"] == "iid" else run["partition"]
        for func, exs in examples.items():
            for ex in exs:
                for j, inp in enumerate(ex["inputs"]):
                    rows.append({"scenario": scenario, "configuration": run["configuration"],
                                 "method": run["method"], "fold": run["fold"], "functionality": func,
                                 "case_id": ex["case_id"], "expectation": ex["expectation"], "input_idx": j,
                                 "input": inp["input"], "prediction": inp["prediction"]})
    cols = ["scenario", "configuration", "method", "fold", "functionality", "case_id", "expectation", "input_idx",
            "input", "prediction"]
    df = pd.DataFrame(rows, columns=cols)
    if len(df):
        df["_s"] = df["scenario"].map({s: i for i, s in enumerate(SCENARIO_ORDER)})
        df = df.sort_values(["_s"], kind="stable").drop(columns="_s").reset_index(drop=True)
    return df


def failures_html(df: pd.DataFrame, funcs: pd.DataFrame, task: str, labels: dict) -> str:
    """A standalone page: one collapsible section per functionality, inside it
    the failing cases of each model (scenario, configuration, method, fold)."""

    parts, opened = [], False
    for r in funcs.itertuples(index=False):
        sub = df[df["functionality"] == r.functionality]
        if not len(sub):
            parts.append(f"<details><summary>{e(str(r.functionality))} ({r.test_type}) — no failing case"
                         "</summary></details>")
            continue
        blocks = []
        for (sc, conf, meth, fold), g in sub.groupby(["scenario", "configuration", "method", "fold"], sort=False):
            who = "IID model" if conf == "iid" else f"{labels.get(conf, conf)} {meth}, {sc} ({fold})"
            cases = []
            for cid, c in g.groupby("case_id", sort=False):
                trs = "".join(f"<tr><td>{e(str(x.input))}</td><td class='pred'>{e(str(x.prediction))}</td></tr>"
                              for x in c.itertuples(index=False))
                cases.append(f"<div class='case'><code>{e(str(cid))}</code> expected: "
                             f"<b>{e(str(c['expectation'].iat[0]))}</b><table class='inputs'>{trs}</table></div>")
            blocks.append(f"<h4>{e(who)}</h4>{''.join(cases)}")
        n_models = sub.groupby(["scenario", "configuration", "method", "fold"]).ngroups
        attr = "" if opened else " open"          # the first one open: failures are visible on arrival
        opened = True
        parts.append(f"<details{attr}><summary>{e(str(r.functionality))} ({r.test_type}) — failing cases of "
                     f"{n_models} model(s)</summary>{''.join(blocks)}</details>")
    style = ("body{font-family:sans-serif;margin:2em;max-width:1100px}td{border-bottom:1px solid #ddd;"
             "padding:2px 8px}.case{margin:.5em 0 .5em 1em}.pred{color:#c0392b;white-space:nowrap}"
             "summary{cursor:pointer;margin:.3em 0}h4{margin:.6em 0 .2em}")
    title = f"{task.upper()}: failing T_test cases per functionality"
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title><style>{style}"
            f"</style></head><body><h1>{e(title)}</h1><p>The IID model, each configuration–method pair's seen "
            "model, and in func / class / type the fold model that held the functionality out; a few failing "
            f"cases each, with every shown input and the model's prediction.</p><div id='failures'>{''.join(parts)}"
            "</div></body></html>\n")
