from beluga.smk import run
from beluga.steps import analyses

sm = snakemake  # noqa: F821
run(sm, lambda: analyses.combinational_data(data=sm.params.data, roles=sm.params.roles, n_test=sm.params.n_test,
                                            seed=sm.params.seed, out_pool=sm.output.pool))
