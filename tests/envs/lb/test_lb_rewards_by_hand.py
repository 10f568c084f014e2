"""The fairness rewards of lb_v0 (App. B, E.2.1) against numbers worked out by hand, and lb_central_v0's team reward."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dcgym.envs import lb_v0

# Load estimates of four servers: mean 3, deviations -2, -1, 0, 3, so Var = (4 + 1 + 0 + 9) / 4 = 3.5.
X = np.array([1.0, 2.0, 3.0, 6.0])

BY_HAND = {
    "vbf": -3.5,
    "log_vbf": -math.log(3.5 + 1e-6),
    "vbf_log_vbf": -3.5 - math.log(3.5 + 1e-6),
    "pbf": (1 * 2 * 3 * 6) / 6,  # prod / max = 6
    "pbf_normalized": (1 / 6) * (2 / 6) * (3 / 6) * (6 / 6),  # = 1 / 36
    "makespan": -6.0,
    "jain": 12.0**2 / (4 * (1 + 4 + 9 + 36)),  # 144 / 200 = 0.72
    "cv": -math.sqrt(3.5) / 3.0,
}


@pytest.mark.parametrize("name", list(BY_HAND))
def test_reward_of_four_servers_is_the_hand_computed_value(name):
    assert lb_v0.REWARDS[name](X) == pytest.approx(BY_HAND[name], rel=1e-12)


def test_hand_values_in_plain_numbers():
    assert BY_HAND["pbf"] == 6.0 and BY_HAND["pbf_normalized"] == pytest.approx(1 / 36)
    assert BY_HAND["jain"] == pytest.approx(0.72) and BY_HAND["cv"] == pytest.approx(-0.6236095644623235)


def test_degenerate_estimates_follow_the_documented_conventions():
    zeros = np.zeros(3)
    assert lb_v0.vbf(zeros) == 0.0 and lb_v0.pbf(zeros) == 0.0 and lb_v0.pbf_normalized(zeros) == 1.0
    assert lb_v0.jain(zeros) == 1.0 and lb_v0.cv(zeros) == 0.0 and lb_v0.makespan(zeros) == 0.0
    assert lb_v0.log_vbf(zeros) == pytest.approx(-math.log(1e-6))


def test_a_change_of_one_lbs_own_vbf_is_the_change_of_the_global_vbf_when_the_others_are_even():
    # App. B.1, Lemma 11: Var(l_i + l_-i) = Var(l_i) + Var(l_-i) + 2 Cov(l_i, l_-i). With the other LBs' load
    # even over the servers (Var = Cov = 0), LB i's change of policy moves the global VBF exactly as its own:
    # here from -0.5 to 0 (l_i from [1, 3, 2, 2] to [2, 2, 2, 2]). The covariance term is what the lemma's
    # step (17) drops; it vanishes only when l_-i is even or uncorrelated with l_i.
    l_i, new_i, other = np.array([1.0, 3.0, 2.0, 2.0]), np.array([2.0, 2.0, 2.0, 2.0]), np.full(4, 5.0)
    own_change = lb_v0.vbf(new_i) - lb_v0.vbf(l_i)
    assert own_change == pytest.approx(0.5)
    assert lb_v0.vbf(new_i + other) - lb_v0.vbf(l_i + other) == pytest.approx(own_change)
    skewed_other = np.array([0.0, 4.0, 1.0, 3.0])  # correlated with l_i: the global change differs
    assert lb_v0.vbf(new_i + skewed_other) - lb_v0.vbf(l_i + skewed_other) != pytest.approx(own_change)
