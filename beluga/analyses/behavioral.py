"""Behavioral testing of any model without training (docs/TESTING_MODELS.md): the
failure summary a person reads -- of the ``test`` command over one model or
several (e.g. the training seeds of one system), and the pipeline's pages of
failing T_test cases -- with suite text kept literal in a terminal, in Markdown
(beluga/core/text.py) and in HTML (beluga/core/pages.py). Exporting a suite's
inputs and reading a model's predictions: beluga/analyses/predictions.py.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.pages import render_page
from beluga.core.text import markdown_code, markdown_safe, one_line
from beluga.heads import head_of
from beluga.heads.base import shorten
from beluga.score.expectations import expectation_text
from beluga.score.metrics import STATUS_WORDS, filter_counts, filtered_note, status_word

# ---------------------------------------------------------------- the failure summary


def _first_diff(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _around(text: str, at: int, n: int) -> str:
    """``text`` shortened to ``n`` characters around position ``at`` (where a perturbation changed it)."""
    text = str(text)
    if len(text) <= n or at < n - 25:
        return shorten(text, n)
    start = max(0, min(at - 25, len(text) - (n - 2)))
    return "…" + shorten(text[start:], n - 1)


def prediction_text(value, ttype) -> str:
    """One input's prediction as the summary shows it: an answer (READ), a score (a regression head), or the
    class the expectation sees with its probability (and the model's own class where they differ)."""
    return head_of(ttype).prediction_text(value, ttype)


def _functionality_rates(suite: pd.DataFrame, status: pd.DataFrame) -> pd.DataFrame:
    """One model's failures per functionality (suite order): class, functionality, type, n cases, n scored,
    n failed, failure rate, and the filtered cases' reasons counted (``reasons``: {reason: n}; from the
    status's ``filter_reason`` where it has one, else "not recorded")."""
    from beluga.score.outcomes import FAIL, FILTERED

    st = status.set_index("case_id")["status"]
    why = status.set_index("case_id")["filter_reason"] if "filter_reason" in status.columns else None
    rows = []
    for func, g in suite.groupby("functionality", sort=False):
        s = g["case_id"].map(st)
        n_scored, n_failed = int((s != FILTERED).sum()), int((s == FAIL).sum())
        filtered = g["case_id"][(s == FILTERED).to_numpy()]
        reasons = (filter_counts(filtered.map(why)) if why is not None
                   else ({"reason not recorded": len(filtered)} if len(filtered) else {}))
        rows.append({"capability": g["capability"].iat[0], "functionality": func, "test_type": g["test_type"].iat[0],
                     "n_cases": len(g), "n_scored": n_scored, "n_failed": n_failed,
                     "failure_rate": n_failed / n_scored if n_scored else float("nan"), "reasons": reasons})
    return pd.DataFrame(rows)


def _summed_reasons(per_model: list[pd.DataFrame]) -> list[dict[str, int]]:
    """Per functionality, the filtered cases' reasons summed over the models, most frequent first."""
    out = []
    for row in zip(*(f["reasons"] for f in per_model)):
        total: dict[str, int] = {}
        for counts in row:
            for k, v in counts.items():
                total[k] = total.get(k, 0) + v
        out.append(dict(sorted(total.items(), key=lambda kv: -kv[1])))
    return out


def failure_summary(suite: pd.DataFrame, statuses: list[pd.DataFrame], preds: list[pd.DataFrame], ttype,
                    models: list[str], k: int = 3) -> tuple[pd.DataFrame, dict]:
    """The failures of one model or several (e.g. the training seeds of one system) tested on the same suite,
    ``statuses[i]`` / ``preds[i]`` being model ``models[i]``'s.

    Per functionality (suite order): class, functionality, type, cases; ``n_scored`` / ``n_failed`` /
    ``n_filtered`` summed over the models, ``filtered`` (their reasons counted,
    :func:`beluga.score.metrics.filtered_note`) and ``status`` (:func:`beluga.score.metrics.status_word`:
    ``fail``, ``pass``
    or ``no scored cases``); ``failure_rate``, the mean over the models of each model's own failure rate (a
    model that scored no case of the functionality left out). With two or more models also ``n_models`` (the
    models in that mean), ``failure_rate_sd`` (sample standard deviation, ``ddof=1``; NaN where one model scored
    it), ``_min``, ``_max`` and one column per model (:func:`model_rate_column`). Failing cases: up to ``k`` per
    functionality, those failing for the most models first (suite order among equals), each with its inputs,
    expectation, ``n_failing``, ``failing`` (indices of the models that fail it) and per input the
    ``predictions`` of every model."""
    from beluga.score.outcomes import FAIL

    if not (len(models) == len(statuses) == len(preds)) or not models:
        raise ValueError("failure_summary: one status and one predictions frame per model, one or more")
    suite = suite.reset_index(drop=True)
    per_model = [_functionality_rates(suite, st) for st in statuses]
    funcs = per_model[0][["capability", "functionality", "test_type", "n_cases"]].copy()
    for f in per_model[1:]:
        if f["functionality"].tolist() != funcs["functionality"].tolist():   # same suite: cannot happen
            raise ValueError("failure_summary: the models' functionalities differ")
    funcs["n_scored"] = sum(f["n_scored"].to_numpy() for f in per_model)
    funcs["n_failed"] = sum(f["n_failed"].to_numpy() for f in per_model)
    rates = pd.DataFrame({m: f["failure_rate"].to_numpy(dtype=float) for m, f in zip(models, per_model)})
    funcs["failure_rate"] = rates.mean(axis=1, skipna=True).to_numpy()
    if len(models) > 1:
        funcs["n_models"] = rates.notna().sum(axis=1).astype(int).to_numpy()
        funcs["failure_rate_sd"] = rates.std(axis=1, ddof=1, skipna=True).to_numpy()
        funcs["failure_rate_min"] = rates.min(axis=1, skipna=True).to_numpy()
        funcs["failure_rate_max"] = rates.max(axis=1, skipna=True).to_numpy()
        for m in models:
            funcs[model_rate_column(m)] = rates[m].to_numpy()
    funcs["n_filtered"] = len(models) * funcs["n_cases"] - funcs["n_scored"]
    funcs["filtered"] = [filtered_note(c) for c in _summed_reasons(per_model)]
    funcs["status"] = [status_word(k, f) for k, f in zip(funcs["n_scored"], funcs["n_failed"])]

    col = {"qa": "answer", "regression": "score"}.get(ttype.head, "probs")
    pvs = [p.set_index(["case_id", "input_idx"])[col] for p in preds]
    failed = pd.DataFrame(np.stack([suite["case_id"].map(st.set_index("case_id")["status"]).to_numpy() == FAIL
                                    for st in statuses], axis=1), index=suite.index)     # cases x models
    n_failing = failed.sum(axis=1)
    examples = {}
    for func, g in suite.groupby("functionality", sort=False):
        counts = n_failing.loc[g.index]
        ranked = counts[counts > 0].sort_values(ascending=False, kind="stable").head(k)
        ex = []
        for i, r in zip(ranked.index, g.loc[ranked.index].itertuples(index=False)):
            inputs = [{"input": shown,
                       "predictions": [prediction_text(pv.get((str(r.case_id), j)), ttype) for pv in pvs]}
                      for j, shown in _shown_inputs(r, ttype)]
            ex.append({"case_id": str(r.case_id), "expectation": _expected(r, ttype), "n_inputs": len(r.inputs),
                       "n_failing": int(counts[i]), "failing": [int(m) for m in np.flatnonzero(failed.loc[i])],
                       "inputs": inputs})
        examples[func] = ex
    return funcs, examples


def _shown_inputs(r, ttype) -> list[tuple[int, str]]:
    """(index, text shown) of a case's first four inputs, each around where it differs from the original."""
    shown_inputs = []
    texts = [str(x) for x in r.inputs]
    for j, t in enumerate(texts[:4]):
        b = r.inputs_b[j] if getattr(r, "inputs_b", None) is not None else None
        # where this input differs from the original (the original: from the first perturbation)
        other = texts[1] if j == 0 and len(texts) > 1 else texts[0]
        at = _first_diff(t, other)
        shown = _around(t, at, 70) if b is None else (
            f"{shorten(b, 40)} | {_around(t, at, 50)}" if head_of(ttype).second_text_first
            else f"{_around(t, at, 45)} | {shorten(b, 45)}")
        shown_inputs.append((j, shown))
    return shown_inputs


def _expected(r, ttype) -> str:
    """A case's expectation as the summary shows it (with its label or answer)."""
    expected = expectation_text(r.expect, json_loads(r.expect_params) if r.expect_params else {},
                                ttype.suite_labels)
    gold = getattr(r, head_of(ttype).gold_field, None)
    if gold is not None and len(gold):
        expected += f" ({head_of(ttype).gold_text(gold, ttype)})"
    return expected


def model_labels(n: int) -> list[str]:
    """The short names of ``n`` models in a summary over several models: m1, m2, ... (command-line order)."""
    return [f"m{i}" for i in range(1, n + 1)]


def model_rate_column(model: str) -> str:
    """The column of one model's failure rate in functionalities.csv over several models."""
    return f"failure_rate[{model}]"


# ---------------------------------------------------------------- the summary: terminal, Markdown, HTML
#
# One model or several: the same tables and failing cases; several models add the models' labels (m1, m2, ...),
# the mean ± sd and min–max of the failure rate, each model's rate, and per failing case the models it fails for.

def _percent(x) -> str:
    return "–" if pd.isna(x) else f"{100 * x:.1f}%"


def _mean_sd(r: dict) -> str:
    """``"66.7 ± 57.7%"`` (the mean alone with one model scored; ``–`` with none)."""
    from beluga.core.seeds import plus_minus

    return "–" if pd.isna(r["failure_rate"]) else plus_minus(r["failure_rate"], r["failure_rate_sd"]) + "%"


def _min_max(r: dict) -> str:
    lo, hi = r["failure_rate_min"], r["failure_rate_max"]
    return "–" if pd.isna(lo) else f"{100 * lo:.1f}–{100 * hi:.1f}%"


def _fails_for(ex: dict, labels: list[str]) -> str:
    return (f"fails for {ex['n_failing']} of {len(labels)} models "
            f"({', '.join(labels[i] for i in ex['failing'])})")


def _tail(text: str, n: int) -> str:
    """``text`` shortened to its last ``n`` characters (a path's distinctive end)."""
    return text if len(text) <= n else "…" + text[-(n - 1):]


def _text_rate(r: dict, n: int) -> str:
    """A functionality's failure rate and counts in the terminal, right-aligned under the header's columns:
    ``12.5%   1 / 8`` (failure rate, failed / scored) for one model, ``12.5 ±  4.2%  (8.3–16.7)`` (mean ± sd,
    min–max) over several."""
    if n == 1:
        rate = "–" if pd.isna(r["failure_rate"]) else f"{100 * r['failure_rate']:.1f}%"
        counts = f"{r['n_failed']} / {r['n_scored']}"
        return f"{rate:>{_RATE_WIDTH[1]}}  {counts:>{_COUNT_WIDTH[1]}}"
    mean = "–" if pd.isna(r["failure_rate"]) else (
        f"{100 * r['failure_rate']:5.1f}%" if pd.isna(r["failure_rate_sd"])
        else f"{100 * r['failure_rate']:5.1f} ± {100 * r['failure_rate_sd']:4.1f}%")
    spread = "" if pd.isna(r["failure_rate_min"]) else (
        f"({100 * r['failure_rate_min']:.1f}–{100 * r['failure_rate_max']:.1f})")
    return f"{mean:>{_RATE_WIDTH[2]}}  {spread:<{_COUNT_WIDTH[2]}}"


#: the terminal table's rate and count columns (one model: failure rate, failed / scored; several: mean ± sd,
#: min–max), by 1 (one model) and 2 (several): their headers and widths
_RATE_HEAD = {1: ("failure rate", "failed / scored"), 2: ("failure rate ± sd", "(min–max)")}
_RATE_WIDTH = {1: 12, 2: 17}
_COUNT_WIDTH = {1: 15, 2: 13}

#: what a constant predictor's failure rates are, after the flag's description of it
CONSTANT_MEANS = "describe that constant, not the model's behaviour"


def constant_lines(constants: list[dict | None] | None, models: list[str]) -> list[str]:
    """The flag of each model whose predictions are (nearly) the same for every input
    (:func:`beluga.cli.results.constant_predictors`): one sentence each, ``⚠ constant predictor: neutral for all
    40 inputs (P(positive) 0.52 ± 0.00); the failure rates describe that constant, not the model's behaviour``
    (over several models named by their label, m1, m2, ...)."""
    if len(models) == 1:
        return [f"⚠ constant predictor: {c['text']}; the failure rates {CONSTANT_MEANS}"
                for c in (constants or []) if c]
    return [f"⚠ {lab} is a constant predictor: {c['text']}; its failure rates {CONSTANT_MEANS}"
            for lab, c in zip(model_labels(len(models)), constants or []) if c]


def _title_lines(title: str, width: int) -> list[str]:
    """The title in lines of at most ``width`` characters, nothing cut: broken at spaces, a longer word (a
    path) at ``/`` where it can, else at the width."""
    words = re.sub(r"(?<=/)(?=[^/\s])", "\u200b", title)   # a break point after each /
    lines = textwrap.wrap(words, width=width, break_long_words=True, break_on_hyphens=False)
    out = [line.replace("\u200b", "") for line in lines]
    return out or [""]


def warning_lines(warnings: list[str] | None) -> list[str]:
    """The summary's warnings (``test``: a causal LM's prompts cut at their head), each ``⚠ <sentence>``."""
    return [f"⚠ {w}" for w in warnings or []]


def summary_text(funcs: pd.DataFrame, examples: dict, title: str, models: list[str],
                 constants: list[dict | None] | None = None, width: int = 100,
                 warnings: list[str] | None = None) -> str:
    """The terminal summary of :func:`failure_summary` over ``models``: the title (whole, wrapped at ``width``),
    the ``warnings`` (:func:`warning_lines`) and the flag of a constant predictor (:func:`constant_lines`), wrapped,
    a header naming the columns, per class
    and functionality its type, failure rate, failed / scored cases and result word, the filtered cases with their
    reasons, then failing cases (≤ width columns; over several models, each case's inputs with the predictions of
    the first model it fails for). Suite text is shown with its control characters escaped
    (:func:`terminal_safe`)."""
    t = one_line
    n, labels = len(models), model_labels(len(models))
    head = _title_lines(t(title), width)
    lines = [*head, "=" * max(len(x) for x in head)]
    if n > 1:
        lines.append(f"failure rate: mean ± sd over {n} models (min–max)")
        lines += [f"  {lab}  {_tail(t(m), width - 4 - len(lab))}" for lab, m in zip(labels, models)]
    for flag in warning_lines(warnings):   # never broken at a hyphen: --max-length is read whole
        lines += textwrap.wrap(t(flag), width, subsequent_indent="  ", break_on_hyphens=False)
    for flag in constant_lines(constants, models):
        lines += textwrap.wrap(t(flag), width, subsequent_indent="  ")
    k = 1 if n == 1 else 2
    word_width = max(len(w) for w in STATUS_WORDS)
    name_width = max(12, width - 2 - 1 - 4 - 2 - _RATE_WIDTH[k] - 2 - _COUNT_WIDTH[k] - 2 - word_width)
    rate, count = _RATE_HEAD[k]
    count = f"{count:>{_COUNT_WIDTH[k]}}" if k == 1 else f"{count:<{_COUNT_WIDTH[k]}}"   # as the values align
    lines += ["", f"  {'class / functionality':<{name_width}} {'type':<4}  {rate:>{_RATE_WIDTH[k]}}  {count}  status"]
    for cap, g in funcs.groupby("capability", sort=False):
        lines += ["", t(cap)]
        for r in g.to_dict("records"):
            name = shorten(t(r["functionality"]), name_width)
            lines.append(f"  {name:<{name_width}} {t(r['test_type']):<4}  {_text_rate(r, n)}  {r['status']}")
            if r.get("filtered"):   # wrapped, never cut: every reason and its count is read
                lines += textwrap.wrap(t(r["filtered"]), width, initial_indent=" " * 6, subsequent_indent=" " * 8)
            for ex in examples.get(r["functionality"], []):
                if n == 1:
                    lines.append(f"      ✗ {shorten(t(ex['expectation']), width - 8)}")
                else:
                    fails = _fails_for(ex, labels)
                    lines.append(f"      ✗ {shorten(t(ex['expectation']), max(20, width - 12 - len(fails)))} — {fails}")
                first = ex["failing"][0]
                for inp in ex["inputs"]:
                    pred = t(inp["predictions"][first]) + ("" if n == 1 else f" ({labels[first]})")
                    room = width - 12 - len(pred) if n == 1 else max(10, width - 12 - len(pred))
                    lines.append(f"        {shorten(t(inp['input']), room)}  → {pred}")
    return "\n".join(lines[:len(head) + 1] + [line[:width] for line in lines[len(head) + 1:]]) + "\n"


def summary_markdown(funcs: pd.DataFrame, examples: dict, title: str, models: list[str],
                     constants: list[dict | None] | None = None, warnings: list[str] | None = None) -> str:
    """The summary of :func:`failure_summary` over ``models`` as Markdown, the ``warnings`` and a constant predictor
    flagged under the title (:func:`warning_lines`, :func:`constant_lines`); suite text is literal
    (:func:`markdown_safe`, case ids and model names as code spans)."""
    esc = markdown_safe
    n, labels = len(models), model_labels(len(models))
    lines = [f"# {esc(title)}", ""]
    lines += [x for flag in warning_lines(warnings) + constant_lines(constants, models)
              for x in (f"**{esc(flag)}**", "")]
    if n == 1:
        lines += ["| class | functionality | type | status | failure rate | failed / scored | filtered |",
                  "|---|---|---|---|---:|---:|---|"]
    else:
        named = ", ".join(f"{lab} {markdown_code(m)}" for lab, m in zip(labels, models))
        lines += [f"Failure rate: mean ± sd over {n} models ({named}); min–max and each model's rate "
                  "beside it; failed / scored summed over the models.", "",
                  "| class | functionality | type | status | failure rate (mean ± sd) | min–max | "
                  + " | ".join(labels) + " | failed / scored | filtered |",
                  "|---|---|---|---|---:|---:|" + "---:|" * n + "---:|---|"]
    for r in funcs.to_dict("records"):
        rate = _percent(r["failure_rate"]) if n == 1 else " | ".join(
            [_mean_sd(r), _min_max(r)] + [_percent(r[model_rate_column(m)]) for m in models])
        lines.append(f"| {esc(r['capability'])} | {esc(r['functionality'])} | {esc(r['test_type'])} "
                     f"| {r['status']} | {rate} | {r['n_failed']} / {r['n_scored']} | {esc(r['filtered'])} |")
    for func, exs in examples.items():
        if not exs:
            continue
        lines += ["", f"## {esc(func)}"]
        for ex in exs:
            fails = "" if n == 1 else f" — {_fails_for(ex, labels)}"
            lines += ["", f"- {markdown_code(ex['case_id'])} — expected: {esc(ex['expectation'])}{fails}"]
            lines += [f"  - {esc(i['input'])} → "
                      + " · ".join(("" if n == 1 else f"{lab} ") + f"**{esc(p)}**"
                                   for lab, p in zip(labels, i["predictions"]))
                      for i in ex["inputs"]]
    return "\n".join(lines) + "\n"


def summary_html(funcs: pd.DataFrame, examples: dict, title: str, models: list[str],
                 constants: list[dict | None] | None = None, warnings: list[str] | None = None) -> str:
    """The summary of :func:`failure_summary` over ``models`` as a standalone page (beluga/templates/summary.html.j2,
    :func:`beluga.core.pages.render_page`: every value escaped): the ``warnings`` (:func:`warning_lines`) and a
    constant predictor flagged (:func:`constant_lines`), the failure-rate table and, per functionality, a
    collapsible list of failing cases (no scripts, no external resources)."""
    n, labels = len(models), model_labels(len(models))
    rows = []
    for r in funcs.to_dict("records"):
        rows.append({"capability": r["capability"], "functionality": r["functionality"], "test_type": r["test_type"],
                     "width": 0 if pd.isna(r["failure_rate"]) else round(100 * r["failure_rate"]),
                     "rate": _percent(r["failure_rate"]) if n == 1 else _mean_sd(r),
                     "min_max": None if n == 1 else _min_max(r),
                     "rates": [] if n == 1 else [_percent(r[model_rate_column(m)]) for m in models],
                     "failed": r["n_failed"], "scored": r["n_scored"], "status": r["status"],
                     "filtered": r["filtered"]})
    sections = [{"functionality": func,
                 "cases": [{"case_id": ex["case_id"], "expectation": ex["expectation"], "n_inputs": ex["n_inputs"],
                            "fails": None if n == 1 else _fails_for(ex, labels),
                            "inputs": [{"input": i["input"],
                                        "predictions": [{"text": p, "failing": k in ex["failing"]}
                                                        for k, p in enumerate(i["predictions"])]}
                                       for i in ex["inputs"]]}
                           for ex in exs]}
                for func, exs in examples.items() if exs]      # the first one open: failures are visible on arrival
    return render_page("summary.html.j2", title=title, rows=rows, sections=sections,
                       models=[{"label": lab, "name": m} for lab, m in zip(labels, models)],
                       constants=constant_lines(constants, models), warnings=warning_lines(warnings))


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
        _, examples = failure_summary(cases, [held[["case_id", "status"]]], [preds], ttype, [run["method"]], k=k)
        scenario = "standard" if run["configuration"] == "iid" else run["partition"]
        for func, exs in examples.items():
            for ex in exs:
                for j, inp in enumerate(ex["inputs"]):
                    rows.append({"scenario": scenario, "configuration": run["configuration"],
                                 "method": run["method"], "fold": run["fold"], "functionality": func,
                                 "case_id": ex["case_id"], "expectation": ex["expectation"], "input_idx": j,
                                 "input": inp["input"], "prediction": inp["predictions"][0]})
    cols = ["scenario", "configuration", "method", "fold", "functionality", "case_id", "expectation", "input_idx",
            "input", "prediction"]
    df = pd.DataFrame(rows, columns=cols)
    if len(df):
        df["_s"] = df["scenario"].map({s: i for i, s in enumerate(SCENARIO_ORDER)})
        df = df.sort_values(["_s"], kind="stable").drop(columns="_s").reset_index(drop=True)
    return df


def failures_markdown(df: pd.DataFrame, task: str) -> str:
    """The pipeline's failing cases (:func:`pipeline_failures`) as one Markdown table; suite text is literal
    (:func:`markdown_safe`: a "|" is escaped, raw HTML stays text)."""
    esc = markdown_safe
    md = [f"# {esc(task.upper())}: failing T_test cases", "",
          "| scenario | model | functionality | case | expected | input | prediction |",
          "|---|---|---|---|---|---|---|"]
    md += [f"| {esc(r.scenario)} | {esc(f'{r.configuration}/{r.method}/{r.fold}')} | {esc(r.functionality)} | "
           f"{esc(r.case_id)} | {esc(r.expectation)} | {esc(r.input)} | {esc(r.prediction)} |"
           for r in df.itertuples(index=False)]
    return "\n".join(md) + "\n"


def failures_html(df: pd.DataFrame, funcs: pd.DataFrame, task: str, labels: dict) -> str:
    """A standalone page (beluga/templates/failures.html.j2, every value escaped): one collapsible section per
    functionality, inside it the failing cases of each model (scenario, configuration, method, fold)."""
    sections = []
    for r in funcs.itertuples(index=False):
        sub = df[df["functionality"] == r.functionality]
        blocks = []
        for (sc, conf, meth, fold), g in sub.groupby(["scenario", "configuration", "method", "fold"], sort=False):
            who = "IID model" if conf == "iid" else f"{labels.get(conf, conf)} {meth}, {sc} ({fold})"
            blocks.append({"who": who, "cases": [
                {"case_id": cid, "expectation": c["expectation"].iat[0],
                 "inputs": [{"input": x.input, "prediction": x.prediction} for x in c.itertuples(index=False)]}
                for cid, c in g.groupby("case_id", sort=False)]})
        opened = bool(blocks) and not any(s["open"] for s in sections)   # the first one open: failures on arrival
        sections.append({"functionality": r.functionality, "test_type": r.test_type, "models": blocks,
                         "open": opened})
    return render_page("failures.html.j2", title=f"{task.upper()}: failing T_test cases per functionality",
                       sections=sections)
