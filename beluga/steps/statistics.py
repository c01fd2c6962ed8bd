"""rules/statistics.smk: per-unit outcomes, significance against the IID
baseline, bootstrap intervals, prediction diagnostics, Table 3 and the run's
configuration (docs/STATISTICS.md); the statistics themselves are in
beluga.report.run_stats / beluga.report.stats, the rendering in beluga.report.tables /
beluga.report.diagnostics."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from beluga.core import provenance
from beluga.core.io import read_parquet, write_csv, write_json, write_parquet, write_text
from beluga.core.seeds import seeds_legend
from beluga.core.tasks import get_task_type
from beluga.report import run_stats
from beluga.suites.build import split_cases
from beluga.suites.folds import predicted_iid
from beluga.suites.format import functionality_table, load_suite


def _task_data(units: str, suite: str, task_type: str) -> run_stats.TaskData:
    funcs = functionality_table(load_suite(suite))
    return run_stats.task_data(read_parquet(units, "unit outcomes"), funcs, task_type, source=units)


def failures(*, task: str, task_type: str, runs: list[dict], suite: str, split: str, k: int, out_table: str,
             out_markdown: str, out_html: str, seeds: list[int] | None = None) -> None:
    """Failing T_test cases per functionality of every model (beluga.analyses.behavioral.pipeline_failures);
    ``runs`` are the first training seed's models (with several ``seeds`` the Markdown says so)."""
    from beluga.analyses.behavioral import failures_html, failures_markdown, pipeline_failures
    from beluga.score.metrics import CONFIG_LABELS

    ttype = get_task_type(task_type)
    suite_test = split_cases(suite, split, task_type, "test")
    loaded = [dict(r, outcomes=read_parquet(r["path"], "outcomes"),
                   predictions=read_parquet(r["predictions"], "predictions")) for r in runs]
    df = pipeline_failures(suite_test, loaded, ttype, k=k)
    funcs = functionality_table(load_suite(suite))
    write_csv(df, out_table)
    seeds = list(seeds or [None])     # none named: one seed
    note = seeds_legend(len(seeds), f"\nThe models shown are those of training seed {seeds[0]}, the first of "
                        f"{len(seeds)} ({', '.join(map(str, seeds))}); every seed's scores are in "
                        "scores/per_seed_scores.csv.\n")
    write_text(failures_markdown(df, task) + note, out_markdown)
    write_text(failures_html(df, funcs, task, CONFIG_LABELS), out_html)


def unit_outcomes(*, runs: list[dict], task_type: str, scenario_iid: str, out_units: str) -> None:
    write_parquet(run_stats.outcomes_per_unit(runs, task_type, scenario_iid), out_units)


def _seed_data(units: list[str], suite: str, task_type: str) -> list[run_stats.TaskData]:
    return [_task_data(u, suite, task_type) for u in units]


def significance(*, task: str, units: list[str], seeds: list[int], base_seed: int, suite: str, task_type: str,
                 iid_metric: str, R: int, seed: int, alpha: float, correction: str, out_table: str,
                 out_null: str, swaps: str = "shared") -> None:
    """``units``: each training seed's unit outcomes, in ``seeds`` order (one seed: the one-seed test);
    ``swaps``: statistics.swaps."""
    table, null = run_stats.significance_table(
        _seed_data(units, suite, task_type), iid_metric=iid_metric, R=R, alpha=alpha, correction=correction,
        swaps=swaps, seeds=[run_stats.draw_seed(seed, task, s, base_seed) for s in seeds], training_seeds=seeds)
    write_csv(table, out_table)
    write_parquet(null, out_null)


def intervals(*, task: str, units: list[str], seeds: list[int], base_seed: int, suite: str, task_type: str,
              iid_metric: str, R: int, seed: int, out_table: str) -> None:
    """``units``: each training seed's unit outcomes, in ``seeds`` order (seeds then units resampled)."""
    write_csv(run_stats.interval_table(
        _seed_data(units, suite, task_type), iid_metric=iid_metric, R=R,
        seeds=[run_stats.draw_seed(seed, task, s, base_seed) for s in seeds],
        outer_seed=run_stats.seed_resampling_seed(seed, task), training_seeds=seeds), out_table)


def diagnostics(*, task: str, task_type: str, runs: list[dict], suite: str | None, split: str | None, iid_test: str,
                degenerate_share: float, out_table: str, out_summary: str, out_markdown: str,
                out_html: str | None = None) -> None:
    """Every model's prediction diagnostics: a fold model predicts the T_test
    functionalities it is scored on (predict.scope), so its diagnostics
    describe what it predicted (every case of those functionalities must be
    there); only a model that predicted every functionality can be flagged
    degenerate on the suite; a fold model that predicted a sample of the i.i.d.
    test set (``iid_examples``: :func:`beluga.suites.folds.predicted_iid`) is
    described on that sample. Several training seeds: every seed's models, with
    a ``seed`` column; the summary per pair counts the models of every seed. ``out_html``: the report's page
    (how many models are degenerate, per pair). A task without a suite (``suite`` None): its models on the
    i.i.d. test set only."""
    from beluga.report import diagnostics as diag

    suite_test = split_cases(suite, split, task_type, "test") if suite is not None else \
        pd.DataFrame(columns=["case_id", "functionality", "test_type", "inputs"])
    every = set(suite_test["functionality"])
    iid = read_parquet(iid_test, "i.i.d. test data")
    several = len({r.get("seed") for r in runs}) > 1   # several training seeds: a seed column per model
    rows = []
    for run in runs:
        funcs = run.get("functionalities")
        cases = suite_test if funcs is None else suite_test[suite_test["functionality"].isin(set(funcs))]
        d = diag.run_diagnostics(read_parquet(run["path"], "predictions"), cases,
                                 predicted_iid(iid, run.get("iid_examples")), task_type,
                                 degenerate_share=degenerate_share, source=run["path"],
                                 whole_suite=funcs is None or set(funcs) >= every)
        rows.append(dict(d, **{k: run[k] for k in ("configuration", "method", "partition", "fold")},
                         **({"seed": run["seed"]} if several else {})))
    table = diag.diagnostics_table(rows)
    summary = diag.diagnostics_summary(table)
    write_csv(table, out_table)
    write_csv(summary, out_summary)
    write_text(diag.diagnostics_markdown(summary, task, degenerate_share), out_markdown)
    if out_html is not None:
        write_text(diag.diagnostics_html(summary, task, degenerate_share, out_markdown), out_html)


def table3(*, tasks: list[str], scores: list[str], seed_scores: list[str], significance: list[str],
           intervals: list[str], null: list[str], diagnostics: list[str], alpha: float, correction: str,
           out_csv: str, out_markdown: str, out_latex: str, out_summary_csv: str, out_summary_markdown: str,
           sources: list[str] = (), out_iid_data: str | None = None,
           scenario_iid: list[str] | None = None) -> None:
    """Table 3 (CSV, Markdown, LaTeX) and its summaries (``out_summary_*``: the paper's means per configuration
    and per scenario, beluga/report/table3_summary.py), from the table's own frame; ``sources``: the tasks'
    iid/source.json, aligned with ``tasks``: a task whose i.i.d. data are not the paper's is marked † with a
    footnote, and ``out_iid_data`` (the report's page) lists every task's i.i.d. data. ``diagnostics``: the
    tasks' diagnostics.csv (aligned with ``tasks``; ``scenario_iid``: each task's ``scenario_iid``): a cell
    computed from a degenerate model is marked and never bold (beluga/report/degenerate.py)."""
    from beluga.report import degenerate, iid_data, table3_summary, tables

    per_task = {t: {"scores": pd.read_csv(s), "seed_scores": pd.read_csv(ss), "significance": pd.read_csv(g),
                    "intervals": pd.read_csv(i), "null": read_parquet(n, "null distribution"),
                    "paths": {"scores": s, "seed_scores": ss, "significance": g, "intervals": i}}
                for t, s, ss, g, i, n in zip(tasks, scores, seed_scores, significance, intervals, null, strict=True)}
    records = iid_data.read_source_records(tasks, sources) if sources else {}
    notes = iid_data.fallback_lines(records)
    flags = {t: degenerate.read_model_flags(p) for t, p in zip(tasks, diagnostics, strict=True)}
    long = degenerate.table3_flags(run_stats.table3_long(per_task, alpha, correction), flags,
                                   dict(zip(tasks, scenario_iid or ["folds"] * len(tasks), strict=True)),
                                   dict(zip(tasks, diagnostics, strict=True)))
    n_models, n_degenerate = degenerate.totals(flags, set(zip(long["configuration"], long["method"])))
    legend = degenerate.legend(n_degenerate, n_models, degenerate.threshold_words(flags),
                               ", ".join(str(Path(p).with_name("diagnostics.md")) for p in diagnostics))
    table = tables.table3_csv(long)
    write_csv(table, out_csv)
    summary = table3_summary.table3_summary(table)
    write_csv(summary, out_summary_csv)
    write_text(table3_summary.table3_summary_markdown(summary, table), out_summary_markdown)
    # the renderers read correction "none" as no correction
    write_text(tables.table3_markdown(long, alpha, correction, iid_notes=notes, intervals=list(intervals),
                                      degenerate_legend=legend), out_markdown)
    write_text(tables.table3_latex(long, alpha, correction, iid_notes=notes, intervals=list(intervals),
                                   degenerate_legend=legend), out_latex)
    if out_iid_data is not None:
        write_text(iid_data.iid_data_html(records), out_iid_data)


def run_config(*, config: dict, out_config: str, out_provenance: str | None = None) -> None:
    """The configuration of this run, as YAML (the report's last section), headed by what made the run
    (versions, the git commit and whether the checkout had uncommitted changes, the config files' SHA-256); and
    that provenance as JSON (``run.json``, :func:`beluga.core.provenance.record`)."""
    prov = provenance.record()
    git = prov["git"]
    head = ["# The configuration of this run (config.yaml or --configfile, with --config overrides)",
            "# code: " + (f"git {git['commit']}" + (" (uncommitted changes)" if git.get("dirty") else "")
                          if git.get("commit") else git.get("why", "no git checkout")),
            "# versions: " + ", ".join(f"{k} {v}" for k, v in prov["versions"].items() if v),
            *(f"# config file {d['path']}: sha256 {d['sha256']}" for d in prov["inputs"].values() if "sha256" in d)]
    write_text("\n".join(head) + "\n" + yaml.safe_dump(dict(config), sort_keys=False), out_config)
    if out_provenance is not None:
        write_json(prov, out_provenance)
