"""Model-C's RLlib pieces (imports Ray): the Q-network module, the learner with OSML's loss and RMSProp, the
algorithm (RLlib's DQN loop over a replay of transitions in numpy arrays), the builder.

See :mod:`dcgym.agents.osml.model_c` for what they compute and why.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.dqn import DQNConfig
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS, QF_TARGET_NEXT_PREDS
from ray.rllib.algorithms.dqn.dqn_learner import QF_LOSS_KEY, QF_MEAN_KEY, TD_ERROR_MEAN_KEY
from ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module import DefaultDQNTorchRLModule
from ray.rllib.algorithms.dqn.torch.dqn_torch_learner import DQNTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.schedules.scheduler import Scheduler
from torch import nn

from dcgym.agents.osml.model_c import ModelCHyperparameters, normalize, osml_dqn_loss
from dcgym.agents.osml.policy_file import model_c_policy
from dcgym.agents.policy_format import MlpPolicy
from dcgym.agents.rl.apis import PolicyFileAPI, PolicyFileContext
from dcgym.agents.rl.replay_training import TransitionReplayDQN
from dcgym.agents.rl.spec import TrainingRun
from dcgym.agents.rl.wiring import common, policies

__all__ = ["ModelCDQN", "ModelCLearner", "ModelCModule", "build", "q_network"]


def q_network(n_in: int, n_out: int, hidden: list[int], init_std: float) -> nn.Sequential:
    """ReLU MLP with OSML's initialization: weights N(0, init_std), biases 0.1."""
    mods: list[nn.Module] = []
    width = n_in
    for h in [*hidden, n_out]:
        lin = nn.Linear(width, h)
        nn.init.normal_(lin.weight, 0.0, init_std)
        nn.init.constant_(lin.bias, 0.1)
        mods += [lin, nn.ReLU()]
        width = h
    return nn.Sequential(*mods[:-1])  # no activation on the Q-values


class ModelCModule(DefaultDQNTorchRLModule, PolicyFileAPI):
    """OSML's policy network (and, on the learner, its target network): masked Q-values of the 49 actions."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.pop("catalog_class", None)
        TorchRLModule.__init__(self, *args, catalog_class=None, **kwargs)

    def policy_file(self, context: PolicyFileContext) -> MlpPolicy:
        """Model-C's Q-network on the scaled counters (:func:`dcgym.agents.osml.policy_file.model_c_policy`)."""
        if len(set(context.module_ids)) != 1:
            raise ValueError(f"{context.path}: one Model-C per service; OSML's files hold one shared Model-C")
        return model_c_policy(self)

    def setup(self) -> None:
        self.uses_dueling = False
        self.uses_double_q = False
        self.num_atoms = 1
        self.epsilon_schedule = Scheduler(fixed_value_or_schedule=self.model_config["epsilon"], framework="torch")
        space = (
            self.observation_space["observation"]
            if hasattr(self.observation_space, "spaces")
            else self.observation_space
        )
        torch.manual_seed(int(self.model_config.get("seed", 0)))
        self.qnet = q_network(
            int(space.shape[0]),
            int(self.action_space.n),
            list(self.model_config["hidden"]),
            self.model_config["init_std"],
        )

    def get_non_inference_attributes(self) -> list[str]:
        return ["_target_qnet"]

    def make_target_networks(self) -> None:
        self._target_qnet = make_target_network(self.qnet)

    def get_target_network_pairs(self):
        return [(self.qnet, self._target_qnet)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self._qf_forward_helper(batch, None, self._target_qnet)

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        return self._qf_forward_helper(batch, None, self.qnet)

    def get_initial_state(self) -> dict:
        return {}

    def _forward_exploration(self, batch: dict[str, Any], t: int) -> dict[str, Any]:
        """RLlib's DQN exploration (``DefaultDQNTorchRLModule._forward_exploration``: the greedy action, or with
        probability epsilon one drawn uniformly among the allowed), the same calls on the random generator in the
        same order, without building a categorical distribution to take its argmax: about half the time per step
        (tests/agents/osml/test_model_c.py compares the two)."""
        q = self.compute_q_values(batch)[QF_PREDS]
        greedy = torch.argmax(q, dim=-1)  # TorchCategorical(q).to_deterministic().sample()
        self.epsilon_schedule.update(t)
        epsilon = self.epsilon_schedule.get_current_value()
        allowed = (torch.nan_to_num(q.reshape(-1, q.size(-1)), neginf=0.0) != 0.0).float()
        uniform = torch.squeeze(torch.multinomial(allowed, num_samples=1), dim=1)
        return {Columns.ACTIONS: torch.where(torch.rand((q.shape[0],)) < epsilon, uniform, greedy)}

    def _qf_forward_helper(self, batch: dict[str, Any], encoder: Any, head: nn.Module) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        if isinstance(obs, dict):
            q = head(normalize(obs["observation"].float()))
            q = torch.where(obs["action_mask"] > 0, q, torch.full_like(q, float("-inf")))
        else:
            q = head(normalize(obs.float()))
        return {QF_PREDS: q}


class ModelCLearner(DQNTorchLearner):
    """RLlib's DQN learner with OSML's loss (:func:`osml_dqn_loss`) and RMSProp."""

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        module = self._module[module_id]
        params = self.get_parameters(module)
        self.register_optimizer(
            module_id=module_id,
            optimizer=torch.optim.RMSprop(params),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        loss, td = osml_dqn_loss(
            fwd_out[QF_PREDS],
            fwd_out[QF_TARGET_NEXT_PREDS],
            batch[Columns.ACTIONS],
            batch[Columns.REWARDS],
            batch[Columns.TERMINATEDS],
            config.gamma,
            batch.get("n_step"),
        )
        q = torch.nan_to_num(fwd_out[QF_PREDS], neginf=0.0)
        self.metrics.log_dict(
            {
                QF_LOSS_KEY: loss.detach(),
                QF_MEAN_KEY: q.mean().detach(),
                TD_ERROR_MEAN_KEY: td.mean().detach(),
            },
            key=module_id,
            window=1,
        )
        return loss


class ModelCDQN(TransitionReplayDQN):
    """RLlib's DQN rounds (sample, store, one mini-batch per module per round, target copies every ``target_sync``
    sampled env steps) over a replay of transitions in numpy arrays: each service's transitions are stored in the
    ring of the module it acts with and drawn uniformly, as RLlib's ``MultiAgentEpisodeReplayBuffer`` draws them
    (:class:`~dcgym.agents.rl.replay_training.TransitionReplayDQN`)."""


def build(experiment: TrainingRun, env_config: dict[str, Any]) -> DQNConfig:
    """``algorithm: osml_dqn``: :class:`ModelCDQN` with :class:`ModelCModule` and :class:`ModelCLearner`."""
    hp = ModelCHyperparameters(**experiment.hyperparameters)
    config = common(DQNConfig(algo_class=ModelCDQN), experiment, env_config)
    config.env_runners(rollout_fragment_length=hp.rollout_fragment_length)
    config.training(
        lr=hp.lr,
        gamma=hp.gamma,
        train_batch_size_per_learner=hp.train_batch_size,
        target_network_update_freq=hp.target_sync,
        tau=1.0,
        n_step=1,
        double_q=False,
        dueling=False,
        num_atoms=1,
        epsilon=[(0, hp.epsilon), (1, hp.epsilon)],
        num_steps_sampled_before_learning_starts=hp.learning_starts,
        # ModelCDQN replays from numpy arrays of this capacity (RLlib builds the buffer named, empty and unused)
        replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer", "capacity": hp.replay_capacity},
    )
    config.learners(learner_class=ModelCLearner)
    config.reporting(min_sample_timesteps_per_iteration=hp.steps_per_iteration)
    config.rl_module(
        rl_module_spec=RLModuleSpec(
            module_class=ModelCModule,
            model_config={
                "hidden": list(hp.hidden),
                "init_std": hp.init_std,
                "epsilon": [(0, hp.epsilon), (1, hp.epsilon)],
                "dueling": False,
                "double_q": False,
                "num_atoms": 1,
            },
        )
    )
    policies(config, experiment, env_config, hp.policy_sharing)
    return config
