"""AuTO's sRLA: DDPG for the MLFQ demotion thresholds (SIGCOMM 2018, §4.1, §5.2.1), on RLlib's new API stack.

RLlib no longer ships DDPG; this is DDPG (Lillicrap et al., ICLR 2016) as
AuTO's Algorithm 1 states it, built from RLlib's off-policy pieces: DQN's
loop (sample, store, sample a mini-batch, update, soft target update, sync
the EnvRunners) over a replay of transitions in numpy arrays
(:class:`~dcgym.agents.rl.transition_replay.TransitionReplay`), the
networks in :mod:`.ddpg_rl_module`, the losses in :mod:`.ddpg_learner`.

```python
from dcgym.agents.auto import DDPGConfig
config = DDPGConfig().environment("Pendulum-v1").training(actor_hiddens=[64, 64])
algo = config.build_algo()
result = algo.train()
```

The reward is the environment's: flow_v0 gives sRLA T_{t-1} / T_t, the
ratio of the mean FCTs of two consecutive intervals (§4.1).

Defaults: the paper gives the networks (actor 600-600 -> K - 1 outputs,
critic 600-600 with the action merged at a third hidden layer) and says
only that "γ and τ are small values"; everything else is DDPG's own
(Adam, actor 1e-4, critic 1e-3, τ = 1e-3, mini-batch 64) except where an
attribute docstring in :class:`DDPGConfig` says why not.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.dqn.dqn import DQN, calculate_rr_weights
from ray.rllib.algorithms.sac.sac import SACConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

from dcgym.agents.auto.ddpg_learner import DDPGTorchLearner
from dcgym.agents.auto.ddpg_rl_module import DDPGRLModule
from dcgym.agents.auto.system import AUTO_SRLA
from dcgym.agents.rl.spec import TrainingRun
from dcgym.agents.rl.transition_replay import TransitionReplay
from dcgym.agents.rl.wiring import common, training

__all__ = ["DDPG", "DDPGConfig", "build_srla"]


class DDPGConfig(SACConfig):
    """Configuration of :class:`DDPG`; SAC's config supplies RLlib's replay, n-step and training-intensity settings.

    SAC's entropy settings (``twin_q``, ``initial_alpha``, ``target_entropy``,
    ``alpha_lr``) have no meaning here; ``twin_q`` must stay False.
    """

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or DDPG)
        self.twin_q = False
        self.actor_lr = 1e-4
        """Adam learning rate of the actor (DDPG §7)."""
        self.critic_lr = 1e-3
        """Adam learning rate of the critic (DDPG §7)."""
        self.tau = 1e-3
        """Soft target update rate τ (Algorithm 1 line 5; DDPG §7's 0.001, "a small value" in AuTO)."""
        self.gamma = 0.1
        """Discount γ. AuTO: "γ and τ are small values for stable learning" (§4.1). Its reward T_{t-1} / T_t
        already compares each interval with the one before, so a short horizon suffices: 0.1."""
        self.train_batch_size_per_learner = 64
        """N, transitions per mini-batch (DDPG §7)."""
        self.replay_buffer_config = {"type": "EpisodeReplayBuffer", "capacity": 100_000}
        # DDPG replays from a TransitionReplay of this capacity (the type named is the one SACConfig.validate
        # accepts; RLlib builds it, empty and unused). DDPG kept 10^6 transitions; flow_v0's sRLA observation is
        # 700 floats, so 10^5 keeps the buffer near 0.6 GB (observations and next observations).
        self.num_steps_sampled_before_learning_starts = 256
        self.rollout_fragment_length = 1
        self.min_sample_timesteps_per_iteration = 100
        self.min_time_s_per_iteration = 0
        self.num_env_runners = 0
        self.actor_hiddens = [600, 600]
        """Hidden layers of the actor (§5.2.1: 600 and 600)."""
        self.critic_hiddens = [600, 600]
        """Hidden layers of the critic before the action joins (§5.2.1: the actor's two)."""
        self.critic_merge_hidden = 600
        """Width of the critic's third hidden layer over [h2, action] (§5.2.1 gives none; the others' 600)."""
        self.critic_weight_decay = 0.0
        """L2 weight decay of the critic's Adam (DDPG §7 used 1e-2; AuTO none)."""
        self.exploration_noise = 0.1
        """σ of the Gaussian noise added to μ(s) when sampling, in the normalised action space [-1, 1]
        (AuTO names no noise; 0.1 as Fujimoto et al. 2018 §6)."""

    def training(
        self,
        *,
        actor_hiddens: list[int] = NotProvided,
        critic_hiddens: list[int] = NotProvided,
        critic_merge_hidden: int = NotProvided,
        critic_weight_decay: float = NotProvided,
        exploration_noise: float = NotProvided,
        **kwargs: Any,
    ) -> DDPGConfig:
        """DDPG's own settings (see the attribute docstrings in ``__init__``) and SAC's / RLlib's."""
        super().training(**kwargs)
        for key, value in (
            ("actor_hiddens", actor_hiddens),
            ("critic_hiddens", critic_hiddens),
            ("critic_merge_hidden", critic_merge_hidden),
            ("critic_weight_decay", critic_weight_decay),
            ("exploration_noise", exploration_noise),
        ):
            if value is not NotProvided:
                setattr(self, key, list(value) if key.endswith("hiddens") else value)
        return self

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return {
            "actor_hiddens": list(self.actor_hiddens),
            "critic_hiddens": list(self.critic_hiddens),
            "critic_merge_hidden": self.critic_merge_hidden,
            "exploration_noise": self.exploration_noise,
        }

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=DDPGRLModule)

    def get_default_learner_class(self) -> type:
        return DDPGTorchLearner

    def validate(self) -> None:
        super().validate()
        err = self._value_error
        if self.framework_str != "torch":
            err(f"`framework` ({self.framework_str!r}) must be 'torch'")
        if self.twin_q:
            err("`twin_q` (True) must be False: DDPG has one critic")
        for key in ("actor_hiddens", "critic_hiddens"):
            value = getattr(self, key)
            if not (isinstance(value, list) and value and all(isinstance(h, int) and h >= 1 for h in value)):
                err(f"`{key}` ({value!r}) must be a non-empty list of integers >= 1")
        if not (isinstance(self.critic_merge_hidden, int) and self.critic_merge_hidden >= 1):
            err(f"`critic_merge_hidden` ({self.critic_merge_hidden!r}) must be an integer >= 1")
        if not self.exploration_noise >= 0:
            err(f"`exploration_noise` ({self.exploration_noise}) must be >= 0")
        if not self.critic_weight_decay >= 0:
            err(f"`critic_weight_decay` ({self.critic_weight_decay}) must be >= 0")
        if not (isinstance(self.n_step, int) and self.n_step >= 1):
            err(f"`n_step` ({self.n_step!r}) must be an integer >= 1 (DDPG's replay takes no range)")
        if not 0.0 < self.tau <= 1.0:
            err(f"`tau` ({self.tau}) must be in (0, 1]")
        if not 0.0 <= self.gamma <= 1.0:
            err(f"`gamma` ({self.gamma}) must be in [0, 1]")
        for key in ("actor_lr", "critic_lr"):
            value = getattr(self, key)
            if isinstance(value, (int, float)) and not value > 0:
                err(f"`{key}` ({value}) must be > 0")


class DDPG(DQN):
    """DDPG (AuTO's Algorithm 1): DQN's off-policy round with DDPG's module and learner, and a transition replay.

    Each round samples ``rollout_fragment_length`` env steps per env runner, stores their transitions in a
    :class:`~dcgym.agents.rl.transition_replay.TransitionReplay` (``replay_buffer_config``'s ``capacity``;
    ``n_step`` returns) and, once ``num_steps_sampled_before_learning_starts`` steps were sampled, updates the
    learner on mini-batches of ``train_batch_size_per_learner`` (as many per sample as ``training_intensity``
    asks, RLlib's DQN weights), then syncs the env runners' actor: DQN's ``training_step``, in the same order.

    What differs is the bookkeeping around it, the most of an update of small networks (docs/training.md):

    - the mini-batch reaches the learner as columns (``learner_group.update(batch=...)``), where RLlib's episode
      replay sliced episodes per sampled step and its learner connectors rebuilt the same columns;
    - one ``training_step`` runs the rounds of a whole iteration (``min_sample_timesteps_per_iteration`` env
      steps) and reduces the learners' and the local env runner's metrics once, at its end, not every round;
    - with no remote env runner and a local learner, the actor's weights are copied tensor to tensor into the
      env runner's module (RLlib's ``sync_weights`` converts them to numpy and puts them in Ray's object store).
    """

    @classmethod
    def get_default_config(cls) -> DDPGConfig:
        return DDPGConfig()

    def setup(self, config: Any) -> None:
        super().setup(config)
        # In place of RLlib's episode replay; seeded by the config's seed (debugging(seed=...) seeds the networks and
        # the environment, not a buffer): one seed trains bit for bit alike.
        self.local_replay_buffer = TransitionReplay(
            int(self.config.replay_buffer_config["capacity"]),
            n_step=self.config.n_step,
            gamma=self.config.gamma,
            seed=self.config.seed,
        )

    def _in_process(self) -> bool:
        """No remote env runner and a local learner: everything runs here (train.py's default)."""
        return self.env_runner_group.num_remote_workers() == 0 and self.learner_group.is_local

    def training_step(self) -> None:
        config = self.config
        store_weight, sample_and_train_weight = calculate_rr_weights(config)
        in_process = self._in_process()
        sampled = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        until = sampled + max(config.min_sample_timesteps_per_iteration or 0, 1)
        updated = False
        while sampled < until:
            for _ in range(store_weight):
                if in_process:  # its metrics are reduced once, below
                    episodes = self.env_runner_group.local_env_runner.sample()
                else:
                    episodes, results = synchronous_parallel_sample(
                        worker_set=self.env_runner_group,
                        concat=True,
                        sample_timeout_s=config.sample_timeout_s,
                        _uses_new_env_runners=True,
                        _return_metrics=True,
                    )
                    self.metrics.aggregate(results, key=ENV_RUNNER_RESULTS)
                self.local_replay_buffer.add_episodes(episodes)
                sampled += sum(len(e) for e in episodes)
            if sampled < config.num_steps_sampled_before_learning_starts:
                continue
            size = config.total_train_batch_size
            for _ in range(sample_and_train_weight):
                batch = SampleBatch(self.local_replay_buffer.sample(size))
                self.learner_group.update(
                    batch=MultiAgentBatch({DEFAULT_MODULE_ID: batch}, env_steps=size),
                    timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: sampled},
                    _no_metrics_reduce=True,
                )
            updated = True
            self._sync_actor(in_process)
        if in_process:
            self.metrics.aggregate([self.env_runner_group.local_env_runner.get_metrics()], key=ENV_RUNNER_RESULTS)
        if updated:
            results = self.learner_group.foreach_learner(lambda learner: learner.metrics.reduce())
            self.metrics.aggregate([r.get() for r in results if r.ok], key=LEARNER_RESULTS)

    def _sync_actor(self, in_process: bool) -> None:
        """The env runners act with the learner's actor from the next step on."""
        if not in_process:
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group, policies={DEFAULT_MODULE_ID}, inference_only=True
            )
            return
        # A local LearnerGroup holds its one Learner as ``_learner`` (RLlib has no public accessor for it).
        source = self.learner_group._learner.module[DEFAULT_MODULE_ID].unwrapped().actor
        target = self.env_runner_group.local_env_runner.module.unwrapped().actor
        with torch.no_grad():
            for to, value in zip(target.parameters(), source.parameters(), strict=True):
                to.copy_(value)


def build_srla(experiment: TrainingRun, env_config: dict[str, Any]) -> DDPGConfig:
    """``algorithm: auto_srla``: sRLA (DDPG) on ``dcgym/FlowSrla-v0``, flow_v0 with lRLA held by MLFQ's rules; the
    hyperparameters are the settings of :meth:`DDPGConfig.training`."""
    config = common(DDPGConfig(), experiment, env_config)
    config.environment(AUTO_SRLA.one_agent_forms[experiment.env].env_id, env_config=env_config)
    training(config, experiment.hyperparameters)
    return config
