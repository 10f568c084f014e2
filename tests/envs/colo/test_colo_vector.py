"""ColoVectorEnv: copy k follows colo_v0 seeded s + k under the same actions; autoreset; refusals."""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.envs.colo import colo_v0
from dcgym.envs.colo.vector import ColoVectorEnv
from dcgym.envs.error import InvalidActionError, ResetNeededError


@pytest.mark.parametrize(("scenario", "reward"), [("colo_churn", "qos"), ("osml_case_a", "paper")])
def test_every_copy_follows_colo_v0_under_the_same_actions(scenario, reward):
    copies = 3
    vec = ColoVectorEnv(copies, scenario=scenario, reward=reward)
    singles = [colo_v0.parallel_env(scenario=scenario, reward=reward) for _ in range(copies)]
    obs, info = vec.reset(seed=10)
    first = [env.reset(seed=10 + k)[0] for k, env in enumerate(singles)]
    names = vec.possible_agents
    for k, o in enumerate(first):
        for a, x in o.items():
            assert np.array_equal(obs[k, names.index(a), :8], x["observation"])
            assert np.array_equal(info["action_mask"][k, names.index(a)], x["action_mask"])
    rng = np.random.default_rng(0)
    steps = ended = 0
    while all(env.agents for env in singles):
        actions = rng.integers(0, 49, size=(copies, len(names)))  # masked ones included: both clip them
        obs, rewards, terminations, truncations, info = vec.step(actions)
        steps += 1
        for k, env in enumerate(singles):
            o, r, te, tr, inf = env.step({a: int(actions[k, names.index(a)]) for a in env.agents})
            for a in o:
                i = names.index(a)
                assert np.array_equal(obs[k, i, :8], o[a]["observation"]) and obs[k, i, 8] == 1.0
                assert rewards[k, i] == r[a]  # the same bits (math.log1p element by element)
                assert (terminations[k, i], truncations[k, i]) == (te[a], tr[a])
                assert tuple(info["granted"][k, i]) == inf[a]["granted"]
                if a in env.agents:
                    assert np.array_equal(info["action_mask"][k, i], o[a]["action_mask"])
                ended += te[a]
            absent = [i for i, a in enumerate(names) if a not in o]
            assert not obs[k, absent].any() and not rewards[k, absent].any()
        assert (info["cores"].sum(axis=1) + info["idle"][:, 0] == 36).all()
    assert steps == 180 and ended == (copies if scenario == "colo_churn" else 0)


def test_autoreset_next_step():
    vec = ColoVectorEnv(2, scenario="osml_case_a", max_steps=3)
    vec.reset(seed=1)
    for _ in range(2):
        _, _, _, truncations, _ = vec.step(np.full((2, 3), 24))
        assert not truncations.any()
    _, _, _, truncations, _ = vec.step(np.full((2, 3), 24))
    assert truncations.all()
    obs, rewards, terminations, truncations, info = vec.step(np.full((2, 3), 48))  # ignored: the copies reset
    assert not rewards.any() and not terminations.any() and not truncations.any()
    assert (obs[:, :, 8] == 1).all() and not info["granted"].any()
    assert (info["cores"] == 12).all()  # the first observation of a new episode: equal shares
    _, rewards, _, _, _ = vec.step(np.full((2, 3), 24))
    assert rewards.any()


def test_bad_actions_and_misuse():
    vec = ColoVectorEnv(2, scenario="osml_case_a")
    with pytest.raises(ResetNeededError):
        vec.step(np.zeros((2, 3), np.int64))
    vec.reset(seed=0)
    with pytest.raises(InvalidActionError, match=r"shape \(2, 3\)"):
        vec.step(np.zeros((3, 3), np.int64))
    with pytest.raises(InvalidActionError, match=r"^copy 1, img-dnn: action 49 is not an action index"):
        vec.step(np.array([[24, 24, 24], [24, 49, 24]]))
    with pytest.raises(InvalidActionError, match="integer indices"):
        vec.step(np.full((2, 3), 2.5))
