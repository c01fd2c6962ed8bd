from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import inoculation
from beluga.workflow.smk import input_list, run

sm = snakemake  # noqa: F821
run(sm, lambda: inoculation.inoculate(
    run=sm.params.run, unit=sm.wildcards.unit, unit_funcs=sm.params.unit_funcs, dose=sm.wildcards.dose,
    sample_seed=sm.params.sample_seed, patience=sm.params.patience, suite=sm.input.suite, split=sm.input.split,
    start=sm.input.start, iid_val=sm.input.iid_val, iid_test=sm.input.iid_test, batch_size=sm.params.batch_size,
    iid_metric=sm.params.iid_metric, out_result=sm.output.result, out_outcomes=sm.output.outcomes,
    schedule=sm.params.schedule, challenge=sm.params.challenge, challenge_data=input_list(sm, "challenge"),
    challenge_test_fraction=sm.params.challenge_test_fraction,
    challenge_dev_fraction=sm.params.challenge_dev_fraction, challenge_train=input_list(sm, "challenge_train"),
    challenge_train_size=sm.params.challenge_train_size, challenge_distinct=sm.params.challenge_distinct,
    challenge_released=input_list(sm, "released"), degenerate_share=sm.params.degenerate_share))
