"""How a trained policy and exported AuTO agents act on a flow network.

A checkpoint acts through flow_v0 every interval (:func:`trained_steps`): a checkpoint of one of AuTO's agents
acts for that agent only, the other held by the environment's rules, as in its training. A policy file of an
exported AuTO agent (sRLA with the ``increasing`` head, lRLA with ``multi_categorical``; both joined by ``+``)
runs inside flow_v0's engine, the C++ runtime deciding every interval (:func:`auto_policy_files` checks them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.agents.policies.file_settings import AGENT_SETTINGS, resolve
from dcgym.agents.policies.zoo import SUFFIX, ZOO_PREFIX, resolve_zoo
from dcgym.agents.rl.envs import make_env
from dcgym.cpp_core import RuntimePolicy
from dcgym.envs.error import InvalidConfigError

__all__ = ["auto_policy_files", "trained_steps"]


def auto_policy_files(spec: Any, scenario_spec: Any, load: float) -> tuple[dict[str, str], str, dict[str, Any]]:
    """Exported AuTO agents (:mod:`dcgym.agents.auto.policy_file`): one file, or sRLA's and lRLA's joined by ``+``
    (``srla.dcpol+lrla.dcpol``, ``zoo:A+zoo:B``). Returns their paths by agent (``srla`` for the ``increasing``
    head, ``lrla`` for ``multi_categorical``), each checked against flow_v0's observation size, a label, and the
    flow_v0 settings the files were trained with (:mod:`.file_settings`: both files must agree, except on the
    settings of one agent's observation only, which come from that agent's file)."""
    given = str(spec.given)
    parts = given.split("+")
    settings: dict[str, Any] | None = None
    paths: dict[str, str] = {}
    stems: list[str] = []
    for where in parts:
        path = resolve_zoo(where) if where.startswith(ZOO_PREFIX) else Path(where)
        if not path.is_file():
            raise InvalidConfigError(
                "policy", given, "an existing policy file (FILE.dcpol or zoo:NAME), or sRLA's and lRLA's joined by +"
            )
        try:
            policy = RuntimePolicy.from_file(str(path))
        except ValueError as exc:
            raise InvalidConfigError("policy", where, f"a valid policy file ({exc})") from None
        head = policy.head if policy.kind == "mlp" else None
        agent = {"increasing": "srla", "multi_categorical": "lrla"}.get(head or "")
        if agent is None:
            raise InvalidConfigError(
                "policy",
                where,
                f"an AuTO agent exported with the increasing or multi_categorical head, not {head or policy.kind}",
            )
        if agent in paths:
            raise InvalidConfigError("policy", given, f"one file per agent; two are {agent} policies")
        own = resolve(where, "flow_v0", policy.settings, "")
        if settings is not None:
            owners = AGENT_SETTINGS["flow_v0"]
            for key in own:
                if own[key] == settings[key] or owners.get(key) in paths:  # the other agent's: keep its value
                    continue
                if owners.get(key) != agent:
                    raise InvalidConfigError(
                        "policy", given, f"agents trained with the same flow_v0 settings; their {key} differ"
                    )
                settings[key] = own[key]
            own = settings
        settings = own
        env = make_env("flow_v0", {"scenario": str(scenario_spec), "load": load, **settings})
        size = int(np.prod(env.observation_space(agent).shape))
        if policy.num_inputs != size:
            raise InvalidConfigError(
                "policy",
                where,
                f"an {agent} policy for {size} observations on this scenario; it takes {policy.num_inputs}",
            )
        paths[agent] = str(path)
        stems.append(where.removeprefix(ZOO_PREFIX) if where.startswith(ZOO_PREFIX) else path.name.removesuffix(SUFFIX))
    kind = "zoo" if all(w.startswith(ZOO_PREFIX) for w in parts) else "file"
    return paths, f"{'+'.join(stems)} ({kind})", settings or {}


def trained_steps(policy: Any, env: Any, observations: Mapping[str, Any]) -> Callable[[], None]:
    """``step()``: one interval of flow_v0 ``env`` (reset, its first ``observations`` given) with the trained
    ``policy`` acting: both agents, or the one it trained with the other held by the environment's rules, as in its
    training."""
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    state = {"obs": observations}
    trained = set(policy.agent_to_module)

    def step() -> None:
        if trained >= set(env.possible_agents):
            state["obs"], *_ = env.step(policy.act(state["obs"], spaces))
            return
        # one of AuTO's agents trained alone: the other held by the environment's rules, as in training
        acts = policy.act({a: o for a, o in state["obs"].items() if a in trained}, spaces)
        srla = env.game.check_srla(acts["srla"])[None] if "srla" in acts else None
        lrla = env.game.check_lrla(acts["lrla"])[None] if "lrla" in acts else None
        obs, _, _ = env.game.step(srla, lrla, [0])
        state["obs"] = {a: obs[a][0] for a in env.possible_agents}

    return step
