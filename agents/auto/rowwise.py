"""lRLA's row-wise network: one small MLP applied to each listed long flow (AuTO §4.2, its decisions made per flow).

AuTO's lRLA (§5.2.2) is one fully connected network over the flat list of
n_l flows, so its inputs and outputs grow with n_l and it is trained for a
fixed n_l (11 in the paper). At 80% load on web search about 400 long flows
are active at once (docs/results/auto.md), and the path rule lRLA's action
space contains needs 128-256 of them listed to pass QSJF. This network has
the same action (per flow a level, a rate cap and a path) but shares its
weights over the flows: row i of the observation (flow i's features, with
``path_loads`` its paths' relative loads) and the shared features after the
rows (the m_l finished long flows) go through the MLP to flow i's logits.
Its parameters do not depend on n_l, which can follow the load.

The policy file is the ``mlp`` kind with a row layout (format version 5,
docs/policy_format.md): the C++ runtime applies the same network row by row.

Rows without a flow (all zeros; their bytes-sent feature is 0) do not act:
the engine skips them. In training their logits are replaced by a fixed
one-hot (choice 0 of each categorical, probability 1), so they add nothing
to log π and the gradient; :meth:`RowwiseNetwork.logits` without ``mask``
is what the runtime computes for every row.

``rule_init`` starts the network at pathbal's choice over the listed flows,
all at once instead of one after the other: hidden units carry the
path-load features through the ReLU layers, and the path logits are
-``RULE_GAIN`` times them plus ``RULE_GAIN`` x ``rule_stay`` on the flow's
current path (a one-hot the first layer makes from its path feature), so a
flow moves to the least-loaded path only if that is lighter by more than
``rule_stay`` of the heaviest's load: moving every listed flow at once to
its least-loaded path sends the flows of one host to the same plane
together, which pathbal's one-at-a-time moves avoid. The level logits pin
the flow to the last level (``pathbal:demote=true``), or with
``rule_levels`` (the MLFQ thresholds in bytes) to the level MLFQ gives its
bytes sent (pathbal without ``demote``; ramps of the bytes feature count the
thresholds passed), or with ``rule_pin`` (bytes; the environment's
``keep_level`` choice needed) leave the level to MLFQ below that many bytes
sent and pin the flow to the last level from it (``pathbal:demote=true,
demote_bytes=...``); the cap logits choose no cap. The other weights of the
last layer are scaled down so the rule dominates at the start.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["BYTES_FEATURE", "RULE_GAIN", "RowwiseNetwork"]

PATH_FEATURE = 2
"""Index of the flow's path (path / P) in an active long flow's row."""
BYTES_FEATURE = 4
"""Index of bytes sent in an active long flow's row (flow/auto_agents.hpp): 0 only in a row without a flow."""
ACTIVE_FEATURES = 6
"""The features of an active long flow's row before its path loads."""
RULE_GAIN = 30.0
"""Path logit per unit of relative path load under ``rule_init`` (a 0.1 difference: 3 nats)."""
RULE_BIAS = 6.0
"""The last level's and the uncapped rate's logit margin under ``rule_init``."""
LEVEL_RAMP = 20.0
"""Under ``rule_levels``, the slope of each threshold's ramp in the bytes feature (width 0.05: a factor 3.2 in
bytes, centred on the threshold)."""
RANDOM_SCALE = 0.01
"""Under ``rule_init``, the last layer's other weights are scaled by this."""


class RowwiseNetwork(nn.Module):
    """The same MLP on each of ``rows`` rows of ``row_width`` features, with the ``shared`` features appended.

    ``choices``: the sizes of one row's categoricals (flow_v0: levels, caps, paths).
    """

    def __init__(
        self,
        rows: int,
        row_width: int,
        shared: int,
        choices: list[int],
        hiddens: list[int],
        rule_init: bool = False,
        rule_stay: float = 0.0,
        rule_levels: list[float] | None = None,
        keep_level: bool = False,
        rule_pin: float | None = None,
    ) -> None:
        super().__init__()
        self.rows, self.row_width, self.shared, self.choices = rows, row_width, shared, list(choices)
        self.keep_level = keep_level
        layers: list[nn.Module] = []
        width = row_width + shared
        for h in hiddens:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, sum(choices)))
        self.net = nn.Sequential(*layers)
        pad = torch.full((sum(choices),), -1e4)
        start = 0
        for c in choices:
            pad[start] = 0.0
            start += c
        self.register_buffer("pad_logits", pad, persistent=False)
        if rule_init:
            self._rule_init(hiddens, rule_stay, rule_levels, rule_pin)

    def _rule_init(
        self, hiddens: list[int], stay: float, levels_at: list[float] | None, pin: float | None = None
    ) -> None:
        """Start at pathbal's choice with a margin ``stay`` and the level of ``levels_at`` or ``pin`` (module
        docstring); needs the path loads in the rows and hidden layers wide enough for the units below."""
        choices, _, paths = self.choices
        levels = choices - 1 if self.keep_level else choices
        if pin is not None and (levels_at is not None or not self.keep_level):
            raise ValueError(
                "rule_pin: leaves the level to MLFQ below the pinning size, so it needs the environment's keep_level "
                "choice and no rule_levels thresholds"
            )
        if levels_at is not None and len(levels_at) != levels - 1:
            raise ValueError(f"rule_levels: got {len(levels_at)} thresholds; expected {levels - 1} (levels - 1)")
        ramp_at = levels_at if levels_at is not None else [pin] if pin is not None else None
        ramps = 2 * len(ramp_at) if ramp_at is not None else 0
        # With the costs at the last level after the flow's own (flow_v0's path_loads_last), the pin rule reads
        # each flow's costs at the level it chooses, as pathbal counts them for the flows it demotes.
        gated = pin is not None and self.row_width == ACTIVE_FEATURES + 2 * paths
        used = 4 * paths + ramps + (paths if gated else 0)
        carried = (3 if gated else 2) * paths + (1 if ramp_at is not None else 0)
        if (
            self.row_width not in (ACTIVE_FEATURES + paths, ACTIVE_FEATURES + 2 * paths)
            or not hiddens
            or hiddens[0] < used
            or min(hiddens) < carried
            or (gated and len(hiddens) < 2)
        ):
            raise ValueError(
                f"rule_init: needs rows of {ACTIVE_FEATURES} + {paths} features (path_loads; + {paths} more with "
                f"path_loads_last) and hidden layers, the first of at least {used} units and the others of "
                f"{carried} (two or more with path_loads_last and rule_pin); got rows of {self.row_width} and "
                f"hiddens {hiddens}"
            )
        linears = [m for m in self.net if isinstance(m, nn.Linear)]
        with torch.no_grad():
            first = linears[0]
            first.weight[:used].zero_()
            first.bias[:used].zero_()
            # Units 0 .. P-1 copy the path loads; units P + 3q .. P + 3q + 2 are relu(y - q + 1), relu(y - q),
            # relu(y - q - 1) of y = P x (path feature x = path / P): onehot_q = u0 - 2 u1 + u2 is 1 on the current
            # path and 0 on the others.
            for q in range(paths):
                first.weight[q, ACTIVE_FEATURES + q] = 1.0
                for k, shift in enumerate((1.0 - q, -q, -1.0 - q)):
                    first.weight[paths + 3 * q + k, PATH_FEATURE] = float(paths)
                    first.bias[paths + 3 * q + k] = shift
            combine = torch.zeros(paths, first.out_features)
            for q in range(paths):
                combine[q, paths + 3 * q : paths + 3 * q + 3] = torch.tensor([1.0, -2.0, 1.0])
            # MLFQ's level for the bytes sent: n = sum_i ramp_i, ramp_i = G (relu(u - t_i + h) - relu(u - t_i - h))
            # with h = 1 / (2 G), going from 0 to 1 as the bytes feature u passes threshold i's t_i (1/2 at t_i,
            # so the nearest level changes there). The first layer's units stay below 1 and G is small: Adam moves
            # every weight by about the learning rate a step, which a steep ramp would turn into level changes.
            count = torch.zeros(1, first.out_features)
            for i, t in enumerate(ramp_at or []):
                at = float(np.log10(1.0 + t) / 10.0)
                for k, shift in enumerate((0.5 / LEVEL_RAMP, -0.5 / LEVEL_RAMP)):
                    unit = 4 * paths + 2 * i + k
                    first.weight[unit, BYTES_FEATURE] = 1.0
                    first.bias[unit] = -at + shift
                    count[0, unit] = LEVEL_RAMP * (1.0 - 2.0 * k)
            loads = torch.eye(paths, first.out_features)  # the path loads as the next layer reads them
            pinned_loads = torch.zeros(paths, first.out_features)  # gated: the loads at the last level
            for q in range(paths if gated else 0):
                first.weight[4 * paths + ramps + q, ACTIVE_FEATURES + paths + q] = 1.0
                pinned_loads[q, 4 * paths + ramps + q] = 1.0
            linears[1].weight[:, 4 * paths : used] = 0.0  # the ramps feed their count only
            for j, layer in enumerate(linears[1:-1]):  # carry the loads, the one-hot and n (all >= 0) through
                layer.weight[:carried].zero_()
                layer.bias[:carried].zero_()
                layer.weight[paths : 2 * paths] = combine
                if ramp_at is not None:
                    layer.weight[2 * paths] = count[0]
                if gated:  # relu(own_q - n) and relu(last_q + n - 1): the costs at the level chosen (loads <= 1)
                    layer.weight[:paths] = loads - count if j == 0 else loads
                    layer.weight[2 * paths + 1 : carried] = pinned_loads + count if j == 0 else pinned_loads
                    layer.bias[2 * paths + 1 : carried] = -1.0 if j == 0 else 0.0
                    pinned_loads = torch.eye(carried, layer.out_features)[2 * paths + 1 :]
                else:
                    layer.weight[:paths] = loads
                    pinned_loads = torch.zeros(paths, layer.out_features)
                loads = torch.eye(paths, layer.out_features)
                combine = torch.eye(2 * paths, layer.out_features)[paths:]
                count = torch.eye(2 * paths + 1, layer.out_features)[2 * paths :]
            last = linears[-1]
            last.weight.mul_(RANDOM_SCALE)
            last.bias.zero_()
            path0 = sum(self.choices[:2])
            last.weight[path0 : path0 + paths] += -RULE_GAIN * (loads + pinned_loads) + RULE_GAIN * stay * combine
            if pin is not None:  # keep scores RULE_BIAS, the last level 2 RULE_BIAS n: it wins from the pinning size
                last.weight[levels - 1] += 2.0 * RULE_BIAS * count[0]
                last.bias[levels] = RULE_BIAS
            elif levels_at is None:  # pinned to the last level
                last.bias[levels - 1] = RULE_BIAS
            else:  # level l scores RULE_BIAS (2 l n - l^2): the l nearest n wins, by RULE_BIAS at n = l
                for lv in range(levels):
                    last.weight[lv] += RULE_BIAS * 2.0 * lv * count[0]
                    last.bias[lv] = -RULE_BIAS * lv * lv
            if self.keep_level and pin is None:  # the rules that pin every flow never keep
                last.bias[levels] = -RULE_BIAS
            last.bias[choices] = RULE_BIAS  # the first cap: none

    def logits(self, obs: torch.Tensor, mask: bool = False) -> torch.Tensor:
        """(B, D) observations to (B, rows x sum(choices)) logits, row after row; ``mask`` fixes empty rows'."""
        b = obs.shape[0]
        rows = obs[:, : self.rows * self.row_width].reshape(b, self.rows, self.row_width)
        shared = obs[:, self.rows * self.row_width :].unsqueeze(1).expand(b, self.rows, self.shared)
        out = self.net(torch.cat([rows, shared], dim=-1))
        if mask:
            present = (rows[..., BYTES_FEATURE] > 0).unsqueeze(-1)
            out = torch.where(present, out, self.pad_logits.to(out.dtype))
        return out.reshape(b, -1)
