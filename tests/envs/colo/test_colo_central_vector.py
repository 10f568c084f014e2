"""dcgym/ColoCentral-v0's batched form (ColoCentralVectorEnv, its vector_entry_point) under services that come and
go: the same observations, rewards, ends and infos as Gymnasium's sync vectorisation of ColoCentral-v0, step by step
(tests/test_conformance.py runs the short case for every vector entry point)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import dcgym.envs  # noqa: F401  (registers the ids)
from dcgym.envs.error import InvalidActionError, InvalidConfigError
from tests.test_conformance import _assert_same_infos


def test_copies_with_services_arriving_and_ending_follow_the_sync_vectorisation():
    kwargs = {"scenario": "colo_churn", "max_steps": 120}
    native = gymnasium.make_vec("dcgym/ColoCentral-v0", num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    synced = gymnasium.make_vec("dcgym/ColoCentral-v0", num_envs=2, vectorization_mode="sync", **kwargs)
    obs_n, info_n = native.reset(seed=3)
    obs_s, info_s = synced.reset(seed=3)
    np.testing.assert_array_equal(obs_n, obs_s)
    _assert_same_infos(info_n, info_s, "reset")
    native.action_space.seed(1)
    left = truncated = 0
    present = obs_n[..., -1] > 0
    for step in range(260):
        actions = native.action_space.sample()
        out_n, out_s = native.step(actions), synced.step(actions)
        for got, want in zip(out_n[:4], out_s[:4], strict=True):
            np.testing.assert_array_equal(got, want)
        _assert_same_infos(out_n[4], out_s[4], f"step {step}")
        now = out_n[0][..., -1] > 0
        left += int((present & ~now).sum())
        present, truncated = now, truncated + int(out_n[3].sum())
    assert left > 5 and truncated == 4  # services ended (their masks and infos shown once more) and episodes ended


def test_bad_actions_and_arguments_are_refused_by_name():
    envs = gymnasium.make_vec(
        "dcgym/ColoCentral-v0", num_envs=2, vectorization_mode="vector_entry_point", scenario="osml_case_a"
    )
    envs.reset(seed=1)
    with pytest.raises(InvalidActionError, match=r"^actions: got float64 of shape \(2, 3\); expected integer"):
        envs.step(np.zeros((2, 3)))
    with pytest.raises(InvalidConfigError, match=r"^scenario: got \"nope\""):
        gymnasium.make_vec("dcgym/ColoCentral-v0", num_envs=2, vectorization_mode="vector_entry_point", scenario="nope")
