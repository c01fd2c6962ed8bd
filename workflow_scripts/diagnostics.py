from beluga import analysis
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: analysis.write_diagnostics(task=sm.wildcards.task, task_type=sm.params.task_type,
                                           runs=sm.params.runs, suite_path=sm.input.suite,
                                           split_path=sm.input.split, iid_test=sm.input.iid_test,
                                           degenerate_share=sm.params.degenerate_share, out_csv=sm.output.table,
                                           out_summary=sm.output.summary, out_md=sm.output.markdown))
