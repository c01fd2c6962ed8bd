"""rules/plots.smk: the pass-rate heatmaps (one per scenario) and Figure 1, from each training seed's pass
rates (the mean over seeds with its spread)."""

from __future__ import annotations

import pandas as pd

from beluga.core.seeds import SEED_COLUMN, seed_order
from beluga.suites.format import functionality_table, load_suite


def _by_seed(seed_pass_rates: str) -> dict[int, pd.DataFrame]:
    """Each training seed's pass-rate table (per_seed_pass_rates.csv split by its seed column)."""
    df = pd.read_csv(seed_pass_rates)
    return {s: df[df[SEED_COLUMN] == s].drop(columns=SEED_COLUMN).reset_index(drop=True)
            for s in seed_order(df[SEED_COLUMN])}


def heatmap(*, task: str, suite: str, pass_rates: str, scenario: str, configurations: list[str],
            methods: list[str], out_png: str) -> None:
    """``pass_rates``: per_seed_pass_rates.csv."""
    from beluga.report.plots import plot_heatmap

    funcs = functionality_table(load_suite(suite))
    plot_heatmap(_by_seed(pass_rates), funcs, scenario, configurations, methods, out_png,
                 title=f"{task.upper()} — pass rates (%), scenario: {scenario} (first row: IID model, standard)")


def figure1(*, task: str, suite: str, pass_rates: str, configurations: list[str], methods: list[str],
            out_png: str, out_pdf: str, layout: str = "row") -> None:
    """``pass_rates``: per_seed_pass_rates.csv; ``layout``: the config's figure1.layout (row or grid)."""
    from beluga.report.plots import plot_figure1

    funcs = functionality_table(load_suite(suite))
    plot_figure1(_by_seed(pass_rates), funcs, configurations, methods, out_png, out_pdf,
                 title=f"{task.upper()}: pass rates (%) per scenario (first row: IID model)", layout=layout)
