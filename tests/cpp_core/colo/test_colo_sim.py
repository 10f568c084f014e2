"""ColoSim through its binding: lifecycle and conservation, the backlog,
fresh samples, cache warm-up, measurement noise, counters, steady states,
determinism, the batch stepper, and refusals of bad configs and allocations.
"""

from __future__ import annotations

import math

import colo_helpers as h
import numpy as np
import pytest

from dcgym.cpp_core import ColoSim, check_colo_config, step_colo_batch

NAMES = ColoSim.counter_names
C = {name: i for i, name in enumerate(NAMES)}
WORKLOAD = """
# OSML's workload-file format: name RPS|PCT value [threads] [launch_s] [end_s]
moses PCT 40
img-dnn PCT 60 36 2
xapian RPS 3000 20 4 9
CHANGE_RPS img-dnn PCT 30 6
"""


def workload_sim(**kw) -> ColoSim:
    return ColoSim(h.sim_config(h.cc.parse_workload(WORKLOAD, h.CATALOG), **kw))


def test_counter_names_follow_osml():
    assert NAMES[:10] == [
        "CPU_Utilization",
        "Frequency",
        "IPC",
        "Misses",
        "MBL",
        "Virt_Memory",
        "Res_Memory",
        "Allocated_Cache",
        "Allocated_Core",
        "Latency",
    ]


def test_workload_file_lifecycle_and_conservation():
    sim = workload_sim(on_launch="idle", seed=3)
    rng = np.random.default_rng(0)
    seen_phases = set()
    for _ in range(120):
        sim.step(1)
        phases = sim.phases
        seen_phases.update(phases.tolist())
        cores, ways = sim.cores, sim.ways
        assert cores.sum() + sim.idle_cores == 36 and ways.sum() + sim.idle_ways == 20
        assert np.all(cores[(phases == 0) | (phases == 3)] == 0)
        np.testing.assert_array_equal(sim.counters[:, C["Allocated_Core"]], cores)
        np.testing.assert_array_equal(sim.counters[:, C["Allocated_Cache"]], ways * 2.25)
        # A random scheduler: a random split of the server among the running services.
        running = np.flatnonzero((phases == 1) | (phases == 2))
        if len(running) and rng.random() < 0.3:
            split_c = rng.multinomial(int(rng.integers(0, 37)), np.ones(len(running)) / len(running))
            split_w = rng.multinomial(int(rng.integers(0, 21)), np.ones(len(running)) / len(running))
            new_c, new_w = np.zeros(3, int), np.zeros(3, int)
            new_c[running], new_w[running] = split_c, split_w
            sim.set_allocations(new_c, new_w)
    assert sim.phases.tolist() == [2, 2, 3]  # xapian ended at 9 s and gave its resources back
    assert seen_phases == {0, 1, 2, 3}
    assert sim.counters[1, C["RPS"]] == h.cc.pct_to_rps(h.CATALOG, "img-dnn", 30)  # CHANGE_RPS at 6 s


def test_launch_takes_idle_resources_as_osml_does():
    sim = workload_sim(on_launch="idle")
    assert sim.cores.tolist() == [36, 0, 0] and sim.ways.tolist() == [20, 0, 0]
    sim.set_allocation(0, 20, 12)
    sim.step(20)  # img-dnn launches at 2 s with what is idle
    assert sim.cores.tolist() == [20, 16, 0] and sim.ways.tolist() == [12, 8, 0]


def starved_img_dnn(**kw) -> ColoSim:
    """Img-dnn at 4000 rps, warmed up on 30 cores, then starved on 4 cores for 3 s."""
    sim = ColoSim(h.sim_config([h.service("img-dnn", rps=4000)], noise=h.QUIET, **kw))
    sim.set_allocation(0, 30, 4)
    sim.step(20)
    sim.set_allocation(0, 4, 4)
    sim.step(30)
    return sim


def test_backlog_drains_at_the_rate_capacity_allows():
    sim = starved_img_dnn()
    c = sim.counters
    k_low = c[0, C["Capacity"]]
    assert k_low < 4000
    before = c[0, C["Backlog"]]
    assert before == pytest.approx((4000 - k_low) * 3.0, rel=1e-6)  # grew at lambda - K for 3 s
    sim.set_allocation(0, 30, 4)
    sim.step(1)
    k = c[0, C["Capacity"]]
    assert c[0, C["Backlog"]] == pytest.approx(before - (k - 4000) * 0.1, rel=1e-9)
    ticks = math.ceil((before - (k - 4000) * 0.1) / ((k - 4000) * 0.1))
    sim.step(ticks - 1)
    assert c[0, C["Backlog"]] > 0
    sim.step(1)
    assert c[0, C["Backlog"]] == 0
    sim.step(1)  # the tick that emptied it still carried the last wait
    assert c[0, C["P99_ms"]] < h.cc.qos_ms(h.CATALOG, "img-dnn")


def test_latency_includes_the_wait_behind_the_backlog():
    c = starved_img_dnn().counters[0]
    assert c[C["P99_ms"]] >= 1e3 * c[C["Backlog"]] / c[C["Capacity"]]


@pytest.mark.parametrize("mode, kept", [("online", True), ("fresh", False)])
def test_fresh_samples_start_with_an_empty_queue(mode, kept):
    sim = starved_img_dnn(mode=mode)
    sim.set_allocation(0, 30, 4)
    sim.step(1)
    assert (sim.counters[0, C["Backlog"]] > 0) == kept
    assert (sim.counters[0, C["Latency"]] > 100) == kept  # the 1-s window restarts in fresh mode


def test_cache_warms_at_the_miss_rate_after_ways_are_added():
    # Xapian misses rarely (0.03 MPKI): its new ways fill over seconds (Ubik, ASPLOS'14).
    sim = ColoSim(h.sim_config([h.service("xapian", rps=1000)], noise=h.QUIET))
    sim.set_allocation(0, 20, 2)
    sim.step(300)
    c = sim.counters[0]
    assert c[C["Warm_Cache"]] == pytest.approx(2 * 2.25)
    sim.set_allocation(0, 20, 12)
    for _ in range(5):
        warm = c[C["Warm_Cache"]]
        sim.step(1)
        # Each miss fills one 64-byte line: MB warmed in a tick = misses/s x 64 B x 0.1 s.
        filled = c[C["Misses"]] * 1e3 * 64 * 0.1 / 2**20
        assert 0 < filled < 2.25
        assert c[C["Warm_Cache"]] == pytest.approx(warm + filled, rel=1e-9)
    sim.step(2000)
    assert c[C["Warm_Cache"]] == pytest.approx(12 * 2.25)
    sim.set_allocation(0, 20, 3)  # ways taken away are lost at once
    sim.step(1)
    assert c[C["Warm_Cache"]] == pytest.approx(3 * 2.25)


def test_noise_shrinks_with_the_requests_in_a_window():
    """The latency counter's lognormal error: sigma = sqrt(q / ((1 - q) n)) / ln(1 / (1 - q)), n = rps x 1 s."""
    spreads = {}
    for rps in (200, 20000):
        svc = h.service("xapian", rps=rps, service_ms=1.0 * 200 / rps)  # same utilization at both loads
        sim = ColoSim(h.sim_config([svc], noise={"latency": 1.0, "counters": 0.0}, seed=5))
        sim.set_allocation(0, 8, 4)
        sim.step(20)
        ratios = []
        for _ in range(3000):
            sim.step(1)
            ratios.append(sim.counters[0, C["Latency"]] / sim.counters[0, C["P99_ms"]])
        spreads[rps] = np.std(np.log(ratios))
        expected = math.sqrt(0.99 / (0.01 * rps)) / math.log(100)
        assert spreads[rps] == pytest.approx(expected, rel=0.1)
    assert spreads[20000] < spreads[200] / 5


def test_counters_are_consistent():
    svc = h.service("moses", rps=800)
    sim = ColoSim(h.sim_config([svc], noise=h.QUIET))
    sim.set_allocation(0, 10, 12, freq_mhz=2000)
    sim.step(150)  # past Moses' 10-s warm-up
    c = sim.counters[0]
    assert c[C["Frequency"]] == 2000
    assert c[C["Throughput"]] == pytest.approx(800)
    assert 0 < c[C["CPU_Utilization"]] <= 100 * 10
    assert c[C["MBL"]] / c[C["Misses"]] == pytest.approx(svc["bytes_per_miss"] / 1e3)  # MB/s per k misses/s
    assert c[C["IPC"]] < svc["ipc"]  # hyperthreads, context switches, fewer ways, lower frequency
    assert c[C["Res_Memory"]] == svc["res_memory_gb"] * 2**30
    assert c[C["Latency"]] == pytest.approx(c[C["P99_ms"]])  # steady: the window mean is the tick's
    assert c[C["State"]] == 2


def test_lower_frequency_slows_only_the_core_part():
    def capacity(freq):
        sim = ColoSim(h.sim_config([h.service("moses", rps=100)], noise=h.QUIET))
        sim.set_allocation(0, 10, 20, freq_mhz=freq)
        sim.step(5)
        return sim.counters[0, C["Capacity"]]

    ratio = capacity(2300) / capacity(1200)
    assert 1.1 < ratio < 2300 / 1200 - 0.1  # memory stalls do not scale with the clock


def test_warm_up_after_launch():
    svc = h.service("moses", rps=400)
    sim = ColoSim(h.sim_config([svc], noise=h.QUIET))
    sim.set_allocation(0, 12, 12)
    sim.step(1)
    assert sim.counters[0, C["State"]] == 1
    early = sim.counters[0, C["P99_ms"]]
    sim.step(120)
    assert sim.counters[0, C["State"]] == 2
    assert early > 1.2 * sim.counters[0, C["P99_ms"]]


def test_steady_state_matches_the_tick_and_the_batch():
    services = [h.service(n, pct=40) for n in ("moses", "img-dnn", "xapian")]
    sim = ColoSim(h.sim_config(services, noise=h.QUIET))
    cores, ways = np.array([14, 14, 8]), np.array([12, 4, 4])
    sim.set_allocations(cores, ways)
    sim.step(200)
    rps = sim.counters[:, C["RPS"]]
    steady = sim.steady_state(cores, ways, rps)
    np.testing.assert_allclose(sim.counters[:, C["P99_ms"]], steady * 1e3, rtol=1e-9)
    batch = sim.steady_state_batch(np.array([cores, cores - 1]), np.array([ways, ways]), rps)
    np.testing.assert_array_equal(batch[0], steady)
    assert np.all(batch[1] >= batch[0])
    assert sim.now_s == pytest.approx(20.0)  # steady states do not move the simulation
    absent = sim.steady_state(cores, ways, np.array([rps[0], 0.0, rps[2]]))
    assert math.isnan(absent[1])
    assert math.isinf(sim.steady_state(np.array([1, 12, 8]), ways, rps)[0])


def test_share_group_for_unmanaged():
    services = [h.service(n, pct=30) for n in ("moses", "img-dnn", "xapian")]
    sim = ColoSim(h.sim_config(services, noise=h.QUIET, sharing=True))
    sim.set_group(0, [0, 1, 2], 36, 20)
    assert sim.idle_cores == 0 and sim.idle_ways == 0
    with pytest.raises(ValueError, match="cores: allocations hold 37 cores"):
        sim.set_allocation(0, 1, 0)
    sim.step(50)
    c = sim.counters
    assert np.all(c[:, C["Allocated_Core"]] == 36)
    assert c[:, C["Warm_Cache"]].sum() == pytest.approx(45.0)  # the pool's ways split by fills
    assert groups_are(sim, [{"members": [0, 1, 2], "cores": 36, "ways": 20}])
    sim.set_group(0, [], 0, 0)
    assert sim.idle_cores == 36


def groups_are(sim, expected):
    return [g for g in sim.groups if g is not None] == expected


def run_counters(seed: int, ticks: int = 150) -> np.ndarray:
    sim = workload_sim(on_launch="idle", seed=seed)
    out = []
    for t in range(ticks):
        sim.step(1)
        if t == 40:
            sim.set_allocations(sim.cores // 2, sim.ways // 2)
        out.append(sim.counters.copy())
    return np.array(out)


def test_same_seed_same_bits():
    a, b = run_counters(11), run_counters(11)
    assert a.tobytes() == b.tobytes()
    assert not np.array_equal(a, run_counters(12))


def test_reset_reproduces_and_batch_equals_single_steps():
    sims = [workload_sim(seed=s) for s in (1, 2, 3)]
    single = [workload_sim(seed=s) for s in (1, 2, 3)]
    for s in sims + single:
        s.set_allocation(0, 20, 10)
    step_colo_batch(sims, 50)
    for s in single:
        s.step(50)
    for a, b in zip(sims, single):
        assert a.counters.tobytes() == b.counters.tobytes()
    first = sims[0].counters.copy()
    sims[0].reset(1)
    sims[0].set_allocation(0, 20, 10)
    sims[0].step(50)
    assert sims[0].counters.tobytes() == first.tobytes()


def test_counters_view_is_live_and_read_only():
    sim = workload_sim()
    view = sim.counters
    sim.set_allocation(0, 10, 10)
    sim.step(5)
    assert view[0, C["Throughput"]] > 0  # updated in place, no copy
    with pytest.raises(ValueError):
        view[0, 0] = 1.0


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda c: c["services"][0].pop("service_ms"), r"services\[0\]\.service_ms: missing"),
        (lambda c: c["services"][0].update(servce_ms=1.0), r"services\[0\]\.servce_ms: unknown field"),
        (lambda c: c["services"][0].update(cv2="high"), r"services\[0\]\.cv2: wrong type"),
        (lambda c: c["services"][0].update(qos_ms=-1.0), r"services\[0\]\.qos_ms: must be a finite number > 0"),
        (lambda c: c["services"][0]["mrc"].update(alpha=9.0), r"services\[0\]\.mrc\.alpha: must be in \[0, 3\]"),
        (lambda c: c["services"][0].update(ipc=3.0), r"services\[0\]\.ipc: too high for its miss-rate curve"),
        (
            lambda c: c["services"][0].update(threads=-2),
            r"services\[0\]\.threads: must be an integer in \[0, 4294967295\]",
        ),
        (lambda c: c["services"][0].update(threads=4097), r"services\[0\]\.threads: must be at most 4096, got 4097"),
        (lambda c: c["services"][0].update(changes=[[5.0, 10.0], [1.0, 20.0]]), r"changes\[1\]\.time_s"),
        (lambda c: c["platform"].update(ways=0), r"platform\.ways: must be in \[1, 64\]"),
        (lambda c: c["platform"].pop("smt_gain"), r"platform\.smt_gain: missing"),
        (lambda c: c.update(mode="offline"), r"mode: unknown value 'offline'; allowed: online, fresh"),
        (lambda c: c.update(latency_window_s=0.01), r"latency_window_s: must be at least dt_s"),
        (lambda c: c.update(services=[]), r"services: needs at least one service"),
    ],
)
def test_bad_configs_are_refused_naming_the_field(mutate, message):
    cfg = h.sim_config([h.service("moses", rps=100)])
    mutate(cfg)
    with pytest.raises(ValueError, match=message):
        check_colo_config(cfg)
    with pytest.raises(ValueError, match=message):
        ColoSim(cfg)


def test_bad_allocations_are_refused_and_change_nothing():
    sim = workload_sim()
    sim.set_allocation(0, 30, 15)
    sim.step(25)  # img-dnn launched at 2 s, xapian pending until 4 s
    before = (sim.cores.copy(), sim.ways.copy())
    cases = [
        (lambda: sim.set_allocation(1, 7, 1), "cores: allocations hold 37 cores in total, the platform has 36"),
        (lambda: sim.set_allocation(1, 1, 6), "ways: allocations hold 21 LLC ways"),
        (lambda: sim.set_allocation(0, 37, 1), r"service 0 \(moses\)\.cores: must be at most the platform's 36"),
        (lambda: sim.set_allocation(2, 1, 1), r"service 2 \(xapian\): not running \(pending\)"),
        (lambda: sim.set_allocation(0, -1, 1), "cores: must be >= 0, got -1"),
        (lambda: sim.set_allocation(3, 1, 1), r"service: must be in \[0, 2\], got 3"),
        (lambda: sim.set_allocation(0, 1, 1, freq_mhz=3000), r"freq_mhz: must be in \[1200, 2300\], got 3000"),
        (lambda: sim.set_allocation(0, 1, 1, mba=0.5), "mba: must be 1 on a platform without MBA"),
        (lambda: sim.set_allocations([1, 1], [1, 1]), r"cores: must be integers of shape \(3,\)"),
        (lambda: sim.set_allocations([1, 1, 1], [1, 0, 0]), r"service 2 \(xapian\): not running"),
        (lambda: sim.set_group(0, [0], 1, 1), "sharing: share groups need sharing: true"),
        (lambda: sim.steady_state([30, 10, 0], [1, 0, 0], [100, 100, 0]), "cores: allocations hold 40"),
        (lambda: sim.step(-1), "ticks: must be >= 0"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
    assert sim.cores.tolist() == before[0].tolist() and sim.ways.tolist() == before[1].tolist()


def test_mba_caps_a_service_on_a_platform_with_mba():
    sim = ColoSim(h.sim_config([h.service("moses", rps=2000)], platform="silver_4114", noise=h.QUIET))
    sim.set_allocation(0, 16, 8)
    sim.step(10)
    free = sim.counters[0, C["MBL"]]
    sim.set_allocation(0, 16, 8, mba=0.1)
    sim.step(10)
    assert sim.counters[0, C["MBL"]] <= 0.1 * 115.2e3 * (1 + 1e-9)  # MB/s
    assert sim.counters[0, C["MBL"]] < free


@pytest.mark.parametrize("platform", list(h.CATALOG["platforms"]))
def test_every_service_runs_on_every_platform(platform):
    """All 11 services at 30% load, an even split of the server: finite counters, resources conserved."""
    services = [h.service(name, pct=30) for name in h.CATALOG["services"]]
    sim = ColoSim(h.sim_config(services, platform=platform, noise=h.QUIET))
    n = len(services)
    cores = np.full(n, sim.idle_cores // n)
    ways = np.full(n, sim.idle_ways // n)
    sim.set_allocations(cores, ways)
    sim.step(30)
    assert np.all(np.isfinite(sim.counters))
    assert sim.cores.sum() + sim.idle_cores == h.cc.platform_config(h.CATALOG, platform)["logical_cores"]
    assert np.all(sim.counters[:, C["Throughput"]] > 0)


def test_non_integer_allocations_are_refused():
    sim = workload_sim()
    with pytest.raises(ValueError, match=r"cores\[0\]: must be an integer >= 0, got 2.5"):
        sim.set_allocations(np.array([2.5, 0, 0]), np.array([1, 0, 0]))
    with pytest.raises(ValueError, match="cores, ways: must be integers >= 0"):
        sim.steady_state_batch(np.array([[1.5, 0, 0]]), np.array([[1, 0, 0]]), np.array([100.0, 0, 0]))
