"""PARTIES (Chen, Delimitrou, Martínez, ASPLOS'19): QoS-aware partitioning, one unit of one resource at a time.

Algorithm 1 of the paper, on the colo model's resources (logical cores, LLC
ways, 100 MHz of core frequency): start from an equal split at nominal
frequency; at every decision compute each service's slack (target - p99) /
target; if the smallest slack is below ``up_slack`` (0.05), *upsize* that
service, else if the largest is above ``down_slack`` (0.20), *downsize* that
one. An upsize takes one unit of the resource its *wheel* points at (idle
units first, else from the service with the most slack); after the wait, if
its latency did not fall, its wheel advances (no revert). A downsize returns
one unit to the idle pool; if the service's slack then falls below
``up_slack`` the unit comes back, its wheel advances and downsizing it is
disabled for ``cooldown_s``. A resource that cannot move (no unit to take,
one core left, frequency at its bound) advances the wheel at once.

Variants (``variant``):

| | ``paper`` (default) | ``code`` (sc2682cornell/PARTIES ``manager/PARTIES.py``) |
|---|---|---|
| decision interval | 0.5 s | 0.1 s |
| judging an action | the next decision (500 ms later) | 5 samples (TOLERANCE): improvements minus non-improvements <= 0 advances |
| downsize cooldown | 30 s | 10 s (REST = 100 intervals) |
| first resource of a wheel | drawn at random | core, then cache, then frequency |
| start frequency | the platform's maximum (nominal) | 2200 MHz (within the platform's range) |

Not modelled: migration after a minute without QoS (one server here),
memory capacity, disk and network (the colo model has none), best-effort
jobs (none here: victims are the other latency-critical services).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dcgym.agents.heuristics.colo.base import Scheduler, equal_split
from dcgym.envs.colo.server import ColoServer
from dcgym.envs.error import InvalidConfigError

__all__ = ["RESOURCES", "VARIANTS", "Parties"]

RESOURCES = ("core", "cache", "freq")
"""The compute wheel of PARTIES §4.2 (memory capacity and disk, its storage wheel, are not modelled)."""

FREQ_STEP_MHZ = 100.0
"""PARTIES' frequency unit."""

VARIANTS = {
    "paper": {"interval_s": 0.5, "judge_samples": 1, "cooldown_s": 30.0, "random_wheel": True, "start_mhz": None},
    "code": {"interval_s": 0.1, "judge_samples": 5, "cooldown_s": 10.0, "random_wheel": False, "start_mhz": 2200.0},
}
"""The settings of each variant (module docstring)."""


@dataclass
class _Pending:
    """An action waiting to be judged."""

    service: int
    up: bool
    resource: str
    before_ms: float
    victim: int | None = None  # where an upsize's unit came from (None: the idle pool or the frequency)
    samples: list[float] = field(default_factory=list)


class Parties(Scheduler):
    """PARTIES' controller (module docstring)."""

    name = "parties"
    PARAMS = {
        "variant": "paper (default) or code: the settings of the module docstring's table",
        "interval_s": "seconds between decisions (paper 0.5, code 0.1)",
        "up_slack": "upsize the service with the least slack when it is below this (0.05)",
        "down_slack": "downsize the service with the most slack when it is above this (0.20)",
        "cooldown_s": "downsizing a service is disabled this long after a reverted downsize (paper 30, code 10)",
        "judge_samples": "decisions an action is judged over (paper 1, code 5)",
        "frequency": "true (default): frequency is on the wheel; false: cores and ways only",
    }

    def __init__(
        self,
        variant: str = "paper",
        interval_s: float | None = None,
        up_slack: float = 0.05,
        down_slack: float = 0.20,
        cooldown_s: float | None = None,
        judge_samples: int | None = None,
        frequency: bool = True,
    ) -> None:
        if variant not in VARIANTS:
            raise InvalidConfigError("variant", variant, "one of " + ", ".join(VARIANTS))
        settings = VARIANTS[variant]
        super().__init__(settings["interval_s"] if interval_s is None else interval_s)
        if not (isinstance(up_slack, (int, float)) and isinstance(down_slack, (int, float)) and up_slack < down_slack):
            raise InvalidConfigError("down_slack", down_slack, f"a slack > up_slack ({up_slack})")
        self.variant = variant
        self.up_slack, self.down_slack = float(up_slack), float(down_slack)
        self.cooldown_s = float(settings["cooldown_s"] if cooldown_s is None else cooldown_s)
        self.judge_samples = int(settings["judge_samples"] if judge_samples is None else judge_samples)
        if self.judge_samples < 1:
            raise InvalidConfigError("judge_samples", judge_samples, "an integer >= 1")
        self.random_wheel = bool(settings["random_wheel"])
        self.start_mhz = settings["start_mhz"]
        self.resources = RESOURCES if frequency else RESOURCES[:2]

    def reset(self, server: ColoServer, rng: np.random.Generator) -> None:
        super().reset(server, rng)
        n = server.num_services
        self.up_wheel = np.zeros(n, dtype=np.int64)
        self.down_wheel = np.zeros(n, dtype=np.int64)
        self.cooldown_until = np.zeros(n)
        self.pending: _Pending | None = None
        low, high = server.freq_range_mhz
        self.freq = np.full(n, high if self.start_mhz is None else min(max(self.start_mhz, low), high))

    # ------------------------------------------------------------------ the loop

    def act(self, server: ColoServer) -> None:
        if self.arrivals(server):
            self._start(server)
            return
        running = np.flatnonzero(server.running)
        if not len(running):
            return
        latency = server.latency_ms
        slack = (server.qos_ms - latency) / server.qos_ms
        if self.pending is not None:
            self._judge(server, latency, slack)
            if self.pending is not None:
                return
        order = running[np.argsort(slack[running], kind="stable")]
        smallest = order[0]
        if slack[smallest] < self.up_slack:
            self._upsize(server, smallest, slack, latency)
            return
        for largest in order[::-1]:
            if slack[largest] <= self.down_slack:
                break
            if server.now_s >= self.cooldown_until[largest] and self._downsize(server, largest, latency):
                return

    def _start(self, server: ColoServer) -> None:
        """An equal split of cores and ways at the start frequency; every wheel anew (a service came or went)."""
        running = server.running
        for i in np.flatnonzero(running):
            first = int(self.rng.integers(len(self.resources))) if self.random_wheel else 0
            self.up_wheel[i] = self.down_wheel[i] = first
            self.cooldown_until[i] = 0.0
        low, high = server.freq_range_mhz
        start = high if self.start_mhz is None else min(max(self.start_mhz, low), high)
        self.freq = np.where(running, start, self.freq)
        self.pending = None
        server.allocate(
            equal_split(server.total_cores, running), equal_split(server.total_ways, running), self.freq.copy()
        )

    def _judge(self, server: ColoServer, latency: np.ndarray, slack: np.ndarray) -> None:
        p = self.pending
        i = p.service
        if not server.running[i]:
            self.pending = None
            return
        p.samples.append(float(latency[i]))
        if p.up:
            if len(p.samples) < self.judge_samples:
                return
            score = sum(1 if x < p.before_ms else -1 for x in p.samples)
            if score <= 0:  # the latency did not fall: next resource, no revert (Alg. 1)
                self.up_wheel[i] = (self.up_wheel[i] + 1) % len(self.resources)
            self.pending = None
            return
        if slack[i] < self.up_slack:  # the downsize hurt: undo it, next resource, and rest
            self._move(server, i, p.resource, +1, None)
            self.down_wheel[i] = (self.down_wheel[i] + 1) % len(self.resources)
            self.cooldown_until[i] = server.now_s + self.cooldown_s
            self.pending = None
        elif len(p.samples) >= self.judge_samples:
            self.pending = None

    # ------------------------------------------------------------------ actions

    def _upsize(self, server: ColoServer, i: int, slack: np.ndarray, latency: np.ndarray) -> None:
        for _ in range(len(self.resources)):
            resource = self.resources[self.up_wheel[i]]
            victim = self._victim(server, i, resource, slack)
            if self._move(server, i, resource, +1, victim):
                self.pending = _Pending(i, True, resource, float(latency[i]), victim)
                return
            self.up_wheel[i] = (self.up_wheel[i] + 1) % len(self.resources)

    def _downsize(self, server: ColoServer, i: int, latency: np.ndarray) -> bool:
        for _ in range(len(self.resources)):
            resource = self.resources[self.down_wheel[i]]
            if self._move(server, i, resource, -1, None):
                self.pending = _Pending(i, False, resource, float(latency[i]))
                return True
            self.down_wheel[i] = (self.down_wheel[i] + 1) % len(self.resources)
        return False

    def _victim(self, server: ColoServer, i: int, resource: str, slack: np.ndarray) -> int | None:
        """Where an upsize's unit comes from: None for the idle pool or frequency, else the service with the most
        slack that can spare one (-1 if none can)."""
        if resource == "freq":
            return None
        if (server.idle_cores if resource == "core" else server.idle_ways) > 0:
            return None
        held = server.cores if resource == "core" else server.ways
        donors = [j for j in np.flatnonzero(server.running) if j != i and held[j] > 1]
        return max(donors, key=lambda j: slack[j]) if donors else -1

    def _move(self, server: ColoServer, i: int, resource: str, sign: int, victim: int | None) -> bool:
        """One unit of ``resource`` to (+1) or from (-1) service ``i``; False if it cannot move."""
        cores, ways = server.cores, server.ways
        if resource == "freq":
            low, high = server.freq_range_mhz
            target = self.freq[i] + sign * FREQ_STEP_MHZ
            if not low <= target <= high:
                return False
            self.freq[i] = target
            return server.allocate(cores, ways, self.freq.copy())
        held = cores if resource == "core" else ways
        idle = server.idle_cores if resource == "core" else server.idle_ways
        if sign < 0:
            if held[i] <= 1:
                return False
            held[i] -= 1
        else:
            if victim == -1 or (victim is None and idle == 0):
                return False
            if victim is not None:
                held[victim] -= 1
            held[i] += 1
        return server.allocate(cores, ways, self.freq.copy())
