"""OSML's supervised models (FAST'23 §4.1-4.2): Model-A aims at OAA and RCliff, Model-B trades QoS for resources.

Both are MLPs of three hidden layers of 40 ReLU units, each followed by a dropout layer (rate 0.3), trained with
Adam on min-max normalized inputs and outputs (Normalized = (x - min) / (max - min), as §4.1).

* **Model-A**: the nine counters of one sample (:data:`A_FEATURES`) to the service's OAA and RCliff (cores,
  ways) and the memory bandwidth it uses at OAA (:data:`A_TARGETS`); the labels are those of the sample's
  (threads, RPS) group (:func:`dcgym.agents.osml.dataset.labels`). Mean squared error.
* **Model-B**: the same nine counters plus an allowed QoS slowdown (5/10/15/20%) to the resources the service
  can give up from its current allocation, for the three policies of Figure 4 (:data:`B_TARGETS`): ways only
  ("cores dominated": the service keeps its cores), cores and ways together, cores only ("ways dominated").
  A label is the largest deprivation along that direction whose mean latency stays within the slowdown of the
  current one (and within QoS); 0 where none exists. The loss is §4.2's modified MSE,
  mean(y / (y + c) x (s - y)^2), which ignores the zero labels.

Data comes from a data set in OSML's layout (:mod:`dcgym.agents.osml.dataset`). The split is hold-out per service
as §4.4: 30% of each service's cells (all ten samples of a cell on the same side) are kept for testing.

    python -m dcgym.agents.osml.supervised /tmp/osml_data --out /tmp/osml_models --quick
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dcgym.agents.osml import colocation as co
from dcgym.agents.osml import dataset as ds
from dcgym.agents.osml.features import (
    A_FEATURES,
    A_SHADOW_FEATURES,
    A_TARGETS,
    B_SHADOW_FEATURES,
    B_SHADOW_TARGETS,
    B_SLOWDOWNS,
    B_TARGETS,
)
from dcgym.envs.colo import catalog as cc
from dcgym.envs.error import InvalidConfigError

__all__ = [
    "A_FEATURES",
    "A_SHADOW_FEATURES",
    "B_SHADOW_FEATURES",
    "B_SHADOW_TARGETS",
    "build_a_shadow",
    "build_b_shadow",
    "train_shadows",
    "A_TARGETS",
    "B_SLOWDOWNS",
    "B_TARGETS",
    "MLP",
    "Model",
    "TrainConfig",
    "b_loss",
    "build_a",
    "build_b",
    "deprivations",
    "evaluate",
    "fit_model",
    "main",
]

B_DIRECTIONS = ((0, 1), (1, 1), (1, 0))


class MLP(nn.Module):
    """``layers`` hidden layers of ``hidden`` ReLU units, each followed by dropout, then a linear output."""

    def __init__(self, n_in: int, n_out: int, hidden: int = 40, layers: int = 3, dropout: float = 0.3) -> None:
        super().__init__()
        mods: list[nn.Module] = []
        width = n_in
        for _ in range(layers):
            mods += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
            width = hidden
        mods.append(nn.Linear(width, n_out))
        self.net = nn.Sequential(*mods)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@dataclass
class Model:
    """A trained MLP with its normalization: :meth:`predict` takes and returns the data set's units."""

    kind: str
    features: list[str]
    targets: list[str]
    x_min: np.ndarray
    x_max: np.ndarray
    y_min: np.ndarray
    y_max: np.ndarray
    net: MLP
    metrics: dict = field(default_factory=dict)

    def _scale(self, x: np.ndarray) -> np.ndarray:
        return (x - self.x_min) / np.where(self.x_max > self.x_min, self.x_max - self.x_min, 1.0)

    def predict(self, x: np.ndarray) -> np.ndarray:
        self.net.eval()
        with torch.no_grad():
            z = self.net(torch.as_tensor(self._scale(np.asarray(x, dtype=np.float64)), dtype=torch.float32))
        span = np.where(self.y_max > self.y_min, self.y_max - self.y_min, 1.0)
        return z.numpy().astype(np.float64) * span + self.y_min

    def save(self, path: str | Path) -> None:
        torch.save(
            {
                "kind": self.kind,
                "features": self.features,
                "targets": self.targets,
                "x_min": self.x_min,
                "x_max": self.x_max,
                "y_min": self.y_min,
                "y_max": self.y_max,
                "state_dict": self.net.state_dict(),
                "shape": [len(self.features), len(self.targets)],
                "metrics": self.metrics,
            },
            path,
        )

    @classmethod
    def load(cls, path: str | Path) -> Model:
        d = torch.load(path, weights_only=False)
        net = MLP(*d["shape"])
        net.load_state_dict(d["state_dict"])
        net.eval()
        return cls(
            d["kind"], d["features"], d["targets"], d["x_min"], d["x_max"], d["y_min"], d["y_max"], net, d["metrics"]
        )


@dataclass
class TrainConfig:
    """Adam at ``lr`` for ``epochs`` over minibatches of ``batch`` (OSML's code: lr 1e-4, batch 256, 10 epochs)."""

    epochs: int = 30
    lr: float = 1e-3
    batch: int = 256
    test_fraction: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.epochs, int) and self.epochs >= 1):
            raise InvalidConfigError("epochs", self.epochs, "a positive integer")
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise InvalidConfigError("lr", self.lr, "a learning rate in (0, 1)")
        if not (isinstance(self.batch, int) and self.batch >= 1):
            raise InvalidConfigError("batch", self.batch, "a positive integer")
        if not (isinstance(self.test_fraction, (int, float)) and 0 < self.test_fraction < 1):
            raise InvalidConfigError("test_fraction", self.test_fraction, "a fraction in (0, 1)")


def mse(pred: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return ((pred - y) ** 2).mean()


def b_loss(pred: torch.Tensor, y: torch.Tensor, c: float = 1e-9) -> torch.Tensor:
    """§4.2: mean(y / (y + c) x (s - y)^2): a zero label (no trading policy found) adds nothing."""
    return (y / (y + c) * (pred - y) ** 2).mean()


def fit_model(
    kind: str,
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    features: list[str],
    targets: list[str],
    cfg: TrainConfig,
    loss: str = "mse",
) -> Model:
    """Train an MLP on (x, y) with a hold-out split by ``groups`` (rows of one group stay on one side)."""
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    uniq = np.unique(groups)
    test_groups = rng.choice(uniq, size=max(1, int(round(cfg.test_fraction * len(uniq)))), replace=False)
    test = np.isin(groups, test_groups)
    if test.all():
        raise ValueError("every row in the test split: too few groups to train on")
    train = ~test
    x_min, x_max = x[train].min(0), x[train].max(0)
    y_min, y_max = y[train].min(0), y[train].max(0)
    # Model-B's zero labels must stay zero after scaling, so its outputs are scaled from 0.
    if loss == "b":
        y_min = np.zeros_like(y_min)
    model = Model(kind, features, targets, x_min, x_max, y_min, y_max, MLP(x.shape[1], y.shape[1]))
    xs = torch.as_tensor(model._scale(x), dtype=torch.float32)
    span = np.where(y_max > y_min, y_max - y_min, 1.0)
    ys = torch.as_tensor((y - y_min) / span, dtype=torch.float32)
    opt = torch.optim.Adam(model.net.parameters(), lr=cfg.lr)
    fn = b_loss if loss == "b" else mse
    idx = np.flatnonzero(train)
    gen = torch.Generator().manual_seed(cfg.seed)
    model.net.train()
    for _ in range(cfg.epochs):
        perm = idx[torch.randperm(len(idx), generator=gen).numpy()]
        for i in range(0, len(perm), cfg.batch):
            b = perm[i : i + cfg.batch]
            opt.zero_grad()
            fn(model.net(xs[b]), ys[b]).backward()
            opt.step()
    model.metrics = {
        "train_rows": int(train.sum()),
        "test_rows": int(test.sum()),
        "test_mae": dict(zip(targets, np.abs(model.predict(x[test]) - y[test]).mean(0).tolist())),
    }
    return model


# ----------------------------------------------------------------------------- data from OSML's layout


def _rows(data: dict[str, np.ndarray], sel: np.ndarray) -> np.ndarray:
    return np.stack([data[k][sel] for k in A_FEATURES], axis=1)


def _stacked(xs: list, ys: list, groups: list, names: list) -> dict[str, np.ndarray]:
    """A builder's per-service pieces as one data set: inputs, targets, split groups and service names."""
    return {
        "x": np.concatenate(xs),
        "y": np.concatenate(ys),
        "groups": np.concatenate(groups),
        "service": np.concatenate(names),
    }


def build_a(catalog: dict, root: str | Path, services: list[str]) -> dict[str, np.ndarray]:
    """Model-A's rows: every sample of a labelled (threads, RPS) group, with the group's labels."""
    xs, ys, groups, names = [], [], [], []
    for s in services:
        data = ds.read_dataset(root, s)
        for row in ds.labels(catalog, data, s):
            sel = (data["threads"] == row["threads"]) & (data["rps"] == row["rps"])
            xs.append(_rows(data, sel))
            ys.append(np.tile([row[k] for k in A_TARGETS], (int(sel.sum()), 1)))
            # a cell is the unit of the split
            groups.append(np.array([f"{s}/{t:.15g}/{r:.15g}/{c:.15g}/{w:.15g}" for t, r, c, w in _keys(data, sel)]))
            names.append(np.full(int(sel.sum()), s))
    if not xs:
        raise ValueError(f"no labelled group in {root} for {services}")
    return _stacked(xs, ys, groups, names)


def _keys(data: dict[str, np.ndarray], sel: np.ndarray) -> np.ndarray:
    return np.stack([data["threads"][sel], data["rps"][sel], data["cores"][sel], data["ways"][sel]], axis=1)


def deprivations(
    cores: np.ndarray,
    ways: np.ndarray,
    latency: np.ndarray,
    qos_ms: float,
    at: int,
    slowdown: float,
    surface: dict[tuple[int, int], float] | None = None,
) -> list[int]:
    """Model-B's labels for the cell ``at`` of one (threads, RPS) group's surface: (cores, ways) that can be given
    up along each of :data:`B_DIRECTIONS` with the mean latency within (1 + slowdown) x the current one and QoS."""
    where = surface if surface is not None else _surface(cores, ways, latency)
    c0, w0 = int(cores[at]), int(ways[at])
    bound = min((1 + slowdown) * float(latency[at]), qos_ms)
    out = []
    for dc, dw in B_DIRECTIONS:
        best = 0
        k = 1
        while (c0 - dc * k, w0 - dw * k) in where and c0 - dc * k >= 1 and w0 - dw * k >= 1:
            if where[(c0 - dc * k, w0 - dw * k)] <= bound:
                best = k
            else:
                break
            k += 1
        out += [dc * best, dw * best]
    return out


def _surface(cores: np.ndarray, ways: np.ndarray, latency: np.ndarray) -> dict[tuple[int, int], float]:
    return {(int(c), int(w)): float(v) for c, w, v in zip(cores, ways, latency)}


def build_b(catalog: dict, root: str | Path, services: list[str]) -> dict[str, np.ndarray]:
    """Model-B's rows: every sample of a cell meeting QoS, once per allowed slowdown, with its B-Points."""
    xs, ys, groups, names = [], [], [], []
    for s in services:
        qos = cc.qos_ms(catalog, s)
        data = ds.read_dataset(root, s)
        cells = ds._cells(data)
        order = np.lexsort((cells["ways"], cells["cores"], cells["rps"], cells["threads"]))
        cells = {k: v[order] for k, v in cells.items()}
        # the samples in the same (threads, rps, cores, ways) order: ten rows a cell
        sorder = np.lexsort((data["ways"], data["cores"], data["rps"], data["threads"]))
        feats_all = _rows(data, sorder)
        start = np.concatenate([[0], np.cumsum(np.unique(_keys(data, sorder), axis=0, return_counts=True)[1])])
        for t, r in sorted({(float(a), float(b)) for a, b in zip(cells["threads"], cells["rps"])}):
            idx = np.flatnonzero((cells["threads"] == t) & (cells["rps"] == r))
            c, w, lat = cells["cores"][idx], cells["ways"][idx], cells["Latency"][idx]
            surface = _surface(c, w, lat)
            for at in np.flatnonzero(lat < qos):
                i = idx[at]
                feats = feats_all[start[i] : start[i + 1]]
                name = f"{s}/{t:.15g}/{r:.15g}/{c[at]:.15g}/{w[at]:.15g}"
                for sd in B_SLOWDOWNS:
                    lab = deprivations(c, w, lat, qos, int(at), sd, surface)
                    xs.append(np.concatenate([feats, np.full((len(feats), 1), sd)], axis=1))
                    ys.append(np.tile(lab, (len(feats), 1)))
                    groups.append(np.full(len(feats), name))
                    names.append(np.full(len(feats), s))
    if not xs:
        raise ValueError(f"no cell meeting QoS in {root} for {services}")
    return {
        "x": np.concatenate(xs).astype(np.float64),
        "y": np.concatenate(ys).astype(np.float64),
        "groups": np.concatenate(groups),
        "service": np.concatenate(names),
    }


MAX_SLOWDOWN = 10.0
"""Model-B''s labels are capped at a 10x slowdown: off the RCliff latencies grow by orders of magnitude, and any
slowdown beyond the allowed 5-20% is refused alike."""


def build_a_shadow(catalog: dict, root: str | Path, services: list[str]) -> dict[str, np.ndarray]:
    """Model-A''s rows from a co-location sweep (:mod:`dcgym.agents.osml.colocation`): every sample of a
    neighbourhood whose service meets QoS somewhere, with the neighbourhood's labels; a neighbourhood is a group."""
    xs, ys, groups, names = [], [], [], []
    for s in services:
        for hood, data in co.read_colocated(root, s):
            lab = co.labels(catalog, data, s)
            if lab is None:
                continue
            n = len(data["Latency"])
            xs.append(np.stack([data[k] for k in A_SHADOW_FEATURES], axis=1))
            ys.append(np.tile([lab[k] for k in A_TARGETS], (n, 1)))
            groups.append(np.full(n, f"{s}/{hood}"))
            names.append(np.full(n, s))
    if not xs:
        raise ValueError(f"no labelled neighbourhood in {root} for {services}")
    return _stacked(xs, ys, groups, names)


def build_b_shadow(catalog: dict, root: str | Path, services: list[str]) -> dict[str, np.ndarray]:
    """Model-B''s rows: for each cell of a neighbourhood that meets QoS and each smaller swept allocation (no more
    cores, no more ways), the cell's mean inputs and the allocation kept, labelled with the slowdown of the mean
    latency (kept / current - 1, at most :data:`MAX_SLOWDOWN`)."""
    xs, ys, groups, names = [], [], [], []
    for s in services:
        qos = cc.qos_ms(catalog, s)
        for hood, data in co.read_colocated(root, s):
            keys = np.stack([data["cores"], data["ways"]], axis=1)
            cells, inverse = np.unique(keys, axis=0, return_inverse=True)
            inverse = inverse.ravel()
            count = np.bincount(inverse)
            mean = {k: np.bincount(inverse, weights=data[k]) / count for k in [*A_SHADOW_FEATURES, "Latency"]}
            for a in np.flatnonzero(mean["Latency"] < qos):
                kept = np.flatnonzero((cells[:, 0] <= cells[a, 0]) & (cells[:, 1] <= cells[a, 1]))
                kept = kept[kept != a]
                if not len(kept):
                    continue
                feats = np.array([mean[k][a] for k in A_SHADOW_FEATURES])
                xs.append(np.hstack([np.tile(feats, (len(kept), 1)), cells[kept].astype(np.float64)]))
                slowdown = mean["Latency"][kept] / mean["Latency"][a] - 1.0
                ys.append(np.minimum(slowdown, MAX_SLOWDOWN)[:, None])
                groups.append(np.full(len(kept), f"{s}/{hood}"))
                names.append(np.full(len(kept), s))
    if not xs:
        raise ValueError(f"no neighbourhood in {root} for {services} meets QoS anywhere")
    return _stacked(xs, ys, groups, names)


def train_shadows(root: str | Path, out: str | Path, services: list[str], cfg: TrainConfig) -> dict:
    """Train Model-A' (MSE) and Model-B' (MSE on the slowdown) on a co-location sweep; save
    ``model_a_shadow.pt``, ``model_b_shadow.pt`` and ``metrics_shadow.json`` under ``out``."""
    catalog = cc.load_catalog()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    for kind, build, feats, targets in (
        ("A'", build_a_shadow, A_SHADOW_FEATURES, A_TARGETS),
        ("B'", build_b_shadow, B_SHADOW_FEATURES, B_SHADOW_TARGETS),
    ):
        rows = build(catalog, root, services)
        model = fit_model(kind, rows["x"], rows["y"], rows["groups"], feats, targets, cfg)
        rng = np.random.default_rng(cfg.seed)  # the same draw as fit_model's split
        uniq = np.unique(rows["groups"])
        test_groups = rng.choice(uniq, size=max(1, int(round(cfg.test_fraction * len(uniq)))), replace=False)
        model.metrics["test_mae_per_service"] = evaluate(model, rows, test_groups)
        model.save(out / f"model_{kind[0].lower()}_shadow.pt")
        report[kind] = model.metrics
    (out / "metrics_shadow.json").write_text(json.dumps(report, indent=2))
    return report


def evaluate(model: Model, rows: dict[str, np.ndarray], test_groups: np.ndarray | None = None) -> dict[str, dict]:
    """Mean absolute error per service and target (on the rows of ``test_groups`` if given)."""
    sel = np.ones(len(rows["x"]), bool) if test_groups is None else np.isin(rows["groups"], test_groups)
    pred = model.predict(rows["x"][sel])
    err = np.abs(pred - rows["y"][sel])
    out = {}
    for s in np.unique(rows["service"][sel]):
        m = rows["service"][sel] == s
        out[str(s)] = dict(zip(model.targets, err[m].mean(0).round(3).tolist()))
    return out


def train_all(
    root: str | Path, out: str | Path, services: list[str], cfg: TrainConfig, unseen: list[str] | tuple = ()
) -> dict:
    """Train Model-A and Model-B on a data set, save them under ``out`` (model_a.pt, model_b.pt, metrics.json).

    ``unseen``: services of the data set left out of training (OSML §6.4's unseen applications); every row of
    theirs is a test row, reported per service as ``unseen_mae_per_service``."""
    catalog = cc.load_catalog()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    for kind, build, feats, targets, loss in (
        ("A", build_a, A_FEATURES, A_TARGETS, "mse"),
        ("B", build_b, [*A_FEATURES, "QoS_Slowdown"], B_TARGETS, "b"),
    ):
        rows = build(catalog, root, services)
        model = fit_model(kind, rows["x"], rows["y"], rows["groups"], feats, targets, cfg, loss=loss)
        rng = np.random.default_rng(cfg.seed)  # the same draw as fit_model's split
        uniq = np.unique(rows["groups"])
        test_groups = rng.choice(uniq, size=max(1, int(round(cfg.test_fraction * len(uniq)))), replace=False)
        model.metrics["test_mae_per_service"] = evaluate(model, rows, test_groups)
        if unseen:
            model.metrics["unseen_mae_per_service"] = evaluate(model, build(catalog, root, list(unseen)))
        model.save(out / f"model_{kind.lower()}.pt")
        report[kind] = model.metrics
    (out / "metrics.json").write_text(json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train OSML's Model-A and Model-B on a data set in OSML's layout.")
    ap.add_argument("root", type=Path, help="the data set (dcgym.agents.osml.dataset collect writes one)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--services", nargs="+", default=None, help="default: every service found under root")
    ap.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    ap.add_argument("--lr", type=float, default=TrainConfig.lr)
    ap.add_argument("--batch", type=int, default=TrainConfig.batch)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="3 epochs")
    ap.add_argument(
        "--colocated",
        type=Path,
        default=None,
        help="a co-location sweep (colo_dataset.py colocate): also train Models A' and B' on it",
    )
    ap.add_argument("--shadows-only", action="store_true", help="with --colocated: train only Models A' and B'")
    ap.add_argument(
        "--unseen", nargs="+", default=[], help="services left out of training and tested on every row (§6.4)"
    )
    args = ap.parse_args(argv)
    try:
        cfg = TrainConfig(epochs=3 if args.quick else args.epochs, lr=args.lr, batch=args.batch, seed=args.seed)
        if not args.root.is_dir():
            raise InvalidConfigError("root", str(args.root), "a folder holding a data set in OSML's layout")
        found = sorted(p.name for p in args.root.iterdir() if (p / "labels.csv").exists())
        services = args.services or found
        if not services:
            raise InvalidConfigError("root", str(args.root), "a data set with labels (run the collect command)")
        for s in args.unseen:
            if s not in found:
                raise InvalidConfigError("unseen", s, "a service of the data set: " + ", ".join(found))
        services = [s for s in services if s not in args.unseen]
        if not services:
            raise InvalidConfigError(
                "unseen", args.unseen, "fewer services than the data set holds (none left to train)"
            )
        catalog = cc.load_catalog()
        for s in services:
            cc.qos_ms(catalog, s)
        if args.colocated is not None and not args.colocated.is_dir():
            raise InvalidConfigError("colocated", str(args.colocated), "a folder holding a co-location sweep")
        if args.shadows_only and args.colocated is None:
            raise InvalidConfigError("shadows_only", True, "with --colocated (a co-location sweep to train on)")
        report = {} if args.shadows_only else train_all(args.root, args.out, services, cfg, unseen=args.unseen)
        if args.colocated is not None:
            shadows = sorted(p.name for p in args.colocated.iterdir() if p.is_dir() and p.name not in args.unseen)
            report.update(train_shadows(args.colocated, args.out, shadows, cfg))
    except InvalidConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for kind, m in report.items():
        print(f"Model-{kind}: {m['train_rows']} training rows, {m['test_rows']} held out; test MAE per service:")
        for s, errs in m["test_mae_per_service"].items():
            print(f"  {s}: " + ", ".join(f"{k} {v:.2f}" for k, v in errs.items()))
        if "unseen_mae_per_service" in m:
            print(f"Model-{kind} on services it never saw (every row):")
            for s, errs in m["unseen_mae_per_service"].items():
                print(f"  {s}: " + ", ".join(f"{k} {v:.2f}" for k, v in errs.items()))
    print(f"saved in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
