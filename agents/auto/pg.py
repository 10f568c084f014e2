"""AuTO's lRLA: policy gradient for the long flows (SIGCOMM 2018, §2.2, §4.2, §5.2.2), on RLlib's new API stack.

RLlib no longer ships PG/REINFORCE; this is REINFORCE with the baseline
of AuTO's eq. (2), laid out as RLlib's own algorithms: :class:`PGConfig`
and :class:`PG` (``training_step``: sample ``train_batch_size_per_learner``
steps with the current policy, one gradient step on them, sync the
EnvRunners), the network in :mod:`.pg_rl_module`, the update in
:mod:`.pg_learner`.

```python
from dcgym.agents.auto import PGConfig
config = PGConfig().environment("CartPole-v1").training(hiddens=[64, 64])
algo = config.build_algo()
result = algo.train()
```

The reward is the environment's: flow_v0 gives lRLA the ratio of the mean
throughputs of the long flows finished in two consecutive intervals,
capped (§4.2, eq. 3).

Defaults: the network is the paper's (10 hidden layers of 300); the paper
gives no learning rate, discount or batch size: Adam at 1e-3 (the rate of
DeepRM, Mao et al., HotNets 2016, whose PG formulation AuTO's §2.2 follows),
γ = 0.9 and 200 steps per update (2 s of flow_v0 at its 10 ms interval).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from dcgym.agents.auto.pg_learner import PGTorchLearner
from dcgym.agents.auto.pg_rl_module import NETWORKS, PAPER_HIDDENS, PGRLModule
from dcgym.agents.auto.system import AUTO_LRLA
from dcgym.agents.rl.on_policy import on_policy_training_step
from dcgym.agents.rl.spec import TrainingRun
from dcgym.agents.rl.wiring import common, one_agent_environment, set_provided, training
from dcgym.envs.flow.game import FlowEnvConfig, FlowGame

__all__ = ["PG", "PGConfig"]


class PGConfig(AlgorithmConfig):
    """Configuration of :class:`PG` (REINFORCE with AuTO's cumulative-average baseline)."""

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or PG)
        self.lr = 1e-3
        """Adam learning rate (DeepRM's; AuTO gives none)."""
        self.gamma = 0.9
        """Discount of the Monte Carlo returns v_t (AuTO gives none; 0.9 looks about 10 intervals, 100 ms, ahead)."""
        self.train_batch_size_per_learner = 200
        """Steps sampled with one policy and used for one gradient step."""
        self.num_env_runners = 0
        self.hiddens = list(PAPER_HIDDENS)
        """Hidden layers of the policy network (§5.2.2: 10 of 300; e.g. [64, 64] for a small one)."""
        self.use_baseline = True
        """Subtract the cumulative average of the returns (eq. 2); False gives plain REINFORCE (eq. 1)."""
        self.network = "paper"
        """paper: one flat network over the observation (§5.2.2); rowwise: one network per listed flow (.rowwise)."""
        self.row_width = 0
        """rowwise: features of a listed flow's row (build_lrla sets it from the environment)."""
        self.rule_init = False
        """rowwise: start at pathbal's choice (needs the environment's ``path_loads``)."""
        self.rule_stay = 0.0
        """rule_init: a flow leaves its path only for one lighter by this share of the heaviest's load."""
        self.keep_level = False
        """rowwise: the environment's level index has the keep choice (flow_v0's ``keep_level``; build_lrla sets
        it)."""
        self.rule_levels = "last"
        """rule_init: the level a flow starts pinned to: ``last``, ``mlfq`` (the level the environment's initial
        MLFQ thresholds give its bytes sent; build_lrla sets ``rule_level_bytes`` from them) or ``pin`` (MLFQ's own
        level below ``rule_pin_bytes`` sent, the last level from it; needs the environment's ``keep_level``)."""
        self.rule_level_bytes: list[float] | None = None
        """rule_levels mlfq: the thresholds in bytes (None: build_lrla sets the environment's initial ones)."""
        self.rule_pin_bytes: float | None = None
        """rule_levels pin: the bytes sent from which a long flow is pinned to the last level."""

    def training(
        self,
        *,
        hiddens: list[int] = NotProvided,
        use_baseline: bool = NotProvided,
        network: str = NotProvided,
        row_width: int = NotProvided,
        rule_init: bool = NotProvided,
        rule_stay: float = NotProvided,
        rule_levels: str = NotProvided,
        rule_level_bytes: list[float] = NotProvided,
        rule_pin_bytes: float = NotProvided,
        keep_level: bool = NotProvided,
        **kwargs: Any,
    ) -> PGConfig:
        """PG's own settings (see the attribute docstrings in ``__init__``) and RLlib's (``lr``, ``gamma``, ...)."""
        super().training(**kwargs)
        given = {
            "hiddens": hiddens,
            "use_baseline": use_baseline,
            "network": network,
            "row_width": row_width,
            "rule_init": rule_init,
            "rule_stay": rule_stay,
            "rule_levels": rule_levels,
            "rule_level_bytes": rule_level_bytes,
            "rule_pin_bytes": rule_pin_bytes,
            "keep_level": keep_level,
        }
        set_provided(self, given, lists=("hiddens", "rule_level_bytes"))
        return self

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        own = {"hiddens": list(self.hiddens), "network": self.network}
        if self.network == "rowwise":
            own |= {"row_width": self.row_width, "rule_init": self.rule_init, "rule_stay": self.rule_stay}
            own["rule_levels"] = self.rule_level_bytes if self.rule_levels == "mlfq" else None
            own["rule_pin"] = self.rule_pin_bytes if self.rule_levels == "pin" else None
            own["keep_level"] = self.keep_level
        return super()._model_config_auto_includes | own

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=PGRLModule)

    def get_default_learner_class(self) -> type:
        return PGTorchLearner

    def validate(self) -> None:
        super().validate()
        err = self._value_error
        if self.framework_str != "torch":
            err(f"`framework` ({self.framework_str!r}) must be 'torch'")
        if not (isinstance(self.hiddens, list) and all(isinstance(h, int) and h >= 1 for h in self.hiddens)):
            err(f"`hiddens` ({self.hiddens!r}) must be a list of integers >= 1")
        if not 0.0 <= self.gamma <= 1.0:
            err(f"`gamma` ({self.gamma}) must be in [0, 1]")
        if isinstance(self.lr, (int, float)) and not self.lr > 0:
            err(f"`lr` ({self.lr}) must be > 0")
        if not isinstance(self.use_baseline, bool):
            err(f"`use_baseline` ({self.use_baseline!r}) must be true or false")
        if self.network not in NETWORKS:
            err(f"`network` ({self.network!r}) must be one of {list(NETWORKS)}")
        if not isinstance(self.rule_init, bool) or (self.rule_init and self.network != "rowwise"):
            err(f"`rule_init` ({self.rule_init!r}) must be true or false, and true only with network 'rowwise'")
        if not (isinstance(self.rule_stay, (int, float)) and 0 <= self.rule_stay <= 1):
            err(f"`rule_stay` ({self.rule_stay!r}) must be a number in [0, 1]")
        if self.rule_levels not in ("last", "mlfq", "pin"):
            err(f"`rule_levels` ({self.rule_levels!r}) must be 'last', 'mlfq' or 'pin'")
        if self.rule_levels == "mlfq" and self.rule_init and not self.rule_level_bytes:
            err("`rule_level_bytes` (None) must list the MLFQ thresholds in bytes for `rule_levels` 'mlfq'")
        pin = self.rule_pin_bytes
        if self.rule_levels == "pin" and self.rule_init:
            if not (isinstance(pin, (int, float)) and not isinstance(pin, bool) and 0 < pin < float("inf")):
                err(f"`rule_pin_bytes` ({pin!r}) must be a number of bytes > 0 for `rule_levels` 'pin'")
            if not self.keep_level:
                err("`rule_levels` ('pin') leaves levels to MLFQ: it needs the environment's keep_level: true")


class PG(Algorithm):
    """REINFORCE with a baseline (AuTO's eq. 2) as an RLlib Algorithm."""

    @classmethod
    def get_default_config(cls) -> PGConfig:
        return PGConfig()

    def training_step(self) -> None:
        """Sample `train_batch_size_per_learner` steps, take one gradient step on all of them, sync the weights."""
        on_policy_training_step(self, minibatch_size=None)


def build_lrla(experiment: TrainingRun, env_config: dict[str, Any]) -> PGConfig:
    """``algorithm: auto_lrla``: lRLA (REINFORCE) on ``dcgym/FlowLrla-v0``, flow_v0 with the thresholds held at the
    scenario's; the hyperparameters are the settings of :meth:`PGConfig.training` (``network: rowwise`` takes its
    row width from the environment)."""
    config = common(PGConfig(), experiment, env_config)
    one_agent_environment(config, AUTO_LRLA.one_agent_forms[experiment.env].env_id, env_config)
    training(config, experiment.hyperparameters)
    if config.network == "rowwise":
        keys = FlowEnvConfig.model_fields
        game = FlowGame({k: v for k, v in env_config.items() if k in keys})
        config.training(row_width=game.lrla_row_width, keep_level=game.level_choices > game.levels)
        if config.rule_level_bytes is None:
            config.training(rule_level_bytes=list(game.initial_thresholds))
    return config
