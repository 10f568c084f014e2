"""What a colo policy spec names: a heuristic scheduler, or OSML's scheduler with its trained models.

OSML's scheduler (:class:`dcgym.agents.osml.scheduler.OSML`) is a colo :class:`~dcgym.agents.heuristics.colo.
Scheduler` driven by trained models: by PyTorch and RLlib files (``osml:models=DIR,model_c=DIR``) or by policy
files that the C++ runtime runs: a zoo folder (``zoo:NAME``, :func:`osml_files`) or ``osml:files=DIR``.
:func:`make_scheduler` builds any of them from a spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dcgym.agents.heuristics.colo import Scheduler, scheduler_names
from dcgym.agents.heuristics.colo import make_scheduler as make_heuristic
from dcgym.agents.osml.scheduler import OSML
from dcgym.agents.policies.checkpoints import MODEL_C_MODULE, find_checkpoint, read_meta
from dcgym.agents.policies.file_settings import recorded_env
from dcgym.agents.policies.zoo import SUFFIX, ZOO_PREFIX, resolve_zoo
from dcgym.envs.colo.scenario import SchedulerSpec, parse_scheduler
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.policy_spec import split_spec

__all__ = ["LEARNED", "MODELS_AB", "make_scheduler", "names", "osml_files", "trained_model_c", "with_trained_model_c"]

LEARNED: dict[str, type[Scheduler]] = {"osml": OSML}
"""The colo schedulers driven by trained models, by name."""


def names() -> list[str]:
    """Every scheduler a colo spec may name: the heuristics and the learned ones."""
    return [*scheduler_names(), *LEARNED]


def make_scheduler(spec: str | Mapping[str, Any] | SchedulerSpec) -> Scheduler:
    """A scheduler from a spec (``parties:variant=code``, ``osml:files=DIR``, a mapping); InvalidConfigError naming
    ``policy`` or the parameter otherwise."""
    return make_heuristic(spec, LEARNED)


def osml_files(given: Any) -> tuple[str, dict[str, Any]]:
    """A policy-file spec on a colo scenario: ``zoo:NAME[:key=value,...]``, a zoo folder of OSML's models (docs/osml.md),
    as its label and the ``osml`` scheduler with ``files`` (the options its parameters); anything else refused."""
    where, options = split_spec(str(given), file=True)
    if not where.startswith(ZOO_PREFIX):
        if recorded_env(where) != "colo_v0":
            raise InvalidConfigError(
                "policy",
                str(given),
                "zoo:NAME of OSML's models, osml:files=DIR (a folder of model_a/b/c.dcpol) or a Model-C policy file "
                "(an export of an osml_dqn run): this file is none (scenario kind colo)",
            )
        label = Path(where).name.removesuffix(SUFFIX) + (f":{options}" if options else "")
        return f"{label} (file)", with_trained_model_c(where, options)
    path = resolve_zoo(where, entry="folder")
    parsed = parse_scheduler("osml:" + options) if options else SchedulerSpec({"policy": "osml"})
    if "files" in parsed or "models" in parsed or "model_c" in parsed:
        raise InvalidConfigError(
            "policy", str(given), f"{where} with OSML's parameters other than files, models, model_c"
        )
    name = where.removeprefix(ZOO_PREFIX) + (f":{options}" if options else "")
    return f"{name} (zoo)", {**parsed, "files": str(path)}


MODELS_AB = "zoo:osml_colo"
"""Where a trained Model-C (a run of osml_dqn, or its exported file) gets OSML's Models A and B: the zoo's."""


def with_trained_model_c(model_c: str | Path, options: str = "") -> dict[str, Any]:
    """OSML's scheduler with Models A and B from :data:`MODELS_AB` and a trained Model-C: a module folder or its
    policy file (``options``: OSML's other parameters, ``key=value,...``)."""
    parsed = parse_scheduler("osml:" + options) if options else SchedulerSpec({"policy": "osml"})
    if "files" in parsed or "models" in parsed or "model_c" in parsed:
        raise InvalidConfigError("policy", str(model_c), "OSML's parameters other than files, models, model_c")
    return {**parsed, "files": str(resolve_zoo(MODELS_AB, entry="folder")), "model_c": str(model_c)}


def trained_model_c(run_or_checkpoint: str | Path) -> dict[str, Any]:
    """A train.py run folder or checkpoint of osml_dqn as OSML's scheduler (:func:`with_trained_model_c`);
    InvalidConfigError naming ``policy`` for another algorithm's."""
    checkpoint = find_checkpoint(run_or_checkpoint)
    algorithm = read_meta(checkpoint)["experiment"]["algorithm"]
    if algorithm != "osml_dqn":
        raise InvalidConfigError(
            "policy",
            str(run_or_checkpoint),
            f"a run of osml_dqn (OSML's Model-C) on a colo scenario; this is {algorithm}'s",
        )
    return with_trained_model_c(checkpoint / MODEL_C_MODULE)
