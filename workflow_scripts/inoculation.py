from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import inoculation
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: inoculation.inoculation(
    task=sm.wildcards.task, task_type=sm.params.task_type, iid_metric=sm.params.iid_metric, units=sm.params.units,
    results=input_list(sm, "results"), case_outcomes=input_list(sm, "case_outcomes"),
    iid_outcomes=input_list(sm, "iid_outcomes"), suite=sm.input.suite, lrs=sm.params.lrs,
    select_on=sm.params.select_on, thresholds=sm.params.thresholds, decide_by=sm.params.decide_by,
    level=sm.params.level, bootstrap=sm.params.bootstrap, randomization=sm.params.randomization,
    seeds=sm.params.seeds, base_seed=sm.params.base_seed, out_table=sm.output.table,
    out_outcomes=sm.output.outcomes, out_markdown=sm.output.markdown, out_curves=sm.output.curves,
    out_transfer=sm.output.transfer, iid_predictions=input_list(sm, "iid_predictions"), split=sm.input.split,
    iid_test=sm.input.iid_test, degenerate_share=sm.params.degenerate_share,
    diagnostics=sm.params.diagnostics, original_from=sm.params.original_from, gap_margin=sm.params.gap_margin,
    drop_margin=sm.params.drop_margin))
