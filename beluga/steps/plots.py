"""rules/plots.smk: the pass-rate heatmaps (one per scenario) and Figure 1."""

from __future__ import annotations

import pandas as pd

from beluga.suites.format import functionality_table, load_suite


def heatmap(*, task: str, suite: str, pass_rates: str, scenario: str, configurations: list[str],
            methods: list[str], out_png: str) -> None:
    from beluga.report.plots import plot_heatmap

    funcs = functionality_table(load_suite(suite))
    plot_heatmap(pd.read_csv(pass_rates), funcs, scenario, configurations, methods, out_png,
                 title=f"{task.upper()} — pass rates (%), scenario: {scenario} (first row: IID model, standard)")


def figure1(*, task: str, suite: str, pass_rates: str, configurations: list[str], methods: list[str],
            out_png: str, out_pdf: str) -> None:
    from beluga.report.plots import plot_figure1

    funcs = functionality_table(load_suite(suite))
    plot_figure1(pd.read_csv(pass_rates), funcs, configurations, methods, out_png, out_pdf,
                 title=f"{task.upper()}: pass rates (%) per scenario (first row: IID model)")
