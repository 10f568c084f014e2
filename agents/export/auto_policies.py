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

import numpy as np

from dcgym.agents.export.format import Layer, MlpPolicy

__all__ = ["layers_of", "lrla_policy", "srla_policy"]

_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "SiLU": "silu", "ELU": "elu"}


def layers_of(sequential) -> list[Layer]:
    """The dense layers of a torch ``nn.Sequential`` of Linear layers and activations, as policy-file layers."""
    import torch

    layers: list[Layer] = []
    for m in sequential:
        if isinstance(m, torch.nn.Linear):
            layers.append(
                Layer(
                    m.weight.detach().cpu().numpy().astype(np.float32), m.bias.detach().cpu().numpy().astype(np.float32)
                )
            )
        elif type(m).__name__ in _ACTIVATIONS and layers and layers[-1].activation == "identity":
            layers[-1].activation = _ACTIVATIONS[type(m).__name__]
        else:
            raise ValueError(f"layer {type(m).__name__}: expected Linear or one of {sorted(_ACTIVATIONS)} after one")
    return layers


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
    layers = layers_of(module.policy)
    groups = [int(g) for g in module.groups]
    num_inputs = int(layers[0].weight.shape[1])
    if len(groups) == 1:
        return MlpPolicy(num_inputs, [layers], [0], "softmax")
    return MlpPolicy(num_inputs, [layers], [0], "multi_categorical", groups=groups)
