"""Experiment files (``configs/experiments/*.yaml``): what ``train.py`` trains, validated before anything runs.

An experiment names an environment and a scenario, the environment's
arguments, an algorithm of :mod:`dcgym.agents.algorithms` with its
hyperparameters, a budget, the final evaluation and the resources::

    description: "Malcolm on Malcolm's heterogeneous rack (§7.1), Exp(75)"
    env: rack_v0
    scenario: malcolm_hetero_paper_exp
    env_args: {load: 0.9, max_steps: 1000}
    algorithm: malcolm
    hyperparameters: {}
    seed: 1
    budget: {iterations: 300}
    evaluation: {heuristics: [po2, jsq, "jbt:threshold=1"], tasks: 200000}

Every field has a default except ``env``, ``scenario`` and ``algorithm``;
``train.py`` writes the resolved experiment (every default filled in) into
the run folder as ``config.yaml``, so a run can be repeated from it. Errors
are :class:`InvalidConfigError` naming the field (``budget.iterations: got
0; allowed: an integer >= 1``); ``--set key=value`` overrides use the same
dotted keys before validation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from dcgym.agents.algorithms import check_algorithm, check_env, resolve_hyperparameters
from dcgym.agents.evaluation.core import Tasks
from dcgym.agents.evaluation.family import family_of
from dcgym.envs.error import InvalidConfigError, Verbatim, did_you_mean
from dcgym.envs.families import env_family, known_envs
from dcgym.envs.scenario import Load, Seed, apply_overrides, read_yaml
from dcgym.envs.validation import validate
from dcgym.envs.yaml_text import parse

__all__ = [
    "ENVS",
    "Budget",
    "Evaluation",
    "Experiment",
    "Resources",
    "experiment_path",
    "list_experiments",
    "load_experiment",
    "parse_assignments",
]

ENVS: dict[str, str] = known_envs()
"""The environments an experiment can train on."""


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Budget(_Schema):
    """When training stops: at the first limit reached (at least one must be set)."""

    iterations: int | None = Field(None, ge=1)
    """Training iterations in total (``Algorithm.train()`` calls), counting those before a resume."""
    timesteps: int | None = Field(None, ge=1)
    """Environment steps sampled in total, counting those before a resume."""
    wall_time_s: float | None = Field(None, gt=0, allow_inf_nan=False)
    """Seconds of training in this invocation (a resumed run gets the full time again)."""

    @model_validator(mode="after")
    def _some_limit(self) -> Budget:
        if self.iterations is None and self.timesteps is None and self.wall_time_s is None:
            raise InvalidConfigError("", Verbatim("no limit"), "at least one of iterations, timesteps, wall_time_s")
        return self


class Evaluation(_Schema):
    """The evaluation after training: the trained policy against heuristics on the scenario's load grid."""

    enabled: bool = True
    """Run it (``false``: train and checkpoint only)."""
    heuristics: list[str] | None = None
    """Baselines by name (rack: ``po2``, ``jbt:threshold=1``, ...; lb: ``ecmp``, ``wcmp``, ``lsq``, ``sed``); null =
    the environment's family's (rack: po2, jsq, sed; lb: ecmp, wcmp, lsq, sed; flow: qsjf, qlas, pias, fair, srpt;
    colo: parties), filled in when the experiment loads."""
    loads: list[Load] | None = None
    """Loads to evaluate at; null = the scenario's grid."""
    tasks: Tasks = 200_000
    """Units of work per run (tasks on a rack, flows on a multi-LB cluster), the warm-up included."""
    seeds: list[Seed] = Field([1], min_length=1)
    """Seeds of the evaluation runs: the same tasks for every policy (common random numbers)."""
    workers: int | None = Field(None, ge=0)
    """Parallel runs on Ray; 0 = serially in the training process; null = every CPU of the Ray session."""
    explore: bool = False
    """Sample the trained policy's actions (true) or take the deterministic ones (false, as RLlib evaluates)."""


class Resources(_Schema):
    """Where training runs. The defaults suit a 2-core machine (docs/training.md has the measured speeds)."""

    num_env_runners: int | None = Field(None, ge=0)
    """Remote env runners; null = 0 on the local Ray, every CPU but one on a cluster (``--address``)."""
    num_envs_per_env_runner: int = Field(1, ge=1)
    """Environment copies each env runner steps."""
    num_learners: int = Field(0, ge=0)
    """Remote learners; 0 = learn in the training process."""
    torch_threads: int = Field(1, ge=1)
    """torch intra-op threads in the training process (more is slower for these small networks)."""


class Experiment(_Schema):
    """An experiment file (module docstring)."""

    description: str = ""
    """One line: what is trained, on what, and why."""
    env: str
    """A versioned environment (``ENVS``: rack_v0, lb_v0, ...)."""
    scenario: str
    """A packaged scenario name or a YAML path (of the environment's family: rack for rack_v0, lb for lb_v0)."""
    env_args: dict[str, Any] = {}
    """Arguments of the environment besides the scenario (docs/environments.md, "Arguments")."""
    algorithm: str
    """An algorithm of :mod:`dcgym.agents.algorithms` (``dcgym list algorithms``: malcolm, ppo, sac, ...)."""
    hyperparameters: dict[str, Any] = Field({}, validate_default=True)
    """The algorithm's settings; the defaults fill in what is not given (docs/training.md)."""
    seed: Seed = 1
    """Seed of the networks' initialisation and of the training environments."""
    budget: Budget = Budget(iterations=100)
    """When training stops."""
    checkpoint_every: int = Field(10, ge=0)
    """Iterations between checkpoints (0 = only the final one); Ctrl-C always writes one."""
    keep_checkpoints: int | None = Field(5, ge=1)
    """The newest checkpoints kept; older ones are deleted (null = keep all)."""
    evaluation: Evaluation = Evaluation()
    """The evaluation after training."""
    resources: Resources = Resources()
    """Env runners, learners, threads."""
    _source: str = PrivateAttr("")

    @field_validator("env")
    @classmethod
    def _known_env(cls, value: str) -> str:
        if value not in ENVS:
            raise InvalidConfigError("", value, "one of " + ", ".join(ENVS), suggestion=did_you_mean(value, ENVS))
        return value

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str) -> str:
        return check_algorithm(value)

    @field_validator("hyperparameters")
    @classmethod
    def _resolve_hyperparameters(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if "algorithm" not in info.data:
            return value  # the algorithm is wrong: that error is reported
        return resolve_hyperparameters(info.data["algorithm"], value)

    @field_validator("env_args")
    @classmethod
    def _no_scenario(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "scenario" in value:
            raise InvalidConfigError("scenario", value["scenario"], "nothing: the experiment's scenario field sets it")
        return value

    @model_validator(mode="after")
    def _algorithm_runs_on_env(self) -> Experiment:
        check_env(self.algorithm, self.env)
        return self

    @model_validator(mode="before")
    @classmethod
    def _family_heuristics(cls, data: Any) -> Any:
        """``evaluation.heuristics`` left out (or null): the env's family's baselines, written out in config.yaml."""
        env, evaluation = (data.get("env"), data.get("evaluation", {})) if isinstance(data, dict) else (None, None)
        kind = env_family(env)
        if kind is None or not isinstance(evaluation, dict) or evaluation.get("heuristics") is not None:
            return data  # a wrong env or evaluation is reported by the fields' own checks
        return {**data, "evaluation": {**evaluation, "heuristics": list(family_of(kind).default_heuristics)}}

    @property
    def source(self) -> str:
        """Where the experiment was read from (a path, or empty)."""
        return self._source

    @property
    def scenario_name(self) -> str:
        """The scenario's name for run names: a packaged name, or a file's stem."""
        path = Path(self.scenario)
        return path.stem if path.suffix in (".yaml", ".yml") or len(path.parts) > 1 else self.scenario

    @property
    def env_config(self) -> dict[str, Any]:
        """The keyword arguments of the environment's ``parallel_env``."""
        return {"scenario": self.scenario, **self.env_args}

    def to_yaml(self) -> str:
        """The resolved experiment as YAML, every default filled in."""
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


# ------------------------------------------------------------------------------------ loading


def _experiment_dir():
    return resources.files("dcgym.configs") / "experiments"


def list_experiments() -> list[str]:
    """Names of the packaged experiments (``configs/experiments/*.yaml``)."""
    return sorted(f.name.removesuffix(".yaml") for f in _experiment_dir().iterdir() if f.name.endswith(".yaml"))


def experiment_path(name_or_path: str | Path) -> Path:
    """The file of a packaged experiment name or of a path; raises InvalidConfigError naming ``config``."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.suffix not in (".yaml", ".yml") and len(path.parts) == 1:
        packaged = _experiment_dir() / f"{name_or_path}.yaml"
        if packaged.is_file():
            return Path(str(packaged))
    known = list_experiments()
    raise InvalidConfigError(
        "config",
        str(name_or_path),
        "an experiment YAML file or a packaged experiment (" + ", ".join(known) + ")",
        suggestion=did_you_mean(path.stem, known),
    )


def parse_assignments(items: Sequence[str] | None) -> dict[str, Any]:
    """``["budget.iterations=5", "env_args.load=0.8"]`` -> ``{"budget.iterations": 5, ...}``; values are YAML."""
    overrides: dict[str, Any] = {}
    for item in items or ():
        key, sep, text = str(item).partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise InvalidConfigError("--set", item, "key=value with a dotted key, e.g. budget.iterations=10")
        try:
            overrides[key] = parse(text) if text.strip() else None
        except yaml.YAMLError:
            raise InvalidConfigError(
                key, Verbatim(text), "a YAML value (quote strings with special characters)"
            ) from None
    return overrides


def read_raw(name_or_path: str | Path) -> tuple[dict[str, Any], str]:
    """The raw mapping of an experiment file and its path; raises InvalidConfigError on bad YAML."""
    path = experiment_path(name_or_path)
    raw = read_yaml(path, str(path))
    if not isinstance(raw, dict):
        raise InvalidConfigError(str(path), raw, "a YAML mapping of experiment fields")
    if "kind" in raw and "env" not in raw:
        raise InvalidConfigError(
            "config",
            str(path),
            f"an experiment file (env, scenario, algorithm, ...); this is a scenario file (kind: "
            f"{raw['kind']}): give it to an experiment's scenario field, or to evaluate.py --scenario",
        )
    return raw, str(path)


def load_experiment(
    name_or_path: str | Path | Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> Experiment:
    """Load and validate an experiment: a YAML path, a packaged name, or a mapping.

    ``overrides`` maps dotted keys to values applied before validation
    (``{"budget.iterations": 5, "hyperparameters.lr": 1e-3}``). Raises
    InvalidConfigError naming the field.
    """
    if isinstance(name_or_path, Mapping):
        raw, source = dict(name_or_path), ""
    else:
        raw, source = read_raw(name_or_path)
    experiment = validate(Experiment, apply_overrides(raw, dict(overrides or {})))
    experiment._source = source
    return experiment
