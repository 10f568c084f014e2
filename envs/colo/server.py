"""The interface a colo scheduler acts through: observe the counters, set allocations, ask for steady states.

A scheduler (PARTIES, CLITE, the Oracle, OSML, a trained policy) sees one
server as OSML's controller does: per service, its counters in OSML's units
(:attr:`ColoServer.counters`, columns :data:`COUNTERS`), its QoS target, its
allocation, and what is idle; it acts by setting allocations
(:meth:`ColoServer.allocate`) or one share group (:meth:`ColoServer.share`).
Search-based schedulers may query the model's stationary latency for a
hypothetical allocation (:meth:`ColoServer.steady_state`), which the Oracle
needs and which stands for CLITE's fresh samples. The server counts the
actions taken (an allocation call that changes something).

    server = ColoServer(scenario.engine_config(mix=0, seed=1))
    server.allocate(cores=[12, 12, 12], ways=[7, 7, 6])
    server.advance(1.0)
    server.latency_ms, server.qos_ms          # the Latency counter (window p99) and targets
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dcgym.cpp_core import ColoSim

__all__ = ["COUNTERS", "PENDING", "RUNNING", "WARMING", "ENDED", "ColoServer"]

COUNTERS: tuple[str, ...] = tuple(ColoSim.counter_names)
"""The counter columns, in order (docs/colo.md, Counters)."""

PENDING, WARMING, RUNNING, ENDED = 0, 1, 2, 3
"""A service's phase: not launched yet, warming up after launch, running, ended."""

_COL = {name: k for k, name in enumerate(COUNTERS)}


class ColoServer:
    """One server of the colo model under a scheduler: a :class:`ColoSim` with a scheduler's view of it."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.sim = ColoSim(config)
        self.config = config
        platform = config["platform"]
        self.total_cores = int(platform["logical_cores"])
        self.total_ways = int(platform["ways"])
        self.freq_range_mhz = (float(platform["freq_min_mhz"]), float(platform["freq_max_mhz"]))
        self.mba_available = bool(platform["mba"])
        self.names: list[str] = list(self.sim.service_names)
        self.qos_ms = np.asarray(self.sim.qos_ms, dtype=np.float64)
        self._counters = self.sim.counters
        self.actions = 0
        self.core_actions = 0
        self.way_actions = 0

    # ------------------------------------------------------------------ time

    def reset(self, seed: int | None = None) -> None:
        """Back to time 0 (every stream from ``seed``, default the config's); the action counts restart."""
        self.sim.reset(seed)
        self.actions = self.core_actions = self.way_actions = 0

    def advance(self, seconds: float) -> None:
        """Run ``seconds`` of simulated time (a whole number of ticks)."""
        self.sim.step(self.ticks(seconds))

    def ticks(self, seconds: float) -> int:
        """``seconds`` in ticks (rounded; at least 1 for a positive time)."""
        n = round(seconds / self.sim.dt_s)
        return max(n, 1) if seconds > 0 else 0

    @property
    def now_s(self) -> float:
        return float(self.sim.now_s)

    @property
    def dt_s(self) -> float:
        return float(self.sim.dt_s)

    # ------------------------------------------------------------------ what a scheduler sees

    @property
    def num_services(self) -> int:
        return len(self.names)

    @property
    def counters(self) -> np.ndarray:
        """(num_services, len(COUNTERS)) read-only view of the last tick's counters (updated in place)."""
        return self._counters

    def counter(self, name: str) -> np.ndarray:
        """One counter column, per service (a copy)."""
        return self._counters[:, _COL[name]].copy()

    @property
    def latency_ms(self) -> np.ndarray:
        """The Latency counter: each service's p99 over the last latency window with sampling error, ms."""
        return self._counters[:, _COL["Latency"]].copy()

    @property
    def rps(self) -> np.ndarray:
        """Each service's offered load, requests/s (the RPS counter)."""
        return self._counters[:, _COL["RPS"]].copy()

    @property
    def phases(self) -> np.ndarray:
        """Each service's phase (PENDING, WARMING, RUNNING, ENDED)."""
        return np.asarray(self.sim.phases)

    @property
    def running(self) -> np.ndarray:
        """Each service launched and not ended (warming up or running): the ones a scheduler manages."""
        phases = self.sim.phases
        return (phases == WARMING) | (phases == RUNNING)

    @property
    def cores(self) -> np.ndarray:
        """Private logical cores per service."""
        return np.asarray(self.sim.cores, dtype=np.int64)

    @property
    def ways(self) -> np.ndarray:
        """Private LLC ways per service."""
        return np.asarray(self.sim.ways, dtype=np.int64)

    @property
    def freq_mhz(self) -> np.ndarray:
        return np.asarray(self.sim.freq_mhz, dtype=np.float64)

    @property
    def idle_cores(self) -> int:
        return int(self.sim.idle_cores)

    @property
    def idle_ways(self) -> int:
        return int(self.sim.idle_ways)

    @property
    def shared(self) -> bool:
        """Whether a share group holds resources (the Unmanaged scheduler's state)."""
        return any(g is not None for g in self.sim.groups)

    def used(self) -> tuple[int, int]:
        """(cores, ways) held by services, privately or in share groups."""
        return self.total_cores - self.idle_cores, self.total_ways - self.idle_ways

    # ------------------------------------------------------------------ what a scheduler does

    def allocate(
        self,
        cores: Sequence[int] | np.ndarray,
        ways: Sequence[int] | np.ndarray,
        freq_mhz: Sequence[float] | np.ndarray | None = None,
        mba: Sequence[float] | np.ndarray | None = None,
        keep_groups: bool = False,
    ) -> bool:
        """Set every service's private cores and ways (and frequency, and MBA share of the peak bandwidth where the
        platform has MBA); services not running get none.

        Dissolves any share group first, unless ``keep_groups`` (OSML's Algorithm 4 keeps its groups while it
        resizes private partitions). Raises ValueError (changing nothing) when the platform's cores or
        ways would be exceeded. Returns whether anything changed (one action, counted).
        """
        cores = np.where(self.running, np.asarray(cores, dtype=np.int64), 0)
        ways = np.where(self.running, np.asarray(ways, dtype=np.int64), 0)
        freq = None if freq_mhz is None else np.asarray(freq_mhz, dtype=np.float64)
        share = None if mba is None else np.asarray(mba, dtype=np.float64)
        dc = not np.array_equal(cores, self.cores)
        dw = not np.array_equal(ways, self.ways)
        df = freq is not None and not np.array_equal(freq, self.freq_mhz)
        dm = share is not None and not np.array_equal(share, np.asarray(self.sim.mba))
        was_shared = self.shared and not keep_groups
        if not (dc or dw or df or dm or was_shared):
            return False
        if was_shared:
            self.unshare()
        self.sim.set_allocations(cores, ways, share, freq)
        self.actions += 1
        self.core_actions += dc
        self.way_actions += dw
        return True

    def share(self, members: Sequence[int]) -> bool:
        """One share group of every core and way for ``members`` (no private partitions): Unmanaged."""
        members = [int(i) for i in members]
        groups = self.sim.groups
        if groups[0] is not None and groups[0]["members"] == members and not self.cores.any():
            return False
        self.sim.set_allocations(np.zeros(self.num_services, np.int64), np.zeros(self.num_services, np.int64))
        self.sim.set_group(0, [], 0, 0)
        if members:
            self.sim.set_group(0, members, self.total_cores, self.total_ways)
        self.actions += 1
        return True

    def set_group(self, group: int, members: Sequence[int], cores: int, ways: int) -> bool:
        """Share group ``group``: ``cores`` and ``ways`` from the idle pool used by ``members`` on top of their
        private partitions (OSML's Algorithm 4); ``members=[]`` dissolves it. One action, counted."""
        self.sim.set_group(int(group), [int(i) for i in members], int(cores), int(ways))
        self.actions += 1
        return True

    def unshare(self) -> None:
        """Dissolve every share group."""
        for g, group in enumerate(self.sim.groups):
            if group is not None:
                self.sim.set_group(g, [], 0, 0)

    def steady_state(self, cores: np.ndarray, ways: np.ndarray, rps: np.ndarray | None = None) -> np.ndarray:
        """Stationary latency quantile (ms) for K allocations (cores, ways: (K, num_services)) at loads ``rps``
        (default: the current offered loads; <= 0 for absent services, which give NaN). No noise, no backlog."""
        rps = self.rps if rps is None else np.asarray(rps, dtype=np.float64)
        return 1e3 * self.sim.steady_state_batch(
            np.asarray(cores, dtype=np.float64), np.asarray(ways, dtype=np.float64), rps
        )
