"""Text at the program's edges. Out: text from files on its way out of the program, kept literal where it goes: a name
or a text another tool, a suite or a config wrote (functionality, system, model, category names; suite inputs) is
never read there as markup or as a command.

- the terminal: :func:`terminal_safe` (every character a terminal acts on written as its escape),
  :func:`one_line` (also on one line), :func:`terminal_text` (a command's whole output, line by line) and
  :func:`clip` (a value in an error line);
- a Markdown table: :func:`md_cell`, the one cell function every Markdown table the package writes uses
  (``|`` escaped, line breaks and control characters a space, ``& < >`` entities; also fit for a name in a
  heading or a sentence);
- Markdown prose: :func:`markdown_safe` (a cell's escaping plus Markdown's inline syntax) and
  :func:`markdown_code` (a code span).

An ordinary name (letters, digits, spaces and the usual punctuation) comes out as it went in.

In: text that can be written as UTF-8, checked where a file is read.

A Python string may hold a lone surrogate (U+D800..U+DFFF), which is not Unicode text and cannot be encoded as
UTF-8: JSON spells one as the escape ``\\ud800``, and a Parquet / Arrow string column holds it as bytes that are
not UTF-8 (``ED A0 80``). Such a string would pass every check and stop the first write (a suite's Parquet, an
export, a terminal) with an encoding error far from its file; the readers of suites, release suites and
prediction files refuse it where they read it, in one line naming the file, the record and the field
(:data:`NOT_TEXT`), with the checks of this module.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

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


# --------------------------------------------------------------------------- text in: UTF-8 or refused
#: what the one-line errors say of such a string
NOT_TEXT = "a string that is not Unicode text (a lone surrogate, e.g. \\ud800): it cannot be written as UTF-8"

#: a JSON escape of a surrogate code point (``\\ud800``-``\\udfff``): the only way JSON read as UTF-8 can spell a
#: string that is not Unicode text (a JSON text without one needs no closer look)
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def is_text(s: str) -> bool:
    """Whether ``s`` can be encoded as UTF-8 (an ASCII string can, at no cost)."""
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(s: str) -> str:
    """``s`` with every lone surrogate written as its escape (``\\ud800``): a key that is not text, safe to
    name in an error line."""
    return s if is_text(s) else s.encode("utf-8", "backslashreplace").decode("utf-8")


def not_text(value, field: str = "") -> str | None:
    """The field (``inputs[0][1]``, ``meta.name``; ``field`` names ``value`` itself) of the first string in
    ``value`` -- a string, or lists / tuples / arrays / dicts of them, keys included -- that is not Unicode text
    (:func:`is_text`); None when every string is text. Other values are ignored."""
    if isinstance(value, str):
        return None if is_text(value) else (field or "value")
    if isinstance(value, dict):
        for k, v in value.items():
            key = shown(k) if isinstance(k, str) else str(k)
            name = f"{field}.{key}" if field else key
            if isinstance(k, str) and not is_text(k):
                return name
            bad = not_text(v, name)
            if bad:
                return bad
    elif isinstance(value, (list, tuple, np.ndarray)):
        for i, v in enumerate(value):
            bad = not_text(v, f"{field}[{i}]")
            if bad:
                return bad
    return None


def column_not_text(values) -> tuple[int, str] | None:
    """(row, field within the cell: ``""``, ``[1]``, ``.name``) of the first cell of a table column (strings, or
    lists / dicts of them; anything else ignored) holding a string that is not Unicode text; None when there is
    none. The column's strings are checked in one encoding pass (none for ASCII text); only a column that fails
    it is searched row by row."""
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    strings: list = []
    nested = False
    for v in values:
        if isinstance(v, str):
            strings.append(v)
        elif isinstance(v, (list, tuple, np.ndarray)):
            strings.extend(v)
        elif isinstance(v, dict):
            nested = True
    try:
        joined = "\n".join(strings)
    except TypeError:   # lists holding other values (or lists): every cell walked
        nested = True
        joined = "\n".join(x for x in strings if isinstance(x, str))
    if not nested and is_text(joined):
        return None
    for i, v in enumerate(values):
        bad = not_text(v, "")
        if bad is not None:
            return i, "" if isinstance(v, str) else f".{bad}" if isinstance(v, dict) else bad
    return None


def arrow_not_utf8(table: pa.Table) -> tuple[int, str, str] | None:
    """(row, field: the column, ``inputs[1]`` in a list column; what is wrong) of the first string of an Arrow
    table (a Parquet file read) that is not UTF-8 -- how a Parquet file holds a lone surrogate, or damaged text --
    in its string columns and their lists; None when the table is valid (one pass of Arrow's own check)."""
    try:
        table.validate(full=True)
        return None
    except pa.ArrowInvalid:
        pass
    for name, col in zip(table.column_names, table.columns):
        row = 0
        for chunk in col.chunks:
            found = _bad_utf8_row(chunk)
            if found is not None:
                return row + found[0], name + found[1], found[2]
            row += len(chunk)
    return None


def _bad_utf8_row(chunk: pa.Array) -> tuple[int, str, str] | None:
    """(row, the item within it: ``""`` or ``[k]``, what is wrong) of the first value of a string (or list of
    strings) array that is not UTF-8."""
    t = chunk.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            chunk.validate(full=True)
            return None
        except pa.ArrowInvalid:
            pass
        raw = pa.Array.from_buffers(pa.large_binary() if pa.types.is_large_string(t) else pa.binary(), len(chunk),
                                    chunk.buffers(), chunk.null_count, chunk.offset)
        for i, b in enumerate(raw.to_pylist()):
            why = _utf8_problem(b)
            if why is not None:
                return i, "", why
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        found = _bad_utf8_row(chunk.flatten())
        if found is not None:
            k = found[0]
            offsets = chunk.offsets.to_pylist()   # item k of the flattened values: row i holds offsets[i]..[i + 1]
            first = offsets[0]
            row = next(i for i in range(len(chunk)) if offsets[i] - first <= k < offsets[i + 1] - first)
            return row, f"[{k - (offsets[row] - first)}]{found[1]}", found[2]
    return None


def _utf8_problem(b: bytes | None) -> str | None:
    """What is wrong with bytes that should be UTF-8 text (None: nothing)."""
    if b is None:
        return None
    try:
        b.decode("utf-8")
    except UnicodeDecodeError as e:
        try:
            lone = b[e.start:e.start + 3].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            lone = ""
        if len(lone) == 1 and 0xD800 <= ord(lone) <= 0xDFFF:
            return f"a lone surrogate (U+{ord(lone):04X}, bytes {b[e.start:e.start + 3].hex(' ')} at byte " \
                   f"{e.start}): not Unicode text, it cannot be read as UTF-8"
        return f"not UTF-8 text (byte 0x{b[e.start]:02x} at byte {e.start})"
    return None
