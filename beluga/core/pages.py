"""The project's HTML pages, rendered from one jinja2 template folder (``beluga/templates``, package data):
``page.html.j2`` (the frame every page shares: title, heading, the stylesheet) and one small template per page
(``summary.html.j2``: the ``test`` command's summary.html; ``failures.html.j2``: the pipeline's failures.html;
``iid_data.html.j2``: the report's table3/iid_data.html). One stylesheet, ``beluga.css``, inlined into each
page, so a page stays one self-contained file (no scripts, no external resources).

Autoescaped: every value a page shows (suite text, functionality and model names, file paths) is given to the
template as data, never as markup, and jinja2 escapes it; the templates hold the only markup."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

#: the folder of the templates and the stylesheet (package data: pyproject's [tool.setuptools.package-data])
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"   # beluga/templates
#: the one stylesheet every page inlines
STYLESHEET = "beluga.css"


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def render_page(template: str, **context) -> str:
    """The page ``template`` (a file of :data:`TEMPLATES`) rendered with ``context``, every value escaped."""
    return _environment().get_template(template).render(**context)
