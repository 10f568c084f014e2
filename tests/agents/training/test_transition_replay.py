"""TransitionReplay: the ring's wrap-around, uniform sampling, n-step returns by hand, seeded determinism, episodes,
dict observations; ModuleReplays: each agent's transitions in its module's ring."""

from __future__ import annotations

import numpy as np
import pytest
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from dcgym.agents.rl.transition_replay import ModuleReplays, TransitionReplay


def _chunk(replay: TransitionReplay, first: int, steps: int, *, key=0, terminated=False, done=False) -> None:
    """Steps ``first .. first + steps - 1`` of an episode whose observation at step t is [t, -t], action t, reward t."""
    t = np.arange(first, first + steps + 1, dtype=np.float32)
    replay.add_chunk(
        key, np.stack([t, -t], axis=1), t[:-1, None], t[:-1].astype(np.float64), terminated=terminated, done=done
    )


def _stored(replay: TransitionReplay) -> np.ndarray:
    return replay._columns[Columns.OBS][: len(replay), 0]


def test_the_ring_keeps_the_newest_capacity_transitions_and_each_stays_whole():
    replay = TransitionReplay(5)
    _chunk(replay, 0, 3)
    assert len(replay) == 3 and list(_stored(replay)) == [0, 1, 2]
    _chunk(replay, 3, 4)  # 7 transitions in 5 places: 5 and 6 overwrite 0 and 1
    assert len(replay) == 5 and list(_stored(replay)) == [5, 6, 2, 3, 4]
    _chunk(replay, 7, 12)  # more than the capacity at once: the newest 5 (14..18), the ring continuing at index 2
    assert sorted(_stored(replay)) == [14, 15, 16, 17, 18]
    assert list(_stored(replay)) == [17, 18, 14, 15, 16]
    cols = replay._columns
    np.testing.assert_array_equal(cols[Columns.NEXT_OBS][:, 0], cols[Columns.OBS][:, 0] + 1)
    np.testing.assert_array_equal(cols[Columns.OBS][:, 1], -cols[Columns.OBS][:, 0])
    np.testing.assert_array_equal(cols[Columns.ACTIONS][:, 0], cols[Columns.OBS][:, 0])
    np.testing.assert_array_equal(cols[Columns.REWARDS], cols[Columns.OBS][:, 0])


def test_sampling_is_uniform_over_the_stored_transitions():
    """Each of the 7 stored transitions of a ring of 10 is drawn with probability 1/7: with 70,000 draws the
    standard deviation of a frequency is sqrt(p (1 - p) / n) = 0.0013; the tolerance is 4 of them, 0.0053."""
    replay = TransitionReplay(10, seed=5)
    _chunk(replay, 0, 7)
    draws = np.concatenate([replay.sample(700)[Columns.OBS][:, 0] for _ in range(100)])
    assert set(draws) == set(range(7))  # never an empty place of the ring
    frequency = np.bincount(draws.astype(int), minlength=7) / len(draws)
    np.testing.assert_allclose(frequency, 1 / 7, atol=0.0053)


def test_n_step_returns_equal_a_hand_computation_across_chunks():
    """n = 3, γ = 0.5, rewards 0, 1, 2, 3, 4 over one terminated episode of 5 steps in chunks of 2 and 3."""
    replay = TransitionReplay(10, n_step=3, gamma=0.5)
    _chunk(replay, 0, 2, key="a")
    assert len(replay) == 0  # neither step has 2 later steps yet: both wait for the episode's next chunk
    _chunk(replay, 2, 3, key="a", terminated=True, done=True)
    cols = {k: v[: len(replay)] for k, v in replay._columns.items()}
    np.testing.assert_array_equal(cols[Columns.OBS][:, 0], [0, 1, 2, 3, 4])
    # t = 0: 0 + 0.5 * 1 + 0.25 * 2; t = 1: 1 + 1 + 0.75; t = 2: 2 + 1.5 + 1; t = 3: 3 + 2 (2 steps left); t = 4: 4
    np.testing.assert_allclose(cols[Columns.REWARDS], [1.0, 2.75, 4.5, 5.0, 4.0], rtol=1e-7)
    np.testing.assert_array_equal(cols["n_step"], [3, 3, 3, 2, 1])
    np.testing.assert_array_equal(cols[Columns.NEXT_OBS][:, 0], [3, 4, 5, 5, 5])
    np.testing.assert_array_equal(cols[Columns.TERMINATEDS], [False, False, True, True, True])
    assert "n_step" in replay.sample(4)


def test_a_truncated_episode_bootstraps_and_episodes_in_between_do_not_mix():
    replay = TransitionReplay(10, n_step=2, gamma=0.5)
    _chunk(replay, 0, 2, key="a")  # step 0 ready (step 1 known), step 1 waits
    _chunk(replay, 10, 1, key="b", done=True)  # another episode, truncated after one step
    _chunk(replay, 2, 1, key="a", done=True)  # truncated: its last steps stored without the terminal flag
    cols = {k: v[: len(replay)] for k, v in replay._columns.items()}
    np.testing.assert_array_equal(cols[Columns.OBS][:, 0], [0, 10, 1, 2])
    np.testing.assert_allclose(cols[Columns.REWARDS], [0.5, 10.0, 2.0, 2.0])
    np.testing.assert_array_equal(cols[Columns.NEXT_OBS][:, 0], [2, 11, 3, 3])
    assert not cols[Columns.TERMINATEDS].any()


def test_the_same_seed_draws_the_same_batches():
    def batches(seed):
        replay = TransitionReplay(50, seed=seed)
        _chunk(replay, 0, 40)
        return np.stack([replay.sample(16)[Columns.OBS] for _ in range(5)])

    np.testing.assert_array_equal(batches(7), batches(7))
    assert not np.array_equal(batches(7), batches(8))


def test_episodes_of_an_env_runner_are_stored_as_their_transitions():
    obs = [np.array([t, 1.0], np.float32) for t in range(4)]
    episode = SingleAgentEpisode(
        observations=obs,
        actions=[np.array([0.1 * t], np.float32) for t in range(3)],
        rewards=[1.0, 2.0, 3.0],
        terminated=True,
        len_lookback_buffer=0,
    )
    replay = TransitionReplay(8)
    replay.add_episodes([episode, SingleAgentEpisode(observations=[obs[0]], len_lookback_buffer=0)])  # one empty
    batch = {k: v[: len(replay)] for k, v in replay._columns.items()}
    np.testing.assert_array_equal(batch[Columns.OBS], np.stack(obs[:3]))
    np.testing.assert_array_equal(batch[Columns.NEXT_OBS], np.stack(obs[1:]))
    np.testing.assert_allclose(batch[Columns.ACTIONS][:, 0], [0.0, 0.1, 0.2], rtol=1e-6)
    np.testing.assert_array_equal(batch[Columns.REWARDS], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(batch[Columns.TERMINATEDS], [False, False, True])
    assert set(replay.sample(2)) == {
        Columns.OBS,
        Columns.ACTIONS,
        Columns.REWARDS,
        Columns.NEXT_OBS,
        Columns.TERMINATEDS,
    }


def _agent_episode(agent: int, steps: int, *, terminated: bool = False) -> SingleAgentEpisode:
    """Observation {"x": [agent, t], "mask": [t % 2]} at step t, action 10 * agent + t, reward t; in numpy arrays, as
    an env runner's ``sample()`` returns its episodes."""
    episode = SingleAgentEpisode(
        observations=[
            {"x": np.array([agent, t], np.float32), "mask": np.array([t % 2], np.int8)} for t in range(steps + 1)
        ],
        actions=[10 * agent + t for t in range(steps)],
        rewards=[float(t) for t in range(steps)],
        terminated=terminated,
        len_lookback_buffer=0,
    )
    return episode.to_numpy()


class _MultiAgentChunk:
    """What ModuleReplays reads of a MultiAgentEpisode: its id, its agents' episodes and their modules."""

    def __init__(self, id_: str, agent_episodes: dict, modules: dict) -> None:
        self.id_, self.agent_episodes, self._modules = id_, agent_episodes, modules

    def module_for(self, agent):
        return self._modules[agent]


def test_each_agent_fills_its_modules_ring_with_dict_observations():
    """Agents 1 and 2 share module "s", agent 3 has "o": "s" keeps capacity x 2 transitions, and n-step returns
    (n = 2, γ = 1) never run from one agent's steps into another's."""
    replays = ModuleReplays(4, n_step=2, gamma=1.0, seed=3)
    chunk = _MultiAgentChunk(
        "e", {a: _agent_episode(a, 3, terminated=True) for a in (1, 2, 3)}, {1: "s", 2: "s", 3: "o"}
    )
    replays.add_episodes([chunk])
    assert list(replays.replays) == ["s", "o"] and len(replays) == 9
    shared, own = replays.replays["s"], replays.replays["o"]
    assert (shared.capacity, own.capacity) == (8, 4)
    cols = shared._columns
    np.testing.assert_array_equal(cols[Columns.OBS]["x"][:6], [[1, 0], [1, 1], [1, 2], [2, 0], [2, 1], [2, 2]])
    np.testing.assert_array_equal(cols[Columns.NEXT_OBS]["mask"][:6, 0], [0, 1, 1, 0, 1, 1])  # s_{t+2}, or s_3
    np.testing.assert_array_equal(cols[Columns.ACTIONS][:6], [10, 11, 12, 20, 21, 22])
    np.testing.assert_array_equal(cols[Columns.REWARDS][:6], [1, 3, 2, 1, 3, 2])
    batch = replays.sample(5)
    assert set(batch) == {"s", "o"} and set(batch["o"][Columns.OBS]) == {"x", "mask"}
    assert batch["o"][Columns.OBS]["x"].shape == (5, 2) and set(batch["o"][Columns.OBS]["x"][:, 0]) == {3}
    single = ModuleReplays(4)
    single.add_episodes([_agent_episode(0, 2)])
    assert list(single.replays) == ["default_policy"] and len(single) == 2


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="capacity \\(0\\)"):
        TransitionReplay(0)
    with pytest.raises(ValueError, match="n_step \\(\\(1, 3\\)\\)"):
        TransitionReplay(10, n_step=(1, 3))
    with pytest.raises(ValueError, match="empty"):
        TransitionReplay(10).sample(1)
    with pytest.raises(ValueError, match="2 steps needs 3 observations"):
        TransitionReplay(10).add_chunk(0, np.zeros((2, 1)), np.zeros((2, 1)), np.zeros(2), terminated=False, done=True)
