from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import combinational
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: combinational.combinational_train(
    run=sm.params.run, pool=sm.input.pool, k=int(sm.wildcards.k), variant=sm.wildcards.variant,
    words=sm.params.words, template=sm.params.template, too_long=sm.params.too_long,
    batch_size=sm.params.batch_size, per_epoch=sm.params.per_epoch, out_result=sm.output.result,
    fields=sm.params.fields, degenerate_share=sm.params.degenerate_share))
