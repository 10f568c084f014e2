"""against_best: a policy against the best other policy at each load, paired by seed (what train.py prints after
its table)."""

from __future__ import annotations

import pytest

from dcgym.agents.evaluation.document import against_best
from dcgym.agents.evaluation.stats import mean_ci


def document(p99: dict[tuple[str, float], list[float]], censored: set[tuple[str, float]] = frozenset()) -> dict:
    """A rack results document with the given per-seed p99s (seeds 1..k) and censored cells."""
    results, summary = [], []
    for (policy, load), values in p99.items():
        for seed, v in enumerate(values, 1):
            results.append({"policy": policy, "load": load, "seed": seed, "latency_us": {"p99": v}})
        cell = {"policy": policy, "load": load, "latency_us": {"p99": mean_ci(values)}}
        summary.append(cell | {"censored": (policy, load) in censored})
    return {"family": "rack", "seeds": [1, 2, 3], "results": results, "summary": summary}


def test_verdicts_are_paired_over_seeds_and_skip_censored_rivals():
    doc = document(
        {
            ("ours", 0.5): [100.0, 110.0, 120.0],
            ("a", 0.5): [101.0, 111.0, 121.0],  # 1 above ours in every seed: ours is better (zero-width interval)
            ("b", 0.5): [130.0, 90.0, 200.0],
            ("ours", 0.9): [200.0, 260.0, 230.0],
            ("a", 0.9): [205.0, 250.0, 240.0],  # differences -5, +10, -10: a tie
            ("b", 0.9): [150.0, 150.0, 150.0],  # lower, but censored
            ("ours", 0.95): [400.0, 400.0, 400.0],
            ("a", 0.95): [300.0, 300.0, 300.0],
        },
        censored={("b", 0.9), ("ours", 0.95)},
    )
    rows = {r["load"]: r for r in against_best(doc, "ours")}
    assert rows[0.5]["best"] == "a" and rows[0.5]["difference"]["mean"] == pytest.approx(-1.0)
    assert rows[0.5]["verdict"] == "better"
    assert rows[0.9]["best"] == "a" and rows[0.9]["verdict"] == "tie"  # b is censored there: not the bar
    assert rows[0.9]["difference"]["mean"] == pytest.approx(-5 / 3) and rows[0.9]["difference"]["ci95"] > 5
    assert rows[0.95]["verdict"] == "censored" and rows[0.95]["value"] == 400.0
    worse = against_best(document({("ours", 0.5): [102.0, 112.0, 122.0], ("a", 0.5): [101.0, 111.0, 121.0]}), "ours")
    assert [r["verdict"] for r in worse] == ["worse"]
