"""Smoke runs of evaluate.py as users run it, with tiny budgets (docs/architecture.md, "evaluate.py")."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULT_FIELDS = {
    "policy",
    "load",
    "seed",
    "throughput_ktps",
    "latency_us",
    "tasks_completed",
    "tasks_dropped",
    "tasks_warmup",
    "migrations",
    "steals",
    "failed_steals",
    "events",
    "sim_time_us",
    "wall_s",
}


def evaluate(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python evaluate.py ARGS`` in a process of its own (the smoke run and one bad input)."""
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def evaluate_here(cli_here):
    """evaluate.py's command line run in this process (tests/conftest.py, ``cli_here``)."""
    return functools.partial(cli_here, "evaluate.py")


def run_json(evaluate, tmp_path: Path, *args: str) -> dict:
    proc = evaluate(
        "--scenario",
        "mm16",
        "--policy",
        "random",
        "--policy",
        "po2",
        "--loads",
        "0.5,0.9",
        "--tasks",
        "3000",
        "--out",
        str(tmp_path),
        "--json",
        "--workers",
        "0",
        *args,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # the whole of stdout is the document


def test_smoke_run_writes_json_csv_and_png(tmp_path):
    proc = evaluate(
        "--scenario",
        "malcolm_homog_exp",
        "--policy",
        "random",
        "--policy",
        "po_d:d=3",
        "--loads",
        "0.5,0.9",
        "--tasks",
        "3000",
        "--workers",
        "0",
        "--out",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "po_d:d=3" in proc.stdout and "migrations" in proc.stdout  # the table
    doc = json.loads((tmp_path / "out/results.json").read_text())
    assert [(r["policy"], r["load"]) for r in doc["results"]] == [
        ("random", 0.5),
        ("random", 0.9),
        ("po_d:d=3", 0.5),
        ("po_d:d=3", 0.9),
    ]
    csv = (tmp_path / "out/results.csv").read_text().splitlines()
    assert len(csv) == 5 and "latency_us_p99" in csv[0]
    summary = (tmp_path / "out/summary.csv").read_text().splitlines()
    assert len(summary) == 5 and "latency_us_p99_ci95" in summary[0]
    for plot in ("p99_vs_load.png", "latency_cdf.png"):
        assert (tmp_path / "out" / plot).read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "out/load_over_time.png").exists()


def test_seeds_give_one_run_each_and_a_confidence_interval(tmp_path, evaluate_here):
    proc = evaluate_here(
        "--scenario",
        "mm16",
        "--policy",
        "jbt:threshold=30",
        "--policy",
        "sed:by=workers",
        "--loads",
        "0.9",
        "--tasks",
        "2000",
        "--seeds",
        "3",
        "--workers",
        "0",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert "3 seeds, mean ± 95% CI" in proc.stdout and "±" in proc.stdout
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["seeds"] == [1, 2, 3]
    assert [(r["policy"], r["seed"]) for r in doc["results"]] == [
        (p, s) for p in ("jbt:threshold=30", "sed:by=workers") for s in (1, 2, 3)
    ]
    assert all(s["latency_us"]["p99"]["ci95"] is not None for s in doc["summary"])


def test_scored_runs_are_aggregated_with_intervals_and_profiles(tmp_path, evaluate_here):
    """Flow on one link: fair is the reference (score 0), the host-link bound the top (1), SRPT the optimum there."""
    proc = evaluate_here(
        "--scenario", "single_link_websearch", "--policy", "fair", "--policy", "srpt", "--policy", "las",
        "--loads", "0.5,0.8", "--seeds", "2", "--tasks", "2000", "--workers", "0", "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "scores over 2 task(s) (scenario x load) and their seeds, 95% CI" in proc.stdout
    doc = json.loads((tmp_path / "scores.json").read_text())
    table = doc["aggregate"]
    assert [(table[p]["tasks"], table[p]["runs"]) for p in ("fair", "srpt", "las")] == [(2, 4)] * 3
    assert table["fair"]["iqm"] == 0 and table["fair"]["optimality_gap"] == 1
    assert 0.9 < table["srpt"]["iqm"] <= 1 and table["las"]["iqm"] < table["srpt"]["iqm"]
    for p in ("srpt", "las"):
        low, high = table[p]["iqm_ci95"]
        assert low <= table[p]["iqm"] <= high
    assert len(doc["runs"]) == 12 and {r["scenario"] for r in doc["runs"]} == {"single_link_websearch"}
    assert (tmp_path / "performance_profiles.png").read_bytes().startswith(b"\x89PNG")
    # Without the family's reference (rack: wcmp) nothing is scored, and no scores are written.
    proc = evaluate_here("--scenario", "mm16", "--policy", "po2", "--tasks", "1000", "--out", str(tmp_path / "rack"))
    assert proc.returncode == 0 and "scores over" not in proc.stdout
    assert not (tmp_path / "rack/scores.json").exists()


def test_timeline_option_samples_loads_and_plots_them(tmp_path, evaluate_here):
    proc = evaluate_here(
        "--scenario",
        "malcolm_homog_exp",
        "--policy",
        "po2",
        "--loads",
        "0.9",
        "--tasks",
        "3000",
        "--seed",
        "2",
        "--timeline",
        "50",
        "--workers",
        "0",
        "--out",
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    (timeline,) = json.loads((tmp_path / "results.json").read_text())["timelines"]
    assert (timeline["seed"], timeline["times_us"][:2]) == (2, [50.0, 100.0])
    assert (tmp_path / "load_over_time.png").read_bytes().startswith(b"\x89PNG")


def test_json_output_has_the_design_fields(tmp_path, evaluate_here):
    doc = run_json(evaluate_here, tmp_path)
    assert {"scenario", "seed", "tasks", "dcgym_version", "results"} <= doc.keys()
    assert (doc["scenario"], doc["seed"], doc["tasks"]) == ("mm16", 1, 3000)
    assert len(doc["results"]) == 4
    for r in doc["results"]:
        assert RESULT_FIELDS <= r.keys()
        assert set(r["latency_us"]) == {"mean", "p50", "p90", "p99", "p999"}
        assert r["tasks_warmup"] == 300
        assert r["tasks_completed"] <= 2700
        assert (r["migrations"], r["steals"]) == (0, 0)


def test_same_seed_gives_identical_results_except_wall_time(tmp_path, evaluate_here):
    first, second = run_json(evaluate_here, tmp_path / "a"), run_json(evaluate_here, tmp_path / "b")
    other = run_json(evaluate_here, tmp_path / "c", "--seed", "2")
    for doc in (first, second, other):
        for r in doc["results"]:
            r.pop("wall_s")
    assert first == second
    assert first != other


BAD_INPUTS = {
    "unknown scenario": ["--scenario", "malcom_homog_exp"],
    "missing scenario file": ["--scenario", "no/such.yaml"],
    "unknown policy": ["--policy", "jqs"],
    "bad policy parameter": ["--policy", "po_d:d=0"],
    "huge load": ["--loads", "1.5e9"],
    "non-numeric load": ["--loads", "abc"],
    "zero tasks": ["--tasks", "0"],
    "non-integer tasks": ["--tasks", "abc"],
    "negative seed": ["--seed", "-1"],
    "seed and seeds": ["--seed", "1", "--seeds", "2"],
    "zero seeds": ["--seeds", "0"],
    "non-numeric seeds": ["--seeds", "a,b"],
    "repeated seeds": ["--seeds", "1,1"],
    "negative workers": ["--workers", "-1"],
    "negative timeline": ["--timeline", "-5"],
    "policy for another entry": ["--policy", "table"],
    "bad new policy parameter": ["--policy", "jbsq:bound=0"],
    "rack policy on a multi-LB scenario": ["--scenario", "lb_sim", "--policy", "po2"],
    "unknown option": ["--bogus"],
    "invalid yaml": ["--scenario", "broken.yaml"],
    "bad field in yaml": ["--scenario", "badfield.yaml"],
}


def check_bad_input(evaluate, tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "broken.yaml").write_text("kind: rack\nnodes: [\n  - {count: 1\n")
    (tmp_path / "badfield.yaml").write_text(
        "kind: rack\ndescription: x\nnodes: [{count: 2, workers: -1}]\nservice: {dist: exp, mean_us: 1}\n"
    )
    proc = evaluate("--scenario", "mm16", "--tasks", "100", *args, "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert not (tmp_path / "out/results.json").exists()  # no results written


@pytest.mark.parametrize("args", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_prints_one_error_line_and_exits_2(tmp_path, evaluate_here, args):
    """In-process (the checks run before any simulation); the test below runs the command itself."""
    check_bad_input(evaluate_here, tmp_path, args)


@pytest.mark.parametrize("name", ["bad field in yaml", "unknown option"])
def test_bad_input_from_the_command_line_is_one_line_and_status_2(tmp_path, name):
    check_bad_input(evaluate, tmp_path, BAD_INPUTS[name])


def test_lb_scenario_runs_lb_heuristics_from_the_cli(tmp_path, evaluate_here):
    """The multi-LB reference point from evaluate.py: SED beats ECMP at load 0.61 (authors: 0.500 vs 1.652 s)."""
    proc = evaluate_here(
        "--scenario",
        "lb_reference",
        "--policy",
        "sed",
        "--policy",
        "ecmp",
        "--loads",
        "0.61",
        "--tasks",
        "20000",
        "--seed",
        "1",
        "--workers",
        "0",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["family"] == "lb" and doc["flows"] == 20000
    mean = {r["policy"]: r["fct_s"]["mean"] for r in doc["results"]}
    assert 0.4 < mean["sed"] < 0.6 and mean["ecmp"] > 2 * mean["sed"]
    cdf = {s["policy"]: s["fct_cdf_s"] for s in doc["summary"]}  # the FCT histogram: a CDF in seconds
    assert all(q is not None for q in cdf["sed"]) and cdf["sed"] == sorted(cdf["sed"])
    assert 0.5 * mean["sed"] < cdf["sed"][doc["cdf_probabilities"].index(0.5)] < 2 * mean["sed"]
