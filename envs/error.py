"""dcgym's one exception hierarchy.

Every error a user can cause derives from :class:`DcgymError`. Bad
configuration (a scenario file, an override, a command-line argument) raises
:class:`InvalidConfigError`, whose message is one line naming the field, the
bad value and what is allowed, so the command-line tools can print it as is
and exit with status 2.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable
from typing import Any


class DcgymError(Exception):
    """Base class of every error dcgym raises on purpose."""


class Verbatim(str):
    """A value shown in an error message as written, without quotes."""


MISSING = Verbatim("nothing")
"""The value of a required field that was not given."""


def show_value(value: Any) -> str:
    """Render a config value the way it would be written in YAML or JSON."""
    if isinstance(value, Verbatim):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def did_you_mean(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``word``, if any is close enough to be a typo."""
    matches = difflib.get_close_matches(str(word), list(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


class InvalidConfigError(DcgymError, ValueError):
    """A configuration value is not allowed.

    ``InvalidConfigError("dispatch.d", -1, "an integer in [1, 64]")`` reads
    ``dispatch.d: got -1; allowed: an integer in [1, 64]``. ``field`` is a
    dotted path relative to where the error is caught: callers that know the
    enclosing path re-raise with :meth:`under`.
    """

    def __init__(self, field: str, value: Any, allowed: str, *, suggestion: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.suggestion = suggestion
        where = f"{field}: " if field else ""
        hint = f"; did you mean {show_value(suggestion)}?" if suggestion else ""
        super().__init__(f"{where}got {show_value(value)}{hint}; allowed: {allowed}")

    def under(self, prefix: str) -> InvalidConfigError:
        """The same error, of the same class, with ``prefix`` prepended to the field path."""
        field = ".".join(part for part in (prefix, self.field) if part)
        return _rebuild(type(self), field, self.value, self.allowed, self.suggestion)

    def __reduce__(self):
        # Subclasses have other constructor signatures; pickling (e.g. from a Ray worker) must not call them.
        return _rebuild, (type(self), self.field, self.value, self.allowed, self.suggestion)


def _rebuild(cls: type[InvalidConfigError], field: str, value: Any, allowed: str, suggestion: str | None):
    error = InvalidConfigError.__new__(cls)
    InvalidConfigError.__init__(error, field, value, allowed, suggestion=suggestion)
    return error


class UnknownScenarioError(InvalidConfigError):
    """A scenario name that is neither a packaged scenario nor an existing file."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        known = sorted(known)
        super().__init__(
            "scenario",
            name,
            "a scenario file path or a packaged scenario name (dcgym.envs.scenario.list_scenarios())",
            suggestion=did_you_mean(name, known),
        )


class UnknownPolicyError(InvalidConfigError):
    """A dispatch policy name that no heuristic in the registry has."""

    def __init__(self, name: str, known: Iterable[str], *, suggestion: str | None = None) -> None:
        known = list(known)
        suggestion = suggestion or did_you_mean(name, known)
        super().__init__("policy", name, "one of " + ", ".join(known), suggestion=suggestion)


class InvalidActionError(DcgymError, ValueError):
    """An environment received an action it cannot apply; the message names the agent (and batch index)."""


class ResetNeededError(DcgymError, RuntimeError):
    """An environment was stepped before reset() or after its episode ended."""
