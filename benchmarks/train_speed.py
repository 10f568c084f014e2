"""Training speed: env steps per second of RLlib training against the bare environment, and where the time goes.

Each experiment (default: the learning systems and generic baselines of
docs/training.md's speed table) is built as ``train.py`` builds it (its
experiment file, evaluation off, the experiment's resources), trained for
``--steps`` env steps after ``--warmup`` iterations (and on until the
learner has been called: replay buffers fill first), and its environment is
then stepped bare under a random policy for the same number of steps. One
*env step* is RLlib's: one step of the environment, every agent of a
multi-agent environment acting once (``num_env_steps_sampled_lifetime``;
agent steps are that times the agents that acted).

Printed per experiment (wall time, this process; with 0 remote env runners,
the default, everything runs here):

  train/s   env steps sampled per second of training (sampling and learning)
  bare/s    env steps per second of the same environment class, stepped
            with pre-drawn random actions (reset when an episode ends)
  ratio     train/s over bare/s
  floor/s   env steps per second if the learner's updates were the only cost
            (steps over the time inside the learner group's update calls)
  env, connectors, module, episodes, learner, other
            the share of training wall time inside the environment's step
            and reset, the env-to-module and module-to-env connector
            pipelines, the module's forward passes on the env runner, the
            rest of the env runner's sample() (episode bookkeeping,
            callbacks, metrics), the learner group's calls, and the rest of
            each iteration (replay buffers, weight sync, result metrics)

The machine's load average is printed with the results: other processes
slow every number here.

    python benchmarks/train_speed.py                        # the table's experiments, a few minutes
    python benchmarks/train_speed.py --quick                # smoke run
    python benchmarks/train_speed.py --experiment ppo_rack --steps 4000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import ray

from dcgym.agents import ray_session
from dcgym.agents.training import Trainer
from dcgym.agents.training.experiment import load_experiment, parse_assignments

EXPERIMENTS = ("ppo_rack", "malcolm_hetero_exp", "osml_dqn_single", "auto_websearch", "distr_lb_sim")
"""The rows of docs/training.md's speed table."""

MAX_WARMUP = 100
"""Iterations at most before timing while the learner has not been called yet."""

PARTS = ("env", "connectors", "module", "episodes", "learner", "other")


@dataclass
class Row:
    experiment: str
    algorithm: str
    steps: int
    train_per_s: float
    bare_per_s: float
    floor_per_s: float
    shares: dict[str, float]

    @property
    def ratio(self) -> float:
        return self.train_per_s / self.bare_per_s


class _Clock:
    """Cumulative wall time per part; ``wrap`` times a callable, and nested parts are not counted twice."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[str] = []

    def wrap(self, part: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            self._stack.append(part)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._stack.pop()
                elapsed = time.perf_counter() - start
                self.seconds[part] += elapsed
                if self._stack:  # the enclosing part keeps only its own time
                    self.seconds[self._stack[-1]] -= elapsed

        return timed


class _Timed:
    """A connector pipeline with its calls timed; everything else passed through."""

    def __init__(self, inner: Any, call: Callable) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_call", call)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)


def _instrument(algo, clock: _Clock) -> None:
    """Time the local env runner's parts and the learner group's calls of ``algo`` (0 remote env runners)."""
    runner = algo.env_runner_group.local_env_runner
    runner.sample = clock.wrap("episodes", runner.sample)
    env = runner.env
    env.step = clock.wrap("env", env.step)
    env.reset = clock.wrap("env", env.reset)
    for name in ("_env_to_module", "_module_to_env"):
        pipeline = getattr(runner, name)
        setattr(runner, name, _Timed(pipeline, clock.wrap("connectors", pipeline)))
    for name in ("forward_exploration", "forward_inference"):  # an instance attribute hides the method
        setattr(runner.module, name, clock.wrap("module", getattr(runner.module, name)))
    if getattr(runner, "bulk_refusal", "") is None:  # BulkEnvRunner's own batch, forward pass and action draws
        runner._act = clock.wrap("module", runner._act)
    group = algo.learner_group
    group.update = clock.wrap("learner", group.update)
    group.foreach_learner = clock.wrap("learner", group.foreach_learner)


def _timesteps(algo) -> int:
    """RLlib's env steps sampled so far."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    return int(algo.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0) or 0)


def _bare_env_rate(algo, steps: int, seed: int) -> float:
    """Env steps per second of a fresh copy of the env runner's environment under pre-drawn random actions."""
    import gymnasium

    config = algo.config
    env = (
        config.env(config.env_config)
        if isinstance(config.env, type)
        else gymnasium.make(config.env, **config.env_config)
    )
    env = getattr(env, "unwrapped", env)
    multi = hasattr(env, "possible_agents") or hasattr(env, "get_agent_ids")
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    if multi:
        agents = sorted(obs)
        spaces = {
            a: env.action_space[a] if isinstance(env.action_space, dict) else env.get_action_space(a) for a in agents
        }
        for space in spaces.values():
            space.seed(int(rng.integers(2**31)))
        pool = [{a: spaces[a].sample() for a in agents} for _ in range(64)]
    else:
        env.action_space.seed(seed)
        pool = [env.action_space.sample() for _ in range(64)]
    start = time.perf_counter()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(pool[i % len(pool)])
        done = (terminated["__all__"] or truncated["__all__"]) if multi else (terminated or truncated)
        if done:
            env.reset()
    return steps / (time.perf_counter() - start)


def measure(name: str, steps: int, warmup: int, out: str, overrides: dict[str, Any]) -> Row:
    experiment = load_experiment(name, {"evaluation.enabled": False} | overrides)
    trainer = Trainer(experiment, os.path.join(out, name), progress=False, command=["train_speed"])
    trainer.setup()
    try:
        algo = trainer.algo
        clock = _Clock()
        _instrument(algo, clock)
        for _ in range(warmup):
            algo.train()
        for _ in range(MAX_WARMUP):  # off-policy learners: on until the replay buffer lets learning start
            if clock.seconds["learner"] > 0:
                break
            algo.train()
        clock.seconds.clear()
        first = _timesteps(algo)
        start = time.perf_counter()
        while _timesteps(algo) - first < steps:
            algo.train()
        wall = time.perf_counter() - start
        done = int(_timesteps(algo) - first)
        parts = dict(clock.seconds)
        parts["other"] = wall - sum(parts.values())
        shares = {p: parts.get(p, 0.0) / wall for p in PARTS}
        learner = parts.get("learner", 0.0)
        bare = _bare_env_rate(algo, max(steps, 2000), experiment.seed)
    finally:
        trainer.close()
    return Row(name, experiment.algorithm, done, done / wall, bare, done / learner if learner else float("inf"), shares)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experiment", action="append", help="an experiment name or file (repeatable)")
    parser.add_argument("--steps", type=int, default=3000, help="env steps timed per experiment")
    parser.add_argument("--warmup", type=int, default=2, help="iterations before timing")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few steps, one warm-up iteration")
    parser.add_argument("--set", action="append", dest="set_", help="override an experiment field: key=value")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    steps, warmup = (300, 1) if args.quick else (args.steps, args.warmup)
    if not ray.is_initialized():  # a caller's running cluster (a test's) is used as it is
        ray_session.init(2)
    rows = []
    with tempfile.TemporaryDirectory(prefix="train_speed_") as out:
        for name in args.experiment or EXPERIMENTS:
            rows.append(measure(name, steps, warmup, out, parse_assignments(args.set_)))
            _print(rows[-1:], header=len(rows) == 1)
    print(
        f"\nmachine: {platform.machine()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; "
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) | {"ratio": r.ratio} for r in rows], f, indent=2)
    return 0


def _print(rows: list[Row], header: bool) -> None:
    if header:
        print(
            f"{'experiment':<22}{'algorithm':<12}{'steps':>7}{'train/s':>9}{'bare/s':>9}{'ratio':>8}{'floor/s':>9}  "
            + " ".join(f"{p:>10}" for p in PARTS)
        )
    for r in rows:
        print(
            f"{r.experiment:<22}{r.algorithm:<12}{r.steps:>7}{r.train_per_s:>9.0f}{r.bare_per_s:>9.0f}"
            f"{'1/' + format(1 / r.ratio, '.0f'):>8}{r.floor_per_s:>9.0f}  "
            + " ".join(f"{r.shares[p]:>10.0%}" for p in PARTS),
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
