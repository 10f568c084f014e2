"""The RLlib config wiring every learning system shares: environment, resources, seed, module mapping, settings.

Builders (``build(experiment, env_config) -> AlgorithmConfig``) start from :func:`common` and add their own
settings; :func:`policies` maps agents to one shared module or one each; :func:`training` hands a dict of
settings to an ``AlgorithmConfig.training`` with an unknown key named; :func:`require_continuous` refuses an
environment whose agents do not all act in a Box.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium.spaces import Box

from dcgym.agents.rl.envs import RLLIB_ENV_IDS, agent_ids, make_env, matrix_observations
from dcgym.envs.error import InvalidConfigError, did_you_mean

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    from dcgym.agents.rl.spec import TrainingRun

__all__ = [
    "SHARED_MODULE",
    "common",
    "one_agent_environment",
    "own_module",
    "policies",
    "require_continuous",
    "set_provided",
    "shared_module",
    "training",
]

SHARED_MODULE = "shared"
"""The module id of a network shared by every agent."""


def shared_module(agent_id, *args, **kwargs) -> str:
    """Policy mapping: every agent to the one shared module."""
    return SHARED_MODULE


def own_module(agent_id, *args, **kwargs) -> str:
    """Policy mapping: each agent to its own module, named like the agent."""
    return agent_id


def common(config: AlgorithmConfig, experiment: TrainingRun, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Environment, resources and seed, the same for every algorithm."""
    res = experiment.resources
    config.environment(RLLIB_ENV_IDS[experiment.env], env_config=env_config)
    config.env_runners(num_env_runners=res.num_env_runners or 0, num_envs_per_env_runner=res.num_envs_per_env_runner)
    if matrix_observations(experiment.env, env_config):
        config.env_runners(env_to_module_connector=_flatten_observations)
    config.learners(num_learners=res.num_learners)
    config.debugging(seed=experiment.seed)
    config.callbacks(on_algorithm_init=_seed_replay_buffer)
    config.reporting(min_time_s_per_iteration=0)  # an iteration is a number of steps, never of seconds (SAC: 1 s)
    return config


def one_agent_environment(config: AlgorithmConfig, env_id: str, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Train on the one-agent form ``env_id`` (``dcgym/FlowSrla-v0``): its copies on an env runner
    (``num_envs_per_env_runner``) step together in the engine, one call per step, through the id's batched
    environment (its Gymnasium ``vector_entry_point``) where it has one, Gymnasium's sync vector env otherwise.
    Copy k follows the trajectory of the single environment seeded with seed + k, as the sync vector env's
    copies do: the same episodes bit for bit (tests/agents/training/test_vectorized_sampling.py)."""
    import gymnasium

    config.environment(env_id, env_config=env_config)
    batched = gymnasium.spec(env_id).vector_entry_point is not None
    config.env_runners(gym_env_vectorize_mode="vector_entry_point" if batched else "sync")
    return config


def _flatten_observations(env, spaces=None, device=None):
    """Matrix observations (lb_v0's (N, 12)) flattened: RLlib's default networks take flat vectors."""
    from ray.rllib.connectors.env_to_module import FlattenObservations  # Ray: called in the training processes

    return FlattenObservations(multi_agent=True)


def _seed_replay_buffer(algorithm: Any, **_: Any) -> None:
    """Seed the replay buffer's sampler from the experiment's seed.

    RLlib's episode replay buffers draw their samples from ``np.random.default_rng(None)``, which
    ``debugging(seed=...)`` does not reach: two runs of the same seed trained on different batches.
    """
    buffer = getattr(algorithm, "local_replay_buffer", None)
    if buffer is not None and hasattr(buffer, "rng"):
        buffer.rng = np.random.default_rng(algorithm.config.seed)


def policies(config: AlgorithmConfig, experiment: TrainingRun, env_config: dict[str, Any], sharing: str) -> None:
    """One module shared by every agent (``sharing == "shared"``) or one per agent, named like it."""
    agents = agent_ids(experiment.env, env_config)
    if sharing == "shared":
        config.multi_agent(policies={SHARED_MODULE}, policy_mapping_fn=shared_module)
    else:
        config.multi_agent(policies=set(agents), policy_mapping_fn=own_module)


def training(config: AlgorithmConfig, hyperparameters: Mapping[str, Any]) -> None:
    """``config.training(**hyperparameters)``, an unknown key or a value of the wrong type named as
    ``hyperparameters.<key>``."""
    functions = [vars(cls)["training"] for cls in type(config).__mro__ if "training" in vars(cls)]
    parameters: dict[str, Any] = {}
    for fn in functions:  # a subclass's training(**kwargs) passes the rest on to its bases'
        parameters |= dict(inspect.signature(fn).parameters)
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            break
    parameters = {k: p for k, p in parameters.items() if p.kind is not p.VAR_KEYWORD and k != "self"}
    if parameters:
        for key, value in hyperparameters.items():
            if key not in parameters:
                raise InvalidConfigError(
                    key,
                    value,
                    f"one of the settings of {type(config).__name__}.training",
                    suggestion=did_you_mean(key, list(parameters)),
                ).under("hyperparameters")
    try:
        check_types(functions, hyperparameters, f"{type(config).__name__}.training")
    except InvalidConfigError as exc:
        raise exc.under("hyperparameters") from None
    config.training(**hyperparameters)


def set_provided(config: Any, given: Mapping[str, Any], lists: Sequence[str] = ()) -> None:
    """What an ``AlgorithmConfig.training`` override received, onto ``config``: ``setattr`` of every value that is
    not RLlib's ``NotProvided``, the keys in ``lists`` as lists."""
    from ray.rllib.algorithms.algorithm_config import NotProvided

    for key, value in given.items():
        if value is not NotProvided:
            setattr(config, key, list(value) if key in lists else value)


def check_types(functions: Sequence[Any], values: Mapping[str, Any], where: str) -> None:
    """InvalidConfigError naming ``key`` for a value that is not of the type the first of ``functions`` that
    annotates ``key`` declares (so "abc" for a learning rate is refused before Ray starts,
    not deep inside RLlib); a key no function annotates with a type pydantic checks is left to RLlib."""
    from pydantic import TypeAdapter, ValidationError

    hints: dict[str, Any] = {}
    for fn in reversed(functions):  # the subclass's annotation wins
        hints |= _annotations(fn)
    for key, value in values.items():
        if key not in hints:
            continue
        try:
            adapter = TypeAdapter(hints[key])
        except Exception:  # noqa: BLE001 - a type pydantic cannot check (a class, a callable): RLlib's
            continue
        try:
            adapter.validate_python(value)
        except ValidationError:
            hint = hints[key]
            shown = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
            raise InvalidConfigError(key, value, f"a value of type {shown} (a setting of {where})") from None


def _annotations(fn: Any) -> dict[str, Any]:
    """The parameters' annotations of ``fn`` that resolve, one by one (RLlib's name classes it imports only for
    type checkers, which would make :func:`typing.get_type_hints` give up on every one)."""
    hints = {}
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        try:
            hints[name] = eval(annotation, fn.__globals__) if isinstance(annotation, str) else annotation  # noqa: S307
        except Exception:  # noqa: BLE001, S112 - a name only type checkers see: RLlib checks that key
            continue
    return hints


def require_continuous(experiment: TrainingRun, env_config: Mapping[str, Any], algorithm: str) -> None:
    """Raise InvalidConfigError naming ``env_args`` unless every agent of the environment acts in a Box."""
    probe = make_env(experiment.env, env_config)
    agent = next((a for a in probe.possible_agents if not isinstance(probe.action_space(a), Box)), None)
    if agent is not None:
        raise InvalidConfigError(
            "env_args",
            dict(env_config),
            f"arguments that give {experiment.env} continuous "
            f"(Box) actions: {algorithm} needs them, and {agent} acts in "
            f"{probe.action_space(agent)} (lb_v0: action_type continuous)",
        )
