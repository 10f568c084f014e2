"""AuTO's sRLA networks as an RLModule: a deterministic actor and a critic with the action merged late (AuTO §5.2.1).

- **Actor** μ(s): ``actor_hiddens`` (600, 600 in the paper) ReLU layers, then
  one output per action dimension through tanh, so the action lies in
  [-1, 1]: RLlib's normalised action space, which ``normalize_actions``
  maps to the environment's Box (flow_v0's sRLA action is already
  ``Box(-1, 1, (K - 1,))``: K - 1 numbers the environment turns into
  increasing thresholds). The paper does not name its activations; ReLU
  hidden layers and a tanh output are DDPG's (Lillicrap et al., ICLR 2016, §7).
- **Critic** Q(s, a): the state through ``critic_hiddens`` (600, 600) ReLU
  layers; the action joins at the next layer ("the actor outputs are ... only
  fed into the critic's network at a hidden layer", §5.2.1): one more ReLU
  layer of ``critic_merge_hidden`` units (600; the paper gives no width) over
  [h2, a], then one linear output.
- **Target networks** μ', Q' (Algorithm 1 line 5): copies made by the learner
  (``make_target_networks``), updated softly with τ.
- **Exploration**: the sampled action is clip(μ(s) + σ ε, -1, 1), ε ~ N(0, I),
  σ = ``exploration_noise``. AuTO names no noise process; DDPG used an
  Ornstein-Uhlenbeck process, and uncorrelated Gaussian noise works as well
  (Fujimoto et al., ICML 2018, §6), so Gaussian it is: it needs no state
  across steps (none to checkpoint).

Weights start as torch.nn.Linear's defaults except the last layer of each
network, uniform in ±3e-3 (DDPG §7: initial outputs near zero); with
``actor_start`` the actor's last layer has weights 0 and bias atanh of that
action instead, so μ starts exactly at it for every observation (its weights
then learn from the first update on). An
inference-only copy (the EnvRunners') holds the actor alone.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchDeterministic
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, TargetNetworkAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

from dcgym.agents.auto.policy_file import one_module, srla_policy, threshold_range
from dcgym.agents.policy_format import MlpPolicy
from dcgym.agents.rl.apis import PolicyFileAPI, PolicyFileContext

__all__ = ["DDPGRLModule", "DeterministicAction", "QNetwork", "mlp"]

FINAL_INIT = 3e-3
"""Bound of the uniform initialisation of each network's last layer (DDPG §7)."""


class DeterministicAction(TorchDeterministic):
    """The action is the module's output itself; ``logp`` is 0 (the exploration noise is added in the module)."""

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs: Any) -> DeterministicAction:
        return cls(loc=logits)

    def logp(self, value: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return torch.zeros(self.loc.shape[:-1], dtype=self.loc.dtype, device=self.loc.device)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        return int(space.shape[0])


def mlp(sizes: list[int], *, out_activation: nn.Module | None = None) -> nn.Sequential:
    """Linear layers ``sizes[0] -> ... -> sizes[-1]`` with ReLU between them; the last layer starts in ±3e-3."""
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    nn.init.uniform_(layers[-1].weight, -FINAL_INIT, FINAL_INIT)
    nn.init.uniform_(layers[-1].bias, -FINAL_INIT, FINAL_INIT)
    if out_activation is not None:
        layers.append(out_activation)
    return nn.Sequential(*layers)


class QNetwork(nn.Module):
    """Q(s, a): the state through ReLU layers, the action concatenated at the next hidden layer (AuTO §5.2.1)."""

    def __init__(self, num_obs: int, num_actions: int, hiddens: list[int], merge_hidden: int) -> None:
        super().__init__()
        state: list[nn.Module] = []
        width = num_obs
        for h in hiddens:
            state += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.state = nn.Sequential(*state)
        self.merged = mlp([width + num_actions, merge_hidden, 1])

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-values, shape (B,)."""
        return self.merged(torch.cat([self.state(obs), action], dim=-1)).squeeze(-1)


class DDPGRLModule(TorchRLModule, TargetNetworkAPI, InferenceOnlyAPI, PolicyFileAPI):
    """sRLA: actor μ(s) in [-1, 1]^n, critic Q(s, a), their target copies, Gaussian exploration.

    ``model_config`` keys: ``actor_hiddens`` ([600, 600]), ``critic_hiddens``
    ([600, 600]), ``critic_merge_hidden`` (600), ``exploration_noise`` (σ,
    0.1), ``actor_start`` (None, or the action μ starts at). The observation must be a flat Box, the action a
    Box of one axis.
    """

    def policy_file(self, context: PolicyFileContext) -> MlpPolicy:
        """sRLA's actor with the ``increasing`` head over flow_v0's threshold range (:mod:`dcgym.agents.auto.policy_file`)."""
        return srla_policy(one_module(context), threshold_range(context))

    def setup(self) -> None:
        cfg = self.model_config or {}
        self.actor_hiddens = list(cfg.get("actor_hiddens", [600, 600]))
        self.critic_hiddens = list(cfg.get("critic_hiddens", [600, 600]))
        self.critic_merge_hidden = int(cfg.get("critic_merge_hidden", 600))
        self.exploration_noise = float(cfg.get("exploration_noise", 0.1))
        if not (isinstance(self.action_space, gym.spaces.Box) and len(self.action_space.shape) == 1):
            raise ValueError(f"DDPGRLModule needs a Box action space of one axis, got {self.action_space}")
        if not (isinstance(self.observation_space, gym.spaces.Box) and len(self.observation_space.shape) == 1):
            raise ValueError(f"DDPGRLModule needs a flat Box observation space, got {self.observation_space}")
        self.num_obs = int(self.observation_space.shape[0])
        self.num_actions = int(self.action_space.shape[0])
        self.actor = mlp([self.num_obs, *self.actor_hiddens, self.num_actions], out_activation=nn.Tanh())
        start = cfg.get("actor_start")
        if start is not None:
            a = torch.as_tensor(start, dtype=torch.float32)
            if a.shape != (self.num_actions,) or not bool((a.abs() < 1).all()):
                raise ValueError(f"actor_start: got {list(start)}; expected {self.num_actions} numbers in (-1, 1)")
            with torch.no_grad():  # the last Linear (before the tanh): μ(s) = start for every s until it learns
                self.actor[-2].weight.zero_()
                self.actor[-2].bias.copy_(torch.atanh(a))
        self.twin_q = bool(cfg.get("twin_q", False))
        if not self.inference_only:
            self.critic = QNetwork(self.num_obs, self.num_actions, self.critic_hiddens, self.critic_merge_hidden)
            if self.twin_q:  # clipped double Q-learning: a second critic, the targets' minimum (TD3 §4.2)
                self.critic2 = QNetwork(self.num_obs, self.num_actions, self.critic_hiddens, self.critic_merge_hidden)

    # ------------------------------------------------------------- forward

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.actor(batch[Columns.OBS].float())}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mu = self.actor(batch[Columns.OBS].float())
        noisy = mu + self.exploration_noise * torch.randn_like(mu)
        return {Columns.ACTION_DIST_INPUTS: noisy.clamp(-1.0, 1.0)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {}  # the learner calls the networks itself (the losses need μ and Q at different inputs)

    # ------------------------------------------------------------- targets

    def critics(self) -> list[nn.Module]:
        """The critic, and with ``twin_q`` the second one."""
        return [self.critic, self.critic2] if self.twin_q else [self.critic]

    def make_target_networks(self) -> None:
        self._target_actor = copy.deepcopy(self.actor)
        self._target_critic = copy.deepcopy(self.critic)
        if self.twin_q:
            self._target_critic2 = copy.deepcopy(self.critic2)
        for _, target in self.get_target_network_pairs():
            target.requires_grad_(False)

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        pairs = [(self.actor, self._target_actor), (self.critic, self._target_critic)]
        return [*pairs, (self.critic2, self._target_critic2)] if self.twin_q else pairs

    def forward_target(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Q'(s', μ'(s')) for ``batch[NEXT_OBS]`` (with ``twin_q`` the smaller of the two target critics'), under
        the key ``"q_target_next"``."""
        next_obs = batch[Columns.NEXT_OBS].float()
        action = self._target_actor(next_obs)
        q = self._target_critic(next_obs, action)
        if self.twin_q:
            q = torch.minimum(q, self._target_critic2(next_obs, action))
        return {"q_target_next": q}

    # ------------------------------------------------------------- APIs

    def get_non_inference_attributes(self) -> list[str]:
        extra = ["critic2", "_target_critic2"] if self.twin_q else []
        return ["critic", "_target_actor", "_target_critic", *extra]

    def get_inference_action_dist_cls(self) -> type[DeterministicAction]:
        return DeterministicAction

    def get_exploration_action_dist_cls(self) -> type[DeterministicAction]:
        return DeterministicAction

    def get_train_action_dist_cls(self) -> type[DeterministicAction]:
        return DeterministicAction
