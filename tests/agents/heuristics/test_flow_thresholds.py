"""PIAS's threshold model (the flow family's threshold optimizer) and the presets it produced."""

from __future__ import annotations

import math

import pytest

from dcgym.agents.heuristics.flow import BASELINES, model_objective, model_thresholds, packet_grid
from dcgym.cpp_core import flow_workloads
from dcgym.envs.flow.thresholds import THRESHOLD_PRESETS

WS = flow_workloads()["web_search"]


def test_every_engine_policy_is_a_baseline():
    assert set(BASELINES) == {"fair", "qsjf", "qlas", "pias", "las", "srpt", "pathbal"}


@pytest.mark.parametrize("load", [0.3, 0.8])
def test_one_queue_is_one_m_m_1_queue(load):
    # No threshold below the largest size: every packet goes through one M/M/1 queue of unit service rate,
    # whose sojourn time is 1 / (1 - load) packet times (exact; the model's arithmetic only).
    assert model_objective([WS[-1][0]] * 3, WS, load, "mlfq") == pytest.approx(1 / (1 - load), rel=1e-12)


def test_an_overloaded_queue_makes_the_objective_infinite():
    assert math.isinf(model_objective([1e4, 1e5, 1e6], WS, 1.2, "mlfq"))


def test_the_model_beats_every_neighbouring_set_and_gives_the_4_queue_preset():
    grid = packet_grid(4)
    found = model_thresholds(WS, 0.8, 4, "mlfq", grid=grid)
    assert tuple(found) == THRESHOLD_PRESETS["pias_ws"][("mlfq", 4)].packets
    best = model_objective([p * 1460.0 for p in found], WS, 0.8, "mlfq")
    one_queue = model_objective([WS[-1][0]] * 3, WS, 0.8, "mlfq")
    assert best < one_queue  # priorities help in the model too
    index = {int(p): i for i, p in enumerate(grid)}
    for i in range(3):  # a local optimum: moving any one threshold one grid step does not help
        for step in (-1, 1):
            j = index[found[i]] + step
            if 0 <= j < len(grid):
                trial = sorted([*found[:i], int(grid[j]), *found[i + 1 :]])
                assert model_objective([p * 1460.0 for p in trial], WS, 0.8, "mlfq") >= best
