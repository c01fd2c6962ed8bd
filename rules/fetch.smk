# Every input of the configuration, fetched on a machine with a network (a
# cluster's login node) before the run: `snakemake fetch --cores 4 --configfile F`
# (docs/PAPER_RUN.md, "The paper's run on a cluster"; beluga/data/fetch.py, beluga/steps/fetch.py).
# A rule that downloads a file is defined only for the files of the data folder
# that are missing, so a run over fetched data never consults the network; a
# second fetch does nothing.
import re

# The remote files and hub models of the configuration (beluga/data/fetch.py).
FETCH_FILES = {r.path: r for r in beluga_fetch.config_files(config)}
FETCH_MODELS = beluga_fetch.config_models(config)
FETCH_MIRROR = config["fetch"]["mirror"]
try:
    FETCH_LOCK = beluga_fetch.read_lock(DATA_DIR)
except BelugaError as e:
    raise WorkflowError(str(e)) from None
# missing files with a known checksum (published, or recorded at the first fetch) / without one
_MISSING = [rel for rel in FETCH_FILES if not os.path.lexists(data_path(rel))]
_CHECKED = [rel for rel in _MISSING if beluga_fetch.expected_sha256(rel, FETCH_LOCK, FETCH_FILES[rel])]
_UNCHECKED = [rel for rel in _MISSING if rel not in _CHECKED]
_MISSING_MODELS = [m for m in FETCH_MODELS if not os.path.exists(m)]


# the target: every file and model marker of the configuration, and the lock checked and updated
rule fetch:
    input:
        files=[data_path(rel) for rel in FETCH_FILES],
        models=list(FETCH_MODELS),
        lock=data_path(beluga_fetch.LOCK_STAMP),


# every fetched file checked against the lock (and the published checksums) and recorded in it; the
# lock itself is updated in place (never deleted and re-created: it keeps what earlier fetches recorded),
# the stamp is the rule's output
rule fetch_lock:
    input:
        files=[data_path(rel) for rel in FETCH_FILES],
        models=list(FETCH_MODELS),
    output:
        stamp=data_path(beluga_fetch.LOCK_STAMP),
    log:
        "logs/fetch/fetch_lock.log",
    conda:
        "../envs/beluga.yaml"
    params:
        data_dir=lambda w, output: os.path.dirname(output.stamp) or ".",
        files={
            rel: {"url": beluga_fetch.remote_url(r, FETCH_MIRROR), "what": r.what, "published": r.sha256}
            for rel, r in FETCH_FILES.items()
        },
    script:
        "../workflow_scripts/fetch_lock.py"


# a file with a checksum (CheckList's published one, or the lock's): Snakemake checks it too (ensure)
rule fetch_file:
    input:
        download=lambda w: storage.http(beluga_fetch.remote_url(FETCH_FILES[w.path], FETCH_MIRROR)),
    output:
        file=ensure(
            data_path("{path}"),
            non_empty=True,
            sha256=lambda w: beluga_fetch.expected_sha256(w.path, FETCH_LOCK, FETCH_FILES[w.path]),
        ),
    log:
        "logs/fetch/{path}.log",
    wildcard_constraints:
        path=beluga_dag.paths_regex(_CHECKED),
    conda:
        "../envs/beluga.yaml"
    params:
        rel=lambda w: w.path,
        expected=lambda w: beluga_fetch.expected_sha256(w.path, FETCH_LOCK, FETCH_FILES.get(w.path)),
    script:
        "../workflow_scripts/fetch_file.py"


# a file without a published checksum, fetched for the first time: its checksum goes into the lock
use rule fetch_file as fetch_file_new with:
    output:
        file=ensure(data_path("{path}"), non_empty=True),
    log:
        "logs/fetch/{path}.log",
    wildcard_constraints:
        path=beluga_dag.paths_regex(_UNCHECKED),


rule fetch_model:
    output:
        marker=data_path("models", "{key}.json"),
    log:
        "logs/fetch/models/{key}.log",
    wildcard_constraints:
        key=beluga_dag.paths_regex([os.path.basename(m)[: -len(".json")] for m in _MISSING_MODELS]),
    conda:
        "../envs/beluga.yaml"
    params:
        model=lambda w: FETCH_MODELS[data_path("models", f"{w.key}.json")],
    script:
        "../workflow_scripts/fetch_model.py"
