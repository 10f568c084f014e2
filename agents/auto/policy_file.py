"""AuTO's trained networks -> ``mlp`` policy files (docs/policy_format.md, format version 2 heads).

- sRLA's actor (:class:`~dcgym.agents.auto.ddpg_rl_module.DDPGRLModule`):
  its layers (ReLU hidden layers, tanh output) and the ``increasing`` head,
  which maps the K - 1 outputs in [-1, 1] to K - 1 non-decreasing thresholds
  in bytes exactly as flow_v0 maps sRLA's action (weighted gaps in log
  bytes over ``threshold_range_bytes``); without a range the ``identity``
  head returns the action itself.
- lRLA's policy (:class:`~dcgym.agents.auto.pg_rl_module.PGRLModule`): its
  layers and the ``multi_categorical`` head, a softmax per categorical
  (each long flow's level, rate cap and path) whose argmaxes are the greedy
  action (``PGRLModule.greedy``); a Discrete action space gives ``softmax``.

Outputs agree with the torch modules to float32 rounding
(tests/agents/export/test_auto_export.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dcgym.agents.policy_format import MlpPolicy
from dcgym.agents.rl.apis import PolicyFileContext
from dcgym.agents.rl.torch_layers import layers_of

__all__ = ["lrla_policy", "one_module", "srla_action", "srla_policy", "threshold_range"]


def one_module(context: PolicyFileContext) -> Any:
    """The one trained module of ``context`` (AuTO trains one agent at a time); ValueError if there are several."""
    if len(set(context.module_ids)) != 1:
        raise ValueError(
            f"{context.path}: one trained module (one of AuTO's agents); it has {len(set(context.module_ids))}"
        )
    return context.agent_modules[0]


def threshold_range(context: PolicyFileContext) -> Sequence[float] | None:
    """flow_v0's ``threshold_range_bytes`` (the bytes sRLA's action maps to), or None for another environment."""
    config = getattr(getattr(context.env, "game", None), "config", None)
    return getattr(config, "threshold_range_bytes", None)


def srla_action(thresholds: Sequence[float], lo: float, hi: float) -> np.ndarray:
    """The sRLA action flow_v0 maps to ``thresholds`` (K - 1 increasing bytes in (lo, hi)): the inverse of
    ``flow_thresholds_from_action``, each gap in log bytes against the last gap's, as log weights over 8. A set
    whose gaps are within a factor e^8 of the last one gives an action in [-1, 1] that maps back to it."""
    edges = np.log(np.concatenate([[lo], np.asarray(thresholds, np.float64), [hi]]))
    gaps = np.diff(edges)
    return np.log(gaps[:-1] / gaps[-1]) / 8


def srla_policy(module, threshold_range_bytes: Sequence[float] | None = None) -> MlpPolicy:
    """sRLA's actor as a one-agent ``mlp`` policy: ``increasing`` thresholds in bytes over the range, else the action."""
    layers = layers_of(module.actor)
    k = int(layers[-1].weight.shape[0])
    if threshold_range_bytes is None:
        return MlpPolicy(int(module.num_obs), [layers], [0], "identity")
    lo, hi = (float(v) for v in threshold_range_bytes)
    if not 0 < lo <= hi:
        raise ValueError(f"threshold_range_bytes: got {threshold_range_bytes}; expected 0 < low <= high")
    return MlpPolicy(int(module.num_obs), [layers], [0], "increasing", np.full(k, lo), np.full(k, hi))


def lrla_policy(module) -> MlpPolicy:
    """lRLA's policy as a one-agent ``mlp`` policy: a categorical per group (``multi_categorical``) or one (``softmax``)."""
    groups = [int(g) for g in module.groups]
    if getattr(module, "network", "paper") == "rowwise":
        net = module.policy
        layers = layers_of(net.net)
        num_inputs = net.rows * net.row_width + net.shared
        return MlpPolicy(
            num_inputs, [layers], [0], "multi_categorical", groups=groups, rows=net.rows, row_width=net.row_width
        )
    layers = layers_of(module.policy)
    num_inputs = int(layers[0].weight.shape[1])
    if len(groups) == 1:
        return MlpPolicy(num_inputs, [layers], [0], "softmax")
    return MlpPolicy(num_inputs, [layers], [0], "multi_categorical", groups=groups)
