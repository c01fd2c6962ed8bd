"""Combinational OOD generalization by template recombination (Fang et al.;
seed 002; docs/ANALYSES.md).

An input x of label y is joined with a template that names a label word w
("<S> It is <LABEL>."); the new label is ŷ = 0 when w names y, else 1. With
fst / sec / neu the first, second and third label (sentiment: positive,
negative, neutral), the seed's Table 2:

=====  =========  =====================================================
split  cell       x label / template word → ŷ
=====  =========  =====================================================
train  (and ID)   fst/fst → 0, sec/sec → 0, neu/fst → 1, neu/sec → 1
COOD              fst/sec → 1, sec/fst → 1
OOD               fst/neu → 1, sec/neu → 1, neu/neu → 0
=====  =========  =====================================================

K inputs x per label are drawn for training (nested as K grows: the first K
of a seeded order), and test inputs are drawn from a disjoint set, so no x
seen in training is ever tested. A model that learned "the template word
agrees with the sentence" handles COOD; one that learned the shortcut
"neutral sentence ⇒ 1, template names fst/sec ⇒ 0" fails it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from beluga.errors import ConfigError, DataError

COMB_ROLES = ("fst", "sec", "neu")
#: (x role, template role, ŷ) of every cell, in the seed's Table 2 order
CELLS = [("fst", "fst", 0, "ID"), ("sec", "sec", 0, "ID"), ("neu", "fst", 1, "ID"), ("neu", "sec", 1, "ID"),
         ("fst", "sec", 1, "COOD"), ("sec", "fst", 1, "COOD"),
         ("fst", "neu", 1, "OOD"), ("sec", "neu", 1, "OOD"), ("neu", "neu", 0, "OOD")]
TRAIN_CELLS = [c for c in CELLS if c[3] == "ID"]
GROUPS = ("ID", "COOD", "OOD")


def cell_name(x_role: str, t_role: str) -> str:
    return f"{x_role}/{t_role}"


def hutto_three_way(sets, negative_below: float, neutral_within: float, positive_above: float) -> pd.DataFrame:
    """The Hutto & Gilbert sentences (any of the four files, pooled: domain does
    not matter here) binned by mean rating: negative below ``negative_below``,
    neutral within ±``neutral_within``, positive above ``positive_above``
    (ratings in the gaps are dropped). Columns: example_id, text, label."""
    from beluga.data import ood_sets as ood

    if not (negative_below <= -neutral_within <= 0 <= neutral_within <= positive_above):
        raise ConfigError("config: field 'combinational.data': cut points must satisfy negative_below <= "
                          "-neutral_within <= 0 <= neutral_within <= positive_above")
    frames = [ood.read_hutto_ratings(s, allow_movies=True).assign(set=s) for s in sets]
    df = pd.concat(frames, ignore_index=True)
    label = np.where(df["rating"] > positive_above, "positive",
                     np.where(df["rating"] < negative_below, "negative",
                              np.where(df["rating"].abs() <= neutral_within, "neutral", "")))
    out = pd.DataFrame({"example_id": [f"{s}-{i}" for s, i in zip(df["set"], df["id"])], "text": df["text"],
                        "label": label})
    return out[(out["label"] != "") & (out["text"].str.len() > 0)].reset_index(drop=True)


def load_labelled(path: str) -> pd.DataFrame:
    """A local TSV / CSV / JSONL with ``text`` and any label values (three or more), optional ``id``."""

    from beluga.data.ood_sets import read_table

    raw = read_table(Path(path), "combinational file")
    for col in ("text", "label"):
        if col not in raw.columns:
            raise DataError(f"combinational file {path}: field '{col}': column missing")
    ids = raw["id"].astype(str) if "id" in raw.columns else [f"x{i:06d}" for i in range(len(raw))]
    return pd.DataFrame({"example_id": ids, "text": raw["text"].astype(str), "label": raw["label"].astype(str)})


def assign_roles(df: pd.DataFrame, roles: dict) -> pd.DataFrame:
    """``roles``: fst / sec / neu -> the label value in ``df``; other labels are dropped."""
    missing = [r for r in COMB_ROLES if r not in roles]
    if missing:
        raise ConfigError(f"config: field 'combinational.roles.{missing[0]}': required")
    inv = {str(v): r for r, v in roles.items()}
    out = df.assign(role=df["label"].astype(str).map(inv)).dropna(subset=["role"])
    for r in COMB_ROLES:
        if not (out["role"] == r).any():
            raise DataError(f"combinational data: field 'label': no example with label {roles[r]!r} (role {r})")
    return out.reset_index(drop=True)


def split_pool(df: pd.DataFrame, n_test: int, seed: int) -> pd.DataFrame:
    """Per role, a seeded order of the id-sorted examples: the first ``n_test``
    are test inputs, the rest are training inputs in ``rank`` order (a K-sample
    is rank < K). Columns added: ``split`` (test / train) and ``rank``."""
    parts = []
    for r in COMB_ROLES:
        g = df[df["role"] == r].sort_values("example_id", kind="stable").reset_index(drop=True)
        order = np.random.default_rng([seed, COMB_ROLES.index(r)]).permutation(len(g))
        g = g.iloc[order].reset_index(drop=True)
        if len(g) <= n_test:
            raise DataError(f"combinational data: field 'n_test': role {r} has {len(g)} examples, not more than "
                            f"n_test = {n_test}")
        g["split"] = ["test" if i < n_test else "train" for i in range(len(g))]
        g["rank"] = [i if i < n_test else i - n_test for i in range(len(g))]
        parts.append(g)
    return pd.concat(parts, ignore_index=True)


def templated(text: str, word: str, template: str) -> str:
    if "{S}" not in template or "{LABEL}" not in template:
        raise ConfigError("config: field 'combinational.template': needs {S} and {LABEL}")
    return template.replace("{S}", text.strip()).replace("{LABEL}", word)


def build(pool: pd.DataFrame, k: int, words: dict, template: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training set, test set) for K = ``k``: the training set holds the ID
    cells on the first K training inputs of each role (2K examples with ŷ = 0,
    2K with ŷ = 1); the test set holds all nine cells on the test inputs.
    Columns: example_id, text, label (ŷ), cell, group, x_id."""
    def rows(sub: pd.DataFrame, cells) -> list[dict]:
        out = []
        for x_role, t_role, y, group in cells:
            for r in sub[sub["role"] == x_role].itertuples(index=False):
                out.append({"example_id": f"{r.example_id}|{t_role}", "text": templated(r.text, words[t_role],
                                                                                        template),
                            "label": y, "cell": cell_name(x_role, t_role), "group": group, "x_id": r.example_id})
        return out

    train_x = pool[(pool["split"] == "train") & (pool["rank"] < k)]
    short = train_x.groupby("role").size().reindex(list(COMB_ROLES), fill_value=0)
    if (short < k).any():
        r = short.index[short < k][0]
        raise DataError(f"combinational data: field 'ks': K = {k} needs {k} training inputs of role {r}, "
                        f"there are {int(short[r])}")
    test_x = pool[pool["split"] == "test"]
    return pd.DataFrame(rows(train_x, TRAIN_CELLS)), pd.DataFrame(rows(test_x, CELLS))


def cell_accuracy(test: pd.DataFrame, pred: np.ndarray) -> dict:
    """Accuracy per cell and per group (ID / COOD / OOD: over their examples)."""
    correct = pd.Series(np.asarray(pred) == test["label"].to_numpy(), index=test.index)
    out = {c: float(correct[test["cell"] == c].mean()) for c in dict.fromkeys(test["cell"])}
    for g in GROUPS:
        out[g] = float(correct[test["group"] == g].mean())
    return out


def curve_figure(table: pd.DataFrame, out_png: str, epochs: pd.DataFrame | None = None) -> None:
    """ID / COOD / OOD accuracy against K (and, when recorded, against the epoch for the largest K)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from beluga.io import atomic_path

    panels = 2 if epochs is not None and len(epochs) else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 3.8), squeeze=False)
    ax = axes[0][0]
    styles = {"ID": ("o-", "tab:blue"), "COOD": ("s-", "tab:orange"), "OOD": ("^-", "tab:grey")}
    for g, (st, col) in styles.items():
        ax.plot(table["K"], 100 * table[g], st, color=col, label=g)
    ax.set_xscale("log")
    ax.set_xticks(list(table["K"]))
    ax.set_xticklabels([str(int(k)) for k in table["K"]])
    ax.minorticks_off()
    ax.set_xlabel("K (training inputs per label)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(-3, 103)
    ax.axhline(50, color="black", linewidth=0.6, linestyle=":")
    ax.set_title("combinational generalization vs training size")
    ax.legend(fontsize=8)
    if panels == 2:
        bx = axes[0][1]
        k = int(epochs["K"].max())
        e = epochs[epochs["K"] == k]
        for g, (st, col) in styles.items():
            bx.plot(e["epoch"], 100 * e[g], st, color=col, label=g)
        bx.set_xticks(list(e["epoch"]))
        bx.set_xlabel("epoch")
        bx.set_ylim(-3, 103)
        bx.set_title(f"per epoch, K = {k}")
        bx.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(out_png) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def accuracy_markdown(table: pd.DataFrame) -> str:
    cells = [cell_name(x, t) for x, t, _, _ in CELLS]
    head = ["K"] + cells + list(GROUPS)
    lines = ["# Combinational OOD: accuracy (%) per cell and group", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict("records"):
        lines.append("| " + " | ".join([str(int(r["K"]))] + [f"{100 * r[c]:.1f}" for c in cells + list(GROUPS)])
                     + " |")
    lines += ["", "x/t: an input of label x with a template naming label t (fst: first label, sec: second, neu: "
              "third). ID cells are the training combinations on held-out inputs; COOD: unseen combinations of "
              "seen parts; OOD: the third label's word, never seen in a template."]
    return "\n".join(lines) + "\n"
