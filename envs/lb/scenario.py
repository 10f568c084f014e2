"""Multi-LB scenario files (``kind: lb``): schema and engine config.

A multi-LB scenario describes the network load-balancing setting of the
multi-LB paper (Yao et al., CIKM 2022, App. C.1 and Table 9): M load balancers, each with
its own share of the Poisson traffic and its own dispatch policy, over server
groups whose flows alternate CPU and IO stages. Times are in microseconds,
like the rack model; every field names its unit. The C++ model is
``dcgym.cpp_core.LbSim`` (docs/lb.md); files written before the
family was named ``lb`` say ``kind: multistage``, still accepted with a
FutureWarning naming ``lb``::

    scenario = load_lb_scenario("lb_reference", {"policy": "lsq"})
    sim = LbSim(scenario.engine_config(load=0.61, seed=1))

**Load.** ``load`` is the offered work as a fraction of the total CPU
capacity, the way the authors' simulator normalizes its ``--lambda``
(``run.py``: rate = lambda x sum of workers / mean flow time)::

    arrival rate = load x sum over servers of (workers x speed) / D

with D = E[total CPU time] + E[total IO time] of a flow (``load_basis:
total``, the default), or D = E[total CPU time] (``load_basis: cpu``). For a
CPU-only application both are the CPU utilization; with IO stages, ``total``
counts IO time as if it were CPU time, which keeps each server's single IO
queue stable at every load below 1 (``cpu`` can overload the IO queues).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, model_validator

from dcgym.cpp_core import LbSim
from dcgym.envs.distributions import Service
from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.scenario import load_scenario
from dcgym.envs.schema import Load, ScenarioBase, Seed
from dcgym.envs.schema import Schema as _Schema
from dcgym.envs.validation import validate

LIMITS = LbSim.limits
"""The engine's bounds of an lb config (lb/lb_sim.hpp), which the fields below take as theirs."""

WarmupFlows = Annotated[int, Field(ge=0)]
Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]

LB_POLICIES: dict[str, str] = {  # the policies of App. C.3 plus `weights`, the RL agent's action
    "ecmp": "uniform over servers (App. C.3, ECMP)",
    "wcmp": "probability proportional to static weights, default workers x speed (WCMP)",
    "lsq": "least local count of the LB's own flows in progress, ties at random (LSQ)",
    "sed": "least (local count + 1) / weight, ties at random (SED)",
    "oracle": "least expected time to finish all of a server's work, the new flow included (Oracle)",
    "weights": "probability proportional to weights set from outside between decision periods (lb_v0's action)",
}


def _parse_policies(value: Any) -> str | list[str]:
    """A policy name or a list of names, each one of LB_POLICIES (raises InvalidConfigError otherwise)."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or any(n not in LB_POLICIES for n in names):
        bad = next((n for n in names if n not in LB_POLICIES), value) if isinstance(names, list) else value
        suggestion = did_you_mean(bad, LB_POLICIES) if isinstance(bad, str) else None
        raise InvalidConfigError(
            "", value, "one of " + ", ".join(LB_POLICIES) + ", or a list of them (one per LB)", suggestion=suggestion
        )
    return value if isinstance(value, str) else list(value)


Policies = Annotated[str | list[str], PlainValidator(_parse_policies, json_schema_input_type=str | list[str])]
"""A policy name for every LB, or a list with one per LB."""


class ServerGroup(_Schema):
    """A group of identical application servers."""

    count: int = Field(ge=1, le=LIMITS["servers"], description="number of servers in the group")
    workers: int = Field(ge=1, le=LIMITS["workers"], description="CPU worker threads p per server")
    speed: float = Field(
        1.0, gt=0, allow_inf_nan=False, description="CPU work per microsecond per worker (IO unaffected)"
    )
    mp_level: int = Field(
        1,
        ge=1,
        le=LIMITS["mp_level"],
        description="at most workers x mp_level jobs in CPU service; the rest wait (App. C.1, eq. 42)",
    )


class Application(_Schema):
    """Flows alternate CPU and IO stages, starting with CPU (App. C.1, Fig. 5b; Table 10)."""

    stages: int = Field(1, ge=1, le=LIMITS["stages"], description="number of stages: CPU, IO, CPU, ...")
    cpu: Service = Field(description="total CPU time of a flow (us at speed 1), split over its CPU stages")
    io: Service | None = Field(
        None, description="total IO time of a flow (us), split over its IO stages; needed with 2+ stages"
    )
    split: Literal["uniform", "equal"] = Field(
        "uniform",
        description="how a total is cut into stages: successive uniform pieces of what is left (the authors' "
        "simulator) or equal shares",
    )

    @model_validator(mode="after")
    def _io_with_io_stages(self) -> Application:
        if self.stages > 1 and self.io is None:
            allowed = f"a distribution: the application has {self.stages} stages, so IO ones"
            raise InvalidConfigError("io", None, allowed)
        return self


class HopDelay(_Schema):
    """One network hop (LB to server, server to client, client to LB): uniform in [min_us, max_us]."""

    min_us: float = Field(100.0, ge=0, allow_inf_nan=False, description="shortest hop (us); App. C.1: 0.1 ms")
    max_us: float = Field(1000.0, ge=0, allow_inf_nan=False, description="longest hop (us); App. C.1: 1 ms")

    @model_validator(mode="after")
    def _ordered(self) -> HopDelay:
        if self.max_us < self.min_us:
            raise InvalidConfigError("max_us", self.max_us, f"a number >= min_us ({self.min_us:g})")
        return self


class Observation(_Schema):
    """What each LB measures passively about its own flows (App. C.2.4; the authors' simulator)."""

    reservoir_size: int = Field(
        32, ge=1, le=LIMITS["reservoir_size"], description="samples kept per server and decision period"
    )
    fd_density: int = Field(
        2,
        ge=0,
        le=LIMITS["fd_density"],
        description="flow-duration samples per tracked flow per LB arrival: 0 to this many; 0 = off",
    )
    fd_min_us: float = Field(
        10_000.0, ge=0, allow_inf_nan=False, description="flow-duration samples at or below are dropped"
    )
    decay_half_life_us: float = Field(
        1_000_000.0, gt=0, allow_inf_nan=False, description="half-life of the freshness weight of the decayed averages"
    )


class CapacityChange(_Schema):
    """From ``at_us`` on, the CPU workers of server group ``group`` run at ``speed`` (App. E.2.3).

    The paper applies extra CPU-bound work to one server group from 25 s; the
    engine models it as the group's CPU speed dropping to the share the
    co-located work leaves (IO is unaffected). The policies' static weights
    (WCMP, SED: workers x speed) keep the initial speed, as a configured
    balancer would; the Oracle sees the new speed.
    """

    at_us: float = Field(ge=0, allow_inf_nan=False, description="when the change happens (us from the start)")
    group: int = Field(ge=0, description="index of the server group in ``servers``")
    speed: float = Field(gt=0, allow_inf_nan=False, description="the group's CPU speed per worker from then on")


class LbScenario(ScenarioBase):
    """A multi-LB scenario file (``kind: lb``)."""

    kind: Literal["lb"] = Field(description="the family of the scenario")
    servers: list[ServerGroup] = Field(min_length=1, description="the server groups")
    application: Application = Field(description="the stages of a flow and their times")
    lbs: int = Field(1, ge=1, le=LIMITS["lbs"], description="number of load balancers M")
    split: list[Weight] | None = Field(
        None, description="relative share of the traffic of each LB (one per LB); null = equal shares"
    )
    policy: Policies = Field("sed", description="the default dispatch policy of every LB, or a list with one per LB")
    weights: list[Weight] | None = Field(
        None, description="static weights per server for wcmp / sed / weights; null = workers x speed (1 for weights)"
    )
    load_basis: Literal["total", "cpu"] = Field("total", description="what load is a fraction of (module docstring)")
    backlog: int = Field(
        64, ge=0, le=LIMITS["backlog"], description="a server holding more jobs rejects a new flow (App. C.1)"
    )
    timeout_us: float = Field(
        40_000_000.0, ge=0, allow_inf_nan=False, description="added to a rejected flow's FCT (App. C.1: 40 s)"
    )
    hop_delay_us: HopDelay = Field(HopDelay(), description="per-hop network delay")
    decision_period_us: float = Field(
        500_000.0, gt=0, allow_inf_nan=False, description="LB step interval; observations cover one period (Table 9)"
    )
    cpu_wait_order: Literal["fifo", "arrival"] = Field(
        "fifo", description="CPU backlog order: FIFO (App. C.1) or by server arrival (the authors' simulator)"
    )
    observation: Observation = Field(Observation(), description="the LBs' passive measurements")
    loads: list[Load] = Field([0.5, 0.7, 0.9], min_length=1, description="the default grid of loads to evaluate")
    episode_flows: int | None = Field(
        None, ge=1, description="an episode ends when this many flows have ended (the authors' --n-flow), from empty"
    )
    episode_us: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="an episode lasts this long (Table 9: 60 s), from empty"
    )
    capacity_changes: list[CapacityChange] = Field(
        [], description="changes of a server group's CPU speed during a run (App. E.2.3), in time order"
    )

    @model_validator(mode="after")
    def _lengths(self) -> LbScenario:
        if self.episode_flows is not None and self.episode_us is not None:
            raise InvalidConfigError("episode_us", self.episode_us, "null when episode_flows is set (one episode rule)")
        if self.num_servers > LIMITS["servers"]:
            counts = [g.count for g in self.servers]
            allowed = f"groups of at most {LIMITS['servers']} servers in all (these have {self.num_servers})"
            raise InvalidConfigError("servers", counts, allowed)
        samples = self.lbs * self.num_servers * self.observation.reservoir_size
        if samples > LIMITS["reservoir_samples"]:
            allowed = f"at most {LIMITS['reservoir_samples']} samples: lbs x servers x reservoir_size is {samples}"
            raise InvalidConfigError("observation.reservoir_size", self.observation.reservoir_size, allowed)
        if self.split is not None:
            if len(self.split) != self.lbs:
                raise InvalidConfigError("split", self.split, f"a list of {self.lbs} shares, one per LB")
            if not sum(self.split) > 0:
                raise InvalidConfigError("split", self.split, "shares with a positive sum")
        self.check_policy(self.policy)
        for k, change in enumerate(self.capacity_changes):
            if change.group >= len(self.servers):
                allowed = f"a server group index in [0, {len(self.servers) - 1}]"
                raise InvalidConfigError(f"capacity_changes.{k}.group", change.group, allowed)
            if k and change.at_us < self.capacity_changes[k - 1].at_us:
                raise InvalidConfigError(f"capacity_changes.{k}.at_us", change.at_us, "changes in time order")
        if self.weights is not None:
            if len(self.weights) != self.num_servers:
                allowed = f"a list of {self.num_servers} weights, one per server"
                raise InvalidConfigError("weights", self.weights, allowed)
            if not sum(self.weights) > 0:
                raise InvalidConfigError("weights", self.weights, "weights with a positive sum")
        return self

    @property
    def num_servers(self) -> int:
        return sum(g.count for g in self.servers)

    def check_policy(self, policy: str | Sequence[str]) -> list[str]:
        """The policy of each LB; raises InvalidConfigError naming ``policy`` if it is not valid here."""
        try:
            policy = _parse_policies(policy if isinstance(policy, str) else list(policy))
        except InvalidConfigError as exc:
            raise exc.under("policy") from None
        policies = [policy] * self.lbs if isinstance(policy, str) else policy
        if len(policies) != self.lbs:
            raise InvalidConfigError("policy", policy, f"one policy, or a list of {self.lbs} (one per LB)")
        return policies

    def engine_config(
        self, load: float, seed: int, policy: str | Sequence[str] | None = None, warmup_flows: int = 0
    ) -> dict[str, Any]:
        """The config dict ``LbSim`` takes, at ``load`` with ``seed``; ``policy`` replaces the scenario's."""
        policies = self.check_policy(self.policy if policy is None else policy)
        shares = self.split or [1.0] * self.lbs
        return {
            "servers": [g.model_dump() for g in self.servers],
            "application": self.application.model_dump(mode="json"),
            "lbs": [
                {"policy": p, "weights": None if self.weights is None else list(self.weights), "share": s}
                for p, s in zip(policies, shares)
            ],
            "load": validate(Load, load, "load"),
            "load_basis": self.load_basis,
            "seed": validate(Seed, seed, "seed"),
            "backlog": self.backlog,
            "timeout_us": self.timeout_us,
            "hop_delay_us": {"min": self.hop_delay_us.min_us, "max": self.hop_delay_us.max_us},
            "decision_period_us": self.decision_period_us,
            "cpu_wait_order": self.cpu_wait_order,
            "observation": self.observation.model_dump(),
            "warmup_flows": validate(WarmupFlows, warmup_flows, "warmup_flows"),
            "capacity_changes": [c.model_dump() for c in self.capacity_changes],
        }


def load_lb_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None) -> LbScenario:
    """:func:`dcgym.envs.scenario.load_scenario` of a lb scenario (``kind: lb``): a packaged name or a path."""
    return load_scenario(name_or_path, overrides, kind="lb")
