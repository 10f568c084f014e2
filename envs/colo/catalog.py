"""The colo catalog (``catalog.yaml`` beside this module): platforms and services, and the engine dicts built from it.

The catalog is the one place where the colo model's defaults live, each with
its source (docs/colo.md generates its parameter table from it). This module
reads it with PyYAML, resolves ``{value, source}`` entries and paper/code
variants, and builds the dicts :class:`dcgym.cpp_core.ColoSim` takes::

    catalog = load_catalog()
    moses = service_config(catalog, "moses", rps=800)
    sim = ColoSim(sim_config(catalog, [moses], seed=1))

`parse_workload` reads OSML's workload files (Sys-Inventor-Lab/AI4System-OSML
program_mgr.py: `name RPS|PCT value [threads] [launch_s] [end_s]` and
`CHANGE_RPS name RPS|PCT value time_s`, PCT being a percentage of the
service's max load, truncated to an integer as OSML does).
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from dcgym.cpp_core import ColoSim
from dcgym.envs.error import InvalidConfigError, did_you_mean

__all__ = [
    "CATALOG",
    "PLATFORM_FIELDS",
    "SERVICE_FIELDS",
    "VARIANTS",
    "load_catalog",
    "markdown_parameters",
    "max_rps",
    "parse_workload",
    "pct_to_rps",
    "platform_config",
    "qos_ms",
    "rps_levels",
    "service_config",
    "sim_config",
    "value",
]

CATALOG = resources.files("dcgym.envs.colo") / "catalog.yaml"
"""The packaged catalog."""

PLATFORM_FIELDS: tuple[str, ...] = tuple(f for f in ColoSim.platform_fields if f != "name")
"""The platform values each catalog preset gives: every field of the engine's platform but its name."""
SERVICE_FIELDS: tuple[str, ...] = tuple(
    f for f in ColoSim.service_fields if f not in ("name", "percentile") and not f.startswith("ref_")
)
"""The parameters each catalog service gives: every one of the engine's service parameters but the name, the
latency percentile (the run's choice; the engine's default is OSML's 0.99) and the reference point (the catalog's
``reference``, shared by every service)."""
VARIANTS = ("paper", "code")


def load_catalog(path: str | Path | None = None) -> dict[str, Any]:
    """The catalog as a mapping (the packaged one by default; it is read once and shared: do not modify it)."""
    return _packaged() if path is None else yaml.safe_load(Path(path).read_text(encoding="utf-8"))


@functools.cache
def _packaged() -> dict[str, Any]:
    return yaml.safe_load(CATALOG.read_text(encoding="utf-8"))


def value(entry: Any, variant: str = "paper") -> Any:
    """The value of a catalog entry: `{value: V}`, `{paper: P, code: C}` (by variant) or a plain value."""
    if isinstance(entry, dict) and "value" in entry:
        return entry["value"]
    if isinstance(entry, dict) and variant in entry:
        return entry[variant]
    return entry


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise InvalidConfigError("variant", variant, "one of " + ", ".join(VARIANTS))


def _service(catalog: dict, name: str) -> dict:
    services = catalog["services"]
    if name not in services:
        raise InvalidConfigError(
            "service", name, "one of " + ", ".join(services), suggestion=did_you_mean(str(name), services)
        )
    return services[name]


def platform_config(catalog: dict, name: str | None = None, **overrides: Any) -> dict[str, Any]:
    """The engine's platform dict of a preset (default: the catalog's default platform)."""
    name = name or catalog["default_platform"]
    if name not in catalog["platforms"]:
        known = catalog["platforms"]
        raise InvalidConfigError("platform", name, "one of " + ", ".join(known), suggestion=did_you_mean(name, known))
    entry = catalog["platforms"][name]
    out = {"name": name, **{k: value(entry[k]) for k in PLATFORM_FIELDS}}
    out.update(overrides)
    return out


def max_rps(catalog: dict, name: str, variant: str = "paper") -> float:
    """A service's maximum load (requests/s) in OSML's paper (Table 1) or code (MAX_LOAD)."""
    _check_variant(variant)
    return float(value(_service(catalog, name)["max_rps"], variant))


def rps_levels(catalog: dict, name: str, variant: str = "paper") -> list[float]:
    """A service's RPS levels (requests/s): OSML Table 1 (paper) or RPS_COLLECTED (code)."""
    _check_variant(variant)
    return [float(r) for r in value(_service(catalog, name)["rps_levels"], variant)]


def qos_ms(catalog: dict, name: str) -> float:
    """A service's QoS target (p99 latency, ms)."""
    return float(value(_service(catalog, name)["qos_ms"]))


def pct_to_rps(catalog: dict, name: str, pct: float, variant: str = "paper") -> float:
    """OSML's PCT load: int(MAX_LOAD x pct / 100)."""
    return float(int(max_rps(catalog, name, variant) * pct / 100))


def service_config(
    catalog: dict,
    name: str,
    *,
    rps: float | None = None,
    pct: float | None = None,
    variant: str = "paper",
    threads: int | None = None,
    launch_s: float = 0.0,
    end_s: float | None = None,
    changes: list[tuple[float, float]] | None = None,
    cores: int | None = None,
    ways: int | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """One service entry of the engine config: the catalog's parameters and a workload.

    rps or pct (of the variant's max load) sets the offered load; overrides replace parameters.
    """
    _check_variant(variant)
    entry = _service(catalog, name)
    if rps is not None and pct is not None:
        raise InvalidConfigError("pct", pct, f"nothing when rps ({rps:g}) is given: one or the other")
    if pct is not None:
        rps = pct_to_rps(catalog, name, pct, variant)
    out: dict[str, Any] = {"name": name, **{k: value(entry[k]) for k in SERVICE_FIELDS}}
    out["mrc"] = dict(out["mrc"])
    out.update({f"ref_{k}": value(v) for k, v in catalog["reference"].items()})
    out.update({"rps": float(rps or 0.0), "launch_s": float(launch_s)})
    if threads is not None:
        out["threads"] = int(threads)
    if end_s is not None:
        out["end_s"] = float(end_s)
    if changes:
        out["changes"] = [[float(t), float(r)] for t, r in changes]
    if cores is not None:
        out["cores"] = int(cores)
    if ways is not None:
        out["ways"] = int(ways)
    out.update(overrides)
    return out


def sim_config(
    catalog: dict, services: list[dict], *, platform: str | dict | None = None, **overrides: Any
) -> dict[str, Any]:
    """A whole engine config: a platform (preset name or dict), the services, the catalog's simulation defaults."""
    sim = catalog["simulation"]
    cfg: dict[str, Any] = {
        "platform": platform if isinstance(platform, dict) else platform_config(catalog, platform),
        "services": services,
        "dt_s": value(sim["dt_s"]),
        "latency_window_s": value(sim["latency_window_s"]),
        "latency_cap_s": value(sim["latency_cap_s"]),
        "noise": {"latency": value(sim["noise_latency"]), "counters": value(sim["noise_counters"])},
        "seed": 0,
    }
    cfg.update(overrides)
    return cfg


def parse_workload(text: str, catalog: dict, variant: str = "paper") -> list[dict[str, Any]]:
    """OSML's workload file as engine service entries (one per app line, CHANGE_RPS lines folded in)."""
    apps: dict[str, dict[str, Any]] = {}
    changes: dict[str, list[tuple[float, float]]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        where = f"workload line {number} ({line!r})"
        try:
            if parts[0] == "CHANGE_RPS":
                _, name, kind, amount, time_s = parts
                changes.setdefault(name, []).append((float(time_s), _rate(catalog, name, kind, amount, variant)))
                continue
            name, kind, amount, *rest = parts
            if len(rest) > 3:
                raise ValueError("too many fields")
            threads = int(rest[0]) if len(rest) > 0 else None
            launch = float(rest[1]) if len(rest) > 1 else 0.0
            end = float(rest[2]) if len(rest) > 2 else None
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        apps[name] = service_config(
            catalog,
            name,
            rps=_rate(catalog, name, kind, amount, variant),
            variant=variant,
            threads=threads,
            launch_s=launch,
            end_s=end,
        )
    for name, items in changes.items():
        if name not in apps:
            raise ValueError(f"CHANGE_RPS for {name!r}, which no line launches")
        apps[name]["changes"] = [[t, r] for t, r in sorted(items)]
    return list(apps.values())


def _rate(catalog: dict, name: str, kind: str, amount: str, variant: str) -> float:
    if kind == "RPS":
        return float(amount)
    if kind == "PCT":
        return pct_to_rps(catalog, name, float(amount), variant)
    raise ValueError(f"load kind must be RPS or PCT, got {kind!r}")


def markdown_parameters(catalog: dict) -> str:
    """The parameter tables of docs/colo.md: platforms (a column each), the reference point, then one row per
    service parameter with its source."""
    names = list(catalog["platforms"])
    lines = ["| parameter | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for key in PLATFORM_FIELDS:
        cells = [f"{catalog['platforms'][n][key]['value']} ({catalog['platforms'][n][key]['source']})" for n in names]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    lines += ["", "| reference point | value | source |", "|---|---|---|"]
    for key, e in catalog["reference"].items():
        lines.append(f"| {key} | {e['value']} | {e['source']} |")
    lines += ["", "| service | parameter | value | source |", "|---|---|---|---|"]
    for name, entry in catalog["services"].items():
        for key in ("qos_ms", "max_rps", "rps_levels", *SERVICE_FIELDS[1:]):
            e = entry[key]
            shown = (
                f"paper {e['paper']}, code {e['code']}"
                if "paper" in e
                else ", ".join(f"{k} {v}" for k, v in e["value"].items())
                if isinstance(e["value"], dict)
                else e["value"]
            )
            lines.append(f"| {name} | {key} | {shown} | {e['source']} |")
    lines += ["", "| simulation | value | source |", "|---|---|---|"]
    for key, e in catalog["simulation"].items():
        lines.append(f"| {key} | {e['value']} | {e['source']} |")
    return "\n".join(lines)


def finite_or_none(x: float) -> float | None:
    """``x``, or None if it is NaN or infinite (for JSON)."""
    return x if math.isfinite(x) else None
