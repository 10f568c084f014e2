"""Drawing a flow network for ``render()``: queue occupancy per priority level and link utilisation, numpy only.

``ansi``: one line per level (active flows and their unfinished bytes) and
one per link class (mean and busiest link's utilisation over the last
interval), then the busiest links. ``rgb_array``: the last steps as columns
(newest right), a band of rows per level (flows in it, relative to the
window's most) over a band of rows per link (its utilisation in the
interval), dark blue (0) through yellow to red (1).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from dcgym.envs.flow.thresholds import PACKET_BYTES

__all__ = ["History", "render_ansi", "render_rgb"]

BAR = 24
"""Characters of a full bar."""
STEPS = 64
"""Steps shown by the rgb_array frame."""

_STOPS = np.array([0.0, 0.5, 1.0])
_COLOURS = np.array([[20, 30, 80], [250, 210, 40], [200, 20, 20]], dtype=np.float64)


class History:
    """Flows per level and link utilisation of the last STEPS steps, oldest first."""

    def __init__(self) -> None:
        self.levels: deque[np.ndarray] = deque(maxlen=STEPS)
        self.links: deque[np.ndarray] = deque(maxlen=STEPS)

    def clear(self) -> None:
        self.levels.clear()
        self.links.clear()

    def add(self, sim) -> None:
        flows, _ = sim.level_occupancy()
        interval, _ = sim.link_utilization()
        self.levels.append(np.array(flows, dtype=np.float64))
        self.links.append(np.array(interval, dtype=np.float64))


def _bar(fraction: float) -> str:
    filled = int(round(BAR * min(1.0, max(0.0, fraction))))
    return "#" * filled + "." * (BAR - filled)


def render_ansi(game, k: int, title: str) -> str:
    """The text frame of copy k of a :class:`~dcgym.envs.flow.game.FlowGame`."""
    sim = game.sims[k]
    flows, unfinished = sim.level_occupancy()
    interval, now = sim.link_utilization()
    names = list(game.link_names)
    thresholds = ", ".join(f"{t / PACKET_BYTES:.0f}" for t in sim.thresholds)
    lines = [
        f"{title} {game.scenario.name or 'scenario'}  t = {sim.now_s:.3f} s  step {int(game.steps[k])}/"
        f"{game.config.max_steps}  load {game.loads[k]:g}  thresholds (packets) [{thresholds}]",
        "level  flows (bar: share of active flows)     flows   unfinished MB",
    ]
    total = max(1.0, float(flows.sum()))
    for level, (n, b) in enumerate(zip(flows, unfinished)):
        lines.append(f"{level:5d}  [{_bar(n / total)}]  {int(n):7d}  {b / 1e6:14.2f}")
    lines.append("links  utilisation over the interval (bar: mean)   mean    max   busiest")
    classes: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        key = "".join(c for c in name.split(".")[0] if not c.isdigit()) + (
            "." + "".join(c for c in name.split(".")[1] if not c.isdigit()) if "." in name else ""
        )
        classes.setdefault(key, []).append(i)
    for key, members in classes.items():
        u = interval[members]
        j = members[int(np.argmax(u))]
        lines.append(f"{key:>5}  [{_bar(float(u.mean()))}]  {u.mean():6.2f} {u.max():6.2f}   {names[j]}")
    busiest = np.argsort(-now)[:3]
    lines.append("now: " + ", ".join(f"{names[i]} {now[i]:.2f}" for i in busiest))
    return "\n".join(lines) + "\n"


def _colour(values: np.ndarray) -> np.ndarray:
    v = np.clip(values, 0.0, 1.0)
    return np.stack([np.interp(v, _STOPS, _COLOURS[:, c]) for c in range(3)], axis=-1)


def render_rgb(game, history: History, cell: int = 4) -> np.ndarray:
    """The image of copy 0's history: levels (relative occupancy) above links (utilisation), a gap between."""
    levels = np.zeros((game.levels, STEPS))
    links = np.zeros((len(game.link_names), STEPS))
    if history.levels:
        n = len(history.levels)
        levels[:, STEPS - n :] = np.stack(history.levels, axis=1)
        links[:, STEPS - n :] = np.stack(history.links, axis=1)
    top = max(1.0, float(levels.max()))
    rows = [
        np.repeat(_colour(levels / top), 3 * cell, axis=0),
        np.full((cell, STEPS, 3), 255.0),
        np.repeat(_colour(links), max(1, cell // 2), axis=0),
    ]
    image = np.concatenate(rows, axis=0).astype(np.uint8)
    return np.ascontiguousarray(np.repeat(image, cell, axis=1))
