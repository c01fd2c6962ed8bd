from beluga.smk import run
from beluga.steps import statistics

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.unit_outcomes(runs=sm.params.runs, task_type=sm.params.task_type,
                                         scenario_iid=sm.params.scenario_iid, out_units=sm.output.units))
