"""Scenario files of every family: finding, reading, overriding and validating them by ``kind``.

A scenario file (YAML) describes one setting of one family: a rack
(``kind: rack``), a multi-LB cluster (``kind: lb``), ... Packaged scenarios
live in ``configs/scenarios/<family>/NAME.yaml`` and are named by ``NAME``
alone (names are unique across families); any other file is named by its
path. :func:`load_scenario` validates the file against the union of every
registered family's scenario class (:data:`dcgym.envs.families.FAMILIES`),
discriminated on ``kind``, so an error names the field of the right family::

    scenario = load_scenario("malcolm_homog_exp", {"dispatch": "jsq"})
    scenario.kind                      # "rack"
    sim = dcgym.cpp_core.RackSim(scenario.engine_config(load=0.9, seed=1))
"""

from __future__ import annotations

import copy
import functools
import re
import warnings
from collections.abc import Mapping
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Union

import yaml
from pydantic import Field

from dcgym.envs.error import MISSING, InvalidConfigError, UnknownScenarioError, Verbatim
from dcgym.envs.families import FAMILIES, Family, family, load_entry_point
from dcgym.envs.schema import Load, ScenarioBase, Seed
from dcgym.envs.validation import validate
from dcgym.envs.yaml_text import parse

__all__ = [
    "DEFAULT_SCENARIO",
    "RENAMED",
    "Load",
    "ScenarioBase",
    "Seed",
    "apply_overrides",
    "list_scenarios",
    "load_scenario",
    "read_yaml",
    "scenario_for",
    "scenario_kind",
    "scenario_path",
]

DEFAULT_SCENARIO = "malcolm_hetero_paper_exp"
"""The scenario of ``make demo``: Malcolm's heterogeneous rack (§7.1, paper text) under Exp(75)."""

RENAMED: dict[str, str] = {
    "multilb_sim": "lb_sim",
    "multilb_large": "lb_large",
    "multilb_reference": "lb_reference",
    "lb_rack_balancers": "rack_lb_balancers",
    "lb_rack_reference": "rack_lb_reference",
}
"""Earlier names of packaged scenarios, still accepted with a FutureWarning naming the new name (the multi-LB
family was renamed ``lb``)."""


def _scenario_root() -> Traversable:
    return resources.files("dcgym.configs") / "scenarios"


def _packaged() -> dict[str, tuple[str, Traversable]]:
    """Every packaged scenario: name -> (family folder, file)."""
    found: dict[str, tuple[str, Traversable]] = {}
    for folder in sorted(_scenario_root().iterdir(), key=lambda f: f.name):
        if not folder.is_dir():
            continue
        for f in sorted(folder.iterdir(), key=lambda f: f.name):
            if f.name.endswith(".yaml"):
                found[f.name.removesuffix(".yaml")] = (folder.name, f)
    return found


_KIND = re.compile(r"^kind:\s*['\"]?([A-Za-z0-9_-]+)", re.MULTILINE)


def scenario_kind(text: str) -> str | None:
    """The ``kind`` a scenario file's text declares at its top level, if any."""
    match = _KIND.search(text)
    return match[1] if match else None


def list_scenarios(kind: str | None = None) -> list[str]:
    """Names of the packaged scenarios of family ``kind`` (every family if None), sorted."""
    if kind is not None:
        kind = family(kind).name
    return sorted(name for name, (folder, _) in _packaged().items() if kind is None or folder == kind)


def scenario_path(name_or_path: str | Path) -> Path | Traversable:
    """The file of a packaged scenario name or of a path; UnknownScenarioError if there is none."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    if isinstance(name_or_path, Path) or path.suffix in (".yaml", ".yml") or len(path.parts) > 1:
        if not path.is_file():
            raise UnknownScenarioError(text, list_scenarios())
        return path
    packaged = _packaged()
    name = RENAMED.get(text, text)
    if name != text:
        warnings.warn(f"scenario {text} was renamed {name}: use {name}", FutureWarning, stacklevel=2)
    if name not in packaged:
        raise UnknownScenarioError(text, list_scenarios())
    return packaged[name][1]


def read_yaml(source: Path | Traversable, shown: str) -> Any:
    """The parsed YAML of a file, or InvalidConfigError naming the file (``shown``) with the problem."""
    try:
        text = source.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidConfigError(
            shown, Verbatim(f"bytes that are not UTF-8 (at byte {exc.start})"), "a UTF-8 text file"
        ) from None
    except OSError as exc:
        raise InvalidConfigError(shown, Verbatim(f"an unreadable file ({exc.strerror})"), "a readable file") from None
    try:
        return parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise InvalidConfigError(shown, Verbatim(f"invalid YAML ({problem}{where})"), "a YAML mapping") from None


@functools.cache
def _any_scenario() -> Any:
    """Every family's scenario class in one union, discriminated on ``kind``."""
    classes = tuple(load_entry_point(f.scenario) for f in FAMILIES.values())
    return Annotated[Union[classes], Field(discriminator="kind")]  # noqa: UP007 (a runtime tuple of classes)


def load_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | None = None, kind: str | None = None) -> Any:
    """Load and validate a scenario of any family: a packaged name (``malcolm_homog_exp``) or a YAML file path.

    ``overrides`` maps dotted keys to values applied before validation:
    ``{"dispatch": "jsq", "nodes.0.workers": 8, "intra_node.discipline": "ps"}``.
    Returns the family's scenario (``RackScenario``, ``LbScenario``, ...). With ``kind``, a scenario of another
    family is refused with an error naming ``scenario`` and listing the family's scenarios (naming ``kind`` if
    the overrides set it). Raises UnknownScenarioError or InvalidConfigError (naming the field).
    """
    wanted = family(kind) if kind is not None else None
    try:
        return _load(name_or_path, overrides or {}, wanted)
    except InvalidConfigError as exc:
        if (
            wanted is None
            or exc.field != "kind"
            or isinstance(exc, UnknownScenarioError)
            or "kind" in (overrides or {})
        ):
            raise
        raise wanted.scenario_error(name_or_path, list_scenarios(wanted.name)) from None


def scenario_for(kind: str, scenario: Any, overrides: Mapping[str, Any] | None) -> Any:
    """A family's scenario as an environment takes it: a scenario object of the family's class (then without
    overrides), or a packaged name or a path, loaded as :func:`load_scenario` with ``kind``."""
    cls = load_entry_point(family(kind).scenario)
    if isinstance(scenario, cls):
        if overrides:
            raise InvalidConfigError("overrides", dict(overrides), f"none when scenario is a {cls.__name__} object")
        return scenario
    return load_scenario(scenario, overrides, kind=kind)


def _load(name_or_path: str | Path, overrides: Mapping[str, Any], wanted: Family | None) -> Any:
    source = scenario_path(name_or_path)
    shown = str(source) if isinstance(source, Path) else source.name
    raw = read_yaml(source, shown)
    if not isinstance(raw, dict):
        raise InvalidConfigError(shown, raw, "a YAML mapping of scenario fields")
    data = apply_overrides(raw, overrides)
    if isinstance(data.get("kind"), str):
        name = family(data["kind"]).name
        if name != data["kind"]:  # a FutureWarning: shown to users (DeprecationWarning is not)
            warnings.warn(f"kind {data['kind']} is now called {name}: write kind: {name}", FutureWarning, stacklevel=3)
        data["kind"] = name
    if wanted is not None and data.get("kind") != wanted.name:
        raise InvalidConfigError(
            "kind",
            data.get("kind", MISSING),
            f"{wanted.name} (a {wanted.name} scenario is needed here; {shown} is not one)",
        )
    scenario = validate(_any_scenario(), data)
    scenario._name = source.name.rsplit(".", 1)[0]
    return scenario


def apply_overrides(raw: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a raw scenario mapping with dotted-key overrides applied (list items by index).

    A policy written as a name (``dispatch: po_d``) is the mapping ``{policy: po_d}``, so a key can be set in
    it (``dispatch.d``): an override that descends into a string turns it into that mapping.
    """
    data = copy.deepcopy(dict(raw))
    for key, value in overrides.items():
        parts = str(key).split(".")
        target: Any = data
        for depth, part in enumerate(parts):
            where = ".".join(parts[: depth + 1])
            last = depth == len(parts) - 1
            if isinstance(target, dict):
                if last:
                    target[part] = copy.deepcopy(value)
                else:
                    if isinstance(target.get(part), str):
                        target[part] = {"policy": target[part]}
                    target = target.setdefault(part, {})
            elif isinstance(target, list):
                if not (part.isdigit() and int(part) < len(target)):
                    raise InvalidConfigError(where, part, f"a list index in [0, {len(target) - 1}]")
                if last:
                    target[int(part)] = copy.deepcopy(value)
                else:
                    target = target[int(part)]
            else:
                raise InvalidConfigError(".".join(parts[:depth]), target, f"a mapping or list to set {part} in")
    return data
