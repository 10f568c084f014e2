"""AuTO's sRLA: DDPG for the MLFQ demotion thresholds (SIGCOMM 2018, §4.1, §5.2.1), on RLlib's new API stack.

RLlib no longer ships DDPG; this is DDPG (Lillicrap et al., ICLR 2016) as
AuTO's Algorithm 1 states it, built from RLlib's off-policy pieces: DQN's
loop (sample, store, sample a mini-batch, update, soft target update, sync
the EnvRunners) over a replay of transitions in numpy arrays
(:class:`~dcgym.agents.rl.replay_training.TransitionReplayDQN`), the
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

from collections.abc import Mapping
from typing import Any

import numpy as np
from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.sac.sac import SACConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from dcgym.agents.auto.ddpg_learner import DDPGTorchLearner
from dcgym.agents.auto.ddpg_rl_module import DDPGRLModule
from dcgym.agents.auto.policy_file import srla_action
from dcgym.agents.auto.system import AUTO_SRLA
from dcgym.agents.rl.replay_training import TransitionReplayDQN
from dcgym.agents.rl.spec import TrainingRun
from dcgym.agents.rl.wiring import common, one_agent_environment, set_provided, training
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.flow.game import FlowEnvConfig

__all__ = ["DDPG", "DDPGConfig", "build_srla"]


class DDPGConfig(SACConfig):
    """Configuration of :class:`DDPG`; SAC's config supplies RLlib's replay, n-step and training-intensity settings.

    SAC's entropy settings (``initial_alpha``, ``target_entropy``, ``alpha_lr``) have no meaning here.
    ``twin_q`` (default False) turns on clipped double Q-learning (Fujimoto et al. 2018, TD3 §4.2): two critics,
    each regressed on the same target y = r + γ min(Q'_1, Q'_2)(s', μ'(s')); the actor follows the first.
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
        self.actor_start = None
        """None (DDPG's start: outputs near 0), or one action in (-1, 1) per action dimension that μ starts at for
        every observation: its last layer starts with weights 0 and bias atanh of it. sRLA's ``start_thresholds``
        sets it from a threshold set (build_srla)."""

    def training(
        self,
        *,
        actor_hiddens: list[int] = NotProvided,
        critic_hiddens: list[int] = NotProvided,
        critic_merge_hidden: int = NotProvided,
        critic_weight_decay: float = NotProvided,
        exploration_noise: float = NotProvided,
        actor_start: list[float] | None = NotProvided,
        **kwargs: Any,
    ) -> DDPGConfig:
        """DDPG's own settings (see the attribute docstrings in ``__init__``) and SAC's / RLlib's."""
        super().training(**kwargs)
        given = {
            "actor_hiddens": actor_hiddens,
            "critic_hiddens": critic_hiddens,
            "critic_merge_hidden": critic_merge_hidden,
            "critic_weight_decay": critic_weight_decay,
            "exploration_noise": exploration_noise,
            "actor_start": actor_start,
        }
        set_provided(self, given, lists=("actor_hiddens", "critic_hiddens"))
        return self

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return {
            "actor_hiddens": list(self.actor_hiddens),
            "critic_hiddens": list(self.critic_hiddens),
            "critic_merge_hidden": self.critic_merge_hidden,
            "exploration_noise": self.exploration_noise,
            "actor_start": None if self.actor_start is None else [float(a) for a in self.actor_start],
            "twin_q": bool(self.twin_q),
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
        if not isinstance(self.twin_q, bool):
            err(f"`twin_q` ({self.twin_q!r}) must be True or False")
        for key in ("actor_hiddens", "critic_hiddens"):
            value = getattr(self, key)
            if not (isinstance(value, list) and value and all(isinstance(h, int) and h >= 1 for h in value)):
                err(f"`{key}` ({value!r}) must be a non-empty list of integers >= 1")
        if not (isinstance(self.critic_merge_hidden, int) and self.critic_merge_hidden >= 1):
            err(f"`critic_merge_hidden` ({self.critic_merge_hidden!r}) must be an integer >= 1")
        if not self.exploration_noise >= 0:
            err(f"`exploration_noise` ({self.exploration_noise}) must be >= 0")
        if self.actor_start is not None and not (
            isinstance(self.actor_start, list | tuple)
            and all(isinstance(a, int | float) and -1 < a < 1 for a in self.actor_start)
        ):
            err(f"`actor_start` ({self.actor_start!r}) must be None or a list of numbers in (-1, 1)")
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


class DDPG(TransitionReplayDQN):
    """DDPG (AuTO's Algorithm 1): DQN's off-policy round with DDPG's module and learner, and a transition replay.

    Each round samples ``rollout_fragment_length`` env steps per env runner, stores their transitions (``n_step``
    returns) in a replay of ``replay_buffer_config``'s ``capacity`` and, once
    ``num_steps_sampled_before_learning_starts`` steps were sampled, updates the learner on mini-batches of
    ``train_batch_size_per_learner`` (as many per sample as ``training_intensity`` asks, RLlib's DQN weights), then
    syncs the env runners' actor: DQN's ``training_step`` over numpy arrays
    (:class:`~dcgym.agents.rl.replay_training.TransitionReplayDQN`).
    """

    @classmethod
    def get_default_config(cls) -> DDPGConfig:
        return DDPGConfig()


def build_srla(experiment: TrainingRun, env_config: dict[str, Any]) -> DDPGConfig:
    """``algorithm: auto_srla``: sRLA (DDPG) on ``dcgym/FlowSrla-v0``, flow_v0 with lRLA held by MLFQ's rules; the
    hyperparameters are the settings of :meth:`DDPGConfig.training`, and ``start_thresholds``: K - 1 increasing
    thresholds in bytes that the actor starts at (``actor_start``, the action flow_v0 maps to them: for example
    the best static set of a scenario), so that learning starts from a threshold rule rather than from the middle
    of the box."""
    config = common(DDPGConfig(), experiment, env_config)
    one_agent_environment(config, AUTO_SRLA.one_agent_forms[experiment.env].env_id, env_config)
    hyperparameters = dict(experiment.hyperparameters)
    start = hyperparameters.pop("start_thresholds", None)
    if start is not None:
        if "actor_start" in hyperparameters:
            raise InvalidConfigError(
                "hyperparameters.start_thresholds", start, "either start_thresholds or actor_start, not both"
            )
        hyperparameters["actor_start"] = srla_start(start, env_config)
    training(config, hyperparameters)
    return config


def srla_start(thresholds: Any, env_config: Mapping[str, Any]) -> list[float]:
    """The sRLA action (in (-1, 1)) that flow_v0 maps to ``thresholds`` (K - 1 increasing bytes inside the
    environment's ``threshold_range_bytes``); InvalidConfigError naming ``hyperparameters.start_thresholds``."""
    game = FlowEnvConfig.model_validate({k: v for k, v in env_config.items() if k in FlowEnvConfig.model_fields})
    lo, hi = game.threshold_range_bytes
    t = np.asarray(thresholds, dtype=np.float64) if isinstance(thresholds, list | tuple) else np.array([])
    if t.ndim != 1 or t.size < 1 or not (np.all(np.diff(t) > 0) and t[0] > lo and t[-1] < hi):
        raise InvalidConfigError(
            "hyperparameters.start_thresholds",
            thresholds,
            f"a list of increasing thresholds in bytes inside ({lo:g}, {hi:g}) (threshold_range_bytes)",
        )
    action = srla_action(t, lo, hi)
    if not np.all(np.abs(action) < 1):
        raise InvalidConfigError(
            "hyperparameters.start_thresholds",
            thresholds,
            "gaps in log bytes within a factor e^8 of the last gap (the sets sRLA's action reaches)",
        )
    return action.tolist()
