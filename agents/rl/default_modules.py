"""RLlib's default PPO and SAC torch modules as ``mlp`` policy files: the ``policy_file`` of their specs.

The actor's layers (encoder, then pi head) and the deterministic action: the argmax of a categorical
(``softmax`` head: probabilities, action = argmax), the argmax of each block of a multi-categorical's logits
(``identity`` head: the concatenated logits, one block per dimension of a ``MultiDiscrete`` action such as
lb_v0's weight levels, in the action space's order), the mean of a diagonal Gaussian mapped to the action bounds
as RLlib's ``unsquash_action`` does (``unsquash`` head; ``identity`` without bounds), or the tanh-squashed mean of
SAC's squashed Gaussian (``tanh`` head). The network input is the environment's observation (flattened). The
exported and original policies agree to float32 rounding (tests/agents/export/test_export.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from dcgym.agents.policy_format import Layer, MlpPolicy
from dcgym.agents.rl.apis import PolicyFileContext
from dcgym.agents.rl.torch_layers import ACTIVATIONS

__all__ = ["mlp_from_modules", "mlp_policy"]


def mlp_policy(context: PolicyFileContext) -> MlpPolicy:
    """The ``mlp`` policy of the trained agents of ``context`` (RLlib's default modules, one per agent or shared)."""
    return mlp_from_modules(
        {m: context.modules[m] for m in context.module_ids},
        context.module_ids,
        context.env.action_space(context.agents[0]),
        normalize_actions=context.meta.get("normalize_actions", True),
        clip_actions=context.meta.get("clip_actions", False),
    )


def mlp_from_modules(
    modules: Mapping[str, Any],
    agent_modules: Sequence[str],
    action_space: Any,
    *,
    normalize_actions: bool = True,
    clip_actions: bool = False,
) -> MlpPolicy:
    """An ``mlp`` policy from RLlib's default PPO / SAC torch modules.

    ``modules`` maps module ids to modules, ``agent_modules`` gives agent i's
    module id (a module shared by several agents is stored once), and
    ``action_space`` is the agents' (common) action space;
    ``normalize_actions`` and ``clip_actions`` are the algorithm's settings,
    which decide how the module's output becomes the environment's action.
    """
    ids = list(dict.fromkeys(agent_modules))
    networks, head = [], None
    for module_id in ids:
        layers, module_head = _actor_network(modules[module_id], module_id)
        networks.append(layers)
        if head is not None and module_head != head:
            raise ValueError(f"{module_id}: its action distribution differs from {ids[0]}'s")
        head = module_head
    num_inputs = int(networks[0][0].weight.shape[1])
    low = high = None
    if head == "identity" and isinstance(action_space, gym.spaces.MultiDiscrete):
        if int(np.sum(action_space.nvec)) != int(networks[0][-1].weight.shape[0]):
            raise ValueError(f"action space: got {action_space}; its blocks do not add up to the network's outputs")
    elif head == "softmax":
        if not isinstance(action_space, gym.spaces.Discrete) or int(action_space.start) != 0:
            raise ValueError(f"action space: got {action_space}; expected Discrete(n) starting at 0")
    else:
        if not (isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1):
            raise ValueError(f"action space: got {action_space}; expected a 1-D Box")
        bounded = bool(np.all(action_space.bounded_below) and np.all(action_space.bounded_above))
        if head == "tanh":  # the squashed Gaussian's [-1, 1], then unsquashed to the bounds when normalising
            low, high = (
                (action_space.low, action_space.high)
                if normalize_actions and bounded
                else (-np.ones(action_space.shape), np.ones(action_space.shape))
            )
        elif normalize_actions and bounded:
            head, low, high = "unsquash", action_space.low, action_space.high
        elif clip_actions:
            raise ValueError("clip_actions without normalize_actions: the runtime has no clip-only head")
    return MlpPolicy(
        num_inputs,
        networks,
        [ids.index(m) for m in agent_modules],
        head,
        None if low is None else np.asarray(low, np.float64),
        None if high is None else np.asarray(high, np.float64),
    )


def _actor_network(module: Any, module_id: str) -> tuple[list[Layer], str]:
    """The actor's dense layers (encoder, then pi head; a Gaussian's mean rows only) and its head kind."""
    from ray.rllib.core.distribution.torch.torch_distribution import (
        TorchCategorical,
        TorchDiagGaussian,
        TorchMultiCategorical,
        TorchSquashedGaussian,
    )
    from torch import nn

    if hasattr(module, "pi_encoder"):  # SAC
        trunk = module.pi_encoder
    elif hasattr(getattr(module, "encoder", None), "actor_encoder"):  # PPO, separate value network
        trunk = module.encoder.actor_encoder
    elif hasattr(getattr(module, "encoder", None), "encoder"):  # PPO, vf_share_layers
        trunk = module.encoder.encoder
    else:
        raise ValueError(f"{module_id}: {type(module).__name__} is not one of RLlib's default PPO or SAC modules")
    layers: list[Layer] = []
    for part in (trunk, module.pi):
        for leaf in part.modules():
            if list(leaf.children()):
                continue
            if isinstance(leaf, nn.Linear):
                layers.append(
                    Layer(
                        leaf.weight.detach().cpu().numpy().astype(np.float64),
                        (
                            leaf.bias.detach().cpu().numpy() if leaf.bias is not None else np.zeros(leaf.out_features)
                        ).astype(np.float64),
                    )
                )
                continue
            name = ACTIVATIONS.get(type(leaf).__name__)
            if name == "elu" and leaf.alpha != 1.0:
                name = None
            if name is None or not layers or layers[-1].activation != "identity":
                raise ValueError(
                    f"{module_id}: layer {leaf} is not supported by the policy file "
                    "(dense layers, each followed by at most one of relu, tanh, sigmoid, silu, elu)"
                )
            layers[-1].activation = name
    dist = module.get_inference_action_dist_cls()
    if dist is TorchCategorical:
        return layers, "softmax"
    if isinstance(dist, type) and issubclass(dist, TorchMultiCategorical):  # RLlib's partial subclass
        return layers, "identity"  # one block of logits per dimension; the action is each block's argmax
    if dist in (TorchDiagGaussian, TorchSquashedGaussian):  # inputs are [mean, log_std]: keep the mean rows
        last = layers[-1]
        half = last.weight.shape[0] // 2
        layers[-1] = Layer(last.weight[:half], last.bias[:half], last.activation)
        return layers, "tanh" if dist is TorchSquashedGaussian else "identity"
    raise ValueError(
        f"{module_id}: action distribution {getattr(dist, '__name__', dist)} is not supported "
        "(categorical, diagonal Gaussian, squashed Gaussian)"
    )
