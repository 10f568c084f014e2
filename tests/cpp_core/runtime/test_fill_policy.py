"""The ``fill`` policy kind (docs/policy_format.md, kind 4): round trip through both readers, the C++ runtime against
the numpy reference, zero gains = the ``water_fill`` heuristic, and the loader's refusals."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from dcgym.agents import policy_format as fmt
from dcgym.agents.evaluation.rack import policy_file_jobs
from dcgym.agents.malcolm.fill import fill_tables, water_fill_policy, water_fill_table
from dcgym.agents.policies.rack import game_engine_config, load_policy_file
from dcgym.cpp_core import FillController, RackSim
from dcgym.cpp_core._engine import RuntimePolicy
from dcgym.envs.scenario import load_scenario

SCENARIO = load_scenario("malcolm_hetero_paper_exp")


def random_policy(
    seed: int = 0, n: int = 4, steal: bool = True, scale: float = 0.5, per_task: bool = False
) -> fmt.FillPolicy:
    rng = np.random.default_rng(seed)
    return fmt.FillPolicy(
        level_scale=1 / 75,
        heartbeat_services=100 / 75,
        horizon=2.0,
        mix=0.1,
        steal=steal,
        capacity=rng.uniform(1, 14, n),
        gains=rng.uniform(-scale, scale, (n, 2 * n + 3, fmt.FILL_FEATURES)),
        settings={"env": "rack_v0"},
        per_task=per_task,
    )


def test_round_trip_in_both_readers():
    policy = random_policy()
    data = fmt.to_bytes(policy)
    back = fmt.from_bytes(data)
    assert isinstance(back, fmt.FillPolicy) and struct.unpack_from("<I", data, 8) == (fmt.FILL_VERSION,)
    np.testing.assert_array_equal(back.gains, policy.gains.astype(np.float32))
    np.testing.assert_array_equal(back.capacity, policy.capacity.astype(np.float32))
    assert (back.steal, back.settings, np.float32(back.mix)) == (True, {"env": "rack_v0"}, np.float32(0.1))
    runtime = RuntimePolicy.from_bytes(data)
    assert (runtime.kind, runtime.num_agents, runtime.num_inputs) == ("fill", 4, 4)
    per_task = fmt.to_bytes(random_policy(per_task=True))  # the oldest version that can say it: 6
    assert struct.unpack_from("<I", per_task, 8) == (fmt.PER_TASK_VERSION,) and fmt.from_bytes(per_task).per_task
    assert not back.per_task and RuntimePolicy.from_bytes(per_task).kind == "fill"


def test_zero_gains_are_water_filling_exactly_and_gains_match_numpy():
    rng = np.random.default_rng(1)
    zero = water_fill_policy(SCENARIO)
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(zero))
    back = fmt.from_bytes(fmt.to_bytes(zero))
    capacity = np.asarray(back.capacity, np.float64)
    np.testing.assert_array_equal(capacity, [14] * 4 + [3] * 10)
    for _ in range(20):
        levels = rng.exponential(3.0, 14) * rng.integers(0, 2, 14)  # some ties at 0
        arrivals = rng.uniform(20, 200)
        node = int(rng.integers(14))
        migration, stealing = runtime.fill_tables(node, levels, arrivals)
        volume = float(np.float32(2.0)) * arrivals
        np.testing.assert_array_equal(migration, water_fill_table(levels, capacity, volume, float(np.float32(0.1))))
        np.testing.assert_array_equal(stealing, np.eye(14)[node])  # water_fill without steals
    policy = random_policy(seed=2)
    runtime = RuntimePolicy.from_bytes(fmt.to_bytes(policy))
    back = fmt.from_bytes(fmt.to_bytes(policy))
    for node in range(4):
        levels = rng.exponential(2.0, 4)
        migration, stealing = runtime.fill_tables(node, levels, 60.0)
        m_ref, s_ref = fill_tables(back, node, levels, 60.0)
        np.testing.assert_allclose(migration, m_ref, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(stealing, s_ref)
        assert migration.sum() == pytest.approx(1.0, abs=1e-12) and (migration >= 0).all()


@pytest.mark.parametrize(
    "steal, per_task, metric",
    [
        (False, False, "expected_wait"),
        (True, False, "expected_wait"),
        (True, True, "expected_wait"),
        (True, True, "nominal_wait"),
    ],
)
def test_zero_gains_in_the_engine_run_as_the_water_fill_heuristic(steal, per_task, metric):
    """The FillController of the zero-gain file and the engine's water_fill heuristic, same seed and load: the
    same tasks; the tables differ only by float32 rounding of the file's fields (~1e-8), so the runs agree to
    within 1% (in practice exactly). With per_task both recompute the arriving node's table at every task, by two
    separate paths (the controller's arrival refresh, the heuristic's own). With nominal_wait the file's levels and
    the heuristic's (estimate=nominal) use the nominal mean service time."""
    data = fmt.to_bytes(water_fill_policy(SCENARIO, steal=steal, per_task=per_task, metric=metric))
    config = game_engine_config(SCENARIO, 0.94, 3, warmup=2000, load_metric=metric)
    controller = FillController(config, data, 100.0)
    filled = controller.run(150)  # 15 ms: about 16,000 tasks
    rule = f"water_fill:steal={str(steal).lower()}" + (",per_task=true" if per_task else "")
    rule += ",estimate=nominal" if metric == "nominal_wait" else ""
    heuristic = RackSim(SCENARIO.engine_config(0.94, 3, warmup_tasks=2000, policy=rule))
    heuristic.run_until(controller.sim.now_us)
    expected = heuristic.results()
    assert filled["tasks_arrived"] == expected["tasks_arrived"]
    for key in ("tasks_completed", "steals", "migrations"):
        assert filled[key] == pytest.approx(expected[key], rel=0.01, abs=5), key
    assert filled["latency_us"]["p99"] == pytest.approx(expected["latency_us"]["p99"], rel=0.01)
    assert (filled["steals"] > 0) == steal
    migration, stealing = controller.tables
    np.testing.assert_allclose(migration.sum(axis=1), 1.0, atol=1e-12)


def patch(data: bytes, offset: int, form: str, value) -> bytes:
    out = bytearray(data)
    struct.pack_into("<" + form, out, offset, value)
    struct.pack_into("<I", out, len(out) - 4, __import__("zlib").crc32(bytes(out[:-4])))
    return bytes(out)


def test_fill_fields_are_each_refused_by_name():
    data = fmt.to_bytes(random_policy(n=3))
    body = 32 + 4 + len(b"env=rack_v0\n")  # the header, the settings section
    short = data[:-8] + data[-4:]  # the last gain cut off
    cases = {
        "version 3": (patch(data, 8, "I", 3), r"header.kind: got 4; expected 1 .. 3 .* in a version-3 file"),
        "num_nodes": (patch(data, body, "I", 0), r"fill.num_nodes: got 0; expected 1 .. 4096"),
        "agents": (patch(data, body, "I", 2), r"header.num_agents: got 3; expected 2 \(fill.num_nodes"),
        "level_scale": (patch(data, body + 4, "f", 0.0), r"fill.level_scale: got 0; expected a finite number > 0"),
        "horizon": (patch(data, body + 12, "f", float("inf")), r"fill.horizon: got inf; expected a finite number"),
        "mix": (patch(data, body + 16, "f", 1.5), r"fill.mix: got 1.5; expected a number in \[0, 1\]"),
        "rules": (
            patch(data, body + 20, "I", 2),
            r"fill.rules: got 2; expected 0 or 1 \(the steal rule\) in a version-4",
        ),
        "rules v6": (patch(patch(data, 8, "I", 6), body + 20, "I", 4), r"fill.rules: got 4; expected 0 .. 3 \(bit 0"),
        "capacity": (patch(data, body + 28, "f", -1.0), r"fill.capacity\[1\]: got -1; expected a number in \(0, "),
        "gains": (patch(data, body + 36 + 4 * 13, "f", float("nan")), r"node\[0\].gains\[3\]\[1\]: got nan"),
        "short gains": (patch(short, 24, "Q", len(short) - 36), r"header.body_size: got \d+; expected \d+ for 3 nodes"),
    }
    for name, (bad, message) in cases.items():
        with pytest.raises(ValueError) as info:
            RuntimePolicy.from_bytes(bad)
        assert re.match(message, str(info.value)), (name, str(info.value))
        if name != "short gains":  # the Python reader refuses them too (its own wording)
            with pytest.raises(ValueError):
                fmt.from_bytes(bad)


def test_a_fill_file_is_evaluated_by_path_in_the_engine(tmp_path):
    """evaluate.py's path for a policy file (load, check, run in the engine): the zero-gain file's p99 is
    water_fill's on the same tasks (to 1%; the tables differ by the float32 rounding of the file's fields)."""
    path = fmt.write_policy(water_fill_policy(SCENARIO, steal=True), tmp_path / "wf.dcpol")
    file = load_policy_file(str(path))
    (job,) = policy_file_jobs(file, SCENARIO, [0.94], [1], 20_000, 2_000)
    row = job.run()["result"]
    heuristic = RackSim(SCENARIO.engine_config(0.94, 1, warmup_tasks=2_000, policy="water_fill:steal=true"))
    heuristic.run_until(row["sim_time_us"])
    expected = heuristic.results()
    assert row["policy"] == "wf (file)" and row["tasks_dropped"] == expected["tasks_dropped"] == 0
    assert row["latency_us"]["p99"] == pytest.approx(expected["latency_us"]["p99"], rel=0.01)
