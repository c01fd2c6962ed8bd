"""The paper's run from a fresh clone (docs/PAPER_RUN.md, "The paper's run on a
cluster"): the fetch target end to end through the real HTTP storage plugin
against files shaped like the official downloads, served from 127.0.0.1
(CheckList's real release tarballs, zips with GLUE's layout, SQuAD-shaped
JSON, a Quora TSV with quoted fields), checksums, a corrupted download, a
second fetch that does nothing, a tiny configuration shaped like the paper's
run from the fetched folder, hub models from a hub-layout cache offline, and a
changed revision that reruns what was trained from it. Needs ../shared/data."""

import csv
import gzip
import io
import json
import os
import shutil
import subprocess
import threading
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ENV, REPO, SNAKEMAKE, job_counts, record_rules

SHARED = REPO.parent / "shared" / "data"
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not SHARED.exists(), reason=f"real data folder {SHARED} is absent")]

HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
COMMIT_A = "3f1b0c4e9a7d2b6e8c5a1f0d4b7e9c2a6d8f1e3b"   # commit-like ids (40 hex digits)
COMMIT_B = "9c2e7a1d5b3f8e0a4c6d2b9f7e1a3c5d8b0f6e4a"
QUORA_REL = "iid/quora/quora_duplicate_questions.tsv"


# ---------------------------------------------------------------- a file server on the loopback
class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):  # record instead of printing
        self.server.requests.append((self.command, self.path))


class Server:
    """Serves ``root`` on 127.0.0.1 (a free port) in a thread; ``requests`` lists (method, path)."""

    def __init__(self, root: Path):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
        self.httpd.requests = []
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def requests(self):
        return self.httpd.requests

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# ---------------------------------------------------------------- files shaped like the official downloads
def _zip(path: Path, members: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(name, text)


def _quora_rows(n: int) -> pd.DataFrame:
    """The first pairs of the real Quora release, parsed with standard CSV quoting."""
    df = pd.read_csv(SHARED / "iid" / "qqp" / "quora_duplicate_questions.tsv.gz", sep="\t", nrows=n,
                     keep_default_na=False, dtype=str)
    return df


def build_downloads(root: Path) -> None:
    """The official files, small: CheckList's real tarballs; SST-2.zip and
    QQP-clean.zip with GLUE's layout (TSVs written without quoting, as GLUE
    ships them); SQuAD-shaped train / dev JSON (whole articles of the
    reconstructed dev set); the Quora release with quoted fields."""
    for name in ("sentiment_suite.tar.gz", "qqp_suite.tar.gz", "squad_suite.tar.gz"):
        dest = root / "checklist" / "release" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SHARED / "checklist" / "release" / name, dest)
    train = (SHARED / "iid" / "sst2" / "train.tsv").read_text().splitlines(keepends=True)
    dev = (SHARED / "iid" / "sst2" / "dev.tsv").read_text().splitlines(keepends=True)
    _zip(root / "iid" / "sst2" / "SST-2.zip", {"SST-2/train.tsv": "".join(train[:301]),
                                               "SST-2/dev.tsv": "".join(dev[:121]),
                                               "SST-2/test.tsv": "index\tsentence\n0\ta test sentence\n"})
    q = _quora_rows(600)
    q = q[~q["question1"].str.contains("[\t\n\r]") & ~q["question2"].str.contains("[\t\n\r]")]
    cols = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]

    def glue_tsv(df):
        return "\t".join(cols) + "\n" + "".join("\t".join(r) + "\n" for r in df[cols].itertuples(index=False))

    _zip(root / "iid" / "qqp" / "QQP-clean.zip", {"QQP/train.tsv": glue_tsv(q.iloc[:400]),
                                                  "QQP/dev.tsv": glue_tsv(q.iloc[400:]),
                                                  "QQP/test.tsv": "id\tquestion1\tquestion2\n"})
    with gzip.open(SHARED / "iid" / "squad" / "dev-v1.1.reconstructed.json.gz", "rt") as f:
        articles = json.load(f)["data"]
    (root / "iid" / "squad").mkdir(parents=True, exist_ok=True)
    (root / "iid" / "squad" / "train-v1.1.json").write_text(json.dumps({"version": "1.1", "data": articles[:3]}))
    (root / "iid" / "squad" / "dev-v1.1.json").write_text(json.dumps({"version": "1.1", "data": articles[3:7]}))
    quora = _quora_rows(40)
    (root / QUORA_REL).parent.mkdir(parents=True, exist_ok=True)
    quora.to_csv(root / QUORA_REL, sep="\t", index=False, quoting=csv.QUOTE_MINIMAL)
    assert '"When do you use ""&"" instead of ""and""?"' in (root / QUORA_REL).read_text()


# ---------------------------------------------------------------- a hub-layout Hugging Face cache
def build_hub_cache(cache: Path, commits=(COMMIT_A,)) -> Path:
    """``models--<org>--<name>/{blobs,snapshots/<commit>,refs/main}`` from the
    offline MiniLM model, as huggingface_hub lays out a download."""
    from beluga.model.modeling import default_model_path

    src = Path(default_model_path())
    repo = cache / ("models--" + HUB_NAME.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for commit in commits:
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True, exist_ok=True)
        for f in src.iterdir():
            if f.is_file() and not f.name.startswith(".") and not f.name.endswith((".bin", ".h5", ".msgpack")):
                data = f.read_bytes()
                import hashlib

                blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
                if not blob.exists():
                    blob.write_bytes(data)
                if not (snap / f.name).is_symlink():
                    (snap / f.name).symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commits[0])
    return cache


def hub_env(cache: Path) -> dict:
    return dict(ENV, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1")


#: the test environment without HF_HUB_OFFLINE: a dry run that plans fetch_model for a hub model not in the cache
#: (offline, the DAG check stops it: the fetch could not succeed); dry runs open no connection
ONLINE = {k: v for k, v in ENV.items() if k != "HF_HUB_OFFLINE"}


def run_smk(workdir: Path, cfg_file: Path, *args, env=None, check=True, timeout=1500):
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(workdir), *args, "--configfile", str(cfg_file)]
    out = record_rules(subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, timeout=timeout))
    if check and out.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{out.stdout[-4000:]}\n{out.stderr[-6000:]}")
    return out


def paper_shaped_config(mirror: str, sent_revision: str | None = None) -> dict:
    """configs/paper.yaml in miniature: the data folder data/, the three
    release tarballs, GLUE / SQuAD files, a hub model by name, small caps."""
    return {
        "results": "results", "data_dir": "data", "seed": 3,
        "fetch": {"mirror": mirror, "files": [{"path": QUORA_REL, "url": f"{mirror}/{QUORA_REL}"}]},
        "tasks": {
            "sent": {"type": "sent", "model": HUB_NAME, "model_revision": sent_revision,
                     "suite": {"path": "checklist/release/sentiment_suite.tar.gz", "max_cases_per_functionality": 4,
                               "max_inputs_per_case": 3, "seed": 7,
                               "functionalities": ["single positive words", "simple negations: not negative",
                                                   "add random urls and handles"]},
                     "iid": {"source": "sst2", "path": "iid/sst2", "n_train": 32, "n_val": 10, "n_test": 20,
                             "seed": 42}},
            "para": {"type": "para", "model": "tiny-random",
                     "suite": {"path": "checklist/release/qqp_suite.tar.gz", "max_cases_per_functionality": 4,
                               "seed": 7, "functionalities": ["Modifier: adj", "Testing implications"]},
                     "iid": {"source": "qqp", "path": "iid/qqp", "n_train": 40, "n_val": 10, "n_test": 20,
                             "seed": 42}},
            "read": {"type": "read", "model": "tiny-random",
                     "suite": {"path": "checklist/release/squad_suite.tar.gz", "max_cases_per_functionality": 4,
                               "seed": 7, "functionalities": ["Question typo", "Change name everywhere"]},
                     "iid": {"source": "squad", "path": "iid/squad", "n_train": 24, "n_val": 8, "n_test": 16,
                             "seed": 42},
                     "training": {"max_length": 128, "doc_stride": 32}},
        },
        "split": {"fractions": [0.5, 0.25, 0.25], "seed": 123},
        "configurations": ["iid_to_iid_plus_t"], "methods": ["vanilla"], "partitions": ["seen"],
        "training": {"max_length": 32, "iid": {"lr": 1.0e-3, "batch_size": 8, "epochs": 1},
                     "suite": {"lr": 1.0e-3, "batch_size": 4, "epochs": 1}, "iid_in_mix": 16},
        "predict": {"batch_size": 32},
    }


def _write(path: Path, cfg: dict) -> Path:
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("downloads")
    build_downloads(root)
    server = Server(root)
    yield root, server
    server.close()


@pytest.fixture(scope="module")
def fetched_run(served, tmp_path_factory):
    """The fetch, a second fetch, and the tiny paper-shaped run from the fetched folder."""
    root, server = served
    base = tmp_path_factory.mktemp("paper")
    cache = build_hub_cache(base / "hub")
    work = base / "work"
    work.mkdir()
    cfg = _write(base / "paper.yaml", paper_shaped_config(server.url))
    env = hub_env(cache)
    first = run_smk(work, cfg, "--cores", "2", "fetch", env=env)
    n_get = sum(1 for m, _ in server.requests if m == "GET")
    second = run_smk(work, cfg, "--cores", "2", "fetch", env=env)
    gets_after = sum(1 for m, _ in server.requests if m == "GET")
    run = run_smk(work, cfg, "--cores", "2", "--retries", "0", env=env)
    return {"work": work, "cfg": cfg, "env": env, "cache": cache, "first": first, "second": second,
            "n_get": n_get, "gets_after": gets_after, "run": run, "root": root}


def test_fetch_downloads_and_verifies_every_input(fetched_run):
    from beluga.data.fetch import REMOTES, sha256_of

    data = fetched_run["work"] / "data"
    lock = json.loads((data / "fetch.lock.json").read_text())
    expected = {"checklist/release/sentiment_suite.tar.gz", "checklist/release/qqp_suite.tar.gz",
                "checklist/release/squad_suite.tar.gz", "iid/sst2/SST-2.zip", "iid/qqp/QQP-clean.zip",
                "iid/squad/train-v1.1.json", "iid/squad/dev-v1.1.json", QUORA_REL}
    assert set(lock["files"]) == expected
    for rel in expected:
        got = sha256_of(data / rel)
        assert lock["files"][rel]["sha256"] == got == sha256_of(fetched_run["root"] / rel)
        if REMOTES.get(rel) and REMOTES[rel].sha256:   # CheckList's published checksums
            assert got == REMOTES[rel].sha256
    assert fetched_run["n_get"] == len(expected)   # one download each, through the HTTP storage plugin
    marker = data / "models" / f"{HUB_NAME.replace('/', '--')}@main.json"
    assert json.loads(marker.read_text())["commit"] == COMMIT_A
    assert lock["models"][f"{HUB_NAME}@main"]["commit"] == COMMIT_A


def test_second_fetch_does_nothing(fetched_run):
    out = fetched_run["second"].stdout + fetched_run["second"].stderr
    assert "Nothing to be done" in out
    assert fetched_run["gets_after"] == fetched_run["n_get"]


def test_paper_shaped_run_from_the_fetched_folder(fetched_run):
    work = fetched_run["work"]
    assert (work / "results" / "table3" / "table3.md").exists()
    source = json.loads((work / "results" / "sent" / "iid" / "source.json").read_text())
    assert "SST-2.zip" in json.dumps(source)
    record = json.loads((work / "results" / "sent" / "predictions" / "iid_to_iid_plus_t" / "vanilla" / "seen"
                         / "all.json").read_text())
    iid_record = json.loads((work / "results" / "sent" / "models" / "iid" / "vanilla" / "standard" / "all"
                             / "beluga_run.json").read_text())
    assert iid_record["model_commit"] == COMMIT_A and iid_record["model"] == HUB_NAME
    assert record["start_model"] == "iid" and record["pretrained"]["model_commit"] == COMMIT_A
    # the Quora release fetched beside (fetch.files) reads with its CSV quoting undone
    from beluga.data.iid import load_splits

    parts = load_splits({"source": "qqp", "path": str(work / "data" / "iid" / "quora"), "seed": 42},
                        "classification", {0, 1})
    allq = pd.concat([parts[s] for s in ("train", "val", "test")])
    assert 'When do you use "&" instead of "and"?' in set(allq["text_b"])


def test_changed_revision_reruns_what_depends_on_it(fetched_run, tmp_path):
    build_hub_cache(fetched_run["cache"], commits=(COMMIT_A, COMMIT_B))
    cfg = _write(tmp_path / "paper_b.yaml", paper_shaped_config("http://127.0.0.1:9", sent_revision=COMMIT_B))
    out = run_smk(fetched_run["work"], cfg, "-n", "--quiet", "rules", env=fetched_run["env"])
    counts = job_counts(out.stdout + out.stderr)
    assert counts.get("fetch_model") == 1 and counts.get("train_iid") == 1, counts
    assert counts.get("finetune") == 1, counts   # sent's fold only: para / read are up to date
    same = run_smk(fetched_run["work"], fetched_run["cfg"], "-n", env=fetched_run["env"])
    assert "Nothing to be done" in same.stdout + same.stderr
    # the same data folder spelled otherwise retrains nothing (run_config records the spelling)
    for spelling in ("./data/", str(fetched_run["work"] / "data")):
        same = run_smk(fetched_run["work"], fetched_run["cfg"], "-n", "--quiet", "rules", "--config",
                       f"data_dir={spelling}", env=fetched_run["env"])
        assert set(job_counts(same.stdout + same.stderr)) <= {"run_config", "all"}, (spelling, same.stdout[-2000:])


def test_a_missing_marker_is_fetched_again(fetched_run):
    """Deleting a model marker (or staging a folder that has a lock but no marker): the fetch fetches it."""
    marker = fetched_run["work"] / "data" / "models" / f"{HUB_NAME.replace('/', '--')}@main.json"
    saved = marker.read_bytes()
    marker.unlink()
    try:
        out = run_smk(fetched_run["work"], fetched_run["cfg"], "fetch", "-n", "--quiet", "rules",
                      env=fetched_run["env"])
        counts = job_counts(out.stdout + out.stderr)
        assert counts.get("fetch_model") == 1 and counts.get("fetch_lock") == 1, counts
    finally:
        marker.write_bytes(saved)


def test_corrupted_download_is_refused_and_not_left(served, tmp_path):
    root, server = served
    bad_root = tmp_path / "bad"
    shutil.copytree(root, bad_root)
    tar = bad_root / "checklist" / "release" / "qqp_suite.tar.gz"
    tar.write_bytes(tar.read_bytes()[:-100])   # truncated
    bad = Server(bad_root)
    try:
        work = tmp_path / "work"
        work.mkdir()
        cfg = paper_shaped_config(bad.url)
        cfg["tasks"] = {"para": cfg["tasks"]["para"]}
        cfgf = _write(tmp_path / "bad.yaml", cfg)
        out = run_smk(work, cfgf, "--cores", "1", "--retries", "0", "fetch", check=False)
        text = out.stdout + out.stderr
        assert out.returncode != 0
        from beluga.data.fetch import REMOTES, sha256_of

        lines = [ln for ln in text.splitlines() if ln.startswith("error: ")]
        assert len(lines) == 1 and "checklist/release/qqp_suite.tar.gz" in lines[0], text[-3000:]
        assert sha256_of(tar) in lines[0] and REMOTES["checklist/release/qqp_suite.tar.gz"].sha256 in lines[0]
        assert not (work / "data" / "checklist" / "release" / "qqp_suite.tar.gz").exists()
        # a file without a published checksum: recorded at the first fetch, a changed download refused later
        good = run_smk(work, _write(tmp_path / "good.yaml", dict(cfg, fetch={"mirror": server.url})),
                       "--cores", "1", "fetch")
        assert good.returncode == 0
        zip_rel = "iid/qqp/QQP-clean.zip"
        (work / "data" / zip_rel).unlink()
        z = bad_root / zip_rel
        with zipfile.ZipFile(z, "a") as f:
            f.writestr("QQP/extra.txt", "changed at the source")
        out = run_smk(work, cfgf, "--cores", "1", "--retries", "0", "fetch", check=False)
        text = out.stdout + out.stderr
        lines = [ln for ln in text.splitlines() if ln.startswith("error: ")]
        assert out.returncode != 0 and len(lines) == 1 and zip_rel in lines[0] and sha256_of(z) in lines[0], text
        assert not (work / "data" / zip_rel).exists()
        # a fetched file changed in place afterwards: the next fetch stops, the lock keeps the first checksum
        lock_before = json.loads((work / "data" / "fetch.lock.json").read_text())
        tar_rel = "checklist/release/qqp_suite.tar.gz"
        with open(work / "data" / tar_rel, "ab") as f:
            f.write(b" ")
        out = run_smk(work, _write(tmp_path / "good2.yaml", dict(cfg, fetch={"mirror": server.url})),
                      "fetch", "--cores", "1", "--retries", "0", check=False)
        text = out.stdout + out.stderr
        lines = [ln for ln in text.splitlines() if ln.startswith("error: ")]
        assert out.returncode != 0 and len(lines) == 1 and tar_rel in lines[0] and "changed since" in lines[0], text
        lock_after = json.loads((work / "data" / "fetch.lock.json").read_text())
        assert lock_after["files"][tar_rel] == lock_before["files"][tar_rel]
    finally:
        bad.close()


def test_hub_name_loads_from_a_hub_layout_cache_offline(tmp_path):
    """A hub-style name resolves from the local cache with HF_HUB_OFFLINE=1,
    without any socket to the hub (the process has no network here anyway)."""
    cache = build_hub_cache(tmp_path / "hub")
    code = ("from beluga.model.modeling import load_model, resolve_model; "
            f"p = resolve_model({HUB_NAME!r}); m, t = load_model({HUB_NAME!r}, 2); "
            "print(p); print(type(m).__name__, t('a test')['input_ids'][:3])")
    out = subprocess.run([str(Path(SNAKEMAKE).with_name("python")), "-c", code], capture_output=True, text=True,
                         env=hub_env(cache), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"snapshots/{COMMIT_A}" in out.stdout and "BertForSequenceClassification" in out.stdout
    out = subprocess.run([str(Path(SNAKEMAKE).with_name("python")), "-c",
                          "from beluga.model.modeling import resolve_model; resolve_model('org/not-cached')"],
                         capture_output=True, text=True, env=hub_env(cache), timeout=300)
    assert out.returncode != 0 and "not in the Hugging Face cache" in out.stderr


def test_staged_reference_copy_builds_the_paper_dag(tmp_path):
    """`python -m beluga data stage` lays out ../shared/data as the fetched
    folder (no network); the paper configuration's dry run builds its full DAG."""
    work = tmp_path / "clone"
    work.mkdir()
    py = str(Path(SNAKEMAKE).with_name("python"))
    out = subprocess.run([py, "-m", "beluga", "data", "stage", "--from", str(SHARED), "--data-dir",
                          str(work / "data")], capture_output=True, text=True, env=ENV, timeout=300)
    assert out.returncode == 0, out.stderr
    dry = run_smk(work, REPO / "configs" / "paper.yaml", "-n", "--quiet", "rules", env=ONLINE, timeout=1200)
    counts = job_counts(dry.stdout + dry.stderr)
    assert counts["finetune"] > 3000 and counts["train_iid"] == 3 and counts.get("fetch_model") == 2, counts


def test_unfetched_inputs_stop_the_run_but_not_the_fetch(served, tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    cfg = _write(tmp_path / "c.yaml", paper_shaped_config(served[1].url))
    out = run_smk(work, cfg, "-n", env=ONLINE, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "fetch them first" in text and "data/checklist/release" in text
    out = run_smk(work, cfg, "fetch", "-n", "--quiet", "rules", env=ONLINE, check=False)
    counts = job_counts(out.stdout + out.stderr)
    assert out.returncode == 0 and counts.get("fetch_file") == 3 and counts.get("fetch_file_new") == 5, counts
    assert counts.get("fetch_model") == 1 and counts.get("fetch") == 1, counts


def test_gpu_job_without_a_gpu_stops_in_one_line():
    from beluga.core.errors import ModelError
    from beluga.model.job import start_job

    with pytest.raises(ModelError, match="configured for 1 GPU"):
        start_job(1, "fp32", gpus=1)


def test_plan_prints_peak_scratch_disk():
    from beluga.workflow.plan import disk_plan, load_config, n_parameters, plan

    assert abs(n_parameters("bert-base-uncased") - 110e6) < 3e6
    assert abs(n_parameters("bert-large-uncased-whole-word-masking") - 335e6) < 5e6
    cfg = load_config(str(REPO / "config.yaml"))
    rates = {"train_seq_per_s": 100.0, "predict_seq_per_s": 300.0, "fixed_s_per_job": 3.0}
    lines = plan(cfg, rates)
    d = disk_plan(cfg, lines, concurrent=2)
    assert d["checkpoints"] == 2 * 12 * n_parameters("default")
    assert d["peak"] >= d["checkpoints"] + d["kept_models"]


def test_zip_layout_reader_sanity(served):
    """The served GLUE zip really has GLUE's member names (the fixture is what the loaders meet)."""
    root, _ = served
    with zipfile.ZipFile(root / "iid" / "sst2" / "SST-2.zip") as z:
        assert {"SST-2/train.tsv", "SST-2/dev.tsv"} <= set(z.namelist())
        head = io.TextIOWrapper(z.open("SST-2/train.tsv")).readline()
    assert head.split("\t")[0] == "sentence"


def test_gpu_partition_reaches_every_gpu_rule_and_only_them(tmp_path):
    """One setting (gpu_partition) sends every job that trains or predicts to the GPU partition."""
    from conftest import config_with, output, smk_config

    cfg = config_with(gpus=1, gpu_partition="gpu-a100", inoculation__enabled=True,
                      inoculation__doses=[2], inoculation__lrs=[1.0e-3])
    out, _ = smk_config(tmp_path / "w", cfg, "-n", "-p")
    text = output(out)
    assert out.returncode == 0, text[-3000:]
    blocks = [b for b in text.split("\n\n") if b.strip().startswith(("rule ", "localrule ", "[")) or "rule " in b]
    gpu_rules, cpu_rules = set(), set()
    for b in blocks:
        lines = b.strip().splitlines()
        head = next((ln for ln in lines if ln.startswith(("rule ", "localrule "))), None)
        if head is None:
            continue
        rule = head.split()[1].rstrip(":")
        res = next((ln for ln in lines if ln.strip().startswith("resources:")), "")
        (gpu_rules if "slurm_partition=gpu-a100" in res and "gpu=1" in res else cpu_rules).add(rule)
    # rules with a message print it instead of their block (finetune, trial, inoculate): checked below
    assert {"train_iid", "predict"} <= gpu_rules, (gpu_rules, cpu_rules)
    assert not ({"aggregate", "prepare_iid", "build_suite", "table3", "outcomes"} & gpu_rules), gpu_rules
    # every rule that trains or predicts takes its resources from job_resources (gpu, slurm_partition)
    import re

    with_resources = set()
    for smk_file in (REPO / "rules").glob("*.smk"):
        for name, body in re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", smk_file.read_text(), re.M):
            if "**job_resources(" in body:
                with_resources.add(name)
    assert with_resources == {"train_iid", "finetune", "finetune_model", "trial", "predict", "inoculate",
                              "combinational_train"}, with_resources


def test_gpu_job_on_a_machine_without_one_stops_the_run_in_one_line(tmp_path):
    from conftest import RUN, config_with, output, smk_config

    out, _ = smk_config(tmp_path / "w", config_with(gpus=1), *RUN)
    text = output(out)
    lines = [ln for ln in text.splitlines() if ln.startswith("error: ")]
    assert out.returncode != 0 and lines and all("configured for 1 GPU" in ln for ln in lines), text[-3000:]
    assert not (tmp_path / "w" / "results" / "sent" / "models" / "iid" / "vanilla" / "standard" / "all").exists()
