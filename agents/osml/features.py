"""What OSML's models take and give, by name: the columns of Models A and B and of Models A' and B' (no torch, no Ray).

The scheduler reads these to build a model's input from the server's counters, whether the model is a
PyTorch one (:mod:`.supervised`) or a policy file run by the C++ runtime (:mod:`.files`).
"""

from __future__ import annotations

__all__ = [
    "A_FEATURES",
    "A_SHADOW_FEATURES",
    "A_TARGETS",
    "B_FEATURES",
    "B_SHADOW_FEATURES",
    "B_SHADOW_TARGETS",
    "B_SLOWDOWNS",
    "B_TARGETS",
]

A_FEATURES = [
    "CPU_Utilization",
    "Frequency",
    "IPC",
    "Misses",
    "MBL",
    "Virt_Memory",
    "Res_Memory",
    "Allocated_Cache",
    "Allocated_Core",
]
"""Model-A's nine inputs (OSML Table 3 / configs.py), in the data set's units."""
A_TARGETS = ["OAA_Core", "OAA_Cache", "RCliff_Core", "RCliff_Cache", "OAA_Bandwidth"]
B_FEATURES = [*A_FEATURES, "QoS_Slowdown"]
"""Model-B's ten inputs: Model-A's nine and the allowed QoS slowdown (a fraction)."""
B_SLOWDOWNS = (0.05, 0.10, 0.15, 0.20)
"""The allowed QoS slowdowns Model-B is trained on (§4.2)."""
B_TARGETS = ["ways_only_cores", "ways_only_ways", "both_cores", "both_ways", "cores_only_cores", "cores_only_ways"]
"""Model-B's B-Points: (cores, ways) that can be given up, for the three directions of Figure 4."""
A_SHADOW_FEATURES = [*A_FEATURES, "Neighbour_MBL", "Neighbour_Allocated_Cache", "Neighbour_Allocated_Core"]
"""Model-A''s twelve inputs: Model-A's nine and the neighbours' (OSML's code, get_colocated_features)."""
B_SHADOW_FEATURES = [*A_SHADOW_FEATURES, "Kept_Core", "Kept_Cache"]
"""Model-B''s inputs: the twelve and the cores and ways the service would keep."""
B_SHADOW_TARGETS = ["QoS_Slowdown"]
