"""QMIX-LB, and the independent value learners Distr-LB and Centr-LB, as one RLlib algorithm (new API stack).

The multi-LB paper's QMIX baseline (Yao et al., CIKM 2022, App. D, Table 9; QMIX: Rashid
et al., 2018): centralized training of decentralized per-LB Q-networks.
Laid out as RLlib's algorithms: :mod:`.qmix` (``QmixLbConfig``,
``QmixLb.training_step``, the episode replay, the builders),
:mod:`.qmix_rl_module` (the networks), :mod:`.qmix_learner` (the losses).

``mixing`` chooses the learning rule:

- ``qmix`` (``qmix_lb``): the mixer below, the team reward.
- ``independent`` (``distr_lb``, ``centr_lb``): no mixer; each agent's
  Q-network fits TD(lambda) targets of its own reward with its own target
  network. **Distr-LB**, the paper's method (App. B, D), is this with one
  agent per LB on lb_v0 and each LB's fairness reward F_i(l_i) (App. B.3:
  a Markov potential game); Table 9 describes an off-policy replay learner
  (replay of 3000, batches of 25, 10 updates per episode, the authors' SAC
  with discrete per-server heads), which RLlib's SAC cannot be (it takes a
  single ``Discrete`` or a ``Box`` action), so the replay learner here is
  double Q-learning with TD(lambda) and per-server heads. **Centr-LB** is
  the same learner as one agent over lb_central_v0.

Each LB acts on its own observation with its own GRU Q-network (per-server
heads over the weight levels 1.0, 1.5, 2.0); training mixes their utilities
with a monotone hypernetwork mixer of the global state (every LB's
observation) and fits the team reward (the mean of the LBs' fairness rewards)
with TD(lambda) targets. One iteration:

1. sample ``episodes_per_iteration`` whole episodes with epsilon-greedy
   actions (EnvRunners, the GRU state carried by RLlib's stateful-module
   connectors);
2. store them in an episode replay (``buffer_episodes``, oldest dropped);
3. once ``learning_starts`` episodes are stored, make
   ``updates_per_episode`` updates per episode sampled, each on
   ``batch_episodes`` episodes drawn uniformly (with replacement when fewer
   are stored), through :meth:`QmixTorchLearner.qmix_update`;
4. send the new weights to the EnvRunners.

The replay is not checkpointed: a resumed run refills it.

```python
config = build_qmix_lb(experiment, experiment.env_config)   # from an experiment file (train.py does this)
algo = config.build_algo()
algo.train()
```
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from dcgym.agents.marl_lb.builders import require_discrete
from dcgym.agents.marl_lb.hyperparameters import (
    CentrLbHyperparameters,
    DistrLbHyperparameters,
    QmixLbHyperparameters,
)
from dcgym.agents.marl_lb.qmix_learner import QmixTorchLearner
from dcgym.agents.marl_lb.qmix_rl_module import MIXER, QmixAgentRLModule, QmixMixerRLModule
from dcgym.agents.rl.envs import make_env
from dcgym.agents.rl.spec import TrainingRun
from dcgym.agents.rl.wiring import common, set_provided

__all__ = [
    "EpisodeReplay",
    "QmixLb",
    "QmixLbConfig",
    "build_centr_lb",
    "build_distr_lb",
    "build_qmix_lb",
    "episode_arrays",
    "head_of_server",
    "pad_episodes",
]

_SETTINGS = (
    "td_lambda",
    "buffer_episodes",
    "batch_episodes",
    "episodes_per_iteration",
    "updates_per_episode",
    "learning_starts",
    "target_update_interval",
    "double_q",
    "reward_scale",
)


class QmixLbConfig(AlgorithmConfig):
    """Configuration of :class:`QmixLb` (defaults: :class:`~dcgym.agents.marl_lb.hyperparameters.QmixLbHyperparameters`)."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or QmixLb)
        self.lr = 3e-4
        self.gamma = 0.99
        self.grad_clip = 10.0
        self.grad_clip_by = "global_norm"
        self.num_env_runners = 0
        self.normalize_actions = False  # weight-level indices, not values in [-1, 1]
        self.clip_actions = False
        self.td_lambda = 0.6
        """lambda of the TD(lambda) targets."""
        self.buffer_episodes = 3000
        """Episodes the replay keeps (Table 9)."""
        self.batch_episodes = 25
        """Episodes per update (Table 9)."""
        self.episodes_per_iteration = 1
        """Episodes sampled per iteration; a multiple of the copies an env runner steps (each copy's episodes are
        used, none is stepped and dropped)."""
        self.updates_per_episode = 10
        """Updates per episode sampled (Table 9)."""
        self.learning_starts = 25
        """Episodes stored before the first update."""
        self.target_update_interval = 200
        """Updates between two target copies."""
        self.double_q = True
        """Double Q-learning in the targets."""
        self.reward_scale = 1.0
        """Multiplies the rewards."""
        self.mixing = "qmix"
        """``qmix`` (the mixer, the team reward) or ``independent`` (each agent its own reward and target)."""

    def training(
        self,
        *,
        td_lambda: float = NotProvided,
        buffer_episodes: int = NotProvided,
        batch_episodes: int = NotProvided,
        episodes_per_iteration: int = NotProvided,
        updates_per_episode: int = NotProvided,
        learning_starts: int = NotProvided,
        target_update_interval: int = NotProvided,
        double_q: bool = NotProvided,
        reward_scale: float = NotProvided,
        mixing: str = NotProvided,
        **kwargs: Any,
    ) -> QmixLbConfig:
        """QMIX-LB's settings (attribute docstrings in ``__init__``) and RLlib's (``lr``, ``gamma``, ``grad_clip``)."""
        super().training(**kwargs)
        given = dict(
            td_lambda=td_lambda,
            buffer_episodes=buffer_episodes,
            batch_episodes=batch_episodes,
            episodes_per_iteration=episodes_per_iteration,
            updates_per_episode=updates_per_episode,
            learning_starts=learning_starts,
            target_update_interval=target_update_interval,
            double_q=double_q,
            reward_scale=reward_scale,
            mixing=mixing,
        )
        set_provided(self, given)
        return self

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=QmixAgentRLModule)

    def get_default_learner_class(self) -> type:
        return QmixTorchLearner

    def validate(self) -> None:
        super().validate()
        err = self._value_error
        if not 0.0 <= self.td_lambda <= 1.0:
            err(f"`td_lambda` ({self.td_lambda}) must be in [0, 1]")
        for key in _SETTINGS[1:7]:
            value = getattr(self, key)
            low = 0 if key == "updates_per_episode" else 1
            if not (isinstance(value, int) and value >= low):
                err(f"`{key}` ({value}) must be an integer >= {low}")
        copies = self.num_envs_per_env_runner
        if isinstance(self.episodes_per_iteration, int) and self.episodes_per_iteration % copies:
            err(
                f"`episodes_per_iteration` ({self.episodes_per_iteration}) must be a multiple of "
                f"`num_envs_per_env_runner` ({copies}): a sample of whole episodes resets every copy, and the "
                "episodes past the count would be stepped and dropped"
            )
        if self.num_learners > 1:
            err(f"`num_learners` ({self.num_learners}) must be 0 or 1: the replay lives in the Algorithm")
        if self.normalize_actions:
            err("`normalize_actions` (True) must be False: the actions are weight-level indices")
        if self.mixing not in ("qmix", "independent"):
            err(f"`mixing` ({self.mixing!r}) must be 'qmix' or 'independent'")


def episode_arrays(episode: Any, agents: Sequence[str], reward_scale: float = 1.0) -> dict[str, np.ndarray]:
    """One MultiAgentEpisode as arrays: obs (T + 1, M, D), actions (T, M, N), rewards (T, M) (each agent's,
    x ``reward_scale``), terminated (T,) (1 at a terminal last step)."""
    parts = [episode.agent_episodes[a] for a in agents]
    obs = np.stack([np.asarray(p.get_observations(), np.float32).reshape(len(p) + 1, -1) for p in parts], axis=1)
    actions = np.stack([np.asarray(p.get_actions(), np.int64).reshape(len(p), -1) for p in parts], axis=1)
    rewards = np.stack([np.asarray(p.get_rewards(), np.float64) for p in parts], axis=1) * reward_scale
    terminated = np.zeros(len(rewards), np.float32)
    terminated[-1] = float(episode.is_terminated)
    return {"obs": obs, "actions": actions, "rewards": rewards.astype(np.float32), "terminated": terminated}


class EpisodeReplay:
    """The last ``capacity`` episodes; batches of whole episodes, padded to the longest with mask 0."""

    def __init__(self, capacity: int) -> None:
        self.episodes: deque[dict[str, np.ndarray]] = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self.episodes)

    def add(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.episodes.append(dict(arrays))

    def sample(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """``n`` episodes drawn uniformly (with replacement), as one padded batch."""
        picked = [self.episodes[i] for i in rng.integers(len(self.episodes), size=n)]
        return pad_episodes(picked)


def pad_episodes(episodes: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Stack episodes of possibly different lengths: (B, T_max [+ 1], ...), ``mask`` 1 on real steps."""
    t = max(len(e["rewards"]) for e in episodes)
    out = {}
    for key, extra in (("obs", 1), ("actions", 0), ("rewards", 0), ("terminated", 0)):
        first = episodes[0][key]
        arr = np.zeros((len(episodes), t + extra, *first.shape[1:]), first.dtype)
        for b, e in enumerate(episodes):
            arr[b, : len(e[key])] = e[key]
        out[key] = arr
    out["mask"] = np.zeros((len(episodes), t), np.float32)
    for b, e in enumerate(episodes):
        out["mask"][b, : len(e["rewards"])] = 1.0
    return out


class QmixLb(Algorithm):
    """QMIX-LB's training loop (module docstring)."""

    @classmethod
    def get_default_config(cls) -> QmixLbConfig:
        return QmixLbConfig()

    def setup(self, config: Any) -> None:
        super().setup(config)
        self._replay = EpisodeReplay(self.config.buffer_episodes)
        self._rng = np.random.default_rng(self.config.seed)
        self._agents = sorted((mid for mid in self.config.policies if mid != MIXER), key=_agent_order)

    def training_step(self) -> None:
        cfg = self.config
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            sampled = self.env_runner_group.foreach_env_runner(
                lambda runner: (runner.sample(num_episodes=cfg.episodes_per_iteration), runner.get_metrics()),
                local_env_runner=self.env_runner_group.num_remote_workers() <= 0,
            )
            episodes = [e for s in sampled for e in s[0] if e.is_done]
            self.metrics.aggregate([s[1] for s in sampled], key=ENV_RUNNER_RESULTS)
        for episode in episodes:
            self._replay.add(episode_arrays(episode, self._agents, cfg.reward_scale))
        if len(self._replay) < cfg.learning_starts or not episodes:
            return
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            for _ in range(cfg.updates_per_episode * len(episodes)):
                batch = self._replay.sample(cfg.batch_episodes, self._rng)
                self.learner_group.foreach_learner(lambda learner, batch=batch: learner.qmix_update(batch))
            reduced = self.learner_group.foreach_learner(lambda learner: learner.metrics.reduce())
            self.metrics.aggregate([r.get() for r in reduced], key=LEARNER_RESULTS)
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.env_runner_group.sync_weights(from_worker_or_learner_group=self.learner_group, inference_only=True)


def build_qmix_lb(experiment: TrainingRun, env_config: dict[str, Any]) -> QmixLbConfig:
    """QMIX-LB on lb_v0 (:class:`QmixLbHyperparameters`, the experiment's resources)."""
    return _build(experiment, env_config, QmixLbHyperparameters(**experiment.hyperparameters), "qmix", "qmix_lb")


def build_distr_lb(experiment: TrainingRun, env_config: dict[str, Any]) -> QmixLbConfig:
    """Distr-LB on lb_v0: an independent Q-learner per LB (:class:`DistrLbHyperparameters`)."""
    hp = DistrLbHyperparameters(**experiment.hyperparameters)
    return _build(experiment, env_config, hp, "independent", "distr_lb")


def build_centr_lb(experiment: TrainingRun, env_config: dict[str, Any]) -> QmixLbConfig:
    """Centr-LB on lb_central_v0: the same Q-learner as one agent for every LB (:class:`CentrLbHyperparameters`)."""
    hp = CentrLbHyperparameters(**experiment.hyperparameters)
    return _build(experiment, env_config, hp, "independent", "centr_lb")


def _build(experiment: TrainingRun, env_config: dict[str, Any], hp: Any, mixing: str, name: str) -> QmixLbConfig:
    """The config: one Q-network module per agent (and the mixer with ``qmix``), the settings of ``hp``."""
    require_discrete(experiment, env_config, name)
    probe = make_env(experiment.env, env_config)
    agents = list(probe.possible_agents)
    obs = probe.observation_space(agents[0])
    flat = spaces.Box(0.0, np.inf, (int(math.prod(obs.shape)),), np.float32)
    agent_config = {
        "fc_hidden": hp.fc_hidden,
        "gru_hidden": hp.gru_hidden,
        "log_inputs": hp.log_inputs,
        "epsilon_start": hp.epsilon_start,
        "epsilon_end": hp.epsilon_end,
        "epsilon_timesteps": hp.epsilon_timesteps,
        "head_of_server": head_of_server(probe) if hp.heads == "group" else None,
    }
    specs = {
        a: RLModuleSpec(
            module_class=QmixAgentRLModule,
            observation_space=flat,
            action_space=probe.action_space(a),
            model_config=agent_config,
        )
        for a in agents
    }
    if mixing == "qmix":
        state = spaces.Box(0.0, np.inf, (len(agents) * flat.shape[0],), np.float32)
        specs[MIXER] = RLModuleSpec(
            module_class=QmixMixerRLModule,
            observation_space=state,
            action_space=probe.action_space(agents[0]),
            model_config={
                "num_agents": len(agents),
                "mixing_embed": hp.mixing_embed,
                "hypernet_hidden": hp.hypernet_hidden,
            },
            learner_only=True,
        )
    config = common(QmixLbConfig(), experiment, env_config)
    config.multi_agent(policies=list(specs), policy_mapping_fn=_identity)
    config.rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
    config.training(
        lr=hp.lr,
        gamma=hp.gamma,
        grad_clip=hp.grad_clip,
        td_lambda=hp.td_lambda,
        buffer_episodes=hp.buffer_episodes,
        batch_episodes=hp.batch_episodes,
        episodes_per_iteration=hp.episodes_per_iteration,
        updates_per_episode=hp.updates_per_episode,
        learning_starts=hp.learning_starts,
        target_update_interval=hp.target_update_interval,
        double_q=hp.double_q,
        reward_scale=hp.reward_scale,
        mixing=mixing,
    )
    return config


def head_of_server(env: Any) -> list[int]:
    """The shared head of each of an agent's servers: its server group's index in the scenario (lb_v0), or, over
    lb_central_v0's concatenated LBs, LB i's group g as head i G + g (each LB keeps its own heads)."""
    groups = getattr(env, "lb", env).server_groups
    copies = len(env.action_space(env.possible_agents[0]).nvec) // len(groups)
    return [int(g) + i * (int(groups.max()) + 1) for i in range(copies) for g in groups]


def _agent_order(module_id: str) -> tuple[int, str]:
    """``lb_10`` after ``lb_9``; an id without a number (``central``) first."""
    tail = module_id.rpartition("_")[2]
    return (int(tail) if tail.isdigit() else -1, module_id)


def _identity(agent_id: str, *args: Any, **kwargs: Any) -> str:
    """Each LB's own module: module id = agent id."""
    return agent_id
