"""OSML's data sets from the command line: the colo model's own in OSML's layout, the co-location sweeps, and
service parameters fitted to a data set (:mod:`dcgym.agents.osml.dataset`, :mod:`dcgym.agents.osml.colocation`).

    python -m dcgym.agents.osml.dataset_cli collect /tmp/osml_data --workers 2
    python -m dcgym.agents.osml.dataset_cli generate /tmp/osml_data --service moses --rps 400 800 --threads 36 20
    python -m dcgym.agents.osml.dataset_cli fit /tmp/osml_data --service moses
    python -m dcgym.agents.osml.dataset_cli colocate /tmp/osml_coloc --quick

(also ``python benchmarks/colo_dataset.py``). Bad input prints one ``error: ...`` line and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from dcgym.agents.osml import colocation as co
from dcgym.agents.osml.dataset import OSML_SERVICES, collect, fit, generate, read_dataset
from dcgym.envs.colo import catalog as cc
from dcgym.envs.error import InvalidConfigError

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write the colo model's data set in OSML's layout")
    g.add_argument("root", type=Path)
    g.add_argument("--service", required=True)
    g.add_argument("--rps", type=float, nargs="+", help="RPS levels (default: the catalog's code levels)")
    g.add_argument("--threads", type=int, nargs="+", default=[36])
    g.add_argument("--cores", type=int, nargs="+", default=None, help="default: every core count")
    g.add_argument("--ways", type=int, nargs="+", default=None, help="default: every way count")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--platform", default=None)
    k = sub.add_parser("collect", help="OSML's whole sweep over services, in parallel and resumable, then the labels")
    k.add_argument("root", type=Path)
    k.add_argument("--services", nargs="+", default=None, help="default: OSML's eleven services")
    k.add_argument("--threads", type=int, nargs="+", default=[36], help="thread counts (OSML: 36 down to 1)")
    k.add_argument("--rps-variant", default="code", help="RPS levels: code (RPS_COLLECTED) or paper (Table 1)")
    k.add_argument("--cores", type=int, nargs="+", default=None, help="default: every core count")
    k.add_argument("--ways", type=int, nargs="+", default=None, help="default: every way count")
    k.add_argument("--seed", type=int, default=0)
    k.add_argument("--platform", default=None)
    k.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every CPU)")
    k.add_argument("--quick", action="store_true", help="a small sweep: two services, cores and ways in steps of 4")
    k.add_argument("--no-progress", action="store_true")
    o = sub.add_parser("colocate", help="co-location sweeps for Models A' and B': a service among neighbours")
    o.add_argument("root", type=Path)
    o.add_argument("--services", nargs="+", default=None, help="default: OSML's eleven services")
    o.add_argument("--per-service", type=int, default=8, help="neighbourhoods per service (default 8)")
    o.add_argument("--step", type=int, default=1, help="the service's cores and ways in steps of this (default 1)")
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--platform", default=None)
    o.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: every CPU)")
    o.add_argument("--quick", action="store_true", help="two services, two neighbourhoods each, steps of 4")
    f = sub.add_parser("fit", help="fit a service's parameters to a data set in OSML's layout")
    f.add_argument("root", type=Path)
    f.add_argument("--service", required=True)
    f.add_argument("--platform", default=None)
    f.add_argument("--json", type=Path, default=None, help="also write the fitted parameters here")
    args = ap.parse_args(argv)
    try:
        return _run(args)
    except InvalidConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _positive(field: str, values: list[int] | None, top: int) -> None:
    for v in values or []:
        if not 1 <= v <= top:
            raise InvalidConfigError(field, v, f"integers in [1, {top}]")


def _run(args: argparse.Namespace) -> int:
    catalog = cc.load_catalog()
    if args.command == "generate":
        pf = cc.platform_config(catalog, args.platform)
        n = generate(
            catalog,
            args.service,
            args.root,
            rps_levels=args.rps or cc.rps_levels(catalog, args.service, "code"),
            threads=args.threads,
            cores=args.cores or list(range(1, pf["logical_cores"] + 1)),
            ways=args.ways or list(range(1, pf["ways"] + 1)),
            seed=args.seed,
            platform=args.platform,
        )
        print(f"wrote {n} files under {args.root / args.service}")
        return 0
    if args.command == "collect":
        pf = cc.platform_config(catalog, args.platform)
        _positive("cores", args.cores, pf["logical_cores"])
        _positive("ways", args.ways, pf["ways"])
        _positive("threads", args.threads, 1024)
        if args.workers < 1:
            raise InvalidConfigError("workers", args.workers, "a positive number of processes")
        services = args.services or list(OSML_SERVICES)
        cores = args.cores or list(range(1, pf["logical_cores"] + 1))
        ways = args.ways or list(range(1, pf["ways"] + 1))
        if args.quick:
            services = args.services or ["img-dnn", "moses"]
            cores = args.cores or list(range(2, pf["logical_cores"] + 1, 4))
            ways = args.ways or list(range(2, pf["ways"] + 1, 4))
        rps = {s: cc.rps_levels(catalog, s, args.rps_variant) for s in services}
        if args.quick:
            rps = {s: v[1::2] for s, v in rps.items()}
        out = collect(
            catalog,
            args.root,
            services=services,
            threads=args.threads,
            rps=rps,
            cores=cores,
            ways=ways,
            seed=args.seed,
            platform=args.platform,
            workers=args.workers,
            progress=not args.no_progress,
        )
        print(
            f"{out['cells']} cells under {args.root}: {out['written']} written, {out['skipped']} already there;"
            f" labels in {args.root}/<service>/labels.csv"
        )
        return 0
    if args.command == "colocate":
        services = args.services or (["img-dnn", "moses"] if args.quick else list(OSML_SERVICES))
        for s in services:
            cc.qos_ms(catalog, s)
        per, step = (2, 4) if args.quick else (args.per_service, args.step)
        if per < 1:
            raise InvalidConfigError("per_service", per, "a positive number of neighbourhoods")
        if step < 1:
            raise InvalidConfigError("step", step, "a positive step of cores and ways")
        if args.workers < 1:
            raise InvalidConfigError("workers", args.workers, "a positive number of processes")
        hoods = co.neighbourhoods(catalog, services, per, seed=args.seed, platform=args.platform)
        files = co.collect(
            catalog, args.root, hoods, step=step, seed=args.seed, platform=args.platform, workers=args.workers
        )
        print(f"{len(files)} neighbourhoods under {args.root} (<service>/<neighbourhood>.csv)")
        return 0
    fitted = fit(read_dataset(args.root, args.service), catalog, args.service, platform=args.platform)
    print(json.dumps(fitted, indent=2))
    if args.json:
        args.json.write_text(json.dumps(fitted, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
