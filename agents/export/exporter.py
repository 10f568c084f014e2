"""Trained policies -> policy files: what the C++ runtime needs to act as the RLlib modules do.

:func:`export_policy` takes a checkpoint, or a run folder of ``train.py`` (its newest checkpoint), and writes
one policy file for its trained agents. Which file, the trained modules say themselves, through the
:class:`~dcgym.agents.rl.apis.PolicyFileAPI` capability (as RLlib's ``rl_module/apis``): Malcolm's nodes give a
``linear_pair`` file (:mod:`dcgym.agents.malcolm.policy_file`), AuTO's agents ``mlp`` files with the
``increasing`` or ``multi_categorical`` head (:mod:`dcgym.agents.auto.policy_file`), the multi-LB Q-learners and
OSML's Model-C ``mlp`` files with the ``identity`` head (:mod:`dcgym.agents.marl_lb.policy_file`,
:mod:`dcgym.agents.osml.policy_file`). RLlib's own PPO and SAC modules cannot implement it: their algorithm's
spec names the function that writes them (:mod:`dcgym.agents.rl.default_modules`). The exported and original
policies agree to float32 rounding (tests/agents/export/test_export.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dcgym.agents.algorithms import algorithm
from dcgym.agents.policies.checkpoints import TrainedPolicy, trained_env_config
from dcgym.agents.policies.file_settings import settings_for
from dcgym.agents.policy_format import InputSpec, LinearPairPolicy, Policy, with_settings, write_policy
from dcgym.agents.rl.apis import PolicyFileAPI
from dcgym.agents.rl.envs import make_env
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import load_entry_point

__all__ = ["demo_policy", "export_policy", "policy_from_checkpoint"]


def export_policy(run_or_checkpoint: str | Path, out: str | Path) -> Path:
    """Write the policy file of a checkpoint (or a run folder's newest) to ``out``; returns ``out``."""
    return write_policy(policy_from_checkpoint(run_or_checkpoint), out)


def policy_from_checkpoint(run_or_checkpoint: str | Path) -> Policy:
    """The policy file contents of a checkpoint or run folder (InvalidConfigError / ValueError if it cannot be)."""
    if not Path(run_or_checkpoint).is_dir():
        raise InvalidConfigError("RUN", str(run_or_checkpoint), "a checkpoint or run folder written by train.py")
    trained = TrainedPolicy(run_or_checkpoint)
    env = make_env(trained.env, trained_env_config(trained.meta))
    trained.check_env(env)
    context = trained.policy_file_context(env)
    first = context.agent_modules[0]
    if isinstance(first, PolicyFileAPI) and all(type(m) is type(first) for m in context.agent_modules):
        policy = first.policy_file(context)
    else:
        writer = algorithm(trained.algorithm).policy_file
        if writer is None:
            raise ValueError(f"{trained.path}: its modules ({type(first).__name__}) have no policy-file form")
        policy = load_entry_point(writer)(context)
    # what its evaluation must act with: the environment's settings as trained (the writer's own ones kept)
    return with_settings(policy, {**settings_for(trained.env, trained_env_config(trained.meta)), **policy.settings})


def demo_policy(num_nodes: int = 4, seed: int = 1) -> LinearPairPolicy:
    """A small Malcolm-shaped policy with random weights, for examples and smoke tests.

    Loads are in microseconds of expected wait at a 75 us mean service time,
    scaled as Malcolm's defaults (load_scale 0.1, obs_clip 100, max_logit 10).
    """
    if not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes: got {num_nodes!r}; expected an integer >= 1")
    rng = np.random.default_rng(seed)
    spec = InputSpec(num_nodes, "sort", scale=0.1 / 75.0, offset=0.0, lo=0.0, hi=10.0)
    f = spec.num_features
    fc = num_nodes * (num_nodes + 7) // 2 + 1
    bound = 1.0 / np.sqrt(f)
    return LinearPairPolicy(
        spec,
        rng.uniform(-bound, bound, (num_nodes, num_nodes, f)),
        rng.uniform(-bound, bound, (num_nodes, num_nodes, f)),
        "customized",
        rng.uniform(-1 / np.sqrt(fc), 1 / np.sqrt(fc), (num_nodes, fc)),
        max_logit=10.0,
    )
