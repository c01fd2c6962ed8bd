"""Degenerate models marked where results are shown (beluga/report/degenerate.py): which models a Table 3
cell rests on, the mark and legend in Table 3 (Markdown, LaTeX, CSV), its summaries and the OOD table, never
a bold best; a table without a degenerate model written exactly as without the flags; the diagnostics of a
task without a suite; the run's last lines and the report's page."""

import re

import numpy as np
import pandas as pd
import pytest
from test_diagnostics import iid_frame, predictions
from test_tables import latex_rows, make_long, md_cells

from beluga.analyses.ood_report import ood_table_markdown, table_latex
from beluga.core.errors import DataError
from beluga.report import degenerate
from beluga.report.diagnostics import diagnostics_html, diagnostics_summary, diagnostics_table, run_diagnostics
from beluga.report.table3_summary import table3_summary, table3_summary_markdown
from beluga.report.tables import table3_csv, table3_latex, table3_markdown

MARK, TEX = degenerate.MARK, degenerate.LATEX_MARK


def flags_frame(models) -> pd.DataFrame:
    """diagnostics.csv rows: (configuration, method, partition, fold, degenerate[, degenerate_on])."""
    rows = [{"configuration": c, "method": m, "partition": p, "fold": f, "degenerate": d,
             "degenerate_on": "iid" if d else "", "degenerate_share": 0.95} for c, m, p, f, d in models]
    return degenerate.model_flags(pd.DataFrame(rows), "diagnostics.csv")


# ---------------------------------------------------------------- which models a cell rests on
def test_cell_partitions():
    scen = ["seen", "func", "class"]
    assert degenerate.cell_partitions("iid", "G_func", scen) == {"standard"}
    assert degenerate.cell_partitions("iid_to_t", "iid", scen) == {"seen"}
    assert degenerate.cell_partitions("iid_to_t", "iid_f1", scen) == {"seen"}
    assert degenerate.cell_partitions("iid_to_t", "G_func", scen) == {"func"}
    assert degenerate.cell_partitions("iid_to_t", "G_func", scen, "seen") == {"func", "seen"}
    assert degenerate.cell_partitions("iid_to_t", "G_avg", scen) == {"seen", "func", "class"}
    with pytest.raises(ValueError):
        degenerate.cell_partitions("iid_to_t", "p_value", scen)


def long_two_tasks() -> pd.DataFrame:
    rows = []
    for task in ("sent", "para"):
        for conf in ("iid", "iid_to_t"):
            for col in ("iid", "G_seen", "G_func", "G_avg"):
                rows.append({"task": task, "configuration": conf, "method": "vanilla", "column": col, "value": 0.5})
    rows += [{"task": "all", "configuration": c, "method": "vanilla", "column": "Avg", "value": 0.5}
             for c in ("iid", "iid_to_t")]
    return pd.DataFrame(rows)


def test_table3_flags_count_the_models_of_each_cell():
    sent = flags_frame([("iid", "vanilla", "standard", "all", False), ("iid_to_t", "vanilla", "seen", "all", False),
                        ("iid_to_t", "vanilla", "func", "f1", True), ("iid_to_t", "vanilla", "func", "f2", False)])
    para = flags_frame([("iid", "vanilla", "standard", "all", True), ("iid_to_t", "vanilla", "seen", "all", False),
                        ("iid_to_t", "vanilla", "func", "f1", False), ("iid_to_t", "vanilla", "func", "f2", False)])
    out = degenerate.table3_flags(long_two_tasks(), {"sent": sent, "para": para}, {"para": "seen"})
    got = {(r.task, r.configuration, r.column): (r.n_models, r.n_degenerate) for r in out.itertuples()}
    assert got[("sent", "iid", "G_func")] == (1, 0) and got[("para", "iid", "iid")] == (1, 1)
    assert got[("sent", "iid_to_t", "iid")] == (1, 0)            # the seen model
    assert got[("sent", "iid_to_t", "G_seen")] == (1, 0)
    assert got[("sent", "iid_to_t", "G_func")] == (2, 1)         # one of the two folds
    assert got[("sent", "iid_to_t", "G_avg")] == (3, 1)
    assert got[("para", "iid_to_t", "G_func")] == (3, 0)         # scenario_iid: seen: the seen model too
    assert got[("all", "iid_to_t", "Avg")] == (6, 1)             # every task's G_avg models
    assert got[("all", "iid", "Avg")] == (2, 1)


def test_a_cell_without_its_models_is_one_line_naming_the_file():
    flags = flags_frame([("iid", "vanilla", "standard", "all", False)])
    long = long_two_tasks()
    long = long[long["task"] == "sent"]
    with pytest.raises(DataError, match=r"^results/sent/diagnostics/diagnostics.csv: field 'partition': no model "
                                        r"of iid_to_t/vanilla \(seen\)"):
        degenerate.table3_flags(long, {"sent": flags}, sources={"sent": "results/sent/diagnostics/diagnostics.csv"})
    with pytest.raises(DataError, match="field 'degenerate': row 1 is 'maybe'"):
        degenerate.model_flags(pd.DataFrame({"configuration": ["iid"], "method": ["vanilla"], "partition": ["standard"],
                                             "degenerate": ["maybe"]}), "d.csv")
    with pytest.raises(DataError, match="^d.csv: field 'partition': missing column"):
        degenerate.model_flags(pd.DataFrame({"configuration": ["iid"], "method": ["vanilla"]}), "d.csv")


# ---------------------------------------------------------------- Table 3
#: make_long's cells computed from a degenerate model: one of the two tied best G_class cells, the best G_type
#: cell and a whole row (iid_to_t / vanilla)
DEGENERATE = {("iid_to_t", "group_dro", "G_class"), ("iid_plus_t", "group_dro", "G_type")}


def flagged_long(degenerate_cells=DEGENERATE, rows=(("iid_to_t", "vanilla"),)) -> pd.DataFrame:
    long = make_long()
    deg = [((c, m, col) in degenerate_cells or (c, m) in rows) for c, m, col in
           zip(long["configuration"], long["method"], long["column"])]
    return long.assign(n_models=2, n_degenerate=np.asarray(deg, dtype=int))


def test_a_mixed_table_marks_the_degenerate_cells_and_never_bolds_them():
    legend = degenerate.legend(3, 12, "95%", "results/sent/diagnostics/diagnostics.md")
    md = table3_markdown(flagged_long(), degenerate_legend=legend)
    _, cells, _ = md_cells(md)
    tied_deg, tied_ok = cells[("IID→T", "group_dro")]["SENT · G_class"], cells[("IID→(IID+T)", "l2")]["SENT · G_class"]
    assert tied_deg == f"87.5 {MARK}" and tied_ok == "**87.5**"
    assert cells[("IID+T", "group_dro")]["SENT · G_type"] == f"90.0 {MARK}"
    # the best of the others is bold: make_long's G_type values rise with the pair's index; 0.5 + 0.01 * i
    g_type = {k: v["SENT · G_type"] for k, v in cells.items()}
    assert [k for k, v in g_type.items() if v.startswith("**")] == [("IID→(IID+T)", "l2")], g_type
    row = cells[("IID→T", "vanilla")]
    assert row["SENT · G_seen"] == f"61.0 ▲ {MARK}" and not any("**" in v for v in row.values()), row
    assert row["SENT · G_type"] == "–"                       # a missing value is not marked
    assert sum(v.endswith(MARK) for r in cells.values() for v in r.values()) == 2 + 4
    assert md.count(legend) == 1 and "(3 of 12 models are)" in legend and "never bold" in legend
    tex = table3_latex(flagged_long(), degenerate_legend=legend)
    rows = latex_rows(tex)
    assert rows[(r"IID$\to$T", r"group\_dro")][3] == f"87.5{TEX}"
    assert rows[(r"IID$\to$(IID+T)", "l2")][3] == r"\textbf{87.5}"
    assert rows[(r"IID$\to$T", "vanilla")][1] == r"\cellcolor{green!25}61.0" + TEX
    assert r"95\% of the i.i.d. test set" in tex and f"{TEX}: computed from a degenerate model" in tex
    csv = table3_csv(flagged_long())
    assert list(csv.columns[-2:]) == ["n_models", "n_degenerate"] and csv["n_degenerate"].sum() == 5 + 2


def test_a_clean_table_is_written_as_without_flags():
    clean, plain = flagged_long(set(), ()), make_long()
    assert table3_markdown(clean, degenerate_legend="never shown") == table3_markdown(plain)
    assert table3_latex(clean, degenerate_legend="never shown") == table3_latex(plain)
    assert table3_csv(clean).equals(table3_csv(plain))
    assert MARK not in table3_markdown(clean) and "degenerate" not in table3_latex(clean)
    assert table3_summary(clean).equals(table3_summary(plain))
    assert table3_summary_markdown(table3_summary(clean), clean) == \
        table3_summary_markdown(table3_summary(plain), plain)


def test_summaries_mark_a_mean_over_a_degenerate_cell():
    long = flagged_long()
    summary = table3_summary(long)
    conf = summary[summary["summary"] == "configuration"].set_index(["configuration", "column"])
    assert conf.loc[("iid_to_t", "G_seen"), "n_degenerate"] == 1      # vanilla flagged, group_dro not
    assert conf.loc[("iid_to_t", "G_class"), "n_degenerate"] == 2
    assert conf.loc[("iid_to_iid_plus_t", "G_class"), "n_degenerate"] == 0
    scen = summary[summary["summary"] == "scenario"].set_index("column")
    assert scen.loc["G_type", "n_degenerate"] == 1    # iid_to_t/vanilla has no G_type value: not averaged
    md = table3_summary_markdown(summary, long)
    line = next(ln for ln in md.splitlines() if ln.startswith("| SENT | IID→(IID+T) |"))
    assert MARK not in line
    line = next(ln for ln in md.splitlines() if ln.startswith("| SENT | IID→T |"))
    assert line.count(MARK) == 4 and line.endswith("| 53.00 (1 of 2) |"), line   # G_type: vanilla's is missing
    assert f"{MARK}: a mean over cells of which at least one was computed from a degenerate model" in md


# ---------------------------------------------------------------- the OOD table
def ood_table(n_degenerate=None) -> pd.DataFrame:
    rows = []
    for i, (conf, meth) in enumerate([("iid", "vanilla"), ("iid_to_t", "vanilla")]):
        rows.append({"system": f"{conf}/{meth}", "configuration": conf, "method": meth,
                     "label": "IID" if conf == "iid" else f"IID→T {meth}", "id": 80.0 + i, "backbone": "tiny",
                     "tweets": 70.0 + i, "tweets_delta": 0.0, "tweets_p": np.nan, "tweets_direction": 0,
                     "ood_avg": 70.0 + i, "decrease_ratio": 12.5, "rank_decrease_ratio": 1.0,
                     "friedman_rank_ood": 1.5})
    t = pd.DataFrame(rows)
    if n_degenerate is not None:
        t = degenerate.drop_clean_flags(t.assign(n_models=1, n_degenerate=n_degenerate))
    return t


def test_ood_table_marks_a_degenerate_system():
    flags = flags_frame([("iid", "vanilla", "standard", "all", False), ("iid_to_t", "vanilla", "seen", "all", True),
                         ("iid_to_t", "vanilla", "func", "f1", False)])
    t = degenerate.system_flags(ood_table(), flags)
    assert t["n_degenerate"].tolist() == [0, 1] and t["n_models"].tolist() == [1, 1]
    md = ood_table_markdown(t, ["tweets"], "sent", 0.05, "holm", degenerate_legend="LEGEND")
    iid_row, pair_row = [ln for ln in md.splitlines() if ln.startswith("| IID")]
    assert MARK not in iid_row and pair_row.count(MARK) == 5 and "\n\nLEGEND\n" in md
    tex = table_latex(t, ["tweets"], "sent", 0.05, "holm", degenerate_legend=f"{MARK}: LEGEND 95%")
    assert tex.count(TEX) == 5 + 1 and r"LEGEND 95\%" in tex
    clean = ood_table(n_degenerate=[0, 0])
    assert "n_degenerate" not in clean.columns
    assert ood_table_markdown(clean, ["tweets"], "sent", 0.05, "holm") == \
        ood_table_markdown(ood_table(), ["tweets"], "sent", 0.05, "holm")


def test_models_csv_gets_a_column_only_with_a_degenerate_model():
    models = pd.DataFrame({"configuration": ["iid", "iid_to_t"], "method": ["vanilla"] * 2,
                           "partition": ["standard", "seen"], "fold": ["all"] * 2, "id": [80.0, 81.0]})
    flagged = flags_frame([("iid", "vanilla", "standard", "all", False), ("iid_to_t", "vanilla", "seen", "all", True)])
    assert degenerate.model_column(models, flagged)["degenerate"].tolist() == [False, True]
    clean = flags_frame([("iid", "vanilla", "standard", "all", False), ("iid_to_t", "vanilla", "seen", "all", False)])
    assert degenerate.model_column(models, clean) is models


# ---------------------------------------------------------------- diagnostics, the run's last lines, the report
def test_a_task_without_a_suite_is_checked_on_its_iid_test_set():
    iid = iid_frame(40)
    empty = pd.DataFrame(columns=["case_id", "functionality", "test_type", "inputs"])
    one_class = predictions(empty, iid, None, lambda i: [0.9, 0.1])
    d = run_diagnostics(one_class, empty, iid, "sent")
    assert (d["degenerate"], d["degenerate_on"], d["n_suite"]) == (True, "iid", 0)
    both = predictions(empty, iid, None, lambda i: [0.9, 0.1] if i % 2 else [0.1, 0.9])
    assert run_diagnostics(both, empty, iid, "sent")["degenerate"] is False


def write_diagnostics(path, flags: list[tuple[str, bool, str]]):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([{"configuration": c, "method": "vanilla", "partition": "seen", "fold": "all", "degenerate": d,
                   "degenerate_on": on, "degenerate_share": 0.95} for c, d, on in flags]).to_csv(path, index=False)
    return str(path)


def test_the_runs_last_lines_count_the_degenerate_models_and_say_where_to_read_why(tmp_path):
    sent = write_diagnostics(tmp_path / "sent" / "diagnostics" / "diagnostics.csv",
                             [("iid", True, "both"), ("iid_to_t", True, "iid"), ("iid_plus_t", False, "")])
    para = write_diagnostics(tmp_path / "para" / "diagnostics" / "diagnostics.csv", [("iid", False, "")])
    lines = degenerate.degenerate_lines({"sent": sent, "para": para, "read": str(tmp_path / "absent.csv")})
    assert lines == [
        f"BELUGA warning: 2 of 4 models are degenerate (one class, answer or score for (almost) every input); the "
        f"cells computed from them are marked {MARK} and never bold. Why:",
        f"  SENT: 2 of 3 models (on the i.i.d. test set and the suite): {tmp_path}/sent/diagnostics/diagnostics.md"]
    assert degenerate.degenerate_lines({"para": para}) == [
        f"BELUGA: no model is degenerate (1 models; diagnostics: {tmp_path}/para/diagnostics/diagnostics.md)"]
    assert degenerate.degenerate_lines({"read": str(tmp_path / "absent.csv")}) == []
    table = tmp_path / "inoc.csv"
    pd.DataFrame({"unit": ["u", "u"], "n_models": [2, 2], "n_degenerate": [0, 1]}).to_csv(table, index=False)
    lines = degenerate.degenerate_lines({"para": para}, {"inoculation SENT": (str(table), "inoculation.md"),
                                                      "combinational base": (str(tmp_path / "no.csv"), "t.md")})
    assert lines[-1] == (f"BELUGA warning: inoculation SENT: 1 of the 4 models its table rests on are degenerate "
                         f"(marked {MARK}): inoculation.md")
    (tmp_path / "bad.csv").write_text("configuration,method\niid,vanilla\n")
    line = degenerate.degenerate_lines({"sent": str(tmp_path / "bad.csv")})[-1]
    assert line.startswith("BELUGA warning: SENT: degenerate models not counted: ") and "field 'partition'" in line


def test_the_reports_page_says_how_many_models_are_degenerate():
    rows = [dict(configuration=c, method="vanilla", partition="seen", fold=f, task_type="sent", n_iid=10,
                 n_suite=5, degenerate=d, degenerate_on="iid" if d else "", degenerate_share=0.95,
                 iid_majority_share=1.0 if d else 0.5) for c, f, d in
            [("iid", "all", False), ("iid_to_t", "a", True), ("iid_to_t", "b", True)]]
    summary = diagnostics_summary(diagnostics_table(rows))
    page = diagnostics_html(summary, "sent", 0.95, "results/sent/diagnostics/diagnostics.md")
    assert "<strong>2 of 3 models are degenerate</strong>" in page and "class='warn'" in page
    assert "results/sent/diagnostics/diagnostics.md" in page and page.count("class=degenerate") == 1
    assert re.search(r"<td>IID→T</td><td>vanilla</td><td>2 of 2</td><td>2</td><td>0</td>", page), page
    clean = diagnostics_html(summary[summary["configuration"] == "iid"], "sent", 0.95, "d.md")
    assert "No model is degenerate (1 models" in clean and "class='warn'" not in clean

