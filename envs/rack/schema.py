"""The parts of a rack scenario: nodes, task types, arrivals, entry point, load information, migration and dynamics.

Each model is one mapping of a scenario file (:mod:`dcgym.envs.rack.scenario`
assembles them into :class:`~dcgym.envs.rack.scenario.RackScenario`). Defaults
live here and nowhere else; the engine receives every field filled in. Checks
that need the whole rack (a split with one weight per node, node ids in
range) are the functions at the end, which the scenario calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from dcgym.cpp_core import RackSim
from dcgym.envs.distributions import Service
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.schema import Load
from dcgym.envs.schema import Schema as _Schema

LIMITS = RackSim.limits
"""The engine's bounds of a rack config (rack/config.hpp), which the fields below take as theirs."""

TimeUs = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
NodeId = Annotated[int, Field(ge=0, lt=LIMITS["nodes"])]


def _some_weight(weights: list[float]) -> list[float]:
    if weights and not sum(weights) > 0:
        raise InvalidConfigError("", weights, "non-negative weights, not all 0")
    return weights


# ----------------------------------------------------------------- nodes, arrivals, disciplines


class NodeGroup(_Schema):
    """A group of identical nodes (servers); node ids run through the groups in order, from 0."""

    count: int = Field(ge=1, le=LIMITS["nodes"], description="number of nodes in the group")
    workers: int = Field(ge=1, le=LIMITS["workers"], description="worker threads (cores) per node")
    speed: float = Field(
        1.0, gt=0, allow_inf_nan=False, description="work per microsecond per worker: 2 serves a task in half its time"
    )
    queue_capacity: int | None = Field(
        None,
        ge=0,
        description="tasks a node holds beyond its busy workers; a task arriving at a full node is dropped "
        "(Malcolm §7.1: workers x 32, x 128 for HyperExp); null = unbounded",
    )


class Poisson(_Schema):
    """Open-loop Poisson arrivals at rate load x capacity / mean service time (Malcolm §7.1, RackSched §4.1)."""

    process: Literal["poisson"] = Field("poisson", description="the arrival process")


class TaskType(_Schema):
    """A task type with its own service time, SLO, priority and servers (RackSched §3.6).

    Each arrival draws its type by ``share``. A type is a task class: results
    report latency per type. ``nodes`` restricts where it may run (locality:
    only some servers hold its data, RackSched App. B Fig. 18).
    """

    name: str = Field(description="the type's name in results: letters, digits, _ and -")
    share: float = Field(
        gt=0, allow_inf_nan=False, description="relative frequency among arrivals (shares need not sum to 1)"
    )
    service: Service = Field(description="the type's service-time distribution (work at speed 1, in us)")
    slo_us: float = Field(
        gt=0,
        allow_inf_nan=False,
        description="latency objective; queueing per_type serves the head that waited "
        "longest relative to it (Shinjuku's policy, RackSched §3.6)",
    )
    priority: int = Field(0, ge=-(2**31), lt=2**31, description="queueing priority: lower is served first")
    nodes: Annotated[list[NodeId], Field(min_length=1)] | None = Field(
        None,
        description="node ids the type may run on, 0-based through the groups in order (locality, RackSched "
        "§3.6); null = every node",
    )

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
            raise InvalidConfigError("", name, "a name of 1 to 64 letters, digits, _ and -")
        return name


Queueing = Literal["fifo", "per_type", "priority"]
_QUEUEING = (
    "how a node orders its waiting tasks: one FIFO queue; a queue per task type, the head that waited longest "
    "relative to its type's slo_us first (Shinjuku, RackSched §3.6); or a queue per type in strict priority, lower "
    "first (RackSched App. B Fig. 19); per_type and priority need at least two types"
)


class Fcfs(_Schema):
    """One queue per node served first-come first-served by its workers (cFCFS; Malcolm §3.1)."""

    discipline: Literal["fcfs"] = Field(description="the intra-node discipline")
    queueing: Queueing = Field("fifo", description=_QUEUEING)


class ProcessorSharing(_Schema):
    """Workers share their time among the node's tasks (PS; Malcolm §3.1, Shinjuku in RackSched §3.1)."""

    discipline: Literal["ps"] = Field(description="the intra-node discipline")
    quantum_us: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="time slice; 0 = ideal egalitarian sharing (RackSched Fig. 2: 25)"
    )
    switch_cost_us: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="worker time lost per preemption; needs quantum_us > 0"
    )
    queueing: Queueing = Field("fifo", description=_QUEUEING + "; needs quantum_us > 0")

    @model_validator(mode="after")
    def _cost_needs_quantum(self) -> ProcessorSharing:
        if self.switch_cost_us > 0 and self.quantum_us == 0:
            raise InvalidConfigError("switch_cost_us", self.switch_cost_us, "0 when quantum_us is 0 (ideal PS)")
        if self.queueing != "fifo" and self.quantum_us == 0:
            raise InvalidConfigError(
                "queueing",
                self.queueing,
                "fifo when quantum_us is 0 (ideal PS serves every task at once: there is no queue to order)",
            )
        return self


Arrivals = Annotated[Poisson, Field(discriminator="process")]
IntraNode = Annotated[Fcfs | ProcessorSharing, Field(discriminator="discipline")]


# ----------------------------------------------------------------------------- entry point


class SwitchEntry(_Schema):
    """Every task passes one central dispatcher: the ToR switch of RackSched (§3.1)."""

    kind: Literal["switch"] = Field(description="where tasks enter the rack")


class BalancersEntry(_Schema):
    """Several dispatchers, each with its share of the traffic and its own view of the loads.

    The load balancers of the multi-LB paper (App. C.1), or RackSched's
    client-based baseline where every client dispatches its own requests
    (§2 "Why not a distributed, client-based solution?", §4.5 Fig. 14).
    """

    kind: Literal["balancers"] = Field(description="where tasks enter the rack")
    count: int = Field(
        ge=1, le=LIMITS["balancers"], description="number of dispatchers (RackSched §4.5: 10, 100 or 1000 clients)"
    )
    split: list[Weight] = Field(
        [], description="traffic weight of each dispatcher, one per dispatcher; [] = equal shares (multi-LB App. C.1)"
    )

    @field_validator("split")
    @classmethod
    def _weights(cls, split: list[float]) -> list[float]:
        return _some_weight(split)

    @model_validator(mode="after")
    def _one_weight_per_balancer(self) -> BalancersEntry:
        if self.split and len(self.split) != self.count:
            raise InvalidConfigError("split", self.split, f"[] or one weight per dispatcher ({self.count} weights)")
        return self


class NodesEntry(_Schema):
    """Tasks arrive at a node, whose load manager accepts or migrates them (Malcolm §3.2).

    Malcolm's clients send each task to a load manager chosen uniformly at
    random (§7.1 "Load generation"); ``split`` skews that choice (Fig. 11a).
    """

    kind: Literal["nodes"] = Field(description="where tasks enter the rack")
    split: list[Weight] = Field([], description="arrival weight of each node, one per node; [] = uniform (§7.1)")

    @field_validator("split")
    @classmethod
    def _weights(cls, split: list[float]) -> list[float]:
        return _some_weight(split)


Entry = Annotated[SwitchEntry | BalancersEntry | NodesEntry, Field(discriminator="kind")]


# ---------------------------------------------------------------------- load information


class FreshLoadInfo(_Schema):
    """Dispatchers read every node's current load: the ideal, no staleness."""

    model: Literal["fresh"] = Field("fresh", description="how stale the loads a dispatcher reads are")


class PeriodicLoadInfo(_Schema):
    """Nodes broadcast their loads every period; each knows its own (Malcolm §7.1 "Load-propagation period")."""

    model: Literal["periodic"] = Field(description="how stale the loads a dispatcher reads are")
    period_us: float = Field(
        100.0, gt=0, allow_inf_nan=False, description="broadcast period (Malcolm §7.1: 100, the heartbeat interval)"
    )
    delay_us: TimeUs = Field(
        0.0, description="network delay before a broadcast reaches the other nodes (Malcolm §3: kernel-bypass network)"
    )
    local_increment: bool = Field(
        False,
        description="between broadcasts, add each task sent to a node to its believed load "
        "(Malcolm §7.1: 'node A updates its estimation of node B's queue length to L + 1')",
    )


class _ReplyLoadInfo(_Schema):
    """Loads learnt from the replies to a dispatcher's tasks: the fields both reply models share."""

    model: str = Field(description="how stale the loads a dispatcher reads are")
    delay_us: TimeUs = Field(
        0.0,
        description="delay from a task's completion to its reply reaching the dispatcher (RackSched §3.5: "
        "the feedback loop delay)",
    )
    local_increment: bool = Field(
        False, description="count each task sent into the believed load until the next reply (Malcolm §7.1's rule)"
    )


class PiggybackLoadInfo(_ReplyLoadInfo):
    """A node's load rides on each reply to the task's dispatcher (RackSched §3.5, INT1; INT3 with metric work)."""

    model: Literal["piggyback"] = Field(description="how stale the loads a dispatcher reads are")


class MinOnlyLoadInfo(_ReplyLoadInfo):
    """The dispatcher keeps only the least loaded node, updated by replies (RackSched §3.5, INT2: it herds)."""

    model: Literal["min_only"] = Field(description="how stale the loads a dispatcher reads are")


class ProactiveLoadInfo(_Schema):
    """The dispatcher counts the tasks it sent minus the replies it got back (RackSched §3.5 "Proactive")."""

    model: Literal["proactive"] = Field(description="how stale the loads a dispatcher reads are")
    delay_us: TimeUs = Field(
        0.0, description="delay from a task's completion to its reply reaching the dispatcher (RackSched §3.5)"
    )


LoadInfo = Annotated[
    FreshLoadInfo | PeriodicLoadInfo | PiggybackLoadInfo | MinOnlyLoadInfo | ProactiveLoadInfo,
    Field(discriminator="model"),
]


# ------------------------------------------------------------------------------ migration


class Migration(_Schema):
    """Malcolm's node mechanics (§3.2), used with entry nodes: moving tasks between nodes and stealing them."""

    delay_us: TimeUs = Field(
        0.0, description="one-way network delay of a migrated or stolen task (Malcolm §2 note 1: RTT about 4 us)"
    )
    steal_below: float = Field(
        1.0,
        ge=0,
        allow_inf_nan=False,
        description="a node steals only while its smoothed queue length is below this (Malcolm's code: 1)",
    )
    queue_smoothing: float = Field(
        0.95, ge=0, lt=1, description="EMA weight of the past in the smoothed queue length (Malcolm's code: 0.95)"
    )


# ------------------------------------------------------------------------------- dynamics


class SplitChange(_Schema):
    """From ``at_us`` on, the traffic splits over the dispatchers or nodes by new weights (Malcolm §7.4, Fig. 11a)."""

    kind: Literal["split"] = Field(description="what changes")
    at_us: TimeUs = Field(description="simulated time of the change (Malcolm §7.4: time t)")
    split: list[Weight] = Field(
        min_length=1, description="one weight per dispatcher (entry balancers) or node (Malcolm §7.4: 18:1 to 4 nodes)"
    )

    @field_validator("split")
    @classmethod
    def _weights(cls, split: list[float]) -> list[float]:
        return _some_weight(split)


class SpeedChange(_Schema):
    """From ``at_us`` on, the listed nodes run ``factor`` times as fast (Malcolm §7.4, Fig. 11b: slowed by 50%)."""

    kind: Literal["speed"] = Field(description="what changes")
    at_us: TimeUs = Field(description="simulated time of the change (Malcolm §7.4: time t)")
    nodes: list[NodeId] = Field(min_length=1, description="node ids, 0-based through the groups in order (§7.4: 0-3)")
    factor: float = Field(
        gt=0, allow_inf_nan=False, description="multiplies the nodes' current speed (Malcolm §7.4: 0.5, code: 1/1.5)"
    )


class RemoveNodes(_Schema):
    """From ``at_us`` on, no new task goes to the listed nodes; they finish what they hold (RackSched §3.4)."""

    kind: Literal["remove"] = Field(description="what changes")
    at_us: TimeUs = Field(description="simulated time of the change (Malcolm §7.4: time t)")
    nodes: list[NodeId] = Field(min_length=1, description="node ids, 0-based through the groups in order (§7.4: 0-3)")


class AddNodes(_Schema):
    """From ``at_us`` on, the listed (removed) nodes take tasks again (RackSched §3.4 reconfiguration)."""

    kind: Literal["add"] = Field(description="what changes")
    at_us: TimeUs = Field(description="simulated time of the change (Malcolm §7.4: time t)")
    nodes: list[NodeId] = Field(min_length=1, description="node ids, 0-based through the groups in order (§7.4: 0-3)")


class LoadChange(_Schema):
    """From ``at_us`` on, tasks arrive at a new load (a fraction of the original capacity; Malcolm §7.4)."""

    kind: Literal["load"] = Field(description="what changes")
    at_us: TimeUs = Field(description="simulated time of the change (Malcolm §7.4: time t)")
    load: Load = Field(description="the new offered load (Malcolm §7.4: fluctuations in load)")


Change = Annotated[SplitChange | SpeedChange | RemoveNodes | AddNodes | LoadChange, Field(discriminator="kind")]


# ------------------------------------------------------------- checks that need the whole rack


def check_nodes(groups: Sequence[NodeGroup]) -> None:
    """At most the engine's number of nodes in all. Fields are relative to ``nodes``."""
    total = sum(g.count for g in groups)
    if total > LIMITS["nodes"]:
        counts = [g.count for g in groups]
        raise InvalidConfigError("", counts, f"groups of at most {LIMITS['nodes']} nodes in all (these have {total})")


def check_entry(entry: SwitchEntry | BalancersEntry | NodesEntry, num_nodes: int) -> None:
    """A node split has one weight per node. Fields are relative to ``entry``."""
    if isinstance(entry, NodesEntry) and entry.split and len(entry.split) != num_nodes:
        raise InvalidConfigError("split", entry.split, f"[] or one weight per node ({num_nodes} weights)")


def check_types(types: Sequence[TaskType], num_nodes: int) -> None:
    """Distinct type names; locality on nodes that exist. Fields are relative to ``types``."""
    seen: set[str] = set()
    for k, task_type in enumerate(types):
        if task_type.name in seen:
            raise InvalidConfigError(f"{k}.name", task_type.name, "a name no other type has")
        seen.add(task_type.name)
        for i, node in enumerate(task_type.nodes or ()):
            if node >= num_nodes:
                raise InvalidConfigError(f"{k}.nodes.{i}", node, f"a node id in [0, {num_nodes - 1}]")


def check_dynamics(
    changes: Sequence[SplitChange | SpeedChange | RemoveNodes | AddNodes | LoadChange],
    entry: SwitchEntry | BalancersEntry | NodesEntry,
    num_nodes: int,
    types: Sequence[TaskType] = (),
) -> None:
    """Changes in time order, on nodes that exist, never leaving the rack, or a task type restricted to some
    nodes, without an active node.

    Fields are relative to ``dynamics``.
    """
    active = set(range(num_nodes))
    last = 0.0
    for k, change in enumerate(changes):
        if change.at_us < last:
            raise InvalidConfigError(f"{k}.at_us", change.at_us, f"a time >= the previous change's ({last:g} us)")
        last = change.at_us
        if isinstance(change, SplitChange):
            if isinstance(entry, SwitchEntry):
                raise InvalidConfigError(f"{k}.kind", "split", "speed, remove, add or load: entry switch has no split")
            width, what = (entry.count, "dispatcher") if isinstance(entry, BalancersEntry) else (num_nodes, "node")
            if len(change.split) != width:
                raise InvalidConfigError(f"{k}.split", change.split, f"one weight per {what} ({width} weights)")
        elif isinstance(change, (SpeedChange, RemoveNodes, AddNodes)):
            for i, node in enumerate(change.nodes):
                if node >= num_nodes:
                    raise InvalidConfigError(f"{k}.nodes.{i}", node, f"a node id in [0, {num_nodes - 1}]")
            if isinstance(change, RemoveNodes):
                active -= set(change.nodes)
                if not active:
                    raise InvalidConfigError(f"{k}.nodes", change.nodes, "a list that leaves at least one node active")
                for task_type in types:
                    if task_type.nodes is not None and not active.intersection(task_type.nodes):
                        raise InvalidConfigError(
                            f"{k}.nodes",
                            change.nodes,
                            f"a list that leaves task type {task_type.name} an active "
                            f"node it may run on (one of its nodes {task_type.nodes})",
                        )
            elif isinstance(change, AddNodes):
                active |= set(change.nodes)
