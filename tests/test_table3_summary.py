"""Table 3's summaries (beluga/report/table3_summary.py): per configuration the mean over methods (the paper's
§5.2), per scenario the mean G over the configuration–method pairs (its footnote 10), against means computed
by hand on a constructed Table 3 frame."""

import math

import numpy as np
import pandas as pd
import pytest

from beluga.report.table3_summary import table3_summary, table3_summary_markdown

NAN = np.nan
#: (task, configuration, method) -> column -> value; PARA has no iid_to_t / l2 row at all (a pair SENT has),
#: SENT's iid_to_t / l2 has no G_func (NaN)
CELLS = {
    ("sent", "iid", "vanilla"): {"iid": .90, "G_seen": .70, "G_func": .70},
    ("sent", "iid_to_t", "vanilla"): {"iid": .80, "G_seen": .90, "G_func": .60},
    ("sent", "iid_to_t", "l2"): {"iid": .70, "G_seen": .80, "G_func": NAN},
    ("sent", "iid_plus_t", "vanilla"): {"iid": .88, "G_seen": .86, "G_func": .74},
    ("sent", "iid_plus_t", "l2"): {"iid": .86, "G_seen": .84, "G_func": .70},
    ("para", "iid", "vanilla"): {"iid_accuracy": .85, "iid": .80, "G_seen": .60, "G_func": .60},
    ("para", "iid_to_t", "vanilla"): {"iid_accuracy": .70, "iid": .60, "G_seen": .80, "G_func": .50},
    ("para", "iid_plus_t", "vanilla"): {"iid_accuracy": .80, "iid": .78, "G_seen": .76, "G_func": .62},
    ("para", "iid_plus_t", "l2"): {"iid_accuracy": .82, "iid": .76, "G_seen": .74, "G_func": .58},
}


def long_frame(cells=CELLS, seeds=None):
    rows = [{"task": t, "configuration": c, "method": m, "column": col, "value": v, "ci_lo": NAN, "ci_hi": NAN,
             "p_value": NAN if c == "iid" else 0.5, "p_adjusted": NAN if c == "iid" else 0.5, "significant": False,
             "direction": 0, **({"sd": 0.01, "n_seeds": seeds} if seeds else {})}
            for (t, c, m), vals in cells.items() for col, v in vals.items()]
    # the cross-task Avg rows (task "all") are not read: the summaries over tasks come from the tasks' cells
    rows += [{**rows[0], "task": "all", "configuration": c, "method": m, "column": "Avg", "value": 0.01}
             for c, m in {(c, m) for _, c, m in cells}]
    return pd.DataFrame(rows)


def pick(summary, kind, task, conf, col):
    r = summary[(summary["summary"] == kind) & (summary["task"] == task) & (summary["configuration"] == conf)
                & (summary["column"] == col)]
    assert len(r) == 1, (kind, task, conf, col)
    r = r.iloc[0]
    return r["value"], r["n"], r["n_missing"]


def test_per_configuration_means_over_methods():
    s = table3_summary(long_frame())
    approx = pytest.approx
    # SENT, IID→T: iid (.80 + .70) / 2 = .75; G_func: l2 has none, left out and counted -> .60 of 1
    assert pick(s, "configuration", "sent", "iid_to_t", "iid") == (approx(.75), 2, 0)
    assert pick(s, "configuration", "sent", "iid_to_t", "G_seen") == (approx(.85), 2, 0)
    assert pick(s, "configuration", "sent", "iid_to_t", "G_func") == (approx(.60), 1, 1)
    assert pick(s, "configuration", "sent", "iid_plus_t", "iid") == (approx(.87), 2, 0)      # (.88 + .86) / 2
    assert pick(s, "configuration", "sent", "iid_plus_t", "G_func") == (approx(.72), 2, 0)   # (.74 + .70) / 2
    assert pick(s, "configuration", "sent", "iid", "iid") == (approx(.90), 1, 0)             # the baseline alone
    # PARA: its extra i.i.d. metric too; IID→T's l2 has no row in PARA -> counted as missing
    assert pick(s, "configuration", "para", "iid_to_t", "iid") == (approx(.60), 1, 1)
    assert pick(s, "configuration", "para", "iid_to_t", "iid_accuracy") == (approx(.70), 1, 1)
    assert pick(s, "configuration", "para", "iid_plus_t", "iid_accuracy") == (approx(.81), 2, 0)   # (.80+.82)/2
    assert pick(s, "configuration", "para", "iid_plus_t", "G_func") == (approx(.60), 2, 0)         # (.62+.58)/2
    # all tasks (§5.2: "average over methods and i.i.d. test sets"): every (task, method) cell
    assert pick(s, "configuration", "all", "iid_to_t", "iid") == (approx((.80 + .70 + .60) / 3), 3, 1)
    assert pick(s, "configuration", "all", "iid_to_t", "G_func") == (approx((.60 + .50) / 2), 2, 2)
    assert pick(s, "configuration", "all", "iid_plus_t", "iid") == (approx((.88 + .86 + .78 + .76) / 4), 4, 0)
    assert pick(s, "configuration", "all", "iid_plus_t", "G_seen") == (approx((.86 + .84 + .76 + .74) / 4), 4, 0)
    # over tasks only the columns every task has (PARA's iid_accuracy is not SENT's), never the Avg rows
    assert set(s.loc[s["task"] == "all", "column"]) == {"iid", "G_seen", "G_func"}
    assert "Avg" not in set(s["column"])
    assert list(s.columns) == ["summary", "task", "configuration", "column", "value", "n", "n_missing"]


def test_per_scenario_means_over_pairs_without_the_baseline():
    s = table3_summary(long_frame())
    approx = pytest.approx
    # SENT G_seen over its four configuration–method pairs (the baseline's .70 left out)
    assert pick(s, "scenario", "sent", "all", "G_seen") == (approx((.90 + .80 + .86 + .84) / 4), 4, 0)
    assert pick(s, "scenario", "sent", "all", "G_func") == (approx((.60 + .74 + .70) / 3), 3, 1)
    assert pick(s, "scenario", "para", "all", "G_seen") == (approx((.80 + .76 + .74) / 3), 3, 1)
    assert pick(s, "scenario", "para", "all", "G_func") == (approx((.50 + .62 + .58) / 3), 3, 1)
    assert pick(s, "scenario", "all", "all", "G_seen") == (approx((3.40 + 2.30) / 7), 7, 1)
    assert pick(s, "scenario", "all", "all", "G_func") == (approx((2.04 + 1.70) / 6), 6, 2)
    assert set(s.loc[s["summary"] == "scenario", "column"]) == {"G_seen", "G_func"}      # G columns only


def test_one_task_has_no_all_tasks_rows_and_a_column_without_scores_is_nan():
    cells = {k: {**v, "G_func": NAN} if k[1] == "iid_to_t" else v for k, v in CELLS.items() if k[0] == "sent"}
    s = table3_summary(long_frame(cells))
    assert "all" not in set(s["task"])
    v, n, missing = pick(s, "configuration", "sent", "iid_to_t", "G_func")
    assert math.isnan(v) and (n, missing) == (0, 2)
    md = table3_summary_markdown(s)
    assert "| SENT | IID→T | 75.00 | 85.00 | – |" in md and "| SENT | – (0 of 2) |" not in md


def test_markdown_two_decimals_counts_and_seeds():
    long = long_frame(seeds=3)
    s = table3_summary(long)
    md = table3_summary_markdown(s, long)
    # columns in Table 3's order: i.i.d., the extra i.i.d. metric, the G columns
    assert "| task | configuration | i.i.d. | iid_accuracy | G_seen | G_func |" in md
    assert "| SENT | IID→T | 75.00 |  | 85.00 | 60.00 (1 of 2) |" in md      # SENT has no iid_accuracy
    assert "| SENT | IID (baseline) | 90.00 |  | 70.00 | 70.00 |" in md
    assert "| PARA | IID→T | 60.00 (1 of 2) | 70.00 (1 of 2) | 80.00 (1 of 2) | 50.00 (1 of 2) |" in md
    assert "| all tasks | IID+T | 82.00 |  | 80.00 | 66.00 |" in md          # (.74+.70+.62+.58) / 4
    assert "| all tasks | 81.43 (7 of 8) | 62.33 (6 of 8) |" in md          # 5.70 / 7, 3.74 / 6
    assert "mean over 3 training seeds" in md
    assert "training seeds" not in table3_summary_markdown(table3_summary(long_frame()), long_frame())
    # several seeds: the cells' means are summarized as they are (means of the seed means)
    assert table3_summary(long)[["value", "n", "n_missing"]].equals(
        table3_summary(long_frame())[["value", "n", "n_missing"]])
