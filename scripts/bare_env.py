"""A bare GPU machine's Python packages, made from this environment: ``DIR`` gets links to the installed
distributions of torch, transformers, numpy, pandas, pyarrow, pyyaml, safetensors and scipy and of everything
they require (their declared requirements, transitively; no extras), and nothing else.

    python scripts/bare_env.py DIR
    python -S ...   with PYTHONPATH=DIR   (``-S``: no site-packages; only DIR's packages import)

``scripts/gpu_session.sh --cpu-dry-run`` and the tests run the GPU benchmark's bundle path this way, so an
import of snakemake, jsonschema, scattertext, the offline model's package or anything else the project's venv
has fails as it would on the GPU machine. Standard library only.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import sys
from pathlib import Path

#: what a bare GPU machine has (besides the standard library)
ALLOWED = ("torch", "transformers", "numpy", "pandas", "pyarrow", "pyyaml", "safetensors", "scipy")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names=ALLOWED) -> dict[str, md.Distribution]:
    """The installed distributions of ``names`` and their requirements, transitively (requirements under an
    ``extra`` marker or whose marker does not hold here are left out; one not installed is skipped)."""
    out: dict[str, md.Distribution] = {}
    todo = list(names)
    while todo:
        name = _norm(todo.pop())
        if name in out:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        out[name] = dist
        for req in dist.requires or []:
            spec, _, marker = req.partition(";")
            if "extra" in marker:
                continue
            if marker.strip() and not _marker_holds(marker):
                continue
            todo.append(re.split(r"[\s<>=!~\[(]", spec.strip(), maxsplit=1)[0])
    return out


def _marker_holds(marker: str) -> bool:
    """A requirement's environment marker: by ``packaging.markers`` where it is installed, else for the
    markers these packages use (python_version, sys_platform, platform_system, platform_machine,
    implementation_name); a marker that cannot be read: kept."""
    try:
        from packaging.markers import Marker

        return Marker(marker).evaluate()
    except ImportError:
        pass
    except Exception:
        return True
    import platform

    marker = marker.replace('"', "'")

    env = {"python_version": f"{sys.version_info[0]}.{sys.version_info[1]}", "sys_platform": sys.platform,
           "platform_system": platform.system(), "platform_machine": platform.machine(),
           "implementation_name": sys.implementation.name, "platform_python_implementation":
           platform.python_implementation(), "os_name": os.name}
    expr = marker
    for key, value in env.items():
        expr = expr.replace(key, repr(value))
    expr = re.sub(r"'([0-9.]+)'\s*(<=|>=|<|>|==|!=)\s*'([0-9.]+)'",
                  lambda m: f"{tuple(map(int, m[1].split('.')))} {m[2]} {tuple(map(int, m[3].split('.')))}", expr)
    try:
        return bool(eval(expr, {"__builtins__": {}}))   # noqa: S307 (a marker of an installed package's metadata)
    except Exception:
        return True


def top_levels(dist: md.Distribution) -> set[str]:
    """The top-level files and folders a distribution installed (its modules, packages, .libs and its
    .dist-info), relative to its site-packages."""
    out = set()
    for f in dist.files or []:
        first = f.parts[0]
        if first in ("..", "__pycache__") or first.endswith(".data"):
            continue
        out.add(first)
    return out


def make(target: Path) -> list[str]:
    """Links in ``target`` to every top-level entry of the allowed closure; returns the distributions."""
    target.mkdir(parents=True, exist_ok=True)
    dists = closure()
    for dist in dists.values():
        base = Path(dist.locate_file(""))
        for entry in top_levels(dist):
            src, dst = base / entry, target / entry
            if src.exists() and not dst.exists():
                dst.symlink_to(src)
    return sorted(dists)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python scripts/bare_env.py DIR", file=sys.stderr)
        return 2
    names = make(Path(argv[0]))
    print(f"bare environment: {argv[0]}: {len(names)} distributions ({', '.join(names)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
