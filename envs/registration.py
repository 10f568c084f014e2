"""Gymnasium registration of dcgym's single-agent environments (data only; entry points are lazy strings).

``import dcgym.envs`` registers every id below, so ``gymnasium.make("dcgym/RackCentral-v0")`` works; a
misspelled id gets Gymnasium's own did-you-mean suggestion. The PettingZoo environments are modules
(``dcgym.envs.rack_v0``), not registered ids, as PettingZoo has no registry.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

__all__ = ["ENVIRONMENTS", "register_envs"]

ENVIRONMENTS: dict[str, dict[str, str]] = {
    "dcgym/RackCentral-v0": {
        "entry_point": "dcgym.envs.wrappers:RackCentralEnv",
        "vector_entry_point": "dcgym.envs.vector:RackCentralVectorEnv",
    },
    "dcgym/RackDispatch-v0": {"entry_point": "dcgym.envs.wrappers:RackDispatchEnv"},
}
"""Every registered id with its (lazy) entry points; episode length is the environments' own max_steps."""


def register_envs() -> None:
    """Register every id of :data:`ENVIRONMENTS` that is not registered yet (idempotent)."""
    for env_id, entry_points in ENVIRONMENTS.items():
        if env_id not in registry:
            register(id=env_id, **entry_points)


register_envs()
