"""Reporting: statistics of the runs, significance tests, tables, plots, diagnostics."""
