"""Exceptions that carry one clear, user-facing line naming the file and field."""

import tempfile
import traceback


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


class OutputError(BelugaError, OSError):
    """An output file cannot be written (read-only folder, disk full, no permission);
    still an OSError for code that catches those."""


def _field_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def config_error_line(error, configfiles=()) -> str:
    """One line naming the config file(s) and the field for a config that
    fails the schema: ``error`` is the jsonschema ValidationError, or the
    WorkflowError that snakemake.utils.validate wraps it in."""
    err = error
    if not hasattr(err, "absolute_path"):
        candidates = [*getattr(error, "args", ()), error.__cause__, error.__context__]
        err = next((a for a in candidates if hasattr(a, "absolute_path")), None)
        if err is None:
            return " ".join(str(error).split())
    files = [str(f) for f in configfiles]
    where = (f"config file{'s' if len(files) > 1 else ''} {', '.join(files)}" if files else "config")
    path = list(err.absolute_path)
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(schema.get("properties", {}))
        extra = [k for k in err.instance if k not in allowed]
        if extra:
            path.append(extra[0])
            msg = "unknown key" + (f" (allowed: {', '.join(allowed)})" if allowed else "")
        else:
            msg = err.message
    elif err.validator == "required" and isinstance(err.instance, dict):
        missing = [k for k in err.validator_value if k not in err.instance]
        path.append(missing[0] if missing else "?")
        msg = "required key is missing"
    elif err.validator == "enum" and "propertyNames" in err.schema_path:
        path.append(err.instance)
        msg = f"unknown key (allowed: {', '.join(map(str, err.validator_value))})"
    elif err.validator == "enum":
        msg = f"unknown value {err.instance!r} (allowed: {', '.join(map(str, err.validator_value))})"
    elif err.validator in ("oneOf", "anyOf") and all(set(s) == {"required"} for s in err.validator_value):
        keys = [k for s in err.validator_value for k in s["required"]]
        msg = f"needs exactly one of the keys {', '.join(keys)}"
    elif "propertyNames" in err.schema_path:
        msg = f"bad key: {err.message}"
    else:
        msg = err.message
    field = _field_path(path) or "(top level)"
    return " ".join(f"{where}: field '{field}': {msg}".split())


#: the longest exception message an unexpected-error line quotes (the log has all of it)
UNEXPECTED_MESSAGE_CHARS = 300


def unexpected_error_line(what: str, inputs, error: BaseException, log_path) -> str:
    """The last-resort line for an exception the project did not anticipate (the command line's and the
    job wrapper's): ``what`` (the command, or the rule and its wildcards), its input(s), the exception's
    type and message (cut at :data:`UNEXPECTED_MESSAGE_CHARS`), and the log holding the traceback."""
    items = [str(i) for i in (inputs or ()) if i not in (None, "")]
    shown = ", ".join(items[:3]) + (f" (+{len(items) - 3} more)" if len(items) > 3 else "")
    msg = " ".join(str(error).split())
    if len(msg) > UNEXPECTED_MESSAGE_CHARS:
        msg = msg[:UNEXPECTED_MESSAGE_CHARS] + "..."
    return (f"{what}" + (f" on input {shown}" if shown else "") + f": unexpected {type(error).__name__}"
            + (f": {msg}" if msg else "") + f" (a bug or an input the project does not check yet; "
            f"traceback in {log_path})")


def write_traceback(log_path=None, prefix: str = "beluga-") -> str:
    """Append the traceback being handled to ``log_path`` (a new file in the temporary folder when None or
    when it cannot be written); returns the file's path."""
    text = traceback.format_exc()
    if log_path:
        try:
            with open(log_path, "a") as fh:
                fh.write(text)
            return str(log_path)
        except OSError:
            pass
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=".log")
    with open(fd, "w") as fh:
        fh.write(text)
    return path
