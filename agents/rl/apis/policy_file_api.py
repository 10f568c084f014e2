"""The capability of a trained RLModule to become a policy file that the C++ runtime runs (docs/policy_format.md)."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcgym.agents.policy_format import Policy

__all__ = ["PolicyFileAPI", "PolicyFileContext"]


@dataclass(frozen=True)
class PolicyFileContext:
    """The trained agents of a checkpoint, with what their policy file may need of the environment."""

    path: Path
    """The checkpoint (for messages)."""
    env: Any
    """The environment they were trained on, built with the training's arguments (its spaces and settings)."""
    agents: Sequence[str]
    """The trained agents, in the environment's order (some of its agents when the others are held by rules)."""
    module_ids: Sequence[str]
    """Each agent's module id (agents sharing a module repeat it)."""
    modules: Mapping[str, Any]
    """The trained modules by id."""
    meta: Mapping[str, Any]
    """The checkpoint's description (``normalize_actions``, ``clip_actions``, ...)."""

    @property
    def agent_modules(self) -> list[Any]:
        """Each agent's module, in agent order."""
        return [self.modules[m] for m in self.module_ids]


class PolicyFileAPI(abc.ABC):
    """An RLModule that says which policy file its trained agents make."""

    @abc.abstractmethod
    def policy_file(self, context: PolicyFileContext) -> Policy:
        """The policy file of the trained agents of ``context``, whose first agent this module acts for.

        Raises ValueError (saying why) when the trained modules have no policy-file form.
        """
