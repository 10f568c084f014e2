"""Capabilities an RLModule may have, one small interface per file (as RLlib's ``rllib/core/rl_module/apis/``).

Callers ask ``isinstance(module, API)``, never which learner a module comes from.
"""

from dcgym.agents.rl.apis.group_act_api import GroupActAPI
from dcgym.agents.rl.apis.policy_file_api import PolicyFileAPI, PolicyFileContext

__all__ = ["GroupActAPI", "PolicyFileAPI", "PolicyFileContext"]
