"""Running evaluation jobs: serially in this process or as Ray tasks, with identical results either way.

A job is plain data with a ``run()`` method returning ``{"result": row,
"histogram": ..., "timeline": ...}``. Results come back in job order. An
error raised inside a Ray worker reaches the caller as the worker's own
exception (an InvalidConfigError stays one), never as Ray's multi-line
traceback. Progress goes to standard error: a bar on a terminal, a plain
line every tenth of the runs otherwise (a log file gets no carriage returns).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm

from dcgym.agents import ray_session
from dcgym.envs.error import DcgymError

__all__ = ["Progress", "cores", "run_all", "run_job"]

log = logging.getLogger(__name__)


def run_job(job: Any) -> dict[str, Any]:
    """Run one job (in whichever process holds it)."""
    return job.run()


def cores() -> int:
    """CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Progress:
    """Runs done out of ``total``: a tqdm bar on a terminal, plain lines (at most ten, and the last) otherwise."""

    def __init__(self, total: int, name: str, enabled: bool = True, unit: str = "run") -> None:
        self.total, self.name, self.unit, self.done = total, name, unit, 0
        self._start = time.perf_counter()
        self._bar = None
        self._next_line = 0
        self._enabled = enabled and total > 0
        if self._enabled and sys.stderr.isatty():
            self._bar = tqdm(total=total, desc=name, unit=unit)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._enabled and (self.done >= self._next_line or self.done == self.total):
            elapsed = time.perf_counter() - self._start
            print(f"{self.name}: {self.done}/{self.total} {self.unit}s ({elapsed:.0f} s)", file=sys.stderr, flush=True)
            self._next_line = self.done + max(1, self.total // 10)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_all(jobs: Sequence[Any], workers: int | None, address: str | None, progress: bool, name: str) -> list[dict]:
    """Run ``jobs``: serially when ``workers`` is 0 (or None with a single job and no address), else on Ray."""
    if workers is None:
        workers = 0 if len(jobs) == 1 and address is None else cores()
    bar = Progress(len(jobs), name, progress)
    try:
        if workers == 0 and address is None:
            outputs = []
            for job in jobs:
                outputs.append(run_job(job))
                bar.update()
            return outputs
        return _run_on_ray(jobs, workers, address, bar)
    finally:
        bar.close()


def _run_on_ray(jobs: Sequence[Any], workers: int, address: str | None, bar: Progress) -> list[dict]:
    """Run the jobs as Ray tasks, one CPU each; results come back in job order."""
    import ray

    started = not ray.is_initialized()
    if started:
        ray_session.init(workers or cores(), address)
    try:
        remote = ray.remote(num_cpus=1)(run_job)
        refs = [remote.remote(job) for job in jobs]
        position = {ref: k for k, ref in enumerate(refs)}
        outputs: list[dict | None] = [None] * len(jobs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                outputs[position[ref]] = _get(ray, ref)
                bar.update()
        return outputs  # type: ignore[return-value]
    finally:
        if started:
            ray.shutdown()


def _get(ray: Any, ref: Any) -> dict:
    """``ray.get(ref)``; a worker's exception re-raised as itself, or as one line."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, (DcgymError, ValueError, OSError)):
            raise cause from None
        lines = [line for line in str(cause or exc).splitlines() if line.strip()]
        raise RuntimeError("an evaluation run failed in a Ray worker: " + (lines[-1] if lines else "?")) from None
