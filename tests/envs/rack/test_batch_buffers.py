"""The rack batch step into preallocated arrays (``out=``, ``rows=``): same numbers, rows by index, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.cpp_core import RackSim, step_rack_game
from dcgym.envs.rack.game import RackGame

GAME = {
    "scenario": "malcolm_hetero_paper_exp",
    "overrides": {"nodes": [{"count": 1, "workers": 4}, {"count": 2, "workers": 2}]},
}
N = 3


def _sims(game: RackGame, seeds: list[int]) -> list[RackSim]:
    return [RackSim(dict(game.engine_config, seed=s)) for s in seeds]


def _step(sims, actions, out=None, rows=None, previous=None):
    reward = {"kind": "imbalance_delta", "scale": 1.0, "previous_imbalance": previous}
    return step_rack_game(sims, actions, 100.0, True, 10.0, 1.0, 100.0, N + 1, reward, out, rows)


def _buffers(rows: int) -> dict[str, np.ndarray]:
    pairs, nodes, copies = (rows, N, N), (rows, N), (rows,)
    out = {key: np.full(pairs, 7, np.uint64) for key in ("migrate", "steal")}
    out |= {key: np.full(nodes, 7, np.uint64) for key in ("migrations", "steals", "failed_steals", "dropped")}
    out |= {key: np.full(copies, 7.0) for key in ("latency_mean_us", "latency_p99_us", "now_us", "reward")}
    out |= {"beliefs": np.full(pairs, 7.0), "loads": np.full(nodes, 7.0), "completed": np.full(copies, 7, np.uint64)}
    out["obs"] = np.full((rows, N, N + 1), 7.0, np.float32)
    return out


def test_a_step_into_given_rows_writes_what_a_new_step_returns_and_leaves_the_other_rows():
    game = RackGame(GAME)
    rng = np.random.default_rng(1)
    fresh, into = _sims(game, [3, 4]), _sims(game, [3, 4])
    out, previous, fresh_previous = _buffers(5), np.zeros(5), np.zeros(2)
    rows = np.array([4, 1])
    for _ in range(50):
        actions = rng.uniform(-10, 10, (2, N, 2 * N))
        want = _step(fresh, actions, previous=fresh_previous)
        got = _step(into, actions, out, rows, previous)
        assert got is out  # the caller's arrays, written in place
        for key, value in out.items():
            np.testing.assert_array_equal(value[rows], want[key], err_msg=key)
            assert (value[[0, 2, 3]] == 7).all(), key
    assert previous[[0, 2, 3]].tolist() == [0.0, 0.0, 0.0] and previous[rows].tolist() == fresh_previous.tolist()


@pytest.mark.parametrize(
    "change,message",
    [
        (
            lambda out: out.update(beliefs=np.zeros((2, N, N), np.float32)),
            r"out\.beliefs: must be a writeable .*float64",
        ),
        (lambda out: out.update(loads=np.zeros((3, N))), r"out\.loads: must be .* of shape \(2, 3\)"),
        (lambda out: out.update(obs=np.zeros((2, N, 2 * N), np.float32)[:, :, ::2]), r"out\.obs: must be .*contiguous"),
        (lambda out: out.update(extra=np.zeros(2)), r"out\.extra: not an array this step writes"),
        (lambda out: out.pop("now_us"), r"out\.now_us: missing"),
        (lambda out: out.pop("reward"), r"out\.reward: missing"),
    ],
    ids=["dtype", "shape", "layout", "unknown", "no-now", "no-reward"],
)
def test_bad_output_arrays_are_refused_before_anything_changes(change, message):
    game = RackGame(GAME)
    sims = _sims(game, [1, 2])
    out = _buffers(2)
    change(out)
    with pytest.raises(ValueError, match=message):
        _step(sims, np.zeros((2, N, 2 * N)), out, previous=np.zeros(2))
    assert all(sim.now_us == 0 for sim in sims)


@pytest.mark.parametrize(
    "rows,message",
    [([0, 0], "distinct rows"), ([0, 5], r"in \[0, 3\), got 5"), ([0], r"shape \(2,\)")],
)
def test_bad_rows_are_refused(rows, message):
    game = RackGame(GAME)
    with pytest.raises(ValueError, match=message):
        _step(_sims(game, [1, 2]), np.zeros((2, N, 2 * N)), _buffers(3), np.array(rows), np.zeros(3))


def test_rows_need_output_arrays():
    game = RackGame(GAME)
    with pytest.raises(ValueError, match="rows: only with out"):
        _step(_sims(game, [1]), np.zeros((1, N, 2 * N)), rows=np.array([0]), previous=np.zeros(1))


def test_the_game_writes_every_step_into_the_same_arrays():
    game = RackGame(GAME, 2)
    game.reset(0, 5)
    game.reset(1, 6)
    arrays = {key: value.ctypes.data for key, value in game.out.items()}
    for _ in range(3):
        out = game.step(np.zeros((2, N, 2 * N)))
        assert out is game.out and {key: value.ctypes.data for key, value in out.items()} == arrays
    out = game.step(np.zeros((1, N, 2 * N)), [1])  # one copy: its row only
    assert game.steps.tolist() == [3, 4] and out["sim_time_us"].tolist() == [300.0, 400.0]
