"""Table 3: wide layout, Markdown / LaTeX rendering, tidy CSV frame."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from beluga.report.tables import latex_escape, table3_csv, table3_latex, table3_markdown, wide_table

G_COLS = ["iid", "G_seen", "G_func", "G_class", "G_type"]
# input deliberately out of order: configurations and columns shuffled, baseline not first
PAIRS = [("iid_plus_t", "vanilla"), ("iid_to_t", "vanilla"), ("iid", "vanilla"), ("iid_to_t", "group_dro"),
         ("iid_to_iid_plus_t", "l2"), ("iid_plus_t", "group_dro")]
ROW_ORDER = [("iid", "vanilla"), ("iid_to_t", "vanilla"), ("iid_to_t", "group_dro"), ("iid_plus_t", "vanilla"),
             ("iid_plus_t", "group_dro"), ("iid_to_iid_plus_t", "l2")]
LABELS = {"iid": "IID (baseline)", "iid_to_t": "IID→T", "iid_plus_t": "IID+T", "iid_to_iid_plus_t": "IID→(IID+T)"}


def row(task, conf, meth, col, value, sig=False, direction=0):
    base = conf == "iid"
    return {"task": task, "configuration": conf, "method": meth, "column": col, "value": value,
            "ci_lo": value - 0.01 if not math.isnan(value) else np.nan,
            "ci_hi": value + 0.01 if not math.isnan(value) else np.nan,
            "p_value": np.nan if base else (0.001 if sig else 0.4),
            "p_adjusted": np.nan if base else (0.004 if sig else 0.8), "significant": sig, "direction": direction}


def make_long(tasks=("sent",), with_avg=False):
    """Values 0.5 + small offsets; special cells (per task):
    iid_to_t/vanilla G_seen: significantly better; iid_plus_t/vanilla iid: significantly worse;
    baseline G_func: flagged significant in the data (must never be marked);
    G_class: a tie for the max between iid_to_t/group_dro and iid_to_iid_plus_t/l2;
    G_type: the max is iid_plus_t/group_dro; iid_to_t/vanilla G_type is missing (NaN)."""
    rows = []
    for t, task in enumerate(tasks):
        for i, (conf, meth) in enumerate(PAIRS):
            for col in reversed(G_COLS):
                v, sig, d = 0.5 + 0.01 * i + 0.001 * t, False, 0
                if (conf, meth, col) == ("iid_to_t", "vanilla", "G_seen"):
                    v, sig, d = 0.61, True, 1
                if (conf, meth, col) == ("iid_plus_t", "vanilla", "iid"):
                    v, sig, d = 0.40, True, -1
                if (conf, meth, col) == ("iid", "vanilla", "G_func"):
                    sig, d = True, 1
                if col == "G_class" and (conf, meth) in [("iid_to_t", "group_dro"), ("iid_to_iid_plus_t", "l2")]:
                    v = 0.875
                if (conf, meth, col) == ("iid_plus_t", "group_dro", "G_type"):
                    v = 0.9
                if (conf, meth, col) == ("iid_to_t", "vanilla", "G_type"):
                    v = np.nan
                rows.append(row(task, conf, meth, col, v, sig, d))
    if with_avg:
        for i, (conf, meth) in enumerate(PAIRS):
            rows.append(row("all", conf, meth, "Avg", 0.3 + 0.05 * i, sig=(conf == "iid_to_t" and meth == "vanilla"),
                            direction=1 if (conf == "iid_to_t" and meth == "vanilla") else 0))
    return pd.DataFrame(rows)


def md_cells(md):
    """Markdown table -> (header, {(config label, method): {header: cell}})."""
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    split = [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines]
    header, body = split[0], split[2:]
    return header, {(r[0], r[1]): dict(zip(header, r)) for r in body}, [(r[0], r[1]) for r in body]


def latex_rows(tex):
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule")[0]
    out, conf = {}, None
    for ln in body.splitlines():
        if not ln.endswith(r"\\"):
            continue
        cells = [c.strip() for c in ln[:-2].split(" & ")]
        conf = cells[0] or conf
        out[(conf, cells[1])] = cells[2:]
    return out


def braces_balanced(tex):
    depth, i = 0, 0
    while i < len(tex):
        ch = tex[i]
        if ch == "\\":
            i += 2  # skip the escaped character (\{, \}, \\, \%...)
            continue
        if ch == "%":  # comment to end of line
            i = tex.find("\n", i)
            if i < 0:
                break
            continue
        depth += (ch == "{") - (ch == "}")
        if depth < 0:
            return False
        i += 1
    return depth == 0


# ------------------------------------------------------------------ wide --

def test_wide_table_order_and_values():
    long = make_long()
    wide = wide_table(long)
    assert list(zip(wide["configuration"], wide["method"])) == ROW_ORDER
    assert list(wide.columns) == ["configuration", "method"] + [f"sent:{c}" for c in G_COLS]
    # values unscaled, taken from the right row
    w = wide.set_index(["configuration", "method"])
    assert w.loc[("iid_to_t", "vanilla"), "sent:G_seen"] == pytest.approx(0.61)
    assert w.loc[("iid_plus_t", "vanilla"), "sent:iid"] == pytest.approx(0.40)
    assert w.loc[("iid_to_iid_plus_t", "l2"), "sent:G_func"] == pytest.approx(0.5 + 0.01 * 4)
    assert math.isnan(w.loc[("iid_to_t", "vanilla"), "sent:G_type"])
    # another field through the same layout
    sig = wide_table(long, field="significant").set_index(["configuration", "method"])
    assert bool(sig.loc[("iid_to_t", "vanilla"), "sent:G_seen"])
    assert not bool(sig.loc[("iid_to_t", "group_dro"), "sent:G_seen"])


def test_wide_table_two_tasks_and_avg():
    wide = wide_table(make_long(("sent", "para"), with_avg=True))
    assert list(wide.columns) == (["configuration", "method"] + [f"sent:{c}" for c in G_COLS]
                                  + [f"para:{c}" for c in G_COLS] + ["Avg"])
    assert list(zip(wide["configuration"], wide["method"])) == ROW_ORDER
    assert wide.set_index(["configuration", "method"]).loc[("iid", "vanilla"), "Avg"] == pytest.approx(0.4)


def test_wide_table_g_avg_and_extra_iid_metric_order():
    long = make_long()
    extra = [row("sent", c, m, "G_avg", 0.5) for c, m in PAIRS] + [row("sent", c, m, "iid_f1", 0.5) for c, m in PAIRS]
    cols = list(wide_table(pd.concat([pd.DataFrame(extra), long], ignore_index=True)).columns)[2:]
    assert cols == ["sent:iid", "sent:iid_f1", "sent:G_seen", "sent:G_func", "sent:G_class", "sent:G_type",
                    "sent:G_avg"]


# -------------------------------------------------------------- markdown --

def test_markdown_one_task_marks_bold_nan_order():
    md = table3_markdown(make_long(), alpha=0.05, correction="holm")
    header, cells, order = md_cells(md)
    assert header == ["Configuration", "Method", "SENT · i.i.d.", "SENT · G_seen", "SENT · G_func",
                      "SENT · G_class", "SENT · G_type"]
    assert order == [(LABELS[c], m) for c, m in ROW_ORDER]
    assert cells[("IID→T", "vanilla")]["SENT · G_seen"] == "**61.0** ▲"
    assert cells[("IID+T", "vanilla")]["SENT · i.i.d."] == "40.0 ▼"
    # exactly two marks in the whole table; the baseline (flagged significant in the data) is not marked
    all_cells = [v for r in cells.values() for k, v in r.items() if k.startswith("SENT")]
    assert sum("▲" in v for v in all_cells) == 1 and sum("▼" in v for v in all_cells) == 1
    assert cells[("IID (baseline)", "vanilla")]["SENT · G_func"] == "52.0"  # PAIRS index 2
    # ties: both bold; nobody else in that column
    g_class = {k: r["SENT · G_class"] for k, r in cells.items()}
    assert {k for k, v in g_class.items() if v.startswith("**")} == {("IID→T", "group_dro"), ("IID→(IID+T)", "l2")}
    assert g_class[("IID→T", "group_dro")] == "**87.5**"
    assert cells[("IID+T", "group_dro")]["SENT · G_type"] == "**90.0**"
    assert sum(r["SENT · G_type"].startswith("**") for r in cells.values()) == 1
    # the i.i.d. column: iid_plus_t/group_dro (PAIRS index 5: 0.55) is the max, l2 (0.54) is not
    assert cells[("IID+T", "group_dro")]["SENT · i.i.d."] == "**55.0**"
    assert cells[("IID→(IID+T)", "l2")]["SENT · i.i.d."] == "54.0"
    # NaN
    assert cells[("IID→T", "vanilla")]["SENT · G_type"] == "–"
    assert "nan" not in md.lower()
    # legend
    legend = md.split("\n\n", 1)[1]
    for needle in ("α = 0.05", "binomial", "randomization", "Holm", "CSV", "▲", "▼"):
        assert needle in legend


def test_markdown_correction_none_and_alpha():
    md = table3_markdown(make_long(), alpha=0.01, correction=None)
    legend = md.split("\n\n", 1)[1]
    assert "α = 0.01" in legend and "no correction" in legend and "Holm" not in legend


def test_markdown_ties_at_display_precision():
    long = make_long()
    sel = (long.column == "G_func") & (long.method == "group_dro")
    long.loc[sel & (long.configuration == "iid_to_t"), "value"] = 0.70001
    long.loc[sel & (long.configuration == "iid_plus_t"), "value"] = 0.70004  # prints 70.0 as well
    _h, cells, _o = md_cells(table3_markdown(long, 0.05, "holm"))
    assert cells[("IID→T", "group_dro")]["SENT · G_func"] == "**70.0**"
    assert cells[("IID+T", "group_dro")]["SENT · G_func"] == "**70.0**"


def test_markdown_two_tasks_avg():
    md = table3_markdown(make_long(("sent", "para"), with_avg=True), 0.05, "holm")
    header, cells, _o = md_cells(md)
    assert header[2:] == [f"SENT · {c}" for c in ["i.i.d."] + G_COLS[1:]] + \
        [f"PARA · {c}" for c in ["i.i.d."] + G_COLS[1:]] + ["Avg"]
    assert cells[("IID→T", "vanilla")]["PARA · G_seen"] == "**61.0** ▲"
    assert cells[("IID→T", "vanilla")]["Avg"] == "35.0 ▲"
    assert cells[("IID+T", "group_dro")]["Avg"] == "**55.0**"
    assert "nan" not in md.lower()


# ----------------------------------------------------------------- LaTeX --

def test_latex_one_task():
    tex = table3_latex(make_long(), alpha=0.05, correction="holm")
    assert tex.splitlines()[0].startswith("%") and r"\usepackage[table]{xcolor}" in tex.splitlines()[0]
    assert braces_balanced(tex)
    assert not braces_balanced(tex + "}") and not braces_balanced("{" + tex) and braces_balanced(r"\{")
    assert tex.count(r"\begin{table}") == tex.count(r"\end{table}") == 1
    assert r"\begin{tabular}{llrrrrr}" in tex
    for cmd in (r"\toprule", r"\bottomrule", r"\caption{", r"\label{tab:table3}", r"\multicolumn{5}{c}{SENT}"):
        assert cmd in tex
    # one \midrule under the header + one between each of the 4 configuration groups
    assert tex.count(r"\midrule") == 4
    assert "group_dro" not in tex and r"group\_dro" in tex
    rows = latex_rows(tex)
    assert list(rows) == [("IID (baseline)", "vanilla"), (r"IID$\to$T", "vanilla"), (r"IID$\to$T", r"group\_dro"),
                          ("IID+T", "vanilla"), ("IID+T", r"group\_dro"), (r"IID$\to$(IID+T)", "l2")]
    assert rows[(r"IID$\to$T", "vanilla")][1] == r"\cellcolor{green!25}\textbf{61.0}"
    assert rows[("IID+T", "vanilla")][0] == r"\cellcolor{red!25}40.0"
    assert rows[(r"IID$\to$T", "vanilla")][4] == "--"
    assert rows[(r"IID$\to$T", r"group\_dro")][3] == rows[(r"IID$\to$(IID+T)", "l2")][3] == r"\textbf{87.5}"
    assert not any(r"\cellcolor" in c for c in rows[("IID (baseline)", "vanilla")])
    assert tex.count(r"\cellcolor{") == 2
    assert "nan" not in tex


def test_latex_two_tasks_avg_and_escaping():
    long = make_long(("sent", "para"), with_avg=True)
    long["method"] = long["method"].replace({"l2": "l2_sp & 50%"})
    tex = table3_latex(long, alpha=0.05, correction=None)
    assert braces_balanced(tex)
    assert r"\multicolumn{5}{c}{SENT} & \multicolumn{5}{c}{PARA}" in tex
    assert r"\cmidrule(lr){3-7} \cmidrule(lr){8-12}" in tex
    assert r"l2\_sp \& 50\%" in tex and "l2_sp" not in tex
    assert r"\begin{tabular}{ll" + "r" * 11 + "}" in tex
    header = [ln for ln in tex.splitlines() if ln.startswith("Configuration & Method")][0]
    assert header.rstrip(r"\ ").split(" & ")[-1] == "Avg."
    rows = latex_rows(tex)
    assert len(rows[(r"IID$\to$T", "vanilla")]) == 11
    assert rows[(r"IID$\to$T", "vanilla")][-1] == r"\cellcolor{green!25}35.0"


def test_latex_escape():
    assert latex_escape("a_b&c%d$e#f{g}h~i^j\\k") == \
        r"a\_b\&c\%d\$e\#f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"


# ------------------------------------------------------------------- CSV --

def test_csv_sorted_deterministically_and_unscaled():
    long = make_long(("sent", "para"), with_avg=True)
    a = table3_csv(long)
    b = table3_csv(long.sample(frac=1.0, random_state=3))
    pd.testing.assert_frame_equal(a, b)
    assert list(a.columns[:11]) == ["task", "configuration", "method", "column", "value", "ci_lo", "ci_hi",
                                    "p_value", "p_adjusted", "significant", "direction"]
    assert list(dict.fromkeys(a["task"])) == ["para", "sent", "all"]
    first = a[a.task == "para"].head(5)
    assert set(first["configuration"]) == {"iid"} and list(first["column"]) == G_COLS
    assert a["value"].max() <= 1.0 and len(a) == len(long)
    assert a.loc[(a.configuration == "iid_to_t") & (a.method == "vanilla") & (a.task == "sent")
                 & (a.column == "G_seen"), "value"].item() == pytest.approx(0.61)


@pytest.mark.parametrize("missing", ["p_adjusted", "direction", "column"])
def test_csv_missing_column(missing):
    with pytest.raises(ValueError, match=re.escape(repr(missing))):
        table3_csv(make_long().drop(columns=missing))


def test_rejects_scaled_values_and_duplicates():
    long = make_long()
    scaled = long.assign(value=long["value"] * 100)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        table3_markdown(scaled, 0.05, "holm")
    with pytest.raises(ValueError, match="duplicate"):
        wide_table(pd.concat([long, long.head(1)], ignore_index=True))


# ------------------------------------------------------- seeds and intervals --

def with_seeds(long, n=3):
    """The table as over n training seeds: every cell an sd and n_seeds."""
    long = long.copy()
    long["sd"] = 0.012
    long["n_seeds"] = n
    return long


@pytest.mark.parametrize("render", [table3_markdown, table3_latex])
def test_legend_says_seeds_and_where_the_intervals_are(render):
    paths = ["results/sent/stats/intervals.csv", "results/para/stats/intervals.csv"]
    one = render(make_long(), 0.05, "holm", intervals=paths)
    legend = one.split("\n\n", 1)[1] if render is table3_markdown else one.split(r"\caption{", 1)[1]
    assert "one training seed" in legend and "mean" not in legend.split("one training seed")[1][:60]
    for p in paths:
        assert (p if render is table3_markdown else latex_escape(p)) in legend
    assert "95% bootstrap confidence intervals" in legend.replace(r"\%", "%")
    several = render(with_seeds(make_long(), 3), 0.05, "holm", intervals=paths[:1])
    legend = several.split("\n\n", 1)[1] if render is table3_markdown else several.split(r"\caption{", 1)[1]
    pm = "±" if render is table3_markdown else r"$\pm$"
    assert f"mean {pm} standard deviation over 3 training seeds" in legend and "one training seed" not in legend
    assert latex_escape(paths[0]) in legend if render is table3_latex else paths[0] in legend
    assert paths[1] not in legend and latex_escape(paths[1]) not in legend
    if render is table3_latex:
        assert braces_balanced(several)
    _h, cells, _o = md_cells(several) if render is table3_markdown else (None, None, None)
    if cells is not None:
        assert cells[("IID+T", "group_dro")]["SENT · G_type"] == "**90.0** ± 1.2"


def test_legend_without_interval_paths_names_the_csv_only():
    md = table3_markdown(make_long(), 0.05, "holm")
    legend = md.split("\n\n", 1)[1]
    assert "are in the CSV file." in legend and "intervals.csv" not in legend
