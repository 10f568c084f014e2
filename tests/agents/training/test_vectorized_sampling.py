"""One-agent forms step their copies together in the engine (their Gymnasium ``vector_entry_point``), and sample
the episodes Gymnasium's sync vector env of single environments samples, bit for bit.

Each case's experiment is built twice from the same seed, once as the trainer wires it (the batched environment)
and once with ``gym_env_vectorize_mode="sync"``; both local runners sample three times (episodes of 25 steps, so
copies end and reset inside a sample) and every episode chunk is compared field by field, infos included.
"""

from __future__ import annotations

import pytest

from dcgym.agents.algorithms import build_config
from dcgym.agents.training.experiment import load_experiment

from .episodes import assert_same_state

pytestmark = pytest.mark.filterwarnings("ignore:.*Overriding environment:UserWarning")

CASES = {
    "srla_ddpg": "auto_websearch",  # sRLA (DDPG) on dcgym/FlowSrla-v0
    "lrla_pg": "auto_lrla_websearch",  # lRLA (REINFORCE) on dcgym/FlowLrla-v0
    "srla_sac": "sac_flow",  # RLlib's SAC on sRLA's one-agent form
}
BATCHED = {"srla_ddpg": "FlowSrlaVectorEnv", "lrla_pg": "FlowLrlaVectorEnv", "srla_sac": "FlowSrlaVectorEnv"}
"""The batched environment each case's copies step through, as the trainer wires it."""


@pytest.mark.parametrize("copies", [1, 4])
@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_copies_sample_the_sync_vector_envs_episodes(ray_session, storage, case, copies):
    samples = {}
    for mode in ("as wired", "sync"):
        overrides = {
            "resources.num_env_runners": 0,
            "resources.num_envs_per_env_runner": copies,
            "env_args.max_steps": 25,
        }
        config = build_config(load_experiment(f"configs/experiments/{CASES[case]}.yaml", overrides))
        if mode == "sync":
            config.env_runners(gym_env_vectorize_mode="sync")
        algo = config.build_algo()
        try:
            runner = algo.env_runner_group.local_env_runner
            kind = type(runner.env.unwrapped).__name__
            assert kind == ("SyncVectorEnv" if mode == "sync" else BATCHED[case]), kind
            samples[mode] = [runner.sample(num_timesteps=40 * copies) for _ in range(3)]
        finally:
            algo.stop()
    chunks = [e for call in samples["sync"] for e in call]
    assert sum(e.is_done for e in chunks) >= 2 * copies  # copies ended and reset within the samples
    for call, (ref, got) in enumerate(zip(samples["sync"], samples["as wired"], strict=True)):
        assert len(ref) == len(got)
        for i, (x, y) in enumerate(zip(ref, got, strict=True)):
            assert_same_state(x.get_state(), y.get_state(), f"call {call}, episode {i}")
