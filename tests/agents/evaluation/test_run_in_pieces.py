"""Long runs return to Python every PIECE arrivals (so Ctrl-C stops them) with the same numbers as one call."""

from __future__ import annotations

import pytest

from dcgym.agents import progress
from dcgym.agents.evaluation import evaluate
from dcgym.agents.policies import rack as rack_policies

CASES = {
    "rack heuristic": ("mm16", "po2", 0.9, 6000),
    "rack policy file": ("malcolm_homog_exp", "zoo:malcolm_homog_exp", 0.9, 6000),
    "flow heuristic": ("single_link_websearch", None, 0.5, 600),
    "lb heuristic": ("lb_sim", "sed", 0.7, 600),
}


def rows(scenario, policy, load, tasks):
    doc = evaluate(scenario, policy, [load], tasks=tasks, workers=0, progress=False)
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in doc["results"]]


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_run_in_small_pieces_gives_the_same_rows_bit_for_bit(monkeypatch, case):
    whole = rows(*case)
    monkeypatch.setattr(progress, "PIECE", 97)  # far smaller than the runs: dozens of engine calls each
    monkeypatch.setattr(rack_policies, "PIECE", 97)
    assert rows(*case) == whole


def test_pieces_add_up_to_the_arrivals_asked_for():
    calls = []
    progress.run_in_pieces(calls.append, 2 * progress.PIECE + 3)
    assert calls == [progress.PIECE, progress.PIECE, 3]


def test_pieces_of_simulated_time_end_at_the_time_asked_for():
    bounds = []
    progress.run_until_in_pieces(bounds.append, 10.0, 10.0 + 2.5 * progress.PIECE, per_arrival=1.0)
    assert bounds == [10.0 + progress.PIECE, 10.0 + 2 * progress.PIECE, 10.0 + 2.5 * progress.PIECE]
