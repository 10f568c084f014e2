"""AuTO (SIGCOMM 2018): the two learning agents of its central system, on RLlib's new API stack.

- sRLA (§4.1): DDPG for the K - 1 MLFQ demotion thresholds: :mod:`.ddpg`
  (``DDPGConfig``, ``DDPG``), :mod:`.ddpg_rl_module` (actor, critic, target
  networks, exploration), :mod:`.ddpg_learner` (Algorithm 1's losses).
- lRLA (§4.2): REINFORCE with a baseline for each long flow's priority, rate
  cap and path: :mod:`.pg` (``PGConfig``, ``PG``), :mod:`.pg_rl_module`
  (the policy network), :mod:`.pg_learner` (eq. 2's update).

:mod:`.policy_file` writes either trained agent as a policy file; :mod:`.system` is what the registry sees
(``auto_srla``, ``auto_lrla``). The names below are imported on first use: importing the package loads
neither Ray nor torch.
"""

from dcgym.agents.rl.lazy import lazy_exports

_EXPORTS = {
    "DDPG": "ddpg",
    "DDPGConfig": "ddpg",
    "DDPGTorchLearner": "ddpg_learner",
    "ddpg_losses": "ddpg_learner",
    "DDPGRLModule": "ddpg_rl_module",
    "DeterministicAction": "ddpg_rl_module",
    "QNetwork": "ddpg_rl_module",
    "PG": "pg",
    "PGConfig": "pg",
    "PGTorchLearner": "pg_learner",
    "reinforce_loss": "pg_learner",
    "PAPER_HIDDENS": "pg_rl_module",
    "PGRLModule": "pg_rl_module",
    "group_sizes": "pg_rl_module",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
