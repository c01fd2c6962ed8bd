"""Prediction diagnostics: degenerate solutions and prediction confidence.

The paper (section 5.3, 5.5) inspects two failure modes that pass rates alone
hide:

- degenerate solutions: after suite training a model predicts (almost) always
  the same class (SENT IID->T: 95% "negative" on SST-2 but 0.3% on the suite's
  MFTs) or, for extractive QA, the same (often empty) span;
- DIR applicability: confidence-based DIR expectations are hard to fail (and
  give no training signal) when the model is very confident (mean confidence
  0.97 on the SENT suite for the IID model).

``run_diagnostics`` describes one model's prediction file (the Parquet file
written by the finetune / predict steps: split, case_id, input_idx and probs (or
answer for QA)). Predictions are joined to the suite by (case_id, input_idx)
and to the i.i.d. test set by example id, never by row order.

Choices (the paper does not define them):

- predicted labels on the suite come from the task's suite mapping (SENT: the
  binary model's probabilities mapped to negative / neutral / positive, as the
  suite is scored); on the i.i.d. test set from the model's own classes;
- confidence is the mean of the model's maximal class probability over its own
  output classes (for SENT the binary head, as the paper's 0.97);
- suite gold labels: only inputs whose expectation names one class count:
  ``eq`` (per-input ``labels`` or the per-case ``val`` parameter, which takes
  precedence as in scoring) and ``eq_or_not_negative`` with a label other than
  1 (label 1 means "not negative", not "neutral"); under ``all_except_first``
  the original of an INV / DIR case is not checked and does not count;
- QA: the most frequent answer counts the empty answer as one answer string
  (answers are compared after stripping surrounding white space).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from beluga.core.bounds import json_loads
from beluga.core.errors import DataError
from beluga.core.pages import render_page
from beluga.core.tasks import get_task_type
from beluga.core.text import md_cell
from beluga.heads import head_of
from beluga.heads.base import DEGENERATE_SHARE
from beluga.heads.classification import as_int
from beluga.report.degenerate import flag_value
from beluga.report.tables import CONFIG_ORDER
from beluga.score.metrics import CONFIG_LABELS

SUITE_SPLIT, IID_SPLIT = "suite_test", "iid_test"
ID_COLUMNS = ["configuration", "method", "partition", "fold"]
DIST_KEYS = ["iid_pred_share", "iid_gold_share", "suite_pred_share", "suite_gold_share"]
# scalar outputs: counts (before the distributions in a row), then the rest (after them)
COUNT_KEYS = ["task_type", "n_iid", "n_suite", "n_suite_gold", "n_dir_inputs"]
RESULT_KEYS = [
    "iid_majority_label", "iid_majority_share", "suite_majority_label", "suite_majority_share",
    "iid_empty_share", "suite_empty_share",
    "confidence_iid", "confidence_suite", "confidence_dir",
    "degenerate", "degenerate_on", "degenerate_share",
]
SCALAR_KEYS = COUNT_KEYS + RESULT_KEYS
WARN = "⚠"
_GOLD_EXPECTATIONS = ("eq", "eq_or_not_negative")


# ---------------------------------------------------------------- helpers
def slug(name) -> str:
    """A label name as a column-name suffix: 'not duplicate' -> 'not_duplicate'."""
    s = re.sub(r"[^0-9a-zA-Z]+", "_", str(name)).strip("_").lower()
    return s or "label"


def _check_columns(df: pd.DataFrame, cols, source: str, what: str) -> None:
    for c in cols:
        if c not in df.columns:
            raise DataError(f"{source}: field '{c}': missing column ({what} needs {', '.join(cols)})")


# ---------------------------------------------------------------- joins
def _suite_inputs(suite: pd.DataFrame) -> pd.DataFrame:
    """One row per input of every suite case: case_id, input_idx, test_type,
    gold (the class the expectation names, or None)."""
    cids, idxs, types, gold = [], [], [], []
    cols = {c: (suite[c].tolist() if c in suite.columns else [None] * len(suite))
            for c in ("case_id", "test_type", "inputs", "labels", "expect", "expect_params", "agg_fn")}
    for cid, ttype, inputs, labels, expect, raw, agg in zip(*cols.values()):
        n = len(inputs)
        cid = str(cid)
        cids += [cid] * n
        idxs += list(range(n))
        types += [ttype] * n
        gold += _gold_labels(cid, ttype, n, labels, expect, raw, agg)
    return pd.DataFrame({"case_id": pd.Series(cids, dtype=object), "input_idx": np.asarray(idxs, dtype=np.int64),
                         "test_type": pd.Series(types, dtype=object),
                         "gold": pd.Series(gold, dtype=object)})


def _gold_labels(cid, ttype, n, labels, expect, raw, agg) -> list[int | None]:
    if expect not in _GOLD_EXPECTATIONS:
        return [None] * n
    try:
        params = json_loads(raw) if isinstance(raw, str) and raw else {}
    except json.JSONDecodeError:
        raise DataError(f"suite case {cid!r}: field 'expect_params': not a JSON object") from None
    val = as_int(params.get("val")) if isinstance(params, dict) else None
    per_input = list(labels) if labels is not None and not isinstance(labels, float) else [None] * n
    first = 1 if ttype != "MFT" and agg == "all_except_first" else 0
    out: list[int | None] = []
    for j in range(n):
        lb = None
        if j >= first:
            lb = val if val is not None else (as_int(per_input[j]) if j < len(per_input) else None)
        if expect == "eq_or_not_negative" and lb == 1:
            lb = None
        out.append(lb)
    return out


def _join_suite(preds: pd.DataFrame, suite_test: pd.DataFrame, source: str) -> pd.DataFrame:
    expected = _suite_inputs(suite_test)
    p = preds.copy()
    p["case_id"] = p["case_id"].astype(str)
    known = set(expected["case_id"])
    unknown = p.loc[~p["case_id"].isin(known), "case_id"]
    if len(unknown):
        raise DataError(f"{source}: field 'case_id': suite prediction for unknown case {unknown.iloc[0]!r} "
                        f"({len(unknown)} row(s) name cases outside the suite's test split)")
    try:
        p["input_idx"] = p["input_idx"].astype(np.int64)
    except (TypeError, ValueError) as e:
        raise DataError(f"{source}: field 'input_idx': not an integer ({e})") from None
    dup = p.duplicated(["case_id", "input_idx"])
    if dup.any():
        r = p[dup].iloc[0]
        raise DataError(f"{source}: field 'case_id': duplicate suite prediction for case {r['case_id']!r}, "
                        f"input {int(r['input_idx'])}")
    joined = expected.merge(p, on=["case_id", "input_idx"], how="outer", indicator=True, sort=False)
    extra = joined[joined["_merge"] == "right_only"]
    if len(extra):
        r = extra.iloc[0]
        raise DataError(f"{source}: field 'input_idx': case {r['case_id']!r} has no input {int(r['input_idx'])}")
    missing = joined[joined["_merge"] == "left_only"]
    if len(missing):
        r = missing.iloc[0]
        raise DataError(f"{source}: field 'input_idx': no suite prediction for case {r['case_id']!r}, input "
                        f"{int(r['input_idx'])} ({len(missing)} suite input(s) without a prediction; pass the "
                        f"suite's test split)")
    return joined.drop(columns="_merge").reset_index(drop=True)


def _join_iid(preds: pd.DataFrame, iid_test: pd.DataFrame, source: str, need_label: bool) -> pd.DataFrame:
    _check_columns(iid_test, ["example_id"] + (["label"] if need_label else []), "iid_test", "the i.i.d. test set")
    gold = pd.DataFrame({"case_id": iid_test["example_id"].astype(str).to_numpy()})
    if need_label:
        gold["gold"] = iid_test["label"].to_numpy()
    if gold["case_id"].duplicated().any():
        raise DataError(f"iid_test: field 'example_id': duplicate example "
                        f"{gold.loc[gold['case_id'].duplicated(), 'case_id'].iloc[0]!r}")
    p = preds.drop(columns=[c for c in ("gold",) if c in preds.columns]).copy()
    p["case_id"] = p["case_id"].astype(str)
    unknown = p.loc[~p["case_id"].isin(set(gold["case_id"])), "case_id"]
    if len(unknown):
        raise DataError(f"{source}: field 'case_id': i.i.d. prediction for unknown example {unknown.iloc[0]!r}")
    dup = p["case_id"].duplicated()
    if dup.any():
        raise DataError(f"{source}: field 'case_id': duplicate i.i.d. prediction for example "
                        f"{p.loc[dup, 'case_id'].iloc[0]!r}")
    if len(p) != len(gold):
        raise DataError(f"{source}: field 'case_id': {len(p)} i.i.d. predictions for {len(gold)} test examples")
    return gold.merge(p, on="case_id", how="left", sort=False)


# ---------------------------------------------------------------- one model
def run_diagnostics(predictions: pd.DataFrame, suite_test: pd.DataFrame, iid_test: pd.DataFrame, task_type: str,
                    degenerate_share: float = DEGENERATE_SHARE, source: str = "predictions",
                    whole_suite: bool = True) -> dict:
    """Diagnostics of one model's predictions (see the module docstring).

    ``suite_test``: the suite's test split (every case must have a prediction
    for every input); ``iid_test``: the i.i.d. test set (``example_id``, and
    ``label`` for classification). ``whole_suite=False``: the model predicted
    only some functionalities (a func / class / type fold model predicts the
    ones it is scored on): its suite shares are reported, but a high suite
    majority share does not flag it degenerate (one functionality's inputs
    often share one gold label; predicting it is not a degenerate solution);
    the i.i.d. test set still does. Returns a flat dict of scalars plus the four
    label distributions (``iid_pred_share``, ``iid_gold_share``,
    ``suite_pred_share``, ``suite_gold_share``: label name -> share; empty for QA)."""
    ttype = get_task_type(task_type)
    head = head_of(ttype)
    _check_columns(predictions, ["split", "case_id", "input_idx", head.value_column], source,
                   f"a {ttype.name} prediction file")
    split = predictions["split"].astype(str)
    known = split.isin([SUITE_SPLIT, IID_SPLIT]) | split.str.startswith("ood:")
    bad = predictions.loc[~known, "split"]
    if len(bad):
        raise DataError(f"{source}: field 'split': unknown split {bad.iloc[0]!r} "
                        f"(expected {SUITE_SPLIT}, {IID_SPLIT} or ood:<name>)")
    suite = _join_suite(predictions[predictions["split"] == SUITE_SPLIT], suite_test, source)
    iid = _join_iid(predictions[predictions["split"] == IID_SPLIT], iid_test, source, need_label=head.has_classes)
    is_dir = (suite["test_type"] == "DIR").to_numpy()
    out: dict = {"task_type": ttype.name, "n_iid": int(len(iid)), "n_suite": int(len(suite)),
                 "n_dir_inputs": int(is_dir.sum())}
    values, iid_deg, suite_deg = head.diagnostics(ttype, iid, suite, is_dir, source, whole_suite, degenerate_share)
    out.update(values)
    out["degenerate"] = bool(iid_deg or suite_deg)
    out["degenerate_on"] = "both" if iid_deg and suite_deg else "iid" if iid_deg else "suite" if suite_deg else ""
    out["degenerate_share"] = float(degenerate_share)
    return {k: out[k] for k in COUNT_KEYS + DIST_KEYS + RESULT_KEYS + [k for k in out if k not in SCALAR_KEYS
                                                                          and k not in DIST_KEYS]}


# ---------------------------------------------------------------- tables
def _config_rank(configs: list[str]) -> dict[str, int]:
    order = [c for c in CONFIG_ORDER if c in configs] + [c for c in dict.fromkeys(configs) if c not in CONFIG_ORDER]
    return {c: i for i, c in enumerate(order)}


def diagnostics_table(rows: list[dict]) -> pd.DataFrame:
    """One row per model: run_diagnostics outputs plus configuration, method,
    partition and fold; distributions flattened into ``<dist>_<label>``
    columns. Column order: ids, counts, shares (per distribution, labels in
    label-set order), majority, confidence, flags, then any other keys. Rows:
    the IID baseline first, then the known configurations in the paper's order
    (others by first appearance), methods and partitions by first appearance,
    folds in the given order."""
    labels: dict[str, list[str]] = {k: [] for k in DIST_KEYS}
    flat_rows = []
    extra: list[str] = []
    for r in rows:
        missing = [k for k in ID_COLUMNS if k not in r]
        if missing:
            raise DataError(f"diagnostics: field '{missing[0]}': every row needs {', '.join(ID_COLUMNS)}")
        flat = {}
        for k, v in r.items():
            if k in DIST_KEYS:
                for name, share in (v or {}).items():
                    col = f"{k}_{slug(name)}"
                    if col not in labels[k]:
                        labels[k].append(col)
                    flat[col] = share
            else:
                flat[k] = v
                if k not in ID_COLUMNS and k not in SCALAR_KEYS and k not in extra:
                    extra.append(k)
        flat_rows.append(flat)
    columns = ID_COLUMNS + COUNT_KEYS + [c for k in DIST_KEYS for c in labels[k]] + RESULT_KEYS + extra
    table = pd.DataFrame(flat_rows, columns=columns)
    table["degenerate"] = [flag_value(v) for v in table["degenerate"]]
    if not len(table):
        return table
    crank = _config_rank([str(c) for c in table["configuration"]])
    mrank = {m: i for i, m in enumerate(dict.fromkeys(table["method"].astype(str)))}
    prank = {p: i for i, p in enumerate(dict.fromkeys(table["partition"].astype(str)))}
    key = pd.DataFrame({"c": table["configuration"].astype(str).map(crank),
                        "m": table["method"].astype(str).map(mrank),
                        "p": table["partition"].astype(str).map(prank)})
    order = key.sort_values(["c", "m", "p"], kind="stable").index
    return table.loc[order].reset_index(drop=True)


def diagnostics_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration-method pair: mean over the pair's models
    (every partition and fold) of the numeric columns, n_models, n_degenerate
    and where the flags were raised (n_degenerate_iid / n_degenerate_suite:
    models degenerate on the i.i.d. test set / on the suite, "both" counted in
    each)."""
    if not len(table):
        return pd.DataFrame(columns=["configuration", "method", "n_models", "n_degenerate"])
    t = table.copy()
    deg = pd.Series([flag_value(v) for v in t["degenerate"]], index=t.index) \
        if "degenerate" in t.columns else pd.Series(False, index=t.index)
    on = t["degenerate_on"].fillna("").astype(str) if "degenerate_on" in t.columns else pd.Series("", index=t.index)
    t["_deg"] = deg.astype(int)
    t["_deg_iid"] = on.isin(["iid", "both"]).astype(int)
    t["_deg_suite"] = on.isin(["suite", "both"]).astype(int)
    skip = set(ID_COLUMNS) | {"seed", "degenerate", "_deg", "_deg_iid", "_deg_suite"}
    numeric = [c for c in t.columns if c not in skip and pd.api.types.is_numeric_dtype(t[c])
               and not pd.api.types.is_bool_dtype(t[c])]
    g = t.groupby(["configuration", "method"], sort=False)
    out = g[numeric].mean() if numeric else pd.DataFrame(index=g.size().index)
    out.insert(0, "n_degenerate_suite", g["_deg_suite"].sum())
    out.insert(0, "n_degenerate_iid", g["_deg_iid"].sum())
    out.insert(0, "n_degenerate", g["_deg"].sum())
    out.insert(0, "n_models", g.size())
    out = out.reset_index()
    for c in ("n_models", "n_degenerate", "n_degenerate_iid", "n_degenerate_suite"):
        out[c] = out[c].astype(int)
    return out


# ---------------------------------------------------------------- Markdown
def _pct(v) -> str:
    return "—" if v is None or pd.isna(v) else f"{100 * float(v):.1f}"


def _num(v) -> str:
    return "—" if v is None or pd.isna(v) else f"{float(v):.3f}"


def _row(cells) -> str:
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def _pair_name(conf, method) -> str:
    return f"{CONFIG_LABELS.get(conf, conf)} — {method}"


def _deg_cell(d: dict) -> str:
    n, m = int(d.get("n_degenerate", 0) or 0), int(d.get("n_models", 0) or 0)
    if not n:
        return f"0/{m}"
    where = []
    if d.get("n_degenerate_iid"):
        where.append(f"i.i.d. {int(d['n_degenerate_iid'])}")
    if d.get("n_degenerate_suite"):
        where.append(f"suite {int(d['n_degenerate_suite'])}")
    return f"{WARN} {n}/{m}" + (f" ({', '.join(where)})" if where else "")


def diagnostics_markdown(summary: pd.DataFrame, task: str, degenerate_share: float) -> str:
    """A Markdown section: an overview row per configuration-method pair and,
    for classification tasks, a table per pair comparing predicted and gold
    label shares on the i.i.d. test set and on the suite."""
    cols = list(summary.columns)
    qa = not any(c.startswith("suite_pred_share_") or c.startswith("iid_pred_share_") for c in cols)
    lines = [f"## {task.upper()}: prediction diagnostics", ""]
    if qa:
        head = ["configuration", "method", "degenerate models", "i.i.d. empty (%)", "i.i.d. top answer (%)",
                "suite empty (%)", "suite top answer (%)"]
        keys = ["iid_empty_share", "iid_majority_share", "suite_empty_share", "suite_majority_share"]
    else:
        head = ["configuration", "method", "degenerate models", "i.i.d. majority (%)", "suite majority (%)",
                "confidence i.i.d.", "confidence suite", "confidence DIR"]
        keys = ["iid_majority_share", "suite_majority_share", "confidence_iid", "confidence_suite", "confidence_dir"]
    lines += [_row(head), "|" + "---|" * len(head)]
    records = summary.to_dict("records")
    for d in records:
        cells = [CONFIG_LABELS.get(d["configuration"], d["configuration"]), d["method"], _deg_cell(d)]
        for k in keys:
            fmt = _num if k.startswith("confidence") else _pct
            cells.append(fmt(d.get(k)))
        lines.append(_row(cells))
    if not qa:
        prefixes = ["suite_pred_share_", "suite_gold_share_", "iid_pred_share_", "iid_gold_share_"]
        label_slugs = list(dict.fromkeys(c[len(p):] for p in prefixes for c in cols if c.startswith(p)))
        for d in records:
            flag = f" {WARN}" if d.get("n_degenerate") else ""
            lines += ["", f"### {md_cell(_pair_name(d['configuration'], d['method']))}{flag}", "",
                      f"models: {int(d.get('n_models', 0))}, degenerate: {_deg_cell(d)}; mean confidence: "
                      f"suite {_num(d.get('confidence_suite'))}, DIR {_num(d.get('confidence_dir'))}, "
                      f"i.i.d. {_num(d.get('confidence_iid'))}", "",
                      _row(["label", "i.i.d. predicted (%)", "i.i.d. gold (%)", "suite predicted (%)",
                            "suite gold (%)"]), "|---|---|---|---|---|"]
            for s in label_slugs:
                lines.append(_row([s.replace("_", " ")] + [_pct(d.get(f"{k}_{s}")) for k in DIST_KEYS]))
    thr = f"{100 * degenerate_share:.0f}%"
    legend = ["", "Legend: values are means over the models of each configuration–method pair (every "
              "partition and fold); shares in %. Suite values describe what each model predicted: the T_test "
              "functionalities it is scored on (all of them for the IID and seen models, the held-out ones for a "
              "func / class / type fold model), or all of T_test with predict.scope: all.",
              f"- degenerate models: models flagged {WARN} / all models; a model is degenerate when its most "
              f"frequent prediction covers at least {thr} of the i.i.d. test set or of the suite test inputs "
              f"(in brackets: how many were flagged on each; on the suite only models that predicted every "
              f"functionality: the IID and seen models, or all with predict.scope: all)."]
    if qa:
        legend += ["- empty: share of empty answers; top answer: share of the most frequent answer string "
                   "(the empty answer included). QA predictions carry no probabilities: no confidence."]
    else:
        legend += ["- majority: share of the most frequent predicted label (i.i.d. test set: the model's classes; "
                   "suite: the suite's label set, as scored).",
                   "- predicted / gold: share of each label among the predictions and among the gold labels; suite "
                   "gold counts only inputs whose expectation names one class (labelled MFT-like cases), suite "
                   "predicted counts every input of every test case; — : no such label or no labelled input.",
                   "- confidence: mean maximal class probability of the model (its own classes); DIR: inputs of DIR "
                   "cases only. Confidence-based DIR expectations are hard to fail when it is near 1 (paper, 5.3)."]
    return "\n".join(lines + legend) + "\n"


# ---------------------------------------------------------------- the report's page
def diagnostics_html(summary: pd.DataFrame, task: str, degenerate_share: float, why: str) -> str:
    """The report's diagnostics page of a task (beluga/templates/diagnostics.html.j2, every value escaped): how
    many of its models are degenerate, in a warning box when any is, where to read why (``why``: its
    diagnostics.md), and per configuration-method pair its degenerate models (on the i.i.d. test set / the
    suite) and mean majority shares."""
    records = summary.to_dict("records")
    n_models = sum(int(d.get("n_models", 0) or 0) for d in records)
    n_degenerate = sum(int(d.get("n_degenerate", 0) or 0) for d in records)
    rows = [{"configuration": CONFIG_LABELS.get(d["configuration"], d["configuration"]), "method": d["method"],
             "degenerate": f"{int(d.get('n_degenerate', 0) or 0)} of {int(d.get('n_models', 0) or 0)}",
             "iid": int(d.get("n_degenerate_iid", 0) or 0), "suite": int(d.get("n_degenerate_suite", 0) or 0),
             "iid_majority": _pct(d.get("iid_majority_share")), "suite_majority": _pct(d.get("suite_majority_share")),
             "flagged": bool(d.get("n_degenerate"))} for d in records]
    return render_page("diagnostics.html.j2", title=f"{task.upper()}: degenerate models", n_models=n_models,
                       n_degenerate=n_degenerate, threshold=f"{100 * degenerate_share:.0f}%", mark=WARN, why=why,
                       rows=rows)
