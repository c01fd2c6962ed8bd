"""The DAG's steps: one module per rules file (``rules/<module>.smk``), one
function per rule, named after the rule; ``workflow_scripts/<rule>.py`` only
translates ``snakemake.input/params/output`` into the call. A step reads its
inputs, calls the domain modules (training, scoring, metrics, stats, plots,
tables, diagnostics...) and writes its outputs; the logic lives in those
modules (docs/PIPELINE.md has the rule -> step -> module map).

torch / transformers are imported inside the training and prediction steps
only, so the cheap steps (scoring, aggregation, plots) start fast.
"""
