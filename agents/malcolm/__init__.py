"""Malcolm (POMACS 2022): decentralized linear actor-critic with consensus, one agent per rack node.

Laid out as RLlib's own algorithms: :mod:`.malcolm` (``MalcolmConfig``,
``Malcolm.training_step``, :func:`rack_config`), :mod:`.malcolm_rl_module`
(one node's critic and actors), :mod:`.malcolm_learner` (Algorithm 1's
update and consensus), :mod:`.basis` (§6.2's feature maps).
"""

from dcgym.agents.malcolm.basis import BASES, features, num_features
from dcgym.agents.malcolm.malcolm import Malcolm, MalcolmConfig, RackMultiAgentEnv, rack_config
from dcgym.agents.malcolm.malcolm_learner import AddDecisionCounts, MalcolmTorchLearner
from dcgym.agents.malcolm.malcolm_rl_module import MalcolmRLModule, PassThroughLogits

__all__ = [
    "BASES",
    "AddDecisionCounts",
    "Malcolm",
    "MalcolmConfig",
    "MalcolmRLModule",
    "MalcolmTorchLearner",
    "PassThroughLogits",
    "RackMultiAgentEnv",
    "features",
    "num_features",
    "rack_config",
]
