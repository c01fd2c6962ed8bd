"""rules/aggregate.smk: pass rates, s_T and G per configuration–method (and the IID baseline), per
training seed and their mean and spread over seeds (beluga.core.seeds)."""

from __future__ import annotations

from beluga.core.io import read_parquet, write_csv, write_text
from beluga.core.seeds import per_seed_frame, seed_order
from beluga.report.iid_data import fallback_line, read_source_record
from beluga.score.metrics import pass_rates_over_seeds, score_runs, scores_markdown, scores_over_seeds
from beluga.suites.format import functionality_table, load_suite


def aggregate(*, task: str, task_type: str, suite: str, runs: list[dict], iid_metric: str, scenario_iid: str,
              out_pass_rates: str, out_scores: str, out_markdown: str, out_seed_pass_rates: str,
              out_seed_scores: str, source: str | None = None) -> None:
    """``runs``: every run (training seed, configuration, method, partition, fold) with its outcomes file
    (``path``). Each seed is scored on its own (metrics.score_runs); ``out_seed_*`` hold the per-seed rows,
    the other outputs the mean over seeds (with ``_sd`` / ``_min`` / ``_max`` / ``n_seeds``; one seed: its
    own scores, ``_sd`` empty). ``source``: the task's iid/source.json (scores.md
    says when its i.i.d. data are not the paper's)."""
    funcs = functionality_table(load_suite(suite))
    seeds = seed_order(r["seed"] for r in runs)
    longs, scores = {}, {}
    for s in seeds:
        loaded = [dict(r, outcomes=read_parquet(r["path"], "outcomes")) for r in runs if int(r["seed"]) == s]
        longs[s], scores[s] = score_runs(loaded, funcs, task_type=task_type, iid_metric=iid_metric,
                                         scenario_iid=scenario_iid)
    seed_long, seed_scores = per_seed_frame(longs), per_seed_frame(scores)
    long, table = pass_rates_over_seeds(seed_long), scores_over_seeds(seed_scores)
    write_csv(seed_long, out_seed_pass_rates)
    write_csv(seed_scores, out_seed_scores)
    write_csv(long, out_pass_rates)
    write_csv(table, out_scores)
    note = fallback_line(task, read_source_record(source)) if source else None
    write_text(scores_markdown(table, task, seeds, iid_note=note, task_type=task_type), out_markdown)
