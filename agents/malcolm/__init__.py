"""Malcolm (POMACS 2022): decentralized linear actor-critic with consensus, one agent per rack node.

Laid out as RLlib's own algorithms: :mod:`.malcolm` (``MalcolmConfig``,
``Malcolm.training_step``, :func:`rack_config`), :mod:`.malcolm_rl_module`
(one node's critic and actors), :mod:`.fill_rl_module` (the fill actor:
water-filling tables with learned gains), :mod:`.malcolm_learner` (Algorithm 1's
update and consensus), :mod:`.basis` (§6.2's feature maps), :mod:`.policy_file`
(the trained nodes as a ``linear_pair`` policy file), :mod:`.fill` (the ``fill`` head: water-filling tables
with gains, in numpy), :mod:`.system` (the
algorithm as the registry sees it). The names below are imported on first
use: importing the package loads neither Ray nor torch.
"""

from dcgym.agents.rl.lazy import lazy_exports

_EXPORTS = {
    "BASES": "basis",
    "features": "basis",
    "num_features": "basis",
    "Malcolm": "malcolm",
    "MalcolmConfig": "malcolm",
    "RackMultiAgentEnv": "malcolm",
    "rack_config": "malcolm",
    "AddDecisionCounts": "malcolm_learner",
    "MalcolmTorchLearner": "malcolm_learner",
    "MalcolmFillRLModule": "fill_rl_module",
    "MalcolmRLModule": "malcolm_rl_module",
    "PassThroughLogits": "malcolm_rl_module",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
