"""The summaries of combinational OOD runs (beluga/analyses/combinational.py; docs/ANALYSES.md):
a variant's table over K and training seeds, its figures and Markdown, and the comparison of the
variants (the seed's Tables 2 and 3).

Every training seed's runs are summarised by one path: per K the mean over the seeds of every cell
and group with ``n_seeds`` and ``_sd`` / ``_min`` / ``_max`` (:func:`seeds_table`), each seed's
epochs under a ``seed`` column (:func:`seeds_epochs`). One training seed is N = 1: its table has
``n_seeds`` 1 and every ``_sd`` empty, its epochs no ``seed`` column (:func:`variant_tables`), and
the Markdown shows no spread (an empty sd prints none) and no line on seeds.
"""

from __future__ import annotations

import re

import pandas as pd

from beluga.analyses.combinational import CELLS, COMB_ROLES, GROUPS, cell_name
from beluga.core.errors import DataError
from beluga.core.seeds import (
    N_SEEDS_COLUMN,
    SEED_COLUMN,
    has_spread,
    over_seeds,
    per_seed_frame,
    plus_minus,
    seeds_legend,
)
from beluga.core.text import md_cell
from beluga.report.degenerate import MARK, any_flagged, cell_mark

# ---------------------------------------------------------------- runs and training seeds

#: a run's counts: the same for every training seed (one pool, one tokenizer, the same K)
COUNT_COLUMNS = ("n_train", "n_test", "too_long_train", "too_long_test", "dropped_train", "dropped_test")
#: a seed folder's run file (``<variant>/seeds/<s>/runs/k<K>.json``; the base seed's: ``<variant>/runs/``)
SEED_RUN = re.compile(r"(?:^|/)seeds/([0-9]+)/runs/[^/]+$")


def run_table(recs: list[dict]) -> pd.DataFrame:
    """One training seed's table: a row per run (K ascending) with its counts and the accuracy of
    every cell and group."""
    recs = sorted(recs, key=lambda r: r["K"])
    return pd.DataFrame([{"K": r["K"], "n_train": r["n_train"], "n_test": r["n_test"], **r["accuracy"],
                          "too_long_train": r["length"]["too_long"]["train"],
                          "too_long_test": r["length"]["too_long"]["test"],
                          "dropped_train": r["length"]["dropped"]["train"],
                          "dropped_test": r["length"]["dropped"]["test"]} for r in recs])


def epochs_table(recs: list[dict]) -> pd.DataFrame:
    """One training seed's accuracy after every epoch (K ascending; no rows when not recorded)."""
    recs = sorted(recs, key=lambda r: r["K"])
    epochs = pd.DataFrame([{"K": r["K"], **e} for r in recs for e in r["per_epoch"]])
    if not len(epochs):
        epochs = pd.DataFrame(columns=["K", "epoch", *GROUPS])
    return epochs


def run_seeds(paths: list[str], ks: list[int], seeds: list[int]) -> list[int]:
    """The training seed of each run file. ``paths`` are seed-major: ``len(ks)`` files per seed, in
    ``seeds`` order (the base seed's runs record ``combinational.seed``, so a run's seed is its position's)."""
    n = len(seeds) * len(ks)
    if len(paths) != n:
        raise DataError(f"combinational runs: {len(paths)} run files for {len(seeds)} training seed(s) "
                        f"({', '.join(map(str, seeds))}) x {len(ks)} K values; expected {n}")
    return [int(seeds[i // len(ks)]) for i in range(n)]


def _flat(d, prefix: str) -> dict:
    """A nested record entry as ``prefix.key.sub`` -> value."""
    if not isinstance(d, dict):
        return {prefix: d}
    return {k: v for key, sub in d.items() for k, v in _flat(sub, f"{prefix}.{key}").items()}


def _shared(rec: dict) -> dict:
    """What every training seed's run of one K shares: its counts, training inputs and cells."""
    return {"n_train": rec.get("n_train"), "n_test": rec.get("n_test"), **_flat(rec.get("length"), "length"),
            "train_x": rec.get("train_x"), "accuracy": sorted(rec.get("accuracy") or {})}


def check_runs(paths: list[str], recs: list[dict], ks: list[int], seeds: list[int], variant: str | None = None
               ) -> list[int]:
    """The training seed of each run (:func:`run_seeds`), after checking every run: the K of its
    position, the variant, a seed folder's seed (its path and its record), and every training seed's
    run of a K with the first seed's counts, training inputs and cells. A mismatch: one line naming
    the file and the field."""
    run_seed = run_seeds(paths, ks, seeds)
    first: dict[int, tuple[str, int, dict]] = {}
    for i, (path, rec, seed) in enumerate(zip(paths, recs, run_seed)):
        k = int(ks[i % len(ks)])
        where = f"combinational run {path}"
        if int(rec.get("K", -1)) != k:
            raise DataError(f"{where}: field 'K': {rec.get('K')}, but its position is training seed {seed}'s "
                            f"K = {k}")
        if variant is not None and rec.get("variant", variant) != variant:
            raise DataError(f"{where}: field 'variant': {rec.get('variant')!r}, not {variant!r}")
        folder = SEED_RUN.search(str(path).replace("\\", "/"))
        if folder and int(folder.group(1)) != seed:
            raise DataError(f"{where}: its folder is training seed {folder.group(1)}'s, but its position is "
                            f"seed {seed}'s (runs are seed-major: {', '.join(map(str, seeds))})")
        if folder and "seed" in rec and int(rec["seed"]) != seed:
            raise DataError(f"{where}: field 'seed': {rec['seed']}, but it lies in training seed {seed}'s folder")
        shared = _shared(rec)
        if k not in first:
            first[k] = (path, seed, shared)
            continue
        path0, seed0, shared0 = first[k]
        for field, value in shared.items():
            if value != shared0.get(field):
                shown = ("other inputs" if field == "train_x" else "other cells" if field == "accuracy"
                         else f"{value}")
                was = "" if field in ("train_x", "accuracy") else f": {shared0.get(field)}"
                raise DataError(f"{where}: field '{field}': {shown} for training seed {seed}, not training seed "
                                f"{seed0}'s ({path0}{was}); every training seed runs on the same inputs")
    return run_seed


def by_seed(recs: list[dict], run_seed: list[int]) -> dict[int, list[dict]]:
    """seed -> its runs, seeds in order of first appearance."""
    out: dict[int, list[dict]] = {}
    for rec, seed in zip(recs, run_seed):
        out.setdefault(int(seed), []).append(rec)
    return out


def seeds_table(runs: dict[int, list[dict]]) -> pd.DataFrame:
    """The table of every training seed's runs: per K the counts (every seed's) and the accuracy of
    every cell and group as the mean over seeds, ``n_seeds``, ``<cell>_sd`` / ``_min`` / ``_max``."""
    per = per_seed_frame({s: run_table(recs) for s, recs in runs.items()})
    acc = [c for c in per.columns if c not in (SEED_COLUMN, "K", *COUNT_COLUMNS)]
    return over_seeds(per, ["K"], acc)


def seeds_epochs(runs: dict[int, list[dict]]) -> pd.DataFrame:
    """Every training seed's accuracy after every epoch: each seed's rows under a leading ``seed``."""
    return per_seed_frame({s: epochs_table(recs) for s, recs in runs.items()})


def epochs_over_seeds(epochs: pd.DataFrame) -> pd.DataFrame:
    """Per K and epoch the mean over seeds of every cell and group, with ``_sd`` / ``_min`` / ``_max``."""
    return over_seeds(epochs, ["K", "epoch"], [c for c in epochs.columns if c not in (SEED_COLUMN, "K", "epoch")])


def variant_tables(recs: list[dict], run_seed: list[int] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(table, epochs) of a variant's runs over their training seeds (``run_seed``: each run's seed,
    :func:`check_runs`; none: the runs of one seed): the mean over seeds (:func:`seeds_table`; one seed:
    its :func:`run_table` with ``n_seeds`` 1 and every ``_sd`` empty) and every seed's epochs
    (:func:`seeds_epochs`; one seed: its :func:`epochs_table`, without the ``seed`` column)."""
    runs = by_seed(recs, [0] * len(recs) if run_seed is None else run_seed)
    epochs = seeds_epochs(runs)
    return seeds_table(runs), epochs if len(runs) > 1 else epochs.drop(columns=SEED_COLUMN)


def k_flags(table: pd.DataFrame, recs: list[dict], paths: list[str]) -> pd.DataFrame:
    """A :func:`seeds_table` with ``n_models`` / ``n_degenerate`` per K: its runs (every training seed's) and
    how many of their models are degenerate (each record's ``degenerate``: ``prediction_check``). A record
    without the flag is one DataError line naming it (a record of an older run)."""
    for rec, path in zip(recs, paths, strict=True):
        if "degenerate" not in rec:
            raise DataError(f"{path}: field 'degenerate': missing (a record of an older run: rerun its "
                            "combinational_train job)")
    per_k: dict[int, list[bool]] = {}
    for rec in recs:
        per_k.setdefault(int(rec["K"]), []).append(bool(rec["degenerate"]))
    ks = [int(k) for k in table["K"]]
    return table.assign(n_models=[len(per_k.get(k, [])) for k in ks], n_degenerate=[sum(per_k.get(k, [])) for k in ks])


def check_table_seeds(table: pd.DataFrame, path: str, seeds: list[int]) -> None:
    """A variant's table.csv was written for the run's training seeds: every row's ``n_seeds`` is their
    number (one line naming the file and the field otherwise)."""
    if N_SEEDS_COLUMN not in table.columns:
        raise DataError(f"combinational table {path}: field 'n_seeds': missing (a table of an older run? rerun "
                        "rule combinational)")
    n = pd.to_numeric(table[N_SEEDS_COLUMN], errors="coerce")
    bad = n[n != len(seeds)]
    if len(bad):
        shown = "empty" if pd.isna(bad.iloc[0]) else int(bad.iloc[0])
        raise DataError(f"combinational table {path}: field 'n_seeds': {shown}, not the run's {len(seeds)} "
                        f"training seed{'s' if len(seeds) > 1 else ''}")


STYLES = {"ID": ("o-", "tab:blue"), "COOD": ("s-", "tab:orange"), "OOD": ("^-", "tab:grey")}


def _save(fig, out_png: str) -> None:
    import matplotlib.pyplot as plt

    from beluga.core.io import atomic_path

    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def _k_curve(ax, table: pd.DataFrame) -> None:
    """ID / COOD / OOD accuracy (%) against K on ``ax`` from a :func:`seeds_table`: the mean over the
    training seeds, with error bars of ± one standard deviation where the sd is defined (never with one
    seed); a log K axis ticked at the table's K values."""
    for g, (st, col) in STYLES.items():
        if f"{g}_sd" in table.columns and has_spread(table[f"{g}_sd"]):
            ax.errorbar(table["K"], 100 * table[g], yerr=100 * table[f"{g}_sd"].fillna(0), fmt=st, color=col,
                        capsize=3, label=g)
        else:
            ax.plot(table["K"], 100 * table[g], st, color=col, label=g)
    ax.set_xscale("log")
    ax.set_xticks(list(table["K"]))
    ax.set_xticklabels([str(int(k)) for k in table["K"]])
    ax.minorticks_off()
    ax.set_xlabel("K (training inputs per label)")


def _epoch_curve(ax, e: pd.DataFrame, m: pd.DataFrame) -> None:
    """ID / COOD / OOD accuracy (%) after every epoch on ``ax``: ``e`` the epochs of one K (a ``seed``
    column), ``m`` their mean over seeds (:func:`epochs_over_seeds`): the mean, in a band of ± one
    standard deviation with each seed a thin line where the sd is defined (never with one seed)."""
    for g, (st, col) in STYLES.items():
        if has_spread(m[f"{g}_sd"]):
            for _, one in e.groupby(SEED_COLUMN, sort=False):
                ax.plot(one["epoch"], 100 * one[g], "-", color=col, linewidth=0.6, alpha=0.45)
            sd = 100 * m[f"{g}_sd"].fillna(0)
            ax.fill_between(m["epoch"], 100 * m[g] - sd, 100 * m[g] + sd, color=col, alpha=0.2, linewidth=0)
        ax.plot(m["epoch"], 100 * m[g], st, color=col, label=g)
    ax.set_xticks(list(m["epoch"]))
    n = e[SEED_COLUMN].nunique()
    legend = seeds_legend(n, f"mean ± sd, {n} seeds")
    ax.legend(fontsize=8, **({"title": legend, "title_fontsize": 7} if legend else {}))


def _with_seed(epochs: pd.DataFrame) -> pd.DataFrame:
    """Epochs with a ``seed`` column (one seed's, :func:`epochs_table`: seed 0)."""
    return epochs if SEED_COLUMN in epochs.columns else epochs.assign(**{SEED_COLUMN: 0})


def _accuracy_axis(ax) -> None:
    ax.set_ylim(-3, 103)
    ax.axhline(50, color="black", linewidth=0.6, linestyle=":")


def curve_figure(table: pd.DataFrame, out_png: str, title: str = "") -> None:
    """ID / COOD / OOD accuracy against K (one variant's curve of the seed's Figure 3) from a
    :func:`seeds_table` (:func:`_k_curve`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    n_seeds = int(table[N_SEEDS_COLUMN].max()) if N_SEEDS_COLUMN in table.columns and len(table) else 1
    _k_curve(ax, table)
    ax.set_ylabel("accuracy (%)")
    _accuracy_axis(ax)
    ax.set_title(f"{title}: accuracy vs training size" if title else "accuracy vs training size")
    note = seeds_legend(n_seeds, f"\n(mean ± sd over {n_seeds} training seeds)")
    if note:
        ax.set_title(ax.get_title() + note, fontsize=10)
    ax.legend(fontsize=8)
    _save(fig, out_png)


def epochs_figure(epochs: pd.DataFrame, ks: list[int], out_png: str, title: str = "") -> None:
    """ID / COOD / OOD accuracy after every epoch, one panel per K (one variant's panels of the seed's
    Figure 2; :func:`_epoch_curve`); a panel says so when the epochs were not recorded (per_epoch:
    false). The epochs of the training seeds: a ``seed`` column (:func:`seeds_epochs`; none: one seed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ks), figsize=(4.2 * len(ks), 3.6), squeeze=False, sharey=True)
    per = _with_seed(epochs)
    mean = epochs_over_seeds(per) if len(per) else None
    for ax, k in zip(axes[0], ks):
        e = per[per["K"] == k] if len(per) else per
        if len(e):
            _epoch_curve(ax, e, mean[mean["K"] == k])
        else:
            ax.text(0.5, 0.5, "not recorded (per_epoch: false)", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("epoch")
        _accuracy_axis(ax)
        ax.set_title(f"{title}, K = {k}" if title else f"K = {k}")
    axes[0][0].set_ylabel("accuracy (%)")
    _save(fig, out_png)


def _panel_grid(panels: list[list[str]], width: float, height: float):
    """(figure, axes) of a grid of panels, one per variant name, rows as ``panels`` (a shorter row's
    spare axes hidden)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_cols = max(len(row) for row in panels)
    fig, axes = plt.subplots(len(panels), n_cols, figsize=(width * n_cols, height * len(panels)), squeeze=False,
                             sharey=True)
    for i, row in enumerate(panels):
        for ax in axes[i][len(row):]:
            ax.set_visible(False)
        axes[i][0].set_ylabel("accuracy (%)")
    return fig, axes


def epochs_panels_figure(epochs: dict[str, pd.DataFrame], panels: list[list[str]], k: int,
                         titles: dict[str, str], out_png: str) -> None:
    """The seed's Figure 2 in its layout: a grid of panels (``panels``: rows of variant names; the seed's:
    one row, BERT-base left, RoBERTa-base right), each the variant's ID / COOD / OOD accuracy after every
    epoch at K = ``k`` (:func:`_epoch_curve`). ``epochs``: variant -> its epochs.csv (:func:`variant_tables`;
    a ``seed`` column with several training seeds); ``titles``: variant -> its panel's title. A variant
    without epochs at ``k`` is one DataError line naming it."""
    fig, axes = _panel_grid(panels, 4.2, 3.6)
    for i, row in enumerate(panels):
        for ax, v in zip(axes[i], row):
            per = _with_seed(epochs[v])
            e = per[per["K"] == k]
            if not len(e):
                raise DataError(f"combinational variant {v}: field 'epoch': no epoch recorded at K = {k} (its "
                                "epochs.csv; per_epoch: true and K in its ks)")
            _epoch_curve(ax, e, epochs_over_seeds(e))
            ax.set_xlabel("epoch")
            _accuracy_axis(ax)
            ax.set_title(titles.get(v, v), fontsize=10)
    fig.suptitle(f"Accuracy per epoch, K = {k}")
    _save(fig, out_png)


def ks_panels_figure(tables: dict[str, pd.DataFrame], panels: list[list[str]], titles: dict[str, str],
                     out_png: str) -> None:
    """The seed's Figure 3 in its layout: a grid of panels (``panels``: rows of variant names; the seed's:
    MNLI's RoBERTa base and large on top, Yelp's below), each the variant's ID / COOD / OOD accuracy
    against K (:func:`_k_curve`). ``tables``: variant -> its table.csv (:func:`seeds_table`); ``titles``:
    variant -> its panel's title."""
    fig, axes = _panel_grid(panels, 4.2, 3.6)
    for i, row in enumerate(panels):
        for ax, v in zip(axes[i], row):
            table = tables[v].sort_values("K", kind="stable")
            _k_curve(ax, table)
            _accuracy_axis(ax)
            ax.set_title(titles.get(v, v), fontsize=10)
            ax.legend(fontsize=8)
    n = max((int(t[N_SEEDS_COLUMN].max()) for t in tables.values() if N_SEEDS_COLUMN in t.columns and len(t)),
            default=1)
    fig.suptitle("Accuracy against the training size K" + seeds_legend(n, f" (mean ± sd over {n} training seeds)"))
    _save(fig, out_png)


def _length_note(rule: str) -> str:
    return ("too long: inputs x whose templated input exceeds max_length tokens (train: among the inputs a "
            "K-sample reads; test: among the test inputs), " +
            ("dropped from every cell (the seed drops inputs over 100 tokens)" if rule == "drop" else
             "their sentence cut by whole words (template and label word intact; dropped if nothing remains)"))


def _pm(r: dict, c: str) -> str:
    """An accuracy cell (%): the mean over training seeds ± the standard deviation (``80.9 ± 0.5``; ``80.9``
    where the sd is empty, as with one seed; ``–`` when no seed has it)."""
    return plus_minus(r[c], r.get(f"{c}_sd"), missing="–")


def _seeds_line(seeds: list[int], csv: str) -> str:
    """The Markdown's line on the training seeds (:func:`beluga.core.seeds.seeds_legend`: none for one seed)."""
    return seeds_legend(len(seeds), f"Every accuracy: mean ± standard deviation over {len(seeds)} training seeds "
                                    f"({', '.join(map(str, seeds))}); `_sd`, `_min`, `_max` and `n_seeds` in {csv}. "
                                    "The counts are the same for every seed (one pool of inputs); each seed's runs: "
                                    "runs/ (the base seed) and seeds/<s>/runs/.")


def accuracy_markdown(table: pd.DataFrame, title: str = "", rule: str = "drop", seeds: list[int] | None = None,
                      degenerate_share: float = 0.95) -> str:
    """The table (a :func:`seeds_table`) as Markdown: each accuracy the mean ± sd over the training ``seeds``
    (no spread where the sd is empty, as with one seed), a last line naming the seeds (none for one). A K
    whose model is degenerate (``n_degenerate`` > 0: :func:`k_flags`) has its accuracies marked ⚠,
    with a legend (``degenerate_share``: the threshold)."""
    seeds = list(seeds or [])
    cells = [cell_name(x, t) for x, t, _, _ in CELLS]
    head = ["K"] + cells + list(GROUPS) + ["too long (train / test)"]
    spread = seeds_legend(len(seeds), f", mean ± sd over {len(seeds)} training seeds")
    named = f" ({md_cell(title)})" if title else ""
    lines = [f"# Combinational OOD{named}: accuracy (%) per cell and group{spread}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        deg = cell_mark(r.get("n_degenerate"))
        lines.append("| " + " | ".join([str(int(r["K"]))] + [_pm(r, c) + deg for c in cells + list(GROUPS)]
                                       + [f"{int(r['too_long_train'])} / {int(r['too_long_test'])}"]) + " |")
    lines += ["", "x/t: an input of label x with a template naming label t (fst: first label, sec: second, neu: "
              "third). ID cells are the training combinations on held-out inputs; COOD: unseen combinations of "
              "seen parts; OOD: the third label's word, never seen in a template.", "", _length_note(rule) + "."]
    legend = _seeds_line(seeds, "table.csv")
    lines += ["", legend] if legend else []
    if any_flagged(table):
        lines += ["", _degenerate_line(int(table["n_degenerate"].sum()), int(table["n_models"].sum()),
                                       f"{100 * degenerate_share:.0f}%", "runs/k<K>.json (degenerate, "
                                       "majority_share), seeds/<s>/runs/ for another seed")]
    return "\n".join(lines) + "\n"


def _degenerate_line(n_degenerate: int, n_models: int, threshold: str, why: str) -> str:
    return (f"{MARK}: computed from a degenerate model (any training seed's; {n_degenerate} of {n_models}): it "
            f"predicts one class for at least {threshold} of the test inputs; each run's record says which: {why}.")


def training_label(training: dict | None) -> str:
    """``lr 5e-05, batch 16, 3 epochs`` (the keys a variant may set; others as set); ``–`` when unknown."""
    if not training:
        return "–"
    parts = []
    if "lr" in training:
        parts.append(f"lr {training['lr']:g}")
    if "batch_size" in training:
        parts.append(f"batch {training['batch_size']}")
    if "epochs" in training:
        parts.append(f"{training['epochs']:g} epoch" + ("" if training["epochs"] == 1 else "s"))
    parts += [f"{k} {v}" for k, v in sorted(training.items()) if k not in ("lr", "batch_size", "epochs")]
    return ", ".join(parts)


def comparison(tables: dict[str, pd.DataFrame], settings: dict[str, dict],
               data: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per variant and K (variants in ``settings`` order): the variant's model, its training
    (two variants of one model differ there), template, label words, length rule and counts, and the
    accuracy of the nine cells and three groups. ``data`` (variant -> the name of its data source,
    when the variants read several: beluga.analyses.combinational_data.data_labels) adds a first
    ``data`` column and groups the rows by it, in the order the data first appear (the seed's
    Table 2: Yelp rows, then MNLI rows)."""
    rows = []
    names = list(settings)
    if data:
        order = list(dict.fromkeys(data[n] for n in names))
        names.sort(key=lambda n: order.index(data[n]))   # stable: variants keep their order within a data
    for name in names:
        v = settings[name]
        w = v["label_words"]
        for r in tables[name].to_dict("records"):
            rows.append({**({"data": data[name]} if data else {}), "variant": name, "model": v["model"],
                         "training": training_label(v.get("training")),
                         "template": v["template"],
                         "label_words": "/".join(w[x] for x in COMB_ROLES), "max_length": v["max_length"],
                         "too_long_rule": v["too_long"], **r})
    return pd.DataFrame(rows)


def comparison_markdown(comp: pd.DataFrame, seeds: list[int] | None = None) -> str:
    """The seed's Table 2 (the nine cells per variant) and Table 3 (template and label words: ID,
    COOD, OOD), one row per variant and K, from the variants' tables (:func:`seeds_table`, checked to hold
    the run's ``seeds``: :func:`check_table_seeds`): each accuracy the mean ± sd over the seeds (no spread
    where the sd is empty, as with one seed), a last line naming the seeds (none for one)."""
    seeds = list(seeds or [])
    cells = [cell_name(x, t) for x, t, _, _ in CELLS]
    d_col = ["data"] if "data" in comp.columns else []   # several data sources (comparison's data)
    t2 = [*d_col, "variant", "model", "training", "K"] + cells
    t3 = [*d_col, "variant", "template", "label words (fst/sec/neu)", "K", "ID", "COOD", "OOD", "max_length",
          "too long (train / test)", "rule"]
    spread = seeds_legend(len(seeds), ", mean ± sd over training seeds")
    lines = ["# Combinational OOD: comparison of the variants", "",
             f"## Accuracy (%) per cell (as the seed's Table 2){spread}", "",
             "| " + " | ".join(t2) + " |", "|" + "---|" * len(t2)]
    recs = comp.to_dict("records")
    for r in recs:
        d = [md_cell(r["data"])] if d_col else []
        deg = cell_mark(r.get("n_degenerate"))
        lines.append("| " + " | ".join([*d, md_cell(r["variant"]), md_cell(r["model"], code=True),
                                        md_cell(r["training"]), str(int(r["K"]))]
                                       + [_pm(r, c) + deg for c in cells]) + " |")
    lines += ["", f"## Accuracy (%) per group, template and label words (as the seed's Table 3){spread}", "",
              "| " + " | ".join(t3) + " |", "|" + "---|" * len(t3)]
    for r in recs:
        d = [md_cell(r["data"])] if d_col else []
        lines.append("| " + " | ".join([*d, md_cell(r["variant"]), md_cell(r["template"], code=True),
                                        md_cell(r["label_words"]), str(int(r["K"]))]
                                       + [_pm(r, g) + cell_mark(r.get("n_degenerate")) for g in GROUPS]
                                       + [str(int(r["max_length"])),
                                          f"{int(r['too_long_train'])} / {int(r['too_long_test'])}",
                                          md_cell(r["too_long_rule"])]) + " |")
    lines += ["", "fst / sec / neu: the first, second and third label; x/t: an input of label x with a template "
              "naming label t. " + _length_note("drop").split(", dropped")[0] + "; rule: drop (the seed's) or "
              "truncate_sentence."]
    legend = _seeds_line(seeds, "comparison.csv")
    lines += ["", legend] if legend else []
    if any_flagged(comp):
        n = pd.to_numeric(comp["n_models"], errors="coerce").fillna(0)
        d = pd.to_numeric(comp["n_degenerate"], errors="coerce").fillna(0)
        lines += ["", _degenerate_line(int(d.sum()), int(n.sum()), "the share statistics.degenerate_share",
                                       "each variant's runs/k<K>.json (degenerate, majority_share)")]
    return "\n".join(lines) + "\n"
