"""Exceptions that carry one clear, user-facing line naming the file and field."""


class BelugaError(ValueError):
    """Base class: bad input detected by the project."""


class SuiteError(BelugaError):
    """A suite file is malformed."""


class DataError(BelugaError):
    """An i.i.d. dataset is missing or malformed."""


class ModelError(BelugaError):
    """A model path or name cannot be loaded."""


class ConfigError(BelugaError):
    """A configuration value is invalid."""
