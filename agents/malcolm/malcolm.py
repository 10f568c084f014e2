"""Malcolm: decentralized multi-agent load balancing at rack scale (POMACS 2022, §5-§6), on RLlib.

Every node of the rack is one agent with its own module
(:class:`~dcgym.agents.malcolm.malcolm_rl_module.MalcolmRLModule`: a linear
critic and two linear softmax actors, migration and stealing). Execution is
decentralized: each node computes its logits from its own observation only.
Training follows Algorithm 1: every heartbeat is one step; after each
mini-batch of D heartbeats every node takes one TD actor-critic step on its
own data with AdamW; every P updates the critics are averaged (consensus).
The update itself is in :mod:`dcgym.agents.malcolm.malcolm_learner`.

```python
from dcgym.agents.malcolm import MalcolmConfig, rack_config
config = rack_config({"env": {"scenario": "malcolm_hetero_paper_exp", "load": 0.9}, "seed": 1})
algo = config.build_algo()
for _ in range(100):
    result = algo.train()        # train_batch_size_per_learner heartbeats per iteration
```

Learning is online and sequential in time (mini-batches of consecutive
heartbeats, TD(λ) traces, the average reward R̄), as on a real rack, so a
run samples one rack: at most one EnvRunner with one environment and at
most one Learner. One iteration samples ``train_batch_size_per_learner``
heartbeats with the current policy and makes ``train_batch_size_per_learner
/ minibatch_size`` updates; the default (20 and 20) updates the policy
after every mini-batch, as the paper does.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.rllib.utils.typing import LearningRateOrSchedule

from dcgym.agents.malcolm.basis import BASES
from dcgym.agents.malcolm.fill_rl_module import MalcolmFillRLModule
from dcgym.agents.malcolm.malcolm_learner import MalcolmTorchLearner
from dcgym.agents.malcolm.malcolm_rl_module import MalcolmRLModule
from dcgym.agents.rl.on_policy import on_policy_training_step
from dcgym.agents.rl.spec import TrainingRun
from dcgym.agents.rl.wiring import check_types, set_provided
from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.rack import rack_v0
from dcgym.envs.rack.game import WAIT_METRICS

__all__ = ["Malcolm", "MalcolmConfig", "RackMultiAgentEnv", "build", "rack_config"]

VARIANTS = ("paper", "code")
ACTORS = ("paper", "fill")


class RackMultiAgentEnv(ParallelPettingZooEnv):
    """rack_v0 as an RLlib MultiAgentEnv; ``config`` holds rack_v0's keyword arguments.

    A class (not a registered name) so that EnvRunners and restored
    checkpoints build it in any process that can import dcgym.
    """

    def __init__(self, config: Mapping[str, Any] | None = None):
        super().__init__(rack_v0.parallel_env(**dict(config or {})))


class MalcolmConfig(AlgorithmConfig):
    """Configuration of :class:`Malcolm`; the defaults are the paper's and its authors' code's.

    ```python
    config = (
        MalcolmConfig()
        .environment(RackMultiAgentEnv, env_config={"scenario": "malcolm_homog_exp", "load": 0.9})
        .multi_agent(policies={f"node_{i}" for i in range(10)}, policy_mapping_fn=lambda aid, *a, **k: aid)
        .training(variant="code")
    )
    ```
    :func:`rack_config` does this from a dict of hyperparameters.
    """

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or Malcolm)
        # RLlib settings with Malcolm's values.
        self.minibatch_size = 20
        """D: heartbeats per update (§6.1: "a mini-batch of D data points", default 20)."""
        self.train_batch_size_per_learner = 20
        """Heartbeats sampled per iteration with one policy; a multiple of `minibatch_size`."""
        self.gamma = 0.99
        """Discount of the paper's TD error (the paper gives none); unused by the average-reward `code` variant."""
        self.num_env_runners = 0
        self.normalize_actions = False  # the actions are logits, not [-1, 1] values to rescale
        self.clip_actions = False
        # Malcolm's own settings.
        self.actor = "paper"
        """`paper` (§6.2: softmax of linear logits over `actor_basis`, a migration and a stealing actor) or `fill`
        (the fill head: water-filling tables adjusted by learned gains, starting at the `water_fill` heuristic;
        docs/malcolm.md). `fill` needs TD(0) (`trace_lambda` 0) and rack_v0's probabilities (rack_config)."""
        self.fill_horizon = 2.0
        """`fill` actor: the fill volume in heartbeats of the rack's arrivals (water_fill's `horizon`)."""
        self.fill_mix = 0.1
        """`fill` actor: the capacity split's share (water_fill's `mix`), > 0 so that every probability is > 0."""
        self.fill_steal = False
        """`fill` actor: steal from the node believed most loaded when it is above the node's own level (water_fill's
        `steal`)."""
        self.fill_per_task = False
        """`fill` actor: each node's table is recomputed at every task that arrives at it, from what it believes then
        (rack_v0's `action_type: fill`: the actions are the gains, and each decision is learned under the table of
        its own moment), instead of once per heartbeat (the actions are the tables)."""
        self.variant = "paper"
        """`paper` (Algorithm 1: discounted TD(0), actor direction Σ_j count_j ∇log π_j) or `code` (the authors'
        implementation: average-reward TD with R̄, TD(λ) traces, direction (count_j / Σcount - π_j) φ_a)."""
        self.trace_lambda = None
        """λ of the eligibility traces; None means the variant's (paper 0, code 0.6)."""
        self.average_reward_step = 1e-3
        """η in R̄ ← R̄ + η δ (code variant)."""
        self.lr_critic = 2e-3
        """AdamW learning rate of the critic (a float or an RLlib schedule)."""
        self.lr_actor = 1e-3
        """AdamW learning rate of both actors (a float or an RLlib schedule)."""
        self.adam_betas = (0.9, 0.999)
        """AdamW (β1, β2)."""
        self.adam_epsilon = 1e-6
        """AdamW ε."""
        self.weight_decay = 1e-4
        """AdamW decoupled weight decay."""
        self.consensus_period = 100
        """P: the critics are averaged across nodes every P updates (0 = never)."""
        self.critic_basis = "customized"
        """Feature map of the critic (basis.BASES); §6.2's `customized`."""
        self.actor_basis = "sort"
        """Feature map of both actors (basis.BASES); §6.2's `sort`."""
        self.load_scale = 0.1
        """Loads are multiplied by this before the feature maps. rack_v0's loads are expected waits in mean service
        times (up to ~32 at a full queue); 0.1 brings them near the authors' code's loads (normalized by the queue
        capacity) and keeps the initial logits (±1/sqrt(F) weights on the raw loads) moderate."""
        self.reward_scale = 0.01
        """Rewards are multiplied by this before the TD error; 0.01 = `load_scale`² states eq. (1)'s squared load
        differences in the scaled load unit, so that values stay within what AdamW at the paper's learning rates
        can fit in a few hundred updates."""

    def training(
        self,
        *,
        actor: str = NotProvided,
        fill_horizon: float = NotProvided,
        fill_mix: float = NotProvided,
        fill_steal: bool = NotProvided,
        fill_per_task: bool = NotProvided,
        variant: str | None = NotProvided,
        trace_lambda: float | None = NotProvided,
        average_reward_step: float = NotProvided,
        lr_critic: LearningRateOrSchedule = NotProvided,
        lr_actor: LearningRateOrSchedule = NotProvided,
        adam_betas: tuple[float, float] = NotProvided,
        adam_epsilon: float = NotProvided,
        weight_decay: float = NotProvided,
        consensus_period: int = NotProvided,
        critic_basis: str = NotProvided,
        actor_basis: str = NotProvided,
        load_scale: float = NotProvided,
        reward_scale: float = NotProvided,
        **kwargs: Any,
    ) -> MalcolmConfig:
        """Malcolm's training settings (see the attribute docstrings in ``__init__``) and RLlib's.

        RLlib's ``minibatch_size`` is D, ``train_batch_size_per_learner`` the
        heartbeats sampled per iteration, ``gamma`` the paper variant's discount.
        """
        super().training(**kwargs)
        given = {
            "actor": actor,
            "fill_horizon": fill_horizon,
            "fill_mix": fill_mix,
            "fill_steal": fill_steal,
            "fill_per_task": fill_per_task,
            "variant": variant,
            "trace_lambda": trace_lambda,
            "average_reward_step": average_reward_step,
            "lr_critic": lr_critic,
            "lr_actor": lr_actor,
            "adam_betas": adam_betas,
            "adam_epsilon": adam_epsilon,
            "weight_decay": weight_decay,
            "consensus_period": consensus_period,
            "critic_basis": critic_basis,
            "actor_basis": actor_basis,
            "load_scale": load_scale,
            "reward_scale": reward_scale,
        }
        set_provided(self, given)
        return self

    @property
    def resolved_trace_lambda(self) -> float:
        """`trace_lambda`, or the variant's default when it is None (paper 0.0, code 0.6)."""
        if self.trace_lambda is not None:
            return float(self.trace_lambda)
        return 0.6 if self.variant == "code" else 0.0

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "critic_basis": self.critic_basis,
            "actor_basis": self.actor_basis,
            "load_scale": self.load_scale,
        }

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=MalcolmFillRLModule if self.actor == "fill" else MalcolmRLModule)

    def get_default_learner_class(self) -> type:
        return MalcolmTorchLearner

    def validate(self) -> None:
        super().validate()
        err = self._value_error
        if self.framework_str != "torch":
            err(f"`framework` ({self.framework_str!r}) must be 'torch'")
        if self.variant not in VARIANTS:
            err(f"`variant` ({self.variant!r}) must be one of {list(VARIANTS)}")
        if self.actor not in ACTORS:
            err(f"`actor` ({self.actor!r}) must be one of {list(ACTORS)}")
        if self.actor == "fill":
            if self.resolved_trace_lambda != 0.0:
                err(f"`trace_lambda` ({self.resolved_trace_lambda}) must be 0 with `actor` 'fill' (TD(0) only)")
            if not 0.0 < self.fill_mix <= 1.0:
                err(f"`fill_mix` ({self.fill_mix}) must be in (0, 1]: it keeps every probability > 0")
            if not 0.0 < self.fill_horizon <= 1e6:
                err(f"`fill_horizon` ({self.fill_horizon}) must be in (0, 1e6]")
        for key in ("critic_basis", "actor_basis"):
            if getattr(self, key) not in BASES:
                err(f"`{key}` ({getattr(self, key)!r}) must be one of {sorted(BASES)}")
        if self.trace_lambda is not None and not 0.0 <= self.trace_lambda <= 1.0:
            err(f"`trace_lambda` ({self.trace_lambda}) must be None or in [0, 1]")
        if not 0.0 < self.average_reward_step <= 1.0:
            err(f"`average_reward_step` ({self.average_reward_step}) must be in (0, 1]")
        if not 0.0 <= self.gamma <= 1.0:
            err(f"`gamma` ({self.gamma}) must be in [0, 1]")
        for key in ("lr_critic", "lr_actor"):
            value = getattr(self, key)
            if isinstance(value, (int, float)) and not value > 0:
                err(f"`{key}` ({value}) must be > 0")
        b1, b2 = self.adam_betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            err(f"`adam_betas` ({self.adam_betas}) must both be in [0, 1)")
        if not self.adam_epsilon > 0:
            err(f"`adam_epsilon` ({self.adam_epsilon}) must be > 0")
        if not self.weight_decay >= 0:
            err(f"`weight_decay` ({self.weight_decay}) must be >= 0")
        if not (isinstance(self.consensus_period, int) and self.consensus_period >= 0):
            err(f"`consensus_period` ({self.consensus_period}) must be an integer >= 0 (0 = no consensus)")
        for key in ("load_scale", "reward_scale"):
            if not getattr(self, key) > 0:
                err(f"`{key}` ({getattr(self, key)}) must be > 0")
        d, batch = self.minibatch_size, self.train_batch_size_per_learner
        if not (isinstance(d, int) and d >= 1):
            err(f"`minibatch_size` ({d}) must be an integer >= 1: the heartbeats D of one update")
        elif not (isinstance(batch, int) and batch >= d and batch % d == 0):
            err(f"`train_batch_size_per_learner` ({batch}) must be a multiple of `minibatch_size` ({d})")
        # One rack, learned online: the update is sequential in time.
        if self.num_env_runners > 1:
            err(f"`num_env_runners` ({self.num_env_runners}) must be 0 or 1: Malcolm learns online from one rack")
        if self.num_envs_per_env_runner != 1:
            err(f"`num_envs_per_env_runner` ({self.num_envs_per_env_runner}) must be 1: Malcolm learns from one rack")
        if self.num_learners > 1:
            err(f"`num_learners` ({self.num_learners}) must be 0 or 1: consensus averages critics in one Learner")
        if self.count_steps_by != "env_steps":
            err(f"`count_steps_by` ({self.count_steps_by!r}) must be 'env_steps': one step is one heartbeat")
        if self.normalize_actions:
            err("`normalize_actions` (True) must be False: the actions are logits, not values in [-1, 1]")


class Malcolm(Algorithm):
    """Malcolm's decentralized actor-critic with consensus (Algorithm 1) as an RLlib Algorithm."""

    @classmethod
    def get_default_config(cls) -> MalcolmConfig:
        return MalcolmConfig()

    def training_step(self) -> None:
        """Sample `train_batch_size_per_learner` heartbeats, update in mini-batches of D, sync the weights."""
        on_policy_training_step(self, minibatch_size=self.config.minibatch_size)  # consecutive heartbeats, in order


def _training_keys() -> frozenset[str]:
    """Every keyword :meth:`MalcolmConfig.training` accepts (Malcolm's and RLlib's)."""
    keys = set()
    for fn in (MalcolmConfig.training, AlgorithmConfig.training):
        keys |= {k for k, p in inspect.signature(fn).parameters.items() if p.kind is p.KEYWORD_ONLY}
    return frozenset(keys)


def rack_config(hparams: Mapping[str, Any]) -> MalcolmConfig:
    """A MalcolmConfig for rack_v0 from a dict of hyperparameters.

    Keys: ``env`` (rack_v0 keyword arguments: scenario, load, overrides,
    max_steps, reward, ...), ``seed`` (RLlib's seed), and any
    :meth:`MalcolmConfig.training` field or RLlib training field
    (``minibatch_size``, ``train_batch_size_per_learner``, ``gamma``, ...).
    One policy per node (``node_i``), mapped by identity. With
    ``variant: code`` the environment's reward defaults to the code's
    ``imbalance_delta`` (unless ``env.reward`` is given). Raises
    InvalidConfigError naming the key: ``env.<argument>`` for a bad
    environment argument, the key itself for an unknown hyperparameter.
    """
    params = dict(hparams)
    env_config = dict(params.pop("env", {}) or {})
    seed = params.pop("seed", None)
    known = _training_keys()
    unknown = sorted(set(params) - known)
    if unknown:
        key = unknown[0]
        raise InvalidConfigError(
            key,
            params[key],
            "a key of env, seed or a MalcolmConfig.training field",
            suggestion=did_you_mean(key, known),
        )
    check_types([MalcolmConfig.training, AlgorithmConfig.training], params, "MalcolmConfig.training")
    if params.get("variant") == "code":
        env_config.setdefault("reward", "imbalance_delta")
    fill = params.get("actor") == "fill"
    if fill:
        env_config = _fill_env_config(env_config, params)
    try:
        game = rack_v0.parallel_env(**env_config).game
    except InvalidConfigError as exc:
        raise exc.under("env") from None
    agents = [f"node_{i}" for i in range(game.num_nodes)]
    config = (
        MalcolmConfig()
        .environment(RackMultiAgentEnv, env_config=env_config)
        # A list, not a set: the modules are built (and their weights drawn) in node order, the same every run.
        .multi_agent(policies=agents, policy_mapping_fn=_identity)
        .training(**params)
        .debugging(seed=seed)
    )
    if fill:
        config.rl_module(rl_module_spec=_fill_modules(config, game))
    return config


def _fill_env_config(env_config: dict[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """rack_v0's arguments for the fill actor: probabilities as actions (gains per task, with the rule of the
    ``fill_*`` settings), levels in waits, and the ``offered_load`` extra its utilisation feature reads;
    InvalidConfigError naming ``env.<argument>``."""
    defaults = MalcolmConfig()
    per_task = params.get("fill_per_task", defaults.fill_per_task)
    action_type = "fill" if per_task else "probabilities"
    if env_config.setdefault("action_type", action_type) != action_type:
        raise InvalidConfigError(
            "env.action_type", env_config["action_type"], f"{action_type} with actor: fill, fill_per_task: {per_task}"
        )
    metric = env_config.setdefault("load_metric", "expected_wait")
    if metric not in WAIT_METRICS:
        raise InvalidConfigError("env.load_metric", metric, f"one of {list(WAIT_METRICS)} with actor: fill")
    if per_task:
        rule = {key: params.get(f"fill_{key}", getattr(defaults, f"fill_{key}")) for key in ("horizon", "mix", "steal")}
        if "fill" in env_config and dict(env_config["fill"]) != rule:
            raise InvalidConfigError("env.fill", env_config["fill"], f"{rule}: the fill_* hyperparameters")
        env_config["fill"] = rule
    extras = tuple(env_config.get("obs_extras", ()))
    return {**env_config, "obs_extras": extras if "offered_load" in extras else (*extras, "offered_load")}


def _fill_modules(config: MalcolmConfig, game: Any) -> MultiRLModuleSpec:
    """One fill-actor module per node, each told its node index and the rack and rule it acts on."""
    n = game.num_nodes
    shared = {
        "capacity": [float(c) for c in game.capacity],
        "heartbeat_services": game.config.heartbeat_us * game.scale,
        "horizon": config.fill_horizon,
        "mix": config.fill_mix,
        "steal": config.fill_steal,
        "per_task": config.fill_per_task,
        "offered_load_index": n + 1 + game.config.obs_extras.index("offered_load"),
    }
    return MultiRLModuleSpec(
        rl_module_specs={
            f"node_{i}": RLModuleSpec(module_class=MalcolmFillRLModule, model_config={**shared, "node": i})
            for i in range(n)
        }
    )


def _identity(agent_id: str, *args: Any, **kwargs: Any) -> str:
    """Each node's own module: module id = agent id."""
    return agent_id


def build(experiment: TrainingRun, env_config: dict[str, Any]) -> MalcolmConfig:
    """``algorithm: malcolm`` of an experiment: :func:`rack_config` of its hyperparameters, environment and seed,
    with the experiment's resources (one rack: at most one env runner, one environment, one learner)."""
    try:
        config = rack_config({**experiment.hyperparameters, "env": env_config, "seed": experiment.seed})
    except InvalidConfigError as exc:
        raise exc.under("hyperparameters") from None
    res = experiment.resources
    config.env_runners(num_env_runners=res.num_env_runners or 0, num_envs_per_env_runner=res.num_envs_per_env_runner)
    config.learners(num_learners=res.num_learners)
    return config
