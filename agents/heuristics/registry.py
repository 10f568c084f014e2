"""The heuristic dispatch policies, by name, and the parser of policy names.

A policy is named the same way in a scenario file and on the command line
(DESIGN.md, "Scenario files"): a name, optionally followed by parameters,

    po2                      power-of-d with d = 2 (any poN works)
    po_d:d=3,replace=false   parameters after a colon
    {policy: po_d, d: 3}     the same as a YAML mapping

Each entry of :data:`HEURISTICS` maps a name to a pydantic model of its
parameters, with their defaults and allowed values. A new heuristic (jbt,
jbsq, sed, wcmp, ...) is one more entry here plus its engine dispatcher.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dcgym.envs.error import MISSING, InvalidConfigError, UnknownPolicyError, did_you_mean
from dcgym.envs.validation import validate


class Params(BaseModel):
    """Parameters of a policy that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def check_rack(self, num_nodes: int, discipline: str) -> None:
        """Raise InvalidConfigError (fields relative to ``dispatch``) if the policy cannot run on this rack."""


class LoadAwareParams(Params):
    """Parameters of a policy that compares node loads."""

    metric: Literal["outstanding", "queue"] = Field(
        "outstanding",
        description="load of a node: tasks waiting or in service (RackSched §3.5, the switch's counter), "
        "or tasks waiting only (the queue length of Malcolm's baselines, §7.1)",
    )


class PowerOfDParams(LoadAwareParams):
    """Power-of-d choices: the least loaded of d sampled nodes, ties to the first sampled."""

    d: int = Field(2, ge=1, le=64, description="nodes sampled per task")
    replace: bool = Field(
        True, description="sample with replacement, as RackSched's switch draws two ids independently (§3.3)"
    )

    def check_rack(self, num_nodes: int, discipline: str) -> None:
        if not self.replace and self.d > num_nodes:
            raise InvalidConfigError(
                "d", self.d, f"an integer in [1, {num_nodes}] (the number of nodes) when replace is false"
            )


class CentralFcfsParams(Params):
    """The ideal centralized cFCFS: one rack-wide queue that idle workers pull from."""

    rtt_us: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="delay before an idle worker receives its next task (us)"
    )

    def check_rack(self, num_nodes: int, discipline: str) -> None:
        if discipline != "fcfs":
            raise InvalidConfigError(
                "policy", "central_fcfs", f"a per-node policy when intra_node.discipline is {discipline} "
                "(central_fcfs serves one global FCFS queue)"
            )


@dataclass(frozen=True)
class Heuristic:
    """A registry entry: the parameter model and a one-line summary citing the papers."""

    params: type[Params]
    summary: str


HEURISTICS: dict[str, Heuristic] = {
    "random": Heuristic(Params, "uniform over nodes: Malcolm's RAND (§7.1), plain Shinjuku in RackSched (§4.2)"),
    "round_robin": Heuristic(Params, "cyclic over nodes (RackSched §4.5)"),
    "po_d": Heuristic(PowerOfDParams, "least loaded of d sampled nodes: Malcolm's Po2 (§7.1), RackSched (§3.3)"),
    "jsq": Heuristic(LoadAwareParams, "least loaded node, ties at random: Malcolm's JSQ (§7.1), RackSched's Shortest"),
    "central_fcfs": Heuristic(
        CentralFcfsParams, "ideal centralized cFCFS (Malcolm §2 Fig. 1, RackSched §2 Fig. 2)"
    ),
}
"""Every heuristic policy, by its canonical name."""

ALIASES: dict[str, str] = {"rr": "round_robin"}
"""Other spellings of a canonical name."""

_PO_N = re.compile(r"po(\d+)")  # po2, po4, ...: po_d with d fixed by the name


def known_policy_names() -> list[str]:
    """The policy names users can write (``poN`` stands for po2, po4, ...)."""
    return [*HEURISTICS, *ALIASES, "poN"]


@dataclass(frozen=True)
class Policy:
    """A parsed policy: its registry name, validated parameters, and the label results report it under."""

    name: str
    params: Params
    label: str

    def engine_dict(self) -> dict[str, Any]:
        """The ``dispatch`` entry of the engine config, every parameter filled in."""
        return {"policy": self.name, **self.params.model_dump()}

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
        written, given = _split(spec)
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
    label = written + (":" + ",".join(f"{k}={_show(getattr(params, k))}" for k in given) if given else "")
    return Policy(name, params, label)


def _resolve(written: str) -> tuple[str, dict[str, int]]:
    """The registry name of a written name, and the parameters the name itself fixes."""
    if written in HEURISTICS:
        return written, {}
    match = _PO_N.fullmatch(written)
    if match:
        return "po_d", {"d": int(match[1])}
    spellings = [*HEURISTICS, *ALIASES, "po2", "po4"]
    raise UnknownPolicyError(written, known_policy_names(), suggestion=did_you_mean(written, spellings))


def _split(spec: str) -> tuple[str, dict[str, str]]:
    """``name:key=value,key=value`` into the name and the raw parameter strings."""
    name, _, rest = spec.partition(":")
    given: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = (s.strip() for s in item.partition("="))
        if not (key and eq) or key in given:
            raise InvalidConfigError("policy", spec, "NAME or NAME:KEY=VALUE,KEY=VALUE with distinct keys")
        given[key] = value
    if not name.strip():
        raise InvalidConfigError("policy", spec, "a policy name: one of " + ", ".join(known_policy_names()))
    return name.strip(), given


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
