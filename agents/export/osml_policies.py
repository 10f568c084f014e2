"""OSML's three models -> a folder of ``mlp`` policy files (docs/osml.md, "Export").

:func:`export_osml` writes ``model_a.dcpol``, ``model_b.dcpol`` (from a folder of ``model_a.pt`` and
``model_b.pt``; Models A' and B' too when the folder holds them) and ``model_c.dcpol`` (from a Model-C module
folder, checkpoint or train.py run folder) into a folder: what ``evaluate.py --policy osml:files=DIR`` and a zoo entry ``zoo:NAME`` run. The conversions are OSML's
own (:mod:`dcgym.agents.osml.policy_file`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dcgym.agents.osml.files import FILES, SCHEDULER_SETTINGS
from dcgym.agents.osml.policy_file import model_c_policy, supervised_policy
from dcgym.agents.osml.scheduler import RECLAIMS, RULES, SHADOWS
from dcgym.agents.policies.checkpoints import find_checkpoint
from dcgym.agents.policy_format import with_settings, write_policy
from dcgym.envs.error import InvalidConfigError

__all__ = ["FILES", "export_osml", "load_model_c", "model_c_policy", "supervised_policy"]


def export_osml(
    models: str | Path, model_c: str | Path | None, out: str | Path, options: Mapping[str, str] | None = None
) -> dict[str, Path]:
    """Write ``out/model_a.dcpol`` and ``out/model_b.dcpol`` from a folder of ``model_a.pt`` and ``model_b.pt``
    (benchmarks/osml_models.py), ``out/model_a_shadow.dcpol`` and ``out/model_b_shadow.dcpol`` when it also holds
    Models A' and B' (``model_a_shadow.pt``, ``model_b_shadow.pt``: ``--colocated``) and, if given, ``out/model_c.dcpol`` from a Model-C module folder, checkpoint or
    train.py run folder; returns the paths written by model. ``options``: the scheduler's ``rule``, ``reclaim`` and
    ``shadows`` to record in ``model_c.dcpol`` (what ``osml:files=OUT`` runs with unless told otherwise). InvalidConfigError
    naming the argument otherwise."""
    from dcgym.agents.osml.supervised import Model  # torch: only to read the PyTorch models

    options = dict(options or {})
    for key, value in options.items():
        allowed = {"rule": RULES, "reclaim": RECLAIMS, "shadows": SHADOWS}.get(key)
        if allowed is None or value not in allowed:
            what = f"one of {', '.join(allowed)}" if allowed else f"a parameter among {', '.join(SCHEDULER_SETTINGS)}"
            raise InvalidConfigError(key, value, what)
        if model_c is None:
            raise InvalidConfigError(key, value, "recorded with a Model-C (model_c.dcpol holds it)")
    folder = Path(models)
    for f in ("model_a.pt", "model_b.pt"):
        if not (folder / f).is_file():
            raise InvalidConfigError("models", str(models), f"a folder holding {f} (benchmarks/osml_models.py)")
    policies = {  # every model read before any file is written; Models A' and B' when the folder has them
        which: supervised_policy(Model.load(folder / f"{which}.pt"))
        for which in ("model_a", "model_b", "model_a_shadow", "model_b_shadow")
        if which in ("model_a", "model_b") or (folder / f"{which}.pt").is_file()
    }
    if model_c is not None:
        policies["model_c"] = model_c_policy(load_model_c(model_c))
    written = {  # each file records which of OSML's models it is; Model-C's also the scheduler's options
        which: write_policy(
            with_settings(policy, {"model": which, **(options if which == "model_c" else {})}), Path(out) / FILES[which]
        )
        for which, policy in policies.items()
    }
    return written


def load_model_c(path: str | Path) -> Any:
    """The Model-C module of a module folder (``.../rl_module/shared``), a checkpoint or a train.py run folder (its
    newest checkpoint's shared module); InvalidConfigError naming ``model_c`` otherwise."""
    where = Path(path)
    candidates = [where, where / "learner_group" / "learner" / "rl_module" / "shared"]
    if where.is_dir() and not any(
        (c / "module_state.pkl").exists() or (c / "module_state").exists() for c in candidates
    ):
        try:
            candidates.append(find_checkpoint(where) / "learner_group" / "learner" / "rl_module" / "shared")
        except Exception:  # noqa: BLE001 - not a run folder: the error below says what is expected
            pass
    for c in candidates:
        if c.is_dir() and any(c.glob("module_state*")):
            from ray.rllib.core.rl_module.rl_module import RLModule  # Ray: only to read a Model-C module

            module = RLModule.from_checkpoint(str(c))
            if not hasattr(module, "qnet"):
                raise InvalidConfigError("model_c", str(path), "a Model-C module (algorithm osml_dqn)")
            return module
    raise InvalidConfigError(
        "model_c", str(path), "a Model-C module folder, checkpoint or train.py run folder (algorithm osml_dqn)"
    )
