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
