from beluga import analysis
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: analysis.write_unit_outcomes(runs=sm.params.runs, task_type=sm.params.task_type,
                                             out_path=sm.output.units))
