"""OSML's control logic (dcgym.agents.osml.scheduler), each rule on a small case with stub models whose answers
are fixed, so what is checked is the rule, not a model."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from dcgym.agents.osml.scheduler import _DELTAS, OSML
from dcgym.agents.policies.colo import make_scheduler
from dcgym.envs.colo.scenario import load_colo_scenario
from dcgym.envs.colo.server import COUNTERS, ColoServer
from dcgym.envs.error import InvalidConfigError


class Fixed:
    """A model whose prediction is the same row for every input."""

    def __init__(self, row):
        self.row = np.asarray(row, dtype=float)

    def predict(self, x):
        return np.tile(self.row, (len(x), 1))


def prefer(dc, dw):
    """Q-values that rank (dc, dw) first, then by closeness to it."""
    score = -np.abs(_DELTAS[:, 0] - dc) - np.abs(_DELTAS[:, 1] - dw)
    return lambda obs, mask: np.tile(score.astype(float), (len(obs), 1))


def _server():
    server = ColoServer(load_colo_scenario("osml_case_a").engine_config(mix=0, seed=1))
    server.advance(1.0)  # the three launch at 0
    assert server.running.all()
    return server


def _osml(oaa=(8, 4), bpoint=(0, 0, 2, 2, 0, 0), q=None, **kw):
    s = OSML(**kw)
    s.model_a = Fixed([*oaa, *oaa, 0.0])
    s.model_b = Fixed(bpoint)
    s.q_values = q
    return s


def test_arrival_probes_then_places_at_model_a_oaa():
    server, s = _server(), _osml()
    s.reset(server, np.random.default_rng(0))
    s.act(server)
    assert s.decisions == ["probe"] and (server.cores >= 1).all() and (server.ways >= 1).all()
    server.advance(1.0)
    s.act(server)
    assert s.decisions == ["probe", "place"]
    assert server.cores.tolist() == [8, 8, 8] and server.ways.tolist() == [4, 4, 4]


def test_short_server_takes_model_b_points_from_neighbours():
    # OAA 16 cores x 3 services > 36: the third is short by 12 cores; each neighbour's B-Point gives up 5
    server = _server()
    s = _osml(oaa=(16, 4), bpoint=(0, 0, 5, 5, 0, 0))
    s.reset(server, np.random.default_rng(0))
    s.act(server)
    server.advance(1.0)
    s.act(server)
    cores = server.cores
    assert cores.sum() <= 36
    # two services placed at 16 then deprived of 5 each for the last, which gets 36 - 22 = 14
    assert sorted(cores.tolist()) == [11, 11, 14]


def _placed(s, server, cores=(10, 10, 10), ways=(5, 5, 5)):
    s.reset(server, np.random.default_rng(0))
    server.allocate(list(cores), list(ways))
    s.probing[:] = False
    s.arrived_s[:] = server.now_s


def _hist(s, i, values):
    s.history[i] = deque(values, maxlen=5)


def test_violation_gets_model_c_upsize_within_the_idle_pool():
    server, s = _server(), _osml(q=prefer(3, 3))
    _placed(s, server)
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.5 * qos[i]] * 5)
    _hist(s, 1, [2.0 * qos[1]] * 5)  # img-dnn violating, not improving
    s.decide(server)
    assert s.decisions == ["upsize"] and server.cores.tolist() == [10, 13, 10] and server.ways[1] == 8


def test_code_rule_waits_for_three_times_the_target():
    server = _server()
    for rule, acted in (("paper", True), ("code", False)):
        s = _osml(q=prefer(3, 0), rule=rule)
        _placed(s, server)
        qos = server.qos_ms
        for i in range(3):
            _hist(s, i, [0.9 * qos[i]] * 5)
        _hist(s, 0, [2.0 * qos[0]] * 5)  # 2x: a violation, below the code's 3x
        s.decide(server)
        assert ("upsize" in s.decisions) is acted, rule


def test_improving_service_is_left_alone():
    server, s = _server(), _osml(q=prefer(3, 3))
    _placed(s, server)
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.9 * qos[i]] * 5)
    _hist(s, 0, [4.0 * qos[0]] * 4 + [1.5 * qos[0]])  # latest well below the mean: improving
    s.decide(server)
    assert s.decisions == []


def test_over_provisioned_service_is_downsized_and_reverted_on_violation():
    server, s = _server(), _osml(q=prefer(-2, -1))
    _placed(s, server)
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.9 * qos[i]] * 5)
    _hist(s, 2, [0.3 * qos[2]] * 5)  # xapian far below target
    s.decide(server)
    assert s.decisions == ["downsize"] and server.cores[2] == 8 and server.ways[2] == 4
    _hist(s, 2, [1.5 * qos[2]] * 5)  # the downsize broke QoS
    s.decide(server)
    assert s.decisions == ["downsize", "revert"] and server.cores[2] == 10 and server.ways[2] == 5


def test_give_up_after_the_limit():
    server, s = _server(), _osml(q=prefer(3, 3), give_up_s=5.0)
    _placed(s, server)
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.9 * qos[i]] * 5)
    _hist(s, 1, [2.0 * qos[1]] * 5)
    s.arrived_s[1] = server.now_s - 6.0
    s.decide(server)
    assert "upsize" not in s.decisions


def test_make_scheduler_builds_osml_and_refuses_bad_parameters(tmp_path):
    assert isinstance(make_scheduler("osml:rule=code"), OSML)
    with pytest.raises(InvalidConfigError, match="rule"):
        make_scheduler("osml:rule=both")
    with pytest.raises(InvalidConfigError, match="models"):
        make_scheduler({"policy": "osml", "models": str(tmp_path)})


def test_upsize_with_nothing_idle_takes_model_b_points_from_neighbours():
    server, s = _server(), _osml(q=prefer(3, 0), bpoint=(0, 0, 2, 2, 0, 0))
    _placed(s, server, cores=(12, 12, 12), ways=(7, 7, 6))
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.9 * qos[i]] * 5)
    _hist(s, 1, [2.0 * qos[1]] * 5)
    s.decide(server)
    # 3 cores wanted, none idle: 2 from Moses (the first of equal B-Points), 1 from Xapian
    assert s.decisions == ["upsize"] and server.cores.tolist() == [10, 15, 11] and server.ways.tolist() == [7, 7, 6]


def test_reclaim_always_downsizes_an_over_provisioned_service_with_nobody_short():
    server, s = _server(), _osml(q=prefer(-2, -1))
    _placed(s, server)
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.9 * qos[i]] * 5)
    _hist(s, 2, [0.3 * qos[2]] * 5)
    s.decide(server)
    assert s.decisions == ["downsize"] and server.cores.tolist() == [10, 10, 8]


def test_reclaim_code_downsizes_only_to_feed_an_upsize_on_a_full_server():
    def q(obs, mask):  # additions rank (+3, 0) first, removals (-2, -1): the allowed side picks
        add = (_DELTAS[:, 0] >= 0) & (_DELTAS[:, 1] >= 0)
        return np.where(add, prefer(3, 0)(obs, mask), prefer(-2, -1)(obs, mask))

    for cores, ways, violating, expect in (
        ((10, 10, 10), (5, 5, 5), False, []),  # xapian over-provisioned, nobody short: kept
        ((10, 10, 10), (5, 5, 5), True, ["upsize"]),  # moses short, 6 cores and 5 ways idle: no reclaim
        ((12, 12, 12), (7, 7, 6), True, ["downsize", "upsize"]),  # nothing idle: xapian gives, moses gets
    ):
        server = _server()
        s = _osml(q=q, reclaim="code", bpoint=(0, 0, 0, 0, 0, 0))
        _placed(s, server, cores=cores, ways=ways)
        qos = server.qos_ms
        for i in range(3):
            _hist(s, i, [0.9 * qos[i]] * 5)
        _hist(s, 2, [0.3 * qos[2]] * 5)
        if violating:
            _hist(s, 0, [2.0 * qos[0]] * 5)
        s.decide(server)
        assert s.decisions == expect, (cores, violating)
        if expect == ["downsize", "upsize"]:
            # xapian -2 cores -1 way; moses +2 cores (what is idle after the downsize; B-Points give nothing)
            assert server.cores.tolist() == [14, 12, 10] and server.ways.tolist() == [7, 7, 5]


def test_cooldown_keeps_a_reverted_service_from_another_downsize():
    for cooldown, second in ((0.0, True), (30.0, False)):
        server, s = _server(), _osml(q=prefer(-2, -1), cooldown_s=cooldown)
        _placed(s, server)
        qos = server.qos_ms
        for i in range(3):
            _hist(s, i, [0.9 * qos[i]] * 5)
        _hist(s, 2, [0.3 * qos[2]] * 5)
        s.decide(server)
        _hist(s, 2, [1.5 * qos[2]] * 5)
        s.decide(server)
        assert s.decisions == ["downsize", "revert"] and server.cores[2] == 10
        server.advance(5.0)
        _hist(s, 2, [0.3 * qos[2]] * 5)  # far below target again, 5 s after the revert
        s.decide(server)
        assert (s.decisions[-1] == "downsize") is second, cooldown
        if not second:
            server.advance(26.0)  # 31 s after the revert: allowed again
            s.decide(server)
            assert s.decisions[-1] == "downsize" and server.cores[2] == 8


def test_reclaim_cooldown_and_shadows_are_checked():
    with pytest.raises(InvalidConfigError, match="reclaim"):
        make_scheduler("osml:reclaim=never")
    with pytest.raises(InvalidConfigError, match="cooldown_s"):
        make_scheduler("osml:cooldown_s=-1")
    with pytest.raises(InvalidConfigError, match='shadows: got "maybe"; allowed: one of on, off'):
        make_scheduler("osml:shadows=maybe")
    s = make_scheduler("osml:reclaim=code,cooldown_s=30")
    assert (s.reclaim, s.cooldown_s) == ("code", 30.0)


def test_upsize_counts_only_what_neighbours_can_give_keeping_one_core():
    # B-Points of one core each, but Xapian holds one core only: the upsize gets Moses' one core, not two
    server, s = _server(), _osml(q=prefer(3, 0), bpoint=(0, 0, 1, 1, 0, 0))
    _placed(s, server, cores=(34, 1, 1), ways=(9, 8, 3))
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.9 * qos[i]] * 5)
    _hist(s, 1, [2.0 * qos[1]] * 5)
    s.decide(server)
    assert s.decisions == ["upsize"] and server.cores.tolist() == [33, 2, 1] and server.ways.tolist() == [9, 8, 3]


class Rows:
    """A model whose predictions are given rows, one per call, in order."""

    def __init__(self, rows):
        self.rows = [np.asarray(r, dtype=float) for r in rows]
        self.inputs = []

    def predict(self, x):
        self.inputs.append(np.asarray(x))
        return np.stack([self.rows.pop(0) for _ in range(len(x))])


def _placed_by_model_a(platform, bandwidths, **kw):
    scenario = load_colo_scenario("osml_case_a", {"platform": platform} if platform else None)
    server = ColoServer(scenario.engine_config(mix=0, seed=1))
    server.advance(1.0)
    s = _osml(**kw)
    s.model_a = Rows([[8, 4, 6, 2, bw] for bw in bandwidths])
    s.reset(server, np.random.default_rng(0))
    s.act(server)  # probe
    server.advance(1.0)
    s.act(server)  # place
    assert s.decisions == ["probe", "place"]
    return server, s


def test_bandwidth_is_partitioned_in_the_ratio_of_model_a_oaa_bandwidths_with_mba():
    server, s = _placed_by_model_a("gold_6338", [1000.0, 3000.0, 6000.0])
    assert server.mba_available
    np.testing.assert_allclose(server.sim.mba, [0.1, 0.3, 0.6])
    # a later allocation keeps the partition (and a smaller share never drops below MBA's 1%)
    server, s = _placed_by_model_a("gold_6338", [1.0, 1000.0, 1000.0])
    np.testing.assert_allclose(server.sim.mba, [0.01, 1000 / 2001, 1000 / 2001])


def test_no_bandwidth_partition_without_mba_or_when_turned_off():
    server, _ = _placed_by_model_a(None, [1000.0, 3000.0, 6000.0])  # OSML's E5-2697 v4: no MBA
    assert not server.mba_available and list(server.sim.mba) == [1.0, 1.0, 1.0]
    server, _ = _placed_by_model_a("gold_6338", [1000.0, 3000.0, 6000.0], bandwidth="none")
    assert list(server.sim.mba) == [1.0, 1.0, 1.0]
    with pytest.raises(InvalidConfigError, match="bandwidth"):
        make_scheduler("osml:bandwidth=equal")


def _arrive_short(slowdowns):
    """Three services whose OAA (16 cores, 8 ways) cannot all fit: the third is 12 cores and 4 ways short (the
    neighbours' B-Points give nothing)."""
    server = _server()
    s = _osml(oaa=(16, 8), bpoint=(0, 0, 0, 0, 0, 0))
    s.model_b_shadow = None if slowdowns is None else Rows([[x] for x in slowdowns])
    s.reset(server, np.random.default_rng(0))
    s.act(server)  # probe
    server.advance(1.0)
    s.act(server)  # place
    return server, s


def test_algorithm_4_shares_the_shortfall_with_the_neighbour_slowed_least():
    # Model-B' predicts 15% for Moses and 5% for Img-dnn if each keeps 4 cores and 4 ways: Img-dnn shares
    server, s = _arrive_short([0.15, 0.05])
    assert s.decisions == ["probe", "place", "share"]
    assert server.cores.tolist() == [16, 4, 4] and server.ways.tolist() == [8, 4, 4]
    assert server.sim.groups[0] == {"members": [1, 2], "cores": 12, "ways": 4}
    assert server.idle_cores == 0 and server.idle_ways == 0
    # Model-B' was asked once, about Moses and Img-dnn: their twelve co-location inputs, then the 4 cores and 4 ways
    # each keeps
    (x,) = s.model_b_shadow.inputs
    assert x.shape == (2, 14) and x[:, -2:].tolist() == [[4, 4], [4, 4]]
    server.advance(1.0)
    allocated = server.counters[:, [COUNTERS.index("Allocated_Core")]].ravel()
    assert allocated.tolist() == [16, 16, 16]  # Img-dnn and Xapian each hold their 4 cores and the group's 12
    # a later Model-C downsize of Moses resizes private partitions and keeps the group
    s.q_values = prefer(-2, -1)
    qos = server.qos_ms
    for i in range(3):
        _hist(s, i, [0.9 * qos[i]] * 5)
    _hist(s, 0, [0.3 * qos[0]] * 5)
    s.decide(server)
    assert s.decisions[-1] == "downsize" and server.cores.tolist() == [14, 4, 4] and server.ways.tolist() == [7, 4, 4]
    assert server.sim.groups[0] == {"members": [1, 2], "cores": 12, "ways": 4}


def test_algorithm_4_does_not_share_beyond_the_allowed_slowdown_or_without_model_b_shadow():
    server, s = _arrive_short([0.30, 0.25])  # both above the allowed 20%
    assert s.decisions == ["probe", "place"] and all(g is None for g in server.sim.groups)
    assert server.cores.tolist() == [16, 16, 4] and server.ways.tolist() == [8, 8, 4]
    server, s = _arrive_short(None)
    assert s.decisions == ["probe", "place"] and all(g is None for g in server.sim.groups)
    assert server.cores.tolist() == [16, 16, 4] and server.ways.tolist() == [8, 8, 4]


def test_model_a_shadow_places_a_service_among_neighbours_from_their_counters_too():
    server = _server()
    s = _osml(oaa=(8, 4))
    s.model_a_shadow = Rows([[10, 5, 8, 3, 0.0]] * 3)
    s.reset(server, np.random.default_rng(0))
    s.act(server)  # probe: 12 cores and 6-7 ways each
    server.advance(1.0)
    c = server.counters.copy()
    s.act(server)
    assert s.decisions == ["probe", "place"]
    assert server.cores.tolist() == [10, 10, 10] and server.ways.tolist() == [5, 5, 5]  # Model-A' (8, 4 unused)
    x = np.concatenate(s.model_a_shadow.inputs)
    assert x.shape == (3, 12)
    col = {k: COUNTERS.index(k) for k in ("MBL", "Allocated_Cache", "Allocated_Core")}
    for i in range(3):
        others = [j for j in range(3) if j != i]
        assert x[i, -3:].tolist() == pytest.approx(
            [
                c[others, col["MBL"]].mean(),
                c[others, col["Allocated_Cache"]].sum(),
                c[others, col["Allocated_Core"]].sum(),
            ]
        )
    assert x[0, -1] == 24.0  # Img-dnn's and Xapian's 12 probe cores


def test_a_service_alone_is_placed_by_model_a():
    server = ColoServer(load_colo_scenario("osml_single").engine_config(mix=0, seed=1))
    server.advance(1.0)
    s = _osml(oaa=(8, 4))
    s.model_a_shadow = Rows([])  # would fail if asked
    s.reset(server, np.random.default_rng(0))
    s.act(server)
    server.advance(1.0)
    s.act(server)
    assert s.decisions == ["probe", "place"] and server.cores.tolist() == [8] and server.ways.tolist() == [4]
    assert s.model_a_shadow.inputs == []
