"""Named threshold sets of the flow family's MLFQ (PIAS, QLAS) and QSJF policies, with their sources.

A scenario or a policy names a set (``thresholds: pias_ws``); which numbers it
stands for depends on the discipline (MLFQ demotes on bytes sent, QSJF ranks
by size) and on the number of priority levels K (K - 1 thresholds):

| preset | MLFQ, K = 8 | MLFQ, K = 4 | QSJF, K = 4 and 8 |
|---|---|---|---|
| ``pias_ws`` | PIAS's web-search set (its simulation scripts) | PIAS's model, web search at 0.8 | PIAS's model, web search at 0.8 |
| ``pias_dm`` | PIAS's data-mining set at load 0.8 | PIAS's model, data mining at 0.8 | PIAS's model, data mining at 0.8 |
| ``pias_ws_0.8`` | PIAS's web-search set at load 0.8 | | |
| ``pias_dm_0.5`` ... ``pias_dm_0.9`` | PIAS's data-mining sets at loads 0.5 ... 0.9 | | |

PIAS (Bai et al., NSDI 2015; the journal version, ToN 2017) publishes its
8-queue sets in 1460-byte packets. AuTO's 4-queue QSJF and QLAS baselines
use "thresholds from PIAS's method at 80% load" (§6) without giving numbers;
the sets marked *model* are PIAS's method: its M/M/1-per-queue model
minimised over a log grid of packets
(:func:`dcgym.agents.heuristics.flow.model_thresholds`, 4 points per
octave, load 0.8). Where the model collapses (two thresholds equal: data
mining's MLFQ set uses 3 of its 4 queues) the set is kept as the model gives
it. ``benchmarks/flow_thresholds.py`` recomputes them and compares each with
a search in the simulator (:func:`dcgym.agents.evaluation.flow_thresholds.search_thresholds`,
coordinate descent on the mean FCT of AuTO's testbed): the search improves
the mean FCT by 0.01-0.7% only (docs/flow.md, "Baselines"), so the model's
sets stand. Every set is stored in packets.
"""

from __future__ import annotations

from dataclasses import dataclass

from dcgym.cpp_core import FlowSim
from dcgym.envs.error import InvalidConfigError, did_you_mean

__all__ = ["PACKET_BYTES", "THRESHOLD_PRESETS", "ThresholdSet", "preset_thresholds"]

PACKET_BYTES: int = FlowSim.packet_bytes
"""Bytes per packet in thresholds given in packets (PIAS counts 1460-byte segments; the engine's unit)."""


@dataclass(frozen=True)
class ThresholdSet:
    """K - 1 thresholds in packets and where they come from."""

    packets: tuple[int, ...]
    source: str

    @property
    def bytes(self) -> list[float]:
        return [float(p * PACKET_BYTES) for p in self.packets]


_PIAS = "PIAS (NSDI 2015) published 8-queue set"
_MODEL = "PIAS's M/M/1-per-queue model at load 0.8 (model_thresholds, 4 grid points per octave; docs/flow.md)"

THRESHOLD_PRESETS: dict[str, dict[tuple[str, int], ThresholdSet]] = {
    "pias_ws": {
        ("mlfq", 8): ThresholdSet((46, 1084, 1717, 1943, 1989, 1999, 2001), _PIAS + ", web search"),
        ("mlfq", 4): ThresholdSet((1448, 6889, 55109), _MODEL + ", web search"),
        ("qsjf", 4): ThresholdSet((609, 3444, 9742), _MODEL + ", web search"),
        ("qsjf", 8): ThresholdSet((91, 724, 1448, 2896, 4871, 8192, 16384), _MODEL + ", web search"),
    },
    "pias_dm": {
        ("mlfq", 8): ThresholdSet((745, 1083, 1391, 13689, 14936, 21149, 27245), _PIAS + ", data mining at 0.8"),
        ("mlfq", 4): ThresholdSet((2435, 65536, 65536), _MODEL + ", data mining (collapsed: 3 queues used)"),
        ("qsjf", 4): ThresholdSet((108, 9742, 65536), _MODEL + ", data mining"),
        ("qsjf", 8): ThresholdSet((16, 256, 1218, 5793, 27554, 46341, 65536), _MODEL + ", data mining"),
    },
    "pias_ws_0.8": {
        ("mlfq", 8): ThresholdSet((909, 1329, 1648, 1960, 2143, 2337, 2484), _PIAS + ", web search at 0.8")
    },
    "pias_dm_0.5": {
        ("mlfq", 8): ThresholdSet((805, 1106, 1401, 10693, 11970, 21162, 22272), _PIAS + ", data mining at 0.5")
    },
    "pias_dm_0.6": {
        ("mlfq", 8): ThresholdSet((840, 1232, 1617, 11950, 12238, 21494, 25720), _PIAS + ", data mining at 0.6")
    },
    "pias_dm_0.7": {
        ("mlfq", 8): ThresholdSet((907, 1301, 1619, 12166, 12915, 21313, 26374), _PIAS + ", data mining at 0.7")
    },
    "pias_dm_0.8": {
        ("mlfq", 8): ThresholdSet((745, 1083, 1391, 13689, 14936, 21149, 27245), _PIAS + ", data mining at 0.8")
    },
    "pias_dm_0.9": {
        ("mlfq", 8): ThresholdSet((750, 1083, 1416, 13705, 14952, 21125, 28253), _PIAS + ", data mining at 0.9")
    },
}
"""Every preset: name -> {(discipline, K): the set} (each set's ``source`` says where it comes from)."""


def preset_thresholds(name: str, discipline: str, levels: int, field: str = "thresholds") -> ThresholdSet:
    """The set a preset stands for under ``discipline`` (``mlfq`` or ``qsjf``) with ``levels`` priority levels.

    Raises InvalidConfigError naming ``field`` for an unknown name or a (discipline, K) the preset has no set for.
    """
    if name not in THRESHOLD_PRESETS:
        allowed = "a preset (" + ", ".join(THRESHOLD_PRESETS) + ") or a list of K - 1 thresholds in bytes"
        raise InvalidConfigError(field, name, allowed, suggestion=did_you_mean(name, THRESHOLD_PRESETS))
    sets = THRESHOLD_PRESETS[name]
    if (discipline, levels) not in sets:
        have = ", ".join(f"{d} with {k} levels" for d, k in sets)
        raise InvalidConfigError(
            field, name, f"a preset with a set for {discipline} with {levels} levels ({name} has: {have}), or a list"
        )
    return sets[(discipline, levels)]
