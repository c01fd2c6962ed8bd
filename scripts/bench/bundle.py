"""The GPU benchmark's bundle: everything the GPU-loop figures need, written once with the project's environment
(``--make-bundle DIR``) and read on a bare GPU machine (``--bundle DIR``) that has python3, torch, transformers,
numpy, pandas, pyarrow, pyyaml, safetensors and scipy and nothing else: no snakemake, jsonschema, scattertext or
offline-model package, no network, no project venv.

A bundle is a folder (about 3 MB):

- ``bundle.json``: the run settings every timed run starts from (the default config's ``FoldRun`` for vanilla,
  precision ``auto``: what ``load_config`` would give, so the bare machine reads no config), and the workloads'
  data as training items: ``fold`` (the default suite's seen fold of IID->(IID+T) with the default's i.i.d. mix),
  ``long`` (i.i.d. sentences joined into full windows of ``long_length`` tokens), ``sst2`` and ``qqp`` (the paper's
  SST-2 sentences and QQP question pairs: a seeded sample, their real lengths) and ``qa`` (SQuAD questions with
  their contexts and answers: READ's data, trained with the span loss), each with a held-out batch; the commit
  and the time it was made;
- ``tokenizer/``: the default model's tokenizer files (BERT's uncased vocabulary), which the BERT-sized models
  built from their configs (random weights) and the tiny model use.

Reading it imports only the standard library (the training items become ``beluga.train.batches.TrainItem`` in
:func:`bench.workloads.Workload`)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from bench.common import REPO

FORMAT = 2   # 2: the sst2 and qqp workloads


def _items(items) -> list[dict]:
    import dataclasses

    return [dataclasses.asdict(it) for it in items]


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def make_bundle(out: Path, long_length: int, paper: str | None) -> Path:
    """Write the bundle into ``out`` (created; an existing bundle there is replaced) with the project's
    environment: the default fold, the long windows, the paper's SST-2, QQP and SQuAD samples (from ``paper``,
    the folder holding ``sst2/``, ``qqp/`` and ``squad/``), the run settings and the tokenizer."""
    import shutil
    import tempfile

    import pandas as pd
    from transformers import AutoTokenizer

    from beluga.model.modeling import default_model_path
    from beluga.train.streams import build_streams
    from bench.common import bench_run
    from bench.workloads import HELDOUT, PAPER_SOURCES, default_fold, long_items, paper_data

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ttype, streams, _cfg, iid = default_fold(tmp)
        test = pd.read_parquet(iid["test"])
        heldout_fold = build_streams(ttype, test.head(HELDOUT), None)["iid"]
        long_train = long_items(ttype, pd.read_parquet(iid["train"]), long_length)
        long_heldout = long_items(ttype, test, long_length)[:HELDOUT]
        paper_sets = {}
        for data in PAPER_SOURCES:
            ttype_p, p_streams, p_heldout = paper_data(tmp, data, paper)
            paper_sets[data] = {"task": ttype_p.name, "streams": {k: _items(v) for k, v in p_streams.items()},
                                "heldout": _items(p_heldout)}
        bundle = {
            "format": FORMAT, "made": time.strftime("%Y-%m-%d %H:%M"), "commit": _commit(),
            "run": bench_run("vanilla", "auto").to_dict(),
            "workloads": {
                "fold": {"task": "sent", "streams": {k: _items(v) for k, v in streams.items()},
                         "heldout": _items(heldout_fold)},
                "long": {"task": "sent", "length": long_length, "streams": {"iid": _items(long_train)},
                         "heldout": _items(long_heldout)},
                **paper_sets,
            }}
        staging = out.with_name(out.name + ".part")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        AutoTokenizer.from_pretrained(default_model_path()).save_pretrained(str(staging / "tokenizer"))
        (staging / "bundle.json").write_text(json.dumps(bundle))
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"bundle written: {out} ({size / 2**20:.1f} MiB; workloads: fold {sum(map(len, streams.values()))} items, "
          f"long {len(long_train)} windows of {long_length} tokens, "
          + ", ".join(f"{k} {sum(map(len, v['streams'].values()))}" for k, v in paper_sets.items()) + ")")
    return out


def load_bundle(path: str | Path) -> dict:
    """The bundle in ``path`` (its ``bundle.json``, and ``tokenizer`` set to its tokenizer folder); one line
    naming the folder and what is missing otherwise."""
    path = Path(path)
    f = path / "bundle.json"
    if not f.is_file() or not (path / "tokenizer").is_dir():
        raise SystemExit(f"benchmark --bundle: {path} is not a bundle (no bundle.json or tokenizer/: make one with "
                         "scripts/benchmark.py --make-bundle DIR in the project's environment)")
    bundle = json.loads(f.read_text())
    if bundle.get("format") != FORMAT:
        raise SystemExit(f"benchmark --bundle: {f}: field 'format': {bundle.get('format')!r}, this script reads "
                         f"{FORMAT} (make the bundle again)")
    bundle["tokenizer"] = str((path / "tokenizer").resolve())
    bundle["path"] = str(path.resolve())
    return bundle
