"""Flow scenario files (``kind: flow``): schema and engine config.

A flow scenario describes a datacenter network and its traffic as PIAS (Bai
et al., NSDI 2015) and AuTO (Chen et al., SIGCOMM 2018) study flow
scheduling::

    kind: flow
    topology: {kind: planes, hosts: 32, planes: 3, link_gbps: 1.0}   # single_link | big_switch | planes | leaf_spine
    base_rtt_us: 100
    workload: {sizes: web_search, arrivals: poisson}                  # web_search | data_mining | {cdf: [[bytes, p], ...]}
    priorities: 4
    scheduling: {policy: qlas, thresholds: pias_ws}                   # fair | qsjf | qlas | pias | las | srpt
    loads: [0.5, 0.6, 0.7, 0.8]

Units: bytes, seconds; link rates in Gbps, the base RTT in microseconds. The
engine is :class:`dcgym.cpp_core.FlowSim` (docs/flow.md)::

    scenario = load_scenario("auto_websearch")
    sim = FlowSim(scenario.engine_config(load=0.8, seed=1))

**Load** is what each host offers, as a fraction of its capacity. With
``load_unit: link`` (the default) the unit is one link (``link_gbps``): at
load 0.8 every host sends 0.8 x link_gbps on average. With one link per host
(``big_switch``, ``leaf_spine``) each host link then carries 0.8 under uniform
traffic; on ``planes`` a host spreads its traffic over its P ports by ECMP,
each port carrying load / P. With ``load_unit: ports`` the unit is all of a
host's ports (P x link_gbps on ``planes``, one link elsewhere): load 0.8 puts
every port at 80%, AuTO's "80% load (the total sending rate is at 80% of the
network capacity)" (§6), which is 2.4 link units on its 3-port testbed. On
``single_link`` the senders together offer load x the link's capacity. Host groups (AuTO §6.1.2) and
workload changes (§6.1.3) give their loads relative to the run's load
(``relative_load``: 0.75 at load 0.8 is 0.6), so one scenario sweeps a grid
of loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, field_validator, model_validator

from dcgym.cpp_core import FlowSim
from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.flow.policies import FlowPolicy, parse_flow_policy
from dcgym.envs.scenario import load_scenario
from dcgym.envs.schema import Load, ScenarioBase, Seed
from dcgym.envs.schema import Schema as _Schema
from dcgym.envs.validation import validate

__all__ = ["FlowScenario", "load_flow_scenario"]

LIMITS = FlowSim.limits
"""The engine's bounds of a flow config (flow/config.hpp), which the fields below take as theirs."""

Gbps = Annotated[float, Field(gt=0, le=LIMITS["link_gbps"], allow_inf_nan=False)]
Hosts = Annotated[int, Field(ge=2, le=LIMITS["hosts"])]
Count = Annotated[int, Field(ge=1, le=LIMITS["hosts"])]
Relative = Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)]
Flows = Annotated[int, Field(ge=0)]


class SingleLink(_Schema):
    """Senders share one bottleneck link into one receiver: the M/G/1 setting of the exact theory."""

    kind: Literal["single_link"] = Field(description="the topology")
    link_gbps: Gbps = Field(1.0, description="the bottleneck's rate, Gbps")
    senders: Count = Field(1, description="sending hosts (they share the link; ECMP has one path)")

    @property
    def hosts(self) -> int:
        return self.senders


class BigSwitch(_Schema):
    """Every host has an uplink and a downlink into one non-blocking switch (pFabric's and AuTO §2.2's model)."""

    kind: Literal["big_switch"] = Field(description="the topology")
    hosts: Hosts = Field(16, description="hosts")
    link_gbps: Gbps = Field(1.0, description="every host link, Gbps")


class Planes(_Schema):
    """P parallel big switches; a host has one port in each: AuTO's testbed, 3 NIC ports on 3 subnets (§6)."""

    kind: Literal["planes"] = Field(description="the topology")
    hosts: Hosts = Field(32, description="hosts")
    planes: int = Field(3, ge=1, le=LIMITS["planes"], description="parallel planes: the paths between any pair")
    link_gbps: Gbps = Field(1.0, description="every port, Gbps")


class LeafSpine(_Schema):
    """Racks of hosts under ToR switches, every ToR linked to every spine: PIAS's simulated fabric (§5.2)."""

    kind: Literal["leaf_spine"] = Field(description="the topology")
    racks: Count = Field(9, description="racks (ToR switches)")
    hosts_per_rack: Count = Field(16, description="hosts per rack")
    spines: int = Field(4, ge=1, le=LIMITS["spines"], description="spine switches: the paths between racks")
    oversubscription: float = Field(
        1.0,
        gt=0,
        le=LIMITS["oversubscription"],
        allow_inf_nan=False,
        description="a rack's host capacity over its capacity to the spines",
    )
    link_gbps: Gbps = Field(1.0, description="every host link, Gbps (ToR-spine links follow from oversubscription)")

    @property
    def hosts(self) -> int:
        return self.racks * self.hosts_per_rack


Topology = Annotated[SingleLink | BigSwitch | Planes | LeafSpine, Field(discriminator="kind")]


class Cdf(_Schema):
    """A piecewise-linear CDF of flow sizes."""

    cdf: list[tuple[Annotated[float, Field(ge=0, allow_inf_nan=False)], Annotated[float, Field(ge=0, le=1)]]] = Field(
        min_length=2,
        description="[bytes, cumulative probability] points, non-decreasing in both, from probability 0 to 1",
    )

    @field_validator("cdf")
    @classmethod
    def _is_cdf(cls, cdf: list[tuple[float, float]]) -> list[tuple[float, float]]:
        allowed = "points non-decreasing in bytes and probability, from probability 0 to 1, with a positive mean"
        ordered = all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(cdf, cdf[1:]))
        mean = sum((b[1] - a[1]) * (a[0] + b[0]) / 2 for a, b in zip(cdf, cdf[1:]))
        if not ordered or cdf[0][1] != 0 or cdf[-1][1] != 1 or not mean > 0:
            raise InvalidConfigError("", cdf, allowed)
        return cdf


SIZE_NAMES = ("web_search", "data_mining")


def _sizes(value: Any) -> Any:
    """A named workload or a CDF, refused in one line naming what is allowed (not pydantic's per-member text)."""
    if isinstance(value, Cdf):
        return value
    if isinstance(value, str):
        if value in SIZE_NAMES:
            return value
        allowed = "web_search, data_mining or {cdf: [[bytes, p], ...]}"
        raise InvalidConfigError("", value, allowed, suggestion=did_you_mean(value, SIZE_NAMES))
    if isinstance(value, Mapping):
        return validate(Cdf, value)
    raise InvalidConfigError("", value, "web_search, data_mining or {cdf: [[bytes, p], ...]}")


Sizes = Annotated[Literal["web_search", "data_mining"] | Cdf, PlainValidator(_sizes)]
"""Flow sizes: web search (DCTCP's, Alizadeh et al. 2010), data mining (VL2's, Greenberg et al. 2009) or a CDF."""


def _engine_sizes(sizes: Sizes) -> Any:
    return sizes if isinstance(sizes, str) else {"cdf": [list(p) for p in sizes.cdf]}


class Group(_Schema):
    """Consecutive hosts with their own flow sizes and load (AuTO §6.1.2)."""

    hosts: Count = Field(description="hosts in the group (groups take consecutive host indices, in order)")
    sizes: Sizes = Field("web_search", description="the group's flow sizes")
    relative_load: Relative = Field(1.0, description="the group's load as a multiple of the run's load")


class Change(_Schema):
    """A change of load and/or flow sizes at a given time (AuTO §6.1.3)."""

    time_s: float = Field(ge=0, allow_inf_nan=False, description="simulated time of the change, s")
    group: int | None = Field(None, ge=0, description="the group changed (null: every group)")
    relative_load: Relative | None = Field(None, description="the new load, a multiple of the run's load")
    sizes: Sizes | None = Field(None, description="the new flow sizes")

    @model_validator(mode="after")
    def _changes_something(self) -> Change:
        if self.relative_load is None and self.sizes is None:
            raise InvalidConfigError("relative_load", None, "a number or sizes: a change must change something")
        return self


class Workload(_Schema):
    """Flow sizes and arrivals."""

    sizes: Sizes = Field("web_search", description="flow sizes of every host (when there are no groups)")
    arrivals: Literal["poisson"] = Field("poisson", description="arrival process: Poisson per group")
    groups: list[Group] | None = Field(None, min_length=1, description="host groups (null: one group of every host)")
    traffic_matrix: list[list[Annotated[float, Field(ge=0, allow_inf_nan=False)]]] | None = Field(
        None, description="hosts x hosts destination weights, zero diagonal (null: uniform over the other hosts)"
    )
    dynamics: list[Change] = Field([], description="changes of load and sizes over time, in time order")

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        if self.groups is not None and "sizes" in self.model_fields_set:
            raise InvalidConfigError("sizes", self.sizes, "nothing when groups are given (each group has sizes)")
        groups = len(self.groups or [None])
        last = 0.0
        for i, change in enumerate(self.dynamics):
            if change.time_s < last:
                raise InvalidConfigError(f"dynamics.{i}.time_s", change.time_s, f"a time >= {last:g} (time order)")
            last = change.time_s
            if change.group is not None and change.group >= groups:
                raise InvalidConfigError(f"dynamics.{i}.group", change.group, f"a group index in [0, {groups - 1}]")
        return self


class FlowScenario(ScenarioBase):
    """A flow scenario file (``kind: flow``)."""

    kind: Literal["flow"] = Field(description="the family of the scenario")
    topology: Topology = Field(description="the network (a mapping whose kind is the topology)")
    base_rtt_us: float = Field(
        0.0,
        ge=0,
        le=LIMITS["base_rtt_us"],
        allow_inf_nan=False,
        description="fixed overhead added to every FCT, us (AuTO's testbed: 100)",
    )
    workload: Workload = Field(Workload(), description="flow sizes, arrivals, groups, traffic matrix, dynamics")
    priorities: int = Field(
        8, ge=1, le=LIMITS["levels"], description="strict-priority levels K of the switches (AuTO: 4, PIAS: 8)"
    )
    scheduling: str | dict[str, Any] = Field(
        "pias",
        description="the default policy with its parameters: a name (fair, qsjf, qlas, pias, las, srpt) or "
        "{policy: NAME, thresholds: PRESET or [bytes, ...], priorities: K}",
    )
    long_flow_bytes: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="a flow is long once it has sent this (null: the last threshold)"
    )
    load_unit: Literal["link", "ports"] = Field(
        "link",
        description="what load is a fraction of: one host link (link) or all of a host's ports (ports: every port "
        "at the load, AuTO's reading; the same as link with one link per host)",
    )
    loads: list[Load] = Field([0.5, 0.6, 0.7, 0.8], min_length=1, description="the default grid of loads")

    @model_validator(mode="after")
    def _consistent(self) -> FlowScenario:
        n = self.topology.hosts
        if isinstance(self.topology, LeafSpine) and not 2 <= n <= LIMITS["hosts"]:
            allowed = f"racks x hosts_per_rack in [2, {LIMITS['hosts']}] hosts"
            raise InvalidConfigError("topology", self.topology.model_dump(), allowed)
        links = FlowSim.topology_links(self.topology.model_dump())
        if links > LIMITS["links"]:
            allowed = f"a network of at most {LIMITS['links']} links (this one has {links})"
            raise InvalidConfigError("topology", self.topology.model_dump(), allowed)
        w = self.workload
        if w.groups is not None and sum(g.hosts for g in w.groups) != n:
            total = sum(g.hosts for g in w.groups)
            raise InvalidConfigError(
                "workload.groups", [g.hosts for g in w.groups], f"groups whose hosts add up to {n} (got {total})"
            )
        if w.traffic_matrix is not None:
            if isinstance(self.topology, SingleLink):
                raise InvalidConfigError("workload.traffic_matrix", "...", "null on single_link (one destination)")
            m = w.traffic_matrix
            if len(m) != n or any(len(row) != n for row in m):
                raise InvalidConfigError("workload.traffic_matrix", f"{len(m)} rows", f"{n} rows of {n} weights")
            for i, row in enumerate(m):
                if row[i] != 0 or not sum(row) > 0:
                    raise InvalidConfigError(
                        f"workload.traffic_matrix.{i}", row, f"weights with a positive sum and 0 at {i} (itself)"
                    )
        self.policy()  # the default policy must run here
        return self

    # ------------------------------------------------------------------ policies

    def policy(self, spec: str | Mapping[str, Any] | FlowPolicy | None = None) -> FlowPolicy:
        """A policy as it runs on this scenario (``spec`` None: the scenario's own), checked against it.

        A ranked policy (qsjf, qlas, pias) given without thresholds takes the scenario's (``scheduling``'s
        ``thresholds``), as AuTO runs QSJF and QLAS with thresholds from the same method. Raises
        InvalidConfigError naming ``scheduling`` (the scenario's) or ``policy`` (one given).
        """
        field = "scheduling" if spec is None else "policy"
        given = self.scheduling if spec is None else spec
        try:
            policy = parse_flow_policy(given)
        except InvalidConfigError as exc:
            if exc.field != "policy":
                raise exc.under(field) from None
            where = "scheduling.policy" if spec is None and isinstance(given, Mapping) else field
            if where == "policy":
                raise
            raise InvalidConfigError(where, exc.value, exc.allowed, suggestion=exc.suggestion) from None
        if spec is not None and policy.ranked:
            own = parse_flow_policy(self.scheduling)
            if own.ranked:
                policy = policy.with_defaults({"thresholds": own.params.thresholds})
        if policy.name == "las" and not isinstance(self.topology, SingleLink):
            raise InvalidConfigError(
                field, policy.label, "a policy other than las on a network (las is exact on single_link only)"
            )
        policy.scheduling(self.priorities, field)  # thresholds resolve for this scenario's levels
        return policy

    def check_policy(self, policy: str | Mapping[str, Any]) -> FlowPolicy:
        """:meth:`policy` for a policy given by a caller (train.py's evaluation heuristics): InvalidConfigError
        naming ``policy`` if it does not run here."""
        return self.policy(policy)

    # ------------------------------------------------------------------ engine

    def engine_config(
        self,
        load: float,
        seed: int,
        policy: str | Mapping[str, Any] | FlowPolicy | None = None,
        warmup_flows: int = 0,
        measure_flows: int = 0,
    ) -> dict[str, Any]:
        """The config dict ``FlowSim`` takes, at ``load`` with ``seed``; ``policy`` replaces the scenario's.

        The first ``warmup_flows`` arrivals are left out of the statistics, then ``measure_flows`` are measured
        (0: every later one).
        """
        load = self.link_load(validate(Load, load, "load"))
        chosen = self.policy(policy)
        w = self.workload
        peak = load * max([1.0] if w.groups is None else [g.relative_load for g in w.groups])
        peak = max([peak, *(load * c.relative_load for c in w.dynamics if c.relative_load is not None)])
        if peak > LIMITS["host_load"]:
            unit = "" if self.link_load(1.0) == 1 else f" in link units (load x {self.link_load(1.0):g})"
            allowed = (
                f"a load at which every group's load (load x relative_load){unit} is at most {LIMITS['host_load']:g}"
            )
            raise InvalidConfigError("load", load / self.link_load(1.0), allowed)
        workload: dict[str, Any] = {}
        if w.groups is None:
            workload["sizes"] = _engine_sizes(w.sizes)
            workload["load"] = load
        else:
            workload["groups"] = [
                {"hosts": g.hosts, "sizes": _engine_sizes(g.sizes), "load": load * g.relative_load} for g in w.groups
            ]
        if w.traffic_matrix is not None:
            workload["traffic_matrix"] = [list(row) for row in w.traffic_matrix]
        if w.dynamics:
            workload["dynamics"] = [
                {
                    "time_s": c.time_s,
                    "group": c.group,
                    "load": None if c.relative_load is None else load * c.relative_load,
                    "sizes": None if c.sizes is None else _engine_sizes(c.sizes),
                }
                for c in w.dynamics
            ]
        return {
            "topology": self.topology.model_dump(),
            "scheduling": chosen.scheduling(self.priorities, "policy" if policy is not None else "scheduling"),
            "workload": workload,
            "base_rtt_us": self.base_rtt_us,
            "seed": validate(Seed, seed, "seed"),
            "warmup_flows": validate(Flows, warmup_flows, "warmup_flows"),
            "measure_flows": validate(Flows, measure_flows, "measure_flows"),
            "long_flow_bytes": self.long_flow_bytes or 0.0,
        }

    def link_load(self, load: float) -> float:
        """``load`` (this scenario's unit, ``load_unit``) in the engine's unit: a host's offered fraction of one link."""
        ports = self.topology.planes if isinstance(self.topology, Planes) else 1
        return load * ports if self.load_unit == "ports" else load

    @property
    def num_hosts(self) -> int:
        return self.topology.hosts


def load_flow_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> FlowScenario:
    """:func:`dcgym.envs.scenario.load_scenario` of a flow scenario (``kind: flow``): a packaged name or a path."""
    return load_scenario(name_or_path, overrides, kind="flow")
