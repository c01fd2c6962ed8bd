"""Refactoring guard: run the tiny test configurations and digest what they write.

    python scripts/output_digest.py run OUT_DIR   # every tiny config into OUT_DIR; OUT_DIR/digest.json
    python scripts/output_digest.py compare A.json B.json

`run` runs snakemake (HF_HUB_OFFLINE=1) on each of tests/configs/tiny*.yaml to its default target,
plus one analyses run (the tiny config with OOD, inoculation and combinational OOD switched on),
and records the SHA-256 of every Parquet / CSV / TSV / Markdown / JSONL file under each run's
results folder, and the dry-run job list (rule and output files, from `snakemake --summary`) of the
default configuration and, when its data is staged under data/, of configs/paper.yaml.
`compare` lists every file whose bytes differ, is missing, or is new, and exits 1 when any does.
Run records (JSON with timings) and figures (PNG) are not compared: they hold wall-clock times.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
SHARED = REPO.parent / "shared" / "data"
SUFFIXES = (".parquet", ".csv", ".tsv", ".md", ".jsonl", ".tex")
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO))


def analyses_config() -> dict:
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["configurations"], cfg["partitions"] = ["iid_to_t"], ["seen", "func"]
    cfg["tasks"]["sent"]["ood"] = [{"name": "tweets", "source": "hutto", "set": "tweets", "max_examples": 10}]
    cfg["inoculation"] = {"units": ["class", "suite"], "doses": [1, "all"], "lrs": [1.0e-3, 1.0e-4],
                          "max_epochs": 3, "patience": 1}
    cfg["combinational"] = {"model": "tiny-random", "ks": [4, 8], "n_test": 6, "max_length": 32,
                            "training": {"lr": 1.0e-3, "batch_size": 8, "epochs": 2}}
    return cfg


def snakemake(workdir: Path, configfile: Path | None, *args: str, env: dict | None = None) -> str:
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args]
    if configfile is not None:
        cmd += ["--configfile", str(configfile)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed in {workdir}:\n{out.stderr[-4000:]}")
    return out.stdout


def digest_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.suffix in SUFFIXES}


def summary(workdir: Path, configfile: Path | None) -> list[str]:
    """The planned jobs: (output file, rule) rows of `snakemake --summary`, sorted."""
    # without HF_HUB_OFFLINE: offline, a DAG whose hub models are not cached stops (the paper's; nothing is fetched)
    online = {k: v for k, v in ENV.items() if k != "HF_HUB_OFFLINE"}
    text = snakemake(workdir, configfile, "--summary", "--quiet", "all", env=online)
    rows = []
    for line in text.splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 3:
            rows.append(f"{cols[0]}\t{cols[2]}")
    return sorted(rows)


def run(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    digest: dict[str, dict] = {}
    configs = []
    for src in sorted((REPO / "tests" / "configs").glob("tiny*.yaml")):
        # ../shared/data made absolute (snakemake runs in its own folder), as the tests do
        configs.append(out / src.name)
        configs[-1].write_text(src.read_text().replace("../shared/data", str(SHARED)))
    analyses = out / "analyses.yaml"
    analyses.write_text(yaml.safe_dump(analyses_config(), sort_keys=False))
    for cfg in [*configs, analyses]:
        wd = out / cfg.stem
        part = out / f"{cfg.stem}.digest.json"   # a rerun skips the configs already digested
        if not part.exists():
            targets = ["all", "inoculation_all", "combinational_all"] if cfg == analyses else ["all"]
            print(f"running {cfg.name} ...", flush=True)
            snakemake(wd, cfg, *targets, "--cores", "2", "--quiet", "all")   # targets before --quiet
            part.write_text(json.dumps(digest_tree(wd / "results")))
        digest[cfg.stem] = json.loads(part.read_text())
    digest["dry-run default"] = {"jobs": summary(out / "dry-default", REPO / "config.yaml")}
    if (REPO / "data" / "fetch.lock.json").exists():
        digest["dry-run paper"] = {"jobs": summary(REPO, REPO / "configs" / "paper.yaml")}
    (out / "digest.json").write_text(json.dumps(digest, indent=1, sort_keys=True))
    print(f"{sum(len(v) for v in digest.values())} entries -> {out / 'digest.json'}")


def compare(a: Path, b: Path) -> int:
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    bad = 0
    for run_name in sorted(set(da) | set(db)):
        ra, rb = da.get(run_name, {}), db.get(run_name, {})
        if "jobs" in ra or "jobs" in rb:
            ja, jb = set(ra.get("jobs", [])), set(rb.get("jobs", []))
            for row in sorted(ja - jb):
                print(f"{run_name}: job only before: {row}")
            for row in sorted(jb - ja):
                print(f"{run_name}: job only after: {row}")
            bad += len(ja ^ jb)
            print(f"{run_name}: {len(ja)} vs {len(jb)} planned outputs")
            continue
        for f in sorted(set(ra) | set(rb)):
            if ra.get(f) != rb.get(f):
                bad += 1
                state = "missing after" if f not in rb else "new after" if f not in ra else "differs"
                print(f"{run_name}/{f}: {state}")
        print(f"{run_name}: {len(ra)} vs {len(rb)} files")
    print("identical" if not bad else f"{bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "run":
        run(Path(sys.argv[2]).resolve())
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit(__doc__)
