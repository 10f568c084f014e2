"""What every colo scheduler is (:class:`Scheduler`), and the two that need no search: Unmanaged and Equal."""

from __future__ import annotations

import numpy as np

from dcgym.envs.colo.server import ColoServer
from dcgym.envs.error import InvalidConfigError

__all__ = ["Equal", "Scheduler", "Unmanaged", "equal_split"]


class Scheduler:
    """A colo scheduler: :meth:`reset` at the start of a run, :meth:`act` every ``interval_s``.

    Parameters are keyword arguments with defaults (the paper's); a subclass lists them in ``PARAMS``
    with one line each, and :func:`make_scheduler` refuses any other.
    """

    name: str = ""
    PARAMS: dict[str, str] = {"interval_s": "seconds between decisions"}
    interval_s: float = 1.0

    def __init__(self, interval_s: float | None = None) -> None:
        if interval_s is not None:
            if not (isinstance(interval_s, (int, float)) and 0 < interval_s <= 60):
                raise InvalidConfigError("interval_s", interval_s, "a decision interval in (0, 60] seconds")
            self.interval_s = float(interval_s)

    def reset(self, server: ColoServer, rng: np.random.Generator) -> None:
        """Start a run on ``server`` (at time 0, nothing allocated)."""
        self.rng = rng
        self._present: tuple[int, ...] = ()

    def act(self, server: ColoServer) -> None:
        """One decision: read ``server``, maybe change allocations."""
        raise NotImplementedError

    def arrivals(self, server: ColoServer) -> bool:
        """Whether the set of running services changed since the last call."""
        present = tuple(np.flatnonzero(server.running))
        changed = present != self._present
        self._present = present
        return changed


def equal_split(total: int, running: np.ndarray) -> np.ndarray:
    """``total`` units over the running services, as equal as can be (the first ones get the remainder)."""
    out = np.zeros(len(running), dtype=np.int64)
    idx = np.flatnonzero(running)
    if len(idx):
        out[idx] = total // len(idx)
        out[idx[: total % len(idx)]] += 1
    return out


class Unmanaged(Scheduler):
    """Every running service on every core and way: one share group, contention decides (OSML §6.2)."""

    name = "unmanaged"

    def act(self, server: ColoServer) -> None:
        if self.arrivals(server):
            server.share(np.flatnonzero(server.running).tolist())


class Equal(Scheduler):
    """An equal split of the cores and ways among the running services, redone when one arrives or leaves."""

    name = "equal"

    def act(self, server: ColoServer) -> None:
        if self.arrivals(server):
            running = server.running
            server.allocate(equal_split(server.total_cores, running), equal_split(server.total_ways, running))
