"""CountingEnvRunner and BulkEnvRunner train as RLlib's own runner does: same counts, same weights, bit for bit."""

from __future__ import annotations

import pytest
import torch

from dcgym.agents.algorithms import build_config
from dcgym.agents.training.experiment import load_experiment

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

COUNTERS = ("num_env_steps_sampled_lifetime", "num_agent_steps_sampled_lifetime", "num_episodes_lifetime")


SMALL_DQN = {
    "resources.num_env_runners": 0,
    "hyperparameters.learning_starts": 20,
    "hyperparameters.train_batch_size": 16,
    "hyperparameters.steps_per_iteration": 24,
}
"""A small OSML DQN: learning starts in its second iteration."""


def _train(runner_cls, experiment: str, overrides: dict, iterations: int) -> tuple[dict, dict]:
    """Weights and sample counters after ``iterations`` of ``experiment`` sampled by ``runner_cls`` (None: RLlib's)."""
    exp = load_experiment(f"configs/experiments/{experiment}.yaml", {"resources.num_env_runners": 0} | overrides)
    config = build_config(exp)
    assert config.is_multi_agent
    if runner_cls is not None:
        config.env_runners(env_runner_cls=runner_cls)
    algo = config.build_algo()
    try:
        for _ in range(iterations):
            result = algo.train()["env_runners"]
        learner = algo.learner_group._learner
        weights = {
            f"{mid}.{name}": p.detach().clone()
            for mid, module in learner.module.items()
            for name, p in module.state_dict().items()
            if isinstance(p, torch.Tensor)
        }
        return weights, {key: result[key] for key in COUNTERS} | {"return": result.get("episode_return_mean")}
    finally:
        algo.stop()


def _assert_same(trained: tuple[dict, dict], reference: tuple[dict, dict]) -> None:
    (weights, counts), (reference_weights, reference_counts) = trained, reference
    assert counts == reference_counts
    assert weights.keys() == reference_weights.keys() and weights
    for name, value in weights.items():
        assert torch.equal(value, reference_weights[name]), name


def test_counting_env_runner_trains_and_counts_as_rllibs_own(ray_session, storage):
    from dcgym.agents.rl.env_runner import CountingEnvRunner

    trained = _train(CountingEnvRunner, "osml_dqn_single", SMALL_DQN, 3)
    _assert_same(trained, _train(None, "osml_dqn_single", SMALL_DQN, 3))
    counts = trained[1]
    assert counts["num_env_steps_sampled_lifetime"] >= 72
    assert counts["num_episodes_lifetime"] >= 3  # 20-step episodes: some ended, and were counted alike


def test_bulk_env_runner_trains_and_counts_as_rllibs_own(ray_session, storage):
    """BulkEnvRunner (tests/agents/training/test_bulk_env_runner.py compares its episodes field by field): PPO on the
    smoke rack, 35-step episodes cut across samples, trains to the same weights with the same counts and returns."""
    from dcgym.agents.rl.bulk_env_runner import BulkEnvRunner
    from dcgym.agents.rl.env_runner import CountingEnvRunner

    smoke = {"env_args.max_steps": 35}
    trained = _train(BulkEnvRunner, "smoke", smoke, 2)
    _assert_same(trained, _train(CountingEnvRunner, "smoke", smoke, 2))
    assert trained[1]["num_episodes_lifetime"] >= 4


def _episode_traces(runner_cls, calls: int) -> list[list[tuple]]:
    """Per ``sample(num_episodes=4)`` call of a Distr-LB runner (4 copies of lb_v0, greedy, no training), each
    episode's flows ended per step: with the weights fixed, equal traces mean the same arrivals."""
    exp = load_experiment("configs/experiments/distr_lb_sim.yaml", {"resources.num_env_runners": 0})
    config = build_config(exp)
    config.env_runners(env_runner_cls=runner_cls)
    algo = config.build_algo()
    try:
        runner = algo.env_runner_group.local_env_runner
        out = []
        for _ in range(calls):
            episodes = runner.sample(num_episodes=4, explore=False)
            out.append(
                [
                    tuple(int(i["step_flows_ended"]) for i in e.agent_episodes["lb_0"].get_infos(slice(1, 40)))
                    for e in episodes
                ]
            )
        return out
    finally:
        algo.stop()


@pytest.mark.parametrize("runner", ["CountingEnvRunner", "BulkEnvRunner"])
def test_episode_sampling_draws_new_traces_every_call_from_one_seed(ray_session, storage, runner):
    """RLlib reseeds at every sample(num_episodes=...): the same four traces every iteration. Our runners seed
    once: every call's episodes are new (one from each copy), and a new runner with the same seed draws the same
    ones again."""
    from dcgym.agents.rl import bulk_env_runner, env_runner

    cls = getattr(bulk_env_runner if runner == "BulkEnvRunner" else env_runner, runner)
    first = _episode_traces(cls, 3)
    assert len(first[0]) == 4 and len({t for call in first for t in call}) == 12  # 12 different traces
    assert _episode_traces(cls, 3) == first


def test_rllibs_own_runner_replays_the_same_episodes_every_call(ray_session, storage):
    """The behaviour the seeding above replaces, as RLlib has it: every sample(num_episodes=...) call resets the
    copies with the runner's seed, so with fixed weights it returns the same episodes again."""
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    calls = _episode_traces(MultiAgentEnvRunner, 2)
    assert calls[0] == calls[1] and len(set(calls[0])) == 4
