"""The on-policy ``training_step`` of dcgym's custom RLlib algorithms (Malcolm, AuTO's lRLA).

Sample ``train_batch_size_per_learner`` env steps from the EnvRunners, update the learner group on all of them
in one epoch, and send the new weights back to the EnvRunners, each phase timed under RLlib's metric keys.
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

__all__ = ["on_policy_training_step"]


def on_policy_training_step(algorithm: Algorithm, minibatch_size: int | None) -> None:
    """One iteration of ``algorithm``: sample, one epoch of updates in consecutive (unshuffled) mini-batches of
    ``minibatch_size`` steps (None: the whole batch at once), sync the weights."""
    with algorithm.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
        steps = algorithm.config.train_batch_size_per_learner
        sampled = algorithm.env_runner_group.foreach_env_runner(
            lambda runner: (runner.sample(num_timesteps=steps), runner.get_metrics()),
            local_env_runner=algorithm.env_runner_group.num_remote_workers() <= 0,
        )
        episodes = [e for s in sampled for e in s[0]]
        algorithm.metrics.aggregate([s[1] for s in sampled], key=ENV_RUNNER_RESULTS)

    with algorithm.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
        results = algorithm.learner_group.update(
            episodes=episodes,
            timesteps={
                NUM_ENV_STEPS_SAMPLED_LIFETIME: algorithm.metrics.peek(
                    (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0
                ),
            },
            num_epochs=1,
            minibatch_size=minibatch_size,
            shuffle_batch_per_epoch=False,
        )
        algorithm.metrics.aggregate(results, key=LEARNER_RESULTS)

    with algorithm.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
        algorithm.env_runner_group.sync_weights(
            from_worker_or_learner_group=algorithm.learner_group, inference_only=True
        )
