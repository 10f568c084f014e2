"""lRLA's path loads (flow_v0 ``path_loads``, FlowSim::ObservePathCosts): each listed long flow's row holds pathbal's
cost of each of its paths over the largest, recomputed here from the engine's table of active flows."""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.envs.error import InvalidConfigError
from dcgym.envs.flow import flow_v0

ROWS, PATHS = 48, 3


def env(**kwargs):
    return flow_v0.parallel_env(
        scenario="auto_websearch", overrides={"long_flow_bytes": 1048576}, long_active=ROWS, warmup_s=0.3, **kwargs
    )


def expected_loads(table: dict, handle: int, level: int | None = None) -> np.ndarray:
    """On AuTO's planes (path q: the source's uplink and the destination's downlink on plane q), the unfinished
    bytes of the other flows at this flow's level (or at ``level``) or above on each, over the largest."""
    k = int(np.flatnonzero(table["handle"] == handle)[0])
    left = table["size_bytes"] - table["sent_bytes"]
    at = table["level"][k] if level is None else level
    others = (table["level"] <= at) & (np.arange(len(left)) != k)
    cost = np.array(
        [
            left[others & (table["path"] == q) & (table["src"] == table["src"][k])].sum()
            + left[others & (table["path"] == q) & (table["dst"] == table["dst"][k])].sum()
            for q in range(PATHS)
        ]
    )
    return cost / cost.max() if cost.max() > 0 else np.zeros(PATHS)


def test_each_rows_path_loads_are_pathbals_costs_over_the_largest():
    e = env(path_loads=True)
    obs, _ = e.reset(seed=3)
    width = 6 + PATHS
    assert e.game.lrla_row_width == width and obs["lrla"].shape == (ROWS * width + 70,)
    for _ in range(3):
        rows = obs["lrla"][: ROWS * width].reshape(ROWS, width)
        flows = np.asarray(e.game.agents[0].flows)
        table = e.sim.active_flows_table()
        assert (flows >= 0).sum() == ROWS  # every row holds a flow at this load
        for i, handle in enumerate(flows):
            np.testing.assert_allclose(rows[i, 6:], expected_loads(table, handle), atol=1e-6)
        most = rows[:, 6:].max(-1)  # 1, or 0 where no path carries another flow's bytes at the level
        assert (np.isclose(most, 1.0) | (most == 0)).all() and (rows[:, 6:].min(-1) < most).any()
        obs, *_ = e.step({"srla": e.action_space("srla").sample() * 0, "lrla": np.zeros(ROWS * 3, np.int64)})


def test_without_path_loads_the_observation_is_unchanged():
    plain, loaded = env(), env(path_loads=True)
    a, _ = plain.reset(seed=5)
    b, _ = loaded.reset(seed=5)
    assert a["lrla"].shape == (ROWS * 6 + 70,)
    rows = b["lrla"][: ROWS * 9].reshape(ROWS, 9)
    np.testing.assert_array_equal(a["lrla"][: ROWS * 6].reshape(ROWS, 6), rows[:, :6])
    np.testing.assert_array_equal(a["lrla"][ROWS * 6 :], b["lrla"][ROWS * 9 :])


def test_path_loads_last_adds_the_costs_counted_at_the_last_level():
    e = env(path_loads=True, path_loads_last=True)
    obs, _ = e.reset(seed=3)
    width = 6 + 2 * PATHS
    assert e.game.lrla_row_width == width and obs["lrla"].shape == (ROWS * width + 70,)
    rows = obs["lrla"][: ROWS * width].reshape(ROWS, width)
    table = e.sim.active_flows_table()
    differ = 0
    for i, handle in enumerate(np.asarray(e.game.agents[0].flows)):
        np.testing.assert_allclose(rows[i, 6 : 6 + PATHS], expected_loads(table, handle), atol=1e-6)
        np.testing.assert_allclose(rows[i, 6 + PATHS :], expected_loads(table, handle, level=3), atol=1e-6)
        differ += not np.allclose(rows[i, 6 : 6 + PATHS], rows[i, 6 + PATHS :])
    assert differ > 0  # flows above the last level see fewer bytes at their own


def test_path_loads_last_needs_path_loads():
    with pytest.raises(InvalidConfigError, match=r"path_loads_last: got true; allowed: true only with path_loads"):
        env(path_loads_last=True)


def checked_paths(table: dict, listed: np.ndarray, want: np.ndarray, levels: np.ndarray) -> dict[int, int]:
    """flow_v0's ``move_check`` recomputed from the table of active flows: the listed flows in order, each moved to
    its wanted path only if that path, with the other flows as the moves before it left them, costs it less than
    its current one, both counted at its level after the action (pathbal's cost on AuTO's planes)."""
    left = (table["size_bytes"] - table["sent_bytes"]).astype(float)
    path, level = table["path"].astype(int).copy(), table["level"].astype(int).copy()
    src, dst = table["src"], table["dst"]
    result = {}
    for handle, q_new, at in zip(listed, want, levels, strict=True):
        k = int(np.flatnonzero(table["handle"] == handle)[0])
        at = level[k] if at < 0 else int(at)
        others = (level <= at) & (np.arange(len(left)) != k)

        def cost(q, k=k, others=others):
            on = others & (path == q)
            return left[on & (src == src[k])].sum() + left[on & (dst == dst[k])].sum()

        if q_new != path[k] and cost(q_new) < cost(path[k]):
            path[k] = q_new
        level[k] = at
        result[int(handle)] = int(path[k])
    return result


def test_move_check_makes_a_path_change_only_if_it_still_lowers_the_flows_cost():
    e = env(path_loads=True, keep_level=True, move_check=True)
    e.reset(seed=3)
    rng = np.random.default_rng(4)
    dropped = kept = 0
    for _ in range(3):
        flows = np.asarray(e.game.agents[0].flows)
        table = e.sim.active_flows_table()
        current = table["path"][[int(np.flatnonzero(table["handle"] == h)[0]) for h in flows]].astype(int)
        want = (current + rng.integers(1, PATHS, ROWS)) % PATHS  # every listed flow asks for another path
        level = np.where(rng.random(ROWS) < 0.5, 4, 3)  # keep (index 4) or the last level
        action = np.stack([level, np.zeros(ROWS, int), want], -1).reshape(-1)
        expected = checked_paths(table, flows, want, np.where(level == 4, -1, level))
        e.game.step(
            None, e.game.check_lrla(action)[None], [0]
        )  # no sRLA action: the thresholds, and so the levels, stay
        after = e.sim.active_flows_table()
        for handle, path in expected.items():
            if (at := np.flatnonzero(after["handle"] == handle)).size:
                assert after["path"][at[0]] == path, handle
        moved = np.array([expected[int(h)] for h in flows]) == want
        dropped, kept = dropped + int((~moved).sum()), kept + int(moved.sum())
    assert dropped > 10 and kept > 10  # the check both let moves through and refused some


def test_without_move_check_every_asked_move_is_made():
    e = env(path_loads=True)
    e.reset(seed=3)
    flows = np.asarray(e.game.agents[0].flows)
    table = e.sim.active_flows_table()
    current = table["path"][[int(np.flatnonzero(table["handle"] == h)[0]) for h in flows]].astype(int)
    want = (current + 1) % PATHS
    e.step(
        {
            "srla": np.zeros(3, np.float32),
            "lrla": np.stack([np.full(ROWS, 3), np.zeros(ROWS, int), want], -1).reshape(-1),
        }
    )
    after = e.sim.active_flows_table()
    for handle, path in zip(flows, want, strict=True):
        if (at := np.flatnonzero(after["handle"] == handle)).size:
            assert after["path"][at[0]] == path
