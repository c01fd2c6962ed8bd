from beluga import analysis
from beluga.smk import run

sm = snakemake  # noqa: F821
run(sm, lambda: analysis.write_figure1(task=sm.wildcards.task, suite_path=sm.input.suite,
                                       pass_rates=sm.input.pass_rates, configurations=sm.params.configurations,
                                       methods=sm.params.methods, out_png=sm.output.png, out_pdf=sm.output.pdf))
