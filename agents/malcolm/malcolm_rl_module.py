"""One Malcolm node as an RLModule: a linear critic and two linear softmax actors (POMACS 2022, §6.2).

Every node (agent ``node_i`` of ``rack_v0``) has its own module. From the
node's observation it reads the N loads it knows of (its stale view, its own
load exact) and computes

- the critic ``V_θ(x) = <φ_c(x), θ>`` (``critic_basis``, ``customized`` by default),
- the migration logits ``z_m = W_m φ_a(x)`` and the stealing logits
  ``z_s = W_s φ_a(x)``, one row per destination node (``actor_basis``,
  ``sort`` by default); ``softmax(z_m)`` and ``softmax(z_s)`` are the node's
  migration and stealing distributions.

**The action is the logits.** rack_v0's action is exactly these 2N logits:
the engine applies the softmax and draws a destination for every task (and
a victim after every completion) during the next heartbeat, in C++. The
module therefore emits deterministic actions through
:class:`PassThroughLogits`; the policy's randomness — its exploration — is
the per-task sampling inside the engine, whose outcome the environment
reports as decision counts (``info["migrate"]``, ``info["steal"]``) and the
learner turns into the policy gradient. Each half is shifted to be centred on
0 (softmax is shift invariant) so that it fits the environment's logit clip
(``max_logit``, 10 by default) unless its spread exceeds 2 x max_logit, i.e.
unless odds beyond e^20 are asked for.

Parameters start uniform in ±1/sqrt(features) (the authors' code). An
inference-only copy (on the EnvRunners) has no critic.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchDeterministic
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

from dcgym.agents.malcolm.basis import BASES, features, num_features
from dcgym.agents.malcolm.policy_file import linear_pair_policy
from dcgym.agents.policy_format import LinearPairPolicy
from dcgym.agents.rl.apis import GroupActAPI, PolicyFileAPI, PolicyFileContext
from dcgym.agents.rl.apis.group_act_api import aligned_blocks, draw_actions

__all__ = [
    "MIGRATION_LOGITS",
    "STEALING_LOGITS",
    "MalcolmRLModule",
    "PassThroughLogits",
    "act_with_logits",
    "log_softmax",
]

MIGRATION_LOGITS = "migration_logits"
"""forward_train output: the raw migration logits (B, N)."""
STEALING_LOGITS = "stealing_logits"
"""forward_train output: the raw stealing logits (B, N)."""


class PassThroughLogits(TorchDeterministic):
    """A deterministic 'distribution' whose sample is its input: the RL action is the logits themselves.

    ``logp`` is 0 per row (the action is certain given the observation; the
    randomness is in the engine's per-task draws, not in this action).
    """

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs: Any) -> PassThroughLogits:
        return cls(loc=logits)

    def logp(self, value: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return torch.zeros(self.loc.shape[:-1], dtype=self.loc.dtype, device=self.loc.device)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        return int(space.shape[0])


class MalcolmRLModule(TorchRLModule, ValueFunctionAPI, InferenceOnlyAPI, PolicyFileAPI, GroupActAPI):
    """A Malcolm node: linear critic over ``critic_basis``, migration and stealing actors over ``actor_basis``.

    ``model_config`` keys: ``critic_basis`` (default ``customized``),
    ``actor_basis`` (``sort``), ``load_scale`` (1.0: loads are multiplied by
    it before the basis functions). The action space must be rack_v0's
    ``Box((2N,))``; the first N observation entries are the loads.
    """

    def policy_file(self, context: PolicyFileContext) -> LinearPairPolicy:
        """Every node's module as one ``linear_pair`` file (:mod:`dcgym.agents.malcolm.policy_file`)."""
        return linear_pair_policy(context)

    def setup(self) -> None:
        cfg = self.model_config or {}
        self.critic_basis = cfg.get("critic_basis", "customized")
        self.actor_basis = cfg.get("actor_basis", "sort")
        self.load_scale = float(cfg.get("load_scale", 1.0))
        for key, name in (("critic_basis", self.critic_basis), ("actor_basis", self.actor_basis)):
            if name not in BASES:
                raise ValueError(f"`{key}` ({name!r}) must be one of {sorted(BASES)}")
        if not (isinstance(self.action_space, gym.spaces.Box) and len(self.action_space.shape) == 1):
            raise ValueError(f"MalcolmRLModule needs rack_v0's Box((2N,)) action space, got {self.action_space}")
        self.num_nodes = self.action_space.shape[0] // 2
        if self.observation_space.shape[0] < self.num_nodes:
            raise ValueError(
                f"the observation ({self.observation_space.shape}) must start with the {self.num_nodes} node loads"
            )
        n = self.num_nodes
        f_c, f_a = num_features(self.critic_basis, n), num_features(self.actor_basis, n)
        self.critic_weights = nn.Parameter(_uniform((f_c,)))
        self.migration_weights = nn.Parameter(_uniform((n, f_a)))
        self.stealing_weights = nn.Parameter(_uniform((n, f_a)))

    # ------------------------------------------------------------- features

    def loads(self, obs: torch.Tensor) -> torch.Tensor:
        """The N loads the node sees, scaled, in the parameters' dtype."""
        return obs[..., : self.num_nodes].to(self.migration_weights.dtype) * self.load_scale

    def actor_features(self, obs: torch.Tensor) -> torch.Tensor:
        """φ_a(x), shape (B, F_a)."""
        return features(self.actor_basis, self.loads(obs))

    def critic_features(self, obs: torch.Tensor) -> torch.Tensor:
        """φ_c(x), shape (B, F_c)."""
        return features(self.critic_basis, self.loads(obs))

    def logits(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw migration and stealing logits, each (B, N)."""
        phi = self.actor_features(obs)
        return phi @ self.migration_weights.T, phi @ self.stealing_weights.T

    # ------------------------------------------------------------- forward

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        migration, stealing = self.logits(batch[Columns.OBS])
        action = torch.cat([_centre(migration), _centre(stealing)], dim=-1)
        return {Columns.ACTION_DIST_INPUTS: action.to(torch.float32)}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        migration, stealing = self.logits(obs)
        return {
            MIGRATION_LOGITS: migration,
            STEALING_LOGITS: stealing,
            Columns.VF_PREDS: self.critic_features(obs) @ self.critic_weights,
        }

    # ------------------------------------------------------------- acting as a group

    def group_key(self) -> Hashable | None:
        return (type(self), self.actor_basis, self.load_scale, self.num_nodes, self.migration_weights.dtype)

    @classmethod
    def group_act(
        cls, modules: Sequence[MalcolmRLModule], observations: Sequence[torch.Tensor], explore: bool
    ) -> dict[str, torch.Tensor]:
        """Every node's logits (:meth:`_forward`) as one computation: the features of all rows at once (row by
        row the same numbers), one product per node over its rows in an aligned block (the same bits as alone)."""
        first = modules[0]
        phi = first.actor_features(torch.cat(list(observations)))
        blocks = aligned_blocks(phi, [len(o) for o in observations])
        migration = torch.cat([b @ m.migration_weights.T for b, m in zip(blocks, modules, strict=True)])
        stealing = torch.cat([b @ m.stealing_weights.T for b, m in zip(blocks, modules, strict=True)])
        action = torch.cat([_centre(migration), _centre(stealing)], dim=-1)
        return act_with_logits(first, action.to(torch.float32), explore)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """V_θ(x) for the observations in ``batch``, shape (B,)."""
        return self.critic_features(batch[Columns.OBS]) @ self.critic_weights

    def get_non_inference_attributes(self) -> list[str]:
        return ["critic_weights"]

    def get_inference_action_dist_cls(self) -> type[PassThroughLogits]:
        return PassThroughLogits

    def get_exploration_action_dist_cls(self) -> type[PassThroughLogits]:
        return PassThroughLogits

    def get_train_action_dist_cls(self) -> type[PassThroughLogits]:
        return PassThroughLogits


def act_with_logits(module: TorchRLModule, inputs: torch.Tensor, explore: bool) -> dict[str, torch.Tensor]:
    """A forward pass's action ``inputs`` for ``module`` with the columns RLlib's ``GetActions`` adds. Valid for the
    rows of several modules at once because :class:`PassThroughLogits` draws no random numbers."""
    columns = {Columns.ACTION_DIST_INPUTS: inputs}
    draw_actions(columns, module, explore)
    return columns


def _uniform(shape: tuple[int, ...]) -> torch.Tensor:
    """Uniform in ±1/sqrt(fan-in), fan-in = the number of features (last axis)."""
    bound = 1.0 / math.sqrt(shape[-1])
    return torch.empty(shape).uniform_(-bound, bound)


def log_softmax(z: torch.Tensor) -> torch.Tensor:
    """log softmax over the last axis.

    ``torch.log_softmax`` and ``torch.softmax`` hand even a 20 x 14 tensor to
    OpenMP threads, which costs milliseconds per call on a busy 2-core
    machine; this form stays on the calling thread (and has the same gradient).
    """
    return z - torch.logsumexp(z, dim=-1, keepdim=True)


def _centre(z: torch.Tensor) -> torch.Tensor:
    """Shift each row to be centred on 0: the same softmax, the smallest largest |logit|."""
    return z - 0.5 * (z.amax(dim=-1, keepdim=True) + z.amin(dim=-1, keepdim=True))
