"""Scoring: predictions, case outcomes under the expectations, metrics and pass rates."""
