"""QMIX-LB's networks as RLModules: one recurrent Q-network per load balancer, and the monotone mixer.

- :class:`QmixAgentRLModule` (one per LB, module id = agent id): the LB's
  observation (N servers x 12 features, flattened) goes through a ReLU layer
  (``fc_hidden``) and a GRU (``gru_hidden``, 128 by default; or a second ReLU
  layer when ``gru_hidden`` is 0, a feed-forward network that a policy file
  can hold) into one head per server: Q_ij(tau, k) for each weight level k of server j (lb_v0's
  ``WEIGHT_LEVELS`` 1.0, 1.5, 2.0). The LB's joint action is one level per
  server and its utility the mean over servers,
  Q_i(tau, a) = (1/N) sum_j Q_ij(tau, a_j), so the greedy action is the
  per-server argmax (an action-branching decomposition inside one agent).
  Acting: greedy (inference) or epsilon-greedy per server (exploration, the
  epsilon decaying linearly with the environment steps sampled).
- :class:`QmixMixerRLModule` (module id ``mixer``, built on the Learner only):
  Q_tot(s, Q_1..Q_M) as in QMIX (Rashid et al., 2018): hypernetworks of the
  global state s (every LB's observation, lb_v0's ``state()``) make the
  weights of a two-layer mixing network; their absolute values keep
  dQ_tot / dQ_i >= 0 (monotone mixing), so each LB's greedy action is the
  joint greedy action.

Both hold a target copy (not trained, refreshed by the Learner). Inputs are
compressed with log1p (``log_inputs``): counts and times in units of D are
>= 0 and can be large at high load; a feed-forward network meant for a
policy file takes the observation as it is (the file holds dense layers
only).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn
from torch.nn import functional as F

from dcgym.agents.marl_lb.policy_file import mlp_from_q_modules
from dcgym.agents.policy_format import MlpPolicy
from dcgym.agents.rl.apis import PolicyFileAPI, PolicyFileContext

__all__ = ["MIXER", "AgentQNetwork", "Mixer", "QmixAgentRLModule", "QmixMixerRLModule", "linear_epsilon"]

MIXER = "mixer"
"""The module id of the mixer in the MultiRLModule."""


def linear_epsilon(t: float, start: float, end: float, timesteps: int) -> float:
    """epsilon after ``t`` environment steps: ``start`` to ``end`` linearly over ``timesteps``, then ``end``."""
    frac = min(max(float(t), 0.0) / timesteps, 1.0)
    return start + frac * (end - start)


class AgentQNetwork(nn.Module):
    """obs (B, T, D) -> Q (B, T, N, L): [log1p], a ReLU layer, then a GRU (``gru_hidden`` > 0) or a second ReLU
    layer (``gru_hidden`` = 0, feed-forward), and one head of L values per server, or per group of servers
    (``head_of_server``: server j reads head ``head_of_server[j]``)."""

    def __init__(
        self,
        obs_dim: int,
        num_servers: int,
        num_levels: int,
        fc_hidden: int,
        gru_hidden: int,
        log_inputs: bool,
        head_of_server: Sequence[int] | None = None,
    ) -> None:
        super().__init__()
        self.num_servers, self.num_levels, self.log_inputs = num_servers, num_levels, log_inputs
        heads = list(range(num_servers)) if head_of_server is None else [int(h) for h in head_of_server]
        if len(heads) != num_servers or sorted(set(heads)) != list(range(max(heads) + 1)):
            raise ValueError(f"head_of_server must map each of the {num_servers} servers to heads 0..H-1, got {heads}")
        self.num_heads = max(heads) + 1
        self.shared = heads != list(range(num_servers))
        """Whether a server reads another head than its own (heads shared by a group, or any other mapping)."""
        self.register_buffer("head_of_server", torch.tensor(heads, dtype=torch.long), persistent=False)
        self.fc = nn.Linear(obs_dim, fc_hidden)
        if gru_hidden > 0:
            self.gru = nn.GRU(fc_hidden, gru_hidden, batch_first=True)
            self.head = nn.Linear(gru_hidden, self.num_heads * num_levels)
        else:
            self.gru = None
            self.fc2 = nn.Linear(fc_hidden, fc_hidden)
            self.head = nn.Linear(fc_hidden, self.num_heads * num_levels)

    def server_head(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The last layer as one block of L rows per server (weight (N L, H), bias (N L)): the shared heads
        repeated for every server of their group, the form a policy file holds."""
        rows = (self.head_of_server[:, None] * self.num_levels + torch.arange(self.num_levels)).reshape(-1)
        return self.head.weight[rows], self.head.bias[rows]

    def forward(self, obs: torch.Tensor, h0: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Q-values for every step of ``obs`` (B, T, D) from the hidden state ``h0`` (B, H; None when
        feed-forward); and the last state."""
        x = torch.log1p(obs.clamp(min=0.0)) if self.log_inputs else obs
        x = F.relu(self.fc(x))
        if self.gru is None:
            q, h = self.head(F.relu(self.fc2(x))), None
        else:
            out, h = self.gru(x, h0.unsqueeze(0).contiguous())
            q, h = self.head(out), h.squeeze(0)
        q = q.view(*q.shape[:2], self.num_heads, self.num_levels)
        return (q[:, :, self.head_of_server] if self.shared else q), h


class Mixer(nn.Module):
    """QMIX's monotone mixing network: Q_tot = w2' elu(Q w1 + b1) + V(s), w1 = |W1(s)|, w2 = |W2(s)|."""

    def __init__(self, num_agents: int, state_dim: int, embed: int, hypernet_hidden: int) -> None:
        super().__init__()
        self.num_agents, self.embed = num_agents, embed
        self.hyper_w1 = nn.Sequential(
            nn.Linear(state_dim, hypernet_hidden), nn.ReLU(), nn.Linear(hypernet_hidden, embed * num_agents)
        )
        self.hyper_b1 = nn.Linear(state_dim, embed)
        self.hyper_w2 = nn.Sequential(
            nn.Linear(state_dim, hypernet_hidden), nn.ReLU(), nn.Linear(hypernet_hidden, embed)
        )
        self.value = nn.Sequential(nn.Linear(state_dim, embed), nn.ReLU(), nn.Linear(embed, 1))

    def forward(self, agent_qs: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """Q_tot for agent utilities ``agent_qs`` (..., M) in global states ``state`` (..., S): shape (...)."""
        lead = agent_qs.shape[:-1]
        s = torch.log1p(state.clamp(min=0.0)).reshape(-1, state.shape[-1])
        q = agent_qs.reshape(-1, 1, self.num_agents)
        w1 = self.hyper_w1(s).abs().view(-1, self.num_agents, self.embed)
        b1 = self.hyper_b1(s).view(-1, 1, self.embed)
        hidden = F.elu(torch.bmm(q, w1) + b1)
        w2 = self.hyper_w2(s).abs().view(-1, self.embed, 1)
        y = torch.bmm(hidden, w2) + self.value(s).view(-1, 1, 1)
        return y.view(lead)


def _frozen_copy(net: nn.Module) -> nn.Module:
    target = copy.deepcopy(net)
    for p in target.parameters():
        p.requires_grad_(False)
    return target


class QmixAgentRLModule(TorchRLModule, PolicyFileAPI):
    """One LB's recurrent Q-network with per-server heads, greedy or epsilon-greedy (module docstring).

    ``model_config``: ``fc_hidden`` (64), ``gru_hidden`` (128; 0 = feed-forward,
    no recurrent state), ``log_inputs`` (True: log1p of the observation),
    ``epsilon_start`` (1.0), ``epsilon_end`` (0.05), ``epsilon_timesteps``
    (30000), ``head_of_server`` (None: a head per server; a list of N head
    indices: servers with the same index share a head and explore together).
    The action space must be lb_v0's discrete ``MultiDiscrete([L] * N)``.
    """

    def policy_file(self, context: PolicyFileContext) -> MlpPolicy:
        """Every LB's feed-forward Q-network, in agent order (:mod:`dcgym.agents.marl_lb.policy_file`)."""
        return mlp_from_q_modules(context.agent_modules)

    def setup(self) -> None:
        cfg = self.model_config or {}
        space = self.action_space
        if not isinstance(space, gym.spaces.MultiDiscrete) or len(set(space.nvec.tolist())) != 1:
            raise ValueError(f"QMIX-LB needs lb_v0's discrete MultiDiscrete([L] * N) actions, got {space}")
        self.num_servers, self.num_levels = len(space.nvec), int(space.nvec[0])
        self.obs_dim = int(math.prod(self.observation_space.shape))
        self.gru_hidden = int(cfg.get("gru_hidden", 128))
        self.epsilon = (
            float(cfg.get("epsilon_start", 1.0)),
            float(cfg.get("epsilon_end", 0.05)),
            int(cfg.get("epsilon_timesteps", 30_000)),
        )
        self.q_net = AgentQNetwork(
            self.obs_dim,
            self.num_servers,
            self.num_levels,
            int(cfg.get("fc_hidden", 64)),
            self.gru_hidden,
            bool(cfg.get("log_inputs", True)),
            cfg.get("head_of_server"),
        )
        if not self.inference_only:
            self.target_q_net = _frozen_copy(self.q_net)

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        return {"h": torch.zeros(self.gru_hidden)} if self.gru_hidden > 0 else {}

    def q_values(
        self, obs: torch.Tensor, h0: torch.Tensor | None = None, target: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Q (B, T, N, L) of observations (B, T, ...) from hidden states (B, H), online or target network."""
        net = self.target_q_net if target else self.q_net
        if h0 is None and self.gru_hidden > 0:
            h0 = torch.zeros(obs.shape[0], self.gru_hidden)
        return net(obs.reshape(*obs.shape[:2], self.obs_dim).float(), h0)

    def _greedy(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, dict[str, Any]]:
        obs = batch[Columns.OBS]
        single = obs.dim() == len(self.observation_space.shape) + 1  # no time axis: one step
        if single:
            obs = obs.unsqueeze(1)
        state = batch.get(Columns.STATE_IN) or {}
        q, h = self.q_values(obs, state.get("h"))
        actions = q.argmax(dim=-1)
        out = {Columns.STATE_OUT: {"h": h}} if h is not None else {}
        return (actions[:, 0] if single and h is None else actions), q, out

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        actions, _, out = self._greedy(batch)
        return {Columns.ACTIONS: actions, **out}

    def _forward_exploration(self, batch: dict[str, Any], t: int = 0, **kwargs: Any) -> dict[str, Any]:
        actions, _, out = self._greedy(batch)
        eps = linear_epsilon(t, *self.epsilon)
        heads = (*actions.shape[:-1], self.q_net.num_heads)  # one draw per head: a group's servers explore together
        explore = torch.rand(heads) < eps
        random = torch.randint(0, self.num_levels, heads)
        if self.q_net.shared:
            explore, random = explore[..., self.q_net.head_of_server], random[..., self.q_net.head_of_server]
        return {Columns.ACTIONS: torch.where(explore, random, actions), **out}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("QMIX-LB's Learner computes the Q-values of whole episodes itself (qmix_learner)")

    def get_non_inference_attributes(self) -> list[str]:
        return ["target_q_net"]


class QmixMixerRLModule(TorchRLModule):
    """The mixer (and its target) of QMIX-LB; built on the Learner only, never acts.

    ``observation_space`` is the global state's (M x N x 12), ``model_config``:
    ``num_agents``, ``mixing_embed`` (32), ``hypernet_hidden`` (128).
    """

    def setup(self) -> None:
        cfg = self.model_config or {}
        self.state_dim = int(math.prod(self.observation_space.shape))
        self.mixer = Mixer(
            int(cfg["num_agents"]),
            self.state_dim,
            int(cfg.get("mixing_embed", 32)),
            int(cfg.get("hypernet_hidden", 128)),
        )
        self.target_mixer = _frozen_copy(self.mixer)

    def mix(self, agent_qs: torch.Tensor, state: torch.Tensor, target: bool = False) -> torch.Tensor:
        """Q_tot of agent utilities (..., M) in states (..., state dims flattened or not)."""
        flat = state.reshape(*agent_qs.shape[:-1], self.state_dim).float()
        return (self.target_mixer if target else self.mixer)(agent_qs, flat)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError("the mixer does not act; the Learner calls mix()")
