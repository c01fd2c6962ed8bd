"""BELUGA: cross-functional analysis of generalization in behavioral learning, as a Snakemake pipeline.

``beluga.__version__``: the version of this copy of the package (``beluga --version`` prints it). In a source
checkout (run from it with ``PYTHONPATH``, or installed editable) it is the checkout's ``pyproject.toml``
version, so that an editable install whose metadata predates a version bump still reports the code it runs;
in an installed wheel, the installed distribution's version (``importlib.metadata``).
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

#: what ``__version__`` reads when neither a checkout's pyproject.toml nor an installed distribution names one
UNKNOWN_VERSION = "0+unknown"


def checkout_version(root: Path | None = None) -> str | None:
    """The version in the ``pyproject.toml`` beside the package folder when it is this project's (a source
    checkout), else None."""
    path = (root or Path(__file__).resolve().parents[1]) / "pyproject.toml"
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project") or {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    version = project.get("version")
    return version if project.get("name") == "beluga" and isinstance(version, str) and version else None


def package_version() -> str:
    """This copy's version: the checkout's pyproject.toml, else the installed distribution's metadata."""
    found = checkout_version()
    if found:
        return found
    try:
        return metadata.version("beluga")
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


def __getattr__(name: str):
    # PEP 562: the version is looked up when asked for, not at every import of the package
    if name == "__version__":
        return package_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
