from beluga import analysis
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: analysis.write_table3(tasks=sm.params.tasks, scores=sm.input.scores,
                                      significance_files=sm.input.significance, intervals_files=sm.input.intervals,
                                      null_files=sm.input.null, alpha=sm.params.alpha,
                                      correction=sm.params.correction, out_csv=sm.output.csv,
                                      out_md=sm.output.markdown, out_tex=sm.output.latex))
