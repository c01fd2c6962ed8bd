"""Writes beluga/suites/published_suites.json: the shape of CheckList's three release suites
(sentiment, qqp, squad; Ribeiro et al., 2020), per functionality, as the project reads them -- what
``python -m beluga plan`` counts for a task whose suite file is not staged yet (beluga/suites/published.py).

Counted once from the release tarballs in ../shared/data/checklist/release/ (CheckList commit
4e6e5e33a26f30c20ed602b2050f6c73e123cc23, SHA-256 in ../shared/data/SHA256SUMS), each read by the pipeline's
one reader (beluga.suites.build.read_suite, paper_fixes true and false) and turned into training items by the
pipeline's streams (beluga.train.streams.build_streams, batching project and reference), the sequences counted
as the plan counts them (beluga.workflow.plan.task_counts). tests/test_published_sizes.py recounts them where
../shared/data is present.

    python scripts/published_suites.py [../shared/data/checklist/release]
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from beluga.core.tasks import get_task_type  # noqa: E402
from beluga.heads import head_of  # noqa: E402
from beluga.suites.build import read_suite, with_fold_types  # noqa: E402
from beluga.suites.format import functionality_table  # noqa: E402
from beluga.suites.published import COUNTED_BATCHINGS, OUT, RELEASE_SHAPES  # noqa: E402
from beluga.train.streams import StreamOptions, case_stream, item_sequences  # noqa: E402


def count_shape(path, task: str, paper_fixes: bool) -> list[dict]:
    """Per functionality of the suite file ``path`` read for ``task`` (:func:`beluga.suites.build.read_suite`),
    in the suite's order: functionality, capability, test_type, fold_type (``type_folds: trained``), cases,
    distinct cases (identical inputs counted once) and ``inputs``: rows [inputs of a case, cases, training
    sequences of those cases with batching project, with batching reference] (the pipeline's training items,
    :func:`beluga.train.streams.case_stream`, counted by :func:`beluga.train.streams.item_sequences`)."""
    df, ttype = read_suite(str(path), task, paper_fixes=paper_fixes, task_field="type")
    ttype = get_task_type(task)
    head = head_of(ttype)
    funcs = with_fold_types(functionality_table(df)[["functionality", "capability", "test_type"]], df, "trained",
                            str(path))
    options = {b: StreamOptions(batching=b) for b in COUNTED_BATCHINGS}
    if "inputs_b" not in df.columns:
        df = df.assign(inputs_b=None)
    out = []
    for f in funcs.itertuples(index=False):
        group = df[df["functionality"] == f.functionality]
        rows: dict[int, list[int]] = {}
        for r in group.itertuples(index=False):
            row = rows.setdefault(len(r.inputs), [0, 0, 0])
            row[0] += 1
            for i, b in enumerate(COUNTED_BATCHINGS, start=1):
                stream, items, _ = case_stream(head, ttype, r, options[b])
                row[i] += sum(item_sequences(stream, it) for it in items)
        keys = {(tuple(a), None if b is None or (isinstance(b, float) and b != b) else tuple(b))
                for a, b in zip(group["inputs"], group["inputs_b"])}
        out.append({"functionality": f.functionality, "capability": f.capability, "test_type": f.test_type,
                    "fold_type": f.fold_type, "cases": len(group), "distinct": len(keys),
                    "inputs": [[n, *v] for n, v in sorted(rows.items())]})
    return out


def main(argv: list[str]) -> int:
    release = Path(argv[0]) if argv else REPO.parent / "shared" / "data" / "checklist" / "release"
    out = {"source": ("CheckList's release suites (github.com/marcotcr/checklist, release_suites/, commit "
                      "4e6e5e33a26f30c20ed602b2050f6c73e123cc23), counted by scripts/published_suites.py"),
           "suites": {}}
    for name, (task, _names) in RELEASE_SHAPES.items():
        path = release / f"{name}_suite.tar.gz"
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        out["suites"][name] = {"file": path.name, "sha256": digest, "task": task,
                               **{f"paper_fixes_{str(fix).lower()}": count_shape(path, task, fix)
                                  for fix in (True, False)}}
        print(f"{name}: {len(out['suites'][name]['paper_fixes_true'])} functionalities", file=sys.stderr)
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
