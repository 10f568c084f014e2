"""Progress of a long job on standard error: a tqdm bar on a terminal, plain lines in a log.

Without a terminal (a CI log, ``make demo > log``), a bar's carriage-return updates would pile up as thousands of
partial lines; there :class:`Progress` prints one plain line per tenth of the work (and at the end) instead, or,
with no known total (a budget of wall time), one every :data:`LINE_EVERY_S` seconds.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

__all__ = ["DRAIN_FACTOR", "LINE_EVERY_S", "PIECE", "Progress", "drain", "run_in_pieces", "run_until_in_pieces"]

PIECE = 50_000
"""Arrivals the engine simulates per call in a long run: it returns to Python this often (well under a second), so
Ctrl-C stops a run of any length promptly (signals are handled only between calls)."""

LINE_EVERY_S = 30.0
"""Seconds between plain lines when the total is unknown."""


class Progress:
    """``done`` out of ``total`` units: a tqdm bar on a terminal, at most eleven plain lines otherwise."""

    def __init__(self, total: int | None, name: str, enabled: bool = True, unit: str = "run", initial: int = 0) -> None:
        self.total, self.name, self.unit, self.done = total, name, unit, initial
        self.postfix = ""
        self._start = time.perf_counter()
        self._bar = None
        self._enabled = enabled and total != 0
        self._next_line = initial
        self._next_time = LINE_EVERY_S
        if self._enabled and sys.stderr.isatty():
            self._bar = tqdm(total=total, initial=initial, desc=name, unit=unit, dynamic_ncols=True)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        if not self._enabled:
            return
        elapsed = time.perf_counter() - self._start
        if self.total is None:
            if elapsed >= self._next_time:
                self._line(elapsed)
                self._next_time = elapsed + LINE_EVERY_S
        elif self.done >= self._next_line or self.done >= self.total:
            self._line(elapsed)
            self._next_line = self.done + max(1, self.total // 10)

    def _line(self, elapsed: float) -> None:
        of = "" if self.total is None else f"/{self.total}"
        postfix = f"  {self.postfix}" if self.postfix else ""
        print(f"{self.name}: {self.done}{of} {self.unit}s ({elapsed:.0f} s){postfix}", file=sys.stderr, flush=True)

    def set_postfix(self, text: str) -> None:
        """Text shown after the count (the bar's postfix, or the end of the next plain line)."""
        self.postfix = text
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_in_pieces(advance: Callable[[int], Any], n: int) -> None:
    """``advance(n)`` (an engine's ``run_tasks``/``run_flows``: until n more arrivals) as calls of at most
    :data:`PIECE` arrivals; the engine stops right after the n-th arrival either way, so the run is the same."""
    while n > 0:
        piece = min(n, PIECE)
        advance(piece)
        n -= piece


def run_until_in_pieces(run_until: Callable[[float], Any], start: float, end: float, per_arrival: float) -> None:
    """``run_until(end)`` (an engine's run to a simulated time) as calls each spanning about :data:`PIECE`
    arrivals (``per_arrival``: the mean time between them); the engine handles every event up to each bound, so
    the run is the same."""
    span = max(PIECE * per_arrival, 1e-9)
    k = 1
    while start + k * span < end:
        run_until(start + k * span)
        k += 1
    run_until(end)


DRAIN_FACTOR = 4.0
"""A drained run (:func:`drain`) waits for its measured work at most this many times the arrivals' time."""


def drain(now: Callable[[], float], run_until: Callable[[float], None], pending: Callable[[], int]) -> int:
    """Advance a run whose measured arrivals have all arrived until none of them is pending, or for
    :data:`DRAIN_FACTOR` times the time they took to arrive; returns how many are still pending (none: the run's
    statistics cover exactly its measured set, so no bound computed from that set can be beaten)."""
    arrivals = now()
    deadline = arrivals * (1 + DRAIN_FACTOR)
    chunk = max(arrivals / 20, 1e-9)
    while pending() > 0 and now() < deadline:
        run_until(min(now() + chunk, deadline))
    return pending()
