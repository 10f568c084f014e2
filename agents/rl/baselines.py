"""The generic baselines: RLlib's PPO and SAC with small defaults for a 2-core machine, on any environment.

- ``ppo``: multi-agent PPO, one network shared by every agent or one per agent (``policy_sharing``);
  rack_v0, lb_v0 (discrete or continuous actions), flow_v0, ...
- ``sac``: multi-agent SAC for continuous actions (lb_v0 with ``action_type: continuous``, rack_v0); on flow_v0
  it trains sRLA's thresholds alone (lRLA's per-flow choices are discrete), lRLA held by the rules.

0 env runners and 0 learners by default: a remote runner is slower than none here (docs/training.md). Each has a
hyperparameter schema (:class:`PPOHyperparameters`, :class:`SACHyperparameters`): one documented field per
setting, defaults filled in, unknown keys refused with the field named. Their trained modules are RLlib's
default ones, which become policy files through :func:`dcgym.agents.rl.default_modules.mlp_policy`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from dcgym.agents.rl.hyperparameters import Hyperparameters, LayerSizes
from dcgym.agents.rl.spec import AlgorithmSpec, LearningSystem, OneAgentForm, TrainingRun
from dcgym.agents.rl.wiring import common, one_agent_environment, policies, require_continuous

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

__all__ = ["BASELINES", "PPO", "SAC", "PPOHyperparameters", "SACHyperparameters", "build_ppo", "build_sac"]


class PPOHyperparameters(Hyperparameters):
    """Multi-agent PPO (RLlib's ``PPOConfig``); names follow RLlib's where they exist."""

    policy_sharing: Literal["shared", "per_agent"] = "shared"
    """One network for every agent (``shared``, parameter sharing) or one per agent (``per_agent``)."""
    lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Adam learning rate."""
    gamma: float = Field(0.99, ge=0, le=1)
    """Discount factor per step."""
    gae_lambda: float = Field(0.95, ge=0, le=1)
    """GAE lambda (RLlib's ``lambda_``)."""
    clip_param: float = Field(0.2, gt=0, allow_inf_nan=False)
    """PPO's ratio clip."""
    vf_clip_param: float = Field(10.0, gt=0)
    """Clip of the value-function loss (in squared reward units)."""
    vf_loss_coeff: float = Field(1.0, ge=0, allow_inf_nan=False)
    """Weight of the value loss."""
    entropy_coeff: float = Field(0.0, ge=0, allow_inf_nan=False)
    """Weight of the entropy bonus."""
    kl_coeff: float = Field(0.2, ge=0, allow_inf_nan=False)
    """Initial weight of the KL penalty (0 turns it off)."""
    grad_clip: float | None = Field(0.5, gt=0)
    """Global gradient-norm clip (null = none)."""
    train_batch_size: int = Field(1000, ge=1)
    """Environment steps per iteration (RLlib's ``train_batch_size_per_learner``)."""
    minibatch_size: int = Field(250, ge=1)
    """Samples per SGD minibatch."""
    num_epochs: int = Field(4, ge=1)
    """Passes over each iteration's batch."""
    rollout_fragment_length: int | Literal["auto"] = "auto"
    """Steps an env runner collects per sample call (``auto``: from the batch size)."""
    hidden: LayerSizes = [64, 64]
    """Hidden layer sizes of the policy and value networks (RLlib's default model cannot be linear)."""
    activation: Literal["tanh", "relu"] = "tanh"
    """Hidden-layer activation."""
    vf_share_layers: bool = False
    """Policy and value heads on one trunk."""


class SACHyperparameters(Hyperparameters):
    """Multi-agent SAC (RLlib's ``SACConfig``) for continuous actions."""

    policy_sharing: Literal["shared", "per_agent"] = "per_agent"
    """One network for every agent (``shared``) or one per agent (``per_agent``)."""
    actor_lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Learning rate of the policy."""
    critic_lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Learning rate of the twin Q networks."""
    alpha_lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Learning rate of the entropy temperature."""
    gamma: float = Field(0.99, ge=0, le=1)
    """Discount factor per step."""
    tau: float = Field(0.005, gt=0, le=1)
    """Soft target-network update rate."""
    initial_alpha: float = Field(1.0, gt=0, allow_inf_nan=False)
    """Initial entropy temperature."""
    target_entropy: float | Literal["auto"] = "auto"
    """Target policy entropy (``auto`` = minus the action dimension)."""
    n_step: int = Field(1, ge=1)
    """n-step returns."""
    train_batch_size: int = Field(64, ge=1)
    """Transitions per update (RLlib's ``train_batch_size_per_learner``)."""
    replay_capacity: int = Field(50_000, ge=1)
    """Replay buffer size in environment steps."""
    learning_starts: int = Field(256, ge=0)
    """Environment steps sampled before the first update."""
    rollout_fragment_length: int = Field(2, ge=1)
    """Environment steps sampled between two updates."""
    steps_per_iteration: int = Field(120, ge=1)
    """Environment steps sampled per iteration at least (``min_sample_timesteps_per_iteration``)."""
    hidden: LayerSizes = [64, 64]
    """Hidden layer sizes of the policy and Q networks."""
    activation: Literal["tanh", "relu"] = "relu"
    """Hidden-layer activation."""


def build_ppo(experiment: TrainingRun, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Multi-agent PPO with :class:`PPOHyperparameters`."""
    from ray.rllib.algorithms.ppo import PPOConfig

    hp = PPOHyperparameters(**experiment.hyperparameters)
    config = common(PPOConfig(), experiment, env_config)
    config.env_runners(rollout_fragment_length=hp.rollout_fragment_length)
    config.training(
        lr=hp.lr,
        gamma=hp.gamma,
        lambda_=hp.gae_lambda,
        clip_param=hp.clip_param,
        vf_clip_param=hp.vf_clip_param,
        vf_loss_coeff=hp.vf_loss_coeff,
        entropy_coeff=hp.entropy_coeff,
        kl_coeff=hp.kl_coeff,
        use_kl_loss=hp.kl_coeff > 0,
        grad_clip=hp.grad_clip,
        train_batch_size_per_learner=hp.train_batch_size,
        minibatch_size=hp.minibatch_size,
        num_epochs=hp.num_epochs,
    )
    config.rl_module(
        model_config={
            "fcnet_hiddens": list(hp.hidden),
            "fcnet_activation": hp.activation,
            "vf_share_layers": hp.vf_share_layers,
        }
    )
    policies(config, experiment, env_config, hp.policy_sharing)
    return config


def build_sac(experiment: TrainingRun, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Multi-agent SAC with :class:`SACHyperparameters`: continuous actions only (on flow_v0 sRLA alone,
    :attr:`SAC`'s one-agent forms)."""
    from ray.rllib.algorithms.sac import SACConfig

    form = SAC.one_agent_forms.get(experiment.env)
    if form is None:
        require_continuous(experiment, env_config, "sac")
    hp = SACHyperparameters(**experiment.hyperparameters)
    config = common(SACConfig(), experiment, env_config)
    if form is not None:  # the continuous agent alone, the others held by the environment's rules
        one_agent_environment(config, form.env_id, env_config)
    config.env_runners(rollout_fragment_length=hp.rollout_fragment_length)
    config.training(
        actor_lr=hp.actor_lr,
        critic_lr=hp.critic_lr,
        alpha_lr=hp.alpha_lr,
        gamma=hp.gamma,
        tau=hp.tau,
        initial_alpha=hp.initial_alpha,
        target_entropy=hp.target_entropy,
        n_step=hp.n_step,
        train_batch_size_per_learner=hp.train_batch_size,
        num_steps_sampled_before_learning_starts=hp.learning_starts,
        replay_buffer_config={
            "type": "MultiAgentEpisodeReplayBuffer" if form is None else "EpisodeReplayBuffer",
            "capacity": hp.replay_capacity,
        },
    )
    config.reporting(min_sample_timesteps_per_iteration=hp.steps_per_iteration)
    config.rl_module(model_config={"fcnet_hiddens": list(hp.hidden), "fcnet_activation": hp.activation})
    if form is None:
        policies(config, experiment, env_config, hp.policy_sharing)
    return config


_POLICY_FILE = "dcgym.agents.rl.default_modules:mlp_policy"

PPO = AlgorithmSpec(
    "ppo",
    "RLlib's multi-agent PPO, one network shared or one per agent",
    build_ppo,
    PPOHyperparameters,
    policy_file=_POLICY_FILE,
)
SAC = AlgorithmSpec(
    "sac",
    "RLlib's multi-agent SAC for continuous actions (on flow_v0: sRLA's thresholds alone)",
    build_sac,
    SACHyperparameters,
    one_agent_forms={"flow_v0": OneAgentForm("srla", "dcgym/FlowSrla-v0")},
    policy_file=_POLICY_FILE,
)
BASELINES = LearningSystem("baselines", "RLlib's own PPO and SAC on any environment", (PPO, SAC))
"""The generic baselines, registered like any learning system."""
