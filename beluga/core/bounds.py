"""Bounded parsing of what users hand in as YAML and JSON (spec and lexicon files, the config, suite files and
their JSON cells, predictions, ``meta``, the fetch lock): a nesting-depth limit for both and, for YAML, a limit on
what aliases may add, so a deep or alias-bomb file is one error line in milliseconds instead of a
``RecursionError`` or minutes of expansion. The limits are documented in docs/SUITE_FORMAT.md (Limits).

The loaders raise the parser's own error type (``yaml.MarkedYAMLError`` / ``json.JSONDecodeError`` subclasses),
so every reader's existing one-line message (file, line or row, field) reports them as well.
"""

from __future__ import annotations

import json

import yaml

#: deepest nesting of lists / mappings (JSON arrays / objects) a YAML or JSON input may have
MAX_DEPTH = 100
#: the most nodes aliases (``*name``) may add to a YAML document when expanded (a document without aliases is
#: bounded by its size only)
MAX_ALIAS_EXPANSION = 100_000
#: the most values a config may hold, shared (aliased) parts counted once per place
MAX_CONFIG_VALUES = 100_000


class YAMLBoundError(yaml.MarkedYAMLError):
    """A YAML document nested too deeply, expanding too much through aliases, or referring to itself."""

    def __init__(self, problem: str, mark=None):
        super().__init__(problem=problem, problem_mark=mark)


class JSONBoundError(json.JSONDecodeError):
    """JSON nested deeper than :data:`MAX_DEPTH`."""

    def __init__(self, doc):
        super().__init__(f"nested deeper than {MAX_DEPTH} levels (the limit of BELUGA's JSON inputs)",
                         doc if isinstance(doc, str) else "", 0)

    def __str__(self):
        return self.msg


def _bounded_loader(base: type) -> type:
    class Bounded(base):
        """``base`` with composition depth and alias expansion bounded."""

        _depth = 0

        def compose_node(self, parent, index):
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise YAMLBoundError(f"nested deeper than {MAX_DEPTH} levels (the limit of BELUGA's YAML "
                                         "inputs)", self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def compose_document(self):
            node = super().compose_document()
            _check_expansion(node)
            return node

    Bounded.__name__ = f"Bounded{base.__name__}"
    return Bounded


def _check_expansion(root) -> None:
    """Refuse a node graph whose tree expansion (aliases repeated) exceeds its own nodes by more than
    :data:`MAX_ALIAS_EXPANSION`, or that contains itself (a recursive alias). Sizes are memoised per node, so
    the check costs one visit per distinct node whatever the expansion."""
    size: dict[int, int] = {}
    active: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = node.value if isinstance(node.value, list) else []
            total = 1
            for c in children:
                for n in (c if isinstance(c, tuple) else (c,)):
                    total += size[id(n)]
            size[key] = total
            if total - len(size) > MAX_ALIAS_EXPANSION:
                raise YAMLBoundError(f"aliases expand the document by more than {MAX_ALIAS_EXPANSION:,} nodes "
                                     "(the limit of BELUGA's YAML inputs)", node.start_mark)
            continue
        if key in size:
            continue
        if key in active:
            raise YAMLBoundError("an alias refers to the node that contains it (a recursive document)",
                                 node.start_mark)
        active.add(key)
        stack.append((node, True))
        if isinstance(node.value, list):
            for c in node.value:
                for n in (c if isinstance(c, tuple) else (c,)):
                    if id(n) in active:
                        raise YAMLBoundError("an alias refers to the node that contains it (a recursive "
                                             "document)", n.start_mark)
                    if id(n) not in size:
                        stack.append((n, False))
    if size.get(id(root), 0) - len(size) > MAX_ALIAS_EXPANSION:
        raise YAMLBoundError(f"aliases expand the document by more than {MAX_ALIAS_EXPANSION:,} nodes",
                             root.start_mark)


_LOADERS: dict[type, type] = {}


def yaml_load(text, loader: type = yaml.SafeLoader):
    """``yaml.load(text, loader)`` with the depth and alias bounds (``loader`` a SafeLoader or a subclass);
    a bound exceeded raises :class:`YAMLBoundError` (a ``yaml.YAMLError`` with a line mark)."""
    bounded = _LOADERS.get(loader)
    if bounded is None:
        bounded = _LOADERS[loader] = _bounded_loader(loader)
    return yaml.load(text, Loader=bounded)  # noqa: S506 -- a SafeLoader subclass


def tree_problem(obj, max_nodes: int | None = None) -> str | None:
    """Why ``obj`` (dicts, lists, tuples, as parsed) is refused, or None: nesting deeper than :data:`MAX_DEPTH`
    (a structure that contains itself is infinitely deep), or, with ``max_nodes``, more than that many values
    when shared parts are counted once per place (an alias bomb a parser other than :func:`yaml_load` built).
    Iterative; stops at the first bound exceeded."""
    stack = [(obj, 1)]
    visited = 0
    while stack:
        x, d = stack.pop()
        visited += 1
        if max_nodes is not None and visited > max_nodes:
            return f"more than {max_nodes:,} values when aliases are expanded"
        if isinstance(x, dict):
            items = x.values()
        elif isinstance(x, (list, tuple)):
            items = x
        else:
            continue
        if d > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels (or a value that contains itself)"
        stack.extend((v, d + 1) for v in items)
    return None


def json_loads(s):
    """``json.loads(s)`` refusing nesting deeper than :data:`MAX_DEPTH` with :class:`JSONBoundError` (a
    ``json.JSONDecodeError``), never a ``RecursionError``."""
    try:
        value = json.loads(s)
    except RecursionError:
        raise JSONBoundError(s) from None
    if isinstance(value, (list, dict)):
        opens = (s.count("[") + s.count("{")) if isinstance(s, str) else \
            (s.count(b"[") + s.count(b"{")) if isinstance(s, (bytes, bytearray)) else MAX_DEPTH + 1
        if opens > MAX_DEPTH and tree_problem(value):
            raise JSONBoundError(s)
    return value


class _TextLoader(yaml.SafeLoader):
    """A SafeLoader that reads every plain scalar as the string written (YAML 1.1's implicit ints, floats,
    booleans, nulls and dates off; merge keys ``<<`` kept): ``007`` stays "007", ``0x1F`` "0x1F", ``1:30``
    "1:30", ``yes`` "yes"."""

    yaml_implicit_resolvers = {k: [(tag, rx) for tag, rx in v if tag == "tag:yaml.org,2002:merge"]
                               for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def yaml_load_text(text):
    """:func:`yaml_load` with every plain scalar read as the text written (for word lists and templates, where
    YAML 1.1's ``007`` -> 7 or ``1:30`` -> 90 would change what a case says)."""
    return yaml_load(text, _TextLoader)
