"""The settings a policy file records: how its environment acted while it was trained (docs/policy_format.md,
"Settings").

A policy's weights mean something only under the environment settings they were trained with: a multi-LB
Q-network's under its dispatch rule, Malcolm's actors under their heartbeat and load metric, AuTO's agents under
their interval and the numbers of flows they observe. The exporter records them (:func:`settings_for`); an
evaluation takes them from the file (:func:`resolve`): a file written before format version 3 has none and gets
its environment's defaults (:data:`ENV_SETTINGS`), a spec option may set what the file does not record, and an
option that contradicts the file is refused with one line naming both values.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dcgym.agents.policies.zoo import ZOO_PREFIX, resolve_zoo
from dcgym.agents.policy_format import from_bytes
from dcgym.envs.error import InvalidConfigError, did_you_mean
from dcgym.envs.flow.game import FlowEnvConfig
from dcgym.envs.lb.lb_v0 import LbEnvConfig
from dcgym.envs.policy_spec import parse_options, scalar, show_option, split_spec
from dcgym.envs.rack.game import RackEnvConfig

__all__ = [
    "AGENT_SETTINGS",
    "ENV_KEY",
    "ENV_SETTINGS",
    "FROM_OVERRIDES",
    "decode",
    "recorded_env",
    "resolve",
    "settings_for",
]

ENV_KEY = "env"
"""The setting naming the environment the policy was trained on (``rack_v0``, ``lb_v0``, ...)."""


def _defaults(config: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: config.model_fields[key].default for key in keys}


ENV_SETTINGS: dict[str, dict[str, Any]] = {
    "rack_v0": _defaults(RackEnvConfig, ("heartbeat_us", "load_metric")),
    "lb_v0": _defaults(LbEnvConfig, ("dispatch",)),
    "lb_central_v0": _defaults(LbEnvConfig, ("dispatch",)),
    "flow_v0": _defaults(
        FlowEnvConfig,
        (
            "interval_ms",
            "short_finished",
            "long_active",
            "long_finished",
            "rate_caps",
            "path_loads",
            "path_loads_last",
            "keep_level",
            "move_check",
            "long_flow_bytes",
        ),
    ),
}
"""Per environment, the settings its policy files record and their defaults (the environment's own): what a file
without them (format versions 1 and 2) acts with."""
AGENT_SETTINGS: dict[str, dict[str, str]] = {
    "flow_v0": {
        "short_finished": "srla",
        "long_active": "lrla",
        "long_finished": "lrla",
        "rate_caps": "lrla",
        "path_loads": "lrla",
        "path_loads_last": "lrla",
        "keep_level": "lrla",
        "move_check": "lrla",
        "long_flow_bytes": "lrla",
    }
}
"""Per environment, the settings that shape one agent's observation or action only (the others' files may record
another value: files of AuTO's two agents trained apart join, each acting with its own). flow_v0's
``long_flow_bytes`` is one definition for both agents (the flows lRLA lists and acts on; the finished flows sRLA
observes as short are the others): a pair whose files disagree on it takes lRLA's, whose actions it decides; sRLA's
observation keeps its shape, with the flows under lRLA's definition in it."""
FROM_OVERRIDES: dict[str, tuple[str, ...]] = {"flow_v0": ("long_flow_bytes",)}
"""Per environment, the settings a config may give as a scenario override instead (``overrides:
{long_flow_bytes: ...}``): recorded from there when the config does not give them itself."""


def settings_for(env: str, env_config: Mapping[str, Any]) -> dict[str, str]:
    """What a policy trained on ``env`` with ``env_config`` records: ``env`` and the environment's settings (the
    config's values, else the defaults), as text."""
    keys = ENV_SETTINGS.get(env, {})
    overrides = env_config.get("overrides") or {}
    given = {key: env_config[key] for key in keys if key in env_config}
    given.update({k: overrides[k] for k in FROM_OVERRIDES.get(env, ()) if not given.get(k) and k in overrides})
    return {ENV_KEY: env, **{key: show_option(given.get(key, default)) for key, default in keys.items()}}


def decode(text: str) -> Any:
    """A setting's value from its text: a number, true/false, a list (``a;b``) or the text itself."""
    return [scalar(part) for part in text.split(";")] if ";" in text else scalar(text)


def _same(a: str, b: str) -> bool:
    x, y = decode(a), decode(b)
    return x == y or (isinstance(x, list) and isinstance(y, (int, float)) and x == [y])


def resolve(spec: str, envs: str | tuple[str, ...], recorded: Mapping[str, str], option_text: str) -> dict[str, Any]:
    """The settings a policy file acts with: its environment's defaults (the file's ``env``, one of ``envs``; the
    first if it records none), the file's ``recorded`` settings over them, the spec's options
    (``FILE:key=value,...``) where the file records nothing. InvalidConfigError naming ``policy`` for an unknown
    option, a file of another environment, or an option that contradicts the file."""
    envs = (envs,) if isinstance(envs, str) else envs
    env = recorded.get(ENV_KEY, envs[0])
    if env not in envs:
        raise InvalidConfigError(
            "policy", spec, f"a policy trained on {' or '.join(envs)}; the file's settings say {env}"
        )
    defaults = ENV_SETTINGS[env]
    allowed = "options " + ", ".join(f"{k}=..." for k in defaults) if defaults else "no options"
    given = parse_options(option_text, lambda item: InvalidConfigError("policy", spec, allowed), distinct=False)
    if unknown := [key for key in given if key not in defaults]:
        raise InvalidConfigError("policy", spec, allowed, suggestion=did_you_mean(unknown[0], defaults))
    for key, value in given.items():
        if key in recorded and not _same(value, recorded[key]):
            raise InvalidConfigError(
                f"policy {spec}: option {key}",
                value,
                f"{recorded[key]}, the {key} the file records (it was trained with it); drop the option",
            )
    texts = {**given, **{k: v for k, v in recorded.items() if k in defaults}}
    return {**defaults, **{key: _typed(decode(text), defaults[key]) for key, text in texts.items()}}


def recorded_env(spec: str | Path) -> str | None:
    """The environment a policy file (``FILE.dcpol`` or ``zoo:NAME``, options allowed) records it was trained on;
    None when it records none (format versions 1 and 2) or cannot be read (its evaluation says why)."""
    where, _ = split_spec(str(spec), file=True)
    try:
        path = resolve_zoo(where) if where.startswith(ZOO_PREFIX) else Path(where)
        return from_bytes(path.read_bytes()).settings.get(ENV_KEY)
    except (InvalidConfigError, ValueError, OSError):
        return None


def _typed(value: Any, default: Any) -> Any:
    """A list setting of one item is written as that item (``rate_caps=1``): a list again."""
    return [value] if isinstance(default, (list, tuple)) and not isinstance(value, list) else value
