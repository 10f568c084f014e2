"""Running evaluation jobs: serially in this process or as Ray tasks, with identical results either way.

A job is plain data with a ``run()`` method returning ``{"result": row,
"histogram": ..., "timeline": ...}``. Results come back in job order. An
error raised inside a Ray worker reaches the caller as the worker's own
exception (an InvalidConfigError stays one), never as Ray's multi-line
traceback. Progress goes to standard error (:class:`dcgym.agents.progress.Progress`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from dcgym.agents import ray_session
from dcgym.agents.progress import Progress
from dcgym.envs.error import DcgymError

__all__ = ["RunsInterrupted", "cores", "resolved_workers", "run_all", "run_job"]

log = logging.getLogger(__name__)


class RunsInterrupted(KeyboardInterrupt):
    """Ctrl-C during an evaluation: how many of its runs had finished (the caller says what becomes of them)."""

    def __init__(self, finished: int, total: int) -> None:
        super().__init__(f"{finished} of {total} runs finished")
        self.finished, self.total = finished, total


def run_job(job: Any) -> dict[str, Any]:
    """Run one job (in whichever process holds it)."""
    return job.run()


def cores() -> int:
    """CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolved_workers(workers: int | None, runs: int, address: str | None) -> int:
    """``workers`` as :func:`run_all` takes it: None is 0 (serial) for a single run here, else every core."""
    if workers is None:
        return 0 if runs == 1 and address is None else cores()
    return workers


def run_all(jobs: Sequence[Any], workers: int | None, address: str | None, progress: bool, name: str) -> list[dict]:
    """Run ``jobs``: serially when ``workers`` is 0 (or None with a single job and no address), else on Ray."""
    workers = resolved_workers(workers, len(jobs), address)
    bar = Progress(len(jobs), name, progress)
    try:
        if workers == 0 and address is None:
            outputs = []
            for job in jobs:
                outputs.append(run_job(job))
                bar.update()
            return outputs
        return _run_on_ray(jobs, workers, address, bar)
    except KeyboardInterrupt:
        raise RunsInterrupted(bar.done, len(jobs)) from None
    finally:
        bar.close()


def _run_on_ray(jobs: Sequence[Any], workers: int, address: str | None, bar: Progress) -> list[dict]:
    """Run the jobs as Ray tasks, one CPU each; results come back in job order."""
    import ray

    started = not ray.is_initialized()
    if started:
        if address is None:  # seconds of silence otherwise (a cluster's address is checked first, quickly)
            log.info(
                "starting a local Ray of %d CPUs for %d runs (--workers 0: one after another here, without Ray)",
                *(workers or cores(), len(jobs)),
            )
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
