"""The hyperparameter schemas of the multi-LB learners, with the multi-LB paper's values as defaults (Table 9).

Plain pydantic models (no RLlib import), so the algorithm registry can
validate an experiment file before anything heavy is loaded. Each field has
a one-line docstring; unknown keys are refused with the key named.

| algorithm | schema | built on |
|---|---|---|
| ``distr_lb`` | :class:`DistrLbHyperparameters` | :mod:`dcgym.agents.marl_lb.qmix`, independent mode: a Q-learner per LB |
| ``centr_lb`` | :class:`CentrLbHyperparameters` | the same, one agent over lb_central_v0 |
| ``qmix_lb`` | :class:`QmixLbHyperparameters` | :mod:`dcgym.agents.marl_lb.qmix`, QMIX mode (a custom algorithm) |
| ``rlb_sac`` | :class:`RlbSacHyperparameters` | RLlib's SAC, one module per LB (the generic builder) |
| ``distr_lb_ppo`` | :class:`DistrLbPpoHyperparameters` | RLlib's PPO, one module per LB |
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dcgym.agents.rl.baselines import PPOHyperparameters, SACHyperparameters
from dcgym.agents.rl.hyperparameters import Hyperparameters, LayerSizes

__all__ = [
    "CentrLbHyperparameters",
    "DistrLbHyperparameters",
    "DistrLbPpoHyperparameters",
    "QmixLbHyperparameters",
    "RlbSacHyperparameters",
    "ValueLearnerHyperparameters",
]


class DistrLbPpoHyperparameters(PPOHyperparameters):
    """Distr-LB on RLlib's PPO (``distr_lb_ppo``): one independent PPO learner per LB, per-server weight heads.

    The on-policy alternative to ``distr_lb``; measured to learn too slowly
    on these games within a 2-core budget (docs/results/multilb.md).
    """

    policy_sharing: Literal["per_agent"] = "per_agent"
    """Always one network per LB: the learners are independent (App. B.3's game, each LB its own reward)."""
    lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Adam learning rate (Table 9, simulation: 3e-4)."""
    hidden: LayerSizes = [64, 64]
    """Hidden layers of the policy and value networks (Table 9: hidden dimension 64)."""
    train_batch_size: int = Field(960, ge=1)
    """Environment steps per iteration (8 episodes of 120 steps in lb_sim)."""
    minibatch_size: int = Field(120, ge=1)
    """Samples per SGD minibatch."""
    num_epochs: int = Field(10, ge=1)
    """Passes over each iteration's batch (Table 9: 10 updates per episode)."""
    entropy_coeff: float = Field(0.001, ge=0, allow_inf_nan=False)
    """Weight of the entropy bonus (keeps the per-server heads exploring early on)."""
    vf_clip_param: float = Field(1e6, gt=0, allow_inf_nan=False)
    """In effect no clip of the value loss: the fairness returns are in the hundreds (VBF about -1 per step over 120 steps),
    and RLlib's default clip (10) freezes the value function at that scale (measured: vf_loss pinned at 10)."""
    grad_clip: float | None = Field(None, gt=0)
    """No global-norm clip: with separate policy and value networks, a clip over both lets the value loss's large
    gradients shrink the policy's step (Adam already scales each parameter's step)."""


class RlbSacHyperparameters(SACHyperparameters):
    """RLB-SAC (the paper's single-LB SAC baseline, ref. [40]) run by every LB: the authors' settings.

    Learning rates 3e-4, gamma 0.99, tau 0.01, target entropy -|A|
    (``auto``), hidden 512, batch 64 (the authors' simulator: batch 64, 512
    units, automatic entropy tuning).
    """

    tau: float = Field(0.01, gt=0, le=1)
    """Soft target-network update rate (the paper's 0.01)."""
    hidden: LayerSizes = [512, 512]
    """Hidden layers of the policy and Q networks (the paper's 512 units)."""
    train_batch_size: int = Field(64, ge=1)
    """Transitions per update (the authors' batch of 64)."""


class ValueLearnerHyperparameters(Hyperparameters):
    """What every value-based multi-LB learner shares (:mod:`dcgym.agents.marl_lb.qmix`): Q-networks with one
    head per server over the weight levels, epsilon-greedy exploration, an episode replay, TD(lambda) targets.

    Defaults: Table 9's simulation column (learning rate 3e-4, batch of 25
    episodes, replay of 3000 episodes, 10 updates per episode), TD(lambda =
    0.6), gamma 0.99.
    """

    lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Adam learning rate (Table 9, simulation)."""
    gamma: float = Field(0.99, ge=0, le=1)
    """Discount factor per step."""
    td_lambda: float = Field(0.6, ge=0, le=1)
    """lambda of the TD(lambda) targets."""
    fc_hidden: int = Field(64, ge=1)
    """Width of the ReLU layer(s) after an LB's observation (Table 9: hidden dimension 64)."""
    gru_hidden: int = Field(0, ge=0)
    """Width of each LB's GRU; 0 = feed-forward (a second ReLU layer; the network fits a policy file)."""
    log_inputs: bool = False
    """log1p of the observation before the first layer (not representable in a policy file)."""
    buffer_episodes: int = Field(3000, ge=1)
    """Replay capacity in episodes (Table 9)."""
    batch_episodes: int = Field(25, ge=1)
    """Episodes per update (Table 9's batch size)."""
    episodes_per_iteration: int = Field(1, ge=1)
    """Episodes sampled per training iteration (at least; one per vectorized environment)."""
    updates_per_episode: int = Field(10, ge=0)
    """Gradient updates per episode sampled (Table 9)."""
    learning_starts: int = Field(25, ge=1)
    """Episodes in the buffer before the first update."""
    target_update_interval: int = Field(200, ge=1)
    """Updates between two copies of the online networks into the target networks."""
    epsilon_start: float = Field(1.0, ge=0, le=1)
    """Probability of a random weight level per server at the start."""
    epsilon_end: float = Field(0.05, ge=0, le=1)
    """... at the end of the decay."""
    epsilon_timesteps: int = Field(30_000, ge=1)
    """Environment steps over which epsilon decays linearly."""
    grad_clip: float = Field(10.0, gt=0, allow_inf_nan=False)
    """Gradient-norm clip per module."""
    double_q: bool = True
    """Pick the target's actions with the online networks (double Q-learning)."""
    reward_scale: float = Field(1.0, gt=0, allow_inf_nan=False)
    """Rewards are multiplied by this."""
    heads: Literal["server", "group"] = "server"
    """One weight head per server (the paper's), or one per server group of the scenario, shared by its servers
    and explored together: the one scalar reward then credits as many choices as there are groups, not servers."""


class DistrLbHyperparameters(ValueLearnerHyperparameters):
    """Distr-LB (``distr_lb``): one independent Q-learner per LB on its own observation and its own fairness
    reward (no mixer, no shared parameters), feed-forward so that its policy exports to a policy file."""


class CentrLbHyperparameters(ValueLearnerHyperparameters):
    """Centr-LB (``centr_lb``): the same learner as one agent over lb_central_v0 (every LB's observation in, every
    LB's per-server heads out, the mean of the LBs' rewards)."""

    fc_hidden: int = Field(128, ge=1)
    """Wider than one LB's: the input and output are M times larger."""


class QmixLbHyperparameters(ValueLearnerHyperparameters):
    """QMIX-LB (``qmix_lb``): per-LB GRU Q-networks, a monotone hypernetwork mixer of the global state.

    Defaults: GRU 128, hypernetwork 128, TD(lambda = 0.6), gamma 0.99, and
    Table 9's simulation column for the rest.
    """

    gru_hidden: int = Field(128, ge=1)
    """Width of each LB's GRU."""
    log_inputs: bool = True
    """log1p of the observation (QMIX-LB is recurrent: it has no policy file anyway)."""
    hypernet_hidden: int = Field(128, ge=1)
    """Width of the hidden layer of the hypernetworks that make the mixer's weights from the state."""
    mixing_embed: int = Field(32, ge=1)
    """Width of the mixer's hidden layer."""
