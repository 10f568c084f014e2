"""sRLA (DDPG) learns MLFQ thresholds on AuTO's testbed (FlowSrla-v0: flow_v0 with sRLA acting alone)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dcgym.agents.auto import DDPGConfig
from dcgym.envs.flow.wrappers import FlowSrlaEnv

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

ENV = {"scenario": "auto_websearch", "load": 0.8, "max_steps": 200}


class SrlaEnv(FlowSrlaEnv):
    """FlowSrla-v0 built from RLlib's ``env_config`` dict."""

    def __init__(self, config=None):
        super().__init__(**dict(config or {}))


def _mean_fct_ms(act, *, steps: int = 300, seed: int = 12345) -> float:
    """Mean FCT of the flows finished in one held-out episode of ``steps`` 10 ms intervals, acting with ``act``."""
    env = FlowSrlaEnv(**{**ENV, "max_steps": steps})
    obs, _ = env.reset(seed=seed)
    while True:
        obs, _, terminated, truncated, info = env.step(act(obs))
        if terminated or truncated:
            return info["episode_metrics"]["mean_fct_ms"]


def test_learned_thresholds_beat_thresholds_of_one_packet_on_web_search_at_0_8(ray_session, storage):
    """A deliberately bad fixed set: every threshold at its lowest (about one 1460-byte packet), so every flow leaves
    the top queue after its first packet. After 600 steps (3 iterations of 200, the first before learning starts)
    with a fixed seed, the greedy actor's thresholds must give a mean FCT at least 1% lower on a held-out 3 s episode
    (measured: 3.5% lower; evenly spaced thresholds, a = 0, give 3.9% lower: three iterations test the training
    loop, not what DDPG can learn)."""
    k = SrlaEnv(ENV).action_space.shape[0]
    bad = _mean_fct_ms(lambda obs: -np.ones(k, np.float32))
    config = (
        DDPGConfig()
        .environment(SrlaEnv, env_config=ENV)
        .training(
            actor_hiddens=[64, 64],
            critic_hiddens=[64, 64],
            critic_merge_hidden=64,
            actor_lr=1e-3,
            critic_lr=1e-3,
            tau=0.01,
            exploration_noise=0.3,
            num_steps_sampled_before_learning_starts=200,
        )
        .reporting(min_sample_timesteps_per_iteration=200)
        .debugging(seed=1)
    )
    algo = config.build_algo()
    try:
        for _ in range(3):
            algo.train()
        module = algo.learner_group._learner.module["default_policy"].unwrapped()

        def greedy(obs):
            with torch.no_grad():
                return module.actor(torch.as_tensor(obs[None]))[0].numpy()

        learned = _mean_fct_ms(greedy)
    finally:
        algo.stop()
    assert learned < 0.99 * bad, (learned, bad)


def test_start_thresholds_make_the_actor_start_at_that_threshold_set():
    """``start_thresholds`` (bytes): the actor's first action is the one flow_v0 maps back to that set (the best
    static set of web search at 0.8 here), to float32 rounding; a set outside the range, not increasing, or with
    gaps beyond the map's e^8 is refused naming hyperparameters.start_thresholds."""
    from dcgym.agents.auto.ddpg import build_srla, srla_start
    from dcgym.agents.training.experiment import load_experiment
    from dcgym.cpp_core import flow_thresholds_from_action
    from dcgym.envs.error import InvalidConfigError

    best = [1778280.0, 10057940.0, 16914100.0]
    experiment = load_experiment(
        {
            "env": "flow_v0",
            "scenario": "auto_websearch",
            "env_args": {"load": 0.8},
            "algorithm": "auto_srla",
            "hyperparameters": {"start_thresholds": best, "actor_hiddens": [8], "critic_hiddens": [8]},
        }
    )
    config = build_srla(experiment, {"scenario": "auto_websearch", "load": 0.8})
    action = np.asarray(config.actor_start)
    lo, hi = 1460.0, 1460.0 * 2**16
    np.testing.assert_allclose(flow_thresholds_from_action(action, lo, hi), best, rtol=1e-9)
    module = config.get_default_rl_module_spec().module_class(
        observation_space=SrlaEnv(ENV).observation_space,
        action_space=SrlaEnv(ENV).action_space,
        model_config=config._model_config_auto_includes,
    )
    obs = torch.rand(4, module.num_obs)
    mu = module.forward_inference({"obs": obs})["action_dist_inputs"].detach().numpy().astype(np.float64)
    for row in mu:
        np.testing.assert_allclose(flow_thresholds_from_action(row, lo, hi), best, rtol=1e-5)
    for bad in ([1e3, 2e6, 3e6], [3e6, 2e6, 4e6], [2e6, 3e6, 95.6e6], "best"):
        with pytest.raises(InvalidConfigError) as error:
            srla_start(bad, {})
        assert error.value.field == "hyperparameters.start_thresholds"
