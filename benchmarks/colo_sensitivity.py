"""How much the assumed colo parameters matter: OSML Fig. 1's anchors under each one moved.

For every parameter the catalog marks "assumed" that shapes the latency, the
anchors of docs/reproductions/osml_fig1.md are re-measured with that one
parameter changed (OSML's collection protocol, seed 0): Moses at 800 rps, 6
cores with 10 and 9 ways, and its RCliff; Img-dnn's RCliff at 2300 rps.
docs/colo.md quotes the table.

    python benchmarks/colo_sensitivity.py        # about 20 s
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reproduce_osml_fig1 as fig1  # noqa: E402

from dcgym.envs.colo import catalog as cc  # noqa: E402

VARIANTS = [  # (label, where, key, value)
    ("as catalogued", None, None, None),
    ("mem_latency_ns 70", "platform", "mem_latency_ns", 70),
    ("mem_latency_ns 110", "platform", "mem_latency_ns", 110),
    ("smt_gain 1.15", "platform", "smt_gain", 1.15),
    ("smt_gain 1.35", "platform", "smt_gain", 1.35),
    ("ctx_overhead 0", "services", "ctx_overhead", 0.0),
    ("ctx_overhead 0.06", "services", "ctx_overhead", 0.06),
    ("mlp x 0.75", "services", "mlp", 0.75),
    ("mlp x 1.5", "services", "mlp", 1.5),
    ("cv2 x 0.5", "services", "cv2", 0.5),
    ("cv2 x 2", "services", "cv2", 2.0),
]


def changed(catalog: dict, where: str | None, key: str | None, v: float | None) -> dict:
    cat = copy.deepcopy(catalog)
    if where == "platform":
        cat["platforms"][cat["default_platform"]][key]["value"] = v
    elif where == "services":
        for entry in cat["services"].values():
            scaled = key in ("mlp", "cv2")
            entry[key]["value"] = entry[key]["value"] * v if scaled else v
    return cat


def main() -> int:
    catalog = cc.load_catalog()
    print("| change | Moses 6 cores, 10 ways (ms) | 9 ways (ms) | Moses RCliff | Img-dnn RCliff |")
    print("|---|---|---|---|---|")
    for label, where, key, v in VARIANTS:
        cat = changed(catalog, where, key, v)
        _, _, moses = fig1.grid(cat, "moses", fig1.FIGURE["moses"])
        _, _, img = fig1.grid(cat, "img-dnn", fig1.FIGURE["img-dnn"])
        print(
            f"| {label} | {fig1.fmt(moses[5, 9])} | {fig1.fmt(moses[5, 8])} | "
            f"{fig1.rcliff(moses, cc.qos_ms(cat, 'moses'))} | {fig1.rcliff(img, cc.qos_ms(cat, 'img-dnn'))} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
