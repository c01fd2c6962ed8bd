"""The DAG's steps: one module per rules file (``rules/<module>.smk``), one
function per rule, named after the rule; ``workflow_scripts/<rule>.py`` only
translates ``snakemake.input/params/output`` into the call. A step reads its
inputs, calls the package (``beluga.train.fold`` for training a fold, scoring,
metrics, ``beluga.report`` and ``beluga.analyses``...) and writes its outputs;
the logic lives there (docs/PIPELINE.md has the rule -> step -> module map).
No step imports another step (tests/test_imports.py).

torch / transformers are imported inside the training and prediction steps
only, so the cheap steps (scoring, aggregation, plots) start fast.
"""
