"""Workflow glue: the DAG's helpers, job glue for workflow_scripts, the cost plan, the command line."""
