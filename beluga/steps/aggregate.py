"""rules/aggregate.smk: pass rates, s_T and G per configuration–method (and the IID baseline)."""

from __future__ import annotations

from beluga.io import read_parquet, write_csv, write_text
from beluga.metrics import score_runs, scores_markdown
from beluga.suites.format import functionality_table, load_suite


def aggregate(*, task: str, task_type: str, suite: str, runs: list[dict], iid_metric: str, scenario_iid: str,
              out_pass_rates: str, out_scores: str, out_markdown: str) -> None:
    """``runs``: every run (configuration, method, partition, fold) with its outcomes file (``path``)."""
    funcs = functionality_table(load_suite(suite))
    loaded = [dict(r, outcomes=read_parquet(r["path"], "outcomes")) for r in runs]
    long, scores = score_runs(loaded, funcs, task_type=task_type, iid_metric=iid_metric,
                                  scenario_iid=scenario_iid)
    write_csv(long, out_pass_rates)
    write_csv(scores, out_scores)
    write_text(scores_markdown(scores, task), out_markdown)
