"""Pass-rate heatmaps (Figure 1 style)."""

from __future__ import annotations

import os
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from beluga.core.io import atomic_path  # noqa: E402
from beluga.core.seeds import has_spread, seeds_legend, spread_text  # noqa: E402
from beluga.score.metrics import BASELINE, CONFIG_LABELS, SCENARIOS  # noqa: E402

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


def seed_matrices(longs: dict, functionalities: pd.DataFrame, scenario: str, configurations: list[str],
                  methods: list[str]) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """:func:`heatmap_matrix` over N ≥ 1 training seeds: ``longs`` maps each seed to its pass-rate table.
    Returns (mean over seeds, standard deviation over seeds (ddof=1; NaN where fewer than two seeds have a
    value, so everywhere with one seed), row labels, column labels); the average column's spread is that of
    the seeds' own averages."""
    mats = [heatmap_matrix(lg, functionalities, scenario, configurations, methods) for lg in longs.values()]
    stack = np.stack([m[0] for m in mats])
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a cell no seed scored stays NaN
        mean, sd = np.nanmean(stack, axis=0), np.nanstd(stack, axis=0, ddof=1)
    return mean, sd, mats[0][1], mats[0][2]


def _seeds(long: pd.DataFrame | dict) -> dict:
    """A pass-rate table, or a mapping training seed -> its table, as the mapping (a table: one seed)."""
    return long if isinstance(long, dict) else {0: long}


def _seeds_line(longs: dict) -> str:
    """The figures' line on the training seeds (:func:`beluga.core.seeds.seeds_legend`; none for one seed)."""
    return seeds_legend(len(longs), f"each cell: mean ± sd over {len(longs)} training seeds "
                                    f"({', '.join(map(str, longs))})")


def class_sorted(functionalities: pd.DataFrame) -> pd.DataFrame:
    """Functionalities grouped by class (classes in order of first appearance),
    suite order kept within a class."""
    for col in ("functionality", "capability", "test_type"):
        if col not in functionalities.columns:
            raise ValueError(f"functionalities: missing column {col!r}")
    functionalities = functionalities.copy()
    order = list(dict.fromkeys(functionalities["capability"]))
    functionalities["_c"] = functionalities["capability"].map(order.index)
    return functionalities.sort_values("_c", kind="stable").drop(columns="_c").reset_index(drop=True)


def _draw_separators(ax, capabilities: list, n_configurations: int, n_methods: int, lw: float) -> None:
    """Black lines after the average column and between classes, after the baseline row and between
    configurations."""
    ax.axvline(0.5, color="black", lw=lw)
    for j in range(1, len(capabilities)):
        if capabilities[j] != capabilities[j - 1]:
            ax.axvline(j + 0.5, color="black", lw=0.8)
    ax.axhline(0.5, color="black", lw=lw)
    n_m = max(1, n_methods)
    for k in range(1, n_configurations):
        ax.axhline(0.5 + k * n_m, color="black", lw=0.8)


def _type_handles() -> list:
    """Legend entries: one coloured square per test type."""
    return [plt.Line2D([], [], color=c, marker="s", ls="", label=t) for t, c in TYPE_COLORS.items()]


def build_heatmap(long: pd.DataFrame | dict, functionalities: pd.DataFrame, scenario: str,
                  configurations: list[str], methods: list[str], title: str) -> plt.Figure:
    """The pass-rate heatmap of a scenario. ``long``: the pass-rate table, or a mapping training seed -> its
    table (each cell is the mean over seeds with "±sd" below it where the sd is defined: never with one
    seed). Constrained layout: the title on top, the test-type legend under the functionality names, the
    colour bar at the right; none overlaps another at any number of functionalities."""
    functionalities = class_sorted(functionalities)
    longs = _seeds(long)
    mat, sd, row_labels, col_labels = seed_matrices(longs, functionalities, scenario, configurations, methods)
    n_rows, n_cols = mat.shape
    spread = has_spread(sd)     # a second line per cell
    tall = 1.5 if spread else 1.0
    label_w = max(len(s) for s in row_labels) * 0.07 + 0.4     # inches of the row labels at 8 pt
    name_h = max(len(s) for s in col_labels) * 0.06 * 0.87     # the names at 7 pt, rotated 60°
    fig = plt.figure(figsize=(max(8.0, 0.42 * n_cols + label_w + 1.2), max(3.0, 0.45 * tall * n_rows + name_h + 1.6)),
                     layout="constrained")
    ax = fig.add_subplot()
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="lightgrey")
    im = ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, vmin=0, vmax=100, aspect="auto")
    for i in range(n_rows):
        for j in range(n_cols):
            if np.isfinite(mat[i, j]):
                ax.text(j, i - 0.12 * spread, f"{mat[i, j]:.0f}", ha="center", va="center", fontsize=7)
            if np.isfinite(mat[i, j]) and spread:
                ax.text(j, i + 0.25, spread_text(sd[i, j], scale=1, digits=0, sep="±"), ha="center", va="center",
                        fontsize=6)
    ax.set_yticks(range(n_rows), row_labels, fontsize=8)
    ax.set_xticks(range(n_cols), col_labels, rotation=60, ha="right", rotation_mode="anchor", fontsize=7)
    types = ["avg"] + list(functionalities["test_type"])
    for tick, t in zip(ax.get_xticklabels(), types):
        tick.set_color(TYPE_COLORS.get(t, "black"))
    _draw_separators(ax, list(functionalities["capability"]), len(configurations), len(methods), lw=1.5)
    line = _seeds_line(longs)
    fig.suptitle(title + ("\n" + line if line else ""), fontsize=10)
    cbar = fig.colorbar(im, ax=ax, fraction=0.025, pad=0.01)
    cbar.set_label("pass rate (%)" + seeds_legend(len(longs), ", mean over seeds"))
    fig.legend(handles=_type_handles(), loc="outside lower center", ncol=3, fontsize=7,
               title="tick colour = test type", title_fontsize=7, frameon=False)
    return fig


def plot_heatmap(long: pd.DataFrame | dict, functionalities: pd.DataFrame, scenario: str, configurations: list[str],
                 methods: list[str], out_png: str | os.PathLike, title: str) -> None:
    """:func:`build_heatmap`, written atomically as a PNG (130 dpi)."""
    fig = build_heatmap(long, functionalities, scenario, configurations, methods, title)
    try:
        with atomic_path(out_png) as tmp:
            fig.savefig(tmp, format="png", dpi=130)
    finally:
        plt.close(fig)


# ------------------------------------------------------------------ Figure 1 --

FIGURE1_SCENARIOS = SCENARIOS[1:]  # every scenario but the baseline's "standard"
FIGURE1_TITLES = {"seen": "seen", "func": "unseen functionality\n(func)", "class": "unseen class\n(class)",
                  "type": "unseen test type\n(type)"}
NAN_COLOR = "#d9d9d9"
#: Figure 1's panel arrangements (config key figure1.layout): the four panels side by side, or 2 x 2
FIGURE1_LAYOUTS = {"row": (1, 4), "grid": (2, 2)}


def figure1_matrices(long: pd.DataFrame, functionalities: pd.DataFrame, configurations: list[str],
                     methods: list[str]) -> dict[str, tuple[np.ndarray, list[str], list[str]]]:
    """The matrix behind each Figure 1 panel (0-100): rows = the IID baseline
    (standard scenario, the same row in every panel) then configuration x method;
    columns = the average pass rate then each functionality, grouped by class."""
    funcs = class_sorted(functionalities)
    return {sc: heatmap_matrix(long, funcs, sc, configurations, methods) for sc in FIGURE1_SCENARIOS}


def figure1_seed_matrices(longs: dict, functionalities: pd.DataFrame, configurations: list[str],
                          methods: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray, list[str], list[str]]]:
    """:func:`figure1_matrices` over training seeds (``longs``: seed -> pass-rate table): per panel the mean,
    the standard deviation over seeds (NaN with one seed) and the labels (:func:`seed_matrices`)."""
    funcs = class_sorted(functionalities)
    return {sc: seed_matrices(longs, funcs, sc, configurations, methods) for sc in FIGURE1_SCENARIOS}


def _key_columns(lines: list[tuple[str, str, bool]], n_col: int) -> list[list[tuple[str, str, bool]]]:
    """Flow key lines into n_col columns of equal height, never leaving a class
    header alone at the bottom of a column."""
    per_col = max(1, -(-len(lines) // n_col))
    while True:
        cols, cur = [], []
        for line in lines:
            if len(cur) == per_col or (line[2] and len(cur) == per_col - 1 and per_col > 1):
                cols.append(cur)
                cur = []
            cur.append(line)
        cols.append(cur)
        if len(cols) <= n_col:
            return cols
        per_col += 1


def build_figure1(long: pd.DataFrame | dict, functionalities: pd.DataFrame, configurations: list[str],
                  methods: list[str], title: str, layout: str = "row") -> plt.Figure:
    """Build Figure 1 for one task: four heatmap panels (seen, func, class, type)
    side by side (``layout`` "row") or 2 x 2 ("grid"), one colour scale, functionalities
    numbered with a key below; the title, the seed note and the legend above the panels, each on
    its own line. ``long``: the pass-rate table, or a mapping training seed -> its table (each cell the mean
    over seeds with "±sd" below it where the sd is defined: never with one seed)."""
    if layout not in FIGURE1_LAYOUTS:
        raise ValueError(f"figure1: field 'layout': {layout!r} is not one of {', '.join(FIGURE1_LAYOUTS)}")
    grid_rows, grid_cols = FIGURE1_LAYOUTS[layout]
    funcs = class_sorted(functionalities)
    longs = _seeds(long)
    seed_mats = figure1_seed_matrices(longs, funcs, configurations, methods)
    mats = {sc: (m[0], m[2], m[3]) for sc, m in seed_mats.items()}
    spreads = {sc: m[1] for sc, m in seed_mats.items()}
    spread = has_spread(list(spreads.values()))     # a second line per cell
    seeds_line = _seeds_line(longs)
    n_rows, n_cols = mats["seen"][0].shape
    row_labels = mats["seen"][1]
    names, caps, types = list(funcs["functionality"]), list(funcs["capability"]), list(funcs["test_type"])

    # sizes in inches, from the number of cells
    cw = float(np.clip(6.0 / n_cols, 0.12, 0.28))
    ch = (0.26 if n_rows <= 12 else 0.22) * (1.6 if spread else 1.0)
    cell_fs = min(7.5, cw * 72 / 2.2, ch * 72 * (0.34 if spread else 0.55))  # "100" fits the cell width
    show_values = n_cols <= 60 and cell_fs >= 4.5
    digits = len(str(n_cols - 1))
    tick_fs = min(7.5, (cw * 72 - 1.5) / (0.64 * digits))  # numbers side by side if they fit at >= 6 pt
    rotate_ticks = tick_fs < 6
    if rotate_ticks:
        tick_fs = min(7.5, cw * 72 * 0.85)
    label_w = max(len(s) for s in row_labels) * 0.065 + 0.25
    panel_w, panel_h = n_cols * cw, n_rows * ch
    gap = max(0.3, 1.6 - panel_w)   # narrow panels: room for the two-line titles ("unseen functionality")
    cbar_x = label_w + grid_cols * panel_w + (grid_cols - 1) * gap + max(0.2, (1.5 - panel_w) / 2)
    width = max(10.0 if layout == "row" else 7.0, cbar_x + 0.15 + 0.75)
    # from the top: the title (0.35), the seed note (0.25), the legend (0.45), the panels' two-line titles (0.45)
    title_h, note_h, legend_h, panel_title_h = 0.35, (0.25 if seeds_line else 0.0), 0.45, 0.45
    top_h, tick_h = title_h + note_h + legend_h + panel_title_h, 0.4
    tick_h += 0.25 * rotate_ticks * (digits - 1)   # rotated numbers: their length
    row_step = panel_h + tick_h + panel_title_h    # a grid row: its panels, their ticks, the next row's titles

    key_fs = 7.0
    char_w, line_h = 0.56 * key_fs / 72, 1.45 * key_fs / 72
    key_lines: list[tuple[str, str, bool]] = []
    for k, (name, cap, tt) in enumerate(zip(names, caps, types), start=1):
        if k == 1 or cap != caps[k - 2]:
            key_lines.append((str(cap), "black", True))
        key_lines.append((f"{k}: {name}", TYPE_COLORS.get(tt, "black"), False))
    key_col_w = max(len(t) for t, _c, _b in key_lines) * char_w + 0.35
    n_key_cols = max(1, int((width - 0.5) // key_col_w))
    key_cols = _key_columns(key_lines, n_key_cols)
    key_h = 0.35 + max(len(c) for c in key_cols) * line_h + 0.15
    height = top_h + grid_rows * row_step - panel_title_h + key_h

    fig = plt.figure(figsize=(width, height))

    def axes(x, y, w, h):  # inches from the bottom left
        return fig.add_axes((x / width, y / height, w / width, h / height))

    cmap = plt.get_cmap("RdYlGn").with_extremes(bad=NAN_COLOR)
    y0 = key_h + tick_h
    im = None
    for p, sc in enumerate(FIGURE1_SCENARIOS):
        mat = mats[sc][0]
        r, c = divmod(p, grid_cols)
        ax = axes(label_w + c * (panel_w + gap), y0 + (grid_rows - 1 - r) * row_step, panel_w, panel_h)
        im = ax.imshow(np.ma.masked_invalid(mat), cmap=cmap, vmin=0, vmax=100, aspect="auto",
                       interpolation="nearest")
        if show_values:
            for i in range(n_rows):
                for j in range(n_cols):
                    v = mat[i, j]
                    if np.isfinite(v):
                        r, g, b, _a = cmap(v / 100)
                        dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.45
                        color = "white" if dark else "black"
                        ax.text(j, i - (0.15 if spread else 0.0), f"{v:.0f}", ha="center", va="center",
                                fontsize=cell_fs, color=color, fontweight="bold" if j == 0 else "normal")
                        if spread:
                            ax.text(j, i + 0.25, spread_text(spreads[sc][i, j], scale=1, digits=0, sep="±"),
                                    ha="center", va="center", fontsize=cell_fs * 0.8, color=color)
        ticks = ["avg"] + [str(k) for k in range(1, n_cols)]
        ax.set_xticks(range(n_cols), ticks, fontsize=tick_fs)
        ax.tick_params(axis="x", length=2, pad=1.5)
        for j, (tick, t) in enumerate(zip(ax.get_xticklabels(), ["avg"] + types)):
            tick.set_color(TYPE_COLORS.get(t, "black"))
            if rotate_ticks or (j == 0 and 3 * 0.6 * tick_fs > 0.95 * cw * 72):
                tick.set_rotation(90)
        if c == 0:
            ax.set_yticks(range(n_rows), row_labels, fontsize=8)
        else:
            ax.set_yticks(range(n_rows), [""] * n_rows)
        ax.tick_params(axis="y", length=2, pad=2)
        _draw_separators(ax, caps, len(configurations), len(methods), lw=1.6)
        ax.set_title(FIGURE1_TITLES[sc], fontsize=9, pad=4)

    cax = axes(cbar_x, y0, 0.15, max((grid_rows - 1) * row_step + panel_h, 0.8))
    cbar = fig.colorbar(im, cax=cax)
    cbar.set_label("pass rate (%)", fontsize=8)
    cbar.ax.tick_params(labelsize=7)

    fig.text(0.15 / width, 1 - 0.12 / height, title, ha="left", va="top", fontsize=11, fontweight="bold")
    if seeds_line:
        fig.text(0.15 / width, 1 - (title_h + 0.02) / height, seeds_line, ha="left", va="top", fontsize=8,
                 style="italic")
    handles = _type_handles() + [plt.Line2D([], [], color=NAN_COLOR, marker="s", ls="", label="no score")]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.1 / width, 1 - (title_h + note_h) / height),
               ncol=len(handles), fontsize=7, frameon=False, title="tick / key colour = test type",
               title_fontsize=7, handletextpad=0.2, columnspacing=1.0, borderaxespad=0.0, borderpad=0.2)

    fig.text(0.15 / width, (key_h - 0.1) / height, "Functionalities (column number: name; grouped by class, "
             "colour = test type; avg = mean pass rate over the scored functionalities)",
             ha="left", va="top", fontsize=key_fs + 0.5, style="italic")
    for c, col in enumerate(key_cols):
        for r, (text, color, bold) in enumerate(col):
            fig.text((0.15 + c * key_col_w) / width, (key_h - 0.35 - r * line_h) / height, text, ha="left",
                     va="top", fontsize=key_fs, color=color, fontweight="bold" if bold else "normal")
    return fig


def plot_figure1(long: pd.DataFrame | dict, functionalities: pd.DataFrame, configurations: list[str],
                 methods: list[str], out_png: str | os.PathLike, out_pdf: str | os.PathLike, title: str,
                 layout: str = "row") -> None:
    """Figure 1 of the paper for one task (``layout``: as :func:`build_figure1`), written atomically as PNG
    (150 dpi) and PDF."""
    fig = build_figure1(long, functionalities, configurations, methods, title, layout)
    try:
        with atomic_path(out_png) as tmp:
            fig.savefig(tmp, format="png", dpi=150)
        with atomic_path(out_pdf) as tmp:   # no creation date: the same figure gives the same bytes
            fig.savefig(tmp, format="pdf", metadata={"CreationDate": None})
    finally:
        plt.close(fig)
