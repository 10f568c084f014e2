"""The algorithms ``train.py`` can run: a name -> builder registry, and the generic RLlib baselines.

A builder turns an experiment (:class:`dcgym.agents.training.experiment.Experiment`)
and the environment's keyword arguments into an RLlib ``AlgorithmConfig``::

    config = ALGORITHMS["ppo"](experiment, experiment.env_config)
    algo = config.build_algo()

``ALGORITHMS`` maps each name to its builder. ``auto_srla`` and ``auto_lrla``
(AuTO's two agents, :mod:`dcgym.agents.auto`) train one agent of flow_v0
each, in its single-agent environment (``dcgym/FlowSrla-v0``,
``dcgym/FlowLrla-v0``), the other agent held by the environment's rules;
their hyperparameters are the settings of ``DDPGConfig.training`` /
``PGConfig.training``. The multi-LB learners
(``distr_lb``, ``centr_lb``, ``qmix_lb``, ``rlb_sac``, ``distr_lb_ppo``, :mod:`dcgym.agents.marl_lb`)
are registered as lazy ``module:attribute`` strings, builder and
hyperparameter schema alike, imported when first used. ``malcolm`` is registered
lazily: its builder imports :mod:`dcgym.agents.malcolm` only when called, so
this module (and ``train.py``) works before or without that package. The
builder uses the package's ``build(experiment, env_config)`` if it has one,
else its ``rack_config(hyperparameters + env + seed)``, else wires its
``MalcolmConfig`` generically (one module per node,
``MalcolmConfig.training(**hyperparameters)``); the experiment's resources
are applied on top.

The generic baselines are RLlib's built-in algorithms with small defaults for
a 2-core machine (0 env runners, 0 learners: a remote runner is slower than none here; docs/training.md):

- ``ppo``: multi-agent PPO, one network shared by every agent or one per agent
  (``policy_sharing``); rack_v0 or lb_v0 (discrete or continuous actions).
- ``osml_dqn``: OSML's Model-C (:mod:`dcgym.agents.osml.model_c`), RLlib's DQN with OSML's network, loss and
  RMSProp, on colo_v0; imported lazily like ``malcolm``.
- ``sac``: multi-agent SAC for continuous actions (lb_v0 with
  ``action_type: continuous``, or rack_v0).

Each has a hyperparameter schema (:class:`PPOHyperparameters`,
:class:`SACHyperparameters`): one documented field per setting, defaults
filled in, unknown keys refused with the field named.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dcgym.agents.training.rllib_envs import env_id, make_rllib_env
from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.families import env_module, known_envs, load_entry_point
from dcgym.envs.validation import validate

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    from dcgym.agents.training.experiment import Experiment

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_AGENTS",
    "CONTINUOUS_FORMS",
    "ALGORITHM_ENVS",
    "HYPERPARAMETERS",
    "RLLIB_ENV_IDS",
    "SHARED_MODULE",
    "PPOHyperparameters",
    "SACHyperparameters",
    "agent_ids",
    "build_config",
    "check_algorithm",
    "check_env",
    "hyperparameter_schema",
    "lazy_builder",
    "make_env",
    "own_module",
    "register_algorithm",
    "register_envs",
    "resolve_hyperparameters",
    "shared_module",
    "trained_agents",
]

Builder = Callable[["Experiment", dict[str, Any]], "AlgorithmConfig"]

SHARED_MODULE = "shared"
"""The module id of a network shared by every agent."""


# ------------------------------------------------------------------------------ environments


def make_env(env: str, env_config: Mapping[str, Any]):
    """The PettingZoo ParallelEnv ``env`` (``rack_v0``, ``lb_v0``, ...) with ``env_config`` as its arguments.

    An environment whose constructor takes named arguments (no schema of its own) gets an unknown one
    refused here, with the argument named.
    """
    module = env_module(env)
    signature = inspect.signature(module.raw_env.__init__)
    if not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        known = [p for p in signature.parameters if p != "self"]
        for key in env_config:
            if key not in known:
                raise InvalidConfigError(
                    key,
                    env_config[key],
                    "one of the arguments " + ", ".join(known),
                    suggestion=did_you_mean(key, known),
                )
    return module.parallel_env(**env_config)


RLLIB_ENV_IDS: dict[str, str] = {name: env_id(name) for name in known_envs()}
"""The id each environment has in RLlib: an import path, so no registration is needed (:mod:`.rllib_envs`)."""

LEGACY_RLLIB_ENV_IDS: dict[str, str] = {"rack_v0": "dcgym_rack_v0", "lb_v0": "dcgym_lb_v0"}
"""The ids of checkpoints written before the import-path ids: :func:`register_envs` registers them."""


def register_envs() -> None:
    """Register the legacy ids with RLlib, so checkpoints that use them restore (new ones need nothing)."""
    from ray.tune.registry import register_env

    for name, legacy in LEGACY_RLLIB_ENV_IDS.items():
        register_env(legacy, lambda config, name=name: make_rllib_env(name, **dict(config)))


def agent_ids(env: str, env_config: Mapping[str, Any]) -> list[str]:
    """The environment's agents (``possible_agents``), in order; validates ``env_config`` on the way."""
    return list(make_env(env, env_config).possible_agents)


def shared_module(agent_id, *args, **kwargs) -> str:
    """Policy mapping: every agent to the one shared module."""
    return SHARED_MODULE


def own_module(agent_id, *args, **kwargs) -> str:
    """Policy mapping: each agent to its own module, named like the agent."""
    return agent_id


def _matrix_observations(env: str, env_config: Mapping[str, Any]) -> bool:
    """Whether some agent of ``env`` observes an array of more than one axis (lb_v0: servers x features)."""
    probe = make_env(env, env_config)
    return any(len(probe.observation_space(a).shape or ()) > 1 for a in probe.possible_agents)


def _continuous_actions(experiment: Experiment, env_config: Mapping[str, Any], algorithm: str) -> None:
    """Raise InvalidConfigError naming ``env_args`` unless every agent of the environment acts in a Box."""
    from gymnasium.spaces import Box

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


def _flatten_observations(env, spaces=None, device=None):
    """Matrix observations (lb_v0's (N, 12)) flattened: RLlib's default networks take flat vectors."""
    from ray.rllib.connectors.env_to_module import FlattenObservations

    return FlattenObservations(multi_agent=True)


def _common(config: AlgorithmConfig, experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Environment, resources and seed, the same for every algorithm."""
    res = experiment.resources
    config.environment(RLLIB_ENV_IDS[experiment.env], env_config=env_config)
    config.env_runners(num_env_runners=res.num_env_runners or 0, num_envs_per_env_runner=res.num_envs_per_env_runner)
    if _matrix_observations(experiment.env, env_config):
        config.env_runners(env_to_module_connector=_flatten_observations)
    config.learners(num_learners=res.num_learners)
    config.debugging(seed=experiment.seed)
    config.callbacks(on_algorithm_init=_seed_replay_buffer)
    config.reporting(min_time_s_per_iteration=0)  # an iteration is a number of steps, never of seconds (SAC: 1 s)
    return config


def _seed_replay_buffer(algorithm: Any, **_: Any) -> None:
    """Seed the replay buffer's sampler from the experiment's seed.

    RLlib's episode replay buffers draw their samples from ``np.random.default_rng(None)``, which
    ``debugging(seed=...)`` does not reach: two runs of the same seed trained on different batches.
    """
    buffer = getattr(algorithm, "local_replay_buffer", None)
    if buffer is not None and hasattr(buffer, "rng"):
        buffer.rng = np.random.default_rng(algorithm.config.seed)


def _policies(config: AlgorithmConfig, experiment: Experiment, env_config: dict[str, Any], sharing: str) -> None:
    agents = agent_ids(experiment.env, env_config)
    if sharing == "shared":
        config.multi_agent(policies={SHARED_MODULE}, policy_mapping_fn=shared_module)
    else:
        config.multi_agent(policies=set(agents), policy_mapping_fn=own_module)


# ------------------------------------------------------------------------------ hyperparameters


class Hyperparameters(BaseModel):
    """Base of the hyperparameter schemas: unknown keys are refused, each field documented."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class PPOHyperparameters(Hyperparameters):
    """Multi-agent PPO (RLlib's ``PPOConfig``); names follow RLlib's where they exist."""

    policy_sharing: Literal["shared", "per_agent"] = "shared"
    """One network for every agent (``shared``, parameter sharing) or one per agent (``per_agent``)."""
    lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Adam learning rate."""
    gamma: float = Field(0.99, ge=0, le=1)
    """Discount factor per step."""
    gae_lambda: float = Field(0.95, ge=0, le=1)
    """GAE lambda (RLlib's ``lambda_``)."""
    clip_param: float = Field(0.2, gt=0, allow_inf_nan=False)
    """PPO's ratio clip."""
    vf_clip_param: float = Field(10.0, gt=0)
    """Clip of the value-function loss (in squared reward units)."""
    vf_loss_coeff: float = Field(1.0, ge=0, allow_inf_nan=False)
    """Weight of the value loss."""
    entropy_coeff: float = Field(0.0, ge=0, allow_inf_nan=False)
    """Weight of the entropy bonus."""
    kl_coeff: float = Field(0.2, ge=0, allow_inf_nan=False)
    """Initial weight of the KL penalty (0 turns it off)."""
    grad_clip: float | None = Field(0.5, gt=0)
    """Global gradient-norm clip (null = none)."""
    train_batch_size: int = Field(1000, ge=1)
    """Environment steps per iteration (RLlib's ``train_batch_size_per_learner``)."""
    minibatch_size: int = Field(250, ge=1)
    """Samples per SGD minibatch."""
    num_epochs: int = Field(4, ge=1)
    """Passes over each iteration's batch."""
    rollout_fragment_length: int | Literal["auto"] = "auto"
    """Steps an env runner collects per sample call (``auto``: from the batch size)."""
    hidden: list[int] = Field([64, 64], min_length=1)
    """Hidden layer sizes of the policy and value networks (RLlib's default model cannot be linear)."""
    activation: Literal["tanh", "relu"] = "tanh"
    """Hidden-layer activation."""
    vf_share_layers: bool = False
    """Policy and value heads on one trunk."""


class SACHyperparameters(Hyperparameters):
    """Multi-agent SAC (RLlib's ``SACConfig``) for continuous actions."""

    policy_sharing: Literal["shared", "per_agent"] = "per_agent"
    """One network for every agent (``shared``) or one per agent (``per_agent``)."""
    actor_lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Learning rate of the policy."""
    critic_lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Learning rate of the twin Q networks."""
    alpha_lr: float = Field(3e-4, gt=0, allow_inf_nan=False)
    """Learning rate of the entropy temperature."""
    gamma: float = Field(0.99, ge=0, le=1)
    """Discount factor per step."""
    tau: float = Field(0.005, gt=0, le=1)
    """Soft target-network update rate."""
    initial_alpha: float = Field(1.0, gt=0, allow_inf_nan=False)
    """Initial entropy temperature."""
    target_entropy: float | Literal["auto"] = "auto"
    """Target policy entropy (``auto`` = minus the action dimension)."""
    n_step: int = Field(1, ge=1)
    """n-step returns."""
    train_batch_size: int = Field(64, ge=1)
    """Transitions per update (RLlib's ``train_batch_size_per_learner``)."""
    replay_capacity: int = Field(50_000, ge=1)
    """Replay buffer size in environment steps."""
    learning_starts: int = Field(256, ge=0)
    """Environment steps sampled before the first update."""
    rollout_fragment_length: int = Field(2, ge=1)
    """Environment steps sampled between two updates."""
    steps_per_iteration: int = Field(120, ge=1)
    """Environment steps sampled per iteration at least (``min_sample_timesteps_per_iteration``)."""
    hidden: list[int] = Field([64, 64], min_length=1)
    """Hidden layer sizes of the policy and Q networks."""
    activation: Literal["tanh", "relu"] = "relu"
    """Hidden-layer activation."""


HYPERPARAMETERS: dict[str, type[Hyperparameters] | str] = {"ppo": PPOHyperparameters, "sac": SACHyperparameters}
"""The schema of each algorithm's hyperparameters, or its ``module:Class`` (imported when first needed); an
algorithm without one checks them in its builder."""


# ------------------------------------------------------------------------------ builders


def build_ppo(experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Multi-agent PPO with :class:`PPOHyperparameters`."""
    from ray.rllib.algorithms.ppo import PPOConfig

    hp = PPOHyperparameters(**experiment.hyperparameters)
    config = _common(PPOConfig(), experiment, env_config)
    config.env_runners(rollout_fragment_length=hp.rollout_fragment_length)
    config.training(
        lr=hp.lr,
        gamma=hp.gamma,
        lambda_=hp.gae_lambda,
        clip_param=hp.clip_param,
        vf_clip_param=hp.vf_clip_param,
        vf_loss_coeff=hp.vf_loss_coeff,
        entropy_coeff=hp.entropy_coeff,
        kl_coeff=hp.kl_coeff,
        use_kl_loss=hp.kl_coeff > 0,
        grad_clip=hp.grad_clip,
        train_batch_size_per_learner=hp.train_batch_size,
        minibatch_size=hp.minibatch_size,
        num_epochs=hp.num_epochs,
    )
    config.rl_module(
        model_config={
            "fcnet_hiddens": list(hp.hidden),
            "fcnet_activation": hp.activation,
            "vf_share_layers": hp.vf_share_layers,
        }
    )
    _policies(config, experiment, env_config, hp.policy_sharing)
    return config


def build_sac(experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Multi-agent SAC with :class:`SACHyperparameters`: continuous actions only (on flow_v0 sRLA alone,
    :data:`CONTINUOUS_FORMS`)."""
    from ray.rllib.algorithms.sac import SACConfig

    form = CONTINUOUS_FORMS.get(experiment.env)
    if form is None:
        _continuous_actions(experiment, env_config, "sac")
    hp = SACHyperparameters(**experiment.hyperparameters)
    config = _common(SACConfig(), experiment, env_config)
    if form is not None:  # the continuous agent alone, the others held by the environment's rules
        config.environment(form[1], env_config=env_config)
    config.env_runners(rollout_fragment_length=hp.rollout_fragment_length)
    config.training(
        actor_lr=hp.actor_lr,
        critic_lr=hp.critic_lr,
        alpha_lr=hp.alpha_lr,
        gamma=hp.gamma,
        tau=hp.tau,
        initial_alpha=hp.initial_alpha,
        target_entropy=hp.target_entropy,
        n_step=hp.n_step,
        train_batch_size_per_learner=hp.train_batch_size,
        num_steps_sampled_before_learning_starts=hp.learning_starts,
        replay_buffer_config={
            "type": "MultiAgentEpisodeReplayBuffer" if form is None else "EpisodeReplayBuffer",
            "capacity": hp.replay_capacity,
        },
    )
    config.reporting(min_sample_timesteps_per_iteration=hp.steps_per_iteration)
    config.rl_module(model_config={"fcnet_hiddens": list(hp.hidden), "fcnet_activation": hp.activation})
    if form is None:
        _policies(config, experiment, env_config, hp.policy_sharing)
    return config


CONTINUOUS_FORMS: dict[str, tuple[str, str]] = {"flow_v0": ("srla", "dcgym/FlowSrla-v0")}
"""Environments where some agent acts in a discrete space, with a one-agent form for the continuous one: SAC
trains that agent there, the others held by the environment's rules (flow_v0: sRLA's thresholds; lRLA's
per-flow choices are discrete)."""


def _malcolm_module():
    try:
        import dcgym.agents.malcolm as malcolm
    except ImportError as exc:
        if exc.name is not None and not exc.name.startswith("dcgym.agents.malcolm"):
            raise  # the package exists but one of its own imports failed: show that
        raise InvalidConfigError(
            "algorithm", "malcolm", "an installed algorithm: dcgym.agents.malcolm is not available in this checkout"
        ) from None
    return malcolm


def build_malcolm(experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    """Malcolm's decentralized actor-critic (``dcgym.agents.malcolm``), imported only now."""
    malcolm = _malcolm_module()
    if hasattr(malcolm, "build"):
        return malcolm.build(experiment, env_config)
    if hasattr(malcolm, "rack_config"):  # the package's own wiring: its env class, one module per node
        try:
            config = malcolm.rack_config({**experiment.hyperparameters, "env": env_config, "seed": experiment.seed})
        except InvalidConfigError as exc:
            raise exc.under("hyperparameters") from None
        res = experiment.resources
        config.env_runners(
            num_env_runners=res.num_env_runners or 0, num_envs_per_env_runner=res.num_envs_per_env_runner
        )
        config.learners(num_learners=res.num_learners)
        return config
    config = _common(malcolm.MalcolmConfig(), experiment, env_config)
    _training(config, experiment.hyperparameters)
    _policies(config, experiment, env_config, "per_agent")
    return config


def _auto_module():
    try:
        import dcgym.agents.auto as auto
    except ImportError as exc:
        if exc.name is not None and not exc.name.startswith("dcgym.agents.auto"):
            raise
        raise InvalidConfigError(
            "algorithm", "auto_srla", "an installed algorithm: dcgym.agents.auto is not available in this checkout"
        ) from None
    return auto


AUTO_ENVS = {"auto_srla": "dcgym/FlowSrla-v0", "auto_lrla": "dcgym/FlowLrla-v0"}
"""The single-agent environment each of AuTO's agents trains in (the other agent held by a rule; docs/auto.md)."""


def _build_auto(name: str, experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    auto = _auto_module()
    config = auto.DDPGConfig() if name == "auto_srla" else auto.PGConfig()
    config = _common(config, experiment, env_config)
    config.environment(AUTO_ENVS[name], env_config=env_config)  # gymnasium id: flow_v0 with one agent acting
    _training(config, experiment.hyperparameters)
    return config


def build_auto_srla(experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    """AuTO's sRLA (DDPG, ``dcgym.agents.auto``) on ``dcgym/FlowSrla-v0``: flow_v0 with lRLA held by MLFQ's rules."""
    return _build_auto("auto_srla", experiment, env_config)


def build_auto_lrla(experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    """AuTO's lRLA (REINFORCE, ``dcgym.agents.auto``) on ``dcgym/FlowLrla-v0``: thresholds held at the scenario's."""
    return _build_auto("auto_lrla", experiment, env_config)


def _training(config: AlgorithmConfig, hyperparameters: Mapping[str, Any]) -> None:
    """``config.training(**hyperparameters)``, an unknown key named as ``hyperparameters.<key>``."""
    parameters: dict[str, Any] = {}
    for cls in type(config).__mro__:  # a subclass's training(**kwargs) passes the rest on to its bases'
        if "training" in vars(cls):
            parameters |= dict(inspect.signature(vars(cls)["training"]).parameters)
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
    config.training(**hyperparameters)


def build_osml_dqn(experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
    """OSML's Model-C (``dcgym.agents.osml.model_c``) on RLlib's DQN, imported only now."""
    from dcgym.agents.osml import model_c

    try:
        validate(model_c.ModelCHyperparameters, dict(experiment.hyperparameters))
    except InvalidConfigError as exc:
        raise exc.under("hyperparameters") from None
    return model_c.build(experiment, env_config)


def lazy_builder(entry_point: str) -> Builder:
    """A builder that imports ``module:function`` only when an experiment is built."""

    def build(experiment: Experiment, env_config: dict[str, Any]) -> AlgorithmConfig:
        return load_entry_point(entry_point)(experiment, env_config)

    build.__doc__ = f"The builder {entry_point}, imported when called."
    return build


ALGORITHMS: dict[str, Builder] = {
    "auto_lrla": build_auto_lrla,
    "auto_srla": build_auto_srla,
    "malcolm": build_malcolm,
    "osml_dqn": build_osml_dqn,
    "ppo": build_ppo,
    "sac": build_sac,
}
"""Algorithm name -> builder ``build(experiment, env_config) -> AlgorithmConfig``."""

ALGORITHM_ENVS: dict[str, tuple[str, ...]] = {
    "auto_lrla": ("flow_v0",),
    "auto_srla": ("flow_v0",),
    "malcolm": ("rack_v0",),
    "osml_dqn": ("colo_v0",),
    "ppo": (),
    "sac": (),
}
"""The environments each algorithm can train on; empty: every environment (the generic baselines)."""

ALGORITHM_AGENTS: dict[str, tuple[str, ...]] = {"auto_lrla": ("lrla",), "auto_srla": ("srla",)}
"""The agents an algorithm trains when not all of the environment's (the others held by the environment's
rules, in training and in evaluation); absent: every agent."""


def trained_agents(algorithm: str, env: str, env_config: Mapping[str, Any]) -> list[str]:
    """The agents ``algorithm`` trains on ``env`` (all of them unless :data:`ALGORITHM_AGENTS` says otherwise)."""
    agents = agent_ids(env, env_config)
    only = ALGORITHM_AGENTS.get(algorithm)
    if algorithm == "sac" and env in CONTINUOUS_FORMS:
        only = (CONTINUOUS_FORMS[env][0],)
    return [a for a in agents if a in only] if only else agents


_MARL_LB = "dcgym.agents.marl_lb"
for _name, _builder, _schema, _envs in (
    ("distr_lb", "qmix:build_distr_lb", "DistrLbHyperparameters", ("lb_v0",)),
    ("centr_lb", "qmix:build_centr_lb", "CentrLbHyperparameters", ("lb_central_v0",)),
    ("qmix_lb", "qmix:build_qmix_lb", "QmixLbHyperparameters", ("lb_v0",)),
    ("rlb_sac", "builders:build_rlb_sac", "RlbSacHyperparameters", ("lb_v0",)),
    ("distr_lb_ppo", "builders:build_distr_lb_ppo", "DistrLbPpoHyperparameters", ("lb_v0",)),
):
    ALGORITHMS[_name] = lazy_builder(f"{_MARL_LB}.{_builder}")
    ALGORITHM_ENVS[_name] = _envs
    HYPERPARAMETERS[_name] = f"{_MARL_LB}.hyperparameters:{_schema}"


def register_algorithm(
    name: str, builder: Builder, *, hyperparameters: type[Hyperparameters] | None = None, envs: tuple[str, ...] = ()
) -> None:
    """Add (or replace) an algorithm: its builder, optionally a hyperparameter schema, the envs it runs on
    (empty: every one)."""
    ALGORITHMS[name] = builder
    ALGORITHM_ENVS[name] = envs
    if hyperparameters is not None:
        HYPERPARAMETERS[name] = hyperparameters
    else:
        HYPERPARAMETERS.pop(name, None)


def check_algorithm(name: str) -> str:
    """``name`` if it is registered; InvalidConfigError (with a suggestion) otherwise."""
    if name not in ALGORITHMS:
        raise InvalidConfigError("", name, "one of " + ", ".join(ALGORITHMS), suggestion=did_you_mean(name, ALGORITHMS))
    return name


def check_env(algorithm: str, env: str) -> None:
    """Raise InvalidConfigError naming ``env`` if ``algorithm`` does not train on it."""
    envs = ALGORITHM_ENVS.get(algorithm, ())
    if envs and env not in envs:
        raise InvalidConfigError("env", env, f"{' or '.join(envs)} (where {algorithm} trains)")


def resolve_hyperparameters(algorithm: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The hyperparameters with every default filled in (for schemas); raises InvalidConfigError naming the key."""
    schema = hyperparameter_schema(algorithm)
    if schema is None:
        return dict(raw)
    return validate(schema, dict(raw)).model_dump(mode="json")


def hyperparameter_schema(algorithm: str) -> type[Hyperparameters] | None:
    """The hyperparameter schema of ``algorithm`` (imported if registered as ``module:Class``), or None."""
    schema = HYPERPARAMETERS.get(algorithm)
    if isinstance(schema, str):
        schema = HYPERPARAMETERS[algorithm] = load_entry_point(schema)
    return schema


def build_config(experiment: Experiment, env_config: dict[str, Any] | None = None) -> AlgorithmConfig:
    """The RLlib ``AlgorithmConfig`` of ``experiment`` (its registered builder)."""
    return ALGORITHMS[experiment.algorithm](experiment, experiment.env_config if env_config is None else env_config)
