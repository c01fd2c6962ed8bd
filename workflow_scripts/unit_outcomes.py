from beluga.workflow.warm import hand_off

hand_off(snakemake)  # noqa: F821  (a local run's warm job server runs this script: beluga/workflow/warm.py)
from beluga.steps import statistics
from beluga.workflow.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: statistics.unit_outcomes(runs=sm.params.runs, task_type=sm.params.task_type,
                                         scenario_iid=sm.params.scenario_iid, out_units=sm.output.units))
