"""Workflow glue: the DAG's helpers (``dag``), every results path (``paths``), the runs of a
configuration and each training job's settings (``runs``), job glue for workflow_scripts (``smk``),
the cost plan (``plan``); the command line is ``beluga.cli``."""
