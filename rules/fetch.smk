# Every input of the configuration, fetched on a machine with a network (a
# cluster's login node) before the run: `snakemake --cores 4 --configfile F fetch`
# (README, "The paper's run on a cluster"; beluga/fetch.py, beluga/steps/fetch.py).
# A rule that downloads a file is defined only for the files of the data folder
# that are missing, so a run over fetched data never consults the network; a
# second fetch does nothing.

FETCH_FILES = {r.path: r for r in beluga_fetch.config_files(config)}
FETCH_MODELS = beluga_fetch.config_models(config)
FETCH_MIRROR = config["fetch"]["mirror"]
try:
    FETCH_LOCK = beluga_fetch.read_lock(DATA_DIR)
except BelugaError as e:
    raise WorkflowError(str(e)) from None
# missing files with a known checksum (published, or recorded at the first fetch) / without one
_MISSING = [rel for rel in FETCH_FILES if not os.path.lexists(os.path.join(DATA_DIR, rel))]
_CHECKED = [rel for rel in _MISSING if beluga_fetch.expected_sha256(rel, FETCH_LOCK, FETCH_FILES[rel])]
_UNCHECKED = [rel for rel in _MISSING if rel not in _CHECKED]
_MISSING_MODELS = [m for m in FETCH_MODELS if not os.path.exists(m)]


def fetch_regex(paths):
    return "|".join(re.escape(p) for p in paths) or NEVER


def fetch_url(w):
    return storage.http(beluga_fetch.remote_url(FETCH_FILES[w.path], FETCH_MIRROR))


rule fetch:
    input:
        files=[os.path.join(DATA_DIR, rel) for rel in FETCH_FILES],
        models=list(FETCH_MODELS),
    output:
        lock=os.path.join(DATA_DIR, beluga_fetch.LOCK_NAME),
    log:
        "logs/fetch/fetch.log",
    params:
        data_dir=DATA_DIR,
        files={
            rel: {"url": beluga_fetch.remote_url(r, FETCH_MIRROR), "what": r.what, "published": r.sha256}
            for rel, r in FETCH_FILES.items()
        },
        models=FETCH_MODELS,
    script:
        "../workflow_scripts/fetch.py"


# a file with a checksum (CheckList's published one, or the lock's): Snakemake checks it too (ensure)
rule fetch_file:
    input:
        download=fetch_url,
    output:
        file=ensure(
            os.path.join(DATA_DIR, "{path}"),
            non_empty=True,
            sha256=lambda w: beluga_fetch.expected_sha256(w.path, FETCH_LOCK, FETCH_FILES[w.path]),
        ),
    log:
        "logs/fetch/{path}.log",
    wildcard_constraints:
        path=fetch_regex(_CHECKED),
    params:
        rel=lambda w: w.path,
        expected=lambda w: beluga_fetch.expected_sha256(w.path, FETCH_LOCK, FETCH_FILES.get(w.path)),
    script:
        "../workflow_scripts/fetch_file.py"


# a file without a published checksum, fetched for the first time: its checksum goes into the lock
use rule fetch_file as fetch_file_new with:
    output:
        file=ensure(os.path.join(DATA_DIR, "{path}"), non_empty=True),
    log:
        "logs/fetch/{path}.log",
    wildcard_constraints:
        path=fetch_regex(_UNCHECKED),


rule fetch_model:
    output:
        marker=os.path.join(DATA_DIR, "models", "{key}.json"),
    log:
        "logs/fetch/models/{key}.log",
    wildcard_constraints:
        key=fetch_regex([os.path.basename(m)[: -len(".json")] for m in _MISSING_MODELS]),
    params:
        model=lambda w: FETCH_MODELS[os.path.join(DATA_DIR, "models", f"{w.key}.json")],
    script:
        "../workflow_scripts/fetch_model.py"
