# Combinational OOD generalization by template recombination (seed 002; docs/ANALYSES.md;
# beluga/steps/combinational.py, beluga/analyses/combinational.py). Every variant
# (combinational.variants: a model, a template, label words, a length limit...) trains and
# is summarised under results/combinational/<variant>/, on the pool of inputs of its data source
# (the block's: pool.parquet; a variant's own data: pool-<name>.parquet, beluga/analyses/
# combinational_data.py); combinational_comparison puts the variants side by side.

COMB_VARIANTS = RUNS.comb_variants


rule combinational_data:
    input:
        sources=lambda w: beluga_comb_data.data_files(RUNS.comb_pools[w.pool]["data"]),
    output:
        pool=PATHS.combinational("{pool}.parquet"),
    log:
        "logs/combinational/{pool}.log",
    wildcard_constraints:
        pool="pool(-[A-Za-z0-9][A-Za-z0-9_-]*)?",
    conda:
        "../envs/beluga.yaml"
    params:
        data=lambda w: RUNS.comb_pools[w.pool]["data"],
        # as the config gives them (the job resolves a source's default roles): a one-source run's params stay
        roles=lambda w: RUNS.comb_pools[w.pool]["given_roles"],
        n_test=COMBINATIONAL["n_test"],
        seed=COMBINATIONAL["seed"],
        source_version=lambda w: beluga_ood.ood_source_version(RUNS.comb_pools[w.pool]["data"]),
    script:
        "../workflow_scripts/combinational_data.py"


rule combinational_train:
    input:
        pool=lambda w: RUNS.comb_pool(w.variant),
        model_files=lambda w: beluga_dag.model_files(COMB_VARIANTS[w.variant]["model"]),
        # a variant's hub model marker (none for local models); ancient(): only its path decides a rerun
        model_lock=lambda w: [ancient(m) for m in [RUNS.model_marker(None, w.variant)] if m],
    output:
        result=PATHS.combinational_run(),
    log:
        "logs/combinational/{variant}/{seeddir}k{k}.log",
    benchmark:
        job_benchmark("logs/combinational/{variant}/{seeddir}k{k}.log")
    wildcard_constraints:
        k="[0-9]+",
        variant="[A-Za-z0-9][A-Za-z0-9_-]*",
    conda:
        "../envs/beluga.yaml"
    threads: JOB_THREADS
    resources:
        **job_resources("train"),
    params:
        run=run_settings("combinational_train"),
        words=lambda w: COMB_VARIANTS[w.variant]["label_words"],
        template=lambda w: COMB_VARIANTS[w.variant]["template"],
        too_long=lambda w: COMB_VARIANTS[w.variant]["too_long"],
        # the config field of each setting of the variant, for its messages
        fields=lambda w: RUNS.comb_fields(w.variant),
        batch_size=PREDICT["batch_size"],
        per_epoch=COMBINATIONAL["per_epoch"],
        degenerate_share=STATISTICS["degenerate_share"],
    message:
        "combinational_train {wildcards.variant} {wildcards.seeddir}K={wildcards.k}"
    script:
        "../workflow_scripts/combinational_train.py"


rule combinational:
    input:
        results=lambda w: [
            PATHS.combinational_run(k, w.variant, sd) for sd in RUNS.seeddirs() for k in COMB_VARIANTS[w.variant]["ks"]
        ],
    output:
        table=report(
            PATHS.combinational_variant("table.csv"),
            caption="../report/combinational_table.rst",
            category="Combinational OOD",
            subcategory="{variant}",
        ),
        markdown=PATHS.combinational_variant("table.md"),
        figure=report(
            PATHS.combinational_variant("accuracy.png"),
            caption="../report/combinational_figure.rst",
            category="Combinational OOD",
            subcategory="{variant}",
        ),
        epochs=PATHS.combinational_variant("epochs.csv"),
        epochs_figure=report(
            PATHS.combinational_variant("epochs.png"),
            caption="../report/combinational_epochs.rst",
            category="Combinational OOD",
            subcategory="{variant}",
        ),
    log:
        "logs/combinational/{variant}/summary.log",
    wildcard_constraints:
        variant="[A-Za-z0-9][A-Za-z0-9_-]*",
    conda:
        "../envs/beluga.yaml"
    params:
        too_long=lambda w: COMB_VARIANTS[w.variant]["too_long"],
        ks=lambda w: COMB_VARIANTS[w.variant]["ks"],
        seeds=RUNS.seeds,
        degenerate_share=STATISTICS["degenerate_share"],
    script:
        "../workflow_scripts/combinational.py"


rule combinational_comparison:
    input:
        tables=[PATHS.combinational_variant("table.csv", v) for v in COMB_VARIANTS],
    output:
        table=report(
            PATHS.combinational("comparison.csv"),
            caption="../report/combinational_comparison.rst",
            category="Combinational OOD",
        ),
        markdown=PATHS.combinational("comparison.md"),
    log:
        "logs/combinational/comparison.log",
    conda:
        "../envs/beluga.yaml"
    params:
        # each variant's settings, with its data's name when they read several (a one-source run's params stay)
        variants=beluga_comb_data.comparison_settings(COMBINATIONAL, COMB_VARIANTS),
        seeds=RUNS.seeds,
    script:
        "../workflow_scripts/combinational_comparison.py"


rule combinational_figure:
    input:
        # one file per panel, in row order: the variants' epochs (figure epochs) or tables (figure ks)
        panels=lambda w: [
            PATHS.combinational_variant("epochs.csv" if w.figure == "epochs" else "table.csv", v)
            for row in RUNS.comb_figures[w.figure]["panels"]
            for v in row
        ],
    output:
        figure=report(
            PATHS.combinational("figure_{figure}.png"),
            caption="../report/combinational_panels.rst",
            category="Combinational OOD",
        ),
    log:
        "logs/combinational/figure_{figure}.log",
    wildcard_constraints:
        figure="epochs|ks",
    conda:
        "../envs/beluga.yaml"
    params:
        panels=lambda w: RUNS.comb_figures[w.figure]["panels"],
        k=lambda w: RUNS.comb_figures[w.figure].get("k"),
        titles=lambda w: beluga_comb_data.panel_titles(
            COMBINATIONAL, COMB_VARIANTS, [v for row in RUNS.comb_figures[w.figure]["panels"] for v in row]
        ),
    script:
        "../workflow_scripts/combinational_figure.py"


rule combinational_all:
    input:
        comb_targets(),
