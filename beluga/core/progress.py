"""Progress bars for the commands a person waits on (``test``, ``score``, ``suite build``): tqdm on stderr
when stderr is a terminal; nothing at all otherwise (a log file, a pipe, a test's captured output)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress(total: int, desc: str, unit: str) -> Iterator[Callable[[int], None]]:
    """A tqdm bar of ``total`` ``unit``\\ s on stderr while the block runs; the block gets a function to call
    with the count done so far. Drawn only when stderr is a terminal (checked when the block starts)."""
    from tqdm import tqdm

    with tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty(),
              dynamic_ncols=True) as bar:
        def show(done: int) -> None:
            bar.update(done - bar.n)
        yield show
