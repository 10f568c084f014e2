"""Basis functions of Malcolm's linear critic and actors (POMACS 2022, §6.2).

Malcolm approximates the critic as ``V_θ(x) = <φ_c(x), θ>`` and each actor as
a softmax over ``<φ_a(x), w_j>`` (one row ``w_j`` per destination node), so
everything an agent can represent is decided by the feature maps here. Each
map takes the N node loads ``x`` (the agent's view, shape ``(..., N)``) and
returns ``(..., F)`` features; :func:`num_features` gives F without data.

| name | features | F |
|---|---|---|
| ``customized`` | x_i, x_i², x_i³, x_i⁴ (i = 1..N), x_i x_j (i < j), bias: §6.2's critic basis | N(N+7)/2 + 1 |
| ``sort`` | log-rank of each x_i among the loads sorted descending, x_i, bias: §6.2's actor basis | 2N + 1 |
| ``raw`` | x_i, bias | N + 1 |
| ``quadratic`` | x_i, x_i², x_i x_j (i < j), bias | N(N+3)/2 + 1 |

The ``sort`` rank feature of node i is ``(log(rank_i + 1) - ½ log N) / (½ log N)``
with rank 0 for the most loaded node (ties go to the lower node id), so it
runs from -1 (most loaded) to +1 (least loaded); the paper's text names the
``log(rank)`` term, the scaling is the authors' public code's. With
one node the rank feature is 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

__all__ = ["BASES", "customized", "features", "num_features", "quadratic", "raw", "sort"]


def _pairs(x: torch.Tensor) -> torch.Tensor:
    """x_i x_j for i < j in row-major order (i, then j), shape (..., N(N-1)/2)."""
    n = x.shape[-1]
    i, j = torch.triu_indices(n, n, offset=1, device=x.device)
    return x[..., i] * x[..., j]


def _bias(x: torch.Tensor) -> torch.Tensor:
    return torch.ones(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)


def customized(x: torch.Tensor) -> torch.Tensor:
    """Malcolm's critic basis (§6.2): x, x², x³, x⁴ per node, x_i x_j for i < j, bias."""
    x2 = x * x
    return torch.cat([x, x2, x2 * x, x2 * x2, _pairs(x), _bias(x)], dim=-1)


def sort(x: torch.Tensor) -> torch.Tensor:
    """Malcolm's actor basis (§6.2): scaled log-rank of each load (descending order), the loads, bias."""
    n = x.shape[-1]
    order = torch.argsort(x, dim=-1, descending=True, stable=True)
    rank = torch.argsort(order, dim=-1)  # rank[i] = position of node i, 0 = most loaded
    if n > 1:
        half_log_n = 0.5 * math.log(n)
        # log(rank + 1) looked up, not computed in place: a vectorised log and its scalar tail may differ in the
        # last bit, and where an element falls depends on the batch's shape; a table gives every row the same bits
        log_rank = torch.log(torch.arange(1, n + 1, dtype=x.dtype, device=x.device))[rank]
        ranks = (log_rank - half_log_n) / half_log_n
    else:
        ranks = torch.zeros_like(x)
    return torch.cat([ranks, x, _bias(x)], dim=-1)


def raw(x: torch.Tensor) -> torch.Tensor:
    """The loads and a bias."""
    return torch.cat([x, _bias(x)], dim=-1)


def quadratic(x: torch.Tensor) -> torch.Tensor:
    """A full quadratic: x, x², x_i x_j for i < j, bias."""
    return torch.cat([x, x * x, _pairs(x), _bias(x)], dim=-1)


BASES: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], Callable[[int], int]]] = {
    "customized": (customized, lambda n: n * (n + 7) // 2 + 1),
    "sort": (sort, lambda n: 2 * n + 1),
    "raw": (raw, lambda n: n + 1),
    "quadratic": (quadratic, lambda n: n * (n + 3) // 2 + 1),
}
"""Every basis by name: (feature map, number of features for N nodes)."""


def num_features(name: str, num_nodes: int) -> int:
    """How many features basis ``name`` makes from ``num_nodes`` loads."""
    return BASES[name][1](num_nodes)


def features(name: str, x: torch.Tensor) -> torch.Tensor:
    """The features of basis ``name`` for loads ``x`` of shape (..., N)."""
    return BASES[name][0](x)
