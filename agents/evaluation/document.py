"""The results document of an evaluation, for every family: assembled, summarised, written as JSON and CSV.

Every document has the same frame, whatever its family::

    {family, scenario, seed, seeds, <work>, dcgym_version,
     results: [row, ...],                 one per (policy, load, seed): the family's row model (docs/results.md)
     summary: [cell, ...],                one per (policy, load): runs, each summary metric as {mean, ci95, n},
                                          censored (any run censored), and the quantiles of every seed's histogram
     cdf_probabilities: [...],
     timelines: [...]}                    (families that sample loads over time, when asked)

``<work>`` is the family's unit of a run's length (``tasks`` for racks,
``flows`` for multi-LB clusters). ``ci95`` is the half-width of a 95%
Student-t interval over seeds (null for one seed). A statistic with no
sample is ``null``, never NaN. The same seeds give the same document except
``wall_s``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dcgym.agents.evaluation.family import EvaluationFamily, family_of
from dcgym.agents.evaluation.stats import CDF_PROBABILITIES, mean_ci, merged_quantiles

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

__all__ = [
    "against_best",
    "build_document",
    "finite",
    "get_path",
    "results_table",
    "summary_table",
    "to_json",
    "write_plots",
    "write_results",
]


def get_path(mapping: Mapping[str, Any], path: str) -> Any:
    """``mapping["a"]["b"]`` for ``path`` ``"a.b"``."""
    value: Any = mapping
    for part in path.split("."):
        value = value[part]
    return value


def _set_path(mapping: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        mapping = mapping.setdefault(part, {})
    mapping[last] = value


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def build_document(
    family: EvaluationFamily,
    scenario: Any,
    seeds: Sequence[int],
    work: int,
    jobs: Sequence[Any],
    outputs: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The results document of ``jobs`` (each with ``policy`` and ``load``) and their ``outputs``."""
    results = [out["result"] for out in outputs]
    cells: dict[tuple[str, float], list[int]] = {}
    for k, job in enumerate(jobs):
        cells.setdefault((job.policy, job.load), []).append(k)
    summary = []
    for (policy, load), ks in cells.items():
        rows = [results[k] for k in ks]
        cell: dict[str, Any] = {"policy": policy, "load": load, "runs": len(rows)}
        for path in family.summary_paths(rows):
            _set_path(cell, path, mean_ci([get_path(r, path) for r in rows]))
        cell["censored"] = any(r.get("censored", False) for r in rows)
        if family.cdf_field:
            quantiles = merged_quantiles([outputs[k]["histogram"] for k in ks], CDF_PROBABILITIES)
            cell[family.cdf_field] = [None if q is None else q * family.cdf_scale for q in quantiles]
        summary.append(cell)
    doc = {
        "family": family.kind,
        "scenario": scenario.name,
        "seed": seeds[0] if len(seeds) == 1 else None,
        "seeds": list(seeds),
        family.work: work,
        "dcgym_version": version("dcgym"),
        "results": results,
        "summary": finite(summary),
        "cdf_probabilities": list(CDF_PROBABILITIES),
    }
    timelines = [out["timeline"] for out in outputs if out.get("timeline") is not None]
    if timelines:
        doc["timelines"] = timelines
    return doc


def against_best(doc: Mapping[str, Any], policy: str) -> list[dict[str, Any]]:
    """``policy`` against the best of the document's other policies at each load, on the family's headline metric.

    The best is the other policy with the best mean headline among those not censored at that load (among all of
    them when every one is). Per load: ``load``, ``best`` (its label), ``best_value`` and ``value`` (the means),
    ``difference`` (``policy`` minus the best, paired by seed: {mean, ci95, n}, over the seeds both ran) and
    ``verdict``: ``better`` or ``worse`` when the paired 95% interval excludes 0 (a zero-width interval, every
    seed the same difference, counts; with one seed, the sign of the difference), else ``tie``; ``censored`` when
    ``policy`` is censored at a load where the best is not.
    """
    family = family_of(doc["family"])
    path, higher = family.headline[0], family.headline_higher_is_better
    cells = {(c["policy"], c["load"]): c for c in doc["summary"]}
    runs: dict[tuple[str, float], dict[int, float]] = {}
    for row in doc["results"]:
        value = get_path(row, path)
        if value is not None:
            runs.setdefault((row["policy"], row["load"]), {})[row["seed"]] = value
    out = []
    for load in sorted({load for name, load in cells if name == policy}):
        others = [c for (name, at), c in cells.items() if at == load and name != policy]
        ranked = [c for c in others if not c["censored"]] or others
        ranked = [c for c in ranked if get_path(c, path)["mean"] is not None]
        if not ranked:
            continue
        sign = -1.0 if higher else 1.0
        best = min(ranked, key=lambda c: sign * get_path(c, path)["mean"])
        ours, theirs = runs.get((policy, load), {}), runs.get((best["policy"], load), {})
        seeds = sorted(set(ours) & set(theirs))
        difference = mean_ci([ours[s] - theirs[s] for s in seeds])
        mean, half = difference["mean"], difference["ci95"] or 0.0
        if cells[(policy, load)]["censored"] and not best["censored"]:
            verdict = "censored"
        elif mean is None or (len(seeds) > 1 and abs(mean) <= half):
            verdict = "tie"
        else:
            verdict = "better" if sign * mean < 0 else ("worse" if mean != 0 else "tie")
        out.append(
            {
                "load": load,
                "best": best["policy"],
                "best_value": get_path(best, path)["mean"],
                "value": get_path(cells[(policy, load)], path)["mean"],
                "difference": difference,
                "verdict": verdict,
            }
        )
    return out


def to_json(doc: Mapping[str, Any]) -> str:
    """The results document as JSON text (strict: no NaN)."""
    return json.dumps(doc, indent=2, allow_nan=False)


def results_table(doc: Mapping[str, Any]) -> pd.DataFrame:
    """One row per run, nested fields flattened (``latency_us_p99``), the scenario repeated."""
    import pandas as pd  # seconds to import: only when the tables are written

    table = pd.json_normalize(list(doc["results"]), sep="_")
    table.insert(0, "scenario", doc["scenario"])
    return table


def summary_table(doc: Mapping[str, Any]) -> pd.DataFrame:
    """One row per policy and load: mean and 95% half-width of each statistic (``latency_us_p99_mean``)."""
    cdf = family_of(doc.get("family", "rack")).cdf_field
    rows = [{k: v for k, v in s.items() if k != cdf} for s in doc["summary"]]
    import pandas as pd  # seconds to import: only when the tables are written

    table = pd.json_normalize(rows, sep="_")
    table.insert(0, "scenario", doc["scenario"])
    return table


def write_results(doc: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``results.json``, ``results.csv`` and ``summary.csv`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "results.json", "csv": out / "results.csv", "summary": out / "summary.csv"}
    paths["json"].write_text(to_json(doc) + "\n", encoding="utf-8")
    results_table(doc).to_csv(paths["csv"], index=False)
    summary_table(doc).to_csv(paths["summary"], index=False)
    for path in paths.values():
        log.info("wrote %s", path)
    return paths


def write_plots(doc: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write the family's plots of ``doc`` into ``out_dir`` (rack: p99 vs load, latency CDF, load over time)."""
    return family_of(doc.get("family", "rack")).plots(doc, Path(out_dir))
