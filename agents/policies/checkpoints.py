"""Checkpoints of trained agents: how to find and read them, and how a trained policy acts from one.

A checkpoint is the folder ``Algorithm.save_to_path`` writes plus ``dcgym_checkpoint.json``
(:data:`META_FILE`): the resolved experiment, the iteration and timesteps, which module acts for which agent,
and how RLlib maps the module's actions to the environment's bounds. So a checkpoint is self-describing:
copied anywhere, it can be evaluated and exported without its run folder.

:class:`TrainedPolicy` loads the trained modules (no Ray session needed) and acts for every trained agent of
the environment, decentralized: each agent's observation goes through its own module's ``forward_inference``
(agents sharing a module are batched) and the action distribution's deterministic action (or a sample, with
``explore``) goes to the environment, rescaled as RLlib's env runners do. Each family's evaluation runs it
through its environment (:mod:`dcgym.agents.evaluation.checkpoints`).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.spaces import flatdim

from dcgym.agents.rl.apis import PolicyFileContext
from dcgym.envs.error import InvalidConfigError, Verbatim

__all__ = [
    "CHECKPOINTS_DIR",
    "META_FILE",
    "MODEL_C_MODULE",
    "ACTING_PIECES",
    "RESUMING_PIECES",
    "TrainedPolicy",
    "check_fits",
    "check_pieces",
    "checkpoint_labels",
    "checkpoint_scenario",
    "deterministic_action",
    "find_checkpoint",
    "list_checkpoints",
    "read_json",
    "read_meta",
    "trained_env_config",
    "write_meta",
]

META_FILE = "dcgym_checkpoint.json"
"""dcgym's description of a checkpoint, beside RLlib's files."""

CHECKPOINTS_DIR = "checkpoints"
"""Where a run folder keeps its checkpoints (``iter_000010``, ...)."""

_MODULES = Path("learner_group", "learner", "rl_module")

MODEL_C_MODULE = _MODULES / "shared"
"""OSML's Model-C module in a checkpoint of osml_dqn (one module shared by the services)."""

ACTING_PIECES = (_MODULES / "metadata.json", _MODULES / "class_and_ctor_args.pkl", _MODULES / "module_state.pkl")
"""The files of a checkpoint its trained modules are rebuilt from (evaluate, export)."""

RESUMING_PIECES = (
    *ACTING_PIECES,
    Path("rllib_checkpoint.json"),
    Path("algorithm_state.pkl"),
    Path("learner_group", "state.pkl"),
    Path("learner_group", "learner", "state.pkl"),
)
"""The files a checkpoint needs to continue training from it (the optimizers' states as well as the weights)."""


# ------------------------------------------------------------------------------ files


def write_meta(path: str | Path, meta: Mapping[str, Any]) -> Path:
    """Write ``dcgym_checkpoint.json`` into the checkpoint folder ``path``."""
    target = Path(path) / META_FILE
    target.write_text(json.dumps(dict(meta), indent=2) + "\n", encoding="utf-8")
    return target


def read_meta(checkpoint: str | Path) -> dict[str, Any]:
    """The checkpoint's ``dcgym_checkpoint.json``."""
    return read_json(Path(checkpoint) / META_FILE)


def read_json(path: Path) -> Any:
    """The JSON document in ``path``; InvalidConfigError naming the file if it is not JSON (cut short, edited)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidConfigError(
            str(path), Verbatim(f"a file that is not JSON ({exc})"), "the JSON document train.py wrote"
        ) from None


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """The checkpoints of a run folder, oldest first (by iteration)."""
    folder = Path(run_dir) / CHECKPOINTS_DIR
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if (p / META_FILE).is_file()]
    return sorted(found, key=lambda p: (read_meta(p)["iteration"], p.name))


def find_checkpoint(run_or_checkpoint: str | Path) -> Path:
    """A checkpoint folder as given, or a run folder's newest checkpoint, as an absolute path (a relative one is
    relative to the working directory); InvalidConfigError naming ``policy``."""
    path = Path(run_or_checkpoint).expanduser().resolve()
    if (path / META_FILE).is_file():
        return path
    if path.is_dir():
        found = list_checkpoints(path)
        if found:
            return found[-1]
        why = "a checkpoint or run folder written by train.py (this folder has no dcgym_checkpoint.json"
        raise InvalidConfigError("policy", str(run_or_checkpoint), why + " and no checkpoints/)")
    raise InvalidConfigError(
        "policy",
        str(run_or_checkpoint),
        "a heuristic name, or an existing checkpoint or run folder written by train.py",
    )


def check_pieces(checkpoint: Path, pieces: Sequence[Path], field: str) -> None:
    """Raise InvalidConfigError naming ``field`` and the first missing file if ``checkpoint`` lacks one of
    ``pieces`` (a copy cut short, a folder pruned by hand): before RLlib reads it and fails on the hole."""
    missing = [str(p) for p in pieces if not (checkpoint / p).is_file()]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise InvalidConfigError(
            field, str(checkpoint), f"a complete checkpoint written by train.py (this one has no {missing[0]}{more})"
        )


# ------------------------------------------------------------------------------ acting


@contextlib.contextmanager
def _quiet(name: str):
    """Raise logger ``name`` to ERROR for the duration, then restore its level."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class TrainedPolicy:
    """The trained modules of a checkpoint, each agent acting through its own module (decentralized)."""

    def __init__(self, run_or_checkpoint: str | Path, explore: bool = False) -> None:
        import torch  # torch and Ray: only to act from a checkpoint
        from ray.rllib.core.rl_module.multi_rl_module import MultiRLModule

        self.path = find_checkpoint(run_or_checkpoint)
        check_pieces(self.path, ACTING_PIECES, "policy")
        self.meta = read_meta(self.path)
        self.env: str = self.meta["experiment"]["env"]
        """The versioned environment it was trained on (``rack_v0``)."""
        self.algorithm: str = self.meta["experiment"]["algorithm"]
        """The algorithm that trained it (``ppo``)."""
        self.explore = explore
        self.agent_to_module: dict[str, str] = dict(self.meta["agent_to_module"])
        with _quiet("ray._common.deprecation"):  # RLlib warns about its own deprecated call while rebuilding modules
            self.modules = MultiRLModule.from_checkpoint(str(self.path / _MODULES))
        self._groups: dict[str, list[str]] = {}
        for agent, module in self.agent_to_module.items():
            self._groups.setdefault(module, []).append(agent)
        self._torch = torch
        self._states: dict[str, Any] = {}  # recurrent modules: each agent's state, carried from step to step

    def reset(self) -> None:
        """Forget the recurrent modules' states: the next :meth:`act` starts an episode."""
        self._states.clear()

    def check_env(self, env) -> None:
        """Raise InvalidConfigError if ``env``'s agents or observation sizes differ from the trained modules'."""
        # flatdim: a Box's size, and a Dict's (colo_v0: counters and action mask) flattened, as train.py counts them
        sizes = {a: int(flatdim(self.modules[m].observation_space)) for a, m in self.agent_to_module.items()}
        check_fits(self.path, sizes, env, partial=bool(self.meta.get("partial_agents")))

    def policy_file_context(self, env) -> PolicyFileContext:
        """The trained agents of ``env`` with their modules, as a policy file is written from them
        (:class:`~dcgym.agents.rl.apis.PolicyFileContext`); ``env`` built with the training's arguments."""
        agents = [a for a in env.possible_agents if a in self.agent_to_module]
        return PolicyFileContext(
            self.path, env, agents, [self.agent_to_module[a] for a in agents], self.modules, self.meta
        )

    def act(self, observations: Mapping[str, np.ndarray], action_spaces: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """One action per agent in ``observations``, each from its own module, mapped into its action space."""
        from ray.rllib.core import Columns
        from ray.rllib.utils.spaces.space_utils import clip_action, unsquash_action

        actions = {}
        for module_id, agents in self._groups.items():
            live = [a for a in agents if a in observations]
            if not live:
                continue
            module = self.modules[module_id]
            batch = np.stack([np.asarray(observations[a], np.float32).reshape(-1) for a in live])
            stateful = module.is_stateful()
            with self._torch.no_grad():
                obs = {Columns.OBS: self._torch.from_numpy(batch)}
                if stateful:  # one time step per agent, from the state the agent's previous step left
                    obs[Columns.OBS] = obs[Columns.OBS][:, None]
                    obs[Columns.STATE_IN] = self._recurrent_state(module, live)
                out = module.forward_exploration(obs) if self.explore else module.forward_inference(obs)
                if Columns.ACTIONS in out:  # the module acts itself (Q-networks: argmax, epsilon-greedy)
                    chosen = out[Columns.ACTIONS]
                else:
                    dist_cls = (
                        module.get_exploration_action_dist_cls()
                        if self.explore
                        else module.get_inference_action_dist_cls()
                    )
                    dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
                    chosen = dist.sample() if self.explore else deterministic_action(dist)
                if stateful:
                    for k, agent in enumerate(live):
                        self._states[agent] = {key: x[k] for key, x in out[Columns.STATE_OUT].items()}
                    chosen = chosen[:, 0]
            for agent, action in zip(live, chosen.numpy()):
                space = action_spaces[agent]
                if self.meta.get("normalize_actions", True):
                    action = unsquash_action(action, space)
                elif self.meta.get("clip_actions", False):
                    action = clip_action(action, space)
                actions[agent] = action
        return actions

    def _recurrent_state(self, module, agents: Sequence[str]):
        """The batched recurrent state of ``agents`` (the module's initial state for an agent's first step): a
        mapping of tensors, as RLlib's recurrent modules keep it."""
        initial = module.get_initial_state()
        states = [self._states.get(a, initial) for a in agents]
        return {key: self._torch.stack([s[key] for s in states]) for key in initial}


def deterministic_action(dist):
    """The action a distribution's mode stands for: its deterministic sample, squashed as its samples are.

    RLlib's squashed Gaussian (SAC) returns the pre-tanh mean from
    ``to_deterministic()``; its samples are tanh-squashed into [low, high], so
    the mode's action is the squashed mean (what the exporter writes too).
    """
    chosen = dist.to_deterministic().sample()
    squash = getattr(dist, "_squash", None)  # TorchSquashedGaussian's own tanh map into [low, high]
    return squash(chosen) if squash is not None else chosen


def check_fits(path: str | Path, sizes: Mapping[str, int], env, *, partial: bool = False) -> None:
    """Raise InvalidConfigError naming ``policy`` unless ``env`` has the agents and observation sizes ``sizes``
    (``partial``: some of ``env``'s agents, the others held by its rules)."""
    agents = list(env.possible_agents)
    if partial and set(sizes) <= set(agents):
        agents = [a for a in agents if a in sizes]
    elif sorted(agents) != sorted(sizes):
        raise InvalidConfigError(
            "policy",
            str(path),
            f"a checkpoint whose agents are the environment's ({len(agents)}: {agents[0]} .. {agents[-1]}); "
            f"it was trained with {len(sizes)}",
        )
    for agent in agents:
        got = int(flatdim(env.observation_space(agent)))
        if sizes[agent] != got:
            raise InvalidConfigError(
                "policy", str(path), f"a checkpoint for observations of size {got} ({agent}); it takes {sizes[agent]}"
            )


def trained_env_config(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The environment's arguments as the algorithm used them (or as the experiment gave them)."""
    if meta.get("env_config"):
        return dict(meta["env_config"])
    experiment = meta["experiment"]
    return {"scenario": experiment["scenario"], **experiment.get("env_args", {})}


def checkpoint_labels(specs: Sequence[Any]) -> list[str]:
    """Result labels for checkpoint specs: ``<algorithm> (trained)``; among several of one algorithm,
    ``<algorithm>@<checkpoint>``, then ``<algorithm>@<run>/<checkpoint>``, then the spec itself."""
    paths = [find_checkpoint(s) for s in specs]
    metas = [read_meta(p) for p in paths]
    algorithms = [m["experiment"]["algorithm"] for m in metas]
    candidates = [
        [f"{a} (trained)" for a in algorithms],
        [f"{a}@{p.name}" for a, p in zip(algorithms, paths)],
        [f"{a}@{m.get('run_name') or p.parent.parent.name}/{p.name}" for a, m, p in zip(algorithms, metas, paths)],
    ]
    labels = [str(s) for s in specs]
    for k in range(len(specs)):
        for names in candidates:
            if names.count(names[k]) == 1:
                labels[k] = names[k]
                break
    return labels


def checkpoint_scenario(spec: Any) -> tuple[str, dict[str, Any]]:
    """The scenario a checkpoint was trained on and its overrides (the default scenario of its evaluation)."""
    experiment = read_meta(find_checkpoint(spec))["experiment"]
    return experiment["scenario"], dict(experiment.get("env_args", {}).get("overrides") or {})
