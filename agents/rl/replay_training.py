"""RLlib's DQN training loop over a replay of transitions in numpy arrays, for DQN-style off-policy learners.

:class:`TransitionReplayDQN` is RLlib's ``DQN`` algorithm with its
``training_step`` run over :class:`~dcgym.agents.rl.transition_replay.ModuleReplays`
(one ring of transitions per module): the same rounds in the same order as
RLlib's (sample ``rollout_fragment_length`` env steps per env runner, store
them, and once ``num_steps_sampled_before_learning_starts`` env steps were
sampled, update the learner on mini-batches of ``train_batch_size_per_learner``
transitions per module, as many per sample as ``training_intensity`` asks, then
sync the env runners). The learner's own ``after_gradient_based_update`` (a DQN
learner's target network updates) runs as before, on the same env step counts.

What differs is the bookkeeping around it, the most of an update of small
networks (docs/training.md, "Training speed"):

- the mini-batch reaches the learner as columns (``learner_group.update(batch=...)``), where RLlib's episode
  replay sliced episodes per sampled step and its learner connectors rebuilt the same columns;
- one ``training_step`` runs the rounds of a whole iteration (``min_sample_timesteps_per_iteration`` env steps)
  and reduces the learners' and the local env runner's metrics once, at its end, not every round;
- with no remote env runner and a local learner, the updated modules' parameters are copied tensor to tensor into
  the env runner's modules (RLlib's ``sync_weights`` converts them to numpy and puts them in Ray's object store).

Not supported, and refused at setup: prioritized replay, a replay kept in checkpoints, steps counted by agent.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.dqn.dqn import DQN, calculate_rr_weights
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

from dcgym.agents.rl.transition_replay import ModuleReplays

__all__ = ["TransitionReplayDQN"]


class TransitionReplayDQN(DQN):
    """RLlib's DQN with the training step of the module docstring; subclasses bring their config, module, learner."""

    def setup(self, config: Any) -> None:
        kind = str(config.replay_buffer_config.get("type", ""))
        if "Prioritized" in kind:  # before anything is built
            raise ValueError(f"replay_buffer_config.type ({kind!r}): {type(self).__name__} replays uniformly")
        if config.store_buffer_in_checkpoints:
            raise ValueError(f"store_buffer_in_checkpoints (True): {type(self).__name__}'s replay is not saved")
        if config.count_steps_by != "env_steps":
            raise ValueError(f"count_steps_by ({config.count_steps_by!r}) must be 'env_steps'")
        super().setup(config)
        config = self.config
        # In place of RLlib's episode replay; seeded by the config's seed (debugging(seed=...) seeds the networks and
        # the environment, not a buffer): one seed trains bit for bit alike.
        self.local_replay_buffer = ModuleReplays(
            int(config.replay_buffer_config["capacity"]), n_step=config.n_step, gamma=config.gamma, seed=config.seed
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
                sampled += sum(e.env_steps() for e in episodes)
            if sampled < config.num_steps_sampled_before_learning_starts:
                continue
            size = config.total_train_batch_size
            for _ in range(sample_and_train_weight):
                batches = self.local_replay_buffer.sample(size)
                self.learner_group.update(
                    batch=MultiAgentBatch({m: SampleBatch(b) for m, b in batches.items()}, env_steps=size),
                    timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: sampled},
                    _no_metrics_reduce=True,
                )
            updated = True
            self._sync_weights(in_process, set(batches))
        if in_process:
            self.metrics.aggregate([self.env_runner_group.local_env_runner.get_metrics()], key=ENV_RUNNER_RESULTS)
        if updated:
            results = self.learner_group.foreach_learner(lambda learner: learner.metrics.reduce())
            self.metrics.aggregate([r.get() for r in results if r.ok], key=LEARNER_RESULTS)

    def _sync_weights(self, in_process: bool, module_ids: set[str]) -> None:
        """The env runners act with the learner's modules from the next step on."""
        if not in_process:
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group, policies=module_ids, inference_only=True
            )
            return
        # A local LearnerGroup holds its one Learner as ``_learner`` (RLlib has no public accessor for it). The env
        # runner's module is the inference-only form (DDPG's actor without its critic, no target networks): each of
        # its parameters is the learner module's of the same name.
        learned = self.learner_group._learner.module
        acting = self.env_runner_group.local_env_runner.module
        with torch.no_grad():
            for module_id in module_ids:
                source = dict(learned[module_id].unwrapped().named_parameters())
                target = acting[module_id] if isinstance(acting, MultiRLModule) else acting
                for name, value in target.unwrapped().named_parameters():
                    value.copy_(source[name])
