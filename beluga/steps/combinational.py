"""rules/combinational.smk: combinational OOD generalization (beluga/analyses/combinational.py, the data
and cells; beluga/analyses/combinational_report.py, the tables, figures and Markdown).
Its training jobs train through beluga/train/fold.py, as the fold jobs do (the project's one training
loop, beluga.train.loop.train)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from beluga.core.errors import DataError
from beluga.core.io import read_parquet, write_csv, write_json, write_parquet, write_text
from beluga.core.tasks import SENT
from beluga.heads import head_of
from beluga.model.job import begin
from beluga.report.degenerate import drop_clean_flags
from beluga.train.settings import FoldRun

# ---------------------------------------------------------------- combinational OOD


def combinational_data(*, data: dict, roles: dict | None, n_test: int, seed: int, out_pool: str) -> None:
    """One data source's labelled inputs (beluga/analyses/combinational_data.py: Hutto & Gilbert, a
    local file, Yelp, MNLI) with their roles (fst / sec / neu), split into test inputs and ranked
    training inputs."""
    from beluga.analyses import combinational as comb
    from beluga.analyses.combinational_data import load_data

    roles = comb.check_roles(roles, data["source"])   # also checked while the DAG is built (Runs)
    df = load_data(data)
    write_parquet(comb.split_pool(comb.assign_roles(df, roles), n_test, seed, data.get("per_label")), out_pool)


def combinational_train(*, run: dict, pool: str, k: int, variant: str, words: dict, template: str, too_long: str,
                        batch_size: int, per_epoch: bool, out_result: str, fields: dict | None = None,
                        degenerate_share: float = 0.95) -> dict:
    """One variant and training size K: a binary classifier (the variant's model)
    trained on the templated ID combinations through the training loop, then
    the accuracy of every cell of the seed's Table 2 (and per epoch if asked).
    Inputs over ``run.max_length`` tokens are dropped or have their sentence cut
    (``too_long``), never the template; the counts go into the record, and whether the trained model is
    degenerate (one class for at least ``degenerate_share`` of the test inputs: ``degenerate``,
    ``majority_share``; beluga.analyses.combinational.prediction_check)."""
    from beluga.analyses import combinational as comb
    from beluga.train.fold import load_start_model, train_model
    from beluga.train.streams import build_streams

    run = FoldRun.from_dict(run)
    job, clock = begin(run.threads, run.precision, run.gpus)
    model, tokenizer = load_start_model(run, job, num_labels=2)
    fitted = comb.fit_inputs(read_parquet(pool, "combinational data"), words, template, tokenizer, run.max_length,
                             too_long, fields)
    train, test = comb.build(fitted, k, words, template)
    lengths = comb.length_counts(fitted, k, too_long, run.max_length)
    cols = ["example_id", "text", "label"] + (["text_b"] if "text_b" in train.columns else [])
    streams = build_streams(SENT, train[cols], None)
    test_b = list(test["text_b"]) if "text_b" in test.columns else None

    def predicted():
        probs = head_of(SENT).predict(model, tokenizer, list(test["text"]), test_b, batch_size, run.max_length,
                                      precision=job.precision)
        return probs.argmax(axis=1)

    def accuracy() -> dict:
        return comb.cell_accuracy(test, predicted())

    epochs = []
    last = math.ceil(float(run.hparams["epochs"]))   # the training loop's epochs (it never stops early here)

    def on_epoch_end(epoch: int, _model, _tokenizer) -> bool:
        if epoch < last:   # the last epoch's is the final model's, evaluated once below
            epochs.append({"epoch": epoch, **accuracy()})
        return False

    summary = train_model(model, tokenizer, streams, run, job, clock,
                          on_epoch_end=on_epoch_end if per_epoch else None)
    model.eval()
    with clock("predict"):
        pred = predicted()
        acc = comb.cell_accuracy(test, pred)
    if per_epoch:
        epochs.append({"epoch": last, **acc})
    write_json({"variant": variant, "K": k, "n_train": len(train), "n_test": len(test), "accuracy": acc,
                "per_epoch": epochs, "model": run.model, "template": template, "label_words": words,
                "max_length": run.max_length, "pair": "text_b" in train.columns, "length": lengths,
                "hparams": run.hparams, "seed": run.seed, "steps": summary["steps"],
                "train_x": sorted(set(train["x_id"])), **comb.prediction_check(pred, degenerate_share),
                "timing": clock.record(), **job.record()}, out_result)
    return clock.parts


def combinational(*, results: list[str], variant: str, too_long: str, out_table: str, out_markdown: str,
                  out_figure: str, out_epochs: str, out_epochs_figure: str, ks: list[int] | None = None,
                  seeds: list[int] | None = None, degenerate_share: float = 0.95) -> None:
    """One variant: accuracy per cell and group for every K, the curve against K, and the accuracy
    per epoch for every K (when recorded). ``results``: every training seed's runs, seed-major
    (``seeds`` order, one per K of ``ks``; none given: one seed's runs). The table is the mean over
    seeds with ``_sd`` / ``_min`` / ``_max`` / ``n_seeds`` and the epochs have a ``seed`` column; one
    seed: without them, its own table and epochs (combinational_report.variant_tables). A K whose model (any
    seed's) is degenerate has its cells marked and ``n_models`` / ``n_degenerate`` columns (only when one is;
    ``degenerate_share``: the threshold its jobs checked, named in the legend)."""
    from beluga.analyses import combinational_report as report

    recs = [json.loads(Path(p).read_text()) for p in results]
    seeds = [int(s) for s in seeds] if seeds else []
    run_seed = report.check_runs(results, recs, ks if ks is not None else [r["K"] for r in recs], seeds,
                                 variant) if seeds else None
    table, epochs = report.variant_tables(recs, run_seed)
    table = drop_clean_flags(report.k_flags(table, recs, results))
    write_csv(table, out_table)
    write_csv(epochs, out_epochs)
    write_text(report.accuracy_markdown(table, variant, too_long, seeds or None, degenerate_share), out_markdown)
    report.curve_figure(table, out_figure, variant)
    report.epochs_figure(epochs, [int(k) for k in table["K"]], out_epochs_figure, variant)


def combinational_figure(*, figure: str, panels: list[list[str]], inputs: list[str], titles: dict[str, str],
                         out_png: str, k: int | None = None) -> None:
    """A figure across variants (combinational.figures; beluga.analyses.combinational.figures):
    ``epochs`` (the seed's Figure 2: accuracy per epoch at K = ``k``) from the panel variants'
    epochs.csv, ``ks`` (its Figure 3: accuracy against K) from their table.csv. ``inputs``: those
    files, one per panel in row order; ``titles``: variant -> its panel's title."""
    from beluga.analyses import combinational_report as report

    names = [v for row in panels for v in row]
    if len(inputs) != len(names):
        raise DataError(f"combinational figure {figure}: {len(inputs)} input files for {len(names)} panels")
    frames = {v: pd.read_csv(p) for v, p in zip(names, inputs)}
    if figure == "epochs":
        report.epochs_panels_figure(frames, panels, int(k), titles, out_png)
    elif figure == "ks":
        report.ks_panels_figure(frames, panels, titles, out_png)
    else:
        raise ValueError(f"combinational figure {figure!r}: not one of epochs, ks")


def combinational_comparison(*, tables: list[str], variants: dict, out_table: str, out_markdown: str,
                             seeds: list[int] | None = None) -> None:
    """Every variant side by side (the seed's Tables 2 and 3): one row per variant and K.
    ``tables``: each variant's table.csv, in the order of ``variants`` (name -> its settings, with
    ``data``, its data source's name, when they read several: the rows grouped by data,
    beluga.analyses.combinational_data.comparison_settings); several training ``seeds``: tables of
    the mean over seeds, checked to hold that many."""
    from beluga.analyses import combinational_report as report

    frames = {name: pd.read_csv(p) for name, p in zip(variants, tables, strict=True)}
    seeds = [int(s) for s in seeds] if seeds else None
    if seeds:
        for p, t in zip(tables, frames.values()):
            report.check_table_seeds(t, p, seeds)
    data = {n: v["data"] for n, v in variants.items()} if all("data" in v for v in variants.values()) else None
    comp = report.comparison(frames, variants, data)
    write_csv(comp, out_table)
    write_text(report.comparison_markdown(comp, seeds), out_markdown)
