"""The multi-LB Q-learners' networks (Distr-LB, Centr-LB) as ``mlp`` policy files (docs/policy_format.md).

Each agent's feed-forward Q-network, with the ``identity`` head: the Q-values of each server's weight levels,
the action each block's argmax. The exported and original policies agree to float32 rounding
(tests/agents/export/test_export.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dcgym.agents.policy_format import Layer, MlpPolicy
from dcgym.agents.rl.torch_layers import numpy

__all__ = ["mlp_from_q_modules"]


def mlp_from_q_modules(modules: Sequence[Any]) -> MlpPolicy:
    """An ``mlp`` policy from the multi-LB Q-networks of agents 0 .. M-1 (Distr-LB, Centr-LB), in agent order.

    Each network is ReLU, ReLU, then the per-server heads: the ``identity``
    head outputs the Q-values, one block of weight levels per server, and the
    greedy action is each block's argmax (heads shared by a server group are
    repeated for each of its servers). Recurrent networks (QMIX-LB's GRUs)
    and log1p inputs have no policy-file form: ValueError.
    """
    networks = []
    for i, m in enumerate(modules):
        net = m.q_net
        if net.gru is not None or net.log_inputs:
            why = "a GRU" if net.gru is not None else "log1p inputs"
            raise ValueError(
                f"agent {i}: its Q-network has {why}, which a policy file cannot hold (dense layers only); "
                "evaluate the checkpoint instead"
            )
        networks.append(
            [
                Layer(numpy(net.fc.weight), numpy(net.fc.bias), "relu"),
                Layer(numpy(net.fc2.weight), numpy(net.fc2.bias), "relu"),
                Layer(*(numpy(t) for t in net.server_head()), "identity"),
            ]
        )
    return MlpPolicy(int(networks[0][0].weight.shape[1]), networks, list(range(len(modules))), "identity")
