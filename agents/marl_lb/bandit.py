"""The simplest learner of multi-LB weights: a bandit over fixed group patterns (successive halving).

Every LB applies one fixed pattern, a weight level per server group (the
servers of a group share it), for a whole lb_v0 episode; the pattern's payoff
is the episode return of the LB's reward (mean over LBs). With G groups and
L levels there are L^G arms (9 on two groups). Successive halving (Karnin et
al., 2013) plays every surviving arm the same number of episodes per round
on the same seeds (a paired comparison: common random numbers), keeps the
better half by mean return, and doubles the episodes per arm each round
until one arm is left.

It is the reference for the learners' credit per server group
(``heads: group``): what a learner that only picks one level per group, from
its own reward and no observation, finds within a budget of episodes. On a
scenario whose best fixed pattern beats SED (lb_large), a learner that does
worse than the bandit's pick is losing to its own action space.

```python
result = successive_halving(lambda arm, seed: play(arm, seed), arms=9, first_episodes=2, seed=1)
```
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dcgym.envs import lb_v0

__all__ = ["BanditResult", "group_bandit", "group_patterns", "pattern_return", "sed_weights", "successive_halving"]


@dataclass(frozen=True)
class BanditResult:
    """What successive halving picked, and how: ``best`` (an arm index), ``episodes`` (played in all), and per
    round the surviving arms with their mean payoffs (``rounds``: list of {arm: mean})."""

    best: int
    episodes: int
    rounds: list[dict[int, float]] = field(default_factory=list)


def successive_halving(
    play: Callable[[int, int], float], arms: int, first_episodes: int = 2, seed: int = 0
) -> BanditResult:
    """Successive halving over ``arms`` arms, ``play(arm, seed) -> payoff`` (higher is better).

    Round r plays every surviving arm ``first_episodes * 2^r`` episodes on the
    round's seeds (the same for every arm) and keeps the ceil(half) with the
    highest mean payoff (ties go to the lower arm index), until one is left.
    Episode seeds are ``seed * 1_000_000 + k`` for the k-th episode of the
    run's rounds, so two rounds never replay the same workload.
    """
    if arms < 1 or first_episodes < 1:
        raise ValueError(f"successive halving needs arms >= 1 and first_episodes >= 1, got {arms}, {first_episodes}")
    alive, rounds, played, k = list(range(arms)), [], 0, 0
    n = first_episodes
    while len(alive) > 1:
        seeds = [seed * 1_000_000 + k + i for i in range(n)]
        k += n
        means = {a: float(np.mean([play(a, s) for s in seeds])) for a in alive}
        played += n * len(alive)
        rounds.append(means)
        order = sorted(alive, key=lambda a: (-means[a], a))
        alive = sorted(order[: math.ceil(len(alive) / 2)])
        n *= 2
    return BanditResult(alive[0], played, rounds)


def group_patterns(num_groups: int, num_levels: int = len(lb_v0.WEIGHT_LEVELS)) -> list[tuple[int, ...]]:
    """Every pattern of one weight-level index per server group, in lexicographic order (arm i is the i-th)."""
    return list(itertools.product(range(num_levels), repeat=num_groups))


def pattern_return(env: Any, levels: np.ndarray, seed: int) -> float:
    """One lb_v0 episode with every LB holding per-server weight levels ``levels``: the mean over LBs of the
    episode's return."""
    env.reset(seed=seed)
    total = 0.0
    while env.agents:
        _, rewards, _, _, _ = env.step(dict.fromkeys(env.agents, levels))
        total += float(np.mean(list(rewards.values())))
    return total


def group_bandit(
    scenario: Any,
    reward: str = "fct",
    first_episodes: int = 2,
    seed: int = 1,
    env_args: Mapping[str, Any] | None = None,
) -> tuple[tuple[float, ...], BanditResult]:
    """Successive halving over the group patterns of ``scenario`` (a name, path or LbScenario; lb_v0 with SED
    dispatch, ``reward`` and ``env_args``): the picked pattern as weights per group, and the run."""
    env = lb_v0.parallel_env(scenario=scenario, reward=reward, dispatch="sed", **dict(env_args or {}))
    patterns = group_patterns(len(env.scenario.servers))

    def play(arm: int, episode_seed: int) -> float:
        return pattern_return(env, np.asarray(patterns[arm])[env.server_groups], episode_seed)

    result = successive_halving(play, len(patterns), first_episodes, seed)
    return tuple(float(lb_v0.WEIGHT_LEVELS[i]) for i in patterns[result.best]), result


def sed_weights(weights: tuple[float, ...]) -> str:
    """The engine policy that holds ``weights`` (one per server group): ``sed:weights=W1;W2;...``."""
    return "sed:weights=" + ";".join(f"{w:g}" for w in weights)
