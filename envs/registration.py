"""Registration of dcgym's environments with Gymnasium and PettingZoo (data only; entry points are lazy strings).

``import dcgym.envs`` registers every id below, so ``gymnasium.make("dcgym/RackCentral-v0")`` and
``pettingzoo.make("parallel", "dcgym/rack_v0")`` work; a misspelled id gets the library's own
did-you-mean suggestion. Without importing dcgym first, Gymnasium imports it from a module-qualified
id: ``gymnasium.make("dcgym.envs:dcgym/RackCentral-v0")`` (Gymnasium 1.x has no install-time plugins).
A registered single-agent id truncates at ``max_episode_steps``, the environment's own default
``max_steps``; pass both to ``make`` to change the episode length.
"""

from __future__ import annotations

import gymnasium
import pettingzoo
from gymnasium.envs.registration import registry

from dcgym.envs.families import known_envs

__all__ = ["GYMNASIUM_IDS", "PETTINGZOO_NAMESPACE", "register_envs"]

GYMNASIUM_IDS: dict[str, dict[str, object]] = {
    "dcgym/RackCentral-v0": {
        "entry_point": "dcgym.envs.rack.wrappers:RackCentralEnv",
        "vector_entry_point": "dcgym.envs.rack.vector:RackCentralVectorEnv",
        "max_episode_steps": 1000,
    },
    "dcgym/RackDispatch-v0": {
        "entry_point": "dcgym.envs.rack.wrappers:RackDispatchEnv",
        "vector_entry_point": "dcgym.envs.rack.vector:RackDispatchVectorEnv",
        "max_episode_steps": 1000,
    },
    "dcgym/ColoCentral-v0": {
        "entry_point": "dcgym.envs.colo.wrappers:ColoCentralEnv",
        "vector_entry_point": "dcgym.envs.colo.vector:ColoCentralVectorEnv",
        "max_episode_steps": 180,
    },
    "dcgym/FlowSrla-v0": {
        "entry_point": "dcgym.envs.flow.wrappers:FlowSrlaEnv",
        "vector_entry_point": "dcgym.envs.flow.vector:FlowSrlaVectorEnv",
        "max_episode_steps": 1000,
    },
    "dcgym/FlowLrla-v0": {
        "entry_point": "dcgym.envs.flow.wrappers:FlowLrlaEnv",
        "vector_entry_point": "dcgym.envs.flow.vector:FlowLrlaVectorEnv",
        "max_episode_steps": 1000,
    },
}
"""Every single-agent id with its (lazy) entry points and episode length (the environments' max_steps default)."""

PETTINGZOO_NAMESPACE = "dcgym"
"""The multi-agent environments are ``dcgym/<name>`` in PettingZoo's parallel registry (``dcgym/rack_v0``)."""


def register_envs() -> None:
    """Register every id not registered yet with Gymnasium and PettingZoo (idempotent)."""
    for env_id, entry_points in GYMNASIUM_IDS.items():
        if env_id not in registry:
            gymnasium.register(id=env_id, **entry_points)
    for name, module in known_envs().items():
        env_id = pettingzoo.EnvSpec(id=f"{PETTINGZOO_NAMESPACE}/{name}").id  # PettingZoo's form: dcgym/rack-v0
        if env_id not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", env_id, entry_point=f"{module}:parallel_env")


register_envs()
