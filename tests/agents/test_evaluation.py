"""The evaluation library: measured throughput, null statistics, writers."""

from __future__ import annotations

import json

import pytest

from dcgym.agents.evaluation import evaluate, plot_p99_vs_load, to_json, write_results
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import load_scenario


def test_throughput_matches_offered_load_when_the_rack_is_stable():
    doc = evaluate("mm16", ["random"], [0.5], tasks=40_000, progress=False)
    (r,) = doc["results"]
    assert r["offered_ktps"] == pytest.approx(8000.0)  # 0.5 x 16 workers / 1 us
    assert r["throughput_ktps"] == pytest.approx(r["offered_ktps"], rel=0.02)
    assert r["tasks_warmup"] == 4000 and r["tasks_dropped"] == 0


def test_statistics_without_samples_are_null_and_still_written(tmp_path):
    # One 1 ms task measured, stopped ~125 us later: nothing measured has completed.
    scenario = load_scenario("mm16", {"service": {"dist": "det", "value_us": 1000}, "warmup_fraction": 0.5})
    doc = evaluate(scenario, ["random"], [0.5], tasks=2, progress=False)
    (r,) = doc["results"]
    assert r["tasks_completed"] == 0
    assert set(r["latency_us"].values()) == {None}
    assert json.loads(to_json(doc)) == doc
    write_results(doc, tmp_path)
    assert plot_p99_vs_load(doc, tmp_path / "p99.png").stat().st_size > 0
    assert "latency_us_p99" in (tmp_path / "results.csv").read_text()


def test_policies_default_to_the_scenarios_and_loads_to_its_grid():
    doc = evaluate("mm1", tasks=100, progress=False)
    assert [(r["policy"], r["load"]) for r in doc["results"]] == [("random", x) for x in (0.5, 0.7, 0.8, 0.9, 0.95)]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"tasks": 0}, "tasks"), ({"loads": []}, "loads"), ({"loads": [0.5, 11]}, "loads.1"), ({"seed": -1}, "seed"),
     ({"policies": ["jqs"]}, "policy")],
)
def test_bad_arguments_fail_before_any_run(kwargs, field):
    with pytest.raises(InvalidConfigError) as info:
        evaluate("mm1", **{"tasks": 100, "progress": False, **kwargs})
    assert info.value.field == field
