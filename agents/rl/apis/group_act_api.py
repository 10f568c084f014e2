"""The capability of several RLModules of one kind to act as one computation, with each module's own numbers.

A game whose agents each have their own module (Malcolm's nodes) runs one small forward pass per agent per step;
on a 14-node rack those passes were 40% of training time (docs/training.md, "Sampling in bulk").
:class:`~dcgym.agents.rl.bulk_env_runner.BulkEnvRunner` asks modules that have this API to act together.
"""

from __future__ import annotations

import abc
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the registry and heuristics' evaluations import the APIs without torch
    import torch

__all__ = ["GroupActAPI", "aligned_blocks", "draw_actions"]

ALIGNMENT_BYTES = 64
"""torch's CPU allocator aligns every new tensor to 64 bytes (c10's ``gAlignment``)."""


class GroupActAPI(abc.ABC):
    """An RLModule whose acting (forward pass and action draw) over several modules of its kind is one computation.

    The runner groups the modules that return equal, non-None :meth:`group_key` values and calls
    :meth:`group_act` once for them instead of each module's ``forward_exploration`` / ``forward_inference`` and
    RLlib's ``GetActions``. The contract is bit-identity: what :meth:`group_act` returns for a module's rows is
    what those calls return for it alone (tested against RLlib's runner in
    ``tests/agents/training/test_bulk_env_runner.py``).
    """

    @abc.abstractmethod
    def group_key(self) -> Hashable | None:
        """Modules with equal keys can act together; None: this module acts alone."""

    @classmethod
    @abc.abstractmethod
    def group_act(
        cls, modules: Sequence[Any], observations: Sequence[torch.Tensor], explore: bool
    ) -> dict[str, torch.Tensor]:
        """The columns each module's forward pass and RLlib's ``GetActions`` give for its observations (its rows),
        the modules' rows concatenated in order; the actions and their log-probabilities included."""


def aligned_blocks(rows: torch.Tensor, counts: Sequence[int]) -> list[torch.Tensor]:
    """``rows`` (R, F) split into blocks of ``counts`` rows, each block contiguous and starting at an address
    aligned as a new tensor's.

    A matrix product's last bits can depend on its operand's alignment (MKL picks its kernels by it): a product
    over a block of a larger tensor can differ from the same product over a fresh tensor of the block's rows.
    Copied into aligned blocks, the rows multiply as they do in a module's own forward pass.
    """
    per_row = rows.shape[-1]
    quantum = ALIGNMENT_BYTES // rows.element_size()
    strides = [-(-count * per_row // quantum) * quantum for count in counts]
    buffer = rows.new_empty(sum(strides))
    blocks, start, first = [], 0, 0
    for count, stride in zip(counts, strides, strict=True):
        block = buffer[start : start + count * per_row].view(count, per_row)
        block.copy_(rows[first : first + count])
        blocks.append(block)
        start, first = start + stride, first + count
    return blocks


def draw_actions(columns: dict[str, Any], module: Any, explore: bool) -> None:
    """RLlib's ``GetActions`` on one forward pass's ``columns`` for ``module``, in place: actions drawn from the
    module's exploration (or, not exploring, deterministic inference) distribution over the action inputs, and
    their log-probabilities; nothing when the forward pass gave actions itself."""
    from ray.rllib.core.columns import Columns  # Ray: only in processes that act

    if Columns.ACTIONS in columns or Columns.ACTION_DIST_INPUTS not in columns:
        return
    dist_cls = module.get_exploration_action_dist_cls() if explore else module.get_inference_action_dist_cls()
    dist = dist_cls.from_logits(columns[Columns.ACTION_DIST_INPUTS])
    if not explore:
        dist = dist.to_deterministic()
    actions = dist.sample()
    columns[Columns.ACTIONS] = actions
    if Columns.ACTION_LOGP not in columns:
        columns[Columns.ACTION_LOGP] = dist.logp(actions)
