"""Manifests: an evaluation anyone can rerun and check bit for bit (``dcgym verify``).

A manifest is a JSON file holding what an evaluation ran (scenario, policies, loads, seeds, run length, the dcgym
version), the SHA-256 of every policy file it ran, and every result row it produced. Verifying it reruns the same
evaluation and compares every number of every row exactly (JSON round-trips a float exactly), naming the first
difference; a policy file whose bytes changed is named before anything runs. Wall-clock times are left out: they
are the only numbers a rerun may change.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dcgym.agents.evaluation.core import evaluate
from dcgym.agents.evaluation.document import to_json
from dcgym.agents.policies.sources import Source, classify
from dcgym.agents.policies.zoo import ZOO_PREFIX, resolve_zoo
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.policy_spec import split_spec

__all__ = ["FIELDS", "first_difference", "make_manifest", "rerun", "verify"]

FIELDS = ("dcgym_version", "scenario", "policies", "loads", "seeds", "tasks", "policy_files", "results")
"""Every manifest's keys."""

UNTIMED = ("wall_s",)
"""Row fields a rerun may change (wall-clock time), left out of manifests."""


def policy_files(policies: Sequence[str]) -> dict[str, str]:
    """The SHA-256 of the file of every policy in ``policies`` that is a policy file, by its spec."""
    out = {}
    for spec in policies:
        if classify(spec).source is not Source.POLICY_FILE:
            continue
        path, _ = split_spec(spec, file=True)
        file = resolve_zoo(path) if path.startswith(ZOO_PREFIX) else Path(path)
        out[spec] = hashlib.sha256(file.read_bytes()).hexdigest()
    return out


def _rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = json.loads(to_json(doc))["results"]
    return [{k: v for k, v in r.items() if k not in UNTIMED} for r in rows]


def rerun(
    scenario: str, policies: Sequence[str], loads: Sequence[float], seeds: Sequence[int], tasks: int, workers: int = 0
) -> dict[str, Any]:
    """Run the evaluation a manifest describes; its results document."""
    return evaluate(scenario, list(policies), loads, tasks=tasks, seeds=list(seeds), workers=workers, progress=False)


def make_manifest(
    scenario: str, policies: Sequence[str], loads: Sequence[float], seeds: Sequence[int], tasks: int, workers: int = 0
) -> dict[str, Any]:
    """Evaluate and return the manifest of the evaluation (:data:`FIELDS`)."""
    files = policy_files(policies)
    doc = rerun(scenario, policies, loads, seeds, tasks, workers)
    return {
        "dcgym_version": doc["dcgym_version"],
        "scenario": scenario,
        "policies": list(policies),
        "loads": list(loads),
        "seeds": list(seeds),
        "tasks": tasks,
        "policy_files": files,
        "results": _rows(doc),
    }


def first_difference(expected: Any, got: Any, where: str = "") -> str | None:
    """Where ``got`` first differs from ``expected`` (nested dicts and lists, floats compared exactly), or None."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in list(expected) + [k for k in got if k not in expected]:
            if key not in expected or key not in got:
                return f"{where}.{key}: in {'the rerun' if key in got else 'the manifest'} only"
            found = first_difference(expected[key], got[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(expected, got, strict=False)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None if len(expected) == len(got) else f"{where}: {len(expected)} items in the manifest, {len(got)} now"
    same = expected == got and type(expected) is type(got)
    return None if same else f"{where}: manifest {expected!r}, rerun {got!r}"


def verify(manifest: Mapping[str, Any], workers: int = 0) -> str | None:
    """Rerun ``manifest`` and return its first difference (a changed policy file, then a result), or None."""
    missing = [k for k in FIELDS if k not in manifest]
    if missing:
        raise InvalidConfigError("manifest", sorted(manifest), "an object with the keys " + ", ".join(FIELDS))
    files = policy_files(manifest["policies"])
    found = first_difference(manifest["policy_files"], files, "policy_files")
    if found:
        return found
    doc = rerun(
        manifest["scenario"], manifest["policies"], manifest["loads"], manifest["seeds"], manifest["tasks"], workers
    )
    rows = _rows(doc)
    for i, (a, b) in enumerate(zip(manifest["results"], rows, strict=False)):
        found = first_difference(a, b, "")
        if found:
            return f"results[{i}] (policy {a.get('policy')}, load {a.get('load')}, seed {a.get('seed')}){found}"
    if len(rows) != len(manifest["results"]):
        return f"results: {len(manifest['results'])} rows in the manifest, {len(rows)} now"
    return None
