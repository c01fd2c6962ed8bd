"""Pass-rate heatmaps (Figure 1 style)."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from beluga.io import atomic_path  # noqa: E402
from beluga.metrics import BASELINE, CONFIG_LABELS  # noqa: E402

TYPE_COLORS = {"MFT": "tab:blue", "INV": "tab:red", "DIR": "tab:green"}


def heatmap_matrix(long: pd.DataFrame, functionalities: pd.DataFrame, scenario: str,
                   configurations: list[str], methods: list[str]) -> tuple[np.ndarray, list[str], list[str]]:
    """Rows: the IID baseline (standard scenario) then configuration x method;
    columns: average then each functionality (suite order, grouped by class)."""
    funcs = list(functionalities["functionality"])
    rows, labels = [], []
    plan = [(BASELINE, "standard")] + [((c, m), scenario) for c in configurations for m in methods]
    for (conf, meth), sc in plan:
        sel = long[(long.configuration == conf) & (long.method == meth) & (long.scenario == sc)]
        rates = sel.set_index("functionality")["pass_rate"].reindex(funcs).to_numpy(dtype=float)
        rows.append(np.concatenate([[np.nanmean(rates) if np.isfinite(rates).any() else np.nan], rates]))
        label = CONFIG_LABELS.get(conf, conf)
        labels.append(f"{label} (standard)" if conf == BASELINE[0] else f"{label} · {meth}")
    return 100 * np.array(rows), labels, ["average"] + funcs


def plot_heatmap(long: pd.DataFrame, functionalities: pd.DataFrame, scenario: str, configurations: list[str],
                 methods: list[str], out_png: str | os.PathLike, title: str) -> None:
    functionalities = functionalities.copy()
    order = list(dict.fromkeys(functionalities["capability"]))
    functionalities["_c"] = functionalities["capability"].map(order.index)
    functionalities = functionalities.sort_values("_c", kind="stable")
    mat, row_labels, col_labels = heatmap_matrix(long, functionalities, scenario, configurations, methods)
    n_rows, n_cols = mat.shape
    fig, ax = plt.subplots(figsize=(max(8, 0.42 * n_cols + 3), max(3, 0.45 * n_rows + 3.5)))
    cmap = plt.get_cmap("RdYlGn").copy()
    cmap.set_bad("lightgrey")
    im = ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, vmin=0, vmax=100, aspect="auto")
    for i in range(n_rows):
        for j in range(n_cols):
            if np.isfinite(mat[i, j]):
                ax.text(j, i, f"{mat[i, j]:.0f}", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(n_rows), row_labels, fontsize=8)
    ax.set_xticks(range(n_cols), col_labels, rotation=60, ha="right", fontsize=7)
    types = ["avg"] + list(functionalities["test_type"])
    for tick, t in zip(ax.get_xticklabels(), types):
        tick.set_color(TYPE_COLORS.get(t, "black"))
    ax.axvline(0.5, color="black", lw=1.5)
    caps = list(functionalities["capability"])
    for j in range(1, len(caps)):
        if caps[j] != caps[j - 1]:
            ax.axvline(j + 0.5, color="black", lw=0.8)
    ax.axhline(0.5, color="black", lw=1.5)
    n_m = max(1, len(methods))
    for k in range(1, len(configurations)):
        ax.axhline(0.5 + k * n_m, color="black", lw=0.8)
    ax.set_title(title, fontsize=10, loc="right")
    cbar = fig.colorbar(im, ax=ax, fraction=0.025, pad=0.01)
    cbar.set_label("pass rate (%)")
    handles = [plt.Line2D([], [], color=c, marker="s", ls="", label=t) for t, c in TYPE_COLORS.items()]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=3, fontsize=7,
              title="tick colour = test type", title_fontsize=7, frameon=False)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=130)
    plt.close(fig)
