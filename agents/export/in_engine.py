"""Policy files evaluated inside the engine: Malcolm's exported actor pair driving the rack through RackController.

``evaluate.py --policy FILE`` (or ``--policy zoo:NAME``) evaluates a
``linear_pair`` policy file (docs/policy_format.md) with no Python between
heartbeats: every heartbeat, the C++ ``RackController``
(cpp_core/include/dcgym/rack/controller.hpp) observes each node's
view as rack_v0 does, computes the node's migration and stealing
distributions from the file's weights and sets them as the node's tables
(fixed policy, no learning). The run is the one a trained policy gets
through its environment (:func:`dcgym.agents.training.checkpoints.checkpoint_jobs`):
the environment's engine config (entry ``nodes``, dispatch ``table``, fresh
load information made periodic at the heartbeat) at the job's load with the
job's seed, so the same seed gives the same tasks as the heuristics and the
trained checkpoints; the first ``warmup`` arrivals are excluded from the
statistics, and the same result fields come back
(:func:`dcgym.agents.evaluation.rack.run_record`).

What the controller needs and where it comes from:

- from the file: the actor basis, the weights, the critic (unused: the
  policy does not learn), ``max_logit`` and the normaliser
  ``x = clip(load * scale, 0, hi)``. The controller observes rack_v0's
  ``obs = clip(load * obs_scale, 0, obs_clip)`` and multiplies by
  ``load_scale``; ``obs_scale`` is the scenario's (1 / mean service time for
  the ``expected_wait`` metric, else 1), so ``load_scale = scale /
  obs_scale`` and ``obs_clip = hi / load_scale`` (each rounded to 6
  significant digits when that gives back the file's float32 value, as for
  Malcolm's 0.1 and rack_v0's 100).
- from the spec's options, with rack_v0's defaults (a policy file does not
  store them): ``heartbeat_us`` (100) and ``load_metric``
  (``expected_wait``): ``FILE:heartbeat_us=50,load_metric=queue``.

Only ``linear_pair`` files run in the engine; ``mlp`` files (PPO, SAC) and
``linear_value`` files are refused with an error saying so (evaluate the run
folder or checkpoint they came from instead).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dcgym.agents.export.format import LinearPairPolicy, Policy, from_bytes
from dcgym.agents.export.zoo import SUFFIX, ZOO_PREFIX, is_policy_file_spec, resolve_zoo, split_options
from dcgym.envs.error import DcgymError, InvalidConfigError, did_you_mean

__all__ = [
    "DEFAULT_OPTIONS",
    "PolicyFile",
    "PolicyFileError",
    "PolicyFileJob",
    "controller_inputs",
    "game_engine_config",
    "is_policy_file_spec",
    "load_policy_file",
    "policy_file_jobs",
    "run_policy_file_job",
]

DEFAULT_OPTIONS = {"heartbeat_us": 100.0, "load_metric": "expected_wait"}
"""The environment settings a policy file does not store: rack_v0's defaults, replaced by the spec's options."""

_SIGMAS = 10.0  # a chunk of heartbeats is run at once only if it stays this many sigmas below the next threshold


class PolicyFileError(DcgymError, ValueError):
    """A policy file that cannot be evaluated in the engine: one line, ``<file>: <why>``."""

    def __init__(self, path: str | Path, why: str) -> None:
        why = " ".join(str(why).split())
        super().__init__(why if why.startswith(f"{path}:") else f"{path}: {why}")


@dataclass(frozen=True)
class PolicyFile:
    """A policy file to evaluate: where it is, its bytes (checked by the C++ and Python readers) and settings."""

    spec: str  # as given: a path or zoo:NAME, with any options
    path: Path
    data: bytes
    label: str  # "<stem> (file)", "<name> (zoo)"
    heartbeat_us: float = DEFAULT_OPTIONS["heartbeat_us"]
    load_metric: str = DEFAULT_OPTIONS["load_metric"]

    @property
    def policy(self) -> Policy:
        return from_bytes(self.data)


def load_policy_file(spec: str | Path, zoo: str | Path | None = None) -> PolicyFile:
    """Resolve ``spec`` (a path or ``zoo:NAME``, optional ``:key=value,...``), load the file with the C++
    loader and the Python reader and check it is a policy the engine runs (``linear_pair``).

    Raises PolicyFileError (``<file>: <the loader's message>``) or, for bad
    options or an unknown zoo name, InvalidConfigError naming ``policy``.
    """
    from dcgym.cpp_core._engine import RuntimePolicy

    text = str(spec)
    where, option_text = split_options(text)
    options = _parse_options(where, option_text)
    path = resolve_zoo(where, zoo) if where.startswith(ZOO_PREFIX) else Path(where)
    if not path.is_file():
        raise PolicyFileError(path, "no such policy file" + (" (a folder)" if path.is_dir() else ""))
    try:
        RuntimePolicy.from_file(str(path))  # the reference reader: full validation
        data = path.read_bytes()
        policy = from_bytes(data)
    except (ValueError, RuntimeError, OSError) as exc:
        raise PolicyFileError(path, str(exc)) from None
    if not isinstance(policy, LinearPairPolicy):
        raise PolicyFileError(
            path,
            f"a {policy.kind} policy; only linear_pair policies (Malcolm's actor pairs) run "
            "in the engine: evaluate the run folder or checkpoint it was exported from instead",
        )
    stem = where.removeprefix(ZOO_PREFIX) if where.startswith(ZOO_PREFIX) else path.name.removesuffix(SUFFIX)
    label = f"{stem}{':' + option_text if option_text else ''} ({'zoo' if where.startswith(ZOO_PREFIX) else 'file'})"
    return PolicyFile(text, path, data, label, **options)


def _parse_options(where: str, text: str) -> dict[str, Any]:
    """``heartbeat_us=50,load_metric=queue`` -> checked values; InvalidConfigError naming ``<where>: option``."""
    import yaml

    from dcgym.envs.rack.game import RackEnvConfig
    from dcgym.envs.validation import validate

    allowed = "heartbeat_us=US or load_metric=expected_wait|queue|outstanding (FILE:key=value,...)"
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = (x.strip() for x in part.partition("="))
        if not sep or key not in DEFAULT_OPTIONS:
            raise InvalidConfigError(f"{where}: option", key, allowed, suggestion=did_you_mean(key, DEFAULT_OPTIONS))
        try:
            options[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            options[key] = value
    try:
        checked = validate(RackEnvConfig, options)
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"{where}: option {exc.field}", exc.value, exc.allowed) from None
    return {key: getattr(checked, key) for key in options}


# ------------------------------------------------------------------------------ the controller's inputs


def game_engine_config(
    scenario: Any,
    load: float,
    seed: int,
    warmup: int = 0,
    sample_period_us: float | None = None,
    *,
    heartbeat_us: float = 100.0,
    load_metric: str = "expected_wait",
) -> dict[str, Any]:
    """The engine config rack_v0 (:class:`~dcgym.envs.rack.game.RackGame`) runs ``scenario`` with, at ``load``
    with ``seed``: dispatch ``table`` with ``load_metric``, entry ``nodes``, fresh load information made
    periodic at the heartbeat; ``warmup`` arrivals excluded from the statistics."""
    from dcgym.envs.rack.scenario import RackScenario
    from dcgym.envs.scenario import apply_overrides
    from dcgym.envs.validation import validate

    forced: dict[str, Any] = {"dispatch": "table"}  # as RackGame._game_scenario
    if scenario.entry.kind != "nodes":
        forced["entry"] = {"kind": "nodes"}
    if scenario.load_info.model in ("fresh", "min_only"):
        forced["load_info"] = {"model": "periodic", "period_us": heartbeat_us}
    game = validate(RackScenario, apply_overrides(scenario.model_dump(mode="json"), forced))
    config = game.engine_config(load, seed, warmup_tasks=warmup, sample_period_us=sample_period_us)
    config["dispatch"] = {"policy": "table", "metric": load_metric}
    return config


def controller_inputs(file: PolicyFile, scenario: Any) -> tuple[dict[str, Any], dict[str, np.ndarray | None]]:
    """The RackController options and parameters of ``file`` on ``scenario``; PolicyFileError if they do not fit."""
    from dcgym.cpp_core import Distribution

    policy = file.policy
    assert isinstance(policy, LinearPairPolicy)
    if policy.num_agents != scenario.num_nodes:
        raise PolicyFileError(
            file.path,
            f"a policy for {policy.num_agents} nodes; the scenario "
            f"{scenario.name or ''} has {scenario.num_nodes} (give --scenario the rack "
            "it was trained on)",
        )
    spec = policy.input
    if not (spec.offset == 0 and spec.lo == 0 and spec.scale > 0 and spec.hi > 0):
        raise PolicyFileError(
            file.path,
            f"input: got scale {spec.scale:g}, offset {spec.offset:g}, lo {spec.lo:g}, "
            f"hi {spec.hi:g}; expected scale > 0, offset 0, lo 0, hi > 0: the engine's "
            "controller observes rack_v0's clip(load x scale, 0, hi)",
        )
    if not policy.max_logit > 0:
        raise PolicyFileError(
            file.path,
            "max_logit: got 0 (a plain softmax); expected > 0: the engine's controller "
            "centres and clips the logits as rack_v0 does",
        )
    base = game_engine_config(
        scenario, scenario.loads[0], 1, heartbeat_us=file.heartbeat_us, load_metric=file.load_metric
    )
    obs_scale = 1.0 / Distribution(base["service"]).mean if file.load_metric == "expected_wait" else 1.0
    load_scale = _snap(spec.scale / obs_scale, lambda v: np.float32(obs_scale * v) == np.float32(spec.scale))
    obs_clip = _snap(spec.hi / load_scale, lambda v: np.float32(v * load_scale) == np.float32(spec.hi))
    options: dict[str, Any] = {
        "heartbeat_us": file.heartbeat_us,
        "warmup_us": 0.0,
        "obs_clip": obs_clip,
        "max_logit": policy.max_logit,
        "actor_basis": spec.basis,
        "load_scale": load_scale,
        "learn": False,
    }
    if policy.critic_basis is not None:
        options["critic_basis"] = policy.critic_basis
    params = {"migration": policy.migration, "stealing": policy.stealing, "critic": policy.critic}
    return options, params


def _snap(value: float, reproduces) -> float:
    """``value`` rounded to 6 significant digits if that still reproduces the file's float32, else ``value``."""
    rounded = float(f"{value:.6g}")
    return rounded if reproduces(rounded) else value


# ------------------------------------------------------------------------------ evaluation jobs


@dataclass(frozen=True)
class PolicyFileJob:
    """One in-engine run of a policy file: plain data (the file's bytes included), so it travels to Ray workers."""

    policy: str  # the label in the results
    load: float
    seed: int
    data: bytes
    config: dict[str, Any]  # the engine config (game_engine_config)
    options: dict[str, Any]  # the controller's
    tasks: int
    warmup: int
    groups: tuple[tuple[str, int, int, int], ...] = ()  # as dcgym.agents.evaluation.rack.Job
    timeline: bool = False
    types: tuple[str, ...] = ()
    rate_factor: float = 1.0  # the highest arrival rate over the run (dynamics) / the initial one

    def run(self) -> dict[str, Any]:
        """The run (:func:`run_policy_file_job`)."""
        return run_policy_file_job(self)


def policy_file_jobs(
    file: PolicyFile,
    scenario: Any,
    loads: Sequence[float],
    seeds: Sequence[int],
    tasks: int,
    warmup: int,
    groups: tuple = (),
    sample_period_us: float | None = None,
) -> list[PolicyFileJob]:
    """The runs of one policy file on ``scenario``, one per load and seed; everything checked before any run."""
    from dcgym.cpp_core import _engine, check_rack_config

    options, params = controller_inputs(file, scenario)
    period = scenario.sample_period_us if sample_period_us is None else sample_period_us
    peaks = [c.load for c in scenario.dynamics if c.kind == "load"]
    jobs = []
    for load in loads:
        for s in seeds:
            config = game_engine_config(
                scenario,
                load,
                s,
                warmup,
                sample_period_us,
                heartbeat_us=file.heartbeat_us,
                load_metric=file.load_metric,
            )
            check_rack_config(config)
            jobs.append(
                PolicyFileJob(
                    file.label,
                    load,
                    s,
                    file.data,
                    config,
                    options,
                    tasks,
                    warmup,
                    groups,
                    bool(period and period > 0 and s == seeds[0]),
                    tuple(scenario.type_names),
                    max([1.0, *(p / load for p in peaks)]),
                )
            )
    try:  # the controller's own checks (options, parameter shapes), on the first run's config
        _engine.RackController(jobs[0].config, options, **params)
    except ValueError as exc:
        raise PolicyFileError(file.path, str(exc)) from None
    return jobs


def run_policy_file_job(job: PolicyFileJob) -> dict[str, Any]:
    """Run the policy in the engine: the result row, latency histogram and timeline (``evaluation.run_job``'s).

    As the environment path (``checkpoints._run_rack``), the run stops at the
    first heartbeat by which ``tasks`` tasks have arrived, and the warm-up
    counts are taken at the first heartbeat by which ``warmup`` have. The
    heartbeats in between run in chunks that, by a 10-sigma bound on the
    Poisson arrivals, cannot cross either threshold before their last
    heartbeat, so no Python runs between most heartbeats.
    """
    from dcgym.agents.evaluation.rack import run_record
    from dcgym.cpp_core import _engine

    start = time.perf_counter()
    policy = from_bytes(job.data)
    ctl = _engine.RackController(
        job.config, job.options, critic=policy.critic, migration=policy.migration, stealing=policy.stealing
    )
    sim = ctl.sim
    r = sim.results()
    per_heartbeat = r["arrival_rate_per_us"] * job.rate_factor * job.options["heartbeat_us"]
    at_warmup, measured_from_us = (r, sim.now_us) if job.warmup == 0 else (None, 0.0)
    while True:
        if at_warmup is None and r["tasks_arrived"] >= job.warmup:
            at_warmup, measured_from_us = r, sim.now_us
        if r["tasks_arrived"] >= job.tasks:
            break
        target = job.warmup if at_warmup is None else job.tasks
        r = ctl.run(safe_heartbeats(target - r["tasks_arrived"], per_heartbeat))
    return run_record(job, sim, at_warmup, measured_from_us, time.perf_counter() - start)


def safe_heartbeats(remaining: int, per_heartbeat: float) -> int:
    """Heartbeats that can run at once with fewer than ``remaining`` arrivals but at a 10-sigma chance.

    Arrivals in k heartbeats are Poisson with mean mu = k x per_heartbeat (at
    most); mu + 10 sqrt(mu) + 10 <= remaining makes reaching ``remaining``
    a chance below 1e-20. At least one heartbeat.
    """
    if not per_heartbeat > 0 or remaining <= _SIGMAS:
        return 1
    root = (-_SIGMAS + math.sqrt(_SIGMAS * _SIGMAS - 4 * (_SIGMAS - remaining))) / 2
    return max(1, int(root * root / per_heartbeat))
