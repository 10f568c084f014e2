"""How a policy file acts on a multi-LB cluster: an ``mlp`` exported from a Distr-LB, Centr-LB or RLB-SAC run,
run by the C++ deployment runtime through lb_v0.

Each decision period, lb_v0 in Python hands every LB's observation to the runtime (``RuntimePolicy``,
cpp_core/include/dcgym/runtime/mlp.hpp), whose outputs become the LBs' weights: the weights themselves for
continuous weights (K = N outputs), the argmax of each server's block of 3 logits for weight levels (K = 3 N). A
file with one network over every LB's observation (M N 12 inputs, K = 3 M N or M N) is a centralized policy and
gets lb_v0's ``state()`` (:func:`file_actions`). How the LBs apply the weights (``dispatch``) is the one the file
records (:mod:`.file_settings`): its weights were trained under it; a file written before format version 3
records none and gets lb_v0's default ``weights`` unless the spec says otherwise (``FILE:dispatch=sed``), and a
spec that contradicts the file is refused (:func:`load_lb_policy_file`). Outputs that are not finite stop the run
with one line (:func:`file_actions`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.agents.policies.file_settings import resolve
from dcgym.agents.policies.zoo import ZOO_PREFIX, resolve_zoo
from dcgym.agents.policy_format import MlpPolicy, from_bytes
from dcgym.cpp_core import RuntimePolicy
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.lb import lb_v0
from dcgym.envs.lb.scenario import LbScenario
from dcgym.envs.policy_spec import parse_spec, split_spec

__all__ = ["LbPolicyFile", "file_actions", "fixed_weights", "load_lb_policy_file"]

STATIC_WEIGHT_POLICIES = ("sed", "wcmp")
"""The heuristics whose static weights a spec may set per server group: ``sed:weights=1;1.5``."""


def fixed_weights(spec: str, scenario: LbScenario) -> tuple[str, LbScenario]:
    """A heuristic spec with static weights per server group (``sed:weights=1;1.5``: the scenario's groups in
    order, each server taking its group's weight) -> (the heuristic, the scenario with those weights); a spec
    without options is returned as it is. The best such pattern is every weight-setting learner's ceiling
    (docs/results/multilb.md). InvalidConfigError naming ``policy`` otherwise."""
    name, options = parse_spec(spec, lambda item: InvalidConfigError("policy", spec, "NAME:weights=W1;W2;..."))
    if not options:
        return spec, scenario
    groups = len(scenario.servers)
    allowed = f"{' or '.join(STATIC_WEIGHT_POLICIES)}:weights=W1;...;W{groups} (one positive weight per server group)"
    if name not in STATIC_WEIGHT_POLICIES or set(options) != {"weights"}:
        raise InvalidConfigError("policy", spec, allowed)
    try:
        weights = [float(w) for w in options["weights"].split(";")]
    except ValueError:
        raise InvalidConfigError("policy", spec, allowed) from None
    if len(weights) != groups or not all(w > 0 and math.isfinite(w) for w in weights):
        raise InvalidConfigError("policy", spec, allowed)
    per_server = [w for g, w in zip(scenario.servers, weights) for _ in range(g.count)]
    return name, LbScenario.model_validate({**scenario.model_dump(), "weights": per_server})


@dataclass(frozen=True)
class LbPolicyFile:
    """A checked policy file for a multi-LB scenario: its bytes, how it reads the LBs and how they apply it."""

    label: str  # "<stem> (file)", "<name> (zoo)"
    data: bytes
    centralized: bool  # one network over every LB's observation (lb_v0's state())
    env_config: dict[str, Any]  # lb_v0's arguments but the load: scenario, action type, dispatch


def load_lb_policy_file(spec: str, scenario: LbScenario, load: float) -> LbPolicyFile:
    """The policy file of ``spec`` checked against ``scenario``: the runtime's own checks, an ``mlp``, and the
    shapes of lb_v0's observations and actions (tried at ``load``); InvalidConfigError naming ``policy``."""
    where, option_text = split_spec(str(spec), file=True)
    path = resolve_zoo(where) if where.startswith(ZOO_PREFIX) else Path(where)
    label = f"{path.stem} ({'zoo' if where.startswith(ZOO_PREFIX) else 'file'})"
    if not path.is_file():
        raise InvalidConfigError("policy", str(spec), "an existing policy file or zoo:NAME")
    data = path.read_bytes()
    try:
        RuntimePolicy.from_bytes(data)  # the deployment runtime's own checks
        policy = from_bytes(data)
    except (ValueError, RuntimeError) as exc:
        raise InvalidConfigError("policy", str(spec), f"a valid policy file ({' '.join(str(exc).split())})") from None
    if not isinstance(policy, MlpPolicy):
        raise InvalidConfigError("policy", str(spec), f"an mlp policy file on a multi-LB scenario; got {policy.kind}")
    options = resolve(str(spec), ("lb_v0", "lb_central_v0"), policy.settings, option_text)
    m, n = scenario.lbs, scenario.num_servers
    d = n * len(lb_v0.OBSERVATION_FEATURES)
    shapes = {  # (inputs, agents) -> centralized; outputs -> action type
        (d, m): False,
        (m * d, 1): True,
    }
    centralized = shapes.get((policy.num_inputs, policy.num_agents))
    per_agent = n * (m if centralized else 1)
    kinds = {per_agent: "continuous", len(lb_v0.WEIGHT_LEVELS) * per_agent: "discrete"}
    if centralized is None or policy.num_outputs not in kinds:
        raise InvalidConfigError(
            "policy",
            str(spec),
            f"a policy for {m} LBs over {n} servers: {m} agents of {d} inputs (or 1 of {m * d}) and "
            f"{n} or {3 * n} outputs per LB; the file has {policy.num_agents} agents, {policy.num_inputs} inputs, "
            f"{policy.num_outputs} outputs",
        )
    config = {
        "scenario": scenario,  # the object: it keeps any overrides
        "action_type": kinds[policy.num_outputs],
        "dispatch": options["dispatch"],
    }
    lb_v0.parallel_env(**{**config, "load": load})  # refuses a bad dispatch before any run
    return LbPolicyFile(label, data, centralized, config)


def file_actions(file: LbPolicyFile, env: Any) -> Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]:
    """``act(observations) -> actions``: the file's runtime deciding every LB's weights on lb_v0 ``env`` (module
    docstring)."""
    runtime = RuntimePolicy.from_bytes(file.data)
    agents = env.possible_agents
    centralized = file.centralized
    discrete = file.env_config["action_type"] == "discrete"

    def act(observations: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if centralized:
            out = np.asarray(runtime.outputs(env.state().reshape(-1), 0)).reshape(len(agents), -1)
        else:
            out = np.stack([np.asarray(runtime.outputs(observations[a].reshape(-1), i)) for i, a in enumerate(agents)])
        if not np.isfinite(out).all():  # weights within the loader's bound can still overflow on extreme inputs
            raise InvalidConfigError("policy", file.label, "a policy whose outputs are finite; it computed NaN or inf")
        if discrete:  # each server's block of logits -> its weight level
            return {a: out[i].reshape(env.num_servers, -1).argmax(axis=1) for i, a in enumerate(agents)}
        return {a: np.clip(out[i], 0.0, 1.0) for i, a in enumerate(agents)}

    return act
