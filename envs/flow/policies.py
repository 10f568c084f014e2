"""The flow engine's scheduling policies, by name, and the parser of policy names.

A policy is named the same way in a scenario file and on the command line::

    qlas                                    MLFQ with the scenario's levels and thresholds
    pias                                    MLFQ with 8 levels (PIAS's switches) and the scenario's thresholds
    qsjf:thresholds=pias_ws                 a preset (dcgym.envs.flow.thresholds)
    qlas:thresholds=20000;1000000;10000000  thresholds in bytes, separated by ';'
    {policy: qsjf, priorities: 8, thresholds: [10000, 20000, ...]}

Every policy routes a flow by ECMP (the engine draws one of the pair's
paths uniformly, its per-flow hash). The policies run in the C++ engine
(``cpp_core/include/dcgym/flow/flow_sim.hpp``); they are the flow family's
baselines (:mod:`dcgym.agents.heuristics.flow`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dcgym.envs.error import MISSING, InvalidConfigError, UnknownPolicyError, did_you_mean
from dcgym.envs.flow.thresholds import preset_thresholds
from dcgym.envs.policy_spec import parse_spec, spec_label
from dcgym.envs.validation import validate

__all__ = ["FLOW_POLICIES", "FlowPolicy", "FlowPolicyInfo", "parse_flow_policy"]

_GRAMMAR = "NAME or NAME:KEY=VALUE,KEY=VALUE with distinct keys"

Bytes = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Params(BaseModel):
    """Parameters of a policy that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RankedParams(Params):
    """Parameters of a policy with priority levels and thresholds (MLFQ, QSJF)."""

    priorities: int | None = Field(
        None, ge=2, le=8, description="priority levels K (null: the scenario's; pias: 8, PIAS's switch queues)"
    )
    thresholds: str | list[Bytes] = Field(
        "pias_ws",
        description="a preset name (dcgym.envs.flow.thresholds) or K - 1 non-decreasing thresholds in bytes "
        "(string form: 20000;1e6;1e7); a policy named without them on a scenario takes the scenario's",
    )

    @field_validator("thresholds", mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str) and (";" in value or value[:1].isdigit()):
            return [item.strip() for item in value.split(";") if item.strip()]
        return value

    @field_validator("thresholds")
    @classmethod
    def _non_decreasing(cls, value: Any) -> Any:
        if isinstance(value, list) and any(b < a for a, b in zip(value, value[1:])):
            raise InvalidConfigError("", value, "thresholds in bytes in non-decreasing order")
        return value


class PathBalParams(RankedParams):
    """Parameters of pathbal: MLFQ (as qlas) plus a periodic move of long flows to their least-loaded path."""

    interval_ms: float = Field(10.0, gt=0, le=1000, allow_inf_nan=False, description="time between moves, ms")
    long_bytes: Bytes = Field(1048576.0, description="a flow is moved once it has sent this many bytes")
    flows: int = Field(0, ge=0, description="the oldest long flows moved each interval (0: every one)")
    demote: bool = Field(
        False, description="also pin each long flow to the last level (lRLA's lowest priority; false: MLFQ's level)"
    )
    demote_bytes: Bytes | None = Field(
        None,
        description="with demote: pin a long flow only once it has sent this many bytes, at least long_bytes (null: "
        "long_bytes, every long flow); the long flows short of it move and keep MLFQ's level",
    )

    @model_validator(mode="after")
    def _demote_bytes(self) -> PathBalParams:
        if self.demote_bytes is not None:
            if not self.demote:
                raise InvalidConfigError("demote_bytes", self.demote_bytes, "only with demote=true (it says when)")
            if self.demote_bytes < self.long_bytes:
                raise InvalidConfigError(
                    "demote_bytes",
                    self.demote_bytes,
                    f"at least long_bytes ({self.long_bytes:g}): only long flows move",
                )
        return self


@dataclass(frozen=True)
class FlowPolicyInfo:
    """A registry entry: the engine discipline, the parameter model, a one-line summary citing the paper."""

    discipline: str
    params: type[Params]
    summary: str
    default_levels: int | None = None  # levels the policy uses when neither it nor the scenario says (pias: 8)


FLOW_POLICIES: dict[str, FlowPolicyInfo] = {
    "fair": FlowPolicyInfo(
        "fair", Params, "one queue, max-min fair sharing: DCTCP's fair share in the fluid model (PIAS §5's DCTCP)"
    ),
    "qsjf": FlowPolicyInfo(
        "qsjf", RankedParams, "K levels by the known size, smallest first: AuTO's quantized SJF (§6)"
    ),
    "qlas": FlowPolicyInfo(
        "mlfq", RankedParams, "MLFQ, demoted on bytes sent with K - 1 thresholds: AuTO's quantized LAS (§6)"
    ),
    "pias": FlowPolicyInfo(
        "mlfq", RankedParams, "MLFQ with 8 levels on bytes sent: PIAS (NSDI 2015 §3)", default_levels=8
    ),
    "las": FlowPolicyInfo(
        "las", Params, "least attained service, exact (MLFQ with a threshold at every byte); single_link only"
    ),
    "srpt": FlowPolicyInfo(
        "srpt",
        Params,
        "shortest remaining size first, preemptive, on the flow's ECMP path (SRPT with ECMP paths): pFabric's "
        "ideal (SIGCOMM 2013 §6) for one path per flow; path control can beat it",
    ),
    "pathbal": FlowPolicyInfo(
        "mlfq",
        PathBalParams,
        "MLFQ (as qlas) whose long flows move, every interval, to the path carrying the fewest unfinished bytes: "
        "a fixed rule in AuTO's lRLA action space (§4.2: long flows' paths and priorities)",
    ),
}
"""Every scheduling policy, by name."""


@dataclass(frozen=True)
class FlowPolicy:
    """A parsed policy: its registry name, validated parameters, and the label results report it under."""

    name: str
    params: Params
    label: str

    @property
    def discipline(self) -> str:
        return FLOW_POLICIES[self.name].discipline

    @property
    def ranked(self) -> bool:
        return isinstance(self.params, RankedParams)

    def with_defaults(self, defaults: Mapping[str, Any]) -> FlowPolicy:
        """The same policy with ``defaults`` for the parameters it takes and was not given (label unchanged)."""
        fields, given = type(self.params).model_fields, self.params.model_fields_set
        extra = {k: v for k, v in defaults.items() if k in fields and k not in given and v is not None}
        if not extra:
            return self
        return FlowPolicy(
            self.name, validate(type(self.params), {**extra, **self.params.model_dump(include=given)}), self.label
        )

    @property
    def balance(self) -> dict[str, Any] | None:
        """pathbal's moves (interval_s, long_bytes, max_flows, demote, demote_bytes), None for a policy that moves
        no flow."""
        p = self.params
        if not isinstance(p, PathBalParams):
            return None
        return {
            "interval_s": p.interval_ms / 1e3,
            "long_bytes": p.long_bytes,
            "max_flows": p.flows,
            "demote": p.demote,
            "demote_bytes": p.demote_bytes if p.demote_bytes is not None else p.long_bytes,
        }

    def scheduling(self, levels: int, field: str = "scheduling") -> dict[str, Any]:
        """The engine's ``scheduling`` mapping with ``levels`` priority levels unless the policy sets its own."""
        if not self.ranked:
            return {"discipline": self.discipline, "levels": 1}
        p = self.params
        assert isinstance(p, RankedParams)
        k = p.priorities or FLOW_POLICIES[self.name].default_levels or levels
        kind = "qsjf" if self.discipline == "qsjf" else "mlfq"
        if isinstance(p.thresholds, str):
            thresholds = preset_thresholds(p.thresholds, kind, k, f"{field}.thresholds").bytes
        else:
            thresholds = [float(t) for t in p.thresholds]
            if len(thresholds) != k - 1:
                raise InvalidConfigError(
                    f"{field}.thresholds", p.thresholds, f"{k - 1} thresholds in bytes ({self.name} with {k} levels)"
                )
        return {"discipline": self.discipline, "levels": k, "thresholds_bytes": thresholds}

    def __str__(self) -> str:
        return self.label


def _is_policy_file(text: str) -> bool:
    return text.startswith("zoo:") or text.endswith(".dcpol") or Path(text).suffix == ".dcpol"


def parse_flow_policy(spec: str | Mapping[str, Any] | FlowPolicy) -> FlowPolicy:
    """Parse ``qlas``, ``qsjf:thresholds=pias_ws`` or ``{"policy": "pias", "thresholds": [...]}``.

    Raises UnknownPolicyError (with a did-you-mean) for an unknown name and InvalidConfigError naming the
    parameter for a bad one.
    """
    if isinstance(spec, FlowPolicy):
        return spec
    if isinstance(spec, str):
        if _is_policy_file(spec):
            raise InvalidConfigError(
                "policy",
                spec,
                "a heuristic (" + ", ".join(FLOW_POLICIES) + "): a policy file (AuTO's exported agents) runs as an "
                "evaluated policy (evaluate.py --policy FILE.dcpol), not as the scheduling of a scenario or env",
            )
        written, given = parse_spec(spec, lambda item: InvalidConfigError("policy", spec, _GRAMMAR))
    elif isinstance(spec, Mapping):
        given = dict(spec)
        written = given.pop("policy", MISSING)
        if not isinstance(written, str):
            raise InvalidConfigError("policy", written, "a policy name: one of " + ", ".join(FLOW_POLICIES))
    else:
        raise InvalidConfigError("", spec, "a policy name such as qlas, or a mapping {policy: NAME, PARAM: VALUE}")
    if written not in FLOW_POLICIES:
        raise UnknownPolicyError(written, FLOW_POLICIES, suggestion=did_you_mean(written, FLOW_POLICIES))
    params = validate(FLOW_POLICIES[written].params, given)
    return FlowPolicy(written, params, spec_label(written, {k: getattr(params, k) for k in given}))
