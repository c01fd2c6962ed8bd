"""Every input of a configuration, fetched and verified before a run
(docs/PAPER_RUN.md, "The paper's run on a cluster"; rules/fetch.smk).

The data folder (``data_dir``, default ``data/``) holds the official
downloads under fixed relative paths (:data:`REMOTES`): CheckList's release
tarballs pinned to one commit with their published SHA-256 sums, GLUE's SST-2
and QQP archives, SQuAD v1.1 train and dev. Hub models go into the Hugging
Face cache (``HF_HOME`` / ``HF_HUB_CACHE``) at the revision the configuration
names (``tasks.<id>.model_revision``, default ``main``); the commit that
revision resolved to at the first fetch is recorded in a small marker file per
(model, revision), ``<data_dir>/models/<org>--<name>@<revision>.json``, which
the training jobs read (a declared input: another revision is another file,
and reruns what was trained from it).

``<data_dir>/fetch.lock.json`` records, for every fetched file, its URL, size
and SHA-256 (a file without a published checksum gets its own at the first
download; later downloads of it must match), and every model's commit.

Whether a hub model or dataset is cached, and whether the hub is offline, is
asked of huggingface_hub and datasets themselves (their constants and cache
API: :func:`hub_model_cached`, :func:`hub_dataset_cached`), never of a copy of
their cache layouts. Light: no torch; huggingface_hub and datasets only inside
the functions that need them.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from beluga.core.bounds import json_loads
from beluga.core.errors import ConfigError, DataError, ModelError
from beluga.data import remotes
from beluga.data.glue import GLUE_SPECS

#: CheckList's repository commit the release suites are pinned to
CHECKLIST_COMMIT = "4e6e5e33a26f30c20ed602b2050f6c73e123cc23"
CHECKLIST_URL = "https://raw.githubusercontent.com/marcotcr/checklist/{commit}/release_suites/{name}"
SQUAD_URL = "https://rajpurkar.github.io/SQuAD-explorer/dataset/{name}"

FETCH_LOCK_NAME = "fetch.lock.json"
LOCK_STAMP = ".fetch.done"   # the fetch_lock rule's output (the lock is updated in place, never re-created)
DEFAULT_REVISION = "main"
#: what a model fetch downloads: configs, tokenizer files and safetensors weights (no pickled or TF / Flax weights)
MODEL_PATTERNS = ("*.json", "*.safetensors", "*.txt", "*.model", "tokenizer*", "vocab*", "merges*")


@dataclass(frozen=True)
class Remote:
    """A file of the data folder and where it comes from."""

    path: str            # relative to the data folder
    url: str
    sha256: str | None   # the published checksum (None: recorded at the first download)
    what: str


def _checklist(name: str, sha256: str) -> Remote:
    return Remote(f"checklist/release/{name}", CHECKLIST_URL.format(commit=CHECKLIST_COMMIT, name=name), sha256,
                  f"CheckList release suite {name} (commit {CHECKLIST_COMMIT[:12]})")


REMOTES: dict[str, Remote] = {r.path: r for r in (
    _checklist("sentiment_suite.tar.gz", "d546320bd859e04fc3eb5f11b62ca96d7b19b29010b8925843cbfb8722091111"),
    _checklist("qqp_suite.tar.gz", "60836d96a7f64b8006b78134a75f6664677a90318b0830768d971dbde35e64c4"),
    _checklist("squad_suite.tar.gz", "2942d48eaa71cdd525416db253571207a6f64c1ec79ad3b2aa2dbda98d05253e"),
    Remote("iid/sst2/SST-2.zip", remotes.GLUE_URL.format(name="SST-2.zip"), None, "GLUE SST-2"),
    Remote("iid/qqp/QQP-clean.zip", remotes.GLUE_URL.format(name="QQP-clean.zip"), None, "GLUE QQP"),
    Remote("iid/squad/train-v1.1.json", SQUAD_URL.format(name="train-v1.1.json"), None, "SQuAD v1.1 train"),
    Remote("iid/squad/dev-v1.1.json", SQUAD_URL.format(name="dev-v1.1.json"), None, "SQuAD v1.1 dev"),
    # issue 40: GLUE's MNLI / QNLI / RTE / CoLA / STS-B and the challenge / OOD sets (beluga.data.remotes)
    *(Remote(*row) for row in remotes.remote_rows()),
)}

#: the files of an i.i.d. source the fetch provides, in its folder ``<data_dir>/iid/<source>``
DATASET_FILES = {"sst2": ("iid/sst2/SST-2.zip",), "qqp": ("iid/qqp/QQP-clean.zip",),
                 "squad": ("iid/squad/train-v1.1.json", "iid/squad/dev-v1.1.json"),
                 **{src: (rel,) for src, rel in remotes.IID_FILES.items()}}

#: files of a source's folder the i.i.d. loaders fall back to when the official downloads are absent
FALLBACKS = {"sst2": ("train.tsv", "train.tsv.gz", "SST-2"),
             "qqp": ("QQP.zip", "QQP", "train.tsv", "train.tsv.gz", "quora_duplicate_questions.tsv",
                     "quora_duplicate_questions.tsv.gz"),
             "squad": ("dev-v1.1.reconstructed.json.gz", "dev-v1.1.reconstructed.json", "train-v1.1.json.gz"),
             # GLUE's unpacked folder or TSVs (beluga.data.glue): a copy laid out by hand
             **{src: (*spec.archives[1:], spec.folder, "train.tsv", "train.tsv.gz")
                for src, spec in GLUE_SPECS.items()}}

#: what ``python -m beluga data stage`` links from a local copy of the reference data (no network): each
#: path under ``--from`` to the same path under the data folder (docs/RUNNING.md, "A local copy of the data")
STAGED = ("checklist/release/sentiment_suite.tar.gz", "checklist/release/qqp_suite.tar.gz",
          "checklist/release/squad_suite.tar.gz", "iid/sst2/train.tsv", "iid/sst2/dev.tsv",
          "iid/qqp/quora_duplicate_questions.tsv.gz", "iid/squad/dev-v1.1.reconstructed.json.gz")


class FetchError(DataError):
    """A download that is not what it should be."""


# --- paths -----------------------------------------------------------------

def _is_relative_path(value) -> bool:
    return isinstance(value, str) and bool(value) and not os.path.isabs(os.path.expanduser(value))


def _under(data_dir: str, value: str) -> str:
    """``value`` inside the data folder, spelled one way (normalised; relative to the working directory
    when inside it), so that ``data``, ``./data/`` and the absolute path of the same folder plan the same
    jobs (a data path is part of what a job's parameters record)."""
    if data_dir in (".", "") and value != ".":
        return value
    path = os.path.normpath(os.path.join(os.path.expanduser(data_dir or "."), value))
    if os.path.isabs(path):
        rel = os.path.relpath(path)
        if not rel.startswith(".."):
            return rel
    return path


def resolve_data_paths(config: dict) -> None:
    """Relative data paths of the config (a suite file, an i.i.d. folder or
    table, a local OOD set, the combinational analysis' local data) are
    relative to ``data_dir`` (default ``.``: the directory snakemake runs in).
    Rewrites them in place, once, right after validation. A challenge OOD set's folder defaults
    to the one the fetch writes its files to (:data:`beluga.data.remotes.OOD_DIRS`), as the
    combinational Yelp / MNLI data's path (:data:`remotes.COMB_DATA_PATHS`)."""
    for task in config.get("tasks", {}).values():
        for entry in task.get("ood") or []:
            if entry.get("source") in remotes.OOD_DIRS and not entry.get("path"):
                entry["path"] = remotes.OOD_DIRS[entry["source"]]   # made relative to data_dir below
    for comb in remotes.comb_data_blocks(config):
        if comb.get("source") in remotes.COMB_DATA_PATHS and not comb.get("path"):
            comb["path"] = remotes.COMB_DATA_PATHS[comb["source"]]
    data_dir = str(config.get("data_dir") or ".")
    if data_dir in (".", ""):
        return
    config["data_dir"] = data_dir = _under(data_dir, ".")
    for task in config.get("tasks", {}).values():
        suite = task.get("suite") or {}
        if _is_relative_path(suite.get("path")):
            suite["path"] = _under(data_dir, suite["path"])
        if _is_relative_path(suite.get("spec")):
            suite["spec"] = _under(data_dir, suite["spec"])
        iid = task.get("iid") or {}
        if _is_relative_path(iid.get("path")):
            iid["path"] = _under(data_dir, iid["path"])
        src = iid.get("source")
        if isinstance(src, str) and ("/" in src or "." in src) and not src.startswith("hf:") \
                and _is_relative_path(src):
            iid["source"] = _under(data_dir, src)
        for entry in task.get("ood") or []:
            if entry.get("source") in ("local", *remotes.OOD_DIRS) and _is_relative_path(entry.get("path")):
                entry["path"] = _under(data_dir, entry["path"])
    for comb in remotes.comb_data_blocks(config):
        if comb.get("source") in ("local", *remotes.COMB_DATA_PATHS) and _is_relative_path(comb.get("path")):
            comb["path"] = _under(data_dir, comb["path"])


def _same(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


# --- what a configuration needs --------------------------------------------

def is_hub_name(spec: str) -> bool:
    """A Hugging Face hub model id (``name`` or ``org/name``), not a local path or a built-in model."""
    if spec in ("default", "tiny-random") or spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        return False
    return not Path(spec).expanduser().exists()


def model_key(name: str, revision: str | None) -> str:
    return f"{name.replace('/', '--')}@{(revision or DEFAULT_REVISION).replace('/', '--')}"


def model_marker(data_dir: str, name: str, revision: str | None) -> str:
    """The marker file of a hub model at a revision (a training job's declared input)."""
    return os.path.normpath(os.path.join(data_dir or ".", "models", f"{model_key(name, revision)}.json"))


def config_models(config: dict) -> dict[str, tuple[str, str]]:
    """Every hub model the configuration trains or tests: marker path -> (name, revision)."""
    out: dict[str, tuple[str, str]] = {}
    data_dir = str(config.get("data_dir") or ".")
    specs = [(t["model"], t.get("model_revision")) for t in config.get("tasks", {}).values()]
    comb = config.get("combinational") or {}
    if comb.get("enabled") or comb.get("model") not in (None, "default") or comb.get("variants"):
        # every variant's model (unset keys come from the block, as beluga.analyses.combinational.variants)
        for v in comb.get("variants") or [{}]:
            specs.append((v.get("model", comb.get("model", "default")),
                          v.get("model_revision", comb.get("model_revision"))))
    for spec, rev in specs:
        if is_hub_name(str(spec)):
            out[model_marker(data_dir, spec, rev)] = (str(spec), rev or DEFAULT_REVISION)
    return out


def config_files(config: dict) -> list[Remote]:
    """The remote files a configuration reads from its data folder (after
    :func:`resolve_data_paths`): a release suite named by its path in the
    folder, the official files of an ``sst2`` / ``qqp`` / ``squad`` source
    whose folder is the data folder's ``iid/<source>`` (unless the folder
    holds only files the loaders fall back to: a staged reference copy,
    :func:`stage`; likewise a GLUE source's archive), a challenge OOD set's
    files (:func:`beluga.data.remotes.ood_paths`) when its folder is the data
    folder's (with ``inoculation.samples: released``, also Liu et al.'s released per-dose samples of a
    training split it reads: :func:`beluga.data.remotes.released_doses`), the combinational data named by its
    path, and ``fetch.files``."""
    data_dir = str(config.get("data_dir") or ".")
    released = (config.get("inoculation") or {}).get("samples") == "released"
    want: dict[str, Remote] = {}
    for task in config.get("tasks", {}).values():
        path = (task.get("suite") or {}).get("path")
        for rel, remote in REMOTES.items():
            if path and _same(path, _under(data_dir, rel)):
                want[rel] = remote
        iid = task.get("iid") or {}
        want.update(_dataset_remotes(data_dir, iid.get("source"), iid.get("path")))
        for entry in task.get("ood") or []:     # a challenge set read from the data folder's own folder
            src = entry.get("source")
            if src in remotes.OOD_DIRS and _same(entry.get("path") or "", _under(data_dir, remotes.OOD_DIRS[src])):
                doses = list(remotes.released_doses(entry).values()) if released else []
                for name in remotes.ood_paths(entry) + doses:
                    rel = os.path.normpath(f"{remotes.OOD_DIRS[src]}/{name}")
                    if rel in REMOTES:
                        want[rel] = REMOTES[rel]
    for comb in remotes.comb_data_blocks(config):   # an official archive (Yelp) or GLUE MNLI's folder
        path = comb.get("path")
        want.update({rel: r for rel, r in REMOTES.items() if path and _same(path, _under(data_dir, rel))})
        if comb.get("source") == "mnli":
            want.update(_dataset_remotes(data_dir, "mnli", path))
    for k, entry in enumerate((config.get("fetch") or {}).get("files") or []):
        rel = os.path.normpath(entry["path"])
        if os.path.isabs(rel) or rel.startswith(".."):
            raise ConfigError(f"config: field 'fetch.files[{k}].path': {entry['path']} must be a path inside the "
                              "data folder")
        want[rel] = Remote(rel, entry["url"], entry.get("sha256"), f"fetch.files[{k}]")
    return [want[k] for k in sorted(want)]


def _dataset_remotes(data_dir: str, src, path) -> dict[str, Remote]:
    """The official files of an i.i.d. source whose folder ``path`` is the data folder's
    ``iid/<source>``, unless that folder holds only files the loaders fall back to."""
    if src not in DATASET_FILES or not path or not _same(path, _under(data_dir, f"iid/{src}")):
        return {}
    official = [rel for rel in DATASET_FILES[src] if os.path.lexists(_under(data_dir, rel))]
    fallback = [n for n in FALLBACKS[src] if os.path.lexists(Path(path) / n)]
    return {rel: REMOTES[rel] for rel in DATASET_FILES[src]} if official or not fallback else {}


def remote_url(remote: Remote, mirror: str | None = None) -> str:
    """Where a file is downloaded from: its origin, or ``<mirror>/<path in the data folder>``."""
    return f"{mirror.rstrip('/')}/{remote.path}" if mirror else remote.url


# --- the lock file -----------------------------------------------------------

def lock_path(data_dir: str) -> Path:
    return Path(data_dir or ".") / FETCH_LOCK_NAME


def read_lock(data_dir: str) -> dict:
    path = lock_path(data_dir)
    if not path.exists():
        return {"files": {}, "models": {}}
    try:
        lock = json_loads(path.read_text())
        if not isinstance(lock, dict) or not isinstance(lock.get("files", {}), dict):
            raise ValueError("not an object with 'files'")
    except (OSError, ValueError) as e:
        raise FetchError(f"lock file {path}: field 'files': not a readable lock file ({e}); delete it and fetch "
                         "again") from None
    lock.setdefault("files", {})
    lock.setdefault("models", {})
    if not isinstance(lock["models"], dict):
        raise FetchError(f"lock file {path}: field 'models': {type(lock['models']).__name__} where an object of "
                         "models is needed; delete it and fetch again")
    for key in ("files", "models"):
        for name, entry in lock[key].items():
            bad = _bad_lock_entry(entry)
            if bad:
                raise FetchError(f"lock file {path}: field '{key}.{name}': {bad}; delete the entry (or the lock) "
                                 "and fetch again")
    return lock


def _bad_lock_entry(entry) -> str | None:
    """Why a lock entry is not one (None when it is): an object whose ``sha256``, when set, is 64
    hexadecimal digits."""
    if not isinstance(entry, dict):
        return f"{entry!r:.80} is not an object (an entry is {{sha256: ..., size: ...}})"
    digest = entry.get("sha256")
    if digest is not None and not _is_sha256(digest):
        return f"sha256 {digest!r:.80} is not 64 hexadecimal digits"
    return None


def _is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value)


def expected_sha256(rel: str, lock: dict, remote: Remote | None = None) -> str | None:
    """The checksum a download of ``rel`` must have: the published one, else
    the one recorded at the first fetch."""
    remote = remote or REMOTES.get(rel)
    if remote is not None and remote.sha256:
        return remote.sha256
    return (lock.get("files", {}).get(rel) or {}).get("sha256")


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def install(downloaded: str, out: str, rel: str, expected: str | None) -> str:
    """Verify a download and move it into the data folder atomically; a file
    whose checksum differs is deleted (the download too) and stops the fetch
    with one line naming it and both checksums. Returns the checksum."""
    got = sha256_of(downloaded)
    if expected and got != expected:
        Path(downloaded).unlink(missing_ok=True)
        raise FetchError(f"fetched file {rel}: field 'sha256': the download has SHA-256 {got}, expected {expected} "
                         "(corrupted or truncated download, or the file changed at its source); removed, nothing "
                         "installed")
    from beluga.core.io import atomic_path

    with atomic_path(out) as tmp:
        shutil.copyfile(downloaded, tmp)
    return got


def write_lock(data_dir: str, files: dict[str, dict], models: dict[str, dict]) -> dict:
    """Check every file of the data folder the configuration uses against the
    lock (and the published checksums: ``files[rel]['published']``) and write
    the lock: entries of other configurations are kept."""
    from beluga.core.io import write_json

    lock = read_lock(data_dir)
    for rel, entry in sorted(files.items()):
        path = Path(data_dir or ".") / rel
        got = sha256_of(path)
        want = entry.get("published") or expected_sha256(rel, lock)
        if want and got != want:
            raise FetchError(f"data file {path}: field 'sha256': SHA-256 {got}, expected {want} (changed since it "
                             "was fetched); delete it and fetch again")
        kept = {k: v for k, v in entry.items() if k != "published"}
        before = lock["files"].get(rel) or {}
        if before.get("sha256") == got:   # the same file: keep where it came from (a mirror, a staged copy)
            kept = {**kept, **{k: v for k, v in before.items() if k in ("url", "origin")}}
        lock["files"][rel] = {**kept, "sha256": got, "size": path.stat().st_size}
    lock["models"].update(models)
    lock["checklist_commit"] = CHECKLIST_COMMIT
    write_json(lock, lock_path(data_dir))
    return lock


# --- offline mode and the local Hugging Face caches ---------------------------
# Asked of huggingface_hub and datasets themselves (their constants, read once when they are imported, and
# their cache API), never of a copy of their cache layouts or environment-variable precedence: those change
# across major versions. Imported only inside these functions; nothing here opens a socket.

def hub_offline() -> bool:
    """Whether huggingface_hub is offline (``huggingface_hub.constants.HF_HUB_OFFLINE``: ``HF_HUB_OFFLINE`` or
    ``TRANSFORMERS_OFFLINE`` set to a true value when it was imported)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def datasets_offline() -> bool:
    """Whether ``datasets`` is offline (``datasets.config.HF_HUB_OFFLINE``: ``HF_DATASETS_OFFLINE`` when set,
    else huggingface_hub's flag)."""
    from datasets import config

    return bool(config.HF_HUB_OFFLINE)


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache (models): ``huggingface_hub.constants.HF_HUB_CACHE``."""
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def dataset_cache_folder() -> Path:
    """The ``datasets`` cache (prepared Arrow tables): ``datasets.config.HF_DATASETS_CACHE``."""
    from datasets import config

    return Path(config.HF_DATASETS_CACHE)


#: the file every transformers model has: a snapshot that holds it is one ``from_pretrained`` can start from
MODEL_CONFIG_FILE = "config.json"


def hub_model_cached(name: str, revision: str | None, commit: str | None = None, any_snapshot: bool = False
                     ) -> bool:
    """Whether huggingface_hub can load the model offline from the local cache
    (``huggingface_hub.try_to_load_from_cache`` finds its ``config.json``):
    at ``commit`` (a fetched marker's) when given, else at ``revision`` (a
    branch or tag the cache resolves, or a commit); ``any_snapshot``: any
    cached revision of the model will do (``huggingface_hub.scan_cache_dir``;
    when which commit a marker holds is not known)."""
    from huggingface_hub import try_to_load_from_cache

    cache = hub_cache_dir()
    try:
        found = try_to_load_from_cache(name, MODEL_CONFIG_FILE, cache_dir=cache,
                                       revision=commit or revision or DEFAULT_REVISION)
    except ValueError:   # not a repository id huggingface_hub accepts: not in its cache either
        return False
    if isinstance(found, str):
        return True
    if commit or not any_snapshot:
        return False
    from huggingface_hub import CacheNotFound, scan_cache_dir

    try:
        repos = scan_cache_dir(cache).repos
    except CacheNotFound:
        return False
    return any(repo.repo_id == name and repo.repo_type == "model" and
               any(f.file_name == MODEL_CONFIG_FILE for rev in repo.revisions for f in rev.files)
               for repo in repos)


def hub_dataset_cached(path: str, config: str | None = None, revision: str | None = None) -> bool:
    """Whether ``datasets.load_dataset(path, config, revision=revision)`` works
    offline here, asked of ``datasets`` itself: ``datasets.load_dataset_builder``
    (the call ``load_dataset`` makes first) finds the dataset, and its builder's
    prepared folder exists (offline, ``datasets`` loads the latest prepared copy
    of the dataset and configuration, whatever the revision). Only meaningful
    while ``datasets`` is offline (:func:`datasets_offline`; online the builder
    would ask the hub): refused otherwise."""
    if not datasets_offline():
        raise ValueError("hub_dataset_cached: datasets is online (the check is datasets' offline lookup)")
    import datasets

    before = datasets.logging.get_verbosity()
    datasets.logging.set_verbosity_error()   # no "using the latest cached version" warning in the DAG's output
    try:
        builder = datasets.load_dataset_builder(path, config, revision=revision)
    except Exception:  # noqa: BLE001 - offline and not in the cache (ConnectionError, ValueError, FileNotFoundError)
        return False
    finally:
        datasets.logging.set_verbosity(before)
    return Path(builder.cache_dir).is_dir() or Path(path).is_dir()


# --- hub models --------------------------------------------------------------

def _hub_error(name: str, revision: str, e: BaseException) -> ModelError:
    reason = " ".join(ln.strip() for ln in str(e).splitlines() if ln.strip()) or type(e).__name__
    return ModelError(f"model {name!r}: field 'model': revision {revision!r} cannot be fetched from the Hugging Face "
                      f"hub ({type(e).__name__}: {reason[:300]})")


def download_model(name: str, revision: str, out_marker: str) -> dict:
    """Download a hub model at a revision into the Hugging Face cache
    (configs, tokenizer, safetensors weights; ``HF_ENDPOINT``, proxies and
    ``HF_HUB_OFFLINE`` work as in huggingface_hub: offline, a cached copy is
    used) and write its marker: the commit the revision resolved to."""
    from huggingface_hub import snapshot_download

    from beluga.core.io import write_json

    try:
        path = Path(snapshot_download(repo_id=name, revision=revision, allow_patterns=list(MODEL_PATTERNS)))
    except Exception as e:  # noqa: BLE001 - network, missing repo or revision, offline without a cached copy
        raise _hub_error(name, revision, e) from None
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
    if not any(f.endswith(".safetensors") for f in files):
        raise ModelError(f"model {name!r}: field 'model': revision {revision!r} has no safetensors weights (pickled "
                         "weights are never loaded); choose a revision with model.safetensors")
    marker = {"model": name, "revision": revision, "commit": path.name, "files": files}
    write_json(marker, out_marker)
    return marker


def read_marker(path: str | os.PathLike) -> dict:
    try:
        marker = json_loads(Path(path).read_text())
        if not isinstance(marker, dict) or not isinstance(marker.get("commit"), str):
            raise ValueError("no 'commit'")
    except (OSError, ValueError) as e:
        raise ModelError(f"model marker {path}: field 'commit': not readable ({e}); delete it and fetch "
                         "again") from None
    return marker


def hub_snapshot(name: str, commit: str) -> str:
    """The local folder of a hub model at a commit: from the cache (no
    network), else downloaded unless ``HF_HUB_OFFLINE`` is set."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(repo_id=name, revision=commit, allow_patterns=list(MODEL_PATTERNS),
                                 local_files_only=True)
    except Exception:  # noqa: BLE001 - not in this machine's cache
        pass
    if hub_offline():
        from huggingface_hub import constants

        what = f"commit {commit[:12]}" if len(commit) == 40 else f"revision {commit!r}"
        raise ModelError(f"model {name!r}: field 'model': {what} is not in the Hugging Face cache "
                         f"{constants.HF_HUB_CACHE} and the hub is offline (HF_HUB_OFFLINE is set): fetch it first "
                         "(snakemake fetch ... on a machine with a network; the same HF_HOME on every node)")
    try:
        return snapshot_download(repo_id=name, revision=commit, allow_patterns=list(MODEL_PATTERNS))
    except Exception as e:  # noqa: BLE001
        raise _hub_error(name, commit, e) from None


def snapshot_commit(name: str, folder: str | os.PathLike) -> str | None:
    """The commit of a hub model's snapshot folder (what :func:`hub_snapshot` returns), as
    ``huggingface_hub.scan_cache_dir`` reports it; None when the cache does not hold that folder."""
    from huggingface_hub import CacheNotFound, scan_cache_dir

    try:
        repos = scan_cache_dir(hub_cache_dir()).repos
    except CacheNotFound:
        return None
    want = Path(folder).resolve()
    return next((rev.commit_hash for repo in repos if repo.repo_id == name and repo.repo_type == "model"
                 for rev in repo.revisions if Path(rev.snapshot_path).resolve() == want), None)


# --- staging a local copy (no network) -----------------------------------------

def stage(source: str | os.PathLike, data_dir: str | os.PathLike, copy: bool = False) -> list[str]:
    """Lay out a local copy of the reference data (``source`` holds every path of :data:`STAGED` -- the
    release tarballs, SST-2 TSVs, the Quora release, the reconstructed SQuAD
    dev -- and a ``SHA256SUMS``) as a data folder: symbolic links (or copies) under the fetched
    layout, each checked against the copy's ``SHA256SUMS`` and the published
    CheckList checksums, recorded in the lock as staged. The i.i.d. loaders
    then fall back to these files (docs/DEVIATIONS.md)."""
    from beluga.core.io import check_not_input, write_json

    check_not_input("data stage", "--data-dir", data_dir, [("source", source)], nested=True)
    source, data_dir = Path(source).resolve(), Path(data_dir)
    sums = read_sha256sums(source / "SHA256SUMS")
    lock = read_lock(str(data_dir))
    checked = {}   # every file checked (and every destination found free) before anything is linked
    for rel in STAGED:
        src = source / rel
        if not src.exists():
            raise ConfigError(f"staging source {src}: field 'path': file does not exist")
        want = (REMOTES.get(rel).sha256 if rel in REMOTES else None) or sums.get(rel)
        if not want:
            raise FetchError(f"staging source {source / 'SHA256SUMS'}: field '{rel}': no checksum line (and no "
                             "published checksum): the file cannot be verified, so it is not staged; add its "
                             "line (sha256sum)")
        got = sha256_of(src)
        if got != want:
            raise FetchError(f"staging source {src}: field 'sha256': SHA-256 {got}, expected {want}")
        dest = data_dir / rel
        check_not_input("data stage", "--data-dir", dest, [("source file", src)], link=True)   # never unlinked
        foreign = _foreign_file(dest, lock["files"].get(rel), got)
        if foreign:
            raise FetchError(f"data folder file {dest}: field 'path': {foreign}; data stage does not replace a "
                             "file it did not create (move it away or delete it, then stage again)")
        checked[rel] = (src, dest, got)
    done = []
    for rel, (src, dest, got) in checked.items():
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_symlink() or dest.exists():
            dest.unlink()
        if copy:
            shutil.copyfile(src, dest)
        else:
            dest.symlink_to(src)
        lock["files"][rel] = {"origin": f"staged from {source}", "sha256": got, "size": src.stat().st_size}
        done.append(rel)
    lock["checklist_commit"] = CHECKLIST_COMMIT
    write_json(lock, lock_path(str(data_dir)))
    return done


def read_sha256sums(path: Path) -> dict[str, str]:
    """A ``SHA256SUMS`` file (``sha256sum``'s output: ``<64 hex digits>  [*]<path>`` a line) as path ->
    checksum; a line of another shape stops with one line naming it."""
    if not path.exists():
        raise ConfigError(f"staging source {path.parent}: field 'SHA256SUMS': missing (not a copy of the "
                          "project's reference data)")
    sums = {}
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or not _is_sha256(parts[0]) or not parts[1].strip().lstrip("*"):
            raise ConfigError(f"staging source {path}: field 'line {n}': {line.strip()!r:.100} is not "
                              "'<64 hexadecimal digits>  <path>' (sha256sum's format)")
        sums[parts[1].strip().lstrip("*")] = parts[0].lower()
    return sums


def _foreign_file(dest: Path, entry, incoming: str) -> str | None:
    """Why ``dest`` is a file ``data stage`` must not replace (None when it may): a link (what staging
    makes) or nothing may be replaced; a regular file only when the lock records it with its present
    content (fetched or staged before) or it holds the staged file's content already (nothing is lost)."""
    if dest.is_symlink() or not dest.exists():
        return None
    if not dest.is_file():
        return "not a regular file"
    got = sha256_of(dest)
    if got == incoming or (isinstance(entry, dict) and entry.get("sha256") == got):
        return None
    return "a regular file that is not in the lock with this content"
