"""Where a job's time goes: process start (from the kernel), named parts
(training, prediction, scoring), so a run's records separate the science from
the fixed per-process cost (interpreter start, imports, model load, writes)."""

from __future__ import annotations

import contextlib
import os
import time

_IMPORTED_AT = time.time()


def process_start_time() -> float:
    """Wall-clock time (epoch seconds) at which this process started: from
    /proc (Linux, 10 ms resolution); elsewhere the time this module was
    imported (an underestimate of the start-up cost)."""
    try:
        with open("/proc/self/stat") as fh:
            stat = fh.read()
        start_ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        with open("/proc/stat") as fh:
            btime = next(int(line.split()[1]) for line in fh if line.startswith("btime "))
        return btime + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return _IMPORTED_AT


class Clock:
    """Named wall-clock parts: ``with clock("train"): ...``; ``parts`` in
    seconds (a part timed twice adds up); ``mark(name)`` records the seconds
    since the process started (e.g. when the first training step begins)."""

    def __init__(self):
        self.parts: dict[str, float] = {}
        self.marks: dict[str, float] = {}
        self.start = process_start_time()

    @contextlib.contextmanager
    def __call__(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.parts[name] = self.parts.get(name, 0.0) + time.perf_counter() - t

    def split(self, part: str, into: str, seconds: float) -> None:
        """Move ``seconds`` of ``part`` into a part of its own (e.g. the
        checkpoint writes inside the training loop)."""
        self.parts[part] = self.parts.get(part, 0.0) - seconds
        self.parts[into] = self.parts.get(into, 0.0) + seconds

    def mark(self, name: str) -> None:
        self.marks[name] = time.time() - self.start

    def record(self) -> dict:
        return {**{f"{k}_s": round(v, 3) for k, v in self.parts.items()},
                **{f"{k}_at_s": round(v, 3) for k, v in self.marks.items()}}
