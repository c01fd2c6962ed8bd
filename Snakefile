# BELUGA: cross-functional analysis of generalization in behavioral learning.
# The workflow only includes the rule files, in pipeline order.

# The embedded default, unless configuration files are given on the command
# line: a --configfile is a whole configuration (configs/*.yaml) and replaces
# config.yaml rather than being merged into it; --config overrides single keys.
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/fetch.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/evaluate.smk"
include: "rules/aggregate.smk"
include: "rules/plots.smk"
include: "rules/statistics.smk"
include: "rules/ood.smk"
include: "rules/analyses.smk"


# `snakemake --report report.html`: tables, figures, diagnostics, configuration.
report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        lambda w: all_targets(),
