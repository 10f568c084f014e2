"""Rack scenario files (``kind: rack``): the scenario model and the engine config it produces.

A rack scenario describes one rack: its node groups, the service-time
distribution (or several task types, each with its own, RackSched §3.6),
arrivals, where tasks enter (a switch, load balancers, or the nodes
themselves), the intra-node discipline, the default dispatch policy and how
fresh the loads it reads are, Malcolm's migration mechanics, changes over
time, plus the loads to evaluate it at. Load is always the fraction of the
rack's total capacity (sum over nodes of workers x speed / mean service
time), so one file serves every load. The parts are in
:mod:`dcgym.envs.rack.schema` (defaults live there only), the dispatch
policies in :mod:`dcgym.envs.rack.dispatch`::

    scenario = load_scenario("malcolm_homog_exp", {"dispatch": "jsq"})
    sim = dcgym.cpp_core.RackSim(scenario.engine_config(load=0.9, seed=1))
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PlainSerializer, PlainValidator, model_validator

from dcgym.cpp_core import Distribution
from dcgym.envs.distributions import Service
from dcgym.envs.error import MISSING, InvalidConfigError, did_you_mean
from dcgym.envs.rack.dispatch import Policy, Rack, parse_policy, policy_parameters
from dcgym.envs.rack.schema import (
    LIMITS,
    Arrivals,
    Change,
    Entry,
    Fcfs,
    FreshLoadInfo,
    IntraNode,
    LoadInfo,
    Migration,
    MinOnlyLoadInfo,
    NodeGroup,
    NodesEntry,
    Poisson,
    SwitchEntry,
    TaskType,
    check_dynamics,
    check_entry,
    check_nodes,
    check_types,
)
from dcgym.envs.scenario import load_scenario
from dcgym.envs.schema import Load, ScenarioBase, Seed
from dcgym.envs.validation import validate

__all__ = ["DispatchPolicy", "RackScenario", "load_rack_scenario"]

WarmupTasks = Annotated[int, Field(ge=0)]
"""The first arrivals of a run, excluded from its statistics."""

SamplePeriod = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""Resolution of the per-node load samples (us); 0 = none."""

DispatchPolicy = Annotated[
    Policy,
    PlainValidator(parse_policy, json_schema_input_type=str | dict[str, Any]),
    PlainSerializer(str, return_type=str),
]
"""A policy name as in :mod:`dcgym.envs.rack.dispatch`: ``po2``, ``{policy: po_d, d: 3}``."""


class RackScenario(ScenarioBase):
    """A rack scenario file (``kind: rack``)."""

    kind: Literal["rack"] = Field(description="the engine model the scenario runs on")
    nodes: list[NodeGroup] = Field(min_length=1, description="the node groups of the rack")
    service: Service | None = Field(
        None,
        description="the service-time distribution of tasks (work at speed 1, in us); exactly one of service and types",
    )
    types: Annotated[list[TaskType], Field(min_length=1, max_length=LIMITS["task_types"])] | None = Field(
        None,
        description="task types, each with its share of arrivals, service time, SLO, priority and the nodes it "
        "may run on (RackSched §3.6), in place of service",
    )
    arrivals: Arrivals = Field(Poisson(), description="the arrival process")
    intra_node: IntraNode = Field(Fcfs(discipline="fcfs"), description="how a node's workers share its tasks")
    entry: Entry = Field(
        SwitchEntry(kind="switch"),
        description="where tasks enter: one switch (RackSched §3.1), several balancers or clients (multi-LB App. "
        "C.1, RackSched §4.5), or the nodes, whose load managers migrate (Malcolm §3.2)",
    )
    dispatch: DispatchPolicy = Field(parse_policy("po2"), description="the default inter-node dispatch policy")
    policy_defaults: dict[str, Any] = Field(
        {},
        description="parameters given to every policy run on this scenario that takes them and does not set them "
        "(Malcolm §7.1: the baselines compare queue lengths, {metric: queue})",
    )
    load_info: LoadInfo = Field(FreshLoadInfo(), description="the load information dispatchers read (how stale)")
    migration: Migration = Field(
        Migration(), description="Malcolm's migration and stealing mechanics (§3.2), used with entry nodes"
    )
    dynamics: list[Change] = Field(
        [], description="changes at given times, in time order (Malcolm §7.4 adaptability, Fig. 11)"
    )
    sample_period_us: SamplePeriod = Field(
        0.0,
        description="record every node's outstanding tasks at this resolution for load-over-time plots "
        "(Malcolm Fig. 2, Fig. 11); 0 = no samples",
    )
    loads: list[Load] = Field([0.5, 0.7, 0.9], min_length=1, description="the default grid of loads to evaluate")
    warmup_fraction: float = Field(
        0.1, ge=0, lt=1, description="fraction of a run's first arrivals excluded from the statistics"
    )

    @model_validator(mode="before")
    @classmethod
    def _load_info_model_implied(cls, data: Any) -> Any:
        """``load_info: {period_us: P}`` is the periodic model, named by its period; no field at all is fresh."""
        info = data.get("load_info") if isinstance(data, dict) else None
        if isinstance(info, dict) and "model" not in info:
            return {**data, "load_info": {"model": "periodic" if "period_us" in info else "fresh", **info}}
        return data

    @model_validator(mode="after")
    def _parts_fit_the_rack(self) -> RackScenario:
        try:
            check_nodes(self.nodes)
        except InvalidConfigError as exc:
            raise exc.under("nodes") from None
        self._check_types()
        try:
            check_entry(self.entry, self.num_nodes)
        except InvalidConfigError as exc:
            raise exc.under("entry") from None
        if isinstance(self.load_info, MinOnlyLoadInfo) and isinstance(self.entry, NodesEntry):
            raise InvalidConfigError(
                "load_info.model",
                "min_only",
                "a model other than min_only at entry nodes (min_only tracks the "
                "replies one dispatcher receives; it needs entry switch or balancers)",
            )
        try:
            check_dynamics(self.dynamics, self.entry, self.num_nodes, self.types or ())
        except InvalidConfigError as exc:
            raise exc.under("dynamics") from None
        self._check_policy_defaults()
        object.__setattr__(self, "dispatch", self.policy())  # frozen: the defaults are part of the policy
        return self

    def _check_types(self) -> None:
        """Exactly one of service and types; type names and nodes; queueing that has types to order."""
        if self.service is not None and self.types is not None:
            raise InvalidConfigError(
                "service",
                self.service.model_dump(mode="json"),
                "nothing when types is given (each type has its "
                "own service): give service for one kind of task, or types",
            )
        if self.service is None and self.types is None:
            raise InvalidConfigError("service", MISSING, "a service-time distribution, or types instead")
        try:
            check_types(self.types or (), self.num_nodes)
        except InvalidConfigError as exc:
            raise exc.under("types") from None
        queueing = self.intra_node.queueing
        if queueing != "fifo" and len(self.types or ()) < 2:
            raise InvalidConfigError(
                "intra_node.queueing",
                queueing,
                f"fifo unless types lists at least two task types ({queueing} "
                f"orders the queues of different types; this scenario has {len(self.types or ())})",
            )

    def _check_policy_defaults(self) -> None:
        takers = policy_parameters()
        for key, value in self.policy_defaults.items():
            if key not in takers:
                raise InvalidConfigError(
                    f"policy_defaults.{key}",
                    value,
                    "parameters some policy takes: " + ", ".join(takers),
                    suggestion=did_you_mean(key, takers),
                )
            for name in takers[key]:
                try:
                    parse_policy(name).with_defaults({key: value})
                except InvalidConfigError as exc:
                    raise exc.under("policy_defaults") from None

    @property
    def num_nodes(self) -> int:
        """Nodes in the rack, over all groups."""
        return sum(group.count for group in self.nodes)

    @property
    def rack(self) -> Rack:
        """What policies check about the rack they run on."""
        locality = any(t.nodes is not None for t in self.types or ())
        return Rack(self.num_nodes, self.intra_node.discipline, self.entry.kind, len(self.types or ()), locality)

    @property
    def type_names(self) -> list[str]:
        """The names of the task types, in order; empty without types."""
        return [t.name for t in self.types or ()]

    @property
    def mean_service_us(self) -> float:
        """Mean task size (us at speed 1): over the types by share when there are types."""
        if self.types is None:
            return Distribution(self.service.model_dump(mode="json")).mean
        total = math.fsum(t.share for t in self.types)
        return math.fsum(t.share / total * Distribution(t.service.model_dump(mode="json")).mean for t in self.types)

    def policy(self, spec: str | Mapping[str, Any] | Policy | None = None) -> Policy:
        """``spec`` (default: the scenario's dispatch policy) parsed, with the scenario's policy_defaults applied.

        Raises InvalidConfigError if the policy cannot run on this rack
        (central_fcfs with PS, table without entry nodes, ...).
        """
        policy = parse_policy(self.dispatch if spec is None else spec)
        try:
            policy = policy.with_defaults(self.policy_defaults)
            policy.check_rack(self.rack)
        except InvalidConfigError as exc:
            raise exc.under("dispatch") from None
        return policy

    def check_policy(self, policy: str | Mapping[str, Any] | Policy) -> None:
        """Raise InvalidConfigError if ``policy`` cannot run on this rack."""
        self.policy(policy)

    def node_ids(self) -> list[range]:
        """The node ids of each group (ids run through the groups in order)."""
        ids, start = [], 0
        for group in self.nodes:
            ids.append(range(start, start + group.count))
            start += group.count
        return ids

    def warmup_tasks(self, tasks: int) -> int:
        """How many of ``tasks`` arrivals are warm-up."""
        return math.floor(self.warmup_fraction * tasks)

    def engine_config(
        self,
        load: float,
        seed: int,
        policy: str | Mapping[str, Any] | Policy | None = None,
        warmup_tasks: int = 0,
        sample_period_us: float | None = None,
    ) -> dict[str, Any]:
        """The config dict :class:`dcgym.cpp_core.RackSim` takes, at ``load`` with ``seed``.

        ``policy`` (any form :func:`parse_policy` accepts) replaces the
        scenario's dispatch policy; ``sample_period_us`` its sampling period.
        With types, ``types`` lists them (names are the scenario's, not the
        engine's) and ``service`` is a fixed value at their mean size: the
        engine draws from the types and ignores it, but readers of the config
        that need the mean task size find it there.
        """
        policy = self.policy(policy)
        period = self.sample_period_us if sample_period_us is None else sample_period_us
        config = {
            "nodes": [
                {
                    "count": g.count,
                    "workers": g.workers,
                    "speed": g.speed,
                    "queue_capacity": -1 if g.queue_capacity is None else g.queue_capacity,
                }
                for g in self.nodes
            ],
            "service": (
                self.service.model_dump(mode="json")
                if self.types is None
                else {"dist": "det", "value_us": self.mean_service_us}
            ),
            "load": validate(Load, load, "load"),
            "seed": validate(Seed, seed, "seed"),
            "warmup_tasks": validate(WarmupTasks, warmup_tasks, "warmup_tasks"),
            "intra_node": self.intra_node.model_dump(),
            "entry": {"count": 1, "split": [], **self.entry.model_dump()},
            "dispatch": policy.engine_dict(),
            "load_info": self.load_info.model_dump(),
            "migration": self.migration.model_dump(),
            "dynamics": [change.model_dump() for change in self.dynamics],
            "sample_period_us": validate(SamplePeriod, period, "sample_period_us"),
        }
        if self.types is not None:
            config["types"] = [
                {
                    "share": t.share,
                    "service": t.service.model_dump(mode="json"),
                    "slo_us": t.slo_us,
                    "priority": t.priority,
                    "nodes": [] if t.nodes is None else list(t.nodes),
                }
                for t in self.types
            ]
        return config


def load_rack_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> RackScenario:
    """:func:`dcgym.envs.scenario.load_scenario` of a rack scenario (``kind: rack``): a packaged name or a path."""
    return load_scenario(name_or_path, overrides, kind="rack")
