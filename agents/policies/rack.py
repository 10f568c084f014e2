"""How each source of a rack policy acts on the rack: a trained policy through rack_v0, a policy file in the engine.

A checkpoint acts through rack_v0, its policy setting every node's tables each heartbeat (:func:`drive_env`); a
``linear_pair`` policy file (Malcolm's exported actor pair, docs/policy_format.md) acts with no Python between
heartbeats: every heartbeat the C++ ``RackController`` (cpp_core/include/dcgym/rack/controller.hpp) observes each
node's view as rack_v0 does, computes the node's migration and stealing distributions from the file's weights
and sets them as the node's tables (fixed policy, no learning; :func:`drive_controller`). Both see the engine
config rack_v0 runs (:func:`game_engine_config`: entry ``nodes``, dispatch ``table``, fresh load information
made periodic at the heartbeat) at the run's load with its seed, so the same seed gives the same tasks as the
heuristics.

What the controller needs and where it comes from (:func:`controller_inputs`):

- from the file: the actor basis, the weights, the critic (unused: the
  policy does not learn), ``max_logit`` and the normaliser
  ``x = clip(load * scale, 0, hi)``. The controller observes rack_v0's
  ``obs = clip(load * obs_scale, 0, obs_clip)`` and multiplies by
  ``load_scale``; ``obs_scale`` is the scenario's (1 / mean service time for
  the ``expected_wait`` metric, else 1), so ``load_scale = scale /
  obs_scale`` and ``obs_clip = hi / load_scale`` (each rounded to 6
  significant digits when that gives back the file's float32 value, as for
  Malcolm's 0.1 and rack_v0's 100).
- from the file's settings (:mod:`.file_settings`): ``heartbeat_us`` and
  ``load_metric``, those it was trained with; a file written before format
  version 3 records none and gets rack_v0's defaults (:data:`DEFAULT_OPTIONS`)
  or the spec's options (``FILE:heartbeat_us=50,load_metric=queue``); an
  option that contradicts the file is refused.

A ``fill`` policy file (water-filling tables adjusted by gains, docs/policy_format.md kind 4) acts the same way
through the C++ ``FillController`` (cpp_core/include/dcgym/rack/fill_controller.hpp): each node's tables from its
belief row times the file's ``level_scale`` and the rack's arrivals per heartbeat; it needs the ``expected_wait``
load metric its levels are measured in.

A checkpoint whose trained nodes make a ``fill`` file (Malcolm's fill actor) runs as that file, in the engine
(:func:`checkpoint_fill_file`): its tables are the file's, so the engine computes them itself every heartbeat.

Only ``linear_pair`` and ``fill`` files run in the engine; ``mlp`` files (PPO, SAC) and
``linear_value`` files are refused with an error saying so (evaluate the run
folder or checkpoint they came from instead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dcgym.agents.policies.checkpoints import TrainedPolicy, find_checkpoint, read_meta, trained_env_config
from dcgym.agents.policies.file_settings import ENV_SETTINGS, resolve, settings_for
from dcgym.agents.policies.zoo import SUFFIX, ZOO_PREFIX, resolve_zoo
from dcgym.agents.policy_format import FillPolicy, LinearPairPolicy, Policy, from_bytes, to_bytes, with_settings
from dcgym.agents.progress import PIECE, drain
from dcgym.agents.rl.apis import PolicyFileAPI
from dcgym.agents.rl.envs import make_env
from dcgym.cpp_core import Distribution, FillController, RackController, RuntimePolicy
from dcgym.envs.error import DcgymError, InvalidConfigError, did_you_mean
from dcgym.envs.policy_spec import parse_options, split_spec
from dcgym.envs.rack.game import WAIT_METRICS, RackEnvConfig
from dcgym.envs.rack.scenario import RackScenario
from dcgym.envs.scenario import apply_overrides
from dcgym.envs.validation import validate

__all__ = [
    "DEFAULT_OPTIONS",
    "PolicyFile",
    "PolicyFileError",
    "checkpoint_fill_file",
    "controller_inputs",
    "drive_controller",
    "drive_env",
    "game_engine_config",
    "load_policy_file",
    "safe_heartbeats",
]

DEFAULT_OPTIONS: dict[str, Any] = ENV_SETTINGS["rack_v0"]
"""The environment settings of a rack policy file that records none: rack_v0's defaults, replaced by the spec's
options."""

_NO_LIMIT = 2**62  # max_steps of an evaluation episode: never truncated
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
    loader and the Python reader and check it is a policy the engine runs (``linear_pair`` or ``fill``).

    Raises PolicyFileError (``<file>: <the loader's message>``) or, for bad
    options or an unknown zoo name, InvalidConfigError naming ``policy``.
    """
    text = str(spec)
    where, option_text = split_spec(text, file=True)
    _parse_options(where, option_text)  # a bad option is refused, naming it, before the file is read
    path = resolve_zoo(where, zoo) if where.startswith(ZOO_PREFIX) else Path(where)
    if not path.is_file():
        raise PolicyFileError(path, "no such policy file" + (" (a folder)" if path.is_dir() else ""))
    try:
        RuntimePolicy.from_file(str(path))  # the reference reader: full validation
        data = path.read_bytes()
        policy = from_bytes(data)
    except (ValueError, RuntimeError, OSError) as exc:
        raise PolicyFileError(path, str(exc)) from None
    # the file's settings, or the options where it has none; first, so a file of another family is named as one
    settings = resolve(text, "rack_v0", policy.settings, option_text)
    if not isinstance(policy, LinearPairPolicy | FillPolicy):
        raise PolicyFileError(
            path,
            f"a {policy.kind} policy; only linear_pair and fill policies (Malcolm's) run "
            "in the engine: evaluate the run folder or checkpoint it was exported from instead",
        )
    checked = validate(RackEnvConfig, settings)
    options = {key: getattr(checked, key) for key in DEFAULT_OPTIONS}
    stem = where.removeprefix(ZOO_PREFIX) if where.startswith(ZOO_PREFIX) else path.name.removesuffix(SUFFIX)
    label = f"{stem}{':' + option_text if option_text else ''} ({'zoo' if where.startswith(ZOO_PREFIX) else 'file'})"
    return PolicyFile(text, path, data, label, **options)


def checkpoint_fill_file(checkpoint: str | Path, label: str) -> PolicyFile | None:
    """The ``fill`` policy file of a checkpoint whose trained nodes make one (Malcolm's fill actor), labelled
    ``label``, with the heartbeat and load metric it was trained with; None for any other checkpoint (told by its
    metadata, before any module is loaded or asked for a file)."""
    experiment = read_meta(find_checkpoint(checkpoint))["experiment"]
    if experiment["algorithm"] != "malcolm" or (experiment.get("hyperparameters") or {}).get("actor") != "fill":
        return None
    trained = TrainedPolicy(checkpoint)
    env_config = trained_env_config(trained.meta)
    env = make_env(trained.env, env_config)
    trained.check_env(env)
    context = trained.policy_file_context(env)
    first = context.agent_modules[0] if context.agents else None
    if not isinstance(first, PolicyFileAPI) or any(type(m) is not type(first) for m in context.agent_modules):
        return None
    policy = first.policy_file(context)
    if not isinstance(policy, FillPolicy):
        return None
    settings = settings_for(trained.env, env_config)
    data = to_bytes(with_settings(policy, settings))
    return PolicyFile(
        str(checkpoint),
        trained.path,
        data,
        label,
        heartbeat_us=float(settings["heartbeat_us"]),
        load_metric=str(settings["load_metric"]),
    )


def _parse_options(where: str, text: str) -> dict[str, Any]:
    """``heartbeat_us=50,load_metric=queue`` -> checked values; InvalidConfigError naming ``<where>: option``.

    The values the file acts with are :func:`~dcgym.agents.policies.file_settings.resolve`'s (the file's settings
    win); this check only refuses a malformed or unknown option before the file is read."""
    allowed = "heartbeat_us=US or load_metric=expected_wait|nominal_wait|queue|outstanding (FILE:key=value,...)"
    given = parse_options(text, lambda item: InvalidConfigError(f"{where}: option", item, allowed), distinct=False)
    options: dict[str, Any] = {}
    for key, value in given.items():
        if key not in DEFAULT_OPTIONS:
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
    heartbeat_us: float = DEFAULT_OPTIONS["heartbeat_us"],
    load_metric: str = DEFAULT_OPTIONS["load_metric"],
) -> dict[str, Any]:
    """The engine config rack_v0 (:class:`~dcgym.envs.rack.game.RackGame`) runs ``scenario`` with, at ``load``
    with ``seed``: dispatch ``table`` with ``load_metric``, entry ``nodes``, fresh load information made
    periodic at the heartbeat; ``warmup`` arrivals excluded from the statistics."""
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
    policy = file.policy
    assert isinstance(policy, LinearPairPolicy | FillPolicy)
    if policy.num_agents != scenario.num_nodes:
        raise PolicyFileError(
            file.path,
            f"a policy for {policy.num_agents} nodes; the scenario "
            f"{scenario.name or ''} has {scenario.num_nodes} (give --scenario the rack "
            "it was trained on)",
        )
    if isinstance(policy, FillPolicy):
        if file.load_metric not in WAIT_METRICS:
            raise PolicyFileError(
                file.path,
                f"load_metric: got {file.load_metric}; expected expected_wait or nominal_wait (a fill policy's "
                "levels are expected waits in mean service times)",
            )
        return {"heartbeat_us": file.heartbeat_us, "warmup_us": 0.0}, {}
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
    obs_scale = 1.0 / Distribution(base["service"]).mean if file.load_metric in WAIT_METRICS else 1.0
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


# ------------------------------------------------------------------------------ acting


def drive_env(
    policy: Any, env_config: dict[str, Any], seed: int, warmup: int, tasks: int, sample_period_us: float | None
) -> tuple[Any, dict[str, Any], float]:
    """Run a trained policy (:class:`~dcgym.agents.policies.checkpoints.TrainedPolicy`) through rack_v0 to ``tasks``
    arrivals, setting every node's tables each heartbeat: the simulation, its results at the first heartbeat by
    which ``warmup`` tasks had arrived, and the time then. The engine excludes the first ``warmup`` tasks from its
    latency statistics, as for the heuristics."""
    env = make_env("rack_v0", {**env_config, "max_steps": _NO_LIMIT, "max_time_us": None, "warmup_us": 0.0})
    policy.check_env(env)
    env.game.engine_config["warmup_tasks"] = warmup
    if sample_period_us is not None:
        env.game.engine_config["sample_period_us"] = sample_period_us
    observations, _ = env.reset(seed=seed)
    sim = env.game.sims[0]
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    at_warmup, measured_from_us = (sim.results(), sim.now_us) if warmup == 0 else (None, 0.0)
    while True:
        r = sim.results()
        if at_warmup is None and r["tasks_arrived"] >= warmup:
            at_warmup, measured_from_us = r, sim.now_us
        if r["tasks_arrived"] >= tasks:
            break
        observations, *_ = env.step(policy.act(observations, spaces))
    return sim, at_warmup, measured_from_us


def drive_controller(
    data: bytes,
    config: dict[str, Any],
    options: dict[str, Any],
    rate_factor: float,
    warmup: int,
    tasks: int,
    drained: bool = False,
) -> tuple[Any, dict[str, Any], float]:
    """Run a policy file's controller in the engine to ``tasks`` arrivals: the simulation, its results when
    ``warmup`` tasks had arrived, and the time then (``rate_factor``: the highest arrival rate over the run / the
    initial one). ``drained`` (a config with ``measure_tasks``): then on, whole heartbeats, until the measured
    tasks have ended (:func:`dcgym.agents.progress.drain`).

    As a checkpoint's run through rack_v0 (:func:`drive_env`), the run stops at the first heartbeat by which
    ``tasks`` tasks have arrived, and the warm-up counts are taken at the first heartbeat by which ``warmup``
    have. The heartbeats in between run in chunks that, by a 10-sigma bound on the Poisson arrivals, cannot cross
    either threshold before their last heartbeat, so no Python runs between most heartbeats.
    """
    policy = from_bytes(data)
    if isinstance(policy, FillPolicy):
        ctl = FillController(config, data, options["heartbeat_us"], options["warmup_us"])
    else:
        ctl = RackController(
            config, options, critic=policy.critic, migration=policy.migration, stealing=policy.stealing
        )
    sim = ctl.sim
    r = sim.results()
    per_heartbeat = r["arrival_rate_per_us"] * rate_factor * options["heartbeat_us"]
    at_warmup, measured_from_us = (r, sim.now_us) if warmup == 0 else (None, 0.0)
    while True:
        if at_warmup is None and r["tasks_arrived"] >= warmup:
            at_warmup, measured_from_us = r, sim.now_us
        if r["tasks_arrived"] >= tasks:
            break
        target = warmup if at_warmup is None else tasks
        piece = max(
            1, int(PIECE / max(per_heartbeat, 1e-9))
        )  # back in Python (and Ctrl-C honoured) every PIECE arrivals
        r = ctl.run(min(safe_heartbeats(target - r["tasks_arrived"], per_heartbeat), piece))
    if drained:
        beat = options["heartbeat_us"]
        drain(
            lambda: sim.now_us,
            lambda t: ctl.run(max(1, math.ceil((t - sim.now_us) / beat))),
            lambda: sim.results()["tasks_measured_pending"],
        )
    return sim, at_warmup, measured_from_us


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
