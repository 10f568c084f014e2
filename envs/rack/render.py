"""Drawing a rack for ``render()``: a text frame (``ansi``) and a load heat map (``rgb_array``), numpy only."""

from __future__ import annotations

from collections import deque

import numpy as np

from dcgym.envs.rack.game import WAIT_METRICS

__all__ = ["LoadHistory", "ansi_frame", "heatmap", "render_rack"]

BAR = 24
"""Characters of a full load bar."""

# Colour stops of the heat map, from idle (dark blue) through busy (yellow) to overloaded (red).
_STOPS = np.array([0.0, 0.5, 1.0])
_COLOURS = np.array([[20, 30, 80], [250, 210, 40], [200, 20, 20]], dtype=np.float64)


def ansi_frame(loads: np.ndarray, outstanding: np.ndarray, workers: np.ndarray, *, unit: str, header: str) -> str:
    """One line per node: a load bar (full at max(4, largest load)), the load, queued tasks and busy workers.

    ``outstanding`` counts tasks waiting or in service; for processor sharing
    every outstanding task is in service, so ``queued`` is then an upper bound.
    """
    full = max(4.0, float(loads.max()) if loads.size else 0.0)
    width = len(f"node_{len(loads) - 1}")
    lines = [header]
    for i, (x, out, w) in enumerate(zip(loads, outstanding, workers)):
        filled = int(round(BAR * min(1.0, x / full)))
        busy = min(int(out), int(w))
        lines.append(
            f"{f'node_{i}':<{width}} [{'#' * filled}{'.' * (BAR - filled)}] {x:8.2f} {unit}"
            f"  queued {int(out) - busy:5d}  busy {busy:3d}/{int(w)}"
        )
    return "\n".join(lines) + "\n"


class LoadHistory:
    """The true loads of the last ``length`` steps, oldest first."""

    def __init__(self, length: int) -> None:
        self.rows: deque[np.ndarray] = deque(maxlen=length)
        self.length = length

    def clear(self) -> None:
        self.rows.clear()

    def add(self, loads: np.ndarray) -> None:
        self.rows.append(np.array(loads, dtype=np.float64))

    def array(self, num_nodes: int) -> np.ndarray:
        """(num_nodes, length) with the missing early steps as zeros."""
        out = np.zeros((num_nodes, self.length))
        if self.rows:
            out[:, self.length - len(self.rows) :] = np.stack(self.rows, axis=1)
        return out


def heatmap(history: np.ndarray, *, height: int = 400, width: int = 600) -> np.ndarray:
    """An RGB image (uint8, H x W x 3) of node loads over time: a row per node, a column per step.

    Colours run from dark blue (0) through yellow to red at the largest load
    in the window (at least 1), so a balanced rack is one even colour.
    """
    n, t = history.shape
    top = max(1.0, float(history.max()) if history.size else 1.0)
    level = np.clip(history / top, 0.0, 1.0)
    rgb = np.stack([np.interp(level, _STOPS, _COLOURS[:, c]) for c in range(3)], axis=-1).astype(np.uint8)
    rows, cols = max(1, height // n), max(1, width // t)
    return np.ascontiguousarray(np.repeat(np.repeat(rgb, rows, axis=0), cols, axis=1))


def render_rack(game, out: dict, history: LoadHistory, mode: str, title: str) -> str | np.ndarray:
    """The frame of copy 0 of a :class:`~dcgym.envs.rack.game.RackGame` after its last step ``out``."""
    if mode == "rgb_array":
        return heatmap(history.array(game.num_nodes))
    sim = game.sims[0]
    unit = "E[S]" if game.config.load_metric in WAIT_METRICS else "tasks"
    header = (
        f"{title} t={sim.now_us:.0f} us step {int(game.steps[0])}/{game.config.episode_steps}"
        f" reward {float(out['reward'][0]):.4g}"
    )
    outstanding = sim.results()["nodes"]["outstanding"]
    return ansi_frame(out["true_loads"][0], outstanding, game.workers, unit=unit, header=header)
