"""Rack scenario files: schema, loading, and the engine config they produce.

A scenario (DESIGN.md, "Scenario files") is a YAML file describing one rack:
its node groups, the service-time distribution, arrivals, the intra-node
discipline, the default dispatch policy and how fresh the loads it reads are,
plus the loads to evaluate it at. Load is always the fraction of the rack's
total capacity (sum over nodes of workers x speed / mean service time), so one
file serves every load. Every field is validated here, with defaults in this
schema only, before anything reaches the C++ engine::

    scenario = load_scenario("malcolm_homog_exp", {"dispatch": "jsq"})
    sim = dcgym.cpp_core.RackSim(scenario.engine_config(load=0.9, seed=1))
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    field_validator,
    model_validator,
)

from dcgym.agents.heuristics import Policy, parse_policy
from dcgym.envs.error import InvalidConfigError, UnknownScenarioError, Verbatim
from dcgym.envs.service import Service
from dcgym.envs.validation import validate

DEFAULT_SCENARIO = "malcolm_hetero_paper_exp"
"""The scenario of ``make demo``: Malcolm's heterogeneous rack (§7.1, paper text) under Exp(75)."""

Load = Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)]
"""Offered load as a fraction of total capacity; above 1 the rack is overloaded (the engine allows up to 10)."""

Seed = Annotated[int, Field(ge=0, lt=2**64)]
"""The one seed every random stream of a run derives from."""

WarmupTasks = Annotated[int, Field(ge=0)]
"""The first arrivals of a run, excluded from its statistics."""


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NodeGroup(_Schema):
    """A group of identical nodes (servers)."""

    count: int = Field(ge=1, le=2**20, description="number of nodes in the group")
    workers: int = Field(ge=1, le=2**16, description="worker threads (cores) per node")
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
    """Open-loop Poisson arrivals at rate load x capacity / mean service time."""

    process: Literal["poisson"] = Field("poisson", description="the arrival process")


class Fcfs(_Schema):
    """One queue per node served first-come first-served by its workers (cFCFS; Malcolm §3.1)."""

    discipline: Literal["fcfs"] = Field(description="the intra-node discipline")


class ProcessorSharing(_Schema):
    """Workers share their time among the node's tasks (PS; Malcolm §3.1, Shinjuku in RackSched §3.1)."""

    discipline: Literal["ps"] = Field(description="the intra-node discipline")
    quantum_us: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="time slice; 0 = ideal egalitarian sharing (RackSched Fig. 2: 25)"
    )
    switch_cost_us: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="worker time lost per preemption; needs quantum_us > 0"
    )

    @model_validator(mode="after")
    def _cost_needs_quantum(self) -> ProcessorSharing:
        if self.switch_cost_us > 0 and self.quantum_us == 0:
            raise InvalidConfigError("switch_cost_us", self.switch_cost_us, "0 when quantum_us is 0 (ideal PS)")
        return self


class FreshLoadInfo(_Schema):
    """The dispatcher reads every node's current load (no staleness)."""

    model: Literal["fresh"] = Field("fresh", description="how stale the loads a dispatcher reads are")


Arrivals = Annotated[Poisson, Field(discriminator="process")]
IntraNode = Annotated[Fcfs | ProcessorSharing, Field(discriminator="discipline")]
LoadInfo = Annotated[FreshLoadInfo, Field(discriminator="model")]
DispatchPolicy = Annotated[
    Policy,
    PlainValidator(parse_policy, json_schema_input_type=str | dict[str, Any]),
    PlainSerializer(str, return_type=str),
]
"""A policy name as in :mod:`dcgym.agents.heuristics.registry`: ``po2``, ``{policy: po_d, d: 3}``."""


class RackScenario(_Schema):
    """A rack scenario file (``kind: rack``)."""

    kind: Literal["rack"] = Field(description="the engine model the scenario runs on")
    description: str = Field(description="one line: what the scenario is and the paper section it comes from")
    nodes: list[NodeGroup] = Field(min_length=1, description="the node groups of the rack")
    service: Service = Field(description="the service-time distribution of tasks (work at speed 1, in us)")
    arrivals: Arrivals = Field(Poisson(), description="the arrival process")
    intra_node: IntraNode = Field(Fcfs(discipline="fcfs"), description="how a node's workers share its tasks")
    dispatch: DispatchPolicy = Field(parse_policy("po2"), description="the default inter-node dispatch policy")
    load_info: LoadInfo = Field(FreshLoadInfo(), description="the load information dispatchers read")
    loads: list[Load] = Field([0.5, 0.7, 0.9], min_length=1, description="the default grid of loads to evaluate")
    warmup_fraction: float = Field(
        0.1, ge=0, lt=1, description="fraction of a run's first arrivals excluded from the statistics"
    )
    _name: str = PrivateAttr("")

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if not value.strip() or "\n" in value.strip():
            raise InvalidConfigError("", value, "one non-empty line of text")
        return value.strip()

    @model_validator(mode="after")
    def _dispatch_fits_rack(self) -> RackScenario:
        self.check_policy(self.dispatch)
        return self

    @property
    def name(self) -> str:
        """The file name without its extension (empty if built in Python)."""
        return self._name

    @property
    def num_nodes(self) -> int:
        """Nodes in the rack, over all groups."""
        return sum(group.count for group in self.nodes)

    def check_policy(self, policy: Policy) -> None:
        """Raise InvalidConfigError if ``policy`` cannot run on this rack (e.g. central_fcfs with PS)."""
        try:
            policy.params.check_rack(self.num_nodes, self.intra_node.discipline)
        except InvalidConfigError as exc:
            raise exc.under("dispatch") from None

    def warmup_tasks(self, tasks: int) -> int:
        """How many of ``tasks`` arrivals are warm-up."""
        return math.floor(self.warmup_fraction * tasks)

    def engine_config(
        self, load: float, seed: int, policy: str | Mapping[str, Any] | Policy | None = None, warmup_tasks: int = 0
    ) -> dict[str, Any]:
        """The config dict :class:`dcgym.cpp_core.RackSim` takes, at ``load`` with ``seed``.

        ``policy`` (any form :func:`parse_policy` accepts) replaces the
        scenario's dispatch policy.
        """
        policy = self.dispatch if policy is None else parse_policy(policy)
        self.check_policy(policy)
        return {
            "nodes": [
                {
                    "count": g.count,
                    "workers": g.workers,
                    "speed": g.speed,
                    "queue_capacity": -1 if g.queue_capacity is None else g.queue_capacity,
                }
                for g in self.nodes
            ],
            "service": self.service.model_dump(mode="json"),
            "load": validate(Load, load, "load"),
            "seed": validate(Seed, seed, "seed"),
            "warmup_tasks": validate(WarmupTasks, warmup_tasks, "warmup_tasks"),
            "intra_node": self.intra_node.model_dump(),
            "dispatch": policy.engine_dict(),
            "load_info": self.load_info.model_dump(),
        }


def _scenario_dir():
    return resources.files("dcgym.configs") / "scenarios"


def list_scenarios() -> list[str]:
    """Names of the packaged scenarios (``configs/scenarios/*.yaml``)."""
    return sorted(f.name.removesuffix(".yaml") for f in _scenario_dir().iterdir() if f.name.endswith(".yaml"))


def load_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> RackScenario:
    """Load and validate a scenario: a packaged name (``malcolm_homog_exp``) or a YAML file path.

    ``overrides`` maps dotted keys to values applied before validation:
    ``{"dispatch": "jsq", "nodes.0.workers": 8, "intra_node.discipline": "ps"}``.
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
    scenario = validate(RackScenario, apply_overrides(raw, overrides or {}))
    scenario._name = name
    return scenario


def _read(name_or_path: str | Path) -> tuple[str, str, str]:
    """(name, source shown in errors, text) of a scenario name or path."""
    path = Path(name_or_path)
    if isinstance(name_or_path, Path) or path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        if not path.is_file():
            raise UnknownScenarioError(str(name_or_path), list_scenarios())
        return path.stem, str(path), path.read_text(encoding="utf-8")
    resource = _scenario_dir() / f"{name_or_path}.yaml"
    if not resource.is_file():
        raise UnknownScenarioError(str(name_or_path), list_scenarios())
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
