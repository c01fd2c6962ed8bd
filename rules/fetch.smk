# Every input of the configuration, fetched on a machine with a network (a
# cluster's login node) before the run: `snakemake fetch --cores 4 --configfile F`
# (README, "The paper's run on a cluster"; beluga/data/fetch.py, beluga/steps/fetch.py).
# A rule that downloads a file is defined only for the files of the data folder
# that are missing, so a run over fetched data never consults the network; a
# second fetch does nothing.


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
        download=fetch_url,
    output:
        file=ensure(
            data_path("{path}"),
            non_empty=True,
            sha256=lambda w: beluga_fetch.expected_sha256(w.path, FETCH_LOCK, FETCH_FILES[w.path]),
        ),
    log:
        "logs/fetch/{path}.log",
    wildcard_constraints:
        path=fetch_regex(_CHECKED),
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
        path=fetch_regex(_UNCHECKED),


rule fetch_model:
    output:
        marker=data_path("models", "{key}.json"),
    log:
        "logs/fetch/models/{key}.log",
    wildcard_constraints:
        key=fetch_regex([os.path.basename(m)[: -len(".json")] for m in _MISSING_MODELS]),
    conda:
        "../envs/beluga.yaml"
    params:
        model=lambda w: FETCH_MODELS[data_path("models", f"{w.key}.json")],
    script:
        "../workflow_scripts/fetch_model.py"
