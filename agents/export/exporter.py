"""Trained policies -> policy files: what the C++ runtime needs to act as the RLlib modules do.

:func:`export_policy` takes a checkpoint, or a run folder of ``train.py``
(its newest checkpoint), and writes one policy file for every agent of the
environment:

- Malcolm (one :class:`~dcgym.agents.malcolm.malcolm_rl_module.MalcolmRLModule`
  per node) -> a ``linear_pair`` file: node i's migration and stealing
  weights and critic, the bases, and the Normaliser that turns the engine's
  raw loads into the module's input: rack_v0 observes ``clip(load * scale, 0,
  obs_clip)`` (``scale`` = 1 / mean service time for the ``expected_wait``
  metric, else 1) and the module multiplies by ``load_scale``, so
  ``x = clip(load * scale * load_scale, 0, obs_clip * load_scale)``. The
  environment's ``max_logit`` is kept: rack_v0 centres and clips each half
  of the logits before its softmax, and so does the runtime.
- AuTO's sRLA (``auto_srla``) -> an ``mlp`` file with the ``increasing`` head
  (thresholds in bytes), lRLA (``auto_lrla``) -> ``multi_categorical``
  (:mod:`.auto_policies`);
- RLlib's default PPO and SAC torch modules -> an ``mlp`` file: the actor's
  layers (encoder, then pi head) and the deterministic action: the argmax of
  a categorical (``softmax`` head: probabilities, action = argmax), the
  argmax of each block of a multi-categorical's logits (``identity`` head:
  the concatenated logits, one block per dimension of a ``MultiDiscrete``
  action such as lb_v0's weight levels, in the action space's order), the mean
  of a diagonal Gaussian mapped to the action bounds as RLlib's
  ``unsquash_action`` does (``unsquash`` head; ``identity`` without bounds),
  or the tanh-squashed mean of SAC's squashed Gaussian (``tanh`` head). The
  network input is the environment's observation (flattened).

- The multi-LB Q-learners (Distr-LB, Centr-LB; ``dcgym.agents.marl_lb``),
  feed-forward -> an ``mlp`` file with the ``identity`` head: the Q-values
  of each server's weight levels, the action each block's argmax.
- OSML's Model-C (``osml_dqn``) -> an ``mlp`` file with the ``identity``
  head: the 49 Q-values of OSML's scaled counters (:mod:`.osml_policies`,
  which also exports Models A and B).

The exported and original policies agree to float32 rounding
(tests/agents/test_export.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.agents.export.format import InputSpec, Layer, LinearPairPolicy, MlpPolicy, Policy, write_policy

__all__ = [
    "demo_policy",
    "export_policy",
    "linear_pair_from_modules",
    "mlp_from_modules",
    "mlp_from_q_modules",
    "policy_from_checkpoint",
]

_ACTIVATIONS = {"ReLU": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "SiLU": "silu", "ELU": "elu"}


def export_policy(run_or_checkpoint: str | Path, out: str | Path) -> Path:
    """Write the policy file of a checkpoint (or a run folder's newest) to ``out``; returns ``out``."""
    return write_policy(policy_from_checkpoint(run_or_checkpoint), out)


def policy_from_checkpoint(run_or_checkpoint: str | Path) -> Policy:
    """The policy file contents of a checkpoint or run folder (InvalidConfigError / ValueError if it cannot be)."""
    from dcgym.agents.malcolm.malcolm_rl_module import MalcolmRLModule
    from dcgym.agents.training.algorithms import make_env
    from dcgym.agents.training.checkpoints import TrainedPolicy, _env_config
    from dcgym.envs.error import InvalidConfigError

    if not Path(run_or_checkpoint).is_dir():
        raise InvalidConfigError("RUN", str(run_or_checkpoint), "a checkpoint or run folder written by train.py")
    trained = TrainedPolicy(run_or_checkpoint)
    env = make_env(trained.experiment.env, _env_config(trained.meta))
    trained.check_env(env)
    if trained.meta.get("partial_agents") and trained.experiment.env == "flow_v0":  # one of AuTO's agents
        from dcgym.agents.export.auto_policies import lrla_policy, srla_policy

        ((agent, module_id),) = trained.agent_to_module.items()
        module = trained.modules[module_id]
        if agent == "srla":  # the thresholds in bytes, as flow_v0 maps the actor's action
            return srla_policy(module, env.game.config.threshold_range_bytes)
        return lrla_policy(module)
    agents = list(env.possible_agents)
    modules = {a: trained.modules[trained.agent_to_module[a]] for a in agents}
    if all(isinstance(m, MalcolmRLModule) for m in modules.values()):
        game = env.game
        if game.config.action_type != "logits":
            raise ValueError(
                f"{trained.path}: Malcolm's modules act with logits; the environment's action_type is "
                f"{game.config.action_type}"
            )
        return linear_pair_from_modules(
            [modules[a] for a in agents],
            obs_scale=game.scale,
            obs_clip=game.config.obs_clip,
            max_logit=game.config.max_logit,
        )
    from dcgym.agents.osml.model_c_rllib import ModelCModule

    if all(isinstance(m, ModelCModule) for m in modules.values()):  # OSML's Model-C (osml_policies.py)
        from dcgym.agents.export.osml_policies import model_c_policy

        if len({id(m) for m in modules.values()}) != 1:
            raise ValueError(f"{trained.path}: one Model-C per service; OSML's files hold one shared Model-C")
        return model_c_policy(next(iter(modules.values())))
    from dcgym.agents.marl_lb.qmix_rl_module import QmixAgentRLModule

    if all(isinstance(m, QmixAgentRLModule) for m in modules.values()):
        return mlp_from_q_modules([modules[a] for a in agents])
    module_ids = [trained.agent_to_module[a] for a in agents]
    return mlp_from_modules(
        {m: trained.modules[m] for m in module_ids},
        module_ids,
        env.action_space(agents[0]),
        normalize_actions=trained.meta.get("normalize_actions", True),
        clip_actions=trained.meta.get("clip_actions", False),
    )


# ------------------------------------------------------------------------------ Malcolm


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


def demo_policy(num_nodes: int = 4, seed: int = 1) -> LinearPairPolicy:
    """A small Malcolm-shaped policy with random weights, for examples and smoke tests.

    Loads are in microseconds of expected wait at a 75 us mean service time,
    scaled as Malcolm's defaults (load_scale 0.1, obs_clip 100, max_logit 10).
    """
    if not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes: got {num_nodes!r}; expected an integer >= 1")
    rng = np.random.default_rng(seed)
    spec = InputSpec(num_nodes, "sort", scale=0.1 / 75.0, offset=0.0, lo=0.0, hi=10.0)
    f = spec.num_features
    fc = num_nodes * (num_nodes + 7) // 2 + 1
    bound = 1.0 / np.sqrt(f)
    return LinearPairPolicy(
        spec,
        rng.uniform(-bound, bound, (num_nodes, num_nodes, f)),
        rng.uniform(-bound, bound, (num_nodes, num_nodes, f)),
        "customized",
        rng.uniform(-1 / np.sqrt(fc), 1 / np.sqrt(fc), (num_nodes, fc)),
        max_logit=10.0,
    )


# ------------------------------------------------------------------------------ MLPs


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
    import gymnasium as gym

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


def mlp_from_q_modules(modules: Sequence[Any]) -> MlpPolicy:
    """An ``mlp`` policy from the multi-LB Q-networks of agents 0 .. M-1 (Distr-LB, Centr-LB), in agent order.

    Each network is ReLU, ReLU, then the per-server heads: the ``identity``
    head outputs the Q-values, one block of weight levels per server, and the
    greedy action is each block's argmax. Recurrent networks (QMIX-LB's GRUs)
    and log1p inputs have no policy-file form: ValueError.
    """
    networks = []
    for i, m in enumerate(modules):
        net = m.q_net
        if net.gru is not None or net.log_inputs:
            why = "a GRU" if net.gru is not None else "log1p inputs"
            raise ValueError(
                f"agent {i}: its Q-network has {why}, which a policy file cannot hold (dense layers only); "
                "evaluate the checkpoint instead"
            )
        networks.append(
            [
                Layer(_numpy(net.fc.weight), _numpy(net.fc.bias), "relu"),
                Layer(_numpy(net.fc2.weight), _numpy(net.fc2.bias), "relu"),
                Layer(_numpy(net.head.weight), _numpy(net.head.bias), "identity"),
            ]
        )
    return MlpPolicy(int(networks[0][0].weight.shape[1]), networks, list(range(len(modules))), "identity")


def _numpy(tensor: Any) -> np.ndarray:
    return tensor.detach().cpu().numpy().astype(np.float64)


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
            name = _ACTIVATIONS.get(type(leaf).__name__)
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
