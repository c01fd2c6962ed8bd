from beluga import analysis
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: analysis.write_significance(unit_outcomes_path=sm.input.units, suite_path=sm.input.suite,
                                            task_type=sm.params.task_type, iid_metric=sm.params.iid_metric,
                                            R=sm.params.R, seed=sm.params.seed, alpha=sm.params.alpha,
                                            correction=sm.params.correction, task=sm.wildcards.task,
                                            out_csv=sm.output.table, out_null=sm.output.null))
