"""The rack engine's dispatch policies, by name, and the parser of policy names.

A policy is named the same way in a scenario file and on the command line:
a name, optionally followed by parameters,

    po2                      power-of-d with d = 2 (any poN works)
    po_d:d=3,replace=false   parameters after a colon
    jbt:threshold=30         join-below-threshold with its threshold
    wcmp:weights=4;4;1;1     a list parameter, items separated by ';'
    {policy: po_d, d: 3}     the same as a YAML mapping

Each entry of :data:`HEURISTICS` maps a name to a pydantic model of its
parameters, with their defaults and allowed values, a one-line summary citing
the paper it comes from, and the entry points (switch, balancers, nodes) it
can run at. The policies themselves run in the C++ engine
(``cpp_core/include/dcgym/rack/dispatch.hpp``); they are the rack family's
heuristic baselines (:mod:`dcgym.agents.heuristics.rack`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dcgym.cpp_core import RackSim
from dcgym.envs.error import MISSING, InvalidConfigError, UnknownPolicyError, did_you_mean
from dcgym.envs.policy_spec import parse_spec, spec_label
from dcgym.envs.validation import validate

ENTRIES = ("switch", "balancers", "nodes")
"""Where tasks can enter a rack (see :mod:`dcgym.envs.rack.schema`)."""


@dataclass(frozen=True)
class Rack:
    """What a policy's checks need to know about the rack it is to run on."""

    num_nodes: int
    discipline: str = "fcfs"
    entry: str = "switch"
    types: int = 0  # task types the scenario lists (RackSched §3.6); 0 = none, one kind of task
    locality: bool = False  # some type may run on some nodes only (RackSched §3.6)


class Params(BaseModel):
    """Parameters of a policy that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def check_rack(self, rack: Rack) -> None:
        """Raise InvalidConfigError (fields relative to ``dispatch``) if the policy cannot run on ``rack``."""

    def engine_fields(self) -> dict[str, Any]:
        """The parameters as the engine's ``dispatch`` mapping takes them."""
        return self.model_dump()


class LoadAwareParams(Params):
    """Parameters of a policy that compares node loads."""

    metric: Literal["outstanding", "queue", "expected_wait", "nominal_wait", "work"] = Field(
        "outstanding",
        description="load of a node: tasks waiting or in service (RackSched §3.5, INT1's counter); tasks waiting "
        "only (the queue length of Malcolm's baselines, §7.1); outstanding x the node's moving average of "
        "execution times / workers (Malcolm §3.2's expected wait); the same with the nominal mean service time "
        "(mean size / speed) instead of the average; or the outstanding service demand in us (RackSched §3.5, INT3)",
    )
    per_type: bool = Field(
        False,
        description="compare the loads of the task's own type: the switch tracks each node's outstanding tasks per "
        "type (RackSched §3.6); needs at least two task types and metric outstanding",
    )

    @model_validator(mode="after")
    def _per_type_counts_tasks(self) -> LoadAwareParams:
        if self.per_type and self.metric != "outstanding":
            raise InvalidConfigError(
                "per_type", True, f"false when metric is {self.metric} (per-type loads count outstanding tasks)"
            )
        return self

    def check_rack(self, rack: Rack) -> None:
        if self.per_type and rack.types < 2:
            raise InvalidConfigError(
                "per_type", True, f"false unless the scenario lists at least two task types (it has {rack.types})"
            )


class PowerOfDParams(LoadAwareParams):
    """Power-of-d choices: the least loaded of d sampled nodes, ties to the first sampled."""

    d: int = Field(
        2,
        ge=1,
        le=RackSim.limits["d"],
        description="nodes sampled per task (RackSched Fig. 15: Sampling-2, Sampling-4)",
    )
    replace: bool = Field(
        True, description="sample with replacement, as RackSched's switch draws two ids independently (§3.3)"
    )

    def check_rack(self, rack: Rack) -> None:
        super().check_rack(rack)
        if not self.replace and self.d > rack.num_nodes:
            raise InvalidConfigError(
                "d", self.d, f"an integer in [1, {rack.num_nodes}] (the number of nodes) when replace is false"
            )


class JbtParams(LoadAwareParams):
    """Join-below-threshold: a random node among those below the threshold, else any node."""

    threshold: float = Field(
        1.0,
        ge=0,
        allow_inf_nan=False,
        description="a node is joined while its load is below this; 1 with metric queue = no task waiting "
        "(Malcolm §7.1 fixes a static threshold without giving it)",
    )


class JbsqParams(Params):
    """Join-bounded-shortest-queue: a node takes at most ``bound`` tasks per worker; the rest wait at the switch."""

    bound: int = Field(
        1,
        ge=1,
        le=RackSim.limits["bound"],
        description="outstanding tasks allowed per worker of a node (R2P2's JBSQ(n), n = bound x workers)",
    )

    def check_rack(self, rack: Rack) -> None:
        if rack.locality:
            raise InvalidConfigError(
                "policy",
                "jbsq",
                "a policy that respects locality when task types list their nodes (jbsq refills a "
                "node with the switch's oldest task, whatever its type)",
            )


class SedParams(LoadAwareParams):
    """Shortest expected delay: the least (load + 1) / rate."""

    by: Literal["capacity", "workers"] = Field(
        "capacity", description="a node's rate: workers x speed (capacity), or its worker count (multi-LB App. C.3)"
    )


class WcmpParams(Params):
    """Weighted random choice by static weights."""

    weights: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = Field(
        None, description="one weight per node (string form: 4;4;1;1); null = workers x speed (multi-LB App. C.3)"
    )

    @field_validator("weights", mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):  # the command-line form: wcmp:weights=4;4;1;1
            return [item.strip() for item in value.split(";") if item.strip()]
        return value

    @field_validator("weights")
    @classmethod
    def _some_weight(cls, weights: list[float] | None) -> list[float] | None:
        if weights is not None and not sum(weights) > 0:
            raise InvalidConfigError("", weights, "non-negative weights, not all 0, or null")
        return weights

    def check_rack(self, rack: Rack) -> None:
        if self.weights is not None and len(self.weights) != rack.num_nodes:
            raise InvalidConfigError("weights", self.weights, f"one weight per node ({rack.num_nodes}) or null")

    def engine_fields(self) -> dict[str, Any]:
        return {"weights": self.weights or []}


class CentralFcfsParams(Params):
    """The ideal centralized cFCFS: one rack-wide queue that idle workers pull from."""

    rtt_us: float = Field(
        0.0,
        ge=0,
        allow_inf_nan=False,
        description="delay before an idle worker receives its next task (Malcolm §2, Fig. 3)",
    )

    def check_rack(self, rack: Rack) -> None:
        if rack.discipline != "fcfs":
            raise InvalidConfigError(
                "policy",
                "central_fcfs",
                f"a per-node policy when intra_node.discipline is {rack.discipline} "
                "(central_fcfs serves one global FCFS queue)",
            )
        if rack.types:
            raise InvalidConfigError(
                "policy",
                "central_fcfs",
                "a per-node policy when the scenario lists task types (central_fcfs serves "
                "one global FCFS queue, blind to types and their nodes)",
            )


class WaterFillParams(Params):
    """Water-filling: every heartbeat, each node's migration table from the loads it believes (docs/rack.md)."""

    period_us: float = Field(
        100.0,
        gt=0,
        le=1e9,
        allow_inf_nan=False,
        description="the heartbeat: tables are recomputed this often, as Malcolm's agents act (Malcolm §7.1: 100)",
    )
    horizon: float = Field(
        2.0,
        gt=0,
        le=1e6,
        allow_inf_nan=False,
        description="the fill level absorbs this many heartbeats of the rack's arrivals: lower herds the least "
        "loaded nodes, higher tends to the capacity split",
    )
    mix: float = Field(
        0.1, ge=0, le=1, allow_inf_nan=False, description="share of the capacity split mixed into every table"
    )
    steal: bool = Field(
        False,
        description="a node whose smoothed queue runs short steals from the node it believes most loaded, when "
        "that node is above its own level (Malcolm §3.2's stealing, by a fixed rule)",
    )
    per_task: bool = Field(
        False,
        description="a node also recomputes its migration table at each arriving task, from what it believes "
        "then (its own sends since the last broadcast included), as the per-task rules (SED, JSQ) act",
    )

    estimate: Literal["average", "nominal"] = Field(
        "average",
        description="the service time in the levels' expected waits: the node's moving average of execution "
        "times (metric expected_wait, Malcolm §3.2, rack_v0's default observation) or the nominal mean, mean size / "
        "speed (metric nominal_wait): on heavy-tailed service times the average is noisy and misleads the fill",
    )

    def engine_fields(self) -> dict[str, Any]:
        fields = self.model_dump(exclude={"estimate"})
        return {**fields, "metric": "expected_wait" if self.estimate == "average" else "nominal_wait"}


@dataclass(frozen=True)
class Heuristic:
    """A registry entry: the parameter model, a one-line summary citing the papers, the entries it runs at."""

    params: type[Params]
    summary: str
    entries: tuple[str, ...] = ENTRIES


HEURISTICS: dict[str, Heuristic] = {
    "random": Heuristic(
        Params,
        "uniform over nodes; at entry nodes every node accepts its arrivals: Malcolm's RAND (§7.1); "
        "plain Shinjuku in RackSched (§4.2)",
    ),
    "round_robin": Heuristic(Params, "cyclic over nodes: RackSched's RR (§4.6, Fig. 15)"),
    "po_d": Heuristic(
        PowerOfDParams, "least loaded of d sampled nodes: Malcolm's Po2 (§7.1), RackSched's Sampling-k (§3.3, §4.6)"
    ),
    "jsq": Heuristic(
        LoadAwareParams, "least loaded node, ties at random: Malcolm's JSQ (§7.1), RackSched's Shortest (§4.6)"
    ),
    "jbt": Heuristic(JbtParams, "a random node below a load threshold, else any node: Malcolm's JBT (§7.1)"),
    "jbsq": Heuristic(
        JbsqParams,
        "join-bounded-shortest-queue, excess tasks wait at the switch: R2P2's JBSQ as compared in "
        "RackSched (§4.5, Fig. 14) and Malcolm (§7.1)",
        ("switch",),
    ),
    "sed": Heuristic(
        SedParams, "shortest expected delay, least (load + 1) / rate: the multi-LB paper's SED (App. C.3)"
    ),
    "wcmp": Heuristic(WcmpParams, "random by static weights: the multi-LB paper's WCMP (App. C.3)"),
    "lsq": Heuristic(Params, "least own count of tasks sent and not yet replied: the multi-LB paper's LSQ (App. C.3)"),
    "ecmp": Heuristic(Params, "per-flow hashing, uniform per task: the multi-LB paper's ECMP (App. C.3)"),
    "oracle": Heuristic(
        Params,
        "knows every node's remaining work; least (work + size) / capacity: the multi-LB paper's Oracle (App. C.3)",
    ),
    "central_fcfs": Heuristic(
        CentralFcfsParams, "ideal centralized cFCFS (Malcolm §2 Fig. 1, RackSched §2 Fig. 2)", ("switch",)
    ),
    "water_fill": Heuristic(
        WaterFillParams,
        "every heartbeat, each node migrates in proportion to capacity x headroom below a fill level, on its "
        "stale loads (optionally stealing from the most loaded): Malcolm's action space (§3.2) by a fixed rule",
        ("nodes",),
    ),
    "table": Heuristic(
        Params,
        "each node's migration and stealing probabilities, set from Python with RackSim.set_tables; until "
        "then every node accepts every task: Malcolm's load manager (§3.2, §6.1)",
        ("nodes",),
    ),
}
"""Every heuristic policy, by its canonical name."""

ALIASES: dict[str, str] = {"rr": "round_robin"}
"""Other spellings of a canonical name."""

_PO_N = re.compile(r"po(\d+)")  # po2, po4, ...: po_d with d fixed by the name
_GRAMMAR = "NAME or NAME:KEY=VALUE,KEY=VALUE with distinct keys"


def known_policy_names() -> list[str]:
    """The policy names users can write (``poN`` stands for po2, po4, ...)."""
    return [*HEURISTICS, *ALIASES, "poN"]


def policy_parameters() -> dict[str, list[str]]:
    """Every parameter name any policy takes, with the policies that take it."""
    names: dict[str, list[str]] = {}
    for name, heuristic in HEURISTICS.items():
        for field in heuristic.params.model_fields:
            names.setdefault(field, []).append(name)
    return names


@dataclass(frozen=True)
class Policy:
    """A parsed policy: its registry name, validated parameters, and the label results report it under."""

    name: str
    params: Params
    label: str

    def engine_dict(self) -> dict[str, Any]:
        """The ``dispatch`` entry of the engine config, every parameter filled in."""
        return {"policy": self.name, **self.params.engine_fields()}

    def check_rack(self, rack: Rack) -> None:
        """Raise InvalidConfigError (fields relative to ``dispatch``) if the policy cannot run on ``rack``."""
        entries = HEURISTICS[self.name].entries
        if rack.entry not in entries:
            raise InvalidConfigError(
                "policy",
                self.name,
                f"a policy that runs at entry {rack.entry} ({self.name} needs entry {' or '.join(entries)})",
            )
        self.params.check_rack(rack)

    def with_defaults(self, defaults: Mapping[str, Any]) -> Policy:
        """The same policy with ``defaults`` for the parameters it takes and was not given explicitly.

        A scenario uses this to give every policy run on it the same setting
        (Malcolm's baselines compare queue lengths: ``{metric: queue}``). The
        label is unchanged. Raises InvalidConfigError naming a bad value.
        """
        fields, given = type(self.params).model_fields, self.params.model_fields_set
        extra = {k: v for k, v in defaults.items() if k in fields and k not in given}
        if not extra:
            return self
        params = validate(type(self.params), {**extra, **self.params.model_dump(include=given)})
        return Policy(self.name, params, self.label)

    def __str__(self) -> str:
        return self.label


def parse_policy(spec: str | Mapping[str, Any] | Policy) -> Policy:
    """Parse ``po_d:d=3,replace=false``, ``{"policy": "po_d", "d": 3}`` or ``po2`` into a Policy.

    Raises UnknownPolicyError (with a did-you-mean) for an unknown name and
    InvalidConfigError naming the parameter for a bad parameter.
    """
    if isinstance(spec, Policy):
        return spec
    if isinstance(spec, str):
        written, given = parse_spec(spec, lambda item: InvalidConfigError("policy", spec, _GRAMMAR))
        if not written:
            raise InvalidConfigError("policy", spec, "a policy name: one of " + ", ".join(known_policy_names()))
    elif isinstance(spec, Mapping):
        given = dict(spec)
        written = given.pop("policy", MISSING)
        if not isinstance(written, str) or written is MISSING:
            raise InvalidConfigError("policy", written, "a policy name: one of " + ", ".join(known_policy_names()))
    else:
        raise InvalidConfigError("", spec, "a policy name such as po2, or a mapping {policy: NAME, PARAM: VALUE}")
    written = ALIASES.get(written, written)
    name, fixed = _resolve(written)
    clash = sorted(fixed.keys() & given.keys())
    if clash:
        key = clash[0]
        raise InvalidConfigError(key, given[key], f"nothing: {written} fixes {key}={fixed[key]}; use po_d:{key}=...")
    params = validate(HEURISTICS[name].params, {**given, **fixed})
    return Policy(name, params, spec_label(written, {k: getattr(params, k) for k in given}))


def _resolve(written: str) -> tuple[str, dict[str, int]]:
    """The registry name of a written name, and the parameters the name itself fixes."""
    if written in HEURISTICS:
        return written, {}
    match = _PO_N.fullmatch(written)
    if match:
        return "po_d", {"d": int(match[1])}
    spellings = [*HEURISTICS, *ALIASES, "po2", "po4"]
    raise UnknownPolicyError(written, known_policy_names(), suggestion=did_you_mean(written, spellings))
