"""Heatmaps and Figure 1 (both layouts): title, legend, colour bar and tick labels never overlap, at 1, 3 and
40 functionalities, and the figure's size stays in bounds."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from beluga.report.plots import build_figure1, build_heatmap

SCENARIOS = ["seen", "func", "class", "type"]
CONFS, METHODS = ["iid_to_t", "iid_to_iid_plus_t"], ["vanilla", "l2"]


def funcs_table(n):
    return pd.DataFrame({"functionality": [f"functionality {i}: {'a long name ' * (i % 3)}".strip() for i in range(n)],
                         "capability": [f"class {i * 5 // n}" for i in range(n)],
                         "test_type": [("MFT", "INV", "DIR")[i % 3] for i in range(n)]})


def long_table(funcs, seed=0):
    rng = np.random.default_rng(seed)
    plan = [("standard", "iid", "vanilla")] + [(s, c, m) for s in SCENARIOS for c in CONFS for m in METHODS]
    return pd.DataFrame([{"scenario": s, "configuration": c, "method": m, "functionality": f,
                          "pass_rate": rng.uniform()} for s, c, m in plan for f in funcs["functionality"]])


def by_seed(funcs, several):
    return {s: long_table(funcs, s) for s in (1, 2, 3)} if several else long_table(funcs)


def boxes(fig, artists):
    """Window extents (pixels) of the visible, non-empty artists; the figure is drawn once (``draw``)."""
    renderer = fig.canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in artists if a.get_visible() and
            (not hasattr(a, "get_text") or a.get_text())]


def assert_apart(fig, group_a, group_b, what):
    for a in boxes(fig, group_a):
        for b in boxes(fig, group_b):
            assert not a.overlaps(b), f"{what}: {a} overlaps {b}"


def draw(fig):
    fig.canvas.draw()


def assert_inside(fig, artists):
    w, h = fig.canvas.get_width_height()
    for b in boxes(fig, artists):
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= w + 1 and b.y1 <= h + 1, b


def heatmap_parts(fig):
    ax, cax = fig.axes[0], fig.axes[1]
    return {"title": [fig._suptitle], "legend": list(fig.legends), "colorbar": [cax],
            "xticks": ax.get_xticklabels(), "yticks": ax.get_yticklabels(), "axes": [ax]}


@pytest.mark.parametrize("several", [False, True])
@pytest.mark.parametrize("n", [1, 3, pytest.param(40, marks=pytest.mark.slow)])  # 40 tasks: seconds a figure
def test_heatmap_parts_do_not_overlap(n, several):
    funcs = funcs_table(n)
    title = "SENT — pass rates (%), scenario: func (first row: IID model, standard)"
    fig = build_heatmap(by_seed(funcs, several), funcs, "func", CONFS, METHODS, title)
    try:
        w, h = fig.get_size_inches()
        assert 8 <= w <= max(10, 0.42 * (n + 1) + 6) and 3 <= h <= 12
        draw(fig)
        parts = heatmap_parts(fig)
        assert len(parts["legend"]) == 1 and parts["title"][0].get_text().startswith("SENT")
        names = list(parts)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if {a, b} <= {"xticks", "yticks", "axes"}:
                    continue   # the tick labels sit at the axes' edge
                assert_apart(fig, parts[a], parts[b], f"{a} / {b}")
        assert_inside(fig, [a for v in parts.values() for a in v])
    finally:
        plt.close(fig)


def figure1_parts(fig):
    panels = [ax for ax in fig.axes if ax.images]
    cax = [ax for ax in fig.axes if not ax.images]
    texts = [t for t in fig.texts]
    return panels, cax, texts


@pytest.mark.parametrize("layout", ["row", "grid"])
@pytest.mark.parametrize("several", [False, True])
@pytest.mark.parametrize("n", [1, 3, pytest.param(40, marks=pytest.mark.slow)])  # 40 tasks: seconds a figure
def test_figure1_parts_do_not_overlap(n, several, layout):
    funcs = funcs_table(n)
    fig = build_figure1(by_seed(funcs, several), funcs, CONFS, METHODS,
                        "SENT: pass rates (%) per scenario (first row: IID model)", layout=layout)
    try:
        w, h = fig.get_size_inches()
        draw(fig)
        panels, cax, texts = figure1_parts(fig)
        assert len(panels) == 4 and len(cax) == 1
        if layout == "row":
            assert 10 <= w <= 30 and 2 <= h <= 12 and w / h > 2
            assert len({round(ax.get_position().y0, 6) for ax in panels}) == 1
        else:
            assert 7 <= w <= 18 and 4 <= h <= 16 and 0.5 < w / h < 3
            assert len({round(ax.get_position().y0, 6) for ax in panels}) == 2
            assert len({round(ax.get_position().x0, 6) for ax in panels}) == 2
        titles = [ax.title for ax in panels]
        legend = list(fig.legends)
        ticks = [t for ax in panels for t in ax.get_xticklabels() + ax.get_yticklabels()]
        # the figure's title, seed note and key: every text but none over another or over an axes / the legend
        assert_apart(fig, texts, legend + titles + ticks + panels + cax, "figure text / figure parts")
        for i, a in enumerate(texts):
            assert_apart(fig, [a], texts[i + 1:], "figure texts")
        assert_apart(fig, legend, titles + ticks + panels + cax, "legend / panels")
        assert_apart(fig, titles, ticks + panels + cax, "panel titles / panels")
        for i, t in enumerate(titles):
            assert_apart(fig, [t], titles[i + 1:], "panel titles")
        for i, ax in enumerate(panels):   # a panel's tick labels stay clear of the other panels and their titles
            others = [o for o in panels if o is not ax]
            assert_apart(fig, ax.get_xticklabels() + ax.get_yticklabels(),
                         others + [o.title for o in others] + cax, f"panel {i} ticks")
        assert_inside(fig, texts + legend + titles + ticks + cax)
    finally:
        plt.close(fig)
