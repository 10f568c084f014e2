"""The evaluation library: measured throughput, seeds and confidence intervals, serial and Ray runs, writers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dcgym.agents.evaluation import evaluate, parse_seeds, plot_p99_vs_load, to_json, write_plots, write_results
from dcgym.agents.evaluation.stats import CDF_PROBABILITIES, mean_ci, merged_quantiles, nonzero_histogram
from dcgym.cpp_core import RackSim
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.scenario import load_scenario

from . import golden

SERIAL = {"progress": False, "workers": 0}


def without_wall_time(doc):
    doc = json.loads(to_json(doc))
    for r in doc["results"]:
        r.pop("wall_s")
    return doc


def test_throughput_matches_offered_load_when_the_rack_is_stable():
    doc = evaluate("mm16", ["random"], [0.5], tasks=40_000, **SERIAL)
    (r,) = doc["results"]
    assert r["offered_ktps"] == pytest.approx(8000.0)  # 0.5 x 16 workers / 1 us
    assert r["throughput_ktps"] == pytest.approx(r["offered_ktps"], rel=0.02)
    assert r["tasks_warmup"] == 4000 and r["tasks_dropped"] == 0


def test_statistics_without_samples_are_null_and_still_written(tmp_path):
    # One 1 ms task measured, stopped ~125 us later: nothing measured has completed.
    scenario = load_scenario("mm16", {"service": {"dist": "det", "value_us": 1000}, "warmup_fraction": 0.5})
    doc = evaluate(scenario, ["random"], [0.5], tasks=2, **SERIAL)
    (r,) = doc["results"]
    assert r["tasks_completed"] == 0
    assert set(r["latency_us"].values()) == {None}
    assert set(doc["summary"][0]["latency_cdf_us"]) == {None}
    assert json.loads(to_json(doc)) == doc
    write_results(doc, tmp_path)
    assert plot_p99_vs_load(doc, tmp_path / "p99.png").stat().st_size > 0
    assert all(path.stat().st_size > 0 for path in write_plots(doc, tmp_path).values())
    assert "latency_us_p99" in (tmp_path / "results.csv").read_text()


def test_policies_default_to_the_scenarios_and_loads_to_its_grid():
    doc = evaluate("mm1", tasks=100, **SERIAL)
    assert [(r["policy"], r["load"]) for r in doc["results"]] == [("random", x) for x in (0.5, 0.7, 0.8, 0.9, 0.95)]


def test_runs_are_ordered_by_policy_load_and_seed_and_summarized_per_policy_and_load():
    doc = evaluate("mm16", ["random", "po2"], [0.5, 0.9], tasks=2000, seeds=[3, 1, 2], **SERIAL)
    assert (doc["seed"], doc["seeds"]) == (None, [3, 1, 2])
    assert [(r["policy"], r["load"], r["seed"]) for r in doc["results"]] == [
        (p, x, s) for p in ("random", "po2") for x in (0.5, 0.9) for s in (3, 1, 2)
    ]
    assert [(s["policy"], s["load"], s["runs"]) for s in doc["summary"]] == [
        (p, x, 3) for p in ("random", "po2") for x in (0.5, 0.9)
    ]
    first = doc["summary"][0]
    p99s = [r["latency_us"]["p99"] for r in doc["results"][:3]]
    assert first["latency_us"]["p99"] == mean_ci(p99s)
    assert first["latency_us"]["p99"]["mean"] == pytest.approx(sum(p99s) / 3, rel=1e-12)
    assert first["latency_us"]["p99"]["ci95"] > 0
    assert len(first["latency_cdf_us"]) == len(doc["cdf_probabilities"]) == len(CDF_PROBABILITIES)


def test_one_seed_has_no_confidence_interval():
    doc = evaluate("mm16", ["random"], [0.5], tasks=2000, seed=4, **SERIAL)
    assert (doc["seed"], doc["seeds"]) == (4, [4])
    assert doc["summary"][0]["latency_us"]["p99"]["ci95"] is None
    assert doc["summary"][0]["throughput_ktps"]["n"] == 1


def test_a_seed_gives_the_same_numbers_alone_or_among_others():
    alone = without_wall_time(evaluate("mm16", ["po2"], [0.9], tasks=3000, seed=2, **SERIAL))
    among = without_wall_time(evaluate("mm16", ["po2"], [0.9], tasks=3000, seeds=[1, 2], **SERIAL))
    assert alone["results"][0] == among["results"][1]


def test_serial_and_ray_evaluations_give_identical_numbers(ray_session):
    kwargs = {"policies": ["random", "jsq"], "loads": [0.5, 0.9], "tasks": 3000, "seeds": [1, 2], "progress": False}
    serial = evaluate("malcolm_homog_exp", workers=0, **kwargs)
    parallel = evaluate("malcolm_homog_exp", workers=2, **kwargs)
    assert ray_session.is_initialized()  # the session's cluster was used, not shut down
    assert without_wall_time(serial) == without_wall_time(parallel)


def test_malcolm_baselines_migrate_and_counts_exclude_the_warmup():
    doc = evaluate("malcolm_homog_exp", ["random", "po2"], [0.9], tasks=5000, **SERIAL)
    rand, po2 = doc["results"]
    assert (rand["migrations"], rand["steals"]) == (0, 0)  # RAND accepts every task (Malcolm §7.1)
    assert 0 < po2["migrations"] <= 4500  # at most one per measured arrival
    assert po2["steals"] == 0  # no tables set: nobody steals


def test_sampling_adds_a_timeline_per_policy_and_load_for_the_first_seed(tmp_path):
    doc = evaluate("malcolm_adapt_shift", ["random", "po2"], [0.9], tasks=3000, seeds=[5, 6], **SERIAL)
    timelines = doc["timelines"]
    assert [(t["policy"], t["load"], t["seed"]) for t in timelines] == [("random", 0.9, 5), ("po2", 0.9, 5)]
    groups = timelines[0]["groups"]
    assert [(g["label"], g["nodes"]) for g in groups] == [
        ("4 x 8 workers", [0, 3]),
        ("4 x 6 workers", [4, 7]),
        ("4 x 4 workers", [8, 11]),
    ]
    times = timelines[0]["times_us"]
    assert times[:3] == [1000.0, 2000.0, 3000.0]
    assert all(len(g["outstanding_per_worker"]) == len(times) for g in groups)
    assert (tmp_path / "load_over_time.png") in write_plots(doc, tmp_path).values()
    assert "timelines" not in evaluate("malcolm_adapt_shift", ["po2"], [0.9], tasks=300, sample_period_us=0, **SERIAL)
    assert "timelines" in evaluate("mm16", ["po2"], [0.9], tasks=300, sample_period_us=5, **SERIAL)


def test_mean_ci_is_the_student_t_half_width():
    result = mean_ci([1.0, 2.0, 3.0, None])
    assert result["n"] == 3 and result["mean"] == pytest.approx(2.0)
    assert result["ci95"] == pytest.approx(4.302652729911275 * 1.0 / math.sqrt(3), rel=1e-9)  # t(0.975, 2) s / sqrt(n)
    assert mean_ci([]) == {"mean": None, "ci95": None, "n": 0}
    assert mean_ci([5.0, 5.0])["ci95"] == 0


def test_merged_histogram_quantiles_agree_with_the_engines():
    sim = RackSim(load_scenario("mm16").engine_config(0.9, seed=1))
    sim.run_tasks(20_000)
    hist = nonzero_histogram(*sim.latency_histogram())
    latency = sim.results()["latency_us"]
    p50, p99 = merged_quantiles([hist], [0.5, 0.99])
    assert (p50, p99) == pytest.approx((latency["p50"], latency["p99"]), rel=1e-12)
    doubled = merged_quantiles([hist, hist], [0.5, 0.99])  # the same tasks twice: the same quantiles
    assert doubled == [p50, p99]
    assert int(hist["counts"].sum()) == latency["count"]
    assert np.all(hist["lower"] < hist["upper"])


@pytest.mark.parametrize(
    ("text", "seeds"), [("5", [1, 2, 3, 4, 5]), ("1,2,7", [1, 2, 7]), ("0,", [0]), (" 3 ", [1, 2, 3])]
)
def test_parse_seeds(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["0", "-2", "abc", "1.5", "", ","])
def test_parse_seeds_rejects_bad_text(text):
    with pytest.raises(InvalidConfigError) as info:
        parse_seeds(text)
    assert info.value.field == "seeds"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"tasks": 0}, "tasks"),
        ({"loads": []}, "loads"),
        ({"loads": [0.5, 11]}, "loads.1"),
        ({"seed": -1}, "seed"),
        ({"policies": ["jqs"]}, "policy"),
        ({"seeds": []}, "seeds"),
        ({"seeds": [1, 1]}, "seeds"),
        ({"seeds": [1, -1]}, "seeds.1"),
        ({"seed": 1, "seeds": [2]}, "seeds"),
        ({"workers": -1}, "workers"),
        ({"sample_period_us": -1}, "sample_period_us"),
        ({"policies": ["table"]}, "dispatch.policy"),
        ({"policies": ["rr", "rr"]}, "policy"),
        ({"loads": [0.5, 0.5]}, "loads"),
    ],
)
def test_bad_arguments_fail_before_any_run(kwargs, field):
    with pytest.raises(InvalidConfigError) as info:
        evaluate("mm1", **{"tasks": 100, **SERIAL, **kwargs})
    assert info.value.field == field


def test_an_lb_scenario_refuses_rack_policies():
    """Multi-LB scenarios run LB policies only: a rack dispatcher is refused, naming the policy."""
    with pytest.raises(InvalidConfigError) as info:
        evaluate("lb_sim", policies=["po2"], tasks=100, **SERIAL)
    assert info.value.field.startswith("policy")


def test_the_results_page_shows_every_familys_row_schema():
    from dcgym.agents.evaluation.schema import markdown

    page = (Path(__file__).resolve().parents[3] / "docs" / "results.md").read_text(encoding="utf-8")
    assert markdown() in page, "docs/results.md is stale: run python benchmarks/results_schema.py"


@pytest.mark.parametrize(
    ("scenario", "policies", "tasks"), [("mm16", ["po2", "random"], 3000), ("lb_sim", ["sed", "ecmp"], 300)]
)
def test_documents_validate_against_their_familys_row_model(scenario, policies, tasks):
    from dcgym.agents.evaluation import family_of

    doc = evaluate(scenario, policies, [0.8], tasks=tasks, seeds=[1, 2], workers=0, progress=False)
    family = family_of(doc["family"])
    assert doc["family"] == load_scenario(scenario).kind and doc[family.work] == tasks
    for row in doc["results"]:
        family.row_model.model_validate(row)  # every field present and typed, no field of another family
    assert {s["policy"] for s in doc["summary"]} == set(policies)
    assert all(s[family.cdf_field] == sorted(s[family.cdf_field]) for s in doc["summary"])


def test_rack_rows_are_bit_identical_to_those_before_the_family_layout():
    """The rows of four rack scenarios, recorded with the evaluation as it was before the evaluation served every
    family (golden_rack.json), come back to the last bit: the layout moved code, not numbers."""
    want = json.loads(golden.path("rack").read_text())["rows"]
    got = golden.rows("rack")
    assert len(got) == len(want)
    for row, expected in zip(got, want):
        assert {k: row[k] for k in expected} == expected


@pytest.mark.parametrize("family", [f for f in golden.CASES if f != "rack"])
def test_golden_rows_are_bit_identical(family):
    """Heuristics and zoo policy files of every family, recorded before the agents layering (golden.py): every
    field of every row but the wall time comes back to the last bit."""
    want = json.loads(golden.path(family).read_text())["rows"]
    got = golden.rows(family)
    assert [(r["scenario"], r["policy"]) for r in got] == [(r["scenario"], r["policy"]) for r in want]
    for row, expected in zip(got, want):
        assert row == expected, (row["scenario"], row["policy"], row.get("load"), row.get("seed"))


@pytest.mark.parametrize(
    "low,high,labels",
    [
        (400.0, 4090.0, ["500", "1,000", "2,000"]),  # one decade: 1, 2, 5 labels, plain numbers
        (0.02, 50.0, ["0.1", "1", "10"]),  # 3.4 decades (a multi-LB FCT CDF): one label a decade
    ],
)
def test_log_axes_have_plain_labels_that_do_not_crowd(low, high, labels):
    from matplotlib.figure import Figure

    from dcgym.agents.evaluation.plots import value_axis

    ax = Figure(figsize=(4, 3)).subplots()
    ax.plot([low, high], [0, 1])
    value_axis(ax, [low, high], axis="x")
    ax.set_xlim(low, high)
    shown = [t.get_text() for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high]
    assert all(label in shown for label in labels), shown
    assert len(shown) <= 7 and not any("\\times" in s or "e+" in s for s in shown), shown
