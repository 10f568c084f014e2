"""OSML's Model-C (FAST'23 §4.3): a DQN over (Δcores, Δways) ∈ {-3..3}², on RLlib's DQN (new API stack).

RLlib's ``DQN`` algorithm (its sampling and target updates; its training step over a replay of transitions in numpy
arrays, :class:`dcgym.agents.osml.model_c_rllib.ModelCDQN`) runs with a custom module and learner that are exactly
OSML's network and loss:

* :class:`ModelCModule`: one MLP of three hidden layers of 30 ReLU units from the eight counters of colo_v0's
  observation (CPU utilization, frequency, IPC, misses, memory bandwidth, allocated cache and cores, latency) to
  49 Q-values, weights drawn from N(0, 0.3) and biases 0.1 (OSML's ``models/Model_C.py``). Inputs are scaled to
  about [0, 1] by OSML's fixed ranges (``data/data_process/max_min``); the three counters spanning orders of
  magnitude (misses, bandwidth, latency) by log(1 + x) / log(1 + max), a stated deviation (a min-max scale of
  latency over 0.085 ms-1656 s leaves every latency below a second at under 1e-3). Actions the observation's
  ``action_mask`` forbids get Q = -inf: never chosen, and RLlib's 5% random actions are drawn among the others.
* :class:`ModelCLearner`: §4.3's loss, mean((r + γ max_a' Q_target(s', a') - Q(s, a))²) with Q_target(s') = 0
  at termination, minimized by RMSProp; the target network is copied every ``target_sync`` sampled steps.

:func:`dcgym.agents.osml.model_c_rllib.build` turns an experiment (``algorithm: osml_dqn``, ``env: colo_v0``) into
the ``AlgorithmConfig``; every service of the scenario shares the one Model-C, as OSML's code does. :func:`osml_dqn_loss` is the loss on plain
tensors (the learner calls it).
"""

from __future__ import annotations

import sys
from typing import Any, Literal

import numpy as np
from pydantic import Field

from dcgym.agents.rl.hyperparameters import Hyperparameters, LayerSizes

__all__ = [
    "FEATURE_MAX",
    "FEATURE_MIN",
    "LOG_FEATURES",
    "ModelCHyperparameters",
    "normalize",
    "osml_dqn_loss",
]

# colo_v0's observation: CPU_Utilization, Frequency, IPC, Misses, MBL, Allocated_Cache, Allocated_Core, Latency
FEATURE_MIN = np.array([0.0, 1161.0, 0.0, 0.0, 0.0, 2.25, 1.0, 0.085])
FEATURE_MAX = np.array([3600.0, 3791.0, 9.17, 645_360.0, 76_800.0, 45.0, 36.0, 1_656_315.0])
"""OSML's normalization ranges (max_min_Model_C.txt); MBL's top is the E5-2697 v4's 76.8 GB/s in MB/s."""
LOG_FEATURES = np.array([False, False, False, True, True, False, False, True])
"""Counters scaled by log(1 + x) / log(1 + max) instead of min-max."""


def normalize(obs: Any) -> Any:
    """OSML's feature scaling (module docstring) of a batch of observations; numpy or torch in, the same out."""
    torch = sys.modules.get("torch")  # a tensor means torch is loaded; numpy callers (policy files) never load it
    lo, hi, logs = FEATURE_MIN, FEATURE_MAX, LOG_FEATURES
    if torch is not None and isinstance(obs, torch.Tensor):
        lo_t = torch.as_tensor(lo, dtype=obs.dtype)
        hi_t = torch.as_tensor(hi, dtype=obs.dtype)
        mm = (obs - lo_t) / (hi_t - lo_t)
        lg = torch.log1p(torch.clamp(obs, min=0.0)) / torch.log1p(hi_t)
        return torch.where(torch.as_tensor(logs), lg, mm)
    obs = np.asarray(obs, dtype=np.float64)
    return np.where(logs, np.log1p(np.maximum(obs, 0.0)) / np.log1p(hi), (obs - lo) / (hi - lo))


def osml_dqn_loss(q, q_target_next, actions, rewards, terminated, gamma: float, n_step=None):
    """§4.3's loss and TD errors: target r + γ^n max Q_target(s'), zero beyond a termination; mean squared error."""
    import torch

    q_sel = torch.gather(q, -1, actions.long().unsqueeze(-1)).squeeze(-1)
    best_next = torch.max(q_target_next, dim=-1).values
    best_next = torch.where(terminated.bool(), torch.zeros_like(best_next), best_next)
    discount = gamma if n_step is None else gamma ** n_step.float()
    target = rewards + discount * best_next
    td = target.detach() - q_sel
    return torch.mean(td * td), td


class ModelCHyperparameters(Hyperparameters):
    """OSML's Model-C on RLlib's DQN; defaults from §4.3 (the code's values in parentheses where they differ)."""

    lr: float = Field(1e-3, gt=0, allow_inf_nan=False)
    """RMSProp learning rate."""
    gamma: float = Field(0.9, ge=0, le=1)
    """Discount factor per decision."""
    epsilon: float = Field(0.05, ge=0, le=1)
    """Share of random actions (OSML's e_greedy 0.95)."""
    target_sync: int = Field(100, ge=1)
    """Sampled steps between copies of the policy network to the target network."""
    train_batch_size: int = Field(200, ge=1)
    """Transitions drawn from the replay pool per update (paper 200; code 5)."""
    replay_capacity: int = Field(10_000, ge=1)
    """Transitions of each service the replay pool keeps (code: 50)."""
    learning_starts: int = Field(200, ge=0)
    """Steps sampled before the first update."""
    rollout_fragment_length: int = Field(4, ge=1)
    """Steps sampled between two updates."""
    steps_per_iteration: int = Field(200, ge=1)
    """Environment steps sampled per training iteration at least."""
    hidden: LayerSizes = [30, 30, 30]
    """Hidden layer sizes (ReLU)."""
    init_std: float = Field(0.3, ge=0)
    """Standard deviation of the initial weights (biases start at 0.1)."""
    policy_sharing: Literal["shared", "per_agent"] = "shared"
    """One Model-C for every service (OSML) or one per service."""
