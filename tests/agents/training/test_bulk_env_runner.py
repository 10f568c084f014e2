"""BulkEnvRunner samples the episodes RLlib's MultiAgentEnvRunner samples, bit for bit (its training: test_env_runner.py).

Each learning system's experiment is built twice, once with each runner, from the same seed; both local runners
sample three times and every episode chunk is compared field by field (observations, actions, rewards, infos, model
outputs, lookback buffers, time steps, end flags). Exact equality: the bulk path draws its actions with the same
distribution calls in the same order, so the same random numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.agents.algorithms import build_config
from dcgym.agents.training.experiment import load_experiment

from .episodes import assert_same_state

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

CASES = {
    # PPO, one network for 14 nodes, continuous actions; 70-step episodes: chunks cut mid-episode, with lookback
    "ppo_rack": (
        "ppo_rack",
        {"env_args.max_steps": 70, "hyperparameters.train_batch_size": 150, "hyperparameters.minibatch_size": 50},
        {},
    ),
    # Malcolm: one module per node, acting as a group (GroupActAPI); 0.1 s episodes longer than a sample
    "malcolm": ("malcolm_hetero_exp", {"env_args.max_steps": 30}, {}),
    # ... and its per-task fill actor (the demo): gains as actions, each task's decision in the infos
    "malcolm_fill": ("demo", {"env_args.max_steps": 30}, {}),
    # Distr-LB: DQN modules, matrix observations flattened, 4 copies of the environment per runner, by time steps
    "distr_lb": ("distr_lb_sim", {"env_args.max_steps": 70}, {}),
    # ... and by whole episodes, as its training step samples (5 with 4 copies: one copy runs two episodes)
    "distr_lb_episodes": ("distr_lb_sim", {"env_args.max_steps": 30}, {"num_episodes": 5}),
    # OSML's Model-C: DQN over three services sharing one module, and over one service (a one-agent game)
    "osml": ("osml_dqn_mixes", {}, {}),
    "osml_single": ("osml_dqn_single", {}, {}),
    # ... and on three copies of colo_v0 stepped together (ColoCopies), episodes ending inside the samples
    "osml_copies": ("osml_dqn_mixes", {"resources.num_envs_per_env_runner": 3, "env_args.max_steps": 20}, {}),
}

BATCHED = {"ppo_rack", "osml_copies", "distr_lb", "distr_lb_episodes"}
"""Cases whose copies step in one engine call in the bulk runner (RackCopies, ColoCopies, LbCopies)."""
GROUPED = {"malcolm", "malcolm_fill"}
"""Cases whose modules act as a group in the bulk runner (the 14 nodes' modules in one computation)."""


def _runner(runner_cls, name: str, overrides: dict):
    exp = load_experiment(f"configs/experiments/{name}.yaml", {"resources.num_env_runners": 0} | overrides)
    config = build_config(exp)
    config.env_runners(env_runner_cls=runner_cls)
    return config.build_algo()


@pytest.mark.parametrize("case", sorted(CASES))
def test_bulk_sampling_gives_rllibs_episodes(ray_session, storage, case):
    from dcgym.agents.rl.batched_copies import ColoCopies, LbCopies, RackCopies
    from dcgym.agents.rl.bulk_env_runner import BulkEnvRunner
    from dcgym.agents.rl.env_runner import CountingEnvRunner

    name, overrides, kwargs = CASES[case]
    samples = {}
    for cls in (CountingEnvRunner, BulkEnvRunner):
        algo = _runner(cls, name, overrides)
        try:
            runner = algo.env_runner_group.local_env_runner
            if cls is BulkEnvRunner:
                assert runner.bulk_refusal is None
                assert isinstance(runner.env, (RackCopies, ColoCopies, LbCopies)) == (case in BATCHED)
            samples[cls] = [runner.sample(**kwargs) for _ in range(3)]
            if cls is BulkEnvRunner:
                grouped = any(len(unit) > 1 for units in runner._units.values() for unit in units)
                assert grouped == (case in GROUPED)
        finally:
            algo.stop()
    reference, bulk = samples[CountingEnvRunner], samples[BulkEnvRunner]
    chunks = [e for call in reference for e in call]
    if kwargs:
        assert all(e.is_done for e in chunks) and all(len(call) == kwargs["num_episodes"] for call in reference)
    else:
        assert any(not e.is_done for e in chunks)  # some chunk was cut and continued in the next call
    assert sum(len(e) for e in chunks) > 0
    for call, (ref_call, bulk_call) in enumerate(zip(reference, bulk, strict=True)):
        assert len(ref_call) == len(bulk_call)
        for i, (x, y) in enumerate(zip(ref_call, bulk_call, strict=True)):
            assert_same_state(x.get_state(), y.get_state(), f"call {call}, episode {i}")


def test_a_pipeline_it_does_not_reproduce_is_left_to_rllib(ray_session, storage):
    """A custom env-to-module connector: the runner names it and samples through RLlib's own path."""
    from ray.rllib.connectors.connector_v2 import ConnectorV2

    from dcgym.agents.rl.bulk_env_runner import BulkEnvRunner

    calls = []

    class PassThrough(ConnectorV2):
        def __call__(self, *, batch, **kwargs):
            calls.append(1)
            return batch

    exp = load_experiment("configs/experiments/smoke.yaml", {"resources.num_env_runners": 0})
    config = build_config(exp)
    config.env_runners(env_runner_cls=BulkEnvRunner, env_to_module_connector=lambda *_: [PassThrough()])
    algo = config.build_algo()
    try:
        runner = algo.env_runner_group.local_env_runner
        assert "PassThrough" in runner.bulk_refusal
        episodes = runner.sample()
        assert sum(len(e) for e in episodes) == exp.hyperparameters["train_batch_size"]
        assert len(calls) >= len(episodes) * 50  # the pipeline ran at every step
    finally:
        algo.stop()


def test_env_metrics_are_episode_means_of_the_shared_info(ray_session, storage):
    """DcgymMetrics, read at each episode's end over its chunks, logs the mean over the episode's steps of each
    per-step metric, averaged over episodes: recomputed here from the sampled chunks themselves."""
    from dcgym.agents.rl.bulk_env_runner import BulkEnvRunner
    from dcgym.agents.training.logs import PREFIX
    from dcgym.agents.training.metrics import DcgymMetrics

    exp = load_experiment("configs/experiments/smoke.yaml", {"resources.num_env_runners": 0, "env_args.max_steps": 35})
    config = build_config(exp)
    config.env_runners(env_runner_cls=BulkEnvRunner)
    config.callbacks(DcgymMetrics)
    algo = config.build_algo()
    try:
        runner = algo.env_runner_group.local_env_runner
        chunks = [e for _ in range(3) for e in runner.sample()]
        logged = runner.get_metrics()[PREFIX + "imbalance"].peek()
    finally:
        algo.stop()
    per_episode: dict[str, list[float]] = {}
    finished = []
    for chunk in chunks:
        infos = chunk.get_infos(indices=slice(1, len(chunk) + 1), return_list=True)
        per_episode.setdefault(chunk.id_, []).extend(next(iter(i.values()))["metrics"]["imbalance"] for i in infos)
        if chunk.is_done:
            finished.append(chunk.id_)
    assert len(finished) >= 7 and any(len(per_episode[e]) == 35 and e in finished for e in per_episode)
    expected = np.mean([np.mean(per_episode[e]) for e in finished])
    assert logged == pytest.approx(expected, rel=1e-9)
