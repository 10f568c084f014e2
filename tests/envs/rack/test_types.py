"""Task types in scenario files (RackSched §3.6): schema, checks, what reaches the engine, per-type results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dcgym.agents.evaluation import evaluate
from dcgym.cpp_core import RackSim, check_rack_config
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[3]
BIMODAL = "racksched_multitype_bimodal50"  # 8 nodes; types short (det 50) and long (det 500)
ONE_TYPE = {
    "types": [{"name": "only", "share": 1, "service": {"dist": "exp", "mean_us": 50}, "slo_us": 500}],
    "intra_node.queueing": "fifo",
    "policy_defaults": {},
}
SPLIT = {  # type a on nodes 0-3, type b on nodes 4-7
    "types": [
        {"name": "a", "share": 1, "service": {"dist": "exp", "mean_us": 50}, "slo_us": 500, "nodes": [0, 1, 2, 3]},
        {"name": "b", "share": 3, "service": {"dist": "exp", "mean_us": 50}, "slo_us": 500, "nodes": [4, 5, 6, 7]},
    ],
}


def test_types_reach_the_engine_config_with_service_at_their_mean():
    scenario = load_scenario("racksched_locality")
    config = scenario.engine_config(0.5, seed=1)
    assert config["types"] == [
        {
            "share": 0.25,
            "service": {"dist": "exp", "mean_us": 50.0},
            "slo_us": 500.0,
            "priority": 0,
            "nodes": [0, 1, 2, 3],
        },
        {"share": 0.75, "service": {"dist": "exp", "mean_us": 50.0}, "slo_us": 500.0, "priority": 0, "nodes": []},
    ]
    assert config["intra_node"] == {"discipline": "ps", "quantum_us": 250.0, "switch_cost_us": 0.0, "queueing": "fifo"}
    assert config["service"] == {"dist": "det", "value_us": 50.0}  # ignored by the engine; the mean task size
    assert scenario.type_names == ["local", "any"]
    trimodal = load_scenario("racksched_multitype_trimodal")
    assert trimodal.mean_service_us == pytest.approx((50 + 500 + 5000) / 3, rel=1e-12)
    assert trimodal.engine_config(0.5, seed=1)["intra_node"]["queueing"] == "per_type"
    assert trimodal.dispatch.engine_dict()["per_type"] is True  # policy_defaults: per-type loads at the switch
    assert "types" not in load_scenario("mm16").engine_config(0.5, seed=1)


def test_load_is_a_fraction_of_capacity_over_the_types_mean():
    sim = RackSim(load_scenario(BIMODAL).engine_config(0.5, seed=1))
    sim.run_tasks(10)
    assert sim.results()["arrival_rate_per_us"] == pytest.approx(0.5 * 56 / 275, rel=1e-12)  # 56 workers, E = 275


def test_the_testbed_files_that_lacked_per_type_queues_have_them():
    for name in ("racksched_testbed_hetero_bimodal50", "racksched_testbed_hetero_trimodal"):
        scenario = load_scenario(name)
        assert scenario.service is None and len(scenario.types) >= 2
        assert scenario.intra_node.queueing == "per_type" and scenario.dispatch.params.per_type


BAD_TYPES = [
    (BIMODAL, {"service": {"dist": "exp", "mean_us": 50}}, "service", "nothing when types is given"),
    ("mm16", {"service": None}, "service", "got nothing; allowed: a service-time distribution, or types"),
    (BIMODAL, {"types": []}, "types", "a non-empty list"),
    (BIMODAL, {"types.0.share": 0}, "types.0.share", "a finite number > 0"),
    (BIMODAL, {"types.0.slo_us": -1}, "types.0.slo_us", "a finite number > 0"),
    (BIMODAL, {"types.0.priority": 1.5}, "types.0.priority", "an integer"),
    (BIMODAL, {"types.0.name": "a b"}, "types.0.name", "letters, digits, _ and -"),
    (BIMODAL, {"types.1.name": "short"}, "types.1.name", "a name no other type has"),
    (BIMODAL, {"types.0.slo": 5}, "types.0.slo", 'did you mean "slo_us"?'),
    (BIMODAL, {"types.0.service": {"dist": "expo"}}, "types.0.service.dist", 'did you mean "exp"?'),
    (BIMODAL, {"types.0.nodes": [0, 8]}, "types.0.nodes.1", "a node id in [0, 7]"),
    (BIMODAL, {"types.0.nodes": []}, "types.0.nodes", "a non-empty list"),
    (
        BIMODAL,
        {"types.0.nodes": [0, 1], "dynamics": [{"at_us": 5, "kind": "remove", "nodes": [1, 0]}]},
        "dynamics.0.nodes",
        "leaves task type short an active node it may run on",
    ),
    (
        BIMODAL,
        {
            "types.0.nodes": [0, 1],
            "dynamics": [
                {"at_us": 1, "kind": "remove", "nodes": [0]},
                {"at_us": 2, "kind": "add", "nodes": [0]},
                {"at_us": 3, "kind": "remove", "nodes": [1]},
                {"at_us": 4, "kind": "remove", "nodes": [0, 5]},
            ],
        },
        "dynamics.3.nodes",
        "leaves task type short an active node",
    ),
    (BIMODAL, {"intra_node.queueing": "lifo"}, "intra_node.queueing", "one of fifo, per_type, priority"),
    (
        BIMODAL,
        {"intra_node": {"discipline": "ps", "queueing": "per_type"}},
        "intra_node.queueing",
        "fifo when quantum_us is 0",
    ),
    (
        BIMODAL,
        {**ONE_TYPE, "intra_node.queueing": "priority"},
        "intra_node.queueing",
        "fifo unless types lists at least two task types",
    ),
    ("mm16", {"intra_node.queueing": "per_type"}, "intra_node.queueing", "this scenario has 0"),
    (BIMODAL, {**ONE_TYPE, "dispatch": "po2:per_type=true"}, "dispatch.per_type", "at least two task types (it has 1)"),
    (BIMODAL, {**ONE_TYPE, "policy_defaults": {"per_type": True}}, "dispatch.per_type", "at least two task types"),
    ("mm16", {"dispatch": {"policy": "jsq", "per_type": True}}, "dispatch.per_type", "(it has 0)"),
    (BIMODAL, {"dispatch": "jsq:metric=queue,per_type=true"}, "dispatch.per_type", "false when metric is queue"),
    (BIMODAL, {"dispatch": "sed:per_type=maybe"}, "dispatch.per_type", "true or false"),
    (
        "racksched_priority",
        {"intra_node": {"discipline": "fcfs", "queueing": "priority"}, "dispatch": "central_fcfs"},
        "dispatch.policy",
        "when the scenario lists task types",
    ),
]


@pytest.mark.parametrize(("base", "overrides", "field", "text"), BAD_TYPES, ids=[f for _, _, f, _ in BAD_TYPES])
def test_bad_type_fields_raise_one_error_naming_the_field(base, overrides, field, text):
    with pytest.raises(InvalidConfigError) as info:
        load_scenario(base, overrides)
    message = str(info.value)
    assert info.value.field == field
    assert message.startswith(f"{field}: got ")
    assert text in message
    assert "\n" not in message and "allowed: " in message


def test_a_policy_that_cannot_run_with_types_is_refused_by_engine_config():
    scenario = load_scenario(BIMODAL, {"intra_node": {"discipline": "fcfs"}})
    with pytest.raises(InvalidConfigError) as info:
        scenario.engine_config(0.5, seed=1, policy="central_fcfs")
    assert info.value.field == "dispatch.policy"
    with pytest.raises(InvalidConfigError) as info:
        scenario.engine_config(0.5, seed=1, policy="jsq:metric=work")  # policy_defaults add per_type
    assert info.value.field == "dispatch.per_type"
    check_rack_config(scenario.engine_config(0.5, seed=1, policy="jsq:metric=work,per_type=false"))


def test_dynamics_that_keep_a_node_for_every_type_are_accepted():
    dynamics = [
        {"at_us": 1, "kind": "remove", "nodes": [0]},
        {"at_us": 2, "kind": "add", "nodes": [0]},
        {"at_us": 3, "kind": "remove", "nodes": [1]},
    ]
    scenario = load_scenario(BIMODAL, {"types.0.nodes": [0, 1], "dynamics": dynamics})
    check_rack_config(scenario.engine_config(0.5, seed=1))


def test_strict_priority_lowers_the_high_priority_tail_at_high_load():
    def p99s(queueing):
        scenario = load_scenario("racksched_priority", {"intra_node.queueing": queueing})
        sim = RackSim(scenario.engine_config(0.98, seed=1, warmup_tasks=10_000))
        sim.run_tasks(100_000)
        high, low = sim.results()["latency_by_class_us"]
        return high["p99"], low["p99"]

    (high, low), (high_fifo, low_fifo) = p99s("priority"), p99s("fifo")
    assert high < 0.9 * high_fifo  # about 239 vs 278 us
    assert high < 0.8 * low  # the low type waits behind it
    assert low_fifo == pytest.approx(high_fifo, rel=0.1)  # one queue: no difference between the types


def test_locality_keeps_each_type_on_its_nodes():
    sim = RackSim(load_scenario(BIMODAL, SPLIT).engine_config(0.8, seed=1))
    sim.run_tasks(40_000)
    r = sim.results()
    completed = r["nodes"]["completed"]
    a, b = r["latency_by_class_us"]
    assert completed[:4].sum() == a["count"] > 0  # nodes 0-3 completed type a only, and all of it
    assert completed[4:].sum() == b["count"] > 0


def test_locality_follows_removed_nodes():
    removal = {"dynamics": [{"at_us": 0, "kind": "remove", "nodes": [4, 5, 6]}]}
    scenario = load_scenario(BIMODAL, {**SPLIT, "types.1.share": 1, **removal})
    sim = RackSim(scenario.engine_config(0.2, seed=1))
    sim.run_tasks(20_000)
    r = sim.results()
    completed = r["nodes"]["completed"]
    assert completed[[4, 5, 6]].tolist() == [0, 0, 0]
    assert completed[7] == r["latency_by_class_us"][1]["count"] > 0  # every b task ran on node 7


def test_per_type_dispatch_reaches_the_engine():
    scenario = load_scenario(BIMODAL)
    results = []
    for per_type in (True, False):
        config = scenario.engine_config(0.9, seed=3, policy=f"po2:per_type={str(per_type).lower()}")
        assert config["dispatch"]["per_type"] is per_type
        sim = RackSim(config)
        sim.run_tasks(20_000)
        results.append(sim.results()["latency_us"]["mean"])
    assert results[0] != results[1]


def test_evaluate_reports_latency_per_type_by_name():
    doc = evaluate(
        "racksched_multitype_trimodal", ["po2", "random"], [0.7], tasks=6000, seeds=[1, 2], workers=0, progress=False
    )
    for row in doc["results"]:
        assert list(row["latency_by_type_us"]) == ["short", "medium", "long"]
        for stats in row["latency_by_type_us"].values():
            assert set(stats) == {"mean", "p50", "p99"} and stats["p99"] >= stats["p50"] > 0
        short, long = row["latency_by_type_us"]["short"], row["latency_by_type_us"]["long"]
        assert short["p50"] < long["p50"] and short["mean"] < row["latency_us"]["mean"] < long["mean"]
    first = doc["summary"][0]
    p99s = [r["latency_by_type_us"]["medium"]["p99"] for r in doc["results"][:2]]
    assert first["latency_by_type_us"]["medium"]["p99"]["mean"] == pytest.approx(sum(p99s) / 2, rel=1e-12)
    assert (
        "latency_by_type_us" not in evaluate("mm16", "po2", [0.5], tasks=500, workers=0, progress=False)["results"][0]
    )


def test_evaluate_with_one_type_reports_it_as_the_overall_latency():
    doc = evaluate(load_scenario(BIMODAL, ONE_TYPE), "po2", [0.5], tasks=3000, workers=0, progress=False)
    (row,) = doc["results"]
    assert row["latency_by_type_us"] == {"only": {k: row["latency_us"][k] for k in ("mean", "p50", "p99")}}


def test_evaluate_cli_prints_and_writes_per_type_latency(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "evaluate.py"),
            "--scenario",
            BIMODAL,
            "--policy",
            "po2",
            "--loads",
            "0.8",
            "--tasks",
            "4000",
            "--workers",
            "0",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "p99 short (µs)" in proc.stdout and "p99 long (µs)" in proc.stdout
    header = (tmp_path / "results.csv").read_text().splitlines()[0].split(",")
    assert {"latency_by_type_us_short_p99", "latency_by_type_us_long_mean"} <= set(header)
    assert "latency_by_type_us_long_p99_ci95" in (tmp_path / "summary.csv").read_text().splitlines()[0]
    (row,) = json.loads((tmp_path / "results.json").read_text())["results"]
    assert set(row["latency_by_type_us"]) == {"short", "long"}
