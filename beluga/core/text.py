"""Text from files on its way out of the program, kept literal where it goes: a name or a text another tool, a
suite or a config wrote (functionality, system, model, category names; suite inputs) is never read there as
markup or as a command.

- the terminal: :func:`terminal_safe` (every character a terminal acts on written as its escape),
  :func:`one_line` (also on one line), :func:`terminal_text` (a command's whole output, line by line) and
  :func:`clip` (a value in an error line);
- a Markdown table: :func:`md_cell`, the one cell function every Markdown table the package writes uses
  (``|`` escaped, line breaks and control characters a space, ``& < >`` entities; also fit for a name in a
  heading or a sentence);
- Markdown prose: :func:`markdown_safe` (a cell's escaping plus Markdown's inline syntax) and
  :func:`markdown_code` (a code span).

An ordinary name (letters, digits, spaces and the usual punctuation) comes out as it went in.
"""

from __future__ import annotations

import re

#: what a terminal acts on instead of showing: C0 and C1 control characters (ANSI escape sequences start with
#: \x1b or \x9b), DEL, the bidirectional embeddings / overrides / isolates and the line / paragraph separators
_TERMINAL_ACTIVE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
#: Markdown's inline syntax, backslash-escaped in prose (the backslash and "|": :func:`md_cell`)
_MARKDOWN_INLINE = re.compile(r"([`*_\[\]~#!])")


def terminal_safe(text) -> str:
    """``text`` with every character a terminal would act on written as its escape, as repr does
    (``\\x1b``, ``\\x85``, ``\\u202e``): text from a file cannot move the cursor, recolour or rewrite the
    screen, set the window title or reverse what follows it."""
    return _TERMINAL_ACTIVE.sub(lambda m: repr(m.group())[1:-1], str(text))


def clip(value, n: int = 60) -> str:
    """A value from a file as an error line shows it: its repr (control characters escaped), at most about
    ``n`` characters."""
    r = repr(value)
    return r if len(r) <= n else r[:n - 1] + "…"


def one_line(text) -> str:
    """Text on one line (whitespace runs, line breaks included, become one space), controls escaped."""
    return terminal_safe(" ".join(str(text).split()))


def terminal_text(text: str) -> str:
    """A command's output as the terminal gets it: each line :func:`terminal_safe`, the line breaks between
    them kept (what every ``beluga`` command prints goes through it)."""
    return "\n".join(terminal_safe(line) for line in str(text).split("\n"))


def md_cell(text, *, code: bool = False) -> str:
    """``text`` as one cell of a Markdown (GitHub) table, showing the text it is: line breaks, tabs and the
    other characters :func:`terminal_safe` escapes become a space (a row stays one line); ``&``, ``<``, ``>``
    become entities (raw HTML stays text); a backslash is doubled and ``|`` escaped as ``\\|`` (a row keeps
    its columns). ``code``: the cell as a code span, its text literal (no entities, no backslash doubling:
    code keeps both; only ``|`` escaped, which tables read before the span), the fence longer than any run of
    backticks inside."""
    s = _TERMINAL_ACTIVE.sub(" ", str(text))
    if code:
        return _code_span(s).replace("|", "\\|")
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return s.replace("\\", "\\\\").replace("|", "\\|")


def markdown_safe(text) -> str:
    """Text as literal Markdown prose: one line, control characters escaped as in the terminal
    (:func:`one_line`), then a cell's escaping (:func:`md_cell`), Markdown's inline syntax backslash-escaped
    and a leading list marker neutralised."""
    s = _MARKDOWN_INLINE.sub(r"\\\1", md_cell(one_line(text)))
    if s[:1] in ("-", "+"):
        s = "\\" + s
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", s)


def markdown_code(text) -> str:
    """Text as a Markdown code span (a fence longer than any run of backticks inside it), on one line."""
    return _code_span(one_line(text))


def _code_span(s: str) -> str:
    """``s`` between backticks: a fence longer than any run of backticks inside, padded where ``s`` starts or
    ends with one."""
    fence = "`" * (max((len(m) for m in re.findall("`+", s)), default=0) + 1)
    pad = " " if not s or s[0] == "`" or s[-1] == "`" else ""
    return f"{fence}{pad}{s}{pad}{fence}"
