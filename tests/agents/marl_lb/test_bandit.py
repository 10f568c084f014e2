"""The group-pattern bandit: successive halving's rule on known payoffs, and its pick on lb_large."""

from __future__ import annotations

import numpy as np
import pytest

from dcgym.agents.marl_lb.bandit import group_bandit, group_patterns, successive_halving


def test_successive_halving_keeps_the_better_half_on_shared_seeds_until_one_arm_is_left():
    """Arm a pays -(a - 5)^2 plus noise common to every arm on a seed (common random numbers): arm 5 wins, every
    round plays each survivor on the same seeds, the episodes per arm double, the better half survives."""
    calls: list[tuple[int, int]] = []

    def play(arm: int, seed: int) -> float:
        calls.append((arm, seed))
        return -((arm - 5) ** 2) + float(np.random.default_rng(seed).normal(0, 100))

    result = successive_halving(play, arms=9, first_episodes=2, seed=3)
    assert result.best == 5
    assert [len(r) for r in result.rounds] == [9, 5, 3, 2]
    assert result.episodes == 9 * 2 + 5 * 4 + 3 * 8 + 2 * 16 == len(calls)
    assert set(result.rounds[1]) == {3, 4, 5, 6, 7}  # the five closest to 5, whatever the shared noise
    seeds_by_arm: dict[int, list[int]] = {}
    for arm, seed in calls[: 9 * 2]:
        seeds_by_arm.setdefault(arm, []).append(seed)
    assert all(s == [3_000_000, 3_000_001] for s in seeds_by_arm.values())
    assert not {s for _, s in calls[:18]} & {s for _, s in calls[18:]}  # later rounds draw new workloads
    assert successive_halving(play, arms=1).episodes == 0
    with pytest.raises(ValueError, match="arms >= 1"):
        successive_halving(play, arms=0)


def test_group_patterns_are_every_level_per_group():
    assert group_patterns(2) == [(a, b) for a in range(3) for b in range(3)]
    assert len(group_patterns(3, 2)) == 8


def test_on_lb_large_the_bandit_finds_the_pattern_that_beats_sed():
    """lb_large (10 x 2-CPU and 10 x 4-CPU servers): the fct reward's bandit picks weights 1 / 1.5, the pattern the
    exhaustive search of benchmarks/multilb_static_weights.py ceiling finds 16% below SED's mean FCT, even from one
    episode per pattern in the first round: 9 + 5 x 2 + 3 x 4 + 2 x 8 = 47 episodes of 60 s."""
    weights, result = group_bandit("lb_large", reward="fct", first_episodes=1, seed=1)
    assert weights == (1.0, 1.5)
    assert result.episodes == 47
