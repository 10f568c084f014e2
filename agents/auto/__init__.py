"""AuTO (SIGCOMM 2018): the two learning agents of its central system, on RLlib's new API stack.

- sRLA (§4.1): DDPG for the K - 1 MLFQ demotion thresholds: :mod:`.ddpg`
  (``DDPGConfig``, ``DDPG``), :mod:`.ddpg_rl_module` (actor, critic, target
  networks, exploration), :mod:`.ddpg_learner` (Algorithm 1's losses).
- lRLA (§4.2): REINFORCE with a baseline for each long flow's priority, rate
  cap and path: :mod:`.pg` (``PGConfig``, ``PG``), :mod:`.pg_rl_module`
  (the policy network), :mod:`.pg_learner` (eq. 2's update).
"""

from dcgym.agents.auto.ddpg import DDPG, DDPGConfig
from dcgym.agents.auto.ddpg_learner import DDPGTorchLearner, ddpg_losses
from dcgym.agents.auto.ddpg_rl_module import DDPGRLModule, DeterministicAction, QNetwork
from dcgym.agents.auto.pg import PG, PGConfig
from dcgym.agents.auto.pg_learner import PGTorchLearner, reinforce_loss
from dcgym.agents.auto.pg_rl_module import PAPER_HIDDENS, PGRLModule, group_sizes

__all__ = [
    "DDPG",
    "DDPGConfig",
    "DDPGRLModule",
    "DDPGTorchLearner",
    "DeterministicAction",
    "PAPER_HIDDENS",
    "PG",
    "PGConfig",
    "PGRLModule",
    "PGTorchLearner",
    "QNetwork",
    "ddpg_losses",
    "group_sizes",
    "reinforce_loss",
]
