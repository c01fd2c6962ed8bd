# i.i.d. data, OOD test sets, suite build, suite split (beluga/steps/data.py).


rule prepare_iid:
    input:
        # local data files (an edit reruns this and everything downstream); none for package data
        sources=lambda w: beluga_iid.source_files(TASKS[w.task]["iid"]),
    output:
        train=PATHS.iid("train"),
        val=PATHS.iid("val"),
        test=PATHS.iid("test"),
        pool=PATHS.iid("pool"),
        # which source was read (origin, files, SHA-256), the split rule, rows per split
        source=PATHS.iid_source(),
    log:
        "logs/{task}/prepare_iid.log",
    conda:
        "../envs/beluga.yaml"
    params:
        iid=lambda w: TASKS[w.task]["iid"],
        task_type=lambda w: TASKS[w.task]["type"],
        # the package an offline source ships in: another version reruns
        source_version=lambda w: beluga_iid.source_version(TASKS[w.task]["iid"]),
    script:
        "../workflow_scripts/prepare_iid.py"


rule prepare_ood:
    input:
        # a local OOD file (an edit reruns this and the models' OOD predictions); none for built-in sets
        sources=lambda w: beluga_ood.ood_source_files(RUNS.ood_sets[w.task][w.name]),
    output:
        data=PATHS.ood_data(),
    log:
        "logs/{task}/prepare_ood_{name}.log",
    conda:
        "../envs/beluga.yaml"
    params:
        entry=lambda w: RUNS.ood_sets[w.task][w.name],
        task_type=lambda w: TASKS[w.task]["type"],
        # the package built-in sets ship in: another version reruns
        source_version=lambda w: beluga_ood.ood_source_version(RUNS.ood_sets[w.task][w.name]),
    script:
        "../workflow_scripts/prepare_ood.py"


rule build_suite:
    input:
        unpack(suite_build_inputs),
    output:
        suite=PATHS.suite(),
    log:
        "logs/{task}/build_suite.log",
    conda:
        "../envs/beluga.yaml"
    params:
        suite=lambda w: TASKS[w.task]["suite"],
        task_type=lambda w: TASKS[w.task]["type"],
        # the packages a spec's offline datasets ship in: another version rebuilds
        datasets=lambda w: (
            beluga_spec.dataset_versions(RUNS.suite_specs[w.task]) if w.task in RUNS.suite_specs else []
        ),
    script:
        "../workflow_scripts/build_suite.py"


rule split_suite:
    input:
        suite=PATHS.suite(),
    output:
        split=PATHS.suite("split.parquet"),
        summary=PATHS.suite("summary.tsv"),
    log:
        "logs/{task}/split_suite.log",
    conda:
        "../envs/beluga.yaml"
    params:
        task_type=lambda w: TASKS[w.task]["type"],
        fractions=config["split"]["fractions"],
        seed=config["split"]["seed"],
        duplicates=config["split"]["duplicates"],
    script:
        "../workflow_scripts/split_suite.py"
