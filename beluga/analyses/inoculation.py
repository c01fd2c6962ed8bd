"""Inoculation by fine-tuning (Liu, Schwartz & Smith, NAACL 2019; seed 001;
docs/ANALYSES.md): expose the IID model to increasing amounts ("doses") of a
unit's challenge data and watch the challenge score and the original score.

- A *unit* is the whole suite, a functionality class or a functionality; its
  challenge training data is its T_train cases, its challenge test set its
  T_test cases (score: the mean pass rate over its functionalities, as s_T),
  the original test set D_test and the original dev set D_val.
- Doses are numbers of T_train cases (``all``: every one); the samples are
  nested (a smaller dose is a prefix of a seeded permutation of the unit's
  case ids) and dose 0 is the IID model itself.
- Each (unit, dose, learning rate) is one job: training starts from the IID
  model, runs at most ``max_epochs`` and stops when the original dev score has
  not improved for ``patience`` epochs, keeping the best-dev weights (the
  seed's early stopping); per dose the reported learning rate is the one with
  the best challenge score (the seed: on the challenge test set;
  ``select_on: val``: on the unit's T_val).
- The outcome of a unit compares the last dose with dose 0 (:func:`classify`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from beluga.errors import ConfigError
from beluga.folds import fold_ids, split_sizes, stable_int

LEVELS = ("suite", "class", "functionality")
LEVEL_PREFIX = {"suite": "suite", "class": "class", "functionality": "func"}


def units(funcs: pd.DataFrame, levels) -> dict[str, dict]:
    """unit id -> {level, label, functionalities} for the configured levels
    (funcs: the functionality table with ``functionality`` and ``capability``)."""
    out: dict[str, dict] = {}
    for level in levels:
        if level not in LEVELS:
            raise ConfigError(f"config: field 'inoculation.units': unknown unit level {level!r} ({', '.join(LEVELS)})")
        if level == "suite":
            out["suite"] = {"level": level, "label": "whole suite", "functionalities": list(funcs["functionality"])}
            continue
        col = "capability" if level == "class" else "functionality"
        groups = list(dict.fromkeys(funcs[col]))
        for name, gid in fold_ids(groups).items():
            members = list(funcs.loc[funcs[col] == name, "functionality"])
            out[f"{LEVEL_PREFIX[level]}-{gid}"] = {"level": level, "label": str(name), "functionalities": members}
    return out


def train_cases_per_unit(funcs: pd.DataFrame, unit_funcs: list[str], fractions) -> int:
    """T_train cases of a unit, known before the suite is split (``n_cases`` per functionality)."""
    n = funcs.set_index("functionality")["n_cases"]
    return int(sum(split_sizes(int(n[f]), fractions)[0] for f in unit_funcs))


def doses_for(n_train: int, doses) -> list[str]:
    """The dose ids a unit runs: every configured number below its T_train size,
    plus ``all`` when it is listed or a number reaches the size (no two doses
    train on the same cases)."""
    ids, use_all = [], False
    for d in doses:
        if d == "all" or int(d) >= n_train:
            use_all = True
        elif int(d) > 0:
            ids.append(int(d))
    out = [str(d) for d in sorted(set(ids))]
    return out + (["all"] if use_all else [])


def dose_size(dose: str, n_train: int) -> int:
    return n_train if dose == "all" else min(int(dose), n_train)


def dose_sample(case_ids, dose: str, seed: int, unit: str) -> list[str]:
    """The cases of a dose: the first ``dose`` ids of a permutation of the
    sorted ids seeded by (seed, unit) — nested across doses."""
    ids = sorted(map(str, case_ids))
    order = np.random.default_rng(stable_int(seed, unit)).permutation(len(ids))
    return [ids[i] for i in order[:dose_size(dose, len(ids))]]


def lr_id(lr: float) -> str:
    return f"lr{float(lr):g}"


def choose(results: pd.DataFrame, select_on: str) -> pd.DataFrame:
    """Per (unit, dose): the learning rate with the best challenge score
    (``test``: the challenge test set, as the seed; ``val``: the unit's T_val);
    ties go to the first learning rate in the configured order."""
    col = {"test": "challenge", "val": "challenge_val"}.get(select_on)
    if col is None:
        raise ConfigError(f"config: field 'inoculation.select_on': {select_on!r} is not test or val")
    rows = []
    for _, g in results.groupby(["unit", "dose"], sort=False):
        g = g.sort_values("lr_order", kind="stable")
        score = g[col].astype(float).fillna(-np.inf)
        rows.append(g.loc[score.idxmax()])
    return pd.DataFrame(rows).reset_index(drop=True)


def classify(challenge0: float, original0: float, challenge: float, original: float, close_within: float = 5.0,
             original_drop: float = 2.0, min_gain: float = 5.0) -> tuple[str, str]:
    """The seed's outcome of a unit, from its dose-0 and last-dose scores (all in
    percentage points): ``3`` when the original score drops by ``original_drop``
    or more; else ``1`` when the challenge score ends within ``close_within``
    of the original score (the gap closed); else ``2`` when the challenge score
    gained less than ``min_gain`` (nothing changed); else ``between``; and
    ``no gap`` (after outcome 3) when the IID model's challenge score was
    already within ``close_within`` of its original score, so there was no gap
    to close. Returns (label, the reason in words)."""
    d_chal, d_orig = challenge - challenge0, original - original0

    def pp(x: float) -> str:   # signed whole points, never "-0"
        return f"{int(round(x)):+d} pp"
    tail = f"original {pp(d_orig)} ({original0:.0f} → {original:.0f})"
    if d_orig <= -original_drop:
        return "3", (f"original {pp(d_orig)} (≤ −{original_drop:g}: the challenge conflicts with the original "
                     f"data); challenge {pp(d_chal)}")
    if challenge0 >= original0 - close_within:
        return "no gap", (f"no gap at dose 0: challenge {challenge0:.0f} vs original {original0:.0f} (the IID model "
                          f"already passes); challenge {pp(d_chal)}; {tail}")
    if challenge >= original - close_within:
        return "1", (f"challenge {pp(d_chal)} to within {close_within:g} pp of original "
                     f"({challenge:.0f} vs {original:.0f}); {tail}")
    if d_chal < min_gain:
        return "2", f"challenge {pp(d_chal)} (< {min_gain:g}: a weakness of the model); {tail}"
    return "between", (f"challenge {pp(d_chal)} but {original - challenge:.0f} pp below original; {tail}")


def dose_number(dose: str, n_cases: int) -> int:
    return int(n_cases) if dose == "all" else int(dose)


def curves_figure(table: pd.DataFrame, outcomes: pd.DataFrame, task: str, out_png: str) -> None:
    """Challenge and original score against the dose (symmetric log axis, dose 0
    = the IID model), one panel per unit, the outcome in the panel title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.io import atomic_path

    unit_ids = list(dict.fromkeys(table["unit"]))
    n = len(unit_ids)
    cols = min(4, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False, sharey=True)
    out = outcomes.set_index("unit")
    for k, unit in enumerate(unit_ids):
        ax = axes[k // cols][k % cols]
        g = table[table["unit"] == unit].sort_values("n_cases")
        ax.plot(g["n_cases"], g["challenge"], "o-", color="tab:red", label="challenge (unit's T_test)")
        ax.plot(g["n_cases"], g["original"], "s--", color="tab:blue", label="original (D_test)")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_ylim(-3, 103)
        label = out.at[unit, "label"] if unit in out.index else unit
        ax.set_title(f"{label[:34]}: outcome {out.at[unit, 'outcome']}" if unit in out.index else unit, fontsize=8)
        ax.tick_params(labelsize=7)
        if k % cols == 0:
            ax.set_ylabel("score (%)", fontsize=8)
        if k // cols == rows - 1:
            ax.set_xlabel("dose (challenge training cases)", fontsize=8)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{task.upper()}: inoculation by fine-tuning", fontsize=10)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def transfer_matrix(chosen: pd.DataFrame, base_rates: dict, unit_map: dict, dose: str) -> pd.DataFrame:
    """Rows: the unit trained on at ``dose``; columns: every unit evaluated;
    values: the change (pp) of the evaluated unit's mean pass rate against
    the IID model."""
    def unit_score(rates: dict, funcs) -> float:
        vals = [rates.get(f) for f in funcs if rates.get(f) is not None and not pd.isna(rates.get(f))]
        return float(np.mean(vals)) if vals else np.nan

    sub = chosen[chosen["dose"] == dose]
    mat = pd.DataFrame(index=list(sub["unit"]), columns=list(unit_map), dtype=float)
    for r in sub.itertuples(index=False):
        for u, spec in unit_map.items():
            mat.at[r.unit, u] = 100 * (unit_score(r.pass_rates, spec["functionalities"])
                                       - unit_score(base_rates, spec["functionalities"]))
    return mat


def transfer_figure(mats: dict[str, pd.DataFrame], unit_map: dict, task: str, out_png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.io import atomic_path

    n = max(1, len(mats))
    size = max(3.2, 0.32 * len(unit_map) + 2)
    fig, axes = plt.subplots(1, n, figsize=(size * n, size), squeeze=False)
    for k, (dose, mat) in enumerate(mats.items()):
        ax = axes[0][k]
        im = ax.imshow(mat.to_numpy(dtype=float), cmap="RdBu", vmin=-100, vmax=100, aspect="auto")
        ax.set_xticks(range(mat.shape[1]))
        ax.set_xticklabels([unit_map[u]["label"][:22] for u in mat.columns], rotation=90, fontsize=6)
        ax.set_yticks(range(mat.shape[0]))
        ax.set_yticklabels([unit_map[u]["label"][:22] for u in mat.index] if k == 0 else [], fontsize=6)
        ax.set_title(f"dose {dose}", fontsize=9)
        ax.set_xlabel("evaluated unit", fontsize=7)
        if k == 0:
            ax.set_ylabel("unit trained on", fontsize=7)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8, label="pass-rate change vs IID model (pp)")
    fig.suptitle(f"{task.upper()}: transfer of inoculation to other units", fontsize=10)
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
