"""Figure 1: four pass-rate panels per task, numbered functionality key."""

import matplotlib
import matplotlib.image as mpimg
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from beluga.report.plots import (
    FIGURE1_LAYOUTS,
    TYPE_COLORS,
    build_figure1,
    figure1_matrices,
    plot_figure1,
    plot_heatmap,
)

# suite order interleaves the classes; the figure groups them: f1 f3 | f2 f5 | f4 f6
FUNCS = pd.DataFrame({
    "functionality": ["f1", "f2", "f3", "f4", "f5", "f6"],
    "capability": ["A", "B", "A", "C", "B", "C"],
    "test_type": ["MFT", "INV", "DIR", "MFT", "DIR", "INV"]})
GROUPED = ["f1", "f3", "f2", "f5", "f4", "f6"]
GROUPED_TYPES = ["MFT", "DIR", "INV", "DIR", "MFT", "INV"]
CONFS, METHODS = ["iid_to_t", "iid_plus_t"], ["vanilla", "l2"]
SCENARIOS = ["seen", "func", "class", "type"]


def make_long(funcs=FUNCS, confs=CONFS, methods=METHODS, seed=0):
    """Pass rates with a NaN and a missing row; returns (long, truth dict)."""
    rng = np.random.default_rng(seed)
    rows, truth = [], {}

    def add(sc, conf, meth):
        for f in funcs["functionality"]:
            rate = float(rng.integers(0, 21)) / 20
            if (sc, conf, meth, f) == ("func", confs[0], methods[-1], funcs["functionality"].iloc[1]):
                continue  # missing row -> NaN cell
            if (sc, conf, meth, f) == ("seen", confs[-1], methods[0], funcs["functionality"].iloc[0]):
                rate = np.nan  # all cases filtered
            truth[(sc, conf, meth, f)] = rate
            rows.append({"scenario": sc, "configuration": conf, "method": meth, "fold": "all", "functionality": f,
                         "capability": "", "test_type": "", "n_cases": 4, "n_scored": 4, "n_passed": 0,
                         "pass_rate": rate})

    add("standard", "iid", "vanilla")
    for sc in SCENARIOS:
        for c in confs:
            for m in methods:
                add(sc, c, m)
    return pd.DataFrame(rows), truth


def expected_matrix(truth, sc):
    plan = [("standard", "iid", "vanilla")] + [(sc, c, m) for c in CONFS for m in METHODS]
    out = []
    for key in plan:
        rates = [truth.get((*key, f), np.nan) for f in GROUPED]
        avg = np.nanmean(rates) if np.isfinite(rates).any() else np.nan
        out.append([avg] + rates)
    return 100 * np.array(out)


def test_panel_matrices_match_input():
    long, truth = make_long()
    mats = figure1_matrices(long, FUNCS, CONFS, METHODS)
    assert list(mats) == SCENARIOS
    for sc in SCENARIOS:
        mat, rows, cols = mats[sc]
        assert mat.shape == (5, 7)
        np.testing.assert_allclose(mat, expected_matrix(truth, sc), equal_nan=True)
        assert cols == ["average"] + GROUPED
        assert rows[0] == "IID (standard)" and rows[1:] == ["IID→T · vanilla", "IID→T · l2", "IID+T · vanilla",
                                                             "IID+T · l2"]
        np.testing.assert_allclose(mat[0], mats["seen"][0][0], equal_nan=True)  # same baseline row everywhere
    assert np.isnan(mats["func"][0][2, 1 + GROUPED.index("f2")])
    assert np.isnan(mats["seen"][0][3, 1 + GROUPED.index("f1")])
    assert np.isfinite(mats["seen"][0][3, 0])  # the average skips the NaN


def test_figure_ticks_lines_text():
    long, truth = make_long()
    fig = build_figure1(long, FUNCS, CONFS, METHODS, "SENT")
    try:
        panels = [ax for ax in fig.axes if ax.get_title() and ax.images][:4]
        assert len(panels) == 4
        assert [ax.get_title() for ax in panels][0] == "seen"
        for p, ax in enumerate(panels):
            ticks = ax.get_xticklabels()
            assert [t.get_text() for t in ticks] == ["avg"] + [str(k) for k in range(1, 7)]
            assert matplotlib.colors.to_rgba(ticks[0].get_color()) == matplotlib.colors.to_rgba("black")
            for t, tt in zip(ticks[1:], GROUPED_TYPES):
                assert matplotlib.colors.to_rgba(t.get_color()) == matplotlib.colors.to_rgba(TYPE_COLORS[tt])
            labels = [t.get_text() for t in ax.get_yticklabels()]
            assert (labels[0] == "IID (standard)") if p == 0 else not any(labels)
            # separators: after avg + between classes; after the baseline + between configurations
            xs = sorted({ln.get_xdata()[0] for ln in ax.lines if ln.get_xdata()[0] == ln.get_xdata()[1]
                         and tuple(ln.get_ydata()) == (0, 1)})
            ys = sorted({ln.get_ydata()[0] for ln in ax.lines if tuple(ln.get_xdata()) == (0, 1)})
            assert xs == [0.5, 2.5, 4.5] and ys == [0.5, 2.5]
            # one value per scored cell
            mat = expected_matrix(truth, SCENARIOS[p])
            assert len(ax.texts) == int(np.isfinite(mat).sum())
            assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.0f}" for v in mat[np.isfinite(mat)])
            assert ax.images[0].get_clim() == (0, 100)
        # the key lists every functionality by number, coloured by test type
        key = {t.get_text(): t.get_color() for t in fig.texts}
        for k, (f, tt) in enumerate(zip(GROUPED, GROUPED_TYPES), start=1):
            assert matplotlib.colors.to_rgba(key[f"{k}: {f}"]) == matplotlib.colors.to_rgba(TYPE_COLORS[tt])
        assert {"A", "B", "C"} <= set(key)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("layout", ["row", "grid"])
def test_plot_figure1_writes_png_and_pdf(tmp_path, layout):
    long, _ = make_long()
    png, pdf = tmp_path / "fig1.png", tmp_path / "fig1.pdf"
    plot_figure1(long, FUNCS, CONFS, METHODS, png, pdf, "SENT: pass rates", layout=layout)
    img = mpimg.imread(png)
    if layout == "row":
        assert img.ndim == 3 and img.shape[0] >= 300 and img.shape[1] >= 1200
        assert img.shape[1] / img.shape[0] < 12
    else:   # 2 x 2: about as tall as wide
        assert img.ndim == 3 and img.shape[0] >= 600 and img.shape[1] >= 900
        assert 0.5 < img.shape[1] / img.shape[0] < 2
    assert float(img[..., :3].std()) > 0.05  # not blank
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig1.pdf", "fig1.png"]  # no temp files left


def test_large_figure_stays_legible():
    """~70 functionalities x 25 rows: numbered ticks fit, no values in cells, bounded size."""
    n = 70
    funcs = pd.DataFrame({"functionality": [f"functionality number {i} with a rather long name" for i in range(n)],
                          "capability": [f"class {i * 9 // n}" for i in range(n)],
                          "test_type": [("MFT", "INV", "DIR")[i % 3] for i in range(n)]})
    confs = ["iid_to_t", "iid_plus_t", "iid_to_iid_plus_t"]
    methods = ["vanilla", "l2", "dropout", "lp", "lp_ft", "irm", "group_dro", "fish"]
    rng = np.random.default_rng(1)
    plan = [("standard", "iid", "vanilla")] + [(s, c, m) for s in SCENARIOS for c in confs for m in methods]
    long = pd.DataFrame([{"scenario": s, "configuration": c, "method": m, "functionality": f,
                          "pass_rate": rng.uniform()} for s, c, m in plan for f in funcs["functionality"]])
    fig = build_figure1(long, funcs, confs, methods, "PARA")
    try:
        w, h = fig.get_size_inches()
        assert 20 < w < 50 and 5 < h < 15
        panels = [ax for ax in fig.axes if ax.images][:4]
        for ax in panels:
            assert ax.images[0].get_array().shape == (25, 71)
            assert len(ax.texts) == 0  # too many columns for values
            bbox = ax.get_position()
            assert bbox.width * w / 71 >= 0.12 - 1e-6  # cell width in inches
            assert bbox.height * h / 25 >= 0.18 - 1e-6
            ticks = ax.get_xticklabels()
            assert ticks[-1].get_text() == "70"
            assert ticks[-1].get_fontsize() >= 6
        key = {t.get_text() for t in fig.texts}
        assert all(f"{k}: {f}" in key for k, f in enumerate(funcs["functionality"], start=1))
    finally:
        plt.close(fig)


@pytest.mark.parametrize("scenario", ["seen", "func"])
def test_plot_heatmap_still_works(tmp_path, scenario):
    long, _ = make_long()
    out = tmp_path / f"heatmap_{scenario}.png"
    plot_heatmap(long, FUNCS, scenario, CONFS, METHODS, out, "SENT")
    img = mpimg.imread(out)
    assert img.shape[0] > 200 and img.shape[1] > 400


def test_grid_layout_places_panels_two_by_two():
    long, truth = make_long()
    fig = build_figure1(long, FUNCS, CONFS, METHODS, "SENT", layout="grid")
    try:
        panels = [ax for ax in fig.axes if ax.images]
        assert [ax.get_title() for ax in panels] == ["seen", "unseen functionality\n(func)", "unseen class\n(class)",
                                                      "unseen test type\n(type)"]
        pos = [ax.get_position() for ax in panels]
        assert pos[0].y0 == pytest.approx(pos[1].y0) and pos[2].y0 == pytest.approx(pos[3].y0) and pos[2].y0 > 0
        assert pos[0].y0 > pos[2].y1   # seen and func above class and type
        assert pos[0].x0 == pytest.approx(pos[2].x0) and pos[1].x0 == pytest.approx(pos[3].x0)
        assert pos[1].x0 > pos[0].x1
        # the row labels on the left column only; every panel its own numbered ticks and values
        for p, ax in enumerate(panels):
            labels = [t.get_text() for t in ax.get_yticklabels()]
            assert (labels[0] == "IID (standard)") if p % 2 == 0 else not any(labels)
            assert [t.get_text() for t in ax.get_xticklabels()] == ["avg"] + [str(k) for k in range(1, 7)]
            mat = expected_matrix(truth, SCENARIOS[p])
            assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.0f}" for v in mat[np.isfinite(mat)])
    finally:
        plt.close(fig)


def test_unknown_layout_is_one_error_line():
    long, _ = make_long()
    assert set(FIGURE1_LAYOUTS) == {"row", "grid"}
    with pytest.raises(ValueError, match=r"^figure1: field 'layout': 'column' is not one of row, grid$"):
        build_figure1(long, FUNCS, CONFS, METHODS, "SENT", layout="column")


def test_layout_config_key_default_and_values():
    """figure1.layout in the config schema: row by default, grid accepted, anything else refused naming the
    field."""
    from pathlib import Path

    import yaml
    from snakemake.utils import validate

    repo = Path(__file__).resolve().parents[1]
    schema = str(repo / "schemas" / "config.schema.yaml")

    def config(**extra):
        return {**yaml.safe_load((repo / "config.yaml").read_text()), **extra}

    cfg = config()
    validate(cfg, schema)
    assert cfg["figure1"] == {"layout": "row"}
    cfg = config(figure1={"layout": "grid"})
    validate(cfg, schema)
    assert cfg["figure1"]["layout"] == "grid"
    with pytest.raises(Exception, match="'column' is not one of"):
        validate(config(figure1={"layout": "column"}), schema)


def test_figure1_step_passes_the_layout(tmp_path, monkeypatch):
    """beluga.steps.plots.figure1 (the rule's script) hands the configured layout to the renderer."""
    from beluga.report import plots as report_plots
    from beluga.steps import plots as step_plots

    long, _ = make_long()
    pd.concat([long.assign(seed=1), long.assign(seed=2)]).to_csv(tmp_path / "rates.csv", index=False)
    monkeypatch.setattr(step_plots, "load_suite", lambda path: path)
    monkeypatch.setattr(step_plots, "functionality_table", lambda suite: FUNCS)
    seen = {}
    monkeypatch.setattr(report_plots, "plot_figure1", lambda *a, **k: seen.update(args=a, kwargs=k))
    step_plots.figure1(task="sent", suite="suite", pass_rates=str(tmp_path / "rates.csv"), configurations=CONFS,
                       methods=METHODS, out_png="a.png", out_pdf="a.pdf", layout="grid")
    assert seen["kwargs"]["layout"] == "grid" and sorted(seen["args"][0]) == [1, 2]
