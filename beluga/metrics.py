"""Aggregate scores: s_iid, s_T per scenario, and G (METHOD.md, 3.3-3.4).

Choices where the paper is silent (documented in docs/PIPELINE.md):
- s_T(scenario) is the mean pass rate over functionalities; a functionality
  whose held-out cases were all filtered has no pass rate and is left out of
  the mean (the count is reported in ``n_func_scored``).
- s_iid used in G(scenario) is the mean i.i.d. score of the models that
  produced the scenario's pass rates (one model for seen/standard, one per fold
  otherwise). The i.i.d. score column of the table is the seen model's.
- The IID baseline was trained on no suite data, so its s_T is the standard
  score in every scenario.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.scoring import pass_rates

SCENARIOS = ("standard", "seen", "func", "class", "type")
BASELINE = ("iid", "vanilla")


def g_score(s_t: float, s_iid: float) -> float:
    """Harmonic mean 2 s_T s_iid / (s_T + s_iid); 0 when both are 0."""
    if np.isnan(s_t) or np.isnan(s_iid):
        return float("nan")
    return 0.0 if s_t + s_iid == 0 else 2 * s_t * s_iid / (s_t + s_iid)


def accuracy(outcomes: pd.DataFrame) -> float:
    iid = outcomes[outcomes["split"] == "iid_test"]
    return float(iid["correct"].mean()) if len(iid) else float("nan")


def fold_pass_rates(outcomes: pd.DataFrame, functionalities: pd.DataFrame) -> pd.DataFrame:
    """Pass rates of the held-out functionalities of one fold."""
    suite = outcomes[(outcomes["split"] == "suite_test") & outcomes["held_out"]]
    return pass_rates(suite[["case_id", "functionality", "status"]], functionalities)


def aggregate(runs: list[dict], functionalities: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """runs: dicts with configuration, method, partition, fold, outcomes (DataFrame).
    The IID baseline is the run with configuration 'iid' (partition 'standard').
    Returns (long pass-rate table, scores table)."""
    long_rows, iid_scores = [], {}
    for run in runs:
        pr = fold_pass_rates(run["outcomes"], functionalities)
        scenario = "standard" if run["configuration"] == "iid" else run["partition"]
        pr.insert(0, "fold", run["fold"])
        pr.insert(0, "method", run["method"])
        pr.insert(0, "configuration", run["configuration"])
        pr.insert(0, "scenario", scenario)
        long_rows.append(pr)
        iid_scores[(run["configuration"], run["method"], scenario, run["fold"])] = accuracy(run["outcomes"])
    long = pd.concat(long_rows, ignore_index=True)
    dup = long.duplicated(["scenario", "configuration", "method", "functionality"])
    if dup.any():
        r = long[dup].iloc[0]
        raise ValueError(f"functionality {r['functionality']!r} is held out twice in scenario {r['scenario']!r} "
                         f"for {r['configuration']}/{r['method']}")

    rows = []
    base = long[(long.configuration == BASELINE[0])]
    base_st = float(base["pass_rate"].mean())
    base_iid = iid_scores.get((*BASELINE, "standard", "all"), float("nan"))
    pairs = [BASELINE] + [p for p in dict.fromkeys(zip(long.configuration, long.method)) if p != BASELINE]
    for conf, meth in pairs:
        row = {"configuration": conf, "method": meth}
        for sc in SCENARIOS:
            if conf == BASELINE[0]:
                s_t, s_iid, n_scored = base_st, base_iid, int(base["pass_rate"].notna().sum())
            elif sc == "standard":
                s_t, s_iid, n_scored = base_st, base_iid, int(base["pass_rate"].notna().sum())
            else:
                sel = long[(long.configuration == conf) & (long.method == meth) & (long.scenario == sc)]
                accs = [v for (c, m, s, _f), v in iid_scores.items() if (c, m, s) == (conf, meth, sc)]
                s_t = float(sel["pass_rate"].mean()) if len(sel) else float("nan")
                s_iid = float(np.mean(accs)) if accs else float("nan")
                n_scored = int(sel["pass_rate"].notna().sum())
            row[f"s_{sc}"] = s_t
            row[f"s_iid_{sc}"] = s_iid
            row[f"G_{sc}"] = g_score(s_t, s_iid)
            row[f"n_func_scored_{sc}"] = n_scored
        row["iid_score"] = row["s_iid_seen"] if conf != BASELINE[0] else base_iid
        rows.append(row)
    scores = pd.DataFrame(rows)
    lead = ["configuration", "method", "iid_score"]
    cols = lead + [f"s_{s}" for s in SCENARIOS] + [f"G_{s}" for s in SCENARIOS] + \
        [f"s_iid_{s}" for s in SCENARIOS] + [f"n_func_scored_{s}" for s in SCENARIOS]
    return long, scores[cols]


CONFIG_LABELS = {"iid": "IID", "iid_to_t": "IID→T", "iid_plus_t": "IID+T", "iid_to_iid_plus_t": "IID→(IID+T)"}


def scores_markdown(scores: pd.DataFrame, task: str) -> str:
    cols = ["iid_score"] + [f"s_{s}" for s in SCENARIOS] + [f"G_{s}" for s in SCENARIOS]
    head = ["configuration", "method"] + cols
    lines = [f"# {task.upper()}: scores (×100)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in scores.itertuples(index=False):
        d = r._asdict()
        cells = [CONFIG_LABELS.get(d["configuration"], d["configuration"]), d["method"]]
        cells += ["" if pd.isna(d[c]) else f"{100 * d[c]:.1f}" for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "iid_score: accuracy of the seen model (the IID model for the baseline) on the i.i.d. test set. "
              "s_X: mean pass rate over functionalities in scenario X; G_X: harmonic mean of s_X and the mean "
              "i.i.d. score of the models behind s_X."]
    return "\n".join(lines) + "\n"
