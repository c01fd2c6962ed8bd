"""What ``test`` and ``score`` write and print: one answer to one question -- how the predictions of one model,
or of several, fare on a suite. Both write ``cases.parquet``, ``functionalities.csv``, ``summary.md``,
``summary.html`` and ``run.json`` (``test`` also the predictions it made, ``predictions.parquet``) with the same
columns, and print the same summary (:func:`write_results`); ``score`` on the predictions ``test`` wrote gives
``test``'s tables. One model is the case N = 1 of several: several add the models' columns, nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from beluga.analyses.behavioral import failure_summary, summary_html, summary_markdown, summary_text
from beluga.core.io import write_json, write_out_folder
from beluga.heads import head_of

#: the files ``score`` writes into its --out folder (``test``: these and predictions.parquet; nothing else is
#: ever there)
RESULT_FILES = ("cases.parquet", "functionalities.csv", "summary.md", "summary.html", "run.json")

#: cases.parquet's columns (over several models after a leading ``model`` column)
CASE_COLUMNS = ("case_id", "functionality", "capability", "test_type", "status", "filter_reason")


def by_model(frames: list[pd.DataFrame], models: list[str]) -> pd.DataFrame:
    """The models' rows (``frames[i]`` model ``models[i]``'s) as one table: one model's as they are; over
    several, each model's under a leading ``model`` column (the model as given)."""
    if len(models) > 1:
        frames = [f.assign(model=m)[["model", *f.columns]] for f, m in zip(frames, models)]
    return pd.concat(frames, ignore_index=True)


def constant_predictors(suite: pd.DataFrame, preds: list[pd.DataFrame], ttype, models: list[str]) -> list[dict | None]:
    """Per model, its predictions of the ``suite``'s inputs described when they are (nearly) the same for every
    input, else None (:meth:`beluga.heads.base.Head.constant_predictor`: the head's degenerate check)."""
    head, ids = head_of(ttype), set(suite["case_id"].astype(str))
    return [head.constant_predictor(ttype, p.loc[p["case_id"].astype(str).isin(ids), head.value_column].tolist(),
                                    f"predictions of {m}") for p, m in zip(preds, models)]


def write_results(out_dir: str, suite: pd.DataFrame, statuses: list[pd.DataFrame], preds: list[pd.DataFrame],
                  ttype, models: list[str], title: str, run: dict, failures: int = 3,
                  files: dict[str, Callable[[str], None]] | None = None,
                  cases_metadata: dict[str, str] | None = None, warnings: list[str] | None = None) -> str:
    """Write ``out_dir`` as a whole or not at all (:func:`beluga.core.io.write_out_folder`) and return the terminal
    summary: ``statuses[i]`` / ``preds[i]`` are model ``models[i]``'s outcomes (``case_id``, ``status``,
    ``filter_reason``) and predictions on the cases of ``suite``. ``cases.parquet``: :data:`CASE_COLUMNS` per
    case (and model), ``cases_metadata`` in its schema metadata; ``functionalities.csv``, ``summary.md``,
    ``summary.html`` and the printed text: :func:`beluga.analyses.behavioral.failure_summary` (``failures``
    failing cases per functionality) titled ``title``, each flagging a model whose predictions are (nearly) the
    same for every input (:func:`constant_predictors`) and showing each of ``warnings`` (one sentence each: what
    makes the rates read other inputs than the suite's, e.g. a causal LM's prompts cut at their head) under the
    title; ``run.json``: ``run`` and ``constant_predictor`` (per
    model, that description or null); ``files``: more files (name: writer), written first."""
    from beluga.core.io import write_csv, write_parquet, write_text  # looked up per call (tests replace them)

    funcs, examples = failure_summary(suite, statuses, preds, ttype, models, k=failures)
    constants = constant_predictors(suite, preds, ttype, models)
    run = {**run, "constant_predictor": dict(zip(models, constants))}
    meta = suite[["case_id", "functionality", "capability", "test_type"]]
    cases = by_model([meta.merge(st[["case_id", "status", "filter_reason"]], on="case_id")[list(CASE_COLUMNS)]
                      for st in statuses], models)
    markdown = summary_markdown(funcs, examples, title, models, constants, warnings)
    html = summary_html(funcs, examples, title, models, constants, warnings)
    write_out_folder(out_dir, {**(files or {}),
                               "cases.parquet": lambda p: write_parquet(cases, p, metadata=cases_metadata),
                               "functionalities.csv": lambda p: write_csv(funcs, p),
                               "summary.md": lambda p: write_text(markdown, p),
                               "summary.html": lambda p: write_text(html, p),
                               "run.json": lambda p: write_json(run, p)})
    return summary_text(funcs, examples, title, models, constants, warnings=warnings)
