"""Episode seeds: one rule for every environment, single or batched.

``reset(seed=s)`` restarts the environment's generator at ``s`` and runs the
engine with ``s`` itself, so an episode's tasks are those of the engine run
directly with that seed (common random numbers with the heuristics);
``reset()`` draws the engine seed from the generator the last seeded reset
created (Gymnasium's ``np_random`` rule). A batched environment resets copy k
with ``s + k``, as Gymnasium's vector environments do, or with the k-th seed
of a list. A seed that is not an integer in [0, 2^64) is refused with an
:class:`~dcgym.envs.error.InvalidConfigError` naming ``seed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils import seeding

from dcgym.envs.error import InvalidConfigError
from dcgym.envs.schema import Seed
from dcgym.envs.validation import describe, validate

__all__ = [
    "GameEpisodes",
    "check_seed",
    "copy_seeds",
    "draw_seed",
    "episode_generator",
    "episode_seed",
    "gymnasium_seed",
]

_ALLOWED = describe(Seed)


def check_seed(seed: Any, field: str = "seed") -> int | None:
    """``seed`` as a Python int (None stays None); InvalidConfigError naming ``field`` unless in [0, 2^64)."""
    if seed is None:
        return None
    if isinstance(seed, np.integer):
        seed = int(seed)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidConfigError(field, seed, _ALLOWED)
    return validate(Seed, seed, field)


def draw_seed(np_random: np.random.Generator) -> int:
    """The engine seed of an episode reset without a seed: the generator's next draw."""
    return int(np_random.integers(2**63))


def episode_generator(np_random: np.random.Generator | None, seed: int | None) -> np.random.Generator:
    """The generator of a new episode: restarted at a checked ``seed``, or the running one (a new unseeded one if
    there is none yet, as Gymnasium's)."""
    if seed is not None:
        return seeding.np_random(seed)[0]
    return np_random if np_random is not None else seeding.np_random()[0]


def episode_seed(np_random: np.random.Generator | None, seed: Any) -> tuple[np.random.Generator, int]:
    """(generator, engine seed) of a new episode: restarted at ``seed`` and ``seed``, or drawn (module docstring)."""
    seed = check_seed(seed)
    np_random = episode_generator(np_random, seed)
    return np_random, seed if seed is not None else draw_seed(np_random)


def gymnasium_seed(env: gymnasium.Env, seed: Any) -> int:
    """A Gymnasium environment's engine seed for a new episode: ``Env.reset`` restarts its ``np_random`` at a
    checked ``seed`` (the engine seed then) or keeps it running (the engine seed drawn from it)."""
    seed = check_seed(seed)
    gymnasium.Env.reset(env, seed=seed)
    return seed if seed is not None else draw_seed(env.np_random)


class GameEpisodes:
    """What a Gymnasium environment over copy 0 of a game (``RackGame``, ``FlowGame``) does for a new episode."""

    game: Any

    @property
    def engine_seed(self) -> int:
        """The engine seed of the current episode (``seed`` if given to reset, else drawn from np_random)."""
        return int(self.game.engine_seeds[0])

    def _new_episode(self, seed: Any, options: dict[str, Any] | None) -> Any:
        """Rebuild copy 0 by :func:`gymnasium_seed`'s rule (``options["load"]``: this episode's load)."""
        return self.game.reset(0, gymnasium_seed(self, seed), (options or {}).get("load"))


def copy_seeds(seed: Any, copies: int) -> list[int | None]:
    """The seed of each of ``copies`` copies: ``seed + k``, the list given (one per copy), or None each."""
    if seed is None:
        return [None] * copies
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        first = check_seed(seed)
        return [check_seed(first + k) for k in range(copies)]
    seeds = list(seed) if isinstance(seed, (Sequence, np.ndarray)) and not isinstance(seed, str) else None
    if seeds is None or len(seeds) != copies:
        allowed = f"{_ALLOWED}, or a list of {copies} such seeds (one per copy)"
        raise InvalidConfigError("seed", seed if seeds is None else seeds, allowed)
    return [check_seed(s, f"seed.{k}") for k, s in enumerate(seeds)]
