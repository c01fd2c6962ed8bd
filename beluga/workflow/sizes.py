"""What a cost plan counts of a configuration's data (``python -m beluga plan``, :mod:`beluga.workflow.plan`): per
task the suite's functionalities with their training sequences and T_val / T_test inputs, built in memory
exactly as the pipeline builds them (:func:`task_counts`), the i.i.d. split sizes, and the OOD sets' examples
(:func:`ood_entry_count`); data not staged yet are counted from their published sizes and shapes
(:mod:`beluga.data.published`, :mod:`beluga.suites.published`), which the plan's ``sizes:`` line names
(:func:`published_sizes_line`).
"""

from __future__ import annotations

from pathlib import Path

from beluga.core.tasks import get_task_type
from beluga.workflow.cost import iid_sizes, paper_iid_sizes
from beluga.workflow.dag import has_suite


def task_counts(task_cfg: dict, split_cfg: dict, assume_paper_data: bool = True, batching: str = "project") -> dict:
    """Per functionality: training items and sequences (T_train), T_val and
    T_test inputs; the i.i.d. split sizes (:func:`iid_sizes`) and ``iid_used``,
    where they come from; ``streams``, the suite's training streams. Builds the suite and the split in memory
    exactly as the pipeline does. With ``assume_paper_data``, data that are not staged yet are counted from
    their published sizes (:func:`beluga.data.published.published_iid`, a CheckList release suite's shape:
    :mod:`beluga.suites.published`; then no streams): ``published`` lists them in words (the plan's ``sizes:``
    line)."""
    from beluga.data import iid as iid_mod
    from beluga.data.published import iid_staged, published_iid
    from beluga.suites import folds as folds_mod
    from beluga.suites.build import load_task_spec, make_suite, spec_seed_words, suite_spec_name, with_fold_types
    from beluga.suites.format import functionality_table
    from beluga.suites.published import published_line, published_suite
    from beluga.train.streams import build_streams, item_sequences

    ttype = get_task_type(task_cfg["type"])
    paper = paper_iid_sizes(task_cfg) if assume_paper_data else None
    unstaged = published_iid(task_cfg["iid"]) if assume_paper_data and not iid_staged(task_cfg["iid"]) else None
    published = []
    if paper is not None:   # the paper's sizes, whatever is staged: the i.i.d. files are not read
        parts, (sizes, used) = {}, paper
    elif unstaged is not None:   # not staged yet: the source's published sizes
        parts, (sizes, what) = {}, unstaged
        used = (f"{' / '.join(f'{sizes[s]:,}' for s in iid_mod.IID_SPLITS)} train / val / test, the published size "
                f"of {what}: not staged, not counted (--no-assume-paper-data reads the files)")
        published.append(f"{what} (i.i.d.)")
    else:
        parts = iid_mod.load_splits(task_cfg["iid"], ttype.head, set(ttype.iid_labels))
        sizes, used = iid_sizes(task_cfg["iid"], {k: len(v) for k, v in parts.items()}, assume_paper_data)
    if not has_suite(task_cfg):   # its IID model and OOD evaluation only: no functionalities, no suite sizes
        import pandas as pd

        return {"funcs": pd.DataFrame(columns=["functionality", "capability", "test_type"]), "per": {},
                "iid": sizes, "iid_used": used, "suite": None, "streams": {}, "published": published}
    release = published_suite(task_cfg["suite"], task_cfg["type"]) if assume_paper_data else None
    if release is not None:   # a CheckList release suite not staged yet: its published shape
        return {**published_suite_counts(task_cfg, split_cfg, release, batching), "iid": sizes, "iid_used": used,
                "streams": {}, "published": [*published, published_line(release, task_cfg["suite"]["paper_fixes"])]}
    suite, _ = make_suite(task_cfg["suite"], task_cfg["type"], parts.get("pool"))
    split = folds_mod.assign_splits(suite, tuple(split_cfg["fractions"]), int(split_cfg["seed"]),
                                    split_cfg.get("duplicates", "refuse"))
    which = dict(zip(split["case_id"], split["split"]))
    suite = suite.assign(split=suite["case_id"].map(which))
    n_inputs = suite["inputs"].map(len)
    suite_cfg = task_cfg["suite"]
    if suite_spec_name(suite_cfg):
        source = (f"rendered from spec {suite_spec_name(suite_cfg)} ({int(suite_cfg['cases_per_functionality'])} "
                  f"cases a functionality, {spec_seed_words(suite_cfg, load_task_spec(suite_cfg, ttype.name))})")
    else:
        cap = suite_cfg.get("max_cases_per_functionality")
        source = f"read from {suite_cfg['path']}" + (f" (at most {cap} cases a functionality)" if cap else "")
    suite_info = {"source": source, "functionalities": int(suite["functionality"].nunique()),
                  "fractions": list(split_cfg["fractions"]),
                  "cases": {s: int((suite["split"] == s).sum()) for s in ("train", "val", "test")},
                  "inputs": {s: int(n_inputs[suite["split"] == s].sum()) for s in ("train", "val", "test")}}
    funcs = with_fold_types(functionality_table(suite)[["functionality", "capability", "test_type"]], suite,
                            task_cfg["suite"]["type_folds"], "the task's suite")
    per = {}
    train = suite[suite["split"] == "train"]
    streams = build_streams(ttype, None, train.drop(columns="split"), batching=batching)
    for f in funcs["functionality"]:
        per[f] = {"items": 0, "seqs": 0,
                  "val_inputs": int(n_inputs[(suite["functionality"] == f) & (suite["split"] == "val")].sum()),
                  "test_inputs": int(n_inputs[(suite["functionality"] == f) & (suite["split"] == "test")].sum())}
    for stream, items in streams.items():
        for it in items:
            per[it.env]["items"] += 1
            per[it.env]["seqs"] += item_sequences(stream, it)
    suite_info["train_seqs"] = sum(p["seqs"] for p in per.values())
    return {"funcs": funcs, "per": per, "iid": sizes, "iid_used": used, "suite": suite_info, "streams": streams,
            "published": published}


def published_suite_counts(task_cfg: dict, split_cfg: dict, release: str, batching: str) -> dict:
    """:func:`task_counts`'s ``funcs``, ``per`` and ``suite`` of a task whose suite is the CheckList release suite
    ``release``, not staged: its published shape (:func:`beluga.suites.published.published_counts`)."""
    from beluga.suites.build import suite_functionalities
    from beluga.suites.published import published_counts, published_line

    suite_cfg = task_cfg["suite"]
    funcs = suite_functionalities(suite_cfg, task_cfg["type"], published=True)
    counts = published_counts(suite_cfg, release, tuple(split_cfg["fractions"]), split_cfg.get("duplicates", "refuse"),
                              batching, set(funcs["functionality"]))
    per = {f: {"seqs": c["seqs"], "val_inputs": c["inputs"]["val"],
               "test_inputs": c["inputs"]["test"]} for f, c in counts.items()}
    cap = suite_cfg.get("max_cases_per_functionality")
    shape = published_line(release, suite_cfg["paper_fixes"])
    source = (f"{suite_cfg['path']} not staged: the published shape of {shape}"
              + (f" (at most {cap} cases a functionality)" if cap else "")
              + "; inputs and sequences of a split at the functionality's means per case")
    suite_info = {"source": source, "functionalities": len(funcs), "fractions": list(split_cfg["fractions"]),
                  **{k: {s: sum(c[k][s] for c in counts.values()) for s in ("train", "val", "test")}
                     for k in ("cases", "inputs")},
                  "train_seqs": sum(c["seqs"] for c in counts.values())}
    return {"funcs": funcs[["functionality", "capability", "test_type", "fold_type"]], "per": per, "suite": suite_info}


def ood_entry_size(e: dict) -> int:
    """Examples of one OOD set (:func:`ood_entry_count`)."""
    return ood_entry_count(e)[0]


def ood_entry_count(e: dict) -> tuple[int, str]:
    """(examples of one OOD set, where the number comes from): ``max_examples`` where set; else the file's
    rows (a hutto set: its ground-truth file, past the threshold; a local table); a challenge set its
    published size (:func:`beluga.data.challenge.published_size`), a hub set its dataset's
    (:func:`beluga.data.published.published_hub_size`); a set without one counts 0, its size unknown offline
    (the text then starts with ``size unknown``)."""
    from beluga.data.ood_sets import hutto_path, load_hutto, read_table
    from beluga.data.published import published_hub_size

    if e.get("max_examples") is not None:
        return int(e["max_examples"]), f"its max_examples, {e['source']} set"
    if e["source"] == "hutto":
        return len(load_hutto(e["set"], float(e.get("threshold", 0.8)))), f"rows of {hutto_path(e['set'])}"
    if e["source"] == "local":
        path = Path(e["path"]).expanduser()
        return len(read_table(path, "ood file")), f"rows of {path}"
    if e["source"] == "hub":
        hub = published_hub_size(e)
        if hub is not None:
            return hub[0], f"the published size of the hub set {hub[1]}"
        return 0, "size unknown: a hub set without max_examples and without a published size, counted 0"
    from beluga.data.challenge import published_size

    n = published_size(e)
    if n is not None:
        return n, f"the published size of the {e['source']} set"
    return 0, f"size unknown: a {e['source']} set without max_examples and without a published size, counted 0"


def ood_size(task_cfg: dict) -> int:
    """Examples of a task's OOD sets (:func:`ood_entry_size`)."""
    return sum(ood_entry_size(e) for e in task_cfg.get("ood") or [])


def published_sizes_line(paper: str | None, details: dict) -> str | None:
    """The plan's ``sizes:`` line: ``paper`` (:func:`~beluga.workflow.cost.paper_sizes_line`: the paper's sizes,
    whatever is staged), then the published figures counted for data not staged (``details["published"]``, from
    :func:`task_counts`) and for the OOD sets the plan never reads (their published sizes; those of unknown size,
    counted 0); None when there is none of these."""
    ood: dict[str, list[str]] = {}
    for s in details["sizes"].values():
        for o in s["ood"]:
            unknown = o["where"].startswith("size unknown")
            if unknown or o["where"].startswith("the published size"):
                text = o["name"] if unknown else f"{o['name']} {o['counted']:,}"
                ood.setdefault("unknown" if unknown else "published", [])
                if text not in ood["unknown" if unknown else "published"]:
                    ood["unknown" if unknown else "published"].append(text)
    parts = [paper] if paper else []
    if details["published"]:
        parts.append("published figures, not counted (not staged): " + "; ".join(details["published"]))
    if ood.get("published"):
        parts.append("OOD sets at their published sizes, not counted: " + ", ".join(ood["published"]))
    if ood.get("unknown"):
        parts.append("size unknown (counted 0): OOD sets " + ", ".join(ood["unknown"]))
    if not parts:
        return None
    return "; ".join(parts) if paper else "sizes: " + "; ".join(parts)
