# BELUGA: cross-functional analysis of generalization in behavioral learning.
# The workflow only includes the rule files, in pipeline order.

configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/train.smk"
include: "rules/evaluate.smk"
include: "rules/aggregate.smk"
include: "rules/plots.smk"


rule all:
    input:
        all_targets(),
    default_target: True
