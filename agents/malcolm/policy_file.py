"""Malcolm's node modules as a policy file (docs/policy_format.md): ``linear_pair`` for the paper's actors, ``fill``
for the fill actor (:func:`fill_policy`).

Node i's migration and stealing weights and critic, the bases, and the Normaliser that turns the engine's raw
loads into the module's input: rack_v0 observes ``clip(load * scale, 0, obs_clip)`` (``scale`` = 1 / mean
service time for the ``expected_wait`` metric, else 1) and the module multiplies by ``load_scale``, so
``x = clip(load * scale * load_scale, 0, obs_clip * load_scale)``. The environment's ``max_logit`` is kept:
rack_v0 centres and clips each half of the logits before its softmax, and so does the runtime. The exported and
original policies agree to float32 rounding (tests/agents/export/test_export.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dcgym.agents.policy_format import FillPolicy, InputSpec, LinearPairPolicy
from dcgym.agents.rl.apis import PolicyFileContext
from dcgym.envs.rack.game import WAIT_METRICS

__all__ = ["fill_from_modules", "fill_policy", "linear_pair_from_modules", "linear_pair_policy"]


def linear_pair_policy(context: PolicyFileContext) -> LinearPairPolicy:
    """The ``linear_pair`` policy of every node's module of ``context``, with rack_v0's scale, clip and max_logit."""
    game = _game(context, "action_type", "logits", "Malcolm's modules act with logits")
    return linear_pair_from_modules(
        context.agent_modules, obs_scale=game.scale, obs_clip=game.config.obs_clip, max_logit=game.config.max_logit
    )


def linear_pair_from_modules(
    modules: Sequence[Any], *, obs_scale: float, obs_clip: float, max_logit: float
) -> LinearPairPolicy:
    """A ``linear_pair`` policy from the Malcolm modules of nodes 0 .. N-1 (in node order).

    ``obs_scale`` and ``obs_clip`` are rack_v0's (``game.scale``,
    ``obs_clip``): raw loads are in the engine's units.
    """
    first = modules[0]
    n = first.num_nodes
    if len(modules) != n:
        raise ValueError(f"modules: got {len(modules)}; expected one per node ({n})")
    for i, m in enumerate(modules):
        same = (m.num_nodes, m.actor_basis, m.critic_basis, m.load_scale) == (
            n,
            first.actor_basis,
            first.critic_basis,
            first.load_scale,
        )
        if not same:
            raise ValueError(f"node_{i}: its module's nodes, bases or load_scale differ from node_0's")
    if not first.load_scale > 0:
        raise ValueError(f"load_scale: got {first.load_scale}; expected > 0")
    has_critic = all(hasattr(m, "critic_weights") for m in modules)  # inference-only modules have none

    def weights(name: str) -> np.ndarray:
        return np.stack([getattr(m, name).detach().cpu().numpy().astype(np.float64) for m in modules])

    spec = InputSpec(
        n, first.actor_basis, scale=obs_scale * first.load_scale, offset=0.0, lo=0.0, hi=obs_clip * first.load_scale
    )
    return LinearPairPolicy(
        spec,
        weights("migration_weights"),
        weights("stealing_weights"),
        first.critic_basis if has_critic else None,
        weights("critic_weights") if has_critic else None,
        max_logit,
    )


def fill_policy(context: PolicyFileContext) -> FillPolicy:
    """The ``fill`` policy of every node's fill-actor module of ``context`` (levels: rack_v0's wait loads; the
    exporter records which metric in the file's settings)."""
    game = _game(context, "load_metric", WAIT_METRICS, "a fill policy's levels are waits")
    return fill_from_modules(context.agent_modules, level_scale=game.scale)


def _game(context: PolicyFileContext, key: str, allowed: str | tuple[str, ...], why: str) -> Any:
    """The rack game of ``context``'s environment; ValueError saying ``why`` unless its ``key`` is (one of)
    ``allowed``."""
    game = context.env.game
    value = getattr(game.config, key)
    if value not in ((allowed,) if isinstance(allowed, str) else allowed):
        raise ValueError(f"{context.path}: {why}; the environment's {key} is {value}")
    return game


def fill_from_modules(modules: Sequence[Any], *, level_scale: float) -> FillPolicy:
    """A ``fill`` policy from the fill-actor modules of nodes 0 .. N-1 (in node order): node i's gains are its
    module's (:meth:`~dcgym.agents.malcolm.fill_rl_module.MalcolmFillRLModule.gains`); ``level_scale`` turns the
    engine's raw loads into the modules' levels (rack_v0's scale, 1 / mean service time)."""
    first = modules[0]
    n = first.num_nodes
    if len(modules) != n:
        raise ValueError(f"modules: got {len(modules)}; expected one per node ({n})")
    shared = ("num_nodes", "capacity", "heartbeat_services", "horizon", "mix", "steal", "per_task")
    for i, m in enumerate(modules):
        if m.node != i or any(getattr(m, k) != getattr(first, k) for k in shared):
            raise ValueError(
                f"node_{i}: its module is node {m.node}'s, or its rack or rule settings differ from node_0's"
            )
    return FillPolicy(
        level_scale=level_scale,
        heartbeat_services=first.heartbeat_services,
        horizon=first.horizon,
        mix=first.mix,
        steal=first.steal,
        capacity=np.asarray(first.capacity, np.float64),
        gains=np.stack([m.gains().detach().cpu().numpy().astype(np.float64) for m in modules]),
        per_task=first.per_task,
    )
