from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import combinational
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: combinational.combinational_data(data=sm.params.data, roles=sm.params.roles, n_test=sm.params.n_test,
                                            seed=sm.params.seed, out_pool=sm.output.pool))
