"""Rack scenario files: schema, loading, and the engine config they produce.

A scenario (DESIGN.md, "Scenario files") is a YAML file describing one rack:
its node groups, the service-time distribution (or several task types, each
with its own, RackSched §3.6), arrivals, where tasks enter
(a switch, load balancers, or the nodes themselves), the intra-node
discipline, the default dispatch policy and how fresh the loads it reads are,
Malcolm's migration mechanics, changes over time, plus the loads to evaluate
it at. Load is always the fraction of the rack's total capacity (sum over
nodes of workers x speed / mean service time), so one file serves every load.
Every field is validated here and in :mod:`dcgym.envs.rack_schema`, with
defaults in the schema only, before anything reaches the C++ engine::

    scenario = load_scenario("malcolm_homog_exp", {"dispatch": "jsq"})
    sim = dcgym.cpp_core.RackSim(scenario.engine_config(load=0.9, seed=1))

Files of another ``kind`` share the folder: ``kind: multistage`` files are
loaded by :func:`dcgym.envs.lb_scenario.load_lb_scenario`, to which
:func:`load_scenario` hands them.
"""

from __future__ import annotations

import copy
import importlib
import math
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, PlainSerializer, PlainValidator, PrivateAttr, model_validator

from dcgym.agents.heuristics import Policy, Rack, parse_policy, policy_parameters
from dcgym.envs.error import MISSING, InvalidConfigError, UnknownScenarioError, Verbatim, did_you_mean
from dcgym.envs.rack_schema import (
    Arrivals,
    Change,
    Entry,
    Fcfs,
    FreshLoadInfo,
    IntraNode,
    Load,
    LoadInfo,
    MinOnlyLoadInfo,
    Migration,
    NodeGroup,
    NodesEntry,
    Poisson,
    Seed,
    SwitchEntry,
    TaskType,
    _Schema,
    check_dynamics,
    check_entry,
    check_types,
)
from dcgym.envs.service import Service
from dcgym.envs.validation import OneLine, validate

__all__ = [
    "DEFAULT_SCENARIO", "KINDS", "Load", "RackScenario", "Seed", "apply_overrides", "list_scenarios", "load_scenario",
    "scenario_kind",
]

DEFAULT_SCENARIO = "malcolm_hetero_paper_exp"
"""The scenario of ``make demo``: Malcolm's heterogeneous rack (§7.1, paper text) under Exp(75)."""

KINDS: dict[str, str | None] = {"rack": None, "multistage": "dcgym.envs.lb_scenario:load_lb_scenario"}
"""Scenario kinds, with the loader of the kinds other than rack (imported when first needed)."""

WarmupTasks = Annotated[int, Field(ge=0)]
"""The first arrivals of a run, excluded from its statistics."""

SamplePeriod = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""Resolution of the per-node load samples (us); 0 = none."""

DispatchPolicy = Annotated[
    Policy,
    PlainValidator(parse_policy, json_schema_input_type=str | dict[str, Any]),
    PlainSerializer(str, return_type=str),
]
"""A policy name as in :mod:`dcgym.agents.heuristics.registry`: ``po2``, ``{policy: po_d, d: 3}``."""


class RackScenario(_Schema):
    """A rack scenario file (``kind: rack``)."""

    kind: Literal["rack"] = Field(description="the engine model the scenario runs on")
    description: OneLine = Field(description="one line: what the scenario is and the paper section it comes from")
    nodes: list[NodeGroup] = Field(min_length=1, description="the node groups of the rack")
    service: Service | None = Field(
        None, description="the service-time distribution of tasks (work at speed 1, in us); exactly one of service "
        "and types"
    )
    types: Annotated[list[TaskType], Field(min_length=1)] | None = Field(
        None, description="task types, each with its share of arrivals, service time, SLO, priority and the nodes it "
        "may run on (RackSched §3.6), in place of service"
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
        0.0, description="record every node's outstanding tasks at this resolution for load-over-time plots "
        "(Malcolm Fig. 2, Fig. 11); 0 = no samples"
    )
    loads: list[Load] = Field([0.5, 0.7, 0.9], min_length=1, description="the default grid of loads to evaluate")
    warmup_fraction: float = Field(
        0.1, ge=0, lt=1, description="fraction of a run's first arrivals excluded from the statistics"
    )
    _name: str = PrivateAttr("")

    @model_validator(mode="after")
    def _parts_fit_the_rack(self) -> RackScenario:
        self._check_types()
        try:
            check_entry(self.entry, self.num_nodes)
        except InvalidConfigError as exc:
            raise exc.under("entry") from None
        if isinstance(self.load_info, MinOnlyLoadInfo) and isinstance(self.entry, NodesEntry):
            raise InvalidConfigError(
                "load_info.model", "min_only", "a model other than min_only at entry nodes (min_only tracks the "
                "replies one dispatcher receives; it needs entry switch or balancers)"
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
                "service", self.service.model_dump(mode="json"), "nothing when types is given (each type has its "
                "own service): give service for one kind of task, or types"
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
                "intra_node.queueing", queueing, f"fifo unless types lists at least two task types ({queueing} "
                f"orders the queues of different types; this scenario has {len(self.types or ())})"
            )

    def _check_policy_defaults(self) -> None:
        takers = policy_parameters()
        for key, value in self.policy_defaults.items():
            if key not in takers:
                raise InvalidConfigError(
                    f"policy_defaults.{key}", value, "parameters some policy takes: " + ", ".join(takers),
                    suggestion=did_you_mean(key, takers),
                )
            for name in takers[key]:
                try:
                    parse_policy(name).with_defaults({key: value})
                except InvalidConfigError as exc:
                    raise exc.under("policy_defaults") from None

    @property
    def name(self) -> str:
        """The file name without its extension (empty if built in Python)."""
        return self._name

    @property
    def num_nodes(self) -> int:
        """Nodes in the rack, over all groups."""
        return sum(group.count for group in self.nodes)

    @property
    def rack(self) -> Rack:
        """What policies check about the rack they run on."""
        return Rack(self.num_nodes, self.intra_node.discipline, self.entry.kind, len(self.types or ()))

    @property
    def type_names(self) -> list[str]:
        """The names of the task types, in order; empty without types."""
        return [t.name for t in self.types or ()]

    @property
    def mean_service_us(self) -> float:
        """Mean task size (us at speed 1): over the types by share when there are types."""
        from dcgym.cpp_core import Distribution  # the engine's own means, for every family

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
                self.service.model_dump(mode="json") if self.types is None
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


# ------------------------------------------------------------------------------------ loading


def _scenario_dir():
    return resources.files("dcgym.configs") / "scenarios"


_KIND = re.compile(r"^kind:\s*['\"]?([A-Za-z0-9_-]+)", re.MULTILINE)


def scenario_kind(text: str) -> str | None:
    """The ``kind`` a scenario file's text declares at its top level, if any."""
    match = _KIND.search(text)
    return match[1] if match else None


def list_scenarios(kind: str | None = "rack") -> list[str]:
    """Names of the packaged scenarios (``configs/scenarios/*.yaml``) of ``kind``; every kind if None."""
    return sorted(
        f.name.removesuffix(".yaml")
        for f in _scenario_dir().iterdir()
        if f.name.endswith(".yaml") and (kind is None or scenario_kind(f.read_text(encoding="utf-8")) == kind)
    )


def load_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> Any:
    """Load and validate a scenario: a packaged name (``malcolm_homog_exp``) or a YAML file path.

    ``overrides`` maps dotted keys to values applied before validation:
    ``{"dispatch": "jsq", "nodes.0.workers": 8, "intra_node.discipline": "ps"}``.
    Returns a :class:`RackScenario` for ``kind: rack``; other kinds go to their
    own loader (``multistage``: :func:`dcgym.envs.lb_scenario.load_lb_scenario`).
    Raises UnknownScenarioError or InvalidConfigError (naming the field).
    """
    name, source, text = _read(name_or_path)
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise InvalidConfigError(source, Verbatim(f"invalid YAML ({problem}{where})"), "a YAML mapping") from None
    if not isinstance(raw, dict):
        raise InvalidConfigError(source, raw, "a YAML mapping of scenario fields")
    data = apply_overrides(raw, overrides or {})
    kind = data.get("kind")
    if isinstance(kind, str) and kind != "rack":
        return _other_kind(kind)(name_or_path, overrides)
    scenario = validate(RackScenario, data)
    scenario._name = name
    return scenario


def _other_kind(kind: str):
    """The loader of a scenario kind other than rack."""
    if kind not in KINDS:
        raise InvalidConfigError("kind", kind, "one of " + ", ".join(KINDS), suggestion=did_you_mean(kind, KINDS))
    module, _, function = KINDS[kind].partition(":")
    try:
        return getattr(importlib.import_module(module), function)
    except ImportError:
        raise InvalidConfigError("kind", kind, f"rack (the {kind} model is not installed: no {module})") from None


def _read(name_or_path: str | Path) -> tuple[str, str, str]:
    """(name, source shown in errors, text) of a scenario name or path."""
    path = Path(name_or_path)
    if isinstance(name_or_path, Path) or path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        if not path.is_file():
            raise UnknownScenarioError(str(name_or_path), list_scenarios(None))
        return path.stem, str(path), path.read_text(encoding="utf-8")
    resource = _scenario_dir() / f"{name_or_path}.yaml"
    if not resource.is_file():
        raise UnknownScenarioError(str(name_or_path), list_scenarios(None))
    return str(name_or_path), f"{name_or_path}.yaml", resource.read_text(encoding="utf-8")


def apply_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a raw scenario mapping with dotted-key overrides applied (list items by index)."""
    data = copy.deepcopy(dict(raw))
    if isinstance(data.get("dispatch"), str):  # so "dispatch.d" can be set on `dispatch: po_d`
        data["dispatch"] = {"policy": data["dispatch"]}
    for key, value in overrides.items():
        parts = str(key).split(".")
        target: Any = data
        for depth, part in enumerate(parts):
            where = ".".join(parts[: depth + 1])
            last = depth == len(parts) - 1
            if isinstance(target, dict):
                if last:
                    target[part] = copy.deepcopy(value)
                else:
                    target = target.setdefault(part, {})
            elif isinstance(target, list):
                if not (part.isdigit() and int(part) < len(target)):
                    raise InvalidConfigError(where, part, f"a list index in [0, {len(target) - 1}]")
                if last:
                    target[int(part)] = copy.deepcopy(value)
                else:
                    target = target[int(part)]
            else:
                raise InvalidConfigError(".".join(parts[:depth]), target, f"a mapping or list to set {part} in")
    return data
